"""hessopt.minimize_stochastic: mini-batch training, second-order steps included.

The loss takes a batch, ``loss(params, batch)`` (or ``loss(batch)`` reading a model's Variables),
and ``batches`` gives the data batch by batch, epoch after epoch: what PyTorch and optax users
write as a training loop, with scipy's result at the end. Derivatives come from autodiff: the
gradient of each batch, and curvature products (Hessian or Gauss-Newton) on a random subsample of
it, as replayed programs in which the batch is an input, so that one trace serves every batch of a
shape.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
import optimizers

from ._arguments import check_option, normalize, plain_value, scalar_value
from ._derivatives import AutodiffDerivatives, flat_gradient, variables_of

#: The mini-batch methods by name, as declared in :data:`optimizers.REGISTRY`.
STOCHASTIC_METHODS: dict[str, Callable] = {d.name: d.function for d in optimizers.REGISTRY.declarations(batches=True)}
CURVATURE_FRACTION = 0.1   # Byrd et al. (2011) sample 5-10% for the Hessian; Martens (2010) a fraction too

INTEGER_LEAVES = ("the batches hold non-floating arrays (integer labels, say), which autodiff.function "
                  "compares by value, so each batch would be traced again: running eagerly. Floating "
                  "targets (one-hot rows, nn.losses.one_hot) let every batch replay one trace")


class BatchDerivatives(AutodiffDerivatives):
    """f(x, batch) with its gradient (``value_and_grad``) and curvature products
    (``operator(x, batch)``: the Hessian, or the Gauss-Newton matrix of ``ggn``) of the structure
    ``unravel(x)`` or of the Variables holding x; traced as ``AutodiffDerivatives``, the batch an
    input of the replayed programs. Batches holding non-floating arrays run eagerly (see
    ``INTEGER_LEAVES``): found at the first batch."""

    def __init__(self, f: Callable, unravel: Callable, variables: list | None = None,
                 ggn: tuple[Callable, Callable] | None = None, trace: bool = False):
        self.f, self.unravel, self.variables, self.ggn = f, unravel, variables, ggn
        self._traced, self._trace, self._reason = [], trace, None
        self._value_and_grad = self._operator_at = None

    def _build(self, batch: Any) -> None:
        """The derivative functions, traced unless the batch holds non-floating arrays."""
        trace = self._trace
        if trace and any(np.asarray(leaf).dtype.kind not in "fc" and np.ndim(leaf) > 0
                         for leaf in ad.tree.flatten(batch)[0]):
            trace, self._reason = False, INTEGER_LEAVES
        f, variables = self.f, self.variables
        objective = self._replayed(f, trace, "objective")
        if self.ggn is None:
            self._operator_at = lambda point, b: ad.hessian_operator(objective, point, args=(b,))
        else:
            predict, loss = self._replayed(self.ggn[0], trace, "predict"), self.ggn[1]
            self._operator_at = lambda point, b: ad.ggn_operator(predict, loss, point, args=(b,))
        of_point = objective if variables is None else self._replayed(lambda _, b: f(b), trace, "variables")
        self._value_and_grad = ad.value_and_grad(of_point)

    @property
    def untraced_reason(self) -> str | None:
        return self._reason or super().untraced_reason

    def value_and_grad(self, x: np.ndarray, batch: Any) -> tuple[float, np.ndarray]:
        if self._value_and_grad is None:
            self._build(batch)
        value, gradient = self._value_and_grad(self.point(x), batch)
        return float(scalar_value(plain_value(value))), flat_gradient(gradient)

    def operator(self, x: np.ndarray, batch: Any) -> ad.HessianOperator:
        if self._operator_at is None:
            self._build(batch)
        return self._operator_at(self.point(x), batch)

    def at_params(self, x: np.ndarray) -> tuple:
        """What the user's functions take at x: the structure, or nothing (the Variables hold x)."""
        point = self.point(x)
        return () if self.variables is not None else (point,)


