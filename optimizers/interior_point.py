"""Constrained minimization by a primal-dual interior-point method with a filter line search:
``min f(x) s.t. c_l <= c(x) <= c_u, x_l <= x <= x_u`` (:func:`minimize_ipm`).

The method is A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter
line-search algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57
(W&B; the algorithm of IPOPT), on the problem with a slack for each inequality
(:class:`~optimizers.equality_form.SlackForm`):

- the iterations of Algorithm A, with Nocedal, Wächter & Waltz's adaptive barrier update (the
  default; W&B's monotone one by ``mu_strategy``), the fraction-to-the-boundary rule, the filter
  line search with second-order corrections, the inertia correction of the KKT matrix and the
  bound multipliers' safeguard: :class:`~optimizers.barrier_method.BarrierSolver`;
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
at most ``tol max(1, |f|)``; never the gradient test. Success means that test passed and, on
problems of at most 300 variables and slacks, the second-order check found no clearly negative
curvature of the Lagrangian on the active constraints' null space (:mod:`optimizers.second_order`;
at a saddle point the run steps along that curvature and goes on, or ends *not a minimum*,
status 5, when it cannot); a run
whose objective falls below -1e20 or whose iterates exceed 1e20 in size ends *unbounded* (status
7, IPOPT's diverging iterates).
:class:`Constrained` is the feasible set's view the loop and the result read (the start point
pushed inside the bounds, §3.6; the history columns; scipy trust-constr's result fields): the
third instance, after the unconstrained and the box, of the loop's feasible-set contract.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import OptimizeResult

from .barrier import norm_inf, push_inside
from .barrier_method import MU_INIT, BarrierSolver, MonotoneUpdate
from .barrier_update import AdaptiveUpdate
from .bounds import Box
from .constraints import CanonicalConstraint, add_matrices
from .equality_form import RestorationForm, SlackForm
from .feasible import CurvatureSpace, FeasibleSet
from .filter import Reference
from .loop import RunOptions, Saddle, Step, Stop, Trial, Verdict, run
from .methods import Problem, declared
from .objective import Iterate, Objective, Status
from .second_order import (
    ESCAPE_LIMIT,
    SECOND_ORDER_MAX_N,
    ReducedCurvature,
    active_bounds,
    escape_step,
    reduced_curvature,
)
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
NONFINITE_HESSIAN = "The Hessian of the Lagrangian is not finite at the iterate: no step can be computed"
MAXITER_MESSAGE = "Maximum number of iterations has been exceeded before the KKT conditions held"
SADDLE_MESSAGE = (
    "Stopped at a saddle point: the KKT test passed, but the Hessian of the Lagrangian has clearly negative "
    "curvature ({curvature:.1e}, ||W||_max = {scale:.1e}) on the null space of the active constraints, and {why}")


class Multipliers(NamedTuple):
    """The multipliers of a constrained problem in scipy's sign: ``v`` of the constraints (the
    Lagrangian's gradient is ``grad f + J^T v - z_lower + z_upper``) and the bound multipliers
    ``z_lower``, ``z_upper`` (nonnegative, one per variable, zero where there is no bound)."""
    v: np.ndarray
    z_lower: np.ndarray
    z_upper: np.ndarray


def interior_start(x0: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """x0 (a copy) strictly inside the bounds by W&B §3.6's rule (:func:`~optimizers.barrier.push_inside`),
    fixed variables (``lower == upper``) at their value: the interior point's first iterate."""
    x = np.array(x0, dtype=float)
    fixed = lower == upper
    x[fixed] = lower[fixed]
    x[~fixed] = push_inside(x[~fixed], lower[~fixed], upper[~fixed])
    return x


