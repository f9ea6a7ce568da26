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

import numpy as _np

from ..core import value_of
from ..extend import defderiv, primitive
from . import ops
from .ops import exp, expit, float_type, log, log1p, sign, softplus, sqrt, where

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
    return primitive(lambda x, y: getattr(_scipy_special(), name)(x, y), name)


def _unless_zero(x, y):
    """x / y, but 0 where x is 0 (where a product x f(y) is 0 for every y, its slope in y is too)."""
    return x / where(x == 0, 1.0, y)


def log_expit(x):
    """log(expit(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-x)


logit = _special("logit")
erf = _special("erf")
erfc = _special("erfc")
erfinv = _special("erfinv")
erfcinv = _special("erfcinv")
ndtr = _special("ndtr")
log_ndtr = _special("log_ndtr")
ndtri = _special("ndtri")
gamma = _special("gamma")
gammaln = _special("gammaln")
psi = digamma = _special("psi")
i0e = _special("i0e")
i1e = _special("i1e")
entr = _special("entr")
betaln = _special("betaln", 2)
xlogy = _special("xlogy", 2)
xlog1py = _special("xlog1py", 2)
rel_entr = _special("rel_entr", 2)
kl_div = _special("kl_div", 2)
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
defderiv(entr, lambda ans, x: -1 - log(x))
defderiv(betaln, lambda ans, a, b: psi(a) - psi(a + b), lambda ans, a, b: psi(b) - psi(a + b))
defderiv(xlogy, lambda ans, x, y: log(y), lambda ans, x, y: _unless_zero(x, y))
defderiv(xlog1py, lambda ans, x, y: log1p(y), lambda ans, x, y: _unless_zero(x, 1 + y))
defderiv(rel_entr, lambda ans, x, y: log(x / y) + 1, lambda ans, x, y: -_unless_zero(x, y))
defderiv(kl_div, lambda ans, x, y: log(x / y), lambda ans, x, y: 1 - _unless_zero(x, y))


def polygamma(n, x):
    """The n-th derivative of the digamma function (``n``: non-negative integers, no gradient)."""
    return _polygamma(_np.asarray(n), x)


def multigammaln(a, d: int):
    """The log of the multivariate gamma function of dimension d: a sum of gammaln terms."""
    if not isinstance(d, (int, _np.integer)) or d < 1:
        raise ValueError("d should be a positive integer (dimension)")
    if _np.any(_np.asarray(value_of(a)) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    terms = ops.stack([gammaln(a - 0.5 * j) for j in range(d)])
    return d * (d - 1) * 0.25 * math.log(math.pi) + ops.sum(terms, axis=0)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``, differentiable in ``a`` and ``b`` (see ``ops.logsumexp``)."""
    return ops.logsumexp(a, axis=axis, keepdims=keepdims, b=b, return_sign=return_sign)


def softmax(x, axis=None):
    """``scipy.special.softmax``: over every element unless ``axis`` is given."""
    return ops.softmax(x, axis=axis)


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: over every element unless ``axis`` is given."""
    return ops.log_softmax(x, axis=axis)


# scipy.special's ufuncs by name (``ufunc.__name__``; digamma is psi): Tensor.__array_ufunc__ sends
# them here. Names NumPy shares (log1p, cbrt, ...) are NumPy's functions.
UFUNCS = {
    "expit": expit, "logit": logit, "log_expit": log_expit, "erf": erf, "erfc": erfc, "erfinv": erfinv,
    "erfcinv": erfcinv, "ndtr": ndtr, "log_ndtr": log_ndtr, "ndtri": ndtri, "gamma": gamma,
    "gammaln": gammaln, "psi": psi, "i0e": i0e, "i1e": i1e, "entr": entr, "betaln": betaln, "xlogy": xlogy,
    "xlog1py": xlog1py, "rel_entr": rel_entr, "kl_div": kl_div, "log1p": ops.log1p, "expm1": ops.expm1,
    "cbrt": ops.cbrt,
}

__all__ = sorted(set(UFUNCS) - {"log1p", "expm1", "cbrt"}) + [
    "digamma", "polygamma", "multigammaln", "logsumexp", "softmax", "log_softmax", "softplus"]
