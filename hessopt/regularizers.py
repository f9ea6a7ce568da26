"""Input-gradient regularization: penalize how fast a loss changes with its input.

``input_gradient_penalty(loss_fn, x)`` is a scalar Tensor that tapes differentiate with respect to
every Variable ``loss_fn`` reads, so it can be added to a training loss. Two ways to compute it:

- ``method="exact"``: double backpropagation (Drucker & LeCun 1992, "Improving generalization
  performance using double backpropagation", IEEE Trans. Neural Networks 3). The input gradient is
  taken on a tape that the enclosing tapes record, so training through the penalty differentiates a
  derivative (and a second-order optimizer, a derivative of that).
- ``method="finite-difference"``: Finlay & Oberman 2019 ("Scaleable input gradient regularization
  for adversarial robustness"). The input gradient g is computed but not recorded, d is the unit
  direction g / ||g|| (a constant), and the directional derivative g.d = ||g|| is replaced by the
  difference quotient (loss(x + h d) - loss(x)) / h: training needs first derivatives only, and
  the penalty agrees with the exact one to O(h).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core import paused

NORMS = ("l2", "l1")
METHODS = ("exact", "finite-difference")


def input_gradient_penalty(loss_fn: Callable, x, norm: str = "l2", method: str = "exact",
                           h: float = 1e-2) -> ad.Tensor:
    """The size of d loss_fn(x) / dx: ``sum(g**2)`` for ``norm="l2"``, ``sum(abs(g))`` for ``"l1"``.

    ``loss_fn(x)`` must return a scalar. With ``method="finite-difference"`` the l2 penalty is
    ((loss(x + h d) - loss(x)) / h)**2 with d = g / ||g||, and the l1 penalty is
    (loss(x + h d) - loss(x)) / h with d = sign(g) (the direction whose directional derivative is
    ||g||_1, as for l-infinity perturbations).

    Parameters
    ----------
    loss_fn : callable
        x -> scalar Tensor (it may read Variables: a model's loss on inputs x).
    x : array_like or Tensor
        The inputs.
    norm : {"l2", "l1"}, default "l2"
        Squared Euclidean norm or l1 norm of the input gradient.
    method : {"exact", "finite-difference"}, default "exact"
        Double backpropagation, or Finlay & Oberman's difference quotient along the gradient.
    h : float, default 1e-2
        The finite-difference step.

    Returns
    -------
    Tensor
        A scalar that enclosing tapes differentiate with respect to the Variables loss_fn reads.

    Raises
    ------
    TypeError
        If loss_fn is not callable or does not return a Tensor.
    ValueError
        For an unknown norm or method, or h <= 0.

    Examples
    --------
    For loss(x) = sum((w x)^2) the input gradient is 2 w^2 x; at x = (1, 1) its squared norm is
    4 (1 + 16) = 68, and d/dw of that is 16 w^3:

    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt.regularizers import input_gradient_penalty
    >>> w = ad.Variable([1.0, 2.0])
    >>> with ad.GradientTape() as tape:
    ...     penalty = input_gradient_penalty(lambda x: np.sum((w * x) ** 2), np.array([1.0, 1.0]))
    >>> penalty, tape.gradient(penalty, w)
    (Tensor(array(68.)), Tensor(array([ 16., 128.])))
    """
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose one of {NORMS}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if not h > 0:
        raise ValueError(f"the finite-difference step h must be positive, got {h!r}")
    given = x
    x = x if isinstance(x, ad.Tensor) else ad.constant(x)
    with ad.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        loss = _scalar(loss_fn(x))
    if method == "exact":
        g = tape.gradient(loss, x, unconnected_gradients="zero")
        return anp.sum(g * g) if norm == "l2" else anp.sum(anp.abs(g))
    with paused(accumulators=False):  # only the direction is needed: no tape records this sweep
        g = tape.gradient(loss, x, unconnected_gradients="zero").numpy()
    if norm == "l2":
        length = np.linalg.norm(g)
        direction = g / length if length > 0 else g
    else:
        direction = np.sign(g)
    # an array input stays an array: no tape then computes a cotangent for the shifted input
    shifted = x + h * direction if isinstance(given, ad.Tensor) else x.numpy() + h * direction
    slope = (_scalar(loss_fn(shifted)) - loss) / h
    return slope * slope if norm == "l2" else slope


def _scalar(loss):
    if not isinstance(loss, ad.Tensor):
        raise TypeError(f"loss_fn returned a plain {type(loss).__name__}, not a Tensor: it must compute "
                        "the loss from x with autodiff operations (np.asarray or float() on x drop "
                        "the gradient)")
    if loss.ndim != 0:
        raise ValueError(f"loss_fn must return a scalar, got shape {loss.shape} (reduce it, e.g. with "
                         "a mean over the batch)")
    return loss
