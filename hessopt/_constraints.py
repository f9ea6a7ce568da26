"""scipy's constraints, normalized into one :class:`optimizers.constraints.CanonicalConstraint`, with
exact derivatives from autodiff where the user gives none.

``minimize(..., constraints=...)`` takes what scipy's ``minimize`` takes: a dict or a list of dicts
(``{"type": "eq" | "ineq", "fun": c, "jac": None, "args": ()}``, ``"ineq"`` meaning ``c(x) >= 0``),
``scipy.optimize.LinearConstraint(A, lb, ub)`` (A dense or sparse, over x0 flattened in
``autodiff.ravel`` order) and ``NonlinearConstraint(fun, lb, ub, jac, hess)``, in any mix. Each
becomes one *group* ``lb <= c(x) <= ub`` (:func:`parse_constraints`), and the groups one canonical
object (:func:`canonical_constraint`), as scipy's trust-constr builds its ``CanonicalConstraint``;
the method sees nothing else. Constraint functions get x in the form of x0 (a pytree stays one).

Derivatives (:class:`LagrangianCurvature`): a group's Jacobian is the user's ``jac`` or autodiff's
(dense, or ``autodiff.sparse_jacobian`` with its pattern found in the program); the Hessian of the
Lagrangian ``s f(x) + v^T c(x)`` is one autodiff Hessian of that function over the groups without a
user ``hess`` (and f, when f's curvature is autodiff's), plus the user's ``hess(x, v)`` of the
others. The weights ``(s, v)`` are an ``autodiff.Variable`` the program reads, not constants of it:
the traced program (``autodiff.function``, or ``sparse_hessian``'s traced products) is replayed at
every iterate with new multipliers, and its sparsity pattern, the union of the objective's and
each constraint's, is found once. Linear constraints add no curvature.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import LinearConstraint, NonlinearConstraint, OptimizeWarning
from scipy.sparse.linalg import LinearOperator

import autodiff as ad
from optimizers.constraints import CanonicalConstraint, add_matrices
from optimizers.sparse import SPARSE_MIN_SIZE

from ._arguments import FINITE_DIFFERENCES, as_args, plain_value, real_array, residual_vector
from ._finite_differences import difference_jacobian

_DICT_KEYS = frozenset({"type", "fun", "jac", "args"})


class Group(NamedTuple):
    """One constraint as the user gave it, over flat x: ``lower <= fun(x) <= upper``.

    ``fun`` maps flat x to the values (None for a linear constraint, whose ``matrix`` is A);
    ``jac`` and ``hess`` (``hess(x, v)``) are the user's on flat x, None where autodiff gives them;
    ``label`` names it in messages (``constraints[1] (NonlinearConstraint)``).
    """
    label: str
    lower: np.ndarray
    upper: np.ndarray
    fun: Callable | None = None
    jac: Callable | None = None
    hess: Callable | None = None
    matrix: Any = None
    note: str | None = None

    @property
    def autodiff_curvature(self) -> bool:
        """Whether the Lagrangian's autodiff Hessian covers this group (nonlinear, no user hess)."""
        return self.fun is not None and self.hess is None


