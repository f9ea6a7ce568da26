"""The methods with bounds: the loop's projected-gradient test, curvature check on the free
variables, active column and active_mask; TRON (the trust-region methods), projected Newton and
Newton-CG, projected first-order updates and bounded least squares, on problems whose
bound-constrained minimizer is known, with f never evaluated outside the box."""
import numpy as np
import pytest

import optimizers
from optimizers.bounds import Box
from optimizers.feasible import UNCONSTRAINED
from optimizers.loop import Step, Trial, run
from optimizers.methods import feasible_set
from optimizers.objective import Objective, Status

INF = np.inf
SECOND_ORDER = {
    "trust-ncg": optimizers.minimize_trust_ncg,
    "trust-krylov": optimizers.minimize_trust_krylov,
    "trust-exact": optimizers.minimize_trust_exact,
    "dogleg": optimizers.minimize_dogleg,
    "newton-cg": optimizers.minimize_newton_cg,
    "newton": optimizers.minimize_newton,
}


class Boxed:
    """f, gradient and Hessian of a problem, refusing (AssertionError) any point outside the box."""

    def __init__(self, fun, grad, hess, box):
        self._fun, self._grad, self._hess, self.box = fun, grad, hess, box
        self.points = 0

    def _inside(self, x):
        assert self.box.contains(x), f"evaluated outside the box at {x}"
        self.points += 1

    def fun(self, x):
        self._inside(x)
        return self._fun(x)

    def grad(self, x):
        self._inside(x)
        return self._grad(x)

    def hessp(self, x, p):
        self._inside(x)
        return self._hess(x) @ p


