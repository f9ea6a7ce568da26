"""hessopt.minimize and friends: scipy's interface, exact derivatives from autodiff.

Each iterate records its gradient once (``autodiff.hessian_operator``); every Hessian-vector product
at that iterate is one backward sweep over the cached recording, and a full Hessian is one batched
sweep taken only where the method asks for it (at accepted points). By default the objective is
traced once (``autodiff.function``) and those recordings are replayed as plain NumPy programs; an
objective that cannot be traced runs eagerly, with the same results.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
import optimizers

from ._arguments import (FINITE_DIFFERENCES, Call, UserHessian, exact_derivatives, normalize,
                         real_array, residual_vector, scalar_value, scipy_rosen_derivatives,
                         value_and_gradient)

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
    ``untraced_reason`` then says why); plain values are NumPy calls of f either way.
    """

    def __init__(self, f: Callable, unravel: Callable | None = None, variables: list | None = None,
                 ggn: tuple[Callable, Callable] | None = None, trace: bool = False):
        self.f = f                      # a function of the structure unravel(x) (or of x itself)
        self.unravel = unravel or (lambda x: x)
        self.variables = variables
        self._traced: list = []         # the autodiff.functions made here (untraced_reason)
        objective = self._replayed(f, trace)
        if ggn is None:
            self._operator_at = lambda point: ad.hessian_operator(objective, point)
        else:
            predict, loss = self._replayed(ggn[0], trace), ggn[1]
            self._operator_at = lambda point: ad.ggn_operator(predict, loss, point)
        # first-order methods: the value and gradient alone, of f of the point (the Variables' values)
        self._value_and_grad = ad.value_and_grad(objective if variables is None else
                                                 self._replayed(lambda _: f(), trace))
        self._x = None
        self._operator = None

    def _replayed(self, g: Callable, trace: bool) -> Callable:
        """``autodiff.function(g)`` when tracing (eagerly where it cannot be traced), else g."""
        if not trace:
            return g
        traced = ad.function(g, eager_fallback=True)
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


