"""Every differentiable op of ``autodiff.numpy``, checked four ways on hypothesis-drawn shapes.

Each case in ``CASES`` draws a ``Problem``: a function ``fn(xp, x)`` written once against a NumPy-like
namespace ``xp`` and an input ``x`` in the op's domain. With ``xp = autodiff.numpy`` and ``x`` a Tensor it
runs the engine; with ``xp = NP`` (NumPy plus scipy.special) and ``x`` an ndarray it is the reference.
Ops with several arguments take one flat vector and split it (``packed``), so every argument is
differentiated. For every case:

* the value equals NumPy's;
* first and second derivatives match central finite differences (``ad.check_grad(order=2)``);
* one batched reverse sweep (``tape.jacobian``) equals the stack of single sweeps, at first order, at
  second order (sweeps over a recorded gradient), and while an outer tape records the batched sweep;
* forward mode: the JVP equals ``J @ t``, and forward-over-reverse gives ``H @ t``.
"""
from __future__ import annotations

import math
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autodiff as ad
import autodiff.numpy as anp
from autodiff.check import central_differences

NP = types.SimpleNamespace(**{name: getattr(np, name) for name in dir(np) if not name.startswith("_")})
NP.sigmoid = NP.expit = scipy.special.expit
NP.softplus = lambda x: np.logaddexp(0.0, x)
NP.logsumexp = lambda x, axis=None, keepdims=False: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))
NP.softmax = scipy.special.softmax
NP.log_softmax = scipy.special.log_softmax
# scipy computes polygamma and multigammaln in float64 whatever the input; autodiff keeps float32, as
# NumPy's ufuncs and scipy's other special functions do.
NP.special = types.SimpleNamespace(**{name: getattr(scipy.special, name) for name in anp.special.__all__})
NP.special.polygamma = lambda n, x: scipy.special.polygamma(n, x).astype(np.result_type(x, np.float16))
NP.special.multigammaln = lambda a, d: scipy.special.multigammaln(a, d).astype(np.result_type(a, np.float16))


def _in_the_inputs_precision(function):
    """scipy.stats computes in float64 whatever the input; autodiff keeps float32, as NumPy does."""
    def in_precision(*args, **kwargs):
        floats = [a for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        return np.asarray(function(*args, **kwargs)).astype(np.result_type(*floats, np.float16))
    return in_precision


NP.scipy_linalg = types.SimpleNamespace(**{name: getattr(scipy.linalg, name) for name in anp.scipy_linalg.__all__})
# scipy computes these two in float64 whatever the input; autodiff keeps float32, as NumPy does.
NP.scipy_linalg.expm_frechet = lambda a, e: tuple(
    np.asarray(part).astype(np.result_type(a, e)) for part in scipy.linalg.expm_frechet(a, e))
NP.scipy_linalg.det = lambda a: np.asarray(scipy.linalg.det(a)).astype(a.dtype)
NP.scipy_signal = types.SimpleNamespace(**{name: getattr(scipy.signal, name) for name in anp.scipy_signal.__all__})
NP.stats = types.SimpleNamespace(**{name: types.SimpleNamespace(**{
    method: _in_the_inputs_precision(getattr(getattr(scipy.stats, name), method))
    for method in vars(getattr(anp.stats, name)) if method != "name"}) for name in anp.stats.__all__})

FEW = settings(max_examples=12, deadline=None)
FEWER = settings(max_examples=5, deadline=None)


# --- problems ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """``fn(xp, x)`` at the point ``x``; ``what`` says which variant was drawn (for failure reports)."""

    fn: Callable
    x: np.ndarray
    what: str

    def __repr__(self):
        return f"Problem({self.what}, x.shape={self.x.shape})"

    def engine(self, x):
        return self.fn(anp, x)


def unpack(xp, x, shapes):
    """Split the flat vector ``x`` into arrays of ``shapes``."""
    parts, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(xp.reshape(x[start:start + size], shape))
        start += size
    return parts


def packed(fn, arrays, what):
    """A problem in all of ``arrays`` at once: ``fn(xp, *arrays)`` of one flat vector."""
    shapes = [np.shape(a) for a in arrays]
    x = np.concatenate([np.ravel(a) for a in arrays])
    return Problem(lambda xp, flat: fn(xp, *unpack(xp, flat, shapes)), x, what)


# --- inputs --------------------------------------------------------------------------------------

RNGS = st.integers(0, 2**32 - 1).map(np.random.default_rng)


def small(shapes, limit=12):
    return shapes.filter(lambda s: math.prod(s) <= limit)


SHAPES = small(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
NONSCALAR = small(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
SEVERAL = SHAPES.filter(lambda s: math.prod(s) >= 2)
PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3).filter(
    lambda b: sum(math.prod(s) for s in b.input_shapes) <= 16 and math.prod(b.result_shape) <= 16)
TRIPLES = hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=2, max_side=3).filter(
    lambda b: sum(math.prod(s) for s in b.input_shapes) <= 16)


def uniform(low, high):
    return lambda rng, shape: rng.uniform(low, high, shape)


def away_from_zero(rng, shape):
    """|x| in [0.3, 2]: safe for kinks and poles at zero."""
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def off_grid(rng, shape):
    """Odd multiples of 1/8 (jittered): at least 0.08 from every multiple of 1/4, e.g. clip bounds."""
    return 0.25 * rng.integers(-6, 6, shape) + 0.125 + rng.uniform(-0.04, 0.04, shape)


def on_grid(rng, shape):
    """Multiples of 1/4 (jittered): at least 0.04 from every ``off_grid`` value, so no ties."""
    return 0.25 * rng.integers(-6, 6, shape) + rng.uniform(-0.04, 0.04, shape)


def distinct(rng, shape):
    """Values at least 0.2 apart: max, min and sort have no ties."""
    size = math.prod(shape)
    return (0.3 * rng.permutation(size) - 0.15 * size + rng.uniform(0, 0.1, size)).reshape(shape)


def distinct_magnitudes(rng, shape):
    """|x| at least 0.3 and at least 0.2 apart, random signs: the inf-norms have no ties."""
    size = math.prod(shape)
    magnitudes = 0.3 + 0.3 * rng.permutation(size) + rng.uniform(0, 0.1, size)
    return (rng.choice([-1.0, 1.0], size) * magnitudes).reshape(shape)


def well_conditioned(rng, shape):
    """Square matrices (batched) 3I + E with |E| <= 0.5, rows randomly negated: det of either sign."""
    n = shape[-1]
    signs = rng.choice([-1.0, 1.0], shape[:-1] + (1,))
    return signs * (3.0 * np.eye(n) + rng.uniform(-0.5, 0.5, shape))


@st.composite
def drawn(draw, fn, sample, shapes=SHAPES, what=""):
    """One array argument of a drawn shape, values from ``sample``."""
    shape = draw(shapes)
    return Problem(fn, sample(draw(RNGS), shape), what or f"shape {shape}")


@st.composite
def drawn_pair(draw, fn, sample_a, sample_b, what=""):
    """Two broadcastable arguments."""
    shape_a, shape_b = draw(PAIRS).input_shapes
    rng = draw(RNGS)
    return packed(fn, [sample_a(rng, shape_a), sample_b(rng, shape_b)], what or f"{shape_a}, {shape_b}")


# --- the case table ------------------------------------------------------------------------------

CASES: dict[str, st.SearchStrategy] = {}


def case(name, strategy):
    assert name not in CASES, name
    CASES[name] = strategy


# Elementwise, one argument: the name of the function in both namespaces, and its domain.
UNARY_DOMAINS = {
    "negative": uniform(-2, 2), "abs": away_from_zero, "absolute": away_from_zero,
    "exp": uniform(-2, 2), "log": uniform(0.5, 3), "log2": uniform(0.5, 3), "log10": uniform(0.5, 3),
    "log1p": uniform(-0.5, 2), "expm1": uniform(-2, 2), "sqrt": uniform(0.5, 3),
    "cbrt": away_from_zero, "square": uniform(-2, 2), "reciprocal": away_from_zero,
    "sin": uniform(-3, 3), "cos": uniform(-3, 3), "tan": uniform(-1.2, 1.2),
    "arcsin": uniform(-0.8, 0.8), "arccos": uniform(-0.8, 0.8), "arctan": uniform(-2, 2),
    "sinh": uniform(-2, 2), "cosh": uniform(-2, 2), "tanh": uniform(-2, 2),
    "arcsinh": uniform(-2, 2), "arccosh": uniform(1.3, 3), "arctanh": uniform(-0.8, 0.8),
    "sigmoid": uniform(-4, 4), "expit": uniform(-4, 4), "softplus": uniform(-4, 4),
}
for _name, _domain in UNARY_DOMAINS.items():
    case(_name, drawn(lambda xp, x, name=_name: getattr(xp, name)(x), _domain))

case("-x", drawn(lambda xp, x: -x, uniform(-2, 2)))
case("abs(x)", drawn(lambda xp, x: abs(x), away_from_zero))
case("x ** 3", drawn(lambda xp, x: x ** 3, uniform(-2, 2)))
case("x ** 2 (negative base)", drawn(lambda xp, x: x ** 2, uniform(-2, -0.5)))
case("x ** -1.5", drawn(lambda xp, x: x ** -1.5, uniform(0.5, 2)))
case("2 ** x", drawn(lambda xp, x: 2.0 ** x, uniform(-2, 2)))
case("x ** x", drawn(lambda xp, x: x ** x, uniform(0.5, 2)))
case("x % 0.7", drawn(lambda xp, x: x % 0.7,
                      lambda rng, shape: 0.7 * rng.integers(-2, 3, shape) + rng.uniform(0.1, 0.6, shape),
                      what="x at least 0.1 from the jumps at multiples of 0.7"))

# Elementwise, two arguments, with broadcasting.
BINARY_DOMAINS = {
    "add": (uniform(-2, 2), uniform(-2, 2)), "subtract": (uniform(-2, 2), uniform(-2, 2)),
    "multiply": (uniform(-2, 2), uniform(-2, 2)), "divide": (uniform(-2, 2), away_from_zero),
    "power": (uniform(0.5, 2), uniform(-2, 2)), "arctan2": (uniform(-2, 2), away_from_zero),
    "logaddexp": (uniform(-3, 3), uniform(-3, 3)), "maximum": (off_grid, on_grid),
    "minimum": (off_grid, on_grid), "mod": (uniform(2.1, 2.5), uniform(1.3, 1.9)),  # 1 < a/b < 2
}
for _name, (_domain_a, _domain_b) in BINARY_DOMAINS.items():
    case(_name, drawn_pair(lambda xp, a, b, name=_name: getattr(xp, name)(a, b), _domain_a, _domain_b))

case("a + b", drawn_pair(lambda xp, a, b: a + b, uniform(-2, 2), uniform(-2, 2)))
case("a - b", drawn_pair(lambda xp, a, b: a - b, uniform(-2, 2), uniform(-2, 2)))
case("a * b", drawn_pair(lambda xp, a, b: a * b, uniform(-2, 2), uniform(-2, 2)))
case("a / b", drawn_pair(lambda xp, a, b: a / b, uniform(-2, 2), away_from_zero))
case("a ** b", drawn_pair(lambda xp, a, b: a ** b, uniform(0.5, 2), uniform(-2, 2)))


@st.composite
def where_problem(draw):
    shapes = draw(TRIPLES).input_shapes
    rng = draw(RNGS)
    condition = rng.random(shapes[0]) < 0.5
    return packed(lambda xp, a, b: xp.where(condition, a, b),
                  [rng.uniform(-2, 2, shapes[1]), rng.uniform(-2, 2, shapes[2])],
                  f"condition {shapes[0]}, x {shapes[1]}, y {shapes[2]}")


case("where", where_problem())
case("where(x > 0, x, 0) (relu)", drawn(lambda xp, x: xp.where(x > 0, x, 0.0), away_from_zero))
case("clip", drawn(lambda xp, x: xp.clip(x, -0.5, 0.5), off_grid))
case("clip (lower bound only)", drawn(lambda xp, x: xp.clip(x, -0.5, None), off_grid))
case("clip (upper bound only)", drawn(lambda xp, x: xp.clip(x, None, 0.5), off_grid))
case("clip (Tensor bounds, broadcast)", drawn_pair(
    lambda xp, x, bound: xp.clip(x, -bound, bound), off_grid,
    lambda rng, shape: 0.25 * rng.integers(1, 5, shape) + rng.uniform(-0.04, 0.04, shape)))
case("clip (broadcast array bounds)", drawn(
    lambda xp, x: xp.clip(x, np.full((2,) + x.shape, -0.5), np.array(0.5)), off_grid))


# Reductions over drawn axes.
@st.composite
def axes(draw, ndim, single=False):
    """None, one axis (maybe negative) or a tuple of axes (maybe empty)."""
    one = st.integers(-ndim, ndim - 1) if ndim else st.nothing()
    if single:
        return draw(one)
    return draw(st.one_of(st.none(), one, hnp.valid_tuple_axes(ndim)))


def reduced_count(shape, axis):
    if axis is None:
        return math.prod(shape)
    axis = (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[k] for k in axis)


@st.composite
def reduction(draw, name, sample, shapes=SHAPES, single_axis=False, min_count=1, **extra):
    shape = draw(shapes)
    axis = draw(axes(len(shape), single_axis))
    if single_axis:
        kwargs = {"axis": axis}
    else:
        kwargs = {"axis": axis, "keepdims": draw(st.booleans())}
    kwargs.update({key: draw(value) for key, value in extra.items()})
    x = sample(draw(RNGS), shape)
    if reduced_count(shape, axis) < min_count:
        kwargs["axis"] = None
    return Problem(lambda xp, x: getattr(xp, name)(x, **kwargs), x, f"{name}({shape}, {kwargs})")


def with_zeros(rng, shape):
    """Nonzero values except for up to two zeros (sometimes more): prod's Hessian must be exact there."""
    x = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 1.5, shape)
    zeros = rng.choice(math.prod(shape), size=rng.integers(0, math.prod(shape) + 1), replace=False)
    x.reshape(-1)[zeros[:2] if rng.random() < 0.8 else zeros] = 0.0
    return x


case("sum", reduction("sum", uniform(-2, 2)))
case("mean", reduction("mean", uniform(-2, 2)))
case("prod", reduction("prod", with_zeros))
case("max", reduction("max", distinct))
case("min", reduction("min", distinct))
case("amax", reduction("amax", distinct))
case("var", reduction("var", uniform(-2, 2), SEVERAL, min_count=2, ddof=st.sampled_from([0, 1])))
case("std", reduction("std", distinct, SEVERAL, min_count=2, ddof=st.sampled_from([0, 1])))
case("logsumexp", reduction("logsumexp", uniform(-3, 3)))
case("cumsum", reduction("cumsum", uniform(-2, 2), shapes=NONSCALAR, single_axis=True))
case("cumsum (flattened)", drawn(lambda xp, x: xp.cumsum(x), uniform(-2, 2)))
case("softmax", reduction("softmax", uniform(-3, 3), shapes=NONSCALAR, single_axis=True))
case("log_softmax", reduction("log_softmax", uniform(-3, 3), shapes=NONSCALAR, single_axis=True))
case("sort", reduction("sort", distinct, shapes=NONSCALAR, single_axis=True))


