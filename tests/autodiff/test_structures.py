"""Structures in and out: Jacobians of structured outputs, pytrees in jvp and vjp, keyword arguments
through recompute_grad and custom_gradient, and Python lists as operands of every product.

References are closed forms and central finite differences in float64.
"""
import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.check import central_differences

X = np.array([0.7, -1.3, 0.4])


def fd_jacobian(f, x):
    return central_differences(lambda z: np.asarray(f(z)), x)


# --- Jacobians of structured outputs ---------------------------------------------------------------

def test_tape_jacobian_of_a_list_of_targets_is_the_list_of_their_jacobians():
    x = ad.constant(X)
    with ad.GradientTape() as tape:  # not persistent: one call answers the whole structure
        tape.watch(x)
        y1, y2, y3 = x[0] ** 2, anp.sin(x) * x[1], anp.outer(x, x)
    j1, j2, j3 = tape.jacobian([y1, y2, y3], x)
    np.testing.assert_allclose(j1.numpy(), [2 * X[0], 0.0, 0.0])
    np.testing.assert_allclose(j2.numpy(), fd_jacobian(lambda z: np.sin(z) * z[1], X), rtol=1e-9)
    np.testing.assert_allclose(j3.numpy(), fd_jacobian(lambda z: np.outer(z, z), X), rtol=1e-9)
    assert j3.shape == (3, 3, 3)


def test_tape_jacobian_of_a_dict_of_targets_mirrors_targets_outside_and_sources_inside():
    x, s = ad.constant(X), ad.constant(2.0)
    with ad.GradientTape() as tape:
        tape.watch([x, s])
        targets = {"scaled": x * s, "unrelated": anp.sin(s), "constant": ad.constant([1.0, 2.0])}
    jacobians = tape.jacobian(targets, {"x": x, "s": s}, chunk_size=2)
    assert set(jacobians) == {"scaled", "unrelated", "constant"}
    np.testing.assert_allclose(jacobians["scaled"]["x"].numpy(), 2.0 * np.eye(3))
    np.testing.assert_allclose(jacobians["scaled"]["s"].numpy(), X)
    assert jacobians["unrelated"]["x"] is None
    np.testing.assert_allclose(jacobians["unrelated"]["s"].numpy(), np.cos(2.0))
    assert jacobians["constant"]["x"] is None and jacobians["constant"]["s"] is None


def test_functional_jacobian_of_a_list_output_is_a_list_of_jacobians():
    def f(x):
        return [x[0] ** 2, x[1] ** 3]
    j = ad.jacobian(f)(X[:2])
    assert isinstance(j, list) and len(j) == 2
    np.testing.assert_allclose(j[0], [2 * X[0], 0.0])
    np.testing.assert_allclose(j[1], [0.0, 3 * X[1] ** 2])


def test_functional_jacobian_of_a_structure_with_several_arguments_nests_arguments_inside():
    def f(x, y):
        return {"product": x * y, "sum": anp.sum(x) + y ** 2}
    jacobians = ad.jacobian(f, argnums=(0, 1))(X, 1.5)
    np.testing.assert_allclose(jacobians["product"][0], 1.5 * np.eye(3))
    np.testing.assert_allclose(jacobians["product"][1], X)
    np.testing.assert_allclose(jacobians["sum"][0], np.ones(3))
    np.testing.assert_allclose(jacobians["sum"][1], 3.0)
    nested = ad.jacobian(lambda x: (x ** 2, [anp.prod(x)]))(X)
    np.testing.assert_allclose(nested[0], np.diag(2 * X))
    np.testing.assert_allclose(nested[1][0], fd_jacobian(np.prod, X), rtol=1e-9)


# --- jvp and vjp take the pytrees grad takes -------------------------------------------------------

PARAMS = {"w": np.array([[0.5, -1.0], [2.0, 0.3]]), "b": np.array([0.1, -0.2])}
INPUTS = np.array([1.0, -0.5])


def predict(params, inputs):
    return anp.tanh(params["w"] @ inputs + params["b"])


