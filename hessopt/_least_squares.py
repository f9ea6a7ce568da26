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
from scipy.optimize import Bounds, OptimizeResult
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
from ._finite_differences import difference_jacobian
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
    ``scipy.optimize.Bounds``; an array bound of another shape is not broadcast, and an x0 outside the
    box is refused, as scipy refuses them. The residuals are never evaluated outside the box; success
    then means the projected gradient test.

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
        The Jacobian of the raveled residuals, (m, n) (a dense array, a sparse matrix or a
        ``LinearOperator``; for residuals or x0 of more dimensions also fun's shape followed by
        x0's); scipy's finite-difference schemes and None give the exact one from autodiff.
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
    method : {'trf', 'dogbox', 'lm', 'gn'}, default 'trf'
        'trf', 'dogbox' and 'lm': Levenberg-Marquardt (module docstring); 'gn': Gauss-Newton. 'lm'
        refuses what scipy's (MINPACK) refuses: bounds, a robust loss, ``jac_sparsity``, sparse or
        operator Jacobians, fewer residuals than variables and tolerances of None or below eps.
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
        hessopt's own: ``trace``, ``keep_iterates``, ``factor`` (the first trust radius over ||D x0||,
        MINPACK's), ``maxiter``, ``disp``, ``return_all``, and the optimizer's ``ftol``, ``xtol``, ``gtol``
        (overriding the keywords; 0 turns a test off); any other name is a TypeError, as scipy's
        least_squares, which takes no options, raises one.

    Returns
    -------
    scipy.optimize.OptimizeResult
        scipy's fields: ``x``, ``cost``, ``fun`` (the residuals f), ``jac`` (in the form the user's jac
        gave; for a robust loss scaled as scipy's, so that ``jac.T @ jac`` is the Gauss-Newton Hessian
        of the cost, :mod:`hessopt._robust_loss`), ``grad``, ``optimality`` (the largest entry of the projected
        gradient), ``active_mask``, ``nfev``, ``njev``, ``status`` (scipy's codes; -3: no progress at
        working precision, -4: non-finite values), ``message``, ``success``; and ``nit``, ``history``.

    Raises
    ------
    TypeError
        If fun is not callable.
    ValueError
        For an unknown method, jac or loss, tolerances all below eps, bad settings or bounds, an x0
        outside the bounds, a Jacobian of the wrong shape, or what method 'lm' refuses.

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
    _check_shapes(x0, bounds, x_scale)
    feasible = feasible_set(bounds, x0, pairs=False)
    _check_lm(method, feasible, robust, jac_sparsity)
    options = {**_stopping(ftol, xtol, gtol, max_nfev, verbose, method), **_own_options(options)}
    trace = options.pop("trace", True)
    check_option("trace", trace)
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    _check_feasible(feasible, call.x0)
    forms = _JacobianForms(method, tr_solver, x_scale)
    residuals = _Residuals(fun, jac, call, kwargs or {}, trace, robust, feasible, forms)
    m = residuals.value(call.x0).size
    _check_sparsity(jac_sparsity, m, call.x0.size)
    if method == "lm" and m < call.x0.size:
        raise ValueError(f"Method 'lm' doesn't work when the number of residuals ({m}) is less than the number of "
                         f"variables ({call.x0.size}), as in scipy; method='trf' runs the same algorithm for any m")
    result = optimizers.least_squares_lm(residuals.robust_residuals, call.x0, residuals.robust_jacobian,
                                         callback=call.callback, method=METHODS[method], bounds=feasible,
                                         **call.options)
    _as_scipy_result(result, residuals, feasible, jac)
    report_bounds(result, result.get("active_mask", np.zeros(call.x0.size, dtype=int)), None, call.unravel)
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


