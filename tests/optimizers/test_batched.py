"""The batched trust-exact (optimizers.batched): batched == looped (each row as trust-exact's run
from its start), known minima of MGH problems with vectorized derivatives, the hard case, a saddle
start, NaN rows, the iteration cap, rows leaving the batch as they stop, bad input; and its parts
(Newton steps, secular steps, the row-wise gradient test) against their one-problem counterparts."""
import numpy as np
import pytest
from scipy.optimize import OptimizeResult

from optimizers import minimize_trust_exact
from optimizers.batched import minimize_batch, newton_steps, secular_steps
from optimizers.objective import MESSAGES, Status
from optimizers.stopping import DEFAULT_GTOL, GradientTest
from optimizers.subproblems import MoreSorensen

# --- problems: f = sum_k r_k^2 with r, J and the residuals' Hessians S, row by row -----------


def least_squares(residuals):
    """``evaluate(X)`` of ``f = sum_k r_k(x)^2`` from ``residuals(X) -> (r (m, k), J (m, k, n),
    S (m, k, n, n))``: g = 2 J^T r, H = 2 (J^T J + sum_k r_k S_k)."""
    def evaluate(X):
        r, J, S = residuals(np.asarray(X, dtype=float))
        return ((r * r).sum(axis=1), 2 * np.einsum("mki,mk->mi", J, r),
                2 * (np.einsum("mki,mkj->mij", J, J) + np.einsum("mk,mkij->mij", r, S)))
    return evaluate


def rosenbrock_residuals(X):
    a, b = X[:, 0], X[:, 1]
    m = len(X)
    r = np.stack([10 * (b - a * a), 1 - a], axis=1)
    J = np.zeros((m, 2, 2))
    J[:, 0, 0], J[:, 0, 1], J[:, 1, 0] = -20 * a, 10, -1
    S = np.zeros((m, 2, 2, 2))
    S[:, 0, 0, 0] = -20
    return r, J, S


def beale_residuals(X):
    a, b = X[:, 0], X[:, 1]
    m = len(X)
    r = np.stack([1.5 - a + a * b, 2.25 - a + a * b ** 2, 2.625 - a + a * b ** 3], axis=1)
    J = np.stack([np.stack([b - 1, a], axis=1), np.stack([b ** 2 - 1, 2 * a * b], axis=1),
                  np.stack([b ** 3 - 1, 3 * a * b ** 2], axis=1)], axis=1)
    S = np.zeros((m, 3, 2, 2))
    S[:, 0, 0, 1] = S[:, 0, 1, 0] = 1
    S[:, 1, 0, 1] = S[:, 1, 1, 0] = 2 * b
    S[:, 1, 1, 1] = 2 * a
    S[:, 2, 0, 1] = S[:, 2, 1, 0] = 3 * b ** 2
    S[:, 2, 1, 1] = 6 * a * b
    return r, J, S


def powell_singular_residuals(X):
    m = len(X)
    u, w = np.array([0.0, 1, -2, 0]), np.array([1.0, 0, 0, -1])
    s5, s10 = np.sqrt(5), np.sqrt(10)
    du, dw = X @ u, X @ w
    r = np.stack([X[:, 0] + 10 * X[:, 1], s5 * (X[:, 2] - X[:, 3]), du ** 2, s10 * dw ** 2], axis=1)
    J = np.empty((m, 4, 4))
    J[:, 0], J[:, 1] = [1.0, 10, 0, 0], [0, 0, s5, -s5]
    J[:, 2], J[:, 3] = 2 * du[:, None] * u, 2 * s10 * dw[:, None] * w
    S = np.zeros((m, 4, 4, 4))
    S[:, 2], S[:, 3] = 2 * np.outer(u, u), 2 * s10 * np.outer(w, w)
    return r, J, S


def wood_residuals(X):
    m = len(X)
    x1, x2, x3, x4 = X.T
    s90, s10 = np.sqrt(90), np.sqrt(10)
    r = np.stack([10 * (x2 - x1 ** 2), 1 - x1, s90 * (x4 - x3 ** 2), 1 - x3, s10 * (x2 + x4 - 2),
                  (x2 - x4) / s10], axis=1)
    J = np.zeros((m, 6, 4))
    J[:, 0, 0], J[:, 0, 1], J[:, 1, 0] = -20 * x1, 10, -1
    J[:, 2, 2], J[:, 2, 3], J[:, 3, 2] = -2 * s90 * x3, s90, -1
    J[:, 4] = [0, s10, 0, s10]
    J[:, 5] = [0, 1 / s10, 0, -1 / s10]
    S = np.zeros((m, 6, 4, 4))
    S[:, 0, 0, 0], S[:, 2, 2, 2] = -20, -2 * s90
    return r, J, S


