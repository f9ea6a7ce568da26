"""Sparse Hessians in the optimizers: the LDL^T that tells positive definite matrices from the
others, the rule that picks the sparse path, and Newton, trust-exact and dogleg on sparse
matrices against the dense path (the same iterates) and against eigendecompositions."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import rosen, rosen_der, rosen_hess
from test_subproblems import SEEDS, instance, model, trs_reference

import optimizers
import optimizers.trust_region
from optimizers.krylov import clearly_negative, dense_leftmost_curvature
from optimizers.objective import Status
from optimizers.sparse import (
    EIGEN_RESIDUAL,
    LDLFactorization,
    dense_reason,
    norm_bound,
    sparse_leftmost_curvature,
    sparse_leftmost_eigenpair,
    symmetric_csc,
)
from optimizers.subproblems import Dogleg, MoreSorensen


def rosen_hess_sparse(x):
    """scipy's rosen_hess as a tridiagonal CSC matrix (no dense n x n)."""
    diagonal = np.zeros(x.size)
    diagonal[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]
    return scipy.sparse.diags([off, diagonal, off], [-1, 0, 1], format="csc")


def random_symmetric(n: int, density: float, seed: int) -> scipy.sparse.csc_matrix:
    rng = np.random.default_rng(seed)
    a = scipy.sparse.random(n, n, density=density, random_state=rng, format="csc")
    return symmetric_csc(a + a.T)