def loss(params):
    return anp.sum(predict(params, INPUTS) ** 2)


def test_jvp_of_a_dict_primal_is_the_gradient_dotted_with_the_tangent():
    tangent = {"b": np.array([1.0, 2.0]), "w": np.array([[0.5, 0.0], [-1.0, 1.0]])}  # other key order
    value, directional = ad.jvp(loss, (PARAMS,), (tangent,))
    gradient = ad.grad(loss)(PARAMS)
    expected = sum(np.sum(gradient[k] * tangent[k]) for k in PARAMS)
    assert value == pytest.approx(np.sum(np.tanh(PARAMS["w"] @ INPUTS + PARAMS["b"]) ** 2), rel=1e-15)
    assert directional == pytest.approx(expected, rel=1e-13)


def test_jvp_of_a_list_primal_and_several_arguments():
    def f(pair, scale):
        return scale * anp.sin(pair[0]) * pair[1]
    a, b = np.array([0.3, 0.6]), np.array([2.0, -1.0])
    _, directional = ad.jvp(f, ([a, b], 2.0), ([np.ones(2), np.zeros(2)], 0.5))
    np.testing.assert_allclose(directional, 2.0 * np.cos(a) * b + 0.5 * np.sin(a) * b, rtol=1e-14)


def test_vjp_of_a_dict_primal_returns_cotangents_in_its_structure():
    value, vjp_fn = ad.vjp(predict, PARAMS, INPUTS)
    cotangent = np.array([1.0, -2.0])
    (params_bar, inputs_bar) = vjp_fn(cotangent)
    assert set(params_bar) == {"w", "b"} and params_bar["w"].shape == (2, 2)
    reference = ad.grad(lambda p, i: anp.sum(predict(p, i) * cotangent), argnums=(0, 1))(PARAMS, INPUTS)
    np.testing.assert_allclose(params_bar["w"], reference[0]["w"], rtol=1e-14)
    np.testing.assert_allclose(params_bar["b"], reference[0]["b"], rtol=1e-14)
    np.testing.assert_allclose(inputs_bar, reference[1], rtol=1e-14)


def test_vjp_of_a_structured_output_takes_a_cotangent_of_that_structure():
    _, vjp_fn = ad.vjp(lambda x: {"square": x ** 2, "total": anp.sum(x)}, X)
    (x_bar,) = vjp_fn({"total": 2.0, "square": np.ones(3)})  # other key order
    np.testing.assert_allclose(x_bar, 2 * X + 2.0)


def test_mismatched_tangent_structures_raise():
    with pytest.raises(ValueError, match=r"keys \['b', 'w'\]"):
        ad.jvp(loss, (PARAMS,), ({"w": np.ones((2, 2))},))
    with pytest.raises(ValueError, match="tuple of 1 entries, got 2"):
        ad.jvp(loss, (PARAMS,), (PARAMS, PARAMS))


# --- keyword arguments through recompute_grad and custom_gradient ----------------------------------

def scaled_energy(x, *, scale=1.0, shift=0.0):
    return anp.sum((anp.sin(x) * scale + shift) ** 2)


def test_recompute_grad_passes_keyword_arguments_and_differentiates_keyword_tensors():
    checkpointed = ad.recompute_grad(scaled_energy)
    x, scale = ad.constant(X), ad.constant(2.0)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch([x, scale])
        y = checkpointed(x, scale=scale, shift=0.5)
        reference = scaled_energy(x, scale=scale, shift=0.5)
    assert float(y) == pytest.approx(float(reference))
    for got, expected in zip(tape.gradient(y, [x, scale]), tape.gradient(reference, [x, scale])):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-14)
    hessian = ad.hessian(lambda z: ad.recompute_grad(scaled_energy)(z, scale=3.0))(X)
    np.testing.assert_allclose(hessian, ad.hessian(lambda z: scaled_energy(z, scale=3.0))(X), rtol=1e-13)


