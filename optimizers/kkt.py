"""The primal-dual systems of the interior-point method: assembly, an inertia-revealing factorization,
iterative refinement, and the inertia correction of the matrix.

Each iteration of :mod:`optimizers.interior_point` solves

    [ W + Sigma + delta_w I      J^T      ] [dw]     [r_w]
    [        J               -delta_c I   ] [dy] = - [r_c]

(A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter line-search
algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57, eq. (13) with
the slacks of the inequalities among the primal variables w, as in eq. (26)): W the Hessian of the
Lagrangian, Sigma the diagonal of the bound terms, J the constraint Jacobian. Its direction is a
descent direction of the barrier problem exactly when the matrix has the inertia ``(n, m, 0)``
(n primal variables, m constraints): n positive, m negative and no zero eigenvalues (§3.1).

- :class:`KKTMatrix` assembles the matrix at one iterate, dense or sparse, once, and gives it for
  any ``(delta_w, delta_c)`` by changing its diagonal only (the sparse pattern, with the whole
  diagonal stored, stays that of the first iterate, so the symbolic analysis is reused).
- A factorization behind the two-method interface ``factor(K) -> Inertia`` and ``solve(b)``:
  :class:`DenseLDL`, LAPACK's Bunch-Kaufman ``P K P^T = L D L^T`` (``dsytrf``), the inertia counted
  on D's 1x1 and 2x2 blocks (Sylvester's law of inertia); :class:`SparseLDL`, an LDL^T without
  pivoting (qdldl, through :class:`~optimizers.sparse.LDLFactorization`, with its AMD ordering),
  whose D gives the inertia whenever the factorization completes. With ``delta_c > 0`` and ``W +
  Sigma + delta_w I`` positive definite the matrix is quasi-definite, and the LDL^T exists for
  every ordering (R. J. Vanderbei, "Symmetric quasidefinite matrices", SIAM J. Optim. 5, 1995), so
  the sparse path always factors with at least ``delta_c = 1e-8 mu^(1/4)``, and with ``delta_w``
  that large too where a zero pivot stopped it (variables that enter linearly and have no bound
  leave zeros on W + Sigma's diagonal); the solution is refined on the system Algorithm IC chose,
  and where that refinement does not converge (the matrix is nearly singular, which is where the
  floors matter) it is the floored system's. A supernodal factorization can take the sparse one's
  place.
- :class:`InertiaCorrection` is Algorithm IC of §3.1: first no perturbation; a zero eigenvalue or
  fewer than m negative ones (a rank-deficient J) gets ``delta_c = 1e-8 mu^(1/4)``; a wrong
  inertia gets ``delta_w``, from 1e-4 or a third of the last one used, times 100 (first time) or
  8 until the inertia is right.
- :meth:`Factored.solve` refines iteratively (at least one step, up to ten) until the residual
  ratio ``||K x - b||_inf / (min(||x||_inf, 1e6 ||b||_inf) + ||b||_inf)`` is at most 1e-10;
  a ratio still above 1e-5 marks the matrix as singular (IPOPT's test, where the factorization's
  pivots cannot tell a singular matrix from a badly scaled one: at the end of a run Sigma spans
  twenty orders of magnitude).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.linalg import lapack

from .sparse import LDLFactorization

# Algorithm IC's constants (Wächter & Biegler §3.1; IPOPT's defaults)
DELTA_W_FIRST = 1e-4          # delta_w^0
DELTA_W_MIN = 1e-20           # delta_w^min
DELTA_W_MAX = 1e40            # delta_w^max: beyond it the step computation has failed
DELTA_W_DECREASE = 1.0 / 3.0  # kappa_w^-
DELTA_W_INCREASE = 8.0        # kappa_w^+
DELTA_W_FIRST_INCREASE = 100.0  # bar kappa_w^+
DELTA_C = 1e-8                # bar delta_c
DELTA_C_EXPONENT = 0.25       # kappa_c
# The sparse path's LDL^T without pivoting can miss an eigenvalue -delta_c as small as the floor:
# delta_c grows by 100 up to twice while too few negative eigenvalues are seen
DELTA_C_INCREASE = 100.0
DELTA_C_STEPS = 3
# Iterative refinement (IPOPT's min/max_refinement_steps, residual_ratio_max, residual_ratio_singular)
MIN_REFINEMENT_STEPS = 1
MAX_REFINEMENT_STEPS = 10
RESIDUAL_RATIO = 1e-10
SINGULAR_RATIO = 1e-5


class Inertia(NamedTuple):
    """The numbers of positive, negative and zero eigenvalues of a symmetric matrix."""
    positive: int
    negative: int
    zero: int


class DenseLDL:
    """Bunch-Kaufman ``P K P^T = L D L^T`` of a dense symmetric matrix (LAPACK ``dsytrf``), D block
    diagonal with 1x1 and 2x2 blocks; the inertia of K is D's (Sylvester's law), counted block by
    block.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.kkt import DenseLDL
    >>> K = np.array([[2.0, 1.0, 1.0], [1.0, 2.0, 0.0], [1.0, 0.0, 0.0]])
    >>> ldl = DenseLDL()
    >>> ldl.factor(K)
    Inertia(positive=2, negative=1, zero=0)
    >>> np.allclose(K @ ldl.solve(np.array([1.0, 2.0, 3.0])), [1.0, 2.0, 3.0])
    True
    """

    def __init__(self):
        self._factors: tuple[np.ndarray, np.ndarray] | None = None

    def factor(self, K: np.ndarray) -> Inertia:
        """Factor K (its lower triangle is read); its inertia. A matrix that is not finite has
        none: ``Inertia(0, 0, n)``."""
        n = K.shape[0]
        if not np.all(np.isfinite(K)):
            self._factors = None
            return Inertia(0, 0, n)
        work, _ = lapack.dsytrf_lwork(n, lower=1)   # the blocked algorithm (the default lwork = n is not)
        ldu, ipiv, info = lapack.dsytrf(K, lower=1, lwork=max(int(work), 1))
        if info < 0:
            raise ValueError(f"dsytrf: argument {-info} is invalid")
        self._factors = (ldu, ipiv)
        diagonal = np.diag(ldu)
        ones = diagonal[ipiv > 0]
        starts = np.flatnonzero(ipiv < 0)[0::2]   # each 2x2 block holds two adjacent negative entries
        a, b, c = diagonal[starts], ldu[starts + 1, starts], diagonal[starts + 1]
        det = a * c - b * b
        # a 2x2 block: one eigenvalue of each sign when det < 0, two of the trace's sign when det > 0
        both_positive = int(np.sum((det > 0) & (a + c > 0)))
        both_negative = int(np.sum((det > 0) & (a + c < 0)))
        mixed = int(np.sum(det < 0))
        positive = int(np.sum(ones > 0)) + 2 * both_positive + mixed + int(np.sum((det == 0) & (a + c > 0)))
        negative = int(np.sum(ones < 0)) + 2 * both_negative + mixed + int(np.sum((det == 0) & (a + c < 0)))
        return Inertia(positive, negative, n - positive - negative)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``K^{-1} b`` with the last factorization."""
        ldu, ipiv = self._factors
        x, info = lapack.dsytrs(ldu, ipiv, b.reshape(-1, 1), lower=1)
        return x.reshape(-1)


