"""NumPy functions built from the primitives of ``ops``: no derivative rules of their own.

Each is written with differentiable ops, so its gradients, Hessians, JVPs and batched sweeps come
from theirs. Arguments that NumPy uses as positions rather than values (indices, breakpoints, the
sign source of ``copysign``) are read as plain arrays and carry no gradient.
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as _np

from ..core import Tensor, concrete, ndim_of, shape_of, value_of
from ..extend import nondiff, reject_keywords
from . import linalg, ops
from .ops import (
    absolute,
    as_array,
    astype,
    atleast_1d,
    broadcast_to,
    concatenate,
    exp,
    float_type,
    getitem,
    maximum,
    mean,
    minimum,
    power,
    ravel,
    reshape,
    sort,
    sqrt,
    stack,
    sum,
    take,
    where,
)

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, Axes, DTypeLike


def _along(axis: int, ndim: int, piece) -> tuple:
    """An index that applies ``piece`` on ``axis`` and keeps every other axis."""
    return (slice(None),) * (axis % ndim) + (piece,)


def _laid_along(v, axis: int, ndim: int):
    """A 1-D ``v`` shaped to broadcast along ``axis`` of an ndim-dimensional array."""
    return reshape(v, (-1,) + (1,) * (ndim - 1 - axis % ndim))


# --- elementwise -----------------------------------------------------------------------------------

def hypot(x1: ArrayLike, x2: ArrayLike) -> Array:
    """sqrt(x1**2 + x2**2), as the 2-norm of the pair: at (0, 0) its gradient is the norm's 0 (not
    NaN), ``hypot(x1, x2)**2`` has exact derivatives (see ``linalg.norm``), and, as NumPy's, it
    neither overflows nor underflows where the result is representable (the norm scales)."""
    x1, x2 = as_array(x1), as_array(x2)
    zeros = _np.zeros(_np.broadcast_shapes(shape_of(x1), shape_of(x2)),
                      float_type(value_of(x1), value_of(x2)))
    return linalg.norm(stack([x1 + zeros, x2 + zeros]), axis=0)


def exp2(x: ArrayLike) -> Array:
    return exp(as_array(x) * math.log(2.0))


def deg2rad(x: ArrayLike) -> Array:
    return as_array(x) * (math.pi / 180.0)


def rad2deg(x: ArrayLike) -> Array:
    return as_array(x) * (180.0 / math.pi)


def fabs(x: ArrayLike) -> Array:
    """|x| as a float: NumPy's fabs makes integers floats, where absolute keeps them integers."""
    x = as_array(x)
    return absolute(astype(x, float_type(value_of(x))))


radians, degrees = deg2rad, rad2deg


def float_power(x1: ArrayLike, x2: ArrayLike) -> Array:
    x1 = as_array(x1)
    return power(astype(x1, _np.result_type(value_of(x1), _np.float64)), x2)


_SINC_SERIES_RADIUS = 1e-2  # below it the next Taylor term is under 1e-22: exact in float64


def sinc(x: ArrayLike) -> Array:
    """sin(pi x) / (pi x), 1 at 0. Near 0 it is the Taylor polynomial, so every derivative is right
    there; the quotient is evaluated at a safe point where the polynomial is used, so its own
    gradient (NaN at 0) never mixes in."""
    x = as_array(x)
    small = nondiff(lambda v: _np.abs(v) < _SINC_SERIES_RADIUS)(x)
    z = (math.pi * x) ** 2
    series = 1.0 - z / 6.0 + z ** 2 / 120.0 - z ** 3 / 5040.0 + z ** 4 / 362880.0  # 1/(2k+1)!
    angle = math.pi * where(small, 1.0, x)
    return where(small, series, ops.sin(angle) / angle)


