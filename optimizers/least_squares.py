"""Nonlinear least squares, min 0.5 ||r(x)||^2, from residuals r and their Jacobian J: Gauss-Newton
with a line search, and Levenberg-Marquardt.

Each step solves a linear least-squares problem with LAPACK (``scipy.linalg.lstsq``, an SVD-based
solver) instead of forming and inverting J^T J, which would square the condition number.

References: J. J. Moré, "The Levenberg-Marquardt algorithm: implementation and theory", Numerical
Analysis, Lecture Notes in Math. 630, Springer 1978; M. D. Hebden, "An algorithm for minimization
using exact second derivatives", AERE TP 515, Harwell 1973; H. B. Nielsen, "Damping parameter in
Marquardt's method", IMM-REP-1999-05, DTU; J. Nocedal and S. J. Wright, *Numerical Optimization*,
2nd ed., §10.3.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.linalg
from scipy.optimize import OptimizeResult

from .bounds import Box, BoxTrustRegion
from .feasible import FeasibleSet, Unconstrained
from .linesearch import backtracking
from .loop import RunOptions, Saddle, Step, Stop, Trial, run
from .methods import feasible_set
from .newton import ProjectedNewton
from .objective import Iterate, Objective, Status, same_point
from .stopping import gradient_norm
from .subproblems import diagonal_shifts, solve_secular
from .trust_region import RadiusControl, TronStep

# Gauss-Newton refinement (_refine) takes steps up to this size relative to x (in the scaled norm):
# the steps a cost rounded at eps cannot resolve are near sqrt(eps) = 1.5e-8 relative and below.
REFINED_STEP = 1e-4
# ... and ends after this many steps in a row that are not the shortest so far.
REFINE_STALLS = 5
EPS = np.finfo(float).eps
# A Levenberg-Marquardt trial step is taken when its gain ratio exceeds this (Nielsen 1999 takes
# any decrease, rho > 0; a small positive margin keeps steps that gain only rounding out).
LM_ACCEPT_RATIO = 1e-4
# Levenberg-Marquardt's step is taken with ||D p|| within this of the trust radius (relative; Moré 1978's
# sigma): the radius is itself a guess, refined by the gain ratio, and so is a closer parameter.
LM_RADIUS_RTOL = 0.1
# The bounded Levenberg-Marquardt step's CG ends at this residual relative to the projected gradient:
# the Gauss-Newton model is solved as the unconstrained step's least-squares solve is, to rounding.
MODEL_RTOL = 1e-10


class _Residuals:
    """Counted r(x) and J(x), so the cost 0.5 ||r||^2 and its gradient J^T r at one x cost one
    residual and one Jacobian evaluation: J is cached at the last point, r at the last two (the
    current iterate and a trial point), so reporting r at the iterate after a rejected trial
    costs nothing."""

    def __init__(self, residuals: Callable, jac: Callable):
        if not callable(residuals) or not callable(jac):
            raise TypeError("residuals and jac must be callables")
        self._residuals, self._jac = residuals, jac
        self.nfev = self.njev = 0
        self._recent: list[tuple[np.ndarray, np.ndarray]] = []   # (x, r(x)), newest first
        self._jx = self._j = None

    def residuals(self, x: np.ndarray) -> np.ndarray:
        for point, r in self._recent:
            if same_point(x, point):
                return r
        self.nfev += 1
        r = np.atleast_1d(np.asarray(self._residuals(x), dtype=float))
        self._recent = [(x.copy(), r), *self._recent[:1]]
        return r

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        if not same_point(x, self._jx):
            self.njev += 1
            j = np.atleast_2d(np.asarray(self._jac(x), dtype=float))
            if j.shape != (self.residuals(x).size, x.size):
                raise ValueError(f"jac returned shape {j.shape}, expected "
                                 f"{(self.residuals(x).size, x.size)}")
            self._jx, self._j = x.copy(), j
        return self._j

    def counts(self) -> dict:
        """The evaluations so far."""
        return {"nfev": self.nfev, "njev": self.njev}

    def cost(self, x: np.ndarray) -> float:
        r = self.residuals(x)
        return 0.5 * float(r @ r)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return self.jacobian(x).T @ self.residuals(x)

    def gauss_newton_product(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``J^T (J v)``, the Gauss-Newton matrix times v (J is not a new evaluation at x)."""
        jacobian = self.jacobian(x)
        return jacobian.T @ (jacobian @ v)


