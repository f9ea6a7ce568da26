"""autodiff.function: replayed programs give exactly the eager results (the same floating-point
operations), retrace on a new signature, guard branches, refuse float reads, read Variables afresh,
and keep memory flat."""
from __future__ import annotations

import doctest
import pickle
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops import CASES

import autodiff as ad
import autodiff.numpy as anp
from autodiff.function import CACHE_SIZE, MAX_TRACES_PER_SIGNATURE
from autodiff.jit import Late

ONCE = settings(max_examples=2, deadline=None)


def eager_value(f, x):
    return np.asarray(f(ad.constant(x)).numpy())


def assert_replays_exactly(f, points):
    """Value, Jacobian, gradient and Hessian-vector products of a scalar reduction of f, replayed
    at each point, equal the eager ones bit for bit."""
    traced = ad.function(f)
    weights = np.random.default_rng(0).standard_normal(np.shape(eager_value(f, points[0])))
    reduced = lambda x: anp.sum(f(x) * weights)  # noqa: E731
    traced_reduced = ad.function(reduced)
    for x in points:
        np.testing.assert_array_equal(traced(x), eager_value(f, x))
        np.testing.assert_array_equal(traced.jacobian()(x), ad.jacobian(f)(x))
        value, gradient = traced_reduced.value_and_grad()(x)
        eager_operator = ad.hessian_operator(reduced, x)
        operator = traced_reduced.hessian_operator(x)
        one_product = traced_reduced.hessian_operator(x)  # (deferred: the split joined into one program)
        np.testing.assert_array_equal(operator.gradient, eager_operator.gradient)
        assert isinstance(operator.product, Late)  # the products are a replayed program
        assert operator.value == eager_operator.value
        v = np.random.default_rng(1).standard_normal(x.size)
        np.testing.assert_array_equal(operator.matvec(v), eager_operator.matvec(v))
        np.testing.assert_array_equal(one_product.matvec(v), eager_operator.matvec(v))
        np.testing.assert_array_equal(operator.to_dense(), eager_operator.to_dense())
        np.testing.assert_allclose(gradient, ad.grad(reduced)(x), rtol=1e-13, atol=1e-13)


def nearby(x, rng):
    """Another point of the same signature, close enough to stay in the op's domain."""
    return x + 1e-3 * rng.uniform(-1, 1, np.shape(x)) * (1 + np.abs(x))


@pytest.mark.parametrize("name", CASES)
@ONCE
@given(data=st.data())
def test_every_op_replays_exactly_or_is_refused(name, data):
    problem = data.draw(CASES[name])
    x = np.array(problem.x, dtype=np.float64)
    points = [x, nearby(x, np.random.default_rng(3))]
    try:
        assert_replays_exactly(problem.engine, points)
    except ad.UntraceableError as error:  # a float read: refused, and the fallback is the eager op
        assert "autodiff.function" in str(error)
        fallback = ad.function(problem.engine, eager_fallback=True)
        np.testing.assert_array_equal(fallback(x), eager_value(problem.engine, x))
        np.testing.assert_array_equal(fallback.jacobian()(x), ad.jacobian(problem.engine)(x))


# --- random programs -----------------------------------------------------------------------------

UNARY = {"sin": anp.sin, "tanh": anp.tanh, "square": anp.square, "neg": anp.negative,
         "softplus": anp.softplus, "relu": lambda a: anp.maximum(a, 0.0), "abs": anp.abs,
         "exp_small": lambda a: anp.exp(0.1 * a)}
BINARY = {"add": anp.add, "mul": anp.multiply, "sub": anp.subtract,
          "where": lambda a, b: anp.where(a > b, a * b, a - b), "max": anp.maximum}
STEPS = st.lists(st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.integers(0, 20)),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.just("slice"), st.sampled_from(["head", "tail", "even", "odd", "reverse"]), st.integers(0, 20)),
), min_size=1, max_size=12)
SLICES = {"head": lambda a: a[:-1], "tail": lambda a: a[1:], "even": lambda a: a[::2],
          "odd": lambda a: a[1::2], "reverse": lambda a: a[::-1]}


