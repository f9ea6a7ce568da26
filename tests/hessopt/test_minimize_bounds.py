"""hessopt.minimize and hessopt.least_squares with bounds, as scipy users pass them: non-negative
least squares against scipy's nnls, a Gamma likelihood with positive rates, chained Rosenbrock
in a box, fixed variables, bounds active and inactive at the solution, objectives that raise
outside the box, and the errors that name what is wrong."""
import contextlib
import io

import numpy as np
import pytest
from scipy.optimize import Bounds, nnls

import autodiff as ad
import hessopt
import optimizers
from hessopt import problems
from optimizers.bounds import Box
from optimizers.stopping import DEFAULT_GTOL, GradientTest

INF = np.inf


def nnls_instance(m=30, n=12, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n))
    b = A @ np.maximum(rng.normal(size=n), 0.0) + rng.normal(size=m)
    return A, b, nnls(A, b)[0]


def refusing(lower, upper):
    """A decorator: the objective raises outside [lower, upper], as log or sqrt of a bound would."""
    def wrap(function):
        def checked(x, *args):
            if np.any(x < lower) or np.any(x > upper):
                raise ValueError("evaluated outside the box")
            return function(x, *args)
        return checked
    return wrap


BOUNDED_METHODS = [d.name for d in optimizers.REGISTRY.declarations() if d.bounds]


@pytest.mark.parametrize("method", [None, *[d.name for d in optimizers.REGISTRY.declarations() if d.bounds
                                            and not d.first_order]])
def test_non_negative_least_squares_matches_scipy_nnls(method):
    A, b, expected = nnls_instance()
    fun = refusing(0.0, INF)(lambda x: np.sum((A @ x - b) ** 2))
    result = hessopt.minimize(fun, np.ones(12), method=method, bounds=[(0, None)] * 12)
    assert result.success
    # ||x - x*|| <= ||pg|| / lambda_min(2 A_F^T A_F); lambda_min >= 2 sigma_min(A)^2 > 2
    np.testing.assert_allclose(result.x, expected, atol=1e-8 * max(1.0, result.fun))
    np.testing.assert_array_equal(result.active_mask, np.where(expected > 0, 0, -1))
    # a projection method ends on the bounds; an interior point inside them, its f above f* by at
    # most its total complementarity (the duality gap of this convex problem), <= gtol max(1, |f|)
    rel = 1e-8 if method == "interior-point" else 1e-12
    assert result.fun == pytest.approx(np.sum((A @ expected - b) ** 2), rel=rel)


@pytest.mark.parametrize("method", ["trf", "gn"])
def test_least_squares_with_bounds_matches_scipy_nnls(method):
    A, b, expected = nnls_instance(seed=1)
    residuals = refusing(0.0, INF)(lambda x: A @ x - b)
    # the gradient test alone (scipy's ftol and xtol off), which the distance bound below assumes
    result = hessopt.least_squares(residuals, np.ones(12), method=method, bounds=(0, np.inf), ftol=None, xtol=None)
    assert result.success
    np.testing.assert_allclose(result.x, expected, atol=1e-8 * max(1.0, result.cost))
    np.testing.assert_array_equal(result.active_mask, np.where(expected > 0, 0, -1))


def test_gamma_rates_are_the_clipped_maximum_likelihood_rates():
    """Gamma waiting times of known shape k in five groups, one rate each, bounded to [lo, hi]:
    the negative log-likelihood, sum(rate S_g - n_g k log(rate)) per group, is convex, and its
    minimizer over the box is the unconstrained one, n_g k / S_g, clipped into it. log(rate) is
    NaN below 0: the objective is never evaluated there, and the bounds keep it away."""
    k = 2.5
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(5), 30)
    times = rng.gamma(k, 1.0 / np.array([0.5, 2.0, 4.0, 1.0, 8.0])[groups])
    sums, sizes = np.bincount(groups, times), np.bincount(groups).astype(float)
    lower, upper = np.array([1.0, 0.1, 0.1, 0.1, 0.1]), np.array([10.0, 10.0, 3.0, 10.0, 10.0])

    def negative_log_likelihood(rates):
        assert np.all(rates > 0), "log of a non-positive rate"
        return np.sum(rates * sums - sizes * k * np.log(rates))

    expected = np.clip(sizes * k / sums, lower, upper)
    for method in ("trust-ncg", "newton-cg", "trust-exact"):
        result = hessopt.minimize(negative_log_likelihood, np.full(5, 0.2), method=method,
                                  bounds=Bounds(lower, upper))
        assert result.success, method
        np.testing.assert_allclose(result.x, expected, rtol=1e-8)
        np.testing.assert_array_equal(result.active_mask, [-1, 0, 1, 0, 0])


