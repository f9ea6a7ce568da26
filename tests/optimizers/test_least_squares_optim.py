"""Gauss-Newton and Levenberg-Marquardt on problems with known solutions, result fields, scaling
invariance, bad input and stopping."""
import numpy as np
import pytest
from scipy.optimize import least_squares

from optimizers.least_squares import EPS, DampedSteps, TrustRadius, least_squares_lm

METHODS = ["lm", "gn"]


def rosenbrock_residuals():
    return (lambda x: np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]]),
            lambda x: np.array([[-20 * x[0], 10.0], [-1.0, 0.0]]))


T = np.linspace(0, 4, 30)
Y = 2.5 * np.exp(-1.3 * T) + 0.5


def exponential_fit():
    """y = a exp(-b t) + c with exact data: the solution is (2.5, 1.3, 0.5), cost 0."""
    residuals = lambda x: x[0] * np.exp(-x[1] * T) + x[2] - Y
    jac = lambda x: np.column_stack([np.exp(-x[1] * T), -x[0] * T * np.exp(-x[1] * T),
                                     np.ones_like(T)])
    return residuals, jac


@pytest.mark.parametrize("method", METHODS)
def test_linear_least_squares_matches_numpy(method):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 5)), rng.standard_normal(20)
    result = least_squares_lm(lambda x: a @ x - b, np.zeros(5), lambda x: a, method=method)
    expected, residual_sum = np.linalg.lstsq(a, b, rcond=None)[:2]
    assert result.status == 0
    np.testing.assert_allclose(result.x, expected, atol=1e-8)
    assert result.cost == pytest.approx(0.5 * residual_sum[0], rel=1e-10)


def test_gauss_newton_solves_a_linear_problem_in_one_step():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 3)), rng.standard_normal(8)
    result = least_squares_lm(lambda x: a @ x - b, np.zeros(3), lambda x: a, method="gn")
    assert result.nit == 1 and result.njev == 2


@pytest.mark.parametrize("method", METHODS)
def test_exponential_fit(method):
    residuals, jac = exponential_fit()
    result = least_squares_lm(residuals, [1.0, 1.0, 0.0], jac, method=method)
    assert result.status == 0 and result.success
    np.testing.assert_allclose(result.x, [2.5, 1.3, 0.5], rtol=1e-8)
    assert result.cost < 1e-20


@pytest.mark.parametrize("method", METHODS)
def test_rosenbrock_as_residuals(method):
    residuals, jac = rosenbrock_residuals()
    result = least_squares_lm(residuals, [-1.2, 1.0], jac, method=method)
    assert result.status == 0
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-8)


@pytest.mark.parametrize("problem, x0", [(rosenbrock_residuals, [-1.2, 1.0]),
                                         (exponential_fit, [1.0, 1.0, 0.0])])
def test_levenberg_marquardt_costs_about_what_scipys_trust_region_does(problem, x0):
    """scipy's 'trf' with x_scale='jac' runs the same trust region (Moré's D, the radius moved by rho;
    its first ||D x0||, hessopt's 10 ||D x0||): 24 and 16 evaluations here, hessopt 30 and 14,
    MINPACK's 'lm' (first radius 100 ||D x0||) 37 and 13."""
    residuals, jac = problem()
    ours = least_squares_lm(residuals, x0, jac)
    theirs = least_squares(residuals, x0, jac, method="trf", x_scale="jac")
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-7)
    assert ours.nfev + ours.njev <= 1.25 * (theirs.nfev + theirs.njev)


def test_a_rejected_trial_reuses_its_iterates_svd(monkeypatch):
    """Only the radius changes after a rejected trial: the SVD of J D^-1 is made once per iterate
    (per Jacobian evaluation), not once per trial, and the run is the same step for step."""
    residuals, jac = rosenbrock_residuals()
    before = least_squares_lm(residuals, [-1.2, 1.0], jac)
    svds, svd = [], np.linalg.svd
    monkeypatch.setattr(np.linalg, "svd", lambda *a, **k: svds.append(1) or svd(*a, **k))
    result = least_squares_lm(residuals, [-1.2, 1.0], jac)
    assert result.nfev > result.njev + 1     # some trials were rejected
    assert len(svds) <= result.njev
    np.testing.assert_array_equal(result.history["x"], before.history["x"])