def program_from(steps, n):
    """A random straight-line program over a vector of length n: values of equal length combine,
    a slice pads back to length n with the full vector's tail (so shapes stay compatible)."""
    def f(x):
        values = [x]
        for step in steps:
            pick = lambda k: values[k % len(values)]  # noqa: E731
            if step[0] == "unary":
                values.append(UNARY[step[1]](pick(step[2])))
            elif step[0] == "binary":
                values.append(BINARY[step[1]](pick(step[2]), pick(step[3])))
            else:
                piece = SLICES[step[1]](pick(step[2]))
                values.append(anp.concatenate([piece, x[anp.shape(piece)[0]:]]))
        return anp.sum(values[-1] * values[len(values) // 2]) + anp.sum(anp.sin(values[-1]))
    return f


@settings(max_examples=25, deadline=None, derandomize=True)   # the same programs at every run (see below)
@given(steps=STEPS, n=st.integers(2, 6), seed=st.integers(0, 1000))
def test_random_programs_replay_exactly(steps, n, seed):
    f = program_from(steps, n)
    rng = np.random.default_rng(seed)
    points = [rng.standard_normal(n) for _ in range(3)]
    assert_replays_exactly(f, points)


def test_a_program_with_abs_and_slices_replays_its_product_exactly():
    """Found by hypothesis (2026-11-29): slices that tile x and a dense term in one raw sum of
    cotangents; SlicedCotangent adds the dense term first, so their concatenation must not be."""
    steps = [("unary", "abs", 0), ("slice", "even", 0), ("binary", "add", 1, 2), ("unary", "abs", 0),
             ("slice", "head", 0)]
    rng = np.random.default_rng(0)
    assert_replays_exactly(program_from(steps, 2), [rng.standard_normal(2) for _ in range(3)])


# --- signatures, guards, variables ----------------------------------------------------------------

def test_a_new_shape_dtype_or_structure_traces_again_and_the_same_one_does_not():
    f = ad.function(lambda x: np.sum(np.sin(x) ** 2))
    for x in (np.ones(3), np.zeros(3), np.ones(4), np.ones(3, np.float32), np.arange(3.0)):
        np.testing.assert_array_equal(f(x), np.sum(np.sin(x) ** 2))
    assert f.traces == 3  # (3,) float64, (4,), (3,) float32
    assert f(np.ones(3, np.float32)).dtype == np.float32
    g = ad.function(lambda tree: tree["a"] * 2 + np.sum(tree["b"]))
    assert g({"a": 1.0, "b": np.ones(2)}) == 4.0
    assert g({"a": 2.0, "b": np.ones(2)}) == 6.0  # a Python float is part of the signature
    assert g({"a": np.array(3.0), "b": np.ones(3)}) == 9.0
    assert g.traces == 3


def test_python_and_integer_arguments_are_static():
    f = ad.function(lambda x, k, idx: x[idx] * k)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, 2, np.array([0, 3])), [0.0, 6.0])
    np.testing.assert_array_equal(f(x + 1, 2, np.array([0, 3])), [2.0, 8.0])
    np.testing.assert_array_equal(f(x, 3, np.array([1, 4])), [3.0, 12.0])
    assert f.traces == 2


def piecewise(x):
    if np.sum(x) > 0:  # a branch on a traced value: guarded
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def test_a_branch_is_guarded_and_both_branches_are_kept():
    f = ad.function(piecewise)
    for x in (np.array([1.0, 2.0]), np.array([-1.0, -2.0]), np.array([3.0, -1.0]),
              np.array([-3.0, 1.0]), np.array([1.0, 2.0])):
        np.testing.assert_array_equal(f(x), piecewise(x))
        np.testing.assert_array_equal(f.grad()(x), ad.grad(piecewise)(x))
        np.testing.assert_array_equal(f.hessian_operator(x).to_dense(), ad.hessian(piecewise)(x))
    assert f.traces == 8  # each branch once: value, gradient, operator and its batched products


