"""Subproblem solvers for the trust-region and cubic-regularization methods.

A solver is built once per iterate from the gradient ``g`` and the Hessian ``H`` (as products
``hessp(v)`` or as a dense matrix) and answers ``solve(radius)`` for the trust-region subproblem

    min_p  m(p) = g^T p + 1/2 p^T H p    subject to  ||p|| <= radius.

The outer loop only ever shrinks the radius between two accepted iterates, so every solver keeps
what it computed (the CG path, the Lanczos basis, the factorization) and answers a smaller radius
without new Hessian products whenever it can.

References
----------
- J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006, ch. 4 and 7 (N&W).
- T. Steihaug, The conjugate gradient method and trust regions in large scale optimization,
  SIAM J. Numer. Anal. 20 (1983); Ph. L. Toint, Towards an efficient sparsity exploiting Newton
  method for minimization (1981).
- N. I. M. Gould, S. Lucidi, M. Roma and Ph. L. Toint, Solving the trust-region subproblem using
  the Lanczos method, SIAM J. Optim. 9 (1999) (GLTR).
- J. J. Moré and D. C. Sorensen, Computing a trust region step, SIAM J. Sci. Stat. Comput. 4
  (1983).
- A. R. Conn, N. I. M. Gould and Ph. L. Toint, *Trust-Region Methods*, SIAM 2000 (CGT), §6.6
  (eigenpoint).
- C. Cartis, N. I. M. Gould and Ph. L. Toint, Adaptive cubic regularisation methods for
  unconstrained optimization, Part I, Math. Program. 127 (2011) (ARC).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.linalg import eigh_tridiagonal
from scipy.linalg.lapack import dpotrf, dpotrs, dpttrf, dpttrs

from .krylov import (
    EPS,
    ESCAPE_CURVATURE_MARGIN,
    RITZ_RESIDUAL,
    TRUST_REGION_CG_MARGIN,
    CGStep,
    ConjugateGradient,
    Lanczos,
    forcing_term,
    leftmost_curvature,
    negative_curvature,
    norm,
    sphere_crossings,
    steihaug_maxiter,
    symmetric_eigenpairs,
)
from .objective import cached
from .sparse import LDLFactorization, frobenius_norm, rounding_shift, sparse_leftmost_eigenpair
from .sparse import norm_bound as sparse_norm_bound

# The hard case's extra shift of H - lam1 I, relative to max(1, |lam1|): from sqrt(eps), which
# perturbs the step at the level of its rounding, up by factors of 10 while the factorization
# fails, to 1e-2, beyond which the shift would change the step itself.
HARD_CASE_SHIFT, HARD_CASE_MAX_SHIFT = np.sqrt(EPS), 1e-2
BOUNDARY_RTOL = 1e-12   # a step this close to the radius (relative) lies on the boundary


class SubproblemSolution(NamedTuple):
    """A step ``p``, the decrease ``m(0) - m(p) >= 0`` its model predicts, whether it lies on the
    trust-region boundary, and its length in the region's norm when that is a preconditioner's
    (None: the Euclidean norm)."""
    p: np.ndarray
    decrease: float
    on_boundary: bool
    region_norm: float | None = None


def boundary_steps(p: np.ndarray, d: np.ndarray, radius: float) -> tuple[float, float]:
    """Both roots ``tau_minus <= tau_plus`` of ``||p + tau d|| = radius`` (``||p|| <= radius``)."""
    return sphere_crossings(p @ p, p @ d, d @ d, radius)


# --- the secular equation, shared by the dense and the tridiagonal subproblems ---------------

class _DenseShifts:
    """``H + lam I`` for a dense symmetric H: Cholesky solves and the leftmost eigenpair."""

    def __init__(self, H: np.ndarray):
        self.H = H
        self._identity = np.eye(len(H))   # made once: a model factors several shifts

    @cached
    def finite(self) -> bool:
        return bool(np.isfinite(self.H).all())

    @cached
    def min_diagonal(self) -> float:
        return float(self.H.diagonal().min())

    @cached
    def norm_bound(self) -> float:
        """An upper bound on ||H||_2: the smaller of the Gershgorin and Frobenius bounds."""
        return float(min(np.abs(self.H).sum(axis=1).max(), self.frobenius))

    @cached
    def frobenius(self) -> float:
        """np.linalg.norm(H), the same sum of squares of the entries in memory order, without its wrapper."""
        return norm(self.H.ravel(order="K"))

    def factor(self, lam: float) -> Callable | None:
        """A solver for ``(H + lam I) x = b``; None when ``H + lam I`` is not positive definite.
        A pivot zero but for rounding has it factored again a rounding-level shift higher
        (:func:`~optimizers.sparse.rounding_shift`), as the sparse factorization does."""
        shifted = self.H + lam * self._identity
        solve, pivots = _cholesky(shifted)
        extra = rounding_shift(pivots, shifted.diagonal())
        if extra:
            shifted[np.diag_indices_from(shifted)] += extra
            solve, _ = _cholesky(shifted)
        return solve

    @cached
    def leftmost_eigenpair(self) -> tuple[float, np.ndarray]:
        values, vectors = symmetric_eigenpairs(self.H, leftmost=True)
        return float(values[0]), vectors[:, 0]


def _cholesky(a: np.ndarray) -> tuple[Callable | None, np.ndarray]:
    """LAPACK's Cholesky factorization of a symmetric matrix: a solver (None when it is not
    positive definite) and the pivots r_kk^2, up to the one it stopped at, which potrf leaves
    on the diagonal as it found it."""
    factors, info = dpotrf(a, lower=False, clean=False)
    diagonal = factors.diagonal()
    if info > 0:
        return None, np.concatenate((diagonal[:info - 1] ** 2, diagonal[info - 1:info]))
    return (lambda b: _solve_factored(factors, b)), diagonal ** 2


def _solve_factored(factors: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(R^T R) x = b`` for potrf's upper factor R: LAPACK's potrs, called directly (what
    scipy's ``cho_solve`` calls, without its wrappers' fixed cost, a tenth of a small solve's time)."""
    x, info = dpotrs(factors, b, lower=False)
    if info != 0:
        raise ValueError(f"potrs: illegal value in argument {-info}")
    return x


