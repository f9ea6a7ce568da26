"""Trust-region methods: one outer loop, four subproblem solvers.

The step (:class:`TrustRegion`, run by the loop of :mod:`optimizers.loop`) is Nocedal & Wright's
Algorithm 4.1 with a pluggable model: at each iterate a subproblem solver from
:mod:`optimizers.subproblems` is built once and asked for a step for the current radius; the
reduction ratio rho decides acceptance and the new radius. The same step runs the adaptive cubic
regularization of :mod:`optimizers.arc`, with ``sigma`` in place of the radius.

Compared with scipy's trust-region methods: the radius shrinks to a fraction of the rejected step
found by interpolating f along it, grows only when a good step hit the boundary, has no small cap
and, by default, starts from the gradient scale; in the Krylov methods the reduction ratio is
nonmonotone (measured from the highest of the last few accepted values, so steps along curved
valleys are not cut short); a NaN/inf trial value shrinks the radius instead of failing; rejected
steps reuse the subproblem's Krylov/CG work; a first-order point where the Hessian has clearly
negative curvature is left along it rather than reported as a minimum, the radius there at least
long enough for the curvature's decrease to exceed rounding.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., ch. 4 and 7;
A. R. Conn, N. I. M. Gould and Ph. L. Toint, *Trust-Region Methods*, SIAM 2000, §17.1 (radius
update by interpolation) and §17.4.2 (reduction ratio at working precision); Ph. L. Toint,
"Non-monotone trust-region algorithms for nonlinear optimization subject to convex constraints",
Math. Programming 77 (1997), and L. Grippo, F. Lampariello and S. Lucidi, "A nonmonotone line
search technique for Newton's method", SIAM J. Numer. Anal. 23 (1986) (nonmonotone acceptance).
"""
from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

from .bounds import Box, BoxTrustRegion
from .feasible import UNCONSTRAINED, FeasibleSet, Unconstrained
from .krylov import EPS, norm
from .loop import RunOptions, Saddle, Step, Stop, Trial, curvature_check, hessian_matrix
from .methods import Problem, declared
from .objective import Iterate, Objective, Status
from .preconditioning import Preconditioning, krylov_preconditioning
from .sparse import LDLFactorization, report_sparse
from .stopping import noise, noises
from .subproblems import Dogleg, LanczosGLTR, MoreSorensen, SteihaugCG, SubproblemSolution

# Default memory of the nonmonotone Krylov methods: on the MGH set 10 saves a quarter of the
# evaluations, 15-50 about half. The dense methods stay monotone: nonmonotone, they followed
# the asymptotic valleys of Beale and Powell's badly scaled function away from the minimum.
NONMONOTONE_MEMORY = 20
# A step is accepted when its reduction ratio exceeds eta. With bounds the step is TRON's and so
# is the threshold, eta_0 = 1e-4 of Lin & Moré's dtron: on the minimal surface problem (n = 10,000)
# it takes 64 iterations and 892 products where 0.15 takes 82 and 1,152; the other bounded
# problems run alike with either.
ETA, TRON_ETA = 0.15, 1e-4
# A poor step at least as long as the radius leaves this fraction of it (Lin & Moré's sigma_2).
RADIUS_SHRINK = 0.5
# The radius rules (N&W Alg. 4.1, CGT §17.1): shrink below rho 1/4; after a step on the boundary
# with rho >= 3/4, grow by 2, by 4 from rho 0.9; backtrack to a fraction in [0.1, 0.5] of a poor step.
SHRINK_BELOW, GROW_FROM, GROW_FAST_FROM, GROWTH, FAST_GROWTH = 0.25, 0.75, 0.9, 2.0, 4.0
BACKTRACK_RANGE, BACKTRACK_UNKNOWN = (0.1, 0.5), 0.25


