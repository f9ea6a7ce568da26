"""hessopt.curvature against numpy.linalg on random symmetric matrices and on real Hessians."""
import numpy as np
import pytest
import scipy.sparse
from scipy.sparse.linalg import aslinearoperator

import autodiff as ad
import autodiff.numpy as anp
from hessopt import curvature


def _symmetric(n, eigenvalues, seed=0):
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))[0]
    A = (Q * eigenvalues) @ Q.T
    return 0.5 * (A + A.T)


rng = np.random.default_rng(1)
X = rng.standard_normal((20, 3))
T = rng.standard_normal((20, 2))
PARAMS = {"W1": 0.8 * rng.standard_normal((3, 5)), "b1": 0.1 * rng.standard_normal(5),
          "W2": 0.8 * rng.standard_normal((5, 2))}


def mlp_loss(p):
    return anp.mean((anp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] - T) ** 2)


class Counted:
    """An operator with only matvec and shape, counting its products."""

    def __init__(self, A):
        self.A, self.shape, self.calls = A, A.shape, 0

    def matvec(self, v):
        self.calls += 1
        return self.A @ v


# --- eigenvalues -----------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["LA", "SA", "LM"])
def test_top_eigenvalues_match_eigh_on_a_random_symmetric_matrix(which):
    B = np.random.default_rng(2).standard_normal((120, 120))
    A = 0.5 * (B + B.T)
    exact = np.linalg.eigvalsh(A)
    expected = {"LA": exact[::-1], "SA": exact, "LM": exact[np.argsort(-np.abs(exact))]}[which][:5]
    values, vectors = curvature.top_eigenvalues(A, k=5, which=which, seed=0)
    assert np.allclose(values, expected, rtol=1e-8, atol=0)
    assert vectors.shape == (120, 5)
    assert np.allclose(vectors.T @ vectors, np.eye(5), atol=1e-10)
    assert np.linalg.norm(A @ vectors - vectors * values, axis=0).max() <= 1e-8 * np.abs(values).max()


def test_top_5_eigenvalues_of_a_hessian_operator_to_relative_error_1e_8():
    op = ad.hessian_operator(mlp_loss, PARAMS)
    exact = np.linalg.eigvalsh(op.to_dense())[::-1][:5]
    values, vectors = curvature.top_eigenvalues(op, k=5, seed=0)
    assert np.max(np.abs(values / exact - 1)) < 1e-8
    assert np.allclose(op.matmat(vectors), vectors * values, atol=1e-8 * values[0])


def test_smallest_algebraic_finds_the_negative_curvature_of_an_indefinite_hessian():
    rosenbrock = lambda z: (1 - z[0]) ** 2 + 100 * (z[1] - z[0] ** 2) ** 2  # noqa: E731
    x = np.array([0.5, 1.0])                    # 400 (x0^2 - x1) + 2 < 0 here: indefinite
    op = ad.hessian_operator(rosenbrock, x)
    exact = np.linalg.eigvalsh(op.to_dense())
    assert exact[0] < 0 < exact[1]
    (value,), vectors = curvature.top_eigenvalues(op, k=1, which="SA", seed=0)
    assert value == pytest.approx(exact[0], rel=1e-10)
    assert vectors[:, 0] @ op.matvec(vectors[:, 0]) == pytest.approx(exact[0], rel=1e-10)


def test_repeated_eigenvalues_are_all_found():
    A = _symmetric(8, np.array([3.0, 3.0, 3.0, 2.0, 1.0, 1.0, 0.0, -1.0]))
    values, vectors = curvature.top_eigenvalues(A, k=4, seed=0)
    assert np.allclose(values, [3, 3, 3, 2], rtol=1e-10)
    assert np.allclose(vectors.T @ vectors, np.eye(4), atol=1e-10)
    assert np.allclose(curvature.top_eigenvalues(np.eye(5), k=5)[0], np.ones(5))


