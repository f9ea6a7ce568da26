"""The convergence test every method shares, defined once.

By default (``gtol=None``) a point x is converged when its gradient g passes the scaled test

    max_i |g_i| max(1, |x_i|) / max(1, |f(x)|) <= DEFAULT_GTOL = 1e-8,

the relative gradient of Dennis & Schnabel (*Numerical Methods for Unconstrained Optimization and
Nonlinear Equations*, SIAM 1996, §7.2; typical sizes of f and of each x_i set to 1): the relative
change of f per relative change of x_i. Where |f| > 1 and |x_i| > 1 the test is invariant to
scaling f and x; near f = 0 and x = 0 it is the absolute test ``||g||_inf <= 1e-8``. Unlike a test
of ||g|| against |f| alone it cannot pass far out on a growing f (f = x^4 at x = 1e60 has
|g| / |f| = 4e-60, but |g x| / |f| = 4).

The tolerance is tighter than scipy's ``||g||_inf <= 1e-5``, which stops small-valued problems
far above their minima (on the Moré–Garbow–Hillstrom set it reports success at 1-11 non-minima per
method): near a minimum f - f* is about g^T H^{-1} g / 2, so the error in f shrinks with the
square of the gradient tolerance, while a second-order method converging quadratically needs
only one or two more iterations to reach the tighter test (Nocedal & Wright, *Numerical
Optimization*, 2nd ed., Theorem 3.5 and §7.1).

An explicit ``gtol`` (and ``tol`` in ``hessopt.minimize``) is scipy's absolute test,
``||g||_inf <= gtol``, and replaces the default.
"""
from __future__ import annotations

import numpy as np

from .krylov import EPS

DEFAULT_GTOL = 1e-8


def noise(f: float) -> float:
    """A few ulps of f: changes of f this small are rounding."""
    return 10.0 * EPS * max(1.0, abs(f))


def noises(f: np.ndarray) -> np.ndarray:
    """:func:`noise` of each f."""
    return 10.0 * EPS * np.maximum(1.0, np.abs(f))


def gradient_norm(g: np.ndarray) -> float:
    """||g||_inf, the norm every test and message uses (the array's own max: np.max's wrapper
    costs as much again, twice an iteration)."""
    g = np.asarray(g)
    return float(np.abs(g).max()) if g.size else 0.0


class GradientTest:
    """Whether a point is first-order converged: ``||g||_inf <= gtol`` when ``gtol`` is given,
    else the default scaled test of the module docstring."""

    def __init__(self, gtol: float | None = None):
        if gtol is not None and not gtol >= 0:
            raise ValueError(f"gtol must be nonnegative, got {gtol!r}")
        self.gtol = gtol

    def measure(self, x: np.ndarray, f: float, g: np.ndarray) -> float:
        """What the test compares with its tolerance: ||g||_inf, or the relative gradient."""
        if self.gtol is not None:
            return gradient_norm(g)
        return gradient_norm(g * np.maximum(1.0, np.abs(x))) / max(1.0, abs(f))

    @property
    def tolerance(self) -> float:
        """What :meth:`measure` is compared with."""
        return DEFAULT_GTOL if self.gtol is None else self.gtol

    def measures(self, X: np.ndarray, F: np.ndarray, G: np.ndarray) -> np.ndarray:
        """:meth:`measure` of each row of a batch: points ``X`` (m, n), values ``F`` (m,) and
        gradients ``G`` (m, n), n >= 1 (NaN where a row is not finite)."""
        if self.gtol is not None:
            return np.abs(G).max(axis=1)
        return np.abs(G * np.maximum(1.0, np.abs(X))).max(axis=1) / np.maximum(1.0, np.abs(F))

    def __call__(self, x: np.ndarray, f: float, g: np.ndarray) -> bool:
        return self.measure(x, f, g) <= self.tolerance

    def describe(self, x: np.ndarray, f: float, g: np.ndarray, name: str = "g") -> str:
        """The test at x, for messages (``name``: how the gradient is called there)."""
        return self.wording(None if self.gtol is not None else self.measure(x, f, g), name)

    def wording(self, measure: float | None, name: str = "g") -> str:
        """:meth:`describe` given the point's ``measure`` (not used by the absolute test)."""
        if self.gtol is not None:
            return f"||{name}||_inf <= gtol = {self.gtol:.1e}"
        return f"max_i |{name}_i| max(1, |x_i|) / max(1, |f|) <= {DEFAULT_GTOL:.0e}, here {measure:.1e}"
