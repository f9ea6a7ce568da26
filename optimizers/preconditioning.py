"""Preconditioners for the Krylov methods from the sparse Hessian: an incomplete Cholesky
factorization, and the rule that decides when a run uses one.

Newton-CG, trust-ncg and trust-krylov solve their Newton systems by conjugate gradients or
Lanczos from Hessian-vector products. On a discretized PDE (the minimal-surface grid of
``benchmarks/bench_sparse.py``: the Hessian's condition number grows like n) CG then needs
thousands of products a solve. A preconditioner M ~ H, applied as ``solve(r) = M^{-1} r``, cuts
that to about a hundred (:class:`~optimizers.krylov.ConjugateGradient`,
:class:`~optimizers.krylov.Lanczos`), and a trust region measured in M's norm follows the level
sets of the model (:class:`~optimizers.subproblems.SteihaugCG`,
:class:`~optimizers.subproblems.LanczosGLTR`).

The preconditioner is Lin & Moré's (1999) incomplete Cholesky factorization as TRON uses it
(ICFS), L L^T ~ S (H + alpha D) S: the matrix scaled symmetrically by the l2 norms of its columns
(``S = D^{-1/2}``), each column of L keeping its n_j + p largest entries (n_j the entries of H's
column j below the diagonal, p the ``memory``), and a shift alpha = 0, then 1e-3 times two, four,
... until every pivot is positive, so M is positive definite however indefinite H is. Here the
fill L may take is further limited to the level-of-fill pattern of ``fill_level``, computed once per
pattern (IC(k), Saad, *Iterative Methods for Sparse Linear Systems*, 2nd ed., §10.3.3): that makes
the factorization's structure static, so it is computed as NumPy operations on whole sets of
columns at a time. Columns that depend on no other column of the set form a level (level
scheduling, Saad §11.6.1; Anderson & Saad 1989), and one level costs a dozen NumPy calls
whatever its size. A 2-D grid in its natural order has about ``(fill_level + 2) sqrt(n)`` levels
(on the minimal surface at n = 10^5: 1,575 levels, 0.06 s a factorization, about 35
Hessian-vector products); a band or a chain has n, one column each, and is refused
(:data:`LEVELS_PER_ROOT_N`). The two triangular solves of ``M^{-1} r`` are SuperLU's, on L
itself (``splu`` in the natural order without pivoting factors a triangular matrix without
fill), in compiled code. scipy's own incomplete factorization ``spilu`` (SuperLU's ILUTP) is not
symmetric and needs no positive pivots: preconditioned CG with it failed to converge on a 5-point
Laplacian at n = 10^5.

The other preconditioner is algebraic multigrid (:class:`AlgebraicMultigrid`): ``pyamg``'s smoothed
aggregation (Vaněk, Mandel & Brezina 1996) built from the sparse Hessian, one V-cycle with
symmetric Gauss-Seidel smoothing an application, a symmetric operator that is positive definite
when H is. On grid Hessians its CG iterations stay nearly flat in n where the incomplete
Cholesky's grow (``benchmarks/bench_factorizations.py``, one solve to 1e-6, loaded machine: the
13-point stencil at 300^2 14 iterations against 61, at 1000^2 24 against 176; the minimal surface
at 1000^2 112 against 868), it needs no symbolic analysis (the incomplete Cholesky's took 341 s at
the 13-point 1000^2), and its setup costs a few CG iterations (1.4 s at 300^2). Its hierarchy is
kept across iterates while it still works: rebuilt once a solve takes more than
:data:`AMG_REUSE_GROWTH` times the products of the first solve with it. It needs a positive
diagonal; where H has none, or where a V-cycle meets a residual r with ``r^T M^{-1} r <= 0`` (an
indefinite H can make the V-cycle indefinite: that application is then the identity's), the run
takes the incomplete Cholesky factorization instead, which is shifted until positive definite.
The automatic choice (``preconditioner=None``) is multigrid from :data:`AMG_MIN_SIZE` variables
on, the incomplete Cholesky below it and after a refusal: on the minimal surface at n = 10^4,
newton-cg with the incomplete Cholesky took 92 iterations and 1,281 products (8 s), with
multigrid 209-324 iterations and 5,900-7,200 products (54-76 s; pyamg's setup draws a random
start for its spectral radius estimate, so runs differ), its steps no better and each V-cycle's
fixed Python costs large beside a product at that size.

References: C.-J. Lin and J. J. Moré, Incomplete Cholesky factorizations with limited memory, SIAM
J. Sci. Comput. 21 (1999) 24-45 (ICFS), and Newton's method for large bound-constrained
optimization problems, SIAM J. Optim. 9 (1999) (TRON); Y. Saad, *Iterative Methods for Sparse
Linear Systems*, 2nd ed., SIAM 2003; E. Anderson and Y. Saad, Solving sparse triangular linear
systems on parallel computers, Int. J. High Speed Comput. 1 (1989); P. Vaněk, J. Mandel and M.
Brezina, Algebraic multigrid by smoothed aggregation for second and fourth order elliptic problems,
Computing 56 (1996); N. Bell, L. N. Olson and J. Schroder, PyAMG: algebraic multigrid solvers in
Python, J. Open Source Softw. 7 (2022).
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import OptimizeWarning

from .sparse import SPARSE_MIN_SIZE, dense_reason

# ICFS's defaults: p = 5 extra entries a column, the first positive shift 1e-3 (of the scaled
# matrix, whose entries are at most 1 in magnitude).
MEMORY = 5
SHIFT_MIN = 1e-3
# Fill of level 2 or less is a candidate. On the minimal-surface grid at n = 10^5 (one solve of
# H p = -g to 1e-6 at MINPACK-2's start, CG 5,122 products): level 0 481 products (0.04 s a
# factorization, 2.4 ms a solve with M), 1 364, 2 226 (0.06 s, 2.9 ms), 3 163 (0.08 s, 3.5 ms,
# and twice level 2's symbolic work and memory). Level 2 is ICFS's p = 5 on that grid.
FILL_LEVEL = 2
# A factorization is refused when it would take more than this many sqrt(n) levels: a grid's
# natural order has a few sqrt(n), a band or a chain n (each column waits for the one before).
LEVELS_PER_ROOT_N = 10


# The preconditioners a Krylov method's ``preconditioner`` option names (None: automatic).
PRECONDITIONERS = ("amg", "incomplete-cholesky")
# The automatic choice takes multigrid from this many variables on (the module docstring).
AMG_MIN_SIZE = 50_000
# An AMG hierarchy is rebuilt once a solve takes more than this many times the products of the
# first solve with it (and at least AMG_REUSE_SLACK more).
AMG_REUSE_GROWTH = 2.0
AMG_REUSE_SLACK = 10
AMG_SEED = 0        # pyamg's spectral-radius estimates start from np.random.rand: seeded, a run repeats


@contextlib.contextmanager
def _global_random_state(seed: int):
    """NumPy's global random state seeded for the block and restored after it: pyamg draws its
    start vectors from it, so the same Hessian gives the same hierarchy (and the same iterates), and
    the user's own global stream is neither read nor advanced."""
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)


