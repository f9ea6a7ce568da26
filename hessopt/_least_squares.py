"""hessopt.least_squares: scipy's ``least_squares`` with exact Jacobians from autodiff.

scipy's signature and meaning, mapped onto hessopt's algorithms: ``method`` 'trf', 'dogbox' and 'lm' run
Levenberg-Marquardt (Moré 1978: the damped Gauss-Newton step, a trust-region method; in a box TRON's
bounded trust-region step on the Gauss-Newton model, Lin & Moré 1999), 'gn' Gauss-Newton with a line
search (in a box projected Gauss-Newton). ``jac`` '2-point', '3-point' and 'cs' are replaced by the exact
Jacobian. ``loss`` and ``f_scale`` rewrite the residuals so that the half sum of squares is scipy's robust
cost (:mod:`hessopt._robust_loss`). The result has scipy's fields and status codes.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy.optimize import OptimizeResult
from scipy.optimize._numdiff import approx_derivative
from scipy.sparse.linalg import LinearOperator

import autodiff as ad
import optimizers
from optimizers.objective import Status, same_point

from ._arguments import (
    FINITE_DIFFERENCES,
    as_options,
    check_option,
    exact_derivatives,
    is_tree,
    normalize,
    plain_value,
    real_array,
    residual_vector,
)
from ._bounds import feasible_set, report_bounds
from ._implicit import least_squares_through_solution
from ._precision import in_x0_precision
from ._robust_loss import RobustResiduals

#: scipy's method names (and hessopt's 'gn') -> the algorithm of optimizers.least_squares_lm that runs.
METHODS = {"trf": "lm", "dogbox": "lm", "lm": "lm", "gn": "gn"}

#: scipy's least_squares status codes: 1 gtol, 2 ftol, 3 xtol met; 0 max_nfev; -2 the callback stopped it.
#: Failures scipy has no code for get their own negative ones (success is status > 0, as in scipy).
_FAILURES = {Status.MAXITER: 0, Status.CALLBACK_STOP: -2, Status.PRECISION_LOSS: -3, Status.NONFINITE: -4}
_SUCCESSES = {"Relative reduction of the cost below ftol": 2, "Relative step size below xtol": 3}
_EPS = np.finfo(float).eps
#: ``options``: the keyword settings of optimizers.least_squares_lm (tolerances there override the
#: keywords), autodiff's ``trace`` and ``return_all``.
_OWN_OPTIONS = frozenset(name for name, parameter in inspect.signature(optimizers.least_squares_lm).parameters.items()
                         if parameter.kind is parameter.KEYWORD_ONLY and name not in ("method", "bounds")) \
    | {"trace", "return_all"}
_LSMR_OPTIONS = frozenset(inspect.signature(scipy.sparse.linalg.lsmr).parameters) - {"A", "b"} | {"regularize"}


def least_squares(fun: Callable, x0, jac=None, bounds=None, method: str = "trf", ftol: float | None = 1e-8,
                  xtol: float | None = 1e-8, gtol: float | None = 1e-8, x_scale=None, loss="linear",
                  f_scale: float = 1.0, diff_step=None, tr_solver: str | None = None, tr_options: dict | None = None,
                  jac_sparsity=None, max_nfev: int | None = None, verbose: int = 0, args: tuple = (),
                  kwargs: dict | None = None, callback: Callable | None = None, workers=None, *,
                  options: dict | None = None) -> OptimizeResult:
    """Minimize F(x) = 0.5 sum rho(f_i(x)^2) as ``scipy.optimize.least_squares``, with exact Jacobians.

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is a callable: a replayed
    program of ``autodiff.function`` (``options={"trace": False}``: eager; residuals that cannot be
    traced run eagerly, and ``result.untraced_reason`` says why). Residuals of any shape are raveled
    (``result.fun`` and the rows of ``result.jac`` follow that order); ``x0`` may have any shape or be
    a pytree, and ``result.x``, ``result.grad`` and ``result.active_mask`` have its form.

    ``bounds`` are scipy's ``(lb, ub)`` (each a scalar or an array of x0's shape or size, a pytree of
    x0's structure for a pytree x0; ``-np.inf``/``np.inf`` or None for no bound) or a
    ``scipy.optimize.Bounds``. x0 outside the box is clipped into it (the message says so), and the
    residuals are never evaluated outside it; success then means the projected gradient test.

    Inside a transform, residuals that read a tracked Tensor make ``x``, ``fun`` and ``cost``
    differentiable in it (the implicit function theorem on the cost's exact Hessian; see
    :func:`minimize`). ``hessopt.covariance(result)`` is curve_fit's ``pcov``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args, **kwargs)`` -> the residuals.
    x0 : array_like or pytree
        The starting point.
    jac : callable or {'2-point', '3-point', 'cs'}, optional
        The Jacobian of the raveled residuals (a dense array, a sparse matrix or a ``LinearOperator``);
        scipy's finite-difference schemes and None give the exact one from autodiff.
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
    method : {'trf', 'dogbox', 'lm', 'gn'}, default 'trf'
        'trf', 'dogbox' and 'lm': Levenberg-Marquardt (module docstring); 'gn': Gauss-Newton.
    ftol, xtol, gtol : float or None
        Stop when a step lowers the cost by less than ``ftol`` relative, moves x by less than ``xtol``
        relative (in the norm scaled by the columns of J), or when ``||grad||_inf <= gtol``
        (the projected gradient in a box); None turns a test off, and one must stay above eps.
    x_scale : array_like or 'jac', optional
        Checked as scipy checks it. Levenberg-Marquardt scales x by the column norms of J (Moré), which
        makes its iterates the same under any fixed scaling of x, so this changes nothing ('jac').
    loss : {'linear', 'soft_l1', 'huber', 'cauchy', 'arctan'} or callable
        rho, applied as scipy does to (f / f_scale)^2; a callable returns rho, rho', rho'' as (3, m).
    f_scale : float
        The soft margin between inlier and outlier residuals.
    diff_step, tr_solver, tr_options, jac_sparsity, workers
        scipy's settings for finite differences and its trust-region solvers: checked, without effect
        (derivatives are exact; each step solves its least-squares system by LAPACK).
    max_nfev : int, optional
        At most this many evaluations of the residuals (the Jacobian's are not counted, as in scipy).
    verbose : {0, 1, 2}
        1: print the outcome; 2: also one line per iteration.
    args, kwargs
        Extra arguments of ``fun`` and ``jac``.
    callback : callable, optional
        ``callback(intermediate_result)`` (an OptimizeResult with x and cost) or ``callback(xk)``;
        raising ``StopIteration`` ends the run with status -2.
    options : dict, optional
        hessopt's own: ``trace``, ``keep_iterates``, ``damping``, ``maxiter``, ``disp``, ``return_all``, and
        the optimizer's ``ftol``, ``xtol``, ``gtol`` (overriding the keywords; 0 turns a test off); any
        other name is a TypeError, as scipy's least_squares, which takes no options, raises one.

    Returns
    -------
    scipy.optimize.OptimizeResult
        scipy's fields: ``x``, ``cost``, ``fun`` (the residuals f), ``jac`` (of the robust residuals when
        ``loss`` is not linear, as scipy's), ``grad``, ``optimality`` (the largest entry of the projected
        gradient), ``active_mask``, ``nfev``, ``njev``, ``status`` (scipy's codes; -3: no progress at
        working precision, -4: non-finite values), ``message``, ``success``; and ``nit``, ``history``.

    Raises
    ------
    TypeError
        If fun is not callable.
    ValueError
        For an unknown method, jac or loss, tolerances all below eps, bad settings or bounds.

    Examples
    --------
    Fit y = a exp(-b t) to exact data:

    >>> import numpy as np
    >>> import hessopt
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> y = 2 * np.exp(-0.5 * t)
    >>> hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 1.0]).x.round(6)
    array([2. , 0.5])

    With the rate held at or below 0.4, it ends on that bound:

    >>> result = hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 0.1],
    ...                                bounds=([0, 0], [np.inf, 0.4]))
    >>> result.x.round(6), result.active_mask
    (array([1.903881, 0.4     ]), array([0, 1]))
    """
    if loss == "linear" and not kwargs:   # inside a transform: x, fun and cost differentiable (not yet robust)
        differentiated = least_squares_through_solution(least_squares, dict(locals()))
        if differentiated is not None:
            return differentiated
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    if method not in METHODS:
        raise ValueError(f"unknown least-squares method {method!r}; choose one of {', '.join(map(repr, METHODS))}")
    _check_scipy_settings(x_scale, diff_step, tr_solver, tr_options, jac_sparsity, verbose, max_nfev)
    if not is_tree(x0) and np.iscomplexobj(x0):
        raise ValueError("x0 must be real (scipy's least_squares refuses complex x0 too)")
    robust = RobustResiduals(loss, f_scale)
    feasible = feasible_set(bounds, x0, pairs=False)
    options = {**_stopping(ftol, xtol, gtol, max_nfev, verbose), **_own_options(options)}
    trace = options.pop("trace", True)
    check_option("trace", trace)
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    call.x0, note = feasible.start(call.x0)
    residuals = _Residuals(fun, jac, call, kwargs or {}, trace, robust, feasible, tr_solver)
    _check_sparsity(jac_sparsity, residuals.value(call.x0).size, call.x0.size)
    result = optimizers.least_squares_lm(residuals.robust_residuals, call.x0, residuals.robust_jacobian,
                                         callback=call.callback, method=METHODS[method], bounds=feasible,
                                         **call.options)
    _as_scipy_result(result, residuals, feasible, jac)
    report_bounds(result, result.get("active_mask", np.zeros(call.x0.size, dtype=int)), note, call.unravel)
    if verbose:
        print(f"{result.message} Function evaluations {result.nfev}, final cost {result.cost:.4e}, "
              f"first-order optimality {result.optimality:.2e}.")
    return in_x0_precision(call.finish(result, ("x", "grad")), x0, ("x", "grad"))


def _check_scipy_settings(x_scale, diff_step, tr_solver, tr_options, jac_sparsity, verbose, max_nfev) -> None:
    """scipy's settings that have no effect here, refused where scipy refuses them."""
    if not (isinstance(x_scale, str) and x_scale == "jac") and x_scale is not None:
        try:
            scale = np.asarray(x_scale, dtype=float)
        except (TypeError, ValueError):
            scale = np.array(np.nan)
        if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError(f"x_scale must be 'jac' or an array of positive numbers, got {x_scale!r}")
    if diff_step is not None and not np.all(np.isfinite(real_array(diff_step, "diff_step"))):
        raise ValueError(f"diff_step must be None or finite numbers, got {diff_step!r}")
    if tr_solver not in (None, "exact", "lsmr"):
        raise ValueError(f"tr_solver must be None, 'exact' or 'lsmr', got {tr_solver!r}")
    if tr_options is not None and not isinstance(tr_options, dict):
        raise TypeError(f"tr_options must be a dict, got {type(tr_options).__name__}")
    unknown = sorted(set(tr_options or {}) - _LSMR_OPTIONS) if tr_solver == "lsmr" else []
    if unknown:   # scipy passes them to lsmr, which refuses them the same way
        raise TypeError(f"tr_options for tr_solver='lsmr' take lsmr's settings and 'regularize'; got {unknown}")
    if tr_solver == "exact" and jac_sparsity is not None:
        raise ValueError("tr_solver='exact' works only with dense Jacobians: jac_sparsity asks for a sparse one")
    if verbose not in (0, 1, 2):
        raise ValueError(f"verbose must be 0, 1 or 2, got {verbose!r}")
    if max_nfev is not None and not (isinstance(max_nfev, (int, np.integer)) and max_nfev > 0):
        raise ValueError(f"max_nfev must be None or a positive integer, got {max_nfev!r}")