def _check_shapes(x0, bounds, x_scale) -> None:
    """scipy's least_squares broadcasts scalars only: an array bound or ``x_scale`` of an array x0
    must have x0's shape (or, for an x0 of more than one dimension, its size: hessopt's flat form)."""
    if is_tree(x0):
        return
    sides = (bounds.lb, bounds.ub) if isinstance(bounds, Bounds) else bounds
    named = dict(zip(("lb", "ub"), sides)) if isinstance(sides, (tuple, list)) and len(sides) == 2 else {}
    if not isinstance(x_scale, str):
        named["x_scale"] = x_scale
    shape = np.shape(np.atleast_1d(x0))
    for name, value in named.items():
        try:
            value_shape = np.shape(value) if value is not None else ()
        except ValueError:   # ragged: named where it is read
            continue
        if value_shape not in ((), shape, (int(np.prod(shape)),)):
            what = "x_scale" if name == "x_scale" else "bounds"
            raise ValueError(f"Inconsistent shapes between {what} and x0: {name} has shape {value_shape}, x0 {shape}. "
                             f"As in scipy's least_squares, {what} is a scalar or an array of x0's shape (an array "
                             "of another shape is not broadcast)")


def _check_lm(method: str, feasible, robust: RobustResiduals, jac_sparsity) -> None:
    """What scipy's method 'lm' (MINPACK) refuses, refused the same way, though hessopt's 'lm' runs
    the algorithm of 'trf', which takes them: code written for one library then runs on the other."""
    refusals = {"bounds": hasattr(feasible, "lower"), f"loss {robust.name!r} (only 'linear')": not robust.linear,
                "jac_sparsity": jac_sparsity is not None}
    refused = [what for what, given in refusals.items() if given]
    if method == "lm" and refused:
        raise ValueError(f"Method 'lm' doesn't support {' or '.join(refused)}, as in scipy: use method='trf' (the same "
                         "Levenberg-Marquardt algorithm here) or 'dogbox'")


def _check_feasible(feasible, x0: np.ndarray) -> None:
    """scipy's least_squares refuses an x0 outside the bounds (``minimize`` clips it instead)."""
    if not hasattr(feasible, "lower") or feasible.contains(x0):
        return
    outside = np.flatnonzero((x0 < feasible.lower) | (x0 > feasible.upper))
    first = outside[0]
    raise ValueError(f"x0 is infeasible: it lies outside the bounds in {outside.size} of {x0.size} entries (the first "
                     f"at flat index {first}: {x0[first]:g} not in [{feasible.lower[first]:g}, "
                     f"{feasible.upper[first]:g}]); scipy's least_squares refuses it too")


class _JacobianForms:
    """Which forms of a user's Jacobian the settings take: scipy's 'lm' and tr_solver='exact' take
    dense arrays only, x_scale='jac' no LinearOperator (it has no column norms)."""

    def __init__(self, method: str, tr_solver: str | None, x_scale):
        self.dense_only = ("method='lm'" if method == "lm" else "tr_solver='exact'" if tr_solver == "exact"
                           else None)
        self.scaled = isinstance(x_scale, str) and x_scale == "jac"

    def check(self, value) -> None:
        sparse, operator = scipy.sparse.issparse(value), isinstance(value, LinearOperator)
        if (sparse or operator) and self.dense_only:
            raise ValueError(f"{self.dense_only} works only with dense Jacobians, as in scipy; jac returned "
                             f"{type(value).__name__} (method='trf' with tr_solver=None or 'lsmr' takes it)")
        if operator and self.scaled:
            raise ValueError("x_scale='jac' can't be used when jac returns a LinearOperator (it has no column norms), "
                             "as in scipy")


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


