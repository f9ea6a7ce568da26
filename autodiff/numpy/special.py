"""Differentiable ``scipy.special`` (``autodiff.numpy.special``): scipy's values, our rules.

scipy's special functions are ufuncs, so on a Tensor ``scipy.special.erf(t)`` reaches
``Tensor.__array_ufunc__``, which sends it here by name (``UFUNCS``); autodiff never imports scipy
itself: a value is computed by scipy when one of these is called (scipy must be installed then).
``logsumexp``, ``softmax``, ``log_softmax``, ``polygamma`` and ``multigammaln`` are Python functions
in scipy that turn their input into an ndarray, so on tracked Tensors they are called from here.

Examples
--------
>>> import numpy as np
>>> import scipy.special
>>> import autodiff as ad
>>> float(ad.grad(lambda x: scipy.special.gammaln(x))(3.0))        # digamma(3) = 3/2 - Euler's gamma
0.9227843350984671
>>> ad.grad(lambda w: logsumexp(w, b=np.array([1.0, -0.5])))(np.array([0.0, 0.0]))
array([ 2., -1.])
"""
from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING

import numpy as _np

from ..core import value_of
from ..extend import defderiv, nondiff, primitive
from . import ops
from .ops import as_array, exp, expit, float_type, log, log1p, sign, softplus, where

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, Axes

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _scipy_special():
    """scipy.special, imported on first use."""
    try:
        return importlib.import_module("scipy.special")
    except ImportError:
        raise ImportError("autodiff.numpy.special computes values with scipy.special: install scipy") from None


def _special(name: str, nin: int = 1):
    """A primitive computing scipy.special's ``name`` (its rules are added below)."""
    if nin == 1:
        return primitive(lambda x: getattr(_scipy_special(), name)(x), name)
    if nin == 2:
        return primitive(lambda x, y: getattr(_scipy_special(), name)(x, y), name)
    return primitive(lambda x, y, z: getattr(_scipy_special(), name)(x, y, z), name)


def _unless_zero(x, y):
    """x / y, but 0 where x is 0 (where a product x f(y) is 0 for every y, its slope in y is too)."""
    return x / where(x == 0, 1.0, y)


def _like(c, x):
    """A term computed from the orders alone in x's float type (scipy returns float64 for Python
    numbers, which would promote a float32 x)."""
    return ops.astype(c, float_type(value_of(x)))


def log_expit(x: ArrayLike) -> Array:
    """log(expit(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-as_array(x))


# Unary ufuncs, then binary ones: jv, yv, yn, iv, ive are Bessel functions of order v, gammainc and
# gammaincc the regularized incomplete gamma functions of (a, x), stdtr Student's t distribution
# function of (df, t), betainc the incomplete beta function of (a, b, x); each differentiates in its
# last argument only.
(logit, erf, erfc, erfinv, erfcinv, ndtr, log_ndtr, ndtri, gamma, rgamma, gammaln, psi, i0, i1, i0e, i1e, j0,
 j1, y0, y1, entr) = (_special(name) for name in """logit erf erfc erfinv erfcinv ndtr log_ndtr ndtri gamma
    rgamma gammaln psi i0 i1 i0e i1e j0 j1 y0 y1 entr""".split())
betaln, beta, xlogy, xlog1py, rel_entr, kl_div, jv, yv, yn, iv, ive, gammainc, gammaincc, stdtr = (
    _special(name, 2) for name in "betaln beta xlogy xlog1py rel_entr kl_div jv yv yn iv ive gammainc gammaincc "
                                  "stdtr".split())
betainc = _special("betainc", 3)
digamma, jn = psi, jv
_polygamma = primitive(lambda n, x: _scipy_special().polygamma(n, x).astype(float_type(x), copy=False),
                       "polygamma")

defderiv(logit, lambda ans, x: 1 / (x * (1 - x)))
defderiv(erf, lambda ans, x: (2 / _SQRT_PI) * exp(-x * x))
defderiv(erfc, lambda ans, x: (-2 / _SQRT_PI) * exp(-x * x))
defderiv(erfinv, lambda ans, x: (_SQRT_PI / 2) * exp(ans * ans))
defderiv(erfcinv, lambda ans, x: (-_SQRT_PI / 2) * exp(ans * ans))
defderiv(ndtr, lambda ans, x: exp(-0.5 * x * x) / _SQRT_2PI)
defderiv(log_ndtr, lambda ans, x: exp(-0.5 * x * x - ans) / _SQRT_2PI)
defderiv(ndtri, lambda ans, x: _SQRT_2PI * exp(0.5 * ans * ans))
defderiv(gamma, lambda ans, x: ans * psi(x))
defderiv(gammaln, lambda ans, x: psi(x))
defderiv(psi, lambda ans, x: _polygamma(1, x))
defderiv(_polygamma, None, lambda ans, n, x: _polygamma(n + 1, x))
defderiv(i0e, lambda ans, x: i1e(x) - sign(x) * ans)  # exp(-|x|) I0: a kink at 0, slope 0 there
defderiv(i1e, lambda ans, x: where(x == 0, 0.5, i0e(x) - ans * (sign(x) + 1 / where(x == 0, 1.0, x))))
defderiv(rgamma, lambda ans, x: -ans * psi(x))
defderiv(beta, lambda ans, a, b: ans * (psi(a) - psi(a + b)), lambda ans, a, b: ans * (psi(b) - psi(a + b)))
defderiv(i0, lambda ans, x: i1(x))
defderiv(i1, lambda ans, x: where(x == 0, 0.5, i0(x) - ans / where(x == 0, 1.0, x)))  # I1'(0) = 1/2
defderiv(j0, lambda ans, x: -j1(x))
defderiv(j1, lambda ans, x: where(x == 0, 0.5, j0(x) - ans / where(x == 0, 1.0, x)))  # J1'(0) = 1/2
defderiv(y0, lambda ans, x: -y1(x))
defderiv(y1, lambda ans, x: y0(x) - ans / x)
defderiv(jv, None, lambda ans, v, x: (jv(v - 1, x) - jv(v + 1, x)) / 2)
defderiv(yv, None, lambda ans, v, x: (yv(v - 1, x) - yv(v + 1, x)) / 2)
defderiv(yn, None, lambda ans, n, x: (yn(n - 1, x) - yn(n + 1, x)) / 2)
defderiv(iv, None, lambda ans, v, x: (iv(v - 1, x) + iv(v + 1, x)) / 2)
defderiv(ive, None, lambda ans, v, x: (ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) * ans)  # exp(-|x|) I_v
defderiv(gammainc, None, lambda ans, a, x: exp(-x + (a - 1) * log(x) - _like(gammaln(a), x)))
defderiv(gammaincc, None, lambda ans, a, x: -exp(-x + (a - 1) * log(x) - _like(gammaln(a), x)))
defderiv(stdtr, None, lambda ans, df, t: exp(  # Student's t density
    _like(gammaln(0.5 * df + 0.5) - gammaln(0.5 * df) - 0.5 * log(df * math.pi), t)
    - (df + 1) / 2 * log1p(t * t / df)))
defderiv(betainc, None, None,
         lambda ans, a, b, x: exp((a - 1) * log(x) + (b - 1) * log1p(-x) - _like(betaln(a, b), x)))
defderiv(entr, lambda ans, x: -1 - log(x))
defderiv(betaln, lambda ans, a, b: psi(a) - psi(a + b), lambda ans, a, b: psi(b) - psi(a + b))
defderiv(xlogy, lambda ans, x, y: log(y), lambda ans, x, y: _unless_zero(x, y))
defderiv(xlog1py, lambda ans, x, y: log1p(y), lambda ans, x, y: _unless_zero(x, 1 + y))
defderiv(rel_entr, lambda ans, x, y: log(x / y) + 1, lambda ans, x, y: -_unless_zero(x, y))
defderiv(kl_div, lambda ans, x, y: log(x / y), lambda ans, x, y: 1 - _unless_zero(x, y))


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of the digamma function (``n``: non-negative integers, no gradient)."""
    return _polygamma(_np.asarray(n), as_array(x))


