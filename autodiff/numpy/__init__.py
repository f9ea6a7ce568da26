"""``autodiff.numpy``: a differentiable NumPy namespace (``import autodiff.numpy as anp``).

Differentiable functions come from ``ops`` and ``linalg``; functions with no derivative (comparisons,
argmax, floor, ...) pass values through and carry no gradient; array constructors are NumPy's own.
"""
import numpy as _np

from . import linalg
from .ops import (  # noqa: F401  (the namespace)
    abs, absolute, add, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
    array_split, astype, atleast_1d, broadcast_to, cbrt, clip, concatenate, copy, cos, cosh, cumsum,
    diag, diagonal, divide, dot, einsum, exp, expand_dims, expit, expm1, flip, getitem, hstack, inner,
    log, log1p, log2, log10, log_softmax, logaddexp, logsumexp, matmul, max, maximum, mean, min,
    minimum, mod, moveaxis, multiply, negative, nondiff, outer, pad, power, prod, ravel, reciprocal,
    remainder, repeat, reshape, sigmoid, sign, sin, sinh, softmax, softplus, sort, split, sqrt,
    square, squeeze, stack, std, stop_gradient, subtract, sum, swapaxes, take, take_along_axis, tan,
    tanh, tensordot, tile, trace, transpose, tril, triu, true_divide, var, vdot, vstack, where,
)

from .composite import (  # noqa: F401
    append, average, column_stack, convolve, copysign, corrcoef, correlate, cov, cross, cumprod,
    deg2rad, degrees, diff, exp2, float_power, hypot, interp, kron, median, nanmean, nansum,
    percentile, polyval, ptp, quantile, rad2deg, radians, roll, sinc, trapezoid,
)
fabs = absolute

from ..core import Tensor as _Tensor

# Constants and constructors: plain NumPy (they never depend on a Tensor).
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, _np.newaxis
float16, float32, float64, int32, int64, bool_ = _np.float16, _np.float32, _np.float64, _np.int32, _np.int64, _np.bool_
arange, linspace, logspace, zeros, ones, eye, identity, full, empty = (
    _np.arange, _np.linspace, _np.logspace, _np.zeros, _np.ones, _np.eye, _np.identity, _np.full, _np.empty)

# No derivative: values pass through, no gradient flows, no error.
NON_DIFFERENTIABLE = {
    name: nondiff(getattr(_np, name), wrap=wrap)
    for names, wrap in [
        (("floor", "ceil", "round", "around", "rint", "trunc", "fix", "floor_divide", "isfinite",
          "isnan", "isinf", "signbit", "greater", "greater_equal", "less", "less_equal", "equal",
          "not_equal", "logical_and", "logical_or", "logical_not", "logical_xor", "argmax",
          "argmin", "argsort", "isclose", "any", "all",
          "heaviside", "bitwise_and", "bitwise_or", "bitwise_xor", "invert"), True),
        (("shape", "ndim", "size", "allclose", "array_equal", "nonzero", "count_nonzero",
          "zeros_like", "ones_like", "full_like", "empty_like", "result_type", "searchsorted",
          "unique", "flatnonzero", "argwhere"), False),
    ]
    for name in names
}
globals().update(NON_DIFFERENTIABLE)


def array(obj, dtype=None, copy=True, **kwargs):
    """Like ``np.array``, but a (nested) list holding Tensors is stacked differentiably."""
    if isinstance(obj, _Tensor):
        return obj if dtype is None else astype(obj, dtype)
    if isinstance(obj, (list, tuple)) and _holds_tensor(obj):
        stacked = stack([array(item) if isinstance(item, (list, tuple)) else item for item in obj])
        return stacked if dtype is None else astype(stacked, dtype)
    return _np.array(obj, dtype=dtype, copy=copy, **kwargs)


def asarray(obj, dtype=None, **kwargs):
    return array(obj, dtype=dtype, copy=False) if not isinstance(obj, _np.ndarray) else _np.asarray(obj, dtype)


def _holds_tensor(obj) -> bool:
    return any(isinstance(x, _Tensor) or (isinstance(x, (list, tuple)) and _holds_tensor(x)) for x in obj)
