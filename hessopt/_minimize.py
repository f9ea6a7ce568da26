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

from ._arguments import (FINITE_DIFFERENCES, Call, UserHessian, exact_derivatives, normalize,
                         real_array, residual_vector, scalar_value, value_and_gradient)

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
        return np.asarray(_value(self.f(self.unravel(x))))

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
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    solver = _method(method)
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    call = normalize(x0, args, callback, options, solver, method.lower())
    derivatives = AutodiffDerivatives(_scalar_objective(fun, call.args, jac), call.unravel)
    flat_fun, flat_jac = _first_derivatives(fun, jac, call, derivatives)
    flat_hess, flat_hessp, user_hessian = _second_derivatives(hess, hessp, call, derivatives)
    result = solver(flat_fun, call.x0, flat_jac, hess=flat_hess, hessp=flat_hessp,
                    callback=call.callback, **call.options)
    if user_hessian is not None and hessp is None:
        result.nhev = user_hessian.calls   # products with its matrix are not evaluations
    return call.finish(result)


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
    """(hess, hessp, UserHessian or None) on flat vectors: the user's where given, else autodiff."""
    unravel, args = call.unravel, call.args
    if hessp is not None and not callable(hessp):
        raise TypeError(f"hessp must be callable, got {type(hessp).__name__}")
    flat_hessp = None if hessp is None else \
        (lambda x, p: ad.ravel(hessp(unravel(x), unravel(p), *args))[0])
    if callable(hess):
        user = UserHessian(hess, unravel, args, call.x0.size)
        return user.dense, flat_hessp or user.product, user
    if not exact_derivatives(hess):
        raise TypeError(f"hess must be a callable, or None for exact Hessians from autodiff; "
                        f"got {hess!r}")
    if flat_hessp is not None:
        return None, flat_hessp, None
    return derivatives.hess, derivatives.hessp, None


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

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is given. ``x0``,
    ``args``, ``callback`` and ``options`` are taken as by :func:`minimize`; residuals of any shape
    are raveled (``result.fun`` and the rows of ``result.jac`` follow that order), and ``result.x``
    and ``result.grad`` have the form of ``x0``.
    """
    if not callable(residuals):
        raise TypeError(f"residuals must be callable, got {type(residuals).__name__}")
    if method not in ("lm", "gn"):
        raise ValueError(f"unknown least-squares method {method!r}; choose 'lm' or 'gn'")
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    unravel, args, n = call.unravel, call.args, call.x0.size

    def flat_residuals(x):
        return residual_vector(residuals(unravel(x), *args))

    if callable(jac):
        jacobian = lambda x: real_array(_value(jac(unravel(x), *args)),  # noqa: E731
                                        "the value of jac").reshape(-1, n)
    elif exact_derivatives(jac):
        jacobian = ad.jacobian(flat_residuals)
    else:
        raise ValueError(f"jac must be a callable or None (exact, from autodiff); got {jac!r}")
    result = optimizers.least_squares_lm(lambda x: np.asarray(_value(flat_residuals(x)), dtype=float),
                                         call.x0, jacobian, callback=call.callback, method=method,
                                         **call.options)
    return call.finish(result, ("x", "grad"))


def _value(x):
    return x.numpy() if isinstance(x, ad.Tensor) else x
