"""Derivatives of minimize's and least_squares' solutions, by the implicit function theorem.

Inside a transform (``ad.grad``, ``jacobian``, ``hessian``, ``jvp``, ``vjp``, a GradientTape or a
ForwardAccumulator), an objective that reads a tracked Tensor theta (one it closes over, or one of
``args``) makes ``minimize`` solve on plain values as always and return ``x`` and ``fun`` as
records of the engine: the minimizer x*(theta) has grad_x f(x*, theta) = 0, so

    dx*/dtheta = -H^{-1} d(grad_x f)/dtheta,    H the Hessian of f in x at (x*, theta).

At a bound an active coordinate does not move: the system is H on the free coordinates and the
identity on the active ones, ``A = P H P + (I - P)`` with P the diagonal 0/1 mask of the free ones
(symmetric positive definite at a strict local minimum), and the right-hand sides are masked.
The Hessian is the objective's recorded once at the solution (``autodiff.hessian_operator``): up
to 200 variables A is formed in one batched sweep and factored by Cholesky (an error of about
cond(A) eps), beyond that the solves are conjugate gradients on its products
(``autodiff.linear_solve.solve_cg``, to ``||r|| <= 1e-10 ||b||``). ``fun`` is f at
the differentiable x, so its derivatives follow by the chain rule (the envelope theorem at first
order).

The thetas are found, not declared: one evaluation of f at x0 under an observer of the engine
lists the tracked Tensors that f reads but did not compute. A closure cannot be called with other
values, so partial derivatives in theta are taken by watching the very Tensors (a fresh
GradientTape or ForwardAccumulator around the gradient of f); this is why
``autodiff.custom_root``, which substitutes its arguments, is not used as it is, though the rules
are the same: the solution and its linear solve are primitives whose VJP and JVP rules solve with A
again and are written with the engine's ops, so they record under outer tapes and second and
higher derivatives compose (``ad.hessian`` of a validation loss in a strength).

A run that did not succeed is refused (its point is not a solution, and derivatives taken there
would be off by an unknown amount), as is a Hessian that is not positive definite on the free
coordinates (the solution is not an isolated minimum: CG meets non-positive curvature).

References: S. G. Krantz and H. R. Parks, The Implicit Function Theorem (2002); M. Blondel et al.,
"Efficient and modular implicit differentiation", NeurIPS 2022 (jaxopt's ``custom_root``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
from autodiff import numpy as anp
from autodiff.core import Primitive, Tensor, constant, note_read, paused, state, tracked, value_of
from autodiff.forward import ForwardAccumulator
from autodiff.tape import GradientTape
from autodiff.tree import flatten, ravel

from ._constraints import constraint_items
from ._covariance import masked_inverse
from ._derivatives import variables_of

#: Up to this many variables the system is formed (one batched sweep) and factored by Cholesky.
DENSE_UP_TO = 200


class _ReadTensors:
    """An observer of the engine (see ``autodiff.core._State``): the tracked Tensors that the ops it
    sees read but that were not computed while it watched (what a function closes over or gets)."""

    def __init__(self):
        self.made: set = set()
        self.found: dict = {}

    def record(self, prim, args, raw, kwargs, out, parents) -> None:
        for i in parents:
            tensor = args[i]
            if tensor._id not in self.made and tensor._id not in self.found and tracked(tensor):
                self.found[tensor._id] = tensor
        self.made.update(o._id for o in (out if type(out) is tuple else (out,)))

    def read(self, tensor, how) -> None:
        """Reads of values are the transforms' business (a tracked one is refused there)."""

    def raw_sweep(self, active) -> None:
        """Sweeps inside the evaluation compute from what it made."""


def read_tensors(evaluate: Callable[[], Any]) -> list:
    """The tracked Tensors that ``evaluate()`` reads without computing them, in the order it first
    reads them; [] (without evaluating) when nothing records."""
    if not (state.tapes or state.accumulators):
        return []
    observer = _ReadTensors()
    state.observers.append(observer)
    try:
        evaluate()
    finally:
        state.observers.remove(observer)
    return list(observer.found.values())