class SparseLDL:
    """LDL^T without pivoting of a sparse symmetric matrix (qdldl with an AMD ordering, the symbolic
    analysis kept across matrices of one pattern: :class:`~optimizers.sparse.LDLFactorization`).
    When it completes (no zero pivot) ``P K P^T = L D L^T`` with L unit lower triangular, so K has
    D's inertia (Sylvester's law); a zero pivot stops it and is counted as zero eigenvalues, as is a
    pivot zero but for rounding, where the factorization factors ``K + shift I`` instead (its
    remedy for semidefinite Hessians, :func:`~optimizers.sparse.rounding_shift`): a KKT matrix is
    indefinite, and the inertia correction decides its perturbation itself.

    Without pivoting the computed signs are reliable only while the matrix's eigenvalues stay
    clear of rounding: a nearly singular K (a rank-deficient J with a tiny delta_c) can be given a
    wrong inertia, which a pivoting (supernodal) factorization would not.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.kkt import SparseLDL
    >>> K = scipy.sparse.csc_matrix([[2.0, 1.0, 1.0], [1.0, 2.0, 0.0], [1.0, 0.0, -1e-8]])
    >>> ldl = SparseLDL()
    >>> ldl.factor(K)
    Inertia(positive=2, negative=1, zero=0)
    >>> np.allclose(K @ ldl.solve(np.array([1.0, 2.0, 3.0])), [1.0, 2.0, 3.0])
    True
    """

    def __init__(self):
        self._ldl = LDLFactorization()
        self._solve = None

    def factor(self, K: scipy.sparse.csc_matrix) -> Inertia:
        """Factor K (symmetric CSC with sorted indices and its whole diagonal stored); its inertia."""
        factor = self._ldl.factor(K)
        pivots = factor.pivots
        n = K.shape[0]
        if factor.shift != 0.0 or not np.all(np.isfinite(pivots)) or np.any(pivots == 0):
            self._solve = None
            return Inertia(0, 0, n)
        self._solve = factor.solve
        positive = int(np.sum(pivots > 0))
        return Inertia(positive, n - positive, 0)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``K^{-1} b`` with the last factorization."""
        return self._solve(b)


def jacobian_regularization(mu: float) -> float:
    """Algorithm IC's ``delta_c = bar delta_c mu^kappa_c``."""
    return DELTA_C * mu ** DELTA_C_EXPONENT