@pytest.mark.parametrize("seed", range(12))
def test_ldl_tells_positive_definite_from_not_as_the_eigenvalues_do(seed):
    h = random_symmetric(40, 0.08, seed)
    eigenvalues = np.linalg.eigvalsh(h.toarray())
    ldl = LDLFactorization()
    scale = np.abs(eigenvalues).max()
    for shift in (-eigenvalues[0] + 0.05 * scale, -eigenvalues[0] - 0.05 * scale, -eigenvalues[-1] - 1.0):
        factor = ldl.factor(h, shift)
        assert factor.positive_definite == (eigenvalues[0] + shift > 0)
        if factor.positive_definite:
            b = np.random.default_rng(seed).standard_normal(40)
            shifted = h.toarray() + shift * np.eye(40)
            np.testing.assert_allclose(shifted @ factor.solve(b), b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
            # Sylvester: as many positive pivots as positive eigenvalues
            assert np.sum(factor.pivots > 0) == np.sum(eigenvalues + shift > 0)


def path_laplacian(n: int) -> scipy.sparse.csc_matrix:
    """The Hessian of sum((x[1:] - x[:-1])^2) / 2: singular (null vector ones), semidefinite, and its
    last LDL^T pivot exactly 0 (every pivot is 1 until then)."""
    diagonal = np.full(n, 2.0)
    diagonal[[0, -1]] = 1.0
    return scipy.sparse.diags([np.full(n - 1, -1.0), diagonal, np.full(n - 1, -1.0)], [-1, 0, 1], format="csc")


def test_ldl_takes_a_singular_semidefinite_matrix_with_a_rounding_shift_and_refuses_the_others():
    """A pivot within rounding of zero (qdldl stops at an exact 0) has the matrix factored again
    at most 2 r higher, r = n eps max|h_ii| (rounding_shift): definite, its solve that of H + shift I."""
    ldl = LDLFactorization()
    for h in (scipy.sparse.csc_matrix(np.ones((2, 2))), path_laplacian(30), 2.0 * path_laplacian(30)):
        n, rounding = h.shape[0], h.shape[0] * np.finfo(float).eps * np.abs(h.diagonal()).max()
        factor = ldl.factor(h)
        assert factor.positive_definite and 0 < factor.shift <= 2 * rounding
        b = np.random.default_rng(n).standard_normal(n)
        shifted = h.toarray() + factor.shift * np.eye(n)
        # a backward-stable solve: residual at most ~ n eps ||A|| ||x||
        x = factor.solve(b)
        assert np.linalg.norm(shifted @ x - b) <= 1e3 * n * np.finfo(float).eps * norm_bound(h) * np.linalg.norm(x)
    zero_diagonal = scipy.sparse.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))   # indefinite: -1, 1
    assert not ldl.factor(zero_diagonal).positive_definite       # no stored diagonal: analysed anyway
    assert ldl.factor(zero_diagonal, shift=1.5).positive_definite
    for zero in (scipy.sparse.csc_matrix((3, 3)), scipy.sparse.diags(np.zeros(3), format="csc")):
        assert not ldl.factor(zero).positive_definite           # nothing to scale a rounding shift by
        np.testing.assert_array_equal(ldl.factor(zero, shift=2.0).solve(np.ones(3)), 0.5)
    nan = scipy.sparse.csc_matrix(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    assert not ldl.factor(nan).positive_definite
    first = ldl.factor(scipy.sparse.identity(3, format="csc"))
    ldl.factor(scipy.sparse.identity(3, format="csc"), shift=1.0)
    with pytest.raises(RuntimeError, match="replaced"):
        first.solve(np.ones(3))


def test_ldl_reuses_its_analysis_while_the_pattern_stays_and_redoes_it_when_it_changes():
    ldl = LDLFactorization()
    x = np.linspace(0.5, 1.5, 30)
    for point in (x, x + 0.1, 2 * x):       # one pattern: numeric refactorizations
        h = rosen_hess_sparse(point)
        factor = ldl.factor(h, 10.0)
        np.testing.assert_allclose(factor.solve(h @ x + 10.0 * x), x, rtol=1e-9)
    arrow = scipy.sparse.lil_matrix((30, 30))
    arrow.setdiag(4.0)
    arrow[-1, :] = arrow[:, -1] = 1.0
    arrow[-1, -1] = 40.0
    arrow = arrow.tocsc()
    np.testing.assert_allclose(arrow @ ldl.factor(arrow).solve(np.ones(30)), np.ones(30), rtol=1e-12)


def test_the_rule_of_the_sparse_path():
    assert dense_reason(10 ** 4, 3 * 10 ** 4, None) is None
    assert "below 1,000" in dense_reason(999, 999, None)
    assert "5% dense" in dense_reason(1000, 50_000, None) and dense_reason(1000, 49_999, None) is None
    assert dense_reason(10, 100, True) is None
    assert dense_reason(10 ** 5, 10 ** 5, False) == "options['sparse'] is False"


def test_symmetric_csc_averages_an_unsymmetric_matrix_and_keeps_a_symmetric_pattern():
    a = scipy.sparse.csc_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    np.testing.assert_array_equal(symmetric_csc(a).toarray(), [[1.0, 1.0], [1.0, 3.0]])
    explicit = scipy.sparse.csc_matrix((np.array([2.0, 0.0, 0.0, 2.0]), np.array([0, 1, 0, 1]),
                                        np.array([0, 2, 4])), shape=(2, 2))
    assert symmetric_csc(explicit).nnz == 4          # explicit zeros of the pattern stay


@pytest.mark.parametrize("n", [60, 520])   # dense eigh, then shift-invert Lanczos
def test_the_sparse_second_order_check(n):
    rng = np.random.default_rng(n)
    definite = rosen_hess_sparse(np.ones(n))
    theta, u, scale = sparse_leftmost_curvature(definite, LDLFactorization())
    assert theta >= 0.0 and scale >= np.linalg.norm(definite.toarray(), 2) * (1 - 1e-12)
    indefinite = symmetric_csc(definite - scipy.sparse.diags(rng.uniform(0, 1, n) + 1000.0 * (np.arange(n) == 3)))
    lowest = np.linalg.eigvalsh(indefinite.toarray())[0]
    assert lowest < 0
    theta, u, scale = sparse_leftmost_curvature(indefinite, LDLFactorization())
    assert theta == pytest.approx(lowest, rel=1e-6)
    assert np.linalg.norm(u) == pytest.approx(1.0) and u @ indefinite @ u == pytest.approx(theta, rel=1e-6)
    assert sparse_leftmost_curvature(indefinite.multiply(np.nan).tocsc(), LDLFactorization()) is None


@pytest.mark.parametrize("n", [60, 520])
def test_the_sparse_second_order_check_passes_zero_and_singular_semidefinite_hessians(n):
    """H = 0 (sum((x - 1)^4) at its minimizer; an empty pattern: a constant) and a singular
    semidefinite H have no clearly negative curvature, as the dense check finds."""
    for h in (scipy.sparse.diags(np.zeros(n), format="csc"), scipy.sparse.csc_matrix((n, n)), path_laplacian(n)):
        theta, u, scale = sparse_leftmost_curvature(h, LDLFactorization())
        assert not clearly_negative(theta, scale)
        dense = dense_leftmost_curvature(h.toarray())
        assert not clearly_negative(dense[0], dense[2])


def shifted(h, shift):
    return symmetric_csc(h + shift * scipy.sparse.identity(h.shape[0]))


def repeated_blocks(copies: int, size: int) -> scipy.sparse.csc_matrix:
    """Block-diagonal copies of -path_laplacian(size) + 1: every eigenvalue repeated ``copies``
    times, the leftmost one too."""
    return shifted(scipy.sparse.block_diag([-path_laplacian(size)] * copies), 1.0)


LEFTMOST_CASES = {
    "indefinite band": lambda: rosen_hess_sparse(np.full(1500, 0.5)),      # lambda_1, lambda_2 1e-3 apart
    "indefinite, random point": lambda: rosen_hess_sparse(np.random.default_rng(2).uniform(-1.5, 1.5, 2000)),
    "positive definite": lambda: rosen_hess_sparse(np.ones(1500)),
    "singular semidefinite": lambda: path_laplacian(2000),
    "negated Laplacian": lambda: -path_laplacian(1500),
    "zero": lambda: scipy.sparse.csc_matrix((1500, 1500)),
    "repeated leftmost eigenvalue": lambda: repeated_blocks(30, 50),
    "cluster 1e-9 wide": lambda: shifted(scipy.sparse.diags(np.r_[-1.0, -1 + 1e-9, np.linspace(0, 1e3, 1498)])
                                         + 1e-3 * (path_laplacian(1500) - scipy.sparse.diags(
                                             path_laplacian(1500).diagonal())), 0.0),
    "grid, shifted": lambda: shifted(scipy.sparse.kronsum(path_laplacian(40), path_laplacian(50)), -1.0),
}


@pytest.mark.parametrize("case", LEFTMOST_CASES)
def test_the_leftmost_eigenpair_of_a_sparse_matrix_is_eighs(case):
    """Shift-invert Lanczos against scipy's dense eigh: theta = u^T H u exactly, its residual at
    most EIGEN_RESIDUAL ||H||, and theta within that residual (plus the shifts' rounding margin
    n eps ||H||) above lambda_1, which the search confirms (Kato's bound and a definite
    factorization below); u is lambda_1's eigenvector to within residual / gap (Davis-Kahan) where
    lambda_1 is simple."""
    h = symmetric_csc(LEFTMOST_CASES[case]())
    n, scale = h.shape[0], max(norm_bound(h), np.finfo(float).tiny)
    values, vectors = np.linalg.eigh(h.toarray())
    theta, u = sparse_leftmost_eigenpair(h)
    residual = np.linalg.norm(h @ u - theta * u)
    margin = n * np.finfo(float).eps * scale
    assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-14) and theta == pytest.approx(u @ h @ u, abs=margin)
    assert residual <= EIGEN_RESIDUAL * scale
    assert values[0] - margin <= theta <= values[0] + residual + 2 * margin
    gap = values[1] - values[0]
    if gap > 1e-6 * scale:
        v = vectors[:, 0] * np.sign(u @ vectors[:, 0])
        assert np.linalg.norm(u - v) <= 2 * (residual + margin) / gap