def _check_sparsity(jac_sparsity, m: int, n: int) -> None:
    """scipy's check of ``jac_sparsity`` (which has no other effect here): an (m, n) structure."""
    if jac_sparsity is not None and np.shape(jac_sparsity) != (m, n):
        raise ValueError(f"jac_sparsity must have shape (m, n) = {(m, n)}, got {np.shape(jac_sparsity)}")


def _own_options(options) -> dict:
    """hessopt's own settings; anything else is refused (scipy's least_squares takes no options)."""
    options = as_options(options)
    unknown = sorted(set(options) - _OWN_OPTIONS)
    if unknown:
        raise TypeError(f"least_squares' options are hessopt's own ({', '.join(sorted(_OWN_OPTIONS))}); got "
                        f"{unknown}: scipy's settings are keyword arguments")
    return options


def _stopping(ftol, xtol, gtol, max_nfev, verbose) -> dict:
    """scipy's tolerances (None: off) and max_nfev as the optimizer's options."""
    tolerances = {"ftol": ftol, "xtol": xtol, "gtol": gtol}
    for name, value in tolerances.items():
        if value is not None and not (isinstance(value, (int, float, np.number)) and value >= 0):
            raise ValueError(f"{name} must be None or a non-negative number, got {value!r}")
    if all(value is None or value < _EPS for value in tolerances.values()):
        raise ValueError("At least one of the tolerances must be higher than machine epsilon "
                         f"({_EPS:.1e}): ftol={ftol!r}, xtol={xtol!r}, gtol={gtol!r}")
    options = {name: 0.0 if value is None else float(value) for name, value in tolerances.items()}
    if max_nfev is not None:
        options["maxiter"] = int(max_nfev) - 1   # one evaluation of the residuals per iteration, after x0's
    if verbose == 2:
        options["disp"] = True
    return options


