"""The functional layer (grad, value_and_grad, jacobian, hessian, hvp, jvp, vjp, ravel), forward mode,
and the agreement of every way of taking a derivative product.

References are closed forms, scipy's Rosenbrock derivatives and central finite differences in
float64. Tape behaviours from TensorFlow's guides are covered in test_tape.py.
"""
import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess

import autodiff as ad
import autodiff.numpy as anp
from autodiff.check import central_differences as central_difference

# --- test functions, each with a point and a direction ---------------------------------------------

def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


_rng = np.random.default_rng(42)
_DATA, _TARGETS = _rng.normal(size=(12, 3)), _rng.normal(size=(12, 2))
_MLP_PARAMETERS = {"w1": _rng.normal(size=(3, 5)) / 2, "b1": _rng.normal(size=5) / 4,
                   "w2": _rng.normal(size=(5, 2)) / 2, "b2": _rng.normal(size=2) / 4}
_MLP_FLAT, _MLP_UNRAVEL = ad.ravel(_MLP_PARAMETERS)


def mlp_loss(theta):
    """Mean squared error of Dense(5, tanh) then Dense(2), on a flat parameter vector."""
    p = _MLP_UNRAVEL(theta)
    hidden = anp.tanh(anp.matmul(_DATA, p["w1"]) + p["b1"])
    return anp.mean((anp.matmul(hidden, p["w2"]) + p["b2"] - _TARGETS) ** 2)


def logsumexp(x):
    return anp.logsumexp(x)


_C, _D = _rng.normal(size=(3, 3)), _rng.normal(size=(3, 3))


def matmul_einsum_indexing(x):
    """x has 6 entries: a reshape and matmul, an einsum over slices, fancy and strided indexing."""
    m = anp.reshape(x, (2, 3))
    return (0.1 * anp.sum(anp.matmul(m, _C) ** 2)
            + anp.einsum("i,ij,j->", x[1:4], _D, x[[0, 5, 2]])
            + anp.sum(anp.sin(x[::2]) * x[1::2]))


PROBLEMS = {
    "rosenbrock": (rosenbrock, np.array([-1.2, 1.0, 0.5, 0.8, 1.1]),
                   np.array([0.3, -0.2, 1.0, 0.5, -0.7])),
    "mlp": (mlp_loss, _MLP_FLAT, _rng.normal(size=_MLP_FLAT.size)),
    "logsumexp": (logsumexp, np.array([0.5, -1.0, 2.0, 0.1]), np.array([1.0, 0.5, -0.3, 2.0])),
    "matmul_einsum_indexing": (matmul_einsum_indexing, _rng.normal(size=6), _rng.normal(size=6)),
}


def finite_difference_hessian(f, x):
    return central_difference(ad.grad(f), x, eps=1e-5)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


# --- outputs mirror inputs -------------------------------------------------------------------------

def sin_times_square(x):
    return anp.sum(anp.sin(x) * x ** 2)


def sin_times_square_gradient(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x)


def test_numpy_in_numpy_out():
    x = np.array([0.3, -1.2, 2.0])
    g = ad.grad(sin_times_square)(x)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, sin_times_square_gradient(x), rtol=1e-14)

    value, g = ad.value_and_grad(sin_times_square)(x)
    assert type(value) is np.float64 and type(g) is np.ndarray
    assert value == pytest.approx(np.sum(np.sin(x) * x ** 2), rel=1e-15)

    for result in (ad.jacobian(anp.sin)(x), ad.hessian(sin_times_square)(x),
                   ad.hvp(sin_times_square, x, np.ones(3)), ad.jvp(anp.sin, (x,), (x,))[1],
                   ad.vjp(anp.sin, x)[0], ad.vjp(anp.sin, x)[1](x)[0]):
        assert type(result) is np.ndarray


def test_tensors_in_tensors_out_and_the_enclosing_tape_differentiates_them():
    x_value = np.array([0.3, -0.7, 1.1])
    x = ad.constant(x_value)
    hessian = np.diag(-np.sin(x_value) * x_value ** 2 + 4 * x_value * np.cos(x_value)
                      + 2 * np.sin(x_value))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        g = ad.grad(sin_times_square)(x)
        value, g2 = ad.value_and_grad(sin_times_square)(x)
        jac = ad.jacobian(anp.sin)(x)
        h = ad.hessian(sin_times_square)(x)
        hv = ad.hvp(sin_times_square, x, np.ones(3))
        primal_out, tangent_out = ad.jvp(anp.sin, (x,), (np.ones(3),))
        y, vjp_fn = ad.vjp(anp.sin, x)
        (cotangent_in,) = vjp_fn(np.ones(3))
    for result in (g, value, g2, jac, h, hv, primal_out, tangent_out, y, cotangent_in):
        assert isinstance(result, ad.Tensor)
    np.testing.assert_allclose(tape.gradient(g, x).numpy(), hessian @ np.ones(3), rtol=1e-13)
    np.testing.assert_allclose(tape.gradient(g2, x).numpy(), hessian @ np.ones(3), rtol=1e-13)
    np.testing.assert_allclose(tape.gradient(hv, x).numpy(), tape.gradient(h, x).numpy(), rtol=1e-13)
    np.testing.assert_allclose(tape.gradient(jac, x).numpy(), -np.sin(x_value), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(tangent_out, x).numpy(), -np.sin(x_value), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(cotangent_in, x).numpy(), -np.sin(x_value), rtol=1e-14)