@pytest.mark.parametrize("seed", SEEDS)
def test_more_sorensen_on_a_sparse_matrix_matches_the_exact_solution(seed):
    H, g, radius, _ = instance(seed)
    solution = MoreSorensen(g, symmetric_csc(H)).solve(radius)
    best = model(H, g, trs_reference(H, g, radius))
    assert np.linalg.norm(solution.p) <= radius * (1 + 1e-8)
    assert model(H, g, solution.p) <= best + 1e-9 * max(1.0, abs(best))
    dense = MoreSorensen(g, H).solve(radius)
    np.testing.assert_allclose(solution.p, dense.p, rtol=1e-6, atol=1e-8 * max(1.0, radius))


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_dogleg_on_a_sparse_matrix_is_the_dense_one(seed):
    H, g, radius, _ = instance(seed)
    sparse, dense = Dogleg(g, symmetric_csc(H)).solve(radius), Dogleg(g, H).solve(radius)
    np.testing.assert_allclose(sparse.p, dense.p, rtol=1e-8, atol=1e-10 * max(1.0, radius))


EXTENDED = np.tile([-1.2, 1.0], 6)   # n = 12, from Rosenbrock's start: indefinite Hessians on the way


@pytest.mark.parametrize("method", ["newton", "trust_exact", "dogleg"])
def test_sparse_runs_take_the_dense_runs_iterates(method):
    minimize = getattr(optimizers, f"minimize_{method}")
    sparse = minimize(rosen, EXTENDED, rosen_der, hess=rosen_hess_sparse, sparse=True)
    dense = minimize(rosen, EXTENDED, rosen_der, hess=rosen_hess)
    assert sparse.sparse and not dense.sparse and sparse.success and dense.success
    assert sparse.nit == dense.nit and sparse.nhev == dense.nhev
    np.testing.assert_allclose(sparse.history["x"], dense.history["x"], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["newton", "trust_exact"])
