"""HessianOperator (the cached inner gradient), the hand-written persistent-tape pattern it replaces,
and the memory behaviour of both and of recompute_grad.

References are scipy's Rosenbrock derivatives, closed forms, dense Hessians and NumPy's eigvalsh;
memory is measured with tracemalloc after gc.collect().
"""
import gc
import tracemalloc

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess, rosen_hess_prod
from scipy.sparse.linalg import LinearOperator, cg, eigsh

import autodiff as ad
import autodiff.numpy as anp


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


ROSENBROCK_X = np.array([-1.2, 1.0, 0.5, 0.8, 1.1, -0.3, 2.0])


class LogisticRegression:
    """Mean logistic loss plus an L2 penalty: strictly convex, Hessian in closed form."""

    def __init__(self, seed=0, examples=40, features=6, penalty=0.1):
        rng = np.random.default_rng(seed)
        self.features = rng.normal(size=(examples, features))
        self.labels = rng.choice([-1.0, 1.0], size=examples)
        self.penalty = penalty
        self.w = rng.normal(size=features)

    def loss(self, w):
        margins = self.labels * anp.matmul(self.features, w)
        return anp.mean(anp.softplus(-margins)) + 0.5 * self.penalty * anp.sum(w ** 2)

    def gradient(self, w):
        s = 1 / (1 + np.exp(self.labels * (self.features @ w)))  # sigmoid(-margin)
        return -(self.features.T @ (s * self.labels)) / len(self.labels) + self.penalty * w

    def hessian(self, w):
        s = 1 / (1 + np.exp(self.labels * (self.features @ w)))
        weights = s * (1 - s) / len(self.labels)
        return self.features.T @ (weights[:, None] * self.features) + self.penalty * np.eye(w.size)


class TwoLayerModel:
    """Dense(hidden, tanh) then Dense(1), mean squared error; parameters are Variables."""

    def __init__(self, seed=0, examples=16, inputs=3, hidden=5):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(examples, inputs))
        self.y = rng.normal(size=(examples, 1))
        self.variables = [ad.Variable(rng.normal(size=(inputs, hidden)) / 2, name="w1"),
                          ad.Variable(rng.normal(size=hidden) / 4, name="b1"),
                          ad.Variable(rng.normal(size=(hidden, 1)) / 2, name="w2"),
                          ad.Variable(rng.normal(size=1) / 4, name="b2")]

    def loss_of(self, w1, b1, w2, b2):
        hidden = anp.tanh(anp.matmul(self.x, w1) + b1)
        return anp.mean((anp.matmul(hidden, w2) + b2 - self.y) ** 2)

    def loss(self):
        return self.loss_of(*self.variables)

    def flat_values(self):
        return np.concatenate([v.numpy().ravel() for v in self.variables])


def split_like(flat, variables):
    """A flat vector as a list of arrays shaped like ``variables``."""
    sizes = np.cumsum([v.size for v in variables])[:-1]
    return [part.reshape(v.shape) for part, v in zip(np.split(flat, sizes), variables)]


# --- value, gradient, products ---------------------------------------------------------------------

def test_value_and_gradient_are_f_and_its_gradient():
    op = ad.hessian_operator(rosenbrock, ROSENBROCK_X)
    assert op.value == pytest.approx(rosen(ROSENBROCK_X), rel=1e-15)
    np.testing.assert_allclose(op.gradient, rosen_der(ROSENBROCK_X), rtol=1e-14)
    assert op.shape == (7, 7) and op.dtype == np.float64

    problem = LogisticRegression()
    op = ad.hessian_operator(problem.loss, problem.w)
    np.testing.assert_allclose(op.gradient, problem.gradient(problem.w), rtol=1e-13)