def test_bounded_chained_rosenbrock_reaches_the_stored_minimum():
    problem = problems.bounded("bounded_rosenbrock", 100)
    for method in ("trust-ncg", "trust-krylov", "newton-cg"):
        result = hessopt.minimize(problem.fun, problem.x0, method=method,
                                  bounds=Bounds(problem.lower, problem.upper))
        assert result.success and problem.solved(result.fun), method
        assert np.all(result.x >= problem.lower) and np.all(result.x <= problem.upper)
        assert np.count_nonzero(result.active_mask) == result.history["active"][-1] > 0


def test_bounds_active_and_inactive_at_the_solution_keep_x0s_shape():
    """sum((x - t)^2) over a box: the solution is t clipped into it; x0 of shape (2, 3)."""
    t = np.array([[-2.0, 0.5, 3.0], [0.2, 5.0, -0.7]])
    lower, upper = np.array([[-1.0, 0.0, 0.0], [0.2, 0.0, -1.0]]), np.array([[1.0, 1.0, 1.0],
                                                                             [0.2, INF, 0.0]])
    result = hessopt.minimize(lambda x: np.sum((x - t) ** 2), np.zeros((2, 3)),
                              bounds=Bounds(lower, upper))
    assert result.success and result.x.shape == (2, 3)
    # the free variables' Hessian is 2 I, on which CG's first step is exact: x is t up to rounding
    np.testing.assert_allclose(result.x, np.clip(t, lower, upper), atol=1e-12)
    np.testing.assert_array_equal(result.active_mask, [[-1, 0, 1], [-1, 0, 0]])  # fixed: -1
    assert result.active_mask.dtype.kind == "i"


