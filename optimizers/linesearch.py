"""Line searches along a direction ``p`` from ``x``: strong Wolfe, backtracking Armijo, and a search
along a direction of negative curvature.

All three evaluate through an :class:`~optimizers.objective.Objective` (counted and cached), try the
given initial step first (the unit step for Newton-type directions), and treat a non-finite trial
value or slope as a step that went too far: such a step is shrunk and never accepted.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006, Ch. 3;
L. Grippo, F. Lampariello and S. Lucidi, "A nonmonotone line search technique for Newton's
method", SIAM J. Numer. Anal. 23 (1986); J. J. Moré and D. C. Sorensen, "On the use of directions
of negative curvature in a modified Newton method", Math. Programming 16 (1979).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .objective import Objective
from .stopping import noise

SAFEGUARD = 0.1     # an interpolated trial stays this fraction of the interval away from either end
NONFINITE_SHRINK = 0.1   # a step whose value is NaN/inf is cut to this fraction
# Hager & Zhang's delta in the approximate Wolfe conditions (their default)
APPROXIMATE_WOLFE_DELTA = 0.1
APPROXIMATE_WOLFE_C2 = 0.9   # the curvature condition's constant where the search has none


class LineSearchResult(NamedTuple):
    step: float         # accepted step length alpha (0.0 on failure)
    x: np.ndarray       # x + step * p (x itself on failure)
    f: float            # f at the returned x
    success: bool
    nonfinite: bool     # failed and every trial beyond x had a NaN/inf value or gradient


class _Trial(NamedTuple):
    step: float
    f: float
    slope: float | None  # phi'(step), None when not evaluated


class _Line:
    """phi(a) = f(x + a p) and phi'(a) through the objective, remembering which trial steps met a
    NaN/inf value or gradient."""

    def __init__(self, objective: Objective, x: np.ndarray, p: np.ndarray, f0: float):
        self.objective, self.x, self.p, self.f0 = objective, x, p, f0
        self.trials: set[float] = set()
        self.nonfinite_trials: set[float] = set()
        self._last: tuple[float, np.ndarray] | None = None

    def point(self, step: float) -> np.ndarray:
        """x + step p (formed once per step: value, slope and acceptance ask for it in turn)."""
        if self._last is None or self._last[0] != step:
            self._last = step, self.x + step * self.p
        return self._last[1]

    def value(self, step: float) -> float:
        f = self.objective.fun(self.point(step))
        self.trials.add(step)
        if np.isfinite(f):
            return f
        self.nonfinite_trials.add(step)
        return np.nan

    def negligible(self, step: float) -> bool:
        """x + step p == x at working precision: shrinking further is pointless."""
        return bool(np.array_equal(self.point(step), self.x))

    def slope(self, step: float) -> float:
        """phi'(step), NaN when the gradient there is not finite."""
        s = float(self.objective.grad(self.point(step)) @ self.p)
        if np.isfinite(s):
            return s
        self.nonfinite_trials.add(step)
        return np.nan

    def gradient_is_finite(self, step: float) -> bool:
        if np.all(np.isfinite(self.objective.grad(self.point(step)))):
            return True
        self.nonfinite_trials.add(step)
        return False

    def approximately_wolfe(self, step: float, f: float, slope0: float, c2: float) -> bool:
        """A trial whose change of f is rounding, judged by its slope instead: Hager & Zhang's
        approximate Wolfe conditions, ``f <= f0 + noise(f0)`` and ``c2 phi'(0) <= phi'(step) <=
        (2 delta - 1) phi'(0)`` (W. W. Hager and H. Zhang, "A new conjugate gradient method with
        guaranteed descent and an efficient line search", SIAM J. Optim. 16 (2005), §4). Near a
        minimum the decrease a Newton step predicts, -g^T H^{-1} g / 2, falls below the rounding
        of f before the gradient test passes (where |f| is not small); the exact test then fails
        at every step and the search could not proceed."""
        if not f <= self.f0 + noise(self.f0):
            return False
        slope = self.slope(step)
        return c2 * slope0 <= slope <= (2.0 * APPROXIMATE_WOLFE_DELTA - 1.0) * slope0

    def accept(self, step: float, f: float) -> LineSearchResult:
        return LineSearchResult(step, self.point(step), f, True, False)

    def fail(self) -> LineSearchResult:
        only_nonfinite = bool(self.trials) and self.trials <= self.nonfinite_trials
        return LineSearchResult(0.0, self.x, self.f0, False, only_nonfinite)


