"""Sparse symmetric Hessians: when to use them, and the factorization that tells a positive
definite matrix from one that is not.

A Hessian that comes as a ``scipy.sparse`` matrix (from ``hess``, or from ``operator(x)
.to_sparse()``) is used as one when it is sparse enough (:func:`dense_reason`): Newton's shifted
Cholesky step (N&W Algorithm 3.3), Moré and Sorensen's secular iteration and the second-order
check then factor it as a sparse ``P (H + tau I) P^T = L D L^T`` (:class:`LDLFactorization`) instead
of a dense Cholesky or eigendecomposition. ``H + tau I`` is positive definite exactly when every
pivot of D is positive (Sylvester's law of inertia): an LDL^T without pivoting exists for every
positive definite matrix, is as stable as Cholesky there (Golub & Van Loan, *Matrix Computations*,
4th ed., §4.2), and meets a pivot that is not positive on every other one, which is the answer
the methods need (a failed Cholesky in the dense code).

The factorization is qdldl (the OSQP team's LDL^T with an AMD ordering; Apache 2.0, wheels for
Linux, macOS and Windows, numpy and scipy its only dependencies), imported on first use. It was
measured against scipy's own SuperLU in its symmetric mode (``splu`` with the MMD ordering of A^T +
A, ``diag_pivot_thresh=0`` and ``SymmetricMode``, where diag(U) is D when no off-diagonal pivot
was taken) on the Hessians of ``benchmarks/bench_sparse.py`` (one factorization, seconds, shared
machine): chained Rosenbrock at n = 10^6 0.41 (SuperLU 0.73); the minimal-surface grid at n =
10^6 36 (SuperLU 31); but ARWHEAD and BDQRTIC, whose last row and column are dense, 0.25 and 0.48
at n = 10^6, where SuperLU's minimum-degree ordering is quadratic in n (0.07 s at 10^4, 0.5 s at
3 x 10^4, 13 s at 10^5). qdldl also keeps its symbolic analysis (ordering, elimination tree)
and refactors a matrix of the same pattern numerically, ten times faster on the band (0.04 s at
n = 10^6), which every shifted factorization of a Newton iteration and every later iterate reuses.
CHOLMOD (scikit-sparse) would be faster on grids but has no wheels.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., 2006 (N&W), §3.4;
P. R. Amestoy, T. A. Davis and I. S. Duff, An approximate minimum degree ordering algorithm, SIAM
J. Matrix Anal. Appl. 17 (1996); B. Stellato, G. Banjac, P. Goulart, A. Bemporad and S. Boyd, OSQP:
an operator splitting solver for quadratic programs, Math. Program. Comput. 12 (2020) (QDLDL).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse

from .krylov import leftmost_curvature

# The automatic rule: a Hessian given as a sparse matrix is used as one from this size on, when
# under this fraction of its entries are structural nonzeros (at n = 1,000, 50 a row).
SPARSE_MIN_SIZE = 1000
SPARSE_MAX_DENSITY = 0.05
# Leftmost eigenpairs of sparse Hessians: dense up to this size, ARPACK above, and Lanczos steps
# where ARPACK does not converge.
DENSE_EIGEN_SIZE = 500
LANCZOS_FALLBACK_STEPS = 50


def dense_reason(n: int, nnz: int, sparse: bool | None) -> str | None:
    """Why a sparse Hessian with ``nnz`` structural nonzeros over n variables is not used as one
    (None: it is). ``sparse``: the methods' option (True: whenever it comes sparse; False: never;
    None: from :data:`SPARSE_MIN_SIZE` variables on, under :data:`SPARSE_MAX_DENSITY` dense).

    Examples
    --------
    >>> from optimizers.sparse import dense_reason
    >>> dense_reason(10 ** 5, 3 * 10 ** 5, None) is None
    True
    >>> dense_reason(200, 600, None)
    'n = 200 is below 1,000, where the dense factorization is as fast'
    """
    if sparse:
        return None
    if sparse is False:
        return "options['sparse'] is False"
    if n < SPARSE_MIN_SIZE:
        return f"n = {n:,} is below {SPARSE_MIN_SIZE:,}, where the dense factorization is as fast"
    density = nnz / float(n) ** 2
    if density >= SPARSE_MAX_DENSITY:
        return (f"the Hessian is {density:.0%} dense (the sparse path takes it under "
                f"{SPARSE_MAX_DENSITY:.0%})")
    return None


def symmetric_csc(h) -> scipy.sparse.csc_matrix:
    """A sparse matrix as the symmetric CSC matrix ``(H + H^T) / 2`` with sorted indices and no
    duplicates; a matrix that is exactly symmetric already (as autodiff's sparse Hessians are) is
    kept as it is, with its explicit zeros, so its pattern stays that of the program."""
    h = scipy.sparse.csc_matrix(h, dtype=float)
    if not h.has_canonical_format:
        h.sum_duplicates()
    transposed = h.T.tocsc()
    transposed.sort_indices()
    if (np.array_equal(h.indptr, transposed.indptr) and np.array_equal(h.indices, transposed.indices)
            and np.array_equal(h.data, transposed.data)):
        return h
    symmetric = (0.5 * (h + transposed)).tocsc()
    symmetric.sum_duplicates()
    return symmetric


class LDLFactor(NamedTuple):
    """One factorization ``P (H + shift I) P^T = L D L^T``: ``pivots`` (D), whether it is
    ``positive_definite`` (every pivot positive), and ``solve(b) = (H + shift I)^{-1} b``."""
    pivots: np.ndarray
    positive_definite: bool
    solve: Callable[[np.ndarray], np.ndarray]


class LDLFactorization:
    """LDL^T factorizations of ``H + shift I`` for sparse symmetric H, the symbolic analysis
    (AMD ordering, elimination tree) done once per pattern and reused by every later H of the
    same pattern (the Hessians of a run, the shifts of one Newton step).

    Only the latest factorization can solve: a ``solve`` of an earlier one raises.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.sparse import LDLFactorization
    >>> H = scipy.sparse.diags([[-1.0] * 3, [2.0] * 4, [-1.0] * 3], [-1, 0, 1], format="csc")
    >>> ldl = LDLFactorization()
    >>> factor = ldl.factor(H)
    >>> factor.positive_definite, np.round(factor.solve(np.ones(4)), 6)
    (True, array([2., 3., 3., 2.]))
    >>> ldl.factor(H, shift=-1.0).positive_definite      # eigenvalues of H: 0.38 ... 3.62
    False
    """

    def __init__(self):
        self._pattern: tuple[np.ndarray, np.ndarray] | None = None
        self._solver = None
        self._generation = 0

    def _analyse(self, h: scipy.sparse.csc_matrix) -> None:
        """The upper triangle of h's pattern with the whole diagonal (qdldl reads the upper
        triangle and needs every diagonal entry stored), and where its entries come from in h."""
        n = h.shape[0]
        cols = np.repeat(np.arange(n), np.diff(h.indptr))
        rows = h.indices.astype(np.int64)
        upper = np.flatnonzero(rows <= cols)
        missing = np.setdiff1d(np.arange(n), rows[rows == cols], assume_unique=True)
        rows_u = np.concatenate([rows[upper], missing])
        cols_u = np.concatenate([cols[upper], missing])
        order = np.lexsort((rows_u, cols_u))
        self._source = np.concatenate([upper, np.full(missing.size, -1)])[order]
        self._rows = rows_u[order]
        self._indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(cols_u, minlength=n), out=self._indptr[1:])
        self._diagonal = np.flatnonzero(self._rows == cols_u[order])
        self._pattern = (h.indptr.copy(), h.indices.copy())
        self._solver = None

    def _upper(self, h: scipy.sparse.csc_matrix, shift: float) -> scipy.sparse.csc_matrix:
        data = np.where(self._source >= 0, h.data[np.maximum(self._source, 0)], 0.0)
        data[self._diagonal] += shift
        return scipy.sparse.csc_matrix((data, self._rows, self._indptr), shape=h.shape)

    def factor(self, h: scipy.sparse.csc_matrix, shift: float = 0.0) -> LDLFactor:
        """The factorization of ``h + shift I``, h a symmetric CSC matrix with sorted indices (as
        :func:`symmetric_csc` gives); not finite entries give a factor that is not positive
        definite."""
        import qdldl
        if self._pattern is None or not (np.array_equal(h.indptr, self._pattern[0])
                                         and np.array_equal(h.indices, self._pattern[1])):
            self._analyse(h)
        upper = self._upper(h, shift)
        if not np.all(np.isfinite(upper.data)):
            return LDLFactor(np.full(h.shape[0], np.nan), False, _not_definite)
        if self._solver is None:
            try:
                self._solver = qdldl.Solver(upper, upper=True)
            except RuntimeError:   # a zero pivot: analyse on the identity, then factor as below
                identity = upper.copy()
                identity.data[:] = 0.0
                identity.data[self._diagonal] = 1.0
                self._solver = qdldl.Solver(identity, upper=True)
                self._solver.update(upper, upper=True)
        else:
            self._solver.update(upper, upper=True)
        self._generation += 1
        # qdldl stops at a zero pivot, with that pivot (0) stored: D > 0 fails there
        pivots = self._solver.factors()[1]
        return LDLFactor(pivots, bool(np.all(pivots > 0)), self._solve_of(self._generation))

    def _solve_of(self, generation: int) -> Callable[[np.ndarray], np.ndarray]:
        def solve(b: np.ndarray) -> np.ndarray:
            if generation != self._generation:
                raise RuntimeError("this LDL^T factorization was replaced by a later one")
            return self._solver.solve(np.ascontiguousarray(b, dtype=float))
        return solve


def _not_definite(b: np.ndarray) -> np.ndarray:
    raise RuntimeError("no solve: the matrix is not positive definite (or not finite)")


def frobenius_norm(h: scipy.sparse.spmatrix) -> float:
    """||H||_F of a sparse matrix from its stored entries."""
    return float(np.sqrt(h.data @ h.data)) if h.nnz else 0.0


def norm_bound(h: scipy.sparse.spmatrix) -> float:
    """An upper bound on ||H||_2 of a symmetric sparse H: the smaller of the Gershgorin (largest
    absolute row sum) and Frobenius bounds, within a small factor of ||H||_2 for a few nonzeros
    a row."""
    if not h.nnz:
        return 0.0
    return float(min(abs(h).sum(axis=0).max(), frobenius_norm(h)))


def sparse_leftmost_eigenpair(h: scipy.sparse.csc_matrix) -> tuple[float, np.ndarray]:
    """The smallest eigenvalue of a symmetric sparse H and a unit eigenvector: ARPACK's implicitly
    restarted Lanczos (``scipy.sparse.linalg.eigsh``, smallest algebraic, from a fixed start so a
    run repeats), or the dense eigendecomposition up to :data:`DENSE_EIGEN_SIZE` variables. Where
    ARPACK does not converge, the best Ritz pair of :data:`LANCZOS_FALLBACK_STEPS` Lanczos steps,
    whose Rayleigh quotient is exact for its vector."""
    from scipy.linalg import eigh
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh
    n = h.shape[0]
    if n <= DENSE_EIGEN_SIZE:
        values, vectors = eigh(h.toarray(), subset_by_index=[0, 0])
        return float(values[0]), vectors[:, 0]
    start = np.random.default_rng(0).standard_normal(n)
    try:
        values, vectors = eigsh(h, k=1, which="SA", v0=start)
    except ArpackNoConvergence:
        theta, u, _ = leftmost_curvature(h.__matmul__, n, LANCZOS_FALLBACK_STEPS)
        return theta, u
    return float(values[0]), vectors[:, 0] / np.linalg.norm(vectors[:, 0])


def sparse_leftmost_curvature(h: scipy.sparse.csc_matrix, factorization: LDLFactorization
                              ) -> tuple[float, np.ndarray, float] | None:
    """The second-order check on a sparse Hessian, as ``(theta, u, scale)`` (see
    :func:`~optimizers.krylov.leftmost_curvature`): one LDL^T factorization; when every pivot is
    positive H is positive definite and no eigenvector is sought (theta is then 0, for "no
    negative curvature"); else the leftmost eigenpair (:func:`sparse_leftmost_eigenpair`). The
    scale is :func:`norm_bound`. None when H is not finite."""
    if not np.all(np.isfinite(h.data)):
        return None
    scale = norm_bound(h)
    if factorization.factor(h).positive_definite:
        return 0.0, np.zeros(h.shape[0]), scale
    theta, u = sparse_leftmost_eigenpair(h)
    return theta, u, max(scale, abs(theta))


def report_sparse(result, objective):
    """``result.sparse``: whether the run factored its Hessian as a sparse matrix; and
    ``result.dense_reason`` when it came sparse but was made dense, saying why."""
    result.sparse = objective.sparse_used
    if not objective.sparse_used and objective.dense_reason is not None:
        result.dense_reason = objective.dense_reason
    return result