def default_maxiter(n: int) -> int:
    """Iterations: 100 (n + 1), MINPACK's default for lmder (and scipy's for method 'lm')."""
    return 100 * (n + 1)


def least_squares_lm(residuals: Callable, x0, jac: Callable, callback: Callable | None = None, *,
                     method: str = "lm", gtol: float | None = None, ftol: float = 1e-10,
                     xtol: float = 1e-10, maxiter: int | None = None, disp: bool = False,
                     factor: float = 10.0, keep_iterates: bool = True,
                     bounds: FeasibleSet | tuple | None = None) -> OptimizeResult:
    """Minimize 0.5 ||r(x)||^2 given ``residuals(x)`` (shape (m,)) and ``jac(x)`` (shape (m, n)).

    ``method="gn"``: Gauss-Newton steps p = argmin ||J p + r|| (minimum norm when J is rank
    deficient) with a backtracking Armijo search, unit step first.
    ``method="lm"``: Levenberg-Marquardt steps p = argmin ||J p + r||^2 + lambda ||D p||^2, lambda
    chosen so that ||D p|| <= Delta, a trust radius (first ``factor`` ||D x0||, MINPACK's ``factor``)
    that moves with the ratio rho of actual to predicted reduction (Moré 1978; :class:`TrustRadius`,
    :class:`DampedSteps`). D holds the largest column norms of J seen so far (Moré), which makes the
    method invariant to the scaling of x.

    Stops with status 0 when the gradient J^T r passes the test of :mod:`optimizers.stopping`
    (``||J^T r||_inf <= gtol``; by default the relative gradient ``<= 1e-8``), when a step
    reduces the cost by less than ``ftol`` relative (actual and predicted), or when it moves x by
    less than ``xtol`` relative (for "gn" the prediction and the step are the full Gauss-Newton
    step's, which the line search may cut); the message says which. Without bounds, a Levenberg-Marquardt run
    that succeeded or stopped at working precision (its damping slows the last steps, and its cost
    stops resolving them) is refined by full Gauss-Newton steps while they contract
    (:func:`_refine`: x to the rounding floor, which the cost cannot resolve). Returns x, cost,
    fun (the residuals), jac
    (the Jacobian), grad, nfev, njev, nit, status, success, message and history, a column-wise
    :class:`~optimizers.history.History` (f = cost, gnorm, step, lambda for LM, the cumulative
    nfev and njev of residuals and Jacobians, and the iterates x unless ``keep_iterates`` is
    False).

    With ``bounds`` (a :class:`~optimizers.bounds.Box` or a pair ``(lower, upper)``), x0 is
    projected into the box and the residuals are only evaluated in it. ``method="lm"`` is then
    Levenberg-Marquardt as the trust-region method it is (Moré 1978) with TRON's bounded step
    (Lin & Moré 1999; :class:`~optimizers.bounds.BoxTrustRegion`) on the Gauss-Newton model,
    products ``J^T (J v)``, in the variables ``D x`` (Moré's scaling, as without bounds) and solved
    to rounding (:class:`BoundedLevenbergMarquardt`); ``method="gn"`` is projected Gauss-Newton, Bertsekas' (1982)
    projected Newton method with the least-squares step of the columns of J of the variables not
    held at a bound. Success then means the projected gradient passes the gradient test or a taken
    step passes the ``ftol`` or ``xtol`` test (``factor`` plays no part), and the result has
    ``active_mask``.

    Raises
    ------
    TypeError
        If residuals or jac is not callable.
    ValueError
        For an unknown method, residuals and Jacobian of inconsistent shapes, or residuals that
        are not finite at x0 (as scipy's least_squares).

    Examples
    --------
    Fit y = a exp(-b t) to exact data:

    >>> import numpy as np
    >>> from optimizers import least_squares_lm
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> y = 2 * np.exp(-0.5 * t)
    >>> residuals = lambda x: x[0] * np.exp(-x[1] * t) - y
    >>> jac = lambda x: np.stack([np.exp(-x[1] * t), -x[0] * t * np.exp(-x[1] * t)], axis=1)
    >>> least_squares_lm(residuals, np.array([1.0, 1.0]), jac).x.round(6)
    array([2. , 0.5])
    """
    if method not in ("lm", "gn"):
        raise ValueError(f"method must be 'lm' or 'gn', got {method!r}")
    counted = _Residuals(residuals, jac)
    feasible = feasible_set(bounds)
    x0, note = feasible.start(np.array(x0, dtype=float))
    objective = Objective(counted.cost, x0, counted.gradient, hessp=counted.gauss_newton_product)
    if not np.all(np.isfinite(counted.residuals(objective.x0))):   # scipy's least_squares refuses it
        raise ValueError("the residuals are not finite at x0")
    step = least_squares_step(feasible, method, objective, counted, ftol=ftol, xtol=xtol, factor=factor)
    result = run(objective, step, RunOptions(gtol, maxiter, callback, disp, keep_iterates), feasible=feasible,
                 note=note, counts=counted.counts)
    if isinstance(step, LevenbergMarquardt) and result.status in (Status.SUCCESS, Status.PRECISION_LOSS):
        _refine(result, counted, step.scale)
    result.cost, result.grad = result.fun, result.jac
    result.fun, result.jac = counted.residuals(result.x), counted.jacobian(result.x)
    return result


