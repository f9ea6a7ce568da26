"""hessopt.curve_fit: scipy's ``curve_fit`` on :func:`hessopt.least_squares`, with exact Jacobians.

The weighted residuals are ``(f(xdata, *p) - ydata) / sigma`` (for a covariance matrix sigma = L L^T,
``L^-1 (f - ydata)``), minimized by ``least_squares``; the parameters' covariance is (J^T J)^-1 from the
Jacobian J of those residuals at the solution, made as scipy makes it: for 'lm' from the column-pivoted
QR of J (leastsq's; none when R is exactly singular), else by the singular value decomposition with
singular values below eps max(m, n) s_max dropped (a pseudo-inverse); scaled by the reduced chi-square
2 cost / (m - n) unless ``absolute_sigma``. ``confidence_band`` propagates that covariance to the fitted
curve (the delta method: var f(x) = g^T pcov g, g the gradient of f(x, p) in p, exact from autodiff).
"""
from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.stats
from scipy.optimize import OptimizeWarning

import autodiff as ad

from ._least_squares import least_squares


def curve_fit(f: Callable, xdata, ydata, p0=None, sigma=None, absolute_sigma: bool = False,
              check_finite: bool | None = None, bounds=(-np.inf, np.inf), method: str | None = None, jac=None, *,
              full_output: bool = False, nan_policy: str | None = None, **kwargs):
    """Fit ``f(xdata, *params)`` to ``ydata`` by least squares, as ``scipy.optimize.curve_fit``.

    The Jacobian of ``f`` in its parameters is exact (autodiff) unless ``jac`` is a callable
    ``jac(xdata, *params)``; scipy's '2-point', '3-point' and 'cs' are taken as asking for it.
    ``method`` None is 'lm' without bounds and 'trf' with them, as in scipy; the methods are those of
    :func:`hessopt.least_squares`, which gets ``kwargs`` (scipy's ``leastsq`` name ``maxfev`` is read as
    ``max_nfev``).

    Parameters
    ----------
    f : callable
        The model ``f(xdata, *params)``, NumPy code.
    xdata : array_like or object
        The independent variable, passed to f as it is (arrays of numbers as float arrays).
    ydata : array_like
        The data, of f's output shape.
    p0 : array_like, optional
        The starting parameters (default: ones, or the middle of finite bounds, as scipy).
    sigma : array_like, optional
        Standard deviations of ydata (1-D) or its covariance matrix (2-D).
    absolute_sigma : bool
        sigma in absolute units (pcov not rescaled by the reduced chi-square).
    check_finite : bool, optional
        Refuse NaN and inf in the data (default: True unless ``nan_policy`` is given).
    bounds : (lb, ub) or scipy.optimize.Bounds
    method : {'lm', 'trf', 'dogbox', 'gn'}, optional
    jac : callable or str, optional
    full_output : bool
        Also return ``infodict`` (nfev, njev, fvec: the weighted residuals), ``mesg`` and ``ier``
        (least_squares' status).
    nan_policy : {'raise', 'omit'}, optional
        'raise': refuse NaN; 'omit': fit without the points where xdata or ydata is NaN.

    Returns
    -------
    popt, pcov : ndarray
        The parameters and their covariance (inf where it cannot be estimated, with a warning).

    Raises
    ------
    ValueError
        For empty or non-finite data, a sigma of the wrong shape, or a p0 f cannot tell the size of.
    RuntimeError
        When the fit does not succeed ("Optimal parameters not found: " and the reason).

    Examples
    --------
    >>> import numpy as np
    >>> import hessopt
    >>> x = np.linspace(0, 4, 50)
    >>> y = 2.5 * np.exp(-1.3 * x) + 0.5 + 0.01 * np.cos(7 * x)   # a small deterministic wiggle
    >>> popt, pcov = hessopt.curve_fit(lambda x, a, b, c: a * np.exp(-b * x) + c, x, y)
    >>> popt.round(2), bool(np.all(np.sqrt(np.diag(pcov)) < 0.02))
    (array([2.5, 1.3, 0.5]), True)
    """
    xdata, ydata, sigma = _data(xdata, ydata, sigma, check_finite, nan_policy)
    p0 = _start(f, p0, bounds)
    method = _method(method, bounds, p0, ydata.size, kwargs)
    weigh = _weights(sigma, ydata.size)

    def residuals(params):
        return weigh(np.ravel(f(xdata, *params) - ydata))   # ydata broadcast to f's shape, as scipy

    weighted_jac = jac
    if callable(jac):
        def weighted_jac(params):
            return weigh(np.asarray(jac(xdata, *params), dtype=float).reshape(-1, p0.size))
    result = least_squares(residuals, p0, jac=weighted_jac, bounds=bounds, method=method, **kwargs)
    if not result.success:
        raise RuntimeError("Optimal parameters not found: " + result.message)
    pcov = _covariance(result.jac, 2 * result.cost, result.fun.size, absolute_sigma, method)
    if full_output:
        return result.x, pcov, _info(result), result.message, result.status
    return result.x, pcov


