"""General constraints ``lower <= c(x) <= upper`` in one canonical object, and the view of a
constrained problem that the loop and the result read.

:class:`CanonicalConstraint` holds every constraint of a problem together, as scipy's
``CanonicalConstraint`` does (``scipy/optimize/_trustregion_constr/canonical_constraint.py``):
the values c(x) (m of them), their Jacobian J(x) (dense or ``scipy.sparse``, m x n), the bounds
``lower`` and ``upper`` (an equality where they are equal, a one-sided inequality where one is
infinite) and, for nonlinear constraints, ``hess(x, v)``, the Hessian of ``v^T c(x)``: the
constraints' part of the Hessian of the Lagrangian. Several groups (one per constraint a user
gave) are concatenated into one object that remembers their sizes, so the multipliers and values
can be handed back one array per group (:meth:`CanonicalConstraint.split`). ``hessopt`` turns
scipy's dicts, ``LinearConstraint`` and ``NonlinearConstraint`` into it; the methods here see only
this form. Evaluations are counted (``constr_nfev``, ``constr_njev``, ``constr_nhev``, as scipy's
trust-constr reports them) and the last point's values and Jacobian are kept, so a point is never
evaluated twice in a row.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse

from .sparse import symmetric_csc


class CanonicalConstraint:
    """The constraints ``lower <= fun(x) <= upper`` of a problem, in one object.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> c``, the m constraint values (1-D).
    jac : callable
        ``jac(x) -> J``, their Jacobian (m, n): a dense array or a ``scipy.sparse`` matrix.
    lower, upper : array_like
        The bounds on c, broadcast to (m,): ``-inf``/``inf`` for a missing side, ``lower ==
        upper`` for an equality. Two scalars stand for every constraint: m is then the size of the
        first c(x) evaluated.
    hess : callable, optional
        ``hess(x, v) -> H``, the Hessian of ``v^T fun(x)`` (n, n; dense or sparse, symmetric).
        None: the constraints are linear (no curvature in the Lagrangian). A nonlinear constraint
        without it still gives correct answers, the KKT test being exact, but only linear
        convergence.
    groups : sequence of int, optional
        The sizes of the constraint groups the m constraints are made of, in order (default: one
        group).

    Raises
    ------
    TypeError
        If fun, jac or hess is not callable.
    ValueError
        For a NaN bound, ``lower > upper``, a lower bound of +inf or an upper bound of -inf (no c
        satisfies them), or groups that do not add up to m.

    Examples
    --------
    x_0 + x_1 = 1 and x_0^2 + x_1^2 <= 4, as one object of two groups:

    >>> import numpy as np
    >>> from optimizers.constraints import CanonicalConstraint
    >>> line = CanonicalConstraint.linear(np.array([[1.0, 1.0]]), 1.0, 1.0)
    >>> disk = CanonicalConstraint(lambda x: np.array([x @ x]), lambda x: 2 * x[None, :], [-np.inf], [4.0],
    ...                            hess=lambda x, v: 2 * v[0] * np.eye(2))
    >>> both = CanonicalConstraint.concatenate([line, disk])
    >>> both.m, both.equality, both.fun(np.array([1.0, 2.0]))
    (2, array([ True, False]), array([3., 5.]))
    >>> both.violation(both.fun(np.array([1.0, 2.0])))
    array([2., 1.])
    >>> both.split(np.array([10.0, 20.0]))
    [array([10.]), array([20.])]
    """

    def __init__(self, fun: Callable, jac: Callable, lower, upper, hess: Callable | None = None,
                 groups: Sequence[int] | None = None):
        for name, f in (("fun", fun), ("jac", jac)):
            if not callable(f):
                raise TypeError(f"the constraint's {name} must be callable, got {type(f).__name__}")
        if hess is not None and not callable(hess):
            raise TypeError(f"the constraint's hess must be callable or None, got {type(hess).__name__}")
        # two scalars: m is known at the first evaluation (scipy's NonlinearConstraint habit)
        self._pending = groups is None and np.ndim(lower) == 0 and np.ndim(upper) == 0
        lower, upper = (np.atleast_1d(np.asarray(b, dtype=float)) for b in np.broadcast_arrays(lower, upper))
        if lower.ndim != 1:
            raise ValueError(f"the constraint bounds must be 1-D, got shape {lower.shape}")
        _check_bounds(lower, upper)
        self._fun, self._jac, self._hess = fun, jac, hess
        self.lower, self.upper = lower, upper
        self.groups = tuple(int(k) for k in groups) if groups is not None else (lower.size,)
        if sum(self.groups) != lower.size or any(k < 0 for k in self.groups):
            raise ValueError(f"the constraint groups {self.groups} do not add up to m = {lower.size}")
        self.nfev = self.njev = self.nhev = 0
        self._cx = self._c = self._jx = self._j = None

    @property
    def m(self) -> int:
        """The number of constraints."""
        return self.lower.size

    @property
    def equality(self) -> np.ndarray:
        """Which constraints are equalities (``lower == upper``)."""
        return self.lower == self.upper

    @property
    def has_curvature(self) -> bool:
        """Whether the constraints' Hessian is given (else they count as linear)."""
        return self._hess is not None

    def counts(self) -> dict:
        """The evaluations so far, named as scipy's trust-constr reports them."""
        return {"constr_nfev": self.nfev, "constr_njev": self.njev, "constr_nhev": self.nhev}

    def fun(self, x: np.ndarray) -> np.ndarray:
        """c(x) (counted unless x is the last point asked)."""
        if self._cx is None or not np.array_equal(x, self._cx):
            c = np.asarray(self._fun(x), dtype=float).reshape(-1)
            self.nfev += 1
            if self._pending:
                self.lower, self.upper = np.full(c.size, self.lower[0]), np.full(c.size, self.upper[0])
                self.groups, self._pending = (c.size,), False
            if c.size != self.m:
                raise ValueError(f"the constraint function returned {c.size} values for {self.m} bounds")
            self._cx, self._c = x.copy(), c
        return self._c

    def jac(self, x: np.ndarray):
        """J(x), dense (m, n) or CSR (counted unless x is the last point asked)."""
        if self._jx is None or not np.array_equal(x, self._jx):
            j = self._jac(x)
            self.njev += 1
            if scipy.sparse.issparse(j):
                j = j if j.format == "csr" and j.dtype == float else scipy.sparse.csr_matrix(j, dtype=float)
            else:
                j = np.asarray(j, dtype=float).reshape(self.m, x.size)
            if j.shape != (self.m, x.size):
                raise ValueError(f"the constraint Jacobian has shape {j.shape}, expected {(self.m, x.size)}")
            self._jx, self._j = x.copy(), j
        return self._j

    def hess(self, x: np.ndarray, v: np.ndarray):
        """The Hessian of ``v^T c(x)`` (symmetrized), or None for linear constraints."""
        if self._hess is None:
            return None
        self.nhev += 1
        h = self._hess(x, v)
        if scipy.sparse.issparse(h):
            return symmetric_csc(h)
        h = np.asarray(h, dtype=float).reshape(x.size, x.size)
        return 0.5 * (h + h.T)

    def violation(self, c: np.ndarray) -> np.ndarray:
        """How far each value lies outside its bounds (0 inside)."""
        return np.maximum(np.maximum(self.lower - c, c - self.upper), 0.0)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """An array over the m constraints as one array per group."""
        return np.split(np.asarray(values), np.cumsum(self.groups)[:-1])

    @classmethod
    def linear(cls, A, lower, upper) -> CanonicalConstraint:
        """``lower <= A x <= upper`` (A dense or sparse): no curvature."""
        A = scipy.sparse.csr_matrix(A, dtype=float) if scipy.sparse.issparse(A) else np.atleast_2d(
            np.asarray(A, dtype=float))
        lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
        lower, upper = np.broadcast_to(lower, (A.shape[0],)), np.broadcast_to(upper, (A.shape[0],))
        return cls(lambda x: A @ x, lambda x: A, lower, upper)

    @classmethod
    def concatenate(cls, constraints: Sequence[CanonicalConstraint]) -> CanonicalConstraint:
        """Several constraints as one, their groups kept in order."""
        constraints = list(constraints)
        if any(constraint._pending for constraint in constraints):
            raise ValueError("a constraint with scalar bounds has an unknown size until evaluated: give its "
                             "bounds as arrays of shape (m,) to concatenate it")
        groups = [k for constraint in constraints for k in constraint.groups]
        lower = np.concatenate([constraint.lower for constraint in constraints])
        upper = np.concatenate([constraint.upper for constraint in constraints])
        sizes = np.cumsum([0] + [constraint.m for constraint in constraints])

        def fun(x):
            return np.concatenate([constraint.fun(x) for constraint in constraints])

        def jac(x):
            blocks = [constraint.jac(x) for constraint in constraints]
            if any(scipy.sparse.issparse(b) for b in blocks):
                return scipy.sparse.vstack([scipy.sparse.csr_matrix(b) for b in blocks], format="csr")
            return np.vstack(blocks)

        def hess(x, v):
            parts = [constraint.hess(x, v[a:b]) for constraint, a, b in zip(constraints, sizes[:-1], sizes[1:])]
            return add_matrices([p for p in parts if p is not None], x.size)

        nonlinear = any(constraint.has_curvature for constraint in constraints)
        return cls(fun, jac, lower, upper, hess if nonlinear else None, groups)


def add_matrices(matrices: list, n: int):
    """The sum of dense and sparse n x n matrices: sparse (CSC) when any is sparse, else dense;
    a zero sparse matrix for none."""
    if not matrices:
        return scipy.sparse.csc_matrix((n, n))
    if any(scipy.sparse.issparse(m) for m in matrices):
        total = scipy.sparse.csc_matrix((n, n))
        for m in matrices:
            total = total + (m if scipy.sparse.issparse(m) else scipy.sparse.csc_matrix(m))
        return total.tocsc()
    return sum(matrices[1:], matrices[0])


def _check_bounds(lower: np.ndarray, upper: np.ndarray) -> None:
    """Refuse bounds no value satisfies, naming the first offending constraint."""
    for bad, what in ((np.isnan(lower) | np.isnan(upper), "a bound is NaN"),
                      (lower == np.inf, "a lower bound is +inf"), (upper == -np.inf, "an upper bound is -inf"),
                      (lower > upper, "the lower bound exceeds the upper bound")):
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"constraint {i}: {what} (lower = {lower[i]}, upper = {upper[i]})")
