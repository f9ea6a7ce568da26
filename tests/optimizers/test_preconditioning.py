"""Preconditioned Krylov methods: the incomplete Cholesky factorization against complete ones and
its definition, preconditioned CG and Lanczos against dense solves and their identities,
Steihaug and GLTR in the preconditioner's norm against the transformed dense subproblem, the
rule that switches preconditioning on, and whole runs."""
import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import OptimizeResult, OptimizeWarning

from optimizers import minimize_newton_cg, minimize_trust_krylov, minimize_trust_ncg
from optimizers.krylov import ConjugateGradient, Lanczos
from optimizers.preconditioning import (
    AUTOMATIC_PRODUCTS,
    SHIFT_MIN,
    IncompleteCholesky,
    Preconditioning,
    level_limit,
)
from optimizers.sparse import symmetric_csc
from optimizers.subproblems import LanczosGLTR, MoreSorensen, SteihaugCG


def laplacian(side: int, shift: float = 0.0) -> scipy.sparse.csc_matrix:
    """The 5-point Laplacian of a side x side grid (natural order), plus shift I."""
    line = scipy.sparse.diags([-np.ones(side - 1), 2 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    eye = scipy.sparse.eye(side)
    grid = scipy.sparse.kron(line, eye) + scipy.sparse.kron(eye, line) + shift * scipy.sparse.eye(side * side)
    return symmetric_csc(grid)


def random_sparse(n: int, seed: int, density: float = 0.08, definite: bool = True) -> scipy.sparse.csc_matrix:
    """A random symmetric sparse matrix, made diagonally dominant (positive definite) or not."""
    a = scipy.sparse.random(n, n, density, random_state=seed)
    a = a + a.T
    diagonal = np.asarray(abs(a).sum(axis=1)).ravel() + 1.0
    return symmetric_csc(a + scipy.sparse.diags(diagonal if definite else -diagonal * (np.arange(n) % 2)))


def preconditioner_matrix(factor) -> np.ndarray:
    """M = S^{-1} L L^T S^{-1}, dense."""
    unscaled = factor.factor.toarray() / factor.scaling[:, None]
    return unscaled @ unscaled.T


class Dense:
    """A dense SPD matrix M as a preconditioner: ``solve(r) = M^{-1} r``."""

    def __init__(self, M: np.ndarray):
        self.M = M

    def solve(self, r: np.ndarray) -> np.ndarray:
        return np.linalg.solve(self.M, r)


def spd(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    return A @ A.T + n * np.eye(n)


# --- the incomplete Cholesky factorization ---------------------------------------------------

def test_a_tridiagonal_matrix_needs_no_fill_so_the_factor_is_the_cholesky_factor():
    rng = np.random.default_rng(0)
    n = 40
    off = rng.uniform(-1, 1, n - 1)
    H = symmetric_csc(scipy.sparse.diags([off, rng.uniform(3, 4, n), off], [-1, 0, 1]))
    factor = IncompleteCholesky(fill_level=0, memory=0).factor(H)
    S, L = np.diag(factor.scaling), factor.factor.toarray()
    assert factor.shift == 0.0
    np.testing.assert_allclose(L @ L.T, S @ H.toarray() @ S, atol=1e-14)
    np.testing.assert_allclose(L, np.linalg.cholesky(S @ H.toarray() @ S), atol=1e-14)
    np.testing.assert_allclose(factor.scaling, 1 / np.sqrt(np.linalg.norm(H.toarray(), axis=0)), rtol=1e-14)


@pytest.mark.parametrize("fill_level", [0, 1, 2])
def test_ic_k_reproduces_the_matrix_on_its_pattern_and_fills_no_more(fill_level):
    H = random_sparse(60, seed=1)
    factor = IncompleteCholesky(fill_level=fill_level, memory=60).factor(H)
    S, L = np.diag(factor.scaling), factor.factor.toarray()
    error = L @ L.T - S @ H.toarray() @ S
    pattern = H.toarray() != 0
    assert np.abs(error[pattern]).max() <= 1e-13      # IC(k): exact on H's own entries
    assert np.abs(error).max() > 1e-6                  # but incomplete: fill was dropped
    if fill_level == 0:
        assert set(zip(*np.nonzero(L))) <= set(zip(*np.nonzero(np.tril(pattern))))


def test_with_enough_fill_levels_the_factorization_is_complete():
    H = random_sparse(50, seed=2)
    factor = IncompleteCholesky(fill_level=50, memory=50).factor(H)
    S = np.diag(factor.scaling)
    np.testing.assert_allclose(factor.factor.toarray(), np.linalg.cholesky(S @ H.toarray() @ S), atol=1e-13)
    r = np.random.default_rng(3).standard_normal(50)
    np.testing.assert_allclose(factor.solve(r), np.linalg.solve(H.toarray(), r), rtol=1e-10)


def test_an_indefinite_matrix_is_shifted_until_every_pivot_is_positive():
    H = random_sparse(80, seed=4, definite=False)
    assert np.linalg.eigvalsh(H.toarray()).min() < 0
    factor = IncompleteCholesky().factor(H)
    assert factor.shift >= 1e-3 and np.all(factor.factor.diagonal() > 0)
    M = preconditioner_matrix(factor)
    assert np.linalg.eigvalsh(M).min() > 0
    r = np.random.default_rng(5).standard_normal(80)
    np.testing.assert_allclose(M @ factor.solve(r), r, rtol=1e-9, atol=1e-12)
    # the shift is the smallest of its sequence that works: half of it fails (ICFS's doubling)
    smaller = IncompleteCholesky()
    smaller.analyse(H)
    scaled = np.where(smaller._source >= 0, H.data[np.maximum(smaller._source, 0)], 0.0)
    scaled *= factor.scaling[smaller._rows] * factor.scaling[smaller._cols]
    if factor.shift > 2e-3:
        scaled[smaller._diagonal] += factor.shift / 2
        assert not smaller._eliminate(scaled)


def test_a_matrix_with_no_entries_gets_the_first_shift_and_an_empty_one_an_empty_factor():
    """H = 0 (no stored entries, or only zeros): the scaled matrix is 0, so ICFS's first shift
    gives M = 1e-3 I; a 0 x 0 matrix has an empty factor."""
    r = np.random.default_rng(6).standard_normal(3)
    stored_zeros = scipy.sparse.csc_matrix((np.zeros(3), np.arange(3), np.arange(4)), shape=(3, 3))
    for H in (scipy.sparse.csc_matrix((3, 3)), stored_zeros):
        factor = IncompleteCholesky().factor(H)
        assert factor.shift == SHIFT_MIN
        np.testing.assert_array_equal(factor.scaling, np.ones(3))
        np.testing.assert_allclose(factor.solve(r), r / SHIFT_MIN, rtol=4 * np.finfo(float).eps)
    empty = IncompleteCholesky().factor(scipy.sparse.csc_matrix((0, 0)))
    assert empty.shift == 0.0 and empty.factor.shape == (0, 0) and empty.solve(np.zeros(0)).shape == (0,)


def tridiagonal(n: int, seed: int) -> scipy.sparse.csc_matrix:
    """A positive definite tridiagonal matrix: its incomplete factorization is the complete one."""
    rng = np.random.default_rng(seed)
    off = rng.uniform(-1, 1, n - 1)
    return symmetric_csc(scipy.sparse.diags([off, rng.uniform(3, 4, n), off], [-1, 0, 1]))


def assert_solves(solve, H: np.ndarray, r: np.ndarray, inverse_times_r: np.ndarray):
    """solve(r) is H^{-1} r to a backward-stable solve's accuracy, n cond(H) eps (normwise)."""
    bound = H.shape[0] * np.linalg.cond(H) * np.finfo(float).eps
    assert np.linalg.norm(solve(r) - inverse_times_r) <= bound * np.linalg.norm(inverse_times_r)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e300, 1e-300])
def test_entries_near_the_ends_of_the_floats_factor_as_the_unscaled_matrix(scale):
    """The column norms are taken without squaring the entries (1e200 ** 2 overflows, 1e-200 ** 2
    underflows), so s H is factored as H is: the same scaled matrix, shift and factor, and
    M^{-1} r = (s H)^{-1} r = H^{-1} r / s for a tridiagonal H (complete factorization)."""
    H = tridiagonal(40, seed=7)
    r = np.random.default_rng(8).standard_normal(40)
    unscaled = IncompleteCholesky().factor(H)
    factor = IncompleteCholesky().factor(symmetric_csc(H * scale))
    assert factor.shift == unscaled.shift == 0.0
    np.testing.assert_allclose(factor.factor.toarray(), unscaled.factor.toarray(), rtol=0,
                               atol=8 * np.finfo(float).eps)
    assert_solves(lambda v: scale * factor.solve(v), H.toarray(), r, np.linalg.solve(H.toarray(), r))
    # an indefinite matrix takes the shift the unscaled one takes (of the scaled matrix, |entries| <= 1)
    indefinite = random_sparse(80, seed=4, definite=False)
    shifted = IncompleteCholesky().factor(symmetric_csc(indefinite * scale))
    np.testing.assert_allclose(shifted.shift, IncompleteCholesky().factor(indefinite).shift, rtol=1e-12)
    assert np.all(shifted.factor.diagonal() > 0)


def test_columns_of_very_different_sizes_factor_as_the_unscaled_matrix():
    """H = D T D with D alternating 1e100 and 1e-100 (entries from 1e-200 to 1e200): M^{-1} = H^{-1}
    = D^{-1} T^{-1} D^{-1}, computed without forming H^{-1}; checked in T's coordinates."""
    T = tridiagonal(40, seed=9)
    d = np.where(np.arange(40) % 2 == 0, 1e100, 1e-100)
    H = symmetric_csc(scipy.sparse.diags(d) @ T @ scipy.sparse.diags(d))
    factor = IncompleteCholesky().factor(H)
    assert factor.shift == 0.0 and np.all(np.isfinite(factor.factor.data))
    u = np.random.default_rng(10).standard_normal(40)
    in_t = lambda v: d * factor.solve(d * v)     # noqa: E731 (D M^{-1} D, which is T^{-1})
    assert_solves(in_t, T.toarray(), u, np.linalg.solve(T.toarray(), u))


def test_memory_keeps_the_largest_entries_of_each_column():
    H = laplacian(12, shift=0.5)
    below_h = np.diff(scipy.sparse.tril(H, -1, format="csc").indptr)
    for memory in (0, 1):
        factor = IncompleteCholesky(fill_level=2, memory=memory).factor(H)
        below_l = np.diff(scipy.sparse.tril(factor.factor, -1, format="csc").indptr)
        assert np.all(below_l <= below_h + memory)
    full = IncompleteCholesky(fill_level=2, memory=100).factor(H)
    dropped = IncompleteCholesky(fill_level=2, memory=0).factor(H)
    assert dropped.factor.nnz < full.factor.nnz
    A = H.toarray()   # less memory, a worse approximation
    assert np.linalg.norm(preconditioner_matrix(full) - A) < np.linalg.norm(preconditioner_matrix(dropped) - A)


def test_a_grid_takes_a_few_sqrt_n_levels_and_a_chain_is_refused():
    grid = IncompleteCholesky(fill_level=2)
    assert grid.analyse(laplacian(40)) is None
    assert 3 * 40 <= grid.levels <= 5 * 40               # about (fill_level + 2) sqrt(n)
    n = 20_000
    chain = symmetric_csc(scipy.sparse.diags([-np.ones(n - 1), 3 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]))
    ic = IncompleteCholesky()
    reason = ic.analyse(chain)
    assert reason is not None and f"{level_limit(n):,} sequential levels" in reason
    with pytest.raises(ValueError, match="sequential levels"):
        ic.factor(chain)


def test_the_analysis_is_kept_while_the_pattern_stays():
    H = laplacian(10, shift=1.0)
    ic = IncompleteCholesky()
    first = ic.factor(H)
    kept = ic._rows
    second = ic.factor(symmetric_csc(2.0 * H))
    assert ic._rows is kept
    np.testing.assert_allclose(second.solve(np.ones(100)), 0.5 * first.solve(np.ones(100)), rtol=1e-12)
    ic.factor(laplacian(11, shift=1.0))
    assert ic._rows is not kept
    nan = H.copy()
    nan.data[0] = np.nan
    assert ic.factor(symmetric_csc(nan)) is None


# --- preconditioned CG and Lanczos -----------------------------------------------------------

def test_pcg_with_a_good_preconditioner_takes_fewer_iterations_to_the_same_solution():
    H = laplacian(30, shift=1e-3)
    g = np.random.default_rng(6).standard_normal(900)
    exact = -scipy.sparse.linalg.spsolve(H, g)
    tolerance = 1e-8 * np.linalg.norm(g)
    runs = {}
    for name, preconditioner in [("cg", None), ("pcg", IncompleteCholesky().factor(H))]:
        cg = ConjugateGradient(H.__matmul__, g, preconditioner=preconditioner)
        while np.sqrt(cg.rr) > tolerance:
            cg.step()
        runs[name] = cg
        assert np.linalg.norm(cg.p - exact) <= 1e-6 * np.linalg.norm(exact)
        np.testing.assert_allclose(cg.r, H @ cg.p + g, atol=1e-9)   # rr is the true residual
    assert runs["pcg"].iterations < runs["cg"].iterations / 3


def test_pcg_recurrences_give_the_m_norms_and_the_model():
    n = 15
    H, M = spd(n, 7), spd(n, 8)
    g = np.random.default_rng(9).standard_normal(n)
    cg = ConjugateGradient(lambda v: H @ v, g, preconditioner=Dense(M))
    assert cg.rz == pytest.approx(g @ np.linalg.solve(M, g))
    for _ in range(6):
        segment = cg.step()
        ss, sd, dd = segment.metric
        s, d = segment.start, segment.direction
        assert ss == pytest.approx(s @ M @ s, rel=1e-9, abs=1e-12)
        assert sd == pytest.approx(s @ M @ d, rel=1e-9, abs=1e-9 * np.sqrt(ss * dd))
        assert dd == pytest.approx(d @ M @ d, rel=1e-9)
        assert segment.slope == pytest.approx((H @ s + g) @ d, rel=1e-9)
        end = s + segment.length * d
        assert segment.end_norm == pytest.approx(np.sqrt(end @ M @ end), rel=1e-9)
        assert cg.pp == pytest.approx(cg.p @ M @ cg.p, rel=1e-9)
        assert cg.value == pytest.approx(g @ cg.p + 0.5 * cg.p @ H @ cg.p, rel=1e-9)
    # the iterates are those of CG on the transformed system C^{-1} H C^{-T} y = -C^{-1} g
    C = np.linalg.cholesky(M)
    transformed = np.linalg.solve(C, np.linalg.solve(C, H).T)
    plain = ConjugateGradient(lambda v: transformed @ v, np.linalg.solve(C, g))
    for _ in range(6):
        plain.step()
    np.testing.assert_allclose(np.linalg.solve(C.T, plain.p), cg.p, rtol=1e-8)


def test_pcg_with_the_identity_is_cg():
    H = spd(12, 10)
    g = np.random.default_rng(11).standard_normal(12)
    plain = ConjugateGradient(lambda v: H @ v, g)
    identity = ConjugateGradient(lambda v: H @ v, g, preconditioner=Dense(np.eye(12)))
    for _ in range(8):
        a, b = plain.step(), identity.step()
        assert b.length == pytest.approx(a.length, rel=1e-12)
        assert b.metric[2] == pytest.approx(a.direction @ a.direction, rel=1e-12)
    np.testing.assert_allclose(identity.p, plain.p, rtol=1e-11)


def test_pcg_refuses_a_warm_start():
    with pytest.raises(ValueError, match="warm start"):
        ConjugateGradient(lambda v: v, np.ones(3), p0=np.ones(3), preconditioner=Dense(np.eye(3)))


@pytest.mark.parametrize("steps", [1, 4, 9])
def test_preconditioned_lanczos_relations_hold(steps):
    n = 14
    rng = np.random.default_rng(12)
    A = rng.standard_normal((n, n))
    H, M = A + A.T, spd(n, 13)
    start = rng.standard_normal(n)
    lanczos = Lanczos(lambda v: H @ v, start, preconditioner=Dense(M)).run(steps)
    Q = lanczos.basis.T
    T = np.diag(lanczos.alpha) + np.diag(lanczos.beta, 1) + np.diag(lanczos.beta, -1)
    np.testing.assert_allclose(Q.T @ M @ Q, np.eye(steps), atol=1e-11)
    np.testing.assert_allclose(Q.T @ H @ Q, T, atol=1e-10)
    first = np.linalg.solve(M, start)
    assert lanczos.start_norm == pytest.approx(np.sqrt(start @ first))
    np.testing.assert_allclose(Q[:, 0], first / lanczos.start_norm, atol=1e-13)
    residual = H @ Q - M @ Q @ T     # only the last column: next_beta M q_{k+1}
    np.testing.assert_allclose(residual[:, :-1], 0.0, atol=1e-9)
    assert np.linalg.norm(residual[:, -1]) == pytest.approx(lanczos.residual_scale, rel=1e-8)
    theta = lanczos.run(n).ritz()[0]   # the whole space: the eigenvalues of the pencil (H, M)
    np.testing.assert_allclose(theta, np.sort(np.linalg.eigvals(np.linalg.solve(M, H)).real), atol=1e-9)


# --- trust-region subproblems in the preconditioner's norm -----------------------------------

def transformed_solution(H, g, M, radius):
    """The exact minimizer of g^T p + p^T H p / 2 over ||p||_M <= radius: with M = C C^T and
    p = C^{-T} y, the Euclidean subproblem in y (Moré-Sorensen, dense)."""
    C = np.linalg.cholesky(M)
    transformed = np.linalg.solve(C, np.linalg.solve(C, H).T)
    step = MoreSorensen(np.linalg.solve(C, g), transformed, rtol=1e-12).solve(radius)
    return np.linalg.solve(C.T, step.p)


@pytest.mark.parametrize("radius", [0.05, 0.3, 100.0])
def test_preconditioned_steihaug_stays_in_the_m_norm_region(radius):
    n = 20
    H, M = spd(n, 14), spd(n, 15)
    g = np.random.default_rng(16).standard_normal(n)
    solver = SteihaugCG(g, lambda v: H @ v, rtol=1e-10, preconditioner=Dense(M))
    step = solver.solve(radius)
    m_norm = np.sqrt(step.p @ M @ step.p)
    assert step.region_norm == pytest.approx(m_norm, rel=1e-9)
    assert m_norm <= radius * (1 + 1e-9)
    if step.on_boundary:
        assert m_norm == pytest.approx(radius, rel=1e-9)
    else:   # inside: the Newton step (H is positive definite)
        np.testing.assert_allclose(step.p, -np.linalg.solve(H, g), rtol=1e-7)
    assert step.decrease == pytest.approx(-(g @ step.p + 0.5 * step.p @ H @ step.p), rel=1e-9)
    if radius > 1:
        np.testing.assert_allclose(step.p, transformed_solution(H, g, M, radius), rtol=1e-7)


def test_preconditioned_steihaug_with_the_identity_is_steihaug():
    n = 16
    rng = np.random.default_rng(17)
    A = rng.standard_normal((n, n))
    H, g = A + A.T, rng.standard_normal(n)       # indefinite: negative curvature on the path
    for radius in (0.1, 1.0, 10.0):
        plain = SteihaugCG(g, lambda v: H @ v).solve(radius)
        identity = SteihaugCG(g, lambda v: H @ v, preconditioner=Dense(np.eye(n))).solve(radius)
        np.testing.assert_allclose(identity.p, plain.p, rtol=1e-9, atol=1e-12)
        assert identity.on_boundary == plain.on_boundary and plain.region_norm is None


@pytest.mark.parametrize("seed", [18, 19, 20])
@pytest.mark.parametrize("radius", [0.1, 1.0, 50.0])
def test_preconditioned_gltr_solves_the_m_norm_subproblem(seed, radius):
    n = 12
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    H, M, g = A + A.T, spd(n, seed + 100), rng.standard_normal(n)
    step = LanczosGLTR(g, lambda v: H @ v, rtol=1e-12, preconditioner=Dense(M)).solve(radius)
    exact = transformed_solution(H, g, M, radius)
    np.testing.assert_allclose(step.p, exact, rtol=1e-6, atol=1e-8 * np.linalg.norm(exact))
    assert step.region_norm == pytest.approx(np.sqrt(step.p @ M @ step.p), rel=1e-9)
    assert step.decrease == pytest.approx(-(g @ step.p + 0.5 * step.p @ H @ step.p), rel=1e-8)


# --- the rule ---------------------------------------------------------------------------------

class Point:
    """An iterate with a given sparse Hessian."""

    def __init__(self, h):
        self.sparse_matrix = h


def test_the_automatic_rule_waits_for_a_long_solve_on_a_large_problem():
    rule = Preconditioning(None, n=5000)
    for products in (AUTOMATIC_PRODUCTS, 3):
        rule.observe(products)
        assert not rule.active and rule.at(Point(laplacian(5))) is None
    rule.observe(AUTOMATIC_PRODUCTS + 1)
    assert rule.active and rule.reason == "the Krylov solve of iteration 3 took 101 products (more than 100)"
    small = Preconditioning(None, n=999)
    small.observe(10 ** 6)
    assert not small.active and small.reason is None
    never = Preconditioning(False, n=10 ** 6)
    never.observe(10 ** 6)
    assert not never.active


def test_the_rule_declines_a_dense_or_missing_matrix_with_its_reason():
    automatic = Preconditioning(None, n=1000)
    automatic.observe(10 ** 4)
    dense = symmetric_csc(scipy.sparse.random(1000, 1000, 0.2, random_state=0) + 1000 * scipy.sparse.eye(1000))
    assert automatic.at(Point(dense)) is None and "dense" in automatic.reason and not automatic.active
    asked = Preconditioning(True, n=1000)
    with pytest.warns(OptimizeWarning, match="not come as a sparse matrix"):
        assert asked.at(Point(None)) is None
    result = asked.report(OptimizeResult())
    assert dict(result) == {"preconditioned": False, "precondition_reason": asked.reason}


# --- whole runs --------------------------------------------------------------------------------

class GridOperator:
    """The Hessian of :func:`grid_problem` at x: products, and the sparse and dense matrices."""

    def __init__(self, matrix):
        self.matrix = matrix
        self.matvec = matrix.__matmul__

    def to_sparse(self):
        return self.matrix

    def to_dense(self):
        return self.matrix.toarray()


def diffusion(side: int, seed: int = 21) -> scipy.sparse.csc_matrix:
    """The Dirichlet Laplacian of a side x side grid whose edges have conductances from 1e-3 to 1
    (log-uniform): ``D^T W D``, D the differences along the edges (and to the boundary),
    condition number about 10^3 side^2."""
    n = side * side
    index = np.arange(n).reshape(side, side)
    pairs = [(index[:, :-1].ravel(), index[:, 1:].ravel()), (index[:-1, :].ravel(), index[1:, :].ravel())]
    heads = np.concatenate([a for a, _ in pairs] + [np.arange(n)])
    tails = np.concatenate([b for _, b in pairs] + [np.full(n, -1)])   # -1: the boundary
    edges = heads.size
    rows = np.concatenate([np.arange(edges), np.flatnonzero(tails >= 0)])
    columns = np.concatenate([heads, tails[tails >= 0]])
    values = np.concatenate([np.ones(edges), -np.ones(int(np.sum(tails >= 0)))])
    D = scipy.sparse.csc_matrix((values, (rows, columns)), shape=(edges, n))
    weights = 10.0 ** np.random.default_rng(seed).uniform(-3, 0, edges)
    return symmetric_csc(D.T @ scipy.sparse.diags(weights) @ D)


def grid_problem(side: int):
    """A convex grid energy ``x^T A x / 2 + sum log cosh x / 100 - b^T x / 10`` (A the
    :func:`diffusion` matrix): f, its gradient, the Hessian as an operator factory (A + diag(1 -
    tanh^2 x) / 100) and x0."""
    A = diffusion(side)
    b = 0.1 * np.random.default_rng(22).standard_normal(side * side)

    def fun(x):
        return 0.5 * x @ (A @ x) + 0.01 * np.sum(np.log(np.cosh(x))) - b @ x

    def jac(x):
        return A @ x + 0.01 * np.tanh(x) - b

    def operator(x):
        return GridOperator(symmetric_csc(A + scipy.sparse.diags(0.01 * (1 - np.tanh(x) ** 2))))
    return fun, jac, operator, np.zeros(side * side)


@pytest.mark.parametrize("method", [minimize_newton_cg, minimize_trust_ncg, minimize_trust_krylov])
def test_preconditioned_runs_reach_the_minimum_with_far_fewer_products(method):
    fun, jac, operator, x0 = grid_problem(40)
    plain = method(fun, x0, jac, operator=operator, precondition=False, gtol=1e-9)
    preconditioned = method(fun, x0, jac, operator=operator, precondition=True, gtol=1e-9)
    assert plain.success and preconditioned.success
    assert preconditioned.preconditioned and not plain.preconditioned
    scale = np.abs(plain.x).max()
    np.testing.assert_allclose(preconditioned.x, plain.x, atol=1e-6 * scale)
    assert preconditioned.fun == pytest.approx(plain.fun, rel=1e-12)
    # nhev: the products, and one sparse matrix an iterate with the preconditioner
    assert preconditioned.nhev < plain.nhev / 3


def test_precondition_true_with_bounds_is_refused_before_any_evaluation():
    calls = []
    with pytest.raises(ValueError, match="precondition=True takes no bounds"):
        minimize_newton_cg(lambda x: calls.append(x) or x @ x, np.ones(3), lambda x: 2 * x,
                           hessp=lambda x, p: 2 * p, bounds=(np.zeros(3), np.ones(3)), precondition=True)
    assert calls == []


def test_precondition_true_without_a_sparse_matrix_warns_and_runs_without():
    with pytest.warns(OptimizeWarning, match="no preconditioner"):
        result = minimize_trust_ncg(lambda x: x @ x, np.ones(3), lambda x: 2 * x, hessp=lambda x, p: 2 * p,
                                    precondition=True)
    assert result.success and not result.preconditioned and "sparse matrix" in result.precondition_reason
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = minimize_trust_ncg(lambda x: x @ x, np.ones(3), lambda x: 2 * x, hessp=lambda x, p: 2 * p)
    assert not quiet.preconditioned and "precondition_reason" not in quiet