def multigammaln(a: ArrayLike, d: int) -> Array:
    """The log of the multivariate gamma function of dimension d: a sum of gammaln terms."""
    if not isinstance(d, (int, _np.integer)) or d < 1:
        raise ValueError("d should be a positive integer (dimension)")
    a = as_array(a)
    if _np.any(_np.asarray(value_of(a)) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    terms = ops.stack([gammaln(a - 0.5 * j) for j in range(d)])
    return d * (d - 1) * 0.25 * math.log(math.pi) + ops.sum(terms, axis=0)


def logsumexp(a: ArrayLike, axis: Axes = None, b: ArrayLike | None = None, keepdims: bool = False,
              return_sign: bool = False) -> Array | tuple[Array, Array]:
    """``scipy.special.logsumexp``, differentiable in ``a`` and ``b`` (see ``ops.logsumexp``)."""
    return ops.logsumexp(a, axis=axis, keepdims=keepdims, b=b, return_sign=return_sign)


def softmax(x: ArrayLike, axis: Axes = None) -> Array:
    """``scipy.special.softmax``: over every element unless ``axis`` is given."""
    return ops.softmax(x, axis=axis)


def log_softmax(x: ArrayLike, axis: Axes = None) -> Array:
    """``scipy.special.log_softmax``: over every element unless ``axis`` is given."""
    return ops.log_softmax(x, axis=axis)


erf.complex_ok = erfc.complex_ok = True  # holomorphic: the rules hold for complex z


def gammasgn(x: ArrayLike) -> Array:
    """The sign of the gamma function: piecewise constant, no gradient."""
    return nondiff(lambda v: _scipy_special().gammasgn(v))(x)


# scipy.special's ufuncs by name (``ufunc.__name__``; digamma is psi, jn is jv): Tensor.__array_ufunc__
# sends them here. Names NumPy shares (log1p, cbrt, ...) are NumPy's functions.
UFUNCS = {
    "rgamma": rgamma, "beta": beta, "i0": i0, "i1": i1, "j0": j0, "j1": j1, "y0": y0, "y1": y1, "jv": jv,
    "yv": yv, "yn": yn, "iv": iv, "ive": ive, "gammainc": gammainc, "gammaincc": gammaincc,
    "betainc": betainc, "gammasgn": gammasgn, "stdtr": stdtr,
    "expit": expit, "logit": logit, "log_expit": log_expit, "erf": erf, "erfc": erfc, "erfinv": erfinv,
    "erfcinv": erfcinv, "ndtr": ndtr, "log_ndtr": log_ndtr, "ndtri": ndtri, "gamma": gamma,
    "gammaln": gammaln, "psi": psi, "i0e": i0e, "i1e": i1e, "entr": entr, "betaln": betaln, "xlogy": xlogy,
    "xlog1py": xlog1py, "rel_entr": rel_entr, "kl_div": kl_div, "log1p": ops.log1p, "expm1": ops.expm1,
    "cbrt": ops.cbrt,
}

__all__ = sorted(set(UFUNCS) - {"log1p", "expm1", "cbrt"}) + [
    "digamma", "jn", "polygamma", "multigammaln", "logsumexp", "softmax", "log_softmax", "softplus"]