TIMES = np.linspace(0.0, 3.0, 15)
AMPLITUDES, RATES = np.array([1.0, 2.0, 1.5, 0.5, 1.2]), np.array([0.3, 1.0, 3.0, 0.1, 8.0])


def exponential_truth(n):
    """The parameters of ``sum_j a_j exp(-b_j t)`` (+ c when n is odd) with n parameters."""
    pairs = np.column_stack([AMPLITUDES, RATES])[: n // 2].ravel()
    return np.r_[pairs, 0.7] if n % 2 else pairs


def exponential_residuals(n):
    """Residuals of the fit of ``sum_j a_j exp(-b_j t) (+ c)`` to exact data of
    :func:`exponential_truth` (f* = 0 there)."""
    truth = exponential_truth(n)

    def model(X):
        m = len(X)
        value, J, S = np.zeros((m, TIMES.size)), np.zeros((m, TIMES.size, n)), np.zeros((m, TIMES.size, n, n))
        for j in range(n // 2):
            a, b = X[:, 2 * j, None], X[:, 2 * j + 1, None]
            decay = np.exp(-b * TIMES)
            value += a * decay
            J[:, :, 2 * j], J[:, :, 2 * j + 1] = decay, -a * TIMES * decay
            S[:, :, 2 * j, 2 * j + 1] = S[:, :, 2 * j + 1, 2 * j] = -TIMES * decay
            S[:, :, 2 * j + 1, 2 * j + 1] = a * TIMES ** 2 * decay
        if n % 2:
            value += X[:, -1, None]
            J[:, :, -1] = 1.0
        return value, J, S

    data = model(truth[None])[0]

    def residuals(X):
        value, J, S = model(X)
        return value - data, J, S
    return residuals


ROSENBROCK, BEALE = least_squares(rosenbrock_residuals), least_squares(beale_residuals)
POWELL, WOOD = least_squares(powell_singular_residuals), least_squares(wood_residuals)


def one_row(evaluate):
    """trust-exact's ``fun`` (returning f and g) and ``hess`` from a batch's ``evaluate``."""
    def fun(x):
        f, g, _ = evaluate(x[None])
        return f[0], g[0]
    return fun, (lambda x: evaluate(x[None])[2][0])


def looped(evaluate, X0, **options):
    """trust-exact from each start, on the same derivatives."""
    fun, hess = one_row(evaluate)
    return [minimize_trust_exact(fun, x0, True, hess=hess, **options) for x0 in np.asarray(X0, dtype=float)]


def starts(center, spread, count, seed=0):
    rng = np.random.default_rng(seed)
    center = np.asarray(center, dtype=float)
    return center + spread * rng.uniform(-1, 1, (count, center.size))


def newton_distance(evaluate, x):
    """||H^{-1} g|| at x: the distance to the minimizer Newton's step estimates. At the last
    iterate of a run whose steps converge superlinearly it is the distance to within a factor
    that tends to 1; on a minimizer where f grows as the fourth power (Powell singular's) it is a
    third of it (g ~ 4 s^3, H ~ 12 s^2)."""
    _, g, H = evaluate(np.asarray(x)[None])
    return float(np.linalg.norm(np.linalg.lstsq(H[0], g[0], rcond=None)[0]))


def assert_as_looped(evaluate, batch, loop):
    """Each row as trust-exact's run: success, status, and x within the two runs' distances to
    their minimizer (3 Newton steps each, :func:`newton_distance`) plus rounding."""
    for b, t in zip(batch, loop, strict=True):
        assert (b.success, b.status) == (t.success, t.status), (b.message, t.message)
        if b.success:
            bound = 3 * (newton_distance(evaluate, b.x) + newton_distance(evaluate, t.x)) + 10 * np.finfo(float).eps * (
                1 + np.linalg.norm(t.x))
            assert np.linalg.norm(b.x - t.x) <= bound, (b.x, t.x, bound)


# --- batched == looped ------------------------------------------------------------------------

PROBLEMS = {
    "rosenbrock": (ROSENBROCK, [-1.2, 1.0], 1.5),
    "beale": (BEALE, [1.0, 1.0], 0.8),
    "powell singular": (POWELL, [3.0, -1.0, 0.0, 1.0], 1.0),
    "wood": (WOOD, [-3.0, -1.0, -3.0, -1.0], 1.0),
    "exponential n=3": (least_squares(exponential_residuals(3)), exponential_truth(3), 0.3),
    "exponential n=4": (least_squares(exponential_residuals(4)), exponential_truth(4), 0.2),
}


@pytest.mark.parametrize("name", PROBLEMS)
def test_each_row_is_trust_exact_from_its_start(name):
    evaluate, center, spread = PROBLEMS[name]
    X0 = starts(center, spread, 12)
    batch, loop = minimize_batch(evaluate, X0), looped(evaluate, X0)
    assert_as_looped(evaluate, batch, loop)
    # the same trajectories, but for rounding (eigenvectors here, Cholesky factors there), which
    # may flip a threshold on a row (a ratio near eta) and cost or save it a few iterations
    # (on 150 starts each: at most 4 rows of Wood, by up to 5): the totals agree to 10%
    assert all(b.nfev == b.nit + 1 and t.nfev == t.nit + 1 for b, t in zip(batch, loop))
    assert sum(b.nit for b in batch) == pytest.approx(sum(t.nit for t in loop), rel=0.1)


def test_results_are_scipy_results_with_trust_exact_messages():
    result, = minimize_batch(ROSENBROCK, [[-1.2, 1.0]])
    expected = looped(ROSENBROCK, [[-1.2, 1.0]])[0]
    assert isinstance(result, OptimizeResult) and result.status is Status.SUCCESS
    assert result.message.split(" (")[0] == expected.message.split(" (")[0] == MESSAGES[Status.SUCCESS]
    assert result.nfev == result.njev == result.nhev == result.nit + 1
    f, g, H = ROSENBROCK(result.x[None])
    assert result.fun == f[0] and np.array_equal(result.jac, g[0]) and np.array_equal(result.hess, H[0])


# --- known minima ------------------------------------------------------------------------------

@pytest.mark.parametrize("evaluate, x0, x_star", [
    (ROSENBROCK, [-1.2, 1.0], [1.0, 1.0]),
    (BEALE, [1.0, 1.0], [3.0, 0.5]),
    (WOOD, [-3.0, -1.0, -3.0, -1.0], [1.0, 1.0, 1.0, 1.0]),
] + [(least_squares(exponential_residuals(n)), exponential_truth(n) * 1.05, exponential_truth(n))
     for n in (2, 3, 4, 5, 6)])
def test_known_minima(evaluate, x0, x_star, stopping):
    x_star = np.asarray(x_star, dtype=float)
    X0 = np.array([x0, x_star * 1.02, x0])    # rows need not differ
    results = minimize_batch(evaluate, X0)
    mu = np.linalg.eigvalsh(evaluate(np.array([x_star]))[2][0])[0]
    for result in results:
        assert result.success, result.message
        # the Hessian varies over the last step's length: at least half its value at x* there
        stopping.assert_near_minimizer(result.x, x_star, result.fun, mu / 2)
    assert np.array_equal(results[0].x, results[2].x)


def test_powell_singular_minimum():
    """f is convex with f* = 0 at 0 and a singular Hessian there: f(x) <= g^T x."""
    result, = minimize_batch(POWELL, [[3.0, -1.0, 0.0, 1.0]])
    assert result.success and 0 <= result.fun <= result.jac @ result.x


# --- the hard case and saddles ----------------------------------------------------------------

def saddle_quartic(X):
    """f = x^2 - y^2 + y^4: a saddle at 0, minima at (0, +-1/sqrt 2), f* = -1/4."""
    x, y = X[:, 0], X[:, 1]
    H = np.zeros((len(X), 2, 2))
    H[:, 0, 0], H[:, 1, 1] = 2.0, -2.0 + 12 * y ** 2
    return x ** 2 - y ** 2 + y ** 4, np.stack([2 * x, -2 * y + 4 * y ** 3], axis=1), H


class Recorded:
    """An ``evaluate`` that keeps what it was called with."""

    def __init__(self, evaluate):
        self.evaluate, self.calls = evaluate, []

    def __call__(self, X, rows=None):
        self.calls.append((X.copy(), None if rows is None else rows.copy()))
        return self.evaluate(X)


def test_hard_case_step_completes_along_the_leftmost_eigenvector():
    """At (1, 0): g = (2, 0) orthogonal to the leftmost eigenvector (0, 1) of H = diag(2, -2);
    radius min(||g||, max(1, ||x||)) = 1. lam = 2: p = (-2 / 4, 0) + tau (0, 1), tau =
    sqrt(1 - 1/4) (N&W §4.3.1)."""
    recorded = Recorded(saddle_quartic)
    result, = minimize_batch(recorded, [[1.0, 0.0]])
    first_trial = recorded.calls[1][0][0]
    np.testing.assert_allclose(first_trial, [0.5, np.sqrt(0.75)], rtol=4 * np.finfo(float).eps)
    assert result.success and result.fun == pytest.approx(-0.25, abs=1e-15)
    assert_as_looped(saddle_quartic, [result], looped(saddle_quartic, [[1.0, 0.0]]))


def test_saddle_start_is_left_along_negative_curvature():
    results = minimize_batch(saddle_quartic, [[0.0, 0.0], [1e-3, 0.0]])
    assert all(r.success and r.fun == pytest.approx(-0.25, abs=1e-15) for r in results)
    assert all(abs(r.x[1]) == pytest.approx(1 / np.sqrt(2)) for r in results)
    assert_as_looped(saddle_quartic, results, looped(saddle_quartic, [[0.0, 0.0], [1e-3, 0.0]]))


def test_singular_semidefinite_hessian_takes_newtons_step_on_its_range():
    """f = (x + y - 1)^2, H = 2 [[1, 1], [1, 1]] singular: from anywhere one step reaches the
    minimizers' line (as trust-exact's rounding-shifted factorization does), in one iteration."""
    def evaluate(X):
        s = X[:, 0] + X[:, 1] - 1
        return s ** 2, 2 * np.stack([s, s], axis=1), np.full((len(X), 2, 2), 2.0)
    X0 = [[3.0, -5.0], [0.2, 0.1], [10.0, 10.0]]
    for result, expected in zip(minimize_batch(evaluate, X0), looped(evaluate, X0), strict=True):
        assert result.success and result.nit == expected.nit == 1
        assert result.fun <= (DEFAULT_GTOL / 2) ** 2   # g = 2 s passed the gradient test


def test_secular_steps_solve_the_subproblem_as_more_sorensen():
    rng = np.random.default_rng(3)
    for n in (2, 3, 6):
        A = rng.standard_normal((40, n, n))
        H = A + A.transpose(0, 2, 1) - np.where(np.arange(40) % 2, 3.0, 0.0)[:, None, None] * np.eye(n)
        G, radius = rng.standard_normal((40, n)), rng.uniform(0.05, 1.0, 40)
        values, vectors = np.linalg.eigh(H)
        a, lam = secular_steps(values, np.einsum("mji,mj->mi", vectors, G), radius)
        P = np.einsum("mij,mj->mi", vectors, a)
        for p, l, h, g, r in zip(P, lam, H, G, radius):
            q = MoreSorensen(g, h).solve(r)
            if l > 0:   # on the boundary to the secular tolerance, as More-Sorensen's
                assert abs(np.linalg.norm(p) - r) <= 1e-8 * r
            model = lambda s, g=g, h=h: g @ s + 0.5 * s @ h @ s   # noqa: E731
            # both minimize the model to the secular tolerance: values agree to it
            assert model(p) == pytest.approx(model(q.p), rel=1e-7, abs=1e-12)


def test_secular_steps_lift_a_semidefinite_hessian_as_more_sorensen():
    """H = Q diag(lambda_1, 4) Q^T, lambda_1 within rounding of zero (eigh's error is about eps
    ||H||), g on the range: Newton's step on the range, inside the region, as trust-exact's
    factorization shifted by rounding gives (the hard case's boundary step would move x along the
    null space for nothing); both minimize the model to rounding."""
    Q = np.array([[1.0, -1.0], [1.0, 1.0]]) / np.sqrt(2)
    for lowest in (-1e-17, 0.0, 1e-17):
        H, g = Q @ np.diag([lowest, 4.0]) @ Q.T, Q @ [0.0, -4.0]
        a, lam = secular_steps(np.array([[lowest, 4.0]]), np.array([[0.0, -4.0]]), np.array([2.0]))
        expected = MoreSorensen(g, H).solve(2.0)
        assert lam[0] == 0.0 and not expected.on_boundary
        model = lambda s, g=g, H=H: g @ s + 0.5 * s @ H @ s   # noqa: E731
        assert model(Q @ a[0]) == pytest.approx(model(expected.p), rel=1e-12)


def test_newton_steps_and_definiteness():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 5, 5))
    H = A @ A.transpose(0, 2, 1) + np.eye(5) - np.where(np.arange(30) % 3 == 0, 20.0, 0.0)[:, None, None] * np.eye(5)
    G = rng.standard_normal((30, 5))
    P, definite = newton_steps(H, G)
    assert np.array_equal(definite, np.linalg.eigvalsh(H)[:, 0] > 0) and 0 < definite.sum() < 30
    for p, h, g in zip(P[definite], H[definite], G[definite]):
        np.testing.assert_allclose(h @ p, -g, atol=1e3 * np.finfo(float).eps * np.linalg.cond(h) * np.abs(g).max())