@st.composite
def masked_reduction(draw, name, sample):
    """sum / prod with a where= mask that broadcasts to x, and initial=."""
    shape = draw(NONSCALAR)
    mask_shape = draw(hnp.broadcastable_shapes(shape, max_dims=len(shape))
                      .filter(lambda s: np.broadcast_shapes(s, shape) == shape))
    rng = draw(RNGS)
    mask = rng.random(mask_shape) < 0.6
    kwargs = {"axis": draw(axes(len(shape))), "where": mask, "initial": draw(st.sampled_from([0.0, 1.5]))}
    return Problem(lambda xp, x: getattr(xp, name)(x, **kwargs), sample(rng, shape),
                   f"{name}({shape}, where of {mask_shape}, {kwargs['initial']})")


case("sum (where=, initial=)", masked_reduction("sum", uniform(-2, 2)))
case("prod (where=, initial=)", masked_reduction("prod", with_zeros))


case("x.sum(axis=-1)", drawn(lambda xp, x: x.sum(axis=-1), uniform(-2, 2), NONSCALAR))
case("x.mean()", drawn(lambda xp, x: x.mean(), uniform(-2, 2)))
case("x.max(axis=0)", drawn(lambda xp, x: x.max(axis=0), distinct, NONSCALAR))


# Products.
@st.composite
def dims(draw):
    """Matrix sizes m, k, n and two broadcastable batch shapes."""
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    batch_a, batch_b = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=1, max_dims=2, max_side=2)).input_shapes
    return m, k, n, batch_a, batch_b


MATMUL_LAYOUTS = {
    "vector @ vector": lambda m, k, n, ba, bb: ((k,), (k,)),
    "vector @ matrix": lambda m, k, n, ba, bb: ((k,), (k, n)),
    "matrix @ vector": lambda m, k, n, ba, bb: ((m, k), (k,)),
    "matrix @ matrix": lambda m, k, n, ba, bb: ((m, k), (k, n)),
    "batch @ matrix": lambda m, k, n, ba, bb: (ba + (m, k), (k, n)),
    "matrix @ batch": lambda m, k, n, ba, bb: ((m, k), bb + (k, n)),
    "batch @ batch (broadcast)": lambda m, k, n, ba, bb: (ba + (m, k), bb + (k, n)),
    "vector @ batch": lambda m, k, n, ba, bb: ((k,), bb + (k, n)),
    "batch @ vector": lambda m, k, n, ba, bb: (ba + (m, k), (k,)),
}


@st.composite
def product(draw, fn, layouts):
    """Two arguments whose shapes come from a drawn layout of drawn sizes."""
    layout = draw(st.sampled_from(sorted(layouts)))
    shapes = layouts[layout](*draw(dims()))
    rng = draw(RNGS)
    return packed(fn, [rng.uniform(-2, 2, s) for s in shapes], f"{layout}: {shapes}")


case("matmul", product(lambda xp, a, b: xp.matmul(a, b), MATMUL_LAYOUTS))
case("a @ b", product(lambda xp, a, b: a @ b, MATMUL_LAYOUTS))
DOT_LAYOUTS = {
    "scalar . matrix": lambda m, k, n, ba, bb: ((), (k, n)),
    "vector . vector": lambda m, k, n, ba, bb: ((k,), (k,)),
    "matrix . vector": lambda m, k, n, ba, bb: ((m, k), (k,)),
    "vector . matrix": lambda m, k, n, ba, bb: ((k,), (k, n)),
    "matrix . matrix": lambda m, k, n, ba, bb: ((m, k), (k, n)),
    "3-D . vector": lambda m, k, n, ba, bb: ((2, m, k), (k,)),
    "vector . 3-D": lambda m, k, n, ba, bb: ((k,), (2, k, n)),
    "3-D . 3-D": lambda m, k, n, ba, bb: ((2, m, k), (2, k, n)),
}
case("dot", product(lambda xp, a, b: xp.dot(a, b), DOT_LAYOUTS))
case("a.dot(b)", product(lambda xp, a, b: a.dot(b), {"matrix . matrix": DOT_LAYOUTS["matrix . matrix"]}))
case("inner", product(lambda xp, a, b: xp.inner(a, b), {
    "vector, vector": lambda m, k, n, ba, bb: ((k,), (k,)),
    "matrix, matrix": lambda m, k, n, ba, bb: ((m, k), (n, k)),
    "3-D, vector": lambda m, k, n, ba, bb: (ba + (m, k), (k,)),
    "scalar, matrix": lambda m, k, n, ba, bb: ((), (m, k)),
}))
case("outer", product(lambda xp, a, b: xp.outer(a, b), {
    "vector, vector": lambda m, k, n, ba, bb: ((m,), (n,)),
    "matrix, vector (flattened)": lambda m, k, n, ba, bb: ((m, k), (n,)),
}))
case("vdot", product(lambda xp, a, b: xp.vdot(a, b), {
    "matrix, matrix": lambda m, k, n, ba, bb: ((m, k), (m, k)),
}))

TENSORDOT_LAYOUTS = {  # shapes and the axes argument
    "axes=0": lambda m, k, n, ba, bb: ((m,), (n, k), 0),
    "axes=1": lambda m, k, n, ba, bb: ((m, k), (k, n), 1),
    "axes=2": lambda m, k, n, ba, bb: ((2, m, k), (m, k, n), 2),
    "axes=([1, 0], [0, 2])": lambda m, k, n, ba, bb: ((k, m, 2), (m, n, k), ([1, 0], [0, 2])),
    "axes=(-1, 0)": lambda m, k, n, ba, bb: ((m, 2, k), (k, n), (-1, 0)),
}


@st.composite
def tensordot_problem(draw):
    layout = draw(st.sampled_from(sorted(TENSORDOT_LAYOUTS)))
    shape_a, shape_b, contracted = TENSORDOT_LAYOUTS[layout](*draw(dims()))
    rng = draw(RNGS)
    return packed(lambda xp, a, b: xp.tensordot(a, b, axes=contracted),
                  [rng.uniform(-2, 2, shape_a), rng.uniform(-2, 2, shape_b)],
                  f"{layout}: {shape_a}, {shape_b}")


case("tensordot", tensordot_problem())

EINSUM_SPECS = {  # subscripts and operand shapes from sizes m, k, n and batch shapes
    "ij,jk->ik": lambda m, k, n, ba, bb: [(m, k), (k, n)],
    "ij,jk (implicit output)": lambda m, k, n, ba, bb: [(m, k), (k, n)],
    "ij,ij->": lambda m, k, n, ba, bb: [(m, k), (m, k)],
    "i,j->ij": lambda m, k, n, ba, bb: [(m,), (n,)],
    "ijk->kji": lambda m, k, n, ba, bb: [(m, k, n)],
    "ij->i": lambda m, k, n, ba, bb: [(m, k)],
    "ij,j->": lambda m, k, n, ba, bb: [(m, k), (k,)],
    "bij,bjk->bik": lambda m, k, n, ba, bb: [(2, m, k), (2, k, n)],
    "ij,jk,kl->il": lambda m, k, n, ba, bb: [(m, k), (k, n), (n, 2)],
    "...ij,...jk->...ik": lambda m, k, n, ba, bb: [ba + (m, k), bb + (k, n)],
    "...i,...i->...": lambda m, k, n, ba, bb: [ba + (k,), bb + (k,)],
    "i...,i->...": lambda m, k, n, ba, bb: [(k,) + ba, (k,)],
    "...ij,jk": lambda m, k, n, ba, bb: [ba + (m, k), (k, n)],
    "ii->i": lambda m, k, n, ba, bb: [(k, k)],
    "ii": lambda m, k, n, ba, bb: [(k, k)],
    "iij,jk->ik": lambda m, k, n, ba, bb: [(m, m, k), (k, n)],
    "i...j->j...i": lambda m, k, n, ba, bb: [(m,) + ba + (k,)],
}


@st.composite
def einsum_problem(draw):
    spec = draw(st.sampled_from(sorted(EINSUM_SPECS)))
    shapes = EINSUM_SPECS[spec](*draw(dims()))
    subscripts = spec.split(" ")[0]
    rng = draw(RNGS)
    return packed(lambda xp, *operands: xp.einsum(subscripts, *operands),
                  [rng.uniform(-2, 2, s) for s in shapes], f"{spec}: {shapes}")


case("einsum", einsum_problem())


# Shapes.
@st.composite
def shape_op(draw, make, shapes=SHAPES, sample=uniform(-2, 2)):
    """``make(draw, shape)`` returns (description, fn(xp, x)) for an input of the drawn shape."""
    shape = draw(shapes)
    what, fn = make(draw, shape)
    return Problem(fn, sample(draw(RNGS), shape), f"{what} of {shape}")


def _transpose(draw, shape):
    order = draw(st.none() | st.permutations(range(len(shape))).map(tuple))
    return f"transpose(axes={order})", lambda xp, x: xp.transpose(x, order)


def _moveaxis(draw, shape):
    ndim = len(shape)
    count = draw(st.integers(1, ndim))
    source = draw(st.permutations(range(-ndim, 0)).map(lambda p: p[:count]))
    destination = draw(st.permutations(range(ndim)).map(lambda p: p[:count]))
    return f"moveaxis({source}, {destination})", lambda xp, x: xp.moveaxis(x, source, destination)


def _swapaxes(draw, shape):
    a, b = draw(st.integers(-len(shape), len(shape) - 1)), draw(st.integers(0, len(shape) - 1))
    return f"swapaxes({a}, {b})", lambda xp, x: xp.swapaxes(x, a, b)


def _reshape(draw, shape):
    size = math.prod(shape)
    target = draw(st.sampled_from([(size,), (-1,), (1, size), (size, 1, -1), tuple(reversed(shape)),
                                   ((size // 2, 2) if size % 2 == 0 else (size,))]))
    return f"reshape({target})", lambda xp, x: xp.reshape(x, target)


def _reshape_fortran(draw, shape):
    size = math.prod(shape)
    target = draw(st.sampled_from([(size,), tuple(reversed(shape)), (1, size, 1)]))
    return f"reshape({target}, order='F')", lambda xp, x: xp.reshape(x, target, order="F")


def _squeeze(draw, shape):
    ones = tuple(k for k, d in enumerate(shape) if d == 1)
    axis = draw(st.none() | st.sampled_from(ones or (None,)) | st.just(ones))
    return f"squeeze(axis={axis})", lambda xp, x: xp.squeeze(x, axis)


def _expand_dims(draw, shape):
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return f"expand_dims({axis})", lambda xp, x: xp.expand_dims(x, axis)


def _broadcast_to(draw, shape):
    target = draw(hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=len(shape) + 1, max_side=3)
                  .map(lambda s: np.broadcast_shapes(s, shape)).filter(lambda s: math.prod(s) <= 24))
    return f"broadcast_to({target})", lambda xp, x: xp.broadcast_to(x, target)


def _tile(draw, shape):
    reps = draw(st.lists(st.integers(1, 2), min_size=1, max_size=3).map(tuple))
    return f"tile({reps})", lambda xp, x: xp.tile(x, reps)


def _repeat(draw, shape):
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    n = math.prod(shape) if axis is None else shape[axis]
    repeats = draw(st.integers(0, 2) | st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return f"repeat({repeats}, axis={axis})", lambda xp, x: xp.repeat(x, repeats, axis=axis)


def _pad(draw, shape):
    widths = draw(st.sampled_from([1, (0, 2), tuple((k % 2, 1) for k in range(len(shape)))]))
    value = draw(st.sampled_from([0.0, 1.5]))
    return f"pad({widths}, {value})", lambda xp, x: xp.pad(x, widths, constant_values=value)


def _flip(draw, shape):
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    return f"flip(axis={axis})", lambda xp, x: xp.flip(x, axis)


def _ravel(draw, shape):
    return "ravel", lambda xp, x: xp.ravel(x)


def _dot_t(draw, shape):
    return ".T", lambda xp, x: x.T


case("transpose", shape_op(_transpose))
case("x.T", shape_op(_dot_t))
case("moveaxis", shape_op(_moveaxis, NONSCALAR))
case("swapaxes", shape_op(_swapaxes, NONSCALAR))
case("reshape", shape_op(_reshape))
case("ravel", shape_op(_ravel))
case("reshape (order='F')", shape_op(_reshape_fortran))
case("squeeze", shape_op(_squeeze, small(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=2))))
case("expand_dims", shape_op(_expand_dims))
case("broadcast_to", shape_op(_broadcast_to))
case("tile", shape_op(_tile))
case("repeat", shape_op(_repeat, NONSCALAR))
case("pad", shape_op(_pad, NONSCALAR))
case("flip", shape_op(_flip, NONSCALAR))


@st.composite
def joined(draw, name):
    """concatenate / stack of 1 to 3 pieces along a drawn axis."""
    shape = draw(NONSCALAR if name == "concatenate" else SHAPES)
    count = draw(st.integers(1, 3))
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1) if name == "concatenate" else st.integers(-ndim - 1, ndim))
    shapes = [shape[:axis % ndim] + (draw(st.integers(1, 2)),) + shape[axis % ndim + 1:]
              if name == "concatenate" else shape for _ in range(count)]
    rng = draw(RNGS)
    return packed(lambda xp, *pieces: getattr(xp, name)(list(pieces), axis=axis),
                  [rng.uniform(-2, 2, s) for s in shapes], f"{name} of {shapes}, axis={axis}")


@st.composite
def split_problem(draw):
    shape = draw(NONSCALAR)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    sections = draw(st.sampled_from([d for d in (1, 2, 3) if n % d == 0]) |
                    st.lists(st.integers(0, n), max_size=3).map(sorted))
    x = draw(RNGS).uniform(-2, 2, shape)
    def pieces_weighted_by_position(xp, x):  # one output: the pieces' shapes differ
        return xp.concatenate([xp.ravel(p) * (k + 1) for k, p in enumerate(xp.split(x, sections, axis))])

    return Problem(pieces_weighted_by_position, x, f"split({shape}, {sections}, axis={axis})")


case("concatenate", joined("concatenate"))
case("concatenate (axis=None)", product(lambda xp, a, b: xp.concatenate([a, b], axis=None), {
    "matrix, vector": lambda m, k, n, ba, bb: ((m, k), (n,))}))
case("hstack", product(lambda xp, a, b: xp.hstack([a, b]), {
    "vectors": lambda m, k, n, ba, bb: ((m,), (n,)), "matrices": lambda m, k, n, ba, bb: ((m, k), (m, n))}))
case("vstack", product(lambda xp, a, b: xp.vstack([a, b]), {
    "vectors": lambda m, k, n, ba, bb: ((k,), (k,)), "matrices": lambda m, k, n, ba, bb: ((m, k), (n, k))}))
case("stack", joined("stack"))
case("split", split_problem())
case("array_split", shape_op(lambda draw, shape: (
    "array_split(3, axis=-1)",
    lambda xp, x: xp.concatenate([xp.ravel(p) * (k + 1) for k, p in enumerate(xp.array_split(x, 3, axis=-1))])),
    NONSCALAR))


@st.composite
def diagonal_problem(draw, name):
    if name == "diag":
        shape = draw(st.sampled_from([(3,), (2,), (2, 3), (3, 3), (3, 2)]))
        k = draw(st.integers(-1, 1))
        return Problem(lambda xp, x: xp.diag(x, k), draw(RNGS).uniform(-2, 2, shape), f"diag({shape}, k={k})")
    shape = draw(small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=3), 18))
    axis1, axis2 = draw(st.permutations(range(-len(shape), 0)).map(lambda p: p[:2]))
    offset = draw(st.integers(-1, 1))
    return Problem(lambda xp, x: getattr(xp, name)(x, offset, axis1, axis2), draw(RNGS).uniform(-2, 2, shape),
                   f"{name}({shape}, offset={offset}, axes={axis1}, {axis2})")