class Control(ABC):
    """The quantity that bounds the model's steps, updated from the reduction ratio: the trust
    radius (:class:`RadiusControl`, its ``limit`` a cap) or the cubic weight sigma
    (:class:`~optimizers.arc.SigmaControl`, its ``limit`` a floor). ``name`` is its history
    column."""

    name: str

    def __init__(self, value: float, limit: float):
        self.value, self.limit = value, limit

    @abstractmethod
    def update(self, rho: float, step: SubproblemSolution, step_norm: float, backtrack: float) -> None:
        """Move ``value`` after a trial of reduction ratio ``rho`` (NaN, or -inf when rejected) and
        length ``step_norm``; ``backtrack`` is the interpolated fraction of the step where f's
        quadratic model along it has its minimum (:func:`backtrack_fraction`)."""

    def leave_saddle(self, f: float, curvature: float) -> None:
        """Set ``value`` for the first step from a saddle of value ``f`` along a direction of
        ``curvature < 0``; by default unchanged (ARC's cubic term sets the escape's length)."""
        return None


class RadiusControl(Control):
    """The trust radius: shrink to an interpolated fraction of a poor step, or to half of itself
    where that fraction would not shorten it (TRON's steps may be longer than the radius; else a
    rejected step could leave the radius as it was and be tried again unchanged). Lin & Moré
    1999's min(fraction, sigma_2 radius) for every step shrank further than needed after long
    projected steps: 228 evaluations instead of 106 on scipy's TNC test 1b; after a good
    step that hit the boundary, grow by 2, or by 4 when the model was very accurate (rho >= 0.9),
    up to the cap ``limit``."""

    name = "radius"

    def update(self, rho: float, step: SubproblemSolution, step_norm: float, backtrack: float) -> None:
        if not rho >= SHRINK_BELOW:  # also NaN
            shorter = backtrack * step_norm
            self.value = shorter if shorter < self.value else RADIUS_SHRINK * self.value
        elif rho >= GROW_FROM and step.on_boundary:
            self.value = min((FAST_GROWTH if rho >= GROW_FAST_FROM else GROWTH) * self.value, self.limit)

    @staticmethod
    def updated(radius: np.ndarray, limit: np.ndarray, rho: np.ndarray, on_boundary: np.ndarray,
                step_norm: np.ndarray, backtrack: np.ndarray) -> np.ndarray:
        """``update`` row by row (a batch of problems, :mod:`optimizers.batched`): the new radii."""
        shorter = backtrack * step_norm
        shrunk = np.where(shorter < radius, shorter, RADIUS_SHRINK * radius)
        grown = np.minimum(np.where(rho >= GROW_FAST_FROM, FAST_GROWTH, GROWTH) * radius, limit)
        return np.where(rho >= SHRINK_BELOW, np.where((rho >= GROW_FROM) & on_boundary, grown, radius), shrunk)

    def leave_saddle(self, f: float, curvature: float) -> None:
        """At least the radius at which the model's decrease along the negative curvature,
        ``|curvature| radius^2 / 2``, is above the rounding level of f: a shorter step is judged
        by rounding alone, rejected, and the radius shrinks until the saddle is reported without
        its escape ever being measured (HS25 from x0, a plateau where g ~ 2e-8 set the radius)."""
        self.value = min(max(self.value, math.sqrt(2.0 * noise(f) / -curvature)), self.limit)

    @staticmethod
    def left_saddle(radius: np.ndarray, limit: np.ndarray, f: np.ndarray, curvature: np.ndarray) -> np.ndarray:
        """``leave_saddle`` row by row: the new radii."""
        return np.minimum(np.maximum(radius, np.sqrt(2.0 * noises(f) / -curvature)), limit)


def backtrack_fraction(f: float, f_trial: float, slope: float) -> float:
    """Where, as a fraction in [0.1, 0.5] of the step, the quadratic through f(x), its slope
    ``g^T p`` and f(x + p) has its minimum (CGT §17.1); 0.25 when that says nothing."""
    curvature = f_trial - f - slope
    if math.isfinite(f_trial) and slope < 0 < curvature:
        return min(max(-slope / (2.0 * curvature), BACKTRACK_RANGE[0]), BACKTRACK_RANGE[1])
    return BACKTRACK_UNKNOWN