def test_fixed_variables_of_a_pytree_with_a_pytree_of_pairs():
    def f(p):
        return np.sum((p["w"] - np.array([1.0, 2.0, 3.0])) ** 2) + (p["b"] - p["w"][0]) ** 2

    x0 = {"w": np.zeros(3), "b": np.array(0.0)}
    result = hessopt.minimize(f, x0, bounds={"w": ([0.5, -INF, 0.0], [0.5, INF, 1.0]),
                                             "b": (None, None)})
    assert result.success
    np.testing.assert_allclose(result.x["w"], [0.5, 2.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(result.x["b"], 0.5, atol=1e-9)
    np.testing.assert_array_equal(result.active_mask["w"], [-1, 0, 1])
    assert result.active_mask["b"] == 0
    # the same in the flat ad.ravel order
    flat = hessopt.minimize(f, x0, bounds=[(0.5, 0.5), (None, None), (0, 1), (None, None)])
    np.testing.assert_array_equal(flat.x["w"], result.x["w"])


@pytest.mark.parametrize("method", BOUNDED_METHODS)
def test_an_objective_that_raises_outside_the_box_is_never_called_there(method):
    """x0 lies outside the box, the unconstrained minimizer (3, -3) too: every method clips x0
    and keeps every trial point inside."""
    fun = refusing(np.array([-1.0, -2.0]), np.array([2.0, 1.0]))(
        lambda x: (x[0] - 3.0) ** 2 + (x[1] + 3.0) ** 2 + x[0] * x[1])
    options = {"learning_rate": 0.1, "maxiter": 3000} if method in ("gd", "adam") else {}
    result = hessopt.minimize(fun, [5.0, 5.0], method=method, bounds=[(-1, 2), (-2, 1)],
                              options=options)
    assert "x0 lay outside the bounds in 2 of 2 entries" in result.message
    assert np.all(result.history["x"] >= [-1.0, -2.0]) and np.all(result.history["x"] <= [2, 1])
    if method != "adam":
        assert result.success
        np.testing.assert_allclose(result.x, [2.0, -2.0], atol=1e-9)   # both bounds active
        np.testing.assert_array_equal(result.active_mask, [1, -1])


def test_the_iteration_table_and_history_count_the_active_bounds():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = hessopt.minimize(lambda x: np.sum((x - 2.0) ** 2), np.zeros(3),
                                  bounds=[(0, 1), (0, 5), (0, 1)], options={"disp": True})
    header = out.getvalue().splitlines()[0].split()
    assert header[:4] == ["nit", "f", "gnorm", "active"]
    assert result.history["active"][0] == 3 and result.history["active"][-1] == 2   # x0 = 0: all on
    assert result.history["gnorm"][-1] == 0.0   # projected: g = (2, 0, 2) at x = (1, 2, 1)


def test_variables_end_at_the_bounded_solution():
    w = ad.Variable([0.0, 0.0])
    result = hessopt.minimize(lambda: np.sum((w - np.array([3.0, -1.0])) ** 2), [w],
                              bounds=[(0, 1), (None, None)])
    assert result.success
    np.testing.assert_allclose(w.numpy(), [1.0, -1.0], atol=1e-12)
    np.testing.assert_array_equal(result.active_mask[0], [1, 0])


def test_minimize_many_passes_bounds_on():
    starts = [np.zeros(2), np.full(2, 9.0)]
    results = hessopt.minimize_many(lambda x: np.sum((x - 3.0) ** 2), starts, "trust-ncg",
                                    bounds=[(0, 1), (0, 5)])
    for result in results:
        assert result.success
        np.testing.assert_allclose(result.x, [1.0, 3.0], atol=1e-12)


def test_bad_bounds_and_unsupported_combinations_are_refused_by_name():
    def f(x):
        return np.sum(x ** 2)

    with pytest.raises(ValueError, match="lower bound exceeds the upper bound at index 1"):
        hessopt.minimize(f, np.zeros(2), bounds=[(0, 1), (2, 1)])
    with pytest.raises(ValueError, match="bounds has 1 \\(lo, hi\\) pairs, but x0 has 2"):
        hessopt.minimize(f, np.zeros(2), bounds=[(0, 1)])
    for method in ("arc", "hessian-free"):
        with pytest.raises(ValueError, match=f"method '{method}' does not take bounds; the methods "
                                             "that do: newton, newton-cg, trust-ncg, trust-krylov, "
                                             "trust-exact, dogleg, adam, gd, interior-point$"):
            hessopt.minimize(f, np.zeros(2), method=method, bounds=[(0, 1)] * 2)
    with pytest.raises(ValueError, match="method 'trust-ncg' takes no general constraints"):
        hessopt.minimize(f, np.zeros(2), method="trust-ncg", constraints=[{"type": "eq", "fun": f}])
    with pytest.raises(ValueError, match="lb has shape \\(3,\\)"):
        hessopt.least_squares(lambda x: x - 1.0, np.zeros(2), bounds=([0, 0, 0], 1))
    # bounds with no finite entry are no bounds: every method takes them, and nothing is active
    result = hessopt.minimize(f, np.ones(2), method="arc", bounds=[(None, None)] * 2)
    assert result.success and not result.active_mask.any()
    default = hessopt.minimize(f, np.ones(2), bounds=Bounds(-np.inf, np.inf))
    assert "cg" in default.history and "radius" not in default.history   # newton-cg, as unbounded


def test_least_squares_reports_active_mask_always_and_takes_scipy_forms(stopping):
    t = np.linspace(0.0, 2.0, 5)
    y = 2.0 * np.exp(-0.5 * t)
    model = refusing(np.array([0.0, 0.0]), np.array([INF, 0.4]))(
        lambda x: x[0] * np.exp(-x[1] * t) - y)
    for bounds in (([0, 0], [np.inf, 0.4]), Bounds([0, 0], [np.inf, 0.4])):
        result = hessopt.least_squares(model, [1.0, 0.1], bounds=bounds)
        assert result.success
        e = np.exp(-0.4 * t)
        # the rate sits on its bound; the amplitude is then a linear least-squares fit, whose cost has
        # curvature e @ e: within what the gradient test promises of y @ e / (e @ e)
        assert result.x[1] == 0.4
        stopping.assert_near_minimizer(result.x[:1], [y @ e / (e @ e)], result.cost, mu=e @ e)
        np.testing.assert_array_equal(result.active_mask, [0, 1])
    free = hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 1.0],
                                 bounds=(-np.inf, np.inf))     # scipy's default: no bounds
    np.testing.assert_allclose(free.x, [2.0, 0.5], rtol=1e-7)
    np.testing.assert_array_equal(free.active_mask, [0, 0])


