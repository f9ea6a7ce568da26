"""Training models with hessopt.minimize: Variables as x0 with a zero-argument loss for every method,
Hessian-free on Gauss-Newton products, the two-class spiral, the input-gradient penalty's effect on
held-out points, and bad input that must leave the Variables as they were."""
import numpy as np
import pytest

import autodiff as ad
import hessopt
from hessopt import nn
from hessopt.nn import losses
from hessopt.nn.datasets import spiral
from hessopt.regularizers import input_gradient_penalty

RNG = np.random.default_rng(2)
FEATURES = RNG.normal(size=(20, 3))
TARGETS = FEATURES @ np.array([[1.0], [-2.0], [0.5]]) + 0.3 + 0.1 * RNG.normal(size=(20, 1))


X_TRAIN, Y_TRAIN = spiral(200, seed=0)
X_TEST, Y_TEST = spiral(400, seed=1)   # held-out points of the same arms


def spiral_model():
    model = nn.Sequential([nn.Dense(16, "tanh", seed=0), nn.Dense(16, "tanh", seed=1), nn.Dense(2, seed=2)])
    model(X_TRAIN)
    return model


def accuracy(model, x, y):
    return float(np.mean(np.argmax(model(x).numpy(), axis=1) == y))


def mean_input_gradient_norm(model, x, y):
    """The mean over examples of ||d loss_i / d x_i|| (summed loss: row i is example i's gradient)."""
    g = ad.grad(lambda z: len(y) * losses.softmax_cross_entropy(y, model(z)))(x)
    return float(np.mean(np.linalg.norm(g, axis=1)))


def least_squares_solution():
    design = np.hstack([FEATURES, np.ones((20, 1))])
    return np.linalg.lstsq(design, TARGETS, rcond=None)[0].ravel()


OPTIONS = {"adam": {"learning_rate": 0.05, "maxiter": 5000}, "gd": {"learning_rate": 0.2, "maxiter": 3000}}


@pytest.mark.parametrize("method", sorted(hessopt.METHODS) + ["adam", "gd"])
def test_every_method_trains_variables_with_a_zero_argument_loss(method):
    layer = nn.Dense(1, seed=0)
    layer(FEATURES)
    loss = lambda: losses.mean_squared_error(TARGETS, layer(FEATURES))  # noqa: E731
    result = hessopt.minimize(loss, layer.trainable_variables, method=method,
                              options={"gtol": 1e-7, **OPTIONS.get(method, {})})
    assert result.success, result.message
    solution = least_squares_solution()
    np.testing.assert_allclose(np.concatenate([layer.kernel.numpy().ravel(), layer.bias.numpy()]),
                               solution, atol=1e-6)
    assert isinstance(result.x, list) and [np.shape(v) for v in result.x] == [(3, 1), (1,)]
    np.testing.assert_array_equal(result.x[0], layer.kernel.numpy())
    np.testing.assert_allclose(result.fun, loss().numpy(), rtol=1e-14)


def test_hessian_free_runs_on_gauss_newton_products_when_given_the_split(counted):
    model = spiral_model()
    initial = [v.numpy().copy() for v in model.trainable_variables]
    predict = counted("predict", lambda: model(X_TRAIN))
    loss = lambda z: losses.softmax_cross_entropy(Y_TRAIN, z)  # noqa: E731
    objective = lambda: loss(model(X_TRAIN))  # noqa: E731
    ggn = hessopt.minimize(objective, model.trainable_variables, method="hessian-free",
                           options={"ggn": (predict, loss), "maxiter": 5, "trace": False})
    # eager: predict runs once per iterate, where the Gauss-Newton operator is recorded
    assert counted.calls["predict"] == ggn.nit + 1 and ggn.nhev > 0
    for v, value in zip(model.trainable_variables, initial):
        v.assign(value)
    plain = hessopt.minimize(objective, model.trainable_variables, method="hessian-free",
                             options={"maxiter": 5})
    assert counted.calls["predict"] == ggn.nit + 1           # plain Hessian products: no predict
    assert not np.allclose(ad.ravel(ggn.x)[0], ad.ravel(plain.x)[0])


@pytest.fixture(scope="module")
def newton_cg_spiral():
    model = spiral_model()
    result = hessopt.minimize(lambda: losses.softmax_cross_entropy(Y_TRAIN, model(X_TRAIN)),
                              model.trainable_variables, method="newton-cg", options={"maxiter": 300})
    return model, result


def test_newton_cg_fits_the_two_class_spiral(newton_cg_spiral):
    model, result = newton_cg_spiral
    assert result.success and result.fun < 1e-4
    assert accuracy(model, X_TRAIN, Y_TRAIN) >= 0.99


def test_hessian_free_with_gauss_newton_products_fits_the_two_class_spiral():
    model = spiral_model()
    loss = lambda z: losses.softmax_cross_entropy(Y_TRAIN, z)  # noqa: E731
    result = hessopt.minimize(lambda: loss(model(X_TRAIN)), model.trainable_variables,
                              method="hessian-free",
                              options={"ggn": (lambda: model(X_TRAIN), loss), "maxiter": 300})
    assert result.success and result.fun < 1e-4
    assert accuracy(model, X_TRAIN, Y_TRAIN) >= 0.99