def backtrack_fractions(f: np.ndarray, f_trial: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """:func:`backtrack_fraction` row by row."""
    curvature = f_trial - f - slope
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return np.where(np.isfinite(f_trial) & (slope < 0) & (curvature > 0),
                        np.clip(-slope / (2.0 * curvature), *BACKTRACK_RANGE), BACKTRACK_UNKNOWN)


def reduction_ratio(f: float, f_trial: float, decrease: float) -> float:
    """Actual over predicted decrease; both get the rounding level of f so that steps at working
    precision are judged by the model rather than by rounding (CGT §17.4.2). NaN if f_trial is."""
    if not math.isfinite(f_trial):
        return np.nan
    rounding = noise(f)
    if decrease + rounding <= 0:
        return -np.inf
    return (f - f_trial + rounding) / (decrease + rounding)


def reduction_ratios(f: np.ndarray, f_trial: np.ndarray, decrease: np.ndarray) -> np.ndarray:
    """:func:`reduction_ratio` row by row."""
    rounding = noises(f)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return np.where(~np.isfinite(f_trial), np.nan, np.where(
            decrease + rounding <= 0, -np.inf, (f - f_trial + rounding) / (decrease + rounding)))


class TrustRegion(Step):
    """One trial of a trust-region method (N&W Alg. 4.1), or of ARC with sigma for the radius.

    ``make_solver(g, H)`` builds the subproblem solver at an accepted point (H the matrix
    ``point.sparse_hessian`` or ``point.hessian`` when ``dense``, else the products
    ``point.matvec``), once per point: a rejected step shrinks the radius and asks the same solver
    again. ``control`` holds the radius (or sigma) and updates it from rho; a step is accepted when
    rho exceeds ``eta`` (default :data:`ETA`).

    With ``memory > 1`` the reduction ratio is nonmonotone (Toint 1997): the actual decrease from
    the reference f_r = max of the last ``memory`` accepted values over the predicted decrease plus
    f_r - f, so a step may raise f a little while f_r still falls with every ``memory`` steps
    (GLL 1986). In the narrow curved valleys of badly scaled problems (Meyer, penalty II, Biggs
    EXP6) the radius then follows the valley instead of collapsing to steps that zigzag across it.

    At a saddle the model is built without its linear term, so every solver steps along negative
    curvature; the step is turned downhill. In a box the step is TRON's (:class:`TronStep`).
    """

    #: the acceptance threshold when none is given
    default_eta = ETA

    def __init__(self, objective: Objective, make_solver: Callable | None, control: Control, *,
                 dense: bool, eta: float | None = None, memory: int = 1,
                 preconditioning: Preconditioning | None = None):
        self.objective, self.make_solver, self.control = objective, make_solver, control
        self.dense, self.memory = dense, memory
        self.eta = self.default_eta if eta is None else eta
        self.preconditioning = preconditioning
        self.model, self.finite_trial = None, True
        self.feasible: FeasibleSet = UNCONSTRAINED
        self.accepted_values: deque = deque(maxlen=memory)

    def default_maxiter(self, n: int) -> int:
        return default_maxiter(n)

    def start(self, point: Iterate) -> dict:
        self.accepted_values.append(point.f)
        return {self.control.name: self.control.value, "step": 0.0, "rho": np.nan}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        x, f, g, control = point.x, point.f, point.g, self.control
        fresh = self.model is None
        if fresh:
            if saddle:
                control.leave_saddle(f, saddle.curvature)
            self.model = self._model(point, saddle)
        step = self.model.solve(control.value)
        if fresh and self.preconditioning is not None:
            self.preconditioning.observe(self.model.products)
        step, x_trial = self._trial(x, g, step, saddle)
        step_norm = norm(step.p)
        if not (math.isfinite(step_norm) and np.isfinite(step.decrease)):  # H(x) is not finite
            return Stop(Status.NONFINITE, _NONFINITE_STEP)
        if _negligible(step.p, step_norm, x):
            # the radius (or 1/sigma) collapsed: say why no step can be taken
            status = (Status.NONFINITE if not self.finite_trial
                      else Status.NOT_A_MINIMUM if saddle else Status.PRECISION_LOSS)
            message = _COLLAPSED.get(status)
            return Stop(status, message and message.format(name=control.name, value=control.value))
        f_trial = self.objective.fun(x_trial)
        reference = max(self.accepted_values)
        rho = reduction_ratio(reference, f_trial, step.decrease + (reference - f))
        g_trial = self.objective.grad(x_trial) if rho > self.eta else None
        finite_gradient = g_trial is None or bool(np.isfinite(g_trial).all())
        self.finite_trial = math.isfinite(f_trial) and finite_gradient
        accepted = rho > self.eta and finite_gradient and _acceptable(
            f, reference, f_trial, step.decrease, self.feasible.stationarity(x, g),
            self.feasible.stationarity(x_trial, g_trial))
        region_norm = getattr(step, "region_norm", None)   # a preconditioner's norm
        control.update(rho if accepted else -np.inf, step, step_norm if region_norm is None else region_norm,
                       backtrack_fraction(f, f_trial, g @ step.p))
        fields = {control.name: control.value, "step": step_norm, "rho": rho}
        if not accepted:
            return Trial(None, f, fields)
        self._leave_model()
        self.accepted_values.append(f_trial)
        return Trial(x_trial, f_trial, fields)

    def _model(self, point: Iterate, saddle: Saddle | None):
        """The subproblem solver of an accepted point (at a saddle, without the linear term)."""
        hessian = hessian_matrix(point) if self.dense else point.matvec
        if saddle:
            return self.make_solver(np.zeros_like(point.g), hessian)
        preconditioner = None if self.preconditioning is None else self.preconditioning.at(point)
        if preconditioner is None:
            return self.make_solver(point.g, hessian)
        return self.make_solver(point.g, hessian, preconditioner=preconditioner)

    def _trial(self, x: np.ndarray, g: np.ndarray, step, saddle: Saddle | None) -> tuple:
        """The model's step (turned downhill at a saddle) and the trial point ``x + p``."""
        if saddle:
            step = _downhill(step, g)
        return step, x + step.p

    def _leave_model(self) -> None:
        """Done with the model: the trial was accepted."""
        self.model = None


class TronStep(TrustRegion):
    """TRON's trust-region step in a box (:class:`~optimizers.bounds.BoxTrustRegion`, Lin & Moré
    1999, on products with H or with the dense ``point.hessian``): its trial point lies in the box
    (bounds met exactly), the radius update uses the step's length, at a saddle of the bounded
    problem the step follows the direction of negative curvature on the free variables, and each
    Cauchy search starts from the last one's alpha. A step is accepted when rho exceeds TRON's
    eta (:data:`TRON_ETA`)."""

    default_eta = TRON_ETA

    def __init__(self, objective: Objective, box: Box, control: Control, *, dense: bool,
                 eta: float | None = None, memory: int = 1):
        super().__init__(objective, None, control, dense=dense, eta=eta, memory=memory)
        self.box = self.feasible = box
        self.cauchy_alpha = 1.0

    def _model(self, point: Iterate, saddle: Saddle | None) -> BoxTrustRegion:
        products = hessian_matrix(point).__matmul__ if self.dense else point.matvec
        return BoxTrustRegion(point.x, point.g, products, self.box, alpha=self.cauchy_alpha,
                              escape=None if saddle is None else saddle.direction)

    def _trial(self, x: np.ndarray, g: np.ndarray, step, saddle: Saddle | None) -> tuple:
        return step, step.x

    def _leave_model(self) -> None:
        self.cauchy_alpha = self.model.alpha
        super()._leave_model()


_NONFINITE_STEP = ("The Hessian is not finite at the last iterate: no step can be computed; "
                   "returning the best point found")
_COLLAPSED = {
    Status.PRECISION_LOSS: "Desired accuracy not reached: no step of the model changes x at "
                           "working precision ({name} = {value:.1e}); no further progress",
    Status.NONFINITE: "Trial values or derivatives were not finite until no step of the model "
                      "changed x ({name} = {value:.1e}); returning the best point found",
}


def _downhill(step: SubproblemSolution, g: np.ndarray) -> SubproblemSolution:
    """A step of the model without its linear term (even in p), turned so that ``g^T p <= 0``;
    its decrease in the full model adds ``|g^T p|`` exactly."""
    slope = float(g @ step.p)
    return step._replace(p=-step.p if slope > 0 else step.p, decrease=step.decrease + abs(slope))


def _acceptable(f: float, reference: float, f_trial: float, decrease: float, measure: np.ndarray,
                measure_trial: np.ndarray) -> bool:
    """A good step (of a finite gradient at the trial point, which the caller checks) must also
    lower f; or bring f below the nonmonotone ``reference`` when the model predicts a decrease
    above rounding; or, when f changes only within rounding, lower the norm of the stationarity
    measure (``measure`` at x, ``measure_trial`` at the trial point: the gradient, in a box the
    projected gradient, whose components on active bounds say nothing of progress); so that the
    iteration cannot cycle."""
    tolerance = noise(f)
    return bool(f_trial < f or (f_trial < reference and decrease > tolerance) or (
        f_trial <= f + tolerance and np.linalg.norm(measure_trial) < np.linalg.norm(measure)))


def _negligible(p: np.ndarray, p_norm: float, x: np.ndarray) -> bool:
    """The step changes no component of x beyond rounding (zero components: beyond eps^2 ||x||).
    Componentwise that implies ``||p|| <= eps (||x|| + sqrt(n) floor)``, so a longer step is
    answered by one norm."""
    x_norm = norm(x)
    floor = EPS * max(1.0, x_norm)
    if p_norm > EPS * (x_norm + math.sqrt(x.size) * floor):
        return False
    return bool(np.all(np.abs(p) <= EPS * (np.abs(x) + floor)))


def negligible_rows(P: np.ndarray, p_norm: np.ndarray, X: np.ndarray) -> np.ndarray:
    """:func:`_negligible` row by row (the rows of P, X)."""
    x_norm = np.sqrt(np.einsum("mi,mi->m", X, X))
    floor = EPS * np.maximum(1.0, x_norm)
    short = p_norm <= EPS * (x_norm + np.sqrt(X.shape[1]) * floor)
    return short & (np.abs(P) <= EPS * (np.abs(X) + floor[:, None])).all(axis=1)


def default_maxiter(n: int) -> int:
    """Iterations of the trust-region loop: scipy's 200 n, but at least 1000, since every trial
    step counts, rejected ones too."""
    return max(1000, 200 * n)


def _minimize(make_solver: Callable, problem: Problem, options: RunOptions, *, dense: bool,
              initial_trust_radius: float | None, max_trust_radius: float | None, eta: float | None,
              check_second_order: bool, nonmonotone: int = 1, sparse: bool | None = None,
              precondition: bool | None = False, factorization: str | None = None,
              preconditioner: str | None = None) -> OptimizeResult:
    """A trust-region method with the subproblem solver ``make_solver(g, H)`` (H a matrix or
    products, after ``dense``; a sparse matrix's LDL^T factorizations share one symbolic
    analysis), or TRON's bounded step in a box. The dense methods' result says whether the
    Hessian was ``sparse``, the Krylov methods' whether their solves were ``preconditioned``
    (:class:`~optimizers.preconditioning.Preconditioning`; ``make_solver(g, H, preconditioner=M)``)."""
    for name, value in [("initial_trust_radius", initial_trust_radius),
                        ("max_trust_radius", max_trust_radius), ("nonmonotone", nonmonotone)]:
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    preconditioning = None if dense else krylov_preconditioning(precondition, problem.x0.size, problem.feasible,
                                                                preconditioner)
    objective = problem.objective(sparse=sparse if dense else None)
    factorization = LDLFactorization(factorization)
    if dense:
        make_solver = functools.partial(make_solver, factorization=factorization)
    if not objective.has_hessian:
        raise ValueError("trust-region methods need second derivatives: pass hess or hessp")
    step = trust_region_step(objective, make_solver, problem.feasible, dense=dense, eta=eta,
                             memory=int(nonmonotone), initial_trust_radius=initial_trust_radius,
                             max_trust_radius=max_trust_radius)
    step.preconditioning = preconditioning
    result = problem.run(objective, step, options,
                         probe=curvature_check(check_second_order, dense, factorization))
    if dense:
        return report_sparse(result, objective)
    return result if preconditioning is None else preconditioning.report(result)


def trust_region_step(objective: Objective, make_solver: Callable | None, feasible: FeasibleSet, *,
                      dense: bool, eta: float | None = None, memory: int = 1,
                      initial_trust_radius: float | None = None,
                      max_trust_radius: float | None = None) -> TrustRegion:
    """The trust-region step in ``feasible`` from ``objective.x0`` (:func:`region_step`): the
    radius starts at ``min(||s0||, max(1, ||x0||))``, s0 the set's stationarity measure at x0 (the
    gradient; in a box the projected gradient), unless given, and is capped at ``1e10 max(1,
    ||x0||)`` unless given. ``make_solver`` may be None in a box (TRON's step)."""
    x0, g0 = objective.x0, objective.grad(objective.x0)
    xscale = max(1.0, norm(x0))
    gnorm = norm(feasible.stationarity(x0, g0))
    radius = initial_trust_radius or min(gnorm, xscale) or 1.0
    control = RadiusControl(radius, max_trust_radius or 1e10 * xscale)
    return region_step(feasible, objective, make_solver, control, dense=dense, eta=eta, memory=memory)


@functools.singledispatch
def region_step(feasible: FeasibleSet, objective: Objective, make_solver: Callable | None, control: Control, *,
                dense: bool, eta: float | None, memory: int) -> TrustRegion:
    """The trust-region step class of ``feasible``: :class:`TrustRegion` with ``make_solver``'s
    model unconstrained, TRON's (:class:`TronStep`) in a box."""
    raise TypeError(f"the trust-region methods take no {type(feasible).__name__}")


@region_step.register
def _(feasible: Unconstrained, objective: Objective, make_solver: Callable | None, control: Control, *,
      dense: bool, eta: float | None, memory: int) -> TrustRegion:
    return TrustRegion(objective, make_solver, control, dense=dense, eta=eta, memory=memory)


@region_step.register
def _(feasible: Box, objective: Objective, make_solver: Callable | None, control: Control, *,
      dense: bool, eta: float | None, memory: int) -> TrustRegion:
    return TronStep(objective, feasible, control, dense=dense, eta=eta, memory=memory)


_OPTIONS_DOC = """
    Parameters
    ----------
    fun, x0, jac, hess, hessp
        Objective ``fun(x)``, start point, gradient ``jac(x)`` (or ``True`` when ``fun`` returns
        ``(f, g)``), dense Hessian ``hess(x)`` and/or product ``hessp(x, p)``.
    callback
        ``callback(intermediate_result)`` after each iteration; raise StopIteration to stop.
    operator
        ``operator(x)``: the Hessian at x as an object with ``matvec`` and ``to_dense`` (as
        ``autodiff.hessian_operator``); replaces ``hess`` and ``hessp``.
    gtol
        Stop when ``||g||_inf <= gtol`` (and, with ``check_second_order``, no clearly negative
        curvature is found there); default None: the relative gradient
        ``max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-8`` (:mod:`optimizers.stopping`).
    maxiter
        Iterations (trial steps); default ``max(1000, 200 * n)``.
    disp
        Print the iteration table.
    initial_trust_radius
        Default ``min(||g0||, max(1, ||x0||))``.
    max_trust_radius
        Default ``1e10 * max(1, ||x0||)``.
    eta
        Accept a step when the reduction ratio exceeds ``eta`` (in [0, 0.25)); default 0.15,
        and with bounds TRON's 1e-4.
    check_second_order
        At a first-order point, look for negative curvature ({check}); if found, keep iterating
        along it and report status 5 only if that fails.
    keep_iterates
        Keep the iterates in ``history["x"]`` (False: no ``"x"`` column, no O(n nit) memory).{nonmonotone}
    bounds
        ``lower <= x <= upper``: a :class:`~optimizers.bounds.Box` or a pair ``(lower, upper)``
        of arrays (infinite entries: no bound). x0 is projected into the box, every trial point
        lies in it (f is never evaluated outside), and the steps are TRON's (Lin & Moré 1999;
        :class:`~optimizers.bounds.BoxTrustRegion`{dense_products}); the gradient test is on the
        projected gradient and the second-order check on the free variables. The result then
        has ``active_mask`` and the history an ``active`` column.{sparse}

    Returns
    -------
    OptimizeResult with ``x, fun, jac, nit, nfev, njev, nhev, status, success, message``{sparse_result} and
    ``history``, a column-wise :class:`~optimizers.history.History` with one record per trial
    step: nit, f, gnorm, radius (or sigma), step norm, rho, the cumulative nfev, njev, nhev and
    the iterates x. ``status`` is a :class:`~optimizers.objective.Status`: 0 success, 1 maxiter,
    2 no progress at working precision, 3 non-finite values, 5 saddle point, 99 callback stop.
"""


_NONMONOTONE_DOC = """
    nonmonotone
        Judge a step against the highest of this many last accepted values (Toint 1997; 1 is the
        monotone method; default {memory})."""

_SPARSE_DOC = """
    sparse
        Use a Hessian that comes as a ``scipy.sparse`` matrix as one: its subproblems are then
        solved with sparse LDL^T factorizations (:mod:`optimizers.sparse`), the second-order check
        too. None (default): from 1,000 variables on when it is under 5% dense; True: whenever it
        comes sparse; False: never (it is made dense).
    factorization
        The sparse factorization: None (default) chosen from the pattern (CHOLMOD's supernodal
        Cholesky on grids and meshes, qdldl on bands, chains, arrowheads and small problems;
        :func:`optimizers.supernodal.choose`), or ``"cholmod"`` or ``"qdldl"``."""

_PRECONDITION_DOC = """
    precondition
        Precondition the Krylov solves with the incomplete Cholesky factorization of the sparse
        Hessian (:mod:`optimizers.preconditioning`; the Hessian must come as a sparse matrix,
        from an operator's ``to_sparse`` or from ``hess`` without ``hessp``), the trust region
        then measured in the preconditioner's norm ``||p||_M``. None (default): automatic, from
        the iterate after the first whose solve took more than 100 products, on 1,000 variables
        or more; True: from the first iterate; False: never. Not with bounds.
    preconditioner
        Which: ``"amg"`` (``pyamg``'s smoothed aggregation, its hierarchy kept while it works),
        ``"incomplete-cholesky"``, or None (default): multigrid from 50,000 variables on, the
        incomplete Cholesky below and where multigrid is refused
        (:class:`~optimizers.preconditioning.Preconditioning`)."""

_EXAMPLE_DOC = """
    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der, {derivative}
    >>> from optimizers import {name}
    >>> result = {name}(rosen, np.array([-1.2, 1.0]), rosen_der, {keyword}={derivative})
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
"""


def _documented(check: str, memory: int = 1, dense: bool = False):
    def decorate(function):
        derivative, keyword = ("rosen_hess", "hess") if dense else ("rosen_hess_prod", "hessp")
        nonmonotone = _NONMONOTONE_DOC.format(memory=memory) if memory > 1 else ""  # only those that take it
        dense_products = ", on products with the Hessian's matrix" if dense else ""
        function.__doc__ += _OPTIONS_DOC.format(
            check=check, nonmonotone=nonmonotone, dense_products=dense_products,
            sparse=_SPARSE_DOC if dense else _PRECONDITION_DOC,
            sparse_result=", ``sparse`` (and ``dense_reason``)" if dense else
            ", ``preconditioned`` (and ``precondition_reason``)") + _EXAMPLE_DOC.format(
            name=function.__name__, derivative=derivative, keyword=keyword)
        return function
    return decorate


@_documented("a few Lanczos steps with hessp", NONMONOTONE_MEMORY)
@declared("trust-ncg", bounds=True, preconditioned=True, returns_hess=True, trust_region=True,
          default_in=(Box,))
def minimize_trust_ncg(problem: Problem, options: RunOptions, *, initial_trust_radius: float | None = None,
                       max_trust_radius: float | None = None, eta: float | None = None,
                       check_second_order: bool = True, nonmonotone: int = NONMONOTONE_MEMORY,
                       precondition: bool | None = None, preconditioner: str | None = None) -> OptimizeResult:
    """Newton-CG trust-region method: Steihaug-Toint truncated CG subproblems (N&W Alg. 7.2).

    Uses only Hessian-vector products (``hessp``, or products with ``hess``).
    """
    return _minimize(SteihaugCG, problem, options, dense=False, initial_trust_radius=initial_trust_radius,
                     max_trust_radius=max_trust_radius, eta=eta, check_second_order=check_second_order,
                     nonmonotone=nonmonotone, precondition=precondition, preconditioner=preconditioner)


@_documented("a few Lanczos steps with hessp", NONMONOTONE_MEMORY)
@declared("trust-krylov", bounds=True, preconditioned=True, returns_hess=True, trust_region=True)
def minimize_trust_krylov(problem: Problem, options: RunOptions, *, initial_trust_radius: float | None = None,
                          max_trust_radius: float | None = None, eta: float | None = None,
                          check_second_order: bool = True, nonmonotone: int = NONMONOTONE_MEMORY,
                          precondition: bool | None = None, preconditioner: str | None = None
                          ) -> OptimizeResult:
    """Trust-region method with GLTR subproblems (Gould, Lucidi, Roma & Toint 1999).

    Lanczos with Hessian-vector products only; solves the subproblem nearly exactly in the Krylov
    space, so it handles indefinite Hessians well.
    """
    return _minimize(LanczosGLTR, problem, options, dense=False, initial_trust_radius=initial_trust_radius,
                     max_trust_radius=max_trust_radius, eta=eta, check_second_order=check_second_order,
                     nonmonotone=nonmonotone, precondition=precondition, preconditioner=preconditioner)


@_documented("an LDL^T or the eigenvalues of the Hessian's matrix", dense=True)
@declared("trust-exact", bounds=True, sparse=True, returns_hess=True, trust_region=True)
def minimize_trust_exact(problem: Problem, options: RunOptions, *, initial_trust_radius: float | None = None,
                         max_trust_radius: float | None = None, eta: float | None = None,
                         check_second_order: bool = True, sparse: bool | None = None,
                         factorization: str | None = None) -> OptimizeResult:
    """Trust-region method with nearly exact subproblems (Moré & Sorensen 1983; N&W Alg. 4.3).

    Needs the Hessian's matrix (``hess``, dense or sparse; built from ``hessp`` column by column
    otherwise).
    """
    return _minimize(MoreSorensen, problem, options, dense=True, initial_trust_radius=initial_trust_radius,
                     max_trust_radius=max_trust_radius, eta=eta, check_second_order=check_second_order,
                     sparse=sparse, factorization=factorization)


@_documented("an LDL^T or the eigenvalues of the Hessian's matrix", dense=True)
@declared("dogleg", bounds=True, sparse=True, returns_hess=True, trust_region=True)
def minimize_dogleg(problem: Problem, options: RunOptions, *, initial_trust_radius: float | None = None,
                    max_trust_radius: float | None = None, eta: float | None = None,
                    check_second_order: bool = True, sparse: bool | None = None,
                    factorization: str | None = None) -> OptimizeResult:
    """Powell's dogleg trust-region method (N&W §4.1), also for indefinite Hessians.

    Needs the Hessian's matrix (dense or sparse). Where it is not positive definite the step is the better of the
    Cauchy point and the negative-curvature eigenpoint (see :class:`subproblems.Dogleg`).
    """
    return _minimize(Dogleg, problem, options, dense=True, initial_trust_radius=initial_trust_radius,
                     max_trust_radius=max_trust_radius, eta=eta, check_second_order=check_second_order,
                     sparse=sparse, factorization=factorization)
