"""Implicit derivatives of a solver's solution: ``custom_root``, ``custom_fixed_point``, ``fixed_point``.

A solver maps parameters theta to x*(theta) with ``F(x*, theta) = 0`` (its optimality condition: a
gradient for a minimizer, ``T(x, theta) - x`` for a fixed point of T, an equation for a root
finder). By the implicit function theorem the solution's derivatives need only F at the solution:

    dx*/dtheta = -A^{-1} B,    A = dF/dx (x*, theta),  B = dF/dtheta (x*, theta).

``custom_root(F)(solver)`` makes a solver a primitive of the engine whose rules solve with A: the
VJP of a cotangent g is ``-B^T u`` with ``A^T u = g``, the JVP of a tangent t is ``-A^{-1} (B t)``.
The products with A and A^T come from the engine (``linearize`` and ``vjp`` of F in x, F recorded
once at the solution; with F a gradient that is the Hessian operator's cached recording), and the
linear solves from ``autodiff.linear_solve`` (GMRES by default; CG for a symmetric positive
definite A; LU for small n) or a ``solve(matvec, b)`` of your own. The solver itself runs on plain
values and knows nothing of differentiation: its iterations are never recorded.

The solve with A is itself a primitive of the engine, written like the root's rules: its VJP solves
with the transpose and its JVP with A again, and both differentiate the products in (x*, theta).
So the rules record under an outer tape or accumulator, and derivatives of every order and mode
compose (``hessian``, ``jacobian(jacobian(.))``, ``jvp`` of ``grad``, ...), as the rules of any op.

A solution is differentiated only if it is one. When a derivative is asked (a Tensor among the
arguments), F is evaluated at the returned point and the Newton step ``delta = A^{-1} F(x*, theta)``
(the first-order distance from x* to the exact root, F's residual measured in x's units) is
computed; the call raises a ``ValueError`` unless ``||delta|| <= xtol ||x*|| + xatol`` (2-norms over
all of x). Derivatives taken at a point that far from the root are off by about as much.

Differences from jaxopt's ``custom_root`` (``jaxopt.implicit_diff``): forward mode and every higher
order work (jaxopt's is a ``jax.custom_vjp``: reverse mode only); the default solve is GMRES on A,
not CG on the normal equations A^T A (which squares A's condition number); a solution that does not
satisfy its condition is refused, not differentiated; derivatives are with respect to the
positional arguments after ``init`` (keyword arguments are passed to both functions, not
differentiated; a tracked Tensor among them, or in a closure, is refused), and F may return another
structure than x of the same size. autograd's ``fixed_point(f, a, x0, distance, tol)`` takes a
curried ``f(a)(x)``; ``fixed_point`` here takes ``f(x, *args)`` (jaxopt's order).

Examples
--------
The square root by Newton's method, differentiated through its optimality condition x^2 - a = 0:

>>> import numpy as np
>>> import autodiff as ad
>>> @ad.custom_root(lambda x, a: x ** 2 - a)
... def newton_sqrt(x, a):
...     for _ in range(60):
...         x = 0.5 * (x + a / x)
...     return x
>>> round(float(newton_sqrt(1.0, 2.0)), 12), round(float(ad.grad(lambda a: newton_sqrt(1.0, a))(2.0)), 12)
(1.414213562373, 0.353553390593)
>>> round(float(1 / (2 * np.sqrt(2.0))), 12)                             # 1 / (2 sqrt(a))
0.353553390593
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .core import Primitive, Tensor, note_read, paused, state, tracked, value_of
from .linear_solve import BATCHED, solve_cg, solve_gmres, solve_lu
from .transforms import jvp, linearize, vjp
from .tree import flatten, ravel

__all__ = ["custom_root", "custom_fixed_point", "fixed_point"]

SOLVES = {"gmres": solve_gmres, "cg": solve_cg, "lu": solve_lu}
CHECK_RTOL = 1e-3   # the convergence check needs the Newton step's size only: solved to this relative residual
XTOL = 1e-6         # the default test: the solution within 1e-6 (relative) of the exact root


class _Problem:
    """One solve: the solver, its optimality condition and settings, the structure of its arguments
    (``init``'s leaves first, then theta's) and, once solved, of its solution. The records of the
    solution and of its linear solves carry it as a keyword, so that their rules read it."""

    def __init__(self, settings: dict, structure: Any, n_init: int, kwargs: dict):
        self.solver, self.optimality = settings["solver"], settings["optimality"]
        self.fixed_point, self.has_aux = settings["fixed_point"], settings["has_aux"]
        self.solve, self.name = settings["solve"], settings["name"]
        self.xtol, self.xatol = settings["xtol"], settings["xatol"]
        self.structure, self.n_init, self.kwargs = structure, n_init, kwargs
        self.unravel: Callable | None = None
        self.aux: Any = None

    def arguments(self, theta: list | tuple) -> tuple:
        """The solver's positional arguments after ``init``, rebuilt from theta's leaves."""
        return self.structure([None] * self.n_init + list(theta))[1]

    def residual(self, x: Any, theta: list | tuple) -> Any:
        """F(x, theta) as a flat vector, x flat: written with the engine's ops (it differentiates)."""
        out = self.optimality(self.unravel(x), *self.arguments(theta), **self.kwargs)
        flat = ravel(out)[0]
        return flat - x if self.fixed_point else flat

    def product(self, x: Any, theta: list | tuple, transpose: bool) -> Callable:
        """v -> A v (``transpose``: A^T v), A = dF/dx at (x, theta): F recorded once, each product one
        sweep (v may have leading batch axes). Differentiable in x and theta when they are Tensors."""
        def residual_in_x(z):
            return self.residual(z, theta)
        if transpose:
            pullback = vjp(residual_in_x, x)[1]
            return lambda v: pullback(v)[0]
        return linearize(residual_in_x, x)[1]

    def linear_solve(self, matvec: Callable, b: np.ndarray, loose: bool = False) -> np.ndarray:
        """x with A x = b row by row (b of shape (..., n)), by the problem's solve (``loose``: only to
        ``CHECK_RTOL``, for the convergence check); a failed solve raises, naming the problem."""
        solve = self.solve
        try:
            if getattr(solve, "func", solve) in BATCHED:
                if loose and getattr(solve, "func", solve) is not solve_lu:
                    solve = functools.partial(solve, rtol=CHECK_RTOL)
                return np.asarray(solve(matvec, b))
            rows = np.reshape(b, (-1, np.shape(b)[-1]))
            return np.stack([np.asarray(solve(matvec, row)) for row in rows]).reshape(np.shape(b))
        except RuntimeError as error:
            raise RuntimeError(f"autodiff.{self.name}: the linear system with dF/dx at the solution could not be "
                               f"solved ({error}); the root is not isolated there (dF/dx singular), or the "
                               "solve needs other settings (solve=...)") from error