def minimize_stochastic(fun: Callable, x0, batches: Iterable | Callable[[int], Iterable],
                        method: str = "hessian-free", *, epochs: int = 1,
                        evaluate: Callable | None = None, callback: Callable | None = None,
                        options: dict | None = None) -> OptimizeResult:
    """Train on mini-batches: ``fun(params, batch)`` minimized one batch at a time.

    Methods (case-insensitive): ``"hessian-free"``, stochastic Hessian-free optimization (Martens
    2010: per batch, CG on damped curvature products of a subsample of it, the damping carried
    from batch to batch); ``"subsampled-newton-cg"`` (Byrd, Chin, Neveitt & Nocedal 2011: a few CG
    steps on the Hessian of a subsample, Armijo backtracking on the batch); ``"adam"`` and
    ``"sgd"`` (with ``momentum``), the first-order baselines on the same batches. Every value a step
    compares is of its own batch: a line search never meets a stale value (see
    ``optimizers.stochastic``).

    Parameters
    ----------
    fun : callable
        ``fun(params, batch) -> float``, params in the form of x0; with Variables as x0
        (``model.trainable_variables``), ``fun(batch)`` reading them.
    x0 : array_like, pytree, or list of Variables
        The start (at the end the Variables hold the result).
    batches : iterable or callable
        The batches of one epoch: a list or any re-iterable (a new pass each epoch), a callable
        ``batches(epoch)`` giving a fresh iterable (reshuffled, say), or a generator (one epoch).
        A batch is an array or a tuple or dict of arrays whose first axis runs over the examples.
    method : str
        One of ``STOCHASTIC_METHODS``.
    epochs : int
        Passes over the data.
    evaluate : callable, optional
        ``evaluate(params) -> dict`` (``evaluate()`` with Variables), at x0 and after each epoch:
        a held-out accuracy, say. Recorded in ``result.evaluations`` with the epoch, the step count
        and the seconds since the start; raising StopIteration ends the run (status 99).
    callback : callable, optional
        After each step: ``callback(intermediate_result)`` (x, and fun: the next batch's value
        there) or ``callback(xk)``; StopIteration ends the run.
    options : dict, optional
        ``curvature_fraction`` (0.1) or ``curvature_size`` (rows): the subsample of each batch for
        curvature products, drawn with ``seed`` (0; an integer, a ``numpy.random.Generator``, or
        None for fresh entropy); ``ggn=(predict, loss)``: Gauss-Newton
        products of ``loss(predict(params, batch), batch)`` (``predict(batch)`` with Variables),
        which must equal fun; ``trace`` (True); ``maxiter`` (a cap on steps), ``disp``,
        ``keep_iterates`` (False); and the method's own: ``damping`` (1.0), ``cg_maxiter``,
        ``warm_start``, ``c1`` (second order), ``learning_rate``, ``beta1``, ``beta2``,
        ``epsilon``, ``momentum`` (first order).

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x`` (the form of x0), ``fun`` and ``jac`` (on the last batch), ``nit`` (steps),
        ``epochs``, ``nfev``, ``njev``, ``nhev``, ``status`` (1: the epochs are done; 99: stopped
        by the callback or evaluate; 3: NaN/inf) and ``success`` (False: a stochastic run makes no
        convergence test), ``message``, ``history`` (per step: the batch's ``f`` and ``gnorm``,
        ``epoch``, and the method's columns) and ``evaluations``.

    Raises
    ------
    TypeError
        If fun or evaluate is not callable, batches neither iterable nor callable (or a callable
        returning no iterable), or an option of the wrong kind.
    ValueError
        For an unknown method or option value, an empty epoch, a generator for several epochs, or
        batch arrays whose first axes differ.

    Examples
    --------
    Least squares over 10 batches of 100 rows, Hessian-free with curvature on 20 rows per batch:

    >>> import numpy as np
    >>> import hessopt
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((1000, 5)); b = A @ np.arange(1.0, 6.0) + 0.01 * rng.standard_normal(1000)
    >>> batches = [(A[k:k + 100], b[k:k + 100]) for k in range(0, 1000, 100)]
    >>> loss = lambda w, batch: np.mean((batch[0] @ w - batch[1]) ** 2)
    >>> result = hessopt.minimize_stochastic(loss, np.zeros(5), batches, epochs=3,
    ...                                      options={"curvature_fraction": 0.2})
    >>> result.x.round(2), result.nit, result.epochs
    (array([1., 2., 3., 4., 5.]), 30, 3)
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    declaration = optimizers.REGISTRY.get(method.lower(), batches=True) if isinstance(method, str) else None
    if declaration is None:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(STOCHASTIC_METHODS)}")
    options = dict(options or {})
    second_order = not declaration.first_order
    size, fraction = options.pop("curvature_size", None), options.pop("curvature_fraction", None)
    rng = np.random.default_rng(check_option("seed", options.pop("seed", 0)))
    ggn = options.pop("ggn", None)
    trace = bool(options.pop("trace", True))
    if not second_order and (ggn is not None or size is not None or fraction is not None):
        takers = [d.name for d in optimizers.REGISTRY.declarations(batches=True) if not d.first_order]
        raise ValueError(f"curvature options (ggn, curvature_size, curvature_fraction) are for "
                         f"{' and '.join(takers)}, not {method!r}")
    if ggn is not None and not (isinstance(ggn, (tuple, list)) and len(ggn) == 2 and all(map(callable, ggn))):
        raise TypeError("options['ggn'] must be a pair (predict, loss) of callables")
    options.setdefault("keep_iterates", False)
    call = normalize(x0, (), callback, options, declaration.function, declaration.name)
    derivatives = BatchDerivatives(fun, call.unravel, variables_of(x0), None if ggn is None else tuple(ggn),
                                   trace)
    keywords = dict(call.options, batches=batches, epochs=epochs)
    if second_order:
        keywords.update(operator=derivatives.operator, curvature=_subsampler(size, fraction, rng))
    if evaluate is not None:
        if not callable(evaluate):
            raise TypeError(f"evaluate must be callable, got {type(evaluate).__name__}")
        keywords["evaluate"] = lambda x: evaluate(*derivatives.at_params(x))
    result = derivatives.solve(declaration.function, call.x0, derivatives.value_and_grad, call.x0, True,
                               callback=call.callback, **keywords)
    return call.finish(result)


def _subsampler(size: int | None, fraction: float | None, rng: np.random.Generator) -> Callable:
    """batch -> a random subsample of its rows (``size`` of them, or ``fraction`` of each batch)."""
    if size is not None and (isinstance(size, bool) or int(size) != size or size < 1):
        raise ValueError(f"curvature_size must be a positive integer, got {size!r}")
    if fraction is not None and not 0 < fraction <= 1:
        raise ValueError(f"curvature_fraction must lie in (0, 1], got {fraction!r}")
    if fraction is None:
        fraction = CURVATURE_FRACTION

    def subsample(batch):
        leaves, rebuild = ad.tree.flatten(batch)
        rows = {np.shape(leaf)[0] for leaf in leaves if np.ndim(leaf) > 0}
        if len(rows) > 1:
            raise ValueError(f"the arrays of a batch must share their first (example) axis, got "
                             f"lengths {sorted(rows)}")
        if not rows:
            return batch
        n = rows.pop()
        k = min(n, int(size) if size is not None else max(1, int(round(fraction * n))))
        if k == n:
            return batch
        chosen = np.sort(rng.choice(n, k, replace=False))
        return rebuild([np.asarray(leaf)[chosen] if np.ndim(leaf) > 0 else leaf for leaf in leaves])
    return subsample
