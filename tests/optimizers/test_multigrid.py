"""Algebraic multigrid (pyamg's smoothed aggregation) as the Krylov methods' preconditioner: a
symmetric positive definite V-cycle, CG's iterations cut on a grid, the hierarchy kept while it
works, and the incomplete Cholesky taken where multigrid is refused or not positive definite."""
import types

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import OptimizeWarning
from test_supernodal import grid_energy, grid_laplacian

import hessopt
import optimizers.preconditioning
from optimizers.krylov import ConjugateGradient
from optimizers.preconditioning import (
    AMG_REUSE_GROWTH,
    AMG_REUSE_SLACK,
    AlgebraicMultigrid,
    IncompleteFactor,
    Preconditioning,
)
from optimizers.sparse import symmetric_csc


def thirteen_point(m: int) -> scipy.sparse.csc_matrix:
    """A 13-point positive definite grid matrix: the 5-point Laplacian L plus L^2 / 4."""
    laplacian = grid_laplacian(m)
    return symmetric_csc((laplacian + 0.25 * laplacian @ laplacian).tocsc())


def cg_iterations(h, b, preconditioner=None, rtol=1e-8) -> tuple[int, np.ndarray]:
    cg = ConjugateGradient(lambda v: h @ v, -b, keep_segments=False, preconditioner=preconditioner)
    while cg.rr > (rtol * np.linalg.norm(b)) ** 2 and cg.iterations < 5000:
        cg.step()
    return cg.iterations, cg.p


def test_the_v_cycle_is_symmetric_positive_definite_and_cuts_cgs_iterations_on_a_grid():
    h = thirteen_point(60)
    cycle = AlgebraicMultigrid().preconditioner(h)
    r1, r2 = np.random.default_rng(0).standard_normal((2, h.shape[0]))
    z1, z2 = cycle.solve(r1), cycle.solve(r2)
    # symmetric: symmetric Gauss-Seidel smoothing before and after, restriction P^T
    assert abs(r2 @ z1 - r1 @ z2) <= 1e-10 * np.linalg.norm(r1) * np.linalg.norm(z2)
    assert r1 @ z1 > 0 and r2 @ z2 > 0 and cycle.indefinite == 0
    b = np.random.default_rng(1).standard_normal(h.shape[0])
    plain, _ = cg_iterations(h, b)
    preconditioned, x = cg_iterations(h, b, cycle)
    np.testing.assert_allclose(h @ x, b, rtol=0, atol=1e-7 * np.linalg.norm(b))
    assert preconditioned * 10 <= plain, (preconditioned, plain)


def test_the_hierarchy_is_kept_while_its_solves_stay_within_the_allowance():
    h = grid_laplacian(30)
    amg = AlgebraicMultigrid()
    first = amg.preconditioner(h)
    amg.observe(10)                                  # the first solve with it: the reference
    amg.observe(int(max(AMG_REUSE_GROWTH * 10, 10 + AMG_REUSE_SLACK)))   # within the allowance
    assert amg.preconditioner(2.0 * h) is first and amg.builds == 1
    amg.observe(int(max(AMG_REUSE_GROWTH * 10, 10 + AMG_REUSE_SLACK)) + 1)
    assert amg.preconditioner(2.0 * h) is not first and amg.builds == 2


def test_the_hierarchy_is_the_same_each_time_and_leaves_the_global_random_stream_alone():
    """pyamg's setup draws start vectors from NumPy's global stream: seeded inside, two builds of one
    matrix give the same V-cycle (so runs repeat), and the caller's stream is not advanced."""
    h = thirteen_point(30)
    r = np.random.default_rng(2).standard_normal(h.shape[0])
    np.random.seed(123)
    expected_next = np.random.rand()
    np.random.seed(123)
    first = AlgebraicMultigrid().preconditioner(h).solve(r)
    second = AlgebraicMultigrid().preconditioner(h).solve(r)
    assert np.random.rand() == expected_next
    np.testing.assert_array_equal(first, second)

def point(h):
    return types.SimpleNamespace(sparse_matrix=h)


def test_automatic_takes_multigrid_from_its_size_on_and_the_incomplete_cholesky_where_it_is_refused(monkeypatch):
    grid = grid_laplacian(40)
    small = Preconditioning(True, grid.shape[0])
    assert isinstance(small.at(point(grid)), IncompleteFactor) and small.name == "incomplete-cholesky"
    monkeypatch.setattr(optimizers.preconditioning, "AMG_MIN_SIZE", grid.shape[0])
    rule = Preconditioning(True, grid.shape[0])
    assert rule.at(point(grid)).solve(np.ones(1600)) @ np.ones(1600) > 0 and rule.name == "amg"
    zero_diagonal = (grid - scipy.sparse.diags(grid.diagonal())).tocsc()   # indefinite, diagonal 0
    rule = Preconditioning(True, grid.shape[0])
    assert isinstance(rule.at(point(zero_diagonal)), IncompleteFactor) and rule.name == "incomplete-cholesky"
    asked = Preconditioning(True, grid.shape[0], "amg")
    with pytest.warns(OptimizeWarning, match="diagonal is not positive"):
        assert asked.at(point(zero_diagonal)) is None
    assert not asked.active


def test_a_v_cycle_that_is_not_positive_definite_hands_the_run_to_the_incomplete_cholesky():
    """Laplacian - 0.5 I on 40^2 nodes: a positive diagonal but 8 negative eigenvalues; pyamg's
    hierarchy of it is not positive definite (its V-cycle gives NaN here), the application falls
    back to the identity, and after that solve the rule takes the incomplete Cholesky."""
    h = symmetric_csc((grid_laplacian(40) - 0.5 * scipy.sparse.identity(1600)).tocsc())
    rule = Preconditioning(True, 1600)
    rule.n = optimizers.preconditioning.AMG_MIN_SIZE     # the automatic choice at its size
    cycle = rule.at(point(h))
    r = np.random.default_rng(2).standard_normal(1600)
    z = cycle.solve(r)
    assert np.all(np.isfinite(z)) and r @ z > 0 and cycle.indefinite == 1
    rule.observe(50)
    assert isinstance(rule.at(point(h)), IncompleteFactor) and rule.name == "incomplete-cholesky"


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-krylov"])
def test_runs_preconditioned_by_multigrid_find_newtons_minimum(method):
    x0 = np.random.default_rng(3).uniform(-1.0, 1.0, 2500)
    newton = hessopt.minimize(grid_energy, x0, method="newton")
    for kind, name in (("amg", "amg"), (None, "incomplete-cholesky")):   # n under AMG_MIN_SIZE
        result = hessopt.minimize(grid_energy, x0, method=method,
                                  options={"precondition": True, "preconditioner": kind})
        assert result.success and result.preconditioned and result.preconditioner == name
        # both pass the relative gradient test max|g_i| max(1, |x_i|) / max(1, |f|) <= 1e-8, and the
        # Hessian L + diag(3 x^2) has no eigenvalue under 3 min(x)^2 near the minimum (x > 0.5)
        gradient_bound = np.sqrt(x0.size) * 1e-8 * max(1.0, abs(newton.fun))
        atol = 2 * 2 * gradient_bound / (3 * newton.x.min() ** 2)
        assert newton.x.min() > 0.5
        np.testing.assert_allclose(result.x, newton.x, rtol=0, atol=atol)
    with pytest.raises(ValueError, match="preconditioner"):
        hessopt.minimize(grid_energy, x0, method=method, options={"preconditioner": "jacobi"})
