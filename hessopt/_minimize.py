"""hessopt.minimize and friends: scipy's interface, exact derivatives from autodiff.

Each iterate records its gradient once (``autodiff.hessian_operator``); every Hessian-vector product
at that iterate is one backward sweep over the cached recording, and a full Hessian is one batched
sweep taken only where the method asks for it (at accepted points). By default the objective is
traced once (``autodiff.function``) and those recordings are replayed as plain NumPy programs; an
objective that cannot be traced runs eagerly, with the same results.
"""
from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import HessianUpdateStrategy, OptimizeResult, OptimizeWarning

import autodiff as ad
import optimizers
import optimizers.sparse
from optimizers.bounds import restrict
from optimizers.krylov import CURVATURE_PROBE_STEPS, clearly_negative, leftmost_curvature
from optimizers.objective import MESSAGES, Status
from optimizers.sparse import SPARSE_MIN_SIZE

from ._arguments import (
    FINITE_DIFFERENCES,
    Call,
    UserHessian,
    as_options,
    check_option,
    exact_derivatives,
    gradient_vector,
    normalize,
    real_array,
    residual_vector,
    scalar_value,
    scipy_rosen_derivatives,
    value_and_gradient,
)
from ._bounds import BOUNDED_DEFAULT, binds, box_from_bounds, in_the_box, report_bounds
from ._hessians import GradientDerivative, LastGradient, QuasiNewton, SparseAutodiff, user_sparse_operator

DEFAULT_METHOD = "newton-cg"   # as scipy's minimize without bounds; "trust-ncg" with bounds
METHODS: dict[str, Callable] = {
    "newton": optimizers.minimize_newton,
    "newton-cg": optimizers.minimize_newton_cg,
    "trust-ncg": optimizers.minimize_trust_ncg,
    "trust-krylov": optimizers.minimize_trust_krylov,
    "trust-exact": optimizers.minimize_trust_exact,
    "dogleg": optimizers.minimize_dogleg,
    "arc": optimizers.minimize_arc,
    "hessian-free": optimizers.minimize_hessian_free,
}
# scipy's methods that return ``result.hess``, the user's Hessian at the solution
_TRUST_REGION_METHODS = frozenset({"trust-ncg", "trust-krylov", "trust-exact", "dogleg"})
# The methods that factor the Hessian's matrix, which may be sparse.
SPARSE_METHODS = (optimizers.minimize_newton, optimizers.minimize_trust_exact, optimizers.minimize_dogleg)
# The Krylov methods, whose solves a sparse Hessian's incomplete factorization may precondition.
PRECONDITIONED_METHODS = (optimizers.minimize_newton_cg, optimizers.minimize_trust_ncg,
                          optimizers.minimize_trust_krylov)
# First-order baselines: accepted by minimize, not part of the second-order suite.
FIRST_ORDER: dict[str, Callable] = {"adam": optimizers.minimize_adam, "gd": optimizers.minimize_gd}


