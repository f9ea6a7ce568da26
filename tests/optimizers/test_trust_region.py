"""The trust-region methods: known minima, saddle escape, bad inputs, statuses, counters."""
import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess, rosen_hess_prod

from optimizers.trust_region import (
    RadiusControl,
    minimize_dogleg,
    minimize_trust_exact,
    minimize_trust_krylov,
    minimize_trust_ncg,
)

HESSP_METHODS = [minimize_trust_ncg, minimize_trust_krylov]
DENSE_METHODS = [minimize_trust_exact, minimize_dogleg]
METHODS = HESSP_METHODS + DENSE_METHODS


def second_derivatives(method, hess, hessp=None):
    """Dense methods get ``hess``; the Krylov methods get ``hessp`` (from hess if not given)."""
    if method in DENSE_METHODS:
        return {"hess": hess}
    return {"hessp": hessp or (lambda x, p: hess(x) @ p)}


# --- test problems with hand-written derivatives ---------------------------------------------

def saddle(x):
    return x[0] ** 2 - x[1] ** 2 + x[1] ** 4


def saddle_grad(x):
    return np.array([2 * x[0], -2 * x[1] + 4 * x[1] ** 3])


def saddle_hess(x):
    return np.diag([2.0, -2.0 + 12 * x[1] ** 2])


def beale(x):
    a, b = x
    return (1.5 - a + a * b) ** 2 + (2.25 - a + a * b ** 2) ** 2 + (2.625 - a + a * b ** 3) ** 2


def beale_grad(x):
    a, b = x
    r = np.array([1.5 - a + a * b, 2.25 - a + a * b ** 2, 2.625 - a + a * b ** 3])
    J = np.array([[b - 1, a], [b ** 2 - 1, 2 * a * b], [b ** 3 - 1, 3 * a * b ** 2]])
    return 2 * J.T @ r


def beale_hess(x):
    a, b = x
    r = np.array([1.5 - a + a * b, 2.25 - a + a * b ** 2, 2.625 - a + a * b ** 3])
    J = np.array([[b - 1, a], [b ** 2 - 1, 2 * a * b], [b ** 3 - 1, 3 * a * b ** 2]])
    second = [np.array([[0, 1], [1, 0]]), np.array([[0, 2 * b], [2 * b, 2 * a]]),
              np.array([[0, 3 * b ** 2], [3 * b ** 2, 6 * a * b]])]
    return 2 * (J.T @ J + sum(ri * Si for ri, Si in zip(r, second)))


def powell_badly_scaled(x):
    return (1e4 * x[0] * x[1] - 1) ** 2 + (np.exp(-x[0]) + np.exp(-x[1]) - 1.0001) ** 2


def powell_badly_scaled_grad(x):
    r1, r2 = 1e4 * x[0] * x[1] - 1, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001
    return 2 * np.array([r1 * 1e4 * x[1] - r2 * np.exp(-x[0]), r1 * 1e4 * x[0] - r2 * np.exp(-x[1])])


def powell_badly_scaled_hess(x):
    r1, r2 = 1e4 * x[0] * x[1] - 1, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001
    e0, e1 = np.exp(-x[0]), np.exp(-x[1])
    J = np.array([[1e4 * x[1], 1e4 * x[0]], [-e0, -e1]])
    return 2 * (J.T @ J + r1 * np.array([[0, 1e4], [1e4, 0]]) + r2 * np.diag([e0, e1]))


def brown_badly_scaled(x):
    return (x[0] - 1e6) ** 2 + (x[1] - 2e-6) ** 2 + (x[0] * x[1] - 2) ** 2


def brown_badly_scaled_grad(x):
    r3 = x[0] * x[1] - 2
    return 2 * np.array([x[0] - 1e6 + r3 * x[1], x[1] - 2e-6 + r3 * x[0]])


def brown_badly_scaled_hess(x):
    r3 = x[0] * x[1] - 2
    return 2 * np.array([[1 + x[1] ** 2, r3 + x[0] * x[1]], [r3 + x[0] * x[1], 1 + x[0] ** 2]])


def assert_rosenbrock_minimum(result):
    """The global minimum at ones, or the chained Rosenbrock's local minimum near (-1, 1, ..., 1)."""
    assert result.status == 0 and result.success
    assert np.abs(result.jac).max() <= 1e-5
    if result.fun < 1e-9:
        np.testing.assert_allclose(result.x, 1.0, atol=1e-4)
    else:
        assert result.fun == pytest.approx(3.98662, abs=1e-4) and result.x[0] == pytest.approx(-0.99326, abs=1e-4)


# --- convergence -----------------------------------------------------------------------------