def fmax(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The elementwise maximum, ignoring NaNs (NaN only where both are NaN)."""
    return maximum(_nan_to(x1, x2), _nan_to(x2, x1))


def fmin(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The elementwise minimum, ignoring NaNs (NaN only where both are NaN)."""
    return minimum(_nan_to(x1, x2), _nan_to(x2, x1))


def _nan_to(x, replacement):
    """x, with ``replacement`` where x is NaN."""
    return where(nondiff(_np.isnan)(x), replacement, x)


def copysign(x1: ArrayLike, x2: ArrayLike) -> Array:
    """|x1| with the sign of x2 (no gradient flows to x2: the sign is piecewise constant)."""
    return absolute(x1) * nondiff(lambda v: _np.copysign(1.0, v))(x2)


# --- differences, sums and statistics --------------------------------------------------------------

def diff(a: ArrayLike, n: int = 1, axis: int = -1, prepend: ArrayLike | None = None,
         append: ArrayLike | None = None) -> Array:
    """The n-th forward difference along ``axis``: neighbouring slices subtracted, n times."""
    ndim = ndim_of(a)
    if prepend is not None or append is not None:
        shape, k = shape_of(a), axis % ndim
        edge = shape[:k] + (1,) + shape[k + 1:]  # a scalar end is broadcast to one slice
        ends = [None if p is None else p if ndim_of(p) else broadcast_to(p, edge) for p in (prepend, append)]
        a = concatenate([p for p in (ends[0], a, ends[1]) if p is not None], axis=axis)
    for _ in range(n):
        a = getitem(a, _along(axis, ndim, slice(1, None))) - getitem(a, _along(axis, ndim, slice(None, -1)))
    return a


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: float = 1.0, axis: int = -1) -> Array:
    """The trapezoidal rule along ``axis``, with sample points ``x`` (differentiable too) or spacing dx."""
    ndim = ndim_of(y)
    if x is None:
        width = dx
    elif ndim_of(x) == 1:
        width = _laid_along(diff(x), axis, ndim)
    else:
        width = diff(x, axis=axis)
    right = getitem(y, _along(axis, ndim, slice(1, None)))
    left = getitem(y, _along(axis, ndim, slice(None, -1)))
    return sum(width * (right + left), axis=axis) / 2.0


