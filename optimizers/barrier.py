"""The bounds ``lower <= w <= upper`` of the interior-point method as barrier terms.

For the variables w of the problem in the form ``min f(w) s.t. C(w) = 0, lower <= w <= upper``
(:mod:`optimizers.equality_form`), with bound multipliers ``z_L`` and ``z_U`` (one per finite bound,
nonnegative), :class:`BoundTerms` computes what the primal-dual method of A. Wächter and L. T.
Biegler ("On the implementation of an interior-point filter line-search algorithm for large-scale
nonlinear programming", Math. Program. 106 (2006) 25-57, W&B below) needs of them:

- the barrier function ``phi_mu(w) = f(w) - mu sum ln(w - lower) - mu sum ln(upper - w)`` (eq. (3)
  with both sides, §3.5), plus the damping ``kappa_d mu (w - lower)`` of a variable bounded on one
  side only (§3.7: without it such a variable can run off to infinity along a flat barrier
  problem), and its gradient;
- ``Sigma = Z_L (W - L)^{-1} + Z_U (U - W)^{-1}``, the primal-dual Hessian of the barrier terms
  (eq. (12)), and the steps of z_L and z_U that go with a step dw (eq. (11)):
  ``dz_L = mu / (w - lower) - z_L - Sigma_L dw``, ``dz_U = mu / (upper - w) - z_U + Sigma_U dw``;
- the fraction-to-the-boundary rule, the largest alpha in (0, 1] with ``w + alpha dw`` keeping at
  least ``1 - tau`` of each slack to its bound (eq. (15a)), and the same for the multipliers (15b);
- the safeguard (16) that keeps each z within a factor ``kappa_Sigma = 1e10`` of ``mu / slack``,
  so that Sigma cannot drift from the primal Hessian of the barrier terms;
- the complementarity ``slack * z - mu``.

:func:`push_inside` is the start-point rule of §3.6: a start point moved at least ``kappa_1
max(1, |bound|)`` (and at most ``kappa_2`` of the gap between two bounds) inside them, so that f and
the constraints are never evaluated on or beyond a bound.
"""
from __future__ import annotations

import numpy as np

# W&B's constants (§3.6, §3.7 and eq. (16); IPOPT's defaults)
BOUND_PUSH = 1e-2       # kappa_1
BOUND_FRACTION = 1e-2   # kappa_2
KAPPA_SIGMA = 1e10      # kappa_Sigma of (16)
KAPPA_D = 1e-5          # the one-sided bounds' damping