def test_row_wise_gradient_test_is_the_test_of_each_row():
    rng = np.random.default_rng(5)
    X, F, G = rng.standard_normal((8, 3)) * 10, rng.standard_normal(8) * 10, rng.standard_normal((8, 3))
    for test in (GradientTest(), GradientTest(1e-3)):
        assert np.array_equal(test.measures(X, F, G), [test.measure(x, f, g) for x, f, g in zip(X, F, G)])


# --- NaN, the iteration cap, rows leaving ------------------------------------------------------

def log_barrier(X):
    """f = sum(x - log x), minimum at x = 1; NaN for x <= 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        f = (X - np.log(X)).sum(axis=1)
        H = np.einsum("mi,ij->mij", np.where(X > 0, 1 / X ** 2, np.nan), np.eye(X.shape[1]))
        return f, np.where(X > 0, 1 - 1 / X, np.nan), H


def test_nan_at_x0_fails_that_row_only():
    X0 = np.array([[2.0, 3.0], [-1.0, 2.0], [0.5, 0.5]])
    results = minimize_batch(log_barrier, X0)
    assert results[0].success and results[2].success
    bad = results[1]
    expected = looped(log_barrier, X0[1:2])[0]
    assert (bad.success, bad.status, bad.nit, bad.nfev) == (False, Status.NONFINITE, 0, 1)
    assert bad.message == expected.message and bad.message.startswith("The start point is not usable: f(x0) = nan")
    np.testing.assert_array_equal(bad.x, X0[1])
    alone = minimize_batch(log_barrier, X0[[0, 2]])
    assert [r.x.tolist() for r in alone] == [results[0].x.tolist(), results[2].x.tolist()]


def test_nan_hessian_at_x0_fails_that_row_as_trust_exact():
    """H not finite at x0: no step can be computed (status 3), or where x0 passes the gradient
    test no second-order check (status 3 too), with trust-exact's messages; other rows run."""
    def evaluate(X, rows):   # f = x^2 + (y - 2)^2; H NaN in rows 0 and 1
        H = np.where((rows < 2)[:, None, None], np.nan, 2 * np.eye(2))
        return X[:, 0] ** 2 + (X[:, 1] - 2) ** 2, 2 * (X - [0.0, 2.0]), H
    X0 = np.array([[1.0, 2.0], [0.0, 2.0], [1.0, 1.0]])
    results = minimize_batch(evaluate, X0, indexed=True)
    expected = [looped(lambda X, row=row: evaluate(X, np.array([row])), X0[row:row + 1])[0] for row in range(3)]
    assert [r.status for r in results] == [e.status for e in expected] == [3, 3, 0]
    assert [r.message for r in results[:2]] == [e.message for e in expected[:2]]
    assert results[0].message.startswith("The Hessian is not finite at the last iterate")
    assert results[1].message.startswith("The gradient test passed, but the Hessian is not finite")
    assert [r.nit for r in results] == [0, 0, 1]