def test_result_fields_follow_scipy_least_squares():
    residuals, jac = exponential_fit()
    x0 = [1.0, 1.0, 0.0]
    result = least_squares_lm(residuals, x0, jac, maxiter=2)
    r, j = residuals(result.x), jac(result.x)
    np.testing.assert_array_equal(result.fun, r)
    np.testing.assert_array_equal(result.jac, j)
    np.testing.assert_allclose(result.grad, j.T @ r)
    assert result.cost == pytest.approx(0.5 * r @ r)
    assert result.status == 1 and not result.success and result.nit == 2
    assert "nhev" not in result
    assert [entry["nit"] for entry in result.history] == [0, 1, 2]
    assert all({"f", "gnorm", "step", "lambda"} <= set(entry) for entry in result.history)


def test_levenberg_marquardt_is_invariant_to_scaling_the_variables():
    # Moré's scaling D = column norms of J: solving in units 1e4 times larger changes nothing.
    residuals, jac = exponential_fit()
    scale = np.array([1e4, 1.0, 1e-3])
    plain = least_squares_lm(residuals, [1.0, 1.0, 0.0], jac, gtol=0.0)   # gtol is not invariant
    scaled = least_squares_lm(lambda z: residuals(z / scale), np.array([1.0, 1.0, 0.0]) * scale,
                              lambda z: jac(z / scale) / scale, gtol=0.0)
    assert_same_run(scaled, plain)
    np.testing.assert_allclose(scaled.x / scale, plain.x, rtol=1e-8)


def assert_same_run(scaled, plain):
    """The same iterates, cost by cost, while the costs are above rounding (an exact fit's last
    steps, at costs near eps^2, end with one test or the other, one iteration apart, as rounding
    goes on each OpenBLAS kernel)."""
    assert scaled.success
    resolved = plain.history["f"] > EPS * plain.history["f"][0]
    np.testing.assert_allclose(scaled.history["f"][:resolved.sum()], plain.history["f"][resolved], rtol=1e-8)


def test_columns_of_j_apart_by_more_than_one_over_eps_keep_their_directions():
    # Units 1e10 and 1e-8: J's columns differ by 1e18 in size. The step is solved on the columns
    # scaled by D, so the SVD drops no short column as rounding: the run is the unscaled one. (Solved
    # on J itself the short columns fell below eps times the longest, every step predicted almost no
    # reduction and the run reported ftol success at (1, 1.03, 0.76), as MGH10 did down its valley.)
    residuals, jac = exponential_fit()
    scale = np.array([1e10, 1.0, 1e-8])
    plain = least_squares_lm(residuals, [1.0, 1.0, 0.0], jac, gtol=0.0)
    scaled = least_squares_lm(lambda z: residuals(z / scale), np.array([1.0, 1.0, 0.0]) * scale,
                              lambda z: jac(z / scale) / scale, gtol=0.0)
    assert_same_run(scaled, plain)
    np.testing.assert_allclose(scaled.x / scale, [2.5, 1.3, 0.5], rtol=1e-8)


def test_bounded_levenberg_marquardt_is_invariant_to_scaling_the_variables():
    # In a box the step is TRON's in the variables D x (Moré's D): units 1e4 and 1e-3 times the
    # plain ones, the box scaled with them, give the same iterates. (Unscaled, the scaled run
    # reported xtol success after 4 iterations at (1, 1.06, 0.76), its projected gradient 6.4.)
    residuals, jac = exponential_fit()
    scale = np.array([1e4, 1.0, 1e-3])
    lower, upper = np.array([0.0, 0.0, -5.0]), np.array([10.0, 10.0, 5.0])
    plain = least_squares_lm(residuals, [1.0, 1.0, 0.0], jac, gtol=0.0, bounds=(lower, upper))
    scaled = least_squares_lm(lambda z: residuals(z / scale), np.array([1.0, 1.0, 0.0]) * scale,
                              lambda z: jac(z / scale) / scale, gtol=0.0, bounds=(lower * scale, upper * scale))
    assert scaled.nit == plain.nit
    np.testing.assert_allclose(scaled.x / scale, plain.x, rtol=1e-8)
    np.testing.assert_allclose(plain.x, [2.5, 1.3, 0.5], rtol=1e-8)