def kkt_quadratic(n, seed):
    """f = c^T x + x^T H x / 2 on a box, built from its minimizer x*: variables at the lower
    bound (multiplier > 0), at the upper (< 0), fixed, and free (g = 0); H positive definite."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    H = Q @ np.diag(np.geomspace(1.0, 100.0, n)) @ Q.T
    lower, upper = -rng.random(n) - 0.5, rng.random(n) + 0.5
    kind = np.arange(n) % 4                      # 0 free, 1 lower, 2 upper, 3 fixed
    upper = np.where(kind == 3, lower, upper)
    x_star = np.where(kind == 2, upper, np.where(kind == 0, rng.uniform(lower, upper), lower))
    multiplier = np.where(kind == 1, rng.random(n) + 0.1,
                          np.where(kind == 2, -rng.random(n) - 0.1, 0.0))
    c = multiplier - H @ x_star
    box = Box(lower, upper)
    problem = Boxed(lambda x: float(c @ x + 0.5 * x @ H @ x), lambda x: c + H @ x, lambda x: H, box)
    mask = np.where(kind == 2, 1, np.where(kind == 0, 0, -1))
    return problem, x_star, mask


@pytest.mark.parametrize("method", SECOND_ORDER)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_bounded_method_finds_the_kkt_point_of_a_quadratic(method, seed, stopping):
    problem, x_star, mask = kkt_quadratic(12, seed)
    x0 = np.full(12, 3.0)    # outside the box: projected first
    result = SECOND_ORDER[method](problem.fun, x0, problem.grad, hessp=problem.hessp,
                                  bounds=problem.box)
    assert result.success and result.status == Status.SUCCESS
    stopping.assert_near_minimizer(result.x, x_star, result.fun, mu=1.0, bounded=True)   # H >= I
    np.testing.assert_array_equal(result.active_mask, mask)
    assert result.message.startswith("Optimization terminated successfully: the projected "
                                     "gradient test passed (||pg||_inf = ")
    history = result.history
    assert history["active"][-1] == np.count_nonzero(mask)
    assert np.all(history["gnorm"][-1] <= 1e-8 * max(1.0, abs(result.fun)))
    assert np.all([problem.box.contains(x) for x in history["x"]])


def test_bounds_as_a_pair_and_x0_projected_before_the_first_evaluation():
    box = feasible_set(([0.0, -1.0], [1.0, INF]))
    x0, note = box.start(np.array([5.0, -7.0]))
    np.testing.assert_array_equal(x0, [1.0, -1.0])
    assert note == ("x0 lay outside the bounds in 2 of 2 entries (the first at flat index 0) and was clipped "
                    "into the box")
    assert feasible_set(None) is UNCONSTRAINED
    with pytest.raises(ValueError, match="bounds are over 2 variables, but x0 has 3"):
        box.start(np.zeros(3))
    with pytest.raises(TypeError, match="a Box or a pair"):
        feasible_set([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="lower bound exceeds the upper bound at index 1"):
        optimizers.minimize_trust_ncg(lambda x: x @ x, np.zeros(2), lambda x: 2 * x,
                                      hessp=lambda x, p: 2 * p, bounds=([0, 2], [1, 1]))


def test_the_loop_refuses_an_x0_outside_its_box():
    class Still(Step):
        def default_maxiter(self, n): return 1
        def start(self, point): return {}
        def __call__(self, point, saddle): return Trial(point.x, point.f, {})
    objective = Objective(lambda x: x @ x, np.array([2.0]), lambda x: 2 * x)
    with pytest.raises(ValueError, match=r"x0 lies outside the feasible set Box\(n=1"):
        run(objective, Still(), feasible=Box([0.0], [1.0]))


def test_first_order_point_of_the_box_whose_gradient_is_not_zero_is_success():
    """f = (x - 2)^2 on [0, 1]: the minimum is on the bound, where g = -2 but pg = 0."""
    for method in SECOND_ORDER.values():
        result = method(lambda x: float((x[0] - 2.0) ** 2), np.array([0.5]),
                        lambda x: 2.0 * (x - 2.0), hessp=lambda x, p: 2.0 * p,
                        bounds=([0.0], [1.0]))
        assert result.success and result.x[0] == 1.0 and result.jac[0] == -2.0
        assert result.active_mask[0] == 1


def test_a_saddle_on_the_free_variables_is_left_and_curvature_of_bound_variables_ignored():
    """f = x0^2 - x1^2 + x2 on [-1, 1]^2 x [0, 1], from (0.5, 0, 0): x2 goes to its lower bound
    at once (g = 1 pushes it there), x1 sits on a saddle of the free variables (g = 0, negative
    curvature) and must leave it to reach x1 = +-1."""
    box = Box([-1.0, -1.0, 0.0], [1.0, 1.0, 1.0])
    H = np.diag([2.0, -2.0, 0.0])
    problem = Boxed(lambda x: float(x[0] ** 2 - x[1] ** 2 + x[2]),
                    lambda x: np.array([2 * x[0], -2 * x[1], 1.0]), lambda x: H, box)
    for name, method in SECOND_ORDER.items():
        result = method(problem.fun, np.array([0.5, 0.0, 0.0]), problem.grad,
                        hessp=problem.hessp, bounds=box)
        assert result.success, name
        # |g_0| = 2 |x_0| <= 1e-8 at the end
        np.testing.assert_allclose(result.x, [0.0, np.sign(result.x[1]), 0.0], atol=5e-9)
        assert abs(result.x[1]) == 1.0 and result.fun == pytest.approx(-1.0)
        np.testing.assert_array_equal(np.abs(result.active_mask), [0, 1, 1])
    # negative curvature along a variable held at its bound is no saddle: f = -x^2 on [1, 2]
    # at x = 2 has nothing free, a zero projected gradient, and is the minimum
    result = optimizers.minimize_trust_ncg(lambda x: float(-x[0] ** 2), np.array([2.0]),
                                           lambda x: -2.0 * x, hessp=lambda x, p: -2.0 * p,
                                           bounds=([1.0], [2.0]))
    assert result.success and result.nit == 0 and result.x[0] == 2.0


def test_a_saddle_that_cannot_be_left_is_status_5_not_success():
    """The check is on the free variables: a maximum of f in the interior of the box, where the
    Hessian's products are NaN beyond the first point, cannot be left; it is never success."""
    box = Box([-1.0, -1.0], [1.0, 1.0])
    result = optimizers.minimize_newton_cg(lambda x: float(-(x @ x)), np.zeros(2),
                                           lambda x: -2.0 * x, hessp=lambda x, p: -2.0 * p,
                                           bounds=box)
    assert result.success and np.all(np.abs(result.x) == 1.0)   # left along negative curvature
    flat = optimizers.minimize_newton_cg(lambda x: 0.0 if np.all(x == 0) else 1.0, np.zeros(2),
                                         lambda x: np.zeros(2), hessp=lambda x, p: -2.0 * p,
                                         bounds=box)
    assert not flat.success and flat.status == Status.NOT_A_MINIMUM