def _refine(result: OptimizeResult, counted: _Residuals, scale: np.ndarray) -> None:
    """Full Gauss-Newton steps from where a run succeeded or the cost stopped resolving progress,
    ending at the point whose next step is the shortest.

    Near a minimizer a step that shortens the residual by d changes the cost by about d^2, so costs
    rounded at eps ||r||^2 stop telling better from worse when d nears sqrt(eps) ||r||, while the
    Gauss-Newton step, a linear least-squares solution, is accurate to about eps ||J^+|| ||r||. Its
    iteration converges (linearly, at the rate ||sum r_i H_i|| / sigma_min(J)^2; Dennis & Schnabel,
    1983, thm. 10.2.1) to the minimizer when that rate is below 1, and its step measures the distance
    to it, so the point with the shortest step seen is kept. The iteration runs while its steps are
    below ``REFINED_STEP`` relative (steps the cost cannot resolve are far smaller; a large-residual
    problem, where Gauss-Newton diverges with steps that may shrink, has steps of x's size) and above
    the rounding of x itself (16 eps ||D x||), and ends after ``REFINE_STALLS`` steps without a
    shorter one (rounding noise, or a rate near 1). Each kept point is recorded in the history;
    ``result``'s x, fun, jac, nit, the counts and its message are updated.
    """
    x = result.x

    def step(point):
        jacobian, r = counted.jacobian(point), counted.residuals(point)
        finite = np.all(np.isfinite(jacobian)) and np.all(np.isfinite(r))
        return scipy.linalg.lstsq(jacobian, -r)[0] if finite else None

    def length(v):
        return float(np.linalg.norm(scale * v))

    p = step(x)
    best, kept, stalls = (x, p), 0, 0
    for _ in range(default_maxiter(x.size)):
        if p is None or not 16 * EPS * length(x) < length(p) <= REFINED_STEP * length(x):
            break
        x = x + p
        p = step(x)
        if p is not None and length(p) < length(best[1]):
            _record(result, counted, x, length(x - best[0]))
            best, kept, stalls = (x, p), kept + 1, 0
        elif (stalls := stalls + 1) >= REFINE_STALLS:
            break
    if kept:
        result.x, result.fun = best[0], counted.cost(best[0])
        result.jac = counted.gradient(best[0])
        result.message += (f" Then Gauss-Newton steps refined x ({kept} kept; the next step from it: "
                           f"{length(best[1]):.1e} in the scaled norm).")
    result.update(counted.counts())


