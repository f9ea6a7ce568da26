"""Differentiable ``scipy.stats`` distributions (``autodiff.numpy.stats``): likelihoods for Tensors.

scipy.stats' functions are Python code that turns its input into ndarrays, so no engine can see
through them: on a tracked Tensor, ``scipy.stats.norm.logpdf(x)`` raises a TypeError naming the
version here. These keep scipy's signatures (shape parameters, then ``loc`` and ``scale``) and
values, support and parameter checks included (-inf log density outside the support, NaN for invalid
parameters), written with differentiable operations: the densities differentiate in every
argument; the distribution functions in x, loc and scale, and in a shape parameter where the
special function has a rule (not in t's df, chi2's df, gamma's a, beta's a and b).

Distributions: ``norm``, ``t``, ``chi2``, ``gamma``, ``beta`` (pdf, logpdf, cdf, logcdf, sf,
logsf; beta without sf), ``poisson`` (pmf, logpmf, cdf, logcdf), ``multivariate_normal`` (pdf,
logpdf, entropy) and ``dirichlet`` (pdf, logpdf). autodiff never imports scipy for them: their
special functions are ``autodiff.numpy.special``'s.

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> from autodiff.numpy import stats
>>> data = np.array([0.5, 1.5, 2.5])
>>> ad.grad(lambda mu: np.sum(stats.norm.logpdf(data, mu, 2.0)))(1.0)   # sum(x - mu) / scale^2
np.float64(0.375)
"""
from __future__ import annotations

import math

import numpy as _np

from ..core import value_of
from . import linalg, ops, special
from .ops import exp, float_type, log, log1p, where
from .special import _like

__all__ = ["norm", "t", "chi2", "gamma", "beta", "poisson", "multivariate_normal", "dirichlet"]

_LOG_2PI = math.log(2 * math.pi)


class Distribution:
    """A distribution's functions, called as scipy.stats' (``norm.logpdf(x, loc, scale)``)."""

    def __init__(self, name: str, functions: dict):
        self.name = name
        for function_name, function in functions.items():
            setattr(self, function_name, _real_arguments(function, f"{name}.{function_name}"))

    def __repr__(self) -> str:
        return f"autodiff.numpy.stats.{self.name}"


def _real_arguments(function, name: str):
    """``function``, refusing complex arguments (scipy computes some of them holomorphically, drops
    the imaginary part of others: neither is a likelihood)."""
    def real_only(*args, **kwargs):
        if any(_np.iscomplexobj(value_of(a)) for a in list(args) + list(kwargs.values())):
            raise TypeError(f"autodiff.numpy.stats.{name} takes real arguments, not complex ones")
        return function(*args, **kwargs)
    real_only.__name__ = real_only.__qualname__ = name
    real_only.__doc__ = f"scipy.stats.{name}, differentiable (scipy's signature)."
    return real_only


def _parameters(args: tuple, kwargs: dict, shapes: tuple) -> tuple:
    """(shape parameters, loc, scale) from scipy's positional and keyword arguments."""
    names = shapes + ("loc", "scale")
    values = dict(zip(names, args))
    if len(args) > len(names):
        raise TypeError(f"got {len(args)} arguments after x, at most {len(names)} ({', '.join(names)})")
    for key, value in kwargs.items():
        if key not in names or key in values:
            raise TypeError(f"unexpected or repeated argument {key!r} (the arguments are {', '.join(names)})")
        values[key] = value
    missing = [name for name in shapes if name not in values]
    if missing:
        raise TypeError(f"missing shape parameter(s) {', '.join(missing)}")
    return tuple(values[name] for name in shapes), values.get("loc", 0.0), values.get("scale", 1.0)


def _continuous(name, shapes, argcheck, logpdf, cdf, sf=None, support=(-math.inf, math.inf)):
    """scipy's rv_continuous recipe: x standardized as z = (x - loc) / scale, the standard
    functions of z inside the support, NaN where a parameter is invalid (scale <= 0 included).
    Masked values are computed at a point inside the support (``inner``), so that they never put
    a NaN into a gradient (np.where differentiates both branches)."""
    lower, upper = support
    inner = 0.0 if lower == -math.inf else 1.0 if upper == math.inf else 0.5 * (lower + upper)

    def standardized(x, args, kwargs):
        parameters, loc, scale = _parameters(args, kwargs, shapes)
        valid = argcheck(*parameters) & (scale > 0)
        scale = _select(scale > 0, scale, 1.0)
        return (x - loc) / scale, parameters, valid, scale

    def density(x, *args, **kwargs):
        z, parameters, valid, scale = standardized(x, args, kwargs)
        inside = (z >= lower) & (z <= upper) & valid
        log_scale = math.log(scale) if isinstance(scale, (int, float)) else log(scale)
        value = where(inside, logpdf(where(inside, z, inner), *_safe(parameters, valid, z)) - log_scale, -math.inf)
        return where(valid, value, math.nan)

    def distribution(function, below, above):
        def f(x, *args, **kwargs):
            z, parameters, valid, _ = standardized(x, args, kwargs)
            inside = (z > lower) & (z < upper)
            value = function(where(inside, z, inner), *_safe(parameters, valid, z))
            if lower > -math.inf:
                value = where(z <= lower, below, value)
            if upper < math.inf:
                value = where(z >= upper, above, value)
            return where(valid, value, math.nan)
        return f

    functions = {"logpdf": density, "pdf": lambda x, *args, **kwargs: exp(density(x, *args, **kwargs)),
                 "cdf": distribution(cdf, 0.0, 1.0)}
    functions["logcdf"] = lambda x, *args, **kwargs: log(functions["cdf"](x, *args, **kwargs))
    if sf is not None:
        functions["sf"] = distribution(sf, 1.0, 0.0)
        functions["logsf"] = lambda x, *args, **kwargs: log(functions["sf"](x, *args, **kwargs))
    if name == "norm":  # the normal's log tails without the log of a tiny cdf
        functions["logcdf"] = distribution(special.log_ndtr, -math.inf, 0.0)
        functions["logsf"] = distribution(lambda z: special.log_ndtr(-z), 0.0, -math.inf)
    return Distribution(name, functions)