class _Residuals:
    """The user's residuals f and Jacobian J on flat x, with the robust rewriting on top; the last
    two values of f are kept, so the Jacobian at an evaluated point and the result's ``fun`` cost
    no evaluation. Values come from plain calls of ``fun``; the Jacobian from autodiff's program of
    it (``trace``: replayed), the user's ``jac``, or finite differences where autodiff cannot follow."""

    def __init__(self, fun: Callable, jac, call, kwargs: dict, trace: bool, robust: RobustResiduals,
                 feasible, tr_solver: str | None):
        unravel, args, n = call.unravel, call.args, call.x0.size
        self.robust, self.recent = robust, []
        self.box = (feasible.lower, feasible.upper) if hasattr(feasible, "lower") else (-np.inf, np.inf)

        def flat(x):
            return residual_vector(fun(unravel(x), *args, **kwargs))

        self.plain = lambda x: np.ravel(fun(unravel(x), *args, **kwargs))   # finite differences ('cs': complex x)
        self.flat = flat   # values by a plain call: code autodiff cannot follow still has them
        self.traced = ad.function(flat, eager_fallback=True) if trace else None
        self.scheme = jac if isinstance(jac, str) else "2-point"
        self.note: str | None = None    # why autodiff could not give the Jacobian, once it could not
        if callable(jac):
            self.source = "jac"
            self.jacobian = lambda x: _dense(jac(unravel(x), *args, **kwargs), n, tr_solver)
        elif exact_derivatives(jac):
            self.source, self.autodiff = "autodiff", ad.jacobian(self.traced or flat)
            self.jacobian = self.exact_or_differenced
        else:
            raise ValueError(f"jac must be a callable, None or one of {', '.join(map(repr, FINITE_DIFFERENCES))} "
                             f"(exact, from autodiff); got {jac!r}")

    def exact_or_differenced(self, x: np.ndarray) -> np.ndarray:
        """autodiff's Jacobian, or, once the engine refused the residuals (code it cannot follow, as
        ``np.array([t0, t1])`` of Tensors), scipy's finite differences with the scheme of ``jac``."""
        if self.note is None:
            try:
                return np.asarray(self.autodiff(x), dtype=float)
            except TypeError as refusal:   # the engine's word for code it cannot differentiate
                self.source, self.note = "finite differences", str(refusal).split("\n")[0]
        return np.atleast_2d(approx_derivative(self.plain, x, method=self.scheme, f0=self.value(x), bounds=self.box))

    def value(self, x: np.ndarray) -> np.ndarray:
        for point, f in self.recent:
            if same_point(x, point):
                return f
        f = np.asarray(plain_value(self.flat(x)), dtype=float)
        self.recent = [(x.copy(), f), *self.recent[:1]]
        return f

    def robust_residuals(self, x: np.ndarray) -> np.ndarray:
        return self.robust.residuals(self.value(x))

    def robust_jacobian(self, x: np.ndarray) -> np.ndarray:
        return self.robust.jacobian(self.value(x), self.jacobian(x))


