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
the methods need (a failed Cholesky in the dense code). A pivot within rounding of zero, as on a
singular positive semidefinite Hessian, is what a Cholesky factorization meets as a rounding
error of either sign; it is factored again with a rounding-level shift instead of being taken
for negative curvature, by the dense factorizations too (:func:`rounding_shift`).

The leftmost eigenpair, for the hard case of the secular iteration, dogleg's eigenpoint and the
direction out of a saddle, comes from the same factorizations: shift-invert Lanczos on ``(H -
sigma I)^{-1}`` with sigma below the spectrum, confirmed there by a positive definite
factorization (:func:`sparse_leftmost_eigenpair`), a few factorizations and solves at any n
where Lanczos on H itself (ARPACK's smallest-algebraic mode) needs more products the larger n.

The factorization is chosen per pattern (:func:`optimizers.supernodal.choose`, or the
``method`` given): CHOLMOD's supernodal Cholesky (through kvxopt) on grids and meshes, whose
factors fill in and where its dense BLAS-3 blocks are 14-25 times faster than a column-by-column
factorization, and qdldl (the OSQP team's LDL^T with an AMD ordering) on bands, chains,
arrowheads and small problems, where it is 1.6-5 times faster than CHOLMOD and every other library
measured (:mod:`optimizers.supernodal` has the numbers). qdldl was measured against scipy's own
SuperLU in its symmetric mode (``splu`` with the MMD ordering of A^T + A, ``diag_pivot_thresh=0``
and ``SymmetricMode``): chained Rosenbrock at n = 10^6 0.41 s (SuperLU 0.73), but ARWHEAD and
BDQRTIC, whose last row and column are dense, 0.25 and 0.48 s at n = 10^6, where SuperLU's
minimum-degree ordering is quadratic in n (13 s at 10^5). Both keep their symbolic analysis
(ordering, elimination tree, supernodes) and refactor a matrix of the same pattern numerically,
which every shifted factorization of a Newton iteration and every later iterate reuses.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., 2006 (N&W), §3.4;
P. R. Amestoy, T. A. Davis and I. S. Duff, An approximate minimum degree ordering algorithm, SIAM
J. Matrix Anal. Appl. 17 (1996); B. Stellato, G. Banjac, P. Goulart, A. Bemporad and S. Boyd, OSQP:
an operator splitting solver for quadratic programs, Math. Program. Comput. 12 (2020) (QDLDL);
N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, ch. 10; T.
Ericsson and A. Ruhe, The spectral transformation Lanczos method for the numerical solution of
large sparse generalized symmetric eigenvalue problems, Math. Comp. 35 (1980); B. N. Parlett,
*The Symmetric Eigenvalue Problem*, SIAM 1998 (residual bounds, Sylvester's inertia).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse

from .krylov import EPS, SADDLE_CURVATURE, Lanczos, dense_leftmost_curvature, norm
from .supernodal import FACTORIZATIONS, CholmodCholesky, choose

# The automatic rule: a Hessian given as a sparse matrix is used as one from this size on, when
# under this fraction of its entries are structural nonzeros (at n = 1,000, 50 a row).
SPARSE_MIN_SIZE = 1000
SPARSE_MAX_DENSITY = 0.05
# Leftmost eigenpairs of sparse Hessians: dense up to this size, shift-invert Lanczos above
# (:func:`sparse_leftmost_eigenpair`). A Ritz pair is accepted once ||H u - theta u|| <= 1e-12
# ||H||: theta is then lambda_1 to that residual (the search also confirms that no eigenvalue
# lies below it), and u is lambda_1's eigenvector to within the residual over the gap to
# lambda_2 (Davis-Kahan), inside the rtol = 1e-8 at which Moré-Sorensen tests g^T u for the hard
# case wherever that gap exceeds 1e-4 ||H||; 1e-12 is a few thousand eps, above the rounding
# floor of the residual of backward-stable solves. The caps, Lanczos steps (solves) at one shift
# and shifts (factorizations) in all, bound a search that on the test matrices (bands, grids,
# clusters, repeated and singular spectra) took 1-3 shifts and at most 60 solves.
DENSE_EIGEN_SIZE = 500
EIGEN_RESIDUAL = 1e-12
INVERSE_LANCZOS_STEPS = 30
MAX_EIGEN_SHIFTS = 12


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
    """One factorization ``P (H + shift I) P^T = L D L^T``: ``pivots`` (D in elimination order;
    CHOLMOD's Cholesky L L^T gives ``diag(L)^2``, and None where it stopped at a pivot that is not
    positive, which it does not reveal), whether it is ``positive_definite`` (every pivot
    positive), ``solve(b) = (H + shift I)^{-1} b``, and the ``shift`` factored (the one asked for,
    or above it by rounding: :func:`rounding_shift`)."""
    pivots: np.ndarray | None
    positive_definite: bool
    solve: Callable[[np.ndarray], np.ndarray]
    shift: float


class LDLFactorization:
    """Factorizations of ``H + shift I`` for sparse symmetric H that say whether it is positive
    definite and solve with it, the symbolic analysis (ordering, elimination tree) done once per
    pattern and reused by every later H of the same pattern (the Hessians of a run, the shifts of
    one Newton step).

    ``method``: ``"cholmod"`` (CHOLMOD's supernodal Cholesky), ``"qdldl"`` (qdldl's L D L^T), or
    None: chosen per pattern by :func:`optimizers.supernodal.choose` (CHOLMOD on grids and meshes,
    whose factors fill in; qdldl on bands, chains, arrowheads and small problems). After the first
    factorization ``method`` is the one in use and ``reason`` says why; ``factor_nonzeros`` are
    L's. Only the latest factorization can solve: a ``solve`` of an earlier one raises.
    ``factorizations`` and ``solves`` count the numeric factorizations and the solves so far
    (what the linear algebra of a run costs).

    Raises
    ------
    ValueError
        For an unknown ``method``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.sparse import LDLFactorization
    >>> H = scipy.sparse.diags([[-1.0] * 3, [2.0] * 4, [-1.0] * 3], [-1, 0, 1], format="csc")
    >>> ldl = LDLFactorization()
    >>> factor = ldl.factor(H)
    >>> factor.positive_definite, np.round(factor.solve(np.ones(4)), 6), ldl.method
    (True, array([2., 3., 3., 2.]), 'qdldl')
    >>> ldl.factor(H, shift=-1.0).positive_definite      # eigenvalues of H: 0.38 ... 3.62
    False
    >>> ldl.factor(H - scipy.sparse.diags([1.0, 0, 0, 1.0])).positive_definite   # singular, semidefinite
    True
    >>> cholmod = LDLFactorization("cholmod")
    >>> np.round(cholmod.factor(H).solve(np.ones(4)), 6), cholmod.factor(H, shift=-1.0).positive_definite
    (array([2., 3., 3., 2.]), False)
    """

    def __init__(self, method: str | None = None):
        if method not in (None, *FACTORIZATIONS):
            raise ValueError(f"the factorization must be 'cholmod', 'qdldl' or None, got {method!r}")
        self.option = method
        self.method: str | None = None
        self.reason: str | None = None
        self._pattern: tuple[np.ndarray, np.ndarray] | None = None
        self._backend: _Qdldl | _Cholmod | None = None
        self._generation = 0
        self.factorizations = self.solves = 0

    def _analyse(self, h: scipy.sparse.csc_matrix) -> None:
        """The upper triangle of h's pattern with the whole diagonal (qdldl reads the upper
        triangle and needs every diagonal entry stored; CHOLMOD's shifts need it too), where its
        entries come from in h, and the factorization chosen for it."""
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
        pattern = scipy.sparse.csc_matrix((np.ones(self._rows.size), self._rows, self._indptr), shape=h.shape)
        choice = choose(pattern, self.option)
        self.method, self.reason = choice.method, choice.reason
        self._backend = _Qdldl(self._diagonal) if choice.cholmod is None else _Cholmod(choice.cholmod)

    def _upper(self, h: scipy.sparse.csc_matrix, shift: float) -> scipy.sparse.csc_matrix:
        data = np.zeros(self._source.size)
        stored = self._source >= 0
        data[stored] = h.data[self._source[stored]]
        data[self._diagonal] += shift
        return scipy.sparse.csc_matrix((data, self._rows, self._indptr), shape=h.shape)

    @property
    def factor_nonzeros(self) -> int | None:
        """The nonzeros of L (its diagonal included) for the latest pattern; None before any."""
        return None if self._backend is None else self._backend.nonzeros()

    def factor(self, h: scipy.sparse.csc_matrix, shift: float = 0.0) -> LDLFactor:
        """The factorization of ``h + shift I``, h a symmetric CSC matrix with sorted indices (as
        :func:`symmetric_csc` gives); not finite entries give a factor that is not positive
        definite. A pivot within rounding of zero (a singular semidefinite matrix; qdldl stops
        at an exact zero, CHOLMOD at any pivot that is not positive) has the matrix factored again
        with the shift of :func:`rounding_shift`, which the factor's ``shift`` then includes."""
        if self._pattern is None or not (np.array_equal(h.indptr, self._pattern[0])
                                         and np.array_equal(h.indices, self._pattern[1])):
            self._analyse(h)
        upper = self._upper(h, shift)
        if not np.all(np.isfinite(upper.data)):
            return LDLFactor(np.full(h.shape[0], np.nan), False, _not_definite, shift)
        self.factorizations += 1
        pivots, reached, order = self._backend.numeric(upper)
        extra = rounding_shift(reached, upper.data[self._diagonal][order])
        if extra:
            upper.data[self._diagonal] += extra
            self.factorizations += 1
            shift, (pivots, _, _) = shift + extra, self._backend.numeric(upper)
        self._generation += 1
        if pivots is None:   # CHOLMOD stopped: no factor to solve with
            return LDLFactor(None, False, _not_definite, shift)
        return LDLFactor(pivots, bool(np.all(pivots > 0)), self._solve_of(self._generation), shift)

    def _solve_of(self, generation: int) -> Callable[[np.ndarray], np.ndarray]:
        def solve(b: np.ndarray) -> np.ndarray:
            if generation != self._generation:
                raise RuntimeError("this LDL^T factorization was replaced by a later one")
            self.solves += 1
            return self._backend.solve(b)
        return solve


class _Qdldl:
    """qdldl's L D L^T of one pattern: its symbolic analysis (AMD, elimination tree) on the first
    matrix, numeric updates after."""

    def __init__(self, diagonal: np.ndarray):
        self._diagonal, self._solver = diagonal, None

    def numeric(self, upper: scipy.sparse.csc_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Factor ``upper`` (the pattern's upper triangle) numerically: its pivots, those up to
        where it stopped (qdldl stops at a zero pivot, that pivot and the later ones left 0: D > 0
        fails there), and the elimination order (pivot k eliminates variable ``order[k]``)."""
        import qdldl
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
        _, pivots, order = self._solver.factors()
        zero = np.flatnonzero(pivots == 0.0)
        return pivots, pivots[:zero[0] + 1 if zero.size else pivots.size], order

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solver.solve(np.ascontiguousarray(b, dtype=float))

    def nonzeros(self) -> int:
        return int(self._solver.factors()[0].nnz) + len(self._diagonal) if self._solver is not None else 0


class _Cholmod:
    """CHOLMOD's supernodal Cholesky of one pattern (:class:`~optimizers.supernodal.CholmodCholesky`,
    analysed by the rule)."""

    def __init__(self, cholesky: CholmodCholesky):
        self._cholesky = cholesky

    def numeric(self, upper: scipy.sparse.csc_matrix) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """As :meth:`_Qdldl.numeric`. A Cholesky factorization that stops at step k reveals only
        that pivot k is not positive: it is at most that variable's diagonal entry a (the earlier
        pivots, positive, only lower it), so for :func:`rounding_shift` it stands in as min(a, 0),
        the earlier ones as +inf (not within rounding of zero)."""
        order = self._cholesky.order
        failed = self._cholesky.factor(upper.data)
        if failed is None:
            pivots = self._cholesky.pivots()
            return pivots, pivots, order
        diagonal_entry = upper[order[failed], order[failed]]
        return None, np.append(np.full(failed, np.inf), min(diagonal_entry, 0.0)), order

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._cholesky.solve(b)

    def nonzeros(self) -> int:
        return self._cholesky.nonzeros


def rounding_shift(pivots: np.ndarray, diagonal: np.ndarray) -> float:
    """The shift to factor a symmetric n x n matrix A again with when a pivot of its
    factorization is zero but for rounding: ``pivots`` d_k in elimination order, up to the one
    the factorization stopped at (LDL^T's D, or a Cholesky factorization's r_kk^2), and
    ``diagonal`` the n entries a_kk in that order. A pivot is zero but for rounding when ``|d_k|
    <= r_k = n eps a_kk`` (the exact 0 of a zero row too); then, unless another is clearly
    negative (``d_k < -r_k``), the shift is 2 max r_k over those, or ``2 n eps max_j |a_jj|``
    when they are all zero rows; else 0 (also for NaN, and for A = 0, which nothing scales a
    shift for).

    d_k = a_kk - sum_j l_kj^2 d_j is computed with an error of about k eps a_kk when A is
    semidefinite, the sum being at most a_kk (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., 2002, ch. 10), so such a pivot says A is singular to working precision
    and, as far as the factorization can tell, semidefinite, and its sign, on which a
    factorization succeeds or fails, is a rounding error. The shift lifts it above rounding (a
    pivot grows at least as fast as the shift), so the answer no longer depends on that sign: on
    a singular semidefinite Hessian Newton's step is the step on its range (along its null
    space only the gradient's rounding error over the shift), instead of the shift of 1e-3
    ||H||_F meant for negative curvature. Relative to each pivot's own diagonal entry, the test
    leaves the small pivots of a badly scaled but definite matrix alone. Dense and sparse
    factorizations apply the same rule.
    """
    n = diagonal.size
    rounding = n * EPS * np.abs(diagonal[:pivots.size])
    near = np.abs(pivots) <= rounding
    if not np.count_nonzero(near) or np.any(pivots < -rounding):   # (count_nonzero: any() at a third of its cost)
        return 0.0
    largest = rounding[near].max()
    return 2.0 * float(largest if largest > 0 else n * EPS * np.abs(diagonal).max())


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


def gershgorin_lower_bound(h: scipy.sparse.spmatrix) -> float:
    """``min_i (h_ii - sum_{j != i} |h_ij|)``: no eigenvalue of a symmetric H lies below it
    (Gershgorin's theorem)."""
    diagonal = h.diagonal()
    off_diagonal = np.asarray(abs(h).sum(axis=0)).ravel() - np.abs(diagonal)
    return float(np.min(diagonal - off_diagonal))


class _RitzPair(NamedTuple):
    """A unit vector ``u``, its Rayleigh quotient ``theta = u^T H u`` and its ``residual``
    ``||H u - theta u||``, within which of theta an eigenvalue of H lies (Kato)."""
    theta: float
    u: np.ndarray
    residual: float


def _ritz_pair(h: scipy.sparse.spmatrix, v: np.ndarray) -> _RitzPair:
    u = v / norm(v)
    hu = h @ u
    theta = float(u @ hu)
    return _RitzPair(theta, u, norm(hu - theta * u))


def sparse_leftmost_eigenpair(h: scipy.sparse.csc_matrix, factorization: LDLFactorization | None = None
                              ) -> tuple[float, np.ndarray]:
    """The smallest eigenvalue lambda_1 of a symmetric sparse H and a unit eigenvector, from
    LDL^T factorizations of ``H - sigma I`` (``factorization``'s; a new one when None) with
    sigma below the spectrum, or the dense eigendecomposition up to :data:`DENSE_EIGEN_SIZE`
    variables.

    Shift-invert Lanczos (Ericsson & Ruhe 1980; Parlett 1998): H - sigma I is
    positive definite, so its factorization is stable, and Lanczos on its inverse finds the
    inverse's largest eigenvalue 1/(lambda_1 - sigma) in a few solves once sigma is close to
    lambda_1 relative to the gap lambda_2 - lambda_1 (:func:`_inverse_lanczos`). sigma starts at
    Gershgorin's lower bound and moves up under lambda_1 by the Ritz pair's bounds; a
    factorization that is positive definite confirms that no eigenvalue lies below sigma
    (Sylvester), and one that is not halves the move (bisection). The Ritz pair is accepted once
    ``||H u - theta u|| <= EIGEN_RESIDUAL ||H||`` and sigma lies within that residual below theta:
    lambda_1 is then theta to within the residual. After :data:`MAX_EIGEN_SHIFTS` factorizations
    the pair of lowest Rayleigh quotient is returned; theta is always ``u^T H u``, so a negative
    theta is a genuine direction of negative curvature. H = 0 gives 0 and the first unit vector.
    """
    from scipy.linalg import eigh
    n = h.shape[0]
    if n <= DENSE_EIGEN_SIZE:
        values, vectors = eigh(h.toarray(), subset_by_index=[0, 0])
        return float(values[0]), vectors[:, 0]
    scale = norm_bound(h)
    if scale == 0.0:
        return 0.0, np.eye(1, n)[0]
    pair = _shift_invert_search(h, factorization or LDLFactorization(), scale)
    return pair.theta, pair.u


def _shift_invert_search(h: scipy.sparse.csc_matrix, factorization: LDLFactorization, scale: float) -> _RitzPair:
    """The search of :func:`sparse_leftmost_eigenpair` for a nonzero H of norm at most ``scale``:
    lambda_1 stays in ``[lower, upper]``, lower the last shift confirmed below it (Gershgorin's
    bound at first), upper the lowest Rayleigh quotient or the last shift found above it."""
    margin, tolerance = h.shape[0] * EPS * scale, EIGEN_RESIDUAL * scale

    def accepted(pair: _RitzPair, sigma: float) -> bool:   # sigma confirmed below lambda_1
        return pair.residual <= tolerance and pair.theta - pair.residual <= sigma + margin

    pair = best = _ritz_pair(h, np.random.default_rng(0).standard_normal(h.shape[0]))
    lower, upper = gershgorin_lower_bound(h) - margin, pair.theta
    sigma = lower
    for _ in range(MAX_EIGEN_SHIFTS):
        factor = factorization.factor(h, -sigma)
        if not factor.positive_definite:
            if sigma > lower:              # lambda_1 lies below sigma: bisect
                upper, sigma = sigma, 0.5 * (lower + sigma)
            else:                          # rounding at Gershgorin's bound: well below it
                lower = sigma = sigma - scale
            continue
        lower = sigma = -factor.shift
        if accepted(pair, sigma):
            return pair
        pair, distance = _inverse_lanczos(h, factor.solve, pair.u, tolerance)
        best = min(best, pair, key=lambda candidate: candidate.theta)
        upper = min(upper, pair.theta)
        if accepted(pair, sigma):
            return pair
        # a converged pair: confirm it by a shift under it; else close in by the Lanczos bound
        sigma = pair.theta - pair.residual - margin if pair.residual <= tolerance else sigma + distance
        if sigma >= upper:
            sigma = 0.5 * (lower + upper)
    return best


def _inverse_lanczos(h: scipy.sparse.spmatrix, solve: Callable, start: np.ndarray,
                     tolerance: float) -> tuple[_RitzPair, float]:
    """Lanczos on ``solve = (H - sigma I)^{-1}`` (positive definite) from ``start``: the Ritz
    pair in H of its largest Ritz value nu, once its residual is at most ``tolerance``, the
    Krylov space is exhausted or has :data:`INVERSE_LANCZOS_STEPS` vectors; and ``1 / (nu +
    rho)``, rho the Ritz residual of nu (Paige). An eigenvalue of the inverse lies within rho of
    nu; when it is its largest, ``1 / (lambda_1 - sigma)``, sigma can move up by that much and
    stay below lambda_1."""
    lanczos = Lanczos(solve, start)
    while True:
        lanczos.extend()
        values, vectors = lanczos.ritz()
        pair = _ritz_pair(h, lanczos.combine(vectors[:, -1]))
        if pair.residual <= tolerance or lanczos.exhausted or lanczos.size >= INVERSE_LANCZOS_STEPS:
            return pair, 1.0 / (values[-1] + lanczos.residuals(vectors[:, -1]))


def sparse_leftmost_curvature(h: scipy.sparse.csc_matrix, factorization: LDLFactorization
                              ) -> tuple[float, np.ndarray, float] | None:
    """The second-order check on a sparse Hessian, as ``(theta, u, scale)`` (see
    :func:`~optimizers.krylov.leftmost_curvature`), the scale :func:`norm_bound`: one LDL^T
    factorization of ``H + t I``, t the saddle test's ``SADDLE_CURVATURE * scale``; when it is
    positive definite, lambda_1 > -t and H has no clearly negative curvature
    (:func:`~optimizers.krylov.clearly_negative`), so no eigenvector is sought (theta is then 0);
    else the leftmost eigenpair (:func:`sparse_leftmost_eigenpair`). Up to
    :data:`DENSE_EIGEN_SIZE` variables the dense path's check, the same eigenvector where
    lambda_1 is repeated. None when H is not finite."""
    if not np.all(np.isfinite(h.data)):
        return None
    if h.shape[0] <= DENSE_EIGEN_SIZE:
        return dense_leftmost_curvature(h.toarray())
    scale = norm_bound(h)
    if factorization.factor(h, SADDLE_CURVATURE * scale).positive_definite:
        return 0.0, np.zeros(h.shape[0]), scale
    theta, u = sparse_leftmost_eigenpair(h, factorization)
    return theta, u, max(scale, abs(theta))


def report_sparse(result, objective):
    """``result.sparse``: whether the run factored its Hessian as a sparse matrix; and
    ``result.dense_reason`` when it came sparse but was made dense, saying why."""
    result.sparse = objective.sparse_used
    if not objective.sparse_used and objective.dense_reason is not None:
        result.dense_reason = objective.dense_reason
    return result