class _SparseShifts:
    """``H + lam I`` for a sparse symmetric H (CSC): sparse LDL^T solves with the symbolic
    analysis of ``factorization`` (:class:`~optimizers.sparse.LDLFactorization`; a singular
    semidefinite ``H + lam I`` is factored with a rounding-level extra shift, as the dense one
    is), and the leftmost eigenpair by shift-invert Lanczos on factorizations below
    the spectrum (:func:`~optimizers.sparse.sparse_leftmost_eigenpair`)."""

    def __init__(self, H: scipy.sparse.csc_matrix, factorization: LDLFactorization):
        self.H, self._factorization = H, factorization

    @cached
    def finite(self) -> bool:
        return bool(np.all(np.isfinite(self.H.data)))

    @cached
    def min_diagonal(self) -> float:
        return float(self.H.diagonal().min())

    @cached
    def norm_bound(self) -> float:
        return sparse_norm_bound(self.H)

    @cached
    def frobenius(self) -> float:
        return frobenius_norm(self.H)

    def factor(self, lam: float) -> Callable | None:
        factor = self._factorization.factor(self.H, lam)
        return factor.solve if factor.positive_definite else None

    @cached
    def leftmost_eigenpair(self) -> tuple[float, np.ndarray]:
        return sparse_leftmost_eigenpair(self.H, self._factorization)


def matrix_shifts(H, factorization: LDLFactorization | None = None) -> _DenseShifts | _SparseShifts:
    """The shifts of a dense H, or of a sparse one (factored with ``factorization``, a new one
    when None)."""
    if scipy.sparse.issparse(H):
        return _SparseShifts(H, factorization or LDLFactorization())
    return _DenseShifts(H)


