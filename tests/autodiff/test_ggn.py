"""ggn_operator: the generalized Gauss-Newton matrix J^T H_L J against dense references (ad.jacobian
of the predictions, ad.hessian of the loss), the exact Hessian where they must agree (a linear model
with squared loss), positive semi-definiteness, the HessianOperator interface, and no re-running of
predict per product."""
import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator, cg

import autodiff as ad
import autodiff.numpy as anp

RNG = np.random.default_rng(3)
A = RNG.normal(size=(8, 4))
Y = RNG.normal(size=8)
FEATURES = RNG.normal(size=(10, 3))
LABELS = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 1])


def linear(w):
    return anp.matmul(A, w)


def squared(z):
    return 0.5 * anp.sum((z - Y) ** 2)


def mlp(params):
    hidden = anp.tanh(anp.matmul(FEATURES, params["w1"]) + params["b1"])
    return anp.matmul(hidden, params["w2"]) + params["b2"]


def cross_entropy(logits):
    return -anp.mean(anp.take_along_axis(anp.log_softmax(logits, axis=-1), LABELS[:, None], axis=-1))


PARAMS = {"w1": RNG.normal(size=(3, 5)), "b1": RNG.normal(size=5) / 2,
          "w2": RNG.normal(size=(5, 3)), "b2": RNG.normal(size=3) / 2}


def dense_ggn(predict, loss, params):
    flat, unravel = ad.ravel(params)
    jacobian = ad.jacobian(lambda v: predict(unravel(v)))(flat)
    z = predict(params)
    jacobian = jacobian.reshape(np.size(z), flat.size)
    h_loss = ad.hessian(lambda u: loss(anp.reshape(u, np.shape(z))))(np.ravel(z))
    return jacobian.T @ h_loss @ jacobian


def test_linear_model_with_squared_loss_ggn_is_the_exact_hessian():
    w = RNG.normal(size=4)
    op = ad.ggn_operator(linear, squared, w)
    np.testing.assert_allclose(op.to_dense(), A.T @ A, rtol=1e-13, atol=1e-13)
    exact = ad.hessian_operator(lambda v: squared(linear(v)), w).to_dense()
    np.testing.assert_allclose(op.to_dense(), exact, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(op.value, 0.5 * np.sum((A @ w - Y) ** 2), rtol=1e-14)
    np.testing.assert_allclose(op.gradient, A.T @ (A @ w - Y), rtol=1e-13)


def test_products_match_j_transpose_h_j_built_densely():
    op = ad.ggn_operator(mlp, cross_entropy, PARAMS)
    reference = dense_ggn(mlp, cross_entropy, PARAMS)
    assert op.shape == (38, 38) and op.dtype == np.float64
    np.testing.assert_allclose(op.to_dense(), reference, rtol=1e-12, atol=1e-14)
    v, V = RNG.normal(size=38), RNG.normal(size=(38, 4))
    np.testing.assert_allclose(op.matvec(v), reference @ v, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(op @ V, reference @ V, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(ad.ggn_operator(mlp, cross_entropy, PARAMS, chunk_size=3).to_dense(),
                               reference, rtol=1e-12, atol=1e-14)


def test_value_and_gradient_are_those_of_the_composition():
    op = ad.ggn_operator(mlp, cross_entropy, PARAMS)
    value, gradient = ad.value_and_grad(lambda p: cross_entropy(mlp(p)))(PARAMS)
    np.testing.assert_allclose(op.value, value, rtol=1e-14)
    np.testing.assert_allclose(op.gradient, ad.ravel(gradient)[0], rtol=1e-12, atol=1e-15)


def test_ggn_is_positive_semidefinite_where_the_hessian_is_not():
    op = ad.ggn_operator(mlp, cross_entropy, PARAMS)
    ggn = op.to_dense()
    np.testing.assert_allclose(ggn, ggn.T, atol=1e-15)
    eigenvalues = np.linalg.eigvalsh(ggn)
    assert eigenvalues[0] >= -1e-12 * eigenvalues[-1]
    hessian = ad.hessian(lambda p: cross_entropy(mlp(p)))(PARAMS)
    assert np.linalg.eigvalsh(hessian)[0] < -1e-3 * eigenvalues[-1]


def test_variables_mode_reads_the_variables_and_never_reruns_predict(counted):
    variables = [ad.Variable(PARAMS[k]) for k in ("w1", "b1", "w2", "b2")]
    w1, b1, w2, b2 = variables
    predict = counted("predict", lambda: anp.matmul(anp.tanh(anp.matmul(FEATURES, w1) + b1), w2) + b2)
    op = ad.ggn_operator(predict, cross_entropy, variables)
    with ad.GradientTape(persistent=True) as tape:    # a user's tape: products record nothing on it
        tape.watch(variables)
        records = len(tape._records)
        dense = op.to_dense()
        for _ in range(5):
            op.matvec(RNG.normal(size=38))
        assert len(tape._records) == records
    np.testing.assert_allclose(dense, dense_ggn(mlp, cross_entropy, PARAMS), rtol=1e-12, atol=1e-14)
    w1.assign(np.zeros((3, 5)))                       # the recording keeps the values it read
    np.testing.assert_allclose(op.to_dense(), dense, rtol=1e-14)
    assert counted.calls["predict"] == 1


def test_linear_operator_solves_a_damped_system_with_scipy_cg():
    op = ad.ggn_operator(mlp, cross_entropy, PARAMS)
    linear_operator = op.as_linear_operator()
    assert isinstance(linear_operator, LinearOperator)
    damped = LinearOperator(op.shape, matvec=lambda v: linear_operator @ v + 0.1 * v)
    solution, info = cg(damped, op.gradient, rtol=1e-12, atol=0.0)
    assert info == 0
    np.testing.assert_allclose((op.to_dense() + 0.1 * np.eye(38)) @ solution, op.gradient, atol=1e-10)


@pytest.mark.parametrize("predict, loss, error, message", [
    (lambda w: 3.0, squared, TypeError, "predict returned float"),
    (linear, lambda z: z * 2.0, TypeError, "the loss of the predictions: .*scalar output"),
])
def test_bad_input_raises(predict, loss, error, message):
    with pytest.raises(error, match=message):
        ad.ggn_operator(predict, loss, np.ones(4))


def test_vector_of_the_wrong_length_raises():
    op = ad.ggn_operator(linear, squared, np.ones(4))
    with pytest.raises(ValueError, match=r"vector of length 3 for an operator of shape \(4, 4\)"):
        op.matvec(np.ones(3))
