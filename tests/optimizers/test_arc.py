"""Adaptive cubic regularization (ARC): minima, saddle escape, statuses, counters."""
import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod
from test_trust_region import (
    assert_rosenbrock_minimum,
    beale,
    beale_grad,
    beale_hess,
    quartic,
    quartic_grad,
    quartic_hess,
    saddle,
    saddle_grad,
    saddle_hess,
)

from optimizers.arc import minimize_arc


def hessp_of(hess):
    return lambda x, p: hess(x) @ p


@pytest.mark.parametrize("n", [2, 10, 100])
def test_rosenbrock(n):
    x0 = np.tile([-1.2, 1.0], n // 2)
    result = minimize_arc(rosen, x0, rosen_der, hessp=rosen_hess_prod)
    assert_rosenbrock_minimum(result)
    if n == 100:  # fewer evaluations than scipy's trust-ncg
        scipy = minimize(rosen, x0, method="trust-ncg", jac=rosen_der, hessp=rosen_hess_prod)
        assert result.nfev + result.njev + result.nhev < scipy.nfev + scipy.njev + scipy.nhev


def test_convex_quadratic():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((6, 6))
    A = A @ A.T + np.eye(6)
    b = rng.standard_normal(6)
    result = minimize_arc(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(6), lambda x: A @ x - b,
                          hessp=lambda x, p: A @ p, gtol=1e-10)
    assert result.success
    np.testing.assert_allclose(result.x, np.linalg.solve(A, b), rtol=1e-7)


def test_beale():
    result = minimize_arc(beale, np.ones(2), beale_grad, hessp=hessp_of(beale_hess), gtol=1e-9)
    assert result.success and result.fun < 1e-18
    np.testing.assert_allclose(result.x, [3.0, 0.5], rtol=1e-8)


def test_saddle_point_start_escapes_to_a_minimum():
    result = minimize_arc(saddle, np.zeros(2), saddle_grad, hessp=hessp_of(saddle_hess))
    assert result.status == 0
    np.testing.assert_allclose(np.abs(result.x), [0.0, 1 / np.sqrt(2)], atol=1e-6)


def test_history_has_sigma_and_one_entry_per_iteration():
    result = minimize_arc(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod)
    assert len(result.history) == result.nit + 1
    assert set(result.history[0]) == {"nit", "f", "gnorm", "sigma", "step", "rho"}
    assert all(entry["sigma"] > 0 for entry in result.history)


def test_counters_equal_the_number_of_calls(counted):

    result = minimize_arc(counted("f", rosen), np.array([-1.2, 1.0, 0.5]), counted("g", rosen_der),
                          hessp=counted("h", rosen_hess_prod))
    assert result.success
    assert (result.nfev, result.njev, result.nhev) == (counted.calls["f"], counted.calls["g"], counted.calls["h"])


def test_nan_trial_values_raise_sigma_and_recover():
    result = minimize_arc(quartic, np.full(2, 0.1), quartic_grad, hessp=hessp_of(quartic_hess),
                          initial_sigma=1e-6)
    assert any(np.isnan(entry["rho"]) for entry in result.history)
    assert result.success
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)


def test_callback_stop_and_maxiter():
    def stop(intermediate_result):
        raise StopIteration

    stopped = minimize_arc(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod, callback=stop)
    assert stopped.status == 99 and stopped.nit == 1     # the callback first runs after iteration 1
    limited = minimize_arc(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod, maxiter=4)
    assert limited.status == 1 and limited.nit == 4
    assert limited.fun == min(entry["f"] for entry in limited.history)


def test_bad_inputs():
    assert minimize_arc(lambda x: np.inf, np.zeros(2), lambda x: np.zeros(2),
                        hessp=lambda x, p: p).status == 3           # not finite at x0: a failed run
    with pytest.raises(ValueError, match="second derivatives"):
        minimize_arc(rosen, np.zeros(2), rosen_der)


def test_failed_escape_from_negative_curvature_reports_status_5():
    result = minimize_arc(lambda x: x @ x, np.zeros(2), lambda x: 2 * x,
                          hessp=lambda x, p: np.array([2.0, -2.0]) * p)
    assert result.status == 5 and not result.success