@st.composite
def triangle_problem(draw, name):
    shape = draw(small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3), 18))
    k = draw(st.integers(-1, 1))
    return Problem(lambda xp, x: getattr(xp, name)(x, k), draw(RNGS).uniform(-2, 2, shape),
                   f"{name}({shape}, k={k})")


case("diag", diagonal_problem("diag"))
case("diagonal", diagonal_problem("diagonal"))
case("trace", diagonal_problem("trace"))
case("triu", triangle_problem("triu"))
case("tril", triangle_problem("tril"))

# Indexing: hypothesis-drawn basic and integer-array indices, and a table of the awkward kinds.
INDEXING = {
    "negative step": ((4, 3), (slice(None, None, -2), slice(2, 0, -1))),
    "None and Ellipsis": ((2, 3, 2), (None, Ellipsis, 1, None)),
    "integer array with repeats": ((4,), (np.array([0, 2, 2, 0, 3]),)),
    "integer list, negative and repeated": ((3, 2), ([-1, 0, -1],)),
    "2-D integer array": ((4, 2), (np.array([[0, 1], [1, 1], [3, 0]]),)),
    "boolean mask (whole array)": ((3, 2), (np.array([[True, False], [True, True], [False, True]]),)),
    "boolean mask (one axis) and slice": ((3, 2), (np.array([True, False, True]), slice(None))),
    "slice then integer array": ((2, 4), (slice(None), np.array([3, 1, 1]))),
    "adjacent integer arrays after a slice":
        ((2, 3, 3), (slice(None), np.array([0, 2, 2]), np.array([1, 1, 0]))),
    "arrays separated by a slice": ((3, 2, 3), (np.array([0, 2, 0]), slice(None), np.array([1, 1, 2]))),
    "array and integer separated by a slice": ((3, 2, 4), (np.array([2, 0]), slice(1, None), 3)),
    "arrays separated by None": ((3, 3), (np.array([0, 2]), None, np.array([1, 1]))),
    "arrays separated by an empty Ellipsis": ((3, 3), (np.array([0, 2]), Ellipsis, np.array([1, 1]))),
    "broadcast integer arrays": ((3, 4), (np.array([[0], [2]]), np.array([1, 3, 3]))),
    "integer scalar and mask": ((3, 4), (1, np.array([True, False, True, True]))),
    "empty selection": ((3, 2), (slice(2, 1),)),
}


@st.composite
def indexed(draw, shape, index, what):
    return Problem(lambda xp, x: x[index], draw(RNGS).uniform(-2, 2, shape), what)


@st.composite
def drawn_index(draw, kind):
    shape = draw(NONSCALAR)
    if kind == "basic":
        index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    else:
        result_shapes = hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)
        index = draw(hnp.integer_array_indices(shape, result_shape=result_shapes))
    return draw(indexed(shape, index, f"x[{index!r}]"))


case("indexing (drawn basic index)", drawn_index("basic"))
case("indexing (drawn integer arrays)", drawn_index("integer arrays"))
for _what, (_shape, _index) in INDEXING.items():
    case(f"indexing ({_what})", indexed(_shape, _index, _what))


@st.composite
def take_problem(draw):
    shape = draw(NONSCALAR)
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    n = math.prod(shape) if axis is None else shape[axis]
    indices = draw(hnp.arrays(np.intp, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                              elements=st.integers(-n, n - 1)))
    return Problem(lambda xp, x: xp.take(x, indices, axis=axis), draw(RNGS).uniform(-2, 2, shape),
                   f"take({shape}, {indices.tolist()}, axis={axis})")


@st.composite
def take_along_axis_problem(draw):
    shape = draw(NONSCALAR)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(draw(st.integers(1, 3)) if k == axis % len(shape) else d for k, d in enumerate(shape))
    indices = draw(RNGS).integers(0, shape[axis], index_shape)
    return Problem(lambda xp, x: xp.take_along_axis(x, indices, axis), draw(RNGS).uniform(-2, 2, shape),
                   f"take_along_axis({shape}, {indices.tolist()}, axis={axis})")


case("take", take_problem())
case("take_along_axis", take_along_axis_problem())


# linalg.
BATCHES = st.sampled_from([(), (2,)])


@st.composite
def norm_problem(draw):
    variant = draw(st.sampled_from([
        "vector", "vector ord", "any-D default", "matrix fro", "axis", "matrix axes", "matrix ord"]))
    keepdims = draw(st.booleans())
    if variant == "vector":
        shape, kwargs = (draw(st.integers(1, 5)),), {}
    elif variant == "vector ord":
        shape = (draw(st.integers(1, 5)),)
        kwargs = {"ord": draw(st.sampled_from([1, 2, 3, 0.5, -1, np.inf, -np.inf]))}
    elif variant == "any-D default":
        shape, kwargs = draw(SHAPES), {}
    elif variant == "matrix fro":
        shape, kwargs = draw(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)), {"ord": "fro"}
    elif variant == "axis":
        shape = draw(small(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)))
        kwargs = {"axis": draw(st.integers(-len(shape), len(shape) - 1)),
                  "ord": draw(st.sampled_from([None, 2, 1, np.inf, 3])), "keepdims": keepdims}
    elif variant == "matrix axes":
        shape = draw(hnp.array_shapes(min_dims=3, max_dims=3, max_side=2))
        kwargs = {"axis": draw(st.sampled_from([(0, 1), (-1, 0), (1, 2)])), "keepdims": keepdims}
    else:  # induced norms: the largest or smallest absolute column or row sum
        shape = draw(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3))
        kwargs = {"ord": draw(st.sampled_from([1, -1, np.inf, -np.inf])), "keepdims": keepdims,
                  "axis": draw(st.sampled_from([(0, 1), (1, 0)] + ([(-1, 0), (2, 1)] if len(shape) == 3 else [])))}
    return Problem(lambda xp, x: xp.linalg.norm(x, **kwargs), distinct_magnitudes(draw(RNGS), shape),
                   f"norm({shape}, {kwargs})")


case("linalg.norm", norm_problem())

SOLVE_LAYOUTS = {  # shapes of a and b from n, k
    "matrix, vector": lambda n, k: ((n, n), (n,)),
    "matrix, matrix": lambda n, k: ((n, n), (n, k)),
    "batch, batch": lambda n, k: ((2, n, n), (2, n, k)),
    "batch, matrix (broadcast b)": lambda n, k: ((2, n, n), (n, k)),
    "matrix, batch (broadcast a)": lambda n, k: ((n, n), (2, n, k)),
    "batch, vector (numpy 2: one vector for every matrix)": lambda n, k: ((2, n, n), (n,)),
}


@st.composite
def solve_problem(draw):
    layout = draw(st.sampled_from(sorted(SOLVE_LAYOUTS)))
    shape_a, shape_b = SOLVE_LAYOUTS[layout](draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    rng = draw(RNGS)
    return packed(lambda xp, a, b: xp.linalg.solve(a, b),
                  [well_conditioned(rng, shape_a), rng.uniform(-2, 2, shape_b)],
                  f"{layout}: {shape_a}, {shape_b}")


case("linalg.solve", solve_problem())


@st.composite
def square(draw, fn, what, sample=well_conditioned):
    shape = draw(BATCHES) + (draw(st.integers(1, 3)),) * 2
    return Problem(fn, sample(draw(RNGS), shape), f"{what} of {shape}")


case("linalg.inv", square(lambda xp, a: xp.linalg.inv(a), "inv"))
case("linalg.det", square(lambda xp, a: xp.linalg.det(a), "det"))
case("linalg.slogdet", square(lambda xp, a: xp.linalg.slogdet(a).logabsdet, "slogdet"))
case("linalg.slogdet sign * exp(logabsdet)", square(
    lambda xp, a: xp.linalg.slogdet(a)[0] * xp.exp(xp.linalg.slogdet(a)[1]), "sign * exp(logabsdet)"))


def spd(xp, x):
    """An SPD matrix (batched) from any square x: x x^T + n I."""
    return x @ xp.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1], dtype=x.dtype)


def separated_symmetric(xp, x):
    """diag(0, 2, 4, ...) plus a symmetric part of norm <= 0.6 (|x| <= 1): eigenvalues 0.8 apart."""
    n = x.shape[-1]
    return np.diag(2.0 * np.arange(n, dtype=x.dtype)) + 0.1 * (x + xp.swapaxes(x, -1, -2))


def sign_fixed(xp, v):
    """Eigenvectors with the sign that makes their (dominant) diagonal entry positive."""
    return v * xp.sign(xp.diagonal(v, 0, -2, -1))[..., None, :]


case("linalg.cholesky", square(
    lambda xp, x: xp.linalg.cholesky(spd(xp, x)), "cholesky(x x^T + n I)", uniform(-1, 1)))
case("linalg.eigh eigenvalues", square(
    lambda xp, x: xp.linalg.eigh(separated_symmetric(xp, x)).eigenvalues, "eigh", uniform(-1, 1)))
case("linalg.eigh eigenvectors", square(
    lambda xp, x: sign_fixed(xp, xp.linalg.eigh(separated_symmetric(xp, x)).eigenvectors), "eigh",
    uniform(-1, 1)))


# Compositions (autodiff/numpy/composite.py): NumPy functions built from the primitives above.
case("hypot", drawn_pair(lambda xp, a, b: xp.hypot(a, b), away_from_zero, uniform(-2, 2)))
case("float_power", drawn_pair(lambda xp, a, b: xp.float_power(a, b), uniform(0.5, 2), uniform(-2, 2)))
case("copysign", drawn_pair(lambda xp, a, b: xp.copysign(a, b), away_from_zero, away_from_zero))
for _name, _domain in {"exp2": uniform(-2, 2), "fabs": away_from_zero, "deg2rad": uniform(-90, 90),
                       "rad2deg": uniform(-2, 2), "radians": uniform(-90, 90), "degrees": uniform(-2, 2),
                       "sinc": uniform(-2, 2)}.items():
    case(_name, drawn(lambda xp, x, name=_name: getattr(xp, name)(x), _domain))


def _diff(draw, shape):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = draw(st.integers(1, 2))
    ends = draw(st.sampled_from([{}, {"prepend": 0.5}, {"append": -1.0}, {"prepend": 0.5, "append": 2.0}]))
    return f"diff(n={n}, axis={axis}, {ends})", lambda xp, x: xp.diff(x, n=n, axis=axis, **ends)


def _roll(draw, shape):
    shift = draw(st.integers(-4, 4))
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1) |
                st.permutations(range(len(shape))).map(lambda p: tuple(p[:2])))
    return f"roll({shift}, axis={axis})", lambda xp, x: xp.roll(x, shift, axis=axis)


def _trapezoid(draw, shape):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    dx = draw(st.sampled_from([1.0, 0.25]))
    return f"trapezoid(dx={dx}, axis={axis})", lambda xp, x: xp.trapezoid(x, dx=dx, axis=axis)


case("diff", shape_op(_diff, NONSCALAR))
case("roll", shape_op(_roll, NONSCALAR))
case("trapezoid", shape_op(_trapezoid, NONSCALAR))
case("trapezoid (sample points x)", product(lambda xp, y, x: xp.trapezoid(y, x=x), {
    "vector, vector": lambda m, k, n, ba, bb: ((k + 1,), (k + 1,)),
    "matrix, vector along the last axis": lambda m, k, n, ba, bb: ((m, k + 1), (k + 1,))}))
case("ptp", reduction("ptp", distinct))
case("nansum", reduction("nansum", uniform(-2, 2)))
case("nanmean", reduction("nanmean", uniform(-2, 2)))


@st.composite
def median_problem(draw):
    shape = draw(NONSCALAR)
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    keepdims = draw(st.booleans())
    return Problem(lambda xp, x: xp.median(x, axis=axis, keepdims=keepdims), distinct(draw(RNGS), shape),
                   f"median({shape}, axis={axis}, keepdims={keepdims})")


@st.composite
def average_problem(draw):
    shape = draw(NONSCALAR)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = draw(RNGS)
    if draw(st.booleans()):  # 1-D weights along axis
        weights = rng.uniform(0.5, 2, shape[axis])
    else:
        weights = rng.uniform(0.5, 2, shape)
    return packed(lambda xp, a, w: xp.average(a, axis=axis, weights=w), [rng.uniform(-2, 2, shape), weights],
                  f"average({shape}, axis={axis}, weights of {weights.shape})")


case("median", median_problem())
case("average", average_problem())
case("average (no weights)", reduction("average", uniform(-2, 2), single_axis=True))
case("append", product(lambda xp, a, b: xp.append(a, b), {
    "matrix, vector (flattened)": lambda m, k, n, ba, bb: ((m, k), (n,))}))
case("append (axis=0)", product(lambda xp, a, b: xp.append(a, b, axis=0), {
    "matrices": lambda m, k, n, ba, bb: ((m, k), (n, k))}))
case("column_stack", product(lambda xp, a, b: xp.column_stack([a, b]), {
    "vectors": lambda m, k, n, ba, bb: ((k,), (k,)), "matrix, vector": lambda m, k, n, ba, bb: ((k, m), (k,))}))
case("kron", product(lambda xp, a, b: xp.kron(a, b), {
    "vectors": lambda m, k, n, ba, bb: ((m,), (n,)), "matrices": lambda m, k, n, ba, bb: ((m, k), (n, 2)),
    "matrix, vector": lambda m, k, n, ba, bb: ((m, k), (n,))}))
case("cross", product(lambda xp, a, b: xp.cross(a, b), {
    "3-vectors": lambda m, k, n, ba, bb: ((3,), (3,)), "batch of 3-vectors, one 3-vector":
        lambda m, k, n, ba, bb: (ba + (3,), (3,))}))
case("polyval", product(lambda xp, p, x: xp.polyval(p, x), {
    "coefficients, points": lambda m, k, n, ba, bb: ((k + 1,), ba + (n,))}))


def off_knots(rng, shape):
    """Points in (-0.5, 1.5) at least 0.05 from the knots 0, 0.3, 1 of the interpolation cases."""
    points = rng.uniform(-0.5, 1.5, shape)
    return np.where(np.min(np.abs(points[..., None] - np.array([0.0, 0.3, 1.0])), axis=-1) < 0.05,
                    points + 0.1, points)