def _with(values: list | tuple, places: list, chosen: tuple) -> list:
    """``values`` with the entries at ``places`` replaced by ``chosen``."""
    values = list(values)
    for k, value in zip(places, chosen):
        values[k] = value
    return values


def _refuse_tracked(tree: Any, what: str, name: str) -> None:
    """A tracked Tensor where plain values are expected: f read it from a closure (or a Variable),
    so its derivative would be lost without a word."""
    if any(isinstance(leaf, Tensor) and tracked(leaf) for leaf in flatten(tree)[0]):
        raise TypeError(f"autodiff.{name}: {what} depends on a Tensor that a tape or accumulator tracks "
                        "but that is not among the arguments (a closure, or a Variable it reads): pass it "
                        "as a positional argument after init, so that its derivative comes from the "
                        "optimality condition")


# --- the solution: a primitive whose rules solve with A -----------------------------------------------

def _solution(*leaves: Any, problem: _Problem) -> np.ndarray:
    """The solver's solution (flat) at plain values, checked against its optimality condition."""
    init, args = problem.structure(list(leaves))
    out = problem.solver(init, *args, **problem.kwargs)
    if problem.has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"autodiff.{problem.name}: has_aux=True needs a solver that returns a pair "
                            f"(solution, aux), got {type(out).__name__}")
        out, problem.aux = out
    _refuse_tracked(out, "the solver's solution", problem.name)
    x, problem.unravel = ravel(flatten(out)[1]([value_of(leaf) for leaf in flatten(out)[0]]))
    theta = leaves[problem.n_init:]
    residual = problem.residual(x, theta)
    _refuse_tracked(residual, "the optimality function", problem.name)
    with paused():
        _check(problem, x, theta, np.asarray(value_of(residual)))
    return x


