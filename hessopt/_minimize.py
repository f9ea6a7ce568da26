"""hessopt.minimize and friends: scipy's interface, exact derivatives from autodiff.

Each iterate records its gradient once (``autodiff.hessian_operator``); every Hessian-vector product
at that iterate is one backward sweep over the cached recording, and a full Hessian is one batched
sweep taken only where the method asks for it (at accepted points).
"""
from __future__ import annotations

import functools
from concurrent.futures import Executor
from typing import Any, Callable, Iterable

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
import optimizers

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
    generalized Gauss-Newton one of loss(predict(...)), ``predict`` called like ``f``.
    """

    def __init__(self, f: Callable, unravel: Callable | None = None, variables: list | None = None,
                 ggn: tuple[Callable, Callable] | None = None):
        self.f = f                      # a function of the structure unravel(x) (or of x itself)
        self.unravel = unravel or (lambda x: x)
        self.variables = variables
        self._operator_at = (lambda point: ad.hessian_operator(f, point)) if ggn is None else \
            (lambda point: ad.ggn_operator(*ggn, point))
        self._x = None
        self._operator = None

    def point(self, x: np.ndarray):
        """What ``f`` and the operators take at x: the structure ``unravel(x)``, or the Variables
        holding x."""
        if self.variables is None:
            return self.unravel(x)
        for variable, value in zip(self.variables, ad.tree.flatten(self.unravel(x))[0]):
            variable.assign(value)
        return self.variables

    def call(self, x: np.ndarray):
        point = self.point(x)
        return self.f() if self.variables is not None else self.f(point)

    def at(self, x: np.ndarray) -> ad.HessianOperator:
        if self._x is None or not np.array_equal(x, self._x):
            self._operator = self._operator_at(self.point(x))
            self._x = np.array(x, copy=True)
        return self._operator

    def fun(self, x: np.ndarray) -> float:
        if self._x is not None and np.array_equal(x, self._x):
            return self._operator.value
        value = self.call(x)
        return np.asarray(value.numpy() if isinstance(value, ad.Tensor) else value)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """f(x) and its gradient from one plain tape (no recording kept: first-order methods)."""
        point = self.point(x)
        leaves, rebuild = ad.tree.flatten(point)
        sources = leaves if self.variables is not None else [ad.constant(leaf) for leaf in leaves]
        with ad.GradientTape() as tape:
            tape.watch(sources)
            y = self.f() if self.variables is not None else self.f(rebuild(sources))
        if not isinstance(y, ad.Tensor) or y.ndim != 0:
            raise TypeError(f"the objective must return a scalar Tensor computed with autodiff "
                            f"operations, got {type(y).__name__} of shape {np.shape(ad.tree.ravel(y)[0])}")
        grads = tape.gradient(y, sources, unconnected_gradients="zero")
        return y.numpy(), np.concatenate([np.ravel(g.numpy()) for g in grads])

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).gradient

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return self.at(x).matvec(p)

    def hess(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).to_dense()


def _method(method: str) -> Callable:
    try:
        return {**METHODS, **FIRST_ORDER}[method.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS) + sorted(FIRST_ORDER)}") \
            from None


def _flat_callable(user: Callable | None, unravel: Callable, args: tuple, flatten_output: bool):
    """A user function of the original x (pytree) and args, as a function of the flat vector."""
    if user is None:
        return None

    def call(x, *extra):
        out = user(unravel(x), *extra, *args)
        return ad.ravel(out)[0] if flatten_output else out
    return call


def minimize(fun: Callable, x0, args: tuple = (), method: str = "newton-cg",
             jac: Callable | bool | None = None, hess: Callable | None = None,
             hessp: Callable | None = None, tol: float | None = None,
             callback: Callable | None = None, options: dict | None = None) -> OptimizeResult:
    """Minimize ``fun(x, *args)`` with a second-order method; scipy.optimize.minimize's interface.

    Derivatives default to exact ones from autodiff (``fun`` is plain NumPy code); user-supplied
    ``jac`` (or ``jac=True``), ``hess`` and ``hessp`` are honoured. ``x0`` may be an array or a pytree
    (dict/list/tuple of arrays): ``result.x`` and ``result.jac`` then have the same structure.
    The result has scipy's fields plus ``history`` (per-iteration f, gradient norm, step or radius).

    Models: when ``x0`` is a list of Variables (``model.trainable_variables``), ``fun(*args)`` takes
    no parameters and reads the Variables, as Keras' ``minimize(loss, var_list)``; at the end the
    Variables hold the solution (and, if the run raises, their initial values). ``"hessian-free"``
    takes ``options={"ggn": (predict, loss)}``: ``predict`` is called like ``fun`` (with the
    parameters, or with no argument for Variables) and returns predictions, ``loss`` maps them to
    a scalar with ``loss(predict(x)) == fun(x)``; CG then runs on generalized Gauss-Newton products
    (Martens 2010). ``"adam"`` and ``"gd"`` are first-order baselines.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    solver = _method(method)
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    ggn = _ggn_option(options, method)
    leaves = ad.tree.flatten(x0)[0]
    variables = leaves if leaves and all(isinstance(leaf, ad.Variable) for leaf in leaves) else None
    if any(not np.all(np.isfinite(np.asarray(ad.tree.ravel(leaf)[0]))) for leaf in leaves):
        raise ValueError("x0 contains NaN or inf")
    flat0, unravel = ad.ravel(x0)
    if variables is None:
        derivatives = AutodiffDerivatives(lambda tree: fun(tree, *args), unravel, ggn=ggn)
    elif jac is not None or hess is not None or hessp is not None:
        raise ValueError("with Variables as x0, derivatives come from autodiff: jac, hess and hessp "
                         "must be None")
    else:
        derivatives = AutodiffDerivatives(lambda: fun(*args), unravel, variables, ggn)
    if ggn is not None:
        _check_split(derivatives, flat0)
    if jac is None and solver in FIRST_ORDER.values():
        flat_fun, flat_jac = derivatives.value_and_grad, True
    elif jac is None:
        flat_fun, flat_jac = derivatives.fun, derivatives.jac
    elif jac is True:
        flat_fun, flat_jac = _flat_callable(lambda *a: _flat_pair(fun(*a)), unravel, args, False), True
    elif callable(jac):
        flat_fun, flat_jac = _flat_callable(fun, unravel, args, False), _flat_callable(jac, unravel, args, True)
    else:
        raise ValueError(f"jac must be None (exact, from autodiff), True or a callable; got {jac!r}")
    flat_hess = _flat_callable(hess, unravel, args, False)
    flat_hessp = _flat_callable(hessp, unravel, args, True)
    if flat_hess is None and flat_hessp is None:
        flat_hess, flat_hessp = derivatives.hess, derivatives.hessp
    user_callback = None
    if callback is not None:
        def user_callback(intermediate_result):
            intermediate_result.x = unravel(intermediate_result.x)
            return callback(intermediate_result)
    try:
        result = solver(flat_fun, flat0, flat_jac, hess=flat_hess, hessp=flat_hessp,
                        callback=user_callback, **options)
    except BaseException:
        if variables is not None:
            derivatives.point(flat0)
        raise
    if variables is not None:
        derivatives.point(result.x)
    if not isinstance(x0, np.ndarray):
        result.x, result.jac = unravel(result.x), unravel(result.jac)
    return result


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


