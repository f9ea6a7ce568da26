"""CHOLMOD's supernodal Cholesky behind LDLFactorization, the rule that chooses it or qdldl per
pattern, and the nested-dissection ordering: solves against scipy's and dense solves, the choice on
grids, chains and arrowheads, the rounding rule and the shift-invert eigenpair through CHOLMOD."""
import numpy as np
import pytest
import scipy.sparse
from scipy.sparse.linalg import eigsh, spsolve

import hessopt
from optimizers.ordering import nested_dissection
from optimizers.sparse import LDLFactorization, norm_bound, sparse_leftmost_eigenpair, symmetric_csc
from optimizers.supernodal import CHOLMOD_MIN_SIZE, CholmodCholesky, band_bound, choose

EPS = np.finfo(float).eps


def grid_laplacian(m: int, dims: int = 2, dirichlet: bool = True) -> scipy.sparse.csc_matrix:
    """The (2 dims + 1)-point Laplacian on m^dims nodes: Dirichlet (positive definite) or Neumann
    (singular semidefinite, null vector ones)."""
    path = scipy.sparse.diags([-np.ones(m - 1), np.full(m, 2.0), -np.ones(m - 1)], [-1, 0, 1])
    if not dirichlet:
        path = path - scipy.sparse.diags(np.eye(1, m, 0)[0] + np.eye(1, m, m - 1)[0])
    eye = scipy.sparse.identity(m)
    total = scipy.sparse.csc_matrix((m ** dims, m ** dims))
    for axis in range(dims):
        factors = [path if a == axis else eye for a in range(dims)]
        term = factors[0]
        for factor in factors[1:]:
            term = scipy.sparse.kron(term, factor)
        total = total + term
    return symmetric_csc(total.tocsc())


def upper_pattern(h: scipy.sparse.csc_matrix) -> scipy.sparse.csc_matrix:
    upper = scipy.sparse.triu(h + scipy.sparse.identity(h.shape[0]), format="csc")
    upper.sort_indices()
    return upper


def random_symmetric(n: int, density: float, seed: int) -> scipy.sparse.csc_matrix:
    rng = np.random.default_rng(seed)
    a = scipy.sparse.random(n, n, density=density, random_state=rng, format="csc")
    return symmetric_csc(a + a.T)


def arrowhead(n: int) -> scipy.sparse.csc_matrix:
    arrow = scipy.sparse.lil_matrix((n, n))
    arrow.setdiag(4.0)
    arrow[-1, :] = arrow[:, -1] = 1.0
    arrow[-1, -1] = 4.0 * n
    return arrow.tocsc()


def test_cholmod_solves_as_scipy_and_tells_definite_from_not_as_the_eigenvalues_do():
    """Random sparse symmetric matrices shifted just above and below their smallest eigenvalue:
    CHOLMOD's verdict is Sylvester's, its solves those of spsolve to a backward-stable residual."""
    for seed in range(6):
        h = random_symmetric(60, 0.08, seed)
        eigenvalues = np.linalg.eigvalsh(h.toarray())
        ldl = LDLFactorization("cholmod")
        scale = np.abs(eigenvalues).max()
        b = np.random.default_rng(seed).standard_normal(60)
        for shift in (-eigenvalues[0] + 0.05 * scale, -eigenvalues[0] - 0.05 * scale, -eigenvalues[-1] - 1.0):
            factor = ldl.factor(h, shift)
            assert ldl.method == "cholmod"
            assert factor.positive_definite == (eigenvalues[0] + shift > 0)
            if factor.positive_definite:
                shifted = (h + shift * scipy.sparse.identity(60)).tocsc()
                expected = spsolve(shifted, b)
                condition = (eigenvalues[-1] + shift) / (eigenvalues[0] + shift)
                np.testing.assert_allclose(factor.solve(b), expected, rtol=0,
                                           atol=1e3 * 60 * EPS * condition * np.abs(expected).max())
                # the pivots diag(L)^2 of L L^T: their product is the determinant
                np.testing.assert_allclose(np.sum(np.log(factor.pivots)),
                                           np.sum(np.log(eigenvalues + shift)), rtol=1e-10)
            else:
                assert factor.pivots is None
                with pytest.raises(RuntimeError, match="not positive definite"):
                    factor.solve(b)