def _check(problem: _Problem, x: np.ndarray, theta: tuple, residual: np.ndarray) -> None:
    """Raise unless x is within ``xtol ||x|| + xatol`` of the root, by the Newton step A^{-1} F."""
    if residual.shape != x.shape:
        raise ValueError(f"autodiff.{problem.name}: the optimality function returns {residual.size} values "
                         f"for a solution of {x.size}: F(x, *args) = 0 must be as many equations as unknowns")
    if not np.all(np.isfinite(residual)):
        raise ValueError(f"autodiff.{problem.name}: the optimality function is not finite at the solution "
                         "the solver returned")
    step = problem.linear_solve(problem.product(x, theta, transpose=False), residual, loose=True)
    distance, allowed = np.linalg.norm(step), problem.xtol * np.linalg.norm(x) + problem.xatol
    if not distance <= allowed:
        raise ValueError(f"autodiff.{problem.name}: the solver did not converge: its solution is {distance:.3g} "
                         f"(the Newton step (dF/dx)^-1 F) from the root of the optimality condition, more than "
                         f"xtol ||x|| + xatol = {allowed:.3g} (||F|| = {np.linalg.norm(residual):.3g}); its "
                         "derivatives would be off by about as much. Solve to a tighter tolerance, or loosen xtol.")


class _Root(Primitive):
    """The solution as one record over init's and theta's leaves. VJP: -B^T u with A^T u = g; JVP:
    -A^{-1} B t. init's leaves get no derivative (the solution does not depend on them)."""

    def __init__(self):
        super().__init__(_solution, "custom_root")
        self.joint = True

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        problem = kwargs["problem"]
        theta = list(args[problem.n_init:])
        moved = [i - problem.n_init for i in parents if i >= problem.n_init]
        cotangents = {}
        if moved:
            u = _LINEAR(g, ans, *theta, problem=problem, transpose=True)
            parts = vjp(lambda *chosen: problem.residual(ans, _with(theta, moved, chosen)),
                        *[theta[k] for k in moved])[1](u)
            cotangents = {k + problem.n_init: -part for k, part in zip(moved, parts)}
        return [cotangents.get(i) for i in parents]

    def forward(self, tangents: dict, ans: Any, args: Any, kwargs: dict) -> Any:
        problem = kwargs["problem"]
        theta = list(args[problem.n_init:])
        moved = [i - problem.n_init for i in tangents if i >= problem.n_init]
        if not moved:
            return np.zeros(ans.shape, ans.dtype)
        pushed = jvp(lambda *chosen: problem.residual(ans, _with(theta, moved, chosen)),
                     tuple(theta[k] for k in moved), tuple(tangents[k + problem.n_init] for k in moved))[1]
        return -_LINEAR(pushed, ans, *theta, problem=problem, transpose=False)


def _linear_solution(b: Any, x: Any, *theta: Any, problem: _Problem, transpose: bool) -> np.ndarray:
    """v with A v = b (``transpose``: A^T v = b), A = dF/dx at (x, theta), at plain values."""
    with paused():
        return problem.linear_solve(problem.product(x, theta, transpose), np.asarray(b))


