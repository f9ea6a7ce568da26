"""autodiff.function(native=True) (the optional compiled extra): where numba is installed, a program
is one native function, equal to the NumPy replay within the rounding of the sums numba reorders
(sequential where NumPy sums pairwise) and of LLVM's exp, log, ...; a program it cannot take
replays as NumPy, and says why (without numba: tests/autodiff/test_small_calls.py)."""
from __future__ import annotations

import numpy as np
import pytest
from test_small_calls import python_calls

import autodiff as ad
from autodiff.transforms import cached_hvp
from hessopt import problems

pytest.importorskip("numba")

# A sum of m terms reordered moves by at most m eps sum|terms|; these programs sum at most a few
# hundred terms of moderate size: 1e-12 of the largest entry is that bound with room.
RTOL = 1e-12


def assert_within_rounding(native, plain):
    native, plain = np.asarray(native), np.asarray(plain)
    assert native.shape == plain.shape
    np.testing.assert_allclose(native, plain, rtol=RTOL, atol=RTOL * np.max(np.abs(plain), initial=1.0))


def is_numba(run) -> bool:
    """Whether ``run`` is a numba dispatcher, or the Python function making the arrays of one
    (``native._FloatWriter``'s wrapper: its ``kernel``)."""
    return type(getattr(run, "kernel", run)).__module__.startswith("numba")


def mlp_loss(parameters, inputs, targets):
    """A 2,033-parameter perceptron (8 -> 48 -> 32 -> 1, tanh) in plain NumPy: its squared error."""
    w1, b1 = parameters[:384].reshape(8, 48), parameters[384:432]
    w2, b2 = parameters[432:1968].reshape(48, 32), parameters[1968:2000]
    w3, b3 = parameters[2000:2032].reshape(32, 1), parameters[2032:]
    hidden = np.tanh(np.tanh(inputs @ w1 + b1) @ w2 + b2)
    return np.mean((hidden @ w3 + b3 - targets) ** 2)


@pytest.mark.parametrize("name", ["rosenbrock", "box_3d", "freudenstein_roth"])
def test_native_derivatives_of_mgh_problems_are_the_replay_within_rounding(name):
    problem = problems.get(name)
    native, plain = ad.function(problem.fun, native=True), ad.function(problem.fun)
    x = np.asarray(problem.x0, dtype=float)
    v = np.random.default_rng(0).standard_normal(x.size)
    for point in (x, x + 0.25, x * 1.5):
        assert_within_rounding(native.grad()(point), plain.grad()(point))
        operator, expected = native.hessian_operator(point), plain.hessian_operator(point)
        assert native.native_reason is None
        assert_within_rounding(operator.value, expected.value)
        assert_within_rounding(operator.gradient, expected.gradient)
        assert_within_rounding(operator.matvec(v), expected.matvec(v))
        # the batched sweeps (a dense Hessian's rows, written into one buffer) are native too
        assert_within_rounding(operator.to_dense(), expected.to_dense())
        assert_within_rounding(ad.hessian(native)(point), ad.hessian(plain)(point))
        assert native.native_reason is None
        # one product at a new point: the split joined into one native program
        assert_within_rounding(native.hessian_operator(point).matvec(v), expected.matvec(v))
        pending = native.hessian_operator(point)
        assert_within_rounding(pending.matvec(v), expected.matvec(v))
        # the native joined program returns the product alone: a second product starts the split
        assert "start" in python_calls(lambda: pending.matvec(2.0 * v))  # noqa: B023
        assert_within_rounding(pending.matvec(2.0 * v), expected.matvec(2.0 * v))
        assert_within_rounding(pending.gradient, expected.gradient)
        # the functional product, one program of (x, v)
        assert_within_rounding(ad.hvp(native)(point, v), expected.matvec(v))
    joined = native._fast_partial[cached_hvp][1].joined_program()
    assert is_numba(joined.run)
    grad = native.grad()
    calls = [call for call in python_calls(lambda: grad(x)) if call != "_numba_unpickle"]  # numba's profiling
    assert calls[:2] == ["__call__", "program"] and calls[2:] in ([], ["kernel"])  # ... shows the native program
    # as a call (with arrays out, the Python function making them and its numba kernel)
    (replay,) = next(iter(grad._cache.values()))
    assert is_numba(replay.run_program)
    hvp = ad.hvp(native)
    calls = [call for call in python_calls(lambda: hvp(x, v)) if call != "_numba_unpickle"]
    assert calls[:2] == ["__call__", "program"] and calls[2:] in ([], ["kernel"])
    (replay,) = next(iter(hvp._cache.values()))
    assert is_numba(replay.run_program)