def test_cholmod_on_a_grid_is_the_dense_solve_and_its_analysis_is_reused():
    h = grid_laplacian(40) + scipy.sparse.diags(np.linspace(0.0, 1.0, 1600))
    h = symmetric_csc(h.tocsc())
    ldl = LDLFactorization("cholmod")
    b = np.random.default_rng(0).standard_normal(1600)
    dense = h.toarray()
    for shift in (0.0, 0.5, 3.0):
        x = ldl.factor(h, shift).solve(b)
        np.testing.assert_allclose(x, np.linalg.solve(dense + shift * np.eye(1600), b), rtol=1e-9, atol=1e-12)
    analysis = ldl._backend._cholesky
    h2 = h.copy()
    h2.data = h2.data * 2.0                      # same pattern, new values: numeric only
    x = ldl.factor(h2).solve(b)
    assert ldl._backend._cholesky is analysis
    np.testing.assert_allclose(2.0 * dense @ x, b, rtol=0, atol=1e-10 * np.abs(b).max())
    assert ldl.factorizations == 4 and ldl.solves == 4
    # nnz(L) from CHOLMOD's column counts: at least the lower triangle of H (no cancellation here)
    assert ldl.factor_nonzeros >= (h.nnz + 1600) // 2


@pytest.mark.parametrize("h, method", [
    (grid_laplacian(80), "cholmod"),                       # 2-D grid, n = 6,400: fill
    (grid_laplacian(18, dims=3), "cholmod"),               # 3-D grid, n = 5,832
    (grid_laplacian(40), "qdldl"),                         # 2-D grid under CHOLMOD_MIN_SIZE
    (grid_laplacian(20_000, dims=1), "qdldl"),             # a chain: a band, no fill
    (arrowhead(20_000), "qdldl"),                          # an arrowhead: dense last row, no fill
])
def test_the_rule_takes_cholmod_on_grids_and_qdldl_on_chains_arrowheads_and_small_problems(h, method):
    upper = upper_pattern(h)
    choice = choose(upper, None)
    assert choice.method == method, choice.reason
    n = h.shape[0]
    if method == "cholmod":
        assert n >= CHOLMOD_MIN_SIZE and choice.cholmod.nonzeros > 2 * upper.nnz
    elif n >= CHOLMOD_MIN_SIZE:   # a band (or arrowhead) bound within twice the matrix's nonzeros
        assert band_bound(upper) <= 2 * upper.nnz and "band" in choice.reason


def test_the_choice_is_overridable_and_unknown_choices_are_refused():
    upper = upper_pattern(grid_laplacian(80))
    assert choose(upper, "qdldl").method == "qdldl"
    chain = upper_pattern(grid_laplacian(100, dims=1))
    assert choose(chain, "cholmod").method == "cholmod"
    with pytest.raises(ValueError, match="'cholmod', 'qdldl' or None"):
        choose(upper, "mumps")
    with pytest.raises(ValueError, match="'cholmod', 'qdldl' or None"):
        LDLFactorization("superlu")


def test_band_bound_is_a_bound_on_the_factor_of_a_band_and_an_arrowhead():
    for h in (grid_laplacian(500, dims=1), arrowhead(500), grid_laplacian(12)):
        ldl = LDLFactorization("qdldl")
        ldl.factor(h, 1.0 + abs(h.diagonal()).max() * h.shape[0])   # diagonally dominant
        assert ldl.factor_nonzeros <= band_bound(upper_pattern(h))