def _record(result: OptimizeResult, counted: _Residuals, x: np.ndarray, step: float) -> None:
    """One refinement step as an iteration of the run's history (no damping: lambda 0)."""
    result.nit += 1
    fields = {"nit": result.nit, "f": counted.cost(x), "gnorm": gradient_norm(counted.gradient(x)), "step": step}
    if "lambda" in result.history.columns:
        fields["lambda"] = 0.0
    result.history.append(fields, counted.counts(), x)


class TrustRadius:
    """Levenberg-Marquardt's trust radius Delta on the scaled step ||D p|| (Moré 1978), moved with the
    gain ratio rho: a quarter of the step's length when rho < 1/4, doubled when rho > 3/4 and the step
    reached the boundary. The radius follows the length of the step actually tried, so a step that
    failed far out is followed by one within a quarter of it. Multiplying a damping parameter instead
    (Nielsen 1999) sent NIST's MGH10 from its first start down the valley b1 -> 0, and BoxBOD's to the
    data's mean, where this radius reaches both certified solutions."""

    def __init__(self, value: float):
        if not value > 0:
            raise ValueError(f"the trust radius must be positive, got {value}")
        self.value = float(value)

    def update(self, rho: float, length: float) -> bool:
        """Update Delta from rho and the scaled step's length; True when the step is accepted
        (rho > LM_ACCEPT_RATIO). "On the boundary" is a length of at least 0.95 Delta, measured
        on NIST StRD (54/54 each way, evaluations of residuals + Jacobians): 4,048 + 2,813; doubling
        whenever lambda > 0 (also steps the 10% tolerance left at 0.9 Delta) 4,121 + 2,849;
        MINPACK's Delta = 2 ||D p|| when rho >= 3/4 or lambda = 0, 4,397 + 3,001."""
        if not rho >= 0.25:
            self.value = 0.25 * length
        elif rho > 0.75 and length >= 0.95 * self.value:
            self.value *= 2.0
        return rho > LM_ACCEPT_RATIO


class DampedSteps:
    """The Levenberg-Marquardt steps of one iterate: q = argmin ||J q + r|| subject to ||q|| <= radius
    and its parameter lambda, for any radius (``step``): q(lambda) = -(J^T J + lambda I)^-1 J^T r,
    lambda = 0 (the minimum-norm Gauss-Newton step, singular values below rounding dropped) when that
    step is inside, else the root of ||q(lambda)|| = radius to ``LM_RADIUS_RTOL`` (Moré 1978's 10%)
    by the trust-region subproblem's safeguarded Newton iteration on 1/||q(lambda)|| (Hebden 1973,
    Moré & Sorensen 1983; :func:`~optimizers.subproblems.solve_secular`). One SVD J = U S V^T, made
    here once (a rejected trial's smaller radius reuses it), gives every q(lambda): in the
    coordinates of V, J^T J is diag(S^2) and J^T r is S U^T r, so J^T J, which would square J's
    condition number, is never formed."""

    def __init__(self, jacobian: np.ndarray, r: np.ndarray):
        u, s, self.vt = np.linalg.svd(jacobian, full_matrices=False)
        projected = u.T @ r
        kept = s > EPS * max(jacobian.shape) * (s[0] if s.size else 0.0)
        self.gauss_newton = np.where(kept, projected / np.where(kept, s, 1.0), 0.0)
        self.shifts = diagonal_shifts(s ** 2)
        self.gradient = s * projected    # J^T r in the coordinates of V

    def step(self, radius: float, lam: float = 0.0) -> tuple[np.ndarray, float]:
        """(q, lambda) within ``radius``, from Moré's first guess: ``lam``, the last lambda, when it
        lies in (0, ||J^T r|| / radius), else a thousandth of that bound."""
        if np.linalg.norm(self.gauss_newton) <= radius:
            return -(self.vt.T @ self.gauss_newton), 0.0
        upper = float(np.linalg.norm(self.gradient)) / radius   # ||q(lambda)|| < ||J^T r|| / lambda
        start = lam if 0.0 < lam < upper else 1e-3 * upper   # Moré's first guess
        step, lam = solve_secular(self.shifts, self.gradient, radius=radius, lam0=start, rtol=LM_RADIUS_RTOL)
        return self.vt.T @ step, lam