def _method(method: str | None, bounds, p0: np.ndarray, m: int, kwargs: dict) -> str:
    """scipy's choice of method (and its refusals), with kwargs made least_squares' (maxfev)."""
    if "args" in kwargs:
        raise ValueError("'args' is not a supported keyword argument: f takes the parameters after xdata")
    if "maxfev" in kwargs:
        kwargs["max_nfev"] = kwargs.pop("maxfev")
    lower, upper = _sides(bounds, p0.size)
    bounded = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
    if np.any(p0 < lower) or np.any(p0 > upper):
        raise ValueError(f"Initial guess is outside of provided bounds: p0 = {p0}")
    method = method or ("trf" if bounded else "lm")
    if method == "lm" and bounded:
        raise ValueError("Method 'lm' only works for unconstrained problems. Use 'trf' or 'dogbox' instead.")
    if method == "lm" and 1 < m < p0.size:   # m = 1: a scalar ydata, broadcast to f's shape
        raise TypeError(f"The number of func parameters={p0.size} must not exceed the number of data points={m}")
    return method


def _info(result) -> dict:
    """full_output's infodict: nfev, njev, fvec (the weighted residuals) and, as MINPACK's, the
    column-pivoted QR of the Jacobian: fjac (R^T padded, n x m), ipvt (1-based), qtf (Q^T fvec)."""
    q, r, pivots = scipy.linalg.qr(result.jac, mode="economic", pivoting=True)
    fjac = np.zeros((result.jac.shape[1], result.jac.shape[0]))
    fjac[:, :r.shape[0]] = r.T
    return {"nfev": result.nfev, "njev": result.njev, "fvec": result.fun, "fjac": fjac, "ipvt": pivots + 1,
            "qtf": q.T @ result.fun}


def confidence_band(f: Callable, x, popt, pcov, level: float = 0.95, dof: int | None = None):
    """The fitted curve ``f(x, *popt)`` and the half-width of its pointwise confidence band.

    By the delta method: var f(x) = g(x)^T pcov g(x), g the gradient of f(x, p) in p at popt (exact,
    one Jacobian of autodiff for all x), times the normal quantile of ``level`` (Student's t with
    ``dof`` degrees of freedom when given: m - n for a pcov scaled by the residuals).

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import confidence_band
    >>> line = lambda x, a, b: a + b * x
    >>> curve, half = confidence_band(line, np.array([0.0, 1.0]), [1.0, 2.0], np.diag([0.01, 0.04]))
    >>> curve, (half / 1.959964).round(6)     # sqrt(0.01), sqrt(0.01 + 0.04)
    (array([1., 3.]), array([0.1     , 0.223607]))
    """
    popt = np.asarray(popt, dtype=float)
    curve = np.ravel(f(x, *popt))
    gradients = np.asarray(ad.jacobian(lambda p: np.ravel(f(x, *p)))(popt)).reshape(curve.size, popt.size)
    variance = np.einsum("ij,jk,ik->i", gradients, np.asarray(pcov, dtype=float), gradients)
    quantile = scipy.stats.norm.ppf(0.5 + level / 2) if dof is None else scipy.stats.t.ppf(0.5 + level / 2, dof)
    return curve, quantile * np.sqrt(np.maximum(variance, 0.0))


def _data(xdata, ydata, sigma, check_finite, nan_policy):
    """The data as float arrays, checked (NaN and inf) or with NaN points dropped, as scipy."""
    if nan_policy == "propagate":
        raise ValueError("`nan_policy='propagate'` is not supported by this function.")
    if nan_policy not in (None, "raise", "omit"):
        raise ValueError(f"nan_policy must be one of {{'raise', 'omit', None}}, got {nan_policy!r}")
    check_finite = nan_policy is None if check_finite is None else check_finite
    convert = np.asarray_chkfinite if check_finite else np.asarray
    ydata = convert(ydata, float)
    if isinstance(xdata, (list, tuple, np.ndarray)):
        xdata = convert(xdata, float)
    if ydata.size == 0:
        raise ValueError("`ydata` must not be empty!")
    if sigma is not None and np.ndim(sigma) == 0:
        sigma = np.full(ydata.size, float(sigma))
    if nan_policy is not None and isinstance(xdata, np.ndarray):
        missing = np.isnan(ydata) | (np.isnan(xdata).reshape(-1, ydata.size).any(axis=0)
                                     if xdata.size % max(ydata.size, 1) == 0 else False)
        if np.any(missing) and nan_policy == "raise":
            raise ValueError("The input contains nan values")
        if np.any(missing):
            keep = ~missing
            xdata, ydata = xdata[..., keep], ydata[keep]
            if sigma is not None:
                sigma = np.asarray(sigma, dtype=float)
                sigma = sigma[keep] if sigma.ndim == 1 else sigma[np.ix_(keep, keep)]
    return xdata, ydata, sigma


