"""Every transform replays bit for bit: ``ad.function`` of a transform, and a transform of an
``ad.function``, give the eager transform's results exactly (the same floating-point operations in
the same order), at two points of one signature, with one trace each."""
from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.jit import Late
from autodiff.tree import flatten

RNG = np.random.default_rng(5)
A = RNG.normal(size=(4, 5))
DATA, LABELS = RNG.normal(size=(6, 3)), np.array([0, 1, 2, 1, 0, 2])


def rosenbrock(x):  # slices: sums of slice cotangents, written into one buffer by the raw sweep
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def masked(x):  # masks in the rules (abs, maximum, where), a matmul, a reversed slice
    z = np.tanh(A @ x)
    return np.sum(np.abs(z) * np.maximum(x[:4], 0.1) + np.where(z > 0, z ** 2, -z)) + np.sum(x[::-1] * x)


def mlp(params):  # a pytree argument; a cross-entropy with an integer gather
    hidden = np.tanh(DATA @ params["w"] + params["b"])
    logits = hidden @ params["v"]
    return -np.mean(anp.take_along_axis(anp.log_softmax(logits, axis=-1), LABELS[:, None], axis=-1))


def vector(x):  # a vector function for Jacobians, JVPs, VJPs and linearizations
    return np.concatenate([np.tanh(A @ x) * x[:4], np.sin(x[::2])])