def average(a: ArrayLike, axis: Axes = None, weights: ArrayLike | None = None, returned: bool = False,
            keepdims: bool = False) -> Array | tuple[Array, Array]:
    """Weighted mean; 1-D weights apply along ``axis``, as in NumPy."""
    a = as_array(a)
    if weights is None:
        result = mean(a, axis=axis, keepdims=keepdims)
        total = _np.full(shape_of(result), float(math.prod(shape_of(a)) // math.prod(shape_of(result))))
    else:
        weights = as_array(weights)
        if shape_of(weights) != shape_of(a):
            if axis is None or ndim_of(weights) != 1:
                raise TypeError("autodiff: average needs weights of a's shape, or 1-D weights and an axis")
            weights = broadcast_to(_laid_along(weights, axis, ndim_of(a)), shape_of(a))
        total = sum(weights, axis=axis, keepdims=keepdims)
        result = sum(a * weights, axis=axis, keepdims=keepdims) / total
    return (result, total) if returned else result


def nansum(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
           **kwargs: Any) -> Array:
    """Sum treating NaNs as zero (their cotangents are zero)."""
    reject_keywords("nansum", kwargs)
    return sum(where(nondiff(_np.isnan)(a), 0.0, a), axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def nanmean(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
            **kwargs: Any) -> Array:
    """Mean over the entries that are not NaN."""
    reject_keywords("nanmean", kwargs)
    values = _np.asarray(concrete(a))
    count = _np.sum(~_np.isnan(values), axis=axis, keepdims=keepdims).astype(float_type(values))
    return nansum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims) / count


def ptp(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False) -> Array:
    return ops.max(a, axis=axis, out=out, keepdims=keepdims) - ops.min(a, axis=axis, keepdims=keepdims)


def quantile(a: ArrayLike, q: ArrayLike, axis: int | None = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False) -> Array:
    """Quantiles by linear interpolation between sorted values (``q`` is data, in [0, 1])."""
    if method != "linear" or out is not None:
        raise NotImplementedError("autodiff: quantile supports method='linear' without out= only")
    kept, flattened = shape_of(a), axis is None
    if flattened:
        a, axis = ravel(a), 0
    axis %= ndim_of(a)
    ordered = sort(a, axis=axis)
    position = _np.asarray(q, dtype=float) * (shape_of(ordered)[axis] - 1)
    below = _np.floor(position).astype(int)
    above = _np.minimum(below + 1, shape_of(ordered)[axis] - 1)
    lower, upper = take(ordered, below, axis=axis), take(ordered, above, axis=axis)
    scalar_q = isinstance(q, (int, float, _np.generic))  # a Python float keeps float32, as in NumPy
    dtype = float_type(value_of(ordered), q if scalar_q else _np.asarray(q, dtype=float))
    weight = (position - below).reshape(position.shape + (1,) * (ndim_of(ordered) - 1 - axis)).astype(dtype)
    result = lower + (upper - lower) * weight
    if position.ndim:  # NumPy puts the quantile axis first
        result = ops.moveaxis(result, axis, 0)
    if keepdims:  # the reduced axis (every axis, if flattened) kept with length one
        result = reshape(result, position.shape + (1,) * len(kept)) if flattened \
            else ops.expand_dims(result, axis + position.ndim)
    return result


def percentile(a: ArrayLike, q: ArrayLike, axis: int | None = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False) -> Array:
    q = q / 100.0 if isinstance(q, (int, float, _np.generic)) else _np.asarray(q, dtype=float) / 100.0
    return quantile(a, q, axis, out, overwrite_input, method, keepdims)


def median(a: ArrayLike, axis: int | None = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Array:
    """The middle sorted value (the mean of the two middle ones for an even count)."""
    return quantile(a, 0.5, axis=axis, out=out, keepdims=keepdims)


def cov(m: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: None = None, aweights: None = None, dtype: None = None) -> Array:
    """Covariance of the rows (variables) of m, observations along the columns."""
    if fweights is not None or aweights is not None or dtype is not None:
        raise NotImplementedError("autodiff: cov with fweights, aweights or dtype is not supported")
    rows = [reshape(v, (1, -1)) if ndim_of(v) == 1 else (v if rowvar else ops.transpose(v))
            for v in ([m] if y is None else [m, y])]
    x = concatenate(rows, axis=0)
    x = astype(x, _np.result_type(value_of(x), _np.float64))  # as NumPy: float64 at least
    centred = x - mean(x, axis=1, keepdims=True)
    count = shape_of(x)[1] - ((0 if bias else 1) if ddof is None else ddof)
    result = ops.matmul(centred, ops.conj(ops.transpose(centred))) / count
    return ops.squeeze(result) if shape_of(result) == (1, 1) else result


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, dtype: None = None) -> Array:
    """Pearson correlation coefficients: the covariance scaled by the standard deviations."""
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:
        return c / c
    d = sqrt(ops.diagonal(c))
    return c / (reshape(d, (-1, 1)) * reshape(d, (1, -1)))


# --- rearrangements --------------------------------------------------------------------------------

def roll(a: ArrayLike, shift: int | Sequence[int], axis: Axes = None) -> Array:
    """Elements shifted cyclically, as a gather."""
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape_of(a))
    if not isinstance(axis, (int, _np.integer)):
        for one_shift, one_axis in zip(_np.broadcast_to(shift, (len(axis),)), axis):
            a = roll(a, int(one_shift), one_axis)
        return a
    n = shape_of(a)[axis]
    return take(a, (_np.arange(n) - shift) % n, axis=axis)


def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis=axis)


def column_stack(tup: Sequence[ArrayLike]) -> Array:
    return concatenate([reshape(v, (-1, 1)) if ndim_of(v) < 2 else v for v in tup], axis=1)


def hsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    return ops.split(ary, indices_or_sections, axis=1 if ndim_of(ary) > 1 else 0)


def vsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    return ops.split(ary, indices_or_sections, axis=0)


def dsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    return ops.split(ary, indices_or_sections, axis=2)


def flipud(m: ArrayLike) -> Array:
    return ops.flip(m, axis=0)


def fliplr(m: ArrayLike) -> Array:
    return ops.flip(m, axis=1)


def rot90(m: ArrayLike, k: int = 1, axes: Sequence[int] = (0, 1)) -> Array:
    """Rotation by 90 degrees k times in the plane of ``axes``, as flips and a transposition."""
    m, k = as_array(m), k % 4
    if k == 0:
        return m
    if k == 2:
        return ops.flip(ops.flip(m, axes[0]), axes[1])
    order = list(range(ndim_of(m)))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return ops.transpose(ops.flip(m, axes[1]), order)
    return ops.flip(ops.transpose(m, order), axes[1])


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """``axis`` moved to before position ``start`` (NumPy's older spelling of moveaxis)."""
    a = as_array(a)
    n = ndim_of(a)
    axis %= n
    start = start + n if start < 0 else start
    start = start - 1 if axis < start else start
    return a if axis == start else ops.moveaxis(a, axis, start)


