"""Operators and NumPy dispatch for Tensor: plain NumPy code differentiates.

``__array_ufunc__`` and ``__array_function__`` send NumPy calls on Tensors to the differentiable
namespace. A NumPy function with no rule raises a TypeError naming it, instead of silently turning
the Tensor into an object array or dropping its gradient.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import numpy as anp
from .core import Primitive, Tensor, apply_binary, apply_unary

if TYPE_CHECKING:
    from .typing import ArrayLike, Axes, DTypeLike, Order


def _dispatch_table(numpy_module, implementations: dict) -> dict:
    """``numpy_module``'s function or ufunc of each name, mapped to its implementation (names
    missing from the installed NumPy are left out)."""
    return {getattr(numpy_module, name): implementation for name, implementation in implementations.items()
            if hasattr(numpy_module, name)}


_NUMPY = _dispatch_table(np, anp.NUMPY_FUNCTIONS)
_UFUNCS = {f: implementation for f, implementation in _NUMPY.items() if isinstance(f, np.ufunc)}
_FUNCTIONS = {f: implementation for f, implementation in _NUMPY.items() if not isinstance(f, np.ufunc)}
_FUNCTIONS.update(_dispatch_table(np.linalg, {name: getattr(anp.linalg, name)
                                               for name in anp.linalg.__all__}))
_FUNCTIONS.update(_dispatch_table(np.fft, {name: getattr(anp.fft, name) for name in anp.fft.__all__}))

_REDUCTIONS = {np.add: anp.sum, np.multiply: anp.prod, np.maximum: anp.max, np.minimum: anp.min}
_ACCUMULATIONS = {np.add: anp.cumsum, np.multiply: anp.cumprod}


def _scipy_special(ufunc):
    """The implementation of a scipy.special ufunc, found by name and remembered in ``_UFUNCS``
    (autodiff never imports scipy: a ufunc of it reaching here means the caller did). None for a
    ufunc that is not scipy.special's; a scipy.special ufunc without rules raises, naming it."""
    if not _in_scipy_special(ufunc):
        return None
    name = ufunc.__name__
    if name not in anp.special.UFUNCS:
        raise TypeError(f"autodiff: scipy.special.{name} has no derivative rule, so it cannot be applied "
                        "to a Tensor (autodiff.numpy.special lists the supported functions; "
                        "np.asarray(t) drops the gradient)")
    _UFUNCS[ufunc] = anp.special.UFUNCS[name]
    return _UFUNCS[ufunc]


def _in_scipy_special(ufunc) -> bool:
    special = sys.modules.get("scipy.special")
    return special is not None and getattr(special, ufunc.__name__, None) is ufunc


