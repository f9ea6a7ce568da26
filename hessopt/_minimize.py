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


class AutodiffDerivatives:
    """f, gradient, HVPs and Hessians of ``f`` on flat float vectors, from autodiff.

    The Hessian operator of the last point asked for is kept: its value and gradient were computed
    once, and each product is one sweep of its recording. Plain values at other points (line-search
    and trust-region trial points) are one NumPy evaluation with no tape.
    """

    def __init__(self, f: Callable, unravel: Callable | None = None):
        self.f = f                      # a function of the structure unravel(x) (or of x itself)
        self.unravel = unravel or (lambda x: x)
        self._x = None
        self._operator = None

    def at(self, x: np.ndarray) -> ad.HessianOperator:
        if self._x is None or not np.array_equal(x, self._x):
            self._operator = ad.hessian_operator(self.f, self.unravel(x))
            self._x = np.array(x, copy=True)
        return self._operator

    def fun(self, x: np.ndarray) -> float:
        if self._x is not None and np.array_equal(x, self._x):
            return self._operator.value
        value = self.f(self.unravel(x))
        return np.asarray(value.numpy() if isinstance(value, ad.Tensor) else value)

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).gradient

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return self.at(x).matvec(p)

    def hess(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).to_dense()


def _method(method: str) -> Callable:
    try:
        return METHODS[method.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}") from None


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
    The result has scipy's fields plus ``history``, column-wise (``optimizers.History``):
    ``history["f"]``, ``["gnorm"]``, the cumulative ``["nfev"]``, ``["njev"]``, ``["nhev"]``, the
    method's own columns, and ``["x"]``, the iterates as flat vectors (a pytree x0 in
    ``ad.ravel`` order), unless ``options={"keep_iterates": False}``.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    solver = _method(method)
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    leaves = ad.tree.flatten(x0)[0]
    if any(not np.all(np.isfinite(np.asarray(leaf, dtype=float))) for leaf in leaves):
        raise ValueError("x0 contains NaN or inf")
    flat0, unravel = ad.ravel(x0)
    derivatives = AutodiffDerivatives(lambda tree: fun(tree, *args), unravel)
    if jac is None:
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
    result = solver(flat_fun, flat0, flat_jac, hess=flat_hess, hessp=flat_hessp,
                    callback=user_callback, **options)
    if not isinstance(x0, np.ndarray):
        result.x, result.jac = unravel(result.x), unravel(result.jac)
    return result


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
