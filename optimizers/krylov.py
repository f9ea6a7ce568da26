"""Krylov building blocks every method shares: one Lanczos process, one conjugate gradient, one
inexact-Newton forcing term and one negative-curvature test.

Everything works on a symmetric operator given only as products ``matvec(v)`` (a Hessian-vector
product, a dense matrix's ``H.__matmul__``, a Gauss-Newton product, ...).

API
---
``Lanczos(matvec, start, *, reorthogonalize=True, breakdown=ROUNDING, preconditioner=None)``
    Lanczos tridiagonalization of the operator H from any nonzero ``start`` vector, grown one step
    (one product) at a time. After k steps, with Q_k the k orthonormal basis vectors as columns,
    ``Q_k^T H Q_k = T_k`` and ``H Q_k = Q_k T_k + next_beta q_{k+1} e_k^T``. With a
    ``preconditioner`` M the basis is M-orthonormal and ``H Q_k = M Q_k T_k + next_beta M q_{k+1}
    e_k^T`` (the process of M^{-1} H in the M inner product, started from ``M^{-1} start``).

    - ``extend()``: one more step (one product); ``run(steps)``: extend until ``size == steps`` or
      the space is exhausted; returns the Lanczos object.
    - ``size``: k, the steps taken. ``exhausted``: the Krylov space has dimension n or is invariant
      under H to ``breakdown * ||H||`` (beta_k at most that, ||H|| estimated by the largest
      ``||H q_j||``); T_k's eigenvalues are then eigenvalues of H to that accuracy, and
      ``extend()`` raises.
    - ``alpha`` (shape (k,)) and ``beta`` (shape (k-1,)): the diagonal and the off-diagonal of T_k;
      ``coefficients(j)``: the scalars ``(alpha_j, beta_{j-1})``. ``next_beta``: the coupling of
      the space to the rest (0 when exhausted); it bounds the residuals of Ritz pairs and of
      Galerkin solutions; ``residual_scale`` is ``next_beta ||M q_{k+1}||`` (``next_beta`` without
      M), what a residual is per unit of h's last coordinate.
    - ``basis``: Q_k^T, the basis vectors as rows, shape (k, n); ``combine(h)``: ``Q_k h`` for
      coordinates h of shape (k,) or (k, m) (the vector, or the m vectors as columns, in R^n).
    - ``ritz()``: ``(theta, Y)``, the Ritz values in ascending order (eigenvalues of T_k) and the
      eigenvectors of T_k as columns; ``combine(Y[:, i])`` is the Ritz vector of ``theta[i]``,
      ``Y[0, i]**2`` its weight in stochastic Lanczos quadrature (Golub & Meurant 2010, §7.2;
      Ubaru, Chen & Saad 2017). ``residuals(h)``: ``||H Q_k h - Q_k T_k h|| = next_beta |h_k|``
      without products (Paige 1971): for the columns of Y the Ritz residuals
      ``||H u_i - theta_i u_i||``, for the solution h of a system with T_k the residual of the
      Galerkin solution ``Q_k h``.
    - ``reorthogonalize=True`` (default) orthogonalizes each new vector against the whole basis
      after the three-term recurrence (full reorthogonalization, Golub & Van Loan §10.3.1), so T_k
      stays faithful in floating point: needed for eigenvectors, subproblem solutions and several
      extreme eigenvalues. ``False`` is the plain three-term recurrence (O(n) work a step besides
      the product); its Ritz values still converge, with spurious copies of converged ones
      (Paige 1976), which stochastic Lanczos quadrature tolerates. The basis is kept either way.

``leftmost_curvature(matvec, n, maxiter, seed=0) -> (theta, u, scale)``
    The smallest Ritz value, its unit Ritz vector and the largest Ritz magnitude (a scale of H) from
    at most ``maxiter`` Lanczos steps from a random start; stops early at a converged negative
    Ritz value. ``dense_leftmost_curvature(H)`` answers the same for a dense matrix.

``ConjugateGradient(matvec, g, *, shift=0.0, p0=None, curvature_margin=LINE_SEARCH_CG_MARGIN,
keep_segments=True, preconditioner=None)``
    Conjugate gradients on the quadratic model ``phi(p) = g^T p + 1/2 p^T A p``, A = H + shift I,
    i.e. on ``A p = -g``, one step (one product) at a time, from 0 or from a better ``p0``;
    preconditioned by M when ``preconditioner.solve(r)`` is ``M^{-1} r``.
    ``step()`` returns a :class:`CGStep` (the segment from the iterate along the search direction,
    with the model along it) and moves the iterate, unless the direction has non-positive
    curvature (``negative_curvature(d^T A d / ||d||^2, kappa, curvature_margin)``, kappa the
    largest curvature seen): then the iterate stays, the step has ``length = inf`` and
    ``negative_curvature`` is set; what to do is the caller's choice. Stopping is the caller's
    too. State: ``p``, ``r = A p + g``, ``rr = r^T r``, ``rz = r^T M^{-1} r``, ``d``, ``dd = d^T
    M d``, ``pp = p^T M p`` and ``pd = p^T M d`` (preconditioned only), ``value = phi(p)``, ``pAp
    = p^T A p``, ``iterations``, ``kappa``; ``product(v) = A v`` (M = I without a preconditioner).
    ``sphere_crossings(pp, pd, dd, radius)``: where ``p + tau d`` crosses a sphere, in any norm.

``forcing_term(gnorm)``, ``negative_curvature(rayleigh, scale, margin)`` and the named
constants below: the thresholds each use needs, with the reasons.

References: C. Lanczos, J. Res. Nat. Bur. Standards 45 (1950); C. C. Paige, PhD thesis, London
1971, and J. Inst. Math. Appl. 18 (1976); G. H. Golub and C. F. Van Loan, *Matrix Computations*,
4th ed., 2013, §10.1-10.3; G. H. Golub and G. Meurant, *Matrices, Moments and Quadrature with
Applications*, 2010; S. Ubaru, J. Chen and Y. Saad, SIAM J. Matrix Anal. Appl. 38 (2017);
M. R. Hestenes and E. Stiefel, J. Res. Nat. Bur. Standards 49 (1952); J. Nocedal and S. J.
Wright, *Numerical Optimization*, 2nd ed., 2006 (N&W), ch. 5 and 7; R. S. Dembo, S. C. Eisenstat
and T. Steihaug, SIAM J. Numer. Anal. 19 (1982); T. Steihaug, SIAM J. Numer. Anal. 20 (1983);
A. R. Conn, N. I. M. Gould and Ph. L. Toint, *Trust-Region Methods*, SIAM 2000 (CGT), §5.1.1 and
§7.5 (preconditioned CG and Lanczos, their M-norms); N. I. M. Gould, S. Lucidi, M. Roma and
Ph. L. Toint, SIAM J. Optim. 9 (1999) (GLTR's preconditioned Lanczos).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.linalg import eigh, eigh_tridiagonal
from scipy.linalg.lapack import dsyevr, dsyevr_lwork

EPS = np.finfo(float).eps

# --- thresholds, relative to the operator's scale (an estimate of ||H||_2) --------------------
# Rounding in a product H v is about eps ||H|| ||v||; a thousand times that is still rounding.
# Lanczos: beta_k below this times ||H|| means q_{k+1} would be rounding noise (an invariant
# space at working precision).
ROUNDING = 1e3 * EPS
# The negative-curvature probe stops once the Krylov space of its random start is invariant to
# sqrt(eps) ||H|| (beta_k below that): the Ritz values then match eigenvalues of H to about that
# accuracy, the level of the saddle test below, and on the (nearly) singular Hessians at
# minimizers the probe ends early (extended Powell, n = 12: 4 products instead of 10).
PROBE_BREAKDOWN = np.sqrt(EPS)
# CG's non-positive curvature, d^T A d <= margin * kappa ||d||^2 (kappa the largest curvature
# seen). A line-search CG step has no bound, so curvature within rounding of zero counts: a step
# of length ||r||^2 / d^T A d along it would be rounding blown up. (A fixed sqrt(eps) instead
# counted the soft directions of badly scaled problems, Hessian condition 1e10 and more: Powell
# badly scaled, Meyer, as negative curvature and capped the steps.) In a trust region the radius
# bounds every step, so any positive curvature is usable: with the line-search margin, Steihaug's
# CG sends Meyer's soft directions (relative curvature below 1e-13) to the boundary, and
# trust-ncg no longer solves Meyer.
LINE_SEARCH_CG_MARGIN = ROUNDING
TRUST_REGION_CG_MARGIN = 0.0
ESCAPE_CURVATURE_MARGIN = -ROUNDING  # g = 0: curvature negative beyond rounding is worth a step
# At a first-order point, curvature below -SADDLE_CURVATURE * ||H|| marks a saddle to leave
# (Newton's former test, now every method's): clearly beyond the rounding of H and of its Ritz
# values, relative so that scaling f does not change the answer. The trust-region methods' former
# -1e-6 * max(1, ||H||) gave the same MGH results but took a saddle of f scaled by 1e-6 for a
# minimum.
SADDLE_CURVATURE = np.sqrt(EPS)

# A negative Ritz value whose Ritz residual is at most this fraction of it is accurate enough to
# step along: its Ritz vector's curvature is the Ritz value itself, and the step it gives is the
# eigenpoint's to within a few percent (CGT §6.6 asks for a fraction of the leftmost eigenvalue).
RITZ_RESIDUAL = 0.1

# --- iteration limits --------------------------------------------------------------------------
# Lanczos steps of the second-order check at a first-order point: the extreme Ritz values
# converge first (Kaniel-Paige theory, Golub & Van Loan §10.1.5), so a few steps find clearly
# negative curvature; the check runs once per stationary point, not once per iteration.
CURVATURE_PROBE_STEPS = 10


# CG runs end in at most n steps in exact arithmetic (N&W Theorem 5.1), and earlier on the forcing
# term; the caps only bound runs that rounding keeps going. None of them binds on the MGH set.


def steihaug_maxiter(n: int) -> int:
    """CG steps of a Steihaug subproblem: 2 n, room for the loss of conjugacy in floating point;
    the radius bounds what longer runs could add."""
    return 2 * n


def newton_cg_maxiter(n: int) -> int:
    """CG steps of a line-search Newton-CG step: 20 n, scipy's Newton-CG cap (no radius stops a
    long run on an ill-conditioned system, so CG is let finish)."""
    return 20 * n


HESSIAN_FREE_CG_MAXITER = 250   # Martens (2010)'s cap on the CG steps of a Hessian-free step

# The cap of the inexact-Newton forcing term eta = min(cap, sqrt(||g||)) (Dembo, Eisenstat &
# Steihaug 1982), for every Krylov method. N&W's Algorithm 7.1 takes 0.5; on the MGH set (gtol
# 1e-8) 0.25 costs fewer evaluations: newton-cg 3734 (0.5: 3931), trust-ncg 3907 (4003),
# trust-krylov 3690 (3754), arc 7663 (7773); only hessian-free does better with 0.5 (12020
# against 12329).
FORCING_CAP = 0.25


def norm(v: np.ndarray) -> float:
    """Euclidean norm, without np.linalg.norm's overhead (it dominates at Lanczos sizes); math.sqrt
    rounds as np.sqrt does, at a tenth of its cost on a scalar."""
    return math.sqrt(v @ v)


def forcing_term(gnorm: float) -> float:
    """Relative residual at which an inexact Newton step is good enough: ``min(FORCING_CAP,
    sqrt(||g||))``,
    loose far from a solution and tending to 0 near one, which gives superlinear convergence
    (Dembo, Eisenstat & Steihaug 1982; N&W Theorem 7.2)."""
    return min(FORCING_CAP, np.sqrt(gnorm))


def negative_curvature(rayleigh: float, scale: float, margin: float) -> bool:
    """The negative-curvature test of every method: a Rayleigh quotient ``u^T H u / u^T u`` counts
    as negative curvature when it is at most ``margin * scale``, ``scale`` an estimate of
    ||H||_2, so the test does not depend on how f is scaled. A negative margin asks for clearly
    negative curvature, strictly below ``margin * scale``: zero curvature of a zero H (scale 0)
    is not negative, and a first-order point where H vanishes is a (non-strict) minimum to this
    test. A small positive margin also counts curvature within rounding of zero (a CG step along
    it would be rounding blown up). NaN is not negative curvature."""
    threshold = margin * scale
    return bool(rayleigh < threshold if margin < 0 else rayleigh <= threshold)


def clearly_negative(theta: float, scale: float) -> bool:
    """The second-order check at a first-order point: the leftmost curvature ``theta`` is below
    ``-SADDLE_CURVATURE * scale``, a saddle to leave rather than a minimum."""
    return negative_curvature(theta, scale, -SADDLE_CURVATURE)


# --- Lanczos ------------------------------------------------------------------------------------

class Lanczos:
    """Lanczos tridiagonalization of a symmetric operator, grown one step at a time (see the
    module docstring for the API).

    With a ``preconditioner`` M (``solve(r) = M^{-1} r``, M symmetric positive definite) it is the
    Lanczos process of M^{-1} H in the M inner product (CGT §5.2; GLTR §5): the basis vectors are
    M-orthonormal (``Q_k^T M Q_k = I``), ``Q_k^T H Q_k = T_k`` and ``H Q_k = M Q_k T_k + next_beta
    M q_{k+1} e_k^T``; the first is ``M^{-1} start`` scaled to M-norm 1, ``start_norm`` being
    ``sqrt(start^T M^{-1} start)``. A step costs one product and one solve with M; the vectors
    ``M q_j`` are kept next to the basis (for the recurrence and the reorthogonalization, without
    products with M), and ``residuals`` are Euclidean norms of ``H Q_k h - M Q_k T_k h``."""

    def __init__(self, matvec: Callable[[np.ndarray], np.ndarray], start: np.ndarray, *,
                 reorthogonalize: bool = True, breakdown: float = ROUNDING, preconditioner=None):
        start = np.asarray(start, dtype=float).reshape(-1)
        self._precondition = None if preconditioner is None else preconditioner.solve
        first = start if self._precondition is None else self._precondition(start)
        start_norm = norm(start) if self._precondition is None else math.sqrt(max(start @ first, 0.0))
        if not (np.isfinite(start_norm) and start_norm > 0):
            raise ValueError("the Lanczos start vector must be nonzero and finite")
        self.start_norm = start_norm
        self._matvec = matvec
        self._reorthogonalize, self._breakdown = reorthogonalize, breakdown
        self._scale = 0.0   # the largest ||H q_j||: a lower bound on ||H||_2
        self._basis = np.empty((min(start.size, 8), start.size))
        self._basis[0] = first / start_norm
        self._duals = self._basis   # the vectors M q_j (q_j themselves without a preconditioner)
        if self._precondition is not None:
            self._duals = np.empty_like(self._basis)
            self._duals[0] = start / start_norm
        self._dual_norm = 1.0       # ||M q_{k+1}||
        self._alpha: list[float] = []
        self._beta: list[float] = []
        self.exhausted = False

    @property
    def size(self) -> int:
        return len(self._alpha)

    @property
    def alpha(self) -> np.ndarray:
        return np.array(self._alpha)

    @property
    def beta(self) -> np.ndarray:
        return np.array(self._beta[:-1])

    def coefficients(self, k: int) -> tuple[float, float]:
        """``(alpha_k, beta_{k-1})``, T's diagonal entry k and its coupling to the entry before (0
        for k = 0), without building the arrays."""
        return self._alpha[k], self._beta[k - 1] if k else 0.0

    @property
    def next_beta(self) -> float:
        return 0.0 if self.exhausted or not self._beta else self._beta[-1]

    @property
    def residual_scale(self) -> float:
        """``||H Q_k h - M Q_k T_k h|| / |h_k|`` for any h: ``next_beta ||M q_{k+1}||`` (M = I:
        ``next_beta``)."""
        if self._precondition is None:
            return self.next_beta
        return self.next_beta * self._dual_norm

    @property
    def basis(self) -> np.ndarray:
        return self._basis[:self.size]

    def extend(self) -> None:
        if self.exhausted:
            raise RuntimeError("the Krylov space is exhausted: T_k is exact, no step is left")
        k = self.size
        q = self._basis[k]
        w = self._matvec(q)
        alpha = float(q @ w)
        self._alpha.append(alpha)
        previous = self._beta[-1] if k else 0.0
        duals = self._duals
        w = w - alpha * duals[k] if k == 0 else w - alpha * duals[k] - previous * duals[k - 1]
        if self._reorthogonalize:   # M-orthogonal to the basis: take out (q_j^T w) M q_j
            w = w - (self._basis[:k + 1] @ w) @ duals[:k + 1]
        if self._precondition is None:
            t, beta = w, norm(w)
        else:
            t = self._precondition(w)
            beta = math.sqrt(max(float(w @ t), 0.0))
        self._beta.append(beta)
        # ||H q_k||^2 = beta_{k-1}^2 + alpha_k^2 + beta_k^2, as H q_k = beta_{k-1} q_{k-1} +
        # alpha_k q_k + beta_k q_{k+1} with orthonormal q's: no product norm needed (with M: the
        # M-norm of M^{-1} H q_k)
        self._scale = max(self._scale, math.sqrt(previous * previous + alpha * alpha + beta * beta))
        if beta <= self._breakdown * self._scale or k + 1 == q.size:
            self.exhausted = True
            return
        if k + 1 == len(self._basis):
            self._basis = np.concatenate((self._basis, np.empty_like(self._basis)))[:q.size]
            self._duals = self._basis if self._precondition is None else \
                np.concatenate((self._duals, np.empty_like(self._duals)))[:q.size]
        self._basis[k + 1] = t / beta
        if self._precondition is not None:
            self._duals[k + 1] = w / beta
            self._dual_norm = norm(w) / beta

    def run(self, steps: int) -> Lanczos:
        while self.size < steps and not self.exhausted:
            self.extend()
        return self

    def combine(self, h: np.ndarray) -> np.ndarray:
        return self._basis[:len(h)].T @ h

    def ritz(self) -> tuple[np.ndarray, np.ndarray]:
        return eigh_tridiagonal(self.alpha, self.beta)

    def residuals(self, h: np.ndarray) -> np.ndarray | float:
        return self.residual_scale * np.abs(h[-1])


def leftmost_curvature(matvec: Callable, n: int, maxiter: int,
                       seed: int = 0) -> tuple[float, np.ndarray, float] | None:
    """The leftmost Ritz pair of H from Lanczos on a random start (fixed ``seed``), at most
    ``maxiter`` steps: ``(theta, u, scale)`` with u a unit vector, ``u^T H u = theta`` (so a
    negative theta is a genuine direction of negative curvature), and the largest Ritz magnitude
    as a scale. Stops early once theta < 0 has a residual of at most 10% of |theta|. None when a
    product is not finite (H has NaN/inf entries: there is no curvature to estimate)."""
    lanczos = Lanczos(matvec, np.random.default_rng(seed).standard_normal(n),
                      breakdown=PROBE_BREAKDOWN)
    while True:
        lanczos.extend()
        if not (np.isfinite(lanczos.alpha[-1]) and np.isfinite(lanczos.next_beta)):
            return None
        values, vectors = lanczos.ritz()
        theta, y = values[0], vectors[:, 0]
        converged = theta < 0 and lanczos.residuals(y) <= RITZ_RESIDUAL * abs(theta)
        if converged or lanczos.exhausted or lanczos.size >= maxiter:
            return float(theta), lanczos.combine(y), float(np.abs(values).max())


def dense_leftmost_curvature(H: np.ndarray) -> tuple[float, np.ndarray, float] | None:
    """``(lambda_1, u, max |lambda|)`` of a dense symmetric H: :func:`leftmost_curvature`, exact
    (None when H is not finite)."""
    if not np.all(np.isfinite(H)):
        return None
    values, vectors = symmetric_eigenpairs(H)
    return float(values[0]), vectors[:, 0], float(np.abs(values).max())


def symmetric_eigenpairs(H: np.ndarray, leftmost: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The eigenvalues (ascending) and eigenvectors (columns) of a finite symmetric float64 H, or
    with ``leftmost`` its leftmost pair alone: ``scipy.linalg.eigh(H)`` (``subset_by_index=[0,
    0]``) bit for bit, the same LAPACK driver (syevr on the lower triangle, with the workspace it
    asks for) called without eigh's validation, which costs several times the decomposition of a
    small H (the trust-exact subproblem and the second-order check ask for one each a few times a
    solve)."""
    n = H.shape[0]
    if n == 0:
        return eigh(H)
    work, iwork, info = dsyevr_lwork(n=n, lower=True)
    subset = {"range": "I", "il": 1, "iu": 1} if leftmost else {}
    if info == 0:
        values, vectors, found, _, info = dsyevr(H, compute_v=1, lower=True, lwork=int(work.real),
                                                 liwork=int(iwork.real), **subset)
    if info != 0:
        raise np.linalg.LinAlgError(f"syevr failed (info = {info})")
    return (values[:found], vectors[:, :found]) if leftmost else (values, vectors)