SCIPY_NAMES = {minimize_trust_ncg: "trust-ncg", minimize_trust_krylov: "trust-krylov"}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 10, 100])
def test_rosenbrock(method, n):
    x0 = np.tile([-1.2, 1.0], n // 2)
    result = method(rosen, x0, rosen_der, **second_derivatives(method, rosen_hess, rosen_hess_prod))
    assert_rosenbrock_minimum(result)
    if n == 2:
        np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)
    if n == 100 and method in SCIPY_NAMES:  # fewer evaluations than scipy's counterpart
        scipy = minimize(rosen, x0, method=SCIPY_NAMES[method], jac=rosen_der, hessp=rosen_hess_prod)
        assert scipy.success
        assert result.nfev + result.njev + result.nhev < scipy.nfev + scipy.njev + scipy.nhev


@pytest.mark.parametrize("method", METHODS)
def test_convex_quadratic(method):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 8))
    A = A @ A.T + np.eye(8)
    b = rng.standard_normal(8)
    result = method(lambda x: 0.5 * x @ A @ x - b @ x, np.zeros(8), lambda x: A @ x - b,
                    **second_derivatives(method, lambda x: A), gtol=1e-10)
    np.testing.assert_allclose(result.x, np.linalg.solve(A, b), rtol=1e-7)
    assert result.status == 0 and result.nit <= 10


@pytest.mark.parametrize("method", METHODS)
def test_saddle_point_start_escapes_to_a_minimum(method):
    result = method(saddle, np.zeros(2), saddle_grad, **second_derivatives(method, saddle_hess))
    assert result.status == 0
    np.testing.assert_allclose(np.abs(result.x), [0.0, 1 / np.sqrt(2)], atol=1e-6)
    assert result.fun == pytest.approx(-0.25)


