"""One barrier method, for every problem in the form ``min f(w) s.t. C(w) = 0, lower <= w <= upper``:
the iterations of A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter
line-search algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57 (W&B),
Algorithm A, on a problem of :mod:`optimizers.equality_form`.

:class:`BarrierSolver` keeps a primal-dual iterate ``(w, y, z_L, z_U)`` with f, C, the gradient and
the Jacobian there, and the barrier parameter mu, the filter and the inertia correction's memory.
:meth:`BarrierSolver.iterate` is one iteration:

- A-3, the barrier update (:class:`MonotoneUpdate`, or :mod:`optimizers.barrier_update`'s
  adaptive one); the monotone one is §2.1's Fiacco-McCormick rule: while the barrier problem's
  error ``E_mu <= kappa_eps mu`` (eq. (7)), ``mu <- max(tol / 10, min(kappa_mu mu, mu^theta_mu))``
  (eq. (7)), ``tau = max(tau_min, 1 - mu)``, and the filter is emptied;
- A-4, the search direction: the primal-dual system of :mod:`optimizers.kkt` (eq. (13), the bound
  multipliers' steps by (11)), its inertia corrected (§3.1); a step too small to change w at
  working precision is taken whole and forces the next decrease of mu (IPOPT's tiny step);
- A-5, the backtracking line search from the fraction-to-the-boundary step (15a), each trial
  judged by the filter's tests (:mod:`optimizers.filter`); when the first trial is refused and
  raised theta, up to four second-order corrections (§2.4, eq. (27)) with the same factorization;
  trial points where f or C is not finite are refused like any other, and every trial lies
  strictly inside the bounds, so f and C are never evaluated on or beyond one;
- A-6 to A-8, the new iterate: the multipliers y along the primal step, z along the dual
  fraction-to-the-boundary step (15b), then kept near ``mu / slack`` by (16); the filter augmented
  unless the step was an f-type one.

Where no step is acceptable above alpha_min (23), IPOPT's soft restoration phase comes first: the
step to the fraction to the boundary is taken if it reduces the barrier problem's error, for up to
ten iterations until one also passes the filter's tests. The iteration answers ``"accepted"``, or
``"restoration"`` when that fails too or the inertia correction gave up: the caller then runs the
restoration phase (§3.3, :mod:`optimizers.interior_point`), itself a :class:`BarrierSolver` on
the restoration problem. How mu moves is the barrier update's (:mod:`optimizers.barrier_update`:
monotone, or adaptive).

The optimality error (eq. (5)) scales the dual residual and the complementarity by ``s_d`` and
``s_c`` (eq. (6), ``s_max = 100``), so that large multipliers of a degenerate problem do not hold up
the test: ``E_0 <= tol`` is the run's success.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np
import scipy.sparse

from .barrier import BoundTerms, fraction_to_boundary, norm_inf
from .filter import THETA_MAX_FACTOR, THETA_MIN_FACTOR, Filter, Reference, judge
from .kkt import SINGULAR_RATIO, DenseLDL, Factored, InertiaCorrection, KKTMatrix, SparseAssembly, SparseLDL
from .krylov import EPS
from .sparse import SPARSE_MIN_SIZE, dense_reason

# W&B's constants (§2.1, §2.4, §3.6; IPOPT's defaults)
MU_INIT = 0.1
KAPPA_EPSILON = 10.0     # kappa_eps: the barrier problem is solved to kappa_eps mu
KAPPA_MU = 0.2           # kappa_mu: linear decrease of mu
THETA_MU = 1.5           # theta_mu: superlinear decrease of mu
TAU_MIN = 0.99
S_MAX = 100.0
MAX_SOC = 4
KAPPA_SOC = 0.99
BACKTRACK = 0.5
MULTIPLIER_INIT_MAX = 1e3   # least-squares multipliers larger than this are discarded (§3.6)
TINY_STEP = 10.0 * EPS      # max_i |dw_i| / (1 + |w_i|) below this: the step changes nothing
TINY_STEP_VIOLATION = 1e-4  # ... and taken whole only at a nearly feasible point (IPOPT)
SOFT_REDUCTION = 0.9999     # IPOPT's soft_resto_pderror_reduction_factor
MAX_SOFT_ITERATIONS = 10    # IPOPT's max_soft_resto_iters


class TrialPoint(NamedTuple):
    """A primal point of a line search with f, C, theta = ||C||_1 and phi = phi_mu there."""
    w: np.ndarray
    f: float
    c: np.ndarray
    theta: float
    phi: float


class Direction(NamedTuple):
    """A search direction with the factorization it came from and its right-hand side's first
    block (the barrier problem's dual residual, reused by second-order corrections)."""
    dw: np.ndarray
    dy: np.ndarray
    dzl: np.ndarray
    dzu: np.ndarray
    residual: np.ndarray
    factored: Factored


class AcceptedStep(NamedTuple):
    """An accepted trial: the point, the primal step alpha, the direction, the filter's verdict,
    the trials spent, whether a second-order correction made it, and the bound multipliers' step
    (None: their fraction to the boundary)."""
    trial: TrialPoint
    alpha: float
    direction: Direction
    f_type: bool
    trials: int
    corrected: bool
    alpha_z: float | None = None


class State(NamedTuple):
    """A primal-dual point: w, y and the bound multipliers."""
    w: np.ndarray
    y: np.ndarray
    zl: np.ndarray
    zu: np.ndarray


def optimality_error(terms: BoundTerms, state: State, dual_residual: np.ndarray, c: np.ndarray, mu: float) -> float:
    """E_mu of W&B eq. (5): the dual residual, the constraint violation and the complementarity
    (less mu), the first and the last scaled by s_d and s_c (eq. (6), ``s_max = 100``), so that
    the large multipliers of a degenerate problem do not hold the test up."""
    z_sum = float(np.sum(state.zl) + np.sum(state.zu))
    count = state.y.size + terms.count
    s_d = max(S_MAX, (float(np.sum(np.abs(state.y))) + z_sum) / count) / S_MAX if count else 1.0
    s_c = max(S_MAX, z_sum / terms.count) / S_MAX if terms.count else 1.0
    return max(norm_inf(dual_residual) / s_d, norm_inf(c),
               terms.complementarity(state.w, state.zl, state.zu, mu) / s_c)


class Outcome(NamedTuple):
    """What an iteration did: ``kind`` ("accepted", "tiny", "restoration", or "nonfinite" when the
    Hessian of the Lagrangian is not finite at the iterate: no direction exists) and its history
    fields."""
    kind: str
    fields: dict


class BarrierUpdate(Protocol):
    """How mu moves (A-3), asked twice an iteration: ``prepare`` before the KKT matrix is factored,
    ``direction`` for the search direction from the factored matrix. :class:`MonotoneUpdate` here,
    :class:`~optimizers.barrier_update.AdaptiveUpdate` there."""

    name: str

    def prepare(self, solver: BarrierSolver) -> None: ...

    def direction(self, solver: BarrierSolver, factored: Factored) -> Direction | None: ...


class MonotoneUpdate:
    """W&B's monotone rule (see the module docstring).

    Examples
    --------
    >>> from optimizers.barrier_method import MonotoneUpdate
    >>> MonotoneUpdate().name
    'monotone'
    """

    name = "monotone"

    def prepare(self, solver: BarrierSolver) -> None:
        """A-3: decrease mu while the barrier problem is solved."""
        solver.monotone_update()

    def direction(self, solver: BarrierSolver, factored: Factored) -> Direction | None:
        """The direction for the current mu."""
        return solver.direction(factored, solver.mu)


class BarrierSolver:
    """The iterations of W&B's Algorithm A on one problem (see the module docstring).

    Parameters
    ----------
    problem
        A problem of :mod:`optimizers.equality_form`.
    w, y, zl, zu : ndarray
        The start: w strictly inside the bounds, the multipliers of C and of the finite lower and
        upper bounds (positive).
    mu : float
        The first barrier parameter.
    tol : float
        The tolerance of ``E_0``.
    mu_min : float, optional
        The smallest barrier parameter (default ``tol / 10``, W&B eq. (7)).
    sparse : bool or None
        Factor the KKT matrix as a sparse matrix: None decides from the first Hessian and Jacobian
        (sparse when one comes sparse and the KKT matrix is large and sparse enough,
        :func:`~optimizers.sparse.dense_reason`).
    update : BarrierUpdate, optional
        How mu moves (default :class:`MonotoneUpdate`; :mod:`optimizers.barrier_update`).

    Examples
    --------
    min (w_0 - 2)^2 + (w_1 - 2)^2 s.t. w_0 + w_1 = 2, w_0 <= 0.5 (solution (0.5, 1.5)):

    >>> import numpy as np
    >>> from optimizers.barrier_method import BarrierSolver
    >>> class Problem:
    ...     n, m, lower, upper = 2, 1, np.full(2, -np.inf), np.array([0.5, np.inf])
    ...     def objective(self, w): return float((w - 2) @ (w - 2))
    ...     def gradient(self, w): return 2 * (w - 2)
    ...     def constraints(self, w): return np.array([w[0] + w[1] - 2])
    ...     def jacobian(self, w): return np.array([[1.0, 1.0]])
    ...     def hessian(self, w, obj_factor, y): return 2 * obj_factor * np.eye(2)
    >>> solver = BarrierSolver(Problem(), np.array([0.0, 0.0]), np.zeros(1), np.zeros(0), np.ones(1),
    ...                        mu=0.1, tol=1e-8)
    >>> while solver.optimality_error() > 1e-8:
    ...     outcome = solver.iterate()
    >>> np.round(solver.w, 6), np.round(solver.y, 6), np.round(solver.zu, 6)
    (array([0.5, 1.5]), array([1.]), array([2.]))
    """

    def __init__(self, problem, w: np.ndarray, y: np.ndarray, zl: np.ndarray, zu: np.ndarray, *,
                 mu: float, tol: float, mu_min: float | None = None, sparse: bool | None = None,
                 update: BarrierUpdate | None = None):
        self.problem, self.terms = problem, BoundTerms(problem.lower, problem.upper)
        self.update = update or MonotoneUpdate()
        self.tol, self.mu_min = tol, tol / 10.0 if mu_min is None else mu_min
        self.mu, self.tau = mu, max(TAU_MIN, 1.0 - mu)
        self.sparse = sparse
        self.correction: InertiaCorrection | None = None
        self.assembly = SparseAssembly()
        self.w, self.y, self.zl, self.zu = w, y, zl, zu
        self.f, self.c = problem.objective(w), problem.constraints(w)
        self.g, self.jacobian = problem.gradient(w), problem.jacobian(w)
        self.reset_filter()
        self.force_mu_decrease = False
        self.soft_iterations = 0   # successive iterations of the soft restoration phase
        self.hessian_finite = True    # whether the last Hessian of the Lagrangian was finite
        self.stalled = False     # a tiny step at the smallest mu: nothing more to gain

    # --- measures ---------------------------------------------------------------------------------

    @property
    def finite(self) -> bool:
        """Whether f, C, the gradient and the Jacobian are finite at the iterate."""
        jac = self.jacobian.data if scipy.sparse.issparse(self.jacobian) else self.jacobian
        return bool(np.isfinite(self.f) and np.all(np.isfinite(self.c)) and np.all(np.isfinite(self.g))
                    and np.all(np.isfinite(jac)))

    @property
    def theta(self) -> float:
        """The constraint violation ``||C(w)||_1`` the filter measures."""
        return float(np.sum(np.abs(self.c)))

    @property
    def phi(self) -> float:
        """The barrier function ``phi_mu`` at the iterate."""
        return self.f + self.terms.barrier(self.w, self.mu)

    def dual_residual(self, mu: float = 0.0) -> np.ndarray:
        """``grad f + J^T y - z_L + z_U`` (with the one-sided damping of the barrier problem for mu > 0)."""
        residual = self.g + self.jacobian.T @ self.y + self.terms.multipliers(self.zl, self.zu)
        return residual + self.terms.damping(mu) if mu > 0 else residual

    def optimality_error(self, mu: float = 0.0) -> float:
        """E_mu of W&B eq. (5) (E_0: of the problem itself) at the iterate."""
        return optimality_error(self.terms, State(self.w, self.y, self.zl, self.zu), self.dual_residual(mu),
                                self.c, mu)

    # --- one iteration ----------------------------------------------------------------------------

    def iterate(self) -> Outcome:
        """One iteration of Algorithm A from A-3 (see the module docstring): the barrier update's
        part before the direction, the direction (the update may choose mu with it), the line
        search and the new iterate."""
        self.update.prepare(self)
        factored = self.factor()
        if factored is None and not self.hessian_finite:
            return Outcome("nonfinite", {"mu": self.mu})
        direction = None if factored is None else self.update.direction(self, factored)
        if direction is None:
            return Outcome("restoration", {"mu": self.mu})
        fields = {"mu": self.mu, "delta_w": direction.factored.delta_w}
        if self.tiny(direction):
            alpha = self.terms.primal_fraction(self.w, direction.dw, self.tau)
            trial = self.trial(self.w + alpha * direction.dw)
            if trial is not None:
                self.force_mu_decrease = True
                self.accept(AcceptedStep(trial, alpha, direction, True, 1, False))
                return Outcome("tiny", {**fields, "alpha": alpha, "ls": 1})
        step = self.line_search(direction) if not self.soft_iterations else None
        if step is None:
            step = self.soft_restoration(direction)
            if step is None:
                self.soft_iterations = 0
                return Outcome("restoration", fields)
        self.accept(step)
        return Outcome("accepted", {**fields, "alpha": step.alpha, "ls": step.trials})

    def soft_restoration(self, direction: Direction) -> AcceptedStep | None:
        """IPOPT's soft restoration phase, tried when the line search fails and before the
        restoration phase: the step ``min(alpha_p, alpha_d)`` along the direction (primal and dual
        alike) is taken when it reduces the barrier problem's error E_mu by the factor
        :data:`SOFT_REDUCTION`; the phase ends when a step passes the filter's tests too, or
        after :data:`MAX_SOFT_ITERATIONS` iterations, in the restoration phase. None: not taken."""
        if self.soft_iterations >= MAX_SOFT_ITERATIONS:
            return None
        if not self.soft_iterations:
            self.filter.add(self.theta, self.phi)     # as the restoration phase starts
        d = direction
        alpha = min(self.terms.primal_fraction(self.w, d.dw, self.tau),
                    self.terms.dual_fraction(self.zl, self.zu, d.dzl, d.dzu, self.tau))
        trial = self.trial(self.w + alpha * d.dw)
        if trial is None:
            return None
        g, jacobian = self.problem.gradient(trial.w), self.problem.jacobian(trial.w)
        state = State(trial.w, self.y + alpha * d.dy, self.zl + alpha * d.dzl, self.zu + alpha * d.dzu)
        dual = g + jacobian.T @ state.y + self.terms.multipliers(state.zl, state.zu) + self.terms.damping(self.mu)
        if not optimality_error(self.terms, state, dual, trial.c, self.mu) <= SOFT_REDUCTION * self.optimality_error(
                self.mu):
            return None
        slope = float((self.g + self.terms.gradient(self.w, self.mu)) @ d.dw)
        verdict = judge(Reference(self.theta, self.phi, slope), trial.theta, trial.phi, alpha, self.filter,
                        self.theta_min)
        self.soft_iterations = 0 if verdict.accepted else self.soft_iterations + 1
        return AcceptedStep(trial, alpha, d, verdict.f_type, 1, False, alpha)

    def set_mu(self, mu: float) -> None:
        """A new barrier parameter: tau = max(tau_min, 1 - mu), and the filter emptied (§2.3);
        a problem whose objective follows mu (``barrier_changed``: the restoration problem's
        proximity term) is told, and f and its gradient are evaluated again."""
        self.mu, self.tau = mu, max(TAU_MIN, 1.0 - mu)
        self.filter.reset()
        follow = getattr(self.problem, "barrier_changed", None)
        if follow is not None:
            follow(mu)
            self.f, self.g = self.problem.objective(self.w), self.problem.gradient(self.w)

    def monotone_update(self) -> None:
        """A-3: decrease mu while the barrier problem is solved to ``kappa_eps mu`` (or a tiny
        step forces it); a forced decrease at the smallest mu marks the run as stalled."""
        forced, self.force_mu_decrease = self.force_mu_decrease, False
        while forced or self.optimality_error(self.mu) <= KAPPA_EPSILON * self.mu:
            mu = max(self.mu_min, min(KAPPA_MU * self.mu, self.mu ** THETA_MU))
            if mu >= self.mu:
                self.stalled = forced
                return
            self.set_mu(mu)
            forced = False

    def _factorization(self, hessian) -> InertiaCorrection:
        """The inertia correction with the dense or sparse factorization, decided once (see
        ``sparse``)."""
        if self.correction is None:
            if self.sparse is None:
                sparse_input = scipy.sparse.issparse(hessian) or scipy.sparse.issparse(self.jacobian)
                size = self.problem.n + self.problem.m
                nnz = (hessian.nnz if scipy.sparse.issparse(hessian) else hessian.size) + 2 * (
                    self.jacobian.nnz if scipy.sparse.issparse(self.jacobian) else self.jacobian.size) + size
                self.sparse = sparse_input and dense_reason(size, nnz, None) is None
            self.correction = InertiaCorrection(SparseLDL() if self.sparse else DenseLDL())
        return self.correction

    def factor(self) -> Factored | None:
        """A-4's matrix: the KKT matrix at the iterate factored with its inertia corrected; None
        when the correction failed (or the Hessian is not finite)."""
        hessian = self.problem.hessian(self.w, 1.0, self.y)
        values = hessian.data if scipy.sparse.issparse(hessian) else hessian
        self.hessian_finite = bool(np.all(np.isfinite(values)))
        if not self.hessian_finite:
            return None
        correction = self._factorization(hessian)
        kkt = KKTMatrix(hessian, self.terms.sigma(self.w, self.zl, self.zu), self.jacobian, self.sparse,
                        self.assembly)
        return correction.factor(kkt, self.mu)

    def solve(self, factored: Factored, rhs_w: np.ndarray, rhs_c: np.ndarray) -> tuple[np.ndarray | None, Factored]:
        """The solution of the factored system for the right-hand side ``(rhs_w, rhs_c)`` and the
        factorization it came from: refactored with ``delta_c > 0`` when the solution shows the
        matrix singular after all; None when no finite solution was found."""
        rhs = np.concatenate([rhs_w, rhs_c])
        solution, ratio = factored.solve(rhs)
        if ratio > SINGULAR_RATIO and factored.delta_c == 0 and self.problem.m:
            refactored = self.correction.factor(factored.kkt, self.mu, singular=True)
            if refactored is None:
                return None, factored
            factored = refactored
            solution, ratio = factored.solve(rhs)
        return (solution if np.all(np.isfinite(solution)) else None), factored

    def residual(self, mu: float) -> np.ndarray:
        """The barrier problem's dual residual with mu eliminated, ``grad phi_mu + J^T y`` (the
        direction's right-hand side): affine in mu."""
        return self.g + self.terms.gradient(self.w, mu) + self.jacobian.T @ self.y

    def direction(self, factored: Factored, mu: float) -> Direction | None:
        """A-4: the primal-dual direction for the barrier parameter mu."""
        residual = self.residual(mu)
        solution, factored = self.solve(factored, -residual, -self.c)
        return None if solution is None else self.combine(solution, residual, factored, mu)

    def combine(self, solution: np.ndarray, residual: np.ndarray, factored: Factored, mu: float) -> Direction:
        """The direction of a solution ``(dw, dy)``, with the bound multipliers' steps (11)."""
        dw, dy = solution[:self.problem.n], solution[self.problem.n:]
        dzl, dzu = self.terms.multiplier_steps(self.w, self.zl, self.zu, mu, dw)
        return Direction(dw, dy, dzl, dzu, residual, factored)

    def tiny(self, direction: Direction) -> bool:
        """Whether the step changes w by rounding only, at a nearly feasible point."""
        relative = norm_inf(direction.dw / (1.0 + np.abs(self.w)))
        return relative < TINY_STEP and norm_inf(self.c) <= TINY_STEP_VIOLATION

    def trial(self, w: np.ndarray) -> TrialPoint | None:
        """The trial point w evaluated; None when w is not strictly inside the bounds (rounding
        at the fraction to the boundary) or f or C is not finite there."""
        if not self.terms.interior(w):
            return None
        f = self.problem.objective(w)
        if not np.isfinite(f):
            return None
        c = self.problem.constraints(w)
        if not np.all(np.isfinite(c)):
            return None
        return TrialPoint(w, f, c, float(np.sum(np.abs(c))), f + self.terms.barrier(w, self.mu))

    def line_search(self, direction: Direction) -> AcceptedStep | None:
        """A-5: backtracking from the fraction-to-the-boundary step until the filter's tests pass,
        with second-order corrections after a first trial that raised theta; None below alpha_min."""
        slope = float((self.g + self.terms.gradient(self.w, self.mu)) @ direction.dw)
        reference = Reference(self.theta, self.phi, slope)
        alpha_min = reference.minimal_step(self.theta_min)
        alpha = self.terms.primal_fraction(self.w, direction.dw, self.tau)
        scale = norm_inf(direction.dw / (1.0 + np.abs(self.w)))
        trials = 0
        while (alpha >= alpha_min or not trials) and alpha * scale >= EPS:   # the first trial always (IPOPT)
            trial = self.trial(self.w + alpha * direction.dw)
            trials += 1
            if trial is not None:
                verdict = judge(reference, trial.theta, trial.phi, alpha, self.filter, self.theta_min)
                if verdict.accepted:
                    return AcceptedStep(trial, alpha, direction, verdict.f_type, trials, False)
                if trials == 1 and trial.theta >= reference.theta:
                    corrected = self.second_order_correction(direction, trial, alpha, reference)
                    if corrected is not None:
                        return corrected._replace(trials=trials + corrected.trials)
            alpha *= BACKTRACK
        return None

    def second_order_correction(self, direction: Direction, trial: TrialPoint, alpha_first: float,
                                reference: Reference) -> AcceptedStep | None:
        """W&B §2.4: up to :data:`MAX_SOC` corrections ``K d = -(r, c_soc)`` with ``c_soc <- alpha
        c_soc + C(trial)``, the same factorization, each judged with the first trial's alpha;
        they stop when theta no longer falls by ``kappa_soc``."""
        c_soc, alpha, theta_old = self.c, alpha_first, trial.theta
        for count in range(1, MAX_SOC + 1):
            c_soc = alpha * c_soc + trial.c
            solution, _ = direction.factored.solve(-np.concatenate([direction.residual, c_soc]))
            corrected = self.combine(solution, direction.residual, direction.factored, self.mu)
            alpha = self.terms.primal_fraction(self.w, corrected.dw, self.tau)
            trial = self.trial(self.w + alpha * corrected.dw)
            if trial is None:
                return None
            verdict = judge(reference, trial.theta, trial.phi, alpha_first, self.filter, self.theta_min)
            if verdict.accepted:
                return AcceptedStep(trial, alpha, corrected, verdict.f_type, count, True)
            if trial.theta > KAPPA_SOC * theta_old:
                return None
            theta_old = trial.theta
        return None

    def accept(self, step: AcceptedStep) -> None:
        """A-6 to A-8: move to the trial point, the multipliers along their steps, z safeguarded
        by (16); the filter augmented with the old iterate unless the step was f-type."""
        if not step.f_type:
            self.filter.add(self.theta, self.phi)
        d = step.direction
        alpha_z = step.alpha_z if step.alpha_z is not None else self.terms.dual_fraction(
            self.zl, self.zu, d.dzl, d.dzu, self.tau)
        self.w, self.f, self.c = step.trial.w, step.trial.f, step.trial.c
        self.y = self.y + step.alpha * d.dy
        self.zl, self.zu = self.terms.safeguard(self.w, self.zl + alpha_z * d.dzl, self.zu + alpha_z * d.dzu,
                                                self.mu)
        self.g, self.jacobian = self.problem.gradient(self.w), self.problem.jacobian(self.w)

    # --- starting and restarting ------------------------------------------------------------------

    def least_squares_multipliers(self) -> np.ndarray:
        """The multipliers y minimizing ``||grad f + J^T y - z_L + z_U||`` (W&B eq. (36)), from
        ``[[I, J^T], [J, 0]]``; zero when they exceed :data:`MULTIPLIER_INIT_MAX`, when J is
        rank-deficient (the estimate is not unique) or when there are at least as many constraints
        as variables (IPOPT's rules)."""
        n, m = self.problem.n, self.problem.m
        if m == 0 or m >= n:
            return np.zeros(m)
        sparse = self.sparse if self.sparse is not None else (
            scipy.sparse.issparse(self.jacobian) and n + m >= SPARSE_MIN_SIZE)
        zero = scipy.sparse.csc_matrix((n, n)) if sparse else np.zeros((n, n))
        kkt = KKTMatrix(zero, np.ones(n), self.jacobian, sparse)
        factored = InertiaCorrection(SparseLDL() if sparse else DenseLDL()).factor(kkt, 1.0)
        # J is rank-deficient: no unique estimate (IPOPT: 0); the sparse path's factorization always has
        # delta_c > 0, so its solves tell
        if factored is None or factored.delta_c > 0 or factored.singular():
            return np.zeros(m)
        rhs = -np.concatenate([self.g + self.terms.multipliers(self.zl, self.zu), np.zeros(m)])
        y = factored.solve(rhs)[0][n:]
        return y if np.all(np.isfinite(y)) and norm_inf(y) <= MULTIPLIER_INIT_MAX else np.zeros(m)

    def reset_filter(self) -> None:
        """An empty filter with W&B's theta_max and theta_min from the violation at the iterate
        (§3.2, as at the start)."""
        theta = self.theta
        self.filter = Filter(THETA_MAX_FACTOR * max(1.0, theta))
        self.theta_min = THETA_MIN_FACTOR * max(1.0, theta)

    def restart(self, w: np.ndarray) -> None:
        """Continue from w after a restoration phase (IPOPT's ``MinC_1NrmRestorationPhase``): the
        bound multipliers as if the whole move had been one primal-dual step (with the fraction to
        the boundary), all set to 1 when one exceeds 1000, and y = 0."""
        old_l, old_u = self.terms.slacks(self.w)
        new_l, new_u = self.terms.slacks(w)
        dzl = (self.mu + self.zl * (old_l - new_l)) / old_l - self.zl
        dzu = (self.mu + self.zu * (old_u - new_u)) / old_u - self.zu
        alpha = min(fraction_to_boundary(self.zl, dzl, self.tau), fraction_to_boundary(self.zu, dzu, self.tau))
        zl, zu = self.zl + alpha * dzl, self.zu + alpha * dzu
        if max(norm_inf(zl), norm_inf(zu)) > 1e3:
            zl, zu = np.ones_like(zl), np.ones_like(zu)
        self.w, self.zl, self.zu = w, zl, zu
        self.y = np.zeros(self.problem.m)
        self.f, self.c = self.problem.objective(w), self.problem.constraints(w)
        self.g, self.jacobian = self.problem.gradient(w), self.problem.jacobian(w)