class _TridiagonalShifts:
    """``T + lam I`` for a symmetric tridiagonal T: LDL^T solves, O(k) per factorization."""

    def __init__(self, diagonal: np.ndarray, offdiagonal: np.ndarray):
        self.diagonal, self.offdiagonal = diagonal, offdiagonal

    @cached
    def finite(self) -> bool:
        return bool(np.isfinite(self.diagonal.sum() + self.offdiagonal.sum()))

    @cached
    def min_diagonal(self) -> float:
        return float(self.diagonal.min())

    @cached
    def norm_bound(self) -> float:
        """Gershgorin bound on ||T||_2."""
        bound = np.abs(self.diagonal)
        bound[:-1] += np.abs(self.offdiagonal)
        bound[1:] += np.abs(self.offdiagonal)
        return float(bound.max())

    def factor(self, lam: float) -> Callable | None:
        # LAPACK's LDL^T for positive definite tridiagonals, called directly: these systems are
        # tiny and solved at every Lanczos step, so wrapper overhead would dominate
        offdiagonal = self.offdiagonal if self.offdiagonal.size else np.zeros(1)
        d, e, info = dpttrf(self.diagonal + lam, offdiagonal)
        if info != 0:
            return None
        return lambda b: dpttrs(d, e, b)[0]

    @cached
    def leftmost_eigenpair(self) -> tuple[float, np.ndarray]:
        values, vectors = eigh_tridiagonal(self.diagonal, self.offdiagonal,
                                           select="i", select_range=(0, 0))
        return float(values[0]), vectors[:, 0]

    def quadratic(self, h: np.ndarray) -> float:
        """``h^T T h``."""
        return float(self.diagonal @ (h * h) + 2.0 * self.offdiagonal @ (h[:-1] * h[1:]))


def diagonal_shifts(values: np.ndarray) -> _TridiagonalShifts:
    """The shifts of ``diag(values)``, a tridiagonal with a zero off-diagonal: a Hessian in the
    coordinates of its eigenvectors (J^T J = V diag(s^2) V^T from the SVD of J, which never forms
    J^T J)."""
    return _TridiagonalShifts(values, np.zeros(max(values.size - 1, 0)))


