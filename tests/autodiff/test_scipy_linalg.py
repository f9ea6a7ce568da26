"""scipy.linalg on Tensors: closed-form derivatives, accuracy beyond the small drawn cases, errors that
name the scipy function and its differentiable version, and the values that need no scipy. Values,
finite differences of both orders, batches, JVPs and replay of every function are cases of test_ops.py.
"""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from test_function import assert_replays_exactly, nearby
from test_ops import CASES

import autodiff as ad
import autodiff.numpy as anp
from autodiff.numpy import scipy_linalg

RNG = np.random.default_rng(7)


# --- closed forms -----------------------------------------------------------------------------------

def test_expm_derivatives_along_a_line():
    """d/dt tr exp(tA) = tr(A exp(tA)), d2/dt2 = tr(A^2 exp(tA))."""
    a = RNG.uniform(-1, 1, (3, 3))
    f = lambda t: anp.trace(scipy_linalg.expm(t * a))  # noqa: E731
    e = scipy.linalg.expm(0.7 * a)
    assert math.isclose(ad.grad(f)(0.7), np.trace(a @ e), rel_tol=1e-13)
    assert math.isclose(ad.grad(ad.grad(f))(0.7), np.trace(a @ a @ e), rel_tol=1e-12)


def test_expm_jacobian_at_zero_is_the_identity_and_frechet_at_zero_is_e():
    np.testing.assert_allclose(ad.jacobian(scipy_linalg.expm)(np.zeros((2, 2))).reshape(4, 4), np.eye(4),
                               rtol=0, atol=1e-15)
    e = RNG.standard_normal((3, 3))
    value, frechet = scipy_linalg.expm_frechet(np.zeros((3, 3)), e)
    np.testing.assert_array_equal(value, np.eye(3))
    np.testing.assert_allclose(frechet, e, rtol=1e-15, atol=1e-15)


def test_sqrtm_derivatives_at_the_identity():
    """sqrt(I + tE) = I + tE/2 - t^2 E^2 / 8 + ...: first derivative E/2, second -E^2/4."""
    e = RNG.standard_normal((3, 3))
    f = lambda t: scipy_linalg.sqrtm(np.eye(3) + t * e)  # noqa: E731
    np.testing.assert_allclose(ad.jacobian(f)(0.0), e / 2, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ad.jacobian(ad.jacobian(f))(0.0), -e @ e / 4, rtol=1e-12, atol=1e-12)


def test_cholesky_is_upper_by_default_unlike_numpys():
    a = RNG.uniform(-1, 1, (3, 3))
    spd = a @ a.T + np.eye(3)
    upper = scipy_linalg.cholesky(ad.constant(spd)).numpy()
    np.testing.assert_array_equal(upper, np.triu(upper))
    np.testing.assert_allclose(upper, np.linalg.cholesky(spd).T, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(anp.linalg.cholesky(ad.constant(spd)).numpy(), np.linalg.cholesky(spd))


def test_triangular_and_banded_solves_have_the_transposed_solve_as_gradient(rounding):
    """<w, A^-1 b> has gradient A^-T w in b: checked at sizes where the blocked substitution recurses
    (n > 64) and where the band is long, against scipy's own solves. Two backward-stable solves agree
    to cond(A) eps in norm, not entrywise: an entry 1e-5 among O(1) ones carries their rounding."""
    n = 150
    t = np.tril(RNG.uniform(-1, 1, (n, n))) + 4 * np.eye(n)
    b, w = RNG.standard_normal(n), RNG.standard_normal(n)
    for lower, trans in ((True, 0), (False, 0), (True, 1), (False, 2)):
        a = t if lower else t.T
        x = scipy_linalg.solve_triangular(ad.constant(a), b, trans=trans, lower=lower).numpy()
        rounding.assert_close_to_solve(x, scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower),
                                       a.T if trans else a)
        g = ad.grad(lambda v, a=a, trans=trans, lower=lower: np.sum(
            w * scipy_linalg.solve_triangular(a, v, trans=trans, lower=lower)))(b)
        expected = scipy.linalg.solve_triangular(a, w, trans=1 - min(trans, 1), lower=lower)
        rounding.assert_close_to_solve(g, expected, a if trans else a.T)
    ab = np.vstack([RNG.uniform(-1, 1, (2, n)), 4 + RNG.uniform(-1, 1, n), RNG.uniform(-1, 1, n)])  # (l, u) = (1, 2)
    g = ad.grad(lambda v: np.sum(w * scipy_linalg.solve_banded((1, 2), ab, v)))(b)
    dense = sum(np.diag(ab[2 - k, max(k, 0):n + min(k, 0)], k) for k in (-1, 0, 1, 2))  # A[i, j] = ab[u + i - j, j]
    rounding.assert_close_to_solve(scipy.linalg.solve_banded((1, 2), ab, b), scipy.linalg.solve(dense, b), dense)
    rounding.assert_close_to_solve(g, scipy.linalg.solve(dense.T, w), dense.T)


