"""scipy's calling habits, normalized once for ``minimize`` and ``least_squares``.

What scipy users write goes in as it does in scipy: ``x0`` as a list of numbers, ``args`` as a
single value, an old-style ``callback(xk)``, scipy's own option names, size-1 arrays as function
values, a ``hess`` that returns a sparse matrix or a ``LinearOperator``. Everything is turned into
what the optimizers take (flat float vectors, plain callables, their own options) in one step, and
bad input is refused there with an error that names it.
"""
from __future__ import annotations

import inspect
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.optimize
import scipy.sparse
from scipy.optimize import OptimizeResult, OptimizeWarning
from scipy.sparse.linalg import LinearOperator

import autodiff as ad

# scipy's finite-difference choices for jac and hess: derivatives here are exact instead.
FINITE_DIFFERENCES = ("2-point", "3-point", "cs")

# Options scipy's counterpart of a method takes that have no effect here (accepted, documented in
# README "scipy habits"): finite-difference settings (derivatives are exact), scipy's step-size stop
# for Newton-CG (it reports success far from minima; hessopt stops on gtol and checks curvature),
# and scipy's subproblem settings.
_TRUST_REGION = frozenset({"inexact", "subproblem_maxiter", "workers"})
SCIPY_ONLY_OPTIONS = {
    "newton-cg": frozenset({"xtol", "eps", "workers"}),
    "trust-ncg": _TRUST_REGION,
    "trust-krylov": _TRUST_REGION,
    "trust-exact": _TRUST_REGION,
    "dogleg": _TRUST_REGION,
}
# Parameters the face passes itself, never through ``options``.
_CALL_PARAMETERS = frozenset({"fun", "residuals", "x0", "jac", "hess", "hessp", "operator", "callback",
                              "method", "bounds"})


def is_tree(x0) -> bool:
    """True when x0 is a pytree of arrays rather than an array-like.

    A dict or a namedtuple is a tree; a list or tuple is one when it holds an array (ndarray,
    Tensor, Variable) or a tree somewhere. Lists and tuples of numbers, nested or not, are
    array-likes, as in scipy: ``minimize(f, [1., 2.])`` optimizes over a vector.
    """
    if isinstance(x0, dict) or (isinstance(x0, tuple) and hasattr(x0, "_fields")):
        return True
    return isinstance(x0, (list, tuple)) and any(
        isinstance(item, (np.ndarray, ad.Tensor)) or is_tree(item) for item in x0)


def flatten_x0(x0) -> tuple[np.ndarray, Callable]:
    """x0 as a flat float vector, and the way back to x0's form (differentiable, as ``ad.ravel``).

    Array-likes become float arrays of at least one dimension, as in scipy (ints become floats; a
    2-D x0 keeps its shape); pytrees keep their structure and leaf shapes.
    """
    if is_tree(x0):
        for leaf in ad.tree.flatten(x0)[0]:
            real_array(leaf.numpy() if isinstance(leaf, ad.Tensor) else leaf, "x0")
        flat, unravel = ad.ravel(x0)
    else:
        flat, unravel = ad.ravel(np.atleast_1d(real_array(x0, "x0")).astype(float))
    if flat.size == 0:
        raise ValueError("x0 is empty: there is nothing to minimize over")
    if not np.all(np.isfinite(flat)):
        raise ValueError("x0 contains NaN or inf")
    return flat, unravel


def real_array(value, name: str) -> np.ndarray:
    """``value`` as an array of real numbers, or a clear error naming ``name``."""
    try:
        array = np.asarray(value)
    except ValueError as error:   # ragged nesting
        raise ValueError(f"{name} is not an array of numbers: {error}") from None
    _check_real(array.dtype, value, name)
    return array


def _check_real(dtype: np.dtype, value, name: str) -> None:
    if dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected real numbers, got {type(value).__name__} of dtype {dtype}")


def exact_derivatives(spec) -> bool:
    """jac or hess given as None, False or one of scipy's finite-difference schemes: exact
    derivatives from autodiff instead."""
    return spec is None or spec is False or (isinstance(spec, str) and spec in FINITE_DIFFERENCES)


def scipy_rosen_derivatives(fun: Callable, jac, hess, hessp) -> tuple:
    """For ``scipy.optimize.rosen``, scipy's own exact derivatives where none are given.

    scipy's ``rosen`` turns its input into an ndarray first (its array-API door), which no autodiff
    engine can see through (JAX and PyTorch refuse it too), yet it is the function every scipy
    example minimizes; scipy ships ``rosen_der``, ``rosen_hess`` and ``rosen_hess_prod`` for it.
    """
    if fun is not scipy.optimize.rosen:
        return jac, hess, hessp
    if exact_derivatives(jac):
        jac = scipy.optimize.rosen_der
    if exact_derivatives(hess) and hessp is None:
        hess, hessp = scipy.optimize.rosen_hess, scipy.optimize.rosen_hess_prod
    return jac, hess, hessp


def as_args(args) -> tuple:
    """scipy's rule: extra arguments that are not a tuple are one argument."""
    return args if isinstance(args, tuple) else (args,)


def scalar_value(value, name: str = "fun"):
    """A function value checked at the door: a real scalar or any size-1 array (as scipy takes),
    reshaped to a scalar; Tensors stay Tensors (the reshape is differentiable)."""
    if isinstance(value, numbers.Real):
        return value
    value = _real_value(value, name, "a scalar")
    if value.size != 1:
        raise ValueError(f"{name} must return a scalar, got shape {value.shape}")
    return value.reshape(())