def test_input_gradient_penalty_smooths_the_model_on_held_out_points(newton_cg_spiral):
    """Newton-CG through the exact penalty (third derivatives of the network in each product),
    stopped after 50 iterations, against the unpenalized model trained to convergence."""
    plain, _ = newton_cg_spiral
    model = spiral_model()
    n, weight = len(Y_TRAIN), 1e-2

    def penalized():
        data = lambda z: losses.softmax_cross_entropy(Y_TRAIN, model(z))  # noqa: E731
        # the sum of the examples' losses: row i of its input gradient is example i's gradient
        return data(X_TRAIN) + weight / n * input_gradient_penalty(lambda z: n * data(z), X_TRAIN)

    hessopt.minimize(penalized, model.trainable_variables, method="newton-cg", options={"maxiter": 50})
    assert accuracy(model, X_TRAIN, Y_TRAIN) >= 0.99
    assert mean_input_gradient_norm(model, X_TEST, Y_TEST) <= 0.5 * mean_input_gradient_norm(plain, X_TEST,
                                                                                          Y_TEST)
    assert accuracy(model, X_TEST, Y_TEST) > accuracy(plain, X_TEST, Y_TEST) - 0.02


def test_callback_sees_the_parameters_as_arrays():
    layer = nn.Dense(1, seed=0)
    layer(FEATURES)
    seen = []

    def callback(intermediate_result):
        seen.append([np.shape(v) for v in intermediate_result.x])

    hessopt.minimize(lambda: losses.mean_squared_error(TARGETS, layer(FEATURES)), layer.trainable_variables,
                     callback=callback, options={"maxiter": 2})
    assert seen and all(shapes == [(3, 1), (1,)] for shapes in seen)


# --- bad input: clear errors, Variables as they were ------------------------------------------------

def check_unchanged(model, before):
    for v, value in zip(model.variables, before):
        np.testing.assert_array_equal(v.numpy(), value)


@pytest.mark.parametrize("method", ["newton-cg", "adam"])
def test_a_loss_that_is_not_scalar_raises_and_leaves_the_variables(method):
    model = spiral_model()
    before = [v.numpy().copy() for v in model.variables]
    with pytest.raises((TypeError, ValueError), match=r"scalar"):
        hessopt.minimize(lambda: model(X_TRAIN), model.trainable_variables, method=method)
    check_unchanged(model, before)


def test_labels_out_of_range_raise_and_leave_the_variables():
    model = spiral_model()
    before = [v.numpy().copy() for v in model.variables]
    with pytest.raises(ValueError, match=r"labels out of range: \[2\]"):
        hessopt.minimize(lambda: losses.softmax_cross_entropy(Y_TRAIN + 1, model(X_TRAIN)),
                         model.trainable_variables)
    check_unchanged(model, before)


def test_an_error_during_the_run_restores_the_initial_variables():
    layer = nn.Dense(1, seed=0)
    layer(FEATURES)
    before = [v.numpy().copy() for v in layer.variables]
    calls = []

    def loss():
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("data source went away")
        return losses.mean_squared_error(TARGETS, layer(FEATURES))

    with pytest.raises(RuntimeError, match="data source went away"):
        hessopt.minimize(loss, layer.trainable_variables, method="adam", options={"trace": False})
    check_unchanged(layer, before)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"jac": True}, ValueError, "with Variables as x0, derivatives come from autodiff"),
    ({"method": "newton-cg", "options": {"ggn": (len, len)}}, ValueError, "the 'ggn' option is for "
                                                                          "method='hessian-free'"),
    ({"method": "hessian-free", "options": {"ggn": len}}, TypeError, r"must be a pair \(predict, loss\)"),
])
def test_bad_training_options_raise(kwargs, error, message):
    layer = nn.Dense(1, seed=0)
    layer(FEATURES)
    with pytest.raises(error, match=message):
        hessopt.minimize(lambda: losses.mean_squared_error(TARGETS, layer(FEATURES)),
                         layer.trainable_variables, **kwargs)


def test_a_split_that_is_not_the_objective_is_refused():
    layer = nn.Dense(1, seed=0)
    layer(FEATURES)
    loss = lambda z: losses.mean_squared_error(TARGETS, z)  # noqa: E731
    with pytest.raises(ValueError, match=r"loss\(predict\(x0\)\) = .* but fun\(x0\) = "):
        hessopt.minimize(lambda: 2 * loss(layer(FEATURES)), layer.trainable_variables, method="hessian-free",
                         options={"ggn": (lambda: layer(FEATURES), loss)})


def test_spiral_points_lie_on_two_arms_half_a_turn_apart():
    x, y = spiral(200, turns=2.0, seed=0)
    assert x.shape == (200, 2) and np.array_equal(np.bincount(y), [100, 100])
    radius = np.hypot(x[:, 0], x[:, 1])
    assert radius.min() >= 0.1 and radius.max() <= 2.0
    offset = np.angle(np.exp(1j * (np.arctan2(x[:, 1], x[:, 0]) - 2 * np.pi * 2.0 * radius / 2 - np.pi * y)))
    np.testing.assert_allclose(offset, 0.0, atol=1e-9)
    with pytest.raises(ValueError, match="even number of points"):
        spiral(201)
