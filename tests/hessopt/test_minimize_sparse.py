"""minimize with sparse exact Hessians: the automatic switch, sparse=True on small problems (the
dense path's iterates), and every fallback to dense with its reason."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import OptimizeWarning

import autodiff as ad
import hessopt
from hessopt._hessians import SparseAutodiff


def chained(x):
    """scipy's rosen in plain NumPy: a tridiagonal Hessian."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def coupled(x):
    """A dense Hessian: every pair of variables meets in the square of the sum."""
    return np.sum(x ** 4) + np.sum(x) ** 2


START = np.tile([-1.2, 1.0], 6)   # n = 12: indefinite Hessians on the way


@pytest.mark.parametrize("method", ["newton", "trust-exact", "dogleg"])
def test_sparse_true_on_a_small_problem_takes_the_dense_iterates(method):
    sparse = hessopt.minimize(chained, START, method=method, options={"sparse": True})
    dense = hessopt.minimize(chained, START, method=method)
    assert sparse.sparse and not dense.sparse and "dense_reason" not in dense
    assert sparse.hessian_source == "autodiff (sparse)" and dense.hessian_source == "autodiff"
    assert sparse.success and dense.success and sparse.nit == dense.nit
    np.testing.assert_allclose(sparse.history["x"], dense.history["x"], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("method", ["newton", "trust-exact"])
def test_the_sparse_path_is_taken_by_itself_from_1000_variables(method):
    result = hessopt.minimize(chained, np.full(2000, 1.2), method=method)
    assert result.sparse and result.success and result.hessian_source == "autodiff (sparse)"
    np.testing.assert_allclose(result.x, 1.0, rtol=1e-8)
    assert result.nhev == result.nit + 1   # one sparse Hessian an iterate, none per product


def test_the_automatic_switch_leaves_small_and_dense_problems_dense():
    small = hessopt.minimize(chained, np.full(999, 1.2), method="newton", options={"maxiter": 1})
    assert not small.sparse and "dense_reason" not in small     # not considered below 1,000
    dense = hessopt.minimize(coupled, np.ones(1000), method="newton", options={"maxiter": 0})
    assert not dense.sparse and dense.dense_reason.startswith("the Hessian is 100% dense")
    off = hessopt.minimize(chained, np.full(1000, 1.2), method="newton", options={"sparse": False, "maxiter": 1})
    assert not off.sparse and off.hessian_source == "autodiff"


def test_bounds_with_the_sparse_path():
    lower = np.where(np.arange(2000) % 10 == 5, 1.1, 0.0)
    upper = np.where(np.arange(2000) % 10 == 0, 0.9, np.inf)
    result = hessopt.minimize(chained, np.full(2000, 1.2), method="newton", bounds=list(zip(lower, upper)))
    assert result.sparse and result.success
    assert np.all(result.x >= lower) and np.all(result.x <= upper)
    assert np.all(result.active_mask[5::10] == -1) and np.all(result.active_mask[::10] == 1)


def fallback(**kwargs):
    """A run with sparse=True that falls back to dense: the warning and the result."""
    with pytest.warns(OptimizeWarning, match="options\\['sparse'\\] is True, but the Hessian is dense") as caught:
        result = hessopt.minimize(kwargs.pop("fun", chained), kwargs.pop("x0", START), method="newton",
                                  options={"sparse": True}, **kwargs)
    assert not result.sparse and result.success
    assert result.dense_reason in str(caught[0].message)
    return result


def test_fallback_with_the_users_gradient_or_products():
    gradient = ad.grad(chained)
    assert "jac" in fallback(jac=gradient).dense_reason
    assert "products only" in fallback(hessp=lambda x, p: ad.hvp(chained, x, p)).dense_reason


def test_fallback_with_variables():
    w = ad.Variable(START.copy())
    result = fallback(fun=lambda: chained(w), x0=[w])
    assert "Variables" in result.dense_reason
    assert chained(w.numpy()) == pytest.approx(result.fun, rel=1e-12)   # the Variables hold the answer


def test_fallback_when_the_pattern_cannot_be_found(monkeypatch):
    def refuse(self, x):
        raise ValueError("no pattern here")
    monkeypatch.setattr(SparseAutodiff, "pattern", refuse)
    assert fallback().dense_reason == ("the Hessian's sparsity pattern could not be found: ValueError: "
                                       "no pattern here")


def test_a_function_the_tracer_refuses_still_gets_sparse_hessians():
    def branchy(x):   # reads a value: recorded eagerly, its pattern found again at each point
        return chained(x) + (0.0 if float(ad.stop_gradient(x[0])) > 0 else 1e-3 * x[0] ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = hessopt.minimize(branchy, np.full(1000, 1.2), method="newton")
    assert result.sparse and result.success and "float" in result.untraced_reason
    np.testing.assert_allclose(result.x, 1.0, rtol=1e-8)


def test_a_users_sparse_hess_is_factored_as_a_sparse_matrix():
    calls = []

    def hess(x):
        calls.append(1)
        return scipy.sparse.csc_matrix(ad.sparse_hessian(chained)(x))
    result = hessopt.minimize(chained, np.full(1000, 1.2), method="trust-exact", hess=hess)
    assert result.sparse and result.success and result.hessian_source == "hess"
    assert result.nhev == len(calls)


def chain_differences(x):
    """A singular positive semidefinite Hessian (2 x the path Laplacian, null vector ones)."""
    return np.sum((x[1:] - x[:-1]) ** 2)


@pytest.mark.parametrize("method", ["newton", "trust-exact", "dogleg"])
@pytest.mark.parametrize("fun, x0", [(lambda x: np.sum((x - 1) ** 4), np.ones(1000)),   # H = 0 at x0
                                     (lambda x: np.sum(x * 0), np.ones(1000)),          # no Hessian entry
                                     (lambda x: 0.0 * np.sum(x), np.linspace(0, 1, 1000))],
                         ids=["quartic at its minimizer", "x times 0", "0 times sum"])
def test_the_sparse_path_passes_points_where_the_hessian_vanishes(method, fun, x0):
    """The issue's runs (ARPACK error -9 from the final check at H = 0; an IndexError on an empty
    pattern): a first-order point with H = 0 is a minimum to the second-order check, as on the
    dense path."""
    sparse = hessopt.minimize(fun, x0, method=method)
    dense = hessopt.minimize(fun, x0, method=method, options={"sparse": False})
    assert sparse.sparse and not dense.sparse
    assert sparse.success and dense.success and sparse.nit == dense.nit == 0


@pytest.mark.parametrize("method", ["newton", "trust-exact", "dogleg"])
def test_a_singular_semidefinite_hessian_takes_one_step_on_the_sparse_path(method):
    """sum((x[1:] - x[:-1])^2) at n = 2,000 took 14,950 sparse Newton iterations (an exact zero
    pivot read as negative curvature, the shift then 1e-3 ||H||_F); the step on the range of H
    reaches a constant vector at once, as the dense path does. At n = 12 with sparse=True the
    iterates are the dense path's off the null space (along ones each carries the gradient's
    rounding error over a rounding-level shift, which f does not see); there the Newton step has
    condition lambda_max / lambda_+ = 60, so they agree to 1e-12 relative, asserted at 1e-9."""
    x0 = np.random.default_rng(0).standard_normal(2000)
    result = hessopt.minimize(chain_differences, x0, method=method, options={"maxiter": 10})
    assert result.sparse and result.success and result.nit == 1
    small = x0[:12]
    sparse = hessopt.minimize(chain_differences, small, method=method, options={"sparse": True})
    dense = hessopt.minimize(chain_differences, small, method=method)
    assert sparse.sparse and sparse.success and dense.success and sparse.nit == dense.nit == 1

    def centered(x):
        return x - x.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(centered(sparse.history["x"]), centered(dense.history["x"]), rtol=0,
                               atol=1e-9 * np.linalg.norm(centered(small)))
