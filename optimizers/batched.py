"""Trust-exact over a batch of small problems at once: every start advanced together, each
iteration a fixed handful of NumPy calls on stacked arrays.

:func:`minimize_batch` runs, for each row of ``X0``, the algorithm of the trust-exact method
(:func:`optimizers.trust_region.minimize_trust_exact`: N&W Algorithm 4.1 with nearly exact
subproblems, its radius rules, acceptance test, stopping test, second-order check and saddle
escape, its defaults and its statuses and messages), but on all the starts still running
together: one call of ``evaluate`` per iteration gives f, the gradient and the Hessian at every
running row's trial point, and the subproblems of all rows are solved by the same few array
operations. Thousands of fits of two to ten parameters then cost what their derivatives cost, not
a Python loop's fixed cost per iteration and start (about 0.2 ms, against a few microseconds a
row here).

The subproblem of each row, ``min g^T p + 1/2 p^T H p`` subject to ``||p|| <= radius``, is solved
as Moré & Sorensen solve it (J. J. Moré and D. C. Sorensen, "Computing a trust region step",
SIAM J. Sci. Stat. Comput. 4 (1983); Nocedal & Wright, *Numerical Optimization*, 2nd ed., §4.3):

- Newton's step ``-H^{-1} g`` when H is positive definite and the step lies in the region,
  from a Cholesky factorization of every row's H, done column by column on all rows at once
  (:func:`newton_steps`), which also tells each row's definiteness without raising;
- otherwise, from the eigendecomposition ``H = Q diag(lambda) Q^T`` (``numpy.linalg.eigh`` on
  the stacked Hessians, once per iterate, kept while the radius shrinks), ``p(lam) = -Q
  (diag(lambda) + lam I)^{-1} Q^T g`` with lam solving the secular equation ``||p(lam)|| =
  radius`` by Newton's method on ``1/||p(lam)|| - 1/radius``, safeguarded and vectorized over
  the rows (:func:`secular_steps`); in the hard case (g orthogonal to the leftmost eigenvector u,
  ``||p(-lambda_1)|| < radius``) the step is completed along u to the boundary (N&W §4.3.1).

What differs from a loop of trust-exact runs, and why:

- ``evaluate`` gives f, g and H together at every trial point, so a rejected trial's g and H are
  computed too: ``nfev`` counts as trust-exact's does (one per trial and one at x0), and ``njev``
  and ``nhev`` equal it (trust-exact evaluates g only at promising trials, H only at accepted
  points).
- A trial point where g or H is not finite is rejected and the radius shrinks, as trust-exact
  does for a non-finite f (trust-exact accepts a trial with a finite g and a non-finite H and then
  stops there: the batch recovers).
- The Hessian's matrix is used dense, without trust-exact's rounding-level shift of a singular
  semidefinite H (its Cholesky factorization is the plain one; such an H takes the boundary path),
  and the second-order check's scale is ``max |lambda_i|`` (trust-exact's dense check's too).
- There is no history, no callback, no ``disp`` and no sparse Hessian; the second-order check is
  always on (trust-exact's ``check_second_order=True``).

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006, ch. 4;
J. J. Moré and D. C. Sorensen 1983 (above); G. H. Golub and C. F. Van Loan, *Matrix
Computations*, 4th ed., 2013, Algorithm 4.2.2 (Cholesky, column by column).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

from .krylov import EPS, SADDLE_CURVATURE
from .loop import (
    MAXITER_AT_SADDLE,
    NONFINITE_HESSIAN_AT_STATIONARY_POINT,
    ended_with_test,
    iteration_cap,
    unusable_start,
)
from .objective import MESSAGES, Status
from .stopping import GradientTest, noises
from .trust_region import (
    _COLLAPSED,
    _NONFINITE_STEP,
    ETA,
    RadiusControl,
    backtrack_fractions,
    default_maxiter,
    negligible_rows,
    reduction_ratios,
)

# The secular equation is solved to ||p|| = radius (1 +- SECULAR_RTOL), as trust-exact's
# MoreSorensen solves it; Newton's method from the left of the root converges quadratically,
# and the cap only bounds iterations that rounding keeps going.
SECULAR_RTOL, SECULAR_MAXITER = 1e-8, 100
RUNNING = -1   # the status of a row still iterating


def minimize_batch(evaluate: Callable[[np.ndarray], tuple], X0, *, gtol: float | None = None,
                   maxiter: int | None = None, initial_trust_radius: float | None = None,
                   max_trust_radius: float | None = None, eta: float = ETA,
                   indexed: bool = False) -> list[OptimizeResult]:
    """Minimize B small problems from the rows of ``X0`` at once with trust-exact's algorithm
    (see the module docstring).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(X) -> (f, g, H)``: for X of shape (m, n), the points of the m <= B rows still
        running (in the order of ``X0``'s rows, any subset of them), their values (m,), gradients
        (m, n) and Hessians (m, n, n). Rows may hold NaN or inf. With ``indexed``,
        ``evaluate(X, rows)``: ``rows`` (m,) are the indices of X's rows in ``X0`` (fits whose data
        differ by row).
    X0 : array_like, shape (B, n)
        The start points, finite, one a row.
    gtol : float, optional
        Stop a row when ``||g||_inf <= gtol``; default None: trust-exact's relative test
        ``max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-8`` (:mod:`optimizers.stopping`).
    maxiter : int, optional
        Iterations (trial steps) per row; default trust-exact's ``max(1000, 200 n)``; 0 or less:
        none.
    initial_trust_radius : float, optional
        Default per row ``min(||g0||, max(1, ||x0||))`` (1 where g0 = 0), trust-exact's.
    max_trust_radius : float, optional
        Default per row ``1e10 max(1, ||x0||)``, trust-exact's.
    eta : float
        Accept a step when the reduction ratio exceeds eta, in [0, 0.25); default 0.15.
    indexed : bool
        Call ``evaluate(X, rows)`` instead of ``evaluate(X)``.

    Returns
    -------
    list of OptimizeResult
        One per row, in order: ``x, fun, jac, hess`` (at x), ``nit, nfev, njev, nhev, status,
        success, message``, as trust-exact's results (its statuses and messages: 0 success, 1
        maxiter, 2 no progress at working precision, 3 non-finite values (also f or g not finite
        at x0), 5 saddle point), without a history: a failed row reports the best point it saw.

    Raises
    ------
    ValueError
        For X0 not a finite 2-D array, bad options, or ``evaluate`` giving arrays of other shapes.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.batched import minimize_batch
    >>> def evaluate(X):   # f = sum((x - 1)^4 + x^2) per row
    ...     return (((X - 1) ** 4 + X ** 2).sum(axis=1), 4 * (X - 1) ** 3 + 2 * X,
    ...             np.einsum("mi,ij->mij", 12 * (X - 1) ** 2 + 2, np.eye(X.shape[1])))
    >>> results = minimize_batch(evaluate, [[0.0, 3.0], [5.0, -2.0]])
    >>> [bool(r.success) for r in results], results[1].x.round(6)
    ([True, True], array([0.410245, 0.410245]))
    """
    X0 = _starts(X0)
    for name, value in [("initial_trust_radius", initial_trust_radius), ("max_trust_radius", max_trust_radius)]:
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if not 0.0 <= eta < 0.25:
        raise ValueError(f"eta must be in [0, 0.25), got {eta}")
    test = GradientTest(gtol)
    cap = iteration_cap(maxiter, default_maxiter, X0.shape[1])
    if indexed:
        call = evaluate
    else:
        def call(X: np.ndarray, rows: np.ndarray) -> tuple:
            return evaluate(X)
    batch = _Batch(X0, *_evaluated(call, X0, np.arange(len(X0))), test=test, eta=eta)
    batch.set_radii(initial_trust_radius, max_trust_radius)
    running = np.flatnonzero(batch.status == RUNNING)
    batch.arrive(running, batch.x[running], batch.f[running], batch.g[running], batch.hess[running])
    while (rows := np.flatnonzero(batch.status == RUNNING)).size:
        batch.iterate(rows, cap, call)
    return batch.results()


def _starts(X0) -> np.ndarray:
    """X0 as a float (B, n) array (its own copy).

    Raises
    ------
    ValueError
        If it is not 2-D with n >= 1, or has NaN or inf.
    """
    X0 = np.array(X0, dtype=float)
    if X0.ndim != 2 or X0.shape[1] == 0:
        raise ValueError(f"X0 must be a 2-D array of start points (B, n) with n >= 1, got shape {X0.shape}")
    bad = np.flatnonzero(~np.isfinite(X0).all(axis=1))
    if bad.size:
        raise ValueError(f"X0 contains NaN or inf (rows {bad[:10].tolist()})")
    return X0


def _evaluated(evaluate: Callable, X: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``evaluate(X, rows)`` as float arrays of the shapes (m,), (m, n), (m, n, n), H symmetrized (as
    trust-exact's objective symmetrizes it).

    Raises
    ------
    ValueError
        If ``evaluate`` does not give three arrays of those shapes.
    """
    m, n = X.shape
    values = evaluate(X, rows)
    if not isinstance(values, (tuple, list)) or len(values) != 3:
        raise ValueError("evaluate(X) must return a tuple (f, g, H)")
    expected = {"f": (m,), "g": (m, n), "H": (m, n, n)}
    F, G, H = (np.asarray(v, dtype=float) for v in values)
    for (name, shape), array in zip(expected.items(), (F, G, H)):
        if array.shape != shape:
            raise ValueError(f"evaluate(X) for X of shape {X.shape} gave {name} of shape {array.shape}, "
                             f"expected {shape}")
    symmetric = np.add(H, H.transpose(0, 2, 1))
    symmetric *= 0.5
    return F, G, symmetric