# Transforms nested in a transform of a, whose inner function also reads a through a closure: each
# is (the transform of y -> a * y**3 at y), with the derivative in a of its result closed-form.
# At y = a (the same Tensor) the inner transform must still differentiate in y alone.
CLOSURE_TRANSFORMS = {
    "grad": (lambda a, y: ad.grad(lambda z: a * z ** 3)(y), lambda a, y: 3 * y ** 2),
    "value_and_grad": (lambda a, y: ad.value_and_grad(lambda z: a * z ** 3)(y)[1], lambda a, y: 3 * y ** 2),
    "jacobian": (lambda a, y: ad.jacobian(lambda z: a * z ** 3)(y), lambda a, y: 3 * y ** 2),
    "hessian": (lambda a, y: ad.hessian(lambda z: a * z ** 3)(y), lambda a, y: 6 * y),
    "hvp": (lambda a, y: ad.hvp(lambda z: a * z ** 3, y, 2.0), lambda a, y: 12 * y),
    "jvp": (lambda a, y: ad.jvp(lambda z: a * z ** 3, (y,), (2.0,))[1], lambda a, y: 6 * y ** 2),
    "vjp": (lambda a, y: ad.vjp(lambda z: a * z ** 3, y)[1](2.0)[0], lambda a, y: 6 * y ** 2),
    "linearize": (lambda a, y: ad.linearize(lambda z: a * z ** 3, y)[1](2.0), lambda a, y: 6 * y ** 2),
    "function(grad)": (lambda a, y: ad.function(ad.grad(lambda z: a * z ** 3))(y), lambda a, y: 3 * y ** 2),
}


@pytest.mark.parametrize("name", CLOSURE_TRANSFORMS)
@pytest.mark.parametrize("same_point", [False, True])
def test_a_transform_inside_a_transform_differentiates_what_its_function_closes_over(name, same_point):
    """d/da of T(y -> a y^3)(y): a is reached only through the closure. With a plain y the inner
    result must stay a Tensor of a (it is not NumPy-in-NumPy-out); with y = a, the inner transform
    differentiates in y only (d/da then also counts y = a: the total derivative)."""
    transform, partial_in_y = CLOSURE_TRANSFORMS[name]
    a0 = 1.5
    if same_point:  # f(a) = T(a, a) = a * D(a) with D(a) = partial_in_y(1, a): f' = D(a) + a D'(a)
        expected = float(central_difference(lambda a: np.asarray(a * partial_in_y(1.0, a)), np.array(a0)))
        outer = lambda a: transform(a, a)  # noqa: E731
    else:           # f(a) = a * D(y) at y = 2: f' = D(2)
        expected = partial_in_y(1.0, 2.0)
        outer = lambda a: transform(a, 2.0)  # noqa: E731
    assert float(ad.grad(outer)(a0)) == pytest.approx(expected, rel=1e-8)
    assert float(ad.jvp(outer, (a0,), (1.0,))[1]) == pytest.approx(expected, rel=1e-8)


def test_a_tensor_given_for_two_arguments_is_differentiated_in_each_separately():
    x = ad.constant(3.0)
    with ad.GradientTape() as tape:
        tape.watch(x)
        gx, gy = ad.grad(lambda a, b: a * b ** 2, argnums=(0, 1))(x, x)
        total = gx + gy
    assert (float(gx), float(gy)) == (9.0, 18.0)          # b^2 and 2ab at a = b = 3
    assert float(tape.gradient(total, x)) == 18.0         # d(x^2 + 2 x^2)/dx = 6x


def x_sin_x(x):
    return anp.sin(x) * x


# derivatives of x sin x: sin + x cos, 2 cos - x sin, -3 sin - x cos, -4 cos + x sin
X_SIN_X_DERIVATIVES = [
    lambda x: np.sin(x) + x * np.cos(x),
    lambda x: 2 * np.cos(x) - x * np.sin(x),
    lambda x: -3 * np.sin(x) - x * np.cos(x),
    lambda x: -4 * np.cos(x) + x * np.sin(x),
]


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_grad_nests_to_the_fourth_derivative(order):
    derivative = x_sin_x
    for _ in range(order):
        derivative = ad.grad(derivative)
    for x in (-1.3, 0.0, 0.7, 2.5):
        assert derivative(x) == pytest.approx(X_SIN_X_DERIVATIVES[order - 1](x), rel=1e-13, abs=1e-14)


_A = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 1.0, 1.0]])