def plain_tree(tree: Any) -> Any:
    """``tree`` with each Tensor leaf replaced by its value (a start point gets no derivative)."""
    leaves, rebuild = flatten(tree)
    return rebuild([np.array(value_of(leaf)) if isinstance(leaf, Tensor) else leaf for leaf in leaves])


class _Solution:
    """A solution x* of ``objective`` (flat x, reading ``thetas``) with the 0/1 mask ``free`` of its
    free coordinates: the products and solves with A = P H P + (I - P) that the rules need."""

    def __init__(self, objective: Callable, x: np.ndarray, free: np.ndarray, thetas: list, name: str):
        self.objective, self.x, self.free, self.thetas, self.name = objective, x, free, thetas, name
        self.factored: tuple | None = None   # (x's bytes, the solve at x)

    def gradient(self, x: Any) -> Any:
        """grad_x f at x, with the engine's ops (x a Tensor)."""
        return ad.grad(self.objective)(x)

    def product(self, x: Any, v: Any) -> Any:
        """A(x) v, with the engine's ops (x a Tensor; v may have leading batch axes); on the masked
        vectors the rules use, P A P v = P H P v."""
        hessian_product = ad.linearize(self.gradient, x)[1]
        return self.free * hessian_product(self.free * v) + (1 - self.free) * v

    def solve(self, x: np.ndarray, b: np.ndarray) -> np.ndarray:
        """v = P A(x)^{-1} P b row by row, at plain values, by the Hessian recorded once at x (kept for
        the next solve at the same x; ``hessopt._covariance.masked_inverse``: Cholesky up to
        ``DENSE_UP_TO`` variables, else CG). The rules' right-hand sides are masked, so P A^{-1} P
        is A^{-1} on them."""
        key = np.asarray(x).tobytes()
        try:
            if self.factored is None or self.factored[0] != key:
                with paused():
                    operator = ad.hessian_operator(self.objective, np.asarray(x))
                self.factored = (key, masked_inverse(operator, self.free, DENSE_UP_TO))
            return self.factored[1](np.asarray(b))
        except (RuntimeError, np.linalg.LinAlgError) as error:
            raise RuntimeError(f"{self.name}: the derivatives of the solution need the Hessian at it to be "
                               f"positive definite on the free variables, and the solve with it failed ({error}): "
                               "the minimizer is not isolated there (a flat or saddle direction)") from error


def _plain_unless_recording(values: list) -> list:
    """The rules' results as arrays in a raw sweep (nothing records), Tensors when something does."""
    if state.tapes or state.accumulators:
        return values
    return [None if v is None else np.asarray(value_of(v)) for v in values]


def _point(x: Any) -> Tensor:
    """A fresh Tensor of x's value that tracks what x tracks (an alias), or a constant."""
    return anp.ops.alias(x) if isinstance(x, Tensor) else constant(x)


def _pullback(function: Callable, x: Any, thetas: list, chosen: list, with_x: bool, cotangent: Any) -> list:
    """The VJP of ``function(x)`` (an array that reads ``thetas``) at ``cotangent`` (the output's shape,
    after any batch axes): the cotangents of x (if ``with_x``) and of ``thetas[k]`` for k in
    ``chosen``, each with the cotangent's batch axes. Partial derivatives: the tape watches only these."""
    point = _point(x)
    sources = ([point] if with_x else []) + [thetas[k] for k in chosen]
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(sources)
        out = function(point)
    shape = np.shape(value_of(cotangent))
    batch = shape[:len(shape) - out.ndim]
    rows = anp.reshape(cotangent, (-1,) + out.shape) if batch else [cotangent]
    parts = [tape.gradient(out, sources, output_gradients=row, unconnected_gradients="zero") for row in rows]
    if not batch:
        return list(parts[0])
    return [anp.reshape(anp.stack([p[j] for p in parts]), batch + source.shape) for j, source in enumerate(sources)]


def _pushforward(function: Callable, x: Any, thetas: list, tangents: dict, x_tangent: Any = None) -> Any:
    """The JVP of ``function(x)`` (a flat vector that reads ``thetas``) for the tangents
    ``{k: tangent of thetas[k]}`` and ``x_tangent`` (None: x held fixed)."""
    point = _point(x)
    primals = ([point] if x_tangent is not None else []) + [thetas[k] for k in tangents]
    pushed = ([x_tangent] if x_tangent is not None else []) + list(tangents.values())
    with ForwardAccumulator(primals, pushed) as accumulator:
        out = function(point)
    return accumulator.jvp(out, unconnected_gradients="zero")