def test_banded_gradient_in_ab_equals_the_dense_solves():
    """The cotangent of ab is the band of -A^-T w x^T, in scipy's layout A[i, j] = ab[u + i - j, j]; 0
    in the corners of ab, which hold no entry of A."""
    n, l, u = 40, 2, 1
    ab = RNG.uniform(-1, 1, (l + u + 1, n))
    ab[u] += 5
    b, w = RNG.standard_normal(n), RNG.standard_normal(n)
    g = ad.grad(lambda m: np.sum(w * scipy_linalg.solve_banded((l, u), m, b)))(ab)
    rows = np.arange(l + u + 1)[:, None] + np.arange(n)[None, :] - u   # the row of A each entry of ab holds
    inside = (rows >= 0) & (rows < n)
    dense = np.zeros((n, n))
    dense[rows[inside], np.broadcast_to(np.arange(n), rows.shape)[inside]] = ab[inside]
    full = -np.outer(np.linalg.solve(dense.T, w), np.linalg.solve(dense, b))
    expected = np.where(inside, full[np.clip(rows, 0, n - 1), np.arange(n)], 0.0)
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-13)
    assert np.all(g[~inside] == 0.0)


@pytest.mark.parametrize("name", [name for name in CASES if "scipy_linalg" in name or "scipy_signal" in name])
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_every_function_replays_exactly_under_autodiff_function(name, data):
    """No value is read outside the engine (which a trace would refuse): ad.function replays each
    function of scipy_linalg and scipy_signal."""
    problem = data.draw(CASES[name])
    x = np.array(problem.x, dtype=np.float64)
    assert_replays_exactly(problem.engine, [x, nearby(x, np.random.default_rng(3))])


# --- accuracy ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("b", [1e2, 1e4, 1e6])
def test_expm_of_a_far_from_normal_matrix(b):
    """exp([[1, b], [0, -1]]) = [[e, b sinh 1], [0, 1/e]]: Al-Mohy and Higham's example of overscaling."""
    exact = np.array([[math.e, b * math.sinh(1.0)], [0.0, 1 / math.e]])
    result = scipy_linalg.expm(np.array([[1.0, b], [0.0, -1.0]]))
    np.testing.assert_allclose(result, exact, rtol=1e-14, atol=1e-14 * b)


def test_expm_of_large_symmetric_matrices_matches_the_eigendecomposition():
    for norm in (1.0, 10.0, 40.0):
        a = RNG.standard_normal((8, 8))
        s = norm * (a + a.T) / np.linalg.norm(a + a.T, 2)
        w, v = np.linalg.eigh(s)
        exact = (v * np.exp(w)) @ v.T
        np.testing.assert_allclose(scipy_linalg.expm(s), exact, rtol=0, atol=1e-13 * np.exp(norm) * 8)