def coupled(x):
    """0.5 x'Ax + sum(x^3) + exp(x0 x1)."""
    return 0.5 * anp.dot(x, anp.dot(_A, x)) + anp.sum(x ** 3) + anp.exp(x[0] * x[1])


def coupled_hessian(x):
    h = (_A + _A.T) / 2 + np.diag(6 * x)
    e = np.exp(x[0] * x[1])
    h[:2, :2] += e * np.array([[x[1] ** 2, 1 + x[0] * x[1]], [1 + x[0] * x[1], x[0] ** 2]])
    return h


def test_hessian_matches_the_closed_form_and_finite_differences_of_grad():
    x = np.array([0.4, -0.9, 1.3])
    h = ad.hessian(coupled)(x)
    assert h.shape == (3, 3)
    np.testing.assert_allclose(h, coupled_hessian(x), rtol=1e-13)
    np.testing.assert_allclose(h, finite_difference_hessian(coupled, x), atol=1e-8)
    np.testing.assert_allclose(ad.hessian(coupled, chunk_size=1)(x), h, rtol=1e-15)


def test_hessian_of_a_matrix_argument_has_shape_s_plus_s():
    x = np.array([[0.3, -0.7], [1.1, 0.2]])

    def f(m):
        return anp.sum(anp.sin(m) * m.T)

    h = ad.hessian(f)(x)
    assert h.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(h, central_difference(ad.grad(f), x, eps=1e-5), atol=1e-9)


def test_third_derivative_as_jacobian_of_hessian():
    x = np.array([0.4, -0.9, 1.3])
    third = ad.jacobian(ad.hessian(coupled))(x)
    assert third.shape == (3, 3, 3)
    np.testing.assert_allclose(third, central_difference(coupled_hessian, x, eps=1e-5), atol=1e-8)


def test_jacobian_of_a_matrix_function_has_shape_f_shape_plus_x_shape():
    b = np.array([[1.0, -2.0], [0.5, 0.3], [2.0, 1.0], [-1.0, 0.7]])
    x = np.array([[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]])

    def f(m):
        return anp.tanh(anp.matmul(b, m))

    jac = ad.jacobian(f)(x)
    assert jac.shape == (4, 3, 2, 3)
    y = np.tanh(b @ x)
    # d y[i, j] / d x[k, l] = (1 - y[i, j]^2) b[i, k] [j == l]
    exact = np.einsum("ij,ik,jl->ijkl", 1 - y ** 2, b, np.eye(3))
    np.testing.assert_allclose(jac, exact, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(jac, central_difference(f, x), atol=1e-9)
    np.testing.assert_array_equal(ad.jacobian(f, chunk_size=5)(x), jac)


def weighted_product(a, b, c, scale=1.0):
    return scale * anp.sum(a * b ** 2 * anp.sin(c))


def test_argnums_int_and_tuple_and_kwargs_pass_through():
    a, b, c = np.array([1.0, 2.0]), np.array([0.5, -1.5]), np.array([0.3, 0.9])
    assert ad.grad(weighted_product, argnums=1)(a, b, c, scale=3.0) == pytest.approx(
        3.0 * 2 * a * b * np.sin(c), rel=1e-14)
    ga, gc = ad.grad(weighted_product, argnums=(0, 2))(a, b, c, scale=3.0)
    np.testing.assert_allclose(ga, 3.0 * b ** 2 * np.sin(c), rtol=1e-14)
    np.testing.assert_allclose(gc, 3.0 * a * b ** 2 * np.cos(c), rtol=1e-14)

    value, (ga2, gb2) = ad.value_and_grad(weighted_product, argnums=(0, 1))(a, b, c, scale=3.0)
    assert value == pytest.approx(3.0 * np.sum(a * b ** 2 * np.sin(c)), rel=1e-14)
    np.testing.assert_allclose(ga2, ga, rtol=1e-15)
    np.testing.assert_allclose(gb2, 3.0 * 2 * a * b * np.sin(c), rtol=1e-14)

    h_c = ad.hessian(weighted_product, argnums=2)(a, b, c, scale=3.0)
    np.testing.assert_allclose(h_c, np.diag(-3.0 * a * b ** 2 * np.sin(c)), rtol=1e-14)
    jac_a, jac_b = ad.jacobian(lambda a, b, k: k * a * b, argnums=(0, 1))(a, b, k=2.0)
    np.testing.assert_allclose(jac_a, np.diag(2.0 * b), rtol=1e-15)
    np.testing.assert_allclose(jac_b, np.diag(2.0 * a), rtol=1e-15)


@pytest.mark.parametrize("transform", [ad.grad, ad.value_and_grad])
def test_non_scalar_output_to_grad_raises_a_clear_type_error(transform):
    with pytest.raises(TypeError, match=r"scalar output.*shape \(3,\).*jacobian"):
        transform(anp.sin)(np.ones(3))


@pytest.mark.parametrize("keepdims_shape", [(1,), (1, 1)])
def test_an_output_of_one_element_counts_as_a_scalar(keepdims_shape):
    """As autograd, TensorFlow and PyTorch: the gradient of the one element (JAX refuses)."""
    x = np.array([[0.3, -1.2, 2.0]])
    f = lambda x: np.reshape(np.sum(np.sin(x)), keepdims_shape)  # noqa: E731
    np.testing.assert_allclose(ad.grad(f)(x), np.cos(x), rtol=1e-15)
    value, g = ad.value_and_grad(f)(x)
    assert np.shape(value) == keepdims_shape
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(ad.grad(f)(x)))(x), -np.sin(x), rtol=1e-15)


