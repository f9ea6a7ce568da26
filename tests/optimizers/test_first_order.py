"""Gradient descent and Adam: closed-form iterates, known minima, Adam's scale invariance, the
heavy-ball speed-up on an ill-conditioned quadratic, honest statuses and bad input."""
import numpy as np
import pytest

from optimizers import minimize_adam, minimize_gd
from optimizers.objective import Status

CALLBACK_STOP, MAXITER, NONFINITE, SUCCESS = (Status.CALLBACK_STOP, Status.MAXITER, Status.NONFINITE,
                                              Status.SUCCESS)

A = np.diag([1.0, 10.0, 100.0])
B = np.array([1.0, -2.0, 3.0])
X_STAR = np.linalg.solve(A, B)


def quadratic(x):
    return 0.5 * x @ A @ x - B @ x


def quadratic_grad(x):
    return A @ x - B


def test_gd_iterates_are_the_closed_form_of_the_linear_recurrence():
    x0, lr, k = np.zeros(3), 0.015, 25
    result = minimize_gd(quadratic, x0, quadratic_grad, learning_rate=lr, maxiter=k)
    contraction = np.diag(1 - lr * np.diag(A))          # x_k - x* = (I - lr A)^k (x0 - x*)
    expected = X_STAR + np.linalg.matrix_power(contraction, k) @ (x0 - X_STAR)
    np.testing.assert_allclose(result.x, expected, rtol=1e-12)
    assert result.nit == k and result.status == MAXITER and not result.success


def test_gd_and_adam_reach_the_minimum_with_success():
    gd = minimize_gd(quadratic, np.zeros(3), quadratic_grad, learning_rate=0.015, maxiter=5000,
                     gtol=1e-8)
    adam = minimize_adam(quadratic, np.zeros(3), quadratic_grad, learning_rate=0.05, maxiter=20000,
                         gtol=1e-6)
    for result in (gd, adam):
        assert result.success and result.status == SUCCESS
        assert np.max(np.abs(result.jac)) <= 1e-6
        np.testing.assert_allclose(result.x, X_STAR, atol=1e-5)


def test_adam_first_step_is_learning_rate_times_the_gradient_sign():
    # bias correction makes m_hat = g and v_hat = g**2 on the first step
    result = minimize_adam(quadratic, np.zeros(3), quadratic_grad, learning_rate=0.1, epsilon=0.0,
                           maxiter=1)
    np.testing.assert_allclose(result.x, 0.1 * np.sign(B), rtol=1e-15)


def test_adam_is_invariant_to_the_scale_of_the_objective():
    runs = [minimize_adam(lambda x, c=c: c * quadratic(x), np.array([2.0, 1.0, 1.0]),
                          lambda x, c=c: c * quadratic_grad(x), learning_rate=0.05, epsilon=0.0,
                          maxiter=200) for c in (1.0, 1e4)]
    np.testing.assert_allclose(runs[0].x, runs[1].x, rtol=1e-10)
    np.testing.assert_allclose(runs[1].fun, 1e4 * runs[0].fun, rtol=1e-10)


def test_polyak_momentum_beats_plain_descent_on_an_ill_conditioned_quadratic():
    low, high = 1.0, 100.0
    kappa = high / low
    optimal_rate = 4 / (np.sqrt(high) + np.sqrt(low)) ** 2
    optimal_momentum = ((np.sqrt(kappa) - 1) / (np.sqrt(kappa) + 1)) ** 2
    plain = minimize_gd(quadratic, np.zeros(3), quadratic_grad, learning_rate=2 / (high + low),
                        gtol=1e-8, maxiter=10000)
    heavy = minimize_gd(quadratic, np.zeros(3), quadratic_grad, learning_rate=optimal_rate,
                        momentum=optimal_momentum, gtol=1e-8, maxiter=10000)
    assert plain.success and heavy.success
    assert heavy.nit < plain.nit / 4      # rate (sqrt(kappa)-1)/(sqrt(kappa)+1) against (kappa-1)/(kappa+1)


def test_jac_true_means_fun_returns_value_and_gradient():
    result = minimize_adam(lambda x: (quadratic(x), quadratic_grad(x)), np.zeros(3), True,
                           learning_rate=0.1, maxiter=3)
    reference = minimize_adam(quadratic, np.zeros(3), quadratic_grad, learning_rate=0.1, maxiter=3)
    np.testing.assert_array_equal(result.x, reference.x)


def test_divergence_is_reported_as_nonfinite_with_the_best_point():
    with np.errstate(over="ignore", invalid="ignore"):
        result = minimize_gd(lambda x: np.sum(x ** 4), np.array([1.0]), lambda x: 4 * x ** 3,
                             learning_rate=10.0, maxiter=100)
    assert result.status == NONFINITE and not result.success
    assert result.fun == 1.0 and result.x[0] == 1.0      # x0 was the best finite point


def test_callback_stop_iteration_stops_the_run():
    seen = []

    def callback(intermediate):
        seen.append(intermediate.nit)
        if intermediate.nit == 3:
            raise StopIteration

    result = minimize_adam(quadratic, np.zeros(3), quadratic_grad, callback=callback)
    assert result.status == CALLBACK_STOP and result.nit == 3 and seen == [1, 2, 3]   # not at x0: scipy's rule


@pytest.mark.parametrize("options, message", [
    ({"learning_rate": 0.0}, "learning_rate must be positive"),
    ({"beta1": 1.0}, "beta1 must lie in"),
    ({"beta2": -0.1}, "beta2 must lie in"),
    ({"epsilon": -1.0}, "epsilon must be non-negative"),
    ({"maxiter": 2.5}, "maxiter must be an integer"),
])
def test_adam_rejects_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        minimize_adam(quadratic, np.zeros(3), quadratic_grad, **options)


def test_gd_rejects_bad_momentum():
    with pytest.raises(ValueError, match="momentum must lie in"):
        minimize_gd(quadratic, np.zeros(3), quadratic_grad, momentum=1.0)
