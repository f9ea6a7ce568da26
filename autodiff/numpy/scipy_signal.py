"""Differentiable ``scipy.signal`` (``autodiff.numpy.scipy_signal``): N-d convolution and correlation.

scipy.signal's functions are Python code that turns its input into ndarrays, so no engine can see
through them: on a tracked Tensor, ``scipy.signal.convolve(x, k)`` raises a TypeError naming the
version here. ``convolve``, ``correlate``, ``convolve2d`` and ``correlate2d`` keep scipy's signatures
and values: the modes ``"full"``, ``"valid"`` and ``"same"`` (centred on the full output as scipy
centres it, which for ``correlate2d`` differs from ``correlate``'s when ``in2`` has an even side);
``"valid"`` needs one input at least as large as the other along every axis (scipy's swap rule, and
its ValueError otherwise). Two differences: integer inputs give float results (scipy rounds to
integers), and an empty input is refused (scipy's result then depends on the method it picks).

Each is one block of the full convolution (``autodiff.numpy.composite.convolution_part``: a gather of
windows of the zero-padded ``in1`` times ``in2`` reversed), written with differentiable ops, so
derivatives of every order and batched sweeps come from theirs. ``method`` ("auto", "direct",
"fft") is accepted and changes nothing: the result is always computed directly, in O(output size x
in2 size) time and memory (the gathered windows). Complex inputs follow JAX's convention
(docs/guides/differentiate.md).

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> from autodiff.numpy import scipy_signal
>>> image, kernel = np.arange(9.0).reshape(3, 3), np.array([[1.0, -1.0]])
>>> scipy_signal.convolve(image, kernel, mode="valid")          # horizontal differences
array([[1., 1.],
       [1., 1.],
       [1., 1.]])
>>> # each output is 1, so the gradient in the kernel is twice the sum of the pixels each tap sees
>>> ad.grad(lambda k: np.sum(scipy_signal.convolve(image, k, mode="valid") ** 2))(kernel)
array([[54., 42.]])
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from ..core import ndim_of, shape_of, value_of
from . import ops
from .composite import convolution_part

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d"]

_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")
_UNSUPPORTED_BOUNDARIES = ("circular", "wrap", "symmetric", "symm")


def _checked(name: str, in1: ArrayLike, in2: ArrayLike, mode: str, ndim: int | None = None) -> tuple:
    """``in1`` and ``in2`` as arrays after scipy's checks of ``mode`` and the shapes; whether scipy swaps
    them in "valid" mode (``in2`` is the larger)."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"autodiff: {name} mode must be 'full', 'valid' or 'same', not {mode!r}")
    in1, in2 = ops.as_array(in1), ops.as_array(in2)
    shape1, shape2 = shape_of(in1), shape_of(in2)
    if ndim is not None and not len(shape1) == len(shape2) == ndim:
        raise ValueError(f"autodiff: {name} inputs must both be {ndim}-D arrays, not of shapes {shape1} and {shape2}")
    if len(shape1) != len(shape2):
        raise ValueError(f"autodiff: {name}'s in1 and in2 should have the same dimensionality, not shapes "
                         f"{shape1} and {shape2}")
    swapped = False
    if mode == "valid":
        swapped = not all(a >= b for a, b in zip(shape1, shape2))
        if swapped and not all(b >= a for a, b in zip(shape1, shape2)):
            raise ValueError(f"autodiff: {name}: for 'valid' mode, one input must be at least as large as the "
                             f"other in every dimension, not of shapes {shape1} and {shape2}")
    return in1, in2, swapped


def _checked_method(name: str, method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"autodiff: {name} method must be 'auto', 'direct' or 'fft', not {method!r}")


def _checked_boundary(name: str, boundary: str, fillvalue: ArrayLike) -> None:
    if boundary in _UNSUPPORTED_BOUNDARIES:
        raise NotImplementedError(f"autodiff: {name} supports boundary='fill' only, not {boundary!r} "
                                  "(pad the input with np.pad's modes and use mode='valid')")
    if boundary != "fill":
        raise ValueError(f"autodiff: {name} boundary must be 'fill', 'circular' ('wrap') or 'symmetric' "
                         f"('symm'), not {boundary!r}")
    if _np.any(value_of(fillvalue) != 0):
        raise NotImplementedError(f"autodiff: {name} supports fillvalue=0 only, not {value_of(fillvalue)!r}")


def _block(in1, in2, mode: str, same_start) -> Array:
    """The block of the full convolution of ``in1`` and ``in2`` that ``mode`` keeps; "same" starts at
    ``same_start`` (one index per axis)."""
    shape1, shape2 = shape_of(in1), shape_of(in2)
    if mode == "full":
        start, length = (0,) * len(shape1), tuple(a + b - 1 for a, b in zip(shape1, shape2))
    elif mode == "same":
        start, length = same_start, shape1
    else:
        start = tuple(min(a, b) - 1 for a, b in zip(shape1, shape2))
        length = tuple(abs(a - b) + 1 for a, b in zip(shape1, shape2))
    return convolution_part(in1, in2, start, length)