@st.composite
def interp_problem(draw):
    shape = draw(SHAPES)
    rng = draw(RNGS)
    return packed(lambda xp, x, fp: xp.interp(x, [0.0, 0.3, 1.0], fp),
                  [off_knots(rng, shape), rng.uniform(-2, 2, 3)], f"interp at points of {shape}")


case("interp", interp_problem())
case("cumprod", reduction("cumprod", with_zeros, shapes=NONSCALAR, single_axis=True))
case("cumprod (flattened)", drawn(lambda xp, x: xp.cumprod(x), with_zeros))
CONVOLVE_LAYOUTS = {
    "longer a": lambda m, k, n, ba, bb: ((k + 2,), (n,)), "longer v": lambda m, k, n, ba, bb: ((m,), (m + k,)),
}
for _mode in ("full", "same", "valid"):
    case(f"convolve ({_mode})", product(lambda xp, a, v, mode=_mode: xp.convolve(a, v, mode), CONVOLVE_LAYOUTS))
for _mode in ("full", "same", "valid"):
    case(f"correlate ({_mode})", product(lambda xp, a, v, mode=_mode: xp.correlate(a, v, mode), CONVOLVE_LAYOUTS))


@st.composite
def quantile_problem(draw, name):
    shape = draw(NONSCALAR)
    axis = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    q = draw(st.sampled_from([0.3, [0.1, 0.75], 1.0]))
    q = np.multiply(q, 100.0) if name == "percentile" else q
    keepdims = draw(st.booleans())
    return Problem(lambda xp, x: getattr(xp, name)(x, q, axis=axis, keepdims=keepdims), distinct(draw(RNGS), shape),
                   f"{name}({shape}, {q}, axis={axis}, keepdims={keepdims})")


case("quantile", quantile_problem("quantile"))
case("percentile", quantile_problem("percentile"))
case("cov", product(lambda xp, m, y: xp.cov(m, y), {
    "variables in rows, and one more": lambda m, k, n, ba, bb: ((m, k + 1), (k + 1,))}))
case("cov (rowvar=False, bias)", drawn(lambda xp, x: xp.cov(x, rowvar=False, bias=True), uniform(-2, 2),
                                       small(hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=3))))
# three observations or more: the correlation of two is +-1 whatever x is, so its derivatives are
# zero and what a sweep computes there is rounding error alone
case("corrcoef", drawn(lambda xp, x: xp.corrcoef(x), uniform(-2, 2),
                       small(st.tuples(st.integers(2, 4), st.integers(3, 4)))))
case("linalg.multi_dot", product(lambda xp, a, b: xp.linalg.multi_dot([a, b, a]), {
    "vector, matrix, vector": lambda m, k, n, ba, bb: ((k,), (k, k)),
    "matrix, matrix, matrix": lambda m, k, n, ba, bb: ((k, k), (k, k))}))
case("linalg.matrix_power", st.sampled_from([-2, 0, 1, 2, 3]).flatmap(lambda n: square(
    lambda xp, a: xp.linalg.matrix_power(a, n), f"matrix_power(., {n})")))


def separated_singular_values(rng, shape):
    """(Batched) matrices near diag(1, -2, 3, ...): singular values about 1 apart, none near 0."""
    a = rng.uniform(-0.1, 0.1, shape)
    k = min(shape[-2:])
    a[..., range(k), range(k)] += (1.0 + np.arange(k)) * (-1.0) ** np.arange(k)
    return a