def solve_secular(shifts, g: np.ndarray, *, radius: float | None = None,
                  sigma: float | None = None, lam0: float = 0.0, rtol: float = 1e-8,
                  maxiter: int = 100) -> tuple[np.ndarray, float]:
    """Solve the trust-region (``radius``) or the cubic (``sigma``) subproblem for a small H.

    Both solutions are ``p = -(H + lam I)^{-1} g`` with ``H + lam I`` positive semidefinite and
    ``||p|| = r(lam)``: ``r = radius`` (or ``lam = 0`` and p inside) for the trust region,
    ``r(lam) = lam / sigma`` for ``g^T p + 1/2 p^T H p + sigma/3 ||p||^3`` (ARC, Thm 3.1). The
    secular function ``phi(lam) = 1/||p(lam)|| - 1/r(lam)`` is increasing and concave for
    ``lam > -lambda_1``, so Newton's method is monotone from the left of the root; a bracket from
    Gershgorin bounds and failed Cholesky factorizations catches the other iterates
    (Moré & Sorensen 1983; N&W Alg. 4.3). In the hard case, g orthogonal to the leftmost
    eigenvector, the step is completed along that eigenvector (N&W §4.3). ``lam0`` is a guess
    of lam (e.g. from a smaller Krylov space). Returns ``(p, lam)``.
    """
    cubic = sigma is not None

    def target(lam: float) -> float:
        return lam / sigma if cubic else radius

    definite = False   # H is positive definite: no hard case, lam1 > 0 needs no eigenpair
    if not cubic:  # the Newton step, when H is positive definite and the step fits
        solve = shifts.factor(0.0)
        definite = solve is not None
        if definite:
            p = -solve(g)
            if norm(p) <= radius:
                return p, 0.0
    if not shifts.finite:
        return np.full_like(g, np.nan), np.nan
    gnorm = norm(g)
    if gnorm == 0.0:  # only curvature can decrease the model
        lam1, u = shifts.leftmost_eigenpair
        if negative_curvature(lam1, shifts.norm_bound, ESCAPE_CURVATURE_MARGIN):
            return target(-lam1) * u, -lam1
        return np.zeros_like(g), 0.0

    hnorm = shifts.norm_bound
    if cubic:  # lam solves lam (lam + lambda_i) = sigma ||g|| for some lambda_i in [-hnorm, hnorm]
        root = np.sqrt(hnorm * hnorm + 4.0 * sigma * gnorm)
        lo, hi = 2.0 * sigma * gnorm / (hnorm + root), 0.5 * (hnorm + root)
    else:
        lo, hi = gnorm / radius - hnorm, gnorm / radius + hnorm
    lo = max(lo, 0.0, -shifts.min_diagonal)
    lam, last, eigenpair_checked = min(max(lam0, lo), hi), None, definite
    for _ in range(maxiter):
        solve = shifts.factor(lam)
        if solve is None:  # lam < -lambda_1
            lo = lam
            lam = _between(lo, hi)
            continue
        p = -solve(g)
        pnorm, r = norm(p), target(lam)
        last = p, r / pnorm, lam   # scaled into the region only if the iteration ends without a root
        if abs(pnorm - r) <= rtol * r:
            return p, lam
        # before the hard-case test factors another shift (a sparse factorization solves with its
        # latest matrix only)
        dphi = (p @ solve(p)) / pnorm ** 3 + (sigma / lam ** 2 if cubic else 0.0)
        if pnorm > r:
            lo = lam
        else:
            hi = lam
            if not eigenpair_checked:  # first iterate right of the root: is it the hard case?
                eigenpair_checked = True
                lam1, u = shifts.leftmost_eigenpair
                hard = _hard_case(shifts, g, lam1, u, target, rtol)
                if hard is not None:
                    return hard
                lo = max(lo, -lam1)
        newton = lam - (1.0 / pnorm - 1.0 / r) / dphi
        lam = newton if lo < newton < hi else _between(lo, hi)
    if last is None:
        return np.full_like(g, np.nan), np.nan
    p, scale, lam = last
    return p * min(1.0, scale), lam


def _between(lo: float, hi: float) -> float:
    """A safeguarded point inside the bracket (Moré & Sorensen's choice)."""
    return max(np.sqrt(lo * hi), lo + 0.01 * (hi - lo))


def _hard_case(shifts, g, lam1, u, target, rtol):
    """The hard-case solution ``p + tau u`` at ``lam = -lam1``; None when it is not the hard case.

    The hard case needs g (numerically) orthogonal to u and ``||p|| < r`` for the p that solves
    ``(H - lam1 I) p = -g`` on the complement of u. p is computed with a tiny extra shift so the
    factorization exists, and the u components that shift would amplify are projected out.
    """
    if lam1 >= 0.0 or abs(u @ g) > rtol * norm(g):
        return None
    lam, unit = -lam1, max(1.0, -lam1)
    shift = HARD_CASE_SHIFT * unit
    solve = shifts.factor(lam + shift)
    while solve is None and shift < HARD_CASE_MAX_SHIFT * unit:
        shift *= 10.0
        solve = shifts.factor(lam + shift)
    if solve is None:
        return None
    p = -solve(g - (u @ g) * u)
    p -= (u @ p) * u
    r = target(lam)
    if norm(p) >= r:
        return None
    tau_minus, tau_plus = boundary_steps(p, u, r)
    # with H u = lam1 u and p orthogonal to u, the model changes by tau g^T u + tau^2 lam1 / 2
    return p + (tau_plus if u @ g <= 0 else tau_minus) * u, lam