def test_fixed_variables_never_move():
    box = Box([0.5, -INF, -2.0], [0.5, INF, -2.0])
    rosenbrock = Boxed(lambda x: float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)),
                       lambda x: np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]),
                                           200 * (x[1] - x[0] ** 2) - 400 * x[1] * (x[2] - x[1] ** 2)
                                           - 2 * (1 - x[1]), 200 * (x[2] - x[1] ** 2)]),
                       lambda x: np.array([[1200 * x[0] ** 2 - 400 * x[1] + 2, -400 * x[0], 0],
                                           [-400 * x[0], 202 + 1200 * x[1] ** 2 - 400 * x[2],
                                            -400 * x[1]],
                                           [0, -400 * x[1], 200]]), box)
    for name, method in SECOND_ORDER.items():
        result = method(rosenbrock.fun, np.zeros(3), rosenbrock.grad, hessp=rosenbrock.hessp,
                        bounds=box)
        assert result.success, name
        assert np.all(result.history["x"][:, 0] == 0.5) and np.all(result.history["x"][:, 2] == -2.0)
        # the free middle variable minimizes a quartic in x1: its derivative vanishes there
        x1 = result.x[1]
        assert abs(200 * (x1 - 0.25) - 400 * x1 * (-2.0 - x1 ** 2) - 2 * (1 - x1)) <= 1e-6
        np.testing.assert_array_equal(result.active_mask, [-1, 0, -1])


@pytest.mark.parametrize("method", ["gd", "adam"])
def test_projected_first_order_updates_stay_in_the_box(method, stopping):
    problem, x_star, mask = kkt_quadratic(8, 3)
    solver = {"gd": optimizers.minimize_gd, "adam": optimizers.minimize_adam}[method]
    options = {"learning_rate": 0.005, "maxiter": 20000} if method == "gd" else {
        "learning_rate": 0.01, "maxiter": 20000}
    result = solver(problem.fun, np.zeros(8), problem.grad, bounds=problem.box, **options)
    assert np.all([problem.box.contains(x) for x in result.history["x"]])
    if result.success:   # only ever at the KKT point, within what the gradient test promises (H >= I)
        stopping.assert_near_minimizer(result.x, x_star, result.fun, mu=1.0, bounded=True)
        np.testing.assert_array_equal(result.active_mask, mask)
    else:
        assert result.status == Status.MAXITER
    assert method == "adam" or result.success   # projected gradient descent converges here


@pytest.mark.parametrize("method", ["lm", "gn"])
def test_bounded_least_squares_is_non_negative_least_squares(method, stopping):
    scipy_optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(4)
    A = rng.normal(size=(40, 15))
    b = A @ np.maximum(rng.normal(size=15), 0.0) + rng.normal(size=40)
    expected, _ = scipy_optimize.nnls(A, b)
    seen = []

    def residuals(x):
        seen.append(np.all(x >= 0))
        return A @ x - b
    result = optimizers.least_squares_lm(residuals, np.full(15, -1.0), lambda x: A, method=method,
                                         bounds=(np.zeros(15), np.full(15, INF)))
    assert result.success and all(seen)
    # the cost's Hessian is A^T A; nnls' own answer is exact to rounding (A is well conditioned)
    stopping.assert_near_minimizer(result.x, expected, result.cost, mu=np.linalg.eigvalsh(A.T @ A)[0], bounded=True)
    np.testing.assert_array_equal(result.active_mask, np.where(expected > 0, 0, -1))
    np.testing.assert_allclose(result.fun, A @ result.x - b, rtol=1e-14)
    assert result.cost == pytest.approx(0.5 * np.sum((A @ expected - b) ** 2), rel=1e-12)