class _Linear(Primitive):
    """A(x, theta)^{-1} b as one record over (b, x, *theta), differentiated by the same theorem: the
    solution v of A v = b moves by A^{-1} (db - dA v). VJP: w = A^{-T} g for b, -(d(A v)/d(x, theta))^T w
    for the rest; JVP: A^{-1} (db - d(A v)). Its rules solve again (with A^T, then A): any order."""

    def __init__(self):
        super().__init__(_linear_solution, "custom_root_linear_solve")
        self.joint = True

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        problem, transpose = kwargs["problem"], kwargs["transpose"]
        params = list(args[1:])
        w = _LINEAR(g, *params, problem=problem, transpose=not transpose)
        cotangents = {0: w}
        moved = [i - 1 for i in parents if i >= 1]
        if moved:
            parts = vjp(lambda *chosen: _applied(problem, ans, _with(params, moved, chosen), transpose),
                        *[params[k] for k in moved])[1](w)
            cotangents.update({k + 1: -part for k, part in zip(moved, parts)})
        return [cotangents[i] for i in parents]

    def forward(self, tangents: dict, ans: Any, args: Any, kwargs: dict) -> Any:
        problem, transpose = kwargs["problem"], kwargs["transpose"]
        params = list(args[1:])
        rhs = tangents.get(0)
        moved = [i - 1 for i in tangents if i >= 1]
        if moved:
            change = jvp(lambda *chosen: _applied(problem, ans, _with(params, moved, chosen), transpose),
                         tuple(params[k] for k in moved), tuple(tangents[k + 1] for k in moved))[1]
            rhs = -change if rhs is None else rhs - change
        return _LINEAR(rhs, *params, problem=problem, transpose=transpose)


def _applied(problem: _Problem, v: Any, params: list, transpose: bool) -> Any:
    """A v (or A^T v) with A at params = (x, *theta)."""
    return problem.product(params[0], params[1:], transpose)(v)


_ROOT, _LINEAR = _Root(), _Linear()


# --- the decorators -------------------------------------------------------------------------------

def _solve_setting(solve: str | Callable) -> Callable:
    if callable(solve):
        return solve
    if solve not in SOLVES:
        raise ValueError(f"solve must be one of {sorted(SOLVES)} or a function solve(matvec, b), got {solve!r}")
    return SOLVES[solve]


def _decorator(optimality: Callable, fixed_point: bool, has_aux: bool, solve: str | Callable, xtol: float,
               xatol: float, name: str) -> Callable:
    if not callable(optimality):
        raise TypeError(f"autodiff.{name} needs a function, got {type(optimality).__name__}")
    if not (xtol >= 0 and xatol >= 0):
        raise ValueError(f"xtol and xatol must be non-negative numbers, got {xtol!r} and {xatol!r}")
    settings = {"optimality": optimality, "fixed_point": fixed_point, "has_aux": has_aux,
                "solve": _solve_setting(solve), "xtol": float(xtol), "xatol": float(xatol), "name": name}

    def decorator(solver: Callable) -> Callable:
        @functools.wraps(solver)
        def solver_with_implicit_derivatives(init: Any, *args: Any, **kwargs: Any) -> Any:
            return _call(dict(settings, solver=solver), init, args, kwargs)
        return solver_with_implicit_derivatives
    return decorator


def _call(settings: dict, init: Any, args: tuple, kwargs: dict) -> Any:
    """The decorated solver's call: plain values in, its own result out; a Tensor among the
    arguments makes the solution a record of the engine (Tensors out)."""
    _refuse_tracked(kwargs, "a keyword argument", settings["name"])
    leaves, structure = flatten((init, args))
    if not any(isinstance(leaf, Tensor) for leaf in leaves):
        out = settings["solver"](init, *args, **kwargs)
        _refuse_tracked(out, "the solver's result", settings["name"])
        if state.tapes or state.accumulators:  # something differentiates: F may read what it tracks
            x = out[0] if settings["has_aux"] else out
            _refuse_tracked(settings["optimality"](x, *args, **kwargs), "the optimality function", settings["name"])
        return out
    problem = _Problem(settings, structure, len(flatten(init)[0]), kwargs)
    flat = _ROOT(*leaves, problem=problem)
    x = problem.unravel(flat)
    if not settings["has_aux"]:
        return x
    note_read(flat, f"{settings['name']}'s aux")  # a trace refuses: a replay could not recompute aux
    return x, problem.aux