def strong_wolfe(objective: Objective, x: np.ndarray, p: np.ndarray, f0: float, g0: np.ndarray, *,
                 step0: float = 1.0, c1: float = 1e-4, c2: float = 0.9, step_max: float = 1e20,
                 maxiter: int = 40, reference: float = -np.inf) -> LineSearchResult:
    """A step satisfying the strong Wolfe conditions (Nocedal & Wright, Algorithm 3.5).

    ``step0`` is tried first; while the slope stays negative and the value keeps falling the step
    is expanded (by 4x, up to ``step_max``); once a bracket is known, :func:`_zoom` (N&W Algorithm
    3.6) shrinks it with safeguarded cubic/quadratic interpolation. If the curvature condition
    cannot be met within ``maxiter`` trials, the best step with sufficient decrease is returned.

    A ``reference`` value above ``f0`` (the highest of the last few values of f) makes the search
    nonmonotone (Grippo, Lampariello & Lucidi 1986): a first trial that raises f but has
    sufficient decrease from ``reference`` is accepted as it is. Lower trials are searched as
    usual. A first trial whose change of f is rounding is judged by the approximate Wolfe
    conditions instead (:meth:`_Line.approximately_wolfe`).
    """
    line = _Line(objective, x, p, f0)
    slope0 = float(g0 @ p)
    if not slope0 < 0:
        return line.fail()
    prev, step = _Trial(0.0, f0, slope0), min(step0, step_max)
    for _ in range(maxiter):
        f = line.value(step)
        if (prev.step == 0 and f0 < f <= reference + c1 * step * slope0
                and line.gradient_is_finite(step)):
            return line.accept(step, f)   # nonmonotone acceptance of the first trial
        if (prev.step == 0 and not f < f0 + c1 * step * slope0
                and line.approximately_wolfe(step, f, slope0, c2)):
            return line.accept(step, f)   # a change of f at rounding level
        if not f <= f0 + c1 * step * slope0 or f >= prev.f:   # NaN fails the first test
            return _zoom(line, prev, _Trial(step, f, None), slope0, c1, c2, maxiter)
        slope = line.slope(step)
        if np.isnan(slope):   # gradient undefined: the step went too far
            return _zoom(line, prev, _Trial(step, np.nan, None), slope0, c1, c2, maxiter)
        if abs(slope) <= -c2 * slope0:
            return line.accept(step, f)
        if slope >= 0:
            return _zoom(line, _Trial(step, f, slope), prev, slope0, c1, c2, maxiter)
        prev = _Trial(step, f, slope)
        if step >= step_max:
            break
        step = min(4.0 * step, step_max)
    return line.accept(prev.step, prev.f) if prev.step > 0 else line.fail()


def _zoom(line: _Line, lo: _Trial, hi: _Trial, slope0: float, c1: float, c2: float,
          maxiter: int) -> LineSearchResult:
    """Shrink a bracket to a strong Wolfe step (N&W Algorithm 3.6).

    ``lo`` has sufficient decrease and the lowest value so far; the minimizer of phi over the
    bracket lies between ``lo`` and ``hi`` (which may lie on either side of ``lo``).
    """
    f0 = line.f0
    for _ in range(maxiter):
        step = _interpolate(lo, hi)
        if step in (lo.step, hi.step) or line.negligible(step):   # collapsed at working precision
            break
        f = line.value(step)
        if not f <= f0 + c1 * step * slope0 or f >= lo.f:
            hi = _Trial(step, f, None)
            continue
        slope = line.slope(step)
        if np.isnan(slope):
            hi = _Trial(step, np.nan, None)
            continue
        if abs(slope) <= -c2 * slope0:
            return line.accept(step, f)
        if slope * (hi.step - lo.step) >= 0:
            hi = lo
        lo = _Trial(step, f, slope)
    return line.accept(lo.step, lo.f) if lo.step > 0 else line.fail()


