"""``autodiff.numpy``: a differentiable NumPy namespace (``import autodiff.numpy as anp``).

``NUMPY_FUNCTIONS`` names every NumPy function and ufunc implemented here: each is exported, and on a
Tensor NumPy's own of that name dispatches to it (``autodiff/dispatch.py`` derives its tables from
this one). Primitives and their rules are in ``ops``, functions built from them in ``composite``,
``numpy.linalg`` in ``linalg``, ``numpy.fft`` in ``fft``, ``scipy.special`` in ``special``, scipy.stats'
distributions in ``stats``, ``scipy.linalg`` in ``scipy_linalg`` (not in ``linalg``: scipy's
``cholesky`` is upper triangular by default, NumPy's lower), scipy.signal's N-d convolutions in
``scipy_signal``, ``scipy.integrate.odeint`` in ``scipy_integrate`` (loaded by ``autodiff``'s own
``__init__``, after the transforms its rules use). Functions with no derivative
(comparisons, argmax, floor, ...) pass values through and carry no gradient; array constructors are
NumPy's own (``r_``, ``c_`` and ``linspace`` with Tensor ends are differentiable). Each function keeps
NumPy's signature and meaning, so NumPy's documentation is theirs; the few beyond NumPy
(``logsumexp``, ``softmax``, ``log_softmax``, ``sigmoid``/``expit``, ``softplus``, ``stop_gradient``)
document themselves.

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> import autodiff.numpy as anp
>>> ad.grad(lambda x: anp.logsumexp(x))(np.array([0.0, np.log(3.0)]))   # the softmax
array([0.25, 0.75])
>>> x = ad.constant([0.0, np.pi / 2])
>>> anp.sin(x), np.sin(x)         # NumPy's own functions dispatch here on Tensors
(Tensor(array([0., 1.])), Tensor(array([0., 1.])))
"""
from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

import numpy as _np

from ..core import Tensor as _Tensor
from ..core import holds_tensor as _holds_tensor
from ..extend import nondiff as _nondiff
from . import composite, fft, linalg, ops, scipy_linalg, scipy_signal, special, stats  # noqa: F401  (anp.fft, .linalg, ...)
from .ops import (  # noqa: F401  (the names beyond NumPy's)
    expit,
    getitem,
    log_softmax,
    logsumexp,
    sigmoid,
    softmax,
    softplus,
    stop_gradient,
)

if _TYPE_CHECKING:
    from ..typing import Array, ArrayLike, DTypeLike, Order


def _defined_in(module, names: str) -> dict:
    return {name: getattr(module, name) for name in names.split()}


def _without_derivative(names: str, wrap: bool) -> dict:
    return {name: _nondiff(getattr(_np, name), wrap=wrap) for name in names.split()}


NUMPY_FUNCTIONS = {
    **_defined_in(ops, """
        abs absolute add amax amin angle arccos arccosh arcsin arcsinh arctan arctan2 arctanh
        array_split astype atleast_1d atleast_2d atleast_3d broadcast_to cbrt clip concatenate conj
        conjugate copy cos cosh cumsum diag diagonal divide dot dstack einsum exp expand_dims expm1
        flip hstack imag inner log log1p log2 log10 logaddexp matmul max maximum mean min minimum mod
        moveaxis multiply negative outer pad partition positive power prod ravel real reciprocal
        remainder repeat reshape sign sin sinh sort split sqrt square squeeze stack std subtract sum
        swapaxes take take_along_axis tan tanh tensordot tile trace transpose tril triu true_divide var
        vdot vstack where"""),
    **_defined_in(composite, """
        append average column_stack convolve copysign corrcoef correlate cov cross cumprod deg2rad
        degrees diff dsplit exp2 fabs flipud fliplr float_power fmax fmin gradient hsplit hypot interp kron
        linspace logaddexp2 median nan_to_num nanmean nansum percentile polyval ptp quantile rad2deg
        radians real_if_close roll rollaxis rot90 select sinc trapezoid vsplit"""),
    # No derivative: values pass through, no gradient flows, no error (wrapped: Tensors come back).
    **_without_derivative("""
        floor ceil round around rint trunc fix floor_divide isfinite isnan isinf signbit greater
        greater_equal less less_equal equal not_equal logical_and logical_or logical_not logical_xor
        argmax argmin argsort isclose any all heaviside bitwise_and bitwise_or bitwise_xor invert
        iscomplex isreal""",
                          wrap=True),
    **_without_derivative("""
        shape ndim size allclose array_equal nonzero count_nonzero zeros_like ones_like full_like
        empty_like result_type searchsorted unique flatnonzero argwhere iscomplexobj isrealobj""", wrap=False),
}
globals().update(NUMPY_FUNCTIONS)

# Constants and constructors: plain NumPy (they never depend on a Tensor).
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, _np.newaxis
float16, float32, float64, int32, int64, bool_ = _np.float16, _np.float32, _np.float64, _np.int32, _np.int64, _np.bool_
arange, logspace, zeros, ones, eye, identity, full, empty = (
    _np.arange, _np.logspace, _np.zeros, _np.ones, _np.eye, _np.identity, _np.full, _np.empty)
r_, c_ = composite.r_, composite.c_


def array(obj: ArrayLike, dtype: DTypeLike | None = None, copy: bool | None = True, **kwargs: _Any) -> Array:
    """Like ``np.array``, but a (nested) list holding Tensors is stacked differentiably."""
    if isinstance(obj, _Tensor):
        return obj if dtype is None else ops.astype(obj, dtype)
    if isinstance(obj, (list, tuple)) and _holds_tensor(obj):
        stacked = ops.stack([array(item) if isinstance(item, (list, tuple)) else item for item in obj])
        return stacked if dtype is None else ops.astype(stacked, dtype)
    return _np.array(obj, dtype=dtype, copy=copy, **kwargs)


def asarray(a: ArrayLike, dtype: DTypeLike | None = None, order: Order | None = None, **kwargs: _Any) -> Array:
    """Like ``np.asarray``: a Tensor stays a Tensor (cast to ``dtype``), a (nested) list holding
    Tensors is stacked differentiably, anything else is NumPy's ``asarray``."""
    if isinstance(a, _Tensor) or (isinstance(a, (list, tuple)) and _holds_tensor(a)):
        return array(a, dtype=dtype)
    return _np.asarray(a, dtype=dtype, order=order, **kwargs)


