"""Differentiable NumPy: each primitive with its VJP and JVP rules, one short line each where possible.

Rules take the output cotangent ``g`` with any number of leading batch axes (so one sweep can push a
whole batch of cotangents), use negative axes, and are written with these same ops, so that they are
differentiable themselves. Functions that are compositions of primitives need no rules at all.
"""
from __future__ import annotations

import builtins
import math
import operator
import string
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as _np

from ..core import Primitive, SlicedCotangent, Tensor, apply, concrete, dtype_of, ndim_of, shape_of, value_of
from ..extend import defderiv, defjvp, deflinear, defvjp, nondiff, primitive, reject_keywords, reject_out, unbroadcast

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, Axes, DTypeLike, Index, Order, Shape


def _is_int(value) -> bool:
    return isinstance(value, (int, _np.integer))


def float_type(*values: ArrayLike | DTypeLike) -> _np.dtype:
    """The dtype NumPy's float ufuncs compute ``values`` in: their result type, made a float when it
    is an integer or bool type. Python numbers stay weak, as in NumPy (2.0 with float32 is float32,
    two Python floats are float64): never adding a float16 to the promotion, which would make two
    Python floats float16."""
    dtype = _np.result_type(*values)
    return dtype if dtype.kind in "fc" else _np.result_type(dtype, _np.float16)


def as_array(x: ArrayLike) -> Tensor | _np.ndarray:
    """A Tensor unchanged, anything else (a list, a Python number) as an ndarray, as NumPy's
    functions that are not ufuncs take their arguments: a Python float is then a float64 array,
    not a weak scalar that a float32 operand would round."""
    return x if isinstance(x, Tensor) else _np.asarray(x)


def _axes(axis, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if _is_int(axis) else axis
    return tuple(sorted(int(a) % ndim if ndim else 0 for a in axis))


# Comparisons for masks inside rules: Tensors in, recorded Tensors out while autodiff.function traces.
_equal, _greater, _greater_equal = nondiff(_np.equal), nondiff(_np.greater), nondiff(_np.greater_equal)
_isfinite, _floor_divide = nondiff(_np.isfinite), nondiff(_np.floor_divide)


# --- elementwise, one argument -----------------------------------------------------------------

def _sigmoid(x):
    x = _np.asarray(x)
    e = _np.exp(-_np.abs(x))
    return _np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(float_type(x))


negative = primitive(_np.negative, tensor_fun=operator.neg)
exp = primitive(_np.exp)
log = primitive(_np.log)
log2 = primitive(_np.log2)
log10 = primitive(_np.log10)
log1p = primitive(_np.log1p)
expm1 = primitive(_np.expm1)
sqrt = primitive(_np.sqrt)
cbrt = primitive(_np.cbrt)
square = primitive(_np.square)
reciprocal = primitive(_np.reciprocal)
absolute = primitive(_np.absolute, "absolute")
sin = primitive(_np.sin)
cos = primitive(_np.cos)
tan = primitive(_np.tan)
arcsin = primitive(_np.arcsin)
arccos = primitive(_np.arccos)
arctan = primitive(_np.arctan)
sinh = primitive(_np.sinh)
cosh = primitive(_np.cosh)
tanh = primitive(_np.tanh)
arcsinh = primitive(_np.arcsinh)
arccosh = primitive(_np.arccosh)
arctanh = primitive(_np.arctanh)
sigmoid = primitive(_sigmoid, "sigmoid")
softplus = primitive(lambda x: _np.logaddexp(0, x), "softplus")
abs = absolute
expit = sigmoid

defvjp(negative, lambda g, ans, x: -g)
defjvp(negative, lambda t, ans, x: -t)
defderiv(exp, lambda ans, x: ans)
defderiv(log, lambda ans, x: 1 / x)
defderiv(log2, lambda ans, x: 1 / (x * math.log(2)))
defderiv(log10, lambda ans, x: 1 / (x * math.log(10)))
defderiv(log1p, lambda ans, x: 1 / (1 + x))
defderiv(expm1, lambda ans, x: ans + 1)
defderiv(sqrt, lambda ans, x: 0.5 / ans)
defderiv(cbrt, lambda ans, x: 1 / (3 * ans ** 2))
defderiv(square, lambda ans, x: 2 * x)
defderiv(reciprocal, lambda ans, x: -ans * ans)
defvjp(absolute, lambda g, ans, x: g * _abs_slope(ans, x))
defjvp(absolute, lambda t, ans, x: real(t * _abs_slope(ans, x)) if _is_complex(x) else t * sign(x))
defderiv(sin, lambda ans, x: cos(x))
defderiv(cos, lambda ans, x: -sin(x))
defderiv(tan, lambda ans, x: 1 + ans * ans)
defderiv(arcsin, lambda ans, x: 1 / sqrt(1 - x * x))
defderiv(arccos, lambda ans, x: -1 / sqrt(1 - x * x))
defderiv(arctan, lambda ans, x: 1 / (1 + x * x))
defderiv(sinh, lambda ans, x: cosh(x))
defderiv(cosh, lambda ans, x: sinh(x))
defderiv(tanh, lambda ans, x: 1 - ans * ans)
defderiv(arcsinh, lambda ans, x: 1 / sqrt(x * x + 1))
defderiv(arccosh, lambda ans, x: 1 / (sqrt(x - 1) * sqrt(x + 1)))  # so for complex x too
defderiv(arctanh, lambda ans, x: 1 / (1 - x * x))
defderiv(sigmoid, lambda ans, x: ans * (1 - ans))
defderiv(softplus, lambda ans, x: sigmoid(x))


def positive(x: ArrayLike) -> Array:
    """+x: a Tensor itself."""
    return x if isinstance(x, Tensor) else _np.positive(x)


# A transform's own copy of a Tensor argument (``transforms._watched_args``): equal to x and
# recorded as a function of x, so that the transform's tape watches the copy alone (not x, which f
# may also reach through a closure) while enclosing tapes differentiate through it.
alias = primitive(lambda x: x, "alias")
defvjp(alias, lambda g, ans, x: g)
deflinear(alias)


# Complex parts. Cotangents follow JAX's convention: a VJP is the transpose of the JVP for the real
# pairing <a, b> = Re(sum(a * b)), so holomorphic rules are the real ones (g * f'(z)), the gradient
# of a real f is df/dx - i df/dy, and a real input's cotangent is the real part (core.sweep).
real = primitive(_np.real, "real")
imag = primitive(_np.imag, "imag")
conjugate = conj = primitive(_np.conjugate, "conjugate")
defvjp(real, lambda g, ans, x: _as_complex_if(g, x))
defjvp(real, lambda t, ans, x: real(t))
defvjp(imag, lambda g, ans, x: -1j * g if _is_complex(x) else None)  # real x: imag is constant 0
defjvp(imag, lambda t, ans, x: imag(t))
defvjp(conj, lambda g, ans, x: conj(g))
deflinear(conj)


def _is_complex(x) -> bool:
    return dtype_of(x).kind == "c"


def _abs_slope(ans, x):
    """d|x|: sign(x) for real x (0 at 0, the minimum-norm subgradient); conj(x) / |x| for complex
    x, 0 at 0 (JAX's convention: the gradient of a real function is df/dx - i df/dy)."""
    return conj(x) / where(_equal(ans, 0), 1.0, ans) if _is_complex(x) else sign(x)


def _as_complex_if(g, x):
    """g, cast to x's dtype when x is complex (so the cotangent of a complex input is complex)."""
    return astype(g, value_of(x).dtype) if _is_complex(x) and not _is_complex(g) else g


_angle = primitive(_np.angle, "angle")
defvjp(_angle, lambda g, ans, z: -1j * g * conj(z) / _abs_squared_or_one(z) if _is_complex(z) else None)
defjvp(_angle, lambda t, ans, z: imag(conj(z) * t) / _abs_squared_or_one(z))


def _abs_squared_or_one(z):
    """|z|^2, or 1 where z is 0 (where the slope is then 0 instead of NaN)."""
    return where(_equal(z, 0), 1.0, real(z * conj(z)))


def angle(z: ArrayLike, deg: bool = False) -> Array:
    """The argument of complex z (for real z, 0 or pi: piecewise constant, no gradient)."""
    return _angle(z) * (180 / math.pi) if deg else _angle(z)


# --- elementwise, two arguments (broadcasting) ---------------------------------------------------

add = primitive(_np.add, tensor_fun=operator.add)
subtract = primitive(_np.subtract, tensor_fun=operator.sub)
multiply = primitive(_np.multiply, tensor_fun=operator.mul)
divide = primitive(_np.divide, tensor_fun=operator.truediv)
power = primitive(_np.power, tensor_fun=operator.pow)
arctan2 = primitive(_np.arctan2)
logaddexp = primitive(_np.logaddexp)
maximum = primitive(_np.maximum)
minimum = primitive(_np.minimum)
true_divide = divide

defvjp(add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, broadcasting=True)
defjvp(add, lambda t, ans, x, y: broadcast_to(t, ans.shape), lambda t, ans, x, y: broadcast_to(t, ans.shape))
defvjp(subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, broadcasting=True)
defjvp(subtract, lambda t, ans, x, y: broadcast_to(t, ans.shape), lambda t, ans, x, y: broadcast_to(-t, ans.shape))
defderiv(multiply, lambda ans, x, y: y, lambda ans, x, y: x)
defderiv(divide, lambda ans, x, y: 1 / y, lambda ans, x, y: -ans / y)
defderiv(power, lambda ans, x, y: _power_dx(x, y),
         lambda ans, x, y: ans * (log(_in_dtype_of(x, ans)) if _is_complex(ans)
                                  else log(where(_greater(x, 0), _in_dtype_of(x, ans), 1))))
defderiv(arctan2, lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y))
defderiv(logaddexp, lambda ans, x, y: exp(x - ans), lambda ans, x, y: exp(y - ans))
defderiv(maximum, lambda ans, x, y: _mask(_greater_equal(x, y), ans),
         lambda ans, x, y: _mask(_greater(y, x), ans))