# --- conjugate gradients ------------------------------------------------------------------------

class CGStep(NamedTuple):
    """One CG segment ``start + tau direction``, 0 <= tau <= length, and the model along it.
    ``metric``: ``(start^T M start, start^T M direction, direction^T M direction)`` for the norm
    of a preconditioner M (None: the Euclidean norm, from the vectors)."""
    start: np.ndarray
    direction: np.ndarray
    value: float        # phi(start)
    slope: float        # grad phi(start)^T direction = r^T d
    curvature: float    # direction^T A direction
    length: float       # CG step length; inf when the direction has non-positive curvature
    end: np.ndarray | None   # start + length direction (None with non-positive curvature)
    metric: tuple[float, float, float] | None = None

    @property
    def end_norm(self) -> float:
        """||start + length direction|| in the segment's norm (inf with non-positive curvature)."""
        if self.end is None:
            return np.inf
        if self.metric is None:
            return norm(self.end)
        ss, sd, dd = self.metric
        return math.sqrt(max(ss + self.length * (2.0 * sd + self.length * dd), 0.0))

    def crossings(self, radius: float) -> tuple[float, float]:
        """Both roots ``tau_minus <= tau_plus`` of ``||start + tau direction|| = radius`` in the
        segment's norm (``||start|| <= radius``)."""
        if self.metric is None:
            s, d = self.start, self.direction
            return sphere_crossings(s @ s, s @ d, d @ d, radius)
        return sphere_crossings(*self.metric, radius)

    def model(self, tau: float) -> float:
        return self.value + tau * self.slope + 0.5 * tau * tau * self.curvature