def _stopping(ftol, xtol, gtol, max_nfev, verbose, method: str) -> dict:
    """scipy's tolerances (None: off; for 'lm' each must be on and above eps, as scipy's MINPACK
    needs) and max_nfev as the optimizer's options."""
    tolerances = {"ftol": ftol, "xtol": xtol, "gtol": gtol}
    for name, value in tolerances.items():
        if value is not None and not (isinstance(value, (int, float, np.number)) and value >= 0):
            raise ValueError(f"{name} must be None or a non-negative number, got {value!r}")
    if all(value is None or value < _EPS for value in tolerances.values()):
        raise ValueError("At least one of the tolerances must be higher than machine epsilon "
                         f"({_EPS:.1e}): ftol={ftol!r}, xtol={xtol!r}, gtol={gtol!r}")
    if method == "lm" and any(value is None or value < _EPS for value in tolerances.values()):
        raise ValueError(f"All tolerances must be higher than machine epsilon ({_EPS:.1e}) for method 'lm', as in "
                         f"scipy: ftol={ftol!r}, xtol={xtol!r}, gtol={gtol!r} (method='trf' takes None to turn "
                         "a test off)")
    options = {name: 0.0 if value is None else float(value) for name, value in tolerances.items()}
    if max_nfev is not None:
        options["maxiter"] = int(max_nfev) - 1   # one evaluation of the residuals per iteration, after x0's
    if verbose == 2:
        options["disp"] = True
    return options