class Constrained(FeasibleSet):
    """The feasible set ``{x : x_l <= x <= x_u, c_l <= c(x) <= c_u}``, the third instance of the
    loop's feasible-set contract (:mod:`optimizers.feasible`): x0 pushed strictly inside the
    bounds, the Lagrangian's gradient with the multipliers the step keeps here (:meth:`update`),
    no second-order check by the loop, the columns ``violation`` and ``mu``, scipy trust-constr's
    result fields, and a failed run's last iterate reported (not the lowest f seen).

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

    >>> view.update(Multipliers(np.array([-1.0]), np.zeros(2), np.zeros(2)), mu=0.1, gradient=np.ones(2))
    >>> view.stationarity(x, np.array([1.0, 1.0])), view.history(x)
    (array([0., 0.]), {'violation': 0.0, 'mu': 0.1})
    """

    #: how messages name the stationarity measure and the test
    gradient_name = "gL"
    test_name = "the KKT test"
    #: the KKT systems are factored, never solved by a preconditioned Krylov method
    preconditioned = False
    #: a lower f at an infeasible point is no better: a failed run reports its last iterate
    best_point_fallback = False

    def __init__(self, constraint: CanonicalConstraint, lower: np.ndarray, upper: np.ndarray, bounded: bool):
        self.constraint, self.lower, self.upper, self.bounded = constraint, lower, upper, bounded
        self.fixed = lower == upper
        self.multipliers = Multipliers(np.zeros(0), np.zeros(lower.size), np.zeros(lower.size))
        self.mu, self.gradient = np.nan, np.zeros(lower.size)

    def __repr__(self) -> str:
        return f"Constrained(n={self.lower.size}, m={self.constraint.m})"

    def start(self, x0: np.ndarray) -> tuple[np.ndarray, str | None]:
        """x0 strictly inside the bounds (W&B §3.6), fixed variables at their value, and a note
        when it moved."""
        if x0.size != self.lower.size:
            raise ValueError(f"the bounds are over {self.lower.size} variables, but x0 has {x0.size}")
        x = interior_start(x0, self.lower, self.upper)
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

    def update(self, multipliers: Multipliers, mu: float, gradient: np.ndarray) -> None:
        """The step's current multipliers (scipy's sign, the user's scaling), barrier parameter and
        the gradient of f at its iterate (for the result's Lagrangian gradient)."""
        self.multipliers, self.mu, self.gradient = multipliers, mu, gradient

    def stationarity(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The Lagrangian's gradient at x with the multipliers the step keeps here."""
        return self.lagrangian_gradient(x, g, self.multipliers)

    def lagrangian_gradient(self, x: np.ndarray, g: np.ndarray, multipliers: Multipliers) -> np.ndarray:
        """``grad f + J^T v - z_lower + z_upper`` at x."""
        v, z_lower, z_upper = multipliers
        jacobian_term = self.constraint.jac(x).T @ v if v.size else 0.0
        return g + jacobian_term - z_lower + z_upper

    def curvature_space(self, point: CurvatureSpace) -> None:
        """None: no second-order check by the loop (the inertia correction of every KKT matrix
        makes each step one of descent for the barrier problem)."""
        return None

    def lift(self, space: CurvatureSpace, direction: np.ndarray) -> np.ndarray:
        return direction

    def violation(self, x: np.ndarray) -> float:
        """The largest violation of a constraint at x (the bounds hold at every iterate)."""
        return norm_inf(self.constraint.violation(self.constraint.fun(x)))

    def history(self, x: np.ndarray) -> dict:
        """The columns ``violation`` (the largest) and ``mu`` (the barrier parameter)."""
        return {"violation": self.violation(x), "mu": self.mu}

    def result_fields(self, x: np.ndarray) -> dict:
        """scipy trust-constr's fields at x: ``v`` and ``constr`` one array per constraint group
        (the bounds last, when given), ``constr_violation``, ``lagrangian_grad``, ``optimality``
        (its infinity norm), the bound multipliers ``z_lower``, ``z_upper`` and the final
        ``barrier_parameter``."""
        constraint, (v, z_lower, z_upper) = self.constraint, self.multipliers
        c = constraint.fun(x)
        lagrangian_grad = self.stationarity(x, self.gradient)
        return {"v": constraint.split(v) + ([z_upper - z_lower] if self.bounded else []),
                "constr": constraint.split(c) + ([x.copy()] if self.bounded else []),
                "constr_violation": norm_inf(constraint.violation(c)), "lagrangian_grad": lagrangian_grad,
                "optimality": norm_inf(lagrangian_grad), "z_lower": z_lower, "z_upper": z_upper,
                "barrier_parameter": self.mu, **({"active_mask": self.active_mask(x)} if self.bounded else {})}

    def active_mask(self, x: np.ndarray) -> np.ndarray:
        """The box's ``active_mask`` (-1 at a lower bound, fixed variables too, +1 at an upper
        one) of an interior point: a bound is active where its multiplier exceeds x's distance to
        it (Tapia's indicator; El-Bakry, Tapia & Zhang, 1991), since x never reaches a bound."""
        _, z_lower, z_upper = self.multipliers
        mask = np.where(z_upper > self.upper - x, 1, 0)
        return np.where((z_lower > x - self.lower) | (self.lower == self.upper), -1, mask)


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
        """One restoration iteration: ``("continue" | "returned" | "infeasible" | "failed" |
        "nonfinite", fields)``;
        "returned" has moved the outer solver to the restored point."""
        outcome = self.inner.iterate()
        if outcome.kind == "nonfinite":
            return "nonfinite", outcome.fields
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
    mu_strategy : {"adaptive", "monotone"}
        How mu moves (:mod:`optimizers.barrier_update`).
    dual_inf_tol, constr_viol_tol : float
        IPOPT's absolute tests on the user's Lagrangian gradient and violation.
    """

    messages = {Status.SUCCESS: SUCCESS_MESSAGE, Status.MAXITER: MAXITER_MESSAGE}

    def __init__(self, objective: Objective, form: SlackForm, view: Constrained, *, tol: float,
                 sparse: bool | None, mu_init: float, mu_strategy: str = "adaptive",
                 dual_inf_tol: float = DUAL_TOLERANCE, constr_viol_tol: float = VIOLATION_TOLERANCE):
        self.objective, self.form, self.view = objective, form, view
        self.dual_inf_tol, self.constr_viol_tol = dual_inf_tol, constr_viol_tol
        self.tol, self.sparse, self.mu_init = tol, sparse, mu_init
        self.mu_strategy = mu_strategy
        self.solver: BarrierSolver | None = None
        self.restoration: Restoration | None = None
        self.failure: Stop | None = None
        self.saddle: ReducedCurvature | None = None
        self.escapes = 0
        self.second_order = "not reached (the KKT test never passed)"

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
        """The history fields of an iteration, in column order (after the feasible set's
        ``gnorm``, ``violation`` and ``mu``): the step ``alpha`` and the line search's trials
        ``ls``, the inertia correction ``delta_w``, and whether the iteration was one of the
        ``restoration`` phase. The feasible set is brought up to date first."""
        self.sync()
        return {**{name: iteration.get(name, np.nan) for name in ("alpha", "ls", "delta_w")},
                "restoration": int(restoration)}

    def sync(self) -> None:
        """The feasible set's multipliers, barrier parameter and gradient: the regular iterate's."""
        x = self.form.x(self.solver.w)
        self.view.update(self.multipliers(), self.solver.mu, self.objective.grad(x))

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        if self.failure is not None:
            return self.failure
        if saddle is not None:
            return self.escape()
        if self.restoration is None:
            outcome = self.solver.iterate()
            if outcome.kind == "nonfinite":
                return Stop(Status.NONFINITE, NONFINITE_HESSIAN)
            if outcome.kind != "restoration":
                return self.trial(self.solver.w, outcome.fields)
            if self.solver.problem.m == 0 or norm_inf(self.solver.c) <= self.tol:
                return self.stuck()
            self.restoration = Restoration(self.solver)
        return self.restoration_iteration()

    def restoration_iteration(self) -> Trial | Stop:
        """One iteration of the restoration phase, and what it ended in."""
        kind, fields = self.restoration.iterate()
        w = self.restoration.inner.problem.split(self.restoration.inner.w)[0]
        if kind == "returned":
            self.restoration = None
        elif kind == "nonfinite":
            return Stop(Status.NONFINITE, NONFINITE_HESSIAN)
        trial = self.trial(w, fields, restoration=True)
        if kind == "infeasible":
            return trial._replace(stop=Stop(Status.INFEASIBLE, (
                "Converged to a point of local infeasibility: the restoration phase reached a stationary "
                f"point of the constraint violation (largest violation {self.view.violation(trial.x):.1e}); "
                "the problem may be infeasible")))
        elif kind == "failed":
            return trial._replace(stop=Stop(Status.PRECISION_LOSS, (
                "The restoration phase failed: it converged to a point that is feasible to the tolerance "
                "but not acceptable to the filter, or its own line search failed twice")))
        return trial

    def trial(self, w: np.ndarray, fields: dict, restoration: bool = False) -> Trial:
        """The loop's trial for the iterate w, with the run's end when it is one short of success."""
        x = self.form.x(w)
        f = self.objective.fun(x)
        stop = self.stop_at(x, f) if self.restoration is None else None
        return Trial(x, f, self.fields(fields, restoration), stop)

    def stop_at(self, x: np.ndarray, f: float) -> Stop | None:
        """UNBOUNDED on diverging iterates, PRECISION_LOSS when a tiny step at the smallest
        barrier parameter left nothing to gain; None (also where :meth:`test` will find success)."""
        if self.kkt_holds():
            return None
        if f < -DIVERGING or norm_inf(x) > DIVERGING:
            return Stop(Status.UNBOUNDED, f"Iterates diverging (f = {f:.3e}, ||x||_inf = {norm_inf(x):.3e}): "
                                          "the problem may be unbounded below")
        if self.solver.stalled:
            return Stop(Status.PRECISION_LOSS, "Search direction too small to change x at the smallest "
                                               "barrier parameter")
        return None

    def test(self, point: Iterate, loop_test: Callable[[Iterate], Verdict]) -> Verdict:
        """SUCCESS where the KKT test passes at the regular iterate (never the loop's gradient
        test; not during the restoration phase) and the second-order check finds no clearly
        negative curvature (:mod:`optimizers.second_order`); a saddle to leave where it does."""
        if self.solver is None or self.restoration is not None or not self.kkt_holds():
            return None, None
        self.saddle = self.second_order_check()
        if self.saddle is None:
            return Status.SUCCESS, None
        return None, Saddle(self.saddle.direction, self.saddle.curvature)

    def second_order_check(self) -> ReducedCurvature | None:
        """The reduced Hessian's clearly negative curvature at the KKT point, or None (also when
        the check is skipped: more than :data:`~optimizers.second_order.SECOND_ORDER_MAX_N`
        variables and slacks); :attr:`second_order` says which."""
        solver = self.solver
        if solver.problem.n > SECOND_ORDER_MAX_N:
            self.second_order = (f"skipped: {solver.problem.n} variables and slacks, above the dense "
                                 f"check's {SECOND_ORDER_MAX_N}")
            return None
        active = active_bounds(solver.terms, solver.w, solver.zl, solver.zu, self.tol)
        found = reduced_curvature(solver.problem, solver.w, solver.g, solver.jacobian, active)
        if found is None or not found.clearly_negative(self.tol):
            notes = ([] if found is not None else ["the null space is {0}"]) + (
                [f"after {self.escapes} escape(s) from saddle points"] if self.escapes else [])
            self.second_order = "passed" + (f" ({'; '.join(notes)})" if notes else "")
            return None
        self.second_order = f"negative curvature {found.curvature:.1e} (||W||_max = {found.scale:.1e})"
        return found

    def escape(self) -> Trial | Stop:
        """The step from the saddle point :attr:`saddle` along its direction
        (:meth:`escape_point`), from which the iterations go on (:meth:`restart_at`); *not a
        minimum* when no step lowers the Lagrangian or after
        :data:`~optimizers.second_order.ESCAPE_LIMIT` escapes."""
        w = self.escape_point()
        if w is None:
            saddle = self.saddle
            why = (f"the run came back to one after {self.escapes} escapes" if self.escapes >= ESCAPE_LIMIT
                   else "no step along it lowers the Lagrangian")
            return Stop(Status.NOT_A_MINIMUM, SADDLE_MESSAGE.format(curvature=saddle.curvature,
                                                                    scale=saddle.scale, why=why))
        return self.restart_at(w)

    def stuck(self) -> Trial | Stop:
        """The line search failed at a feasible point, where the restoration phase cannot help: an
        escape where the second-order check finds clearly negative curvature there (the filter can
        hold the iterates near a saddle point: HS 55 with the adaptive update under some BLAS
        kernels, E_0 = 1.1e-7), else the run ends short of precision (status 2)."""
        before = self.second_order
        self.saddle = self.second_order_check()
        w = None if self.saddle is None else self.escape_point()
        if w is not None:
            return self.restart_at(w)
        self.second_order = before
        return Stop(Status.PRECISION_LOSS, "No acceptable step: the line search failed at a feasible point, "
                                           "where the restoration phase cannot help")

    def escape_point(self) -> np.ndarray | None:
        """The point :func:`~optimizers.second_order.escape_step` finds along :attr:`saddle`'s
        direction; None after :data:`~optimizers.second_order.ESCAPE_LIMIT` escapes."""
        solver = self.solver
        if self.escapes >= ESCAPE_LIMIT:
            return None
        return escape_step(solver.problem, solver.terms, solver.w, self.saddle)

    def restart_at(self, w: np.ndarray) -> Trial:
        """The iterations go on from w, the point of an escape: the solver restarted there (IPOPT's
        way after a restoration phase) with the barrier parameter back at ``mu_init`` (at the
        smallest mu the monotone rule stalls on a point off the central path), least-squares
        multipliers and an empty filter."""
        solver = self.solver
        self.escapes += 1
        solver.set_mu(max(solver.mu, self.mu_init))
        solver.restart(w)
        solver.y = solver.least_squares_multipliers()
        solver.reset_filter()
        solver.stalled = False
        return self.trial(w, {})

    def describe(self, message: str, x: np.ndarray, f: float, g: np.ndarray, feasible: FeasibleSet,
                 test: GradientTest) -> str:
        """``message`` ended with the KKT error E_0 and its tolerance."""
        if self.solver is None:
            return message
        return f"{message.rstrip('.')} (E_0 = {self.solver.optimality_error():.1e}, tol = {self.tol:.0e})."

    def kkt_holds(self) -> bool:
        """The KKT test: E_0 of the scaled problem at most tol, the total complementarity at most
        ``tol max(1, |f|)``, and IPOPT's absolute tests on the user's problem (Lagrangian gradient
        at most ``dual_inf_tol``, violation at most ``constr_viol_tol``, complementarity at most 1e-4)."""
        return self.solver.optimality_error() <= self.tol and self._gap_closed() and self._user_kkt_holds()

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
        # the user's multipliers are the scaled problem's divided by s_f (the slacks' scale cancels)
        complementarity = solver.terms.complementarity(solver.w, solver.zl, solver.zu, 0.0) / form.objective_scale
        lagrangian_gradient = self.view.lagrangian_gradient(x, self.objective.grad(x), self.multipliers())
        return (norm_inf(lagrangian_gradient) <= self.dual_inf_tol
                and self.view.violation(x) <= self.constr_viol_tol
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
            residual = self.view.lagrangian_gradient(x, self.objective.grad(x), multipliers)[fixed]
            z_lower[fixed], z_upper[fixed] = np.maximum(residual, 0.0), np.maximum(-residual, 0.0)
        return multipliers


def _finite(matrix) -> bool:
    return bool(np.all(np.isfinite(matrix.data if scipy.sparse.issparse(matrix) else matrix)))


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


@declared("interior-point", bounds=True, sparse=True, constraints=True)
def minimize_ipm(problem: Problem, options: RunOptions, *, constraints: CanonicalConstraint | None = None,
                 lagrangian_hess: Callable | None = None, sparse: bool | None = None, mu_init: float = MU_INIT,
                 mu_strategy: str = "adaptive", dual_inf_tol: float = DUAL_TOLERANCE,
                 constr_viol_tol: float = VIOLATION_TOLERANCE) -> OptimizeResult:
    """Minimize f subject to ``constraints.lower <= c(x) <= constraints.upper`` and bounds by the
    primal-dual interior-point method with a filter line search of Wächter & Biegler (2006).

    f and c are evaluated only strictly inside the bounds (x0 is moved inside first, W&B §3.6).
    The run succeeds when the scaled KKT error ``E_0`` (W&B eq. (5), of the problem with f scaled
    down so that its gradient at x0 is at most 100, §3.8) is at most ``tol``, the user's
    Lagrangian gradient at most 1 and the violation and complementarity at most 1e-4 (IPOPT's
    tests), and the total complementarity ``sum slack z`` at most ``tol max(1, |f|)`` (E_0 bounds
    each term only: with 10^5 bounds f could stay 1e-4 above its minimum), and where the
    second-order check (at most 300 variables and slacks, :mod:`optimizers.second_order`) finds no
    clearly negative curvature there; at a saddle point it steps along the negative curvature and
    goes on. It ends not a minimum (status 5, at a saddle point it could not leave), locally
    infeasible (status 6), unbounded (status 7) or short of precision (status 2) otherwise, each
    with a message that says so.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`): hess or hessp is the objective's Hessian.
    gtol : float, optional
        The tolerance of the scaled KKT error (IPOPT's ``tol``), default 1e-8.
    bounds : Box or (lower, upper), optional
        Bounds on x; ``lower == upper`` fixes a variable.
    constraints : CanonicalConstraint, optional
        The general constraints (equalities where lower == upper); their Hessian ``hess(x, v)``
        enters the Lagrangian's.
    lagrangian_hess : callable, optional
        ``lagrangian_hess(x, obj_factor, v)``: the Hessian of ``obj_factor f(x) + v^T c(x)``
        (IPOPT's convention, dense or sparse, symmetric); replaces hess and the constraints' hess.
    sparse : bool or None
        Factor the KKT matrix as a sparse matrix (qdldl's LDL^T): None (default) when a derivative
        comes sparse and the matrix is large and sparse enough; True or False to force it.
    mu_init : float
        The first barrier parameter (0.1).
    mu_strategy : {"adaptive", "monotone"}
        How the barrier parameter moves (IPOPT's option of that name): Nocedal, Wächter & Waltz's
        adaptive rule (the default; SIAM J. Optim. 19 (2009) 1674-1693), or W&B's monotone one
        (:mod:`optimizers.barrier_update` says why, with the measurements).
    dual_inf_tol, constr_viol_tol : float
        IPOPT's options of those names: the largest ``|grad f + J^T v|_inf`` (1) and violation
        (1e-4) in the user's units that success allows, besides ``E_0 <= gtol`` (which is of the
        scaled problem: with f scaled down by s_f the user's gradient may be 1/s_f times larger).
        scipy's trust-constr stops when both are at most its gtol: ``hessopt.minimize`` sets them so
        for ``method="trust-constr"``.

    Returns
    -------
    OptimizeResult
        ``x, fun, jac`` (the gradient), ``nit, nfev, njev, nhev, constr_nfev, constr_njev,
        constr_nhev, status, success, message, history`` (columns ``gnorm`` (the Lagrangian's
        gradient), ``violation``, ``mu``, ``alpha``, ``ls``, ``delta_w``, ``restoration``), and scipy
        trust-constr's ``v, constr, constr_violation, lagrangian_grad, optimality`` (the bounds as
        the last group when given), the bound multipliers ``z_lower, z_upper``, the final
        ``barrier_parameter`` and ``kkt_error`` (E_0), ``sparse`` (whether the KKT matrix was
        factored as a sparse matrix) and ``second_order`` (what the second-order check found:
        "passed", with the escapes from saddle points, "skipped: ..." on larger problems).

    Raises
    ------
    ValueError
        Without second derivatives (hess, hessp, operator or lagrangian_hess), for bounds that do
        not fit x0, for gtol, dual_inf_tol or constr_viol_tol not positive or an unknown
        mu_strategy.

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
    tol = DEFAULT_TOL if options.gtol is None else options.gtol
    if not tol > 0:
        raise ValueError(f"gtol (the KKT tolerance) must be positive, got {tol!r}")
    if mu_strategy not in ("monotone", "adaptive"):
        raise ValueError(f"mu_strategy must be 'monotone' or 'adaptive', got {mu_strategy!r}")
    if not (dual_inf_tol > 0 and constr_viol_tol > 0):
        raise ValueError(f"dual_inf_tol and constr_viol_tol must be positive, got {dual_inf_tol!r} and "
                         f"{constr_viol_tol!r}")
    if problem.hess is None and problem.hessp is None and problem.operator is None and lagrangian_hess is None:
        raise ValueError("the interior-point method needs second derivatives: pass hess, hessp, "
                         "operator or lagrangian_hess")
    n = problem.x0.size
    box = problem.feasible
    lower = box.lower if isinstance(box, Box) else np.full(n, -np.inf)
    upper = box.upper if isinstance(box, Box) else np.full(n, np.inf)
    constraint = constraints if constraints is not None else _no_constraints(n)
    view = Constrained(constraint, lower, upper, bounded=isinstance(box, Box))
    x0, note = view.start(problem.x0)
    note = "; ".join(n for n in (problem.note, note) if n) or None
    objective = Objective(problem.fun, x0, problem.jac, problem.hess, problem.hessp, problem.operator, sparse=sparse)
    constraint.fun(objective.x0)   # m, for constraints whose bounds were given as scalars
    hessian = lagrangian_hessian(objective, constraint, lagrangian_hess)
    # small problems take the dense KKT path (optimizers.sparse.dense_reason): dense derivatives then
    size = n + constraint.m + int(np.sum(~constraint.equality))
    dense = sparse is False or (sparse is None and size < SPARSE_MIN_SIZE)
    form = SlackForm(objective, constraint, lower, upper, hessian, objective.x0, dense=dense)
    step = InteriorPoint(objective, form, view, tol=tol, sparse=sparse, mu_init=mu_init, mu_strategy=mu_strategy,
                         dual_inf_tol=dual_inf_tol, constr_viol_tol=constr_viol_tol)

    def counts() -> dict:
        return {**objective.counts(), **constraint.counts()}
    result = run(objective, step, options, feasible=view, note=note, counts=counts)
    if step.solver is not None:
        result.kkt_error = step.solver.optimality_error()
        result.second_order = step.second_order
        result.sparse = bool(step.solver.sparse)
    return result

