"""scipy's calling habits, normalized once for ``minimize`` and ``least_squares``.

What scipy users write goes in as it does in scipy: ``x0`` as a list of numbers, ``args`` as a
single value, an old-style ``callback(xk)``, scipy's own option names, size-1 arrays as function
values, a ``hess`` that returns a sparse matrix or a ``LinearOperator``. Everything is turned into
what the optimizers take (flat float vectors, plain callables, their own options) in one step, and
bad input is refused there with an error that names it: every option is checked against
:data:`OPTION_RULES` before anything is evaluated. As in scipy (gh-13740), user functions get a copy
of the iterate, so one that changes its argument in place cannot corrupt the run.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.optimize
import scipy.sparse
from scipy.optimize import OptimizeResult, OptimizeWarning
from scipy.sparse.linalg import LinearOperator

import autodiff as ad
from optimizers.objective import same_point

# scipy's finite-difference choices for jac and hess: derivatives here are exact instead.
FINITE_DIFFERENCES = ("2-point", "3-point", "cs")

# Options scipy's counterpart of a method takes that have no effect here (accepted, documented in
# docs/coming-from/scipy.md): finite-difference settings (derivatives are exact), scipy's step-size stop
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
    2-D x0 keeps its shape); pytrees keep their structure and leaf shapes. The way back copies a
    flat ndarray first: what it returns shares no memory with the optimizer's iterate (scipy copies
    x before every user call, gh-13740).
    """
    if is_tree(x0):
        for leaf in ad.tree.flatten(x0)[0]:
            real_array(leaf.numpy() if isinstance(leaf, ad.Tensor) else leaf, "x0")
        flat, unravel = ad.ravel(x0)
    else:
        flat, unravel = ad.ravel(np.atleast_1d(real_array(x0, "x0")).astype(float))
    if flat.size == 0:
        raise ValueError("x0 is empty: there is nothing to minimize over")
    if not np.isfinite(flat).all():
        raise ValueError("x0 contains NaN or inf")
    return flat, lambda vector: unravel(vector.copy() if isinstance(vector, np.ndarray) else vector)


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


def as_options(options) -> dict:
    """A copy of the ``options`` dict (None: no options), or a TypeError naming what it got."""
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of option names and values, got {type(options).__name__}")
    return dict(options or {})


def as_args(args) -> tuple:
    """scipy's rule: extra arguments that are not a tuple are one argument."""
    return args if isinstance(args, tuple) else (args,)


def scalar_value(value, name: str = "fun"):
    """A function value checked at the door: a real scalar or any size-1 array (as scipy takes),
    reshaped to a scalar; Tensors stay Tensors (the reshape is differentiable)."""
    if type(value) is float or isinstance(value, numbers.Real):   # a float without the ABC's check
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


def plain_value(value):
    """What a user's function returned, a Tensor's value explicitly out of the engine
    (``t.numpy()``); anything else as it is."""
    return value.numpy() if isinstance(value, ad.Tensor) else value


