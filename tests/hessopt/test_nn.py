"""hessopt.nn: layer values against NumPy, first and second derivatives against central finite
differences (float64), losses against closed forms, BatchNorm's statistics and its batch_jacobian
pitfall, weights saved and loaded, and the errors for bad input."""
import numpy as np
import pytest
from scipy.special import erf, expit, logsumexp

import autodiff as ad
import autodiff.numpy as anp
from hessopt import nn
from hessopt.nn import losses

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 3))
LABELS = np.array([0, 2, 1, 1, 0, 2])


# --- Dense and Sequential -------------------------------------------------------------------------

def test_dense_output_is_x_at_kernel_plus_bias_through_the_activation():
    layer = nn.Dense(4, activation="tanh", seed=1)
    y = layer(X)
    assert layer.kernel.shape == (3, 4) and layer.bias.shape == (4,)
    layer.bias.assign(RNG.normal(size=4))
    np.testing.assert_allclose(layer(X).numpy(), np.tanh(X @ layer.kernel.numpy() + layer.bias.numpy()),
                               rtol=1e-14)
    limit = np.sqrt(6 / 7)                                   # Glorot uniform bound for 3 -> 4
    assert np.all(np.abs(layer.kernel.numpy()) <= limit) and y.shape == (6, 4)
    no_bias = nn.Dense(2, use_bias=False, seed=0)
    np.testing.assert_allclose(no_bias(X).numpy(), X @ no_bias.kernel.numpy(), rtol=1e-14)
    assert no_bias.trainable_variables == [no_bias.kernel]


def test_dense_seed_makes_the_initial_kernel_reproducible():
    a, b = nn.Dense(5, seed=7), nn.Dense(5, seed=7)
    a(X), b(X)
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())


@pytest.mark.parametrize("activation", ["tanh", "elu", "gelu", "softplus", "sigmoid"])
def test_network_gradient_and_hessian_match_finite_differences(activation, differences):
    model = nn.Sequential([nn.Dense(4, activation, seed=2), nn.Dense(3, seed=3)])
    model(X)
    for v in model.trainable_variables[1::2]:                # nonzero biases: no symmetric start
        v.assign(RNG.normal(size=v.shape) / 3)
    loss = lambda: losses.softmax_cross_entropy(LABELS, model(X))  # noqa: E731
    hessian = differences.check(loss, model.trainable_variables)
    assert hessian.shape == (31, 31)


def test_input_gradient_and_hessian_match_finite_differences():
    model = nn.Sequential([nn.Dense(5, "tanh", seed=4), nn.Dense(1, seed=5)])
    target = RNG.normal(size=(6, 1))
    ad.check_grad(lambda x: losses.mean_squared_error(target, model(x)), X, order=2)


def test_sequential_lists_variables_layer_by_layer_kernel_before_bias():
    first, norm, last = nn.Dense(4, seed=0), nn.BatchNorm(), nn.Dense(2, seed=1)
    model = nn.Sequential([first, nn.tanh, norm, last])
    assert model.trainable_variables == [] and not model.built
    model.build((None, 3))
    assert model.trainable_variables == [first.kernel, first.bias, norm.gamma, norm.beta,
                                         last.kernel, last.bias]
    assert model.non_trainable_variables == [norm.moving_mean, norm.moving_variance]
    assert all(not v.trainable for v in model.non_trainable_variables)
    np.testing.assert_allclose(model(X).numpy(), last(norm(np.tanh(first(X).numpy()))).numpy(),
                               rtol=1e-14)


def test_layers_run_inside_tapes_that_watch_accessed_variables():
    layer = nn.Dense(2, seed=0)
    layer(X)
    with ad.GradientTape() as tape:
        y = anp.sum(layer(X))
    assert tape.watched_variables() == (layer.kernel, layer.bias)
    kernel_grad, bias_grad = tape.gradient(y, layer.trainable_variables)
    np.testing.assert_allclose(kernel_grad.numpy(), np.tile(X.sum(0)[:, None], (1, 2)), rtol=1e-14)
    np.testing.assert_allclose(bias_grad.numpy(), [6.0, 6.0])