defderiv(minimum, lambda ans, x, y: _mask(_greater_equal(y, x), ans),
         lambda ans, x, y: _mask(_greater(x, y), ans))


def _power_dx(x, y):
    """d x**y / dx = y * x**(y - 1), exact at x = 0 to every order: where y == 0 it is 0 (x**0 is
    constant), not 0 * 0**-1 = NaN, so that polynomials differentiate exactly at 0 (the derivative
    of x**1 there is 1 * x**0, whose own derivative is this rule at y == 0). For a Tensor exponent
    only the points with x == 0 as well change, where the mixed derivative has a pole anyway."""
    if type(y) in (int, float):  # the common constant exponents, without array work
        return 2 * x if y == 2 else 0 if y == 0 else y * x ** (y - 1)
    zero = _equal(y, 0)
    if isinstance(y, Tensor):
        zero = zero & _equal(x, 0)
    if not _np.any(zero):
        return y * x ** (y - 1)
    return y * x ** where(zero, 1, y - 1)  # y * x**1 = 0 there, and so is every derivative


def _in_dtype_of(x, like):
    """An operand in the dtype of ``like``: a constant (a Python float is float64) converted, a Tensor
    only when ``like`` is complex and it is not (the log of a negative base, say)."""
    if isinstance(x, Tensor):
        return astype(x, like.dtype) if _is_complex(like) and not _is_complex(x) else x
    return _np.asarray(x, value_of(like).dtype)


def _mask(condition, like):
    return astype(condition, float_type(value_of(like)))


mod = primitive(_np.mod, "mod")
remainder = mod
defderiv(mod, lambda ans, x, y: _np.ones(ans.shape, ans.dtype),
         lambda ans, x, y: -_floor_divide(x, y))


_where = primitive(_np.where, "where")
defvjp(_where, None, lambda g, ans, c, x, y: where(c, g, 0),
       lambda g, ans, c, x, y: where(c, 0, g), broadcasting=True)
_where.vjps[0] = lambda g, ans, c, x, y: None  # a Tensor condition gets no gradient (None: none)
defjvp(_where, None, lambda t, ans, c, x, y: where(c, t, 0) * _np.ones(ans.shape, ans.dtype),
       lambda t, ans, c, x, y: where(c, 0, t) * _np.ones(ans.shape, ans.dtype))


