"""least_squares with scipy's signature and meaning, curve_fit and confidence_band (issue 33).

Tolerances: the fits here either have exact data (zero residual: Levenberg-Marquardt's Gauss-Newton
refinement ends at the rounding floor, cond(J) eps, far below 1e-10 for these two- and three-parameter
models) or are compared by identities (the cost and gradient formulas, the covariance formula at the
returned parameters), which hold to rounding; the comparisons with scipy's own least_squares hold
both runs to tight tolerances, and the distance between two points that pass the gradient test at
gtol is at most 2 gtol / mu (mu the smallest eigenvalue of the cost's Hessian, above 0.05 here).
"""
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
import scipy.sparse.linalg
import scipy.stats
from scipy.optimize import Bounds

import hessopt

T = np.linspace(0.0, 3.0, 25)
TRUTH = np.array([2.0, 0.7])
EXACT = TRUTH[0] * np.exp(-TRUTH[1] * T)
# data with two outliers, for the robust losses
NOISY = EXACT + 0.05 * np.cos(5 * T) + np.where(np.isin(np.arange(25), [4, 17]), 1.5, 0.0)


def decay(x, data=EXACT):
    return x[0] * np.exp(-x[1] * T) - data


def rho(loss: str, z):
    """scipy's losses, written here from their definitions."""
    return {"linear": z, "soft_l1": 2 * (np.sqrt(1 + z) - 1), "huber": np.where(z <= 1, z, 2 * np.sqrt(z) - 1),
            "cauchy": np.log1p(z), "arctan": np.arctan(z)}[loss]


