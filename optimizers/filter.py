"""The filter and the acceptance tests of the interior-point method's line search.

A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter line-search
algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57 (W&B), §2.3: a
trial point ``w(alpha) = w + alpha dw`` is judged by two numbers, the constraint violation
``theta = ||C(w)||_1`` and the barrier function ``phi = phi_mu(w)``, against the current iterate
(the *reference*: its theta, phi and ``phi'``, the directional derivative ``grad phi^T dw``):

- the switching condition (19), ``phi' < 0`` and ``alpha (-phi')^s_phi > delta theta^s_theta``:
  the step promises more decrease of phi than theta is worth;
- where it holds and ``theta <= theta_min``, the Armijo condition on phi (20), ``phi(w(alpha)) <=
  phi + eta_phi alpha phi'`` (an f-type iterate, which does not enter the filter);
- elsewhere sufficient decrease of either (18): ``theta(alpha) <= (1 - gamma_theta) theta`` or
  ``phi(alpha) <= phi - gamma_phi theta``;
- and in both cases acceptability to the filter (21): no stored pair dominates the trial point.

After an iteration that was not an f-type one, the filter is augmented with the pair of the
iterate it left (22), its margins included. Where alpha falls below ``alpha_min`` (23) the line
search gives up and the restoration phase starts. Comparisons allow ten ulps of the reference
(IPOPT's ``Compare_le``), so a step that changes phi by rounding only is not refused for it.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

# W&B's constants (IPOPT's defaults)
GAMMA_THETA = 1e-5
GAMMA_PHI = 1e-8
DELTA = 1.0
S_THETA = 1.1
S_PHI = 2.3
ETA_PHI = 1e-8
ALPHA_MIN_FRACTION = 0.05     # gamma_alpha of (23)
THETA_MAX_FACTOR = 1e4        # theta_max = 1e4 max(1, theta(w_0))
THETA_MIN_FACTOR = 1e-4       # theta_min = 1e-4 max(1, theta(w_0))
OBJECTIVE_MAX_INCREASE = 5.0  # a trial raising phi by more than 5 orders of magnitude is refused
ROUNDING = 10.0 * np.finfo(float).eps


def no_greater(lhs: float, rhs: float, reference: float) -> bool:
    """``lhs <= rhs`` up to ten ulps of ``reference``."""
    return lhs - rhs <= ROUNDING * abs(reference)


class Reference(NamedTuple):
    """The iterate a line search starts from: its ``theta``, ``phi`` and ``slope`` = grad phi^T dw."""
    theta: float
    phi: float
    slope: float

    def switching(self, alpha: float) -> bool:
        """The switching condition (19) at step alpha."""
        return self.slope < 0 and alpha * (-self.slope) ** S_PHI > DELTA * self.theta ** S_THETA

    def armijo(self, alpha: float, phi: float) -> bool:
        """The Armijo condition (20) on the barrier function."""
        return no_greater(phi - self.phi, ETA_PHI * alpha * self.slope, self.phi)

    def sufficient_decrease(self, theta: float, phi: float, restoration: bool = False) -> bool:
        """Condition (18): enough decrease of theta or of phi (and phi not growing by more than
        :data:`OBJECTIVE_MAX_INCREASE` orders of magnitude, unless ``restoration`` asks)."""
        if not restoration and phi > self.phi:
            base = math.log10(abs(self.phi)) if abs(self.phi) > 10 else 1.0
            if math.log10(phi - self.phi) > OBJECTIVE_MAX_INCREASE + base:
                return False
        return (no_greater(theta, (1 - GAMMA_THETA) * self.theta, self.theta)
                or no_greater(phi - self.phi, -GAMMA_PHI * self.theta, self.phi))

    def minimal_step(self, theta_min: float) -> float:
        """alpha_min of (23): below it no step can pass the tests."""
        alpha = GAMMA_THETA
        if self.slope < 0:
            alpha = min(alpha, GAMMA_PHI * self.theta / -self.slope)
            if self.theta <= theta_min:
                alpha = min(alpha, DELTA * self.theta ** S_THETA / (-self.slope) ** S_PHI)
        return ALPHA_MIN_FRACTION * alpha


class Filter:
    """The filter of W&B §2.3: pairs ``(theta_l, phi_l)`` that a trial point must not be dominated
    by, plus the ceiling ``theta <= theta_max``.

    Examples
    --------
    >>> from optimizers.filter import Filter
    >>> accepted = Filter(theta_max=100.0)
    >>> accepted.add(1.0, 5.0)       # stored with the margins of (22)
    >>> accepted.acceptable(0.5, 9.0), accepted.acceptable(2.0, 4.0), accepted.acceptable(2.0, 6.0)
    (True, True, False)
    >>> accepted.acceptable(200.0, 0.0)   # beyond theta_max
    False
    """

    def __init__(self, theta_max: float):
        self.theta_max = theta_max
        self.entries: list[tuple[float, float]] = []

    def add(self, theta: float, phi: float) -> None:
        """Augment the filter with an iterate's pair, with the margins of (22)."""
        self.entries.append(((1 - GAMMA_THETA) * theta, phi - GAMMA_PHI * theta))

    def acceptable(self, theta: float, phi: float) -> bool:
        """Whether ``(theta, phi)`` lies below theta_max and is not dominated by a stored pair."""
        if theta > self.theta_max:
            return False
        return all(theta < theta_l or phi < phi_l for theta_l, phi_l in self.entries)

    def reset(self) -> None:
        """Empty the filter (at a new barrier parameter, §2.3)."""
        self.entries.clear()


class Judgement(NamedTuple):
    """A line search's verdict on a trial point: ``accepted``, and whether the iteration is an
    ``f_type`` one (switching condition and Armijo both hold: the filter is not augmented)."""
    accepted: bool
    f_type: bool


def judge(reference: Reference, theta: float, phi: float, alpha: float, accepted: Filter,
          theta_min: float) -> Judgement:
    """The tests of W&B's line search (A-5.3 to A-5.5) on a trial point ``(theta, phi)`` reached
    with step alpha (the first trial's alpha for a second-order correction, as in IPOPT)."""
    switching = reference.switching(alpha)
    armijo = switching and reference.armijo(alpha, phi)
    if switching and reference.theta <= theta_min:
        ok = armijo
    else:
        ok = reference.sufficient_decrease(theta, phi)
    return Judgement(ok and accepted.acceptable(theta, phi), armijo)
