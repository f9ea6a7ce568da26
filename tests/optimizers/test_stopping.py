"""The one default stopping rule (optimizers.stopping) and the honest statuses of every method:
success only when the gradient test passes; any other stop has status != 0 and a message that
says which test stopped the run and the final gradient norm."""
import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess

import optimizers
from optimizers.objective import Status
from optimizers.stopping import DEFAULT_GTOL, GradientTest

SECOND_ORDER = {
    "newton": optimizers.minimize_newton, "newton-cg": optimizers.minimize_newton_cg,
    "hessian-free": optimizers.minimize_hessian_free, "trust-ncg": optimizers.minimize_trust_ncg,
    "trust-krylov": optimizers.minimize_trust_krylov,
    "trust-exact": optimizers.minimize_trust_exact, "dogleg": optimizers.minimize_dogleg,
    "arc": optimizers.minimize_arc,
}
LINE_SEARCH = ["newton", "newton-cg", "hessian-free"]


def relative_gradient(x, f, g):
    return np.max(np.abs(g) * np.maximum(1.0, np.abs(x))) / max(1.0, abs(f))


# --- the rule ----------------------------------------------------------------------------------

def test_default_is_an_absolute_1e_8_test_near_zero():
    test = GradientTest()
    x = np.array([0.5, -0.2])
    assert test(x, 0.3, np.array([1e-8, -1e-8])) and not test(x, 0.3, np.array([0.0, 1.1e-8]))
    assert DEFAULT_GTOL == 1e-8 and test.measure(x, 0.3, np.array([0.0, 1e-8])) == 1e-8


def test_default_is_relative_for_large_f_and_large_x():
    test = GradientTest()
    x, g = np.array([100.0, 2.0]), np.array([1e-3, 5e-3])
    # relative gradient: max(1e-3 * 100, 5e-3 * 2) / 1e7 = 1e-8
    assert test(x, 1e7, g) and not test(x, 0.99e7, g) and not test(2 * x, 1e7, g)
    assert test(x, -1e7, g)   # |f|


def test_default_cannot_pass_far_out_on_a_growing_function():
    # f = x^4 at x = 1e60: |g| / |f| = 4e-60, but the relative gradient |g x| / |f| is 4
    x = np.array([1e60])
    assert not GradientTest()(x, x[0] ** 4, 4 * x ** 3)


def test_an_explicit_gtol_is_scipys_absolute_test():
    test = GradientTest(1e-5)
    x = np.array([1e3])
    assert test(x, 1e9, np.array([1e-5])) and not test(x, 1e9, np.array([2e-5]))
    with pytest.raises(ValueError, match="gtol must be nonnegative"):
        GradientTest(-1.0)


@pytest.mark.parametrize("method", ["newton", "trust-exact"])
def test_scaling_f_above_one_does_not_change_where_the_default_stops(method):
    """f and 1e6 f (|f| > 1 everywhere) stop at the same iterate: the test is relative there."""
    minimize = SECOND_ORDER[method]
    results = [minimize(lambda x, c=c: c * (rosen(x) + 10.0), [-1.2, 1.0],
                        lambda x, c=c: c * rosen_der(x), hess=lambda x, c=c: c * rosen_hess(x),
                        initial_trust_radius=1.0) if method == "trust-exact" else
               minimize(lambda x, c=c: c * (rosen(x) + 10.0), [-1.2, 1.0],
                        lambda x, c=c: c * rosen_der(x), hess=lambda x, c=c: c * rosen_hess(x))
               for c in (1.0, 1e6)]
    assert all(r.success for r in results)
    assert results[0].nit == results[1].nit
    np.testing.assert_allclose(results[0].x, results[1].x, rtol=1e-12)


@pytest.mark.parametrize("method", sorted(SECOND_ORDER))
def test_default_success_means_the_relative_gradient_is_below_1e_8(method):
    result = SECOND_ORDER[method](rosen, [-1.2, 1.0], rosen_der, hess=rosen_hess,
                                  keep_iterates=False)
    assert result.success and result.status == 0
    assert relative_gradient(result.x, result.fun, result.jac) <= 1e-8
    assert rosen(result.x) < 1e-15   # the minimum 0 to about 1e-8 relative in x
    assert "the gradient test passed" in result.message


# --- honest statuses -----------------------------------------------------------------------------

FLAT = {   # first-order points where the Hessian vanishes: (non-strict) minima
    "quartic at its minimizer": (lambda x: np.sum((x - 1) ** 4), lambda x: 4 * (x - 1) ** 3,
                                 lambda x: np.diag(12 * (x - 1) ** 2), np.ones(3)),
    "constant": (lambda x: 3.0, np.zeros_like, lambda x: np.zeros((x.size, x.size)),
                 np.array([0.5, -2.0, 1.0])),
}


