"""Finite-difference checks of first and second derivatives, for users and for our tests."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import Tensor, constant
from .transforms import grad, hessian


def _scalar(f: Callable, weights_seed: int = 0) -> Callable:
    """f itself when it returns a scalar, else <f(x), w> for a fixed random w (tests all of J)."""
    def scalar_f(x):
        y = f(x)
        if np.ndim(y.numpy() if isinstance(y, Tensor) else y) == 0:
            return y
        w = np.random.default_rng(weights_seed).standard_normal(np.shape(y))
        return (y * w).sum()
    return scalar_f


def central_differences(fun: Callable, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d fun / dx by central differences (float64), shape ``fun(x).shape + x.shape``."""
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(fun(x + step)) - np.asarray(fun(x - step))) / (2 * eps))
    out = np.stack(columns, axis=-1)
    return out.reshape(np.shape(fun(x)) + x.shape)


def check_grad(f: Callable, x: np.ndarray, order: int = 2, eps: float = 1e-6, rtol: float = 1e-5,
               atol: float = 1e-6) -> dict:
    """Compare autodiff derivatives of ``f`` at ``x`` with central finite differences (float64).

    Checks the gradient (order >= 1) and the Hessian (order >= 2, against differences of the
    gradient). A non-scalar ``f`` is contracted with a fixed random vector. The quickest test for a
    new op (see ``autodiff.extend``).

    Parameters
    ----------
    f : callable
        A function of one array.
    x : array_like
        The point.
    order : int, default 2
        1 checks the gradient, 2 the Hessian too.
    eps, rtol, atol : float
        The difference step and the tolerances (relative to the largest finite-difference entry).

    Returns
    -------
    dict
        The largest absolute error of ``"gradient"`` (and ``"hessian"``).

    Raises
    ------
    AssertionError
        On a mismatch, showing both results.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> errors = ad.check_grad(lambda x: np.sum(np.sin(x) ** 2), [0.5, 1.0])
    >>> sorted(errors), max(errors.values()) < 1e-8
    (['gradient', 'hessian'], True)
    """
    x = np.array(x, dtype=np.float64)
    scalar_f = _scalar(f)
    errors = {}
    g = grad(scalar_f)(x)
    g_fd = central_differences(lambda z: np.asarray(scalar_f(constant(z))), x, eps)
    errors["gradient"] = _compare("gradient", g, g_fd, rtol, atol)
    if order >= 2:
        h = hessian(scalar_f)(x)
        h_fd = central_differences(lambda z: grad(scalar_f)(z), x, eps)
        errors["hessian"] = _compare("Hessian", h, h_fd, rtol, atol)
    return errors


def _compare(what, exact, approx, rtol, atol) -> float:
    scale = max(1.0, float(np.max(np.abs(approx), initial=0.0)))
    error = float(np.max(np.abs(exact - approx), initial=0.0))
    if not (np.all(np.isfinite(exact)) and np.all(np.isfinite(approx))) or error > atol + rtol * scale:
        raise AssertionError(f"{what} mismatch: max |autodiff - finite differences| = {error:.3g} "
                             f"(scale {scale:.3g})\nautodiff:\n{exact}\nfinite differences:\n{approx}")
    return error