def test_a_layer_refuses_inputs_whose_last_axis_changed():
    model = nn.Sequential([nn.Dense(2, seed=0)])
    model(X)
    with pytest.raises(ValueError, match=r"built for inputs whose last axis has size 3, got an input "
                                         r"of shape \(6, 4\)"):
        model(np.ones((6, 4)))
    with pytest.raises(ValueError, match="feature axis"):
        nn.Dense(2)(ad.constant(1.0))


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Dense(0), "positive integer number of units"),
    (lambda: nn.Dense(2.5), "positive integer number of units"),
    (lambda: nn.BatchNorm(momentum=1.5), "momentum"),
    (lambda: nn.Dense(2, activation="swish"), "unknown activation 'swish'"),
    (lambda: nn.Sequential([3]), "layers or functions"),
])
def test_bad_layer_arguments_raise(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


# --- activations ----------------------------------------------------------------------------------

Z = np.array([-3.0, -1.2, -0.3, 0.4, 1.1, 2.5])


@pytest.mark.parametrize("name, closed_form", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("elu", lambda z: np.where(z > 0, z, np.expm1(z))),
    ("tanh", np.tanh),
    ("sigmoid", expit),
    ("softplus", lambda z: np.log1p(np.exp(z))),
    ("gelu", lambda z: 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))),
])
def test_activations_by_name_and_function_match_closed_forms_and_differences(name, closed_form):
    function = getattr(nn, name)
    assert nn.activations.get(name) is function and nn.activations.get(function) is function
    np.testing.assert_allclose(function(ad.constant(Z)).numpy(), closed_form(Z), rtol=1e-14)
    ad.check_grad(lambda z: anp.sum(function(z) * np.arange(1.0, 7.0)), Z, order=2)


def test_activation_derivatives_at_kinks_follow_tensorflow():
    zero = np.zeros(1)
    np.testing.assert_array_equal(ad.grad(lambda z: anp.sum(nn.relu(z)))(zero), [0.0])
    np.testing.assert_array_equal(ad.grad(lambda z: anp.sum(nn.elu(z)))(zero), [1.0])