def _select(condition, a, b):
    """np.where, or the chosen value itself for a plain bool condition (np.where would turn Python
    numbers into float64 arrays, which promote a float32 x)."""
    if isinstance(condition, (bool, _np.bool_)):
        return a if condition else b
    return where(condition, a, b)


def _safe(parameters: tuple, valid, z) -> tuple:
    """Parameters with invalid entries replaced by 1 (a valid value of every shape parameter here),
    for the branch that np.where discards; Python numbers in z's float type (scipy's special
    functions compute a Python number with a float32 array in float64)."""
    return tuple(_np.asarray(p, float_type(value_of(z))) if isinstance(p, (int, float)) else _select(valid, p, 1.0)
                 for p in parameters)


def _always(*parameters):
    return True


def _t_logpdf(z, df):
    return (_like(special.gammaln(0.5 * df + 0.5) - special.gammaln(0.5 * df) - 0.5 * (log(df) + math.log(math.pi)), z)
            - (df + 1) / 2 * log1p(z * z / df))


norm = _continuous("norm", (), _always, lambda z: -0.5 * z * z - 0.5 * _LOG_2PI, special.ndtr,
                   lambda z: special.ndtr(-z))
t = _continuous("t", ("df",), lambda df: df > 0, _t_logpdf, lambda z, df: special.stdtr(df, z),
                lambda z, df: special.stdtr(df, -z))
chi2 = _continuous("chi2", ("df",), lambda df: df > 0,
                   lambda z, df: (special.xlogy(df / 2 - 1, z) - z / 2
                                  - _like(special.gammaln(df / 2) + math.log(2) * df / 2, z)),
                   lambda z, df: special.gammainc(df / 2, z / 2), lambda z, df: special.gammaincc(df / 2, z / 2),
                   support=(0.0, math.inf))
gamma = _continuous("gamma", ("a",), lambda a: a > 0,
                    lambda z, a: special.xlogy(a - 1, z) - z - _like(special.gammaln(a), z),
                    lambda z, a: special.gammainc(a, z), lambda z, a: special.gammaincc(a, z),
                    support=(0.0, math.inf))
beta = _continuous("beta", ("a", "b"), lambda a, b: (a > 0) & (b > 0),
                   lambda z, a, b: (special.xlog1py(b - 1, -z) + special.xlogy(a - 1, z)
                                    - _like(special.betaln(a, b), z)),
                   lambda z, a, b: special.betainc(a, b, z), support=(0.0, 1.0))


def _poisson_logpmf(k, mu, loc=0):
    k = _like(k - loc, mu)  # no gradient in k; in mu's float type
    valid = mu >= 0
    inside = (k >= 0) & (_np.floor(k) == k) & valid
    mu_safe = _select(valid, mu, 1.0)
    value = where(inside, special.xlogy(k, mu_safe) - _like(special.gammaln(k + 1), mu) - mu_safe, -math.inf)
    return where(valid, value, math.nan)


def _poisson_cdf(k, mu, loc=0):
    k = _like(_np.floor(k - loc), mu)
    valid = mu >= 0
    value = where((k >= 0) & valid, special.gammaincc(_select(k >= 0, k, 0.0) + 1, _select(valid, mu, 1.0)), 0.0)
    return where(valid, value, math.nan)


poisson = Distribution("poisson", {
    "logpmf": _poisson_logpmf, "pmf": lambda k, mu, loc=0: exp(_poisson_logpmf(k, mu, loc)),
    "cdf": _poisson_cdf, "logcdf": lambda k, mu, loc=0: log(_poisson_cdf(k, mu, loc))})


# --- multivariate ----------------------------------------------------------------------------------