def sphere_crossings(pp: float, pd: float, dd: float, radius: float) -> tuple[float, float]:
    """Both roots ``tau_minus <= tau_plus`` of ``||p + tau d|| = radius`` in any inner product,
    from ``pp = <p, p>``, ``pd = <p, d>`` and ``dd = <d, d>`` (``||p|| <= radius``)."""
    a, b, c = dd, 2.0 * pd, pp - radius * radius
    root = np.sqrt(max(b * b - 4.0 * a * c, 0.0))
    q = -0.5 * (b + np.copysign(root, b))  # no cancellation between b and the root
    if q == 0.0:  # p = 0 on a zero radius
        return 0.0, 0.0
    roots = q / a, c / q
    return min(roots), max(roots)


class ConjugateGradient:
    """Conjugate gradients on ``A p = -g``, A = H + shift I (Hestenes & Stiefel 1952; N&W
    Algorithm 5.2), one step at a time (see the module docstring for the API); with a
    ``preconditioner`` M (an object whose ``solve(r)`` is ``M^{-1} r``, M symmetric positive
    definite), preconditioned CG (N&W Algorithm 5.3).

    Starts from ``p0`` when that is a better start than 0 (``phi(p0) < 0`` and ``p0^T A p0 > 0``;
    one product), else from 0. A step costs one product and eight vector operations, as the
    textbook recurrence, done in place: the model value, the slope ``r^T d`` and ``||d||^2``
    follow from the recurrence's scalars (``phi`` falls by ``alpha ||r||^2 / 2``, ``r^T d =
    -||r||^2`` and ``||d_{k+1}||^2 = ||r_{k+1}||^2 + beta^2 ||d_k||^2`` in exact arithmetic, by
    the orthogonality of r_{k+1} to d_k; Hestenes & Stiefel 1952, §5), and ``pAp = p^T (r - g)``
    is formed only when asked. With ``keep_segments=False`` a returned segment's arrays are the
    live p and d, valid until the next step (for callers that keep no segment).

    Preconditioned, the search directions are ``d = -z + beta d`` with ``z = M^{-1} r``, ``r^T z``
    takes the place of ``||r||^2`` in the recurrences, ``dd`` is ``d^T M d`` (curvature is then
    judged relative to the preconditioned operator's, ``d^T A d / d^T M d``: its sign is what it
    was), and the M-norms ``pp = p^T M p`` and ``pd = p^T M d`` of the iterates follow from
    recurrences with no product with M (Steihaug 1983; CGT §7.5.1), for a trust region measured
    in M's norm; each step's segment carries them (``metric``). ``rr`` stays the true residual's
    ``||r||^2``, for the inexact-Newton test. A warm start ``p0`` takes no preconditioner.
    """

    def __init__(self, matvec: Callable[[np.ndarray], np.ndarray], g: np.ndarray, *,
                 shift: float = 0.0, p0: np.ndarray | None = None,
                 curvature_margin: float = LINE_SEARCH_CG_MARGIN, keep_segments: bool = True,
                 preconditioner=None):
        self.product = (lambda v: matvec(v) + shift * v) if shift else matvec
        self._g, self._margin, self._keep = g, curvature_margin, keep_segments
        self._precondition = None if preconditioner is None else preconditioner.solve
        if self._precondition is not None and p0 is not None and p0.any():
            raise ValueError("a warm start p0 takes no preconditioner: the M-norms of the iterates "
                             "follow from recurrences from p = 0")
        self._scratch = np.empty_like(g)
        self.p, self.r, self.value = np.zeros_like(g), g.copy(), 0.0
        if p0 is not None and p0.any():
            a_p0 = self.product(p0)
            value = g @ p0 + 0.5 * p0 @ a_p0
            if p0 @ a_p0 > 0 and value < 0:
                self.p, self.r, self.value = p0.copy(), a_p0 + g, float(value)
        self.d, self.rr = -self.r, float(self.r @ self.r)
        self.rz, self.pp, self.pd = self.rr, 0.0, 0.0
        if self._precondition is not None:
            z = self._precondition(self.r)
            self.d, self.rz = -z, float(self.r @ z)
        self.dd = self.rz
        self.kappa = 0.0    # the largest |d^T A d| / d^T M d seen: the operator's scale
        self.iterations = 0
        self.negative_curvature = False

    @property
    def pAp(self) -> float:
        return float(self.p @ (self.r - self._g))

    def step(self) -> CGStep:
        if self.negative_curvature:
            raise RuntimeError("CG met non-positive curvature; it cannot step further")
        p, r, d, rz, dd = self.p, self.r, self.d, self.rz, self.dd
        ad = self.product(d)
        dad = float(d @ ad)
        self.kappa = max(self.kappa, abs(dad) / dd)
        metric = None if self._precondition is None else (self.pp, self.pd, dd)
        if negative_curvature(dad / dd, self.kappa, self._margin):
            self.negative_curvature = True
            return CGStep(p, d, self.value, -rz, dad, np.inf, None, metric)
        alpha = rz / dad
        segment = p, d
        if self._keep:   # the segment keeps p and d: update copies
            p, d = p.copy(), d.copy()
        # in place, rounded as p + alpha d, r + alpha A d and beta d - z (= -z + beta d)
        p += np.multiply(d, alpha, out=self._scratch)
        r += np.multiply(ad, alpha, out=self._scratch)
        self.p, self.rr = p, float(r @ r)
        z = r
        if self._precondition is None:
            self.rz = self.rr
        else:
            z = self._precondition(r)
            self.rz = float(r @ z)
        beta = self.rz / rz
        if metric is not None:   # p_{k+1} = p_k + alpha d_k, and p_{k+1}^T M d_{k+1} = beta
            pp, pd = metric[0], metric[1]   # p_{k+1}^T M d_k since p_{k+1}^T r_{k+1} = 0
            self.pp, self.pd = pp + alpha * (2.0 * pd + alpha * dd), beta * (pd + alpha * dd)
        d *= beta
        d -= z
        self.d, self.dd = d, self.rz + beta * beta * dd
        value, self.value = self.value, self.value - 0.5 * alpha * rz
        self.iterations += 1
        return CGStep(*segment, value, -rz, dad, alpha, p, metric)
