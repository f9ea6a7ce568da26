"""The box and the bounded steps (TRON's Cauchy point, subspace CG and projected searches;
Bertsekas' projected Newton direction and Armijo arc), on hand-checkable boxes and on quadratics
whose bound-constrained minimizer is known in closed form."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizers.bounds import (
    Box,
    BoxTrustRegion,
    ProjectedNewtonDirection,
    cauchy_point,
    projected_armijo,
    projected_newton_direction,
    restrict,
)

INF = np.inf


# --- the box --------------------------------------------------------------------------------

@pytest.mark.parametrize("lower, upper, message", [
    ([0.0, np.nan], [1.0, 1.0], "a bound is NaN at index 1"),
    ([0.0, 2.0], [1.0, 1.0], "lower bound exceeds the upper bound at index 1"),
    ([INF, 0.0], [INF, 1.0], "lower bound is \\+inf .* at index 0"),
    ([0.0, -INF], [1.0, -INF], "upper bound is -inf .* at index 1"),
    ([0.0, 0.0], [1.0], "two 1-D arrays of one length"),
    ([[0.0]], [[1.0]], "two 1-D arrays of one length"),
])
def test_bad_boxes_are_refused_with_the_offending_index(lower, upper, message):
    with pytest.raises(ValueError, match=message):
        Box(lower, upper)


def test_box_queries_on_hand_checked_values():
    box = Box([0.0, -INF, -1.0, 2.0], [1.0, 5.0, INF, 2.0])   # last variable fixed
    x = np.array([0.0, 5.0, 0.5, 2.0])
    g = np.array([3.0, 4.0, -2.0, 7.0])
    assert box.contains(x) and not box.contains(x + [0, 1e-9, 0, 0])
    np.testing.assert_array_equal(box.project(np.array([-1.0, 9.0, -3.0, 0.0])),
                                  [0.0, 5.0, -1.0, 2.0])
    np.testing.assert_array_equal(box.active_mask(x), [-1, 1, 0, -1])
    np.testing.assert_array_equal(box.free(x), [False, False, True, False])
    # g pushes variable 0 against its lower bound; variable 1's g points inward from its upper one
    np.testing.assert_array_equal(box.binding(x, g), [True, False, False, True])
    np.testing.assert_array_equal(box.projected_gradient(x, g), [0.0, 4.0, -2.0, 0.0])
    # within epsilon of a bound counts for Bertsekas' binding set
    near = np.array([1e-4, 0.0, 0.5, 2.0])
    np.testing.assert_array_equal(box.binding(near, g, epsilon=1e-3), [True, False, False, True])
    np.testing.assert_array_equal(box.binding(near, g), [False, False, False, True])


def test_breakpoints_and_path_land_exactly_on_the_bounds():
    box = Box([0.0, -1.0, -INF], [1.0, 1.0, INF])
    x = np.array([0.1, 0.5, 0.0])
    d = np.array([0.3, -3.0, 1.0])
    t = box.breakpoints(x, d)
    np.testing.assert_allclose(t, [3.0, 0.5, INF], rtol=1e-15)
    # 0.1 + t * 0.3 rounds below 1; the path puts the variable on its bound anyway
    assert x[0] + t[0] * d[0] < 1.0
    point = box.path(x, d, t[0])
    assert point[0] == 1.0 and box.active_mask(point)[0] == 1
    np.testing.assert_array_equal(box.path(x, d, 10.0), [1.0, -1.0, 10.0])
    # a zero direction and a direction out of a bound the variable is on: breakpoints inf and 0
    np.testing.assert_array_equal(Box([0.0, 0.0], [1.0, 1.0]).breakpoints(
        np.array([0.5, 0.0]), np.array([0.0, -1.0])), [INF, 0.0])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_projected_gradient_vanishes_exactly_at_fixed_points_of_the_projection(seed):
    """x in the box is first-order stationary iff x = P(x - t g) for t > 0 iff the projected
    gradient is zero (Calamai & Moré 1987); every point of a projected path lies in the box."""
    rng = np.random.default_rng(seed)
    n = 6
    lower = np.where(rng.random(n) < 0.3, -INF, rng.normal(size=n) - 1.0)
    upper = np.where(rng.random(n) < 0.3, INF, lower + rng.random(n) * (rng.random(n) < 0.8))
    upper = np.where(np.isinf(lower) & np.isinf(upper), rng.normal(size=n), upper)
    box = Box(lower, upper)
    x = box.project(rng.normal(size=n) * 2.0)
    g = rng.normal(size=n) * (rng.random(n) < 0.7)
    pg = box.projected_gradient(x, g)
    np.testing.assert_array_equal(pg == 0, box.project(x - 0.5 * g) == x)
    for t in (0.0, 0.1, 1.0, 1e3):
        assert box.contains(box.path(x, -g, t))
    assert np.all(box.projected_gradient(x, g)[box.free(x)] == g[box.free(x)])


def test_restrict_multiplies_by_the_reduced_hessian(counted):
    H = np.arange(16.0).reshape(4, 4) + np.eye(4)
    H = H + H.T
    mask = np.array([True, False, True, True])
    product = restrict(counted("hessp", H.__matmul__), mask)
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(product(v), H[np.ix_(mask, mask)] @ v, rtol=1e-15)
    assert counted.calls["hessp"] == 1


# --- the Cauchy point -------------------------------------------------------------------------

def quadratic(H, c):
    """f(x) = c^T x + x^T H x / 2 and its gradient."""
    return (lambda x: float(c @ x + 0.5 * x @ H @ x)), (lambda x: c + H @ x)


def test_cauchy_point_shrinks_alpha_to_fit_the_radius_and_meet_sufficient_decrease(counted):
    H = np.diag([1.0, 100.0])
    g = np.array([1.0, 1.0])
    box = Box([-INF, -INF], [INF, INF])
    matvec = counted("hessp", H.__matmul__)
    # alpha = 1: s = -g, q = -2 + 101/2 > 0; alpha = 0.1: q = -0.2 + 1.01/2 > -0.002; 0.01 passes
    c = cauchy_point(np.zeros(2), g, matvec, box, radius=10.0, alpha=1.0)
    assert c.alpha == pytest.approx(0.01)
    np.testing.assert_allclose(c.s, [-0.01, -0.01], rtol=1e-15)
    assert c.q == pytest.approx(-0.02 + 0.5 * 101e-4, rel=1e-14)
    assert c.q <= 0.01 * (g @ c.s)
    np.testing.assert_allclose(c.Hs, H @ c.s, rtol=1e-15)
    assert counted.calls["hessp"] == 3   # one product per trial: alpha = 1, 0.1, 0.01
    # a radius that cuts the path: alpha shrinks until ||s|| <= radius, without products beyond
    short = cauchy_point(np.zeros(2), np.array([1.0, 0.0]), H.__matmul__, box, radius=0.05)
    assert short.alpha == pytest.approx(0.01) and np.linalg.norm(short.s) <= 0.05


def test_cauchy_point_extrapolates_while_acceptable_and_stops_at_the_last_breakpoint():
    H = np.eye(2)
    g = np.array([-1.0, -2.0])
    box = Box([-INF, -INF], [3.0, 5.0])
    c = cauchy_point(np.zeros(2), g, H.__matmul__, box, radius=100.0, alpha=1e-3)
    # alpha grows 1e-3 -> ... -> 10 (>= last breakpoint 2.5), where both variables are on bounds;
    # q(3, 5) = -3 - 10 + 17 = 4 > 0 fails, so the last acceptable alpha is 1: s = (1, 2)
    assert c.alpha == pytest.approx(1.0)
    np.testing.assert_array_equal(c.x, [1.0, 2.0])
    assert c.q == -2.5


def test_cauchy_point_without_descent_along_the_path_takes_no_product(counted):
    box = Box([0.0, 0.0], [1.0, 1.0])
    x = np.array([0.0, 1.0])
    c = cauchy_point(x, np.array([2.0, -3.0]), counted("hessp", lambda v: v), box, radius=1.0)
    assert c.q == 0.0 and not c.s.any() and counted.calls["hessp"] == 0


def test_cauchy_point_stops_at_a_nonfinite_product(counted):
    c = cauchy_point(np.zeros(2), np.ones(2), counted("hessp", lambda v: np.full(2, np.nan)),
                     Box([-1.0, -1.0], [1.0, 1.0]), radius=1.0)
    assert np.isnan(c.q) and counted.calls["hessp"] == 1


def spd(n, seed, condition=50.0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    return Q @ np.diag(np.geomspace(1.0, condition, n)) @ Q.T


# --- TRON on bound-constrained quadratics with a known minimizer ------------------------------

def kkt_instance(n, seed):
    """A quadratic f = c^T x + x^T H x / 2 on a box, built from its minimizer x*: some variables
    at the lower bound with multiplier > 0, some at the upper with < 0, the rest free (g = 0);
    H is positive definite, so x* is the unique minimizer."""
    rng = np.random.default_rng(seed)
    H = spd(n, seed, condition=100.0)
    lower, upper = -rng.random(n) - 0.5, rng.random(n) + 0.5
    kind = rng.integers(0, 3, n)                       # 0 free, 1 lower, 2 upper
    x_star = np.where(kind == 1, lower, np.where(kind == 2, upper, rng.uniform(lower, upper)))
    multiplier = np.where(kind == 1, rng.random(n) + 0.1, np.where(kind == 2, -rng.random(n) - 0.1,
                                                                      0.0))
    c = multiplier - H @ x_star
    return H, c, Box(lower, upper), x_star


def tron_run(H, c, box, x0, radius=10.0, max_iterations=50):
    """Accept every TRON step on a quadratic (the model is exact): returns the iterates and the
    solutions."""
    fun, grad = quadratic(H, c)
    x, alpha, path = x0, 1.0, []
    for _ in range(max_iterations):
        g = grad(x)
        if np.max(np.abs(box.projected_gradient(x, g))) <= 1e-12 * max(1.0, np.abs(c).max()):
            break
        step = BoxTrustRegion(x, g, H.__matmul__, box, alpha=alpha)
        solution = step.solve(radius)
        alpha = step.alpha
        path.append((x, solution))
        x = solution.x
    return x, path


@pytest.mark.parametrize("seed", range(6))
def test_tron_steps_find_the_bound_constrained_minimizer_of_a_quadratic(seed):
    H, c, box, x_star = kkt_instance(12, seed)
    fun, _ = quadratic(H, c)
    x, path = tron_run(H, c, box, box.project(np.zeros(12)))
    np.testing.assert_allclose(x, x_star, atol=1e-10)
    np.testing.assert_array_equal(box.active_mask(x), box.active_mask(x_star))
    for x_k, solution in path:
        assert box.contains(solution.x)
        assert np.linalg.norm(solution.p) <= 10.0 * (1 + 1e-12)
        np.testing.assert_array_equal(solution.p, solution.x - x_k)
        # on a quadratic the model decrease is the actual decrease, up to rounding
        assert solution.decrease == pytest.approx(fun(x_k) - fun(solution.x), rel=1e-9,
                                                  abs=1e-12 * abs(fun(x_k)))
        assert solution.decrease >= 0
    assert len(path) <= 10


def test_tron_step_does_at_least_as_well_as_its_cauchy_point(counted):
    H, c, box, _ = kkt_instance(8, 3)
    fun, _ = quadratic(H, c)
    x = box.project(np.zeros(8))
    g = c + H @ x
    products = counted("hessp", H.__matmul__)
    for radius in (0.01, 0.05, 0.3, 10.0):
        step = BoxTrustRegion(x, g, products, box)
        before = counted.calls["hessp"]
        solution = step.solve(radius)
        assert solution.products == counted.calls["hessp"] - before >= 1
        cauchy = cauchy_point(x, g, H.__matmul__, box, radius)
        assert np.linalg.norm(cauchy.s) <= radius * (1 + 1e-12)
        assert solution.decrease >= -cauchy.q > 0
        assert solution.decrease == pytest.approx(fun(x) - fun(solution.x), rel=1e-10)
        if radius <= 0.05:
            # a short radius: one CG run from the Cauchy point, stopped on its boundary, so the
            # step is the Cauchy step plus one CG step, each within the radius
            assert solution.on_boundary
            assert np.linalg.norm(solution.x - cauchy.x) == pytest.approx(radius, rel=1e-12)


def test_tron_step_leaves_a_saddle_of_the_box_along_negative_curvature():
    H = np.diag([1.0, -1.0])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    x = np.zeros(2)
    g = np.zeros(2)
    plain = BoxTrustRegion(x, g, H.__matmul__, box).solve(0.5)
    assert plain.decrease == 0.0 and not plain.p.any()
    # along +-u to the radius, (0, +-0.5), then CG from there follows the negative curvature
    # on to the box's face: q(0, +-1) = -1/2
    escape = BoxTrustRegion(x, g, H.__matmul__, box, escape=np.array([0.0, 3.0])).solve(0.5)
    assert escape.x[0] == 0.0 and abs(escape.x[1]) == 1.0
    assert escape.decrease == pytest.approx(0.5, rel=1e-12)
    # a wider radius: P(x +- 2 u) = (0, +-1) at once
    wide = BoxTrustRegion(x, g, H.__matmul__, box, escape=np.array([0.0, 1.0])).solve(2.0)
    assert abs(wide.x[1]) == 1.0 and box.contains(wide.x) and wide.decrease == 0.5


def test_tron_step_with_nonfinite_products_reports_a_nan_step():
    box = Box([-1.0, -1.0], [1.0, 1.0])
    solution = BoxTrustRegion(np.zeros(2), np.ones(2), lambda v: np.full(2, np.nan),
                              box).solve(1.0)
    assert np.isnan(solution.decrease) and np.all(np.isnan(solution.p))
    assert solution.products == 1


def test_tron_on_fixed_variables_never_moves_them():
    H = spd(4, 5)
    box = Box([0.5, -1.0, -1.0, -2.0], [0.5, 1.0, 1.0, -2.0])
    c = np.array([10.0, 0.1, -0.2, -10.0])
    x, path = tron_run(H, c, box, box.project(np.zeros(4)))
    assert x[0] == 0.5 and x[3] == -2.0
    # the free pair solves its reduced system exactly
    free = np.array([False, True, True, False])
    reduced = -np.linalg.solve(H[np.ix_(free, free)], c[free] + H[np.ix_(free, ~free)] @ x[~free])
    np.testing.assert_allclose(x[free], np.clip(reduced, -1.0, 1.0), atol=1e-10)


# --- Bertsekas' projected Newton ------------------------------------------------------------

def exact_solver(H):
    """The reduced Newton step of H, as projected_newton_direction asks for it."""
    return lambda free, g_free: -np.linalg.solve(H[np.ix_(free, free)], g_free)


@pytest.mark.parametrize("seed", range(6))
def test_projected_newton_finds_the_bound_constrained_minimizer_of_a_quadratic(seed):
    H, c, box, x_star = kkt_instance(12, seed)
    fun, grad = quadratic(H, c)
    evaluated = []

    def watched(x):
        evaluated.append(box.contains(x))
        return fun(x)

    x = box.project(np.zeros(12))
    for _ in range(60):
        g = grad(x)
        if np.max(np.abs(box.projected_gradient(x, g))) <= 1e-11:
            break
        direction = projected_newton_direction(x, g, box, exact_solver(H))
        search = projected_armijo(watched, x, fun(x), g, direction, box)
        assert search.success and search.f <= fun(x)
        x = search.x
    np.testing.assert_allclose(x, x_star, atol=1e-9)
    assert all(evaluated)


def test_projected_newton_direction_on_a_hand_checked_instance():
    H = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    box = Box([0.0, 0.0, 0.0], [INF, INF, 1.0])
    x = np.array([5e-4, 1.0, 1.0])
    g = np.array([2.0, -1.0, 1.0])   # x0 near 0 with g > 0: binding; x2 at 1 with g > 0: not
    direction = projected_newton_direction(x, g, box, exact_solver(H), epsilon=1e-3)
    np.testing.assert_array_equal(direction.binding, [True, False, False])
    assert direction.d[0] == -2.0
    np.testing.assert_allclose(direction.d[1:], -np.linalg.solve(H[1:, 1:], g[1:]), rtol=1e-14)
    # Bertsekas' epsilon shrinks with the projected step ||x - P(x - g)|| = 5e-4 here: with a
    # larger epsilon the binding set is the same, with 1e-4 variable 0 is free
    loose = projected_newton_direction(x, g, box, exact_solver(H), epsilon=1e-4)
    np.testing.assert_array_equal(loose.binding, [False, False, False])


def test_projected_armijo_backtracks_past_nonfinite_values_and_gives_up():
    box = Box([0.0], [10.0])
    x, g = np.array([1.0]), np.array([-1.0])
    direction = ProjectedNewtonDirection(np.array([8.0]), np.array([False]))
    # f is NaN beyond x = 3 (as log of a negative number would be); alpha 1 and 1/2 fail
    fun = lambda z: float(-z[0]) if z[0] <= 3.0 else np.nan
    calls = []
    search = projected_armijo(lambda z: calls.append(z[0]) or fun(z), x, -1.0, g, direction, box)
    assert search.step == 0.25 and search.x[0] == 3.0 and calls == [9.0, 5.0, 3.0]
    assert search.success and not search.nonfinite
    flat = projected_armijo(lambda z: 0.0, x, 0.0, g, direction, box, maxiter=5)
    assert not flat.success and not flat.nonfinite and flat.f == 0.0 and flat.x is x
    nan = projected_armijo(lambda z: np.nan, x, 0.0, g, direction, box, maxiter=5)
    assert not nan.success and nan.nonfinite


def test_projected_armijo_along_negative_curvature_asks_for_the_second_order_decrease():
    """At a saddle (slope 0) the decrease wanted is sigma |curvature| ||s||^2 / 2: f = -x^2/2
    over [-1, 1] from 0 along d = 4 is cut to the bound, s = 1, and f falls by 1/2."""
    box = Box([-1.0], [1.0])
    direction = ProjectedNewtonDirection(np.array([4.0]), np.array([False]))
    fun = lambda z: float(-0.5 * z[0] ** 2)
    search = projected_armijo(fun, np.zeros(1), 0.0, np.zeros(1), direction, box, curvature=-1.0)
    assert search.success and search.x[0] == 1.0 and search.step == 1.0
    # a function that does not fall as fast as its curvature promises with sigma = 1 is refused
    flat = projected_armijo(lambda z: float(-0.1 * z[0] ** 2), np.zeros(1), 0.0, np.zeros(1),
                            direction, box, curvature=-1.0, sigma=1.0, maxiter=4)
    assert not flat.success