# --- the solvers -----------------------------------------------------------------------------

class SteihaugCG:
    """Steihaug-Toint truncated conjugate gradients (Steihaug 1983; N&W Alg. 7.2).

    CG on ``H p = -g`` from p = 0 (:class:`~optimizers.krylov.ConjugateGradient`), with
    Hessian-vector products only. It stops where the path leaves the region, follows a direction
    of non-positive curvature to the boundary (the root with the lower model value), or stops
    inside once ``||r|| <= min(0.25, sqrt(||g||)) ||g||`` (the forcing term; ``rtol`` replaces the
    factor) or after ``maxiter`` steps (default :func:`steihaug_maxiter`). The CG path does not
    depend on the radius, so it is kept and a smaller radius is answered from it without new
    products. When g = 0 the path is the leftmost Lanczos direction from a random start, so a
    saddle point is left along negative curvature.

    With a ``preconditioner`` M (``solve(r) = M^{-1} r``) the CG is preconditioned and the region
    is ``||p||_M <= radius`` (Steihaug 1983; N&W §7.2; CGT §7.5.1): the M-norms of the path come
    from CG's recurrences, with no product with M, and the solution carries its M-norm
    (``region_norm``); the residual test stays on the true residual. At g = 0 the preconditioner
    plays no part.
    """

    def __init__(self, g: np.ndarray, hessp: Callable, rtol: float | None = None,
                 maxiter: int | None = None, preconditioner=None):
        gnorm = norm(g)
        self._tol = (forcing_term(gnorm) if rtol is None else rtol) * gnorm
        self._maxiter = steihaug_maxiter(g.size) if maxiter is None else maxiter
        self._cg = ConjugateGradient(hessp, g, curvature_margin=TRUST_REGION_CG_MARGIN,
                                     preconditioner=preconditioner if gnorm > 0 else None)
        self._path: list[CGStep] = []
        self._end: tuple[np.ndarray, float] | None = None  # interior point where CG stopped
        self._metric = preconditioner is not None and gnorm > 0
        if gnorm == 0.0:
            self._start_along_curvature(hessp, g.size)

    @property
    def products(self) -> int:
        """The Hessian-vector products of the CG path so far."""
        return self._cg.iterations

    def _start_along_curvature(self, hessp: Callable, n: int) -> None:
        estimate, origin = leftmost_curvature(hessp, n, n), np.zeros(n)
        if estimate is not None and negative_curvature(estimate[0], estimate[2],
                                                       ESCAPE_CURVATURE_MARGIN):
            self._path.append(CGStep(origin, estimate[1], 0.0, 0.0, estimate[0], np.inf, None))
        self._end = (origin, 0.0)

    def _segments(self):
        yield from self._path
        cg = self._cg
        while self._end is None:
            segment = cg.step()
            self._path.append(segment)
            if (cg.negative_curvature or np.sqrt(cg.rr) <= self._tol
                    or cg.iterations >= self._maxiter):
                self._end = (cg.p, cg.value)
            yield segment

    def solve(self, radius: float) -> SubproblemSolution:
        for segment in self._segments():
            if segment.length == np.inf:
                taus = segment.crossings(radius)
                tau = min(taus, key=segment.model)
            elif not segment.end_norm < radius:  # leaves the region (NaN products: a NaN step)
                tau = segment.crossings(radius)[1]
            else:
                continue
            return SubproblemSolution(segment.start + tau * segment.direction,
                                      -segment.model(tau), True, radius if self._metric else None)
        z, value = self._end
        return SubproblemSolution(z, -value, False, math.sqrt(self._cg.pp) if self._metric else None)