@pytest.mark.parametrize("method", METHODS)
def test_saddle_of_a_scaled_function_is_left_too(method):
    # f in other units (x 1e-8): the second-order check is relative to ||H||, so it still sees
    # the saddle (an absolute threshold took it for a minimum)
    s = 1e-8
    result = method(lambda x: s * saddle(x), np.zeros(2), lambda x: s * saddle_grad(x),
                    **second_derivatives(method, lambda x: s * saddle_hess(x)), gtol=s * 1e-5)
    assert result.status == 0 and result.nit >= 1
    np.testing.assert_allclose(np.abs(result.x), [0.0, 1 / np.sqrt(2)], atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_without_second_order_check_a_saddle_is_accepted(method):
    result = method(saddle, np.zeros(2), saddle_grad, **second_derivatives(method, saddle_hess),
                    check_second_order=False)
    assert result.status == 0 and result.nit == 0 and np.all(result.x == 0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("problem, x0, xmin, gtol, fmax, xtol", [
    ((beale, beale_grad, beale_hess), [1.0, 1.0], [3.0, 0.5], 1e-9, 1e-18, 1e-8),
    # f and x resolve the tiny gradients of the badly scaled problems only so far
    ((powell_badly_scaled, powell_badly_scaled_grad, powell_badly_scaled_hess), [0.0, 1.0],
     [1.098159329699e-5, 9.106146739867], 1e-11, 1e-14, 1e-4),
    ((brown_badly_scaled, brown_badly_scaled_grad, brown_badly_scaled_hess), [1.0, 1.0],
     [1e6, 2e-6], 1e-7, 1e-18, 1e-8),
], ids=["beale", "powell_badly_scaled", "brown_badly_scaled"])
def test_more_garbow_hillstrom_problems(method, problem, x0, xmin, gtol, fmax, xtol):
    fun, grad, hess = problem
    result = method(fun, np.array(x0), grad, **second_derivatives(method, hess), gtol=gtol)
    assert result.success
    assert result.fun < fmax
    np.testing.assert_allclose(result.x, xmin, rtol=xtol)


# --- results, statuses and bad inputs --------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_history_records_every_iteration(method):
    result = method(rosen, np.array([-1.2, 1.0]), rosen_der, **second_derivatives(method, rosen_hess))
    assert len(result.history) == result.nit + 1
    assert set(result.history[0]) == {"nit", "f", "gnorm", "radius", "step", "rho"}
    assert result.history[-1]["f"] == pytest.approx(result.fun)


@pytest.mark.parametrize("method", METHODS)
def test_counters_equal_the_number_of_calls(method, counted):

    derivatives = {"hess": counted("h", rosen_hess)} if method in DENSE_METHODS else {
        "hessp": counted("h", rosen_hess_prod)}
    result = method(counted("f", rosen), np.array([-1.2, 1.0, 0.5]), counted("g", rosen_der),
                    **derivatives)
    assert (result.nfev, result.njev, result.nhev) == (counted.calls["f"], counted.calls["g"], counted.calls["h"])


@pytest.mark.parametrize("method", METHODS)
def test_fun_returning_value_and_gradient(method):
    result = method(lambda x: (rosen(x), rosen_der(x)), np.array([-1.2, 1.0]), True,
                    **second_derivatives(method, rosen_hess))
    assert result.success and result.nfev == result.njev
    np.testing.assert_allclose(result.x, 1.0, atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_non_finite_objective_at_x0_is_status_3_at_x0(method):
    result = method(lambda x: np.nan, np.zeros(2), lambda x: np.zeros(2),
                    **second_derivatives(method, rosen_hess))
    assert result.status == 3 and not result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, np.zeros(2))


@pytest.mark.parametrize("method", METHODS)
def test_missing_second_derivatives_or_bad_radius_is_an_error(method):
    with pytest.raises(ValueError, match="second derivatives"):
        method(rosen, np.zeros(2), rosen_der)
    with pytest.raises(ValueError, match="initial_trust_radius must be positive"):
        method(rosen, np.zeros(2), rosen_der, **second_derivatives(method, rosen_hess),
               initial_trust_radius=-1.0)


def quartic(x):
    """Minimum at x = 1; NaN outside |x| < 3. From x = 0.1 the Newton step is about 33 long."""
    return np.nan if np.abs(x).max() >= 3 else np.sum(x ** 4 / 4 - x)


def quartic_grad(x):
    return x ** 3 - 1


def quartic_hess(x):
    return np.diag(3 * x ** 2)


@pytest.mark.parametrize("method", METHODS)
def test_nan_trial_values_shrink_the_radius(method):
    result = method(quartic, np.full(2, 0.1), quartic_grad, **second_derivatives(method, quartic_hess),
                    initial_trust_radius=100.0)
    assert np.isnan(result.history[1]["rho"])  # the first step left the domain and was rejected
    assert result.success
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_unrecoverable_nan_reports_status_3_at_a_finite_point(method):
    x0 = np.array([0.5, 0.5])
    result = method(lambda x: 1.0 if np.array_equal(x, x0) else np.nan, x0, lambda x: np.ones(2),
                    **second_derivatives(method, lambda x: np.eye(2)))
    assert result.status == 3 and not result.success
    np.testing.assert_array_equal(result.x, x0)
    assert result.fun == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_callback_stop_iteration_gives_status_99(method):
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.fun)
        if len(seen) == 4:
            raise StopIteration

    result = method(rosen, np.array([-1.2, 1.0]), rosen_der, callback=callback,
                    **second_derivatives(method, rosen_hess))
    assert result.status == 99 and not result.success and result.nit == 4   # once per iteration


@pytest.mark.parametrize("method", METHODS)
def test_maxiter_returns_the_best_point_seen(method):
    result = method(rosen, np.array([-1.2, 1.0]), rosen_der, maxiter=5,
                    **second_derivatives(method, rosen_hess))
    assert result.status == 1 and result.nit == 5
    assert result.fun == min(entry["f"] for entry in result.history)
    assert result.fun == rosen(result.x)


@pytest.mark.parametrize("method", METHODS)
def test_failed_escape_from_negative_curvature_reports_status_5(method):
    # the Hessian claims negative curvature along y that f does not have: no step can follow it
    result = method(lambda x: x @ x, np.zeros(2), lambda x: 2 * x,
                    **second_derivatives(method, lambda x: np.diag([2.0, -2.0])))
    assert result.status == 5 and not result.success
    np.testing.assert_array_equal(result.x, [0.0, 0.0])


@pytest.mark.parametrize("step_norm", [0.5, 1.0, 3.0, 1e6])
def test_a_rejected_step_halves_the_radius_however_long_it_was(step_norm):
    """TRON's steps may be longer than the radius (CG from each minor iterate); shrinking to the
    backtracking fraction of such a step left the radius as it was, and the next trial was the
    same rejected one (HS25: 1000 iterations at x0). The radius is at most half of itself, and the
    interpolated fraction of the step when that is shorter (Lin & Moré's sigma_2 = 0.5)."""
    control = RadiusControl(1.0, 100.0)
    control.update(-np.inf, None, step_norm, 0.5)
    assert control.value == min(0.5, 0.5 * step_norm)


def test_at_a_saddle_the_radius_reaches_where_the_curvature_beats_rounding():
    """The escape's model decrease |theta| r^2 / 2 equals the rounding level 10 eps max(1, |f|)
    at r = sqrt(20 eps max(1, |f|) / |theta|); a radius set by a tiny gradient grows to it, a
    larger one stays, and the cap holds."""
    eps = np.finfo(float).eps
    for value, limit, f, theta, expected in [(2e-8, 10.0, 32.8, -1e-6, np.sqrt(20 * eps * 32.8 / 1e-6)),
                                             (1.0, 10.0, 0.0, -2.0, 1.0),
                                             (1e-9, 1e-5, 1.0, -1e-8, 1e-5)]:
        control = RadiusControl(value, limit)
        control.leave_saddle(f, theta)
        assert control.value == pytest.approx(expected, rel=1e-15)
