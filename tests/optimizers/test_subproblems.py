"""Trust-region and cubic subproblem solvers against dense eigendecomposition references."""
import numpy as np
import pytest
import scipy.linalg
from scipy.optimize import brentq

from optimizers.krylov import Lanczos, leftmost_curvature, symmetric_eigenpairs
from optimizers.subproblems import (
    Dogleg,
    LanczosCubic,
    LanczosGLTR,
    MoreSorensen,
    SteihaugCG,
    _NewtonPoint,
    boundary_steps,
    diagonal_shifts,
    matrix_shifts,
    solve_secular,
)


def model(H, g, p):
    return g @ p + 0.5 * p @ H @ p


def secular_reference(H, g, target):
    """Exact minimizer from the eigendecomposition: p(lam) = -(H + lam I)^{-1} g with
    ||p(lam)|| = target(lam) and lam >= max(0, -lambda_1), by bisection; hard case explicit."""
    lams, V = np.linalg.eigh(H)
    gamma = V.T @ g
    lo = max(0.0, -lams[0])
    rest = lams > lams[0] + 1e-9

    def pnorm(lam):
        return np.linalg.norm(gamma / (lams + lam))

    if np.all(np.abs(gamma[~rest]) < 1e-13):  # candidate hard case at lam = lo
        p_rest = -V[:, rest] @ (gamma[rest] / (lams[rest] + lo))
        r = target(lo)
        if np.linalg.norm(p_rest) <= r and lams[0] < 0:
            return p_rest + np.sqrt(r * r - p_rest @ p_rest) * V[:, 0]
        if lo == 0.0 and np.linalg.norm(p_rest) <= r:
            return p_rest
    hi = lo + 1.0
    while pnorm(hi) > target(hi):
        hi *= 2.0
    lam = brentq(lambda lam: pnorm(lam) - target(lam), lo + 1e-14 * max(1.0, lo), hi,
                 xtol=1e-15, rtol=1e-15)
    return -V @ (gamma / (lams + lam))


def trs_reference(H, g, radius):
    lams, V = np.linalg.eigh(H)
    if lams[0] > 0:
        newton = -np.linalg.solve(H, g)
        if np.linalg.norm(newton) <= radius:
            return newton
    return secular_reference(H, g, lambda lam: radius)


def cauchy_point(H, g, radius):
    gnorm = np.linalg.norm(g)
    curvature = g @ H @ g
    tau = 1.0 if curvature <= 0 else min(gnorm ** 3 / (radius * curvature), 1.0)
    return -tau * radius / gnorm * g


