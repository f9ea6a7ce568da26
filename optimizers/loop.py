"""The one iteration loop of every method, and the contract of what varies between them.

:func:`run` evaluates the start point, records it and tests it; then, until a test ends the run,
it asks the method's :class:`Step` for one trial from the current iterate, counts and records
it, moves to the trial point when the step accepted it, and tests the new iterate. The loop alone
owns the monitor (history, iteration table, callback), the stopping test (the gradient test of
:mod:`optimizers.stopping`, then the second-order check), the iteration cap and the statuses
with their messages. A step owns everything else, and ends the run itself (:class:`Stop`) when it
cannot make a trial. The steps:

- line-search descent (Newton, Newton-CG, Hessian-free): a direction from the iterate, a line
  search along it, every trial accepted (:class:`~optimizers.newton.LineSearchDescent`);
- trust region with its subproblem solver (trust-ncg, trust-krylov, trust-exact, dogleg): the
  model's step within the radius, accepted or rejected on the reduction ratio, which moves the
  radius (:class:`~optimizers.trust_region.TrustRegion`);
- cubic regularization (ARC): the same step with the cubic model, its weight sigma in place of
  the radius;
- Levenberg-Marquardt: a damped trust region, the damping lambda standing for an inverse radius
  (:class:`~optimizers.least_squares.LevenbergMarquardt`), and Gauss-Newton, a line search on the
  Gauss-Newton direction (:class:`~optimizers.least_squares.GaussNewton`);
- first-order update (gradient descent, Adam): a rule from the gradient, always accepted
  (:class:`~optimizers.first_order.FirstOrderUpdate`).

A step sees the iterate as an :class:`~optimizers.objective.Iterate` (x, f, g, Hessian products
and the dense Hessian on demand, all counted), so a product never asks which x it is meant for.

The set x lives in is a contract the loop talks to (:class:`~optimizers.feasible.FeasibleSet`:
:class:`~optimizers.feasible.Unconstrained`, or a box, :class:`~optimizers.bounds.Box`): x0 must
lie in it (the method placed it there, and the set's note on that ends the message), the gradient
test measures the set's stationarity measure (in a box the projected gradient), the second-order
check probes the set's curvature space (the free variables) and the set adds its history columns
and result fields (``active``, ``active_mask``). A step may own its convergence test
(:meth:`Step.test`); by default it is the loop's (:meth:`Loop.test`). The run parameters every
method shares (``gtol``, ``maxiter``, ``callback``, ``disp``, ``keep_iterates``) come as one
:class:`RunOptions`.

scipy's habits live in one place each: the callback is called once per iteration, not at x0
(:meth:`Loop.start`); ``maxiter`` counts iterations, 0 or less meaning none (:func:`iteration_cap`);
a start point where f or the gradient is not finite ends the run with status 3 instead of raising
(:meth:`Loop.start`); with ``disp`` a failed run warns, with the step's warning category
(:attr:`Step.warning`; :meth:`Loop.result`).
"""
from __future__ import annotations

import functools
import numbers
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import OptimizeResult

from .feasible import UNCONSTRAINED, CurvatureSpace, FeasibleSet
from .history import History
from .krylov import CURVATURE_PROBE_STEPS, clearly_negative, dense_leftmost_curvature, leftmost_curvature
from .objective import MESSAGES, Iterate, Objective, Status
from .sparse import LDLFactorization, sparse_leftmost_curvature
from .stopping import GradientTest, gradient_norm

# A first-order point whose Hessian has NaN/inf entries: the gradient test passed, but whether it
# is a minimum cannot be checked, so it is not reported as one.
NONFINITE_HESSIAN_AT_STATIONARY_POINT = (
    "The gradient test passed, but the Hessian is not finite there: the second-order check is "
    "impossible, so the point is not reported as a minimum")
# The iteration cap met at a first-order point that the second-order check sent on: the gradient
# test passed there, so the cap's usual message ("before the gradient test passed") would be false.
MAXITER_AT_SADDLE = (
    "Maximum number of iterations has been exceeded at a point where the gradient test passed but "
    "the Hessian has clearly negative curvature (a saddle point or maximum not yet left)")