def minimize(fun: Callable, x0, args: tuple = (), method: str = "newton-cg",
             jac: Callable | bool | None = None, hess: Callable | None = None,
             hessp: Callable | None = None, tol: float | None = None,
             callback: Callable | None = None, options: dict | None = None) -> OptimizeResult:
    """Minimize ``fun(x, *args)`` with a second-order method; scipy.optimize.minimize's interface.

    Derivatives default to exact ones from autodiff (``fun`` is plain NumPy code); ``jac=None``,
    ``False`` or a finite-difference scheme ("2-point", ...) all mean exact derivatives.
    User-supplied ``jac`` (or ``jac=True``: fun returns (f, g)), ``hess`` (an array, a sparse matrix
    or a LinearOperator) and ``hessp`` are honoured; what is not supplied comes from autodiff
    (with ``jac=True``, from ``fun(x)[0]``). ``x0`` may be an array-like (a list of numbers is a
    vector, as in scipy; any shape is kept) or a pytree (dict, namedtuple, or list/tuple holding
    arrays): ``result.x`` and ``result.jac`` have its form, and so do ``jac``'s and ``hessp``'s
    arguments. ``tol`` sets ``gtol``. ``callback(xk)`` gets the iterate, a callback whose one
    parameter is named ``intermediate_result`` the OptimizeResult (scipy's rule). Options: each
    method's own and scipy's names for its counterpart (those without effect here are listed in
    README "scipy habits"); ``return_all`` gives ``result.allvecs``; unknown options warn and are
    ignored, as in scipy. The result has scipy's fields plus ``history``, column-wise
    (``optimizers.History``): ``history["f"]``, ``["gnorm"]``, the cumulative ``["nfev"]``,
    ``["njev"]``, ``["nhev"]``, the method's own columns, and ``["x"]``, the iterates as flat
    vectors (a pytree x0 in ``ad.ravel`` order), unless ``options={"keep_iterates": False}``.
    ``options={"trace": False}`` turns off tracing: by default every derivative (gradients,
    Hessian-vector products, dense Hessians, Gauss-Newton products, the first-order methods'
    gradients) is a replayed program of ``autodiff.function(fun)``, with the same iterates as eager
    evaluation; a ``fun`` that cannot be traced (say, it calls ``.numpy()``) runs eagerly, and
    ``result.untraced_reason`` says why.

    Models: when ``x0`` is a list of Variables (``model.trainable_variables``), ``fun(*args)`` takes
    no parameters and reads the Variables, as Keras' ``minimize(loss, var_list)``; at the end the
    Variables hold the solution (and, if the run raises, their initial values). ``"hessian-free"``
    takes ``options={"ggn": (predict, loss)}``: ``predict`` is called like ``fun`` (with the
    parameters, or with no argument for Variables) and returns predictions, ``loss`` maps them to
    a scalar with ``loss(predict(x)) == fun(x)``; CG then runs on generalized Gauss-Newton products
    (Martens 2010). ``"adam"`` and ``"gd"`` are first-order baselines.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float`` (no parameters for Variables).
    x0 : array_like, pytree, or list of Variables
        The starting point.
    args : tuple, optional
        Extra arguments of fun, jac, hess and hessp.
    method : str, default "newton-cg"
        One of ``hessopt.METHODS`` (newton, newton-cg, trust-ncg, trust-krylov, trust-exact,
        dogleg, arc, hessian-free), or "adam", "gd"; case-insensitive.
    jac, hess, hessp : optional
        User derivatives, as in scipy; exact ones from autodiff where not given.
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
        ``message``, ``history``.

    Raises
    ------
    TypeError
        If fun is not callable, or derivatives have the wrong type.
    ValueError
        For an unknown method, bad options, or jac/hess/hessp with Variables.

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
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    solver = _method(method)
    jac, hess, hessp = scipy_rosen_derivatives(fun, jac, hess, hessp)
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    ggn = _ggn_option(options, method)
    trace = bool(options.pop("trace", True))
    call = normalize(x0, args, callback, options, solver, method.lower())
    variables = _variables(x0)
    if variables is None:
        derivatives = AutodiffDerivatives(_scalar_objective(fun, call.args, jac), call.unravel, ggn=ggn,
                                          trace=trace)
    elif exact_derivatives(jac) and exact_derivatives(hess) and hessp is None:
        derivatives = AutodiffDerivatives(lambda: scalar_value(fun(*call.args)), call.unravel, variables, ggn,
                                          trace)
    else:
        raise ValueError("with Variables as x0, derivatives come from autodiff: leave jac, hess and "
                         "hessp unset")
    if ggn is not None:
        _check_split(derivatives, call.x0)
    if solver in FIRST_ORDER.values() and exact_derivatives(jac):
        flat_fun, flat_jac = derivatives.value_and_grad, True
    else:
        flat_fun, flat_jac = _first_derivatives(fun, jac, call, derivatives)
    flat_hess, flat_hessp, operator, user_hessian = _second_derivatives(hess, hessp, call, derivatives)
    try:
        result = solver(flat_fun, call.x0, flat_jac, hess=flat_hess, hessp=flat_hessp,
                        callback=call.callback, operator=operator, **call.options)
    except BaseException:
        if variables is not None:
            derivatives.point(call.x0)
        raise
    if variables is not None:
        derivatives.point(result.x)
    if user_hessian is not None and hessp is None:
        result.nhev = user_hessian.calls   # products with its matrix are not evaluations
    if derivatives.untraced_reason is not None:
        result.untraced_reason = derivatives.untraced_reason
    return call.finish(result)


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


def _scalar_objective(fun: Callable, args: tuple, jac) -> Callable:
    """f as a checked scalar function of the user's x, for autodiff (with ``jac=True`` the value
    part of fun's pair, so second derivatives still come from autodiff)."""
    if jac is True:
        def value(tree):   # called with Tensors only: values come from fun's pair
            f = value_and_gradient(fun(tree, *args))[0]
            if not isinstance(f, ad.Tensor):
                raise TypeError(f"with jac=True and no hess or hessp, second derivatives come from "
                                f"autodiff on fun(x)[0], but fun returned a plain "
                                f"{type(f).__name__} for Tensor input (not traceable NumPy code): "
                                f"pass hess or hessp")
            return f
        return value
    return lambda tree: scalar_value(fun(tree, *args))


