"""The convergence test every method shares, defined once.

By default (``gtol=None``) a point is converged when its gradient passes the scaled test

    ||g||_inf <= DEFAULT_GTOL * max(1, |f|),        DEFAULT_GTOL = 1e-8,

the relative gradient of Dennis & Schnabel (*Numerical Methods for Unconstrained Optimization and
Nonlinear Equations*, SIAM 1996, §7.2, with the typical size of f set to 1): where |f| > 1 the test
is relative, so multiplying f by a constant does not change where a run stops, and near f = 0 it
is an absolute test of 1e-8. The tolerance is tighter than scipy's ``||g||_inf <= 1e-5`` because
that test stops small-valued problems far above their minima (on the Moré–Garbow–Hillstrom set
it reports success at 1-11 non-minima per method): near a minimum f - f* is about g^T H^{-1} g / 2,
so the error in f shrinks with the square of the gradient tolerance, while a second-order method
converging quadratically needs only one or two more iterations to reach the tighter test (Nocedal
& Wright, *Numerical Optimization*, 2nd ed., Theorem 3.5 and §7.1).

An explicit ``gtol`` (and ``tol`` in ``hessopt.minimize``) is scipy's absolute test,
``||g||_inf <= gtol``, and replaces the default.
"""
from __future__ import annotations

import numpy as np

DEFAULT_GTOL = 1e-8


def gradient_norm(g: np.ndarray) -> float:
    """||g||_inf, the norm every test and message uses."""
    return float(np.max(np.abs(g))) if np.size(g) else 0.0


class GradientTest:
    """Whether a point is first-order converged: ``||g||_inf <= gtol`` when ``gtol`` is given,
    else the default scaled test of the module docstring."""

    def __init__(self, gtol: float | None = None):
        if gtol is not None and not gtol >= 0:
            raise ValueError(f"gtol must be nonnegative, got {gtol!r}")
        self.gtol = gtol

    def threshold(self, f: float) -> float:
        """The largest ||g||_inf that passes at a point where the objective is ``f``."""
        return self.gtol if self.gtol is not None else DEFAULT_GTOL * max(1.0, abs(f))

    def __call__(self, f: float, g: np.ndarray) -> bool:
        return gradient_norm(g) <= self.threshold(f)

    def describe(self, f: float) -> str:
        """The test at a point where the objective is ``f``, for messages."""
        if self.gtol is not None:
            return f"||g||_inf <= gtol = {self.gtol:.1e}"
        return f"||g||_inf <= {DEFAULT_GTOL:.0e} * max(1, |f|) = {self.threshold(f):.1e}"