def _flat_pair(pair):
    value, gradient = pair
    return value, ad.ravel(gradient)[0]


def minimize_many(fun: Callable, x0s: Iterable, method: str = "newton-cg",
                  executor: Executor | None = None, **kwargs: Any) -> list[OptimizeResult]:
    """Independent runs (multistart, sweeps) mapped over any ``concurrent.futures.Executor``.

    A process pool on one machine, a Dask cluster (``distributed.Client(...).get_executor()``) or Ray
    beyond it; with no executor the runs are sequential. ``fun`` must be picklable for process and
    cluster executors (a module-level function).
    """
    run = functools.partial(minimize, fun, method=method, **kwargs)
    if executor is None:
        return [run(x0) for x0 in x0s]
    return list(executor.map(run, x0s))


def least_squares(residuals: Callable, x0, method: str = "lm", jac: Callable | None = None,
                  args: tuple = (), callback: Callable | None = None,
                  options: dict | None = None) -> OptimizeResult:
    """Minimize 0.5 ||r(x)||^2 by Levenberg-Marquardt (``"lm"``) or Gauss-Newton (``"gn"``).

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is given.
    """
    if not callable(residuals):
        raise TypeError(f"residuals must be callable, got {type(residuals).__name__}")
    if method not in ("lm", "gn"):
        raise ValueError(f"unknown least-squares method {method!r}; choose 'lm' or 'gn'")
    r = lambda x: residuals(x, *args)  # noqa: E731
    jacobian = (lambda x: np.asarray(jac(x, *args), dtype=float)) if callable(jac) \
        else ad.jacobian(r)
    return optimizers.least_squares_lm(lambda x: np.asarray(_value(r(x)), dtype=float).reshape(-1),
                                       np.asarray(x0, dtype=float), jacobian,
                                       callback=callback, method=method, **(options or {}))


def _value(x):
    return x.numpy() if isinstance(x, ad.Tensor) else x
