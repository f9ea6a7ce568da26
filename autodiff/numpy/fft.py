"""Differentiable ``numpy.fft`` (``autodiff.numpy.fft``): the discrete Fourier transforms.

Each one-dimensional transform is a linear map (real-linear for ``irfft``), so its JVP is the
transform of the tangent and its VJP the transpose of the map for JAX's pairing Re(sum(a * b)): the
DFT matrix is symmetric, so ``fft``'s VJP is ``fft`` of the cotangent (cut or zero-padded back to the
input's length when ``n`` changed it), ``ifft``'s is ``ifft``. The n-dimensional transforms are the
one-dimensional ones along each axis, in NumPy's order (so their values are NumPy's, bit for bit).
On a Tensor, ``np.fft.fft`` and the others dispatch here.

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> x = np.array([1.0, 2.0, 0.0, -1.0])
>>> ad.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x)   # Parseval: 2 n x
array([ 8., 16.,  0., -8.])
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as _np

from ..core import ndim_of, shape_of, value_of
from ..extend import deflinear, defvjp, primitive
from . import ops
from .composite import roll

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, Axes

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
           "irfftn", "fftshift", "ifftshift"]


def _resized(x, length: int, axis: int):
    """x cut, or zero-padded, at the end of ``axis`` (counted from the end) to ``length``."""
    have = shape_of(x)[axis]
    if have >= length:
        return x if have == length else ops.getitem(x, (Ellipsis, slice(0, length)) + (slice(None),) * (-1 - axis))
    widths = [(0, 0)] * ndim_of(x)
    widths[axis] = (0, length - have)
    return ops._pad(x, tuple(widths), 0)


def _along(values, axis: int):
    """A 1-d array shaped to broadcast along ``axis`` (counted from the end)."""
    return _np.reshape(values, (-1,) + (1,) * (-1 - axis))


# The primitives take n, a negative axis and norm positionally (rules index axes from the end, since
# cotangents may carry leading batch axes).
_fft = primitive(lambda a, n, axis, norm: _np.fft.fft(a, n, axis, norm), "fft")
_ifft = primitive(lambda a, n, axis, norm: _np.fft.ifft(a, n, axis, norm), "ifft")
_rfft = primitive(lambda a, n, axis, norm: _np.fft.rfft(a, n, axis, norm), "rfft")
_irfft = primitive(lambda a, n, axis, norm: _np.fft.irfft(a, n, axis, norm), "irfft")
for _prim in (_fft, _ifft, _rfft, _irfft):
    deflinear(_prim)
    _prim.complex_ok = True  # verified in JAX's convention (tests/autodiff/test_ops.py)
defvjp(_fft, lambda g, ans, a, n, axis, norm: _resized(_fft(g, n, axis, norm), a.shape[axis], axis))
defvjp(_ifft, lambda g, ans, a, n, axis, norm: _resized(_ifft(g, n, axis, norm), a.shape[axis], axis))
# rfft is the first n // 2 + 1 rows of the n-point DFT of the real input: its transpose zero-pads the
# cotangent to n (fft's n does), transforms, and keeps the real part (the input is real).
defvjp(_rfft, lambda g, ans, a, n, axis, norm: ops.real(_resized(_fft(g, n, axis, norm), a.shape[axis], axis)))


def _irfft_vjp(g, ans, c, n, axis, norm):
    """irfft reads the first n // 2 + 1 coefficients; each one between the first and the Nyquist
    term stands for a conjugate pair, so it counts twice: the transpose is that weight times the
    inverse DFT of the (real) cotangent."""
    kept = n // 2 + 1
    weights = _np.full(kept, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    part = _resized(_ifft(g, n, axis, norm), kept, axis) * _along(weights.astype(value_of(ans).dtype), axis)
    part = _resized(part, c.shape[axis], axis)
    return part if _np.iscomplexobj(value_of(c)) else ops.real(part)  # a real input's: the real part


defvjp(_irfft, _irfft_vjp)


def _axis(axis: int, ndim: int) -> int:
    """``axis`` counted from the end (NumPy's error for one out of range)."""
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim)
    return axis - ndim if axis >= 0 else axis