def _centre(kernel) -> tuple:
    """Where mode "same" starts in the full result: (b - 1) // 2 along each axis of the kernel."""
    return tuple((b - 1) // 2 for b in shape_of(kernel))


def _reversed_conjugate(a) -> Array:
    return ops.flip(ops.conj(a))


def convolve(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """Convolve two N-d arrays, as ``scipy.signal.convolve``.

    Parameters
    ----------
    in1, in2 : array_like
        Arrays of the same number of dimensions (two 0-d arrays are multiplied).
    mode : {"full", "valid", "same"}
        The whole convolution; the entries that need no zero padding (one input must be at least as
        large as the other along every axis); or the block of ``in1``'s shape centred on the full one.
    method : {"auto", "direct", "fft"}
        Accepted for scipy's sake; the result is always computed directly.

    Returns
    -------
    Array
        ``out[k] = sum_j in1[k - j] in2[j]`` over the entries of the chosen block.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.numpy import scipy_signal
    >>> scipy_signal.convolve(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    array([[0., 1., 2.],
           [1., 5., 4.],
           [3., 4., 0.]])
    """
    _checked_method("convolve", method)
    in1, in2, _ = _checked("convolve", in1, in2, mode)
    if ndim_of(in1) == 0:
        return in1 * in2
    return _block(in1, in2, mode, _centre(in2))


def correlate(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """Cross-correlate two N-d arrays, as ``scipy.signal.correlate``: the convolution of ``in1`` with
    ``in2`` reversed along every axis and conjugated.

    Parameters
    ----------
    in1, in2 : array_like
        Arrays of the same number of dimensions (two 0-d arrays give ``in1 * conj(in2)``).
    mode : {"full", "valid", "same"}
        As in ``convolve``.
    method : {"auto", "direct", "fft"}
        Accepted for scipy's sake; the result is always computed directly.

    Returns
    -------
    Array

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.numpy import scipy_signal
    >>> scipy_signal.correlate(np.array([0.0, 1.0, 0.5, 0.0]), np.array([1.0, 0.5]), mode="valid")
    array([0.5 , 1.25, 0.5 ])
    """
    _checked_method("correlate", method)
    in1, in2, _ = _checked("correlate", in1, in2, mode)
    if ndim_of(in1) == 0:
        return in1 * ops.conj(in2)
    return _block(in1, _reversed_conjugate(in2), mode, _centre(in2))


def convolve2d(in1: ArrayLike, in2: ArrayLike, mode: str = "full", boundary: str = "fill",
               fillvalue: ArrayLike = 0) -> Array:
    """Convolve two 2-D arrays, as ``scipy.signal.convolve2d`` with its default zero boundary.

    Parameters
    ----------
    in1, in2 : array_like
        2-D arrays.
    mode : {"full", "valid", "same"}
        As in ``convolve`` (the same values).
    boundary : {"fill"}
        Only "fill": "circular"/"wrap" and "symmetric"/"symm" raise NotImplementedError.
    fillvalue : scalar
        Only 0.

    Returns
    -------
    Array

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.numpy import scipy_signal
    >>> scipy_signal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), mode="same")
    array([[1., 2., 2.],
           [2., 4., 4.],
           [2., 4., 4.]])
    """
    _checked_boundary("convolve2d", boundary, fillvalue)
    in1, in2, _ = _checked("convolve2d", in1, in2, mode, ndim=2)
    return _block(in1, in2, mode, _centre(in2))


def correlate2d(in1: ArrayLike, in2: ArrayLike, mode: str = "full", boundary: str = "fill",
                fillvalue: ArrayLike = 0) -> Array:
    """Cross-correlate two 2-D arrays, as ``scipy.signal.correlate2d`` with its default zero boundary.

    Its values are scipy's, which differ from ``correlate``'s in two cases: "same" starts at
    ``in2.shape // 2`` of the full correlation (``correlate`` at ``(in2.shape - 1) // 2``: they differ
    where ``in2`` has an even side), and in "valid" mode with ``in2`` the larger input, complex results
    are conjugated (scipy correlates the swapped inputs and only reverses the result).

    Parameters
    ----------
    in1, in2 : array_like
        2-D arrays.
    mode : {"full", "valid", "same"}
        As in ``correlate``, with the two differences above.
    boundary, fillvalue
        As in ``convolve2d``: "fill" and 0 only.

    Returns
    -------
    Array

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.numpy import scipy_signal
    >>> scipy_signal.correlate2d(np.eye(3), np.array([[1.0, 0.0], [0.0, 2.0]]), mode="valid")
    array([[3., 0.],
           [0., 3.]])
    """
    _checked_boundary("correlate2d", boundary, fillvalue)
    in1, in2, swapped = _checked("correlate2d", in1, in2, mode, ndim=2)
    result = _block(in1, _reversed_conjugate(in2), mode, tuple(b // 2 for b in shape_of(in2)))
    return ops.conj(result) if swapped else result