# --- pytrees ---------------------------------------------------------------------------------------

def tree_function(tree):
    a, b = tree["a"], tree["b"]
    return anp.sum(a ** 2) * b[0][1] + anp.sum(anp.sin(b[1])) * a[0, 1] + anp.exp(b[0][0])


TREE = {"a": np.array([[1.0, -0.5], [0.3, 2.0]]), "b": [np.array([0.2, 0.7]), np.array([1.5])]}


def test_hessian_of_a_pytree_is_one_flat_matrix_equal_to_the_raveled_functions():
    flat, unravel = ad.ravel(TREE)
    h = ad.hessian(tree_function)(TREE)
    assert h.shape == (7, 7)
    raveled = ad.hessian(lambda v: tree_function(unravel(v)))(flat)
    np.testing.assert_allclose(h, raveled, rtol=1e-15)
    np.testing.assert_allclose(h, h.T, rtol=1e-15)
    np.testing.assert_allclose(
        h, finite_difference_hessian(lambda w: tree_function(unravel(w)), flat), atol=1e-8)

    list_tree = [np.array([0.5, -1.0]), np.array(2.0)]
    h_list = ad.hessian(lambda t: anp.sum(t[0] ** 2) * t[1] ** 2)(list_tree)
    # f = s * t^2 with s = |u|^2: d2f/du2 = 2 t^2 I, d2f/du dt = 4 t u, d2f/dt2 = 2 s
    u, t = list_tree
    exact = np.zeros((3, 3))
    exact[:2, :2] = 2 * t ** 2 * np.eye(2)
    exact[:2, 2] = exact[2, :2] = 4 * t * u
    exact[2, 2] = 2 * np.sum(u ** 2)
    np.testing.assert_allclose(h_list, exact, rtol=1e-15)


def test_hessian_and_hvp_of_a_pytree_of_tensors_are_tensors_the_enclosing_tape_differentiates(rounding):
    flat_value, unravel = ad.ravel(TREE)
    tree = {"a": ad.constant(TREE["a"]), "b": [ad.constant(leaf) for leaf in TREE["b"]]}
    v = np.linspace(-1.0, 1.0, 7)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(tree)
        h = ad.hessian(tree_function)(tree)
        hv = ad.hvp(tree_function, tree, v)
        trace = anp.trace(h)
    assert isinstance(h, ad.Tensor) and isinstance(hv, ad.Tensor)
    np.testing.assert_allclose(h.numpy(), ad.hessian(tree_function)(TREE), rtol=1e-15)
    rounding.assert_close_to_product(hv.numpy(), h.numpy() @ v, h.numpy(), v, roundings=4)

    def flat_hessian(z):
        return ad.hessian(lambda w: tree_function(unravel(w)))(z)

    d_trace = ad.ravel(tape.gradient(trace, tree))[0]
    np.testing.assert_allclose(d_trace, central_difference(lambda z: np.trace(flat_hessian(z)),
                                                           flat_value, 1e-5), atol=1e-8)
    d_hv = ad.ravel(tape.gradient(hv, tree, output_gradients=v))[0]
    np.testing.assert_allclose(d_hv, central_difference(lambda z: v @ flat_hessian(z) @ v,
                                                        flat_value, 1e-5), atol=1e-8)


def test_grad_of_a_pytree_has_the_trees_structure():
    g = ad.grad(tree_function)(TREE)
    assert set(g) == {"a", "b"} and type(g["b"]) is list and g["a"].shape == (2, 2)
    flat, unravel = ad.ravel(TREE)
    flat_gradient = ad.grad(lambda v: tree_function(unravel(v)))(flat)
    np.testing.assert_array_equal(ad.ravel(g)[0], flat_gradient)


