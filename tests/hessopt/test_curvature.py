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


# --- trace and diagonal ----------------------------------------------------------------------------

def test_hutch_plus_plus_is_within_one_percent_with_100_products_on_a_decaying_spectrum():
    eigenvalues = 1.0 / np.arange(1, 501) ** 2
    A = Counted(_symmetric(500, eigenvalues))
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
    block = curvature.SymmetricOperator(op, block="b1")
    assert np.allclose(block.matmat(np.eye(5)), H[15:20, 15:20], atol=1e-12)
    assert block.products == 5


def test_blocks_of_a_hessian_over_variables():
    variables = [ad.Variable(PARAMS["W1"]), ad.Variable(PARAMS["b1"]), ad.Variable(PARAMS["W2"])]
    op = ad.hessian_operator(lambda: mlp_loss(dict(zip(("W1", "b1", "W2"), variables))), variables)
    H = op.to_dense()
    block = curvature.SymmetricOperator(op, block=2)
    assert np.allclose(block.matmat(np.eye(10)), H[20:, 20:], atol=1e-12)


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