class _LeastSquaresStep(Step):
    """What Gauss-Newton and Levenberg-Marquardt share: a trial is taken when it lowers the cost,
    and a taken step that changes the cost by less than ``ftol`` (relative, actual and predicted)
    or x by less than ``xtol`` (relative, in the scaled norm ||D x||) ends the run with success.
    Predicted reduction and step are the model's own (MINPACK's and scipy's meaning): for
    Gauss-Newton those of the full step, so a line search cut short on a curved cost is not
    mistaken for convergence."""

    messages = {Status.SUCCESS: "The gradient test on J^T r passed."}

    def __init__(self, objective: Objective, counted: _Residuals, *, ftol: float, xtol: float):
        self.objective, self.counted, self.ftol, self.xtol = objective, counted, ftol, xtol
        self.scale = np.ones(objective.x0.size)   # D: x measured unscaled unless a step says so

    def default_maxiter(self, n: int) -> int:
        return default_maxiter(n)

    def fields(self) -> dict:
        """The step's own history fields, besides the step length."""
        return {}

    def start(self, point: Iterate) -> dict:
        return {"step": 0.0, **self.fields()}

    def taken(self, point: Iterate, x_new: np.ndarray, cost_new: float, model_step: np.ndarray,
              predicted: float, fields: dict) -> Trial:
        """The trial to x_new, from the model's step ``model_step`` and its predicted reduction:
        taken when it lowers the cost, with the small-change tests."""
        if not cost_new < point.f:
            return Trial(None, point.f, {"step": 0.0, **fields})
        model_moved = float(np.linalg.norm(self.scale * model_step))
        size = float(np.linalg.norm(self.scale * point.x))
        reduction = point.f - cost_new
        stop = None
        if max(reduction, predicted) <= self.ftol * point.f:
            stop = Stop(Status.SUCCESS, "Relative reduction of the cost below ftol.")
        elif model_moved <= self.xtol * (size + self.xtol):
            stop = Stop(Status.SUCCESS, "Relative step size below xtol.")
        return Trial(x_new, cost_new, {"step": float(np.linalg.norm(self.scale * (x_new - point.x))), **fields},
                     stop)


class GaussNewton(_LeastSquaresStep):
    """Gauss-Newton direction (least-squares solution of J p = -r) and a backtracking search: a
    line-search descent."""

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        x, cost, g = point.x, point.f, point.g
        jacobian = self.counted.jacobian(x)
        p = scipy.linalg.lstsq(jacobian, -self.counted.residuals(x))[0]
        search = backtracking(self.objective, x, p, cost, g)
        if not search.success:
            return Stop(Status.NONFINITE if search.nonfinite else Status.PRECISION_LOSS)
        jp = jacobian @ p
        return self.taken(point, search.x, search.f, p, 0.5 * (jp @ jp), {})   # the model's reduction at p