def _solution_value(*thetas: Any, problem: _Solution) -> np.ndarray:
    return problem.x.copy()


class _Argmin(Primitive):
    """x*(thetas) as one record. VJP: -(d grad_x f/dtheta)^T u with A u = P g; JVP:
    -A^{-1} P (d grad_x f/dtheta) t."""

    def __init__(self):
        super().__init__(_solution_value, "argmin")
        self.joint = True

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        problem = kwargs["problem"]
        u = _SOLVE(problem.free * g, ans, *args, problem=problem)
        parts = _pullback(problem.gradient, ans, problem.thetas, list(parents), False, u)
        return _plain_unless_recording([-part for part in parts])

    def forward(self, tangents: dict, ans: Any, args: Any, kwargs: dict) -> Any:
        problem = kwargs["problem"]
        pushed = _pushforward(problem.gradient, ans, problem.thetas, tangents)
        return _plain_unless_recording([-_SOLVE(problem.free * pushed, ans, *args, problem=problem)])[0]


def _solved(b: Any, x: Any, *thetas: Any, problem: _Solution) -> np.ndarray:
    return problem.solve(np.asarray(x), np.asarray(b))


class _Solve(Primitive):
    """A(x, thetas)^{-1} b as one record over (b, x, *thetas); A is symmetric. The solution v moves by
    A^{-1} (db - dA v). VJP: w = A^{-1} g for b, -(d(A v)/d(x, theta))^T w for the rest; JVP:
    A^{-1} (db - d(A v)). The rules solve again: any order."""

    def __init__(self):
        super().__init__(_solved, "argmin_linear_solve")
        self.joint = True

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        problem = kwargs["problem"]
        w = _SOLVE(g, *args[1:], problem=problem)
        cotangents = {0: w}
        chosen = [i - 2 for i in parents if i >= 2]
        if 1 in parents or chosen:
            parts = _pullback(lambda z: problem.product(z, ans), args[1], problem.thetas, chosen, 1 in parents, w)
            cotangents.update(zip([1] * (1 in parents) + [k + 2 for k in chosen], [-part for part in parts]))
        return _plain_unless_recording([cotangents[i] for i in parents])

    def forward(self, tangents: dict, ans: Any, args: Any, kwargs: dict) -> Any:
        problem = kwargs["problem"]
        rhs = tangents.get(0)
        moved = {i - 2: t for i, t in tangents.items() if i >= 2}
        if 1 in tangents or moved:
            change = _pushforward(lambda z: problem.product(z, ans), args[1], problem.thetas, moved,
                                  tangents.get(1))
            rhs = -change if rhs is None else rhs - change
        return _plain_unless_recording([_SOLVE(rhs, *args[1:], problem=problem)])[0]


_ARGMIN, _SOLVE = _Argmin(), _Solve()


def differentiable_solution(result: OptimizeResult, objective: Callable, thetas: list, name: str) -> Any:
    """The solution ``result.x`` (a tree) as a record of the engine over ``thetas``: a tree of Tensors
    whose derivatives come from the implicit function theorem for ``objective(tree)``.

    Raises
    ------
    ValueError
        If the run did not succeed (its point is not a minimizer to differentiate).
    """
    if not result.success:
        raise ValueError(f"{name}: the run did not converge (status {result.status}: {result.message}), so its "
                         "x is not a solution and its derivatives would be wrong; they are not taken. Solve to "
                         "convergence (more iterations, another method or start) before differentiating.")
    x, unravel = ravel(result.x)
    active = result.get("active_mask")
    free = np.ones(x.size) if active is None else (ravel(active)[0] == 0).astype(x.dtype)
    problem = _Solution(lambda z: objective(unravel(z)), np.asarray(x), free, thetas, name)
    return unravel(_ARGMIN(*thetas, problem=problem))


def _start(x0: Any) -> Any:
    """x0 as the objective gets it: a list of numbers is a vector (scipy's habit), a pytree keeps its
    form; Tensors become their values."""
    x0 = plain_tree(x0)
    if isinstance(x0, (list, tuple)) and all(np.ndim(leaf) == 0 for leaf in flatten(x0)[0]):
        return np.asarray(x0, dtype=float)
    return x0