def instance(seed):
    """A random instance: positive definite, indefinite, or hard case (g orthogonal to the
    leftmost eigenvector), with a radius on a log scale."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    A = rng.standard_normal((n, n))
    kind = ("definite", "indefinite", "hard")[seed % 3]
    H = A @ A.T + 0.1 * np.eye(n) if kind == "definite" else A + A.T
    g = rng.standard_normal(n)
    if kind == "hard":
        u = np.linalg.eigh(H)[1][:, 0]
        g -= (u @ g) * u
    return H, g, 10 ** rng.uniform(-2, 1.5), kind


SEEDS = range(60)


@pytest.mark.parametrize("seed", SEEDS)
def test_more_sorensen_matches_the_exact_solution(seed):
    H, g, radius, _ = instance(seed)
    solution = MoreSorensen(g, H).solve(radius)
    best = model(H, g, trs_reference(H, g, radius))
    assert np.linalg.norm(solution.p) <= radius * (1 + 1e-8)
    assert model(H, g, solution.p) <= best + 1e-9 * max(1.0, abs(best))
    assert solution.decrease == pytest.approx(-model(H, g, solution.p), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_secular_solution_on_diagonal_shifts_is_the_exact_one_in_eigenvector_coordinates(seed):
    """H = V diag(values) V^T: solve_secular on diagonal_shifts(values) and V^T g, rotated back by V,
    solves the trust-region subproblem of H and g (Levenberg-Marquardt's use, with J^T J's
    eigenvalues s^2 from the SVD of J), definite, indefinite and hard case alike."""
    H, g, radius, _ = instance(seed)
    values, V = np.linalg.eigh(H)
    step, _ = solve_secular(diagonal_shifts(values), V.T @ g, radius=radius)
    p, best = V @ step, model(H, g, trs_reference(H, g, radius))
    assert np.linalg.norm(p) <= radius * (1 + 1e-8)
    assert model(H, g, p) <= best + 1e-9 * max(1.0, abs(best))


@pytest.mark.parametrize("seed", SEEDS)
def test_gltr_matches_the_exact_solution_except_in_the_hard_case(seed):
    H, g, radius, kind = instance(seed)
    solution = LanczosGLTR(g, lambda v: H @ v, rtol=1e-12).solve(radius)
    assert np.linalg.norm(solution.p) <= radius * (1 + 1e-8)
    assert solution.decrease == pytest.approx(-model(H, g, solution.p), rel=1e-8, abs=1e-12)
    value, best = model(H, g, solution.p), model(H, g, trs_reference(H, g, radius))
    if kind == "hard":  # the Krylov space of g misses the leftmost eigenvector (GLTR §5)
        assert value <= model(H, g, cauchy_point(H, g, radius)) + 1e-12
    else:
        assert value <= best + 1e-8 * max(1.0, abs(best))


@pytest.mark.parametrize("solver", ["steihaug", "dogleg"])
@pytest.mark.parametrize("seed", SEEDS)
def test_inexact_solvers_achieve_the_cauchy_decrease(solver, seed):
    H, g, radius, _ = instance(seed)
    step = (SteihaugCG(g, lambda v: H @ v) if solver == "steihaug" else Dogleg(g, H)).solve(radius)
    cauchy = model(H, g, cauchy_point(H, g, radius))
    assert np.linalg.norm(step.p) <= radius * (1 + 1e-10)
    assert model(H, g, step.p) <= cauchy + 1e-12 * max(1.0, abs(cauchy))
    assert step.decrease == pytest.approx(-model(H, g, step.p), rel=1e-8, abs=1e-12)


def positive_definite(n=6, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    return A @ A.T + np.eye(n), rng.standard_normal(n)


@pytest.mark.parametrize("make", [
    lambda g, H: SteihaugCG(g, lambda v: H @ v, rtol=1e-12),
    lambda g, H: LanczosGLTR(g, lambda v: H @ v, rtol=1e-12),
    MoreSorensen, Dogleg])
def test_interior_newton_step_for_a_large_radius(make):
    H, g = positive_definite()
    step = make(g, H).solve(1e6)
    assert not step.on_boundary
    np.testing.assert_allclose(step.p, -np.linalg.solve(H, g), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda g, H: SteihaugCG(g, lambda v: H @ v), lambda g, H: LanczosGLTR(g, lambda v: H @ v),
    MoreSorensen, Dogleg])
def test_tiny_radius_gives_the_steepest_descent_step(make):
    H, g = positive_definite()
    radius = 1e-8
    step = make(g, H).solve(radius)
    assert step.on_boundary
    np.testing.assert_allclose(step.p, -radius * g / np.linalg.norm(g), rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda g, H: SteihaugCG(g, lambda v: H @ v), lambda g, H: LanczosGLTR(g, lambda v: H @ v),
    MoreSorensen, Dogleg])
def test_zero_gradient_follows_negative_curvature_to_the_boundary(make):
    H = np.diag([3.0, -2.0, 1.0, 0.5])
    step = make(np.zeros(4), H).solve(0.7)
    assert np.linalg.norm(step.p) == pytest.approx(0.7)
    # within 5% of the eigenpoint: Steihaug stops at a Ritz vector with a 10% residual
    assert model(H, np.zeros(4), step.p) == pytest.approx(0.5 * -2.0 * 0.49, rel=0.05)
    assert step.decrease == pytest.approx(-model(H, np.zeros(4), step.p))


@pytest.mark.parametrize("make", [
    lambda g, H: SteihaugCG(g, lambda v: H @ v), lambda g, H: LanczosGLTR(g, lambda v: H @ v),
    MoreSorensen, Dogleg])
@pytest.mark.parametrize("H", [np.diag([2.0, 0.0, 1.0]), np.zeros((3, 3))], ids=["psd", "zero"])
def test_zero_gradient_and_positive_semidefinite_hessian_gives_no_step(make, H):
    step = make(np.zeros(3), H).solve(1.0)
    assert np.all(step.p == 0) and step.decrease == 0


def test_dogleg_on_an_indefinite_hessian_takes_the_better_of_cauchy_and_eigenpoint():
    H, g, radius = np.diag([-1.0, 2.0]), np.array([0.1, 1.0]), 1.0
    step = Dogleg(g, H).solve(radius)
    eigenpoint = np.array([-1.0, 0.0])  # downhill along the leftmost eigenvector
    candidates = [cauchy_point(H, g, radius), eigenpoint]
    assert model(H, g, step.p) == pytest.approx(min(model(H, g, p) for p in candidates))
    np.testing.assert_allclose(step.p, eigenpoint)


def test_steihaug_reuses_its_path_for_a_smaller_radius():
    H, g = positive_definite(n=8, seed=3)
    products = []

    def hessp(v):
        products.append(1)
        return H @ v

    solver = SteihaugCG(g, hessp)
    solver.solve(10.0)
    used = len(products)
    smaller = solver.solve(0.05)
    assert len(products) == used
    fresh = SteihaugCG(g, lambda v: H @ v).solve(0.05)
    np.testing.assert_allclose(smaller.p, fresh.p)
    assert smaller.decrease == pytest.approx(fresh.decrease)


def test_gltr_reuses_its_krylov_space_for_a_smaller_radius():
    H, g, radius, _ = instance(4)
    products = []

    def hessp(v):
        products.append(1)
        return H @ v

    solver = LanczosGLTR(g, hessp, rtol=1e-12)
    solver.solve(radius)
    used = len(products)
    smaller = solver.solve(radius / 10)
    assert len(products) <= g.size and used <= g.size
    best = model(H, g, trs_reference(H, g, radius / 10))
    assert model(H, g, smaller.p) == pytest.approx(best, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("definite", [True, False])
def test_newton_point_recurrences_match_the_solution_of_the_tridiagonal(definite):
    """h_k = -||g|| T_k^{-1} e_1 at every k: its last entry and norm from the recurrences equal
    those of a dense solve; positive definiteness is lost exactly where T_k's is (for good: the
    leftmost Ritz value only falls as the space grows)."""
    rng = np.random.default_rng(11)
    Q = np.linalg.qr(rng.standard_normal((9, 9)))[0]
    H = Q @ np.diag(np.linspace(0.5 if definite else -0.5, 4.0, 9)) @ Q.T
    g = rng.standard_normal(9)
    lanczos = Lanczos(lambda v: H @ v, g).run(9)
    point = _NewtonPoint(np.linalg.norm(g))
    for k in range(lanczos.size):
        point.grow(*lanczos.coefficients(k))
        beta = lanczos.beta[:k]
        T = np.diag(lanczos.alpha[:k + 1]) + np.diag(beta, 1) + np.diag(beta, -1)
        assert point.positive == (np.linalg.eigvalsh(T)[0] > 0)
        if point.positive:
            h = np.linalg.solve(T, -np.linalg.norm(g) * np.eye(k + 1)[0])
            assert point.last == pytest.approx(h[-1], rel=1e-10)
            assert point.norm2 == pytest.approx(h @ h, rel=1e-10)
    assert point.positive == definite


@pytest.mark.parametrize("H", [np.array([[0.0, 1.0], [1.0, 0.0]]),
                               np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, -1.0]])], ids=["2x2", "3x3"])
def test_gltr_with_a_zero_pivot_solves_on_the_tridiagonal(H):
    """g^T H g = 0: the first Lanczos pivot alpha_1 is exactly 0, so T_1 has no Newton point (it
    raised ZeroDivisionError where a BLAS rounded a pivot to 0: trust-krylov on Powell's badly
    scaled function with OpenBLAS' Prescott kernel). The tridiagonal subproblem answers instead."""
    g = np.eye(len(H))[0]
    for radius in (0.1, 1.0, 10.0):
        solution = LanczosGLTR(g, lambda v: H @ v, rtol=1e-12).solve(radius)
        best = model(H, g, trs_reference(H, g, radius))
        assert np.linalg.norm(solution.p) <= radius * (1 + 1e-8)
        assert model(H, g, solution.p) <= best + 1e-10 * max(1.0, abs(best))
    point = _NewtonPoint(1.0)
    point.grow(0.0, 0.0)
    point.grow(2.0, 1.0)                 # nothing to follow once a pivot is not positive
    assert not point.positive and point.size == 2


def cubic(H, g, sigma, p):
    return model(H, g, p) + sigma / 3 * np.linalg.norm(p) ** 3


@pytest.mark.parametrize("seed", SEEDS)
def test_lanczos_cubic_matches_the_exact_cubic_minimizer(seed):
    H, g, radius, kind = instance(seed)
    sigma = 1.0 / radius
    step = LanczosCubic(g, lambda v: H @ v, rtol=1e-12).solve(sigma)
    exact = secular_reference(H, g, lambda lam: lam / sigma)
    assert step.decrease == pytest.approx(-cubic(H, g, sigma, step.p), rel=1e-8, abs=1e-12)
    value, best = cubic(H, g, sigma, step.p), cubic(H, g, sigma, exact)
    if kind == "hard":
        assert value < 0
    else:
        assert value <= best + 1e-8 * max(1.0, abs(best))


def test_cubic_with_zero_gradient_steps_along_negative_curvature():
    H, sigma = np.diag([1.0, -3.0, 2.0]), 2.0
    step = LanczosCubic(np.zeros(3), lambda v: H @ v).solve(sigma)
    assert np.linalg.norm(step.p) == pytest.approx(3.0 / sigma)  # ||p|| = -lambda_1 / sigma
    assert abs(step.p[1]) == pytest.approx(1.5)


def test_boundary_steps_reach_the_sphere():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p, d = rng.standard_normal(5) * 0.1, rng.standard_normal(5)
        low, high = boundary_steps(p, d, 2.0)
        assert low < 0 < high
        for tau in (low, high):
            assert np.linalg.norm(p + tau * d) == pytest.approx(2.0)


def test_leftmost_curvature_estimates_the_smallest_eigenvalue():
    H = np.diag(np.linspace(-1.0, 5.0, 30))
    theta, u, scale = leftmost_curvature(lambda v: H @ v, 30, 30)
    assert -1.0 <= theta < -0.95  # a Ritz value: stops once its residual is 10% of |theta|
    assert u @ H @ u == pytest.approx(theta) and np.linalg.norm(u) == pytest.approx(1.0)
    assert 4.5 < scale <= 5.0


@pytest.mark.parametrize("make", [MoreSorensen, Dogleg,
                                  lambda g, H: LanczosGLTR(g, lambda v: H @ v)])
def test_non_finite_hessian_gives_a_non_finite_step(make):
    H = np.array([[1.0, np.nan], [np.nan, 1.0]])
    assert not np.all(np.isfinite(make(np.ones(2), H).solve(1.0).p))


def test_dense_shifted_solves_are_lapacks_potrs_bit_for_bit_without_scipys_wrappers(monkeypatch):
    """The dense shifted solves (trust-exact's secular iterations, Newton's Cholesky shift) call
    LAPACK's potrs directly: the numbers of scipy's cho_solve, which is not entered."""
    import scipy.linalg

    from optimizers import subproblems
    rng = np.random.default_rng(0)
    for n in (1, 3, 8):
        A = rng.standard_normal((n, n))
        H, b, lam = A @ A.T - 0.5 * np.eye(n), rng.standard_normal(n), 2.0 + n
        factors = scipy.linalg.cholesky(H + lam * np.eye(n))
        expected = scipy.linalg.cho_solve((factors, False), b)
        for module in (scipy.linalg, scipy.linalg._decomp_cholesky, subproblems):    # not called
            monkeypatch.setattr(module, "cho_solve", None, raising=False)
        np.testing.assert_array_equal(subproblems.matrix_shifts(H).factor(lam)(b), expected)
        monkeypatch.undo()


@pytest.mark.parametrize("n", [1, 2, 5, 40, 150])
def test_symmetric_eigenpairs_are_scipys_eigh_bit_for_bit(n):
    """The direct syevr call stands in for scipy.linalg.eigh (full, and its leftmost pair): the same
    driver and workspace give the same bits, so the iterates that depend on them do not change
    (150 is past LAPACK's blocking crossover, where the workspace decides the reduction)."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    A = A + A.T
    values, vectors = symmetric_eigenpairs(A)
    expected_values, expected_vectors = scipy.linalg.eigh(A)
    assert np.array_equal(values, expected_values) and np.array_equal(vectors, expected_vectors)
    value, vector = symmetric_eigenpairs(A, leftmost=True)
    expected_value, expected_vector = scipy.linalg.eigh(A, subset_by_index=[0, 0])
    assert np.array_equal(value, expected_value) and np.array_equal(vector, expected_vector)
    assert np.allclose(A @ vector[:, 0], value[0] * vector[:, 0], atol=1e-12 * np.abs(values).max())


@pytest.mark.parametrize("order", ["C", "F"])
def test_dense_shifts_frobenius_norm_is_numpys_bit_for_bit(order):
    """The Frobenius bound of the secular bracket is np.linalg.norm(H)'s number (the same sum of
    squares in memory order), so the bracket, and the steps, do not change."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 64):
        A = rng.standard_normal((n, n))
        H = np.asarray(A + A.T, order=order)
        assert matrix_shifts(H).frobenius == float(np.linalg.norm(H))
