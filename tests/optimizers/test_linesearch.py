"""Line searches: the conditions they promise, the unit step first, expansion, NaN recovery."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizers.linesearch import backtracking, negative_curvature_search, strong_wolfe
from optimizers.objective import Objective

C1, C2 = 1e-4, 0.9


def quadratic(a, b):
    """f = 0.5 x^T A x - b^T x with its gradient."""
    return (lambda x: 0.5 * x @ a @ x - b @ x), (lambda x: a @ x - b)


def assert_strong_wolfe(f, g, x, p, step, c1=C1, c2=C2):
    slope0 = g(x) @ p
    assert f(x + step * p) <= f(x) + c1 * step * slope0
    assert abs(g(x + step * p) @ p) <= c2 * abs(slope0)


def test_unit_newton_step_on_a_quadratic_is_accepted_at_first_trial():
    a, b = np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([1.0, -1.0])
    f, g = quadratic(a, b)
    x = np.array([2.0, 2.0])
    objective = Objective(f, x, g)
    p = -np.linalg.solve(a, g(x))
    result = strong_wolfe(objective, x, p, f(x), g(x))
    assert result.success and result.step == 1.0
    np.testing.assert_allclose(result.x, np.linalg.solve(a, b))
    assert objective.nfev == 1 + 1      # x0 in the constructor, then the unit step only


def test_short_direction_is_expanded_to_a_wolfe_step():
    f, g = quadratic(np.diag([1.0, 4.0]), np.zeros(2))
    x = np.array([3.0, -1.0])
    p = -1e-3 * g(x)
    result = strong_wolfe(Objective(f, x, g), x, p, f(x), g(x))
    assert result.success and result.step > 1.0
    assert_strong_wolfe(f, g, x, p, result.step)


def test_zoom_finds_a_strong_wolfe_step_for_a_long_direction():
    f = lambda x: np.sum(x**4) + np.sum(x**2)
    g = lambda x: 4 * x**3 + 2 * x
    x = np.array([1.5, -0.5, 2.0])
    p = -10.0 * g(x)
    result = strong_wolfe(Objective(f, x, g), x, p, f(x), g(x))
    assert result.success and result.step < 1.0
    assert_strong_wolfe(f, g, x, p, result.step)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.floats(1e-3, 1e3))
def test_strong_wolfe_conditions_hold_for_random_convex_quadratics(seed, length):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((4, 4))
    a = m @ m.T + 0.1 * np.eye(4)
    f, g = quadratic(a, rng.standard_normal(4))
    x = rng.standard_normal(4)
    p = -length * g(x) / np.linalg.norm(g(x))
    result = strong_wolfe(Objective(f, x, g), x, p, f(x), g(x))
    assert result.success
    assert_strong_wolfe(f, g, x, p, result.step)


def partial_square(x):
    """x^2, undefined (NaN) for |x| > 3."""
    return float(x[0] ** 2) if abs(x[0]) <= 3 else np.nan


@pytest.mark.parametrize("search", [strong_wolfe, backtracking])
def test_nan_trial_values_are_shrunk_past(search):
    x = np.array([2.9])
    g = lambda x: 2 * x
    p = np.array([-1e4])
    result = search(Objective(partial_square, x, g), x, p, partial_square(x), g(x))
    assert result.success and np.isfinite(result.f)
    assert abs(result.x[0]) <= 3 and result.f < partial_square(x)


@pytest.mark.parametrize("search", [strong_wolfe, backtracking])
def test_only_nan_values_report_nonfinite_failure(search):
    x = np.array([1.0])
    f = lambda z: 1.0 if z[0] == 1.0 else np.nan
    result = search(Objective(f, x, lambda z: np.ones(1)), x, np.array([-1.0]), 1.0, np.ones(1))
    assert not result.success and result.nonfinite
    np.testing.assert_array_equal(result.x, x)


@pytest.mark.parametrize("search", [strong_wolfe, backtracking])
def test_uphill_direction_is_refused(search):
    f, g = quadratic(np.eye(2), np.zeros(2))
    x = np.array([1.0, 1.0])
    result = search(Objective(f, x, g), x, g(x), f(x), g(x))
    assert not result.success and not result.nonfinite


def test_backtracking_returns_first_sufficient_decrease_with_interpolation():
    f = lambda x: float(np.exp(x[0]) - 2 * x[0])
    g = lambda x: np.exp(x) - 2
    x = np.array([2.0])
    objective = Objective(f, x, g)
    p = np.array([-20.0])
    result = backtracking(objective, x, p, f(x), g(x))
    assert result.success and 0.1 * 0.1 < result.step < 0.5
    assert result.f <= f(x) + C1 * result.step * (g(x) @ p)
    assert objective.nfev <= 6


def test_negative_curvature_search_leaves_a_saddle():
    f = lambda z: z[0] ** 2 - z[1] ** 2 + z[1] ** 4
    g = lambda z: np.array([2 * z[0], -2 * z[1] + 4 * z[1] ** 3])
    x = np.zeros(2)
    result = negative_curvature_search(Objective(f, x, g), x, np.array([0.0, 1.0]), 0.0, g(x), -2.0)
    assert result.success and result.f < -0.1
    assert result.x[0] == 0.0 and 0.3 < result.x[1] < 1.0


def test_negative_curvature_search_expands_a_short_first_step():
    f = lambda z: -z[0] ** 2 + z[0] ** 4 / 1e4
    g = lambda z: np.array([-2 * z[0] + 4 * z[0] ** 3 / 1e4])
    x = np.zeros(1)
    result = negative_curvature_search(Objective(f, x, g), x, np.ones(1), 0.0, g(x), -2.0,
                                       step0=1.0)
    assert result.success and result.step >= 32.0   # minimizer at sqrt(5000) ~ 70.7