def select(condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0) -> Array:
    """The choice of the first true condition, elementwise (default where none holds)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    result = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        result = where(condition, choice, result)
    return result


def nan_to_num(x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Array:
    """NaN and infinities replaced by finite numbers (the largest ones by default); the gradient
    flows where x was finite."""
    x = as_array(x)
    if ops._is_complex(x):  # NumPy replaces in the real and imaginary parts separately
        return nan_to_num(ops.real(x), copy, nan, posinf, neginf) + 1j * nan_to_num(ops.imag(x), copy, nan,
                                                                                    posinf, neginf)
    big = _np.finfo(float_type(value_of(x))).max
    posinf, neginf = (big if posinf is None else posinf), (-big if neginf is None else neginf)
    values = concrete(x)
    return where(_np.isnan(values), nan, where(_np.isposinf(values), posinf,
                                               where(_np.isneginf(values), neginf, x)))


def real_if_close(a: ArrayLike, tol: float = 100) -> Array:
    """The real part if every imaginary part is within tol machine epsilons of 0, else a."""
    a = as_array(a)
    if not ops._is_complex(a):
        return a
    tol = _np.finfo(_np.result_type(value_of(a))).eps * tol if tol > 1 else tol  # NumPy's reading
    return ops.real(a) if _np.all(_np.abs(_np.imag(concrete(a))) < tol) else a


def logaddexp2(x1: ArrayLike, x2: ArrayLike) -> Array:
    """log2(2**x1 + 2**x2), through logaddexp (stable for large arguments)."""
    return ops.logaddexp(as_array(x1) * math.log(2.0), as_array(x2) * math.log(2.0)) / math.log(2.0)


def gradient(f: ArrayLike, *varargs: ArrayLike, axis: Axes = None, edge_order: int = 1
             ) -> Array | tuple[Array, ...]:
    """NumPy's gradient for uniform spacings: central differences inside, one-sided ones of
    ``edge_order`` (1 or 2) at the ends; one array per axis (just the array for one axis)."""
    ndim = ndim_of(f)
    axes = list(range(ndim)) if axis is None else [axis] if isinstance(axis, (int, _np.integer)) else list(axis)
    axes = [k % ndim for k in axes]
    spacings = list(varargs) if len(varargs) > 1 else list(varargs) * len(axes) if varargs else [1.0] * len(axes)
    if len(spacings) != len(axes) or any(ndim_of(h) != 0 for h in spacings):
        raise NotImplementedError("autodiff: gradient supports one scalar spacing per axis (uniform grids)")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    results = []
    for k, h in zip(axes, spacings):
        n = shape_of(f)[k]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        part = lambda start, stop, k=k: getitem(f, _along(k, ndim, slice(start, stop)))
        inside = (part(2, None) - part(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first, last = (part(1, 2) - part(0, 1)) / h, (part(n - 1, n) - part(n - 2, n - 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(n - 3, n - 2) - 2.0 * part(n - 2, n - 1) + 1.5 * part(n - 1, n)) / h
        results.append(concatenate([first, inside, last], axis=k))
    return results[0] if len(results) == 1 else tuple(results)


def linspace(start: ArrayLike, stop: ArrayLike, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike | None = None, axis: int = 0, **kwargs: Any) -> Array | tuple[Array, Array | float]:
    """Evenly spaced numbers from start to stop, differentiable in both ends (array ends too)."""
    if not (isinstance(start, Tensor) or isinstance(stop, Tensor)):
        return _np.linspace(start, stop, num, endpoint, retstep, dtype, axis, **kwargs)
    reject_keywords("linspace", kwargs)
    divisions = num - 1 if endpoint else num
    shape = _np.broadcast_shapes(shape_of(start), shape_of(stop))
    fractions = (_np.arange(num) / (divisions or 1)).reshape((num,) + (1,) * len(shape))
    step = (stop - start) / divisions if divisions else (stop - start) * _np.nan
    y = start + fractions.astype(float_type(value_of(start), value_of(stop))) * (stop - start)
    if endpoint and num > 1:  # the last point is stop itself, as in NumPy
        y = where((_np.arange(num) == num - 1).reshape(fractions.shape), stop, y)
    y = ops.moveaxis(y, 0, axis) if shape else y
    y = y if dtype is None else astype(y, dtype)
    return (y, step) if retstep else y


class _Concatenator:
    """``r_`` and ``c_``: ``r_[a, b, 0:3]`` joins along the first axis (a slice is an arange, or a
    linspace with a complex step), ``c_[a, b]`` joins 1-D pieces as columns; Tensors are joined
    differentiably."""

    def __init__(self, columns: bool):
        self.columns = columns

    def __getitem__(self, items):
        items = items if isinstance(items, tuple) else (items,)
        if any(isinstance(item, str) for item in items):
            raise NotImplementedError("autodiff: r_ and c_ with string directives are not supported")
        pieces = [self._piece(item) for item in items]
        if not self.columns:
            return concatenate(pieces, axis=0)
        return concatenate([reshape(p, (-1, 1)) if ndim_of(p) < 2 else p for p in pieces], axis=-1)

    @staticmethod
    def _piece(item):
        if isinstance(item, slice):
            step = 1 if item.step is None else item.step
            start = 0 if item.start is None else item.start
            if isinstance(step, complex):
                return _np.linspace(start, item.stop, int(abs(step)))
            return _np.arange(start, item.stop, step)
        return ops.atleast_1d(as_array(item))


r_, c_ = _Concatenator(columns=False), _Concatenator(columns=True)


# --- products --------------------------------------------------------------------------------------

def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """Kronecker product: an outer product with the axes interleaved, then merged."""
    ndim = builtins.max(ndim_of(a), ndim_of(b))
    shape_a = (1,) * (ndim - ndim_of(a)) + shape_of(a)
    shape_b = (1,) * (ndim - ndim_of(b)) + shape_of(b)
    spread_a = reshape(a, tuple(d for n in shape_a for d in (n, 1)))
    spread_b = reshape(b, tuple(d for n in shape_b for d in (1, n)))
    return reshape(spread_a * spread_b, tuple(m * n for m, n in zip(shape_a, shape_b)))


def cross(a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None
          ) -> Array:
    """Cross product of 3-vectors (the z component for 2-vectors), the vectors along ``axisa`` of a
    and ``axisb`` of b (``axis``: all three), the result's along ``axisc``."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = ops.moveaxis(as_array(a), axisa, -1), ops.moveaxis(as_array(b), axisb, -1)
    sizes = (shape_of(a)[-1], shape_of(b)[-1])
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if sizes == (2, 2):
        return a0 * b1 - a1 * b0
    if sizes not in ((3, 3), (2, 3), (3, 2)):
        raise ValueError(f"autodiff: cross needs 2- or 3-vectors, got sizes {sizes}")
    a2 = a[..., 2] if sizes[0] == 3 else 0.0  # a 2-vector is a 3-vector with z = 0
    b2 = b[..., 2] if sizes[1] == 3 else 0.0
    z = a0 * b1 - a1 * b0
    result = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z], axis=-1)
    return ops.moveaxis(result, -1, axisc)