def _mvn_parameters(mean, cov, allow_singular: bool):
    """mean as a vector, cov as a matrix (a scalar is c I, a vector a diagonal), checked as scipy
    checks them (from the lower triangle, which is what scipy and NumPy read)."""
    if mean is None:
        dim = 1 if _np.ndim(value_of(cov)) < 2 else _np.shape(value_of(cov))[0]
        mean = _np.zeros(dim)
    mean = ops.reshape(mean, (-1,)) if _np.ndim(value_of(mean)) != 1 else mean
    dim = _np.shape(value_of(mean))[0]
    if _np.ndim(value_of(cov)) == 0:
        cov = cov * _np.eye(dim)
    elif _np.ndim(value_of(cov)) == 1:
        cov = ops.diag(cov)
    if _np.shape(value_of(cov)) != (dim, dim):
        raise ValueError(f"Array 'cov' must be of shape ({dim}, {dim}) for a mean of length {dim}.")
    spectrum = _np.linalg.eigvalsh(_np.asarray(value_of(cov), dtype=float))
    eps = 1e6 * _np.finfo(float).eps * _np.max(_np.abs(spectrum))
    if _np.min(spectrum) < -eps:
        raise ValueError("The input matrix must be symmetric positive semidefinite.")
    rank = int(_np.sum(spectrum > eps))
    if rank < dim and not allow_singular:
        raise _np.linalg.LinAlgError("When `allow_singular is False`, the input matrix must be symmetric "
                                     "positive definite.")
    return mean, cov, dim, rank, eps


def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    mean, cov, dim, rank, eps = _mvn_parameters(mean, cov, allow_singular)
    ndim = _np.ndim(value_of(x))
    x = ops.reshape(x, (1,)) if ndim == 0 else ops.reshape(x, (-1, 1) if dim == 1 else (1, -1)) if ndim == 1 else x
    dev = x - mean
    if rank == dim:  # Cholesky: differentiable in cov wherever it is positive definite
        lower = linalg.cholesky(ops.tril(cov) + ops.swapaxes(ops.tril(cov, -1), -1, -2))
        whitened = ops.matmul(dev, ops.swapaxes(linalg.inv(lower), -1, -2))
        log_det = 2 * ops.sum(log(ops.diagonal(lower)))
        out = -0.5 * (dim * _LOG_2PI + log_det + ops.sum(whitened * whitened, axis=-1))
    else:            # the pseudo-inverse and pseudo-determinant on the range of cov, as scipy's
        s, u = linalg.eigh(cov)
        kept = _np.asarray(value_of(s)) > eps
        whitened = ops.matmul(dev, ops.getitem(u, (slice(None), kept)) / ops.sqrt(ops.getitem(s, kept)))
        out = -0.5 * (rank * _LOG_2PI + ops.sum(log(ops.getitem(s, kept)))
                      + ops.sum(whitened * whitened, axis=-1))
        residual = _np.linalg.norm(_np.asarray(value_of(dev)) @ _np.asarray(value_of(u))[:, ~kept], axis=-1)
        out = where(residual < 1e3 * eps, out, -math.inf)  # outside the support
    return ops.squeeze(out)


def _mvn_entropy(mean=None, cov=1):
    mean, cov, dim, rank, eps = _mvn_parameters(mean, cov, True)
    s = linalg.eigvalsh(cov)
    return 0.5 * (rank * (_LOG_2PI + 1) + ops.sum(log(ops.getitem(s, _np.asarray(value_of(s)) > eps))))


multivariate_normal = Distribution("multivariate_normal", {
    "logpdf": _mvn_logpdf,
    "pdf": lambda x, mean=None, cov=1, allow_singular=False: exp(_mvn_logpdf(x, mean, cov, allow_singular)),
    "entropy": _mvn_entropy})


def _dirichlet_logpdf(x, alpha):
    """x's first axis holds the components (scipy's layout); K - 1 of them imply the last."""
    a, values = _np.asarray(value_of(alpha)), _np.asarray(value_of(x))
    if a.ndim != 1:
        raise ValueError(f"Parameter vector 'a' must be one dimensional, but a.shape = {a.shape}.")
    if _np.min(a) <= 0:
        raise ValueError("All parameters must be greater than 0")
    if values.shape[0] not in (a.shape[0], a.shape[0] - 1):
        raise ValueError("Vector 'x' must have either the same number of entries as, or one entry fewer "
                         f"than, parameter vector 'a', but alpha.shape = {a.shape} and x.shape = {values.shape}.")
    if values.shape[0] != a.shape[0]:
        x = ops.concatenate([x, 1 - ops.sum(x, axis=0, keepdims=True)], axis=0)
        values = _np.asarray(value_of(x))
    if _np.min(values) < 0 or _np.max(values) > 1 or _np.any(_np.abs(_np.sum(values, 0) - 1.0) > 10e-10):
        raise ValueError("The input vector 'x' must lie within the normal simplex "
                         f"(entries in [0, 1] summing to 1), but np.sum(x, 0) = {_np.sum(values, 0)}.")
    alpha_column = ops.reshape(alpha, (-1,) + (1,) * (values.ndim - 1))
    log_beta = ops.sum(special.gammaln(alpha)) - special.gammaln(ops.sum(alpha))
    return ops.squeeze(ops.sum(special.xlogy(alpha_column - 1, x), axis=0) - log_beta)


dirichlet = Distribution("dirichlet", {
    "logpdf": _dirichlet_logpdf, "pdf": lambda x, alpha: exp(_dirichlet_logpdf(x, alpha))})