@pytest.mark.parametrize("method", sorted(SECOND_ORDER) + ["gd", "adam"])
@pytest.mark.parametrize("flat", sorted(FLAT))
@pytest.mark.parametrize("second", ["hess", "hessp"])
def test_a_vanishing_hessian_at_a_first_order_point_is_a_minimum(method, flat, second):
    """Zero curvature is not negative curvature: the run stops at x0 with success (the
    second-order check took H = 0 for a saddle, 0 <= -c * 0, and ended with status 5)."""
    fun, jac, hess, x0 = FLAT[flat]
    derivative = hess if second == "hess" else lambda x, p: hess(x) @ p
    minimize = SECOND_ORDER.get(method) or getattr(optimizers, f"minimize_{method}")
    result = minimize(fun, x0.copy(), jac, **{second: derivative})
    assert result.status == Status.SUCCESS and result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, x0)

@pytest.mark.parametrize("method", sorted(SECOND_ORDER))
def test_maxiter_is_not_success_and_says_the_gradient_norm(method):
    result = SECOND_ORDER[method](rosen, [-1.2, 1.0], rosen_der, hess=rosen_hess, maxiter=3)
    assert result.status == Status.MAXITER == 1 and not result.success
    gnorm = np.abs(rosen_der(result.x)).max()
    assert "Maximum number of iterations" in result.message
    assert f"||g||_inf = {gnorm:.1e}" in result.message and gnorm > 1e-3


def rounded_quartic(x):
    """sum (x - 1)^4 + 1 rounded to float32: f stops changing near x = 1 +- 0.02, where the
    gradient, 4 (x - 1)^3, is still about 3e-5."""
    return float(np.float32(np.sum((x - 1) ** 4) + 1.0))


@pytest.mark.parametrize("method", sorted(SECOND_ORDER))
def test_no_progress_at_working_precision_is_not_success(method):
    result = SECOND_ORDER[method](rounded_quartic, [3.0, -2.0], lambda x: 4 * (x - 1) ** 3,
                                  hess=lambda x: np.diag(12 * (x - 1) ** 2))
    gnorm = np.abs(4 * (result.x - 1) ** 3).max()
    assert f"||g||_inf = {gnorm:.1e}" in result.message
    if result.success:   # steps that keep f but lower the gradient may still reach the test
        assert relative_gradient(result.x, result.fun, result.jac) <= 1e-8
    else:
        assert result.status in (Status.MAXITER, Status.PRECISION_LOSS)
        assert gnorm > 1e-8 and np.abs(result.x - 1).max() < 0.05


@pytest.mark.parametrize("method", sorted(SECOND_ORDER))
def test_a_run_that_cannot_lower_f_says_which_test_stopped_it(method):
    """Every move from x0 raises f (a step function with a false gradient): no step is accepted."""
    x0 = np.array([3.0, -2.0])
    result = SECOND_ORDER[method](lambda x: 1.0 if np.array_equal(x, x0) else 2.0, x0,
                                  lambda x: np.array([1.0, 1.0]), hess=lambda x: np.eye(2))
    assert result.status == Status.PRECISION_LOSS and not result.success
    np.testing.assert_array_equal(result.x, x0)
    assert "||g||_inf = 1.0e+00" in result.message
    if method in LINE_SEARCH:
        assert "line search found no lower value" in result.message
    else:
        name = "sigma" if method == "arc" else "radius"
        assert "no step of the model changes x" in result.message and f"{name} = " in result.message


@pytest.mark.parametrize("minimize", [optimizers.minimize_gd, optimizers.minimize_adam])
def test_first_order_methods_share_the_rule(minimize):
    """Success when the default test passes, scipy's absolute test with gtol, MAXITER otherwise."""
    result = minimize(lambda x: 0.5 * x @ x, [1.0, -1.0], lambda x: x, learning_rate=0.5,
                      maxiter=3000)
    assert result.success and np.abs(result.jac).max() <= 1e-8
    loose = minimize(lambda x: 0.5 * x @ x, [1.0, -1.0], lambda x: x, learning_rate=0.5,
                     gtol=1e-3, maxiter=3000)
    assert loose.success and 1e-8 < np.abs(loose.jac).max() <= 1e-3 and loose.nit < result.nit
    short = minimize(lambda x: 0.5 * x @ x, [1.0, -1.0], lambda x: x, learning_rate=0.5,
                     maxiter=3)
    assert short.status == Status.MAXITER and not short.success
    assert f"||g||_inf = {np.abs(short.jac).max():.1e}" in short.message


@pytest.mark.parametrize("method", sorted(SECOND_ORDER))
def test_a_gradient_that_is_nan_towards_the_minimum_gives_status_3(method):
    """f = ||x||^2 with a gradient that is NaN inside |x_i| < 0.99: every lower point is refused,
    the run says the values were not finite (not "no progress"), and returns a point whose
    gradient is finite."""
    def jac(x):
        return np.where(np.abs(x) < 0.99, np.nan, 2 * x)

    with np.errstate(invalid="ignore"):
        result = SECOND_ORDER[method](lambda x: x @ x, [1.0, 1.0], jac, hess=lambda x: 2 * np.eye(2))
    assert result.status == Status.NONFINITE and not result.success
    assert np.all(np.abs(result.x) >= 0.99) and np.all(np.isfinite(result.jac))
    assert f"||g||_inf = {np.abs(result.jac).max():.1e}" in result.message