def _first_derivatives(fun: Callable, jac, call: Call, derivatives: AutodiffDerivatives):
    """(f, gradient) on flat vectors for the optimizers (gradient True: f returns the pair)."""
    unravel, args = call.unravel, call.args
    if callable(jac):
        return (lambda x: scalar_value(fun(unravel(x), *args)),
                lambda x: ad.ravel(jac(unravel(x), *args))[0])
    if jac is True:
        def pair(x):
            value, gradient = value_and_gradient(fun(unravel(x), *args))
            return value, ad.ravel(gradient)[0]
        return pair, True
    if exact_derivatives(jac):
        return derivatives.fun, derivatives.jac
    raise ValueError(f"jac must be a callable, True (fun returns (f, g)), or None/False/"
                     f"{'/'.join(FINITE_DIFFERENCES)} (exact, from autodiff); got {jac!r}")


def _second_derivatives(hess, hessp, call: Call, derivatives: AutodiffDerivatives):
    """(hess, hessp, operator, UserHessian or None) on flat vectors: the user's where given, else
    autodiff's operator of each point (``AutodiffDerivatives.at``: its gradient recorded once,
    each product one sweep of it)."""
    unravel, args = call.unravel, call.args
    if hessp is not None and not callable(hessp):
        raise TypeError(f"hessp must be callable, got {type(hessp).__name__}")
    flat_hessp = None if hessp is None else \
        (lambda x, p: ad.ravel(hessp(unravel(x), unravel(p), *args))[0])
    if callable(hess):
        user = UserHessian(hess, unravel, args, call.x0.size)
        return user.dense, flat_hessp or user.product, None, user
    if not exact_derivatives(hess):
        raise TypeError(f"hess must be a callable, or None for exact Hessians from autodiff; "
                        f"got {hess!r}")
    if flat_hessp is not None:
        return None, flat_hessp, None, None
    return None, None, derivatives.at, None


def least_squares(residuals: Callable, x0, method: str = "lm", jac: Callable | None = None,
                  args: tuple = (), callback: Callable | None = None,
                  options: dict | None = None) -> OptimizeResult:
    """Minimize 0.5 ||r(x)||^2 by Levenberg-Marquardt (``"lm"``) or Gauss-Newton (``"gn"``).

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is given: a replayed
    program of ``autodiff.function`` (``options={"trace": False}``: eager; residuals that cannot
    be traced run eagerly, and ``result.untraced_reason`` says why). ``x0``, ``args``,
    ``callback`` and ``options`` are taken as by :func:`minimize`; residuals of any shape
    are raveled (``result.fun`` and the rows of ``result.jac`` follow that order), and ``result.x``
    and ``result.grad`` have the form of ``x0``. Gauss-Newton uses J^T J as the Hessian, with no
    second derivatives (Nocedal & Wright, 2006, ch. 10; Moré 1978 for the Levenberg-Marquardt
    scaling).

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

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``cost`` (0.5 ||r||^2), ``fun`` (the residuals), ``jac``, ``grad``, counts, ``status``,
        ``success``, ``message``, ``history``.

    Raises
    ------
    TypeError
        If residuals is not callable.
    ValueError
        For an unknown method or jac.

    Examples
    --------
    Fit y = a exp(-b t) to exact data:

    >>> import numpy as np
    >>> import hessopt
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> y = 2 * np.exp(-0.5 * t)
    >>> hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 1.0]).x.round(6)
    array([2. , 0.5])
    """
    if not callable(residuals):
        raise TypeError(f"residuals must be callable, got {type(residuals).__name__}")
    if method not in ("lm", "gn"):
        raise ValueError(f"unknown least-squares method {method!r}; choose 'lm' or 'gn'")
    options = dict(options or {})
    trace = bool(options.pop("trace", True))
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    unravel, args, n = call.unravel, call.args, call.x0.size

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
                                         **call.options)
    if traced is not None and traced.fallback_reason is not None:
        result.untraced_reason = traced.fallback_reason
    return call.finish(result, ("x", "grad"))


def _value(x):
    return x.numpy() if isinstance(x, ad.Tensor) else x