def _dense(value, n: int, tr_solver: str | None) -> np.ndarray:
    """A user's Jacobian (array, sparse matrix or LinearOperator) as a dense (m, n) array; a sparse
    one or an operator with ``tr_solver='exact'`` is refused, as scipy refuses it."""
    if tr_solver == "exact" and (scipy.sparse.issparse(value) or isinstance(value, LinearOperator)):
        raise ValueError("tr_solver='exact' works only with dense Jacobians; jac returned "
                         f"{type(value).__name__} (tr_solver=None or 'lsmr' takes it)")
    if scipy.sparse.issparse(value):
        value = value.toarray()
    elif isinstance(value, LinearOperator):
        value = value @ np.eye(n)
    return real_array(plain_value(value), "the value of jac").reshape(-1, n)


def _as_scipy_result(result: OptimizeResult, residuals: _Residuals, feasible, jac) -> None:
    """scipy's fields and status codes on the optimizer's result (over flat x)."""
    status = Status(result.status)
    if status == Status.SUCCESS:
        code = next((code for start, code in _SUCCESSES.items() if result.message.startswith(start)), 1)
    else:
        code = _FAILURES.get(status, -1)
    result.hessopt_status, result.status, result.success = status, code, code > 0
    result.fun = residuals.value(result.x)
    result.optimality = float(np.max(np.abs(feasible.stationarity(result.x, result.grad)), initial=0.0))
    result.jac_source = residuals.source
    if residuals.note is not None:
        result.message += (f" The Jacobian came from finite differences ({residuals.scheme!r}), which autodiff "
                           f"could not follow: {residuals.note}")
    elif isinstance(jac, str):
        result.message += f" The Jacobian was exact (autodiff), in place of jac={jac!r}."
    if residuals.traced is not None and residuals.traced.fallback_reason is not None:
        result.untraced_reason = residuals.traced.fallback_reason