def test_top_eigenvalues_of_a_block_and_through_scipy():
    op = ad.hessian_operator(mlp_loss, PARAMS)
    H = op.to_dense()
    w1 = H[:15, :15]
    assert np.allclose(curvature.top_eigenvalues(op, k=2, block="W1", seed=0)[0],
                       np.linalg.eigvalsh(w1)[::-1][:2], rtol=1e-8)
    assert np.allclose(curvature.top_eigenvalues(op.as_linear_operator(), k=2, seed=0)[0],
                       np.linalg.eigvalsh(H)[::-1][:2], rtol=1e-8)


def test_top_eigenvalues_warns_when_maxiter_is_too_small():
    A = np.diag(np.linspace(0, 1, 200))
    with pytest.warns(RuntimeWarning, match="raise maxiter"):
        curvature.top_eigenvalues(A, k=3, maxiter=5, seed=0)


# --- spectral density ------------------------------------------------------------------------------

def test_spectral_density_nodes_are_the_eigenvalues_of_a_small_matrix_and_weights_sum_to_one():
    eigenvalues = np.array([-2.0, -0.5, 0.1, 1.0, 1.5, 3.0, 4.0, 7.0])
    A = _symmetric(8, eigenvalues)
    density = curvature.spectral_density(A, num_steps=80, num_probes=4, seed=0)
    assert density.nodes.shape == density.weights.shape == (4, 8)
    assert np.allclose(density.nodes, eigenvalues, atol=1e-10)
    assert np.allclose(density.weights.sum(axis=1), 1.0)
    # the quadrature weights are the squared components of the probe along the eigenvectors
    Q = np.linalg.eigh(A)[1]
    probe = np.random.default_rng(0).integers(0, 2, 8) * 2.0 - 1.0
    assert np.allclose(density.weights[0], (Q.T @ probe) ** 2 / 8, atol=1e-10)