def push_inside(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """x moved strictly inside ``lower < x < upper`` by W&B §3.6's rule: at least ``p_L = min(kappa_1
    max(1, |lower|), kappa_2 (upper - lower))`` from the lower bound and ``p_U`` likewise from the
    upper one (``kappa_1 = kappa_2 = 1e-2``); infinite bounds move nothing.

    Raises
    ------
    ValueError
        Where two bounds are so close that no float lies strictly between them.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.barrier import push_inside
    >>> push_inside(np.array([0.0, 5.0, -3.0, 0.5]), np.array([0.0, -np.inf, -np.inf, 0.0]),
    ...             np.array([np.inf, 1.0, np.inf, 1.0]))
    array([ 0.01,  0.99, -3.  ,  0.5 ])
    """
    with np.errstate(invalid="ignore"):   # inf - inf where bounds are missing: masked out below
        fraction = np.where(np.isfinite(upper - lower), BOUND_FRACTION * (upper - lower), np.inf)
        floor = lower + np.minimum(BOUND_PUSH * np.maximum(1.0, np.abs(lower)), fraction)
        ceiling = upper - np.minimum(BOUND_PUSH * np.maximum(1.0, np.abs(upper)), fraction)
    floor = np.where(np.isfinite(lower), floor, -np.inf)
    ceiling = np.where(np.isfinite(upper), ceiling, np.inf)
    pushed = np.minimum(np.maximum(x, floor), ceiling)
    inside = (pushed > lower) & (pushed < upper)
    if not np.all(inside):
        i = int(np.flatnonzero(~inside)[0])
        raise ValueError(f"variable {i}: the bounds [{lower[i]!r}, {upper[i]!r}] leave no room for an "
                         f"interior point; fix the variable (lower == upper) instead")
    return pushed


def norm_inf(v: np.ndarray) -> float:
    """``||v||_inf`` (0 for an empty v)."""
    return float(np.max(np.abs(v))) if np.size(v) else 0.0


def fraction_to_boundary(values: np.ndarray, steps: np.ndarray, tau: float) -> float:
    """The largest alpha in (0, 1] with ``values + alpha steps >= (1 - tau) values`` (values > 0)."""
    shrinking = steps < 0
    if not np.any(shrinking):
        return 1.0
    return float(min(1.0, np.min(-tau * values[shrinking] / steps[shrinking])))


class BoundTerms:
    """The finite bounds of w as barrier terms (see the module docstring).

    Parameters
    ----------
    lower, upper : ndarray
        The bounds of w (``-inf``/``inf`` where there is none; ``lower < upper``).

    Examples
    --------
    w in [0, 2] and w >= 1, with mu = 0.1:

    >>> import numpy as np
    >>> from optimizers.barrier import BoundTerms
    >>> terms = BoundTerms(np.array([0.0, 1.0]), np.array([2.0, np.inf]))
    >>> w = np.array([0.5, 2.0])
    >>> terms.slacks(w)
    (array([0.5, 1. ]), array([1.5]))
    >>> round(terms.barrier(w, 0.1), 6)        # -0.1 (ln 0.5 + ln 1 + ln 1.5) + 1e-6 * 1.0
    0.028769
    >>> terms.sigma(w, np.array([1.0, 1.0]), np.array([3.0]))
    array([4., 1.])
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray):
        self.n = lower.size
        self.lower_index = np.flatnonzero(np.isfinite(lower))
        self.upper_index = np.flatnonzero(np.isfinite(upper))
        self.lower, self.upper = lower[self.lower_index], upper[self.upper_index]
        self.lower_only = ~np.isfinite(upper[self.lower_index])   # over the lower bounds
        self.upper_only = ~np.isfinite(lower[self.upper_index])   # over the upper bounds
        self.count = self.lower_index.size + self.upper_index.size

    def slacks(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(w - lower, upper - w)`` over the finite bounds."""
        return w[self.lower_index] - self.lower, self.upper - w[self.upper_index]

    def interior(self, w: np.ndarray) -> bool:
        """Whether w lies strictly inside every bound."""
        sl, su = self.slacks(w)
        return bool(np.all(sl > 0) and np.all(su > 0))

    def barrier(self, w: np.ndarray, mu: float) -> float:
        """The barrier terms of ``phi_mu`` at w, the one-sided damping included."""
        sl, su = self.slacks(w)
        logs = np.sum(np.log(sl)) + np.sum(np.log(su))
        damping = np.sum(sl[self.lower_only]) + np.sum(su[self.upper_only])
        return float(-mu * logs + KAPPA_D * mu * damping)

    def gradient(self, w: np.ndarray, mu: float) -> np.ndarray:
        """The gradient of :meth:`barrier`."""
        sl, su = self.slacks(w)
        g = np.zeros(self.n)
        g[self.lower_index] += -mu / sl + KAPPA_D * mu * self.lower_only
        g[self.upper_index] += mu / su - KAPPA_D * mu * self.upper_only
        return g

    def damping(self, mu: float) -> np.ndarray:
        """The damping's part of :meth:`gradient` (what the barrier problem's dual residual adds)."""
        g = np.zeros(self.n)
        g[self.lower_index[self.lower_only]] += KAPPA_D * mu
        g[self.upper_index[self.upper_only]] -= KAPPA_D * mu
        return g

    def multipliers(self, zl: np.ndarray, zu: np.ndarray) -> np.ndarray:
        """``z_U - z_L`` over all of w: the bound multipliers' part of the Lagrangian's gradient."""
        z = np.zeros(self.n)
        z[self.lower_index] -= zl
        z[self.upper_index] += zu
        return z

    def sigma(self, w: np.ndarray, zl: np.ndarray, zu: np.ndarray) -> np.ndarray:
        """The diagonal ``Sigma`` over all of w."""
        sl, su = self.slacks(w)
        sigma = np.zeros(self.n)
        sigma[self.lower_index] += zl / sl
        sigma[self.upper_index] += zu / su
        return sigma

    def multiplier_steps(self, w: np.ndarray, zl: np.ndarray, zu: np.ndarray, mu: float,
                         dw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The steps ``(dz_L, dz_U)`` of the primal-dual system that go with dw (eq. (11))."""
        sl, su = self.slacks(w)
        dzl = mu / sl - zl - zl / sl * dw[self.lower_index]
        dzu = mu / su - zu + zu / su * dw[self.upper_index]
        return dzl, dzu

    def primal_fraction(self, w: np.ndarray, dw: np.ndarray, tau: float) -> float:
        """The fraction-to-the-boundary step of w along dw (eq. (15a))."""
        sl, su = self.slacks(w)
        return min(fraction_to_boundary(sl, dw[self.lower_index], tau),
                   fraction_to_boundary(su, -dw[self.upper_index], tau))

    @staticmethod
    def dual_fraction(zl: np.ndarray, zu: np.ndarray, dzl: np.ndarray, dzu: np.ndarray, tau: float) -> float:
        """The fraction-to-the-boundary step of the bound multipliers (eq. (15b))."""
        return min(fraction_to_boundary(zl, dzl, tau), fraction_to_boundary(zu, dzu, tau))

    def safeguard(self, w: np.ndarray, zl: np.ndarray, zu: np.ndarray,
                  mu: float) -> tuple[np.ndarray, np.ndarray]:
        """z kept within ``[mu / (kappa_Sigma slack), kappa_Sigma mu / slack]`` (eq. (16))."""
        sl, su = self.slacks(w)
        zl = np.clip(zl, mu / (KAPPA_SIGMA * sl), KAPPA_SIGMA * mu / sl)
        zu = np.clip(zu, mu / (KAPPA_SIGMA * su), KAPPA_SIGMA * mu / su)
        return zl, zu

    def complementarity(self, w: np.ndarray, zl: np.ndarray, zu: np.ndarray, mu: float) -> float:
        """``max |slack z - mu|`` over every bound (0 without bounds)."""
        sl, su = self.slacks(w)
        residual = np.concatenate([sl * zl - mu, su * zu - mu])
        return float(np.max(np.abs(residual))) if residual.size else 0.0