@pytest.mark.parametrize("h", [grid_laplacian(30, dirichlet=False), 3.0 * grid_laplacian(12, dims=3, dirichlet=False)])
def test_cholmod_takes_a_singular_semidefinite_matrix_with_a_rounding_shift(h):
    """The Neumann Laplacian (null vector ones): CHOLMOD meets a pivot within rounding of zero
    and the matrix is factored again at most 2 r higher, r = n eps max|h_ii| (rounding_shift)."""
    n = h.shape[0]
    ldl = LDLFactorization("cholmod")
    factor = ldl.factor(h)
    assert factor.positive_definite and 0 < factor.shift <= 2 * n * EPS * np.abs(h.diagonal()).max()
    b = np.random.default_rng(n).standard_normal(n)
    b -= b.mean()                                     # in the range
    x = factor.solve(b)
    shifted = h + factor.shift * scipy.sparse.identity(n)
    assert np.linalg.norm(shifted @ x - b) <= 1e3 * n * EPS * norm_bound(h) * np.linalg.norm(x)
    # an indefinite matrix is refused, also after the rounding retry
    assert not ldl.factor(h, -1e-3 * norm_bound(h)).positive_definite


def test_the_shift_invert_eigenpair_through_cholmod_is_eigsh():
    h = symmetric_csc((grid_laplacian(30) - 2.5 * scipy.sparse.identity(900)
                       + scipy.sparse.diags(np.linspace(0.0, 0.3, 900))).tocsc())
    ldl = LDLFactorization("cholmod")
    theta, u = sparse_leftmost_eigenpair(h, ldl)
    expected = eigsh(h, k=1, which="SA")[0][0]
    assert ldl.method == "cholmod" and ldl.factorizations >= 1
    assert abs(theta - expected) <= 1e-10 * norm_bound(h)
    assert np.linalg.norm(h @ u - theta * u) <= 1e-10 * norm_bound(h)


def test_nested_dissection_is_a_permutation_that_cuts_a_3d_grids_factorization():
    h = grid_laplacian(20, dims=3)
    order = nested_dissection(h)
    np.testing.assert_array_equal(np.sort(order), np.arange(h.shape[0]))
    upper = upper_pattern(h)
    by_amd = CholmodCholesky(upper)
    dissected = CholmodCholesky(upper, order, "nested dissection")
    assert dissected.flops < 0.8 * by_amd.flops
    # CHOLMOD postorders the order given: the same factor's solve either way
    b = np.random.default_rng(1).standard_normal(h.shape[0])
    assert dissected.factor(upper.data) is None and by_amd.factor(upper.data) is None
    np.testing.assert_allclose(dissected.solve(b), by_amd.solve(b), rtol=1e-10, atol=1e-13)
    shifted = h + scipy.sparse.identity(h.shape[0])        # upper_pattern's values: h + I
    np.testing.assert_allclose(shifted @ dissected.solve(b), b, rtol=0, atol=1e-10)


def grid_energy(x):
    """A convex energy on an m x m grid (m^2 = x.size): a 5-point Laplacian's quadratic plus a
    quartic term, whose Hessian fills in under a Cholesky factorization."""
    m = int(round(np.sqrt(x.size)))
    u = np.pad(x.reshape(m, m), 1)
    return (0.5 * np.sum((u[1:, 1:-1] - u[:-1, 1:-1]) ** 2) + 0.5 * np.sum((u[1:-1, 1:] - u[1:-1, :-1]) ** 2)
            + 0.25 * np.sum(x ** 4) - np.sum(x))


@pytest.mark.parametrize("method", ["newton", "trust-exact"])
def test_a_run_takes_the_same_iterates_with_cholmod_as_with_qdldl(method):
    x0 = np.random.default_rng(2).uniform(-1.0, 1.0, 1600)
    runs = {f: hessopt.minimize(grid_energy, x0, method=method, options={"factorization": f, "sparse": True})
            for f in ("cholmod", "qdldl")}
    assert runs["cholmod"].success and runs["cholmod"].sparse
    assert runs["cholmod"].nit == runs["qdldl"].nit
    np.testing.assert_allclose(runs["cholmod"].x, runs["qdldl"].x, rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="factorization"):
        hessopt.minimize(grid_energy, x0, method=method, options={"factorization": "lu"})
