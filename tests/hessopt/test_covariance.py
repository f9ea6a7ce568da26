"""Uncertainty at a solution (hessopt._covariance): result.hess_inv, hessopt.covariance and
hessopt.standard_errors.

References: the closed forms of GLM covariances, (X^T W X)^-1 with W the variance function at the
estimate (statsmodels' ``cov_params()``, which is not installed here: compared in a test that is
skipped without it), White's sandwich, and scipy ``curve_fit``'s ``pcov`` at the same point with the
exact Jacobian. Tolerances: both sides are computed at one x, so they differ by the rounding of a
factorization, about cond(H) eps (cond < 1e3 here: < 1e-12); comparisons against another solver's
estimate add the distance between the two estimates times the covariance's sensitivity.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from scipy.sparse.linalg import LinearOperator

import hessopt

_rng = np.random.default_rng(3)
N_OBS, N_PARAMS = 200, 4
X = np.column_stack([np.ones(N_OBS), _rng.normal(size=(N_OBS, N_PARAMS - 1))])
BETA = np.array([0.5, 0.3, -0.2, 0.1])
COUNTS = _rng.poisson(np.exp(X @ BETA)).astype(float)


def poisson_terms(beta):
    """The per-observation negative log-likelihoods (without log y!, which does not depend on beta)."""
    eta = X @ beta
    return np.exp(eta) - COUNTS * eta


def poisson_fit():
    return hessopt.minimize(lambda beta: np.sum(poisson_terms(beta)), np.zeros(N_PARAMS), method="trust-exact",
                            options={"gtol": 1e-10})


def test_poisson_glm_covariance_is_the_inverse_fisher_information():
    fit = poisson_fit()
    mu = np.exp(X @ fit.x)
    expected = np.linalg.inv(X.T @ (mu[:, None] * X))          # (X^T W X)^-1, W = diag(mu)
    np.testing.assert_allclose(hessopt.covariance(fit), expected, rtol=1e-8, atol=0)
    np.testing.assert_allclose(hessopt.standard_errors(fit), np.sqrt(np.diag(expected)), rtol=1e-8)


def test_poisson_glm_covariance_equals_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    fit = poisson_fit()
    reference = sm.GLM(COUNTS, X, family=sm.families.Poisson()).fit(tol=1e-12)
    # two estimates within ~1e-10 of each other; cov_params moves with them by about that much
    np.testing.assert_allclose(fit.x, reference.params, rtol=1e-8)
    np.testing.assert_allclose(hessopt.covariance(fit), reference.cov_params(), rtol=1e-8)


def test_logistic_glm_covariance_is_the_inverse_fisher_information():
    labels = (_rng.uniform(size=N_OBS) < 1 / (1 + np.exp(-X @ BETA))).astype(float)
    fit = hessopt.minimize(lambda b: np.sum(np.logaddexp(0, X @ b) - labels * (X @ b)), np.zeros(N_PARAMS),
                           options={"gtol": 1e-10})
    p = 1 / (1 + np.exp(-X @ fit.x))
    np.testing.assert_allclose(hessopt.covariance(fit), np.linalg.inv(X.T @ ((p * (1 - p))[:, None] * X)),
                               rtol=1e-8, atol=0)


def test_the_sandwich_is_huber_white():
    fit = poisson_fit()
    mu = np.exp(X @ fit.x)
    bread = np.linalg.inv(X.T @ (mu[:, None] * X))
    meat = X.T @ (((COUNTS - mu) ** 2)[:, None] * X)            # sum_i g_i g_i^T, g_i = (mu_i - y_i) x_i
    np.testing.assert_allclose(hessopt.covariance(fit, "sandwich", observations=poisson_terms), bread @ meat @ bread,
                               rtol=1e-8, atol=0)
    with pytest.raises(ValueError, match="observations add up to"):
        hessopt.covariance(fit, "sandwich", observations=lambda b: poisson_terms(b)[1:])
    with pytest.raises(ValueError, match="needs observations"):
        hessopt.covariance(fit, "sandwich")


# --- least squares: curve_fit's pcov --------------------------------------------------------------

T = np.linspace(0.0, 3.0, 25)
SIGMA = 0.05 + 0.02 * T
DATA = 2.0 * np.exp(-0.7 * T) + 0.3 + SIGMA * _rng.normal(size=T.size)


def model(t, a, b, c):
    return a * np.exp(-b * t) + c


def model_jacobian(t, a, b, c):
    return np.stack([np.exp(-b * t), -a * t * np.exp(-b * t), np.ones_like(t)], axis=1)


def quadratic(t, a, b, c):
    return a + b * t + c * t ** 2


def quadratic_jacobian(t, a, b, c):
    return np.stack([np.ones_like(t), t, t ** 2], axis=1)


@pytest.mark.parametrize("absolute_sigma", [False, True])
def test_least_squares_covariance_is_curve_fits_pcov(absolute_sigma):
    # a model linear in its parameters: both solvers land on the exact estimate (within cond(J) eps),
    # so the covariances are one formula at one x and differ by rounding only
    popt, pcov = scipy.optimize.curve_fit(quadratic, T, DATA, sigma=SIGMA, absolute_sigma=absolute_sigma,
                                          jac=quadratic_jacobian)
    fit = hessopt.least_squares(lambda p: (quadratic(T, *p) - DATA) / SIGMA, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(fit.x, popt, rtol=1e-10)
    np.testing.assert_allclose(hessopt.covariance(fit, absolute_sigma=absolute_sigma), pcov, rtol=1e-9)


def test_nonlinear_least_squares_covariance_is_curve_fits_pcov_at_its_estimate():
    popt, pcov = scipy.optimize.curve_fit(model, T, DATA, p0=[1.0, 1.0, 0.0], sigma=SIGMA, jac=model_jacobian)
    fit = hessopt.least_squares(lambda p: (model(T, *p) - DATA) / SIGMA, [1.0, 1.0, 0.0])
    # the two estimates stop on their ftol tests ~5e-7 (relative) apart; (J^T J)^-1 moves with x by
    # about its condition (~1e2 here) times that: 1e-4 covers it, a wrong scale or formula does not
    distance = np.max(np.abs(fit.x - popt) / np.abs(popt))
    assert distance < 1e-5
    np.testing.assert_allclose(hessopt.covariance(fit), pcov, rtol=1e-4)


def test_least_squares_sandwich_is_hc0():
    A = np.column_stack([np.ones(T.size), T])
    fit = hessopt.least_squares(lambda p: A @ p - DATA, [0.0, 0.0], method="gn", options={"gtol": 1e-12})
    residuals = A @ fit.x - DATA
    bread = np.linalg.inv(A.T @ A)
    np.testing.assert_allclose(hessopt.covariance(fit, "sandwich"), bread @ (A.T * residuals ** 2) @ A @ bread,
                               rtol=1e-9)


def test_least_squares_refuses_what_it_cannot_give():
    A = np.column_stack([np.ones(T.size), np.ones(T.size)])        # two copies of one column
    fit = hessopt.least_squares(lambda p: A @ p - DATA, [0.0, 0.0], method="lm")
    with pytest.raises(ValueError, match="singular"):
        hessopt.covariance(fit)
    with pytest.raises(ValueError, match="second derivatives"):
        hessopt.covariance(fit, "hessian")
    with pytest.raises(ValueError, match="gauss-newton.*least_squares"):
        hessopt.covariance(poisson_fit(), "gauss-newton")


# --- hess_inv -----------------------------------------------------------------------------------

def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_hess_inv_is_a_linear_operator_of_the_exact_inverse():
    fit = hessopt.minimize(rosenbrock, [-1.2, 1.0, 0.8, 1.1], method="newton-cg", options={"gtol": 1e-10})
    assert isinstance(fit.hess_inv, LinearOperator)
    H = scipy.optimize.rosen_hess(fit.x)                             # cond(H) ~ 4e3 at the minimum
    dense = fit.hess_inv.todense()
    np.testing.assert_allclose(dense, np.linalg.inv(H), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(dense, dense.T)
    v = np.arange(1.0, 5.0)
    np.testing.assert_allclose(fit.hess_inv @ v, np.linalg.solve(H, v), rtol=1e-9)
    np.testing.assert_allclose(fit.hess_inv.diagonal(), np.diag(np.linalg.inv(H)), rtol=1e-9)


def test_hess_inv_at_bounds_holds_the_active_variables_fixed():
    weights = np.array([1.0, 2.0, 3.0])
    fit = hessopt.minimize(lambda x: np.sum(weights * (x - [1.0, -1.0, 2.0]) ** 2), np.zeros(3),
                           bounds=[(0, None)] * 3)
    assert list(fit.active_mask) == [0, -1, 0]
    np.testing.assert_allclose(fit.hess_inv.todense(), np.diag([1 / 2, 0, 1 / 6]), rtol=1e-12)


def test_large_problems_take_the_diagonal_from_the_sparse_factorization():
    # 2,100 > DENSE_UP_TO variables: products by CG (to 1e-10: relative error cond 1e-10, cond < 10),
    # the diagonal from a sparse LU (cond eps); the Hessian is tridiagonal, 3 + 3 x^2 on the diagonal
    n = 2100
    target = np.linspace(-1.0, 1.0, n)

    def chain(x):
        return 0.5 * np.sum((x - target) ** 2) + 0.5 * np.sum((x[1:] - x[:-1]) ** 2) + 0.25 * np.sum(x ** 4)
    fit = hessopt.minimize(chain, np.zeros(n), method="newton-cg", options={"gtol": 1e-10})
    H = np.diag(3.0 + 3 * fit.x ** 2) + np.diag(np.ones(n - 1), 1) * -1 + np.diag(np.ones(n - 1), -1) * -1
    H[0, 0] -= 1.0
    H[-1, -1] -= 1.0
    np.testing.assert_allclose(fit.hess_inv.diagonal(), np.diag(np.linalg.inv(H)), rtol=1e-10)
    v = np.cos(np.arange(n))
    exact = np.linalg.solve(H, v)       # CG's bound is on the norm: cond(H) 1e-10, and H = I + (a Laplacian
    cond = 5 + 3 * np.max(fit.x ** 2)   # + diag(3 x^2)) has eigenvalues from 1 to 5 + 3 max x^2 (Gershgorin)
    assert np.linalg.norm(fit.hess_inv @ v - exact) <= cond * 1e-10 * np.linalg.norm(exact)


def test_only_autodiffs_exact_curvature_gives_hess_inv():
    assert "hess_inv" not in hessopt.minimize(rosenbrock, [-1.2, 1.0], method="adam", options={"maxiter": 5})
    user = hessopt.minimize(rosenbrock, [-1.2, 1.0], method="trust-exact", hess=scipy.optimize.rosen_hess)
    assert "hess_inv" not in user
    with pytest.raises(ValueError, match="no hess_inv"):
        hessopt.covariance(user)


def test_covariance_refuses_a_run_that_did_not_converge():
    fit = hessopt.minimize(rosenbrock, [-1.2, 1.0], method="newton-cg", options={"maxiter": 2})
    with pytest.raises(ValueError, match="did not converge"):
        hessopt.covariance(fit)


def test_hess_inv_pickles_as_its_values():
    import pickle
    fit = pickle.loads(pickle.dumps(hessopt.minimize(lambda x: np.sum([1.0, 2.0, 4.0] * (x - 1) ** 2), np.zeros(3))))
    np.testing.assert_allclose(fit.hess_inv.todense(), np.diag([1 / 2, 1 / 4, 1 / 8]), rtol=1e-12)
    np.testing.assert_allclose(hessopt.standard_errors(fit), np.sqrt([1 / 2, 1 / 4, 1 / 8]), rtol=1e-12)
    large = pickle.loads(pickle.dumps(hessopt.minimize(lambda x: np.sum((x - 1) ** 2), np.zeros(201))))
    with pytest.raises(ValueError, match="not pickled"):
        large.hess_inv @ np.ones(201)