def test_activations_stay_finite_for_large_inputs():
    big = np.array([-1000.0, 1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_array_equal(nn.sigmoid(ad.constant(big)).numpy(), [0.0, 1.0])
        np.testing.assert_array_equal(nn.softplus(ad.constant(big)).numpy(), [0.0, 1000.0])
        np.testing.assert_array_equal(nn.elu(ad.constant(big)).numpy(), [-1.0, 1000.0])
        np.testing.assert_array_equal(ad.grad(lambda z: anp.sum(nn.elu(z)))(big), [0.0, 1.0])


def test_gelu_is_within_1e_3_of_the_erf_form():
    z = np.linspace(-5, 5, 201)
    exact = 0.5 * z * (1 + erf(z / np.sqrt(2)))
    assert np.max(np.abs(nn.gelu(ad.constant(z)).numpy() - exact)) < 1e-3


# --- losses ---------------------------------------------------------------------------------------

def test_mean_squared_error_value_and_gradient():
    y_true, y_pred = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    value, gradient = ad.value_and_grad(lambda p: losses.mean_squared_error(y_true, p))(y_pred)
    np.testing.assert_allclose(value, np.mean((y_true - y_pred) ** 2), rtol=1e-14)
    np.testing.assert_allclose(gradient, 2 * (y_pred - y_true) / 10, rtol=1e-14)


def test_softmax_cross_entropy_value_and_gradient():
    logits = RNG.normal(size=(6, 3))
    value, gradient = ad.value_and_grad(lambda z: losses.softmax_cross_entropy(LABELS, z))(logits)
    expected = np.mean(logsumexp(logits, axis=1) - logits[np.arange(6), LABELS])
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    softmax = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    np.testing.assert_allclose(gradient, (softmax - np.eye(3)[LABELS]) / 6, rtol=1e-13, atol=1e-16)


def test_cross_entropies_are_exact_for_large_logits():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        value, gradient = ad.value_and_grad(
            lambda z: losses.softmax_cross_entropy(np.array([1, 0]), z))(np.array([[1000.0, 0.0],
                                                                                   [1000.0, -500.0]]))
        np.testing.assert_allclose(value, 500.0, rtol=1e-15)   # (1000 + 0) / 2
        np.testing.assert_allclose(gradient, [[0.5, -0.5], [0.0, 0.0]], atol=1e-300)
        value, gradient = ad.value_and_grad(
            lambda z: losses.binary_cross_entropy(np.array([0.0, 1.0, 1.0]), z))(
                np.array([800.0, 800.0, -800.0]))
        np.testing.assert_allclose(value, 1600.0 / 3, rtol=1e-15)
        np.testing.assert_allclose(gradient, np.array([1.0, 0.0, -1.0]) / 3, atol=1e-300)


def test_binary_cross_entropy_value_and_gradient():
    labels, logits = np.array([0.0, 1.0, 0.25, 1.0]), RNG.normal(size=4)
    value, gradient = ad.value_and_grad(lambda z: losses.binary_cross_entropy(labels, z))(logits)
    p = expit(logits)
    np.testing.assert_allclose(value, -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)),
                               rtol=1e-13)
    np.testing.assert_allclose(gradient, (p - labels) / 4, rtol=1e-13)


@pytest.mark.parametrize("call, message", [
    (lambda: losses.softmax_cross_entropy(np.array([0, 3]), np.zeros((2, 3))),
     r"labels out of range: \[3\] \(with 3 classes, labels must lie in 0 .. 2\)"),
    (lambda: losses.softmax_cross_entropy(np.array([-1, 0]), np.zeros((2, 3))), r"out of range: \[-1\]"),
    (lambda: losses.softmax_cross_entropy(np.array([0.5, 1.0]), np.zeros((2, 3))), "integer class"),
    (lambda: losses.softmax_cross_entropy(np.array([0, 1, 1]), np.zeros((2, 3))), r"labels of shape \(3,\)"),
    (lambda: losses.binary_cross_entropy(np.array([0.0, 2.0]), np.zeros(2)), r"out of range: \[2.0\]"),
    (lambda: losses.binary_cross_entropy(np.array([0.0, 1.0]), np.zeros((2, 1))), "must be equal"),
    (lambda: losses.mean_squared_error(np.zeros(4), np.zeros((4, 1))), r"y_true has shape \(4,\)"),
])
def test_losses_reject_bad_labels_and_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- BatchNorm ------------------------------------------------------------------------------------

def test_batchnorm_training_uses_batch_statistics_and_moves_the_averages():
    norm = nn.BatchNorm(momentum=0.9, epsilon=1e-3)
    y = norm(X, training=True).numpy()
    np.testing.assert_allclose(y, (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-3), rtol=1e-13)
    np.testing.assert_allclose(norm.moving_mean.numpy(), 0.1 * X.mean(0), rtol=1e-14)
    np.testing.assert_allclose(norm.moving_variance.numpy(), 0.9 + 0.1 * X.var(0), rtol=1e-14)
    norm.gamma.assign([2.0, 3.0, 4.0])
    norm.beta.assign([1.0, 0.0, -1.0])
    expected = (X - 0.1 * X.mean(0)) / np.sqrt(0.9 + 0.1 * X.var(0) + 1e-3) * [2, 3, 4] + [1, 0, -1]
    np.testing.assert_allclose(norm(X, training=False).numpy(), expected, rtol=1e-13)
    np.testing.assert_allclose(norm.moving_mean.numpy(), 0.1 * X.mean(0), rtol=1e-14)  # unchanged