def test_a_branch_on_a_reshaped_value_is_guarded():
    def f(x):
        return np.sum(x ** 2) if x[0].reshape(()) > 0 else np.sum(x ** 3)
    traced = ad.function(f)
    for x in (np.array([1.0, 2.0]), np.array([-1.0, 2.0])):
        assert traced(x) == f(x)


def test_integer_reads_are_guarded():
    def pick(x):
        return x[np.argmax(x)] * 2.0  # the index is read from a traced value
    f = ad.function(pick)
    for x in (np.array([1.0, 3.0, 2.0]), np.array([4.0, 3.0, 2.0]), np.array([1.0, 3.5, 2.0])):
        assert f(x) == 2 * np.max(x)
        np.testing.assert_array_equal(f.grad()(x), ad.grad(pick)(x))


def test_a_mask_from_a_comparison_is_recomputed_at_each_replay():
    f = ad.function(lambda x: np.sum(np.where(x > 0, x, 0.1 * x)) + np.sum(np.abs(x)))
    grad = f.grad()
    for x in (np.array([1.0, -2.0]), np.array([-1.0, 2.0])):
        np.testing.assert_array_equal(grad(x), np.where(x > 0, 1.0, 0.1) + np.sign(x))
    assert f.traces == 1


@pytest.mark.parametrize("leak", [lambda x: x.numpy(), lambda x: x[0].item(), lambda x: float(x[0]),
                                  lambda x: np.sort(x)], ids=["numpy", "item", "float", "sort"])
def test_a_float_leaving_the_engine_is_refused_or_falls_back(leak):
    def f(x):
        return np.sum(x * leak(x))
    with pytest.raises(ad.UntraceableError, match="autodiff.function"):
        ad.function(f)(np.ones(3))
    fallback = ad.function(f, eager_fallback=True)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fallback(x), eager_value(f, x))
    assert fallback.fallback_reason is not None


def test_stop_gradient_is_recomputed_not_frozen():
    f = ad.function(lambda x: np.sum(x * ad.stop_gradient(x)))
    for x in (np.array([1.0, 2.0]), np.array([3.0, -1.0])):
        assert f(x) == np.sum(x * x)
        np.testing.assert_array_equal(f.grad()(x), x)


def test_variables_are_read_afresh():
    scale = ad.Variable(2.0)
    frozen = ad.Variable(np.array([1.0, 1.0]), trainable=False)
    f = ad.function(lambda x: np.sum(scale * x ** 2 + frozen * x))
    x = np.array([1.0, 2.0])
    assert f(x) == 13.0
    np.testing.assert_array_equal(f.grad()(x), [5.0, 9.0])
    scale.assign(3.0)
    frozen.assign([0.0, 2.0])
    assert f(x) == 19.0
    np.testing.assert_array_equal(f.grad()(x), [6.0, 14.0])
    np.testing.assert_array_equal(f.hessian_operator(x).to_dense(), 6 * np.eye(2))
    assert f.traces == 4  # value, gradient, operator and its batched products


def test_hessian_operator_at_variables_matches_eager_and_keeps_its_point():
    w = ad.Variable(np.array([0.5, -1.0, 2.0]))
    loss = lambda: np.sum(np.exp(w) * w ** 2)  # noqa: E731
    traced = ad.function(loss)
    operator, eager = ad.hessian_operator(traced, [w]), ad.hessian_operator(loss, [w])
    w.assign([9.0, 9.0, 9.0])  # the operator was taken at the old point
    np.testing.assert_array_equal(operator.gradient, eager.gradient)
    np.testing.assert_array_equal(operator.to_dense(), eager.to_dense())
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(operator.matvec(v), eager.matvec(v))


def test_inside_a_tape_the_function_runs_eagerly_and_is_differentiated():
    f = ad.function(lambda x: np.sum(np.sin(x)))
    x = ad.constant(np.array([0.1, 0.2]))
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.cos([0.1, 0.2]), rtol=1e-15)
    assert f.traces == 0
    assert isinstance(f(x), ad.Tensor)  # Tensors in, Tensors out