class KKTMatrix:
    """The matrix ``[[W + diag(sigma) + delta_w I, J^T], [J, -delta_c I]]`` of one iterate, assembled
    once (dense, or sparse with its whole diagonal stored) and given for any perturbation.

    Parameters
    ----------
    hessian : ndarray or sparse matrix, shape (n, n)
        W, symmetric (both triangles stored).
    sigma : ndarray, shape (n,)
        The barrier terms' diagonal.
    jacobian : ndarray or sparse matrix, shape (m, n)
        J.
    sparse : bool
        Assemble a CSC matrix (else a dense array).
    assembly : SparseAssembly, optional
        The sparse assembly to reuse (it keeps where the entries of one pattern go).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.kkt import KKTMatrix
    >>> kkt = KKTMatrix(np.eye(2), np.array([1.0, 0.0]), np.array([[1.0, 1.0]]), sparse=False)
    >>> kkt.matrix(0.5, 0.1)
    array([[ 2.5,  0. ,  1. ],
           [ 0. ,  1.5,  1. ],
           [ 1. ,  1. , -0.1]])
    """

    def __init__(self, hessian, sigma: np.ndarray, jacobian, sparse: bool, assembly: SparseAssembly | None = None):
        self.n, self.m = sigma.size, jacobian.shape[0]
        self.sparse = sparse
        if sparse:
            self._base, self._diagonal = (assembly or SparseAssembly()).assemble(hessian, sigma, jacobian)
        else:
            base = np.zeros((self.n + self.m, self.n + self.m))
            base[:self.n, :self.n] = hessian.toarray() if scipy.sparse.issparse(hessian) else hessian
            jac = jacobian.toarray() if scipy.sparse.issparse(jacobian) else jacobian
            base[self.n:, :self.n] = jac
            base[:self.n, self.n:] = jac.T
            base[np.arange(self.n), np.arange(self.n)] += sigma
            self._base = base

    def shift(self, delta_w: float, delta_c: float) -> np.ndarray:
        """The perturbation on the diagonal: delta_w on the first n entries, -delta_c on the rest."""
        return np.concatenate([np.full(self.n, delta_w), np.full(self.m, -delta_c)])

    def matrix(self, delta_w: float, delta_c: float):
        """The matrix with the perturbation ``(delta_w, delta_c)``."""
        shift = self.shift(delta_w, delta_c)
        if self.sparse:
            matrix = self._base.copy()
            matrix.data[self._diagonal] += shift
            return matrix
        matrix = self._base.copy()
        matrix[np.diag_indices_from(matrix)] += shift
        return matrix

    def matvec(self, v: np.ndarray, delta_w: float, delta_c: float) -> np.ndarray:
        """The product of the perturbed matrix with v, without forming it."""
        return self._base @ v + self.shift(delta_w, delta_c) * v