def test_nan_trial_region_is_left_by_shrinking_the_radius():
    """From x = 10 with radius 100 Newton's step (-90) lands where f is NaN: rejected, the radius
    shrinks until a trial is finite, as in trust-exact."""
    recorded = Recorded(log_barrier)
    X0 = [[10.0, 10.0], [10.0, 0.5]]
    results = minimize_batch(recorded, X0, initial_trust_radius=100.0)
    assert any(np.isnan(log_barrier(X)[0]).any() for X, _ in recorded.calls[1:])
    assert all(r.success for r in results)
    np.testing.assert_allclose(results[0].x, 1.0, atol=1e-7)
    assert_as_looped(log_barrier, results, looped(log_barrier, X0, initial_trust_radius=100.0))


def test_a_trial_whose_hessian_is_not_finite_is_rejected():
    """trust-exact would accept a trial with finite f and g and stop there at once; the batch
    rejects it and shrinks the radius until no step changes x, then reports the lowest f seen."""
    def evaluate(X):
        f, g, H = ROSENBROCK(X)
        H[X[:, 0] > 0.2] = np.nan   # on the way from (-1.2, 1) to (1, 1)
        return f, g, H
    recorded = Recorded(evaluate)
    result, = minimize_batch(recorded, [[-1.2, 1.0]])
    first_nan = next(k for k, (X, _) in enumerate(recorded.calls) if X[0, 0] > 0.2)
    assert result.status is Status.NONFINITE and result.nit > first_nan
    assert result.message.startswith("Trial values or derivatives were not finite until no step")
    assert result.fun == min(evaluate(X)[0][0] for X, _ in recorded.calls)