def test_the_functional_api_replays_a_function():
    f = ad.function(lambda x, y: np.sum(x * y ** 2))
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    value, (gx, gy) = ad.value_and_grad(f, (0, 1))(x, y)
    assert value == 41.0
    np.testing.assert_array_equal(gx, y ** 2)
    np.testing.assert_array_equal(gy, 2 * x * y)
    np.testing.assert_array_equal(ad.grad(f, 1)(x, y), 2 * x * y)
    np.testing.assert_array_equal(ad.hvp(ad.function(lambda z: np.sum(z ** 3)), x, np.ones(2)), 6 * x)
    assert f.traces == 2


def test_a_constant_result_changed_by_the_caller_stays_right():
    f = ad.function(lambda x: np.sum(x * np.array([1.0, 2.0])))
    for _ in range(2):
        g = f.grad()(np.zeros(2))
        np.testing.assert_array_equal(g, [1.0, 2.0])
        g *= -1  # the gradient of a linear function is a constant of its program


def test_a_product_never_hands_out_the_seed_or_the_operators_own_arrays():
    operator = ad.function(lambda x: 0.5 * np.sum(x * x)).hessian_operator(np.ones(3))
    v = np.array([1.0, 2.0, 3.0])
    hv = operator.matvec(v)
    np.testing.assert_array_equal(hv, v)
    hv *= 0.0
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(operator.matvec(v), v)


def test_memory_is_flat_over_ten_thousand_replays():
    f = ad.function(lambda x: np.sum(np.tanh(x[1:] * x[:-1]) ** 2))
    grad = f.grad()
    operator = f.hessian_operator(np.ones(50))
    x, v = np.linspace(-1, 1, 50), np.ones(50)

    def replay(times):
        for _ in range(times):
            f(x)
            grad(x)
            operator.matvec(v)
    replay(100)
    tracemalloc.start()
    replay(1_000)
    early = tracemalloc.get_traced_memory()[0]
    replay(9_000)
    late = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # under 8 bytes a replay: a leak of even one object each time would be 9,000 x 56 bytes or more
    assert late - early < 9_000 * 8, f"memory grew by {late - early} bytes over 9,000 replays"


def test_guard_alternatives_are_bounded():
    f = ad.function(lambda x, k: x[int(np.argmax(x))] * k)  # int(t) of a traced index: guarded
    assert f(np.array([1.0, 2.0]), 3.0) == 6.0
    assert f(np.array([5.0, 2.0]), 3.0) == 15.0
    assert f.traces == 2
    g = ad.function(lambda x: x[np.argmax(x)])
    for k in range(3 * MAX_TRACES_PER_SIGNATURE):
        x = np.zeros(30)
        x[k] = 1.0
        assert g(x) == 1.0
    assert max(len(v) for v in g._cache.values()) <= MAX_TRACES_PER_SIGNATURE