def level_limit(n: int) -> int:
    """The most levels a factorization may take: :data:`LEVELS_PER_ROOT_N` sqrt(n), at least 100."""
    return max(100, int(LEVELS_PER_ROOT_N * math.sqrt(n)))


class IncompleteFactor(NamedTuple):
    """One factorization ``L L^T ~ S (H + shift D) S``: ``solve(r) = M^{-1} r`` with M = S^{-1} L
    L^T S^{-1} symmetric positive definite, the ``shift`` it took, L and the scaling S (its
    diagonal ``scaling``)."""
    solve: Callable[[np.ndarray], np.ndarray]
    shift: float
    factor: scipy.sparse.csc_matrix
    scaling: np.ndarray


class IncompleteCholesky:
    """Incomplete Cholesky factorizations (ICFS with a static fill pattern; see the module
    docstring) of symmetric sparse matrices, the symbolic analysis (fill pattern, levels, the
    products each entry takes) done once per pattern and reused by every later matrix of it.

    Parameters
    ----------
    fill_level : int
        The level of fill a candidate entry of L may have (0: H's own pattern, IC(0)).
    memory : int
        ICFS's p: column j of L keeps its n_j + p largest candidates below the diagonal.

    Examples
    --------
    A tridiagonal matrix needs no fill, so its incomplete factorization is the complete one:

    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.preconditioning import IncompleteCholesky
    >>> H = scipy.sparse.diags([[-1.0] * 3, [2.0] * 4, [-1.0] * 3], [-1, 0, 1], format="csc")
    >>> factor = IncompleteCholesky().factor(H)
    >>> factor.shift, np.round(factor.solve(np.ones(4)), 6)
    (0.0, array([2., 3., 3., 2.]))

    An indefinite matrix is shifted until every pivot is positive:

    >>> factor = IncompleteCholesky().factor(scipy.sparse.csc_matrix(np.diag([1.0, -1.0])))
    >>> factor.shift > 1, bool(np.all(factor.factor.diagonal() > 0))
    (True, True)
    """

    def __init__(self, fill_level: int = FILL_LEVEL, memory: int = MEMORY):
        if fill_level < 0 or memory < 0:
            raise ValueError(f"fill_level and memory must be non-negative, got {fill_level} and {memory}")
        self.fill_level, self.memory = fill_level, memory
        self._pattern: tuple[np.ndarray, np.ndarray] | None = None
        self.levels = 0
        self.refusal: str | None = None

    def analyse(self, h: scipy.sparse.csc_matrix) -> str | None:
        """The symbolic analysis of h's pattern (kept while the pattern stays); why no factorization
        is made (too many levels), or None."""
        if self._pattern is None or not (np.array_equal(h.indptr, self._pattern[0])
                                         and np.array_equal(h.indices, self._pattern[1])):
            self._analyse(h)
        return self.refusal

    def _analyse(self, h: scipy.sparse.csc_matrix) -> None:
        n = h.shape[0]
        self._pattern = (h.indptr.copy(), h.indices.copy())
        self._columns_of_h = np.repeat(np.arange(n), np.diff(h.indptr))
        lower = _fill_pattern(h, self.fill_level)
        rows = lower.indices.astype(np.int64)
        cols = np.repeat(np.arange(n), np.diff(lower.indptr))
        strict = rows > cols
        level_of = _levels(rows[strict], cols[strict], lower.indptr, n, level_limit(n))
        if level_of is None:
            self.levels, self.refusal = level_limit(n) + 1, (
                f"its incomplete factorization would take more than {level_limit(n):,} sequential "
                f"levels (each column waits for the one before, as on a band or a chain)")
            return
        self.levels, self.refusal = int(level_of.max(initial=-1)) + 1, None
        # the entries ordered by the level of their column, then by column and row (CSC order
        # within a column, the diagonal first); position[e]: where CSC entry e went
        order = np.argsort(level_of[cols], kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        self._rows, self._cols, self._to_csc = rows[order], cols[order], position
        self._lower_indptr, self._lower_indices = lower.indptr, lower.indices
        counts = np.diff(lower.indptr)
        self._diagonal = position[lower.indptr[:-1]]       # each column's first entry: its diagonal
        column_order = np.argsort(level_of, kind="stable")
        level_columns = np.searchsorted(level_of[column_order], np.arange(self.levels + 1))
        self._level_entries = np.append(self._diagonal[column_order], rows.size)[level_columns]
        self._level_counts = [counts[column_order[a:b]] for a, b in zip(level_columns[:-1], level_columns[1:])]
        # where each entry of the pattern is in h (-1: fill, zero to start with)
        self._source = _positions(self._columns_of_h * n + h.indices, self._cols * n + self._rows)
        # ICFS's limit, n_j + p entries below the diagonal, where a column has more candidates
        below_h = np.bincount(self._columns_of_h[h.indices > self._columns_of_h], minlength=n)
        self._keep = below_h + self.memory
        self._drops = [bool(np.any(c - 1 > self._keep[column_order[a:b]]))
                       for c, a, b in zip(self._level_counts, level_columns[:-1], level_columns[1:])]
        self._level_keep = [self._keep[column_order[a:b]] for a, b in zip(level_columns[:-1], level_columns[1:])]
        self._products(position, rows, cols, lower.indptr, n)

    def _products(self, position: np.ndarray, rows: np.ndarray, cols: np.ndarray, indptr: np.ndarray,
                  n: int) -> None:
        """For each entry (i, j) of L, the products L[i, k] L[j, k] (k < j) it subtracts: every
        pair of entries below the diagonal of one column k whose rows i >= j make an entry of the
        pattern, grouped by the level of column j, as positions in the level order. ``rows``,
        ``cols`` and ``indptr``: L's pattern in CSC order."""
        below = np.flatnonzero(rows > cols)
        rank = below - indptr[cols[below]] - 1   # 0 for the first
        pairs = rank + 1
        first = np.repeat(below, pairs)
        offset = np.arange(int(pairs.sum())) - np.repeat(np.cumsum(pairs) - pairs, pairs)
        second = first - rank.repeat(pairs) + offset          # entries at or above `first`
        found = _positions(cols * n + rows, rows[second] * n + rows[first])   # (column j = rows[second], row i)
        hit = found >= 0
        target = position[found[hit]]
        by_target = np.argsort(target, kind="stable")
        target = target[by_target]
        self._first = position[first[hit][by_target]].astype(np.int32)
        self._second = position[second[hit][by_target]].astype(np.int32)
        level = np.searchsorted(self._level_entries, target, side="right") - 1
        self._target = (target - self._level_entries[level]).astype(np.int32)
        self._level_products = np.searchsorted(target, self._level_entries)

    def factor(self, h: scipy.sparse.csc_matrix) -> IncompleteFactor | None:
        """The factorization of h (symmetric CSC with sorted indices, :func:`~optimizers.sparse.
        symmetric_csc`), with the smallest shift of 0, 1e-3, 2e-3, 4e-3, ... (or from 1e-3 -
        min diag) that gives positive pivots; None when h is not finite. The scaling makes the
        factor of s h that of h for any s > 0 (entries from 1e-300 to 1e300 included); h = 0
        gives M = 1e-3 I.

        Raises
        ------
        ValueError
            If h's pattern is refused (:meth:`analyse`).
        """
        refusal = self.analyse(h)
        if refusal is not None:
            raise ValueError(f"no incomplete Cholesky factorization: {refusal}")
        if not np.all(np.isfinite(h.data)):
            return None
        norms = _column_norms(h.data, self._columns_of_h, h.shape[0])
        scaling = 1.0 / np.sqrt(np.where(norms > 0, norms, 1.0))
        scaled = np.zeros(self._source.size)     # fill: zero to start with
        in_h = self._source >= 0
        scaled[in_h] = h.data[self._source[in_h]]
        scaled *= scaling[self._rows]       # one side at a time: s_i s_j alone may overflow
        scaled *= scaling[self._cols]
        smallest = float(scaled[self._diagonal].min(initial=np.inf))
        shift = 0.0 if smallest > 0 else SHIFT_MIN - smallest
        while True:
            values = scaled.copy()
            values[self._diagonal] += shift
            if self._eliminate(values):
                break
            shift = max(2.0 * shift, SHIFT_MIN)
        factor = scipy.sparse.csc_matrix((values[self._to_csc], self._lower_indices, self._lower_indptr),
                                         shape=h.shape)
        factor.eliminate_zeros()
        return IncompleteFactor(_triangular_solves(factor, scaling), shift, factor, scaling)

    def _eliminate(self, values: np.ndarray) -> bool:
        """L's entries in place of the scaled, shifted matrix's, level by level (left-looking
        Cholesky: each column takes the products of the columns before, then is divided by the
        square root of its pivot, and keeps its ICFS share); False at a pivot that is not
        positive."""
        bounds, products = self._level_entries, self._level_products
        first, second, target = self._first, self._second, self._target
        for level, (counts, drops) in enumerate(zip(self._level_counts, self._drops)):
            lo, hi = bounds[level], bounds[level + 1]
            a, b = products[level], products[level + 1]
            column = values[lo:hi]
            if b > a:
                column = column - np.bincount(target[a:b], weights=values[first[a:b]] * values[second[a:b]],
                                              minlength=hi - lo)
            starts = np.cumsum(counts) - counts
            pivots = column[starts]
            if not pivots.min() > 0:   # NaN too
                return False
            column /= np.repeat(np.sqrt(pivots), counts)
            if drops:
                _keep_largest(column, starts, counts, self._level_keep[level])
            values[lo:hi] = column
        return True


def _positions(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Where each of ``keys`` is in ``sorted_keys`` (-1 where it is not, or there are none)."""
    found = np.searchsorted(sorted_keys, keys)
    inside = found < sorted_keys.size
    hit = np.zeros(keys.size, dtype=bool)
    hit[inside] = sorted_keys[found[inside]] == keys[inside]
    return np.where(hit, found, -1)


def _column_norms(data: np.ndarray, columns: np.ndarray, n: int) -> np.ndarray:
    """The l2 norm of each of n columns (entries ``data`` in ``columns``), each taken relative to
    the column's largest magnitude, so entries near 1e200 do not overflow when squared, nor
    entries near 1e-200 underflow to a zero norm (LAPACK's dnrm2 scales so too)."""
    magnitude = np.abs(data)
    largest = np.zeros(n)
    np.maximum.at(largest, columns, magnitude)
    largest[largest == 0] = 1.0
    return largest * np.sqrt(np.bincount(columns, weights=(magnitude / largest[columns]) ** 2, minlength=n))


def _keep_largest(column: np.ndarray, starts: np.ndarray, counts: np.ndarray, keep: np.ndarray) -> None:
    """ICFS's memory in place: each column (entries ``starts[c]`` to ``starts[c] + counts[c]``, the
    diagonal first) keeps its diagonal and its ``keep[c]`` largest entries below it."""
    owner = np.repeat(np.arange(counts.size), counts)
    magnitude = np.abs(column)
    magnitude[starts] = np.inf
    order = np.lexsort((-magnitude, owner))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - starts[owner[order]]
    column[rank > keep[owner]] = 0.0


def _fill_pattern(h: scipy.sparse.csc_matrix, fill_level: int) -> scipy.sparse.csc_matrix:
    """The lower triangle of the pattern of level ``fill_level`` or less (level 0: h's own; an
    entry (i, j) made by eliminating k has level lev(i, k) + lev(j, k) + 1; Saad §10.3.3), with
    the whole diagonal, as a CSC matrix with sorted indices (values 1)."""
    n = h.shape[0]
    by_level = [scipy.sparse.tril(h, -1, format="csc").astype(bool).astype(np.int32)]
    pattern = by_level[0]
    for level in range(1, fill_level + 1):
        made = sum(by_level[a] @ by_level[level - 1 - a].T for a in range(level))
        made = scipy.sparse.tril(made, -1, format="csc").astype(bool).astype(np.int32)
        new = made - made.multiply(pattern.astype(bool))
        new.eliminate_zeros()
        by_level.append(new)
        pattern = (pattern + new).tocsc()
    lower = (pattern + scipy.sparse.eye(n, dtype=np.int32, format="csc")).tocsc()
    lower.sum_duplicates()
    lower.sort_indices()
    lower.data[:] = 1
    return lower


def _levels(rows: np.ndarray, cols: np.ndarray, indptr: np.ndarray, n: int, limit: int) -> np.ndarray | None:
    """The level of each column of a lower-triangular pattern (its strict entries ``rows, cols``
    in CSC order, ``indptr`` its column pointers with the diagonal first): 0 for a column with no
    entry in its row left of the diagonal, else one more than the highest level among the columns
    it reads. None once more than ``limit`` levels are needed."""
    waiting = np.bincount(rows, minlength=n)       # how many columns each column still waits for
    below_start = indptr[:-1] - np.arange(n)   # column k's entries in (rows, cols) start here
    below_count = np.diff(indptr) - 1
    level_of = np.empty(n, dtype=np.int64)
    ready, level = np.flatnonzero(waiting == 0), 0
    while ready.size:
        if level >= limit:
            return None
        level_of[ready] = level
        counts = below_count[ready]
        positions = np.repeat(below_start[ready] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        released, times = np.unique(rows[positions], return_counts=True)
        waiting[released] -= times
        ready = released[waiting[released] == 0]
        level += 1
    return level_of


def _triangular_solves(factor: scipy.sparse.csc_matrix, scaling: np.ndarray) -> Callable:
    """``r -> S L^{-T} L^{-1} S r``. SuperLU's LU of a lower-triangular L in the natural order
    without pivoting is L itself (no fill), and solves with it and its transpose run in compiled
    code (scipy's ``spsolve_triangular`` was 8 times slower at n = 10^5)."""
    from scipy.sparse.linalg import splu
    lu = splu(factor, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})

    def solve(r: np.ndarray) -> np.ndarray:
        return scaling * lu.solve(lu.solve(scaling * r), trans="T")
    return solve


class _VCycle:
    """One V-cycle of a pyamg hierarchy as ``solve(r) ~ H^{-1} r``; an application whose result z
    has ``r^T z <= 0`` or is not finite (the hierarchy is not positive definite on r) returns r
    instead and is counted in ``indefinite``."""

    def __init__(self, hierarchy):
        self._apply = hierarchy.aspreconditioner(cycle="V").matvec
        self.indefinite = 0

    def solve(self, r: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):   # a hierarchy of an indefinite H may give NaN: refused below
            z = np.asarray(self._apply(r)).ravel()
            positive = r @ z > 0
        if not positive and r.any():
            self.indefinite += 1
            return r.copy()
        return z


class AlgebraicMultigrid:
    """Smoothed-aggregation AMG preconditioners (``pyamg``; see the module docstring) of the sparse
    Hessians of a run, one hierarchy kept while its solves take at most :data:`AMG_REUSE_GROWTH`
    times the products of the first (:meth:`observe`). ``builds`` counts the hierarchies built.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse
    >>> from optimizers.preconditioning import AlgebraicMultigrid
    >>> H = scipy.sparse.diags([[-1.0] * 99, [2.0] * 100, [-1.0] * 99], [-1, 0, 1], format="csc")
    >>> amg = AlgebraicMultigrid()
    >>> z = amg.preconditioner(H).solve(np.ones(100))       # M^{-1} r, M ~ H
    >>> bool(np.ones(100) @ z > 0), amg.builds
    (True, 1)
    """

    def __init__(self):
        self._cycle: _VCycle | None = None
        self._first_products: int | None = None
        self.builds = 0

    @staticmethod
    def refusal(h: scipy.sparse.csc_matrix) -> str | None:
        """Why no hierarchy is built for h (a diagonal entry that is not positive), or None."""
        diagonal = h.diagonal()
        if not np.all(diagonal > 0):   # NaN too
            return "the Hessian's diagonal is not positive (multigrid's smoothers need it)"
        return None

    @property
    def indefinite(self) -> bool:
        """Whether a V-cycle of the current hierarchy met a residual r with r^T M^{-1} r <= 0."""
        return self._cycle is not None and self._cycle.indefinite > 0

    def preconditioner(self, h: scipy.sparse.csc_matrix) -> _VCycle | str:
        """The V-cycle of the kept hierarchy, or of one built from h (symmetric CSC, positive
        diagonal) when there is none; why not, when pyamg's setup fails (on an indefinite H its
        spectral radius estimate can meet NaN)."""
        if self._cycle is None:
            from pyamg import smoothed_aggregation_solver
            csr = scipy.sparse.csr_matrix((h.data, h.indices, h.indptr), shape=h.shape)   # h^T = h
            try:
                with np.errstate(all="ignore"), _global_random_state(AMG_SEED):
                    hierarchy = smoothed_aggregation_solver(csr)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
                return f"pyamg's setup failed: {type(error).__name__}: {error}"
            self._cycle = _VCycle(hierarchy)
            self._first_products = None
            self.builds += 1
        return self._cycle

    def observe(self, products: int) -> None:
        """A solve with the current hierarchy took ``products``: the hierarchy is dropped (rebuilt
        from the next Hessian) once a solve takes more than the first's allowance."""
        if self._first_products is None:
            self._first_products = products
        elif products > max(AMG_REUSE_GROWTH * self._first_products, self._first_products + AMG_REUSE_SLACK):
            self._cycle = None


# The automatic rule: from SPARSE_MIN_SIZE variables on, a run takes the preconditioner from the
# iterate after the first whose Krylov solve, unpreconditioned, took more than this many products,
# about twice what a preconditioner costs an iterate (the sparse Hessian and its factorization:
# about 50 products on the minimal-surface grid at n = 10^4 and 10^5; see docs/guides/sparse.md for the runs).
AUTOMATIC_PRODUCTS = 100


def krylov_preconditioning(option: bool | None, n: int, feasible, preconditioner: str | None = None
                           ) -> Preconditioning | None:
    """The :class:`Preconditioning` of a Krylov method's ``precondition`` and ``preconditioner``
    options over n variables in the ``feasible`` set; None where its steps are not preconditioned
    (:attr:`~optimizers.feasible.FeasibleSet.preconditioned`: in a box, TRON's and projected
    Newton-CG's).

    Raises
    ------
    ValueError
        For ``precondition=True`` in such a set, or an unknown ``preconditioner``.
    """
    if preconditioner not in (None, *PRECONDITIONERS):
        raise ValueError(f"preconditioner must be 'amg', 'incomplete-cholesky' or None, got {preconditioner!r}")
    if feasible.preconditioned:
        return Preconditioning(option, n, preconditioner)
    if option:
        raise ValueError("precondition=True takes no bounds: the bounded steps (TRON, projected "
                         "Newton-CG) are not preconditioned")
    return None


class Preconditioning:
    """Whether the Krylov solves of a run (Newton-CG, trust-ncg, trust-krylov) are preconditioned,
    and the preconditioner of each iterate: algebraic multigrid (:class:`AlgebraicMultigrid`, a
    hierarchy kept while it works) or the incomplete Cholesky factorization of its sparse Hessian
    (:class:`IncompleteCholesky`, the symbolic analysis shared by the run).

    ``option`` True: from the first iterate on; False: never; None (automatic): from the iterate
    after the first whose solve, unpreconditioned, took more than :data:`AUTOMATIC_PRODUCTS`
    products (:meth:`observe`), on :data:`~optimizers.sparse.SPARSE_MIN_SIZE` variables or more.
    ``kind``: ``"amg"``, ``"incomplete-cholesky"``, or None: multigrid from :data:`AMG_MIN_SIZE`
    variables on, and the incomplete Cholesky below and where multigrid is refused (a diagonal
    that is not positive) or a V-cycle was not positive definite, for the rest of the run. A
    preconditioner needs the Hessian as a sparse matrix (from an operator's ``to_sparse``, or
    from ``hess`` without ``hessp``), under 5% dense when automatic
    (:func:`~optimizers.sparse.dense_reason`), and the incomplete Cholesky a factorization of a
    few sqrt(n) levels (:meth:`IncompleteCholesky.analyse`). Where one of these fails the run
    goes on without, ``reason`` says why (and with ``option`` True a warning too); where the
    automatic rule switched it on, ``reason`` says when; ``name`` is the preconditioner in use.

    Examples
    --------
    >>> from optimizers.preconditioning import Preconditioning
    >>> rule = Preconditioning(None, n=10_000)
    >>> rule.observe(20); rule.active
    False
    >>> rule.observe(666); rule.active, rule.reason
    (True, 'the Krylov solve of iteration 2 took 666 products (more than 100)')
    """

    def __init__(self, option: bool | None, n: int, kind: str | None = None):
        self.option, self.n, self.kind = option, n, kind
        self.active = option is True
        self.used = False
        self.reason: str | None = None
        self.name: str | None = None
        self._factorization = IncompleteCholesky()
        self._multigrid = AlgebraicMultigrid()
        self._multigrid_refusal: str | None = None
        self._solves = 0

    def at(self, point):
        """The preconditioner of ``point`` (an :class:`~optimizers.objective.Iterate`): an object
        whose ``solve(r)`` is ``M^{-1} r``, or None."""
        if not self.active:
            return None
        h = point.sparse_matrix
        if h is None:
            return self._decline("the Hessian does not come as a sparse matrix (from an operator's "
                                 "to_sparse, or from hess without hessp)")
        refusal = dense_reason(self.n, h.nnz, self.option)
        if refusal is None and self._multigrid_refusal is None and (
                self.kind == "amg" or (self.kind is None and self.n >= AMG_MIN_SIZE)):
            cycle = AlgebraicMultigrid.refusal(h) or self._multigrid.preconditioner(h)
            if not isinstance(cycle, str):
                self.used, self.name = True, "amg"
                return cycle
            if self.kind == "amg":
                return self._decline(cycle)
            self._multigrid_refusal = f"multigrid was refused ({cycle})"   # automatic: the incomplete Cholesky
        refusal = refusal or self._factorization.analyse(h)
        if refusal is not None:
            return self._decline(refusal if self._multigrid_refusal is None
                                 else f"{self._multigrid_refusal}, and {refusal}")
        factor = self._factorization.factor(h)
        if factor is not None:
            self.used, self.name = True, "incomplete-cholesky"
        return factor

    def observe(self, products: int) -> None:
        """After a Krylov solve that took ``products``: the automatic rule (without a
        preconditioner), or the multigrid hierarchy's reuse test (with one)."""
        if self.active and self.name == "amg":
            if self._multigrid.indefinite and self.kind is None:
                self._multigrid_refusal = "a multigrid V-cycle was not positive definite"
            self._multigrid.observe(products)
            return
        if self.option is not None or self.active or self.reason is not None or self.n < SPARSE_MIN_SIZE:
            return
        self._solves += 1
        if products > AUTOMATIC_PRODUCTS:
            self.active = True
            self.reason = (f"the Krylov solve of iteration {self._solves} took {products} products "
                           f"(more than {AUTOMATIC_PRODUCTS})")

    def _decline(self, reason: str) -> None:
        self.active, self.reason = False, reason
        if self.option:
            warnings.warn(f"precondition is True, but there is no preconditioner: {reason}",
                          OptimizeWarning, stacklevel=2)

    def report(self, result):
        """``result.preconditioned``, and where the rule considered it ``result.precondition_reason``;
        where a preconditioner was used, ``result.preconditioner`` (the last one's name) and
        ``result.multigrid_builds`` (the AMG hierarchies built)."""
        result.preconditioned = self.used
        if self.reason is not None:
            result.precondition_reason = self.reason
        if self.used:
            result.preconditioner = self.name
            result.multigrid_builds = self._multigrid.builds
        return result