class LevenbergMarquardt(_LeastSquaresStep):
    """Levenberg-Marquardt as the trust-region method it is (Moré 1978): the step within
    ``||D p|| <= Delta`` (:class:`DampedSteps`, on the columns of J scaled by D), the first radius
    ``factor ||D x0||`` (MINPACK's ``factor``), then moved by the ratio rho of actual to predicted
    reduction (:class:`TrustRadius`). A NaN/inf trial counts as a failed one; when the step no longer
    changes x, the run ends at working precision. ``factor`` 10 lies between scipy's 'trf' (1) and
    MINPACK (100), measured, not derived: 100 misses NIST's MGH10 and BoxBOD from start 1 (as scipy's
    'lm'), 1 ends the two-logarithm fit of docs/coming-from/scipy.md from (1, 1, 1, 2, 1) at cost 3.743,
    not its 3.717 (scipy's 'trf' ends at the symmetric point, 3.793); 10 reaches both."""

    def __init__(self, objective: Objective, counted: _Residuals, *, ftol: float, xtol: float,
                 factor: float):
        super().__init__(objective, counted, ftol=ftol, xtol=xtol)
        if not factor > 0:
            raise ValueError(f"factor must be positive, got {factor}")
        self.factor, self.radius, self.lam = float(factor), None, 0.0
        self._steps: tuple | None = None   # (x, D, its DampedSteps): the SVD of the last iterate
        self.scale = np.zeros(objective.x0.size)   # Moré's D: the largest column norms of J seen

    def fields(self) -> dict:
        """The Levenberg-Marquardt parameter of the last trial (in the scaled variables)."""
        return {"lambda": self.lam}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        x, cost, g = point.x, point.f, point.g
        jacobian, r = self.counted.jacobian(x), self.counted.residuals(x)
        self.scale = np.maximum(self.scale, np.linalg.norm(jacobian, axis=0))
        scale = np.where(self.scale > 0, self.scale, 1.0)
        if self.radius is None:
            self.radius = TrustRadius(self.factor * float(np.linalg.norm(scale * x)) or self.factor)
        # Solved for q = D p, on the columns of J scaled to D's units: the SVD drops singular values
        # below eps times the largest, so columns of J that differ by 1e16 in size (MGH10 down its
        # valley) would lose the short ones' directions and predict no reduction where there is one.
        if self._steps is None or not (np.array_equal(self._steps[0], x) and np.array_equal(self._steps[1], scale)):
            self._steps = (x, scale, DampedSteps(jacobian / scale, r))   # a new iterate: its SVD
        q, self.lam = self._steps[2].step(self.radius.value, self.lam)
        p = q / scale
        fields = self.fields()
        x_new = x + p
        if np.array_equal(x_new, x):
            return Stop(Status.PRECISION_LOSS)
        jp = jacobian @ p
        predicted = -(g @ p + 0.5 * (jp @ jp))
        cost_new = self.objective.fun(x_new)
        rho = (cost - cost_new) / predicted if np.isfinite(cost_new) and predicted > 0 else -np.inf
        if self.radius.update(rho, float(np.linalg.norm(q))):
            return self.taken(point, x_new, cost_new, p, predicted, fields)
        return Trial(None, cost, {"step": 0.0, **fields})


class _ProjectedGaussNewton(ProjectedNewton):
    """Projected Gauss-Newton: Bertsekas' projected Newton step with the least-squares solution
    of ``J_F d_F = -r`` on the variables F not held at a bound (minimum norm where J_F is rank
    deficient)."""

    def __init__(self, objective: Objective, box: Box, counted: _Residuals):
        super().__init__(objective, box)
        self.counted = counted
        self.model = (np.zeros(0), 0.0)

    def search(self, point: Iterate):
        self.model = (np.zeros(0), 0.0)   # no free variable: no Gauss-Newton step this time
        return super().search(point)

    def reduced_step(self, point: Iterate, free: np.ndarray, g_free: np.ndarray) -> np.ndarray:
        jacobian = self.counted.jacobian(point.x)
        step = scipy.linalg.lstsq(jacobian[:, free], -self.counted.residuals(point.x))[0]
        jp = jacobian[:, free] @ step
        self.model = (step, 0.5 * float(jp @ jp))
        return step

    def model_change(self) -> tuple[np.ndarray, float]:
        """The last full Gauss-Newton step on the free variables and its model's reduction
        0.5 ||J_F d_F||^2, which the arc search may have cut short."""
        return self.model