@st.composite
def rectangular(draw, fn, what):
    shape = draw(BATCHES) + (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return Problem(fn, separated_singular_values(draw(RNGS), shape), f"{what} of {shape}")


def thin_svd(xp, a):
    return xp.linalg.svd(a, full_matrices=False)


case("linalg.svd singular values", rectangular(lambda xp, a: thin_svd(xp, a).S, "svd"))
case("linalg.svd U", rectangular(lambda xp, a: thin_svd(xp, a).U, "svd"))
case("linalg.svd Vh", rectangular(lambda xp, a: thin_svd(xp, a).Vh, "svd"))
case("linalg.svd (square, full_matrices=True)", square(
    lambda xp, a: xp.linalg.svd(a).U * xp.linalg.svd(a).S[..., None, :], "svd", separated_singular_values))
case("linalg.svdvals", rectangular(lambda xp, a: xp.linalg.svdvals(a), "svdvals"))
case("linalg.svd (compute_uv=False)", rectangular(lambda xp, a: xp.linalg.svd(a, compute_uv=False), "svd"))
case("linalg.pinv", rectangular(lambda xp, a: xp.linalg.pinv(a), "pinv"))


@st.composite
def tall(draw, fn, what):
    n = draw(st.integers(1, 3))
    shape = draw(BATCHES) + (n + draw(st.integers(0, 1)), n)
    return Problem(fn, separated_singular_values(draw(RNGS), shape), f"{what} of {shape}")


case("linalg.qr Q", tall(lambda xp, a: xp.linalg.qr(a).Q, "qr"))
case("linalg.qr R", tall(lambda xp, a: xp.linalg.qr(a).R, "qr"))
case("linalg.qr (mode='r')", tall(lambda xp, a: xp.linalg.qr(a, mode="r"), "qr"))


@st.composite
def lstsq_problem(draw):
    n, k = draw(st.integers(1, 3)), draw(st.sampled_from([None, 1, 2]))
    m = n + draw(st.integers(0, 2))
    rng = draw(RNGS)
    shape_b = (m,) if k is None else (m, k)
    return packed(lambda xp, a, b: xp.concatenate([xp.ravel(part) for part in xp.linalg.lstsq(a, b)[:2]]),
                  [separated_singular_values(rng, (m, n)), rng.uniform(-2, 2, shape_b)],
                  f"lstsq(({m}, {n}), {shape_b}): solution and residuals")


case("linalg.lstsq", lstsq_problem())
case("linalg.norm (spectral and nuclear)", st.sampled_from([2, -2, "nuc"]).flatmap(lambda order: rectangular(
    lambda xp, a: xp.linalg.norm(a, order, axis=(-2, -1)), f"norm(ord={order!r})")))


# scipy.special: its ufuncs on Tensors reach autodiff.numpy.special through NumPy's dispatch; its Python
# functions (logsumexp, softmax, ...) convert their input, so they are autodiff.numpy.special's.
SPECIAL_DOMAINS = {
    "expit": uniform(-4, 4), "logit": uniform(0.1, 0.9), "log_expit": uniform(-4, 4), "erf": uniform(-2, 2),
    "erfc": uniform(-2, 2), "erfinv": uniform(-0.8, 0.8), "erfcinv": uniform(0.2, 1.8),
    "ndtr": uniform(-3, 3), "log_ndtr": uniform(-6, 3), "ndtri": uniform(0.1, 0.9),
    "gamma": uniform(0.5, 3), "gammaln": uniform(0.5, 4), "digamma": uniform(0.5, 4), "psi": uniform(0.5, 4),
    "i0e": away_from_zero, "i1e": away_from_zero, "entr": uniform(0.2, 3), "softplus": uniform(-4, 4),
    "rgamma": uniform(0.5, 3), "i0": uniform(-2, 2), "i1": uniform(-2, 2), "j0": uniform(-3, 3),
    "j1": uniform(-3, 3), "y0": uniform(0.5, 3), "y1": uniform(0.5, 3),
}
for _name, _domain in SPECIAL_DOMAINS.items():
    case(f"scipy.special.{_name}", drawn(lambda xp, x, name=_name: getattr(scipy.special, name)(x), _domain))
SPECIAL_PAIRS = {
    "betaln": (uniform(0.5, 3), uniform(0.5, 3)), "xlogy": (uniform(-2, 2), uniform(0.5, 3)),
    "xlog1py": (uniform(-2, 2), uniform(-0.5, 2)), "rel_entr": (uniform(0.2, 3), uniform(0.2, 3)),
    "kl_div": (uniform(0.2, 3), uniform(0.2, 3)),
}
SPECIAL_PAIRS["beta"] = (uniform(0.5, 3), uniform(0.5, 3))
for _name, _order in {"jv": 1.5, "jn": 2, "yv": 0.5, "yn": 1, "iv": 2.5, "ive": 1, "gammainc": 1.7,
                      "gammaincc": 0.8, "stdtr": 3.5}.items():  # differentiable in x, not in the order
    case(f"scipy.special.{_name}", drawn(lambda xp, x, name=_name, order=_order: getattr(scipy.special, name)(
        order, x), uniform(0.5, 3) if _name != "ive" else away_from_zero))
case("scipy.special.betainc", drawn(lambda xp, x: scipy.special.betainc(1.5, 2.5, x), uniform(0.1, 0.9)))
complex_special = {"erf": scipy.special.erf, "erfc": scipy.special.erfc}
for _name, (_domain_a, _domain_b) in SPECIAL_PAIRS.items():
    case(f"scipy.special.{_name}", drawn_pair(lambda xp, a, b, name=_name: getattr(scipy.special, name)(a, b),
                                              _domain_a, _domain_b))
case("special.polygamma", st.sampled_from([0, 1, 2]).flatmap(lambda n: drawn(
    lambda xp, x: xp.special.polygamma(n, x), uniform(0.5, 3), what=f"polygamma({n}, .)")))
case("special.polygamma (array of orders)", drawn(
    lambda xp, x: xp.special.polygamma(np.arange(x.size).reshape(x.shape) % 3, x), uniform(0.5, 3)))
case("special.multigammaln", st.sampled_from([1, 3]).flatmap(lambda d: drawn(
    lambda xp, x: xp.special.multigammaln(x, d), uniform(1.5, 4), NONSCALAR, what=f"multigammaln(., {d})")))
case("special.logsumexp", reduction("logsumexp", uniform(-3, 3), shapes=NONSCALAR).map(
    lambda p: Problem(lambda xp, x: p.fn(xp.special, x), p.x, p.what)))
case("special.logsumexp (weights b, return_sign)", product(
    lambda xp, a, b: xp.stack(xp.special.logsumexp(a, axis=-1, b=b, return_sign=True)), {
        "matrix, weights": lambda m, k, n, ba, bb: ((m, k), (m, k)),
        "matrix, weights broadcast": lambda m, k, n, ba, bb: ((m, k), (k,))}).filter(
    lambda p: np.all(np.abs(np.sum(np.exp(p.x[:p.x.size // 2]), axis=-1)) > 0)))
case("special.softmax", drawn(lambda xp, x: xp.special.softmax(x), uniform(-3, 3)))
case("special.log_softmax (axis=0)", drawn(lambda xp, x: xp.special.log_softmax(x, axis=0), uniform(-3, 3),
                                          NONSCALAR))


# NumPy names met in code written for NumPy, JAX and autograd.
case("atleast_2d", drawn(lambda xp, x: xp.atleast_2d(x) * 1.5, uniform(-2, 2)))
case("atleast_3d", drawn(lambda xp, x: xp.atleast_3d(x) * 1.5, uniform(-2, 2)))
case("dstack", product(lambda xp, a, b: xp.dstack([a, b]), {
    "vectors": lambda m, k, n, ba, bb: ((k,), (k,)), "matrices": lambda m, k, n, ba, bb: ((m, k), (m, k))}))
case("flipud", drawn(lambda xp, x: xp.flipud(x), uniform(-2, 2), NONSCALAR))
MATRICES = small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=3))
case("fliplr", drawn(lambda xp, x: xp.fliplr(x), uniform(-2, 2), MATRICES))
case("rot90", st.sampled_from([(0, (0, 1)), (1, (0, 1)), (2, (1, 0)), (3, (-1, 0)), (-1, (0, 1))]).flatmap(
    lambda k_axes: drawn(lambda xp, x: xp.rot90(x, *k_axes), uniform(-2, 2), MATRICES, f"rot90{k_axes}")))
case("rollaxis", st.sampled_from([(0, 0), (0, 2), (2, 0), (-1, 1), (1, 3)]).flatmap(lambda a: drawn(
    lambda xp, x: xp.rollaxis(x, *a), uniform(-2, 2), small(hnp.array_shapes(min_dims=3, max_dims=3, max_side=2)),
    f"rollaxis{a}")))
for _name, _axis in (("hsplit", 1), ("vsplit", 0), ("dsplit", 2)):
    case(_name, drawn(lambda xp, x, name=_name: xp.concatenate(
        [xp.ravel(p) * (k + 1) for k, p in enumerate(getattr(xp, name)(x, [1]))]), uniform(-2, 2),
        small(hnp.array_shapes(min_dims=3, max_dims=3, min_side=2, max_side=2), 8)))
case("select", where_problem().map(lambda p: Problem(
    lambda xp, flat: xp.select([flat > 0.5, flat < -1.0], [2.0 * flat, flat ** 2], default=-flat), p.x, p.what)))
case("nan_to_num", drawn(lambda xp, x: xp.nan_to_num(x * 2.0), uniform(-2, 2)))
case("logaddexp2", drawn_pair(lambda xp, a, b: xp.logaddexp2(a, b), uniform(-3, 3), uniform(-3, 3)))
case("gradient", st.sampled_from([{}, {"axis": 0}, {"axis": -1, "edge_order": 2}, {"edge_order": 2}]).flatmap(
    lambda kw: drawn(lambda xp, x: xp.stack(xp.atleast_1d(xp.gradient(x, 0.5, **kw)) if "axis" in kw
                                            or x.ndim == 1 else xp.gradient(x, **kw)),
                     uniform(-2, 2), small(hnp.array_shapes(min_dims=1, max_dims=2, min_side=3, max_side=4), 16),
                     f"gradient({kw})")))
case("partition", reduction("sort", distinct, shapes=NONSCALAR, single_axis=True).map(lambda p: Problem(
    lambda xp, x: xp.partition(x, 0, axis=-1), p.x, "partition(x, 0)")))
case("linspace (Tensor ends)", product(lambda xp, a, b: xp.linspace(a, b, 4, axis=-1), {
    "scalars": lambda m, k, n, ba, bb: ((), ()), "vectors": lambda m, k, n, ba, bb: ((k,), (k,))}))
case("linspace (no endpoint, retstep)", product(lambda xp, a, b: xp.stack(
    [xp.linspace(a, b, 3, endpoint=False, retstep=True)[1], xp.linspace(a, b, 3, endpoint=False)[2]]), {
    "scalars": lambda m, k, n, ba, bb: ((), ())}))
case("r_ and c_", product(lambda xp, a, b: xp.concatenate([xp.r_[a, 1.0, b, 0:2], xp.ravel(xp.c_[a, b])]), {
    "vectors": lambda m, k, n, ba, bb: ((k,), (k,))}))
case("cross (axisa, axisb, axisc)", product(lambda xp, a, b: xp.cross(a, b, axisa=0, axisb=-1, axisc=0), {
    "3 x n, n x 3": lambda m, k, n, ba, bb: ((3, k), (k, 3))}))
case("cross (axis)", product(lambda xp, a, b: xp.cross(a, b, axis=0), {
    "3 x n": lambda m, k, n, ba, bb: ((3, k), (3, k))}))
case("einsum (sublists)", product(lambda xp, a, b: xp.einsum(a, [0, 1], b, [1, 2], [2, 0]), {
    "matrices": lambda m, k, n, ba, bb: ((m, k), (k, n))}))
case("vstack (dtype)", product(lambda xp, a, b: xp.vstack([a, b], dtype=np.float64), {
    "vectors": lambda m, k, n, ba, bb: ((k,), (k,))}))
case("real, imag, conj (real input)", drawn(lambda xp, x: xp.real(x) * 2.0 + xp.imag(x) + xp.conj(x) ** 2,
                                            uniform(-2, 2)))
case("linalg.eigh (UPLO='U')", square(
    lambda xp, x: xp.linalg.eigh(separated_symmetric(xp, x), UPLO="U").eigenvalues, "eigh U", uniform(-1, 1)))
case("linalg.eigh (a non-symmetric input: NumPy reads its lower triangle)", square(
    lambda xp, x: xp.linalg.eigh(np.diag(2.0 * np.arange(x.shape[-1])) + 0.1 * x).eigenvalues, "eigh",
    uniform(-1, 1)))
case("linalg.eigh eigenvectors (UPLO='U', non-symmetric input)", square(
    lambda xp, x: sign_fixed(xp, xp.linalg.eigh(np.diag(2.0 * np.arange(x.shape[-1])) + 0.1 * x, "U")[1]),
    "eigh", uniform(-1, 1)))
case("std (over single elements)", drawn(lambda xp, x: xp.std(x, axis=-1), uniform(-2, 2),
                                         small(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)).map(
                                             lambda s: s[:-1] + (1,))))
case("linalg.eig of a real matrix (complex eigenvalues: |w|, |V|)", square(
    lambda xp, a: xp.concatenate([xp.ravel(xp.abs(xp.linalg.eig(a)[0])), xp.ravel(xp.abs(xp.linalg.eig(a)[1]))]),
    "eig", lambda rng, shape: np.array([[0.0, -2.0, 0.3], [2.0, 0.0, 0.1], [0.2, 0.1, 4.0]])[
        :shape[-1], :shape[-1]] + rng.uniform(-0.2, 0.2, shape)))
case("linalg.eigvals of a real matrix (real eigenvalues)", square(
    lambda xp, a: xp.linalg.eigvals(a), "eigvals", lambda rng, shape: np.diag(2.0 * np.arange(shape[-1]))
    + rng.uniform(-0.2, 0.2, shape)))
case("linalg.det (singular)", square(
    lambda xp, a: xp.linalg.det(a * np.array([1.0, 1.0, 0.0])[:a.shape[-1]]), "det with a zero column",
    uniform(-1, 1)))



# scipy.linalg (autodiff.numpy.scipy_linalg), against scipy's own functions.
def near_3i(rng, shape):
    """(Batched) 3I + E with |E| <= 0.5: eigenvalues in the right half-plane (real square roots, no
    two summing to 0), nonzero diagonals, and positive definite read from either triangle (n <= 3)."""
    return 3.0 * np.eye(shape[-1]) + rng.uniform(-0.5, 0.5, shape)


def positive_definite_in(triangle):
    """Matrices whose `triangle` ("lower" or "upper") holds a positive definite matrix, with noise in
    the other triangle, which the Cholesky routines never read (its derivative is 0)."""
    def sample(rng, shape):
        a = rng.uniform(-1, 1, shape)
        noise = rng.uniform(-0.5, 0.5, shape)
        return a @ np.swapaxes(a, -1, -2) + 0.5 * np.eye(shape[-1]) + (
            np.triu(noise, 1) if triangle == "lower" else np.tril(noise, -1))
    return sample


case("scipy_linalg.expm", square(lambda xp, a: xp.scipy_linalg.expm(a), "expm", uniform(-1, 1)))
case("scipy_linalg.expm (scaled and squared)", square(lambda xp, a: xp.scipy_linalg.expm(a), "expm",
                                                      lambda rng, shape: near_3i(rng, shape) * 2.0))
case("scipy_linalg.expm (triangular, diagonal)", square(lambda xp, a: xp.concatenate([
    xp.ravel(xp.scipy_linalg.expm(xp.triu(a))), xp.ravel(xp.scipy_linalg.expm(a * np.eye(a.shape[-1])))]),
    "expm", uniform(-1, 1)))
case("scipy_linalg.expm_frechet", st.integers(1, 3).flatmap(lambda n: drawn(
    lambda xp, x: xp.stack(xp.scipy_linalg.expm_frechet(x[0], x[1])), uniform(-1, 1), st.just((2, n, n)))))
case("scipy_linalg.sqrtm", square(lambda xp, a: xp.scipy_linalg.sqrtm(a), "sqrtm", near_3i))
case("scipy_linalg.sqrtm (negative eigenvalues: a complex root of a real matrix)", square(
    lambda xp, a: _real_parts(xp, xp.scipy_linalg.sqrtm(a)), "sqrtm",
    lambda rng, shape: np.diag([-2.0, 1.0, 3.0][:shape[-1]]) + rng.uniform(-0.3, 0.3, shape)))


@st.composite
def sylvester_problem(draw):
    m, n, batch = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(BATCHES)
    rng = draw(RNGS)
    return packed(lambda xp, a, b, q: xp.scipy_linalg.solve_sylvester(a, b, q),
                  [near_3i(rng, batch + (m, m)), near_3i(rng, (n, n)), rng.uniform(-2, 2, batch + (m, n))],
                  f"a {batch + (m, m)}, b {(n, n)}")


case("scipy_linalg.solve_sylvester", sylvester_problem())
case("scipy_linalg.solve_continuous_lyapunov", st.integers(1, 3).flatmap(lambda n: drawn(
    lambda xp, x: xp.scipy_linalg.solve_continuous_lyapunov(3.0 * np.eye(n) + 0.5 * x[0], x[1]), uniform(-1, 1),
    st.just((2, n, n)))))


@st.composite
def solve_triangular_problem(draw):
    layout = draw(st.sampled_from(sorted(SOLVE_LAYOUTS)))
    shape_a, shape_b = SOLVE_LAYOUTS[layout](draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    trans, lower, unit = draw(st.sampled_from([0, 1, 2, "N", "T", "C"])), draw(st.booleans()), draw(st.booleans())
    rng = draw(RNGS)
    return packed(lambda xp, a, b: xp.scipy_linalg.solve_triangular(a, b, trans, lower, unit),
                  [well_conditioned(rng, shape_a), rng.uniform(-2, 2, shape_b)],
                  f"{layout}: {shape_a}, {shape_b}, trans={trans!r}, lower={lower}, unit_diagonal={unit}")


case("scipy_linalg.solve_triangular", solve_triangular_problem())
for _lower, _triangle in ((False, "upper"), (True, "lower")):
    case(f"scipy_linalg.cholesky (lower={_lower}: the {_triangle} triangle read)", square(
        lambda xp, a, lower=_lower: xp.scipy_linalg.cholesky(a, lower), "cholesky", positive_definite_in(_triangle)))
    case(f"scipy_linalg.cho_factor (lower={_lower})", square(
        lambda xp, a, lower=_lower: xp.scipy_linalg.cho_factor(a, lower)[0], "cho_factor",
        positive_definite_in(_triangle)).filter(lambda p: p.x.ndim == 2))


@st.composite
def cho_solve_problem(draw):
    n, lower, rng = draw(st.integers(1, 3)), draw(st.booleans()), draw(RNGS)
    shape_b = draw(st.sampled_from([(n,), (n, 2)]))
    return packed(lambda xp, c, b: xp.scipy_linalg.cho_solve((c, lower), b),
                  [well_conditioned(rng, (n, n)), rng.uniform(-2, 2, shape_b)],
                  f"c {(n, n)} (any matrix whose triangle is invertible), b {shape_b}, lower={lower}")


case("scipy_linalg.cho_solve", cho_solve_problem())
SCIPY_STRUCTURES = [None, "gen", "sym", "her", "pos", "diagonal", "tridiagonal", "upper triangular",
                    "lower triangular"]


@st.composite
def scipy_solve_problem(draw):
    n, rng = draw(st.integers(1, 3)), draw(RNGS)
    assume_a, lower, transposed = draw(st.sampled_from(SCIPY_STRUCTURES)), draw(st.booleans()), draw(st.booleans())
    shape_b = draw(st.sampled_from([(n,), (n, 2)]))
    return packed(lambda xp, a, b: xp.scipy_linalg.solve(a, b, lower=lower, assume_a=assume_a, transposed=transposed),
                  [near_3i(rng, (n, n)), rng.uniform(-2, 2, shape_b)],
                  f"assume_a={assume_a!r}, lower={lower}, transposed={transposed}, b {shape_b}")


case("scipy_linalg.solve", scipy_solve_problem())
case("scipy_linalg.inv", st.sampled_from([None, "sym", "pos", "lower triangular"]).flatmap(lambda assume_a: drawn(
    lambda xp, a: xp.scipy_linalg.inv(a, assume_a=assume_a), near_3i, st.sampled_from([(1, 1), (2, 2), (3, 3)]),
    f"assume_a={assume_a!r}")))
case("scipy_linalg.det", square(lambda xp, a: xp.scipy_linalg.det(a), "det"))
case("scipy_linalg.eigh (a non-symmetric input: one triangle read)", st.booleans().flatmap(lambda lower: square(
    lambda xp, x: xp.concatenate([xp.ravel(xp.scipy_linalg.eigh(np.diag(2.0 * np.arange(x.shape[-1])) + 0.1 * x,
                                                                lower=lower)[0]),
                                  xp.ravel(sign_fixed(xp, xp.scipy_linalg.eigh(
                                      np.diag(2.0 * np.arange(x.shape[-1])) + 0.1 * x, lower=lower)[1]))]),
    f"eigh(lower={lower})", uniform(-1, 1))))
case("scipy_linalg.eigvalsh (subset_by_index)", drawn(
    lambda xp, x: xp.scipy_linalg.eigvalsh(np.diag(2.0 * np.arange(3)) + 0.1 * x, subset_by_index=[1, 2]),
    uniform(-1, 1), st.just((3, 3))))
case("scipy_linalg.svd, svdvals", rectangular(lambda xp, a: xp.concatenate([
    xp.scipy_linalg.svd(a, compute_uv=False), xp.scipy_linalg.svdvals(a),
    xp.ravel(xp.scipy_linalg.svd(a, full_matrices=False)[0] * xp.scipy_linalg.svd(a, full_matrices=False)[1])]),
    "svd").filter(lambda p: p.x.ndim == 2))
# scipy.signal (autodiff.numpy.scipy_signal), against scipy's own functions: N-d shapes of 1 to 3 axes,
# in2 smaller, larger or neither (valid mode then takes the inputs that one dominates).
@st.composite
def signal_problem(draw, name, mode, ndim=None):
    ndim = ndim or draw(st.integers(1, 3))
    shape1 = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    shape2 = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    if mode == "valid" and not (all(a >= b for a, b in zip(shape1, shape2))
                                or all(b >= a for a, b in zip(shape1, shape2))):
        shape2 = shape1
    rng = draw(RNGS)
    return packed(lambda xp, a, b: getattr(xp.scipy_signal, name)(a, b, mode),
                  [rng.uniform(-2, 2, shape1), rng.uniform(-2, 2, shape2)], f"{shape1}, {shape2}")


for _mode in ("full", "valid", "same"):
    for _name in ("convolve", "correlate"):
        case(f"scipy_signal.{_name} ({_mode})", signal_problem(_name, _mode))
    for _name in ("convolve2d", "correlate2d"):
        case(f"scipy_signal.{_name} ({_mode})", signal_problem(_name, _mode, ndim=2))
case("scipy_linalg.block_diag", drawn(
    lambda xp, x: xp.scipy_linalg.block_diag(xp.reshape(x[:4], (2, 2)), x[4:7], x[7], xp.reshape(x[8:], (2, 1))),
    uniform(-2, 2), st.just((10,))))
BANDS = [(0, 0), (1, 1), (2, 1), (0, 2), (1, 0)]


@st.composite
def banded_problem(draw):
    (l, u), n, rng = draw(st.sampled_from(BANDS)), draw(st.integers(1, 4)), draw(RNGS)
    shape_b = draw(st.sampled_from([(n,), (n, 2)]))
    ab = rng.uniform(-0.5, 0.5, (l + u + 1, n))
    ab[u] += rng.choice([-3.0, 3.0], n)  # a dominant diagonal
    return packed(lambda xp, ab, b: xp.scipy_linalg.solve_banded((l, u), ab, b), [ab, rng.uniform(-2, 2, shape_b)],
                  f"(l, u) = {(l, u)}, n = {n}, b {shape_b}")


case("scipy_linalg.solve_banded", banded_problem())

# numpy.fft: complex results as their real and imaginary parts stacked. Drawn: the axis, a length n
# that keeps, cuts or zero-pads the input, and the normalization.
def _real_parts(xp, y):
    return xp.stack([xp.real(y), xp.imag(y)]) if np.iscomplexobj(ad.core.value_of(y)) else y


@st.composite
def fft_problem(draw, name, complex_input=False):
    shape, rng = draw(NONSCALAR), draw(RNGS)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    m = shape[axis]
    lengths = [2 * m - 1, m + 1] + ([2 * m - 2] if m > 1 else []) if name == "irfft" else \
        [None, m + 2] + ([m - 1] if m > 1 else [])
    n, norm = draw(st.sampled_from(lengths)), draw(st.sampled_from([None, "ortho", "forward"]))
    return _transform_problem(rng, shape, name, (n, axis, norm), complex_input,
                              f"{name}(shape {shape}, n={n}, axis={axis}, norm={norm})")


def _transform_problem(rng, shape, name, arguments, complex_input, what):
    """np.fft's ``name`` applied with ``arguments`` to a real input of ``shape``, or to a complex one
    made of the two halves of x."""
    if complex_input:
        x = np.stack([uniform(-1, 1)(rng, shape), uniform(-1, 1)(rng, shape)])
        return Problem(lambda xp, x: _real_parts(xp, getattr(xp.fft, name)(x[0] + 1j * x[1], *arguments)),
                       x, "complex " + what)
    return Problem(lambda xp, x: _real_parts(xp, getattr(xp.fft, name)(x, *arguments)),
                   uniform(-1, 1)(rng, shape), what)


@st.composite
def fftn_problem(draw, name, complex_input=False):
    shape, rng = draw(small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=3), 18)), draw(RNGS)
    axes = draw(st.permutations(range(len(shape))).map(lambda p: p[:2]))
    s = draw(st.sampled_from([None, [shape[axes[0]] + 1, shape[axes[1]] - 1], [-1, shape[axes[1]] + 2]]))
    norm = draw(st.sampled_from([None, "ortho"]))
    return _transform_problem(rng, shape, name, (s, axes, norm), complex_input,
                              f"{name}(shape {shape}, s={s}, axes={axes}, norm={norm})")


for _name in ("fft", "ifft", "rfft", "irfft"):
    case(f"fft.{_name}", fft_problem(_name))
for _name in ("fft", "ifft", "irfft"):
    case(f"fft.{_name} (complex input)", fft_problem(_name, complex_input=True))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    case(f"fft.{_name}", fftn_problem(_name))
for _name in ("fftn", "irfftn"):
    case(f"fft.{_name} (complex input)", fftn_problem(_name, complex_input=True))
case("fft.fft2, ifft2, rfft2, irfft2 (defaults)", drawn(lambda xp, x: xp.concatenate([xp.ravel(_real_parts(
    xp, f(x))) for f in (xp.fft.fft2, xp.fft.ifft2, xp.fft.rfft2, xp.fft.irfft2)]), uniform(-1, 1),
    small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=3))))
case("fft.fftshift, ifftshift", st.sampled_from([None, 0, -1, (0, -1)]).flatmap(lambda axes: drawn(
    lambda xp, x: xp.stack([xp.fft.fftshift(x, axes), xp.fft.ifftshift(x, axes)]), uniform(-2, 2),
    small(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), 16), f"axes={axes}")))


# scipy.stats' distributions (autodiff.numpy.stats), each function in all its arguments of one
# broadcast, with the distribution functions' shape parameters fixed where their rules stop.
@st.composite
def stats_problem(draw, fn, samplers, what):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(samplers), max_dims=2, max_side=3).filter(
        lambda b: sum(math.prod(s) for s in b.input_shapes) <= 16)).input_shapes
    rng = draw(RNGS)
    return packed(fn, [sample(rng, shape) for sample, shape in zip(samplers, shapes)], f"{what} {shapes}")