def test_a_native_mlp_gradient_is_the_replay_within_rounding():
    rng = np.random.default_rng(0)
    parameters = 0.3 * rng.standard_normal(2033)
    inputs, targets = rng.standard_normal((256, 8)), rng.standard_normal((256, 1))
    native = ad.function(mlp_loss, native=True)
    gradient = native.grad()(parameters, inputs, targets)
    assert native.native_reason is None
    assert_within_rounding(gradient, ad.grad(mlp_loss)(parameters, inputs, targets))


def test_a_program_numba_cannot_take_replays_as_numpy_and_says_why():
    f = ad.function(lambda x: np.sum(x ** 2) if np.sum(x) > 0 else np.sum(x ** 3), native=True)
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(f.grad()(x), 2 * x)          # the NumPy replay: bit for bit
    assert f.native_reason == "the program has guards (branches)"
    g = ad.function(lambda x: np.sum(np.clip(x, 0.0, 1.5) * x), native=True)
    np.testing.assert_array_equal(g.grad()(x), [2.0, 1.5])
    assert g.native_reason == "Unsupported: the op clip"


def test_a_joined_program_numba_refuses_leaves_one_product_to_the_native_split(monkeypatch):
    import autodiff.jit.program as program_module
    native = ad.function(lambda x: np.sum(np.exp(x) * x[::-1]), native=True)
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -1.0])
    native.hessian_operator(x)
    assert native.native_reason is None
    monkeypatch.setattr(program_module, "native_program", lambda *args: (None, "refused"))
    operator = native.hessian_operator(x + 1.0)   # its joined program is made now, and refused by "numba"
    expected = native.hessian_operator(x + 1.0)
    assert expected.gradient.shape == x.shape     # started: the native split
    assert_within_rounding(operator.matvec(v), expected.matvec(v))   # the native split's saved floats
    assert native._fast_partial[cached_hvp][1].joined_program() is None
    np.testing.assert_array_equal(native.hessian_operator(x + 1.0).matvec(v), expected.matvec(v))


