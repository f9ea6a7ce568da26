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
from optimizers.objective import Status
from optimizers.sparse import (
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


def test_ldl_refuses_singular_and_non_finite_matrices_and_stale_solves():
    ldl = LDLFactorization()
    singular = scipy.sparse.csc_matrix(np.array([[1.0, 1.0], [1.0, 1.0]]))
    assert not ldl.factor(singular).positive_definite            # a zero pivot
    zero_diagonal = scipy.sparse.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert not ldl.factor(zero_diagonal).positive_definite       # no stored diagonal: analysed anyway
    assert ldl.factor(zero_diagonal, shift=1.5).positive_definite
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


@pytest.mark.parametrize("n", [60, 520])   # dense eigh, then ARPACK
def test_the_sparse_second_order_check(n):
    rng = np.random.default_rng(n)
    definite = rosen_hess_sparse(np.ones(n))
    theta, u, scale = sparse_leftmost_curvature(definite, LDLFactorization())
    assert theta == 0.0 and scale >= np.linalg.norm(definite.toarray(), 2) * (1 - 1e-12)
    indefinite = symmetric_csc(definite - scipy.sparse.diags(rng.uniform(0, 1, n) + 1000.0 * (np.arange(n) == 3)))
    lowest = np.linalg.eigvalsh(indefinite.toarray())[0]
    assert lowest < 0
    theta, u, scale = sparse_leftmost_curvature(indefinite, LDLFactorization())
    assert theta == pytest.approx(lowest, rel=1e-6)
    assert np.linalg.norm(u) == pytest.approx(1.0) and u @ indefinite @ u == pytest.approx(theta, rel=1e-6)
    assert sparse_leftmost_curvature(indefinite.multiply(np.nan).tocsc(), LDLFactorization()) is None


def test_the_leftmost_eigenpair_of_a_large_sparse_matrix():
    h = symmetric_csc(scipy.sparse.diags([np.full(519, -1.0), np.linspace(-3.0, 5.0, 520), np.full(519, -1.0)],
                                         [-1, 0, 1]))
    value, vector = sparse_leftmost_eigenpair(h)
    assert value == pytest.approx(np.linalg.eigvalsh(h.toarray())[0], rel=1e-9)
    np.testing.assert_allclose(h @ vector, value * vector, atol=1e-7 * norm_bound(h))


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