def test_maxiter():
    X0 = starts([-1.2, 1.0], 0.5, 4)
    results, loop = minimize_batch(ROSENBROCK, X0, maxiter=3), looped(ROSENBROCK, X0, maxiter=3)
    for r, t in zip(results, loop):
        assert (r.status, r.success, r.nit) == (Status.MAXITER, False, 3)
        assert r.message.split(" (")[0] == t.message.split(" (")[0] == MESSAGES[Status.MAXITER]
        np.testing.assert_allclose(r.x, t.x, rtol=1e-8)
    assert [r.status for r in minimize_batch(ROSENBROCK, [[1.0, 1.0], [0.0, 0.0]], maxiter=0)] == [
        Status.SUCCESS, Status.MAXITER]


def test_only_running_rows_are_evaluated():
    """Rows stop at different iterations; each call gets the rows still running, in order."""
    recorded = Recorded(ROSENBROCK)
    X0 = np.vstack([[1.0, 1.0], starts([-1.2, 1.0], 1.0, 5), [0.9, 0.8]])
    results = minimize_batch(lambda X, rows: recorded(X, rows), X0, indexed=True)
    nits = np.array([r.nit for r in results])
    assert len(set(nits)) > 2 and nits[0] == 0
    assert recorded.calls[0][0].shape == X0.shape
    for k, (X, rows) in enumerate(recorded.calls[1:], start=1):
        assert np.array_equal(rows, np.flatnonzero(nits >= k)) and X.shape == (rows.size, 2)
    assert sum(len(X) for X, _ in recorded.calls) == sum(r.nfev for r in results)