class Saddle(NamedTuple):
    """A first-order point's direction of clearly negative curvature: a unit ``direction`` with
    ``direction^T H direction = curvature < 0``."""
    direction: np.ndarray
    curvature: float


class Stop(NamedTuple):
    """A step's answer when it can make no trial: the run ends at the current iterate with this
    status (and ``message``, when it says more than the status's own)."""
    status: Status
    message: str | None = None


#: What a convergence test says of an iterate: ``(status, None)`` to end the run there, ``(None,
#: saddle)`` at a first-order point to leave along clearly negative curvature, ``(None, None)`` to
#: go on.
Verdict = tuple[Status | None, Saddle | None]


@dataclass(frozen=True)
class RunOptions:
    """The run parameters every method shares (see :mod:`optimizers`): the gradient test's
    ``gtol`` (None: the relative test of :mod:`optimizers.stopping`), the iteration cap
    ``maxiter`` (None: the step's default; 0 or less: none), the ``callback`` (an OptimizeResult
    after each iteration; StopIteration stops the run), ``disp`` (the iteration table, and a
    warning when the run fails) and ``keep_iterates`` (the ``"x"`` column of the history)."""
    gtol: float | None = None
    maxiter: int | None = None
    callback: Callable | None = None
    disp: bool = False
    keep_iterates: bool = True


class Trial(NamedTuple):
    """One iteration of a step: the point to move to (``x = None`` when the trial was
    rejected; the loop keeps the array, so the step must not change it afterwards) with its value
    ``f``, the method's history ``fields`` of the iteration (in column order), and ``stop`` when
    the iteration itself ends the run once recorded (least squares' small-change tests)."""
    x: np.ndarray | None
    f: float
    fields: dict
    stop: Stop | None = None


class Step(ABC):
    """What a method does in one iteration (see the module docstring for the kinds).

    A step is built once per run with the objective it evaluates trial points through, and keeps
    its own state across iterations (a radius, a damping, momentum, a cached model).
    """

    #: the method's wording of a status the loop sets (e.g. least squares' success)
    messages: Mapping[Status, str] = {}
    #: the category of the warning a failed run gives with ``disp`` (scipy's: RuntimeWarning for
    #: the trust-region methods, OptimizeWarning for the line-search ones)
    warning: type[Warning] = RuntimeWarning

    @abstractmethod
    def default_maxiter(self, n: int) -> int:
        """The iteration cap when ``maxiter`` is None, for n variables."""

    @abstractmethod
    def start(self, point: Iterate) -> dict:
        """Called once with the start point: the history fields of record 0, in column order."""

    @abstractmethod
    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        """One trial from ``point``. ``saddle`` is set when ``point`` passed the gradient test
        but has clearly negative curvature: the trial must then leave along it (or stop with
        status 5 when it cannot)."""

    def test(self, point: Iterate, loop_test: Callable[[Iterate], Verdict]) -> Verdict:
        """Whether the run ends at ``point`` (x0, and each point a trial moved to). By default the
        loop's test answers (``loop_test``: :meth:`Loop.test`, the gradient test on the feasible
        set's stationarity measure, then the second-order check); a step that knows better
        overrides it, as an interior-point step tests its barrier parameter and KKT residual
        (optimistix's solvers own ``terminate`` the same way)."""
        return loop_test(point)

    def describe(self, message: str, x: np.ndarray, f: float, g: np.ndarray, feasible: FeasibleSet,
                 test: GradientTest) -> str:
        """The result's ``message`` ended with the test the run was held to at its final point;
        by default the gradient test's (:func:`with_gradient_norm`). A step that owns its test
        (:meth:`test`) describes it."""
        return with_gradient_norm(message, x, f, feasible.stationarity(x, g), test, feasible.gradient_name)


def krylov_curvature(point: CurvatureSpace) -> tuple[float, np.ndarray, float] | None:
    """The second-order check from products: ``CURVATURE_PROBE_STEPS`` Lanczos steps
    (:func:`~optimizers.krylov.leftmost_curvature`)."""
    return leftmost_curvature(point.matvec, point.x.size, CURVATURE_PROBE_STEPS)