class AutodiffDerivatives:
    """f, gradient, HVPs and Hessians of ``f`` on flat float vectors, from autodiff.

    The Hessian operator of the last point asked for is kept: its value and gradient were computed
    once, and each product is one sweep of its recording. Plain values at other points (line-search
    and trust-region trial points) are one NumPy evaluation with no tape.

    With ``variables`` (a list of Variables), ``f`` takes no argument and reads them: each point is
    assigned to the Variables before ``f`` runs. With ``ggn=(predict, loss)`` the operator is the
    generalized Gauss-Newton one of loss(predict(...)), ``predict`` called like ``f``. With
    ``trace`` every derivative (gradients, products, dense Hessians, Gauss-Newton products) is a
    replayed program of ``autodiff.function`` (f eagerly where it cannot be traced:
    ``untraced_reason`` then says why); plain values are NumPy calls of f either way. ``shared``
    holds the autodiff.functions of earlier runs of the same f (minimize_many's runs in one
    process), by role: they are replayed instead of traced again, and those made here are added.
    """

    _shared: dict | None = None     # (a class default: subclasses that build lazily share nothing)

    def __init__(self, f: Callable, unravel: Callable | None = None, variables: list | None = None,
                 ggn: tuple[Callable, Callable] | None = None, trace: bool = False, shared: dict | None = None):
        self.f = f                      # a function of the structure unravel(x) (or of x itself)
        self.unravel = unravel or (lambda x: x)
        self.variables = variables
        self._traced: list = []         # the autodiff.functions made here (untraced_reason)
        self._shared = shared
        objective = self._replayed(f, trace, "objective")
        if ggn is None:
            self._operator_at = lambda point: ad.hessian_operator(objective, point)
        else:
            predict, loss = self._replayed(ggn[0], trace, "predict"), ggn[1]
            self._operator_at = lambda point: ad.ggn_operator(predict, loss, point)
        # first-order methods: the value and gradient alone, of f of the point (the Variables' values)
        self._value_and_grad = ad.value_and_grad(objective if variables is None else
                                                 self._replayed(lambda _: f(), trace, "variables"))
        self._x = None
        self._operator = None

    def _replayed(self, g: Callable, trace: bool, role: str) -> Callable:
        """``autodiff.function(g)`` when tracing (eagerly where it cannot be traced), else g; the
        shared one of this role, if there is one."""
        if not trace:
            return g
        traced = None if self._shared is None else self._shared.get(role)
        if traced is None:
            traced = ad.function(g, eager_fallback=True)
            if self._shared is not None:
                self._shared[role] = traced
        self._traced.append(traced)
        return traced

    def point(self, x: np.ndarray):
        """What ``f`` and the operators take at x: the structure ``unravel(x)``, or the Variables
        holding x."""
        if self.variables is None:
            return self.unravel(x)
        for variable, value in zip(self.variables, ad.tree.flatten(self.unravel(x))[0]):
            variable.assign(value)
        return self.variables

    @property
    def untraced_reason(self) -> str | None:
        """Why the objective runs eagerly (None: traced, or tracing off)."""
        return next((t.fallback_reason for t in self._traced if t.fallback_reason is not None), None)

    def call(self, x: np.ndarray):
        point = self.point(x)
        return self.f() if self.variables is not None else self.f(point)

    def _is_current(self, x: np.ndarray) -> bool:
        """Whether x is the point of the kept operator (``np.array_equal`` without its overhead,
        which showed in the profile of every Hessian-vector product)."""
        return self._x is not None and x.shape == self._x.shape and bool((x == self._x).all())

    def at(self, x: np.ndarray) -> ad.HessianOperator:
        if not self._is_current(x):
            self._x = self._operator = None   # the old recording goes before the new one is made
            self._operator = self._operator_at(self.point(x))
            self._x = np.array(x, copy=True)
        return self._operator

    def fun(self, x: np.ndarray) -> float:
        if self._is_current(x):
            return self._operator.value
        return np.asarray(_value(self.call(x)))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """f(x) and its gradient, with no recording kept (first-order methods)."""
        value, gradient = self._value_and_grad(self.point(x))
        return np.asarray(_value(value)), np.concatenate([np.ravel(_value(g)) for g in ad.tree.flatten(gradient)[0]])

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).gradient

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return self.at(x).matvec(p)

    def hess(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).to_dense()

    def solve(self, solver: Callable, x0: np.ndarray, *args, **kwargs) -> OptimizeResult:
        """``solver(*args, **kwargs)``; the Variables, if any, then hold its ``x`` (or x0 again if
        it raises), and ``untraced_reason`` says why the objective ran eagerly, if it did."""
        try:
            result = solver(*args, **kwargs)
        except BaseException:
            if self.variables is not None:
                self.point(x0)
            raise
        if self.variables is not None:
            self.point(result.x)
        if self.untraced_reason is not None:
            result.untraced_reason = self.untraced_reason
        return result


def _method(method: str) -> Callable:
    try:
        return {**METHODS, **FIRST_ORDER}[method.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS) + sorted(FIRST_ORDER)}") \
            from None