@ad.custom_gradient
def clipped_identity(x, *, limit=1.0):
    return x * 1.0, lambda upstream: anp.clip(upstream, -limit, limit)


def test_custom_gradient_passes_keyword_arguments():
    x = ad.constant(X)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = anp.sum(clipped_identity(x * 3.0, limit=0.5) * np.array([1.0, -2.0, 0.1]))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3.0 * np.array([0.5, -0.5, 0.1]))


def test_custom_gradient_refuses_a_tracked_keyword_tensor_it_cannot_give_a_gradient_to():
    x, limit = ad.constant(X), ad.constant(0.5)
    with ad.GradientTape() as tape:
        tape.watch([x, limit])
        with pytest.raises(TypeError, match=r"keyword argument\(s\) \['limit'\].*pass them positionally"):
            clipped_identity(x, limit=limit)
        y = anp.sum(clipped_identity(x, limit=ad.constant(0.5)))  # untracked: a constant, fine
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.full(3, 0.5))


# --- Python lists as operands of products ----------------------------------------------------------

C3 = [1.0, 2.0, -3.0]
LIST_OPERANDS = {
    "list @ x": lambda x: C3 @ (x * x),
    "x @ list of lists": lambda x: np.sum(x @ [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] * x[:2]),
    "np.dot(list, x)": lambda x: np.dot(C3, x * x),
    "np.dot(x, list)": lambda x: np.dot(x * x, C3),
    "np.matmul(list, x)": lambda x: np.matmul(C3, x * x),
    "np.inner": lambda x: np.inner(C3, x * x),
    "np.einsum": lambda x: np.einsum("i,i", C3, x * x),
    "np.tensordot": lambda x: np.tensordot(C3, x * x, axes=1),
    "np.convolve": lambda x: np.sum(np.convolve(C3, x * x) ** 2),
    "np.correlate": lambda x: np.sum(np.correlate(x * x, C3, "full") ** 2),
    "np.cross": lambda x: np.sum(np.cross(C3, x * x) ** 2),
    "np.outer": lambda x: np.sum(np.outer(C3, x * x) ** 2),
    "np.kron": lambda x: np.sum(np.kron(C3, x * x) ** 2),
    "np.vdot": lambda x: np.vdot(C3, x * x),
    "multi_dot": lambda x: np.linalg.multi_dot([C3, np.outer(x, x), C3]),
    "solve with a list matrix": lambda x: np.sum(np.linalg.solve([[2.0, 1.0, 0.0], [1.0, 3.0, 0.0],
                                                                  [0.0, 0.0, 1.0]], x * x)),
    "tuple @ x": lambda x: tuple(C3) @ (x * x),
    "list * x": lambda x: np.sum([1.0, 2.0, 3.0] * x * x),
    "list / x": lambda x: np.sum([1.0, 2.0, 3.0] / (2 + x)),
    "x ** list": lambda x: np.sum((x + 2) ** [1, 2, 3]),
    "list ** x": lambda x: np.sum([1.0, 2.0, 3.0] ** x),
    "np.where with a list": lambda x: np.sum(np.where(x > 0, x * x, [1.0, 2.0, 3.0])),
    "np.maximum with a list": lambda x: np.sum(np.maximum([0.5, 5.0, 0.0], x) ** 2),
    "concatenate a list first": lambda x: np.sum(np.concatenate([[1.0, 2.0], x]) ** 3),
    "trapezoid over list points": lambda x: np.trapezoid(x * x, [0.0, 1.0, 3.0]),
}


@pytest.mark.parametrize("f", LIST_OPERANDS.values(), ids=LIST_OPERANDS.keys())
def test_lists_as_operands_give_exact_gradients_and_hessians(f):
    ad.check_grad(f, X, order=2)
    x = ad.constant(X)
    with ad.ForwardAccumulator(x, np.ones(3)) as accumulator:
        y = f(x)
    assert float(accumulator.jvp(y).numpy()) == pytest.approx(float(np.sum(ad.grad(f)(X))), rel=1e-12)