def _start(f: Callable, p0, bounds) -> np.ndarray:
    """p0 as floats, or scipy's default: ones, the middle of two finite bounds, one inside one."""
    if p0 is not None:
        return np.atleast_1d(np.asarray(p0, dtype=float))
    parameters = list(inspect.signature(f).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters) or len(parameters) < 2:
        raise ValueError("Unable to determine number of fit parameters.")
    n = len(parameters) - 1
    lower, upper = _sides(bounds, n)
    start = np.ones(n)
    both, low, high = np.isfinite(lower) & np.isfinite(upper), np.isfinite(lower), np.isfinite(upper)
    start = np.where(low & ~both, lower + 1, start)
    start = np.where(high & ~both, upper - 1, start)
    return np.where(both, 0.5 * (np.where(both, lower, 0.0) + np.where(both, upper, 0.0)), start)   # no inf - inf


def _sides(bounds, n: int) -> np.ndarray:
    """(lb, ub) or a Bounds as a (2, n) array, None (NaN) as no bound."""
    sides = (bounds.lb, bounds.ub) if hasattr(bounds, "lb") else bounds
    arrays = [np.broadcast_to(np.asarray(np.nan if side is None else side, dtype=float), n) for side in sides]
    return np.stack([np.where(np.isnan(side), sign * np.inf, side) for side, sign in zip(arrays, (-1.0, 1.0))])


def _weights(sigma, m: int) -> Callable:
    """r -> r / sigma (standard deviations) or L^-1 r (a covariance L L^T), as scipy weighs residuals."""
    if sigma is None:
        return lambda r: r
    sigma = np.asarray(sigma, dtype=float)
    if sigma.shape == (m,):
        return lambda r: r / (sigma if np.ndim(r) == 1 else sigma[:, None])
    if sigma.shape == (m, m):
        try:
            factor = scipy.linalg.cholesky(sigma, lower=True)
        except scipy.linalg.LinAlgError:
            raise ValueError("`sigma` must be positive definite.") from None
        inverse = scipy.linalg.solve_triangular(factor, np.eye(m), lower=True)
        return lambda r: inverse @ r
    raise ValueError(f"`sigma` has incorrect shape {sigma.shape}: expected ({m},) or ({m}, {m}).")


def _covariance(jacobian: np.ndarray, chi_square: float, m: int, absolute_sigma: bool, method: str) -> np.ndarray:
    """(J^T J)^-1 as scipy's curve_fit makes it (module docstring), scaled by chi^2 / (m - n) unless
    absolute_sigma; all inf, with scipy's warning, when it cannot be estimated."""
    n = jacobian.shape[1]
    if method == "lm":   # leastsq's: R^-1 R^-T from the pivoted QR; an exactly singular R: none
        r, pivots = scipy.linalg.qr(jacobian, mode="r", pivoting=True)
        r = r[:n, :n]
        if r.shape[0] < n or np.any(np.diag(r) == 0):
            pcov = np.full((n, n), np.inf)
        else:
            inverse = np.empty((n, n))
            inverse[pivots] = scipy.linalg.solve_triangular(r, np.eye(n))
            pcov = inverse @ inverse.T
    else:                # least_squares': the pseudo-inverse, singular values below eps max(m, n) s_1 dropped
        _, s, vt = np.linalg.svd(jacobian, full_matrices=False)
        kept = s > np.finfo(float).eps * max(jacobian.shape) * (s[0] if s.size else 0.0)
        pcov = (vt[kept].T / s[kept] ** 2) @ vt[kept]
    if not absolute_sigma and np.all(np.isfinite(pcov)):
        pcov = pcov * (chi_square / (m - n)) if m > n else np.full((n, n), np.inf)
    if not np.all(np.isfinite(pcov)):
        pcov = np.full((n, n), np.inf)
        warnings.warn("Covariance of the parameters could not be estimated", OptimizeWarning, stacklevel=3)
    return pcov
