"""scipy's robust losses for ``least_squares`` as a plain least-squares problem with the same cost.

scipy's ``least_squares(..., loss=rho, f_scale=C)`` minimizes F(x) = 0.5 C^2 sum_i rho(z_i), z_i = (f_i / C)^2.
Here the residuals are rewritten as r_i = f_i w(z_i) with w(z) = sqrt(rho(z) / z) (rho(0) = 0, so w is
rho'(0) = 1 at z = 0), whose half sum of squares is exactly F: every least-squares method then minimizes
scipy's cost, with its own guarantees, and no second derivative of rho is needed. By the chain rule
dr_i / df_i = w + 2 z w'(z) = rho'(z) / w(z), so the rewritten Jacobian is J scaled row by row by
rho'(z_i) / w(z_i), exact when J is (Triggs, McLauchlan, Hartley & Fitzgibbon, "Bundle adjustment: a
modern synthesis", 2000, sec. 4.3, scale residuals the same way for their Gauss-Newton model; their
Jacobian keeps a second-derivative term, this one is the derivative of the rewritten residuals).

Each built-in loss's rho(z) / z is written in a form without cancellation near z = 0.

The result's ``jac`` is scipy's, not the rewritten one: J scaled row by row by sqrt(rho' + 2 z rho''),
the part of the cost's Hessian without second derivatives of f being J^T diag(rho' + 2 z rho'') J
(Triggs et al. 2000, sec. 4.3), with scipy's floor of eps on the factor (where it is not positive,
a redescending loss's outliers), so that ``jac.T @ jac`` is that Gauss-Newton Hessian, as scipy documents.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _soft_l1(z):
    root = np.sqrt(1 + z)
    return 2 / (root + 1), 1 / root, -0.5 / root ** 3        # rho = 2 (sqrt(1 + z) - 1)


def _huber(z):
    outer = z > 1
    root = np.sqrt(np.where(outer, z, 1.0))
    return (np.where(outer, (2 * root - 1) / np.where(outer, z, 1.0), 1.0), np.where(outer, 1 / root, 1.0),
            np.where(outer, -0.5 / root ** 3, 0.0))


def _cauchy(z):
    return _ratio(np.log1p, z), 1 / (1 + z), -1 / (1 + z) ** 2


def _arctan(z):
    return _ratio(np.arctan, z), 1 / (1 + z ** 2), -2 * z / (1 + z ** 2) ** 2


def _ratio(rho: Callable, z):
    """rho(z) / z, 1 at z = 0 (log1p and arctan are accurate near 0, so nothing cancels)."""
    positive = z > 0
    safe = np.where(positive, z, 1.0)
    return np.where(positive, rho(safe) / safe, 1.0)


#: loss name -> z -> (rho(z) / z, rho'(z), rho''(z)); None for 'linear'.
LOSSES: dict[str, Callable | None] = {"linear": None, "soft_l1": _soft_l1, "huber": _huber, "cauchy": _cauchy,
                                      "arctan": _arctan}


def _callable_loss(loss: Callable) -> Callable:
    """A user's ``loss(z) -> (3, m)`` array (rho, rho', rho'') as z -> (rho / z, rho', rho'')."""
    def ratio_and_slope(z):
        values = np.asarray(loss(z), dtype=float)
        if values.ndim != 2 or values.shape[0] != 3 or values.shape[1] != np.size(z):
            raise ValueError(f"loss(z) must return an array of shape (3, {np.size(z)}), got {values.shape}")
        positive = z > 0
        return np.where(positive, values[0] / np.where(positive, z, 1.0), values[1]), values[1], values[2]

    return ratio_and_slope


class RobustResiduals:
    """f(x) and its Jacobian as the rewritten residuals f w(z) and rows scaled by rho'(z) / w(z)
    (module docstring); ``residuals`` and ``jacobian`` take what ``f`` gave at x, so neither evaluates f.
    ``gauss_newton_jacobian`` is the result's ``jac``, scipy's (module docstring)."""

    def __init__(self, loss, f_scale: float):
        self.name = loss if isinstance(loss, str) else getattr(loss, "__name__", "callable")
        if isinstance(loss, str):
            if loss not in LOSSES:
                raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))} or a callable, got {loss!r}")
            self.ratio_and_slope = LOSSES[loss]
        elif callable(loss):
            self.ratio_and_slope = _callable_loss(loss)
        else:
            raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))} or a callable, got {loss!r}")
        try:
            self.f_scale = float(f_scale)
        except (TypeError, ValueError):
            raise ValueError(f"f_scale must be a positive number, got {f_scale!r}") from None
        if not self.f_scale > 0 or not np.isfinite(self.f_scale):
            raise ValueError(f"f_scale must be a positive number, got {f_scale!r}")

    @property
    def linear(self) -> bool:
        return self.ratio_and_slope is None

    def _weights(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ratio, slope, _ = self.ratio_and_slope((f / self.f_scale) ** 2)
        return np.sqrt(ratio), slope

    def residuals(self, f: np.ndarray) -> np.ndarray:
        return f if self.linear else f * self._weights(f)[0]

    def jacobian(self, f: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        if self.linear:
            return jacobian
        w, slope = self._weights(f)
        return (slope / w)[:, None] * jacobian

    def gauss_newton_jacobian(self, f: np.ndarray, jacobian: np.ndarray) -> np.ndarray:
        """J with rows scaled by sqrt(max(rho' + 2 z rho'', eps)) (module docstring); J itself for 'linear'."""
        if self.linear:
            return jacobian
        z = (f / self.f_scale) ** 2
        _, slope, curvature = self.ratio_and_slope(z)
        factor = np.sqrt(np.maximum(slope + 2 * z * curvature, np.finfo(float).eps))
        return factor[:, None] * jacobian