def _one_dimensional(prim, a, n, axis, norm, out, default_n):
    if out is not None:
        raise TypeError(f"autodiff: numpy.fft.{prim.name} with out= (in place) cannot be differentiated")
    axis = _axis(axis, ndim_of(a))
    return prim(a, default_n(shape_of(a)[axis]) if n is None else n, axis, norm)


def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None, out: None = None
        ) -> Array:
    return _one_dimensional(_fft, a, n, axis, norm, out, lambda m: m)


def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None, out: None = None
         ) -> Array:
    return _one_dimensional(_ifft, a, n, axis, norm, out, lambda m: m)


def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None, out: None = None
         ) -> Array:
    if _np.iscomplexobj(value_of(a)):
        raise TypeError("autodiff: numpy.fft.rfft takes real input (NumPy would drop the imaginary part); "
                        "use numpy.fft.fft for complex input")
    return _one_dimensional(_rfft, a, n, axis, norm, out, lambda m: m)


def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None, out: None = None
          ) -> Array:
    return _one_dimensional(_irfft, a, n, axis, norm, out, lambda m: 2 * (m - 1))


def _lengths_and_axes(a, s, axes, inverse_real=False):
    """NumPy's s and axes for the n-dimensional transforms (s[i]: the length along axes[i])."""
    shape = shape_of(a)
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(len(shape)))
    axes = list(axes)
    if s is None:
        s = [shape[axis] for axis in axes]
        if inverse_real:
            s[-1] = 2 * (shape[axes[-1]] - 1)
    s = [shape[axis] if length == -1 else length for length, axis in zip(s, axes)]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return s, axes


def _each_axis(transform, a, s: list, axes: list, norm: str | None, out: None, indices: range):
    """``transform`` along each axis ``axes[i]`` (length ``s[i]``) for i in ``indices``, in turn."""
    for i in indices:
        a = transform(a, s[i], axes[i], norm, out)
    return a


def fftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None, out: None = None) -> Array:
    s, axes = _lengths_and_axes(a, s, axes)
    return _each_axis(fft, a, s, axes, norm, out, reversed(range(len(axes))))


def ifftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None, out: None = None) -> Array:
    s, axes = _lengths_and_axes(a, s, axes)
    return _each_axis(ifft, a, s, axes, norm, out, reversed(range(len(axes))))


def rfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None, out: None = None) -> Array:
    s, axes = _lengths_and_axes(a, s, axes)
    a = rfft(a, s[-1], axes[-1], norm, out)
    return _each_axis(fft, a, s, axes, norm, out, reversed(range(len(axes) - 1)))


def irfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None, out: None = None) -> Array:
    s, axes = _lengths_and_axes(a, s, axes, inverse_real=True)
    a = _each_axis(ifft, a, s, axes, norm, out, range(len(axes) - 1))
    return irfft(a, s[-1], axes[-1], norm, out)


def fft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
         norm: str | None = None, out: None = None) -> Array:
    return fftn(a, s, axes, norm, out)


def ifft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: str | None = None, out: None = None) -> Array:
    return ifftn(a, s, axes, norm, out)


def rfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: str | None = None, out: None = None) -> Array:
    return rfftn(a, s, axes, norm, out)


def irfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
           norm: str | None = None, out: None = None) -> Array:
    return irfftn(a, s, axes, norm, out)


def _shifted(x, axes, sign: int):
    axes = tuple(range(ndim_of(x))) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
    return roll(x, [sign * (shape_of(x)[axis] // 2) for axis in axes], axes)


def fftshift(x: ArrayLike, axes: Axes = None) -> Array:
    return _shifted(x, axes, 1)


def ifftshift(x: ArrayLike, axes: Axes = None) -> Array:
    return _shifted(x, axes, -1)