class _Residuals:
    """The user's residuals f and Jacobian J on flat x, with the robust rewriting on top; the last
    two values of f are kept, so the Jacobian at an evaluated point and the result's ``fun`` cost
    no evaluation, and the last J, for the result's ``jac``. Values come from plain calls of ``fun``;
    the Jacobian from autodiff's program of it (``trace``: replayed), the user's ``jac`` (in the
    ``forms`` the settings take; ``form`` records a sparse or operator one, which the result's
    ``jac`` keeps), or finite differences where autodiff cannot follow."""

    def __init__(self, fun: Callable, jac, call, kwargs: dict, trace: bool, robust: RobustResiduals,
                 feasible, forms: _JacobianForms):
        unravel, args = call.unravel, call.args
        self.robust, self.recent, self.last_jacobian, self.form = robust, [], (None, None), None
        self.box = (feasible.lower, feasible.upper) if hasattr(feasible, "lower") else (-np.inf, np.inf)
        x_tree = unravel(call.x0)
        self.x_shape = np.shape(x_tree) if isinstance(x_tree, np.ndarray) else (call.x0.size,)
        self.shape = None   # of fun's value, once evaluated

        def raw(x):
            return fun(unravel(x), *args, **kwargs)

        def flat(x):
            return residual_vector(raw(x))

        self.raw, self.flat = raw, flat   # values by a plain call: code autodiff cannot follow still has them
        self.traced = ad.function(flat, eager_fallback=True) if trace else None
        self.scheme = "3-point" if jac in ("3-point", "cs") else "2-point"   # 'cs': see difference_jacobian
        self.note: str | None = None    # why autodiff could not give the Jacobian, once it could not
        if callable(jac):
            self.source, self.forms = "jac", forms
            self.given = lambda x: jac(unravel(x), *args, **kwargs)
            self.jacobian = self.users
        elif exact_derivatives(jac):
            self.source, self.autodiff = "autodiff", ad.jacobian(self.traced or flat)
            self.jacobian = self.exact_or_differenced
        else:
            raise ValueError(f"jac must be a callable, None or one of {', '.join(map(repr, FINITE_DIFFERENCES))} "
                             f"(exact, from autodiff); got {jac!r}")

    def exact_or_differenced(self, x: np.ndarray) -> np.ndarray:
        """autodiff's Jacobian, or, once the engine refused the residuals (code it cannot follow, as
        ``np.array([t0, t1])`` of Tensors), finite differences in the box with the scheme of ``jac``
        (:func:`~hessopt._finite_differences.difference_jacobian`; ``'cs'`` read as ``'3-point'``)."""
        if self.note is None:
            try:
                return np.asarray(self.autodiff(x), dtype=float)
            except TypeError as refusal:   # the engine's word for code it cannot differentiate
                self.source, self.note = "finite differences", str(refusal).split("\n")[0]
        lower, upper = (np.broadcast_to(np.asarray(bound, dtype=float), x.shape) for bound in self.box)
        return difference_jacobian(self.flat, x, self.value(x), lower, upper, self.scheme)

    def users(self, x: np.ndarray) -> np.ndarray:
        """The user's Jacobian at x (an array, sparse matrix or LinearOperator) as a dense (m, n)
        array, refused in a form the settings do not take or of a shape that is not (m, n) (or, for
        residuals or x0 of more dimensions, fun's shape followed by x0's)."""
        value = self.given(x)
        self.forms.check(value)
        if scipy.sparse.issparse(value):
            value, self.form = value.toarray(), "sparse"
        elif isinstance(value, LinearOperator):
            value, self.form = value @ np.eye(x.size), "operator"
        matrix = real_array(plain_value(value), "the value of jac")
        m, n = self.value(x).size, x.size
        full = tuple(self.shape) + tuple(self.x_shape)
        if matrix.size != m * n or (matrix.ndim == 2 and matrix.shape != (m, n)) \
                or (matrix.ndim > 2 and matrix.shape != full) or (matrix.ndim < 2 and min(m, n) > 1):
            raise ValueError(f"jac returned shape {matrix.shape}; it must be (m, n) = {(m, n)}, m the number of "
                             f"residuals and n of variables" + (f", or {full}" if len(full) > 2 else ""))
        return matrix.reshape(m, n)

    def value(self, x: np.ndarray) -> np.ndarray:
        for point, f in self.recent:
            if same_point(x, point):
                return f
        value = self.raw(x)
        f = np.asarray(plain_value(residual_vector(value)), dtype=float)
        self.shape = np.shape(plain_value(value))
        self.recent = [(x.copy(), f), *self.recent[:1]]
        return f

    def robust_residuals(self, x: np.ndarray) -> np.ndarray:
        return self.robust.residuals(self.value(x))

    def robust_jacobian(self, x: np.ndarray) -> np.ndarray:
        jacobian = self.jacobian(x)
        self.last_jacobian = (x.copy(), jacobian)
        return self.robust.jacobian(self.value(x), jacobian)

    def result_jacobian(self, x: np.ndarray):
        """scipy's ``jac`` of the result at x: J, scaled for a robust loss (:mod:`hessopt._robust_loss`),
        in the form the user's jac gave (a sparse array or a LinearOperator)."""
        point, jacobian = self.last_jacobian
        jacobian = self.robust.gauss_newton_jacobian(self.value(x), jacobian if same_point(x, point)
                                                     else self.jacobian(x))
        if self.form == "sparse":
            return scipy.sparse.csr_array(jacobian)
        return scipy.sparse.linalg.aslinearoperator(jacobian) if self.form == "operator" else jacobian


def _as_scipy_result(result: OptimizeResult, residuals: _Residuals, feasible, jac) -> None:
    """scipy's fields and status codes on the optimizer's result (over flat x)."""
    status = Status(result.status)
    if status == Status.SUCCESS:
        code = next((code for start, code in _SUCCESSES.items() if result.message.startswith(start)), 1)
    else:
        code = _FAILURES.get(status, -1)
    result.hessopt_status, result.status, result.success = status, code, code > 0
    result.fun, result.jac = residuals.value(result.x), residuals.result_jacobian(result.x)
    result.optimality = float(np.max(np.abs(feasible.stationarity(result.x, result.grad)), initial=0.0))
    result.jac_source = residuals.source
    if residuals.note is not None:
        result.message += (f" The Jacobian came from finite differences ({residuals.scheme!r}), which autodiff "
                           f"could not follow: {residuals.note}")
    elif isinstance(jac, str):
        result.message += f" The Jacobian was exact (autodiff), in place of jac={jac!r}."
    if residuals.traced is not None and residuals.traced.fallback_reason is not None:
        result.untraced_reason = residuals.traced.fallback_reason