def _module(ufunc) -> str:
    """Where a ufunc comes from, for messages."""
    return "scipy.special" if _in_scipy_special(ufunc) else "numpy"


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    op = _UFUNCS.get(ufunc)
    if op is None:
        op = _scipy_special(ufunc)
    if type(op) is Primitive and method == "__call__" and not kwargs and len(inputs) < 3:  # the common case
        return apply_unary(op, self) if len(inputs) == 1 else apply_binary(op, *inputs)
    if kwargs.pop("out", None) is not None:
        raise TypeError(f"autodiff: {_module(ufunc)}.{ufunc.__name__} with out= (in place) cannot be "
                        "differentiated")
    if method == "__call__" and op is not None:
        if kwargs:
            raise TypeError(f"autodiff: {_module(ufunc)}.{ufunc.__name__} with {sorted(kwargs)} is not "
                            "supported")
        return op(*inputs)
    if method == "reduce" and ufunc in _REDUCTIONS:
        return _REDUCTIONS[ufunc](inputs[0], axis=kwargs.get("axis", 0),
                                  keepdims=kwargs.get("keepdims", False))
    if method == "accumulate" and ufunc in _ACCUMULATIONS:
        return _ACCUMULATIONS[ufunc](inputs[0], axis=kwargs.get("axis", 0))
    if method == "outer" and ufunc in _UFUNCS and ufunc.nin == 2 and not kwargs:
        a, b = inputs
        return _UFUNCS[ufunc](anp.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    raise TypeError(f"autodiff: {_module(ufunc)}.{name} has no derivative rule, so it cannot be applied "
                    "to a Tensor (use autodiff.numpy functions, or np.asarray(t) to drop the gradient)")


def _array_function(self, func, types, args, kwargs):
    implementation = _FUNCTIONS.get(func)
    if implementation is None:
        module = func.__module__.replace("numpy.linalg._linalg", "numpy.linalg")
        raise TypeError(f"autodiff: {module}.{func.__name__} has no derivative rule, so it cannot "
                        "be applied to a Tensor (use autodiff.numpy functions, or np.asarray(t) "
                        "to drop the gradient)")
    return implementation(*args, **kwargs)


def _binary(op, reflected=False):
    if isinstance(op, Primitive):  # the common case: straight to apply, no __call__ indirection
        if reflected:
            return lambda self, other: apply_binary(op, other, self)
        return lambda self, other: apply_binary(op, self, other)
    if reflected:
        return lambda self, other: op(other, self)
    return lambda self, other: op(self, other)


def _setitem(self, index, value):
    raise TypeError(
        "autodiff: Tensors are immutable, so t[index] = value cannot be recorded. Write the update "
        "as a new array: a masked assignment z[z < 0] = 0 is np.where(z < 0, 0, z) (or "
        "np.maximum(z, 0)); z[i] = v is np.where(np.arange(len(z)) == i, v, z); an array built "
        "piece by piece is np.stack([...]) or np.concatenate([...]).")


class _NdarrayMethods:
    """ndarray's methods of Tensor, each the function of that name in ``autodiff.numpy``
    (``_install_methods`` puts them on Tensor; the reductions are those functions themselves)."""

    def conj(self) -> Tensor:
        return anp.conj(self)

    conjugate = conj

    def reshape(self, *shape: int | Sequence[int], **kw: Any) -> Tensor:
        return anp.reshape(self, shape[0] if len(shape) == 1 else shape, **kw)

    def transpose(self, *axes: int | Sequence[int] | None) -> Tensor:
        return anp.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def ravel(self, order: Order | None = "C") -> Tensor:
        return anp.ravel(self, order)

    flatten = ravel

    def squeeze(self, axis: Axes = None) -> Tensor:
        return anp.squeeze(self, axis)

    def swapaxes(self, a: int, b: int) -> Tensor:
        return anp.swapaxes(self, a, b)

    def dot(self, other: ArrayLike) -> Tensor:
        return anp.dot(self, other)

    def astype(self, dtype: DTypeLike, **kw: Any) -> Tensor:
        return anp.astype(self, dtype)

    def copy(self) -> Tensor:
        return self

    def clip(self, a_min: ArrayLike | None = None, a_max: ArrayLike | None = None, **kw: Any) -> Tensor:
        return anp.clip(self, a_min, a_max, **kw)

    def cumsum(self, axis: int | None = None) -> Tensor:
        return anp.cumsum(self, axis)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return anp.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return anp.trace(self, offset, axis1, axis2)

    def argmax(self, axis: int | None = None) -> Tensor:
        return anp.argmax(self, axis)

    def argmin(self, axis: int | None = None) -> Tensor:
        return anp.argmin(self, axis)

    def argsort(self, axis: int | None = -1) -> Tensor:
        return anp.argsort(self, axis)

    def round(self, decimals: int = 0) -> Tensor:
        return anp.round(self, decimals)


def _install_methods():
    methods = {
        "__array_ufunc__": _array_ufunc, "__array_function__": _array_function,
        "__add__": _binary(anp.add), "__radd__": _binary(anp.add, True),
        "__sub__": _binary(anp.subtract), "__rsub__": _binary(anp.subtract, True),
        "__mul__": _binary(anp.multiply), "__rmul__": _binary(anp.multiply, True),
        "__truediv__": _binary(anp.divide), "__rtruediv__": _binary(anp.divide, True),
        "__pow__": _binary(anp.power), "__rpow__": _binary(anp.power, True),
        "__matmul__": _binary(anp.matmul), "__rmatmul__": _binary(anp.matmul, True),
        "__floordiv__": _binary(anp.floor_divide), "__rfloordiv__": _binary(anp.floor_divide, True),
        "__mod__": _binary(anp.mod), "__rmod__": _binary(anp.mod, True),
        "__lt__": _binary(anp.less), "__le__": _binary(anp.less_equal),
        "__gt__": _binary(anp.greater), "__ge__": _binary(anp.greater_equal),
        "__eq__": _binary(anp.equal), "__ne__": _binary(anp.not_equal),
        "__and__": _binary(anp.logical_and), "__or__": _binary(anp.logical_or),
        "__xor__": _binary(anp.logical_xor), "__invert__": lambda self: anp.logical_not(self),
        "__rand__": _binary(anp.logical_and, True), "__ror__": _binary(anp.logical_or, True),
        "__rxor__": _binary(anp.logical_xor, True),
        "__neg__": lambda self: anp.negative(self), "__pos__": lambda self: self,
        "__abs__": lambda self: anp.absolute(self),
        "__getitem__": anp.getitem, "__setitem__": _setitem,
        "T": property(lambda self: anp.transpose(self)),
        "real": property(lambda self: anp.real(self)), "imag": property(lambda self: anp.imag(self)),
        "mT": property(lambda self: anp.swapaxes(self, -1, -2)),
    }
    for name, method in vars(_NdarrayMethods).items():
        if not name.startswith("__"):
            method.__qualname__ = f"Tensor.{method.__name__}"
            methods[name] = method
    for name in ["sum", "mean", "prod", "max", "min", "var", "std", "any", "all"]:
        methods[name] = getattr(anp, name)
    for name, method in methods.items():
        setattr(Tensor, name, method)


_install_methods()