@pytest.mark.parametrize("tree", [
    {"w": np.arange(6.0).reshape(2, 3), "b": np.array([-1.0, 2.0])},
    [np.array([1.0, 2.0]), np.array([[3.0], [4.0]])],
    {"layers": [{"w": np.ones((2, 2)), "b": np.zeros(2)}, (np.array([5.0]), 6.0)], "scale": 7.0},
    2.5,
    [1.0, np.float32(2.5), np.array(3.0)],
    {"w": np.linspace(0, 1, 5, dtype=np.float32), "b": np.array([0.1], np.float32)},
], ids=["dict", "list", "nested", "scalar", "scalars", "float32"])
def test_ravel_unravel_round_trip(tree):
    flat, unravel = ad.ravel(tree)
    leaves = _leaves(tree)
    assert flat.ndim == 1 and flat.dtype == np.float64
    np.testing.assert_array_equal(flat, np.concatenate([np.ravel(leaf) for leaf in leaves]))
    rebuilt = unravel(flat)
    assert _structure(rebuilt) == _structure(tree)
    for original, back in zip(leaves, _leaves(rebuilt)):
        assert np.shape(back) == np.shape(original)
        np.testing.assert_array_equal(back, original)
    np.testing.assert_array_equal(ad.ravel(rebuilt)[0], flat)


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def _structure(tree):
    if isinstance(tree, dict):
        return {key: _structure(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_structure(item) for item in tree)
    return "leaf"


def test_ravel_keeps_complex_leaves_complex():
    tree = {"z": np.array([1 + 2j, -3j]), "x": 4.0}
    flat, unravel = ad.ravel(tree)
    assert flat.dtype == np.complex128
    np.testing.assert_array_equal(flat, [1 + 2j, -3j, 4.0])
    np.testing.assert_array_equal(unravel(flat)["z"], tree["z"])


def test_ravel_of_tracked_tensors_is_differentiable():
    """ravel inside a transform: the flat vector carries the leaves' gradients (it was their values)."""
    def f(x, y):
        flat, _ = ad.ravel([x, {"y": y}])
        return anp.sum(flat ** 2) * x
    gx, gy = ad.grad(f, argnums=(0, 1))(1.5, np.array([2.0, -1.0]))
    assert float(gx) == pytest.approx(3 * 1.5 ** 2 + 5.0, rel=1e-15)   # d/dx (x^2 + |y|^2) x
    np.testing.assert_allclose(gy, 2 * np.array([2.0, -1.0]) * 1.5, rtol=1e-15)


def test_unravel_is_differentiable():
    flat, unravel = ad.ravel(TREE)

    def through_unravel(v):
        tree = unravel(v)
        return anp.sum(tree["a"] ** 3) + tree["b"][1][0] * tree["b"][0][1]

    g = ad.grad(through_unravel)(flat)
    a, b = TREE["a"], TREE["b"]
    np.testing.assert_allclose(g, np.concatenate([3 * a.ravel() ** 2, [0.0, b[1][0], b[0][1]]]),
                               rtol=1e-15)
    v = ad.constant(flat)
    with ad.GradientTape() as tape:
        tape.watch(v)
        pieces = unravel(v)
    assert isinstance(pieces["a"], ad.Tensor) and pieces["a"].shape == (2, 2)
    seed = {"a": np.ones((2, 2)), "b": [np.array([2.0, 3.0]), np.array([4.0])]}
    cotangent = tape.gradient(pieces, v, output_gradients=seed)
    np.testing.assert_array_equal(cotangent.numpy(), [1, 1, 1, 1, 2, 3, 4])


# --- Hessian-vector products: every route agrees ---------------------------------------------------

def forward_over_reverse(f, x, v):
    x = ad.constant(x)
    with ad.ForwardAccumulator(x, v) as accumulator:
        with ad.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    return accumulator.jvp(g).numpy()


def reverse_over_forward(f, x, v):
    x = ad.constant(x)
    with ad.GradientTape() as tape:
        tape.watch(x)
        with ad.ForwardAccumulator(x, v) as accumulator:
            y = f(x)
        directional = accumulator.jvp(y)
    return tape.gradient(directional, x).numpy()


def nested_tapes(f, x, v):
    x = ad.constant(x)
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x, output_gradients=v).numpy()