def test_sparse_runs_with_bounds_take_the_dense_runs_iterates(method):
    lower, upper = np.zeros(12), np.full(12, np.inf)
    lower[5], upper[0] = 1.1, 0.9
    minimize = getattr(optimizers, f"minimize_{method}")
    sparse = minimize(rosen, EXTENDED, rosen_der, hess=rosen_hess_sparse, sparse=True, bounds=(lower, upper))
    dense = minimize(rosen, EXTENDED, rosen_der, hess=rosen_hess, bounds=(lower, upper))
    assert sparse.sparse and sparse.nit == dense.nit and sparse.status == dense.status
    np.testing.assert_allclose(sparse.history["x"], dense.history["x"], rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(sparse.active_mask, dense.active_mask)


def test_a_sparse_hessian_is_used_as_one_from_1000_variables_on():
    x0 = np.full(1000, 1.2)
    result = optimizers.minimize_newton(rosen, x0, rosen_der, hess=rosen_hess_sparse)
    assert result.success and result.sparse and result.nit == 8
    np.testing.assert_allclose(result.x, 1.0, rtol=1e-8)
    # one dense iteration is enough to see the choice
    small = optimizers.minimize_newton(rosen, x0[:999], rosen_der, hess=rosen_hess_sparse, maxiter=1)
    assert not small.sparse and "below 1,000" in small.dense_reason
    off = optimizers.minimize_trust_exact(rosen, x0, rosen_der, hess=rosen_hess_sparse, sparse=False, maxiter=1)
    assert not off.sparse and off.dense_reason == "options['sparse'] is False"
    np.testing.assert_allclose(off.x, optimizers.minimize_trust_exact(
        rosen, x0, rosen_der, hess=rosen_hess_sparse, maxiter=1).x, rtol=1e-10)


def test_newton_leaves_a_saddle_with_a_sparse_hessian():
    """f = sum(x^4/4 - x^2/2) + chain coupling has a saddle at 0: the second-order check on the
    sparse Hessian (ARPACK at n = 600) finds it and Newton leaves along its eigenvector."""
    n = 600

    def fun(x):
        return np.sum(x ** 4 / 4 - x ** 2 / 2) + 0.1 * np.sum((x[1:] - x[:-1]) ** 2)

    def jac(x):
        g = x ** 3 - x
        d = 0.2 * (x[1:] - x[:-1])
        g[1:] += d
        g[:-1] -= d
        return g

    def hess(x):
        diagonal = 3 * x ** 2 - 1 + 0.4
        diagonal[[0, -1]] -= 0.2
        return scipy.sparse.diags([np.full(n - 1, -0.2), diagonal, np.full(n - 1, -0.2)], [-1, 0, 1], format="csc")
    result = optimizers.minimize_newton(fun, np.zeros(n), jac, hess=hess, sparse=True)
    assert result.sparse and result.success and result.fun < -0.2 * n
    assert np.all(np.linalg.eigvalsh(hess(result.x).toarray()) > 0)


def test_eigen_shift_refuses_sparse_and_makes_a_sparse_hessian_dense():
    with pytest.raises(ValueError, match="eigen"):
        optimizers.minimize_newton(rosen, EXTENDED, rosen_der, hess=rosen_hess_sparse, shift="eigen", sparse=True)
    result = optimizers.minimize_newton(rosen, np.full(1000, 1.2), rosen_der, hess=rosen_hess_sparse, shift="eigen",
                                        maxiter=1)
    assert not result.sparse and "eigen" in result.dense_reason and result.fun < rosen(np.full(1000, 1.2))


def test_a_sparse_hessian_with_nan_ends_the_run_at_the_best_point():
    def hess(x):
        h = rosen_hess_sparse(x)
        if x[0] != EXTENDED[0]:
            h.data[0] = np.nan
        return h
    result = optimizers.minimize_newton(rosen, EXTENDED, rosen_der, hess=hess, sparse=True)
    assert result.status == Status.NONFINITE and result.nit == 1
    assert result.fun == pytest.approx(rosen(result.x)) and result.fun < rosen(EXTENDED)


@pytest.mark.parametrize("method", ["newton", "trust_exact", "dogleg"])
@pytest.mark.parametrize("n", [12, 2000])
@pytest.mark.parametrize("weight", [1.0, 2.0])
def test_a_singular_semidefinite_hessian_gets_the_step_on_its_range(method, n, weight):
    """f = weight/2 sum((x[1:] - x[:-1])^2), H = weight * path_laplacian(n): singular, its null
    vector ones; the minimizers are the constant vectors. One Newton step solves (H + tau I) p =
    -g, tau <= 2 r (rounding_shift, r = n eps max h_ii) where a pivot is within rounding of zero:
    on the range of H it is the Newton step to within (tau + n eps ||H||) / lambda_+ (the shift's
    and a backward-stable solve's error over the smallest nonzero eigenvalue), so x_1 is constant
    to that relative accuracy and the run ends there, sparse and dense alike. (With weight 1 every
    pivot is an exact integer and the last one an exact 0; with weight 2 a dense Cholesky meets
    it as +4e-16 and succeeded before, the sparse LDL^T as an exact 0 and shifted by 1e-3 ||H||_F:
    14,950 iterations at n = 2,000.) Along ones the step carries the gradient's rounding error
    over tau, which f does not see. The dense runs at n = 12 only: their second-order check is a
    dense eigendecomposition, seconds at n = 2,000."""
    h = weight * path_laplacian(n)
    x0 = np.random.default_rng(n).standard_normal(n)
    lambda_plus = weight * (2.0 - 2.0 * np.cos(np.pi / n))
    eps = np.finfo(float).eps
    bound = (2 * n * eps * 2 * weight + n * eps * 4 * weight) / lambda_plus * np.linalg.norm(x0 - x0.mean())
    minimize = getattr(optimizers, f"minimize_{method}")
    for sparse in (True, False) if n < 100 else (True,):
        result = minimize(lambda x: 0.5 * x @ (h @ x), x0, lambda x: h @ x,
                          hess=lambda x, s=sparse: h if s else h.toarray(), sparse=sparse, maxiter=10)
        assert result.success and result.nit == 1 and result.sparse == sparse
        assert np.linalg.norm(result.x - result.x.mean()) <= bound


def quartic_with_slope():
    """sum((x - 1)^4 + x) from ones: H = 0 and g = 1 at x0."""
    return (lambda x: np.sum((x - 1) ** 4 + x), lambda x: 4 * (x - 1) ** 3 + 1,
            lambda x: scipy.sparse.diags(12 * (x - 1) ** 2, format="csc"), np.ones(12))


def flat_quartic():
    """sum((x - 1)^4) at its minimizer: g = 0, H = 0 (the final check at H = 0)."""
    return (lambda x: np.sum((x - 1) ** 4), lambda x: 4 * (x - 1) ** 3,
            lambda x: scipy.sparse.diags(12 * (x - 1) ** 2, format="csc"), np.ones(12))


def constant():
    """f = 0: g = 0 and a Hessian with no structural nonzero."""
    return lambda x: 0.0, np.zeros_like, lambda x: scipy.sparse.csc_matrix((x.size, x.size)), np.linspace(-1, 1, 12)


def ignored_variable():
    """sum((x[:-1] - 1)^2): the last variable has no entry in H (a zero row and column)."""
    def hess(x):
        diagonal = np.full(x.size, 2.0)
        diagonal[-1] = 0.0
        h = scipy.sparse.diags(diagonal, format="csc")
        h.eliminate_zeros()
        return h
    return (lambda x: np.sum((x[:-1] - 1) ** 2), lambda x: np.r_[2 * (x[:-1] - 1), 0.0], hess, np.zeros(12))


def symmetric_saddle():
    """sum(x^4/4 - x^2/2) from 0: g = 0, H = -I (lambda_1 = -1, twelve times)."""
    return (lambda x: np.sum(x ** 4 / 4 - x ** 2 / 2), lambda x: x ** 3 - x,
            lambda x: scipy.sparse.diags(3 * x ** 2 - 1, format="csc"), np.zeros(12))


DEGENERATE = [quartic_with_slope, flat_quartic, constant, ignored_variable, symmetric_saddle]


@pytest.mark.parametrize("problem", DEGENERATE, ids=lambda problem: problem.__name__)
@pytest.mark.parametrize("method", ["newton", "trust_exact", "dogleg"])
def test_sparse_runs_take_the_dense_runs_iterates_at_degenerate_points(method, problem):
    """sparse=True against the dense path where H vanishes, has no entries, a zero row, or a
    repeated negative eigenvalue at a saddle. Both paths solve the same systems with
    backward-stable factorizations (and the same eigenvectors below 500 variables), so the
    iterates agree to rounding times the systems' condition (at most 1e2 here) per step, within
    docs/guides/sparse.md's 1e-7 over these short runs."""
    fun, jac, hess, x0 = problem()
    minimize = getattr(optimizers, f"minimize_{method}")
    sparse = minimize(fun, x0, jac, hess=hess, sparse=True)
    dense = minimize(fun, x0, jac, hess=lambda x: hess(x).toarray())
    assert sparse.sparse and not dense.sparse and sparse.success and dense.success
    assert sparse.nit == dense.nit and sparse.status == dense.status
    np.testing.assert_allclose(sparse.history["x"], dense.history["x"], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["trust_exact", "dogleg"])
def test_a_sparse_hessian_with_nan_ends_a_trust_region_run_as_the_dense_one(method):
    def hess(x):
        h = rosen_hess_sparse(x)
        if x[0] != EXTENDED[0]:
            h.data[0] = np.nan
        return h
    minimize = getattr(optimizers, f"minimize_{method}")
    sparse = minimize(rosen, EXTENDED, rosen_der, hess=hess, sparse=True)
    dense = minimize(rosen, EXTENDED, rosen_der, hess=lambda x: hess(x).toarray())
    assert sparse.status == dense.status == Status.NONFINITE and sparse.nit == dense.nit
    np.testing.assert_allclose(sparse.x, dense.x, rtol=1e-7, atol=1e-9)
    assert sparse.fun == pytest.approx(rosen(sparse.x)) and sparse.fun < rosen(EXTENDED)


class _Counted(LDLFactorization):
    """An LDLFactorization that registers itself, so a test can read a run's counts."""
    made: list = []

    def __init__(self, method: str | None = None):
        super().__init__(method)
        _Counted.made.append(self)


@pytest.mark.parametrize("method", ["trust_exact", "dogleg"])
def test_a_trust_region_iteration_costs_a_few_factorizations_at_any_n(method, monkeypatch):
    """Chained Rosenbrock from 0.5 (indefinite Hessians, lambda_1 = -98 with lambda_2 within
    ~1e-3 at n = 1,500): the leftmost eigenpair from shift-invert Lanczos takes a few
    factorizations and solves whatever n, where ARPACK's Lanczos on H took thousands of products
    an iteration, more the larger n (3,277 at n = 2,000). Counted: numeric factorizations, solves
    and products with the sparse Hessian (every ``H @ v``). A trust-exact iteration is a few
    secular steps, one factorization each (Moré & Sorensen report 2-3 on average), plus the
    eigenpair where H is indefinite (2-3 factorizations, a dozen solves); the bounds are four
    times that, and equal at both n."""
    products = []
    matmul = scipy.sparse.csc_matrix.__matmul__

    def counted(self, other):
        if np.ndim(other) == 1:
            products.append(1)
        return matmul(self, other)
    monkeypatch.setattr(scipy.sparse.csc_matrix, "__matmul__", counted)
    monkeypatch.setattr(optimizers.trust_region, "LDLFactorization", _Counted)
    minimize = getattr(optimizers, f"minimize_{method}")
    for n in (1500, 12000):
        _Counted.made, products[:] = [], []
        result = minimize(rosen, np.full(n, 0.5), rosen_der, hess=rosen_hess_sparse, keep_iterates=False)
        assert result.sparse and result.success
        factorizations = sum(ldl.factorizations for ldl in _Counted.made) / result.nit
        work = (sum(ldl.solves for ldl in _Counted.made) + len(products)) / result.nit
        assert factorizations <= 20 and work <= 100, (n, factorizations, work)


@pytest.mark.parametrize("sparse", [True, False])
def test_the_subproblems_of_a_variable_f_ignores_take_the_newton_step_on_the_others(sparse):
    """H = diag(2, ..., 2, 0) and g_12 = 0 (f does not depend on x_12): H's zero row gives an
    exact zero pivot, which the rounding rule shifts by 2 n eps max a_jj, so Moré-Sorensen's
    step at lam = 0 is the Newton step on the others in two factorizations (it took 100 secular
    steps towards lam = 0, ending on a boundary it never reached), and dogleg's its Newton step
    (it took the Cauchy point). The shift changes the step by 2 n eps max a_jj / 2 relative."""
    diagonal = np.r_[np.full(11, 2.0), 0.0]
    h = scipy.sparse.diags(diagonal, format="csc")
    h.eliminate_zeros()
    g = np.r_[np.linspace(-1.0, 1.0, 11), 0.0]
    newton = np.r_[-g[:11] / 2.0, 0.0]
    ldl = LDLFactorization()
    matrix = h if sparse else h.toarray()
    for solution in (MoreSorensen(g, matrix, factorization=ldl).solve(10.0), Dogleg(g, matrix, ldl).solve(10.0)):
        assert not solution.on_boundary
        np.testing.assert_allclose(solution.p, newton, rtol=4 * 12 * np.finfo(float).eps, atol=0)
    if sparse:
        assert ldl.factorizations == 4   # the zero pivot and the shifted factorization, twice