POSITIVE, LOC, SCALE = uniform(1.0, 4.0), uniform(-0.5, 0.5), uniform(0.5, 2.0)
STATS_CASES = {  # name: (the call, the samplers of its arguments)
    "norm.{f}": (lambda d, f: lambda xp, x, loc, scale: getattr(xp.stats.norm, f)(x, loc, scale),
                 [uniform(-2, 2), LOC, SCALE], ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]),
    "t.{f}": (lambda d, f: lambda xp, x, df, loc, scale: getattr(xp.stats.t, f)(x, df, loc, scale),
              [uniform(-2, 2), uniform(1.0, 5.0), LOC, SCALE], ["pdf", "logpdf"]),
    "t.{f} (in x, loc, scale)": (lambda d, f: lambda xp, x, loc, scale: getattr(xp.stats.t, f)(x, 3.5, loc, scale),
                                 [uniform(-2, 2), LOC, SCALE], ["cdf", "logcdf", "sf", "logsf"]),
    "chi2.{f}": (lambda d, f: lambda xp, x, df, loc, scale: getattr(xp.stats.chi2, f)(x, df, loc, scale),
                 [POSITIVE, uniform(1.0, 5.0), LOC, SCALE], ["pdf", "logpdf"]),
    "chi2.{f} (in x, loc, scale)": (lambda d, f: lambda xp, x, loc, scale: getattr(xp.stats.chi2, f)(
        x, 2.5, loc, scale), [POSITIVE, LOC, SCALE], ["cdf", "logcdf", "sf", "logsf"]),
    "gamma.{f}": (lambda d, f: lambda xp, x, a, loc, scale: getattr(xp.stats.gamma, f)(x, a, loc, scale),
                  [POSITIVE, uniform(0.5, 3.0), LOC, SCALE], ["pdf", "logpdf"]),
    "gamma.{f} (in x, loc, scale)": (lambda d, f: lambda xp, x, loc, scale: getattr(xp.stats.gamma, f)(
        x, 1.7, loc, scale), [POSITIVE, LOC, SCALE], ["cdf", "logcdf", "sf", "logsf"]),
    "beta.{f}": (lambda d, f: lambda xp, x, a, b: getattr(xp.stats.beta, f)(x, a, b),
                 [uniform(0.1, 0.9), uniform(0.5, 3.0), uniform(0.5, 3.0)], ["pdf", "logpdf"]),
    "beta.{f} (in x, loc, scale)": (lambda d, f: lambda xp, x, loc, scale: getattr(xp.stats.beta, f)(
        x, 2.0, 3.0, loc, scale), [uniform(0.1, 0.9), uniform(-0.05, 0.05), uniform(1.0, 1.2)], ["cdf", "logcdf"]),
    "poisson.{f} (in mu)": (lambda d, f: lambda xp, mu: xp.stack([getattr(xp.stats.poisson, f)(k, mu)
                                                                   for k in (0.0, 2.0, 5.0)]),
                            [uniform(0.5, 4.0)], ["pmf", "logpmf", "cdf", "logcdf"]),
}
for _pattern, (_call, _samplers, _functions) in STATS_CASES.items():
    for _f in _functions:
        case(f"stats.{_pattern.format(f=_f)}", stats_problem(_call(None, _f), _samplers, _f))


def covariance_read_from_its_lower_triangle(rng, shape):
    """A covariance matrix (its lower triangle: 0.5 I + A A^T) with noise above the diagonal, which
    scipy and NumPy never read: the derivative in those entries is 0."""
    a = rng.uniform(-1, 1, shape)
    return 0.5 * np.eye(shape[-1]) + a @ a.T + np.triu(rng.uniform(-0.5, 0.5, shape), 1)


@st.composite
def mvn_problem(draw, method):
    d, points, rng = draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([(), (2,)])), draw(RNGS)
    arrays = [rng.uniform(-1, 1, points + (d,)), rng.uniform(-1, 1, (d,)), covariance_read_from_its_lower_triangle(
        rng, (d, d))]
    if method == "entropy":
        return packed(lambda xp, cov: xp.stats.multivariate_normal.entropy(None, cov), arrays[2:], f"d={d}")
    return packed(lambda xp, x, mean, cov: getattr(xp.stats.multivariate_normal, method)(x, mean, cov), arrays,
                  f"d={d}, points {points}")


for _method in ("logpdf", "pdf", "entropy"):
    case(f"stats.multivariate_normal.{_method}", mvn_problem(_method))
_SINGULAR = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])   # rank 2: x_3 = mean_3
case("stats.multivariate_normal.logpdf (singular, allow_singular)", drawn(
    lambda xp, v: xp.stats.multivariate_normal.logpdf(xp.concatenate([v[:2], v[4:]]), v[2:], _SINGULAR,
                                                      allow_singular=True), uniform(-1, 1), st.just((5,))))
def _dirichlet(xp, v, layout):
    """logpdf and pdf at x = v normalized onto the simplex (in float64: scipy's tolerance there is
    1e-9, which float32 sums miss), with alpha the last 3 entries of v."""
    v, alpha = xp.astype(v[:-3], np.float64), v[-3:]
    x = {"vector": lambda: v / xp.sum(v), "K - 1 entries": lambda: v / (2 * xp.sum(v)),
         "columns": lambda: xp.reshape(v, (3, 2)) / xp.sum(xp.reshape(v, (3, 2)), axis=0)}[layout]()
    return xp.stack([xp.stats.dirichlet.logpdf(x, alpha), xp.stats.dirichlet.pdf(x, alpha)])


for _layout, _size in (("vector", 6), ("K - 1 entries", 5), ("columns", 9)):
    case(f"stats.dirichlet (x: {_layout})", drawn(lambda xp, v, layout=_layout: _dirichlet(xp, v, layout),
                                                  uniform(0.5, 2.0), st.just((_size,))))


# Complex numbers, in JAX's convention. Each case is a real function of a real vector x: z = x_re +
# 1j x_im goes through the op and the result's real and imaginary parts are stacked, so every check
# above (finite differences of both orders, batches, JVPs, replay) tests the complex rules, and the
# projection of a complex cotangent onto a real input (its real part).
def complex_case(name, fn, re=uniform(-1, 1), im=uniform(-1, 1), shapes=SHAPES):
    @st.composite
    def problem(draw):
        shape = draw(shapes)
        rng = draw(RNGS)
        x = np.stack([re(rng, shape), im(rng, shape)])
        def real_and_imaginary(xp, x):
            y = fn(xp, x[0] + 1j * x[1])
            return xp.stack([xp.real(y), xp.imag(y)])
        return Problem(real_and_imaginary, x, f"complex {shape}")
    case(f"complex: {name}", problem())


for _name, _re, _im in [
    ("negative", uniform(-1, 1), uniform(-1, 1)), ("exp", uniform(-1, 1), uniform(-2, 2)),
    ("log", uniform(0.3, 2), uniform(-1, 1)), ("log2", uniform(0.3, 2), uniform(-1, 1)),
    ("log10", uniform(0.3, 2), uniform(-1, 1)), ("log1p", uniform(-0.5, 1), uniform(-1, 1)),
    ("expm1", uniform(-1, 1), uniform(-2, 2)), ("sqrt", uniform(0.3, 2), uniform(-1, 1)),
    ("square", uniform(-1, 1), uniform(-1, 1)), ("reciprocal", uniform(0.3, 1), uniform(-1, 1)),
    ("abs", away_from_zero, uniform(-1, 1)), ("absolute", away_from_zero, uniform(-1, 1)),
    ("sin", uniform(-2, 2), uniform(-1, 1)), ("cos", uniform(-2, 2), uniform(-1, 1)),
    ("tan", uniform(-1, 1), uniform(-1, 1)), ("arcsin", uniform(-0.7, 0.7), uniform(-0.7, 0.7)),
    ("arccos", uniform(-0.7, 0.7), uniform(-0.7, 0.7)), ("arctan", uniform(-1, 1), uniform(-0.6, 0.6)),
    ("sinh", uniform(-1, 1), uniform(-2, 2)), ("cosh", uniform(-1, 1), uniform(-2, 2)),
    ("tanh", uniform(-1, 1), uniform(-1, 1)), ("arcsinh", uniform(-1, 1), uniform(-0.6, 0.6)),
    ("arccosh", uniform(1.3, 3), uniform(-1, 1)), ("arctanh", uniform(-0.7, 0.7), uniform(-0.7, 0.7)),
    ("real", uniform(-1, 1), uniform(-1, 1)), ("imag", uniform(-1, 1), uniform(-1, 1)),
    ("conj", uniform(-1, 1), uniform(-1, 1)), ("angle", uniform(0.3, 2), uniform(-1, 1)),
    ("exp2", uniform(-1, 1), uniform(-1, 1)), ("sinc", uniform(-1, 1), uniform(-1, 1)),
]:
    complex_case(_name, lambda xp, z, name=_name: getattr(xp, name)(z), _re, _im)
complex_case("abs(sin(z))", lambda xp, z: abs(xp.sin(z)), uniform(0.3, 1.2), uniform(0.3, 1.5))
complex_case("z * conj(z) * (1 + 0.2j) / z[..., ::-1]", lambda xp, z: z * xp.conj(z) * (1 + 0.2j) / z[..., ::-1],
             away_from_zero, uniform(-1, 1), NONSCALAR)
complex_case("z ** 3, z ** z, 2 ** z", lambda xp, z: xp.stack([z ** 3, z ** z, 2.0 ** z]),
             uniform(0.5, 2), uniform(-1, 1))
complex_case("sum, mean, prod", lambda xp, z: xp.stack([xp.sum(z), xp.mean(z), xp.prod(z)]), with_zeros)
complex_case("var, std", lambda xp, z: xp.stack([xp.var(z), xp.std(z)]), distinct, uniform(-1, 1), SEVERAL)
complex_case("cumsum, cumprod", lambda xp, z: xp.stack([xp.cumsum(z), xp.cumprod(z)]))
complex_case("where, reshape, transpose, getitem, concatenate",
             lambda xp, z: xp.concatenate([xp.ravel(xp.where(xp.real(z) > 0, z, 2 * z).T), z.reshape(-1)[::-1]]))
complex_case("matmul, einsum, dot, vdot, outer, kron", lambda xp, z: xp.concatenate([
    xp.ravel(z @ z.T), xp.ravel(xp.einsum("ij,jk->ik", z, z.T)), xp.ravel(xp.dot(z, z.T)),
    xp.atleast_1d(xp.vdot(z, 2.0 * z)), xp.ravel(xp.outer(z, z)), xp.ravel(xp.kron(z, z))]),
    shapes=small(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)))
complex_case("cross, convolve, correlate", lambda xp, z: xp.concatenate([
    xp.cross(z, z[::-1]), xp.convolve(z, z[:2]), xp.correlate(z, z[:2], "full")]), shapes=st.just((3,)))
complex_case("scipy_signal.convolve, correlate, correlate2d", lambda xp, z: xp.concatenate([
    xp.ravel(xp.scipy_signal.convolve(z, z[:1, ::-1])), xp.ravel(xp.scipy_signal.correlate(z, z[1:, :2], "same")),
    xp.ravel(xp.scipy_signal.correlate2d(z[:1, :2], z, "valid"))]), shapes=st.just((2, 3)))
complex_case("cov", lambda xp, z: xp.cov(z), shapes=st.just((2, 3)))
complex_case("linalg.solve, inv, det", lambda xp, a: xp.concatenate([
    xp.ravel(xp.linalg.solve(a, a[..., 0])), xp.ravel(xp.linalg.inv(a)), xp.atleast_1d(xp.linalg.det(a))]),
    lambda rng, shape: well_conditioned(rng, shape), uniform(-0.5, 0.5), st.sampled_from([(2, 2), (3, 3)]))
complex_case("linalg.det (singular)", lambda xp, a: xp.linalg.det(a * np.array([1.0, 1.0, 0.0])),
             shapes=st.just((3, 3)))
complex_case("linalg.slogdet logabsdet", lambda xp, a: xp.linalg.slogdet(a)[1] if xp is NP else
             xp.log(xp.abs(xp.linalg.det(a))), lambda rng, shape: well_conditioned(rng, shape), uniform(-0.5, 0.5),
             st.just((3, 3)))
complex_case("linalg.norm (vector orders, fro, induced 1 and inf)", lambda xp, z: xp.stack([
    xp.linalg.norm(z), xp.linalg.norm(z[0], 3), xp.linalg.norm(z[0], 1), xp.linalg.norm(z[1], np.inf),
    xp.linalg.norm(z, "fro"), xp.linalg.norm(z, 1), xp.linalg.norm(z, -np.inf)]),
    distinct_magnitudes, uniform(-0.1, 0.1), st.just((2, 3)))
def _gauge_free(xp, v):
    """|v|: eigen- and singular vectors of complex matrices have a free phase each."""
    return xp.abs(v)


complex_case("linalg.svd (singular values, |U|, |Vh|), svdvals, nuclear norm", lambda xp, a: xp.concatenate([
    xp.linalg.svd(a, full_matrices=False).S, xp.ravel(_gauge_free(xp, xp.linalg.svd(a, full_matrices=False).U)),
    xp.ravel(_gauge_free(xp, xp.linalg.svd(a, full_matrices=False).Vh)), xp.linalg.svdvals(a),
    xp.atleast_1d(xp.linalg.norm(a, "nuc"))]), separated_singular_values, uniform(-0.2, 0.2),
    st.sampled_from([(2, 2), (3, 2), (2, 3)]))