def test_bounded_levenberg_marquardt_solves_meyer_in_a_box_it_does_not_touch():
    # MGH 10 (Meyer; NIST StRD MGH10), its columns of J 1e5 apart, in a box far from its minimizer.
    # The unscaled TRON step on the Gauss-Newton model, its CG stopped at half the residual (the
    # inexact-Newton forcing term read from a gradient of 1e8), reported ftol success at cost 3.5e6
    # after 6 evaluations. The minimum is the certified 87.9458551704 / 2; a run stopped by ftol
    # (actual and predicted reductions below 1e-8 of the cost) is within a few of them of it.
    y = np.array([34780.0, 28610.0, 23650.0, 19630.0, 16370.0, 13720.0, 11540.0, 9744.0, 8261.0,
                  7030.0, 6005.0, 5147.0, 4427.0, 3820.0, 3307.0, 2872.0])
    t = 45.0 + 5.0 * np.arange(1.0, 17.0)
    residuals = lambda x: x[0] * np.exp(x[1] / (t + x[2])) - y
    jac = lambda x: np.column_stack([np.exp(x[1] / (t + x[2])), x[0] / (t + x[2]) * np.exp(x[1] / (t + x[2])),
                                     -x[0] * x[1] / (t + x[2]) ** 2 * np.exp(x[1] / (t + x[2]))])
    x0 = np.array([0.02, 4000.0, 250.0])
    result = least_squares_lm(residuals, x0, jac, ftol=1e-8, xtol=1e-8, bounds=(x0 - 2 * x0 - 1, x0 + 2 * x0 + 1))
    assert result.success and not np.any(result.active_mask)
    np.testing.assert_allclose(result.cost, 87.9458551704 / 2, rtol=1e-7)


def test_bounded_ftol_stop_needs_the_predicted_reduction_small_too():
    # r = x^2 + 5 on [-1, 3] from x = 2: a large residual, whose Gauss-Newton model (curvature 4 x^2
    # against the cost's 4 x^2 + 2 r) predicts every step near x = 0 several times the reduction it
    # gets. A step that gains less than ftol of the cost while its model predicts more is not
    # convergence (MINPACK's test; scipy asks the ratio to exceed 1/4); stopped on the actual
    # reduction alone, the run ended at x = -1.7e-4, which scipy's test_in_bounds refuses (1e-4).
    result = least_squares_lm(lambda x: x ** 2 + 5.0, [2.0], lambda x: np.array([[2.0 * x[0]]]), ftol=1e-8,
                              xtol=1e-8, bounds=([-1.0], [3.0]))
    assert result.success and abs(result.x[0]) < 1e-4


@pytest.mark.parametrize("bounds", [None, ([-10.0, -10.0], [10.0, 10.0])])
def test_gauss_newton_cut_short_by_its_line_search_is_not_convergence(bounds):
    # r3 = 1 + B x0^2 carries curvature 2 B r3 that the Gauss-Newton model lacks. From (0, -1) the
    # full step (1, 2) predicts lowering the cost 3 by 0.5 ||J p||^2 = 2.5; the Armijo search (in a
    # box: along the projection arc) cuts it to about 5 / B, which lowers the cost by 2.5e-10. The
    # small-change tests measure the model's full step, so the run goes on: it used to report ftol
    # success at (2.5e-11, -1), cost 3. (Its minimum, near x = (0, 1), costs 1.)
    b = 1e11
    result = least_squares_lm(lambda x: np.array([x[0] - 1, x[1] - 1, 1 + b * x[0] ** 2]), [0.0, -1.0],
                              lambda x: np.array([[1.0, 0.0], [0.0, 1.0], [2 * b * x[0], 0.0]]), method="gn",
                              bounds=bounds)
    assert result.nit > 1 and result.cost < 1.5 and not result.success


@pytest.mark.parametrize("method", METHODS)
def test_rank_deficient_jacobian(method):
    # r depends on x0 + x1 only: any x with x0 + x1 = 3 is a solution.
    result = least_squares_lm(lambda x: np.array([x[0] + x[1] - 3.0, 2 * (x[0] + x[1]) - 6.0]),
                              np.zeros(2), lambda x: np.array([[1.0, 1.0], [2.0, 2.0]]),
                              method=method)
    assert result.status == 0 and result.x.sum() == pytest.approx(3.0)