def test_bounds_that_read_two_ways_are_refused_before_anything_runs():
    """The issue's two silent misreadings: per-entry pairs for a pytree's 2-entry array were read
    as (lo, hi) (the run reported success at the minimum of the other box), and minimize's pairs
    given to least_squares fixed both variables; scipy refuses the second (lb >= ub)."""
    calls = []

    def f(x):
        calls.append(1)
        return np.sum((x["a"] - 1.5) ** 2)

    with pytest.raises(ValueError, match=r"can be read two ways.*lo = \[0, 1\] and hi = \[2, 3\]"):
        hessopt.minimize(f, {"a": np.zeros(2)}, bounds={"a": [(0, 1), (2, 3)]})

    def residuals(x):
        calls.append(1)
        return x - 0.5

    with pytest.raises(ValueError, match="Each lower bound must be strictly less than each upper bound"):
        hessopt.least_squares(residuals, np.zeros(2), bounds=[(0, 1), (0, 1)])
    assert calls == []
    # said with Bounds, each reading runs to its own box's minimizer
    per_entry = hessopt.minimize(f, {"a": np.zeros(2)}, bounds={"a": Bounds([0, 2], [1, 3])})
    np.testing.assert_array_equal(per_entry.x["a"], [1.0, 2.0])
    both = hessopt.least_squares(residuals, np.zeros(2), bounds=Bounds([0, 0], [1, 1]))
    np.testing.assert_allclose(both.x, [0.5, 0.5], rtol=1e-12)


TRUST_REGION_METHODS = ["trust-ncg", "trust-krylov", "trust-exact", "dogleg"]


@pytest.mark.parametrize("method", [None, *TRUST_REGION_METHODS])
def test_hs25_leaves_its_plateau_start_and_reaches_what_the_test_promises(method):
    """HS25 starts on a plateau (g ~ 2e-8, which set the radius; x0[0] on its upper bound) where
    the gradient test passes and the Hessian has negative curvature. The trust-region methods
    repeated one rejected trial for 1000 iterations (a TRON step longer than the radius did not
    shrink it), then said "before the projected gradient test passed" of a point where it had. At
    the interior x* the test ``||D pg||_inf <= 1e-8`` (D = diag(max(1, |x_i|)), f* = 0) promises
    f - f* = (D g)^T (D H D)^-1 (D g) / 2 <= n 1e-16 / (2 lambda_min(D H D)) and
    ||D^-1 (x - x*)||_2 <= sqrt(n) 1e-8 / lambda_min, each within a factor 2 (the quadratic model)."""
    problem = problems.hock_schittkowski(25)
    bounds = Bounds(problem.lower, problem.upper)
    result = hessopt.minimize(problem.fun, problem.x0, bounds=bounds, method=method)
    pg = Box(problem.lower, problem.upper).projected_gradient(result.x, result.jac)
    measure = GradientTest().measure(result.x, result.fun, pg)
    assert result.success and measure <= DEFAULT_GTOL, result.message
    assert f"here {measure:.1e}" in result.message
    xmin = np.asarray(problem.xmin)
    scale = np.maximum(1.0, np.abs(xmin))
    lambda_min = np.linalg.eigvalsh(scale[:, None] * ad.hessian(problem.fun)(xmin) * scale)[0]
    n, gtol = xmin.size, DEFAULT_GTOL
    assert result.fun - problem.fmin <= 2.0 * n * gtol ** 2 / (2.0 * lambda_min)
    assert np.linalg.norm((result.x - xmin) / scale) <= 2.0 * np.sqrt(n) * gtol / lambda_min


@pytest.mark.parametrize("method", [None, *TRUST_REGION_METHODS])
def test_hs2_reaches_the_local_minimum_on_its_bound_and_says_so(method):
    """From x0 the trust-region methods end at the local minimum on x_2 = 1.5, as the interior point
    does (x_1 < 0; the published one has x_1 > 0): the root of
    d/dx_1 [100 (1.5 - x_1^2)^2 + (1 - x_1)^2] = 400 x_1^3 - 598 x_1 - 2.
    TRON stalled at ||pg|| = 3.8e-7 (status 2): its rounding-level steps were judged by the full
    gradient, whose bound-held x_2 entry they changed more than they lowered pg."""
    problem = problems.hock_schittkowski(2)
    bounds = Bounds(problem.lower, problem.upper)
    result = hessopt.minimize(problem.fun, problem.x0, method=method, bounds=bounds)
    assert result.success, result.message
    root = min(np.roots([400.0, 0.0, -598.0, -2.0]).real)
    curvature = 1200.0 * root ** 2 - 598.0    # the cubic's derivative: f'' along x_1
    assert result.x[1] == 1.5 and np.array_equal(result.active_mask, [0, -1])
    # the test bounds |g_1| max(1, |x_1|) <= 1e-8 max(1, f)
    gtol = DEFAULT_GTOL * max(1.0, result.fun) / abs(root)
    assert abs(result.x[0] - root) <= 2.0 * gtol / curvature