def _small_network_loss(p):
    """A 3-4-2 tanh network's squared error: 26 parameters."""
    return anp.mean((anp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"] - T) ** 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spectral_density_with_more_steps_than_dimensions_weights_only_eigenvalues(seed):
    """80 steps on a 26-parameter Hessian: the Krylov space closes, and every node that carries
    weight is an eigenvalue (the plain recurrence ran past n and gave nodes off the spectrum)."""
    params = dict(PARAMS, W1=PARAMS["W1"][:, :4], b1=PARAMS["b1"][:4], W2=PARAMS["W2"][:4],
                  b2=np.array([0.1, -0.2]))
    op = ad.hessian_operator(_small_network_loss, params)
    assert op.shape == (26, 26)
    exact = np.linalg.eigvalsh(op.to_dense())
    density = curvature.spectral_density(op, num_steps=80, num_probes=10, seed=seed)
    weighted = density.nodes[density.weights > 0]
    distance = np.abs(weighted[:, None] - exact[None, :]).min(axis=1)
    assert distance.max() <= 1e-6 * np.abs(exact).max()
    assert np.allclose(density.weights.sum(axis=1), 1.0, rtol=1e-12)


def test_spectral_density_stops_at_an_invariant_subspace():
    """Three distinct eigenvalues, each four times: every probe's Krylov space closes after three
    steps, and its three nodes are the eigenvalues (the rest padded at weight 0)."""
    A = _symmetric(12, np.repeat([-1.0, 0.5, 3.0], 4), seed=4)
    density = curvature.spectral_density(A, num_steps=80, num_probes=3, seed=0)
    assert density.nodes.shape == (3, 12)
    assert np.allclose(density.nodes[:, :3], [-1.0, 0.5, 3.0], atol=1e-12)
    assert np.all(density.weights[:, 3:] == 0)
    assert np.allclose(density.weights.sum(axis=1), 1.0, rtol=1e-12)


def test_density_integrates_to_one_and_estimates_the_eigenvalue_distribution():
    B = np.random.default_rng(3).standard_normal((300, 300))
    A = (B + B.T) / np.sqrt(2 * 300)                       # semicircle on [-2, 2]
    for reorthogonalize in (True, False):
        density = curvature.spectral_density(A, num_steps=40, num_probes=8, seed=0,
                                             reorthogonalize=reorthogonalize)
        grid = np.linspace(-4, 4, 4001)
        values = density.density(grid, sigma=0.1)
        assert np.trapezoid(values, grid) == pytest.approx(1.0, abs=1e-9)
        exact = curvature.SpectralDensity.from_eigenvalues(np.linalg.eigvalsh(A)).density(grid, 0.1)
        assert np.trapezoid(np.abs(values - exact), grid) < 0.1   # L1 distance of the densities
    # the second moment tr(A^2)/n is exact from 2+ Lanczos steps (Gauss quadrature is exact to
    # degree 2m - 1), up to the probes' variance
    assert np.sum(density.weights * density.nodes ** 2) / 8 == pytest.approx(
        np.trace(A @ A) / 300, rel=0.05)


def test_outliers_are_the_eigenvalues_detached_from_the_bulk():
    eigenvalues = np.concatenate([np.linspace(-0.1, 0.1, 100), [2.0, 5.0]])
    A = _symmetric(102, eigenvalues)
    density = curvature.spectral_density(A, num_steps=60, num_probes=5, seed=0)
    assert np.allclose(density.outliers(), [2.0, 5.0], rtol=1e-8)
    assert curvature.SpectralDensity.from_eigenvalues(np.linspace(-1, 1, 50)).outliers().size == 0


# --- trace and diagonal ----------------------------------------------------------------------------

def test_hutch_plus_plus_is_within_one_percent_with_100_products_on_a_decaying_spectrum():
    eigenvalues = 1.0 / np.arange(1, 301) ** 2
    A = Counted(_symmetric(300, eigenvalues))
    errors = [abs(curvature.trace(A, 100, seed=seed) / eigenvalues.sum() - 1) for seed in range(5)]
    assert max(errors) < 0.01
    assert A.calls == 5 * 100
    # Hutchinson's plain average with the same budget is an order of magnitude worse here
    plain = [abs(curvature.trace(A.A, 100, "hutchinson", seed=s) / eigenvalues.sum() - 1)
             for s in range(5)]
    assert np.mean(plain) > 3 * np.mean(errors)


def test_hutchinson_is_exact_on_a_diagonal_matrix_and_unbiased():
    D = np.diag(np.arange(1.0, 11.0))
    assert curvature.trace(D, 3, "hutchinson", seed=0) == pytest.approx(55.0, rel=1e-14)
    A = _symmetric(30, np.linspace(-2, 5, 30))
    estimates = [curvature.trace(A, 200, "hutchinson", seed=s) for s in range(20)]
    assert np.mean(estimates) == pytest.approx(np.trace(A), abs=4 * np.std(estimates) / np.sqrt(20))


def test_hutch_plus_plus_is_exact_when_the_sketch_spans_the_space():
    A = _symmetric(12, np.linspace(-3, 4, 12))
    assert curvature.trace(A, 40, seed=0) == pytest.approx(np.trace(A), rel=1e-12)


def test_diagonal_estimate_converges_and_is_exact_for_diagonal_matrices():
    A = _symmetric(40, np.linspace(1, 3, 40))
    estimate = curvature.diagonal(A, 4000, seed=0)
    assert np.abs(estimate - np.diag(A)).max() < 0.05
    assert np.allclose(curvature.diagonal(np.diag([1.0, -2.0, 3.0]), 1, seed=0), [1, -2, 3])


def test_every_kind_of_operator_gives_the_same_trace():
    A = _symmetric(25, np.linspace(-1, 2, 25))
    kinds = [A, scipy.sparse.csr_array(A), aslinearoperator(A), Counted(A), ad.constant(A)]
    traces = [curvature.trace(kind, 30, seed=3) for kind in kinds]
    assert np.allclose(traces, traces[0], rtol=1e-12)


def test_trace_of_a_hessian_operator_and_of_one_block():
    op = ad.hessian_operator(mlp_loss, PARAMS)
    H = op.to_dense()
    n = H.shape[0]
    assert curvature.trace(op, 3 * n, seed=0) == pytest.approx(np.trace(H), rel=1e-10)
    w2 = slice(3 * 5 + 5, n)
    assert curvature.trace(op, 30, seed=0, block="W2") == pytest.approx(np.trace(H[w2, w2]), rel=1e-10)
    block = curvature.Operator(op, block="b1")
    assert np.allclose(block.matmat(np.eye(5)), H[15:20, 15:20], atol=1e-12)
    assert block.products == 5


def test_blocks_of_a_hessian_over_variables_by_index_variable_or_name():
    variables = [ad.Variable(PARAMS[key], name=f"dense/{key}") for key in ("W1", "b1", "W2")]
    op = ad.hessian_operator(lambda: mlp_loss(dict(zip(("W1", "b1", "W2"), variables))), variables)
    H = op.to_dense()
    for block in (2, variables[2], "dense/W2"):
        assert np.allclose(curvature.Operator(op, block=block).matmat(np.eye(10)), H[20:, 20:],
                           atol=1e-12)
    assert curvature.trace(op, 15, seed=0, block=variables[1]) == pytest.approx(
        np.trace(H[15:20, 15:20]), rel=1e-10)
    with pytest.raises(ValueError, match=r"blocks are \['dense/W1', 'dense/b1', 'dense/W2'\]"):
        curvature.Operator(op, block=ad.Variable(PARAMS["W2"]))   # the values, another Variable
    twins = [ad.Variable(np.ones(2), name="w"), ad.Variable(np.ones(2), name="w")]
    twin_op = ad.hessian_operator(lambda: np.sum(twins[0] ** 2 * twins[1]), twins)
    with pytest.raises(ValueError, match="names 2 parts"):
        curvature.Operator(twin_op, block="w")
    assert np.allclose(curvature.Operator(twin_op, block=twins[1]).matmat(np.eye(2)), 0.0)


def test_blocks_by_key_path_of_a_nested_pytree_and_of_a_traced_function():
    def loss(p):
        return mlp_loss({"W1": p["hidden"]["W"], "b1": p["hidden"]["b"], "W2": p["out"]})

    params = {"hidden": {"W": PARAMS["W1"], "b": PARAMS["b1"]}, "out": PARAMS["W2"]}
    for f in (loss, ad.function(loss)):
        op = ad.hessian_operator(f, params)
        H = op.to_dense()
        assert np.allclose(curvature.Operator(op, block=("hidden", "b")).matmat(np.eye(5)),
                           H[15:20, 15:20], atol=1e-12)
        assert curvature.Operator(op, block="hidden").n == 20
        with pytest.raises(ValueError, match="is not in the parameters"):
            curvature.Operator(op, block=("hidden", "c"))


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    (np.ones((3, 4)), "square"),
    (np.ones((2, 2, 2)), "shape"),
    (np.array([[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
    (scipy.sparse.csr_array(np.array([[1.0, 2.0], [0.0, 1.0]])), "not symmetric"),
])
def test_non_square_or_non_symmetric_matrices_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        curvature.trace(bad)


def test_bad_arguments_are_named():
    A = np.eye(4)
    with pytest.raises(ValueError, match="k must be an integer with 1 <= k <= n = 4"):
        curvature.top_eigenvalues(A, k=5)
    with pytest.raises(ValueError, match="which must be"):
        curvature.top_eigenvalues(A, which="BE")
    with pytest.raises(ValueError, match="num_steps"):
        curvature.spectral_density(A, num_steps=0)
    with pytest.raises(ValueError, match="sigma must be positive"):
        curvature.spectral_density(A, seed=0).density([0.0], sigma=0.0)
    with pytest.raises(ValueError, match="unknown trace method"):
        curvature.trace(A, method="girard")
    with pytest.raises(ValueError, match="num_products"):
        curvature.trace(A, 2)
    with pytest.raises(ValueError, match="num_products"):
        curvature.diagonal(A, 0)
    op = ad.hessian_operator(mlp_loss, PARAMS)
    with pytest.raises(ValueError, match=r"blocks are \['W1', 'b1', 'W2'\]"):
        curvature.trace(op, block="W3")
    with pytest.raises(ValueError, match="not built at one"):
        curvature.trace(A, block="W1")
    assert curvature.trace(A, 9, seed=0, block=slice(1, 3)) == pytest.approx(2.0)