def _interpolate(lo: _Trial, hi: _Trial) -> float:
    """Trial step inside the bracket: the minimizer of the cubic through both ends' values and
    slopes when known, else of the quadratic through lo's value and slope and hi's value (N&W
    eqs. 3.58-3.59), kept a safeguard away from either end. A non-finite hi gets the step nearest
    lo, since the function is not even defined there."""
    width = hi.step - lo.step
    if not np.isfinite(hi.f):
        return lo.step + SAFEGUARD * width
    t = np.nan
    if hi.slope is not None:
        d1 = lo.slope + hi.slope - 3.0 * (lo.f - hi.f) / (lo.step - hi.step)
        radicand = d1 * d1 - lo.slope * hi.slope
        if radicand >= 0:
            d2 = np.copysign(np.sqrt(radicand), width)
            step = hi.step - width * (hi.slope + d2 - d1) / (hi.slope - lo.slope + 2.0 * d2)
            t = (step - lo.step) / width
    if np.isnan(t):
        curvature = hi.f - lo.f - lo.slope * width
        t = -lo.slope * width / (2.0 * curvature) if curvature > 0 else 0.5
    t = 0.5 if not np.isfinite(t) else min(max(t, SAFEGUARD), 1.0 - SAFEGUARD)
    return lo.step + t * width


def backtracking(objective: Objective, x: np.ndarray, p: np.ndarray, f0: float, g0: np.ndarray, *,
                 step0: float = 1.0, c1: float = 1e-4, maxiter: int = 60) -> LineSearchResult:
    """The first step from ``step0`` down with sufficient decrease (Armijo; N&W Algorithm 3.1).

    Each rejected step is replaced by the minimizer of the quadratic through phi(0), phi'(0) and
    phi(step), kept within [0.1, 0.5] * step (N&W §3.5); a NaN/inf value or gradient shrinks the
    step 10x. The accepted point has a finite gradient. A first step whose change of f is rounding
    is judged by the approximate Wolfe conditions (:meth:`_Line.approximately_wolfe`).
    """
    line = _Line(objective, x, p, f0)
    slope0 = float(g0 @ p)
    if not slope0 < 0:
        return line.fail()
    step = step0
    for _ in range(maxiter):
        if line.negligible(step):
            break
        f = line.value(step)
        if f <= f0 + c1 * step * slope0:
            if line.gradient_is_finite(step):
                return line.accept(step, f)
            f = np.nan
        elif step == step0 and line.approximately_wolfe(step, f, slope0, APPROXIMATE_WOLFE_C2):
            return line.accept(step, f)   # a change of f at rounding level
        if np.isnan(f):
            step *= NONFINITE_SHRINK
            continue
        curvature = f - f0 - slope0 * step
        t = -slope0 * step / (2.0 * curvature)
        step *= min(max(t, SAFEGUARD), 0.5)
    return line.fail()


def negative_curvature_search(objective: Objective, x: np.ndarray, d: np.ndarray, f0: float,
                              g0: np.ndarray, curvature: float, *, step0: float = 1.0,
                              c1: float = 1e-4, maxiter: int = 60) -> LineSearchResult:
    """A step along a direction of negative curvature ``d`` (``g0 @ d <= 0``, ``curvature`` =
    d^T H d < 0), which may start at a stationary point where the slope is zero.

    Sufficient decrease is measured against the second-order model, f(x + a d) <= f0 +
    c1 * (a g0^T d + a^2/2 d^T H d), as in Moré & Sorensen (1979). If ``step0`` passes, the step is
    doubled while it keeps passing and lowering f (the model is unbounded below along d, so the
    right length is found by the function); otherwise it is halved until it passes.
    """
    line = _Line(objective, x, d, f0)
    slope0 = float(g0 @ d)
    if not (slope0 <= 0 and curvature < 0):
        return line.fail()
    step, best, expanding = step0, None, True
    for _ in range(maxiter):
        f = line.value(step)
        if f <= f0 + c1 * (step * slope0 + 0.5 * step * step * curvature) and (
                best is None or f < best.f):
            best = _Trial(step, f, None)
            if not expanding:
                break
            step *= 2.0
            continue
        if best is not None:
            break
        expanding = False
        step *= 0.5 if np.isfinite(f) else NONFINITE_SHRINK
    if best is None or not line.gradient_is_finite(best.step):
        return line.fail()
    return line.accept(best.step, best.f)