class _LanczosSubproblem:
    """Shared Krylov machinery of GLTR and the ARC subproblem.

    The subproblem is solved on ``T_k`` in the Krylov space ``K_k(H, g)`` (from a random vector
    when g = 0) and the space is grown until the residual of the full problem,
    ``||(H + lam I) p + g|| = next_beta |h_k|``, is at most ``min(0.25, sqrt(||g||)) ||g||``
    (with g = 0: at most ``0.1 lam ||p||``), or the space is invariant. ``rtol`` replaces that
    forcing factor. With a ``preconditioner`` M the space is ``K_k(M^{-1} H, M^{-1} g)`` with an
    M-orthonormal basis (:class:`~optimizers.krylov.Lanczos`), g's coordinate in it ``gamma =
    ||g||_{M^{-1}}``, and the residual test is on the true residual ``||(H + lam M) p + g||``.
    """

    def __init__(self, g: np.ndarray, hessp: Callable, rtol: float | None = None,
                 maxiter: int | None = None, seed: int = 0, preconditioner=None):
        self.gnorm = norm(g)
        start = g if self.gnorm > 0 else np.random.default_rng(seed).standard_normal(g.size)
        self.lanczos = Lanczos(hessp, start, preconditioner=preconditioner if self.gnorm > 0 else None)
        self.gamma = self.lanczos.start_norm if self.gnorm > 0 else 0.0
        if rtol is None:
            rtol = forcing_term(self.gnorm) if self.gnorm > 0 else RITZ_RESIDUAL
        self._forcing = rtol
        self._maxiter = g.size if maxiter is None else min(maxiter, g.size)

    @property
    def products(self) -> int:
        """The Hessian-vector products of the Krylov space so far."""
        return self.lanczos.size

    def _solve_small(self, **target) -> tuple[np.ndarray, float, float]:
        """``(h, lam, h^T T h)`` for the current target, growing the Krylov space as needed."""
        lanczos, lam = self.lanczos, 0.0
        if lanczos.size == 0:
            lanczos.extend()
        while True:
            shifts = _TridiagonalShifts(lanczos.alpha, lanczos.beta)
            g_small = np.zeros(lanczos.size)
            g_small[0] = self.gamma
            h, lam = solve_secular(shifts, g_small, lam0=lam, **target)
            if not np.isfinite(lam):
                return h, lam, np.nan
            scale = self.gnorm if self.gnorm > 0 else lam * norm(h)
            accurate = scale > 0 and lanczos.residuals(h) <= self._forcing * scale
            if accurate or lanczos.exhausted or lanczos.size >= self._maxiter:
                return h, lam, shifts.quadratic(h)
            lanczos.extend()


class _NewtonPoint:
    """The Newton point ``h_k = -||g|| T_k^{-1} e_1`` of the Lanczos tridiagonal T_k as the space
    grows, followed without solving: T_k = L_k D_k L_k^T grows by one pivot, and h_k = h_{k-1} +
    z_k w_k, w_k the last column of L_k^{-T}, so ``last`` (h_k's last entry, z_k) and ``norm2``
    (||h_k||^2) follow from O(1) recurrences, as the norms of CG iterates do (Steihaug 1983; CGT
    §7.5.1). ``positive`` turns False for good at the first pivot that is not positive (T_k not
    positive definite)."""

    def __init__(self, gnorm: float):
        self.gnorm, self.size, self.positive = gnorm, 0, True
        self.pivot = self.y = self.last = self.norm2 = 0.0
        self.s, self.w2 = 0.0, 1.0    # h_{k-1}^T w_k and ||w_k||^2

    def grow(self, alpha: float, beta: float) -> None:
        """Add the step ``alpha_{k+1}`` with coupling ``beta_k`` to the last one. Once a pivot is
        not positive there is no point to follow (a zero pivot: T_k is singular), and the
        recurrences stop."""
        self.size += 1
        if not self.positive:
            return
        if self.size == 1:
            pivot, y = alpha, -self.gnorm
        else:
            ell = beta / self.pivot
            pivot, y = alpha - ell * beta, -ell * self.y
            self.s = -ell * (self.s + self.last * self.w2)
            self.w2 = ell * ell * self.w2 + 1.0
        self.positive = pivot > 0
        if self.positive:
            self.pivot, self.y = pivot, y
            self.last = y / pivot
            self.norm2 += self.last * (2.0 * self.s + self.last * self.w2)