def residual_vector(value, name: str = "residuals"):
    """Residuals of any shape, raveled to one vector (Tensors stay Tensors)."""
    value = _real_value(value, name, "an array")
    if value.size == 0:
        raise ValueError(f"{name} returned an empty array: there is nothing to fit")
    return value.reshape(-1)


def _real_value(value, name: str, expected: str):
    """What ``name`` returned, as a real ndarray or Tensor, or an error saying what is wrong."""
    if value is None:
        raise TypeError(f"{name} returned None; it must return {expected} (is a `return` missing?)")
    if isinstance(value, ad.Tensor):
        _check_real(value.dtype, value, f"the value of {name}")
        return value
    return real_array(value, f"the value of {name}")


def value_and_gradient(pair, name: str = "fun") -> tuple:
    """``jac=True``: fun returns (f, g)."""
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
        raise TypeError(f"with jac=True, {name} must return a pair (f, g), got "
                        f"{type(pair).__name__}")
    return scalar_value(pair[0], name), pair[1]


def takes_intermediate_result(callback: Callable) -> bool:
    """scipy's rule (``scipy.optimize._optimize._wrap_callback``): a callback whose only parameter
    is named ``intermediate_result`` gets the OptimizeResult; any other gets the iterate."""
    try:
        parameters = inspect.signature(callback).parameters
    except (TypeError, ValueError):   # not introspectable: scipy's default, the iterate
        return False
    return set(parameters) == {"intermediate_result"}


class UserHessian:
    """The user's ``hess(x, *args)``, called once per point: a dense array (of any shape with n^2
    entries), a scipy sparse matrix or a ``LinearOperator``. Serves products (with the object as
    it is) and dense matrices (only where a method needs one); ``calls`` counts evaluations."""

    def __init__(self, hess: Callable, unravel: Callable, args: tuple, n: int):
        self._hess, self._unravel, self._args, self._n = hess, unravel, args, n
        self._x = self._h = None
        self.calls = 0

    def at(self, x: np.ndarray):
        if self._x is None or not np.array_equal(x, self._x):
            h = self._hess(self._unravel(x), *self._args)
            self.calls += 1
            self._h, self._x = self._checked(h), np.array(x, copy=True)
        return self._h

    def _checked(self, h):
        n = self._n
        if isinstance(h, LinearOperator) or scipy.sparse.issparse(h):
            if h.shape != (n, n):
                raise ValueError(f"hess returned an operator of shape {h.shape}, expected {(n, n)}")
            return h
        h = real_array(h.numpy() if isinstance(h, ad.Tensor) else h, "the value of hess")
        if h.size != n * n:
            raise ValueError(f"hess returned shape {h.shape}, expected {(n, n)}")
        return h.astype(float).reshape(n, n)

    def dense(self, x: np.ndarray) -> np.ndarray:
        h = self.at(x)
        if scipy.sparse.issparse(h):
            return h.toarray()
        return h @ np.eye(self._n) if isinstance(h, LinearOperator) else h

    def product(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return np.asarray(self.at(x) @ p, dtype=float).reshape(-1)


@dataclass
class Call:
    """One call's arguments in the optimizers' form: flat x0, extra args, the callback on flat
    iterates, the optimizer's own options, and the way back to the user's x."""

    x0: np.ndarray
    unravel: Callable
    args: tuple
    callback: Callable | None
    options: dict
    allvecs: list | None

    def finish(self, result: OptimizeResult, fields: tuple = ("x", "jac")) -> OptimizeResult:
        """``fields`` of the result in the form of the user's x0; ``allvecs`` if asked for."""
        for field in fields:
            result[field] = self.unravel(result[field])
        if self.allvecs is not None:
            result.allvecs = self.allvecs
        return result


def normalize(x0, args: Any, callback: Callable | None, options: dict | None, solver: Callable,
              method: str) -> Call:
    """The one normalization step of ``minimize`` and ``least_squares`` (see module docstring).

    Unknown options are dropped with scipy's OptimizeWarning ("Unknown solver options: ...").
    """
    flat, unravel = flatten_x0(x0)
    options = dict(options or {})
    allvecs = [] if options.pop("return_all", False) else None
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    return Call(flat, unravel, as_args(args), _flat_callback(callback, unravel, allvecs),
                _solver_options(solver, method, options), allvecs)


def _flat_callback(callback: Callable | None, unravel: Callable, allvecs: list | None):
    """The optimizers' callback (an OptimizeResult at a flat iterate) calling the user's in
    scipy's way, with x (and jac) in the form of x0; it also collects ``allvecs``."""
    if callback is None and allvecs is None:
        return None
    new_style = callback is not None and takes_intermediate_result(callback)

    def call(intermediate_result: OptimizeResult) -> None:
        if allvecs is not None:
            allvecs.append(unravel(intermediate_result.x.copy()))
        if new_style:
            intermediate_result.x = unravel(intermediate_result.x)
            intermediate_result.jac = unravel(intermediate_result.jac)
            callback(intermediate_result=intermediate_result)
        elif callback is not None:
            callback(unravel(intermediate_result.x))
    return call


def _solver_options(solver: Callable, method: str, options: dict) -> dict:
    """The options ``solver`` takes; scipy's names that have no effect here are dropped quietly
    (documented), anything else with scipy's warning."""
    parameters = inspect.signature(solver).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return options
    known = set(parameters) - _CALL_PARAMETERS
    ignored = SCIPY_ONLY_OPTIONS.get(method, frozenset())
    unknown = [name for name in options if name not in known and name not in ignored]
    if unknown:
        # stacklevel 4: _solver_options, normalize, minimize (or least_squares), the user's call
        warnings.warn(f"Unknown solver options: {', '.join(map(str, unknown))}", OptimizeWarning,
                      stacklevel=4)
    return {name: value for name, value in options.items() if name in known}