@overload
def where(condition: ArrayLike) -> tuple[_np.ndarray, ...]: ...
@overload
def where(condition: ArrayLike, x: ArrayLike, y: ArrayLike) -> Array: ...
def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None
          ) -> Array | tuple[_np.ndarray, ...]:
    """Elementwise choice; differentiable in x and y, not in the condition."""
    if x is None and y is None:
        return nondiff(_np.where, wrap=False)(condition)
    return _where(condition, x, y)


_clip = primitive(lambda x, lo, hi: _np.clip(x, lo, hi), "clip")
defvjp(_clip, lambda g, ans, x, lo, hi: g * _mask(_equal(ans, x), ans), broadcasting=True)
defjvp(_clip, lambda t, ans, x, lo, hi: t * _mask(_equal(ans, x), ans))


def clip(a: ArrayLike, a_min: ArrayLike | None = None, a_max: ArrayLike | None = None, out: None = None,
         **kwargs: Any) -> Array:
    """Clip to [a_min, a_max]; the gradient flows where the value was not clipped."""
    reject_out(out)
    a_min, a_max = kwargs.pop("min", a_min), kwargs.pop("max", a_max)
    reject_keywords("clip", kwargs)
    if isinstance(a_min, Tensor) or isinstance(a_max, Tensor):  # bounds that need gradients too
        lower = a if a_min is None else maximum(a, a_min)
        return lower if a_max is None else minimum(lower, a_max)
    return _clip(a, a_min, a_max)


# --- reductions --------------------------------------------------------------------------------

def _keepdims_shape(shape, axis):
    axes = _axes(axis, len(shape))
    return tuple(1 if k in axes else d for k, d in enumerate(shape))


def _expand_reduced(g, ans, shape, axis):
    """Broadcast a cotangent of a reduction back over the reduced axes of an argument of ``shape``
    (only the shape: a tape need not keep the argument of a sum)."""
    if axis is None and g.ndim == ans.ndim:  # the common whole-array sum: no reshape needed
        return _broadcast_to(g, shape)
    batch = g.shape[:g.ndim - ans.ndim]
    return broadcast_to(reshape(g, batch + _keepdims_shape(shape, axis)), batch + shape)


_sum = primitive(_np.sum, "sum", tensor_fun=_np.add.reduce)  # np.sum's own call on arrays
defvjp(_sum, lambda g, ans, x, axis=None, keepdims=False: _expand_reduced(g, ans, x.shape, axis))
deflinear(_sum)


def defreduction(prim: Primitive, partial: Callable[[Any, Any, Axes], Any]) -> None:
    """The rules of a reduction ``prim(x, axis, keepdims)``, from ``partial(x, kept, axis)``: the
    derivative of the result by each element of x, broadcastable to x (``kept`` is the result with
    the reduced axes kept, of length one)."""
    def vjp(g, ans, x, axis=None, keepdims=False):
        return _expand_reduced(g, ans, x.shape, axis) * partial(x, _kept(ans, x, axis), axis)

    def jvp(t, ans, x, axis=None, keepdims=False):
        return sum(t * partial(x, _kept(ans, x, axis), axis), axis=axis, keepdims=keepdims)

    defvjp(prim, vjp)
    defjvp(prim, jvp)


def _kept(ans, x, axis):
    return reshape(ans, _keepdims_shape(x.shape, axis))