def constraint_items(constraints) -> list:
    """scipy's ``constraints`` as a list of items: None and empty sequences are no constraints; one
    dict, LinearConstraint or NonlinearConstraint is a list of one.

    Raises
    ------
    TypeError
        For anything but those forms, naming the item.
    """
    if constraints is None:
        return []
    items = [constraints] if isinstance(constraints, (dict, LinearConstraint, NonlinearConstraint)) \
        else constraints
    if not isinstance(items, (list, tuple)):
        raise TypeError("constraints must be a dict, a LinearConstraint, a NonlinearConstraint or a list of "
                        f"them (scipy's forms); got {type(constraints).__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, (dict, LinearConstraint, NonlinearConstraint)):
            raise TypeError(f"constraints[{i}] must be a dict, a LinearConstraint or a NonlinearConstraint; "
                            f"got {type(item).__name__}")
    return list(items)


def parse_constraints(items: list, x0: np.ndarray, unravel: Callable) -> list[Group]:
    """The :class:`Group` of each item (see :func:`constraint_items`) over flat x0; nonlinear
    constraints are evaluated once at x0 for their size.

    Raises
    ------
    TypeError, ValueError
        For a malformed item (unknown type or keys, fun or jac not callable, A of the wrong width,
        bounds that fit no value or not the constraint's size), naming it.
    """
    groups = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            groups.append(_from_dict(item, f"constraints[{i}]", x0, unravel))
        elif isinstance(item, LinearConstraint):
            groups.append(_from_linear(item, f"constraints[{i}] (LinearConstraint)", x0.size))
        else:
            groups.append(_from_nonlinear(item, f"constraints[{i}] (NonlinearConstraint)", x0, unravel))
    return groups


def _from_dict(item: dict, label: str, x0: np.ndarray, unravel: Callable) -> Group:
    """scipy's old form: ``"eq"`` is ``fun(x, *args) == 0``, ``"ineq"`` is ``fun(x, *args) >= 0``."""
    unknown = sorted(map(str, set(item) - _DICT_KEYS))
    if unknown:
        raise ValueError(f"{label}: unknown keys {unknown}; a constraint dict has 'type', 'fun', 'jac', 'args'")
    kind = item.get("type")
    if kind not in ("eq", "ineq"):
        raise ValueError(f"{label}: 'type' must be 'eq' or 'ineq', got {kind!r}")
    label = f"{label} ({kind})"
    args = as_args(item.get("args", ()))
    fun = _flat_values(_callable(item.get("fun"), label, "fun"), unravel, args, label)
    m = fun(x0).size
    upper = np.zeros(m) if kind == "eq" else np.full(m, np.inf)
    return Group(label, np.zeros(m), upper, fun, _user_jacobian(item.get("jac"), unravel, args, label, m))


def _from_linear(item: LinearConstraint, label: str, n: int) -> Group:
    """``lb <= A x <= ub`` over flat x (A dense or sparse; a 1-D A is one row)."""
    A = scipy.sparse.csr_matrix(item.A, dtype=float) if scipy.sparse.issparse(item.A) \
        else np.atleast_2d(real_array(item.A, f"{label}: A").astype(float))
    if A.ndim != 2 or A.shape[1] != n:
        raise ValueError(f"{label}: A has shape {A.shape}, but x0 has {n} entries (A acts on x0 flattened)")
    lower, upper = _bounds(item.lb, item.ub, A.shape[0], label)
    return Group(label, lower, upper, matrix=A)


def _from_nonlinear(item: NonlinearConstraint, label: str, x0: np.ndarray, unravel: Callable) -> Group:
    """``lb <= fun(x) <= ub``; the user's ``jac`` and ``hess`` where callable, autodiff's for scipy's
    approximations (finite differences, quasi-Newton updates, None)."""
    fun = _flat_values(_callable(item.fun, label, "fun"), unravel, (), label)
    m = fun(x0).size
    lower, upper = _bounds(item.lb, item.ub, m, label)
    if np.any(np.asarray(item.keep_feasible)):
        warnings.warn(f"{label}: keep_feasible is not enforced for general constraints: the iterates "
                      "stay strictly inside the bounds only; the constraint holds at a successful result",
                      OptimizeWarning, stacklevel=5)
    hess = _user_hessian(item.hess, unravel, x0.size, label) if callable(item.hess) else None
    return Group(label, lower, upper, fun, _user_jacobian(item.jac, unravel, (), label, m), hess)


def _callable(fun, label: str, name: str) -> Callable:
    if not callable(fun):
        raise TypeError(f"{label}: '{name}' must be callable, got {type(fun).__name__}")
    return fun


def _flat_values(fun: Callable, unravel: Callable, args: tuple, label: str) -> Callable:
    """fun on flat x: its values raveled to a vector (Tensors stay Tensors, for autodiff)."""
    def values(x):
        return residual_vector(fun(unravel(x), *args), f"{label}'s fun")
    return values


def _bounds(lb, ub, m: int, label: str) -> tuple[np.ndarray, np.ndarray]:
    """lb and ub broadcast to the constraint's m values."""
    try:
        lower, upper = (np.broadcast_to(real_array(b, f"{label}: bounds").astype(float), (m,)).copy()
                        for b in (lb, ub))
    except ValueError as error:
        if "broadcast" not in str(error):
            raise
        raise ValueError(f"{label}: lb and ub must be scalars or arrays of the constraint's {m} values; "
                         f"got shapes {np.shape(lb)} and {np.shape(ub)}") from None
    return lower, upper


def _user_jacobian(jac, unravel: Callable, args: tuple, label: str, m: int) -> Callable | None:
    """The user's jac on flat x (an (m, n) array, a 1-D one for a scalar constraint, or a sparse
    matrix), or None for autodiff's (None, False, a finite-difference scheme: derivatives are
    exact here)."""
    if jac is None or jac is False or (isinstance(jac, str) and jac in FINITE_DIFFERENCES):
        return None
    _callable(jac, label, "jac")

    def jacobian(x):
        J = jac(unravel(x), *args)
        return J if scipy.sparse.issparse(J) else np.asarray(plain_value(J), dtype=float).reshape(m, x.size)
    return jacobian


def _user_hessian(hess: Callable, unravel: Callable, n: int, label: str) -> Callable:
    """The user's ``hess(x, v)`` on flat x: an (n, n) array, a sparse matrix, or a LinearOperator
    (made dense)."""
    def hessian(x, v):
        H = hess(unravel(x), v)
        if isinstance(H, LinearOperator):
            return H @ np.eye(n)
        if scipy.sparse.issparse(H):
            return H
        H = np.asarray(plain_value(H), dtype=float)
        if H.size != n * n:
            raise ValueError(f"{label}: hess returned shape {H.shape}, expected {(n, n)}")
        return H.reshape(n, n)
    return hessian


#: from this many variables on, autodiff's Jacobians and Hessians come sparse even where the KKT
#: matrix is factored dense: a dense one takes n products (hanging chain, n = 300, dense KKT, 14
#: iterations: 5.4 s with dense derivatives, 3.5 s with sparse ones)
SPARSE_DERIVATIVES_MIN = 100


def differentiable(groups: list[Group], x0: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   refused: dict[str, str] | None = None) -> list[Group]:
    """The groups, those whose fun autodiff cannot follow (it leaves the engine: ``np.array([t0,
    t1])``, ``float(t)``; a TypeError at one forward-mode product at x0, or a label in ``refused``,
    which maps those autodiff refused at a later point of an earlier run to where) given
    finite-difference derivatives instead: central differences of fun for the Jacobian unless the
    user gave one, and of ``J(x)^T v`` for the curvature, steps kept inside the bounds; ``note``
    says why."""
    refused = refused or {}
    checked = []
    for g in groups:
        if g.fun is None or (g.jac is not None and g.hess is not None):
            checked.append(g)
            continue
        reason = None
        if g.label in refused:
            reason = refused[g.label]
        else:
            try:
                ad.jvp(g.fun, (x0,), (np.ones_like(x0),))
            except TypeError as error:
                reason = str(error).split('. ')[0]
        if reason is None:
            checked.append(g)
            continue
        jac = g.jac or _central_jacobian(_plain(g.fun), lower, upper)
        checked.append(g._replace(jac=jac, hess=g.hess or _central_curvature(jac, lower, upper),
                                  note=f"{g.label}'s derivatives came from finite differences: autodiff "
                                       f"could not follow its fun ({reason})"))
    return checked


def _central_jacobian(fun: Callable, lower: np.ndarray, upper: np.ndarray) -> Callable:
    """The Jacobian of fun by three-point differences in the box (:func:`difference_jacobian`)."""
    return lambda x: difference_jacobian(fun, x, None, lower, upper, "3-point")


def _central_curvature(jac: Callable, lower: np.ndarray, upper: np.ndarray) -> Callable:
    """``hess(x, v)``: the symmetrized three-point differences of ``J(x)^T v`` in the box."""
    def hessian(x, v):
        H = difference_jacobian(lambda y: _dense(jac(y)).T @ v, x, None, lower, upper, "3-point")
        return 0.5 * (H + H.T)
    return hessian


def _dense(matrix) -> np.ndarray:
    return matrix.toarray() if scipy.sparse.issparse(matrix) else np.asarray(matrix, dtype=float)


def sparse_derivatives(groups: list[Group], n: int, sparse: bool | None) -> bool:
    """Whether autodiff's derivatives come as sparse matrices: with the option ``sparse=True`` (a
    sparse KKT factorization), from ``SPARSE_DERIVATIVES_MIN`` variables on, and from the KKT
    system's size on where the interior point factors it sparse (``n + m + inequalities >=
    SPARSE_MIN_SIZE``); the option ``sparse=False`` asks for a dense factorization only."""
    if sparse:
        return True
    m = sum(g.lower.size for g in groups)
    inequalities = sum(int(np.sum(g.lower != g.upper)) for g in groups)
    return n >= SPARSE_DERIVATIVES_MIN or n + m + inequalities >= SPARSE_MIN_SIZE


class LagrangianCurvature:
    """The Hessian of ``s f(x) + v^T c(x)`` over flat x (see the module docstring): autodiff's of
    f (when ``objective`` is given) and of the groups without a user hess, in one program whose
    weights ``(s, v)`` are a Variable it reads, plus the user's hess of the others.

    Parameters
    ----------
    groups : list of Group
        The constraints, in the order of v.
    objective : callable or None
        f on flat x, when its curvature is autodiff's; None when the method takes f's Hessian
        elsewhere (the user's hess or hessp), and then ``s`` is ignored.
    n : int
        The number of variables.
    sparse : bool
        autodiff's Hessian as a sparse matrix (``autodiff.sparse_hessian``) or dense.
    trace : bool
        Trace the dense Hessian's program once and replay it (``autodiff.function``).
    """

    def __init__(self, groups: list[Group], objective: Callable | None, n: int, *, sparse: bool, trace: bool):
        self.n = n
        offsets = np.cumsum([0] + [g.lower.size for g in groups])
        self.user = [(g.hess, a, b) for g, a, b in zip(groups, offsets[:-1], offsets[1:]) if g.hess is not None]
        parts = [(g.fun, a, b) for g, a, b in zip(groups, offsets[:-1], offsets[1:]) if g.autodiff_curvature]
        self.includes_objective = objective is not None
        self.constrained = bool(parts or self.user)
        self.evaluations = 0   # of the constraints' curvature (scipy's constr_nhev)
        self.weights = ad.Variable(np.ones(1 + int(offsets[-1])))
        self._autodiff = None
        if parts or objective is not None:
            weights = self.weights

            def lagrangian(x):
                value = weights[0] * objective(x) if objective is not None else 0.0
                for fun, a, b in parts:
                    value = value + weights[1 + a:1 + b] @ fun(x)
                return value
            hessian = ad.hessian(lagrangian)
            self._autodiff = ad.sparse_hessian(lagrangian) if sparse else \
                (ad.function(hessian, eager_fallback=True) if trace else hessian)
            self.sparse = sparse

    @property
    def linear(self) -> bool:
        """Whether there is no curvature at all (linear constraints, f's taken elsewhere)."""
        return self._autodiff is None and not self.user

    def __call__(self, x: np.ndarray, s: float, v: np.ndarray):
        self.evaluations += self.constrained
        parts = []
        if self._autodiff is not None:
            self.weights.assign(np.concatenate([[s if self.includes_objective else 0.0], v]))
            H = self._autodiff(x)
            parts.append(H if scipy.sparse.issparse(H) else np.asarray(plain_value(H), dtype=float))
        parts += [hess(x, v[a:b]) for hess, a, b in self.user]
        return add_matrices(parts, self.n)

    def constraints_only(self, x: np.ndarray, v: np.ndarray):
        """The Hessian of ``v^T c(x)`` (f's curvature taken elsewhere)."""
        return self(x, 0.0, v)


def canonical_constraint(groups: list[Group], *, sparse: bool, trace: bool,
                         curvature: LagrangianCurvature | None = None) -> CanonicalConstraint | None:
    """The groups as one :class:`~optimizers.constraints.CanonicalConstraint` (their order and
    sizes kept, so the result hands back one array per group): the user's Jacobians or autodiff's
    (sparse or dense, traced), and ``curvature`` as the constraints' Hessian when given (else the
    caller passes the whole Lagrangian's to the method); None without constraints (bounds only)."""
    parts = []
    for g in groups:
        if g.matrix is not None:
            parts.append(CanonicalConstraint.linear(g.matrix, g.lower, g.upper))
            continue
        parts.append(CanonicalConstraint(_plain(g.fun), g.jac or _autodiff_jacobian(g.fun, sparse, trace),
                                         g.lower, g.upper))
    if not parts:
        return None
    constraint = CanonicalConstraint.concatenate(parts)
    if curvature is None or curvature.linear:
        return constraint
    return CanonicalConstraint(constraint.fun, constraint.jac, constraint.lower, constraint.upper,
                               curvature.constraints_only, constraint.groups)


def _plain(fun: Callable) -> Callable:
    return lambda x: np.asarray(plain_value(fun(x)), dtype=float)


def _autodiff_jacobian(fun: Callable, sparse: bool, trace: bool) -> Callable:
    """autodiff's Jacobian of fun on flat x: ``autodiff.sparse_jacobian`` (pattern found once,
    coloured products) or the dense one, traced and replayed when ``trace``."""
    if sparse:
        return ad.sparse_jacobian(fun)
    jacobian = ad.jacobian(fun)
    return ad.function(jacobian, eager_fallback=True) if trace else jacobian