def test_batchnorm_training_mode_derivatives_match_finite_differences(differences):
    model = nn.Sequential([nn.Dense(3, "tanh", seed=0), nn.BatchNorm(), nn.Dense(3, seed=1)])
    model(X)
    loss = lambda: losses.softmax_cross_entropy(LABELS, model(X, training=True))  # noqa: E731
    differences.check(loss, model.trainable_variables)
    ad.check_grad(lambda x: losses.softmax_cross_entropy(LABELS, model(x, training=True)), X, order=2)


def test_batch_jacobian_pitfall_batchnorm_in_training_mode_couples_the_examples():
    norm, x = nn.BatchNorm(), ad.constant(X)
    norm(x)
    for training in (True, False):
        with ad.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = norm(x, training=training)
        full = tape.jacobian(y, x).numpy()                     # (6, 3, 6, 3)
        per_example = tape.batch_jacobian(y, x).numpy()        # (6, 3, 3)
        diagonal_blocks = np.stack([full[b, :, b, :] for b in range(6)])
        off_diagonal = full.copy()
        for b in range(6):
            off_diagonal[b, :, b, :] = 0
        if training:  # every output depends on every example through the batch statistics
            assert np.max(np.abs(off_diagonal)) > 0.1
            assert not np.allclose(per_example, diagonal_blocks, atol=1e-3)
            # what batch_jacobian really returns: block b summed over the outputs of every example
            np.testing.assert_allclose(per_example, full.sum(axis=0).transpose(1, 0, 2), atol=1e-12)
        else:
            assert np.max(np.abs(off_diagonal)) == 0
            np.testing.assert_allclose(per_example, diagonal_blocks, rtol=1e-14)


# --- saving and loading ---------------------------------------------------------------------------

def make_model(seed=0):
    model = nn.Sequential([nn.Dense(4, "relu", seed=seed), nn.BatchNorm(), nn.Dense(2, seed=seed + 1)])
    model(X, training=True)
    return model


def test_save_and_load_weights_round_trip(tmp_path):
    model = make_model()
    saved = [v.numpy().copy() for v in model.variables]
    model.save_weights(tmp_path / "weights")                 # the .npz suffix is added
    other = make_model(seed=5)
    other.load_weights(tmp_path / "weights.npz")
    for v, value in zip(other.variables, saved):
        np.testing.assert_array_equal(v.numpy(), value)
    np.testing.assert_array_equal(other(X).numpy(), model(X).numpy())


def test_load_weights_with_other_shapes_raises_and_changes_nothing(tmp_path):
    model = make_model()
    wide = nn.Sequential([nn.Dense(4, "relu", seed=0), nn.BatchNorm(), nn.Dense(3, seed=1)])
    wide(X)
    wide.save_weights(tmp_path / "wide.npz")
    before = [v.numpy().copy() for v in model.variables]
    with pytest.raises(ValueError, match=r"'dense_\d+/kernel' in the file has shape \(4, 3\) but "
                                         r"'dense_\d+/kernel' has shape \(4, 2\); nothing was loaded"):
        model.load_weights(tmp_path / "wide.npz")
    for v, value in zip(model.variables, before):
        np.testing.assert_array_equal(v.numpy(), value)
    small = nn.Sequential([nn.Dense(4, seed=0)])
    small(X)
    small.save_weights(tmp_path / "small.npz")
    with pytest.raises(ValueError, match="holds 2 arrays but .* has 8 variables"):
        model.load_weights(tmp_path / "small.npz")


def test_weights_of_an_unbuilt_model_cannot_be_saved(tmp_path):
    with pytest.raises(ValueError, match="not built yet"):
        nn.Sequential([nn.Dense(2)]).save_weights(tmp_path / "w.npz")