def test_scipys_positional_call_fits_with_the_exact_jacobian_and_says_so():
    # scipy's order: fun, x0, jac, bounds
    result = hessopt.least_squares(decay, [1.0, 1.0], "2-point", (0, np.inf))
    np.testing.assert_allclose(result.x, TRUTH, rtol=1e-10)
    assert result.success and result.status in (1, 2, 3) and result.jac_source == "autodiff"
    assert "The Jacobian was exact (autodiff), in place of jac='2-point'" in result.message
    assert set(result) >= {"cost", "fun", "jac", "grad", "optimality", "active_mask", "nfev", "njev", "status",
                           "message", "success"}


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_robust_cost_and_gradient_are_scipys_definitions(loss):
    """At x0 (max_nfev=1: no step), cost = 0.5 C^2 sum rho((f / C)^2) and grad its gradient (central
    differences, h = 1e-6: error O(h^2) times the third derivative, below 1e-7 relative here)."""
    f_scale = 0.3

    def cost(x):
        return 0.5 * f_scale ** 2 * np.sum(rho(loss, (decay(x, NOISY) / f_scale) ** 2))

    x0 = np.array([1.5, 0.4])
    result = hessopt.least_squares(decay, x0, loss=loss, f_scale=f_scale, max_nfev=1, args=(NOISY,))
    assert result.status == 0 and result.nfev == 1 and np.array_equal(result.x, x0)
    assert result.cost == pytest.approx(cost(x0), rel=1e-13)
    np.testing.assert_array_equal(result.fun, decay(x0, NOISY))
    h = 1e-6
    central = np.array([(cost(x0 + h * e) - cost(x0 - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(result.grad, central, rtol=1e-7)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy"])
def test_robust_fits_reach_scipys_minimizer_and_resist_the_outliers(loss):
    ours = hessopt.least_squares(decay, [1.0, 1.0], loss=loss, f_scale=0.1, args=(NOISY,), gtol=1e-12)
    theirs = scipy.optimize.least_squares(decay, [1.0, 1.0], loss=loss, f_scale=0.1, args=(NOISY,), gtol=1e-12,
                                          ftol=None, xtol=None)
    np.testing.assert_allclose(ours.x, theirs.x, atol=4e-11 / 0.05)
    plain = hessopt.least_squares(decay, [1.0, 1.0], args=(NOISY,))
    assert np.linalg.norm(ours.x - TRUTH) < np.linalg.norm(plain.x - TRUTH) / 5


def test_a_callable_loss_is_the_same_as_the_built_in_one():
    def soft_l1(z):
        root = np.sqrt(1 + z)
        return np.stack([2 * (root - 1), 1 / root, -0.5 / root ** 3])

    built_in = hessopt.least_squares(decay, [1.0, 1.0], loss="soft_l1", f_scale=0.1, args=(NOISY,))
    given = hessopt.least_squares(decay, [1.0, 1.0], loss=soft_l1, f_scale=0.1, args=(NOISY,))
    np.testing.assert_allclose(given.x, built_in.x, rtol=1e-9)
    assert given.cost == pytest.approx(built_in.cost, rel=1e-12)


def test_status_codes_are_scipys():
    linear = lambda x: np.array([x[0] - 1.0, 2 * x[1] + 4.0, x[0] + x[1]])  # noqa: E731
    assert hessopt.least_squares(linear, [5.0, 5.0], gtol=1e-6, ftol=None, xtol=None).status == 1
    assert hessopt.least_squares(decay, [1.0, 1.0], args=(NOISY,), ftol=1e-6, xtol=None, gtol=None).status == 2
    assert hessopt.least_squares(decay, [1.0, 1.0], args=(NOISY,), xtol=1e-6, ftol=None, gtol=None).status == 3
    capped = hessopt.least_squares(decay, [1.0, 1.0], max_nfev=3)
    assert capped.status == 0 and not capped.success and capped.nfev <= 3


def test_args_and_kwargs_reach_fun_and_jac():
    def residuals(x, data, scale=1.0):
        return scale * decay(x, data)

    def jac(x, data, scale=1.0):
        e = np.exp(-x[1] * T)
        return scale * np.stack([e, -x[0] * T * e], axis=1)

    for given in (None, jac):
        result = hessopt.least_squares(residuals, [1.0, 1.0], jac=given, args=(EXACT,), kwargs={"scale": 3.0})
        np.testing.assert_allclose(result.x, TRUTH, rtol=1e-10)
        assert result.jac_source == ("jac" if given else "autodiff")


def test_code_autodiff_cannot_follow_gets_finite_differences_with_the_reason():
    def built_entry_by_entry(x):   # np.array of Tensors would drop their derivatives: autodiff refuses it
        return np.array([x[0] - 1.0, 10 * (x[1] - x[0] ** 2)])

    result = hessopt.least_squares(built_entry_by_entry, [-1.2, 1.0], jac="3-point")
    assert result.jac_source == "finite differences" and "finite differences ('3-point')" in result.message
    np.testing.assert_allclose(result.x, [1.0, 1.0], rtol=1e-7)   # Rosenbrock's residuals: zero at (1, 1)


def test_cs_on_code_autodiff_cannot_follow_is_read_as_three_point():
    """float() drops a complex step's imaginary part (a zero Jacobian: the run used to stop at x0
    with a false success); 'cs' is read as '3-point' there, as minimize reads it. Exact data: the
    two points passing the gradient test are within 2 gtol / mu (module docstring) of TRUTH."""
    def with_float(x):
        return float(x[0]) * np.exp(-float(x[1]) * T) - EXACT

    result = hessopt.least_squares(with_float, [1.0, 1.0], jac="cs")
    assert result.success and "finite differences ('3-point')" in result.message
    np.testing.assert_allclose(result.x, TRUTH, rtol=0, atol=2e-8 / 0.05)


def test_ftol_and_xtol_end_bounded_runs_too():
    """scipy's gh-19103: an exponential whose amplitude and shift are one direction; in a box the
    run used to end at working precision (status -3) with its gradient at rounding of the cost."""
    rng = np.random.default_rng(3)
    x = np.arange(150) * 0.1
    y = np.round(np.exp(0.58 * (x - 8.0)) + rng.normal(0, 0.5, x.size).clip(0), 0)
    result = hessopt.least_squares(lambda p: p[0] * np.exp(p[1] * (x - p[2])) - y, [0.01, 1.0, 5.0],
                                   bounds=((0.01, 0, 0), (np.inf, 10, 20.9)))
    assert result.success and result.status in (2, 3)


@pytest.mark.parametrize("call, message", [
    (dict(ftol=None, xtol=None, gtol=None), "At least one of the tolerances"),
    (dict(loss="hinge"), "loss must be one of"),
    (dict(f_scale=0.0), "f_scale must be a positive number"),
    (dict(x_scale=-1.0), "x_scale must be 'jac' or an array of positive numbers"),
    (dict(tr_solver="best"), "tr_solver must be None, 'exact' or 'lsmr'"),
    (dict(method="simplex"), "unknown least-squares method 'simplex'"),
    (dict(jac="oops"), "jac must be a callable, None or one of"),
    (dict(verbose=3), "verbose must be 0, 1 or 2"),
    (dict(max_nfev=0), "max_nfev must be None or a positive integer"),
])
def test_bad_settings_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        hessopt.least_squares(decay, [1.0, 1.0], **call)


def test_complex_x0_is_refused_as_scipy_does():
    with pytest.raises(ValueError, match="x0 must be real"):
        hessopt.least_squares(decay, [1.0, 1.0 + 0j])


def decay_jacobian(x, data=EXACT):
    e = np.exp(-x[1] * T)
    return np.stack([e, -x[0] * T * e], axis=1)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_robust_jac_is_scipys_gauss_newton_factor(loss):
    """scipy's result.jac: J^T J is the cost's Hessian without second derivatives of f, row i of J
    scaled by sqrt(g''(f_i)), g(f) = 0.5 C^2 rho((f / C)^2), floored at eps (outliers of a
    redescending loss). g'' by central second differences, h = 1e-4: truncation h^2 g'''' / 12 and
    rounding eps |g| / h^2, both below 1e-7 here."""
    f_scale, x0 = 0.3, np.array([1.5, 0.4])
    result = hessopt.least_squares(decay, x0, loss=loss, f_scale=f_scale, max_nfev=1, args=(NOISY,))
    f, J = decay(x0, NOISY), decay_jacobian(x0)

    def g(value):
        return 0.5 * f_scale ** 2 * rho(loss, (value / f_scale) ** 2)

    h = 1e-4
    second = (g(f + h) - 2 * g(f) + g(f - h)) / h ** 2
    factor_squared = (result.jac[:, 0] / J[:, 0]) ** 2   # column 0, exp(-b t), is nowhere zero
    np.testing.assert_allclose(factor_squared, np.maximum(second, np.finfo(float).eps), rtol=1e-6, atol=1e-7)
    assert result.jac.shape == J.shape


def test_result_jac_keeps_the_form_of_the_users_jac():
    def sparse_jac(x, data):
        return scipy.sparse.csr_array(decay_jacobian(x))

    def operator_jac(x, data):
        return scipy.sparse.linalg.aslinearoperator(decay_jacobian(x))

    sparse = hessopt.least_squares(decay, [1.0, 1.0], jac=sparse_jac, args=(EXACT,))
    assert scipy.sparse.issparse(sparse.jac)
    np.testing.assert_allclose(sparse.jac.toarray(), decay_jacobian(sparse.x), rtol=1e-15)
    operator = hessopt.least_squares(decay, [1.0, 1.0], jac=operator_jac, args=(EXACT,))
    assert isinstance(operator.jac, scipy.sparse.linalg.LinearOperator)
    np.testing.assert_allclose(operator.jac @ np.eye(2), decay_jacobian(operator.x), rtol=1e-15)
    np.testing.assert_allclose(sparse.x, TRUTH, rtol=1e-10)


def test_x0_outside_the_bounds_is_refused_as_scipy_does():
    with pytest.raises(ValueError, match=r"x0 is infeasible: it lies outside the bounds in 1 of 2 entries \(the "
                                         r"first at flat index 1: 1 not in \[0, 0.4\]\)"):
        hessopt.least_squares(decay, [1.0, 1.0], bounds=([0, 0], [np.inf, 0.4]))
    on_the_bound = hessopt.least_squares(decay, [1.0, 0.4], bounds=([0, 0], [np.inf, 0.4]))
    assert on_the_bound.success and on_the_bound.x[1] == 0.4


@pytest.mark.parametrize("bounds", [([0.0], [3.0, 4.0]), (0.0, [[3.0, 4.0]]), Bounds([0.0], [3.0, 4.0, 5.0])])
def test_array_bounds_of_another_shape_are_not_broadcast(bounds):
    with pytest.raises(ValueError, match="Inconsistent shapes between bounds and x0"):
        hessopt.least_squares(decay, [1.0, 0.5], bounds=bounds)


@pytest.mark.parametrize("x_scale", [[1.0, 2.0, 3.0], [[1.0, 2.0]]])
def test_an_x_scale_of_another_shape_is_refused(x_scale):
    with pytest.raises(ValueError, match="Inconsistent shapes between x_scale and x0: x_scale has shape"):
        hessopt.least_squares(decay, [1.0, 0.5], x_scale=x_scale)
    assert hessopt.least_squares(decay, [1.0, 0.5], x_scale=[1.0, 2.0]).success


@pytest.mark.parametrize("call, message", [
    (dict(bounds=(0, 5)), "Method 'lm' doesn't support bounds"),
    (dict(loss="huber"), "Method 'lm' doesn't support loss 'huber'"),
    (dict(jac_sparsity=np.ones((25, 2))), "Method 'lm' doesn't support jac_sparsity"),
    (dict(ftol=None), "All tolerances must be higher than machine epsilon"),
    (dict(gtol=0.0), "All tolerances must be higher than machine epsilon"),
    (dict(jac=lambda x: scipy.sparse.csr_array(decay_jacobian(x))), "method='lm' works only with dense Jacobians"),
    (dict(jac=lambda x: scipy.sparse.linalg.aslinearoperator(decay_jacobian(x))), "works only with dense"),
])
def test_method_lm_refuses_what_scipys_lm_refuses(call, message):
    with pytest.raises(ValueError, match=message):
        hessopt.least_squares(decay, [1.0, 1.0], method="lm", **call)
    if "jac" not in call:   # 'trf', the same algorithm, takes them
        assert hessopt.least_squares(decay, [1.0, 1.0], method="trf", **call).x.shape == (2,)


def test_method_lm_refuses_fewer_residuals_than_variables():
    with pytest.raises(ValueError, match=r"Method 'lm' doesn't work when the number of residuals \(1\) is less"):
        hessopt.least_squares(lambda x: x[:1] - 1.0, [0.0, 0.0], method="lm")
    assert hessopt.least_squares(lambda x: x[:1] - 1.0, [0.0, 0.0], method="trf").x[0] == pytest.approx(1.0)


def test_x_scale_jac_refuses_a_linear_operator():
    with pytest.raises(ValueError, match="x_scale='jac' can't be used when jac returns a LinearOperator"):
        hessopt.least_squares(decay, [1.0, 1.0], x_scale="jac",
                              jac=lambda x: scipy.sparse.linalg.aslinearoperator(decay_jacobian(x)))


@pytest.mark.parametrize("jac, shape", [
    (lambda x: decay_jacobian(x)[None], r"\(1, 25, 2\)"),
    (lambda x: decay_jacobian(x).T, r"\(2, 25\)"),
    (lambda x: decay_jacobian(x).ravel(), r"\(50,\)"),
])
def test_a_jacobian_of_the_wrong_shape_is_refused(jac, shape):
    with pytest.raises(ValueError, match=rf"jac returned shape {shape}; it must be \(m, n\) = \(25, 2\)"):
        hessopt.least_squares(decay, [1.0, 1.0], jac=jac)


def model(x, a, b, c):
    return a * np.exp(-b * x) + c


def test_curve_fit_covariance_is_the_scaled_inverse_of_j_t_j_at_the_fit():
    rng = np.random.default_rng(7)
    x = np.linspace(0, 4, 40)
    y = model(x, 2.5, 1.3, 0.5) + 0.05 * rng.standard_normal(40)
    sigma = np.full(40, 0.05)
    popt, pcov = hessopt.curve_fit(model, x, y, p0=[1.0, 1.0, 0.0], sigma=sigma)
    jacobian = np.asarray(hessopt.jacobian(lambda p: model(x, *p) / sigma)(popt))
    residuals = (model(x, *popt) - y) / sigma
    expected = np.linalg.inv(jacobian.T @ jacobian) * (residuals @ residuals) / (40 - 3)
    np.testing.assert_allclose(pcov, expected, rtol=1e-9)
    absolute = hessopt.curve_fit(model, x, y, p0=[1.0, 1.0, 0.0], sigma=sigma, absolute_sigma=True)[1]
    np.testing.assert_allclose(absolute, np.linalg.inv(jacobian.T @ jacobian), rtol=1e-9)
    # a covariance matrix of the same variances gives the same fit and covariance
    popt2, pcov2 = hessopt.curve_fit(model, x, y, p0=[1.0, 1.0, 0.0], sigma=np.diag(sigma ** 2))
    np.testing.assert_allclose(popt2, popt, rtol=1e-10)
    np.testing.assert_allclose(pcov2, pcov, rtol=1e-8)
    theirs = scipy.optimize.curve_fit(model, x, y, p0=[1.0, 1.0, 0.0], sigma=sigma)
    np.testing.assert_allclose(popt, theirs[0], rtol=1e-6)   # scipy stops at its ftol, 1.5e-8
    np.testing.assert_allclose(pcov, theirs[1], rtol=1e-4)


def test_curve_fit_default_start_warns_of_nothing():
    """scipy's p0 (ones, middles of finite bounds) came with a RuntimeWarning from inf - inf."""
    x = np.linspace(0, 4, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        popt, _ = hessopt.curve_fit(model, x, model(x, 2.5, 1.3, 0.5), bounds=([0, 0, -np.inf], [5, np.inf, np.inf]))
    np.testing.assert_allclose(popt, [2.5, 1.3, 0.5], rtol=1e-7)


def test_curve_fit_starts_as_scipy_and_omits_nans():
    x = np.linspace(0, 4, 30)
    y = model(x, 2.5, 1.3, 0.5)
    np.testing.assert_allclose(hessopt.curve_fit(model, x, y)[0], [2.5, 1.3, 0.5], rtol=1e-10)   # p0: ones
    bounded = hessopt.curve_fit(model, x, y, bounds=([0, 0, 0], [5, 3, 1]))[0]
    np.testing.assert_allclose(bounded, [2.5, 1.3, 0.5], rtol=1e-7)
    with_nan = y.copy()
    with_nan[[3, 8]] = np.nan
    omitted = hessopt.curve_fit(model, x, with_nan, nan_policy="omit")[0]
    dropped = hessopt.curve_fit(model, np.delete(x, [3, 8]), np.delete(y, [3, 8]))[0]
    np.testing.assert_array_equal(omitted, dropped)


@pytest.mark.parametrize("call, error, message", [
    (dict(nan_policy="propagate"), ValueError, "propagate"),
    (dict(method="lm", bounds=(0, 5)), ValueError, "Method 'lm' only works for unconstrained problems"),
    (dict(p0=[10.0, 1.0, 1.0], bounds=(0, 5)), ValueError, "Initial guess is outside of provided bounds"),
    (dict(args=(1,)), ValueError, "'args' is not a supported keyword argument"),
    (dict(sigma=np.ones(3)), ValueError, "`sigma` has incorrect shape"),
])
def test_curve_fit_refuses_as_scipy_does(call, error, message):
    x = np.linspace(0, 4, 30)
    with pytest.raises(error, match=message):
        hessopt.curve_fit(model, x, model(x, 2.5, 1.3, 0.5), **call)


def test_curve_fit_that_fails_raises_runtime_error():
    x = np.linspace(0, 4, 30)
    with pytest.raises(RuntimeError, match="Optimal parameters not found"):
        hessopt.curve_fit(model, x, model(x, 2.5, 1.3, 0.5), maxfev=2)


def test_confidence_band_is_the_delta_method():
    x = np.linspace(0, 4, 7)
    popt = np.array([2.5, 1.3, 0.5])
    pcov = np.array([[0.04, 0.01, 0.0], [0.01, 0.02, 0.003], [0.0, 0.003, 0.01]])
    curve, half = hessopt.confidence_band(model, x, popt, pcov, level=0.9, dof=20)
    h = 1e-6
    gradients = np.stack([(model(x, *(popt + h * e)) - model(x, *(popt - h * e))) / (2 * h) for e in np.eye(3)],
                         axis=1)
    expected = scipy.stats.t.ppf(0.95, 20) * np.sqrt(np.einsum("ij,jk,ik->i", gradients, pcov, gradients))
    np.testing.assert_array_equal(curve, model(x, *popt))
    np.testing.assert_allclose(half, expected, rtol=1e-8)