def hessian_matrix(point: Iterate):
    """The iterate's Hessian as the sparse matrix it is to be used as, else dense."""
    sparse = point.sparse_hessian
    return point.hessian if sparse is None else sparse


def matrix_curvature(point: CurvatureSpace, factorization: LDLFactorization
                     ) -> tuple[float, np.ndarray, float] | None:
    """The second-order check from the Hessian's matrix: the dense eigendecomposition, or for a
    sparse Hessian an LDL^T factorization (with ``factorization``'s symbolic analysis) and the
    leftmost eigenpair only when that is not positive definite
    (:func:`~optimizers.sparse.sparse_leftmost_curvature`)."""
    sparse = point.sparse_hessian
    if sparse is not None:
        return sparse_leftmost_curvature(sparse, factorization)
    return dense_leftmost_curvature(point.hessian)


def curvature_check(check_second_order: bool, dense: bool,
                    factorization: LDLFactorization | None = None) -> Callable | None:
    """The probe of a method's ``check_second_order`` option: from the matrix (``dense``; a
    sparse one factored with ``factorization``) or Krylov, or None (no check)."""
    if not check_second_order:
        return None
    if dense:
        return functools.partial(matrix_curvature, factorization=factorization or LDLFactorization())
    return krylov_curvature


def iteration_cap(maxiter: int | None, default_maxiter: Callable[[int], int], n: int) -> int:
    """``maxiter``, or ``default_maxiter(n)`` (the step's default) for None; 0 or less means no
    iteration (scipy's reading: x0 is tested, and the run ends there with status 1 unless it
    passes)."""
    if maxiter is None:
        return default_maxiter(n)
    if isinstance(maxiter, bool) or not isinstance(maxiter, numbers.Real) or int(maxiter) != maxiter:
        raise ValueError(f"maxiter must be an integer (0 or less: no iteration) or None (the "
                         f"method's default), got {maxiter!r}")
    return max(int(maxiter), 0)


class Monitor:
    """Per-iteration bookkeeping: the history (with the evaluation ``counts()`` so far at each
    record, and the iterates unless ``options.keep_iterates`` is False), the optional iteration
    table and the user callback. ``gnorm`` is the norm of the ``feasible`` set's stationarity
    measure, and the set adds its columns after it."""

    def __init__(self, counts: Callable[[], dict], options: RunOptions = RunOptions(),
                 feasible: FeasibleSet = UNCONSTRAINED):
        self.counts, self.callback, self.disp = counts, options.callback, options.disp
        self.feasible = feasible
        self.history = History(options.keep_iterates)

    def record(self, nit: int, x: np.ndarray, f: float, g: np.ndarray, **extra) -> bool:
        """Log one iteration (record 0: the start point, which the callback does not see, as in
        scipy); returns True when the callback asks the run to stop."""
        entry = {"nit": nit, "f": f, "gnorm": gradient_norm(self.feasible.stationarity(x, g)),
                 **self.feasible.history(x), **extra}
        self.history.append(entry, self.counts(), x, copy=False)   # iterates are never changed
        if self.disp:
            if nit == 0:
                print(" ".join(f"{k:>12}" for k in entry))
            print(" ".join(f"{v:>12.5g}" if isinstance(v, float) else f"{v:>12}"
                           for v in entry.values()))
        if self.callback is None or nit == 0:
            return False
        try:
            self.callback(OptimizeResult(x=x.copy(), fun=f, jac=g.copy(), nit=nit, **self.counts()))
        except StopIteration:
            return True
        return False