def gradient_vector(value, n: int, name: str = "jac"):
    """What ``name`` returned for the gradient (or a Hessian product): an array of x0's size or a
    pytree of x0's form, as one flat vector of n entries (Tensors stay Tensors, so the raveling is
    differentiable), or an error naming ``name``."""
    leaves = ad.tree.flatten(value)[0] if is_tree(value) else [value]
    if value is None or not leaves or any(leaf is None for leaf in leaves):
        raise TypeError(f"{name} returned None where x0's {n} numbers were expected (is a `return` "
                        "missing?)")
    arrays = [_real_value(leaf, name, f"{n} numbers") for leaf in leaves]
    flat = arrays[0].reshape(-1) if len(arrays) == 1 else np.concatenate([a.reshape(-1) for a in arrays])
    if flat.shape[0] != n:
        shape = f" of shape {tuple(arrays[0].shape)}" if len(arrays) == 1 else ""
        raise ValueError(f"{name} returned {flat.shape[0]} numbers{shape}, expected {n}: x0's shape "
                         "(or its pytree form)")
    return flat


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
    it is) and dense matrices (only where a method needs one); ``calls`` counts evaluations.
    As a Hessian source of ``minimize`` it is named "hess"."""

    name, note = "hess", None

    def __init__(self, hess: Callable, unravel: Callable, args: tuple, n: int):
        self._hess, self._unravel, self._args, self._n = hess, unravel, args, n
        self._x = self._h = None
        self.calls = 0

    @property
    def evaluations(self) -> int:
        """The calls of hess (products with its matrix are not evaluations)."""
        return self.calls

    def at(self, x: np.ndarray):
        if not same_point(x, self._x):
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

    def matrix(self, x: np.ndarray):
        """The matrix at x: dense, or sparse as hess returned it (the methods that factor it
        keep it sparse, :mod:`optimizers.sparse`)."""
        h = self.at(x)
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
    options = as_options(options)
    return_all = options.pop("return_all", False)
    check_option("return_all", return_all)
    allvecs = [unravel(flat)] if return_all else None   # x0, then one per iteration (scipy's)
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
    known = _option_names(solver)
    if known is None:
        return options
    ignored = SCIPY_ONLY_OPTIONS.get(method, frozenset())
    unknown = [name for name in options if name not in known and name not in ignored]
    if unknown:
        # stacklevel 4: _solver_options, normalize, minimize (or least_squares), the user's call
        warnings.warn(f"Unknown solver options: {', '.join(map(str, unknown))}", OptimizeWarning,
                      stacklevel=4)
    for name in ignored.intersection(options):   # no effect here, but a bad value is still refused
        check_option(name, options[name], method)
    return {name: check_option(name, value, method) for name, value in options.items() if name in known}


@functools.lru_cache(maxsize=256)
def _option_names(solver: Callable) -> frozenset | None:
    """The options ``solver`` takes by name (its parameters but the call's own); None when it takes
    any (``**kwargs``). Kept per solver: inspect.signature cost a tenth of a small solve's setup."""
    parameters = inspect.signature(solver).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return frozenset(parameters) - _CALL_PARAMETERS


class OptionRule(NamedTuple):
    """What an option takes: ``accepted`` in words, ``kind`` (is the value of the right kind: a
    number, a flag, a string) and ``within`` (is a value of that kind acceptable); ``none``: None
    is accepted (the method's default); ``convert`` makes an accepted value what the methods
    take (``int`` for integer options, so ``3.0`` is 3)."""
    accepted: str
    kind: Callable[[Any], bool]
    within: Callable[[Any], bool]
    none: bool = False
    convert: Callable[[Any], Any] | None = None


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _number(accepted: str, within: Callable[[float], bool], integer: bool = False,
            none: bool = False) -> OptionRule:
    def acceptable(value) -> bool:
        if isinstance(value, numbers.Integral):   # exactly, however large (float() would overflow)
            return bool(within(int(value)))
        value = float(value)
        return (not integer or value.is_integer()) and bool(within(value))
    return OptionRule(accepted, _is_number, acceptable, none, int if integer else None)


_IS_ARRAY = (np.ndarray, list, tuple)


def _is_numbers(value) -> bool:
    """A real number, or an array (list, tuple) of real numbers."""
    if _is_number(value):
        return True
    try:
        return isinstance(value, _IS_ARRAY) and np.asarray(value).dtype.kind in "iuf"
    except ValueError:   # ragged nesting
        return False


def _positive_numbers(value) -> bool:
    """A positive number, or a non-empty array of them (scipy's finite-difference ``eps``)."""
    values = np.asarray(value, dtype=float)
    return values.size > 0 and bool(np.all((values > 0) & (values < np.inf)))


def _choice(*values: str) -> OptionRule:
    return OptionRule(" or ".join(map(repr, values)), lambda v: isinstance(v, str), lambda v: v in values)


_FLAG = OptionRule("True or False", lambda v: isinstance(v, (bool, np.bool_, numbers.Integral)),
                   lambda v: v in (0, 1))
_POSITIVE = _number("a positive number", lambda v: 0 < v < np.inf)
_POSITIVE_OR_NONE = _number("a positive number or None (the default)", lambda v: 0 < v < np.inf, none=True)
_NONNEGATIVE = _number("a non-negative number", lambda v: 0 <= v < np.inf)
_FRACTION = _number("a number in [0, 1)", lambda v: 0 <= v < 1)
_OPEN_FRACTION = _number("a number in (0, 1)", lambda v: 0 < v < 1)
_NONNEGATIVE_INTEGER = _number("a non-negative integer", lambda v: v >= 0, integer=True)


def _is_generator(value) -> bool:
    return isinstance(value, np.random.Generator)

#: The rule of each option of the methods (and of ``return_all``, ``trace`` and minimize_many's
#: ``timeout``); an option that a method reads differently has its own under ``(method, name)``.
OPTION_RULES: dict = {
    # scipy runs while nit < maxiter, so a fraction counts as the next integer (maxiter=100.1: 101)
    "maxiter": OptionRule("a number (0 or less: no iteration) or None (the method's default)", _is_number,
                          lambda v: isinstance(v, numbers.Integral) or math.isfinite(v), none=True,
                          convert=lambda v: v if isinstance(v, numbers.Integral) else math.ceil(v)),
    "gtol": _number("a non-negative number or None (the default relative test)",
                    lambda v: 0 <= v < np.inf, none=True),
    # scipy reads disp as true or false, so a level (disp=2) is taken as it is there
    "disp": OptionRule("True or False (or a non-negative integer; 0 is False)", _FLAG.kind, lambda v: v >= 0),
    "keep_iterates": _FLAG, "check_second_order": _FLAG, "return_all": _FLAG,
    "trace": _FLAG,
    "sparse": OptionRule("True, False or None (automatic)", _FLAG.kind, _FLAG.within, none=True),
    "precondition": OptionRule("True, False or None (automatic)", _FLAG.kind, _FLAG.within, none=True),
    "preconditioner": OptionRule("'amg', 'incomplete-cholesky' or None (automatic)", lambda v: isinstance(v, str),
                                 lambda v: v in ("amg", "incomplete-cholesky"), none=True),
    "factorization": OptionRule("'cholmod', 'qdldl' or None (chosen from the pattern)", lambda v: isinstance(v, str),
                                lambda v: v in ("cholmod", "qdldl"), none=True),
    "cg_maxiter": _number("a positive integer or None (the default)", lambda v: v >= 1, integer=True,
                          none=True),
    ("hessian-free", "cg_maxiter"): _number("a positive integer", lambda v: v >= 1, integer=True),
    "nonmonotone": _number(f"an integer from 1 (monotone) to {sys.maxsize}", lambda v: 1 <= v <= sys.maxsize,
                           integer=True),
    "c1": _OPEN_FRACTION, "c2": _OPEN_FRACTION,
    "warm_start": _number("a number in [0, 1]", lambda v: 0 <= v <= 1),
    "initial_trust_radius": _POSITIVE_OR_NONE, "max_trust_radius": _POSITIVE_OR_NONE,
    "initial_sigma": _POSITIVE_OR_NONE, "min_sigma": _POSITIVE,
    "eta": _number("a number in [0, 0.25)", lambda v: 0 <= v < 0.25),
    "shift": _choice("cholesky", "eigen"),
    "damping": _NONNEGATIVE, ("least_squares", "factor"): _POSITIVE,
    "learning_rate": _POSITIVE, "momentum": _FRACTION, "beta1": _FRACTION, "beta2": _FRACTION,
    "epsilon": _NONNEGATIVE, "ftol": _NONNEGATIVE, "xtol": _NONNEGATIVE,
    # L-BFGS-B's and TNC's cap on the evaluations of f (hessopt._scipy_methods)
    "maxfun": OptionRule("a positive number or None (no cap)", _is_number, lambda v: 0 < v < np.inf, none=True),
    # the interior point's (mu_strategy: IPOPT's names), and scipy's trust-constr and SLSQP levels
    "mu_init": _POSITIVE, "mu_strategy": _choice("monotone", "adaptive"),
    "dual_inf_tol": _POSITIVE, "constr_viol_tol": _POSITIVE,
    "verbose": _NONNEGATIVE_INTEGER, "iprint": _number("an integer", lambda v: True, integer=True),
    "timeout": _number("a positive number of seconds or None", lambda v: 0 < v < np.inf, none=True),
    # minimize_stochastic's draws of the curvature subsamples (numpy.random.default_rng's seed)
    "seed": OptionRule("a non-negative integer, a numpy.random.Generator or None (fresh entropy)",
                       lambda v: _is_generator(v) or _NONNEGATIVE_INTEGER.kind(v),
                       lambda v: _is_generator(v) or _NONNEGATIVE_INTEGER.within(v), none=True,
                       convert=lambda v: v if _is_generator(v) else int(v)),
    # scipy's options without effect here (SCIPY_ONLY_OPTIONS), checked as scipy documents them
    "eps": OptionRule("a positive number or an array of positive numbers", _is_numbers, _positive_numbers),
    "workers": OptionRule("an integer (-1: all processors), a map-like callable (such as "
                          "multiprocessing.Pool.map) or None",
                          lambda v: callable(v) or (_is_number(v) and isinstance(v, numbers.Integral)),
                          lambda v: callable(v) or v == -1 or v >= 1, none=True),
    "inexact": _FLAG,
    "subproblem_maxiter": _number("a positive integer or None (the default)", lambda v: v >= 1, integer=True,
                                  none=True),
}


def check_option(name: str, value, method: str | None = None, label: str | None = None):
    """``value`` of option ``name`` as the methods take it (an integer option's ``3.0`` as 3), or,
    when its :data:`OPTION_RULES` entry does not accept it, an error naming the option (or
    ``label``) and what it takes: TypeError for a value of the wrong kind (a string for a number,
    a bool for an integer), ValueError for one out of range (NaN included).

    Examples
    --------
    >>> from hessopt._arguments import check_option
    >>> check_option("maxiter", 10.0)
    10
    >>> check_option("gtol", "a")
    Traceback (most recent call last):
    TypeError: options['gtol'] must be a non-negative number or None (the default relative test); got 'a'
    """
    rule = OPTION_RULES.get((method, name)) or OPTION_RULES.get(name)
    if rule is None or (value is None and rule.none):   # tests/hessopt: every option has a rule
        return value
    right_kind = value is not None and rule.kind(value)
    if right_kind and rule.within(value):
        return value if rule.convert is None else rule.convert(value)
    raise (ValueError if right_kind else TypeError)(
        f"{label or f'options[{name!r}]'} must be {rule.accepted}; got {value!r}")


class PointDerivatives:
    """The gradient, Hessian products and Hessian of a derivative source read from ``at(x)``, its
    operator at one point (``gradient``, ``matvec``, ``to_dense``): autodiff's recording of x, or
    the finite differences' point after a switch."""

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).gradient

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        return self.at(x).matvec(p)

    def hess(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).to_dense()