@pytest.mark.parametrize("name", PROBLEMS)
def test_every_hessian_vector_product_route_agrees(name):
    f, x, v = PROBLEMS[name]
    hessian = ad.hessian(f)(x)
    expected = hessian @ v
    scale = np.abs(expected).max()
    routes = {"hvp": ad.hvp(f, x, v), "forward_over_reverse": forward_over_reverse(f, x, v),
              "reverse_over_forward": reverse_over_forward(f, x, v),
              "nested_tapes": nested_tapes(f, x, v)}
    for route, hv in routes.items():
        np.testing.assert_allclose(hv, expected, rtol=1e-12, atol=1e-13 * scale, err_msg=route)
    eps = 1e-6
    difference = (ad.grad(f)(x + eps * v) - ad.grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(expected, difference, atol=1e-7 * scale)


@pytest.mark.parametrize("name", PROBLEMS)
def test_hessians_are_symmetric_and_match_finite_differences(name):
    f, x, _ = PROBLEMS[name]
    h = ad.hessian(f)(x)
    assert h.shape == (x.size, x.size)
    np.testing.assert_allclose(h, h.T, rtol=1e-13, atol=1e-13 * np.abs(h).max())
    np.testing.assert_allclose(h, finite_difference_hessian(f, x), atol=1e-7 * np.abs(h).max())


def test_rosenbrock_derivatives_match_scipy():
    _, x, v = PROBLEMS["rosenbrock"]
    value, g = ad.value_and_grad(rosenbrock)(x)
    assert value == pytest.approx(rosen(x), rel=1e-15)
    np.testing.assert_allclose(g, rosen_der(x), rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(rosenbrock)(x), rosen_hess(x), rtol=1e-14)
    np.testing.assert_allclose(ad.hvp(rosenbrock, x, v), rosen_hess(x) @ v, rtol=1e-13)


def test_logsumexp_derivatives_match_the_closed_form():
    _, x, _ = PROBLEMS["logsumexp"]
    p = softmax(x)
    np.testing.assert_allclose(ad.grad(logsumexp)(x), p, rtol=1e-14)
    np.testing.assert_allclose(ad.hessian(logsumexp)(x), np.diag(p) - np.outer(p, p),
                               rtol=1e-13, atol=1e-16)


def test_hvp_of_a_matrix_argument_is_shaped_like_it():
    x = np.array([[0.3, -0.7], [1.1, 0.2]])
    v = np.array([[1.0, 0.5], [-2.0, 0.25]])

    def f(m):
        return anp.sum(anp.sin(m) * m.T)

    hv = ad.hvp(f, x, v)
    assert hv.shape == (2, 2)
    np.testing.assert_allclose(hv, np.einsum("ijkl,kl->ij", ad.hessian(f)(x), v), rtol=1e-13)


def test_hvp_of_a_tensor_differentiates_in_the_point_and_the_direction():
    x_value, v_value = np.array([0.4, -0.9, 1.3]), np.array([1.0, 0.5, -0.3])
    u = np.array([2.0, -1.0, 3.0])
    x, v = ad.constant(x_value), ad.constant(v_value)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch([x, v])
        u_hv = anp.sum(ad.hvp(coupled, x, v) * u)
    np.testing.assert_allclose(tape.gradient(u_hv, v).numpy(), coupled_hessian(x_value) @ u,
                               rtol=1e-13)
    third_contracted = central_difference(lambda z: u @ coupled_hessian(z) @ v_value, x_value, 1e-5)
    np.testing.assert_allclose(tape.gradient(u_hv, x).numpy(), third_contracted, atol=1e-8)


# --- jvp, vjp and ForwardAccumulator ---------------------------------------------------------------

def two_input_map(x, y):
    """R^3 x R^2 -> R^4."""
    return anp.concatenate([anp.sin(x) * y[0], anp.reshape(anp.sum(x ** 2) * anp.exp(y[1]), (1,))])


X3, Y2 = np.array([0.2, -0.4, 0.9]), np.array([1.5, -0.3])


# The engine's products against jx @ t: each term has a few roundings (sin, exp, the chain rule's
# products) on either side, so the comparisons are at the scale of |jx| @ |t|, where an entry near zero
# carries the rounding of its terms.

def test_jvp_is_the_jacobian_times_the_tangents(rounding):
    tx, ty = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.7])
    value, tangent = ad.jvp(two_input_map, (X3, Y2), (tx, ty))
    np.testing.assert_allclose(value, np.asarray(two_input_map(X3, Y2)), rtol=1e-15)
    jx, jy = ad.jacobian(two_input_map, argnums=(0, 1))(X3, Y2)
    assert jx.shape == (4, 3) and jy.shape == (4, 2)
    rounding.assert_close_to_product(tangent, jx @ tx + jy @ ty, np.hstack([jx, jy]), np.r_[tx, ty], roundings=4)
    np.testing.assert_allclose(jx, central_difference(lambda x: two_input_map(x, Y2), X3), atol=1e-9)


def test_vjp_is_the_cotangent_times_the_jacobian(rounding):
    value, vjp_fn = ad.vjp(two_input_map, X3, Y2)
    np.testing.assert_allclose(value, np.asarray(two_input_map(X3, Y2)), rtol=1e-15)
    jx, jy = ad.jacobian(two_input_map, argnums=(0, 1))(X3, Y2)
    for cotangent in (np.array([1.0, 0.0, -2.0, 0.5]), np.array([0.3, 0.1, 0.2, -1.0])):
        cx, cy = vjp_fn(cotangent)
        rounding.assert_close_to_product(cx, cotangent @ jx, cotangent, jx, roundings=4)
        rounding.assert_close_to_product(cy, cotangent @ jy, cotangent, jy, roundings=4)


def test_vjp_of_a_function_with_several_outputs_takes_one_cotangent_each():
    x = np.array([1.0, 2.0])
    (squares, total), vjp_fn = ad.vjp(lambda z: (z ** 2, anp.sum(z)), x)
    np.testing.assert_array_equal(squares, [1.0, 4.0])
    assert total == 3.0
    (cotangent,) = vjp_fn((np.array([1.0, -1.0]), 2.0))
    np.testing.assert_array_equal(cotangent, 2 * x * [1.0, -1.0] + 2.0)