def custom_root(optimality_fun: Callable, has_aux: bool = False, solve: str | Callable = "gmres",
                xtol: float = XTOL, xatol: float = 0.0) -> Callable:
    """Decorator: a solver ``solver(init, *args) -> x*`` differentiated implicitly, from
    ``optimality_fun(x*, *args) = 0`` (as ``jaxopt.implicit_diff.custom_root``).

    The decorated solver's derivatives with respect to ``args`` are ``-A^{-1} B``, A and B the
    derivatives of the optimality function in x and in args at the solution (the implicit function
    theorem): in reverse and forward mode, to every order (see the module docstring). ``init`` gets
    zero derivatives. The solver runs on plain values (NumPy arrays, never Tensors) and is never
    differentiated itself.

    Parameters
    ----------
    optimality_fun : callable
        ``F(x, *args, **kwargs)``, zero at the solution: arrays (or a pytree) of as many elements as
        x, written with NumPy operations (it is differentiated; e.g. ``autodiff.grad(loss)`` for a
        minimizer of ``loss(x, *args)``).
    has_aux : bool, default False
        Whether the solver returns ``(x*, aux)``; aux is returned as the solver computed it.
    solve : {"gmres", "cg", "lu"} or callable, default "gmres"
        The linear solves with A: ``autodiff.linear_solve``'s ``solve_gmres`` (any nonsingular A),
        ``solve_cg`` (A symmetric positive definite: F the gradient of a function x* minimizes),
        ``solve_lu`` (A formed from n products; small n), one of them with its settings
        (``functools.partial(solve_gmres, rtol=1e-12)``), or your ``solve(matvec, b)`` (jaxopt's
        form: b of shape (n,)).
    xtol, xatol : float
        The convergence check: a derivative needs ``||A^{-1} F(x*, args)|| <= xtol ||x*|| + xatol``.

    Returns
    -------
    callable
        ``decorator(solver)``: the solver with implicit derivatives, called as the solver is.

    Raises
    ------
    ValueError
        When called with a Tensor among the arguments, if the solution does not pass the check (the
        solver did not converge), F has another size than x, or F is not finite there.
    RuntimeError
        If a linear solve with A fails (A singular at the solution: the root is not isolated).
    TypeError
        If the solver or F depends on a tracked Tensor that is not a positional argument.

    Examples
    --------
    Ridge regression's weights as a function of the strength, from its gradient = 0:

    >>> import numpy as np
    >>> import autodiff as ad
    >>> X, y = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0, 2.0])
    >>> loss = lambda w, lam: 0.5 * np.sum((X @ w - y) ** 2) + 0.5 * lam * np.sum(w ** 2)
    >>> @ad.custom_root(ad.grad(loss), solve="cg")
    ... def ridge(w0, lam):
    ...     return np.linalg.solve(X.T @ X + lam * np.eye(2), X.T @ y)
    >>> lam = 0.5
    >>> ad.jacobian(lambda lam: ridge(np.zeros(2), lam))(lam).round(10)           # dw/dlam
    array([-0.32599643,  0.07138608])
    >>> M = X.T @ X + lam * np.eye(2)
    >>> (-np.linalg.solve(M, ridge(np.zeros(2), lam))).round(10)                # -(X^T X + lam I)^-1 w
    array([-0.32599643,  0.07138608])
    """
    return _decorator(optimality_fun, False, has_aux, solve, xtol, xatol, "custom_root")