def run(objective: Objective, step: Step, options: RunOptions = RunOptions(), *,
        feasible: FeasibleSet = UNCONSTRAINED, note: str | None = None, probe: Callable | None = None,
        counts: Callable[[], dict] | None = None) -> OptimizeResult:
    """Minimize ``objective`` from its x0 with ``step`` (see the module docstring).

    Parameters
    ----------
    objective : Objective
        Counted access to f and its derivatives; x0 is ``objective.x0``.
    step : Step
        The method.
    options : RunOptions
        ``gtol``, ``maxiter``, ``callback``, ``disp``, ``keep_iterates``, as for every method.
    feasible : FeasibleSet, optional
        The set x lives in (default: unconstrained): x0 must lie in it and the step must give
        trial points in it; it decides the test, the curvature checked, columns and fields.
    note : str, optional
        The set's note on placing x0 (:meth:`~optimizers.feasible.FeasibleSet.start`), which ends
        the message.
    probe : callable, optional
        The second-order check at a first-order point, ``probe(space) -> (theta, u, scale)``, the
        leftmost curvature, its unit direction and a scale of H (None when H is not finite);
        :func:`krylov_curvature` or :func:`matrix_curvature`. None: no check.
    counts : callable, optional
        The evaluation counts to record and report (default ``objective.counts``).

    Returns
    -------
    OptimizeResult
        ``x, fun, jac, nit, status, success, message, history``, the counts and the set's fields
        (with a box ``active_mask``: -1 at a lower bound, +1 at an upper one, 0 free).

    Raises
    ------
    ValueError
        If x0 does not lie in ``feasible``.

    Examples
    --------
    Gradient descent on f = ||x||^2 with a step that halves x:

    >>> import numpy as np
    >>> from optimizers.loop import Step, Trial, run
    >>> from optimizers.objective import Objective
    >>> class Halve(Step):
    ...     def default_maxiter(self, n): return 100
    ...     def start(self, point): return {}
    ...     def __call__(self, point, saddle): return Trial(point.x / 2, point.f / 4, {})
    >>> result = run(Objective(lambda x: x @ x, np.array([1.0, -2.0]), lambda x: 2 * x), Halve())
    >>> result.success, result.nit, len(result.history)
    (True, 29, 30)
    """
    if not feasible.contains(objective.x0):
        raise ValueError(f"x0 lies outside the feasible set {feasible!r}: place it there first "
                         "(FeasibleSet.start)")
    return Loop(objective, step, probe, GradientTest(options.gtol),
                Monitor(counts or objective.counts, options, feasible), feasible, note).iterate(options.maxiter)