complex_case("linalg.svd (U diag(S) Vh, pinv)", lambda xp, a: xp.concatenate([xp.ravel(
    (xp.linalg.svd(a, full_matrices=False).U * xp.linalg.svd(a, full_matrices=False).S[None, :])
    @ xp.linalg.svd(a, full_matrices=False).Vh), xp.ravel(xp.linalg.pinv(a))]),
    separated_singular_values, uniform(-0.2, 0.2), st.sampled_from([(2, 2), (3, 2), (2, 3)]))
complex_case("linalg.eigh (Hermitian, both triangles)", lambda xp, a: xp.concatenate([
    xp.linalg.eigh(a + np.diag(2.0 * np.arange(a.shape[-1]))).eigenvalues,
    xp.ravel(_gauge_free(xp, xp.linalg.eigh(a + np.diag(2.0 * np.arange(a.shape[-1])), "U").eigenvectors))]),
    uniform(-0.2, 0.2), uniform(-0.2, 0.2), st.sampled_from([(2, 2), (3, 3)]))
complex_case("linalg.eig (eigenvalues, |V|)", lambda xp, a: xp.concatenate([
    xp.linalg.eig(a + np.diag(2.0 * np.arange(a.shape[-1]))).eigenvalues,
    xp.ravel(_gauge_free(xp, xp.linalg.eig(a + np.diag(2.0 * np.arange(a.shape[-1]))).eigenvectors))]),
    uniform(-0.2, 0.2), uniform(-0.2, 0.2), st.sampled_from([(2, 2), (3, 3)]))
complex_case("scipy_linalg.expm, expm_frechet", lambda xp, z: xp.concatenate([
    xp.ravel(xp.scipy_linalg.expm(z[0])), xp.ravel(xp.scipy_linalg.expm_frechet(z[0], z[1])[1])]),
    shapes=st.sampled_from([(2, 2, 2), (2, 3, 3)]))
complex_case("scipy_linalg.sqrtm", lambda xp, z: xp.scipy_linalg.sqrtm(z + 2.0 * np.eye(z.shape[-1])),
             shapes=st.sampled_from([(2, 2), (3, 3), (2, 3, 3)]))
complex_case("scipy_linalg.solve_sylvester, solve_continuous_lyapunov", lambda xp, z: xp.concatenate([
    xp.ravel(xp.scipy_linalg.solve_sylvester(z[0] + 3.0 * np.eye(z.shape[-1]), z[1] + 3.0 * np.eye(z.shape[-1]), z[2])),
    xp.ravel(xp.scipy_linalg.solve_continuous_lyapunov(z[0] + 3.0 * np.eye(z.shape[-1]), z[2]))]),
    shapes=st.sampled_from([(3, 2, 2), (3, 3, 3)]))
complex_case("scipy_linalg.solve_triangular (trans 0, 1, 2), cho_solve", lambda xp, z: xp.concatenate([
    xp.scipy_linalg.solve_triangular(z[0] + 3.0 * np.eye(3), z[1, 0], trans, lower, unit_diagonal=trans == 1)
    for trans in (0, 1, 2) for lower in (False, True)] + [
    xp.ravel(xp.scipy_linalg.cho_solve((z[0] + 3.0 * np.eye(3), lower), z[1, :, :2])) for lower in (False, True)]),
    shapes=st.just((2, 3, 3)))
complex_case("scipy_linalg.solve (gen, sym, her)", lambda xp, z: xp.concatenate([
    xp.ravel(xp.scipy_linalg.solve(z[0] + 3.0 * np.eye(3), z[1], lower=lower, assume_a=assume_a))
    for assume_a in ("gen", "sym", "her") for lower in (False, True)]), shapes=st.just((2, 3, 3)))
complex_case("scipy_linalg.solve_banded", lambda xp, z: xp.concatenate([
    xp.ravel(xp.scipy_linalg.solve_banded((1, 1), z[:3] + np.array([[0.0], [3.0], [0.0]]), z[3])),
    xp.ravel(xp.scipy_linalg.solve_banded((2, 0), z[:3] + np.array([[3.0], [0.0], [0.0]]), z[3]))]),
    shapes=st.sampled_from([(4, 1), (4, 3), (4, 4)]))
for _name, _function in complex_special.items():
    complex_case(f"scipy.special.{_name}", lambda xp, z, f=_function: f(z))
complex_case("max, min (lexicographic, as NumPy)", lambda xp, z: xp.stack([xp.max(z), xp.min(z)]), distinct)
complex_case("real_if_close", lambda xp, z: xp.real_if_close(z))
complex_case("nan_to_num, linspace", lambda xp, z: xp.concatenate([xp.nan_to_num(z), xp.linspace(z[0], z[1], 3)]),
             shapes=st.just((2,)))


# --- the checks ----------------------------------------------------------------------------------

def tensor_input(x):
    return ad.constant(np.array(x, dtype=np.float64))


def largest(values) -> float:
    """max(1, the largest magnitude): an entry near zero in a matrix of large entries (expm's) carries
    rounding errors of the size of the large ones, which another BLAS rounds differently."""
    return max(1.0, float(np.max(np.abs(values), initial=0.0)))


def reverse_mode_jacobian(problem):
    """The Jacobian from one batched reverse sweep."""
    x = tensor_input(problem.x)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = problem.engine(x)
    return tape.jacobian(y, x, unconnected_gradients="zero").numpy()


@pytest.mark.parametrize("name", CASES)
@FEW
@given(data=st.data())
def test_value_matches_numpy(name, data):
    problem = data.draw(CASES[name])
    result = problem.engine(tensor_input(problem.x))
    expected = problem.fn(NP, problem.x)
    assert isinstance(result, ad.Tensor)
    assert result.shape == np.shape(expected)
    assert result.dtype == np.float64
    tolerance = FLOAT64_TOLERANCE.get(name, 1e-12)
    np.testing.assert_allclose(result.numpy(), expected, rtol=tolerance, atol=tolerance * largest(expected))


# scipy 1.17's expm is the less accurate of the two on matrices of norm about 7: against an
# extended-precision Taylor reference its relative error reaches 3,600 ulps (8e-13) over 500 draws
# (ours: under 50 ulps), which no rounding of the compared values explains; scipy's value is a
# reference to that accuracy, with a margin of 5.
FLOAT64_TOLERANCE = {"scipy_linalg.expm (scaled and squared)": 4e-12}


# exp of a matrix of norm about 6 takes squarings, each doubling the relative rounding error: in float32,
# ours and scipy's differ from the float64 value (rounded) by up to 6e-6.
FLOAT32_TOLERANCE = {"scipy_linalg.expm (scaled and squared)": 2e-5}


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_float32_stays_float32_in_values_and_derivatives(name, data):
    """The gradient is taken while an outer tape records, so no final cast can hide an upcast rule."""
    problem = data.draw(CASES[name])
    x = ad.constant(problem.x.astype(np.float32))
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = problem.engine(x)
        g = inner.gradient(y, x, unconnected_gradients="zero")
    expected = problem.fn(NP, problem.x.astype(np.float32))
    assert y.dtype == expected.dtype  # float32 unless the problem mixes in float64 constants
    assert g.dtype == np.float32 or y.dtype == np.float64
    tolerance = FLOAT32_TOLERANCE.get(name, 1e-6)
    np.testing.assert_allclose(y.numpy(), expected, rtol=tolerance, atol=tolerance * largest(expected))


@pytest.mark.parametrize("name", CASES)
@FEW
@given(data=st.data())
def test_first_and_second_derivatives_match_finite_differences(name, data):
    problem = data.draw(CASES[name])
    ad.check_grad(problem.engine, problem.x, order=2)


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_batched_sweep_equals_single_sweeps(name, data):
    problem = data.draw(CASES[name])
    x = tensor_input(problem.x)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = problem.engine(x)
    batched = tape.jacobian(y, x, unconnected_gradients="zero").numpy()
    rows = [tape.gradient(y, x, output_gradients=e.reshape(y.shape), unconnected_gradients="zero").numpy()
            for e in np.eye(y.size)]
    single = np.stack(rows).reshape(y.shape + x.shape) if rows else np.zeros(y.shape + x.shape)
    np.testing.assert_allclose(batched, single, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_batched_second_order_sweep_equals_single_sweeps(name, data):
    """Sweeps over a recorded gradient: one with k random cotangents == k single sweeps."""
    problem = data.draw(CASES[name])
    rng = np.random.default_rng(0)
    x = tensor_input(problem.x)
    with ad.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = problem.engine(x)
        g = inner.gradient(y, x, output_gradients=rng.standard_normal(y.shape),
                           unconnected_gradients="zero")
    hessian = outer.jacobian(g, x, unconnected_gradients="zero").numpy().reshape(x.size, x.size)
    cotangents = rng.standard_normal((3, x.size))
    single = [outer.gradient(g, x, output_gradients=v.reshape(x.shape), unconnected_gradients="zero").numpy()
              for v in cotangents]
    np.testing.assert_allclose(np.reshape(single, (3, x.size)), cotangents @ hessian, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_recorded_batched_sweep_equals_recorded_single_sweeps(name, data):
    """The rules run on Tensors with a batch axis while an outer tape records them."""
    problem = data.draw(CASES[name])
    x = tensor_input(problem.x)
    with ad.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with ad.GradientTape(persistent=True) as inner:
            inner.watch(x)
            y = problem.engine(x)
        batched = inner.jacobian(y, x, unconnected_gradients="zero")
        rows = [inner.gradient(y, x, output_gradients=e.reshape(y.shape), unconnected_gradients="zero")
                for e in np.eye(y.size)]
        single = anp.reshape(anp.stack(rows), batched.shape) if rows else ad.constant(np.zeros(batched.shape))
        weights = np.random.default_rng(0).standard_normal(batched.shape)
        batched_sum = anp.sum(batched * weights)
        single_sum = anp.sum(single * weights)
    np.testing.assert_allclose(batched.numpy(), single.numpy(), rtol=1e-12, atol=1e-12)
    through_batched = outer.gradient(batched_sum, x, unconnected_gradients="zero").numpy()
    through_single = outer.gradient(single_sum, x, unconnected_gradients="zero").numpy()
    np.testing.assert_allclose(through_batched, through_single, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_jvp_equals_jacobian_times_tangent(name, data):
    problem = data.draw(CASES[name])
    jacobian = reverse_mode_jacobian(problem)
    tangent = np.random.default_rng(1).standard_normal(problem.x.shape)
    x = tensor_input(problem.x)
    with ad.ForwardAccumulator(x, ad.constant(tangent)) as accumulator:
        y = problem.engine(x)
    jvp = accumulator.jvp(y, unconnected_gradients="zero").numpy()
    expected = jacobian.reshape(y.size, x.size) @ tangent.ravel()
    np.testing.assert_allclose(jvp.ravel(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", CASES)
@FEWER
@given(data=st.data())
def test_forward_over_reverse_hvp_equals_hessian_times_tangent(name, data):
    """The JVP rules of the ops inside the VJP rules: d/dt grad <w, f(x + t v)> = H_w v."""
    problem = data.draw(CASES[name])
    rng = np.random.default_rng(2)
    x = tensor_input(problem.x)
    tangent = rng.standard_normal(x.shape)
    with ad.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = problem.engine(x)
        weights = rng.standard_normal(y.shape)
        g = inner.gradient(y, x, output_gradients=weights, unconnected_gradients="zero")
    hessian = outer.jacobian(g, x, unconnected_gradients="zero").numpy().reshape(x.size, x.size)
    with ad.ForwardAccumulator(x, ad.constant(tangent)) as accumulator:
        with ad.GradientTape() as tape:
            tape.watch(x)
            y = problem.engine(x)
        g = tape.gradient(y, x, output_gradients=weights, unconnected_gradients="zero")
    hvp = accumulator.jvp(g, unconnected_gradients="zero").numpy()
    np.testing.assert_allclose(hvp.ravel(), hessian @ tangent.ravel(), rtol=1e-10, atol=1e-10)


# --- closed forms and special points -----------------------------------------------------------

def gradient_and_hessian(f, x):
    x = tensor_input(x)
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, unconnected_gradients="zero")
    return g.numpy(), outer.jacobian(g, x, unconnected_gradients="zero").numpy()


@pytest.mark.parametrize("x", [[0.0, 0.0, 2.0, 3.0], [0.0, 5.0, 2.0, 3.0], [0.0, 0.0, 0.0, 3.0],
                               [1.5, 2.0, -1.0, 3.0]])
def test_prod_hessian_is_finite_and_exact_at_zeros(x):
    x = np.array(x)
    g, h = gradient_and_hessian(anp.prod, x)
    others = lambda *skip: np.prod([v for k, v in enumerate(x) if k not in skip])
    np.testing.assert_array_equal(g, [others(i) for i in range(4)])
    np.testing.assert_array_equal(h, [[0.0 if i == j else others(i, j) for j in range(4)] for i in range(4)])


def test_max_ties_share_the_gradient_equally():
    g, _ = gradient_and_hessian(anp.max, np.array([1.0, 3.0, 3.0, -2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])
    g, _ = gradient_and_hessian(lambda x: anp.sum(anp.min(x, axis=0)), np.array([[1.0, 2.0], [1.0, 0.0]]))
    np.testing.assert_array_equal(g, [[0.5, 0.0], [0.5, 1.0]])


def test_indexing_with_tensors_of_indices_and_masks():
    x = np.array([0.5, -2.0, 3.0, 1.0])
    g, _ = gradient_and_hessian(lambda t: t[anp.argmax(t)] ** 2 + anp.sum(t[t > 0.7]), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 7.0, 1.0])


@pytest.mark.parametrize("f", [
    lambda x: np.sum(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2),  # disjoint, repeated
    lambda x: np.sum((x[1:] - x[:-1]) ** 2 * x[2:-1].sum()),                     # overlapping
    lambda x: x[0] * x[3] + np.sum(np.sin(x[1:4]) * x[::3][:2].sum()),           # ints and chains
    lambda x: np.sum(x * x) + np.sum(np.exp(x[::2])) + x[-1],                   # dense + sliced
    lambda x: np.sum(x[()] * x[::-1]) + np.sum(x[::-3] ** 2) + x[2] * x[2],     # whole, reversed
    lambda x: np.sum(np.reshape(x * 1.5, (2, 4))[:, 1:] ** 3) + np.sum((2.0 * x)[2:5]),  # 2-D, and
    lambda x: np.sum(x[0] * x * x + x[1] * x + x[2]),          # intermediates that are sliced; seeds
])                                                            # reaching x[2] unchanged (constants)
def test_slice_reads_accumulate_in_first_and_second_order_sweeps(f):
    """Slice cotangents stay sparse until needed (SlicedCotangent), at first and second order."""
    x0 = np.linspace(-1.0, 1.3, 8)
    x = ad.constant(x0)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, central_differences(f, x0), rtol=1e-7, atol=1e-7)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), g)  # nothing was written in place
    x32 = ad.constant(x0.astype(np.float32))
    with ad.GradientTape() as tape:
        tape.watch(x32)
        y = f(x32)
    assert tape.gradient(y, x32).dtype == np.float32
    ad.check_grad(f, x0, order=2)  # nested sweeps: sliced constants meet recorded cotangents


def test_hessian_of_slice_reads_is_exact_and_symmetric():
    """f = x0 * sum(x**2) + x1 * sum(x) + n * x2, so H = 2 x0 I + e0 (2x)' + (2x) e0' + e1 1' + 1 e1'."""
    x0 = np.linspace(0.1, 0.9, 6)
    h = ad.hessian(lambda x: np.sum(x[0] * x * x + x[1] * x + x[2]))(x0)
    e0, e1, ones = np.eye(6)[0], np.eye(6)[1], np.ones(6)
    expected = 2 * x0[0] * np.eye(6) + np.outer(e0, 2 * x0) + np.outer(2 * x0, e0) \
        + np.outer(e1, ones) + np.outer(ones, e1)
    np.testing.assert_allclose(h, expected, rtol=1e-14, atol=1e-14)


def test_slice_read_of_a_0d_tensor_adds_to_a_scalar_cotangent():
    x = ad.constant(2.0)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = x[()] + x * x  # the seed reaches x[()] as a 0-d array, x * x adds a NumPy scalar
    assert tape.gradient(y, x).numpy() == 5.0


def test_repeated_indices_accumulate_in_the_gradient():
    g, h = gradient_and_hessian(lambda x: anp.sum(x[[0, 2, 2, 0, 2]] ** 2), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [4.0, 0.0, 18.0])
    np.testing.assert_array_equal(h, np.diag([4.0, 0.0, 6.0]))


@pytest.mark.parametrize("f, x, gradient, hessian", [
    (lambda x: anp.sum(anp.exp(x)), [0.0, 1.0], [1.0, np.e], np.diag([1.0, np.e])),
    (lambda x: anp.sum(anp.log(x)), [2.0, 4.0], [0.5, 0.25], np.diag([-0.25, -1 / 16])),
    (lambda x: anp.sum(anp.sigmoid(x)), [0.0], [0.25], [[0.0]]),
    (lambda x: anp.sum(anp.tanh(x)), [0.0], [1.0], [[0.0]]),
    (lambda x: x[0] ** 3 * x[1], [2.0, 3.0], [36.0, 8.0], [[36.0, 12.0], [12.0, 0.0]]),
    (lambda x: anp.linalg.norm(x), [3.0, 4.0], [0.6, 0.8],
     (np.eye(2) - np.outer([0.6, 0.8], [0.6, 0.8])) / 5),
    (lambda x: anp.logsumexp(x), [0.0, 0.0], [0.5, 0.5], [[0.25, -0.25], [-0.25, 0.25]]),
    (lambda x: anp.linalg.det(anp.reshape(x, (2, 2))), [1.0, 2.0, 3.0, 4.0], [4.0, -3.0, -2.0, 1.0],
     [[0, 0, 0, 1], [0, 0, -1, 0], [0, -1, 0, 0], [1, 0, 0, 0]]),
])
def test_closed_form_gradients_and_hessians(f, x, gradient, hessian):
    g, h = gradient_and_hessian(f, np.array(x))
    np.testing.assert_allclose(g, gradient, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(h, hessian, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("call, error, message", [
    (lambda a: anp.linalg.svd(a), NotImplementedError, "full_matrices=False"),
    (lambda a: anp.linalg.svd(a, hermitian=True), NotImplementedError, "hermitian"),
    (lambda a: anp.linalg.qr(a), NotImplementedError, "at least as many rows as columns"),
    (lambda a: anp.linalg.qr(a.T, mode="complete"), NotImplementedError, "mode='complete'"),
    (lambda a: anp.linalg.norm(a, 3), ValueError, "Invalid norm order"),
    (lambda a: anp.linalg.norm(anp.stack([a, a]), 2), ValueError, "Improper number of dimensions"),
])
def test_unsupported_linalg_calls_say_why(call, error, message):
    with pytest.raises(error, match=message):
        call(ad.constant(np.ones((2, 3))))


def test_pinv_of_a_rank_deficient_matrix_drops_the_zero_singular_value():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(anp.linalg.pinv(ad.constant(a)).numpy(), np.linalg.pinv(a), atol=1e-15)


@pytest.mark.parametrize("x", [0.0, 0.004, -0.009, 0.011])
def test_sinc_derivatives_near_and_at_zero(x):
    """sinc = 1 - (pi x)^2/6 + ..., so sinc''(0) = -pi^2/3; around the switch at 0.01 both sides agree."""
    y = np.pi * x
    g, h = gradient_and_hessian(lambda t: anp.sinc(t), np.array(x))
    if x == 0.0:
        assert g == 0.0
        np.testing.assert_allclose(h, -np.pi ** 2 / 3, rtol=1e-15)
    else:
        np.testing.assert_allclose(g, np.pi * (y * np.cos(y) - np.sin(y)) / y ** 2, rtol=1e-9)
        np.testing.assert_allclose(h, np.pi ** 2 * ((2 - y * y) * np.sin(y) - 2 * y * np.cos(y)) / y ** 3,
                                   rtol=1e-7)


def test_logsumexp_is_stable_for_large_and_infinite_inputs():
    g, _ = gradient_and_hessian(anp.logsumexp, np.array([1000.0, 1000.0]))
    np.testing.assert_allclose(g, [0.5, 0.5])
    x = tensor_input([-np.inf, 0.0])
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = anp.logsumexp(x)
    assert y.numpy() == 0.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 1.0])


def test_det_derivatives_are_exact_at_a_singular_matrix():
    """d det / dA is the cofactor matrix, which exists everywhere (closed form for this rank-2 A);
    the Hessian of det is exact there too (det is a cubic: central differences are exact)."""
    a = np.arange(1.0, 10.0).reshape(3, 3)
    g, h = gradient_and_hessian(anp.linalg.det, a)
    np.testing.assert_allclose(g, [[-3, 6, -3], [6, -12, 6], [-3, 6, -3]], rtol=1e-12, atol=1e-12 * 9)
    # d^2 det / dA_ij dA_kl = +-A_mn for i != k, j != l (the entry left over), 0 otherwise.
    expected = np.zeros((3, 3, 3, 3))
    for i, j, k, l in np.ndindex(3, 3, 3, 3):
        if i != k and j != l:
            m, n = 3 - i - k, 3 - j - l
            sign = np.linalg.det(np.eye(3)[[i, k, m]]) * np.linalg.det(np.eye(3)[[j, l, n]])
            expected[i, j, k, l] = sign * a[m, n]
    np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-12 * 9)
    ad.check_grad(anp.linalg.det, np.zeros((2, 3, 3)), order=2)  # rank 0