def test_docstring_examples_run():
    failures, _ = doctest.testmod(sys.modules["autodiff.function"], optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


# --- static arguments, the cache's size, pickling (issue 20) ------------------------------------------

def test_an_unhashable_static_argument_is_refused_by_name():
    f = ad.function(lambda x, indices, scale=1.0: x * len(indices) * scale)
    with pytest.raises(TypeError, match=r"static argument argument 1 is an unhashable set"):
        f(np.ones(2), set(range(3)))
    with pytest.raises(TypeError, match=r"keyword argument 'scale'\['a'\] is an unhashable set"):
        f(np.ones(2), (1, 2), scale={"a": {1.0}})

    class Point:  # equality without a hash: Python makes it unhashable
        def __eq__(self, other):
            return True
    with pytest.raises(TypeError, match=r"argument 1 is an unhashable Point"):
        f(np.ones(2), Point())
    for k in range(4):  # by value, never by identity: a frozenset per k, each with its own answer
        np.testing.assert_array_equal(f(np.ones(2), frozenset(range(k))), [k, k])


def test_zero_and_negative_zero_are_two_signatures_and_nan_is_one():
    divide = ad.function(lambda x, d: x / d)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(divide(np.ones(2), 0.0), [np.inf, np.inf])
        np.testing.assert_array_equal(divide(np.ones(2), -0.0), [-np.inf, -np.inf])
        assert divide.traces == 2
        for _ in range(3):
            assert np.all(np.isnan(divide(np.ones(2), float("nan"))))
        assert divide.traces == 3  # NaN equals itself as a static argument: one trace
    opposite = ad.function(lambda x: (1.0 / (x * 0.0), 1.0 / (x * -0.0)))  # two constants, not one
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(opposite(np.ones(1)), ([np.inf], [-np.inf]))


def test_the_cache_keeps_the_most_recent_signatures_and_memory_stays_bounded():
    f = ad.function(lambda x: np.sum(x * x), cache_size=16)

    def trace_shapes(shapes):
        for n in shapes:
            assert f(np.ones(n)) == n
    trace_shapes(range(1, 701))
    tracemalloc.start()
    trace_shapes(range(701, 801))  # the cache now holds traces tracemalloc saw made
    early = tracemalloc.get_traced_memory()[0]
    trace_shapes(range(801, 1001))
    late = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(f._cache) == 16 and f.traces == 1000
    # 200 more traces kept would be a megabyte: a program (code, constants, cache entry) is kilobytes
    assert late - early < 30_000, f"memory grew by {late - early} bytes over 200 evicted traces"
    f(np.ones(1000))           # the most recent signature is kept ...
    f(np.ones(1))              # ... the least recent one was evicted: traced again
    assert f.traces == 1001
    assert ad.function(np.sin).cache_size == CACHE_SIZE == 64


@ad.function
def module_level_objective(x):
    return np.sum(x ** 2)


def test_a_module_level_function_pickles_by_reference():
    x = np.array([1.0, 2.0])
    module_level_objective.grad()(x)
    assert pickle.loads(pickle.dumps(module_level_objective)) is module_level_objective
    copy = pickle.loads(pickle.dumps(ad.function(np.sin, eager_fallback=True, cache_size=3)))
    assert isinstance(copy, ad.Function) and copy.f is np.sin and copy.cache_size == 3 and copy.eager_fallback
    np.testing.assert_array_equal(copy(x), np.sin(x))
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(ad.function(lambda x: x))


def test_a_transposed_matrix_product_of_a_second_sweep_is_made_contiguous(monkeypatch):
    """A second sweep through ``a.T @ g`` (a layer's weight gradient) makes ``(A @ B).T``; the
    program makes it as ``B.T @ A.T`` (contiguous, the same products) where both are the same bits:
    the Hessian-vector products of a two-layer perceptron, replayed, are the eager ones bit for bit,
    and those of the program made without the rewrite."""
    from autodiff.jit import program
    rng = np.random.default_rng(21)
    inputs, targets = rng.standard_normal((64, 5)), rng.standard_normal((64, 1))

    def loss(p):
        w1, w2 = p[:5 * 40].reshape(5, 40), p[5 * 40:].reshape(40, 1)
        return np.mean((np.tanh(inputs @ w1) @ w2 - targets) ** 2)
    made = []
    rewrite = program._product_transposed
    monkeypatch.setattr(program, "_product_transposed", lambda *a: made.append(1) or rewrite(*a))
    x, v = 0.3 * rng.standard_normal(240), rng.standard_normal(240)
    product = ad.hvp(ad.function(loss))
    replayed = product(x, v)
    assert made   # (64 x 40 products, above TRANSPOSED_PRODUCT_MIN)
    np.testing.assert_array_equal(replayed, ad.hvp(loss)(x, v))
    y, w = x + 0.1 * v, rng.standard_normal(240)
    np.testing.assert_array_equal(product(y, w), ad.hvp(loss)(y, w))
    monkeypatch.setattr(program, "TRANSPOSED_PRODUCT_MIN", 10 ** 9)
    np.testing.assert_array_equal(replayed, ad.hvp(ad.function(loss))(x, v))