class LanczosGLTR(_LanczosSubproblem):
    """Generalized Lanczos trust-region method (GLTR; Gould, Lucidi, Roma & Toint 1999).

    Lanczos tridiagonalization with Hessian-vector products and the exact trust-region
    subproblem on the tridiagonal (Moré-Sorensen with the hard case, see :func:`solve_secular`).
    While T_k is positive definite and its Newton point lies inside the region, that point is
    the solution and is followed by recurrences (:class:`_NewtonPoint`), as GLTR's conjugate
    gradient phase does; the tridiagonal subproblem is solved once the point is accurate, or at
    every step once the boundary is reached. Handles indefinite H; memory is the O(n k) Lanczos
    basis. A smaller radius is first re-solved in the existing Krylov space, without new products.

    With a ``preconditioner`` M the region is ``||p||_M <= radius``: the Lanczos basis is
    M-orthonormal, so ``||p||_M = ||h||`` and the tridiagonal subproblem is the same one with
    ``||g||_{M^{-1}}`` for ``||g||`` (GLTR §5); memory doubles (the vectors ``M q_j`` are kept).
    """

    def __init__(self, g: np.ndarray, hessp: Callable, rtol: float | None = None,
                 maxiter: int | None = None, seed: int = 0, preconditioner=None):
        super().__init__(g, hessp, rtol, maxiter, seed, preconditioner)
        self._newton = _NewtonPoint(self.gamma) if self.gnorm > 0 else None
        self._metric = preconditioner is not None and self.gnorm > 0

    def _grow_inside(self, radius: float) -> None:
        """Extend the Krylov space while T_k's Newton point lies inside the region and is not
        accurate yet (where the tridiagonal subproblem would give that point and ask for a
        larger space)."""
        lanczos, newton = self.lanczos, self._newton
        if newton is None:
            return
        while True:
            if lanczos.size == 0:
                lanczos.extend()
            while newton.size < lanczos.size:
                newton.grow(*lanczos.coefficients(newton.size))
            if not (newton.positive and newton.norm2 <= radius * radius):
                self._newton = None   # past the boundary or not positive definite: for good
                return
            accurate = lanczos.residual_scale * abs(newton.last) <= self._forcing * self.gnorm
            if accurate or lanczos.exhausted or lanczos.size >= self._maxiter:
                return
            lanczos.extend()

    def solve(self, radius: float) -> SubproblemSolution:
        self._grow_inside(radius)
        h, lam, hth = self._solve_small(radius=radius)
        decrease = -(self.gamma * h[0] + 0.5 * hth)
        return SubproblemSolution(self.lanczos.combine(h), decrease, lam > 0,
                                  norm(h) if self._metric else None)


class LanczosCubic(_LanczosSubproblem):
    """ARC subproblem ``min g^T p + 1/2 p^T H p + sigma/3 ||p||^3`` in a Lanczos Krylov space.

    Cartis, Gould & Toint 2011 (Part I, §6.2): the cubic model on the tridiagonal is minimized by
    Newton's method on the secular equation in ``lam = sigma ||p||`` (with the hard case), the
    same :func:`solve_secular` as GLTR. ``decrease`` includes the cubic term.
    """

    def solve(self, sigma: float) -> SubproblemSolution:
        h, lam, hth = self._solve_small(sigma=sigma)
        decrease = -(self.gamma * h[0] + 0.5 * hth + sigma / 3.0 * norm(h) ** 3)
        return SubproblemSolution(self.lanczos.combine(h), decrease, True)