class SparseAssembly:
    """The assembly of sparse KKT matrices ``[[W + diag(sigma), J^T], [J, 0]]`` (CSC, sorted
    indices, the whole diagonal stored, explicit zeros kept): where each entry of W and J goes is
    found once per pattern of W and J, and every later matrix of that pattern is one weighted
    bincount of the values (the iterates of a run share one pattern).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.kkt import SparseAssembly
    >>> W, J = scipy.sparse.csc_matrix(np.eye(2)), scipy.sparse.csr_matrix([[1.0, 2.0]])
    >>> K, diagonal = SparseAssembly().assemble(W, np.array([1.0, 0.0]), J)
    >>> K.toarray(), diagonal
    (array([[2., 0., 1.],
           [0., 1., 2.],
           [1., 2., 0.]]), array([0, 2, 6]))
    """

    def __init__(self):
        self._key: tuple | None = None

    def assemble(self, hessian, sigma: np.ndarray, jacobian) -> tuple[scipy.sparse.csc_matrix, np.ndarray]:
        """The matrix and the positions of its diagonal entries in its ``data``."""
        h, j = scipy.sparse.coo_matrix(hessian), scipy.sparse.coo_matrix(jacobian)
        n, m = sigma.size, j.shape[0]
        key = (n, m, h.row, h.col, j.row, j.col)
        if self._key is None or not (key[:2] == self._key[:2] and all(
                a.shape == b.shape and np.array_equal(a, b) for a, b in zip(key[2:], self._key[2:]))):
            self._analyse(key)
        values = np.concatenate([h.data, j.data, j.data, sigma, np.zeros(m)])
        data = np.bincount(self._target, weights=values, minlength=self._indices.size)
        matrix = scipy.sparse.csc_matrix((data, self._indices, self._indptr), shape=(n + m, n + m))
        return matrix, self._diagonal

    def _analyse(self, key: tuple) -> None:
        """The CSC pattern of a key's W and J, and where each of their entries lands in it."""
        n, m, h_row, h_col, j_row, j_col = key
        diagonal = np.arange(n + m)
        rows = np.concatenate([h_row, j_row + n, j_col, diagonal]).astype(np.int64)
        cols = np.concatenate([h_col, j_col, j_row + n, diagonal]).astype(np.int64)
        linear = cols * (n + m) + rows                       # sorted by column, then row: CSC order
        unique, self._target = np.unique(linear, return_inverse=True)
        self._indices = unique % (n + m)
        self._indptr = np.searchsorted(unique // (n + m), np.arange(n + m + 1))
        self._diagonal = np.searchsorted(unique, diagonal * (n + m) + diagonal)
        self._key = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in key)


class Factored(NamedTuple):
    """A factored KKT matrix: the perturbation Algorithm IC chose (``delta_w``, ``delta_c``), the one
    factored (``factor_delta_w``, ``factor_delta_c``: the sparse path's floors included), the
    matrix and the factorization."""
    delta_w: float
    delta_c: float
    factor_delta_w: float
    factor_delta_c: float
    kkt: KKTMatrix
    ldl: DenseLDL | SparseLDL

    def solve(self, rhs: np.ndarray) -> tuple[np.ndarray, float]:
        """The solution of the system with Algorithm IC's perturbation, iteratively refined on it
        with the factorization, and its residual ratio (see the module docstring). Where that
        refinement does not converge (the sparse path's floors are what keeps a nearly singular
        matrix solvable), the solution of the system factored, refined on it."""
        x = self.ldl.solve(rhs)
        if (self.delta_w, self.delta_c) != (self.factor_delta_w, self.factor_delta_c):
            refined, ratio = self._refine(rhs, x, self.delta_w, self.delta_c)
            if ratio <= SINGULAR_RATIO:
                return refined, ratio
        return self._refine(rhs, x, self.factor_delta_w, self.factor_delta_c)

    def _refine(self, rhs: np.ndarray, x: np.ndarray, delta_w: float, delta_c: float) -> tuple[np.ndarray, float]:
        """Iterative refinement of x on the system with ``(delta_w, delta_c)``: at least
        :data:`MIN_REFINEMENT_STEPS`, at most :data:`MAX_REFINEMENT_STEPS`, until the residual ratio
        is :data:`RESIDUAL_RATIO` or stops falling; the best x and its ratio."""
        scale = float(np.max(np.abs(rhs))) if rhs.size else 0.0
        best, best_ratio = x, np.inf
        for step in range(MAX_REFINEMENT_STEPS + 1):
            residual = rhs - self.kkt.matvec(x, delta_w, delta_c)
            size = float(np.max(np.abs(x))) if x.size else 0.0
            ratio = float(np.max(np.abs(residual))) / (min(size, 1e6 * scale) + scale) if scale > 0 else 0.0
            if not np.isfinite(ratio):
                break
            improved = ratio < best_ratio
            if improved:
                best, best_ratio = x, ratio
            if step >= MIN_REFINEMENT_STEPS and (ratio <= RESIDUAL_RATIO or not improved):
                break
            if step < MAX_REFINEMENT_STEPS:
                x = x + self.ldl.solve(residual)
        return best, best_ratio