def minimize(fun: Callable, x0, args: tuple = (), method: str | None = None,
             jac: Callable | bool | None = None, hess=None,
             hessp: Callable | None = None, bounds=None, constraints=(), tol: float | None = None,
             callback: Callable | None = None, options: dict | None = None) -> OptimizeResult:
    """Minimize ``fun(x, *args)`` with a second-order method; scipy.optimize.minimize's interface.

    Derivatives default to exact ones from autodiff (``fun`` is plain NumPy code); ``jac=None``,
    ``False`` or a finite-difference scheme ("2-point", ...) all mean exact derivatives.
    User-supplied ``jac`` (or ``jac=True``: fun returns (f, g)), ``hess`` (returning an array, a
    sparse matrix or a LinearOperator; or a ``scipy.optimize.HessianUpdateStrategy`` such as
    ``BFGS()``, updated at each iterate) and ``hessp`` are honoured. With a user gradient and no
    ``hess``/``hessp``, second derivatives are the derivative of that gradient: autodiff of it when
    it is NumPy code, else its finite differences, as scipy's (the message then says so);
    ``result.hessian_source`` names the source. User functions get a copy of x, as in scipy.
    ``bounds=None`` and empty ``constraints`` are accepted; anything else is refused by name.
    ``x0`` may be an array-like (a list of numbers is a
    vector, as in scipy; any shape is kept) or a pytree (dict, namedtuple, or list/tuple holding
    arrays): ``result.x`` and ``result.jac`` have its form, and so do ``jac``'s and ``hessp``'s
    arguments. ``tol`` sets ``gtol``. ``callback(xk)`` gets the iterate after each iteration, a
    callback whose one parameter is named ``intermediate_result`` the OptimizeResult (scipy's
    rule). Options: each method's own and scipy's names for its counterpart (those without effect
    here are listed in README "scipy habits"), each checked before anything is evaluated;
    ``maxiter`` 0 or less makes no iteration; ``disp`` prints the iteration table and warns when
    the run fails (scipy's categories); ``return_all`` gives ``result.allvecs``; unknown options
    warn and are ignored, as in scipy. A start point where f or the gradient is not finite gives
    a failed result (status 3), not an exception. The result has scipy's fields plus ``history``, column-wise
    (``optimizers.History``): ``history["f"]``, ``["gnorm"]``, the cumulative ``["nfev"]``,
    ``["njev"]``, ``["nhev"]``, the method's own columns, and ``["x"]``, the iterates as flat
    vectors (a pytree x0 in ``ad.ravel`` order), unless ``options={"keep_iterates": False}``.
    ``options={"trace": False}`` turns off tracing: by default every derivative (gradients,
    Hessian-vector products, dense Hessians, Gauss-Newton products, the first-order methods'
    gradients) is a replayed program of ``autodiff.function(fun)``, with the same iterates as eager
    evaluation; a ``fun`` that cannot be traced (say, it calls ``.numpy()``) runs eagerly, and
    ``result.untraced_reason`` says why. ``"newton"``, ``"trust-exact"`` and ``"dogleg"`` factor
    sparse Hessians as sparse matrices: from 1,000 variables on, when the pattern found in the
    recorded program at x0 is under 5% dense, each iterate's Hessian comes from
    ``autodiff.sparse_hessian`` (``options={"sparse": False}``: never; ``True``: at any size);
    ``result.sparse`` says whether it did and ``result.dense_reason`` why not, where it was
    asked for or considered (:mod:`optimizers.sparse`). ``"newton-cg"``, ``"trust-ncg"`` and
    ``"trust-krylov"`` precondition their Krylov solves with the sparse Hessian's incomplete
    Cholesky factorization once a solve takes more than 100 products on 1,000 variables or more
    (``options={"precondition": False}``: never; ``True``: from the first iterate);
    ``result.preconditioned`` says whether they did and ``result.precondition_reason`` when it
    started or why not (:mod:`optimizers.preconditioning`).

    Models: when ``x0`` is a list of Variables (``model.trainable_variables``), ``fun(*args)`` takes
    no parameters and reads the Variables, as Keras' ``minimize(loss, var_list)``; at the end the
    Variables hold the solution (and, if the run raises, their initial values). ``"hessian-free"``
    takes ``options={"ggn": (predict, loss)}``: ``predict`` is called like ``fun`` (with the
    parameters, or with no argument for Variables) and returns predictions, ``loss`` maps them to
    a scalar with ``loss(predict(x)) == fun(x)``; CG then runs on generalized Gauss-Newton products
    (Martens 2010). ``"adam"`` and ``"gd"`` are first-order baselines.

    Bounds: ``bounds`` is a ``scipy.optimize.Bounds`` or a sequence of ``(lo, hi)`` pairs (None or
    an infinity for no bound), one per entry of x0 in its raveled order, or, for a pytree x0, a
    pytree of x0's structure with a pair per array; ``lo == hi`` fixes a variable. trust-ncg and
    trust-krylov (the default with bounds) become TRON, Lin & Moré's (1999) bound-constrained
    trust-region Newton method, trust-exact and dogleg the same on the dense Hessian, newton-cg
    and newton Bertsekas' (1982) projected Newton method, gd and adam projected updates; arc and
    hessian-free refuse bounds. ``fun`` is never evaluated outside the box (x0 outside it is
    clipped into it, and the message says so); success means the projected gradient passes the
    gradient test and the free variables show no negative curvature. The result has
    ``active_mask`` in the form of x0 (-1 at a lower bound, +1 at an upper one, 0 free, as
    scipy's ``least_squares``), and the history an ``active`` column, the bounds x is on.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float`` (no parameters for Variables).
    x0 : array_like, pytree, or list of Variables
        The starting point.
    args : tuple, optional
        Extra arguments of fun, jac, hess and hessp.
    method : str, optional
        One of ``hessopt.METHODS`` (newton, newton-cg, trust-ncg, trust-krylov, trust-exact,
        dogleg, arc, hessian-free), or "adam", "gd"; case-insensitive. Default (None) "newton-cg",
        and "trust-ncg" with bounds.
    jac, hess, hessp : optional
        User derivatives, as in scipy; exact ones from autodiff where not given.
    bounds : scipy.optimize.Bounds, sequence of (lo, hi) pairs, or pytree of pairs, optional
        Bound constraints (see above).
    constraints : ()
        General constraints are not supported: anything but an empty sequence (or None) is refused.
    tol : float, optional
        Sets ``gtol``.
    callback : callable, optional
        ``callback(xk)`` or ``callback(intermediate_result)``.
    options : dict, optional
        ``maxiter``, ``gtol``, ``disp``, ``keep_iterates``, ``return_all`` and the method's own.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``njev``, ``nhev``, ``status``, ``success``,
        ``message``, ``history``, for the second-order methods ``hessian_source``
        ("autodiff", "autodiff of the gradient", "finite differences of the gradient", "hess",
        "hessp", "quasi-Newton (BFGS updates)", ...), with bounds ``active_mask``, and as in scipy
        ``hess``, the user's ``hess`` at ``x``, from trust-ncg, trust-krylov, trust-exact and dogleg.

    Raises
    ------
    TypeError
        If fun is not callable, derivatives have the wrong type, or an option is of the wrong kind.
    ValueError
        For an unknown method, an option out of range, jac/hess/hessp with Variables, bad
        bounds (which entry, and why), bounds with a method that does not take them, or
        constraints.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> import hessopt
    >>> rosenbrock = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> result = hessopt.minimize(rosenbrock, [-1.2, 1.0], method="trust-ncg")
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    >>> hessopt.minimize(lambda p: np.sum((p["w"] - 1) ** 2) + p["b"] ** 2, {"w": np.zeros(2), "b": 3.0}).x
    {'w': array([1., 1.]), 'b': array(0.)}
    >>> w = ad.Variable([0.0, 0.0])                 # a model's parameters: a loss of no argument
    >>> _ = hessopt.minimize(lambda: np.sum((w - [1.0, 2.0]) ** 2), [w], method="newton")
    >>> w.numpy()
    array([1., 2.])

    Non-negative least squares: the first variable ends on its bound.

    >>> A, b = np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([-1.0, 1.0])
    >>> result = hessopt.minimize(lambda x: np.sum((A @ x - b) ** 2), [1.0, 1.0], bounds=[(0, None)] * 2)
    >>> result.x.round(6), result.active_mask
    (array([0., 1.]), array([-1,  0]))
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    _refuse_constraints(constraints)
    box = box_from_bounds(bounds, x0)
    if method is None:
        method = BOUNDED_DEFAULT if binds(box) else DEFAULT_METHOD
    solver = _method(method)
    jac, hess, hessp = scipy_rosen_derivatives(fun, jac, hess, hessp)
    options = as_options(options)
    if tol is not None:
        check_option("gtol", tol, label="tol")
        options.setdefault("gtol", tol)
    ggn = _ggn_option(options, method)
    trace = options.pop("trace", True)
    check_option("trace", trace)
    call = normalize(x0, args, callback, options, solver, method.lower())
    start = call.x0
    box, call.x0, note = in_the_box(box, call.x0, method.lower())
    variables = _variables(x0)
    if variables is None:
        derivatives = AutodiffDerivatives(lambda tree: scalar_value(fun(tree, *call.args)), call.unravel,
                                          ggn=ggn, trace=trace, shared=_shared_traces(fun, args))
    elif exact_derivatives(jac) and exact_derivatives(hess) and hessp is None:
        derivatives = AutodiffDerivatives(lambda: scalar_value(fun(*call.args)), call.unravel, variables, ggn,
                                          trace)
    else:
        raise ValueError("with Variables as x0, derivatives come from autodiff: leave jac, hess and "
                         "hessp unset")
    if ggn is not None:
        _check_split(derivatives, call.x0)
    first_order = solver in FIRST_ORDER.values()
    if first_order and exact_derivatives(jac):
        flat_fun, flat_jac, gradient, counted = derivatives.value_and_grad, True, None, None
    else:
        flat_fun, flat_jac, gradient, counted = _first_derivatives(fun, jac, call, derivatives)
    last = LastGradient(flat_fun, pair=True) if flat_jac is True else LastGradient(flat_jac)
    if first_order:
        flat_hess = flat_hessp = operator = source = None
    else:
        flat_hess, flat_hessp, operator, source = _second_derivatives(
            hess, hessp, call, derivatives, gradient=gradient, last=last, trace=trace, ggn=ggn is not None)
    if isinstance(source, (QuasiNewton, GradientDerivative)):   # they read the run's last gradient
        flat_fun, flat_jac = (last, True) if flat_jac is True else (flat_fun, last)
    dense_reason = precondition_reason = None
    if solver in SPARSE_METHODS:
        operator, source, dense_reason = _sparse_source(call, derivatives, operator, source,
                                                        call.options.get("sparse"))
    if solver in PRECONDITIONED_METHODS and box is None:
        operator, precondition_reason = _preconditioning_source(call, derivatives, operator, source,
                                                                call.options.get("precondition"))
    bounded = {} if box is None else {"bounds": box}
    result = derivatives.solve(solver, start, flat_fun, call.x0, flat_jac, hess=flat_hess, hessp=flat_hessp,
                               callback=call.callback, operator=operator, **bounded, **call.options)
    if callable(hess) and method.lower() in _TRUST_REGION_METHODS:   # as scipy's: the user's Hessian at x
        user = source if isinstance(source, UserHessian) else UserHessian(hess, call.unravel, call.args, start.size)
        result.hess = user.at(result.x)
    if source is not None:
        _report_hessian(result, source)
    if dense_reason is not None and not result.sparse:
        result.dense_reason = dense_reason
    if precondition_reason is not None:
        result.precondition_reason = precondition_reason
    for sparse_source in (source, operator):
        if isinstance(sparse_source, SparseAutodiff) and sparse_source.untraced_reason is not None:
            result.setdefault("untraced_reason", sparse_source.untraced_reason)
    if isinstance(source, QuasiNewton) and result.success and call.options.get("check_second_order", True):
        exact = GradientDerivative(gradient, last, trace=trace) if gradient is not None else derivatives.at
        matvec, free = exact(result.x).matvec, np.ones(result.x.size, dtype=bool)
        if box is not None:   # with bounds, the curvature that counts is that of the free variables
            free = box.free(result.x)
            matvec = restrict(matvec, free)
        if free.any():
            _check_curvature(result, matvec, int(free.sum()))
    if counted is None:
        result.njev += last.extra
    else:   # every call of the user's gradient, the Hessian's recordings and differences too
        result.njev = counted.calls
        if flat_jac is True:
            result.nfev = counted.calls   # jac=True: each gradient is a call of fun
    if bounds is not None:
        report_bounds(result, result.get("active_mask", np.zeros(start.size, dtype=int)), note,
                      call.unravel)
    return call.finish(result)


class SharedTraces(threading.local):
    """The autodiff.functions of one ``fun`` and ``args`` that every ``minimize`` call with them,
    in this thread, replays instead of tracing fun again (``AutodiffDerivatives``' ``shared``):
    minimize_many's runs made here. Set for the runs' duration (``with SHARED_TRACES.of(...)``);
    a call of any other fun or args (an objective that itself calls minimize) traces its own."""

    fun: Callable | None = None
    args: object = None
    traces: dict | None = None

    @contextmanager
    def of(self, fun: Callable, args: object, traces: dict):
        kept = self.fun, self.args, self.traces
        self.fun, self.args, self.traces = fun, args, traces
        try:
            yield
        finally:
            self.fun, self.args, self.traces = kept


SHARED_TRACES = SharedTraces()


def _shared_traces(fun: Callable, args: object) -> dict | None:
    """The traces ``minimize(fun, x0, args)`` shares in this thread, if any (``SharedTraces``)."""
    return SHARED_TRACES.traces if fun is SHARED_TRACES.fun and args is SHARED_TRACES.args else None


def _refuse_constraints(constraints) -> None:
    """scipy's empty ``constraints`` (or None) are accepted; anything else is refused by name, never
    ignored (scipy's Newton-CG and trust-region methods warn and drop them)."""
    if constraints is not None and not (isinstance(constraints, (tuple, list)) and len(constraints) == 0):
        raise ValueError("constraints are not supported (bounds are: pass bounds=); hessopt's methods "
                         "take no general constraints (scipy.optimize.minimize with SLSQP or "
                         f"trust-constr does); got {type(constraints).__name__} {constraints!r:.60}")


def _variables(x0) -> list | None:
    """The Variables when x0 is a structure of them (a model's trainable_variables), else None."""
    leaves = ad.tree.flatten(x0)[0]
    return leaves if leaves and all(isinstance(leaf, ad.Variable) for leaf in leaves) else None


def _ggn_option(options: dict, method: str) -> tuple[Callable, Callable] | None:
    """Take ``options["ggn"]``, the (predict, loss) split for Gauss-Newton products, if given."""
    ggn = options.pop("ggn", None)
    if ggn is None:
        return None
    if method.lower() != "hessian-free":
        raise ValueError(f"the 'ggn' option is for method='hessian-free', not {method!r}")
    if not (isinstance(ggn, (tuple, list)) and len(ggn) == 2 and all(map(callable, ggn))):
        raise TypeError("options['ggn'] must be a pair (predict, loss) of callables")
    return tuple(ggn)


def _check_split(derivatives: AutodiffDerivatives, x0: np.ndarray) -> None:
    """loss(predict(x0)) must be fun(x0): the products and the objective describe one function."""
    value = float(derivatives.fun(x0))     # before the operator exists: a plain evaluation
    split = derivatives.at(x0).value
    if not np.isclose(split, value, rtol=1e-8, atol=1e-12):
        raise ValueError(f"options['ggn']: loss(predict(x0)) = {split!r} but fun(x0) = {value!r}; "
                         "they must describe the same objective")


class _Counted:
    """A function with every call counted."""

    def __init__(self, function: Callable):
        self._function, self.calls = function, 0

    def __call__(self, x):
        self.calls += 1
        return self._function(x)


def _first_derivatives(fun: Callable, jac, call: Call, derivatives: AutodiffDerivatives):
    """(f, gradient, the user's gradient, the user's counted function) on flat vectors for the
    optimizers (gradient True: f returns the pair). The user's gradient (None without one) maps
    flat x, ndarray or Tensor, to the flat gradient: second derivatives are its derivative."""
    unravel, args, n = call.unravel, call.args, call.x0.size
    if callable(jac):
        gradient = _Counted(lambda x: gradient_vector(jac(unravel(x), *args), n, "jac"))
        return lambda x: scalar_value(fun(unravel(x), *args)), gradient, gradient, gradient
    if jac is True:
        def values(x):
            value, g = value_and_gradient(fun(unravel(x), *args))
            return value, gradient_vector(g, n, "fun's gradient (jac=True)")
        pair = _Counted(values)
        return pair, True, lambda x: pair(x)[1], pair
    if exact_derivatives(jac):
        return derivatives.fun, derivatives.jac, None, None
    raise ValueError(f"jac must be a callable, True (fun returns (f, g)), or None/False/"
                     f"{'/'.join(FINITE_DIFFERENCES)} (exact, from autodiff); got {jac!r}")


class _Named(NamedTuple):
    """A Hessian source that is what the user gave or autodiff of fun: its name, no note, and
    ``evaluations`` to report as nhev (None: the optimizer's count)."""
    name: str
    note: str | None = None
    evaluations: int | None = None


def _second_derivatives(hess, hessp, call: Call, derivatives: AutodiffDerivatives, *,
                        gradient: Callable | None, last: LastGradient, trace: bool, ggn: bool):
    """(hess, hessp, operator, source) on flat vectors. In scipy's order of precedence: the user's
    ``hess`` (``hessp`` then serves the products, if given), a ``HessianUpdateStrategy``, the
    user's ``hessp``; with none of them, the derivative of the user's gradient when there is one
    (:class:`~hessopt._hessians.GradientDerivative`), else autodiff's operator of each point
    (``AutodiffDerivatives.at``: its gradient recorded once, each product one sweep of it). The
    source tells ``result.hessian_source``."""
    unravel, args, n = call.unravel, call.args, call.x0.size
    if hessp is not None and not callable(hessp):
        raise TypeError(f"hessp must be callable, got {type(hessp).__name__}")
    flat_hessp = None if hessp is None else \
        (lambda x, p: gradient_vector(hessp(unravel(x), unravel(p), *args), n, "hessp"))
    if callable(hess):
        user = UserHessian(hess, unravel, args, n)
        # products with its matrix are not evaluations: nhev counts the calls of hess
        return user.matrix, flat_hessp or user.product, None, user if flat_hessp is None else _Named("hess")
    if isinstance(hess, HessianUpdateStrategy):
        if hessp is not None:   # scipy drops hessp silently here
            raise ValueError(f"hess={type(hess).__name__}() approximates the Hessian from gradients; "
                             "hessp would go unused: pass one of them")
        source = QuasiNewton(hess, last, n)
        return None, None, source, source
    if not exact_derivatives(hess):
        raise TypeError(f"hess must be a callable, a scipy.optimize.HessianUpdateStrategy (BFGS(), "
                        f"SR1()), or None/{'/'.join(FINITE_DIFFERENCES)} (exact, from autodiff of the "
                        f"gradient); got {hess!r}")
    if flat_hessp is not None:
        return None, flat_hessp, None, _Named("hessp")
    if gradient is not None and not ggn:
        source = GradientDerivative(gradient, last, "3-point" if hess == "3-point" else "2-point", trace)
        return None, None, source, source
    return None, None, derivatives.at, _Named("autodiff (generalized Gauss-Newton)" if ggn else "autodiff")


def _sparse_source(call: Call, derivatives: AutodiffDerivatives, operator, source, sparse: bool | None):
    """(operator, source, dense_reason) of a method that factors the Hessian's matrix: autodiff's
    sparse Hessians (:class:`~hessopt._hessians.SparseAutodiff`) in place of its dense ones when
    ``sparse`` is True, or None (automatic) from ``SPARSE_MIN_SIZE`` variables on when the pattern
    found in the recorded program is under ``SPARSE_MAX_DENSITY`` dense; else the operator and
    source as they were, and why not (None when the sparse path was not considered). A user's
    ``hess`` returning a sparse matrix is the optimizers' to use (same rule). With ``sparse=True``
    a fallback to dense also warns."""
    n = call.x0.size
    if sparse is False or (sparse is None and n < SPARSE_MIN_SIZE) or isinstance(source, UserHessian):
        return operator, source, None
    sparse_source, reason = _sparse_autodiff(call, derivatives, operator, source)
    if sparse_source is not None:
        try:
            pattern = sparse_source.pattern(call.x0)
        except Exception as error:   # any failure to find it is reported, and the dense path taken
            reason = f"the Hessian's sparsity pattern could not be found: {type(error).__name__}: {error}"
        else:
            reason = optimizers.sparse.dense_reason(n, pattern.nnz, sparse)
            if reason is None:
                return sparse_source, sparse_source, None
    if sparse:
        warnings.warn(f"options['sparse'] is True, but the Hessian is dense: {reason}", OptimizeWarning,
                      stacklevel=3)
    return operator, source, reason


def _preconditioning_source(call: Call, derivatives: AutodiffDerivatives, operator, source,
                            precondition: bool | None):
    """(operator, reason) of a Krylov method whose solves may be preconditioned (``precondition``
    True, or None from ``SPARSE_MIN_SIZE`` variables on): an operator whose points also give the
    Hessian as a sparse matrix, on demand only — autodiff's sparse Hessians, whose pattern is found
    the first time the method asks (:class:`~hessopt._hessians.SparseAutodiff`), or the user's
    ``hess`` when it returns a sparse matrix at x0; else the operator as it was and why not, and
    the method's ``precondition`` option turned False (None where it was not considered). With
    ``precondition=True`` a fallback also warns."""
    n = call.x0.size
    if precondition is False or (precondition is None and n < SPARSE_MIN_SIZE):
        return operator, None
    if isinstance(source, UserHessian):
        if scipy.sparse.issparse(source.at(call.x0)):
            return user_sparse_operator(source), None
        reason = "the user's hess does not return a sparse matrix"
    else:
        sparse_source, reason = _sparse_autodiff(call, derivatives, operator, source)
        if sparse_source is not None:
            return sparse_source, None
    if precondition:
        warnings.warn(f"options['precondition'] is True, but there is no preconditioner: {reason}",
                      OptimizeWarning, stacklevel=3)
    call.options["precondition"] = False
    return operator, reason



def _sparse_autodiff(call: Call, derivatives: AutodiffDerivatives, operator,
                     source) -> tuple[SparseAutodiff | None, str | None]:
    """autodiff's sparse Hessians of f (:class:`~hessopt._hessians.SparseAutodiff`, the pattern
    found when first asked), when they are the run's Hessian; else None and why not."""
    if operator != derivatives.at:   # the user's hessp or jac, or a quasi-Newton strategy
        return None, _NOT_AUTODIFF.get(source.name, f"the Hessian comes from {source.name}")
    if derivatives.variables is not None:
        return None, "x0 is a list of Variables: the sparse Hessian needs f as a function of x"
    return SparseAutodiff(lambda flat: derivatives.f(call.unravel(flat)), derivatives.at), None


_NOT_AUTODIFF = {
    "autodiff of the gradient": "the Hessian is the derivative of the user's jac, whose sparsity is not detected",
    "finite differences of the gradient": "the Hessian is the derivative of the user's jac, whose sparsity is not "
                                          "detected",
    "hessp": "hessp gives Hessian-vector products only",
}


def _check_curvature(result: OptimizeResult, matvec: Callable, n: int) -> None:
    """A quasi-Newton run's success, checked with true second derivatives at its end: the
    strategy's matrix (positive definite for BFGS) cannot tell a saddle point from a minimum, the
    loop's own Krylov check with ``matvec`` (over n variables) can. Clearly negative curvature
    turns the result into status 5 (no false success)."""
    estimate = leftmost_curvature(matvec, n, CURVATURE_PROBE_STEPS)
    if estimate is not None and clearly_negative(estimate[0], estimate[2]):
        result.update(status=Status.NOT_A_MINIMUM, success=False, message=(
            f"{MESSAGES[Status.NOT_A_MINIMUM]}: the gradient test passed, but the true Hessian has "
            f"curvature {estimate[0]:.1e} there, which the quasi-Newton matrix does not show."))


def _report_hessian(result: OptimizeResult, source) -> None:
    """``result.hessian_source``, a sentence in the message when the Hessian was approximated by
    finite differences, and nhev as the source counts it."""
    result.hessian_source = source.name
    if source.note is not None:
        note = source.note if source.note.endswith(".") else source.note + "."
        result.message += (" Second derivatives came from finite differences of the gradient (jac), "
                           f"which autodiff could not follow: {note}")
    if source.evaluations is not None:
        result.nhev = source.evaluations


def least_squares(residuals: Callable, x0, method: str = "lm", jac: Callable | None = None,
                  args: tuple = (), callback: Callable | None = None,
                  options: dict | None = None, bounds=None) -> OptimizeResult:
    """Minimize 0.5 ||r(x)||^2 by Levenberg-Marquardt (``"lm"``) or Gauss-Newton (``"gn"``).

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is given: a replayed
    program of ``autodiff.function`` (``options={"trace": False}``: eager; residuals that cannot
    be traced run eagerly, and ``result.untraced_reason`` says why). ``x0``, ``args``,
    ``callback`` and ``options`` are taken as by :func:`minimize`; residuals of any shape
    are raveled (``result.fun`` and the rows of ``result.jac`` follow that order), and ``result.x``
    and ``result.grad`` have the form of ``x0``. Gauss-Newton uses J^T J as the Hessian, with no
    second derivatives (Nocedal & Wright, 2006, ch. 10; Moré 1978 for the Levenberg-Marquardt
    scaling).

    ``bounds`` are scipy ``least_squares``' ``(lb, ub)`` (each a scalar or an array of x0's shape
    or size, a pytree of x0's structure for a pytree x0; ``-np.inf``/``np.inf`` or None for no
    bound) or a ``scipy.optimize.Bounds``. Levenberg-Marquardt is then the trust-region method
    with TRON's bounded step on the Gauss-Newton model (Lin & Moré 1999), Gauss-Newton the
    projected one (Bertsekas 1982); the residuals are never evaluated outside the box (x0 is
    clipped into it, and the message says so) and success means the projected gradient test.
    ``result.active_mask`` (always there, in the form of x0) is -1 at a lower bound, +1 at an
    upper one and 0 for free variables, as in scipy.

    Parameters
    ----------
    residuals : callable
        ``residuals(x, *args)`` -> array.
    x0 : array_like or pytree
        The starting point.
    method : {"lm", "gn"}, default "lm"
    jac : callable, optional
        The Jacobian of the raveled residuals (default: autodiff).
    args, callback, options
        As for :func:`minimize`.
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
        Bound constraints (see above).

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``cost`` (0.5 ||r||^2), ``fun`` (the residuals), ``jac``, ``grad``, counts, ``status``,
        ``success``, ``message``, ``history``, ``active_mask``.

    Raises
    ------
    TypeError
        If residuals is not callable.
    ValueError
        For an unknown method or jac, or bad bounds (which entry, and why).

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
    if not callable(residuals):
        raise TypeError(f"residuals must be callable, got {type(residuals).__name__}")
    if method not in ("lm", "gn"):
        raise ValueError(f"unknown least-squares method {method!r}; choose 'lm' or 'gn'")
    box = box_from_bounds(bounds, x0, pairs=False)
    options = as_options(options)
    trace = options.pop("trace", True)
    check_option("trace", trace)
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    unravel, args, n = call.unravel, call.args, call.x0.size
    box, call.x0, note = in_the_box(box, call.x0, method, ("lm", "gn"))

    def flat_residuals(x):
        return residual_vector(residuals(unravel(x), *args))

    traced = ad.function(flat_residuals, eager_fallback=True) if trace else None
    if callable(jac):
        jacobian = lambda x: real_array(_value(jac(unravel(x), *args)),  # noqa: E731
                                        "the value of jac").reshape(-1, n)
    elif exact_derivatives(jac):
        jacobian = ad.jacobian(traced or flat_residuals)
    else:
        raise ValueError(f"jac must be a callable or None (exact, from autodiff); got {jac!r}")
    result = optimizers.least_squares_lm(lambda x: np.asarray(_value(flat_residuals(x)), dtype=float),
                                         call.x0, jacobian, callback=call.callback, method=method,
                                         bounds=box, **call.options)
    if traced is not None and traced.fallback_reason is not None:
        result.untraced_reason = traced.fallback_reason
    report_bounds(result, result.get("active_mask", np.zeros(n, dtype=int)), note, unravel)
    return call.finish(result, ("x", "grad"))


def _value(x):
    return x.numpy() if isinstance(x, ad.Tensor) else x