@functools.singledispatch
def least_squares_step(feasible: FeasibleSet, method: str, objective: Objective, counted: _Residuals, *,
                       ftol: float, xtol: float, factor: float) -> Step:
    """The step of ``method`` ("lm" or "gn") in ``feasible``: Levenberg-Marquardt or Gauss-Newton;
    in a box TRON's trust-region step on the Gauss-Newton model or projected Gauss-Newton, with the
    same small-change tests (``factor`` then plays no part)."""
    raise TypeError(f"least squares takes no {type(feasible).__name__}")


@least_squares_step.register
def _(feasible: Unconstrained, method: str, objective: Objective, counted: _Residuals, *, ftol: float,
      xtol: float, factor: float) -> Step:
    if method == "lm":
        return LevenbergMarquardt(objective, counted, ftol=ftol, xtol=xtol, factor=factor)
    return GaussNewton(objective, counted, ftol=ftol, xtol=xtol)


@least_squares_step.register
def _(feasible: Box, method: str, objective: Objective, counted: _Residuals, *, ftol: float,
      xtol: float, factor: float) -> Step:
    if method == "lm":
        levenberg_marquardt = BoundedLevenbergMarquardt(objective, feasible, counted)
        return _SmallChanges(levenberg_marquardt, ftol=ftol, xtol=xtol, model_change=levenberg_marquardt.model_change)
    gauss_newton = _ProjectedGaussNewton(objective, feasible, counted)
    return _SmallChanges(gauss_newton, ftol=ftol, xtol=xtol, model_change=gauss_newton.model_change)


class BoundedLevenbergMarquardt(TronStep):
    """Levenberg-Marquardt in a box: TRON's bounded trust-region step (Lin & Moré 1999) on the
    Gauss-Newton model, in the variables ``D x`` with Moré's (1978) scaling D, the largest column
    norms of J seen so far, so that the region is his ellipsoid ``||D p|| <= radius`` and the
    iterates do not depend on how x is scaled (as the unconstrained :class:`LevenbergMarquardt`).

    The radius starts at the length of the model's Cauchy step, ``||g~||^3 / ||J D^-1 g~||^2`` with
    ``g~ = D^-1 pg`` (Sartenaer 1997, "Automatic determination of an initial trust region in
    nonlinear programming"), at most ``||D x0||``: ``||D x0||`` itself, MINPACK's and scipy TRF's
    with ``x_scale='jac'``, and ``min(||g~||, ||D x0||)`` sent the robust Lotka-Volterra fit of
    notebook 09 into a far valley, on some OpenBLAS kernels or all.

    The model's CG runs until its residual is at rounding level (:data:`MODEL_RTOL`), not to an
    inexact-Newton forcing term: that term is read from the size of the gradient, which a cost of
    thousands holds at its loosest (0.5) for the whole run, and Gauss-Newton steps solved to half
    their residual converge linearly, with small reductions an ftol test took for convergence."""

    def __init__(self, objective: Objective, box: Box, counted: _Residuals):
        self.counted, self.column_norms = counted, np.zeros(objective.x0.size)
        scale, x0 = self._scale(objective.x0), objective.x0
        size = float(np.linalg.norm(scale * x0))
        gradient = box.projected_gradient(x0, objective.grad(x0)) / scale
        length = float(np.linalg.norm(gradient))
        curvature = float(np.sum((counted.jacobian(x0) @ (gradient / scale)) ** 2))   # g~^T D^-1 J^T J D^-1 g~
        cauchy = length ** 3 / curvature if curvature > 0 else length
        radius = (min(cauchy, size) if size > 0 else cauchy) or 1.0
        super().__init__(objective, box, RadiusControl(radius, 1e10 * max(radius, size)), dense=False,
                         eta=LM_ACCEPT_RATIO)
        self.last_step = None

    def _scale(self, x: np.ndarray) -> np.ndarray:
        """Moré's D after J(x): the largest column norms of J so far, 1 for a column only ever 0."""
        self.column_norms = np.maximum(self.column_norms, np.linalg.norm(self.counted.jacobian(x), axis=0))
        return np.where(self.column_norms > 0, self.column_norms, 1.0)

    def _model(self, point: Iterate, saddle: Saddle | None) -> _ScaledModel:
        scale = self._scale(point.x)
        escape = None if saddle is None else scale * saddle.direction
        scaled = BoxTrustRegion(scale * point.x, point.g / scale, lambda v: point.matvec(v / scale) / scale,
                                Box(self.box.lower * scale, self.box.upper * scale), alpha=self.cauchy_alpha,
                                rtol=MODEL_RTOL, escape=escape)
        return _ScaledModel(scaled, scale, self.box, point.x)

    def _trial(self, x: np.ndarray, g: np.ndarray, step, saddle: Saddle | None) -> tuple:
        self.last_step = step
        return super()._trial(x, g, step, saddle)

    def model_change(self) -> tuple[np.ndarray, float]:
        """The last trial's step and its model's predicted reduction: an ftol stop needs both the
        actual and the predicted reduction small (MINPACK's test; scipy's asks the ratio of the two
        to exceed 1/4), so a step the Gauss-Newton model predicts badly (a large residual) does not
        end the run because it gained little."""
        return self.last_step.p, self.last_step.decrease


