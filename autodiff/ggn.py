"""The generalized Gauss-Newton operator (Schraudolph 2002) of f(x) = loss(predict(x)).

G = J^T H_L J, with J the Jacobian of the predictions z = predict(x) and H_L the Hessian of the loss
at z. It drops the term sum_k (dL/dz_k) Hess(z_k) of the Hessian, so it is positive semi-definite
whenever the loss is convex in the predictions (squared error, cross-entropies), which is what
damped-CG methods such as Hessian-free optimization (Martens 2010) need.

No Jacobian is formed. At construction predict is recorded once, and so is the vector-Jacobian
product u -> J^T u over that recording (linear in u). A product G v is then three sweeps over
recordings, none re-running predict: J v as the transpose of the recorded VJP (one sweep, the
"double-VJP" trick), H_L (J v) from the loss's cached Hessian operator, and J^T (H_L J v) as one
backward sweep over predict's recording. Products for k vectors are one batched sweep each.

References: N. N. Schraudolph, "Fast curvature matrix-vector products for second-order gradient
descent", Neural Computation 14 (2002); J. Martens, "Deep learning via Hessian-free optimization",
ICML 2010.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .core import Tensor, constant, paused
from .hessian_operator import SymmetricOperator, hessian_operator
from .tape import GradientTape



class GGNOperator(SymmetricOperator):
    """G = J^T H_L J at x, as a symmetric linear operator on flat vectors of length n.

    ``predict`` maps x (a structure of arrays; with Variables, no argument: it reads them) to the
    predictions, a Tensor of any shape; ``loss`` maps the predictions to a scalar. ``value`` is
    loss(predict(x)) and ``gradient`` its exact gradient J^T grad L, both computed once. Build it
    with :func:`ggn_operator`.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> W = np.array([[1.0, 1.0], [0.0, 1.0]])
    >>> G = ad.GGNOperator(lambda x: W @ x, lambda z: 0.5 * np.sum(z ** 2), np.array([1.0, 2.0]))
    >>> G.to_dense()                           # W^T W: the loss's Hessian is the identity
    array([[1., 1.],
           [1., 2.]])
    """

    def __init__(self, predict: Callable, loss: Callable, x, chunk_size: int | None = None):
        call = self._trace_sources(predict, x, chunk_size)
        with paused():
            self._tape = GradientTape(persistent=True, watch_accessed_variables=False)
            with self._tape:
                self._tape.watch(self._sources)
                z = call()
            if not isinstance(z, Tensor) or z.dtype.kind != "f":
                raise TypeError(f"ggn_operator: predict returned {type(z).__name__}, not a floating "
                                "Tensor computed from x with autodiff operations")
            try:
                self._loss = hessian_operator(loss, z.numpy())
            except TypeError as error:
                raise TypeError(f"ggn_operator: the loss of the predictions: {error}") from None
            self._z = z
            # u -> J^T u, recorded once: its transpose is J v
            self._u = constant(np.zeros(z.shape, z.dtype))
            self._transposed = GradientTape(persistent=True, watch_accessed_variables=False)
            with self._transposed:
                self._transposed.watch(self._u)
                self._jtu = self._tape.sweep([z], [self._u], self._sources, ())
            self.gradient = self._vjp(self._loss.gradient.reshape((1,) + z.shape))[0]
        self.value = self._loss.value
        n = self.gradient.size
        self.shape = (n, n)
        self.dtype = self.gradient.dtype
        self._offsets = np.cumsum([0] + [s.size for s in self._sources])

    def _vjp(self, w: np.ndarray) -> np.ndarray:
        """J^T w for cotangents w of shape (k, *z.shape): one batched sweep; (k, n)."""
        parts = self._tape.sweep([self._z], [w], self._sources, w.shape[:1])
        return self._flat(parts, w.shape[:1])

    def _jvp(self, V: np.ndarray) -> np.ndarray:
        """J v for the rows of V (k, n): one sweep over the recorded VJP; (k, *z.shape)."""
        k = V.shape[0]
        targets, seeds = [], []
        for i, (jtu, source) in enumerate(zip(self._jtu, self._sources)):
            if jtu is not None:
                targets.append(jtu)
                seeds.append(V[:, self._offsets[i]:self._offsets[i + 1]].reshape((k,) + source.shape))
        (jv,) = self._transposed.sweep(targets, seeds, [self._u], (k,))
        return np.zeros((k,) + self._z.shape) if jv is None else jv  # a raw sweep: an ndarray

    def _sweep(self, seeds: np.ndarray) -> np.ndarray:
        """J^T H_L J applied to ``seeds`` (n,) or (k, n); nothing is recorded on the caller's tapes."""
        V = seeds.reshape(-1, self.shape[0])
        with paused():
            jv = self._jvp(V)
            hjv = self._loss.matmat(jv.reshape(V.shape[0], -1).T).T.reshape(jv.shape)
            result = self._vjp(hjv)
        return result.reshape(seeds.shape)


def ggn_operator(predict: Callable, loss: Callable, x, chunk_size: int | None = None) -> GGNOperator:
    """The generalized Gauss-Newton matrix of loss(predict(x)) at x as an operator (see GGNOperator).

    G = J^T H_L J is positive semi-definite whenever the loss is convex in the predictions, which
    makes it the curvature of choice for Hessian-free training (Schraudolph 2002; Martens 2010).
    Each product is one forward and one backward sweep over recordings made once.

    Parameters
    ----------
    predict : callable
        x -> predictions (a Tensor of any shape); with Variables in x, a function of no argument.
    loss : callable
        predictions -> scalar loss.
    x : array_like, Variable, or pytree of them
        The point.
    chunk_size : int, optional
        How many vectors each batched sweep takes (default: all).

    Returns
    -------
    GGNOperator
        The interface of :class:`HessianOperator` (``value``, ``gradient``, ``@``, ``matmat``,
        ``to_dense``, ``as_linear_operator``).

    Raises
    ------
    TypeError
        If predict does not return a floating Tensor computed from x, or loss not a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> G = ad.ggn_operator(np.tanh, lambda z: 0.5 * np.sum(z ** 2), np.array([0.0, 1.0]))
    >>> G.to_dense().round(4)                  # diag(1 - tanh(x)^2)^2
    array([[1.    , 0.    ],
           [0.    , 0.1764]])
    """
    return GGNOperator(predict, loss, x, chunk_size)