def test_matvec_equals_the_dense_hessian_and_scipy(rounding):
    rng = np.random.default_rng(1)
    op = ad.hessian_operator(rosenbrock, ROSENBROCK_X)
    dense = op.to_dense()
    np.testing.assert_allclose(dense, rosen_hess(ROSENBROCK_X), rtol=1e-14)
    np.testing.assert_array_equal(dense, dense.T)
    for _ in range(3):
        v = rng.normal(size=7)
        expected = rosen_hess_prod(ROSENBROCK_X, v)
        # three ways of summing each entry's few terms: an entry near 0 carries the rounding of the large ones
        rounding.assert_close_normwise(op.matvec(v), expected, rtol=1e-13)
        rounding.assert_close_normwise(dense @ v, expected, rtol=1e-13)
        np.testing.assert_array_equal(op @ v, op.matvec(v))


# A batched sweep sums in another order than a looped one (matrix-matrix products against matrix-vector
# ones, other chunk sizes), and another BLAS kernel rounds those sums differently, by some eps times the
# magnitudes summed, not times a small result: the comparisons below are normwise.

def test_matmat_equals_looped_matvec(rounding):
    rng = np.random.default_rng(2)
    model = TwoLayerModel()
    op = ad.hessian_operator(model.loss, model.variables)
    vectors = rng.normal(size=(op.shape[0], 5))
    batched = op.matmat(vectors)
    looped = np.stack([op.matvec(v) for v in vectors.T], axis=1)
    assert batched.shape == (op.shape[0], 5)
    rounding.assert_close_normwise(batched, looped, rtol=1e-13)
    np.testing.assert_array_equal(op @ vectors, batched)
    dense = op.to_dense()
    rounding.assert_close_normwise(dense, dense.T, rtol=1e-13)
    rounding.assert_close_normwise(dense @ vectors, batched, rtol=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
def test_chunk_size_gives_the_same_results(chunk_size, rounding):
    rng = np.random.default_rng(3)
    model = TwoLayerModel()
    whole = ad.hessian_operator(model.loss, model.variables)
    chunked = ad.hessian_operator(model.loss, model.variables, chunk_size=chunk_size)
    vectors = rng.normal(size=(whole.shape[0], 8))
    rounding.assert_close_normwise(chunked.to_dense(), whole.to_dense(), rtol=1e-13)
    rounding.assert_close_normwise(chunked.matmat(vectors), whole.matmat(vectors), rtol=1e-13)
    np.testing.assert_array_equal(chunked.matvec(vectors[:, 0]), whole.matvec(vectors[:, 0]))


def test_conjugate_gradients_on_the_linear_operator_solve_the_newton_system(rounding):
    problem = LogisticRegression()
    op = ad.hessian_operator(problem.loss, problem.w)
    hessian = op.as_linear_operator()
    assert isinstance(hessian, LinearOperator) and hessian.shape == op.shape
    exact = problem.hessian(problem.w)
    rounding.assert_close_normwise(op.to_dense(), exact, rtol=1e-12)   # X^T W X summed two ways
    step, info = cg(hessian, op.gradient, rtol=1e-12, atol=0.0)
    assert info == 0
    # CG stopped where its recursive residual passed ||r|| <= 1e-12 ||g||; the true residual differs by
    # the rounding of at most n steps, n gamma_n cond(H) ||g||, and the step from the solution by cond(H)
    # times the relative residual (plus the dense solve's own rounding)
    n, cond = op.shape[0], np.linalg.cond(exact)
    relative_residual = 1e-12 + n * rounding.gamma(n) * cond
    residual = np.linalg.norm(op.matvec(step) - op.gradient)
    assert residual <= relative_residual * np.linalg.norm(op.gradient)
    solution = np.linalg.solve(exact, op.gradient)
    error_bound = cond * (relative_residual + rounding.gamma(3 * n)) * np.linalg.norm(solution)
    assert np.linalg.norm(step - solution) <= error_bound


def test_eigsh_on_the_linear_operator_finds_the_largest_eigenvalue():
    model = TwoLayerModel()
    op = ad.hessian_operator(model.loss, model.variables)
    (largest,), vectors = eigsh(op.as_linear_operator(), k=1, which="LA", tol=1e-12)
    assert largest == pytest.approx(np.linalg.eigvalsh(op.to_dense())[-1], rel=1e-10)
    np.testing.assert_allclose(op.matvec(vectors[:, 0]), largest * vectors[:, 0], atol=1e-9)


# --- pytrees and Variables -------------------------------------------------------------------------

def dict_loss(params):
    return (anp.sum(anp.sin(params["w"]) * params["w"].T) * params["scale"][0]
            + anp.sum(params["b"] ** 4))


DICT_PARAMS = {"w": np.array([[0.3, -0.7], [1.1, 0.2]]), "b": np.array([0.5, -1.0, 0.25]),
               "scale": np.array([1.5])}


def test_pytree_point_works_on_the_flat_vector_and_unravel_maps_back():
    rng = np.random.default_rng(4)
    op = ad.hessian_operator(dict_loss, DICT_PARAMS)
    flat, _ = ad.ravel(DICT_PARAMS)
    assert op.shape == (8, 8)
    gradient_tree = ad.grad(dict_loss)(DICT_PARAMS)
    np.testing.assert_allclose(op.gradient, ad.ravel(gradient_tree)[0], rtol=1e-14)
    v = rng.normal(size=8)
    np.testing.assert_allclose(op.matvec(v), ad.hessian(dict_loss)(DICT_PARAMS) @ v, rtol=1e-13)
    eps = 1e-6
    difference = (ad.grad(lambda z: dict_loss(op.unravel(z)))(flat + eps * v)
                  - ad.grad(lambda z: dict_loss(op.unravel(z)))(flat - eps * v)) / (2 * eps)
    np.testing.assert_allclose(op.matvec(v), difference, atol=1e-7)

    back = op.unravel(op.gradient)
    assert set(back) == set(DICT_PARAMS)
    for key in DICT_PARAMS:
        np.testing.assert_allclose(back[key], gradient_tree[key], rtol=1e-14)
    assert {key: np.shape(value) for key, value in op.unravel(op.matvec(v)).items()} == \
        {key: value.shape for key, value in DICT_PARAMS.items()}


def test_variables_form_equals_the_array_form():
    rng = np.random.default_rng(5)
    model = TwoLayerModel()
    with_variables = ad.hessian_operator(model.loss, model.variables)
    with_arrays = ad.hessian_operator(lambda params: model.loss_of(*params),
                                      [v.numpy() for v in model.variables])
    assert with_variables.shape == with_arrays.shape == (26, 26)
    assert with_variables.value == with_arrays.value
    np.testing.assert_array_equal(with_variables.gradient, with_arrays.gradient)
    np.testing.assert_allclose(with_variables.to_dense(), with_arrays.to_dense(), rtol=1e-14,
                               atol=1e-16)
    v = rng.normal(size=26)
    np.testing.assert_allclose(with_variables.matvec(v), with_arrays.matvec(v), rtol=1e-14)


def test_variables_form_answers_for_the_point_it_was_built_at():
    rng = np.random.default_rng(6)
    model = TwoLayerModel()
    op = ad.hessian_operator(model.loss, model.variables)
    v = rng.normal(size=op.shape[0])
    before = op.matvec(v)
    for variable in model.variables:
        variable.assign_add(np.ones(variable.shape))
    np.testing.assert_array_equal(op.matvec(v), before)
    moved = ad.hessian_operator(model.loss, model.variables)
    assert np.abs(moved.matvec(v) - before).max() > 1e-3


def test_hand_written_persistent_tape_pattern_equals_the_operator():
    rng = np.random.default_rng(7)
    model = TwoLayerModel()
    op = ad.hessian_operator(model.loss, model.variables)
    with ad.GradientTape(persistent=True) as outer:
        with ad.GradientTape() as inner:
            loss = model.loss()
        g = inner.gradient(loss, model.variables)
    np.testing.assert_array_equal(np.concatenate([gi.numpy().ravel() for gi in g]), op.gradient)
    for _ in range(3):
        v = rng.normal(size=op.shape[0])
        hv = outer.gradient(g, model.variables, output_gradients=split_like(v, model.variables))
        np.testing.assert_allclose(np.concatenate([h.numpy().ravel() for h in hv]), op.matvec(v),
                                   rtol=1e-14, atol=1e-16)


# --- errors ----------------------------------------------------------------------------------------

def test_a_vector_of_the_wrong_length_raises_value_error():
    op = ad.hessian_operator(rosenbrock, ROSENBROCK_X)
    with pytest.raises(ValueError, match=r"length 6 .* shape \(7, 7\)"):
        op.matvec(np.ones(6))
    with pytest.raises(ValueError, match=r"length 8"):
        op @ np.ones(8)
    with pytest.raises(ValueError, match=r"\(6, 2\)"):
        op.matmat(np.ones((6, 2)))


@pytest.mark.parametrize("leaves_the_engine", [
    lambda x: float(np.sum(x.numpy() ** 2)),
    lambda x: np.sum(x.numpy() ** 2),
], ids=["float", "numpy_scalar"])
def test_a_function_that_leaves_the_engine_raises_type_error(leaves_the_engine):
    with pytest.raises(TypeError, match="does not depend on x"):
        ad.hessian_operator(leaves_the_engine, ROSENBROCK_X)


def test_a_non_scalar_function_raises_type_error():
    with pytest.raises(TypeError, match=r"scalar output, got shape \(7,\)"):
        ad.hessian_operator(lambda x: x ** 2, ROSENBROCK_X)


# --- memory ----------------------------------------------------------------------------------------

PRODUCTS = 1000


def traced_growth(product):
    """Bytes still allocated after PRODUCTS calls of ``product`` (after a warm-up)."""
    tracemalloc.start()
    try:
        for _ in range(10):
            product()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(PRODUCTS):
            product()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


class WideLayer:
    """mean(tanh(x W + b)^2) with 272 parameters: a leaked vector per product would be 2 MB."""

    def __init__(self):
        rng = np.random.default_rng(8)
        self.x = rng.normal(size=(8, 16))
        self.variables = [ad.Variable(rng.normal(size=(16, 16)) / 4), ad.Variable(np.zeros(16))]

    def loss(self):
        w, b = self.variables
        return anp.mean(anp.tanh(anp.matmul(self.x, w) + b) ** 2)


def test_cached_products_do_not_grow_memory():
    model = WideLayer()
    op = ad.hessian_operator(model.loss, model.variables)
    v = np.random.default_rng(9).normal(size=op.shape[0])
    expected = op.matvec(v)
    assert traced_growth(lambda: op.matvec(v)) < 1e6
    np.testing.assert_array_equal(op.matvec(v), expected)


def test_products_inside_a_users_tape_record_nothing_on_it():
    model = TwoLayerModel()  # its backward rules read the Variables (the cotangent of hidden is g w2')
    op = ad.hessian_operator(model.loss, model.variables)
    v = np.random.default_rng(12).normal(size=op.shape[0])
    expected, dense = op.matvec(v), op.to_dense()
    with ad.GradientTape(persistent=True) as tape:  # watches every trainable Variable it sees read
        with ad.ForwardAccumulator(model.variables, [np.ones(w.shape) for w in model.variables]):
            inside, dense_inside = op.matvec(v), op.to_dense()
    assert tape._records == []
    np.testing.assert_array_equal(inside, expected)
    np.testing.assert_array_equal(dense_inside, dense)


def test_an_operator_of_a_function_of_a_tracked_value_is_refused_and_hvp_nests_instead():
    """Its products are arrays: built on f(y) = a * sum(y^3) inside a transform of a, it would drop
    the dependence on a without a word."""
    y, v = np.array([2.0, 1.0]), np.array([1.0, 1.0])
    with pytest.raises(TypeError, match=r"curvature operator holds values.*autodiff\.hvp"):
        ad.grad(lambda a: np.sum(ad.hessian_operator(lambda z: a * np.sum(z ** 3), y).matvec(v)))(1.5)
    assert float(ad.grad(lambda a: np.sum(ad.hvp(lambda z: a * np.sum(z ** 3), y, v)))(1.5)) == 18.0  # 6 y . v


def test_hand_written_pattern_does_not_grow_memory_or_the_tape():
    model = WideLayer()
    with ad.GradientTape(persistent=True) as outer:
        with ad.GradientTape() as inner:
            loss = model.loss()
        g = inner.gradient(loss, model.variables)
    records = len(outer._records)
    v = [np.ones(variable.shape) for variable in model.variables]
    assert traced_growth(lambda: outer.gradient(g, model.variables, output_gradients=v)) < 1e6
    assert len(outer._records) == records


DEPTH, WIDTH, BATCH, BLOCK = 32, 64, 32, 8


def deep_chain(h, weights):
    for w in weights:
        h = anp.tanh(anp.matmul(h, w))
    return h


def checkpointed_chain(weights):
    """The chain as DEPTH / BLOCK recompute_grad blocks of BLOCK layers."""
    blocks = [ad.recompute_grad(lambda h, ws=weights[i:i + BLOCK]: deep_chain(h, ws))
              for i in range(0, len(weights), BLOCK)]

    def forward(h):
        for block in blocks:
            h = block(h)
        return h
    return forward


def test_recompute_grad_keeps_far_less_on_the_tape_and_gives_equal_gradients():
    rng = np.random.default_rng(10)
    weights = [ad.Variable(rng.normal(size=(WIDTH, WIDTH)) / np.sqrt(WIDTH)) for _ in range(DEPTH)]
    x = ad.constant(rng.normal(size=(BATCH, WIDTH)))

    def record(forward):
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tape = ad.GradientTape()
            with tape:
                loss = anp.sum(forward(x) ** 2)
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before, tape.gradient(loss, weights)
        finally:
            tracemalloc.stop()

    plain_bytes, plain_gradients = record(lambda h: deep_chain(h, weights))
    checkpointed_bytes, checkpointed_gradients = record(checkpointed_chain(weights))
    assert plain_bytes > DEPTH * BATCH * WIDTH * 8  # every layer's activations are kept
    assert checkpointed_bytes < 0.3 * plain_bytes
    for plain, checkpointed in zip(plain_gradients, checkpointed_gradients):
        np.testing.assert_allclose(checkpointed.numpy(), plain.numpy(), rtol=1e-13, atol=1e-16)


def test_hessian_vector_products_through_checkpointed_blocks_equal_the_plain_ones():
    rng = np.random.default_rng(11)
    weights = [ad.Variable(rng.normal(size=(4, 4)) / 2) for _ in range(4)]
    x = rng.normal(size=(3, 4))
    blocks = [ad.recompute_grad(lambda h, ws=weights[i:i + 2]: deep_chain(h, ws)) for i in (0, 2)]

    def checkpointed_loss():
        return anp.sum(blocks[1](blocks[0](x)) ** 2)

    def plain_loss():
        return anp.sum(deep_chain(x, weights) ** 2)

    checkpointed = ad.hessian_operator(checkpointed_loss, weights)
    plain = ad.hessian_operator(plain_loss, weights)
    np.testing.assert_allclose(checkpointed.gradient, plain.gradient, rtol=1e-13)
    for _ in range(2):
        v = rng.normal(size=64)
        np.testing.assert_allclose(checkpointed.matvec(v), plain.matvec(v), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(checkpointed.to_dense(), plain.to_dense(), rtol=1e-12, atol=1e-14)