def _through_solution(solver: Callable, arguments: dict, objective_of: Callable, fields_of: Callable,
                      name: str) -> OptimizeResult | None:
    """A call ``solver(**arguments)`` (the first argument the function, then ``x0`` and ``args``) as
    the solver's first statement makes it: None when it should run as it is (nothing records, fun
    reads no tracked Tensor, or x0 is a list of Variables); else its result, solved on plain values,
    with ``x`` and the fields ``fields_of(fun, x, args)`` (a dict) as records of the engine.
    ``objective_of(fun, args)`` is the scalar function of the tree x that the solution minimizes."""
    if not (state.tapes or state.accumulators):
        return None
    fun, x0, args = next(iter(arguments.values())), arguments["x0"], arguments.get("args", ())
    if not callable(fun):
        return None
    variables = variables_of(x0)
    if variables is not None:
        _refuse_over_variables(fun, args, variables, name)
        return None
    start = _start(x0)
    thetas = read_tensors(lambda: fun(start, *args))
    if not thetas:
        return None
    for theta in thetas:   # a trace (autodiff.function) refuses: its replay could not solve again
        note_read(theta, f"{name} solves with its value")
    with paused():
        result = solver(**dict(arguments, x0=start))
    x = differentiable_solution(result, objective_of(fun, args), thetas, name)
    result.update(x=x, **fields_of(fun, x, args))
    return result


def _refuse_over_variables(fun: Callable, args: tuple, variables: list, name: str) -> None:
    """A loss over Variables that reads another tracked Tensor: its solution's derivative is not
    taken (the Variables are the solver's state), and saying so beats the curvature operator's error."""
    mine = {id(v) for v in variables}
    if any(id(t) not in mine for t in read_tensors(lambda: fun(*args))):
        raise TypeError(f"{name}: the loss over Variables reads a Tensor that a transform differentiates; the "
                        "derivatives of a solution are taken for a loss of its parameters: pass them as x0 (an "
                        "array or a pytree of arrays) and the differentiated value through a closure or args")


def _minimize_objective(fun: Callable, args: tuple) -> Callable:
    return lambda x: anp.reshape(fun(x, *args), ())   # a value of size one is a scalar, as minimize takes it


def _minimize_fields(fun: Callable, x: Any, args: tuple) -> dict:
    return {"fun": fun(x, *args)}


def _residuals(fun: Callable, x: Any, args: tuple) -> Any:
    return anp.ravel(fun(x, *args))


def _least_squares_objective(fun: Callable, args: tuple) -> Callable:
    return lambda x: 0.5 * anp.sum(_residuals(fun, x, args) ** 2)


def _least_squares_fields(fun: Callable, x: Any, args: tuple) -> dict:
    residuals = _residuals(fun, x, args)
    return {"fun": residuals, "cost": 0.5 * anp.sum(residuals ** 2)}


def minimize_through_solution(minimize: Callable, arguments: dict) -> OptimizeResult | None:
    """minimize's call with ``x`` and ``fun`` differentiable in what the objective reads, or None
    (see :func:`_through_solution`). A constrained solution is refused inside a transform: its
    derivatives solve the KKT system, not the objective's Hessian, and that rule is not written yet."""
    if (state.tapes or state.accumulators) and constraint_items(arguments.get("constraints")):
        raise NotImplementedError("hessopt.minimize with constraints inside a transform: derivatives of a "
                                  "constrained solution (the KKT system's sensitivities) are not supported yet; "
                                  "call it outside the transform, or with bounds only")
    return _through_solution(minimize, arguments, _minimize_objective, _minimize_fields, "hessopt.minimize")


def least_squares_through_solution(least_squares: Callable, arguments: dict) -> OptimizeResult | None:
    """least_squares' call with ``x``, ``fun`` (the residuals) and ``cost`` differentiable in what the
    residuals read, or None; the solution's system is the Hessian of the cost 0.5 ||r||^2 (not its
    Gauss-Newton part)."""
    return _through_solution(least_squares, arguments, _least_squares_objective, _least_squares_fields,
                             "hessopt.least_squares")
