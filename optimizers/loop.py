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

Bounds (``box``, an :class:`~optimizers.bounds.Box`) plug in here as a projection: the method
starts from x0 projected into the box (:func:`~optimizers.bounds.bounded_start`), its steps give
trial points in the box before f is evaluated there, :meth:`Loop.test` measures the projected
gradient and the second-order check looks only at the free variables (J. J. Moré and G. Toraldo,
1989; C.-J. Lin and J. J. Moré, "Newton's method for large bound-constrained optimization
problems", SIAM J. Optim. 9, 1999); the history gets an ``active`` column (bounds x is on) and
the result ``active_mask``. Nothing else in the loop depends on the set x lives in.

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
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse
from scipy.optimize import OptimizeResult

from .bounds import Box, restrict
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


def krylov_curvature(point: Iterate) -> tuple[float, np.ndarray, float] | None:
    """The second-order check from products: ``CURVATURE_PROBE_STEPS`` Lanczos steps
    (:func:`~optimizers.krylov.leftmost_curvature`)."""
    return leftmost_curvature(point.matvec, point.x.size, CURVATURE_PROBE_STEPS)


def hessian_matrix(point: Iterate):
    """The iterate's Hessian as the sparse matrix it is to be used as, else dense."""
    sparse = point.sparse_hessian
    return point.hessian if sparse is None else sparse


def matrix_curvature(point: Iterate, factorization: LDLFactorization
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


def iteration_cap(maxiter: int | None, step: Step, n: int) -> int:
    """``maxiter``, or the step's default for None; 0 or less means no iteration (scipy's reading:
    x0 is tested, and the run ends there with status 1 unless it passes)."""
    if maxiter is None:
        return step.default_maxiter(n)
    if isinstance(maxiter, bool) or not isinstance(maxiter, numbers.Real) or int(maxiter) != maxiter:
        raise ValueError(f"maxiter must be an integer (0 or less: no iteration) or None (the "
                         f"method's default), got {maxiter!r}")
    return max(int(maxiter), 0)


class Monitor:
    """Per-iteration bookkeeping: the history (with the evaluation ``counts()`` so far at each
    record, and the iterates unless ``keep_iterates`` is False), the optional iteration table and
    the user callback. With a ``box``, ``gnorm`` is the projected gradient's norm and the column
    ``active`` counts the bounds x is on."""

    def __init__(self, counts: Callable[[], dict], callback: Callable | None = None,
                 disp: bool = False, keep_iterates: bool = True, box: Box | None = None):
        self.counts, self.callback, self.disp, self.box = counts, callback, disp, box
        self.history = History(keep_iterates)

    def record(self, nit: int, x: np.ndarray, f: float, g: np.ndarray, **extra) -> bool:
        """Log one iteration (record 0: the start point, which the callback does not see, as in
        scipy); returns True when the callback asks the run to stop."""
        entry = {"nit": nit, "f": f, "gnorm": gradient_norm(stationarity(self.box, x, g))}
        if self.box is not None:
            entry["active"] = int(np.count_nonzero(self.box.active_mask(x)))
        entry.update(extra)
        self.history.append(entry, self.counts(), x, copy=False)   # iterates are never changed
        if self.disp:
            if nit == 0:
                print(" ".join(f"{k:>12}" for k in entry))
            print(" ".join(f"{v:>12.5g}" if isinstance(v, float) else f"{v:>12}"
                           for v in entry.values()))
        if self.callback is None or nit == 0:
            return False
        try:
            self.callback(OptimizeResult(x=x.copy(), fun=f, jac=g.copy(), nit=nit))
        except StopIteration:
            return True
        return False


def stationarity(box: Box | None, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """What the gradient test measures: g, or with bounds the projected gradient (zero exactly at
    the first-order points of the bound-constrained problem)."""
    return g if box is None else box.projected_gradient(x, g)


class FreeVariables:
    """An iterate seen on its free variables only (those strictly inside their bounds): ``x``,
    the products of the reduced Hessian and, on demand, the reduced dense or sparse Hessian; what
    the second-order check at a bounded first-order point probes."""

    def __init__(self, point: Iterate, free: np.ndarray):
        self.x, self.free = point.x[free], free
        self._point = point
        self.matvec = restrict(point.matvec, free)

    @cached_property
    def sparse_hessian(self) -> scipy.sparse.csc_matrix | None:
        return reduced(self._point.sparse_hessian, self.free)

    @cached_property
    def hessian(self) -> np.ndarray:
        return self._point.hessian[np.ix_(self.free, self.free)]


def reduced(sparse: scipy.sparse.csc_matrix | None, free: np.ndarray) -> scipy.sparse.csc_matrix | None:
    """The rows and columns ``free`` of a sparse Hessian (None stays None)."""
    if sparse is None:
        return None
    index = np.flatnonzero(free)
    return sparse[index][:, index].tocsc()


def run(objective: Objective, step: Step, *, probe: Callable | None = None,
        gtol: float | None = None, maxiter: int | None = None, callback: Callable | None = None,
        disp: bool = False, keep_iterates: bool = True,
        counts: Callable[[], dict] | None = None, box: Box | None = None) -> OptimizeResult:
    """Minimize ``objective`` from its x0 with ``step`` (see the module docstring).

    Parameters
    ----------
    objective : Objective
        Counted access to f and its derivatives; x0 is ``objective.x0``.
    step : Step
        The method.
    probe : callable, optional
        The second-order check at a first-order point, ``probe(point) -> (theta, u, scale)``, the
        leftmost curvature, its unit direction and a scale of H (None when H is not finite);
        :func:`krylov_curvature` or :func:`matrix_curvature`. None: no check.
    gtol, maxiter, callback, disp, keep_iterates
        As for every method (see :mod:`optimizers`).
    counts : callable, optional
        The evaluation counts to record and report (default ``objective.counts``).
    box : Box, optional
        Bounds: x0 must lie in the box and the step must give trial points in it; the test is on
        the projected gradient and the curvature of the free variables.

    Returns
    -------
    OptimizeResult
        ``x, fun, jac, nit, status, success, message, history`` and the counts; with a box also
        ``active_mask`` (-1 at a lower bound, +1 at an upper one, 0 free).

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
    if box is not None and not box.contains(objective.x0):
        raise ValueError("x0 lies outside the bounds: project it into the box first "
                         "(optimizers.bounds.bounded_start)")
    return Loop(objective, step, probe, GradientTest(gtol),
                Monitor(counts or objective.counts, callback, disp, keep_iterates, box),
                box).iterate(maxiter)


class Loop:
    """The state of one :func:`run`: the objective, the step, the tests, the monitor and the
    bounds."""

    def __init__(self, objective: Objective, step: Step, probe: Callable | None,
                 converged: GradientTest, monitor: Monitor, box: Box | None = None):
        self.objective, self.step, self.probe = objective, step, probe
        self.converged, self.monitor, self.box = converged, monitor, box
        self.message: str | None = None

    def start(self) -> tuple[Iterate, Status | None]:
        """The start point, recorded; status 3 when f or the gradient is not finite there (no
        step can start from it; scipy returns a failed result too)."""
        point = self.objective.at(self.objective.x0)
        finite = np.isfinite(point.f) and np.all(np.isfinite(point.g))
        self.monitor.record(0, point.x, point.f, point.g, **(self.step.start(point) if finite else {}))
        if not finite:
            self.message = (f"The start point is not usable: f(x0) = {point.f}" if not np.isfinite(point.f)
                            else "The start point is not usable: the gradient at x0 is not finite")
            return point, Status.NONFINITE
        return point, None

    def test(self, point: Iterate) -> tuple[Status | None, Saddle | None]:
        """``(SUCCESS, None)`` at a first-order point without clearly negative curvature;
        ``(None, saddle)`` at a first-order point with it; ``(NONFINITE, None)`` at a first-order
        point whose Hessian is not finite (no second-order check is possible); else ``(None,
        None)``."""
        if not self.converged(point.x, point.f, stationarity(self.box, point.x, point.g)):
            return None, None
        if self.probe is None:
            return Status.SUCCESS, None
        if self.box is None:
            estimate = self.probe(point)
        else:   # the curvature of the free variables; none free: nothing to check
            free = self.box.free(point.x)
            if not free.any():
                return Status.SUCCESS, None
            estimate = self.probe(FreeVariables(point, free))
        if estimate is None:
            self.message = NONFINITE_HESSIAN_AT_STATIONARY_POINT
            return Status.NONFINITE, None
        theta, u, scale = estimate
        if clearly_negative(theta, scale):
            if self.box is not None:
                full = np.zeros_like(point.x)
                full[free] = u
                u = full
            return None, Saddle(u, theta)
        return Status.SUCCESS, None

    def iterate(self, maxiter: int | None) -> OptimizeResult:
        cap = iteration_cap(maxiter, self.step, self.objective.x0.size)
        point, status = self.start()
        saddle, nit = None, 0
        if status is None:
            status, saddle = self.test(point)
        while status is None:
            if nit >= cap:
                status = Status.MAXITER
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
                status, saddle = self.test(point)
        return self.result(point, status, nit)

    def result(self, point: Iterate, status: Status, nit: int) -> OptimizeResult:
        """The OptimizeResult of a run stopped at ``point`` (see :func:`final_point`), with the
        status's message ended by the final gradient norm and the gradient test of the run."""
        x, f, g = final_point(self.objective, point, status)
        message = self.message or self.step.messages.get(status) or MESSAGES[status]
        tested, name = g, "g"
        if self.box is not None:   # the test was on the projected gradient: the message says so
            message = message.replace("the gradient test", "the projected gradient test")
            tested, name = self.box.projected_gradient(x, g), "pg"
        message = with_gradient_norm(message, x, f, tested, self.converged, name)
        if self.monitor.disp:   # scipy's disp: the outcome printed, or a warning when the run failed
            if status in (Status.SUCCESS, Status.CALLBACK_STOP):
                print(message)
            else:
                warnings.warn(message, self.step.warning, stacklevel=2)
        result = OptimizeResult(x=x, fun=f, jac=g, nit=nit, **self.monitor.counts(), status=status,
                                success=status == Status.SUCCESS, message=message,
                                history=self.monitor.history)
        if self.box is not None:
            result.active_mask = self.box.active_mask(x)
        return result


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
    return (f"{message.rstrip('.')} (||{name}||_inf = {gradient_norm(g):.1e}; "
            f"test: {test.describe(x, f, g, name)}).")