@pytest.mark.parametrize("method", METHODS)
def test_counters_match_calls(method):
    calls = {"r": 0, "j": 0}
    residuals, jac = rosenbrock_residuals()

    def counted_residuals(x):
        calls["r"] += 1
        return residuals(x)

    def counted_jac(x):
        calls["j"] += 1
        return jac(x)

    result = least_squares_lm(counted_residuals, [-1.2, 1.0], counted_jac, method=method)
    assert (result.nfev, result.njev) == (calls["r"], calls["j"])


@pytest.mark.parametrize("method", METHODS)
def test_nonfinite_residuals_at_x0_are_a_value_error(method):
    with pytest.raises(ValueError, match="not finite at x0"):
        least_squares_lm(lambda x: np.array([np.inf]), [0.0], lambda x: np.ones((1, 1)),
                         method=method)


@pytest.mark.parametrize("method", METHODS)
def test_nan_mid_run_is_recovered(method):
    # The residual is undefined beyond x > 3 and the linearization points far past it.
    residuals = lambda x: np.array([np.log(3.0 - x[0]) - np.log(2.0) if x[0] < 3 else np.nan])
    jac = lambda x: np.array([[-1.0 / (3.0 - x[0])]])
    result = least_squares_lm(residuals, [2.99], jac, method=method)
    assert result.status == 0 and np.isfinite(result.x).all()
    assert result.x[0] == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_callback_stop_is_status_99(method):
    residuals, jac = rosenbrock_residuals()

    def stop(intermediate):
        if intermediate.nit == 2:
            raise StopIteration

    result = least_squares_lm(residuals, [-1.2, 1.0], jac, stop, method=method)
    assert result.status == 99 and result.nit == 2


def test_bad_input():
    residuals, jac = rosenbrock_residuals()
    with pytest.raises(ValueError, match="method"):
        least_squares_lm(residuals, [0.0, 0.0], jac, method="dogleg")
    with pytest.raises(ValueError, match="shape"):
        least_squares_lm(residuals, [0.0, 0.0], lambda x: np.ones((3, 2)))


def test_disp_prints_the_lambda_column(capsys):
    residuals, jac = exponential_fit()
    least_squares_lm(residuals, [1.0, 1.0, 0.0], jac, disp=True)
    assert capsys.readouterr().out.split()[:5] == ["nit", "f", "gnorm", "step", "lambda"]


def test_the_trust_radius_follows_the_step_tried():
    """Moré's update: a quarter of the step's length below rho 1/4, doubled above 3/4 on the boundary."""
    radius = TrustRadius(1.0)
    assert not radius.update(0.0, 0.8) and radius.value == pytest.approx(0.2)    # failed: 0.8 / 4
    assert radius.update(0.1, 0.2) and radius.value == pytest.approx(0.05)       # taken, still shrunk
    assert radius.update(0.9, 0.05) and radius.value == pytest.approx(0.1)       # on the boundary: doubled
    assert radius.update(0.9, 0.01) and radius.value == pytest.approx(0.1)       # inside: kept
    assert radius.update(0.5, 0.1) and radius.value == pytest.approx(0.1)
    assert not radius.update(-np.inf, 0.1) and radius.value == pytest.approx(0.025)
    with pytest.raises(ValueError, match="trust radius"):
        TrustRadius(0.0)


@pytest.mark.parametrize("radius", [1e-3, 0.1, 10.0, 1e6])
def test_the_damped_step_solves_its_regularized_system_within_the_radius(radius):
    """q(lambda) = -(J^T J + lambda I)^-1 J^T r with ||q|| within 10% of the radius, or the
    Gauss-Newton step (lambda 0) when that is inside."""
    rng = np.random.default_rng(3)
    jacobian, r = rng.standard_normal((8, 3)) @ np.diag([1.0, 1e-2, 1e2]), rng.standard_normal(8)
    q, lam = DampedSteps(jacobian, r).step(radius, 0.0)
    expected = np.linalg.solve(jacobian.T @ jacobian + lam * np.eye(3), -jacobian.T @ r)
    np.testing.assert_allclose(q, expected, rtol=1e-8 * np.linalg.cond(jacobian.T @ jacobian + lam * np.eye(3)))
    gauss_newton = np.linalg.lstsq(jacobian, -r, rcond=None)[0]
    if np.linalg.norm(gauss_newton) <= radius:
        assert lam == 0.0
    else:
        assert lam > 0 and abs(np.linalg.norm(q) - radius) <= 0.1 * radius