def test_a_batch_of_cotangents_is_one_sweep_and_a_none_cotangent_is_zero(rounding):
    _, vjp_fn = ad.vjp(two_input_map, X3, Y2)
    jx, jy = ad.jacobian(two_input_map, argnums=(0, 1))(X3, Y2)
    cotangents = np.random.default_rng(4).normal(size=(2, 3, 4))   # batch axes (2, 3)
    cx, cy = vjp_fn(cotangents)
    assert cx.shape == (2, 3, 3) and cy.shape == (2, 3, 2)
    rounding.assert_close_to_product(cx, cotangents @ jx, cotangents, jx, roundings=4)
    rounding.assert_close_to_product(cy, cotangents @ jy, cotangents, jy, roundings=4)
    x = np.array([1.0, 2.0])
    _, pair_vjp = ad.vjp(lambda z: (z ** 2, anp.sum(z ** 3)), x)
    np.testing.assert_array_equal(pair_vjp((None, 2.0))[0], 6 * x ** 2)      # only the sum swept
    np.testing.assert_array_equal(pair_vjp((np.ones(2), None))[0], 2 * x)


def test_linearize_is_the_jacobian_times_the_tangents_recorded_once(counted, rounding):
    function = counted("map", two_input_map)
    value, f_jvp = ad.linearize(function, X3, Y2)
    np.testing.assert_allclose(value, np.asarray(two_input_map(X3, Y2)), rtol=1e-15)
    jx, jy = ad.jacobian(two_input_map, argnums=(0, 1))(X3, Y2)
    rng = np.random.default_rng(7)
    for _ in range(3):
        tx, ty = rng.normal(size=3), rng.normal(size=2)
        rounding.assert_close_to_product(f_jvp(tx, ty), jx @ tx + jy @ ty, np.hstack([jx, jy]), np.r_[tx, ty],
                                         roundings=4)
        np.testing.assert_allclose(f_jvp(tx, ty), ad.jvp(two_input_map, (X3, Y2), (tx, ty))[1], rtol=1e-13)
    TX, TY = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))             # a batch: one sweep
    rounding.assert_close_to_product(f_jvp(TX, TY), TX @ jx.T + TY @ jy.T, np.hstack([TX, TY]),
                                     np.hstack([jx, jy]).T, roundings=4)
    assert counted.calls["map"] == 1


def test_the_linearization_of_the_gradient_is_the_hessian_times_the_tangent():
    x, v = PROBLEMS["mlp"][1], PROBLEMS["mlp"][2]
    gradient, hvp = ad.linearize(ad.grad(mlp_loss), x)
    np.testing.assert_allclose(gradient, ad.grad(mlp_loss)(x), rtol=1e-14)
    np.testing.assert_allclose(hvp(v), ad.hessian(mlp_loss)(x) @ v, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(hvp(v), central_difference(ad.grad(mlp_loss), x) @ v, rtol=1e-5, atol=1e-8)


def test_nested_accumulators_give_the_second_directional_derivative():
    x_value = np.array([0.4, -0.9, 1.3])
    u, v = np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 3.0])
    x = ad.constant(x_value)
    with ad.ForwardAccumulator(x, u) as outer:
        with ad.ForwardAccumulator(x, v) as inner:
            y = coupled(x)
        directional = inner.jvp(y)
    second = outer.jvp(directional)
    np.testing.assert_allclose(second.numpy(), u @ coupled_hessian(x_value) @ v, rtol=1e-13)

    t = ad.constant(0.7)
    with ad.ForwardAccumulator(t, 1.0) as outer:
        with ad.ForwardAccumulator(t, 1.0) as inner:
            y = x_sin_x(t)
        first = inner.jvp(y)
    np.testing.assert_allclose(first.numpy(), X_SIN_X_DERIVATIVES[0](0.7), rtol=1e-15)
    np.testing.assert_allclose(outer.jvp(first).numpy(), X_SIN_X_DERIVATIVES[1](0.7), rtol=1e-15)


def test_accumulator_gives_none_or_zeros_for_unconnected_values():
    x = ad.constant([1.0, 2.0])
    with ad.ForwardAccumulator(x, np.ones(2)) as accumulator:
        connected = anp.sum(x ** 2)
        unconnected = ad.constant([3.0, 4.0, 5.0]) * 2
    assert accumulator.jvp(connected).numpy() == 6.0
    assert accumulator.jvp(unconnected) is None
    np.testing.assert_array_equal(accumulator.jvp(unconnected, unconnected_gradients="zero").numpy(),
                                  np.zeros(3))
    np.testing.assert_array_equal(ad.jvp(lambda z: ad.constant([1.0, 2.0]), (x,), (np.ones(2),))[1],
                                  np.zeros(2))


def test_accumulator_tangent_of_the_wrong_shape_raises_value_error():
    with pytest.raises(ValueError, match=r"tangent of shape \(3,\).*shape \(2,\)"):
        ad.ForwardAccumulator(ad.constant([1.0, 2.0]), np.ones(3))
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        ad.ForwardAccumulator([ad.constant(1.0), ad.constant(2.0)], [1.0])