def test_indexed_fits_each_row_to_its_own_data():
    rng = np.random.default_rng(6)
    truth = np.column_stack([rng.uniform(1, 2, 5), rng.uniform(0.5, 1.5, 5)])
    data = truth[:, :1] * np.exp(-truth[:, 1:] * TIMES)

    def evaluate(X, rows):
        a, b = X[:, :1], X[:, 1:]
        decay = np.exp(-b * TIMES)
        r = a * decay - data[rows]
        J = np.stack([decay, -a * TIMES * decay], axis=2)
        S = np.zeros((len(X), TIMES.size, 2, 2))
        S[:, :, 0, 1] = S[:, :, 1, 0] = -TIMES * decay
        S[:, :, 1, 1] = a * TIMES ** 2 * decay
        return ((r * r).sum(axis=1), 2 * np.einsum("mki,mk->mi", J, r),
                2 * (np.einsum("mki,mkj->mij", J, J) + np.einsum("mk,mkij->mij", r, S)))
    results = minimize_batch(evaluate, truth * 1.3, indexed=True)
    for row, result in enumerate(results):
        assert result.success
        alone = lambda X, row=row: evaluate(X, np.array([row]))   # noqa: E731
        assert_as_looped(alone, [result], looped(alone, truth[row:row + 1] * 1.3))


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("X0, match", [([1.0, 2.0], "2-D"), ([[1.0, np.nan]], "NaN or inf"),
                                       (np.empty((2, 0)), "n >= 1")])
