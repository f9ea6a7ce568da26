"""Constrained minimization by a primal-dual interior-point method with a filter line search:
``min f(x) s.t. c_l <= c(x) <= c_u, x_l <= x <= x_u`` (:func:`minimize_ipm`).

The method is A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter
line-search algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57
(W&B; the algorithm of IPOPT), on the problem with a slack for each inequality
(:class:`~optimizers.equality_form.SlackForm`):

- the iterations of Algorithm A, with the monotone barrier update, the fraction-to-the-boundary
  rule, the filter line search with second-order corrections, the inertia correction of the KKT
  matrix and the bound multipliers' safeguard: :class:`~optimizers.barrier_method.BarrierSolver`;
- the feasibility restoration phase of §3.3 (:class:`Restoration`): when the line search finds no
  acceptable step, the same barrier method minimizes ``rho ||p + n||_1 + zeta/2 ||D_R (w -
  w_R)||^2`` (``zeta = sqrt(mu)``, fading with the phase's own mu) subject to ``C(w) - p + n = 0``
  (:class:`~optimizers.equality_form.RestorationForm`) until the constraint violation has fallen
  by 10% at a point the filter accepts; when the restoration problem itself converges first, the
  iterate is a stationary point of the constraint violation that is not feasible, and the run
  ends *locally infeasible* (status 6, IPOPT's ``Infeasible_Problem_Detected``);
- the KKT systems (:mod:`optimizers.kkt`): a dense Bunch-Kaufman factorization for small problems,
  a sparse quasi-definite LDL^T for large sparse ones, the inertia read from D either way.

:class:`InteriorPoint` is the method as a :class:`~optimizers.loop.Step` of the one loop: one
interior-point iteration per call (a restoration iteration is one too, marked in the history),
and it owns its convergence test: the scaled KKT error ``E_0 <= tol`` (W&B eq. (5)-(6)) of the
problem with its objective scaled by W&B §3.8 (``s_f = min(1, 100 / ||grad f(x_0)||_inf)``), and
IPOPT's absolute tests in the user's units (Lagrangian gradient at most 1, violation and
complementarity at most 1e-4), with the total complementarity (a convex problem's duality gap)
at most ``tol max(1, |f|)``; never the gradient test. Success means that test passed; a run
whose objective falls below -1e20 or whose iterates exceed 1e20 in size ends *unbounded* (status
7, IPOPT's diverging iterates).
:class:`Constrained` is the feasible set's view the loop and the result read (the start point
pushed inside the bounds, §3.6; the history columns; scipy trust-constr's result fields): the
third instance, after the unconstrained and the box, of the loop's feasible-set contract.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import OptimizeResult

from .barrier import norm_inf, push_inside
from .barrier_method import MU_INIT, BarrierSolver
from .barrier_update import AdaptiveUpdate, MonotoneUpdate
from .bounds import Box
from .constraints import CanonicalConstraint, add_matrices
from .equality_form import RestorationForm, SlackForm
from .filter import Reference
from .loop import Loop, Monitor, Saddle, Step, Stop, Trial
from .objective import MESSAGES, HessianOperator, Iterate, Objective, Status
from .sparse import SPARSE_MIN_SIZE
from .stopping import GradientTest

DEFAULT_TOL = 1e-8
DEFAULT_MAXITER = 3000          # IPOPT's max_iter
DIVERGING = 1e20                # IPOPT's diverging_iterates_tol; f below -DIVERGING too
RESTORATION_REDUCTION = 0.9     # kappa_resto: the violation the restoration phase must remove
# IPOPT's final test besides E_0 <= tol: the unscaled dual residual, violation and complementarity
DUAL_TOLERANCE = 1.0
VIOLATION_TOLERANCE = 1e-4
COMPLEMENTARITY_TOLERANCE = 1e-4

SUCCESS_MESSAGE = "Optimal solution found: the scaled KKT conditions hold"
MAXITER_MESSAGE = "Maximum number of iterations has been exceeded before the KKT conditions held"


class Multipliers(NamedTuple):
    """The multipliers of a constrained problem in scipy's sign: ``v`` of the constraints (the
    Lagrangian's gradient is ``grad f + J^T v - z_lower + z_upper``) and the bound multipliers
    ``z_lower``, ``z_upper`` (nonnegative, one per variable, zero where there is no bound)."""
    v: np.ndarray
    z_lower: np.ndarray
    z_upper: np.ndarray


class Constrained:
    """The feasible set ``{x : x_l <= x <= x_u, c_l <= c(x) <= c_u}`` as the loop and the result
    see it, in the shape of the loop's feasible-set contract (issue 30: start point, stationarity
    measure, curvature space, history columns, result fields): x0 pushed strictly inside the
    bounds, the Lagrangian's gradient with the multipliers the step keeps here
    (:meth:`update`), the columns ``violation`` and ``mu``, and scipy trust-constr's result fields.

    Parameters
    ----------
    constraint : CanonicalConstraint
        The constraints (m may be 0).
    lower, upper : ndarray
        The bounds of x (infinite where there is none; equal for a fixed variable).
    bounded : bool
        Whether the user gave bounds (scipy then reports their multipliers and values as one more
        constraint group, last).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.constraints import CanonicalConstraint
    >>> from optimizers.interior_point import Constrained, Multipliers
    >>> view = Constrained(CanonicalConstraint.linear([[1.0, 1.0]], 1.0, np.inf),
    ...                    np.array([0.0, 2.0]), np.array([np.inf, 2.0]), bounded=True)
    >>> x, note = view.start(np.array([-1.0, 0.0]))     # pushed inside x_0 >= 0; x_1 fixed at 2
    >>> x
    array([0.01, 2.  ])
    >>> note
    'x0 was moved strictly inside the bounds in 2 of 2 entries (the first at flat index 0)'

    >>> view.update(Multipliers(np.array([-1.0]), np.zeros(2), np.zeros(2)), mu=0.1)
    >>> view.stationarity(x, np.array([1.0, 1.0])), view.history(x)
    (array([0., 0.]), {'violation': 0.0, 'mu': 0.1})
    """

    #: how messages name the stationarity measure and the test
    gradient_name = "gL"
    test_name = "the KKT test"
    #: the KKT systems are factored, never solved by a preconditioned Krylov method
    preconditioned = False

    def __init__(self, constraint: CanonicalConstraint, lower: np.ndarray, upper: np.ndarray, bounded: bool):
        self.constraint, self.lower, self.upper, self.bounded = constraint, lower, upper, bounded
        self.fixed = lower == upper
        self.multipliers = Multipliers(np.zeros(0), np.zeros(lower.size), np.zeros(lower.size))
        self.mu = np.nan

    def start(self, x0: np.ndarray) -> tuple[np.ndarray, str | None]:
        """x0 strictly inside the bounds (W&B §3.6), fixed variables at their value, and a note
        when it moved."""
        if x0.size != self.lower.size:
            raise ValueError(f"the bounds are over {self.lower.size} variables, but x0 has {x0.size}")
        x = np.array(x0, dtype=float)
        x[self.fixed] = self.lower[self.fixed]
        free = ~self.fixed
        x[free] = push_inside(x[free], self.lower[free], self.upper[free])
        moved = np.flatnonzero(x != x0)
        if not moved.size:
            return x, None
        return x, (f"x0 was moved strictly inside the bounds in {moved.size} of {x0.size} entries (the first "
                   f"at flat index {moved[0]})")

    def contains(self, x: np.ndarray) -> bool:
        """Whether x lies strictly inside the bounds (fixed variables at their value)."""
        free = ~self.fixed
        return bool(np.all((x[free] > self.lower[free]) & (x[free] < self.upper[free]))
                    and np.array_equal(x[self.fixed], self.lower[self.fixed]))

    def update(self, multipliers: Multipliers, mu: float) -> None:
        """The step's current multipliers (scipy's sign, user's scaling) and barrier parameter."""
        self.multipliers, self.mu = multipliers, mu

    def stationarity(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The Lagrangian's gradient ``grad f + J^T v - z_lower + z_upper`` at x."""
        v, z_lower, z_upper = self.multipliers
        jacobian_term = self.constraint.jac(x).T @ v if v.size else 0.0
        return g + jacobian_term - z_lower + z_upper

    def violation(self, x: np.ndarray) -> float:
        """The largest violation of a constraint at x (the bounds hold at every iterate)."""
        return norm_inf(self.constraint.violation(self.constraint.fun(x)))

    def history(self, x: np.ndarray) -> dict:
        """The columns ``violation`` (the largest) and ``mu`` (the barrier parameter)."""
        return {"violation": self.violation(x), "mu": self.mu}

    def result_fields(self, x: np.ndarray, g: np.ndarray) -> dict:
        """scipy trust-constr's fields at x: ``v`` and ``constr`` one array per constraint group
        (the bounds last, when given), ``constr_violation``, ``lagrangian_grad``, ``optimality``
        (its infinity norm), and the bound multipliers ``z_lower``, ``z_upper``."""
        constraint, (v, z_lower, z_upper) = self.constraint, self.multipliers
        c = constraint.fun(x)
        lagrangian_grad = self.stationarity(x, g)
        return {"v": constraint.split(v) + ([z_upper - z_lower] if self.bounded else []),
                "constr": constraint.split(c) + ([x.copy()] if self.bounded else []),
                "constr_violation": norm_inf(constraint.violation(c)), "lagrangian_grad": lagrangian_grad,
                "optimality": norm_inf(lagrangian_grad), "z_lower": z_lower, "z_upper": z_upper,
                "barrier_parameter": self.mu}


def elastic_variables(c: np.ndarray, mu: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The p, n >= 0 with ``c - p + n = 0`` that minimize the restoration problem's barrier
    function for fixed w (W&B eq. (33)): ``n = a + sqrt(a^2 + mu c / (2 rho))``, ``a = (mu - rho
    c) / (2 rho)``, ``p = c + n``."""
    a = (mu - rho * c) / (2.0 * rho)
    n = a + np.sqrt(a * a + mu * c / (2.0 * rho))
    return c + n, n


class Restoration:
    """The feasibility restoration phase of W&B §3.3 from the regular iterate of ``outer``: the
    restoration problem solved by a :class:`~optimizers.barrier_method.BarrierSolver` of its own,
    one iteration per :meth:`iterate`, started as IPOPT starts it (barrier parameter ``max(mu,
    ||C||_inf)``, p and n by (33), bound multipliers ``min(rho, z)`` and ``mu / p``, ``mu / n``, y =
    0); the outer filter first takes the current iterate (A-9)."""

    def __init__(self, outer: BarrierSolver):
        self.outer = outer
        outer.filter.add(outer.theta, outer.phi)
        self.reference = Reference(outer.theta, outer.phi, 0.0)
        self.start_violation = norm_inf(outer.c)
        mu = max(outer.mu, self.start_violation)
        form = RestorationForm(outer.problem, outer.w, mu)
        p, n = elastic_variables(outer.c, mu, form.rho)
        zl = np.concatenate([np.minimum(form.rho, outer.zl), mu / p, mu / n])
        self.inner = BarrierSolver(form, np.concatenate([outer.w, p, n]), np.zeros(outer.problem.m), zl,
                                   np.minimum(form.rho, outer.zu), mu=mu, tol=outer.tol, sparse=outer.sparse)
        self.failed_searches = 0

    def iterate(self) -> tuple[str, dict]:
        """One restoration iteration: ``("continue" | "returned" | "infeasible" | "failed", fields)``;
        "returned" has moved the outer solver to the restored point."""
        outcome = self.inner.iterate()
        if outcome.kind == "restoration":   # the restoration's own search failed: reset p and n (33)
            self.failed_searches += 1
            if self.failed_searches > 1 or not self.inner.finite:
                return "failed", outcome.fields
            self._reset_elastic()
        else:
            self.failed_searches = 0
        w = self.inner.problem.split(self.inner.w)[0]
        if self._acceptable(w):
            self.outer.restart(w)
            return "returned", outcome.fields
        if self.inner.optimality_error() <= self.inner.tol:
            violated = norm_inf(self.outer.problem.constraints(w)) > 1e2 * self.outer.tol
            return ("infeasible" if violated else "failed"), outcome.fields
        return "continue", outcome.fields

    def _reset_elastic(self) -> None:
        """p and n set to (33) for the current w (IPOPT's restoration phase of the restoration)."""
        form = self.inner.problem
        w = form.split(self.inner.w)[0]
        p, n = elastic_variables(form.problem.constraints(w), self.inner.mu, form.rho)
        self.inner.restart(np.concatenate([w, p, n]))

    def _acceptable(self, w: np.ndarray) -> bool:
        """Whether the regular phase can go on from w: the violation (inf-norm) down by
        ``kappa_resto`` (or to the tolerance), and (theta, phi) acceptable to the outer filter and
        a sufficient decrease from the iterate the phase started at."""
        outer = self.outer
        c = outer.problem.constraints(w)
        if norm_inf(c) > max(RESTORATION_REDUCTION * self.start_violation, min(outer.tol, VIOLATION_TOLERANCE)):
            return False
        f = outer.problem.objective(w)
        if not np.isfinite(f):
            return False
        theta, phi = float(np.sum(np.abs(c))), f + outer.terms.barrier(w, outer.mu)
        return outer.filter.acceptable(theta, phi) and self.reference.sufficient_decrease(theta, phi, True)


class InteriorPoint(Step):
    """The interior-point method as the loop's step (see the module docstring): one iteration of
    W&B's Algorithm A per call, or of the restoration phase while it runs; its own convergence test.

    Parameters
    ----------
    objective : Objective
        f and its derivatives (counted).
    form : SlackForm
        The problem with its slacks.
    view : Constrained
        The feasible set's view.
    tol : float
        The tolerance of the scaled KKT error.
    sparse : bool or None
        The KKT factorization (see :class:`~optimizers.barrier_method.BarrierSolver`).
    mu_init : float
        The first barrier parameter.
    mu_strategy : {"monotone", "adaptive"}
        How mu moves (:mod:`optimizers.barrier_update`).
    """

    messages = {Status.MAXITER: MAXITER_MESSAGE}

    def __init__(self, objective: Objective, form: SlackForm, view: Constrained, *, tol: float,
                 sparse: bool | None, mu_init: float, mu_strategy: str = "monotone"):
        self.objective, self.form, self.view = objective, form, view
        self.tol, self.sparse, self.mu_init = tol, sparse, mu_init
        self.mu_strategy = mu_strategy
        self.solver: BarrierSolver | None = None
        self.restoration: Restoration | None = None
        self.failure: Stop | None = None
        self.tested = False

    def default_maxiter(self, n: int) -> int:
        return DEFAULT_MAXITER

    def start(self, point: Iterate) -> dict:
        if not np.all(np.isfinite(self.form.values_of(point.x))):
            self.failure = Stop(Status.NONFINITE, "The start point is not usable: the constraints are "
                                                  "not finite at x0")
            return {}
        if not np.all(np.isfinite(point.g)) or not _finite(self.view.constraint.jac(point.x)):
            self.failure = Stop(Status.NONFINITE, "The start point is not usable: the gradient or the "
                                                  "constraints' Jacobian is not finite at x0")
            return {}
        self.form.scale(point.x)
        w = self.form.start(point.x)
        lower, upper = np.isfinite(self.form.lower), np.isfinite(self.form.upper)
        # mu down to where the user's complementarity (the scaled one over s_f) and the total
        # complementarity over every bound pass their tests too
        bounds = int(lower.sum() + upper.sum())
        mu_min = min(self.tol / max(1, bounds), COMPLEMENTARITY_TOLERANCE * self.form.objective_scale) / 10.0
        update = AdaptiveUpdate() if self.mu_strategy == "adaptive" else MonotoneUpdate()
        solver = BarrierSolver(self.form, w, np.zeros(self.form.m), np.ones(int(lower.sum())),
                               np.ones(int(upper.sum())), mu=self.mu_init, tol=self.tol, mu_min=mu_min,
                               sparse=self.sparse, update=update)
        solver.y = solver.least_squares_multipliers()
        self.solver = solver
        return self.fields({})

    def fields(self, iteration: dict, restoration: bool = False) -> dict:
        """The history fields of the current iterate, in column order: ``gnorm`` (the Lagrangian's
        gradient, inf norm), the view's ``violation`` and ``mu``, the step ``alpha`` and the line
        search's trials ``ls``, the inertia correction ``delta_w``, and whether the iteration was
        one of the ``restoration`` phase."""
        x = self.form.x(self.solver.w)
        self.view.update(self.multipliers(), self.solver.mu)
        return {"gnorm": norm_inf(self.view.stationarity(x, self.objective.grad(x))), **self.view.history(x),
                **{name: iteration.get(name, np.nan) for name in ("alpha", "ls", "delta_w")},
                "restoration": int(restoration)}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        if self.failure is not None:
            return self.failure
        if not self.tested:          # the start point may be optimal already
            self.tested = True
            verdict = self.verdict()
            if verdict is not None:
                return verdict
        if self.restoration is None:
            outcome = self.solver.iterate()
            if outcome.kind != "restoration":
                return self.trial(self.solver.w, outcome.fields)
            if self.solver.problem.m == 0 or norm_inf(self.solver.c) <= self.tol:
                return Stop(Status.PRECISION_LOSS, "No acceptable step: the line search failed at a feasible "
                                                   "point, where the restoration phase cannot help")
            self.restoration = Restoration(self.solver)
        return self.restoration_iteration()

    def restoration_iteration(self) -> Trial | Stop:
        """One iteration of the restoration phase, and what it ended in."""
        kind, fields = self.restoration.iterate()
        w = self.restoration.inner.problem.split(self.restoration.inner.w)[0]
        if kind == "returned":
            self.restoration = None
        trial = self.trial(w, fields, restoration=True)
        if kind == "infeasible":
            return trial._replace(stop=Stop(Status.INFEASIBLE, (
                "Converged to a point of local infeasibility: the restoration phase reached a stationary "
                f"point of the constraint violation (largest violation {trial.fields['violation']:.1e}); "
                "the problem may be infeasible")))
        elif kind == "failed":
            return trial._replace(stop=Stop(Status.PRECISION_LOSS, (
                "The restoration phase failed: it converged to a point that is feasible to the tolerance "
                "but not acceptable to the filter, or its own line search failed twice")))
        return trial

    def trial(self, w: np.ndarray, fields: dict, restoration: bool = False) -> Trial:
        """The loop's trial for the iterate w, with the run's verdict when it ends here."""
        x = self.form.x(w)
        f = self.objective.fun(x)
        return Trial(x, f, self.fields(fields, restoration), self.verdict(x, f) if self.restoration is None else None)

    def verdict(self, x: np.ndarray | None = None, f: float | None = None) -> Stop | None:
        """SUCCESS when the KKT test passes (E_0 of the scaled problem at most tol, the total
        complementarity at most ``tol max(1, |f|)``, and IPOPT's absolute tests on the user's:
        Lagrangian gradient at most 1, violation and complementarity at most 1e-4), UNBOUNDED on
        diverging iterates, PRECISION_LOSS when a tiny step at the
        smallest barrier parameter left nothing to gain; else None."""
        solver = self.solver
        error = solver.optimality_error()
        if error <= self.tol and self._gap_closed() and self._user_kkt_holds():
            return Stop(Status.SUCCESS, f"{SUCCESS_MESSAGE} (E_0 = {error:.1e} <= tol = {self.tol:.0e})")
        if f is not None and (f < -DIVERGING or norm_inf(x) > DIVERGING):
            return Stop(Status.UNBOUNDED, f"Iterates diverging (f = {f:.3e}, ||x||_inf = {norm_inf(x):.3e}): "
                                          "the problem may be unbounded below")
        if solver.stalled:
            return Stop(Status.PRECISION_LOSS, f"Search direction too small to change x at the smallest "
                                               f"barrier parameter (E_0 = {error:.1e} > tol = {self.tol:.0e})")
        return None

    def _gap_closed(self) -> bool:
        """Whether the total complementarity, ``sum slack z`` over every bound (the duality gap of
        a convex problem, which E_0 bounds only term by term), is at most ``tol max(1, |f|)`` (in
        the scaled problem): then f is within that of the minimum's value, whatever the number
        of bounds."""
        solver = self.solver
        sl, su = solver.terms.slacks(solver.w)
        return float(sl @ solver.zl + su @ solver.zu) <= self.tol * max(1.0, abs(solver.f))

    def _user_kkt_holds(self) -> bool:
        """IPOPT's absolute tests in the user's units (``dual_inf_tol``, ``constr_viol_tol``,
        ``compl_inf_tol``)."""
        solver, form = self.solver, self.form
        x = form.x(solver.w)
        self.view.update(self.multipliers(), solver.mu)
        # the user's multipliers are the scaled problem's divided by s_f (the slacks' scale cancels)
        complementarity = solver.terms.complementarity(solver.w, solver.zl, solver.zu, 0.0) / form.objective_scale
        return (norm_inf(self.view.stationarity(x, self.objective.grad(x))) <= DUAL_TOLERANCE
                and self.view.violation(x) <= VIOLATION_TOLERANCE
                and complementarity <= COMPLEMENTARITY_TOLERANCE)

    def multipliers(self) -> Multipliers:
        """The current multipliers in scipy's sign and the user's scaling, over the user's x (fixed
        variables' from the Lagrangian's gradient)."""
        solver, form = self.solver, self.form
        x = form.x(solver.w)
        z_lower, z_upper = np.zeros(x.size), np.zeros(x.size)
        terms = solver.terms
        on_x = terms.lower_index < form.n_x
        z_lower[form.free[terms.lower_index[on_x]]] = solver.zl[on_x] / form.objective_scale
        on_x = terms.upper_index < form.n_x
        z_upper[form.free[terms.upper_index[on_x]]] = solver.zu[on_x] / form.objective_scale
        multipliers = Multipliers(form.multipliers(solver.y), z_lower, z_upper)
        fixed = self.view.fixed
        if np.any(fixed):
            self.view.update(multipliers, solver.mu)
            residual = self.view.stationarity(x, self.objective.grad(x))[fixed]
            z_lower[fixed], z_upper[fixed] = np.maximum(residual, 0.0), np.maximum(-residual, 0.0)
        return multipliers


def _finite(matrix) -> bool:
    return bool(np.all(np.isfinite(matrix.data if scipy.sparse.issparse(matrix) else matrix)))


class _KKTLoop(Loop):
    """Today's loop with the step's own convergence test and the constrained result (the thin
    driver until the loop's feasible-set contract, issue 30, carries both; then this goes)."""

    def test(self, point: Iterate) -> tuple[Status | None, Saddle | None]:
        return None, None   # the step tests its KKT conditions itself (Trial.stop / Stop)

    note: str | None = None

    def result(self, point: Iterate, status: Status, nit: int) -> OptimizeResult:
        step: InteriorPoint = self.step
        message = self.message or step.messages.get(status) or MESSAGES[status]
        message = message if self.note is None else f"{message} Note: {self.note}."
        if self.monitor.disp:
            if status in (Status.SUCCESS, Status.CALLBACK_STOP):
                print(message)
            else:
                warnings.warn(message, step.warning, stacklevel=3)
        result = OptimizeResult(x=point.x, fun=point.f, jac=point.g, nit=nit, **self.monitor.counts(),
                                status=status, success=status == Status.SUCCESS, message=message,
                                history=self.monitor.history)
        if step.solver is not None:
            step.view.update(step.multipliers(), step.solver.mu)
            result.update(step.view.result_fields(point.x, point.g))
            result.kkt_error = step.solver.optimality_error()
            result.sparse = bool(step.solver.sparse)
        return result


def lagrangian_hessian(objective: Objective, constraint: CanonicalConstraint,
                       given: Callable | None) -> Callable:
    """``hessian(x, obj_factor, v)``, the Hessian of ``obj_factor f(x) + v^T c(x)``: ``given``
    (counted as a Hessian evaluation of the objective), or the objective's Hessian (from ``hess``
    or ``hessp``) scaled plus the constraints' ``hess(x, v)``."""
    if given is not None:
        def hessian(x: np.ndarray, obj_factor: float, v: np.ndarray):
            objective.nhev += 1
            h = given(x, obj_factor, v)
            if scipy.sparse.issparse(h):
                return h if h.format == "csc" and h.dtype == float else scipy.sparse.csc_matrix(h, dtype=float)
            h = np.asarray(h, dtype=float).reshape(x.size, x.size)
            return 0.5 * (h + h.T)
        return hessian

    def hessian(x: np.ndarray, obj_factor: float, v: np.ndarray):
        parts = [] if obj_factor == 0 else [obj_factor * objective.at(x).matrix]
        curvature = constraint.hess(x, v)
        return add_matrices(parts + ([] if curvature is None else [curvature]), x.size)
    return hessian


def _no_constraints(n: int) -> CanonicalConstraint:
    return CanonicalConstraint(lambda x: np.zeros(0), lambda x: np.zeros((0, n)), np.zeros(0), np.zeros(0))


def minimize_ipm(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                 hessp: Callable | None = None, callback: Callable | None = None, *,
                 constraints: CanonicalConstraint | None = None, bounds: Box | tuple | None = None,
                 lagrangian_hess: Callable | None = None,
                 operator: Callable[[np.ndarray], HessianOperator] | None = None, tol: float = DEFAULT_TOL,
                 maxiter: int | None = None, disp: bool = False, keep_iterates: bool = True,
                 sparse: bool | None = None, mu_init: float = MU_INIT, mu_strategy: str = "monotone") -> OptimizeResult:
    """Minimize f subject to ``constraints.lower <= c(x) <= constraints.upper`` and bounds by the
    primal-dual interior-point method with a filter line search of Wächter & Biegler (2006).

    f and c are evaluated only strictly inside the bounds (x0 is moved inside first, W&B §3.6).
    The run succeeds when the scaled KKT error ``E_0`` (W&B eq. (5), of the problem with f scaled
    down so that its gradient at x0 is at most 100, §3.8) is at most ``tol``, the user's
    Lagrangian gradient at most 1 and the violation and complementarity at most 1e-4 (IPOPT's
    tests), and the total complementarity ``sum slack z`` at most ``tol max(1, |f|)`` (E_0 bounds
    each term only: with 10^5 bounds f could stay 1e-4 above its minimum); it ends locally
    infeasible (status 6), unbounded (status 7) or short of precision (status 2) otherwise, each
    with a message that says so.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`): hess or hessp is the objective's Hessian.
    constraints : CanonicalConstraint, optional
        The general constraints (equalities where lower == upper); their Hessian ``hess(x, v)``
        enters the Lagrangian's.
    bounds : Box or (lower, upper), optional
        Bounds on x; ``lower == upper`` fixes a variable.
    lagrangian_hess : callable, optional
        ``lagrangian_hess(x, obj_factor, v)``: the Hessian of ``obj_factor f(x) + v^T c(x)``
        (IPOPT's convention, dense or sparse, symmetric); replaces hess and the constraints' hess.
    tol : float
        The tolerance of the scaled KKT error (IPOPT's ``tol``), default 1e-8.
    sparse : bool or None
        Factor the KKT matrix as a sparse matrix (qdldl's LDL^T): None (default) when a derivative
        comes sparse and the matrix is large and sparse enough; True or False to force it.
    mu_init : float
        The first barrier parameter (0.1).
    mu_strategy : {"monotone", "adaptive"}
        How the barrier parameter moves (IPOPT's option of that name): W&B's monotone rule, or
        Nocedal, Wächter & Waltz's adaptive one (:mod:`optimizers.barrier_update`).

    Returns
    -------
    OptimizeResult
        ``x, fun, jac`` (the gradient), ``nit, nfev, njev, nhev, constr_nfev, constr_njev,
        constr_nhev, status, success, message, history`` (columns ``gnorm`` (the Lagrangian's
        gradient), ``violation``, ``mu``, ``alpha``, ``ls``, ``delta_w``, ``restoration``), and scipy
        trust-constr's ``v, constr, constr_violation, lagrangian_grad, optimality`` (the bounds as
        the last group when given), the bound multipliers ``z_lower, z_upper``, the final
        ``barrier_parameter`` and ``kkt_error`` (E_0), and ``sparse`` (whether the KKT matrix was
        factored as a sparse matrix).

    Raises
    ------
    ValueError
        Without second derivatives (hess, hessp, operator or lagrangian_hess), for bounds that do
        not fit x0, or for tol not positive.

    Examples
    --------
    HS071 (Hock & Schittkowski problem 71): min x_0 x_3 (x_0 + x_1 + x_2) + x_2 s.t. x_0 x_1 x_2 x_3
    >= 25, ||x||^2 = 40, 1 <= x <= 5.

    >>> import numpy as np
    >>> from optimizers import CanonicalConstraint, minimize_ipm
    >>> f = lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]
    >>> g = lambda x: np.array([x[3] * (2 * x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1,
    ...                         x[0] * (x[0] + x[1] + x[2])])
    >>> c = lambda x: np.array([np.prod(x), x @ x])
    >>> J = lambda x: np.array([np.prod(x) / x, 2 * x])
    >>> def H(x, s, v):
    ...     h = s * np.array([[2 * x[3], x[3], x[3], 2 * x[0] + x[1] + x[2]], [x[3], 0, 0, x[0]],
    ...                       [x[3], 0, 0, x[0]], [2 * x[0] + x[1] + x[2], x[0], x[0], 0]])
    ...     p = np.prod(x) / np.outer(x, x)
    ...     np.fill_diagonal(p, 0.0)
    ...     return h + v[0] * p + 2 * v[1] * np.eye(4)
    >>> result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=H,
    ...                       constraints=CanonicalConstraint(c, J, [25.0, 40.0], [np.inf, 40.0]),
    ...                       bounds=(np.ones(4), np.full(4, 5.0)))
    >>> result.success, result.nit, round(result.fun, 7), result.x.round(6)
    (True, 8, 17.0140173, array([1.      , 4.743   , 3.82115 , 1.379408]))
    >>> result.v[0].round(6), round(float(result.z_lower[0]), 6)    # the constraints' and x_0 >= 1's multipliers
    (array([-0.552294,  0.161469]), 1.087871)
    """
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol!r}")
    if mu_strategy not in ("monotone", "adaptive"):
        raise ValueError(f"mu_strategy must be 'monotone' or 'adaptive', got {mu_strategy!r}")
    if hess is None and hessp is None and operator is None and lagrangian_hess is None:
        raise ValueError("the interior-point method needs second derivatives: pass hess, hessp, "
                         "operator or lagrangian_hess")
    x0 = np.array(x0, dtype=float).reshape(-1)
    n = x0.size
    box = bounds if isinstance(bounds, Box) or bounds is None else Box(*bounds)
    lower = box.lower if box is not None else np.full(n, -np.inf)
    upper = box.upper if box is not None else np.full(n, np.inf)
    constraint = constraints if constraints is not None else _no_constraints(n)
    view = Constrained(constraint, lower, upper, bounded=box is not None)
    x0, note = view.start(x0)
    objective = Objective(fun, x0, jac, hess, hessp, operator, sparse=sparse)
    constraint.fun(objective.x0)   # m, for constraints whose bounds were given as scalars
    hessian = lagrangian_hessian(objective, constraint, lagrangian_hess)
    # small problems take the dense KKT path (optimizers.sparse.dense_reason): dense derivatives then
    size = n + constraint.m + int(np.sum(~constraint.equality))
    dense = sparse is False or (sparse is None and size < SPARSE_MIN_SIZE)
    form = SlackForm(objective, constraint, lower, upper, hessian, objective.x0, dense=dense)
    step = InteriorPoint(objective, form, view, tol=tol, sparse=sparse, mu_init=mu_init, mu_strategy=mu_strategy)

    def counts() -> dict:
        return {**objective.counts(), **constraint.counts()}
    loop = _KKTLoop(objective, step, None, GradientTest(None), Monitor(counts, callback, disp, keep_iterates))
    loop.note = note
    return loop.iterate(maxiter)