def cumprod(a: ArrayLike, axis: int | None = None, dtype: None = None, out: None = None) -> Array:
    """Running products by a doubling scan (Hillis & Steele): log2(n) recorded products, exact at
    zeros, where dividing the running product would not be."""
    if dtype is not None or out is not None:
        raise TypeError("autodiff: cumprod with dtype= or out= is not supported")
    if axis is None:
        a, axis = ravel(a), 0
    ndim, n = ndim_of(a), shape_of(a)[axis]
    shift = 1
    while shift < n:
        pad = shape_of(a)[:axis % ndim] + (shift,) + shape_of(a)[axis % ndim + 1:]
        earlier = getitem(a, _along(axis, ndim, slice(None, n - shift)))
        a = a * concatenate([_np.ones(pad, _np.result_type(value_of(a))), earlier], axis=axis)
        shift *= 2
    return a


def convolution_part(in1: ArrayLike, in2: ArrayLike, start: Sequence[int], length: Sequence[int]) -> Array:
    """The block ``start[d] : start[d] + length[d]`` (along each axis d) of the full N-d convolution of
    ``in1`` and ``in2`` (same ndim, neither empty), whose axis d has ``n[d] + m[d] - 1`` entries: windows
    of ``in1`` zero-padded by ``m[d] - 1`` on each side (one gather) times ``in2`` reversed (one matmul).
    Only the block is computed; ``np.convolve`` and ``autodiff.numpy.scipy_signal`` choose it by mode."""
    in1, in2 = as_array(in1), as_array(in2)
    n, m = shape_of(in1), shape_of(in2)
    if 0 in n or 0 in m:
        raise ValueError(f"autodiff: cannot convolve an empty array (shapes {n} and {m})")
    dtype = float_type(value_of(in1), value_of(in2))
    padded = ops.pad(astype(in1, dtype), [(k - 1, k - 1) for k in m])
    ndim, padded_shape = len(n), shape_of(padded)
    index = _np.zeros((1,) * (2 * ndim), dtype=_np.intp)
    for d in range(ndim):  # flat position in ``padded`` of output entry i (axes 0..ndim-1), tap t (ndim..)
        stride = math.prod(padded_shape[d + 1:])
        position = _np.arange(start[d], start[d] + length[d]).reshape((-1,) + (1,) * (2 * ndim - 1 - d))
        tap = _np.arange(m[d]).reshape((-1,) + (1,) * (ndim - 1 - d))
        index = index + stride * (position + tap)
    windows = reshape(take(padded, index), (math.prod(length), math.prod(m)))
    return reshape(ops.matmul(windows, ravel(ops.flip(in2))), tuple(length))


