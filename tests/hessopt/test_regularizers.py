"""input_gradient_penalty: values against closed forms, gradients with respect to the parameters
(and, for the exact penalty, the Hessian: third derivatives of the network) against central finite
differences, the O(h) agreement of the finite-difference penalty, and bad input."""
import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from hessopt import nn
from hessopt.nn import losses
from hessopt.regularizers import input_gradient_penalty

RNG = np.random.default_rng(1)
X = RNG.normal(size=(5, 2))
LABELS = np.array([0, 1, 1, 0, 1])


def make_model():
    model = nn.Sequential([nn.Dense(4, "tanh", seed=0), nn.Dense(2, seed=1)])
    model(X)
    model.layers[0].bias.assign(RNG.normal(size=4) / 3)
    return model


def input_gradient(model, x=X):
    return ad.grad(lambda z: losses.softmax_cross_entropy(LABELS, model(z)))(x)


@pytest.mark.parametrize("norm, closed_form", [("l2", lambda g: np.sum(g ** 2)),
                                              ("l1", lambda g: np.sum(np.abs(g)))])
def test_exact_penalty_is_the_norm_of_the_input_gradient(norm, closed_form):
    model = make_model()
    penalty = input_gradient_penalty(lambda z: losses.softmax_cross_entropy(LABELS, model(z)), X, norm=norm)
    assert isinstance(penalty, ad.Tensor) and penalty.ndim == 0
    np.testing.assert_allclose(penalty.numpy(), closed_form(input_gradient(model)), rtol=1e-13)


@pytest.mark.parametrize("norm", ["l2", "l1"])
def test_exact_penalty_gradient_and_hessian_in_the_parameters_match_differences(norm, differences):
    """The Hessian of the penalty is a third derivative of the network (what a second-order
    optimizer uses when it trains through the penalty)."""
    model = make_model()
    loss = lambda: input_gradient_penalty(  # noqa: E731
        lambda z: losses.softmax_cross_entropy(LABELS, model(z)), X, norm=norm)
    hessian = differences.check(loss, model.trainable_variables, rtol=1e-5, atol=1e-8)
    assert np.max(np.abs(hessian)) > 1e-2


def test_finite_difference_penalty_agrees_with_the_exact_one_to_order_h():
    model = make_model()
    loss_fn = lambda z: losses.softmax_cross_entropy(LABELS, model(z))  # noqa: E731
    exact = input_gradient_penalty(loss_fn, X).numpy()
    errors = [abs(input_gradient_penalty(loss_fn, X, method="finite-difference", h=h).numpy() - exact)
              for h in (1e-2, 5e-3, 2.5e-3)]
    assert errors[0] < 1e-2 * exact
    np.testing.assert_allclose([errors[0] / errors[1], errors[1] / errors[2]], [2.0, 2.0], rtol=0.05)
    l1_exact = input_gradient_penalty(loss_fn, X, norm="l1").numpy()
    l1 = input_gradient_penalty(loss_fn, X, norm="l1", method="finite-difference", h=1e-4).numpy()
    np.testing.assert_allclose(l1, l1_exact, rtol=1e-3)


def test_finite_difference_penalty_gradient_matches_differences_to_order_h(differences):
    """d (a unit direction) carries no gradient; since it maximizes the directional derivative,
    treating it as constant changes the parameter gradient by O(h) only."""
    model = make_model()
    variables = model.trainable_variables
    gaps = []
    for h in (1e-2, 1e-3):
        loss = lambda h=h: input_gradient_penalty(
            lambda z: losses.softmax_cross_entropy(LABELS, model(z)), X, method="finite-difference", h=h)
        with ad.GradientTape() as tape:
            value = loss()
        gradient = np.concatenate([g.numpy().ravel() for g in tape.gradient(value, variables)])
        gaps.append(np.max(np.abs(gradient - differences.gradient(loss, variables, eps=1e-7))))
    assert gaps[1] < 1e-3 and gaps[1] < gaps[0] / 5


def test_finite_difference_penalty_needs_first_derivatives_only(differences):
    """A layer whose gradient is computed in NumPy (no second derivative) still trains with the
    finite-difference penalty: its parameter gradient matches differences of its value."""
    weights = ad.Variable(RNG.normal(size=(2, 3)))

    @ad.custom_gradient
    def cube(z):
        def grad_fn(upstream):
            return upstream * ad.constant(3 * z.numpy() ** 2)   # a constant to outer tapes
        return z ** 3, grad_fn

    def loss_fn(z):
        return anp.sum(cube(anp.matmul(z, weights)))

    def gradient_and_differences(method):
        loss = lambda: input_gradient_penalty(loss_fn, X, method=method, h=1e-4)  # noqa: E731
        with ad.GradientTape() as tape:
            value = loss()
        return tape.gradient(value, weights).numpy().ravel(), differences.gradient(loss, [weights])

    np.testing.assert_allclose(*gradient_and_differences("finite-difference"), rtol=1e-3)
    exact, exact_differences = gradient_and_differences("exact")   # double backprop misses terms here
    assert np.max(np.abs(exact - exact_differences)) > 0.1 * np.max(np.abs(exact_differences))


@pytest.mark.parametrize("loss_fn, kwargs, error, message", [
    (lambda z: z * 2.0, {}, ValueError, r"must return a scalar, got shape \(5, 2\)"),
    (lambda z: 1.0, {}, TypeError, "returned a plain float"),
    (lambda z: anp.sum(z), {"norm": "linf"}, ValueError, "unknown norm 'linf'"),
    (lambda z: anp.sum(z), {"method": "fd"}, ValueError, "unknown method 'fd'"),
    (lambda z: anp.sum(z), {"method": "finite-difference", "h": 0.0}, ValueError, "h must be positive"),
])
def test_bad_input_raises(loss_fn, kwargs, error, message):
    with pytest.raises(error, match=message):
        input_gradient_penalty(loss_fn, X, **kwargs)
