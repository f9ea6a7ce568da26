"""One table, ``anp.NUMPY_FUNCTIONS``, is autodiff.numpy's NumPy names: each one, called through NumPy on
a Tensor, is the autodiff.numpy function (same value, same gradient), NumPy's value, and (where it is
differentiable) a gradient that matches finite differences. No NumPy name in autodiff.numpy escapes it.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.tree import flatten

V0 = np.array([0.3, 0.8, 0.55, 0.2, 0.65, 0.45])  # distinct, in (0, 1), none at a kink of the samples


def m(v):
    return v.reshape(2, 3)


def w(v):
    """A second operand, different from m(v) everywhere (in [0.7, 1.3])."""
    return (v[::-1] + 0.5).reshape(2, 3)


def square(v):
    """A well-conditioned, non-symmetric 3 x 3 matrix."""
    return 2.0 * np.eye(3) + np.outer(v[:3], v[3:])


def spd(v):
    a = square(v)
    return a @ a.T


def pair(v):
    return [v[:3], v[3:]]


def mask(v):
    return m(v) > 0.5


# Arguments, built from one vector v (a Tensor, or an ndarray for NumPy's reference value). A name not
# listed takes (m(v),), or (m(v), w(v)) if it is a ufunc of two arguments.
SAMPLES = {
    "arccosh": lambda v: (m(v) + 1.5,),
    "array_split": lambda v: (v, 4),
    "astype": lambda v: (m(v), np.float32),
    "atleast_1d": lambda v: (v[0],),
    "broadcast_to": lambda v: (v[:3], (2, 3)),
    "clip": lambda v: (m(v), 0.35, 0.7),
    "concatenate": lambda v: ([m(v), w(v)],),
    "copysign": lambda v: (m(v), w(v) - 1.0),
    "diag": lambda v: (v[:3],),
    "dot": lambda v: (m(v), w(v).T),
    "einsum": lambda v: ("ij,kj->ik", m(v), w(v)),
    "expand_dims": lambda v: (m(v), 1),
    "heaviside": lambda v: (m(v) - 0.5, 0.5),
    "hstack": lambda v: (pair(v),),
    "inner": lambda v: (m(v), w(v)),
    "matmul": lambda v: (m(v), w(v).T),
    "moveaxis": lambda v: (m(v), 0, 1),
    "outer": lambda v: (v[:3], v[3:]),
    "pad": lambda v: (m(v), 1),
    "repeat": lambda v: (m(v), 2),
    "reshape": lambda v: (m(v), (3, 2)),
    "split": lambda v: (v, 3),
    "squeeze": lambda v: (v.reshape(1, 2, 3),),
    "stack": lambda v: (pair(v),),
    "swapaxes": lambda v: (m(v), 0, 1),
    "take": lambda v: (v, [4, 0, 2]),
    "take_along_axis": lambda v: (m(v), np.array([[2, 0, 1], [1, 1, 0]]), 1),
    "tensordot": lambda v: (m(v), w(v), ([1], [1])),
    "tile": lambda v: (v[:3], 2),
    "vdot": lambda v: (v, v[::-1]),
    "vstack": lambda v: (pair(v),),
    "where": lambda v: (mask(v), m(v), w(v)),
    # composite
    "append": lambda v: (v[:3], v[3:]),
    "average": lambda v: (m(v), 1, [1.0, 2.0, 0.5]),
    "column_stack": lambda v: (pair(v),),
    "convolve": lambda v: (v, v[:3]),
    "correlate": lambda v: (v, v[:2]),
    "cross": lambda v: (v[:3], v[3:]),
    "diff": lambda v: (v,),
    "interp": lambda v: (v, [0.0, 0.35, 1.0], v[:3]),
    "kron": lambda v: (v[:2], v[2:4]),
    "percentile": lambda v: (v, 45.0),
    "polyval": lambda v: (v[:3], v[3:]),
    "quantile": lambda v: (v, 0.3),
    "roll": lambda v: (v, 2),
    "trapezoid": lambda v: (v,),
    # no derivative
    **{name: (lambda v: (m(v), w(v))) for name in ["allclose", "array_equal", "isclose"]},
    "all": lambda v: (mask(v),),
    "any": lambda v: (mask(v),),
    "argwhere": lambda v: (mask(v),),
    "bitwise_and": lambda v: (mask(v), m(v) > 0.4),
    "bitwise_or": lambda v: (mask(v), m(v) > 0.4),
    "bitwise_xor": lambda v: (mask(v), m(v) > 0.4),
    "count_nonzero": lambda v: (mask(v),),
    "flatnonzero": lambda v: (mask(v),),
    "full_like": lambda v: (m(v), 2.0),
    "invert": lambda v: (mask(v),),
    "isfinite": lambda v: (m(v) - 0.5,),
    "logical_and": lambda v: (mask(v), w(v) > 1.0),
    "logical_not": lambda v: (mask(v),),
    "logical_or": lambda v: (mask(v), w(v) > 1.0),
    "logical_xor": lambda v: (mask(v), w(v) > 1.0),
    "nonzero": lambda v: (mask(v),),
    "result_type": lambda v: (m(v), np.float32),
    "searchsorted": lambda v: (np.sort(v), 0.5),
    "sign": lambda v: (m(v) - 0.5,),
    "signbit": lambda v: (m(v) - 0.5,),
    **{name: (lambda v: (3.0 * m(v),))
       for name in ["around", "ceil", "fix", "floor", "rint", "round", "trunc"]},
}
LINALG_SAMPLES = {
    "cholesky": lambda v: (spd(v),),
    "det": lambda v: (square(v),),
    "eigh": lambda v: (spd(v),),
    "eigvalsh": lambda v: (spd(v),),
    "inv": lambda v: (square(v),),
    "lstsq": lambda v: (m(v).T, v[:3]),
    "matmul": lambda v: (m(v), w(v).T),
    "matrix_power": lambda v: (square(v), 3),
    "multi_dot": lambda v: ([m(v), w(v).T, m(v)],),
    "norm": lambda v: (m(v),),
    "pinv": lambda v: (m(v),),
    "qr": lambda v: (m(v).T,),
    "slogdet": lambda v: (square(v),),
    "solve": lambda v: (square(v), v[:3]),
    "svd": lambda v: (m(v), False),
    "svdvals": lambda v: (m(v),),
}

# No gradient flows through these: their values pass through and the tape sees nothing.
WITHOUT_DERIVATIVE = {
    "all", "allclose", "any", "argmax", "argmin", "argsort", "argwhere", "around", "array_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "ceil", "count_nonzero", "empty_like", "equal", "fix",
    "flatnonzero", "floor", "floor_divide", "full_like", "greater", "greater_equal", "heaviside",
    "invert", "isclose", "isfinite", "isinf", "isnan", "less", "less_equal", "logical_and",
    "logical_not", "logical_or", "logical_xor", "ndim", "nonzero", "not_equal", "ones_like",
    "result_type", "rint", "round", "searchsorted", "shape", "sign", "signbit", "size", "trunc",
    "unique", "zeros_like",
}
ARBITRARY_VALUES = {"empty_like"}  # NumPy leaves the values uninitialized: only the shape is compared
SINGLE_PRECISION = {"astype"}  # a float32 result: finite differences in float64 cannot resolve it


def _arguments(namespace, name: str, v):
    samples = LINALG_SAMPLES if namespace is np.linalg else SAMPLES
    if name in samples:
        return samples[name](v)
    function = getattr(namespace, name)
    return (m(v), w(v)) if isinstance(function, np.ufunc) and function.nin == 2 else (m(v),)


def _summary(result):
    """A scalar of every floating Tensor the result holds (0 if it holds none)."""
    return sum(anp.sum(leaf * leaf) for leaf in flatten(result)[0]
               if isinstance(leaf, ad.Tensor) and leaf.dtype.kind == "f")


def _assert_same(result, expected, name: str):
    leaves, expected_leaves = flatten(result)[0], flatten(expected)[0]
    assert len(leaves) == len(expected_leaves)
    for leaf, expected_leaf in zip(leaves, expected_leaves):
        value, expected_value = np.asarray(ad.core.value_of(leaf)), np.asarray(expected_leaf)
        assert value.shape == expected_value.shape
        if name in ARBITRARY_VALUES:
            continue
        if value.dtype.kind in "fc":
            np.testing.assert_allclose(value, expected_value, rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_array_equal(value, expected_value)


CASES = [pytest.param(np, name, id=name) for name in sorted(anp.NUMPY_FUNCTIONS)] + \
    [pytest.param(np.linalg, name, id=f"linalg.{name}") for name in sorted(anp.linalg.__all__)]


@pytest.mark.parametrize("namespace, name", CASES)
def test_numpy_on_a_tensor_is_the_autodiff_numpy_function(namespace, name):
    ours = anp.linalg if namespace is np.linalg else anp
    numpy_function, autodiff_function = getattr(namespace, name), getattr(ours, name)
    v = ad.constant(V0)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(v)
        dispatched = numpy_function(*_arguments(namespace, name, v))
        direct = autodiff_function(*_arguments(namespace, name, v))
        dispatched_total, direct_total = _summary(dispatched), _summary(direct)
    _assert_same(dispatched, numpy_function(*_arguments(namespace, name, V0)), name)
    _assert_same(dispatched, direct, name)
    if not isinstance(dispatched_total, ad.Tensor):  # no floating result (comparisons, indices)
        assert name in WITHOUT_DERIVATIVE
        return
    gradient = tape.gradient(dispatched_total, v)
    if name in WITHOUT_DERIVATIVE:
        assert gradient is None
        return
    np.testing.assert_array_equal(gradient.numpy(), tape.gradient(direct_total, v).numpy())
    if name not in SINGLE_PRECISION:
        ad.check_grad(lambda x: _summary(numpy_function(*_arguments(namespace, name, x))), V0, order=1)


def _dispatches(function) -> bool:
    """Whether NumPy hands a call of ``function`` on a Tensor to the Tensor (ufuncs and the functions
    with an ``__array_function__`` dispatcher do; constructors such as np.array do not)."""
    return isinstance(function, np.ufunc) or hasattr(function, "_implementation")


@pytest.mark.parametrize("namespace, ours, table", [
    (np, anp, anp.NUMPY_FUNCTIONS),
    (np.linalg, anp.linalg, anp.linalg.__all__),
])
def test_every_numpy_name_of_autodiff_numpy_is_in_the_table(namespace, ours, table):
    """A public name of autodiff.numpy that NumPy dispatches is either NumPy's own function or in
    the table, so NumPy's call on a Tensor reaches it."""
    outside = [name for name in dir(ours) if not name.startswith("_")
               and _dispatches(getattr(namespace, name, None))
               and getattr(ours, name) is not getattr(namespace, name) and name not in table]
    assert outside == []


def test_np_astype_on_a_tensor_casts_differentiably():
    x = ad.constant([0.5, -2.0])
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = np.astype(x, np.float32)
        total = np.sum(y * y)
    assert isinstance(y, ad.Tensor) and y.dtype == np.float32
    np.testing.assert_array_equal(tape.gradient(total, x).numpy(), [1.0, -4.0])


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_ignore_nans_as_numpy_does(name):
    """A NaN loses to any number: the result and its gradient come from the other operand."""
    a, b = np.array([1.0, np.nan, 3.0, np.nan]), np.array([np.nan, 2.0, 0.5, np.nan])
    x, y = ad.constant(a), ad.constant(b)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        result = getattr(np, name)(x, y)
        total = np.nansum(result)
    np.testing.assert_array_equal(result.numpy(), getattr(np, name)(a, b))
    expected_x = [1.0, 0.0, 1.0 if name == "fmax" else 0.0, 0.0]
    expected_y = [0.0, 1.0, 0.0 if name == "fmax" else 1.0, 0.0]
    np.testing.assert_array_equal(tape.gradient(total, x).numpy(), expected_x)
    np.testing.assert_array_equal(tape.gradient(total, y).numpy(), expected_y)