def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full") -> Array:
    """Discrete linear convolution of two 1-D sequences (a scalar is one of one entry, as in NumPy):
    windows of ``a`` (a gather) times reversed v, for the entries ``mode`` keeps."""
    a, v = atleast_1d(as_array(a)), atleast_1d(as_array(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    lengths = {"full": n + m - 1, "same": builtins.max(n, m), "valid": builtins.max(n, m) - builtins.min(n, m) + 1}
    if mode not in lengths:
        raise ValueError(f"autodiff: convolve mode must be 'full', 'same' or 'valid', not {mode!r}")
    start = {"full": 0, "same": (n + m - 1 - lengths["same"]) // 2, "valid": builtins.min(n, m) - 1}[mode]
    return convolution_part(a, v, (start,), (lengths[mode],))


def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid") -> Array:
    """Cross-correlation of two 1-D sequences: convolution with v reversed (and conjugated). In "same"
    mode with v the longer, NumPy correlates the swapped pair and reverses it: the block starts at
    len(a) // 2 of the full output, not (len(a) - 1) // 2."""
    a, v = atleast_1d(as_array(a)), atleast_1d(as_array(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    reversed_conjugate = ops.conj(getitem(v, (slice(None, None, -1),)))
    if mode == "same" and m > n:
        return convolution_part(a, reversed_conjugate, (n // 2,), (m,))
    return convolve(a, reversed_conjugate, mode)


def polyval(p: ArrayLike, x: ArrayLike) -> Array:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's rule (x a
    Python float is a float64 array, as in NumPy)."""
    p, x = as_array(p), as_array(x)
    result = 0.0
    for k in range(shape_of(p)[0]):
        result = result * x + p[k]
    return result


# --- interpolation ---------------------------------------------------------------------------------

def interp(x: ArrayLike, xp: ArrayLike, fp: ArrayLike, left: ArrayLike | None = None,
           right: ArrayLike | None = None, period: None = None) -> Array:
    """Piecewise-linear interpolation, differentiable in ``x`` and ``fp`` (``xp`` is data)."""
    if period is not None:
        raise NotImplementedError("autodiff: interp with period= is not supported")
    knots = _np.asarray(concrete(xp), dtype=float)
    points = concrete(x)
    fp = fp if isinstance(fp, Tensor) else _np.asarray(fp, dtype=float)
    i = _np.clip(_np.searchsorted(knots, points, side="right") - 1, 0, len(knots) - 2)
    f0, f1 = take(fp, i), take(fp, i + 1)
    inside = f0 + (x - knots[i]) * ((f1 - f0) / (knots[i + 1] - knots[i]))
    below = getitem(fp, 0) if left is None else left
    above = getitem(fp, -1) if right is None else right
    return where(points < knots[0], below, where(points > knots[-1], above, inside))