class MoreSorensen:
    """Nearly exact trust-region step for a dense or sparse Hessian (Moré & Sorensen 1983; N&W
    Alg. 4.3).

    Safeguarded Newton on the secular equation with Cholesky factorizations of ``H + lam I`` (a
    sparse H: LDL^T factorizations, :class:`~optimizers.sparse.LDLFactorization`, whose pivots
    tell whether ``H + lam I`` is positive definite, the symbolic analysis of ``factorization``
    reused) and, only when H is not positive definite and an iterate falls inside the region, the
    leftmost eigenpair (LAPACK's syevr; for a sparse H shift-invert Lanczos on the same
    factorizations, :func:`~optimizers.sparse.sparse_leftmost_eigenpair`) to detect and solve the
    hard case. See :func:`solve_secular`.
    """

    def __init__(self, g: np.ndarray, H, rtol: float = 1e-8,
                 factorization: LDLFactorization | None = None):
        self._g, self._H, self._rtol = g, H, rtol
        self._shifts = matrix_shifts(H, factorization)

    def solve(self, radius: float) -> SubproblemSolution:
        p, lam = solve_secular(self._shifts, self._g, radius=radius, rtol=self._rtol)
        return SubproblemSolution(p, -(self._g @ p + 0.5 * p @ self._H @ p), lam > 0)


class Dogleg:
    """Powell's dogleg for a dense or sparse Hessian (N&W §4.1), extended to indefinite H.

    With H positive definite: the Newton step when inside, else the point where the path
    0 -> unconstrained Cauchy point -> Newton step leaves the region. When H is not positive
    definite (scipy gives up here) the step is the better, in model value, of the Cauchy point
    (steepest descent, length from the curvature along g, N&W (4.12)) and the eigenpoint
    ``+-radius u`` along the leftmost eigenvector (CGT §6.6). Both guarantee decrease conditions
    that make the trust-region method converge to second-order points; the eigenpoint also
    leaves saddle points where g = 0.
    """

    def __init__(self, g: np.ndarray, H, factorization: LDLFactorization | None = None):
        self._g, self._H = g, H
        self._shifts = matrix_shifts(H, factorization)
        self._gnorm = norm(g)
        self._g_curvature = float(g @ H @ g)
        solve = self._shifts.factor(0.0) if self._shifts.finite else None
        self._newton = None if solve is None else -solve(g)

    def _model(self, p: np.ndarray) -> float:
        return float(self._g @ p + 0.5 * p @ self._H @ p)

    def solve(self, radius: float) -> SubproblemSolution:
        if not self._shifts.finite:
            return SubproblemSolution(np.full_like(self._g, np.nan), np.nan, False)
        if self._newton is not None:
            p, on_boundary = self._dogleg(radius)
        else:
            p = min(self._cauchy_point(radius), self._eigenpoint(radius), key=self._model)
            on_boundary = norm(p) >= (1.0 - BOUNDARY_RTOL) * radius
        return SubproblemSolution(p, -self._model(p), on_boundary)

    def _dogleg(self, radius: float) -> tuple[np.ndarray, bool]:
        newton, g = self._newton, self._g
        if norm(newton) <= radius:
            return newton, False
        steepest = -(self._gnorm ** 2 / self._g_curvature) * g
        if norm(steepest) >= radius:
            return -(radius / self._gnorm) * g, True
        tau = boundary_steps(steepest, newton - steepest, radius)[1]
        return steepest + tau * (newton - steepest), True

    def _cauchy_point(self, radius: float) -> np.ndarray:
        if self._gnorm == 0.0:
            return np.zeros_like(self._g)
        fraction = 1.0
        if self._g_curvature > 0:
            fraction = min(self._gnorm ** 3 / (radius * self._g_curvature), 1.0)
        return -(fraction * radius / self._gnorm) * self._g

    def _eigenpoint(self, radius: float) -> np.ndarray:
        lam1, u = self._shifts.leftmost_eigenpair
        if lam1 >= 0:
            return np.zeros_like(self._g)
        return (-radius if self._g @ u > 0 else radius) * u