X = [RNG.normal(size=5), RNG.normal(size=5)]
PARAMS = [{"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4), "v": RNG.normal(size=(4, 3))}
          for _ in range(2)]
SCALARS = {"rosenbrock": (rosenbrock, X), "masked": (masked, X), "mlp": (mlp, PARAMS)}


def assert_same(replayed, eager):
    """Equal structures, equal leaf types, equal values bit for bit."""
    (leaves, structure), (eager_leaves, eager_structure) = flatten(replayed), flatten(eager)
    assert len(leaves) == len(eager_leaves)
    assert structure([None] * len(leaves)) == eager_structure([None] * len(leaves))
    for leaf, expected in zip(leaves, eager_leaves):
        assert type(leaf) is type(expected)
        np.testing.assert_array_equal(leaf, expected)
        assert np.shape(leaf) == np.shape(expected) and np.asarray(leaf).dtype == np.asarray(expected).dtype


def flat_size(point) -> int:
    return ad.ravel(point)[0].size


SCALAR_TRANSFORMS = {
    "grad": lambda f: ad.grad(f),
    "value_and_grad": lambda f: ad.value_and_grad(f),
    "hessian": lambda f: ad.hessian(f),
    "jacobian of grad": lambda f: ad.jacobian(ad.grad(f)),
}


@pytest.mark.parametrize("name, transform", [
    (name, transform) for name in SCALARS for transform in SCALAR_TRANSFORMS
    if (name, transform) != ("mlp", "jacobian of grad")])  # a tree of blocks: hessian covers it
def test_function_transforms_replay_exactly_both_ways(name, transform):
    f, points = SCALARS[name]
    transform = SCALAR_TRANSFORMS[transform]
    traced_transform, traced_function = ad.function(transform(f)), ad.function(f)
    for point in points:
        eager = transform(f)(point)
        assert_same(traced_transform(point), eager)
        assert_same(transform(traced_function)(point), eager)
    assert traced_transform.traces == 1 and traced_function.traces == 1  # no retrace at the 2nd point


@pytest.mark.parametrize("name", SCALARS)
def test_hessian_vector_products_replay_exactly(name):
    f, points = SCALARS[name]
    traced_hvp = ad.function(lambda x, v: ad.hvp(f, x, v))
    traced_function = ad.function(f)
    for point in points:
        v = RNG.normal(size=flat_size(point))
        eager = ad.hvp(f, point, v)
        assert_same(traced_hvp(point, v), eager)
        assert_same(ad.hvp(traced_function, point, v), eager)
        operator, eager_operator = ad.hessian_operator(traced_function, point), ad.hessian_operator(f, point)
        # one product first (at an array point of the last split's signature: the joined program)
        assert_same(ad.hessian_operator(traced_function, point).matvec(v), eager_operator.matvec(v))
        assert operator.value == eager_operator.value
        assert isinstance(operator.product, Late)    # started (deferred or not): the split takes the products
        assert_same(operator.gradient, eager_operator.gradient)
        assert_same(operator.matvec(v), eager_operator.matvec(v))
        assert_same(operator.matvec(v), eager)       # the cached product is the one of hvp
        assert_same(operator.to_dense(), eager_operator.to_dense())
        V = RNG.normal(size=(flat_size(point), 3))     # in chunks of 2 columns, then 1
        assert_same(ad.hessian_operator(traced_function, point, chunk_size=2).matmat(V),
                    ad.hessian_operator(f, point, chunk_size=2).matmat(V))
    assert traced_hvp.traces == 1
    # the hvp, the operator's pair and its batched products (n, 2 and 1 vectors): one trace each
    assert traced_function.traces == 5


def test_jvp_vjp_and_linearize_replay_exactly():
    traced = ad.function(vector)
    for x in X:
        t, c = RNG.normal(size=5), RNG.normal(size=7)
        assert_same(ad.function(lambda x, t: ad.jvp(vector, (x,), (t,)))(x, t), ad.jvp(vector, (x,), (t,)))
        assert_same(ad.jvp(traced, (x,), (t,)), ad.jvp(vector, (x,), (t,)))

        y, pullback = ad.vjp(vector, x)
        replayed_y, replayed_pullback = ad.vjp(traced, x)
        assert isinstance(replayed_pullback, Late)
        assert_same(replayed_y, y)
        assert_same(replayed_pullback(c), pullback(c))
        C = RNG.normal(size=(3, 7))                      # a batch of cotangents: one batched sweep
        assert_same(replayed_pullback(C), pullback(C))
        assert_same(ad.function(lambda x, c: ad.vjp(vector, x)[1](c))(x, c), pullback(c))

        y, push = ad.linearize(vector, x)
        replayed_y, replayed_push = ad.linearize(traced, x)
        assert_same(replayed_y, y)
        assert_same(replayed_push(t), push(t))
        T = RNG.normal(size=(4, 5))
        assert_same(replayed_push(T), push(T))
        assert_same(ad.function(lambda x, t: ad.linearize(vector, x)[1](t))(x, t), push(t))


def test_the_linearization_of_a_gradient_replays_as_the_cached_hessian_product():
    traced = ad.function(rosenbrock)
    for x in X:
        v = RNG.normal(size=5)
        gradient, hvp = ad.linearize(ad.grad(rosenbrock), x)
        replayed_gradient, replayed_hvp = ad.linearize(ad.grad(traced), x)
        assert_same(replayed_gradient, gradient)
        assert_same(replayed_hvp(v), hvp(v))
        np.testing.assert_allclose(hvp(v), ad.hessian(rosenbrock)(x) @ v, rtol=1e-12)


def test_gauss_newton_products_replay_exactly():
    def predict(params):
        return np.tanh(DATA @ params["w"] + params["b"]) @ params["v"]

    def loss(logits):
        return -np.mean(anp.take_along_axis(anp.log_softmax(logits, axis=-1), LABELS[:, None], axis=-1))

    traced = ad.function(predict)
    for params in PARAMS:
        eager, replayed = ad.ggn_operator(predict, loss, params), ad.ggn_operator(traced, loss, params)
        assert isinstance(replayed, ad.GGNOperator) and isinstance(replayed.product, Late)
        assert replayed.value == eager.value
        assert_same(replayed.gradient, eager.gradient)
        v = RNG.normal(size=eager.shape[0])
        assert_same(replayed.matvec(v), eager.matvec(v))
        assert_same(replayed.to_dense(), eager.to_dense())
    assert traced.traces == 2  # the split pair and its batched products, traced at the first point


def test_a_transform_inside_a_tape_runs_eagerly_and_is_differentiated():
    traced = ad.function(rosenbrock)
    x = ad.constant(X[0])
    with ad.GradientTape() as tape:
        tape.watch(x)
        g = ad.grad(traced)(x)
        y = np.sum(g * g)
    expected = 2 * ad.hessian(rosenbrock)(X[0]) @ ad.grad(rosenbrock)(X[0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-12)
    assert traced.traces == 0


def test_operator_products_are_arrays_whatever_the_point_holds():
    w = ad.Variable(np.array([1.0, 2.0, 3.0]))
    x = ad.constant(np.array([1.0, 2.0, 3.0]))
    cubes = lambda: np.sum(w ** 3)  # noqa: E731
    for op in [ad.hessian_operator(cubes, [w]), ad.hessian_operator(ad.function(cubes), [w]),
               ad.hessian_operator(ad.function(lambda z: np.sum(z ** 3)), x),
               ad.ggn_operator(ad.function(lambda: w ** 2), lambda z: 0.5 * np.sum(z ** 2), [w])]:
        product, dense = op.matvec(np.ones(3)), op.to_dense()
        assert type(product) is np.ndarray and type(dense) is np.ndarray
        np.testing.assert_allclose(product, dense.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(ad.hessian_operator(cubes, [w]).to_dense(), np.diag(6 * w.numpy()), rtol=1e-12)


def test_the_former_constructor_from_f_and_x_still_works_with_a_deprecation_warning():
    f = lambda x: x[0] ** 2 * x[1]  # noqa: E731
    x = np.array([1.0, 2.0])
    with pytest.warns(DeprecationWarning, match="hessian_operator"):
        op = ad.HessianOperator(f, x)
    np.testing.assert_array_equal(op.to_dense(), np.array([[4.0, 2.0], [2.0, 0.0]]))
    assert (op.value, list(op.gradient)) == (2.0, [4.0, 1.0])
    with pytest.warns(DeprecationWarning):
        assert ad.HessianOperator(f, x, 1).chunk_size == 1
    with pytest.raises(TypeError, match="product must be a function"):
        ad.HessianOperator(1.0, np.zeros(2), "not a function")


def test_ravel_of_the_traced_inputs_replays_at_a_new_point():
    """ad.ravel of Tensors under a trace is recorded (it was frozen into the program as values)."""
    def f(params):
        flat, unravel = ad.ravel(params)
        return np.sum(flat ** 3) + np.sum(unravel(2.0 * flat)["v"])
    traced = ad.function(f)
    for point in PARAMS:
        assert_same(traced(point), f(point))
    assert traced.traces == 1


def test_a_nested_transform_closing_over_its_argument_replays_exactly():
    """grad in y of a * y^3 at y = a, then its derivative in a: an alias keeps y apart from a."""
    def f(a):
        return ad.grad(lambda y: np.sum(a * y ** 3))(a)
    traced, outer = ad.function(f), ad.function(ad.jacobian(f))
    for point in X:
        assert_same(traced(point), f(point))
        # three roundings each side (a pow could add ulps of its own, so the cube is two products): 3 eps
        np.testing.assert_allclose(f(point), 3 * point * point * point, rtol=1e-15)
        assert_same(outer(point), ad.jacobian(f)(point))
        np.testing.assert_allclose(outer(point), np.diag(9 * point ** 2), rtol=1e-14)


def test_a_batched_sweep_writes_its_slice_cotangents_into_one_buffer():
    """The Jacobian's sweep is batched over the rows: the cotangents of x[0], x[1], ... (scatters
    into the batch of rows, each a full-size array of zeros) are written into one buffer, as the
    unbatched sweep's are, with the eager Jacobian's values bit for bit."""
    def rates(y):
        return np.stack([2.0 * y[0] - 0.1 * y[0] * y[1], -1.5 * y[1] + 0.075 * y[0] * y[1], y[2] * y[0]])
    recording = ad.jit.trace(ad.jacobian(rates), np.ones(3))
    program = ad.jit.Program(recording.records, recording.inputs, recording.outputs, recording.guards,
                             recording.raw, single=True)
    assert not any(value is anp.ops._scatter.tensor_fun for value in program.numpy_run.__globals__.values())
    for point in (np.array([10.0, 5.0, -0.0]), np.array([-3.0, 0.5, 2.0])):
        assert_same(program.run(point), ad.jacobian(rates)(point))
        assert_same(ad.function(ad.jacobian(rates))(point), ad.jacobian(rates)(point))