def test_custom_gradient_inside_an_accumulator_raises_type_error():
    @ad.custom_gradient
    def clipped_identity(z):
        return z * 1.0, lambda upstream: anp.clip(upstream, -1.0, 1.0)

    x = ad.constant([1.0, 2.0])
    with ad.ForwardAccumulator(x, np.ones(2)):
        with pytest.raises(TypeError, match="clipped_identity.*forward-mode"):
            clipped_identity(x)


def test_recompute_grad_inside_an_accumulator_gives_the_plain_tangents():
    w = ad.Variable([1.5, -0.5])

    def block(z):
        return anp.tanh(z * w) * z

    x_value, v = np.array([0.4, 0.8]), np.array([1.0, -2.0])
    x = ad.constant(x_value)
    with ad.ForwardAccumulator(x, v) as accumulator:
        y = ad.recompute_grad(block)(x)
    t = np.tanh(x_value * w.numpy())
    slope = (1 - t ** 2) * w.numpy() * x_value + t
    np.testing.assert_allclose(accumulator.jvp(y).numpy(), slope * v, rtol=1e-14)

    checkpointed = ad.recompute_grad(block)
    np.testing.assert_allclose(reverse_over_forward(lambda z: anp.sum(checkpointed(z)), x_value, v),
                               reverse_over_forward(lambda z: anp.sum(block(z)), x_value, v),
                               rtol=1e-14)


# --- jacobian and batch_jacobian: batched == looped ------------------------------------------------

def test_tape_jacobian_equals_a_loop_of_gradients_with_unit_output_gradients():
    rng = np.random.default_rng(8)
    kernel = ad.Variable(rng.normal(size=(3, 4)))
    x = ad.constant(rng.normal(size=(5, 3)))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = anp.tanh(anp.matmul(x, kernel)) ** 2
    looped = {"x": [], "kernel": []}
    for k in range(y.size):
        unit = np.zeros(y.size)
        unit[k] = 1.0
        dx, dkernel = tape.gradient(y, [x, kernel], output_gradients=unit.reshape(y.shape))
        looped["x"].append(dx.numpy())
        looped["kernel"].append(dkernel.numpy())
    for chunk_size in (None, 1, 3):
        jacobians = tape.jacobian(y, {"x": x, "kernel": kernel}, chunk_size=chunk_size)
        for name, source in (("x", x), ("kernel", kernel)):
            assert jacobians[name].shape == y.shape + source.shape
            np.testing.assert_allclose(
                jacobians[name].numpy(), np.reshape(looped[name], y.shape + source.shape),
                rtol=1e-13, atol=1e-15, err_msg=f"{name}, chunk_size={chunk_size}")


@ad.custom_gradient
def clip_gradient_norm(z):
    """Identity whose backward pass clips the cotangent's norm to 0.5 (TensorFlow's guide)."""
    def grad_fn(upstream):
        return upstream * anp.minimum(1.0, 0.5 / anp.sqrt(anp.sum(upstream ** 2)))
    return z * 1.0, grad_fn


def test_jacobian_through_custom_gradient_and_recompute_grad_equals_looped_gradients():
    """A grad_fn sees one cotangent at a time, also in the batched sweep of a jacobian."""
    x = ad.constant([0.3, -1.2, 0.8, 2.0])
    block = ad.recompute_grad(lambda z: anp.sin(z) * anp.sum(z ** 2))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = clip_gradient_norm(block(x)) * np.array([1.0, 2.0, 3.0, 4.0])
    looped = np.stack([tape.gradient(y, x, output_gradients=unit).numpy() for unit in np.eye(4)])
    x_value = x.numpy()
    block_jacobian = (np.diag(np.cos(x_value)) * np.sum(x_value ** 2)
                      + 2 * np.outer(np.sin(x_value), x_value))
    np.testing.assert_allclose(looped, 0.5 * block_jacobian, rtol=1e-14)  # |row k of diag(w)| >= 1
    for chunk_size in (None, 1, 3):
        np.testing.assert_allclose(tape.jacobian(y, x, chunk_size=chunk_size).numpy(), looped,
                                   rtol=1e-14, err_msg=f"chunk_size={chunk_size}")


def per_example(x, kernel):
    """(batch, 2, 3) -> (batch, 4, 2): each example on its own."""
    return anp.sin(anp.einsum("bij,jk->bki", x, kernel)) * anp.sum(x ** 2, axis=(1, 2))[:, None, None]


def test_batch_jacobian_equals_the_per_example_jacobians():
    rng = np.random.default_rng(9)
    kernel = rng.normal(size=(3, 4))
    x = ad.constant(rng.normal(size=(5, 2, 3)))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = per_example(x, kernel)
    batched = tape.batch_jacobian(y, x).numpy()
    assert batched.shape == (5, 4, 2, 2, 3)
    full = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(batched, np.einsum("bijbkl->bijkl", full), rtol=1e-14, atol=1e-15)
    for b in range(5):
        single = ad.jacobian(lambda example: per_example(example[None], kernel)[0])(x.numpy()[b])
        np.testing.assert_allclose(batched[b], single, rtol=1e-14, atol=1e-15)