class _ScaledModel:
    """A :class:`~optimizers.bounds.BoxTrustRegion` in the variables ``D x``, answering in x: the
    trial point exactly on the bounds the scaled one met, and ``region_norm`` ``||D p||``, the length
    the radius is measured in."""

    def __init__(self, scaled: BoxTrustRegion, scale: np.ndarray, box: Box, x: np.ndarray):
        self.scaled, self.scale, self.box, self.x = scaled, scale, box, x

    @property
    def alpha(self) -> float:
        return self.scaled.alpha

    def solve(self, radius: float) -> _ScaledSolution:
        step = self.scaled.solve(radius)
        lower, upper = self.scaled.box.lower, self.scaled.box.upper
        x = np.where(step.x <= lower, self.box.lower, np.where(step.x >= upper, self.box.upper,
                                                               self.box.project(step.x / self.scale)))
        return _ScaledSolution(x, x - self.x, step.decrease, step.on_boundary, step.products,
                               float(np.linalg.norm(step.p)))


class _ScaledSolution(NamedTuple):
    """:class:`~optimizers.bounds.BoxSolution` in x, with the scaled step's length."""
    x: np.ndarray
    p: np.ndarray
    decrease: float
    on_boundary: bool
    products: int
    region_norm: float


class _SmallChanges(Step):
    """A bounded step with the small-change tests of the unconstrained ones (scipy's ``ftol`` and
    ``xtol`` in a box): a taken trial that lowers the cost by less than ``ftol`` relative, or moves x
    by less than ``xtol`` relative, ends the run with success once recorded. ``model_change()``, for
    a line-search step, gives its model's full step and predicted reduction: then both must be small
    too (a search cut short is not convergence); a trust-region step is its model's step."""

    def __init__(self, step: Step, *, ftol: float, xtol: float,
                 model_change: Callable[[], tuple[np.ndarray, float]] | None = None):
        self.step, self.ftol, self.xtol, self.model_change = step, ftol, xtol, model_change
        self.messages, self.warning = step.messages, step.warning

    def default_maxiter(self, n: int) -> int:
        return self.step.default_maxiter(n)

    def start(self, point: Iterate) -> dict:
        return self.step.start(point)

    def test(self, point: Iterate, test):
        return self.step.test(point, test)

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        trial = self.step(point, saddle)
        if isinstance(trial, Stop) or trial.x is None or trial.stop is not None:
            return trial
        moved, size = np.linalg.norm(trial.x - point.x), np.linalg.norm(point.x)
        reduction = point.f - trial.f
        if self.model_change is not None:
            full_step, predicted = self.model_change()
            moved, reduction = max(moved, float(np.linalg.norm(full_step))), max(reduction, predicted)
        if reduction <= self.ftol * point.f:
            return trial._replace(stop=Stop(Status.SUCCESS, "Relative reduction of the cost below ftol."))
        if moved <= self.xtol * (size + self.xtol):
            return trial._replace(stop=Stop(Status.SUCCESS, "Relative step size below xtol."))
        return trial