class InertiaCorrection:
    """Algorithm IC of Wächter & Biegler (2006) §3.1: the smallest perturbation ``(delta_w,
    delta_c)`` in its sequence that gives the KKT matrix the inertia ``(n, m, 0)``. Keeps the last
    ``delta_w`` used, from which the next search starts (a third of it).

    Before perturbing W for a matrix with a zero eigenvalue or fewer than m negative ones,
    ``delta_c`` alone is tried (IPOPT's order: a rank-deficient Jacobian needs no change of W). On
    the sparse path every factorization has ``delta_c >= 1e-8 mu^(1/4)`` (quasi-definite when W +
    Sigma + delta_w I is positive definite), and ``delta_w`` that much too after a zero pivot.

    Examples
    --------
    A nonconvex W: the inertia is corrected by delta_w = 1e-4 * 100^k until W + delta_w I is
    positive definite on the null space of J (here delta_w = 1.0 > 0.5):

    >>> import numpy as np
    >>> from optimizers.kkt import DenseLDL, InertiaCorrection, KKTMatrix
    >>> kkt = KKTMatrix(np.diag([-0.5, 1.0, 1.0]), np.zeros(3), np.array([[0.0, 1.0, 1.0]]), sparse=False)
    >>> factored = InertiaCorrection(DenseLDL()).factor(kkt, mu=0.1)
    >>> factored.delta_w, factored.delta_c
    (1.0, 0.0)
    """

    def __init__(self, ldl: DenseLDL | SparseLDL):
        self.ldl = ldl
        self.last_delta_w = 0.0

    def _try(self, kkt: KKTMatrix, delta_w: float, delta_c: float, floor: float) -> tuple[Factored, Inertia]:
        """Factor with the perturbation ``(delta_w, delta_c)``, each at least ``floor`` in the
        matrix factored: delta_c always, delta_w after an LDL^T without pivoting met a zero pivot
        (W + Sigma with zeros on its diagonal: variables that enter linearly and have no bound)."""
        factor_delta_c = max(delta_c, floor) if kkt.m else delta_c
        factor_delta_w = delta_w
        inertia = self.ldl.factor(kkt.matrix(factor_delta_w, factor_delta_c))
        if inertia.zero == kkt.n + kkt.m and delta_w < floor:   # the factorization stopped at a zero pivot
            factor_delta_w = floor
            inertia = self.ldl.factor(kkt.matrix(factor_delta_w, factor_delta_c))
        return Factored(delta_w, delta_c, factor_delta_w, factor_delta_c, kkt, self.ldl), inertia

    def factor(self, kkt: KKTMatrix, mu: float, singular: bool = False) -> Factored | None:
        """The factored matrix with the first perturbation of Algorithm IC that corrects its
        inertia; ``singular``: the matrix is known to be singular (start from ``delta_c > 0``).
        None when ``delta_w`` would exceed :data:`DELTA_W_MAX`."""
        wanted = Inertia(kkt.n, kkt.m, 0)
        floor = jacobian_regularization(mu) if kkt.sparse else 0.0
        delta_c = jacobian_regularization(mu) if singular else 0.0
        factored, inertia = self._try(kkt, 0.0, delta_c, floor)        # IC-1
        if inertia == wanted:
            return factored
        # IC-2, delta_c alone first: a zero eigenvalue, or fewer than m negative ones (with J of full
        # rank there are at least m: a rank-deficient J, as IPOPT's degeneracy test finds it)
        if (inertia.zero or inertia.negative < kkt.m) and not delta_c and kkt.m:
            delta_c = jacobian_regularization(mu)
            for _ in range(DELTA_C_STEPS if kkt.sparse else 1):
                factored, inertia = self._try(kkt, 0.0, delta_c, floor)
                if inertia == wanted:
                    return factored
                if not (inertia.zero or inertia.negative < kkt.m):
                    break
                delta_c *= DELTA_C_INCREASE   # without pivoting, -delta_c must stand clear of rounding

        first = self.last_delta_w == 0.0                                # IC-3
        delta_w = DELTA_W_FIRST if first else max(DELTA_W_MIN, DELTA_W_DECREASE * self.last_delta_w)
        while delta_w <= DELTA_W_MAX:
            factored, inertia = self._try(kkt, delta_w, delta_c, floor)  # IC-4
            if inertia == wanted:
                self.last_delta_w = delta_w
                return factored
            delta_w *= DELTA_W_FIRST_INCREASE if first else DELTA_W_INCREASE  # IC-5
        return None                                                     # IC-6