def test_bad_starts_raise(X0, match):
    with pytest.raises(ValueError, match=match):
        minimize_batch(ROSENBROCK, X0)


@pytest.mark.parametrize("options, match", [({"eta": 0.3}, "eta"), ({"initial_trust_radius": -1.0}, "initial"),
                                            ({"max_trust_radius": 0.0}, "max_trust"), ({"maxiter": 2.5}, "maxiter"),
                                            ({"gtol": -1.0}, "gtol")])
def test_bad_options_raise(options, match):
    with pytest.raises(ValueError, match=match):
        minimize_batch(ROSENBROCK, [[0.0, 0.0]], **options)


def test_evaluate_of_wrong_shapes_raises():
    with pytest.raises(ValueError, match=r"gave H of shape \(1, 2\)"):
        minimize_batch(lambda X: (X[:, 0], X, X), [[0.0, 0.0]])
    with pytest.raises(ValueError, match="tuple"):
        minimize_batch(lambda X: X[:, 0], [[0.0, 0.0]])


def test_empty_batch():
    assert minimize_batch(ROSENBROCK, np.empty((0, 2))) == []


def test_the_batchs_rules_are_trust_exacts_row_by_row():
    """The array forms of the trust-region rules (beside their scalar twins in trust_region) give,
    row by row, what the scalar rules give: ratios, backtracking fractions, radius updates, the
    saddle's escape radius and the negligible-step test, NaN, infinities and ties included."""
    from optimizers.subproblems import SubproblemSolution
    from optimizers.trust_region import (
        RadiusControl,
        _negligible,
        backtrack_fraction,
        backtrack_fractions,
        negligible_rows,
        reduction_ratio,
        reduction_ratios,
    )
    rng = np.random.default_rng(4)
    m = 400
    f = rng.choice([1.0, -3.0, 1e-20, 1e8], m) * rng.random(m)
    f_trial = f - rng.choice([1.0, -1.0, 0.0, 1e-17], m) * rng.random(m)
    f_trial[:12] = [np.nan, np.inf, -np.inf] * 4
    decrease = rng.choice([1.0, 0.0, -1e-18, 1e-16], m) * rng.random(m)
    slope = rng.standard_normal(m)
    rho = np.concatenate([[np.nan, -np.inf, 0.25, 0.75, 0.9, 0.2499], rng.uniform(-0.5, 1.2, m - 6)])
    radius, limit = rng.uniform(0.1, 2.0, m), rng.choice([1.0, 100.0], m)
    on_boundary, step_norm = rng.random(m) < 0.5, rng.uniform(0.0, 3.0, m)
    backtrack = backtrack_fractions(f, f_trial, slope)
    np.testing.assert_array_equal(reduction_ratios(f, f_trial, decrease),
                                  [reduction_ratio(*row) for row in zip(f, f_trial, decrease)])
    np.testing.assert_array_equal(backtrack, [backtrack_fraction(*row) for row in zip(f, f_trial, slope)])
    looped = []
    for k in range(m):
        control = RadiusControl(radius[k], limit[k])
        control.update(rho[k], SubproblemSolution(np.zeros(1), 0.0, on_boundary[k]), step_norm[k], backtrack[k])
        looped.append(control.value)
    np.testing.assert_array_equal(RadiusControl.updated(radius, limit, rho, on_boundary, step_norm, backtrack),
                                  looped)
    curvature = -rng.uniform(1e-12, 10.0, m)
    escaped = []
    for k in range(m):
        control = RadiusControl(radius[k], limit[k])
        control.leave_saddle(f[k], curvature[k])
        escaped.append(control.value)
    np.testing.assert_array_equal(RadiusControl.left_saddle(radius, limit, f, curvature), escaped)
    X = rng.standard_normal((m, 3)) * rng.choice([1.0, 1e8, 0.0], (m, 1))
    P = X * rng.choice([1e-17, 1e-15, 1e-3], (m, 1)) * rng.choice([1.0, 0.0], (m, 3))
    p_norm = np.linalg.norm(P, axis=1)
    np.testing.assert_array_equal(negligible_rows(P, p_norm, X),
                                  [_negligible(p, n, x) for p, n, x in zip(P, p_norm, X)])