def custom_fixed_point(fixed_point_fun: Callable, has_aux: bool = False, solve: str | Callable = "gmres",
                       xtol: float = XTOL, xatol: float = 0.0) -> Callable:
    """Decorator: a solver of ``x = fixed_point_fun(x, *args)`` differentiated implicitly (as
    ``jaxopt.implicit_diff.custom_fixed_point``): ``custom_root`` of ``T(x, *args) - x``.

    Parameters, returns and errors are ``custom_root``'s; ``fixed_point_fun`` returns x's structure.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> T = lambda x, a: 0.5 * np.cos(x) + a                  # a contraction: |dT/dx| <= 1/2
    >>> @ad.custom_fixed_point(T)
    ... def iterate(x, a):
    ...     for _ in range(200):
    ...         x = T(x, a)
    ...     return x
    >>> x = iterate(0.0, 1.0)
    >>> round(float(ad.grad(lambda a: iterate(0.0, a))(1.0)), 12), round(float(1 / (1 + 0.5 * np.sin(x))), 12)
    (0.683221929719, 0.683221929719)
    """
    return _decorator(fixed_point_fun, True, has_aux, solve, xtol, xatol, "custom_fixed_point")


def fixed_point(f: Callable, x0: Any, *args: Any, tol: float = 1e-10, maxiter: int = 10_000,
                solve: str | Callable = "gmres", xtol: float = XTOL) -> Any:
    """The fixed point ``x = f(x, *args)`` by iteration from x0, differentiable in args (implicitly).

    Iterates ``x <- f(x, *args)`` on plain values until a step is at most ``tol`` times the iterate
    (2-norms over the leaves), as autograd's ``fixed_point`` (whose ``f`` is curried, ``f(a)(x)``);
    the derivatives come from ``custom_fixed_point``, not from the iterations.

    Parameters
    ----------
    f : callable
        ``f(x, *args)``, returning x's structure; a contraction near the fixed point.
    x0 : array_like or pytree
        Where to start (it gets zero derivatives).
    *args
        The parameters (arrays or pytrees) to differentiate.
    tol : float, default 1e-10
        Stop when ``||x_{k+1} - x_k|| <= tol ||x_{k+1}||``.
    maxiter : int, default 10000
        At most this many iterations.
    solve, xtol
        As in ``custom_root``.

    Returns
    -------
    array or pytree
        The fixed point, in x0's structure (Tensors when a Tensor is among the arguments).

    Raises
    ------
    RuntimeError
        When the iteration does not converge in ``maxiter`` steps or leaves the finite numbers.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> W = np.array([[0.2, -0.3], [0.4, 0.1]])
    >>> layer = lambda x, theta: np.tanh(W @ x + theta)       # a deep-equilibrium layer
    >>> theta = np.array([0.5, -0.2])
    >>> x = ad.fixed_point(layer, np.zeros(2), theta)
    >>> bool(np.allclose(x, layer(x, theta), rtol=0, atol=1e-9))
    True
    >>> J = ad.jacobian(lambda t: ad.fixed_point(layer, np.zeros(2), t))(theta)
    >>> D = np.diag(1 - x ** 2)                               # (I - D W)^-1 D: the closed form
    >>> bool(np.allclose(J, np.linalg.solve(np.eye(2) - D @ W, D), rtol=1e-10))
    True
    """
    def iterate(x: Any, *args: Any) -> Any:
        for _ in range(maxiter):
            new = f(x, *args)
            step = np.sqrt(sum(np.sum((np.asarray(a, float) - np.asarray(b, float)) ** 2)
                               for a, b in zip(flatten(new)[0], flatten(x)[0])))
            size = np.sqrt(sum(np.sum(np.asarray(a, float) ** 2) for a in flatten(new)[0]))
            if not np.isfinite(step):
                raise RuntimeError("autodiff.fixed_point: the iteration left the finite numbers")
            x = new
            if step <= tol * size:
                return x
        raise RuntimeError(f"autodiff.fixed_point: no fixed point to tol = {tol:g} in {maxiter} iterations "
                           f"(the last step was {step:.3g} for an iterate of norm {size:.3g}): f may not be "
                           "a contraction there")
    return custom_fixed_point(f, solve=solve, xtol=xtol)(iterate)(x0, *args)