def test_hypot_neither_overflows_nor_underflows():
    for scale in (1e200, 1e-200):
        x = np.array([3.0, 4.0]) * scale
        value, gradient = ad.value_and_grad(lambda t: anp.hypot(t[0], t[1]))(x)
        np.testing.assert_allclose(value, 5 * scale, rtol=1e-15)
        np.testing.assert_allclose(gradient, [0.6, 0.8], rtol=1e-15)
        np.testing.assert_allclose(anp.linalg.norm(ad.constant(x)).numpy(), 5 * scale, rtol=1e-15)


@pytest.mark.parametrize("call", [
    lambda: anp.hypot(2.0, 0.6), lambda: anp.sigmoid(0.3), lambda: anp.expit(0.3),
    lambda: anp.nanmean([1.0, np.nan]), lambda: anp.quantile([1.0, 2.0], 0.3),
    lambda: anp.convolve([1.0, 2.0], [0.5, 1.0]), lambda: anp.hypot(ad.constant(2.0), 0.6),
    lambda: anp.sigmoid(ad.constant(0.3)),
])
def test_python_floats_compute_in_float64(call):
    """NumPy 2 keeps Python numbers weak: promoting them with float16 would give float16."""
    assert np.result_type(ad.core.value_of(call())) == np.float64


_M32 = np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)
SWEEP_INPUTS = {
    "Python float": (0.3,), "two Python floats": (0.3, 0.6),
    "float32 scalar": (np.float32(0.3),), "two float32 scalars": (np.float32(0.3), np.float32(0.6)),
    "float32 array": (np.array([0.3, 0.7], np.float32),),
    "two float32 arrays": (np.array([0.3, 0.7], np.float32), np.array([0.2, 0.6], np.float32)),
    "float32 array, Python float": (np.array([0.3, 0.7], np.float32), 0.5),
    "Python float, float32 array": (0.5, np.array([0.3, 0.7], np.float32)),
    "Python int": (3,), "int array": (np.array([1, 2]),), "list": ([0.3, 0.7],), "two lists": ([0.3, 0.7], [0.2, 0.6]),
    "float32 matrix": (_M32,), "two float32 matrices": (_M32, _M32), "float32 matrix, Python float": (_M32, 0.5),
}


# Calls NumPy takes by bending its own rules, which autodiff refuses with an error (in the sweep below).
REFUSED_WHERE_NUMPY_BENDS = {
    "take": "float indices", "roll": "a float shift", "corrcoef": "a scalar as the samples",
    "cov": "a scalar as the samples", "gradient": "an array of sample points (NotImplementedError, uniform grids only)",
    "linalg.multi_dot": "one array read as a sequence of scalars", "linalg.norm": "a list as ord",
}


def _namesakes():
    """(name, autodiff's function, NumPy's or scipy's of that name) for every op of autodiff.numpy."""
    pairs = [(name, f, getattr(np, name)) for name, f in anp.NUMPY_FUNCTIONS.items()]
    pairs += [(f"linalg.{n}", getattr(anp.linalg, n), getattr(np.linalg, n)) for n in anp.linalg.__all__
              if hasattr(np.linalg, n)]
    pairs += [(f"special.{n}", getattr(anp.special, n), getattr(scipy.special, n)) for n in anp.special.__all__]
    beyond = {"sigmoid": scipy.special.expit, "expit": scipy.special.expit, "logsumexp": scipy.special.logsumexp,
              "softmax": scipy.special.softmax, "log_softmax": scipy.special.log_softmax,
              "softplus": lambda x: np.logaddexp(0.0, x)}
    return pairs + [(name, getattr(anp, name), f) for name, f in beyond.items()]


def test_no_op_computes_in_a_lower_precision_than_numpys_own():
    """Every op of autodiff.numpy on Python floats, float32 scalars and arrays (mixed with Python
    floats), ints and lists: where NumPy's (or scipy's) namesake gives a float, autodiff's is a
    float of at least its precision (float16 from Python floats was issue 20's bug; float32 where
    NumPy's non-ufunc dot, inner and polyval turn a Python float into float64 was another)."""
    lower, compared = [], 0
    for name, ours, theirs in _namesakes():
        arity = getattr(theirs, "nin", None)      # a ufunc's second positional argument is out=
        for label, args in SWEEP_INPUTS.items():
            if arity is not None and len(args) != arity:
                continue
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")   # NumPy's own about odd calls (2-vector cross)
                    expected = np.asarray(theirs(*args)).dtype
            except Exception:                     # not a call NumPy takes
                continue
            if expected.kind not in "fc":
                continue
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = np.asarray(ad.core.value_of(ours(*args))).dtype
            except Exception:
                assert name in REFUSED_WHERE_NUMPY_BENDS, f"{name}({label}) raises where NumPy's does not"
                continue
            compared += 1
            # scipy computes polygamma in float64 whatever the input; autodiff keeps float32, as
            # NumPy's ufuncs and scipy's other special functions do (see NP.special above)
            kept_float32 = name == "special.polygamma" and got == np.float32
            if got.kind not in "fc" or (np.finfo(got).bits < np.finfo(expected).bits and not kept_float32):
                lower.append(f"{name}({label}): {got}, NumPy's {expected}")
    assert lower == []
    assert compared > 1100       # the sweep reached the ops (1,189 calls with NumPy 2.4)


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "exp2", "sinc", "sigmoid", "fabs", "nan_to_num", "diag",
                                  "hypot", "float_power", "logaddexp2", "polyval", "convolve", "dot", "inner"])
def test_array_likes_are_taken_as_numpy_takes_them(name):
    """A list of floats (or a Python scalar) where NumPy takes an array_like; ints become floats in fabs."""
    theirs = {"sigmoid": scipy.special.expit}.get(name, getattr(np, name, None))
    ours = getattr(anp, name)
    arity = 1 if name in ("deg2rad", "rad2deg", "exp2", "sinc", "sigmoid", "fabs", "nan_to_num", "diag") else 2
    args = ([0.3, 0.7], [0.2, 0.1])[:arity]
    np.testing.assert_allclose(ad.core.value_of(ours(*args)), theirs(*args), rtol=1e-15)
    assert anp.fabs(-3) == 3.0 and anp.fabs(np.array([-1, 2])).dtype == np.float64
    np.testing.assert_array_equal(anp.convolve(0.3, [1.0, 2.0]), np.convolve(0.3, [1.0, 2.0]))   # a scalar: one entry


def test_norm_gradient_at_zero_is_zero():
    g = gradient_and_hessian(anp.linalg.norm, np.zeros(3))[0]
    np.testing.assert_array_equal(g, np.zeros(3))


# --- non-differentiable functions ---------------------------------------------------------------

NON_DIFFERENTIABLE = {
    "x > 0": lambda xp, x: x > 0,
    "x <= 0.5": lambda xp, x: x <= 0.5,
    "x == x": lambda xp, x: x == x,
    "greater": lambda xp, x: xp.greater(x, 0.1),
    "argmax": lambda xp, x: xp.argmax(x),
    "argmin (axis)": lambda xp, x: xp.argmin(x, axis=0),
    "argsort": lambda xp, x: xp.argsort(x),
    "floor": lambda xp, x: xp.floor(x),
    "ceil": lambda xp, x: xp.ceil(x),
    "round": lambda xp, x: xp.round(x, 1),
    "sign": lambda xp, x: xp.sign(x),
    "isfinite": lambda xp, x: xp.isfinite(x),
    "floor_divide": lambda xp, x: x // 0.7,
    "linalg.norm(ord=0)": lambda xp, x: xp.linalg.norm(x[0], 0),
}


@pytest.mark.parametrize("name", NON_DIFFERENTIABLE)
def test_non_differentiable_functions_have_values_and_no_gradient(name):
    fn = NON_DIFFERENTIABLE[name]
    value = off_grid(np.random.default_rng(3), (3, 2))
    x = tensor_input(value)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = fn(anp, x)
    np.testing.assert_array_equal(np.asarray(y), fn(NP, value))
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("step", ["floor", "round", "sign"])
def test_non_differentiable_factor_is_a_constant_in_a_product(step):
    x = off_grid(np.random.default_rng(4), (5,))
    g, h = gradient_and_hessian(lambda t: anp.sum(t * getattr(anp, step)(t)), x)
    np.testing.assert_array_equal(g, getattr(np, step)(x))
    np.testing.assert_array_equal(h, np.zeros((5, 5)))