def test_values_of_numpy_computed_functions_need_no_scipy():
    """expm, the triangular, Cholesky and general solves compute with NumPy: scipy is never loaded."""
    code = """import sys, numpy as np, autodiff as ad
from autodiff.numpy import scipy_linalg as sl
a = np.array([[2.0, 0.5], [0.5, 1.0]])
ad.grad(lambda m: np.sum(sl.expm(m)) + np.sum(sl.cho_solve(sl.cho_factor(m), np.ones(2)))
        + np.sum(sl.solve(m, np.ones(2), assume_a='pos')) + sl.det(m) + np.sum(sl.block_diag(m, m)))(a)
print('scipy' in sys.modules)"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- errors -----------------------------------------------------------------------------------------

SCIPY_CALLS = {
    "sqrtm": lambda x: scipy.linalg.sqrtm(x), "expm": lambda x: scipy.linalg.expm(x),
    "expm_frechet": lambda x: scipy.linalg.expm_frechet(x, x)[1],
    "solve_sylvester": lambda x: scipy.linalg.solve_sylvester(x, x, x),
    "solve_banded": lambda x: scipy.linalg.solve_banded((1, 1), x, x[0]),
    "solve_triangular": lambda x: scipy.linalg.solve_triangular(x, x[0]),
    "cholesky": lambda x: scipy.linalg.cholesky(x), "cho_factor": lambda x: scipy.linalg.cho_factor(x)[0],
    "cho_solve": lambda x: scipy.linalg.cho_solve((x, False), x[0]), "solve": lambda x: scipy.linalg.solve(x, x[0]),
    "inv": lambda x: scipy.linalg.inv(x), "det": lambda x: scipy.linalg.det(x),
    "eigh": lambda x: scipy.linalg.eigh(x)[0], "block_diag": lambda x: scipy.linalg.block_diag(x, x),
}


@pytest.mark.parametrize("name", sorted(SCIPY_CALLS))
def test_scipy_linalg_on_a_tracked_tensor_names_the_differentiable_version(name):
    """scipy.linalg's batching decorator converts first: the message still names the function."""
    a = 3 * np.eye(3) + 0.1
    with pytest.raises(TypeError, match=rf"scipy\.linalg\.{name} converted it.*"
                                        rf"autodiff\.numpy\.scipy_linalg\.{name} is its differentiable version"):
        ad.grad(lambda x: np.sum(SCIPY_CALLS[name](x)))(a)


def test_a_scipy_linalg_function_without_a_version_says_how_to_proceed():
    with pytest.raises(TypeError, match=r"scipy\.linalg\.logm converted it.*write that step with NumPy operations"):
        ad.grad(lambda x: np.sum(scipy.linalg.logm(x)))(3 * np.eye(2) + 0.1)


@pytest.mark.parametrize("call, error, message", [
    (lambda a: scipy_linalg.solve_triangular(a * np.array([1.0, 0.0, 1.0]), np.ones(3)), np.linalg.LinAlgError,
     "resolution failed at diagonal 1"),
    (lambda a: scipy_linalg.solve_triangular(a, np.ones(3), trans="X"), ValueError, "invalid trans"),
    (lambda a: scipy_linalg.solve_triangular(a, np.ones(4)), ValueError, "incompatible"),
    (lambda a: scipy_linalg.solve(a, np.ones(3), assume_a="circulant"), ValueError, "not a recognized"),
    (lambda a: scipy_linalg.solve(a, np.ones(3), assume_a="banded"), NotImplementedError, "use solve_banded"),
    (lambda a: scipy_linalg.solve(a + 1j, np.ones(3), transposed=True), NotImplementedError, "complex"),
    (lambda a: scipy_linalg.solve_banded((1, 1), a[:2], np.ones(3)), ValueError, "l\\+u\\+1 \\(3\\)"),
    (lambda a: scipy_linalg.solve_banded((1, 1), a, np.ones(4)), ValueError, "incompatible"),
    (lambda a: scipy_linalg.expm(a[:2]), ValueError, "square matrices"),
    (lambda a: scipy_linalg.expm_frechet(a, a[:2, :2]), ValueError, "square matrices of one order"),
    (lambda a: scipy_linalg.expm_frechet(a, a, method="Pade"), ValueError, "Unknown implementation"),
    (lambda a: scipy_linalg.eigh(a, np.eye(3)), NotImplementedError, "generalized"),
    (lambda a: scipy_linalg.block_diag(np.ones((2, 2, 2))), ValueError, "at most 2 dimensions"),
])
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call(3 * np.eye(3) + 0.1)


def test_the_cholesky_factorization_refuses_complex_input_while_differentiated():
    a = (3 + 0.5j) * np.eye(2)
    with pytest.raises(TypeError, match="cholesky does not differentiate complex numbers"):
        ad.grad(lambda x: np.real(np.sum(scipy_linalg.cholesky(x * a))))(1.0)
    np.testing.assert_allclose(scipy_linalg.cholesky(np.array([[4.0, 2j], [-2j, 2.0]])),
                               scipy.linalg.cholesky(np.array([[4.0, 2j], [-2j, 2.0]])), rtol=1e-15)
