"""A tape keeps only the values its rules read, a trace keeps none of the arrays it computes, and a
replayed program frees each intermediate after its last use; results are unchanged bit for bit.

Memory is measured with tracemalloc (NumPy reports its buffers to it), on arrays large enough that
the few small Python objects around them do not matter.
"""
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import autodiff as ad
from autodiff import residuals
from autodiff.extend import defderiv, defvjp, primitive

N = 200_000            # elements of the large arrays: 1.6 MB each
ARRAY = N * 8
CHAIN = 12


def chain(x):
    """CHAIN elementwise ops, each making a new array of x's size."""
    for _ in range(CHAIN // 3):
        x = np.tanh(x * 0.9 + 0.1)
    return np.sum(x * x)


def peak_of(run) -> int:
    """The peak memory (bytes) that ``run()`` allocates above what was allocated before it."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_values_read_finds_the_values_a_rule_reads():
    assert residuals.values_read(lambda g, ans, x, y: g * y) == {1}
    assert residuals.values_read(lambda g, ans, x: g * (1 - ans * ans)) == {-1}
    assert residuals.values_read(lambda g, ans, x: g.reshape(x.shape)) == frozenset()   # shape only
    assert residuals.values_read(lambda g, ans, x: g * x.sum()) == {0}
    assert residuals.values_read(lambda g, ans, *args: g) is None      # cannot tell: every value
    assert residuals.values_read(np.negative) is None
    square = primitive(lambda x: x * x, "square_for_reads")
    defderiv(square, lambda ans, x: 2 * x)                      # wrapped: the derivative counts
    assert residuals.rules_read(square.vjps, (0,)) == {0}
    scale = primitive(lambda x, a: x * a, "scale_for_reads")
    defvjp(scale, lambda g, ans, x, a: g * a, lambda g, ans, x, a: g * x, broadcasting=True)
    assert residuals.rules_read(scale.vjps, (0,)) == {1} and residuals.rules_read(scale.vjps, (0, 1)) == {0, 1}
    scale.vjps[0] = lambda g, ans, x, a: g * ans / x            # a new rule: read again
    assert residuals.rules_read(scale.vjps, (0,)) == {-1, 0}


def test_a_tape_frees_what_no_rule_reads_and_keeps_what_one_does():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((N // 10, 10)), ad.Variable(rng.standard_normal((10, 10))), ad.Variable(np.ones(10))
    with ad.GradientTape() as tape:
        z = x @ w               # read by no rule (z + b's rules need neither value)
        y = z + b               # read by no rule (tanh's rule reads its result)
        s = np.tanh(y)          # read by tanh's rule
        loss = np.sum(s)
    dead, kept = [weakref.ref(z._value), weakref.ref(y._value)], weakref.ref(s._value)
    del z, y, s
    gc.collect()
    assert all(r() is None for r in dead) and kept() is not None
    gw, gb = tape.gradient(loss, [w, b])
    slope = 1 - np.tanh(x @ w.numpy() + 1.0) ** 2
    np.testing.assert_allclose(gw.numpy(), x.T @ slope, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), slope.sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("traced", [False, True])
def test_stand_ins_change_no_result(monkeypatch, traced):
    """The Hessian operator of an MLP loss (second order through the recorded gradient) with
    stand-ins for every array no rule reads equals the one with every value kept, bit for bit."""
    rng = np.random.default_rng(1)
    x, labels = rng.standard_normal((300, 5)), rng.integers(0, 3, 300)
    w1, w2 = rng.standard_normal((5, 8)), rng.standard_normal((8, 3))

    def loss(p):
        logits = np.tanh(x @ p["w1"]) @ p["w2"]
        return np.mean(ad.numpy.special.logsumexp(logits, axis=1) - logits[np.arange(300), labels])

    def products(threshold):
        monkeypatch.setattr(residuals, "STAND_IN_BYTES", threshold)
        f = ad.function(loss) if traced else loss
        op = ad.hessian_operator(f, {"w1": w1, "w2": w2})
        return op.gradient, op.to_dense()

    kept, stood_in = products(1 << 62), products(0)
    for a, b in zip(kept, stood_in):
        np.testing.assert_array_equal(a, b)


def test_a_replayed_program_frees_each_intermediate_after_its_last_use():
    f = ad.function(chain)
    x = np.linspace(-1.0, 1.0, N)
    f(x)                                          # traced
    assert peak_of(lambda: f(x)) < 4 * ARRAY      # a straight-line program kept all 12
    np.testing.assert_array_equal(f(x), chain(x))


def test_a_trace_holds_no_more_than_the_eager_run_it_watches():
    x = np.linspace(-1.0, 1.0, N)
    eager = peak_of(lambda: ad.grad(chain)(x))
    traced = peak_of(lambda: ad.function(ad.grad(chain))(x))
    assert traced < eager + 3 * ARRAY, (traced / ARRAY, eager / ARRAY)
    np.testing.assert_array_equal(ad.function(ad.grad(chain))(x), ad.grad(chain)(x))