def sum(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
        initial: ArrayLike | None = None, where: ArrayLike | None = None, **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("sum", kwargs)
    result = _sum(a if where is None else _where(where, a, 0), axis=axis, keepdims=keepdims)
    result = result if initial is None else result + initial
    return result if dtype is None else astype(result, dtype)


def _count(a, axis) -> int:
    """How many elements of ``a`` each result of a reduction over ``axis`` sees (an int keeps float32)."""
    return math.prod([shape_of(a)[k] for k in _axes(axis, ndim_of(a))])


def mean(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
         **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("mean", kwargs)
    return sum(a, axis=axis, dtype=dtype, keepdims=keepdims) / _count(a, axis)


def _tie_shares(x, kept, axis):
    """Where x attains the extremum ``kept``, one over the number of ties; elsewhere 0."""
    hits = _mask(_equal(x, kept), x)
    return hits / _np.sum(hits, axis=_axes(axis, x.ndim), keepdims=True)


def _extremum(np_fun, name):
    prim = primitive(np_fun, name)
    defreduction(prim, _tie_shares)

    def reduce(a: ArrayLike, axis: Axes = None, out: None = None, keepdims: bool = False, **kwargs: Any) -> Array:
        reject_out(out)
        reject_keywords(name, kwargs)
        return prim(a, axis=axis, keepdims=keepdims)
    reduce.__name__ = name
    reduce.__doc__ = f"{name} over axis; ties share the gradient equally."
    reduce.primitive = prim
    return reduce


max = amax = _extremum(_np.max, "max")
min = amin = _extremum(_np.min, "min")


def _products_of_others(x, axis):
    """For each element along ``axis``, the product of the others, without dividing by x.

    Division (``prod / x``) gives NaN Hessians at zeros; this uses an (..., n, n) product with the
    diagonal set to one instead, which is built from differentiable ops so every order is exact.
    """
    axes = _axes(axis, x.ndim)
    rest = [k for k in range(x.ndim) if k not in axes]
    moved = transpose(x, rest + list(axes))
    lead = moved.shape[:len(rest)]
    n = int(_np.prod([x.shape[k] for k in axes]))
    flat = reshape(moved, lead + (1, n))
    others = prod(where(_np.eye(n, dtype=bool), 1.0, broadcast_to(flat, lead + (n, n))), axis=-1)
    restored = reshape(others, lead + tuple(x.shape[k] for k in axes))
    return transpose(restored, _np.argsort(rest + list(axes)).tolist())


_prod = primitive(_np.prod, "prod")
defreduction(_prod, lambda x, kept, axis: _products_of_others(x, axis))


def prod(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, keepdims: bool = False,
         initial: ArrayLike | None = None, where: ArrayLike | None = None, **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("prod", kwargs)
    result = _prod(a if where is None else _where(where, a, 1), axis=axis, keepdims=keepdims)
    result = result if initial is None else result * initial
    return result if dtype is None else astype(result, dtype)


def var(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("var", kwargs)
    centered = a - mean(a, axis=axis, keepdims=True)
    squares = real(centered * conj(centered)) if _is_complex(a) else centered * centered  # |c|^2
    return sum(squares, axis=axis, dtype=dtype, keepdims=keepdims) / (_count(a, axis) - ddof)


def std(a: ArrayLike, axis: Axes = None, dtype: DTypeLike | None = None, out: None = None, ddof: float = 0,
        keepdims: bool = False, **kwargs: Any) -> Array:
    """The square root of var; over single elements (identically 0) var itself, whose derivatives
    are exactly 0 (sqrt's infinite slope at 0 would make them NaN)."""
    reject_keywords("std", kwargs)
    variance = var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    return variance if _count(a, axis) == 1 and ddof == 0 else sqrt(variance)


def stop_gradient(x: ArrayLike) -> ArrayLike:
    """The value of ``x`` with no gradient flowing through it.

    As ``tf.stop_gradient`` and ``jax.lax.stop_gradient``: the result is a Tensor no tape watches,
    so it acts as a constant in every derivative.

    Examples
    --------
    >>> import autodiff as ad
    >>> x = ad.constant(2.0)
    >>> with ad.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * ad.stop_gradient(x)           # d/dx treats the second x as the constant 2
    >>> tape.gradient(y, x)
    Tensor(array(2.))
    """
    return nondiff(_np.asarray)(x) if isinstance(x, Tensor) else x  # recorded when traced


def logsumexp(a: ArrayLike, axis: Axes = None, keepdims: bool = False, b: ArrayLike | None = None,
              return_sign: bool = False, **kwargs: Any) -> Array | tuple[Array, Array]:
    """log(sum(b * exp(a))) computed stably (the shift carries no gradient, the result is exact).

    As ``scipy.special.logsumexp``: weights ``b`` (differentiable too) may be negative, and with
    ``return_sign`` the result is ``(log|sum|, sign of the sum)``; without it a negative sum is NaN.
    """
    reject_keywords("logsumexp", kwargs)
    shift = stop_gradient(max(a, axis=axis, keepdims=True))
    shift = where(_isfinite(shift), shift, 0.0)
    terms = exp(a - shift)
    total = sum(terms if b is None else b * terms, axis=axis, keepdims=True)
    sign = nondiff(_np.sign)(total) if return_sign else None
    result = log(absolute(total) if return_sign else total) + shift
    if not keepdims:
        shape = _np.sum(value_of(result), axis=axis).shape
        result, sign = reshape(result, shape), None if sign is None else reshape(sign, shape)
    return (result, sign) if return_sign else result


def softmax(x: ArrayLike, axis: Axes = -1) -> Array:
    return exp(x - logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x: ArrayLike, axis: Axes = -1) -> Array:
    return x - logsumexp(x, axis=axis, keepdims=True)


def _flip_cumsum(g, axis):
    return flip(cumsum(flip(g, axis=axis), axis=axis), axis=axis)


_cumsum = primitive(lambda x, axis: _np.cumsum(x, axis=axis), "cumsum")
defvjp(_cumsum, lambda g, ans, x, axis: reshape(_flip_cumsum(g, axis=-1), g.shape[:g.ndim - 1] + x.shape)
       if axis is None else _flip_cumsum(g, axis=axis % x.ndim - x.ndim))
deflinear(_cumsum)


def cumsum(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: None = None) -> Array:
    reject_out(out)
    result = _cumsum(a, axis)
    return result if dtype is None else astype(result, dtype)


_flip = primitive(lambda x, axis: _np.flip(x, axis), "flip")
defvjp(_flip, lambda g, ans, x, axis: _flip(g, tuple(k - x.ndim for k in _axes(axis, x.ndim))))
deflinear(_flip)


def flip(m: ArrayLike, axis: Axes = None) -> Array:
    return _flip(m, axis)


# --- shapes ------------------------------------------------------------------------------------

_reshape = primitive(lambda x, shape: _np.asarray(x).reshape(shape), "reshape",
                     tensor_fun=lambda x, shape: x.reshape(shape))
defvjp(_reshape, lambda g, ans, x, shape: _reshape(g, g.shape[:g.ndim - ans.ndim] + x.shape))
deflinear(_reshape)


def reshape(a: ArrayLike, shape: Shape | None = None, order: Order | None = "C", **kwargs: Any) -> Array:
    shape = kwargs.pop("newshape", shape)
    kwargs.pop("copy", None)  # Tensors are immutable: a copy and a view are the same thing
    reject_keywords("reshape", kwargs)
    shape = (shape,) if _is_int(shape) else tuple(shape)
    if _fortran_order(a, order):  # read and written in column-major order: reversed axes
        return transpose(reshape(transpose(a), shape[::-1]))
    if isinstance(a, Tensor) and a.shape == shape:
        return a
    return _reshape(a, shape)


def _fortran_order(a, order) -> bool:
    """Whether NumPy's ``order`` argument means column-major for ``a`` ("A": if a's value is)."""
    if order not in ("C", "F", "A", "K", None):
        raise ValueError(f"order must be one of 'C', 'F', 'A' or 'K' (got {order!r})")
    value = value_of(a)
    return order == "F" or (order == "A" and isinstance(value, _np.ndarray)
                            and value.flags.f_contiguous and not value.flags.c_contiguous)


def ravel(a: ArrayLike, order: Order | None = "C") -> Array:
    return reshape(a, (-1,), order)


def squeeze(a: ArrayLike, axis: Axes = None) -> Array:
    return reshape(a, _np.squeeze(_np.empty(shape_of(a), bool), axis).shape)


def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    return reshape(a, _np.expand_dims(_np.empty(shape_of(a), bool), axis).shape)


def atleast_1d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    if len(arys) != 1:
        return tuple(atleast_1d(a) for a in arys)
    a = as_array(arys[0])
    return reshape(a, (1,)) if ndim_of(a) == 0 else a


def atleast_2d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    if len(arys) != 1:
        return tuple(atleast_2d(a) for a in arys)
    a = as_array(arys[0])
    return reshape(a, (1,) * (2 - ndim_of(a)) + shape_of(a)) if ndim_of(a) < 2 else a


def atleast_3d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    """As NumPy: a vector of n becomes (1, n, 1), a matrix (m, n) becomes (m, n, 1)."""
    if len(arys) != 1:
        return tuple(atleast_3d(a) for a in arys)
    a = as_array(arys[0])
    shape = {0: (1, 1, 1), 1: (1,) + shape_of(a) + (1,), 2: shape_of(a) + (1,)}.get(ndim_of(a))
    return a if shape is None else reshape(a, shape)


_transpose = primitive(_np.transpose, "transpose")


def _transpose_vjp(g, ans, x, axes):
    nb = g.ndim - ans.ndim
    inverse = _np.argsort(range(x.ndim)[::-1] if axes is None else axes)
    return _transpose(g, tuple(range(nb)) + tuple(nb + int(k) for k in inverse))


defvjp(_transpose, _transpose_vjp)
deflinear(_transpose)


def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    return _transpose(a, None if axes is None else tuple(int(k) for k in axes))


def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    order = list(range(ndim_of(a)))
    order[axis1], order[axis2] = order[axis2], order[axis1]
    return transpose(a, order)


def moveaxis(a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    ndim = ndim_of(a)
    source = [s % ndim for s in ((source,) if _is_int(source) else source)]
    destination = [d % ndim for d in ((destination,) if _is_int(destination) else destination)]
    order = [k for k in range(ndim) if k not in source]
    for d, s in sorted(zip(destination, source)):
        order.insert(d, s)
    return transpose(a, order)


_FILLED_UP_TO = 1 << 16  # elements: 512 KiB of float64


def _broadcast_to_raw(x, shape):
    """``np.broadcast_to``, but results up to ``_FILLED_UP_TO`` elements are filled directly: several
    times faster to make, and elementwise ops on a contiguous array run about twice as fast as on a
    zero-stride view."""
    if math.prod(shape) > _FILLED_UP_TO:
        return _np.broadcast_to(x, shape)
    out = _np.empty(shape, _np.result_type(x))
    out[...] = x
    return out


_broadcast_to = primitive(_broadcast_to_raw, "broadcast_to")
defvjp(_broadcast_to, lambda g, ans, x, shape: unbroadcast(g, x.shape, g.ndim - ans.ndim))
deflinear(_broadcast_to)


def broadcast_to(array: ArrayLike, shape: Shape) -> Array:
    array, shape = as_array(array), (shape,) if _is_int(shape) else tuple(shape)
    if shape_of(array) == shape:
        return array
    return _broadcast_to(array, shape)


def _concatenate_raw(*arrays, axis):
    return _np.concatenate(arrays, axis=axis)


_concatenate = primitive(_concatenate_raw, "concatenate", variadic=True)


def _concatenate_vjp(g, ans, *arrays, argnum, axis):
    start = builtins.sum(a.shape[axis] for a in arrays[:argnum])
    stop = start + arrays[argnum].shape[axis]
    axis = axis % ans.ndim - ans.ndim
    return g[(Ellipsis, slice(start, stop)) + (slice(None),) * (-axis - 1)]


def _concatenate_jvp(t, ans, *arrays, argnum, axis):
    parts = [t if k == argnum else _np.zeros(a.shape, ans.dtype) for k, a in enumerate(arrays)]
    return _concatenate(*parts, axis=axis)


defvjp(_concatenate, _concatenate_vjp)
defjvp(_concatenate, _concatenate_jvp)


def concatenate(arrays: Sequence[ArrayLike], axis: int | None = 0, out: None = None, dtype: DTypeLike | None = None,
                casting: str = "same_kind", **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("concatenate", kwargs)
    arrays = _cast_all(arrays, dtype, casting)
    if axis is None:
        return _concatenate(*[ravel(a) for a in arrays], axis=0)
    return _concatenate(*arrays, axis=axis)


def _cast_all(arrays, dtype, casting):
    """The arrays cast to ``dtype`` as NumPy's joining functions cast them (refusing a cast that
    ``casting`` does not allow, in NumPy's words); unchanged without a dtype."""
    arrays = list(arrays)
    if dtype is None:
        return arrays
    for a in arrays:
        if not _np.can_cast(_np.result_type(value_of(a)), dtype, casting):
            raise TypeError(f"Cannot cast array data from {_np.result_type(value_of(a))!r} to "
                            f"{_np.dtype(dtype)!r} according to the rule {casting!r}")
    return [astype(a, dtype) for a in arrays]


def stack(arrays: Sequence[ArrayLike], axis: int = 0, out: None = None, dtype: DTypeLike | None = None,
          casting: str = "same_kind", **kwargs: Any) -> Array:
    reject_out(out)
    reject_keywords("stack", kwargs)
    arrays = _cast_all(arrays, dtype, casting)
    ndim = ndim_of(arrays[0]) + 1
    return concatenate([expand_dims(a, axis % ndim) for a in arrays], axis=axis % ndim)


def hstack(tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind") -> Array:
    arrays = [atleast_1d(a) for a in _cast_all(tup, dtype, casting)]
    return concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1)


def vstack(tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind") -> Array:
    return concatenate([atleast_2d(a) for a in _cast_all(tup, dtype, casting)], axis=0)


def dstack(tup: Sequence[ArrayLike]) -> Array:
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def split(ary: ArrayLike, indices_or_sections: int | ArrayLike, axis: int = 0) -> list[Array]:
    """Pieces of ``ary`` as slices (each differentiable)."""
    ary = as_array(ary)
    n = shape_of(ary)[axis]
    pieces = _np.array_split(_np.arange(n), indices_or_sections) if _is_int(indices_or_sections) \
        else _np.split(_np.arange(n), indices_or_sections)
    if _is_int(indices_or_sections) and n % int(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    lead = (slice(None),) * (axis % ndim_of(ary))
    return [ary[lead + (slice(int(p[0]) if p.size else n, int(p[-1]) + 1 if p.size else n),)]
            for p in pieces]


def array_split(ary: ArrayLike, indices_or_sections: int | ArrayLike, axis: int = 0) -> list[Array]:
    ary = as_array(ary)
    n = shape_of(ary)[axis]
    lead = (slice(None),) * (axis % ndim_of(ary))
    return [ary[lead + (slice(int(p[0]), int(p[-1]) + 1) if p.size else slice(0, 0),)]
            for p in _np.array_split(_np.arange(n), indices_or_sections)]


def tile(A: ArrayLike, reps: int | Sequence[int]) -> Array:
    """``np.tile`` as a broadcast and a reshape."""
    reps = (reps,) if _is_int(reps) else tuple(reps)
    shape = shape_of(A)
    ndim = builtins.max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    interleaved = reshape(A, tuple(d for s in shape for d in (1, s)))
    spread = broadcast_to(interleaved, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return reshape(spread, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a: ArrayLike, repeats: int | ArrayLike, axis: int | None = None) -> Array:
    """``np.repeat`` as a gather."""
    if axis is None:
        a, axis = ravel(a), 0
    n = shape_of(a)[axis]
    return take(a, _np.repeat(_np.arange(n), repeats), axis=axis)


_pad = primitive(lambda x, widths, value: _np.pad(x, widths, constant_values=value), "pad")
defvjp(_pad, lambda g, ans, x, widths, value:
       g[(Ellipsis,) + tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))])
defjvp(_pad, lambda t, ans, x, widths, value: _pad(t, widths, 0))


def pad(array: ArrayLike, pad_width: int | ArrayLike, mode: str = "constant", constant_values: ArrayLike = 0,
        **kwargs: Any) -> Array:
    if mode != "constant":
        raise NotImplementedError(f"autodiff: pad supports mode='constant' only, not {mode!r}")
    reject_keywords("pad", kwargs)
    ndim = ndim_of(array)
    widths = tuple(map(tuple, _np.broadcast_to(_np.asarray(pad_width, dtype=int), (ndim, 2)).tolist()))
    return _pad(array, widths, constant_values)


# --- indexing ----------------------------------------------------------------------------------

def _normalize_index(index):
    """An index as a tuple of raw pieces, boolean masks replaced by their integer positions."""
    index = index if isinstance(index, tuple) else (index,)
    pieces = []
    for piece in index:
        piece = concrete(piece)
        if isinstance(piece, list):
            piece = _np.asarray(piece)
        if isinstance(piece, _np.ndarray) and piece.dtype == bool:
            pieces.extend(piece.nonzero())
        else:
            pieces.append(piece)
    return tuple(pieces)


def _advanced_ndim(index) -> int:
    """Axes the advanced (array) pieces of an index contribute."""
    arrays = [_np.shape(p) for p in index if isinstance(p, _np.ndarray)]
    return len(_np.broadcast_shapes(*arrays)) if arrays else 0


def _separated_advanced(index) -> bool:
    """NumPy moves advanced-index axes to the front when slices separate the array pieces."""
    positions = [k for k, p in enumerate(index) if isinstance(p, (_np.ndarray, int, _np.integer))]
    return builtins.any(isinstance(p, _np.ndarray) for p in index) and \
        positions[-1] - positions[0] + 1 != len(positions)


def _gather_raw(x, index, nb):
    result = x[(slice(None),) * nb + index]
    if nb and _separated_advanced(index):
        a = _advanced_ndim(index)
        result = _np.moveaxis(result, tuple(range(a)), tuple(range(nb, nb + a)))
    return result


def _scatter_raw(g, index, shape, nb):
    out = _np.zeros(g.shape[:nb] + tuple(shape), g.dtype)
    full = (slice(None),) * nb + index
    if nb and _separated_advanced(index):
        a = _advanced_ndim(index)
        g = _np.moveaxis(g, tuple(range(nb, nb + a)), tuple(range(a)))
    if builtins.any(isinstance(p, _np.ndarray) for p in index):
        _np.add.at(out, full, g)
    else:
        out[full] = g
    return out


_gather = primitive(_gather_raw, "getitem")
_scatter = primitive(_scatter_raw, "scatter_add")


def _gather_vjp(g, ans, x, index, nb):
    if type(g) is _np.ndarray and not nb and g.ndim == ans.ndim and _is_basic(index):
        return SlicedCotangent(x.shape, [(index, g)])  # raw and unbatched: see SlicedCotangent
    return _scatter(g, index, x.shape[nb:], g.ndim - ans.ndim + nb)


def _is_basic(index) -> bool:
    for piece in index:
        if type(piece) not in _BASIC:
            return False
    return True


defvjp(_gather, _gather_vjp)
deflinear(_gather)
defvjp(_scatter, lambda g, ans, x, index, shape, nb: _gather(g, index, g.ndim - ans.ndim + nb))
deflinear(_scatter)


def getitem(x: ArrayLike, index: Index) -> Array:
    """``x[index]``: basic and advanced indexing, repeated indices accumulate in the gradient."""
    return apply(_gather, (x, (index,) if type(index) in _BASIC else _normalize_index(index), 0))


_BASIC = (slice, int)


def take(a: ArrayLike, indices: ArrayLike, axis: int | None = None, out: None = None, mode: str | None = None
         ) -> Array:
    reject_out(out)
    indices = _np.asarray(concrete(indices))
    if axis is None:
        return getitem(ravel(a), indices)
    return getitem(a, (slice(None),) * (axis % ndim_of(a)) + (indices,))


def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int | None) -> Array:
    """``np.take_along_axis`` as one advanced index: open ranges on the other axes."""
    if axis is None:
        return take(arr, indices)
    shape = shape_of(arr)
    axis = axis % len(shape)
    index = tuple(concrete(indices) if k == axis else
                  _np.arange(n).reshape([n if j == k else 1 for j in range(len(shape))])
                  for k, n in enumerate(shape))
    return getitem(arr, index)


def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order: None = None,
         stable: bool | None = None) -> Array:
    """Sorted values; each one's gradient flows back to where it came from."""
    if order is not None:
        raise TypeError("autodiff: sort with order= (structured arrays) is not supported")
    kind = "stable" if stable else kind
    if axis is None:
        a, axis = ravel(a), -1
    return take_along_axis(a, _np.argsort(concrete(a), axis=axis, kind=kind), axis)


def partition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1, kind: str = "introselect",
              order: None = None) -> Array:
    """NumPy's partition (the kth values in their sorted places); each value's gradient flows back
    to where it came from."""
    if order is not None:
        raise TypeError("autodiff: partition with order= (structured arrays) is not supported")
    if axis is None:
        a, axis = ravel(a), -1
    return take_along_axis(a, _np.argpartition(concrete(a), kth, axis=axis, kind=kind), axis)


# --- diagonals and triangles -------------------------------------------------------------------

def _embed_diagonal_raw(g, shape, offset, axis1, axis2):
    """Zeros of ``batch + shape`` with ``g`` on the given diagonal (inverse of np.diagonal)."""
    out = _np.zeros(g.shape[:g.ndim - (len(shape) - 1)] + tuple(shape), g.dtype)
    view = _np.moveaxis(out, (axis1, axis2), (-2, -1))
    k = _np.arange(g.shape[-1])
    view[..., k + builtins.max(-offset, 0), k + builtins.max(offset, 0)] = g
    return out


_diagonal = primitive(lambda x, offset, axis1, axis2: _np.diagonal(x, offset, axis1, axis2), "diagonal")
_embed_diagonal = primitive(_embed_diagonal_raw, "embed_diagonal")
defvjp(_diagonal, lambda g, ans, x, offset, axis1, axis2:
       _embed_diagonal(g, x.shape, offset, axis1 % x.ndim - x.ndim, axis2 % x.ndim - x.ndim))
deflinear(_diagonal)
defvjp(_embed_diagonal, lambda g, ans, x, shape, offset, axis1, axis2: _diagonal(g, offset, axis1, axis2))
deflinear(_embed_diagonal)


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    return _diagonal(a, offset, axis1, axis2)


def diag(v: ArrayLike, k: int = 0) -> Array:
    """The k-th diagonal of a matrix, or a matrix with ``v`` on its k-th diagonal."""
    v = as_array(v)
    if ndim_of(v) == 2:
        return diagonal(v, k)
    n = shape_of(v)[0] + builtins.abs(k)
    return _embed_diagonal(v, (n, n), k, -2, -1)


def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeLike | None = None,
          out: None = None) -> Array:
    reject_out(out)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


_triu = primitive(lambda x, k: _np.triu(x, k), "triu")
_tril = primitive(lambda x, k: _np.tril(x, k), "tril")
defvjp(_triu, lambda g, ans, x, k: _triu(g, k))
defvjp(_tril, lambda g, ans, x, k: _tril(g, k))
deflinear(_triu)
deflinear(_tril)


def triu(m: ArrayLike, k: int = 0) -> Array:
    return _triu(m, k)


def tril(m: ArrayLike, k: int = 0) -> Array:
    return _tril(m, k)


# --- products ----------------------------------------------------------------------------------

def _matmul_vjp_a(g, ans, a, b):
    if b.ndim == 1:
        grad = reshape(g, g.shape + (1,)) * b
    elif a.ndim == 1 and b.ndim > 2:  # (..., n) cotangents times a stack b (..., k, n)
        grad = _drop_axis(matmul(reshape(g, g.shape[:-1] + (1, g.shape[-1])), swapaxes(b, -1, -2)), -2)
    else:
        grad = _matmul_folded(g, swapaxes(b, -1, -2))
    return unbroadcast(grad, a.shape, g.ndim - ans.ndim)


def _matmul_vjp_b(g, ans, a, b):
    if a.ndim == 1:
        grad = reshape(a, (-1, 1)) * reshape(g, g.shape[:-1] + (1, g.shape[-1])) if b.ndim > 1 \
            else reshape(g, g.shape + (1,)) * a
    elif b.ndim == 1 and a.ndim > 2:  # (..., m) cotangents times a stack a (..., m, k)
        grad = _drop_axis(matmul(reshape(g, g.shape[:-1] + (1, g.shape[-1])), a), -2)
    elif b.ndim == 1:
        grad = _matmul_folded(g, a)
    elif a.ndim == 2 and g.ndim > 2:  # a stack of cotangents against one matrix: one GEMM
        grad = swapaxes(_matmul_folded(swapaxes(g, -1, -2), a), -1, -2)
    else:
        grad = matmul(swapaxes(a, -1, -2), g)
    return unbroadcast(grad, b.shape, g.ndim - ans.ndim)


def _matmul_folded(x, m):
    """x @ m; with a single matrix m, x's leading axes are folded into rows: one large GEMM
    instead of NumPy's loop of small ones over a stack (batched cotangents make such stacks)."""
    if m.ndim != 2 or x.ndim <= 2:
        return matmul(x, m)
    return reshape(matmul(reshape(x, (-1, x.shape[-1])), m), x.shape[:-1] + (m.shape[-1],))


def _drop_axis(x, axis):
    """Remove a length-1 axis (by reshape, so it stays differentiable)."""
    shape = list(x.shape)
    del shape[axis]
    return reshape(x, tuple(shape))


matmul = primitive(_np.matmul)
defvjp(matmul, _matmul_vjp_a, _matmul_vjp_b)
defjvp(matmul, lambda t, ans, a, b: matmul(t, b), lambda t, ans, a, b: matmul(a, t))


def dot(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    reject_out(out)
    a, b = as_array(a), as_array(b)
    a_ndim, b_ndim = ndim_of(a), ndim_of(b)
    if a_ndim == 0 or b_ndim == 0:
        return multiply(a, b)
    if b_ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([-1], [-2]))


def vdot(a: ArrayLike, b: ArrayLike) -> Array:
    """sum(conj(a) * b) over the flattened arrays (NumPy conjugates a complex first argument)."""
    return sum((conj(ravel(a)) if _is_complex(a) else ravel(a)) * ravel(b))


def inner(a: ArrayLike, b: ArrayLike) -> Array:
    a, b = as_array(a), as_array(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return multiply(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    reject_out(out)
    return reshape(a, (-1, 1)) * reshape(b, (1, -1))


def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence[int] | Sequence[Sequence[int]] = 2) -> Array:
    """``np.tensordot`` written as an einsum."""
    a_ndim, b_ndim = ndim_of(a), ndim_of(b)
    if _is_int(axes):
        axes_a, axes_b = list(range(a_ndim - axes, a_ndim)), list(range(axes))
    else:
        axes_a, axes_b = ([k] if _is_int(k) else list(k) for k in axes)
    axes_a = [k % a_ndim for k in axes_a]
    axes_b = [k % b_ndim for k in axes_b]
    letters = iter(string.ascii_letters)
    sub_a = [next(letters) for _ in range(a_ndim)]
    sub_b = [next(letters) for _ in range(b_ndim)]
    for ka, kb in zip(axes_a, axes_b):
        sub_b[kb] = sub_a[ka]
    out = [c for k, c in enumerate(sub_a) if k not in axes_a] + \
          [c for k, c in enumerate(sub_b) if k not in axes_b]
    return einsum(f"{''.join(sub_a)},{''.join(sub_b)}->{''.join(out)}", a, b)


def _explicit_subscripts(subscripts: str, shapes) -> tuple[list[str], str]:
    """Einsum subscripts with the ellipsis spelled out in letters and the output made explicit."""
    spec = subscripts.replace(" ", "")
    inputs, output = spec.split("->") if "->" in spec else (spec, None)
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} subscripts for {len(shapes)} operands")
    free = iter(c for c in string.ascii_letters if c not in spec)
    n_ellipsis = builtins.max([len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
                               if "..." in t], default=0)
    ellipsis = "".join(next(free) for _ in range(n_ellipsis))
    terms = [t.replace("...", ellipsis[n_ellipsis - (len(s) - len(t) + 3):]) if "..." in t else t
             for t, s in zip(terms, shapes)]
    if output is None:
        joined = "".join(t for t in terms)
        output = ellipsis + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ellipsis))
    else:
        output = output.replace("...", ellipsis)
    return terms, output


def _sublist_subscripts(arguments) -> tuple[str, tuple]:
    """NumPy's sublist form (operand, axis labels, operand, labels, ..., [output labels]) as a
    subscript string and the operands: labels are integers (letters by number) or Ellipsis."""
    def letters(labels):
        return "".join("..." if k is Ellipsis else string.ascii_letters[int(k)] for k in labels)
    has_output = len(arguments) % 2 == 1
    operands = arguments[0:-1:2] if has_output else arguments[0::2]
    terms = [letters(labels) for labels in arguments[1::2]]
    return ",".join(terms) + ("->" + letters(arguments[-1]) if has_output else ""), tuple(operands)


def _einsum_raw(*operands, subscripts):
    return _np.einsum(subscripts, *operands, optimize=len(operands) > 2)


_einsum = primitive(_einsum_raw, "einsum", variadic=True)


def _einsum_vjp(g, ans, *operands, argnum, subscripts):
    terms, output = _explicit_subscripts(subscripts, [o.shape for o in operands])
    term = terms[argnum]
    nb = g.ndim - ans.ndim
    batch = "".join(c for c in string.ascii_letters if c not in subscripts and c not in "".join(terms) + output)[:nb]
    others = [t for k, t in enumerate(terms) if k != argnum]
    reachable = set(output).union(*others)
    kept = "".join(c for c in term if c in reachable)
    spec = ",".join([batch + output] + others) + "->" + batch + kept
    grad = _einsum(g, *[o for k, o in enumerate(operands) if k != argnum], subscripts=spec)
    shape = operands[argnum].shape
    grad = unbroadcast(grad, tuple(d for c, d in zip(term, shape) if c in kept), nb)  # size-1 axes
    if kept != term:
        grad = broadcast_to(reshape(grad, grad.shape[:nb] + tuple(d if c in kept else 1 for c, d in zip(term, shape))),
                            grad.shape[:nb] + shape)
    return grad


def _einsum_jvp(t, ans, *operands, argnum, subscripts):
    return _einsum(*[t if k == argnum else o for k, o in enumerate(operands)], subscripts=subscripts)


defvjp(_einsum, _einsum_vjp)
defjvp(_einsum, _einsum_jvp)


def einsum(subscripts: str | ArrayLike, *operands: ArrayLike, out: None = None, optimize: bool | str | list = False,
           **kwargs: Any) -> Array:
    """Einstein summation (string subscripts or NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2])``;
    the ellipsis and repeated indices are supported)."""
    reject_out(out)
    reject_keywords("einsum", kwargs)
    if not isinstance(subscripts, str):
        subscripts, operands = _sublist_subscripts((subscripts,) + operands)
    terms, output = _explicit_subscripts(subscripts, [shape_of(o) for o in operands])
    operands = list(operands)
    for k, term in enumerate(terms):
        while len(set(term)) < len(term):  # a repeated index is a diagonal: take it with diagonal()
            c = next(c for c in term if term.count(c) > 1)
            first = term.index(c)
            second = term.index(c, first + 1)
            operands[k] = diagonal(operands[k], 0, first, second)
            term = term[:first] + term[first + 1:second] + term[second + 1:] + c
        terms[k] = term
    return _einsum(*operands, subscripts=",".join(terms) + "->" + output)


# --- types -------------------------------------------------------------------------------------

_astype = primitive(lambda x, dtype: _np.asarray(x).astype(dtype), "astype")
defvjp(_astype, lambda g, ans, x, dtype: astype(g if _is_complex(x) or not _is_complex(g) else real(g), x.dtype))
deflinear(_astype)


def astype(x: ArrayLike, dtype: DTypeLike, copy: bool = True, **kwargs: Any) -> Array:
    """Cast; float-to-float casts carry gradients, casts to integers or bools do not.

    ``copy`` is accepted and has no effect: Tensors are immutable, so a copy and a view are alike.
    """
    reject_keywords("astype", kwargs)
    if _np.dtype(dtype).kind not in "fc":
        return nondiff(lambda v: _np.asarray(v).astype(dtype))(x)
    return _astype(x, dtype)


def copy(a: ArrayLike, **kwargs: Any) -> Array:
    return a if isinstance(a, Tensor) else _np.copy(a)


sign = nondiff(_np.sign)  # its derivative is zero almost everywhere


# Primitives whose rules are verified for complex values (tests/autodiff/test_complex.py): the
# holomorphic ones (rules g * f'(z)), the linear ones (rules are transposes) and the complex parts.
# Every other primitive refuses complex operands while it is differentiated (core.refuse_complex).
for _prim in (negative, exp, log, log2, log10, log1p, expm1, sqrt, square, reciprocal, absolute, sin, cos,
              tan, arcsin, arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh, add, subtract,
              multiply, divide, power, real, imag, conj, _angle, _where, _sum, _prod, _cumsum, _flip,
              _reshape, _transpose, _broadcast_to, _concatenate, _gather, _scatter, _pad, _diagonal,
              _embed_diagonal, _triu, _tril, matmul, _einsum, _astype, max.primitive, min.primitive, alias):
    _prim.complex_ok = True