def _norms(V: np.ndarray) -> np.ndarray:
    """The Euclidean norm of each row."""
    return np.sqrt(np.einsum("mi,mi->m", V, V))


def newton_steps(H: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton's steps ``-H^{-1} g`` of every row and whether each H is positive definite.

    The Cholesky factorization ``H = L L^T`` column by column (Golub & Van Loan, Alg. 4.2.2), on
    all rows at once with the rows on the last axis, so that each operation runs over contiguous
    memory: for n up to 10 this is as fast as LAPACK called once per matrix (``numpy.linalg``'s
    batched routines) and, unlike them, tells each row's definiteness instead of raising. Only
    the lower triangle is read and updated. A row whose pivot is not positive is not definite
    (its step is then meaningless).
    """
    n = G.shape[1]
    factor = np.ascontiguousarray(H.transpose(1, 2, 0))
    definite = np.ones(len(G), dtype=bool)
    step = -G.T.copy()
    with np.errstate(all="ignore"):
        for k in range(n):
            definite &= factor[k, k] > 0
            factor[k:, k] /= np.sqrt(factor[k, k])
            column = factor[k + 1:, k]
            for i in range(k + 1, n):   # the lower triangle only
                factor[i, k + 1:i + 1] -= column[i - k - 1] * column[:i - k]
        for k in range(n):   # L y = -g
            step[k] = (step[k] - (factor[k, :k] * step[:k]).sum(axis=0)) / factor[k, k]
        for k in reversed(range(n)):   # L^T p = y
            step[k] = (step[k] - (factor[k + 1:, k] * step[k + 1:]).sum(axis=0)) / factor[k, k]
    return step.T, definite


def secular_steps(values: np.ndarray, coefficients: np.ndarray, radius: np.ndarray,
                  rtol: float = SECULAR_RTOL, maxiter: int = SECULAR_MAXITER) -> tuple[np.ndarray, np.ndarray]:
    """The trust-region steps of rows whose Newton step did not fit or whose H was not found
    definite, in the eigenbasis: ``(a, lam)`` with the step ``p = Q a``, ``a = -(diag(values) +
    lam I)^{-1} coefficients``, ``coefficients = Q^T g``; lam = 0 and a inside the region, or
    ``||a|| = radius`` (to ``rtol``) with lam >= max(0, -lambda_1); in the hard case ``lam =
    -lambda_1`` and a completed along the leftmost eigenvector (:func:`_hard_case`).

    Newton's method on ``phi(lam) = 1/||a(lam)|| - 1/radius``, concave and increasing right of
    ``-lambda_1`` (Moré & Sorensen 1983; N&W Alg. 4.3), from ``lam0 = max(0, -lambda_1, max_i
    |c_i| / radius - lambda_i, ||g|| / radius - lambda_n)``, a lower bound of the root (each term
    is where one component alone, or the whole gradient over the largest eigenvalue, reaches the
    radius), so its iterates rise monotonically to the root; an iterate that rounding puts right
    of the root and whose Newton step falls left of the bracket's lower end is bisected instead.
    ``values`` ascend in each row (``numpy.linalg.eigh``'s order). A semidefinite H's eigenvalues
    within rounding of zero (``|lambda_i| <= n eps max |lambda|``, none clearly negative) are
    lifted to twice that, as trust-exact's factorization lifts such pivots
    (:func:`~optimizers.sparse.rounding_shift`): on a singular H, Newton's step on its range
    plus, along its null space, the gradient's rounding error over the lift.
    """
    rounding = values.shape[1] * EPS * np.abs(values).max(axis=1, keepdims=True)
    values = np.where((values[:, :1] >= -rounding) & (values <= rounding), 2.0 * rounding, values)
    lowest = values[:, 0]
    hard, a_hard = _hard_case(values, coefficients, radius, rtol)
    lower = np.maximum(0.0, -lowest)
    with np.errstate(all="ignore"):
        lam = np.maximum(lower, np.maximum((np.abs(coefficients) / radius[:, None] - values).max(axis=1),
                                           _norms(coefficients) / radius - values[:, -1]))
        for _ in range(maxiter):
            shifted = values + lam[:, None]
            a = np.divide(-coefficients, shifted, out=np.zeros_like(coefficients), where=coefficients != 0)
            a_norm = _norms(a)
            inside = (lam == 0) & (a_norm <= radius)
            running = (np.abs(a_norm - radius) > rtol * radius) & ~inside & ~hard
            if not running.any():
                break
            lower = np.where(a_norm > radius, np.maximum(lower, lam), lower)
            newton = lam + a_norm ** 2 / (a * a / shifted).sum(axis=1) * (a_norm - radius) / radius
            newton = np.where(newton > lower, newton, 0.5 * (lower + lam))
            lam = np.where(running, newton, lam)
        a *= np.minimum(1.0, radius / a_norm)[:, None]
    a[hard], lam[hard] = a_hard[hard], -lowest[hard]
    return a, lam


def _hard_case(values: np.ndarray, coefficients: np.ndarray, radius: np.ndarray,
               rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """Which rows are the hard case, and their steps: lambda_1 < 0, g orthogonal to the leftmost
    eigenvector u (``|u^T g| <= rtol ||g||``, trust-exact's test) and the step ``a_perp`` of
    ``lam = -lambda_1`` on the other eigenvectors inside the region; the step is then ``a_perp +
    tau u`` on the boundary, tau's sign the one that makes ``tau u^T g <= 0`` (N&W §4.3.1)."""
    lowest, along = values[:, 0], coefficients[:, 0]
    with np.errstate(all="ignore"):
        perpendicular = -coefficients / (values - lowest[:, None])
        perpendicular[:, 0] = 0.0
        perpendicular_norm = _norms(perpendicular)
        hard = ((lowest < 0) & (np.abs(along) <= rtol * _norms(coefficients))
                & (perpendicular_norm < radius))
        perpendicular[:, 0] = (np.sqrt(radius ** 2 - perpendicular_norm ** 2)
                               * np.where(along <= 0, 1.0, -1.0))
    return hard, perpendicular


class _Batch:
    """Every row's state: its iterate (x, f, g, H), radius and cap, iterations, evaluations,
    status (:data:`RUNNING` until it stops) and message, whether it is leaving a saddle, whether
    its last trial was finite, the best point it saw; and its model at the iterate: Newton's step
    with H's definiteness, and the eigendecomposition once a boundary step or the second-order
    check needs it."""

    def __init__(self, X0: np.ndarray, F: np.ndarray, G: np.ndarray, H: np.ndarray, *,
                 test: GradientTest, eta: float):
        B, n = X0.shape
        self.test, self.eta = test, eta
        self.x, self.f, self.g, self.hess = X0, F, G, H
        self.nit, self.nev = np.zeros(B, dtype=int), np.ones(B, dtype=int)
        self.status, self.messages = np.full(B, RUNNING), {}
        self.saddle, self.finite_trial = np.zeros(B, dtype=bool), np.ones(B, dtype=bool)
        self.best_x, self.best_g, self.best_hess = X0.copy(), G.copy(), H.copy()
        self.best_f = np.where(F < np.inf, F, np.inf)   # NaN is never the best
        self.newton, self.definite = np.empty((B, n)), np.zeros(B, dtype=bool)
        self.values, self.vectors, self.coefficients = np.empty((B, n)), np.empty((B, n, n)), np.empty((B, n))
        self.decomposed = np.zeros(B, dtype=bool)
        self.radius = self.limit = None
        usable = np.isfinite(F) & np.isfinite(G).all(axis=1)
        for row in np.flatnonzero(~usable):
            self._stop(row, Status.NONFINITE, unusable_start(F[row]))

    def set_radii(self, initial: float | None, limit: float | None) -> None:
        """The first radius and the cap of every row: the given ones, or trust-exact's
        (:func:`~optimizers.trust_region.trust_region_step`)."""
        x_scale = np.maximum(1.0, _norms(self.x))
        with np.errstate(invalid="ignore"):
            first = np.minimum(_norms(self.g), x_scale)
        self.radius = np.full(len(self.x), initial) if initial else np.where(first > 0, first, 1.0)
        self.limit = np.full(len(self.x), limit) if limit else 1e10 * x_scale

    def _stop(self, rows, status: Status, message: str | None = None) -> None:
        self.status[rows] = status
        if message is not None:
            for row in np.atleast_1d(rows):
                self.messages[int(row)] = message

    def _remember_best(self, rows: np.ndarray, X: np.ndarray, F: np.ndarray, G: np.ndarray, H: np.ndarray,
                       accepted: np.ndarray) -> None:
        """The lowest f seen in each row (NaN never compares lower) and its point, after the trials
        ``(X, F, G, H)`` of ``rows``. The point is written only where it may be needed: while an
        iterate's f is the lowest, the iterate is the best point, so only a lower rejected trial
        is kept, and an iterate left for a point that is not lower (an accepted step may raise f
        within rounding)."""
        best_f = self.best_f[rows]
        better = F < best_f
        left = rows[accepted & ~better & (best_f == self.f[rows])]
        self.best_x[left], self.best_g[left], self.best_hess[left] = self.x[left], self.g[left], self.hess[left]
        kept = better & ~accepted
        self.best_x[rows[kept]], self.best_g[rows[kept]], self.best_hess[rows[kept]] = X[kept], G[kept], H[kept]
        self.best_f[rows] = np.where(better, F, best_f)

    def _decompose(self, rows: np.ndarray) -> None:
        """The eigendecomposition of the rows' Hessians that lack it, and g in its basis."""
        rows = rows[~self.decomposed[rows]]
        if rows.size:
            values, vectors = np.linalg.eigh(self.hess[rows])
            self.values[rows], self.vectors[rows] = values, vectors
            self.coefficients[rows] = np.einsum("mji,mj->mi", vectors, self.g[rows])
            self.decomposed[rows] = True

    def arrive(self, rows: np.ndarray, X: np.ndarray, F: np.ndarray, G: np.ndarray, H: np.ndarray) -> None:
        """The rows moved to new iterates ``(X, F, G, H)`` (or their starts): the iterates, their
        model, and the stopping test there (the gradient test, then the second-order check: at
        clearly negative curvature, a saddle to leave; where H is not finite no check is
        possible)."""
        for state, new in ((self.x, X), (self.f, F), (self.g, G), (self.hess, H)):
            state[rows] = new
        self.newton[rows], self.definite[rows] = newton_steps(H, G)
        self.decomposed[rows] = False
        passed = self.test.measures(X, F, G) <= self.test.tolerance
        self.saddle[rows] = False
        self._stop(rows[passed & self.definite[rows]], Status.SUCCESS)
        rows = rows[passed & ~self.definite[rows]]
        finite = np.isfinite(self.hess[rows]).all(axis=(1, 2))
        self._stop(rows[~finite], Status.NONFINITE, NONFINITE_HESSIAN_AT_STATIONARY_POINT)
        rows = rows[finite]
        self._decompose(rows)
        values = self.values[rows]
        curvature = values[:, 0]
        saddle = curvature < -SADDLE_CURVATURE * np.abs(values).max(axis=1)   # clearly_negative
        self._stop(rows[~saddle], Status.SUCCESS)
        rows, curvature = rows[saddle], curvature[saddle]
        self.saddle[rows] = True
        # leave along the curvature with a decrease above rounding (RadiusControl.leave_saddle)
        self.radius[rows] = RadiusControl.left_saddle(self.radius[rows], self.limit[rows], self.f[rows], curvature)

    def steps(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows' trust-region steps ``(P, decrease, on_boundary)``: Newton's step where H is
        positive definite and it fits; else the boundary step of :func:`secular_steps`; at a
        saddle the step ``radius u`` along the leftmost eigenvector, turned downhill (the model
        without its linear term, as trust-exact's)."""
        radius, newton = self.radius[rows], self.newton[rows]
        inside = self.definite[rows] & ~self.saddle[rows] & (_norms(newton) <= radius)
        P, on_boundary = newton.copy(), np.zeros(rows.size, dtype=bool)
        decrease = -0.5 * np.einsum("mi,mi->m", self.g[rows], newton)
        boundary = rows[~inside]
        if boundary.size:
            self._decompose(boundary)
            values, coefficients = self.values[boundary], self.coefficients[boundary]
            a, lam = secular_steps(values, coefficients, radius[~inside])
            saddle = self.saddle[boundary]
            a[saddle] = 0.0
            a[saddle, 0] = radius[~inside][saddle]
            lam[saddle] = -values[saddle, 0]
            slope = np.einsum("mi,mi->m", coefficients, a)
            a[saddle & (slope > 0)] *= -1.0
            slope = np.where(saddle, -np.abs(slope), slope)
            P[~inside] = np.matmul(self.vectors[boundary], a[:, :, None])[:, :, 0]
            decrease[~inside] = -(slope + 0.5 * np.einsum("mi,mi->m", values, a * a))
            on_boundary[~inside] = lam > 0
        return P, decrease, on_boundary

    def iterate(self, rows: np.ndarray, cap: int, evaluate: Callable) -> None:
        """One trial of every running row, in trust-exact's order: the iteration cap; the step
        (none where H is not finite at x0, or where it is negligible: the radius collapsed); one
        ``evaluate(X, rows)`` at all trial points; acceptance and the radius; the test at the new
        iterates."""
        capped = rows[self.nit[rows] >= cap]
        self._stop(capped[~self.saddle[capped]], Status.MAXITER)
        self._stop(capped[self.saddle[capped]], Status.MAXITER, MAXITER_AT_SADDLE)
        rows = rows[self.nit[rows] < cap]
        starting = rows[self.nit[rows] == 0]
        broken = starting[~np.isfinite(self.hess[starting]).all(axis=(1, 2))]
        self._stop(broken, Status.NONFINITE, _NONFINITE_STEP)
        rows = np.setdiff1d(rows, broken, assume_unique=True) if broken.size else rows
        P, decrease, on_boundary = self.steps(rows)
        p_norm = _norms(P)
        collapsed = negligible_rows(P, p_norm, self.x[rows])
        for row in rows[collapsed]:
            status = (Status.NONFINITE if not self.finite_trial[row]
                      else Status.NOT_A_MINIMUM if self.saddle[row] else Status.PRECISION_LOSS)
            message = _COLLAPSED.get(status)
            self._stop(row, status, message and message.format(name="radius", value=self.radius[row]))
        rows, P, p_norm, decrease, on_boundary = (rows[~collapsed], P[~collapsed], p_norm[~collapsed],
                                                  decrease[~collapsed], on_boundary[~collapsed])
        if not rows.size:
            return
        X = self.x[rows] + P
        F, G, H = _evaluated(evaluate, X, rows)
        self.nit[rows] += 1
        self.nev[rows] += 1
        accepted = self._judge(rows, P, p_norm, decrease, on_boundary, F, G, H)
        self._remember_best(rows, X, F, G, H, accepted)
        self.arrive(rows[accepted], X[accepted], F[accepted], G[accepted], H[accepted])

    def _judge(self, rows: np.ndarray, P: np.ndarray, p_norm: np.ndarray, decrease: np.ndarray,
               on_boundary: np.ndarray, F: np.ndarray, G: np.ndarray, H: np.ndarray) -> np.ndarray:
        """Which trials are accepted, and the rows' new radii: trust-exact's reduction ratio
        (:func:`~optimizers.trust_region.reduction_ratio`), acceptance (``_acceptable``, monotone;
        here a g or H that is not finite rejects too) and radius update
        (:class:`~optimizers.trust_region.RadiusControl` with
        :func:`~optimizers.trust_region.backtrack_fraction`), row by row."""
        f, g = self.f[rows], self.g[rows]
        rho = reduction_ratios(f, F, decrease)
        promising = rho > self.eta
        derivatives = np.isfinite(G).all(axis=1) & np.isfinite(H).all(axis=(1, 2))
        self.finite_trial[rows] = np.isfinite(F) & (~promising | derivatives)
        with np.errstate(invalid="ignore", over="ignore"):
            accepted = promising & derivatives & ((F < f) | ((F <= f + noises(f)) & (_norms(G) < _norms(g))))
        backtrack = backtrack_fractions(f, F, np.einsum("mi,mi->m", g, P))
        self.radius[rows] = RadiusControl.updated(self.radius[rows], self.limit[rows], np.where(accepted, rho, -np.inf),
                                                  on_boundary, p_norm, backtrack)
        return accepted

    def results(self) -> list[OptimizeResult]:
        """Each row's OptimizeResult: its iterate, or where it failed the best point it saw when
        that is lower and its gradient finite (:func:`~optimizers.loop.final_point`); the
        status's message ended with the gradient test (:func:`~optimizers.loop.with_gradient_norm`,
        its numbers computed for all rows at once). The arrays of the results are rows of one
        array each."""
        best = ((self.status != Status.SUCCESS) & (self.best_f < self.f) & np.isfinite(self.best_g).all(axis=1))
        X, F, G = (np.where(best[:, None], self.best_x, self.x), np.where(best, self.best_f, self.f),
                   np.where(best[:, None], self.best_g, self.g))
        H = np.where(best[:, None, None], self.best_hess, self.hess)
        with np.errstate(invalid="ignore"):
            gnorms, measures = np.abs(G).max(axis=1).tolist(), self.test.measures(X, F, G).tolist()
        statuses = {status.value: status for status in Status}
        results = []
        for row, (code, nit, evaluations) in enumerate(zip(self.status.tolist(), self.nit.tolist(),
                                                           self.nev.tolist())):
            status = statuses[code]
            message = ended_with_test(self.messages.get(row) or MESSAGES[status], gnorms[row],
                                      self.test.wording(measures[row]))
            results.append(OptimizeResult(x=X[row], fun=float(F[row]), jac=G[row], hess=H[row], nit=nit,
                                          nfev=evaluations, njev=evaluations, nhev=evaluations, status=status,
                                          success=status == Status.SUCCESS, message=message))
        return results