def test_a_large_tanh_runs_in_numpys_loop_and_is_the_replay_bit_for_bit():
    # from NUMPY_LOOP_FROM elements numba hands exp, tanh, ... to NumPy's loop (SIMD: up to ten times
    # numba's speed): the replay's function, so with elementwise ops alone the gradient is the replay's
    # bits (a smaller one is numba's: LLVM's tanh differs from NumPy's SIMD one in the last bit of many)
    from autodiff.jit.native import NUMPY_LOOP_FROM
    native = ad.function(lambda x: np.sum(np.tanh(x) * np.exp(0.5 * x)), native=True)
    plain = ad.function(native.f)
    for size in (NUMPY_LOOP_FROM + 7, NUMPY_LOOP_FROM - 1):
        x = np.random.default_rng(size).standard_normal(size)
        gradient = native.grad()(x)
        assert native.native_reason is None
        assert_within_rounding(gradient, plain.grad()(x))
    x = np.random.default_rng(0).standard_normal(NUMPY_LOOP_FROM + 7)
    np.testing.assert_array_equal(native.grad()(x), plain.grad()(x))
    # a 2-D one, of a transpose (NumPy's loop keeps its F order; the program's array is C-contiguous)
    weights = np.random.default_rng(3).standard_normal((32, 3))
    native = ad.function(lambda x: np.sum((np.tanh(x.reshape(32, -1).T) @ weights) ** 2), native=True)
    x = np.random.default_rng(4).standard_normal(32 * (NUMPY_LOOP_FROM // 32 + 1))
    assert_within_rounding(native.grad()(x), ad.function(native.f).grad()(x))
    assert native.native_reason is None


def test_native_products_of_transposed_and_strided_operands_are_the_replay_within_rounding():
    # transposes reach BLAS as they are (F-contiguous); a strided slice is copied contiguous first
    rng = np.random.default_rng(2)
    m = rng.standard_normal((7, 5))

    def f(x):
        a = x.reshape(6, 7)
        return np.sum((a[::2, 1:] @ m[1:, :3]) ** 2) + np.sum(a.T @ a) + np.sum(a[:, ::3].T @ a[:, 1:4])

    x = rng.standard_normal(42)
    native, plain = ad.function(f, native=True), ad.function(f)
    assert_within_rounding(native.grad()(x), plain.grad()(x))
    assert native.native_reason is None
    v = rng.standard_normal(42)
    assert_within_rounding(ad.hvp(native)(x, v), ad.hvp(plain)(x, v))


def test_an_integer_array_index_is_native_and_the_replay_bit_for_bit():
    # x[order] (a gather) and its cotangent, np.add.at (repeated entries accumulate, in order), as
    # numba loops; with batch axes in front (a Hessian's rows) and whole axes before the vector
    problem = problems.get("extended_rosenbrock")
    weights = np.array([1.5, -2.0, 0.25, 3.0, 0.5])

    def repeated(x):
        a = x.reshape(3, 4)
        return np.sum(x[np.array([0, 2, 0, 1, 2, 2])] ** 3) + np.sum(a[:, [3, 0, 3, 1, 3]] ** 2 * weights)

    rng = np.random.default_rng(5)
    for f, n in ((problem.fun, 10), (repeated, 12)):
        native, plain = ad.function(f, native=True), ad.function(f)
        for _ in range(3):
            x, v = rng.standard_normal(n), rng.standard_normal(n)
            np.testing.assert_array_equal(native.grad()(x), plain.grad()(x))
            assert native.native_reason is None
            np.testing.assert_array_equal(ad.hvp(native)(x, v), ad.hvp(plain)(x, v))
            np.testing.assert_array_equal(native.hessian_operator(x).matvec(v), plain.hessian_operator(x).matvec(v))
            np.testing.assert_array_equal(ad.hessian(native)(x), ad.hessian(plain)(x))
            assert native.native_reason is None


def float_programs_only(monkeypatch):
    """Native programs written on floats alone: the array source (``native._source``) refused."""
    from autodiff.jit import native as jit_native

    def refused(*args):
        raise jit_native.Unsupported("the array source is off in this test")
    monkeypatch.setattr(jit_native, "_source", refused)


def within_check(native, plain):
    """``native._check``'s agreement: the replay's within CHECK_RTOL of its largest entry."""
    from autodiff.jit.native import CHECK_RTOL
    native, plain = np.asarray(native), np.asarray(plain)
    assert native.shape == plain.shape
    np.testing.assert_allclose(native, plain, rtol=CHECK_RTOL, atol=CHECK_RTOL * np.max(np.abs(plain), initial=0.0))


WEIGHTS = np.linspace(-1.0, 2.0, 12).reshape(3, 4)


def transcendental(x):
    return np.sum(np.exp(-x) * np.sin(x) + np.tanh(x) ** 3) + np.arctan2(x[0], x[1]) + np.log1p(x[2] ** 2)


def pairwise_sums(x):   # sums of more than eight terms (NumPy's pairwise blocks), along an axis too
    a = np.outer(x, x).reshape(-1)
    return np.sum(np.sum(a.reshape(4, 4) ** 2, axis=0) * x) + np.sum(np.cos(a))


def indexed_reads(x):   # a gather at integer indices (repeated: its cotangent adds at them) and products
    gathered = x[np.array([0, 2, 0, 3, 2, 2])]
    return np.sum(gathered ** 3) + (WEIGHTS @ x) @ np.sqrt(1.0 + (WEIGHTS @ x) ** 2) ** 1.5 + x[1] * x[3] / x[0]


@pytest.mark.parametrize("f", [transcendental, pairwise_sums, indexed_reads])
def test_small_native_programs_on_floats_are_the_replay_within_check(monkeypatch, f):
    """Every derivative of a small program is native without the array source (written on floats),
    and within CHECK_RTOL of the NumPy replay's: transcendental functions (numba's, per element),
    sums (in NumPy's order), reads at integer indices, products written as sums, 0-d and 2-D results."""
    float_programs_only(monkeypatch)
    native, plain = ad.function(f, native=True), ad.function(f)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x, v = rng.uniform(0.2, 1.5, 4), rng.standard_normal(4)
        within_check(native(x), plain(x))
        within_check(native.grad()(x), plain.grad()(x))
        assert native.native_reason is None
        within_check(ad.hvp(native)(x, v), ad.hvp(plain)(x, v))
        within_check(native.hessian_operator(x).matvec(v), plain.hessian_operator(x).matvec(v))
        within_check(ad.hessian(native)(x), ad.hessian(plain)(x))
        assert native.native_reason is None


def test_a_large_native_program_is_the_array_source():
    """Values above MAX_SIZE elements are not written on floats: without the array source, the
    program is not native (and says numba's source was refused); with it, it is."""
    from autodiff.jit.scalar import MAX_SIZE

    def elementwise(x):
        return np.sum(np.exp(-x) * np.sin(x))
    f = ad.function(elementwise, native=True)
    x = np.random.default_rng(8).uniform(0.2, 1.5, MAX_SIZE + 1)
    within_check(f.grad()(x), ad.function(elementwise).grad()(x))
    assert f.native_reason is None
    with pytest.MonkeyPatch.context() as patch:
        float_programs_only(patch)
        large = ad.function(elementwise, native=True)
        large.grad()(x)
        assert large.native_reason == "Unsupported: the array source is off in this test"
        small = ad.function(elementwise, native=True)
        small.grad()(x[:4])
        assert small.native_reason is None


def test_a_constant_matrix_larger_than_the_values_is_written_on_floats(monkeypatch):
    """A constant above MAX_SIZE elements times a small input (MGH's Watson: a 29 x 6 matrix) is
    written on floats, its elements numba's constants; the values closed form: A^T (2 r) and
    2 A^T A v + the cubic term's 6 x v diagonal, against the replay."""
    from autodiff.jit.native import MAX_PRODUCT_TERMS
    from autodiff.jit.scalar import MAX_SIZE
    float_programs_only(monkeypatch)
    rng = np.random.default_rng(12)
    a = rng.standard_normal((29, 6))
    assert a.size > MAX_SIZE

    def fit(x):
        r = a @ x - 1.0
        return r @ r + np.sum(x ** 3)
    f = ad.function(fit, native=True)
    x, v = rng.uniform(0.2, 1.5, 6), rng.standard_normal(6)
    within_check(f.grad()(x), 2.0 * a.T @ (a @ x - 1.0) + 3.0 * x ** 2)
    within_check(ad.hvp(f)(x, v), 2.0 * a.T @ (a @ v) + 6.0 * x * v)
    assert f.native_reason is None
    big = rng.standard_normal((100, MAX_PRODUCT_TERMS // 100 + 1))   # small values, more products than written
    g = ad.function(lambda y: np.sum((big @ y) ** 2), native=True)
    y = rng.standard_normal(big.shape[1])
    within_check(g.grad()(y), 2.0 * big.T @ (big @ y))
    assert g.native_reason == "Unsupported: the array source is off in this test"


def test_a_native_division_by_zero_is_numpys_inf():
    """x / 0.0 of floats in a native program is inf (NumPy's), not Python's ZeroDivisionError."""
    f = ad.function(lambda x: x[0] / x[1] + x[1], native=True)
    ad.grad(f)(np.array([1.0, 2.0]))
    assert f.native_reason is None
    with np.errstate(divide="ignore", invalid="ignore"):
        gradient = ad.grad(f)(np.array([1.0, 0.0]))
        expected = ad.grad(ad.function(f.f))(np.array([1.0, 0.0]))
    np.testing.assert_array_equal(gradient, expected)
    assert np.isinf(gradient[0])