class Loop:
    """The state of one :func:`run`: the objective, the step, the tests, the monitor, the feasible
    set and its note on x0."""

    def __init__(self, objective: Objective, step: Step, probe: Callable | None,
                 converged: GradientTest, monitor: Monitor, feasible: FeasibleSet = UNCONSTRAINED,
                 note: str | None = None):
        self.objective, self.step, self.probe = objective, step, probe
        self.converged, self.monitor, self.feasible, self.note = converged, monitor, feasible, note
        self.message: str | None = None

    def start(self) -> tuple[Iterate, Status | None]:
        """The start point, recorded; status 3 when f or the gradient is not finite there (no
        step can start from it; scipy returns a failed result too)."""
        point = self.objective.at(self.objective.x0)
        finite = np.isfinite(point.f) and np.all(np.isfinite(point.g))
        self.monitor.record(0, point.x, point.f, point.g, **(self.step.start(point) if finite else {}))
        if not finite:
            self.message = unusable_start(point.f)
            return point, Status.NONFINITE
        return point, None

    def test(self, point: Iterate) -> Verdict:
        """``(SUCCESS, None)`` at a first-order point without clearly negative curvature;
        ``(None, saddle)`` at a first-order point with it; ``(NONFINITE, None)`` at a first-order
        point whose Hessian is not finite (no second-order check is possible); else ``(None,
        None)``. First order: the gradient test on the feasible set's stationarity measure;
        second order: the probe of the set's curvature space (none there: nothing to check)."""
        if not self.converged(point.x, point.f, self.feasible.stationarity(point.x, point.g)):
            return None, None
        space = None if self.probe is None else self.feasible.curvature_space(point)
        if space is None:
            return Status.SUCCESS, None
        estimate = self.probe(space)
        if estimate is None:
            self.message = NONFINITE_HESSIAN_AT_STATIONARY_POINT
            return Status.NONFINITE, None
        theta, u, scale = estimate
        if clearly_negative(theta, scale):
            return None, Saddle(self.feasible.lift(space, u), theta)
        return Status.SUCCESS, None

    def iterate(self, maxiter: int | None) -> OptimizeResult:
        cap = iteration_cap(maxiter, self.step.default_maxiter, self.objective.x0.size)
        point, status = self.start()
        saddle, nit = None, 0
        if status is None:
            status, saddle = self.step.test(point, self.test)
        while status is None:
            if nit >= cap:
                status = Status.MAXITER
                if saddle:
                    self.message = MAXITER_AT_SADDLE
                break
            trial = self.step(point, saddle)
            if isinstance(trial, Stop):
                status, self.message = trial
                break
            nit += 1
            if trial.x is not None:
                point = self.objective.at(trial.x)
            if self.monitor.record(nit, point.x, point.f, point.g, **trial.fields):
                status = Status.CALLBACK_STOP
            elif trial.stop is not None:
                status, self.message = trial.stop
            elif trial.x is not None:
                status, saddle = self.step.test(point, self.test)
        return self.result(point, status, nit)

    def result(self, point: Iterate, status: Status, nit: int) -> OptimizeResult:
        """The OptimizeResult of a run stopped at ``point`` (see :func:`final_point`; where the
        feasible set admits it), with the status's message ended by the step's description of the
        test the run was held to (:meth:`Step.describe`)."""
        x, f, g = (final_point(self.objective, point, status) if self.feasible.best_point_fallback
                   else (point.x, point.f, point.g))
        message = self.message or self.step.messages.get(status) or MESSAGES[status]
        message = message.replace("the gradient test", self.feasible.test_name)
        message = self.step.describe(message, x, f, g, self.feasible, self.converged)
        message = with_note(message, self.note)
        if self.monitor.disp:   # scipy's disp: the outcome printed, or a warning when the run failed
            if status in (Status.SUCCESS, Status.CALLBACK_STOP):
                print(message)
            else:
                warnings.warn(message, self.step.warning, stacklevel=2)
        return OptimizeResult(x=x, fun=f, jac=g, nit=nit, **self.monitor.counts(), status=status,
                              success=status == Status.SUCCESS, message=message,
                              history=self.monitor.history, **self.feasible.result_fields(x))


def unusable_start(f: float) -> str:
    """The message of a start point where f (when it is not finite) or else the gradient is not
    finite: no step can start from it (status 3, scipy's habit)."""
    if not np.isfinite(f):
        return f"The start point is not usable: f(x0) = {f}"
    return "The start point is not usable: the gradient at x0 is not finite"


def final_point(objective: Objective, point: Iterate,
                status: Status) -> tuple[np.ndarray, float, np.ndarray]:
    """``(x, f, g)`` to report: the last iterate, or the best point seen when the run failed and
    that is better (and finite, with a finite gradient, which is then evaluated)."""
    if status != Status.SUCCESS and objective.best_f < point.f:
        best_g = objective.grad(objective.best_x)
        if np.all(np.isfinite(best_g)):
            return objective.best_x, objective.best_f, best_g
    return point.x, point.f, point.g


def with_gradient_norm(message: str, x: np.ndarray, f: float, g: np.ndarray,
                       test: GradientTest, name: str = "g") -> str:
    """``message`` ended with the final gradient norm and the test it was held to, as in
    "... (||g||_inf = 3.2e-04; test: max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-08, here
    3.2e-04)."; ``name`` is the gradient's name (``pg``, the projected gradient, with bounds)."""
    return ended_with_test(message, gradient_norm(g), test.describe(x, f, g, name), name)


def ended_with_test(message: str, gnorm: float, test: str, name: str = "g") -> str:
    """:func:`with_gradient_norm` given the gradient's norm and the test's wording."""
    return f"{message.rstrip('.')} (||{name}||_inf = {gnorm:.1e}; test: {test})."


def with_note(message: str, note: str | None) -> str:
    """``message`` ended with ``note`` (as "... Note: x0 lay outside the bounds ...."), if any."""
    return message if note is None else f"{message} Note: {note}."
