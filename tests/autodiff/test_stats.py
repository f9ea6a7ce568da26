"""scipy.stats' distributions on Tensors (autodiff.numpy.stats): scipy's values outside the support
and for invalid parameters, closed-form derivatives, and errors that name our version. Finite
differences of both orders, batches, JVPs and replay of every function are cases of test_ops.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

import autodiff as ad
from autodiff.numpy import stats

# Points inside and outside each support, and invalid parameters (scale <= 0, df <= 0): scipy's
# values there are -inf, 0, 1 or NaN.
EDGE_CASES = [
    ("norm", "logpdf", (np.array([-1.0, 0.5, 2.0]), 0.3, np.array([1.5, -1.0, 0.0]))),
    ("t", "logcdf", (np.array([-1.0, 0.5, 2.0]), np.array([3.0, -1.0, 2.0]), 0.0, 1.2)),
    ("chi2", "logpdf", (np.array([-1.0, 0.0, 0.5, 3.0]), 2.5)),
    ("chi2", "cdf", (np.array([-1.0, 0.0, 0.5, 3.0]), 2.5, 0.2, 1.3)),
    ("gamma", "pdf", (np.array([-1.0, 0.5, 3.0]), np.array([1.7, 0.0, -2.0]))),
    ("gamma", "sf", (np.array([-1.0, 0.5, 3.0]), 1.7)),
    ("beta", "logpdf", (np.array([-0.5, 0.25, 0.75, 1.5]), 2.0, 3.0)),
    ("beta", "cdf", (np.array([-0.5, 0.25, 0.75, 1.5]), 2.0, 3.0)),
    ("poisson", "logpmf", (np.array([-1.0, 0.0, 2.0, 2.5]), 1.5)),
    ("poisson", "cdf", (np.array([-1.0, 0.0, 2.0, 2.5]), np.array([1.5, 1.5, -1.0, 0.0]))),
]


@pytest.mark.parametrize("name, method, args", EDGE_CASES, ids=[f"{n}.{m}" for n, m, _ in EDGE_CASES])
def test_values_outside_the_support_and_for_invalid_parameters_are_scipys(name, method, args):
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy's own, at scale 0
        expected = getattr(getattr(scipy.stats, name), method)(*args)
    with np.errstate(all="raise"):  # the masked branches compute at safe points: no warning
        got = getattr(getattr(stats, name), method)(*[ad.constant(a) for a in args])
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14)


def test_outside_the_support_the_gradient_is_zero_not_nan():
    x = np.array([-1.0, 2.0])
    g = ad.grad(lambda x: np.sum(stats.gamma.pdf(x, 2.5)))(x)
    assert g[0] == 0.0 and np.isfinite(g[1])
    g = ad.grad(lambda x: np.sum(stats.beta.cdf(x, 2.0, 3.0)))(np.array([-0.5, 1.5]))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_normal_log_likelihood_derivatives_are_the_closed_forms():
    x, loc, scale = np.array([0.3, -1.2, 2.0]), 0.4, 1.7
    z = (x - loc) / scale
    g_x, g_loc, g_scale = ad.grad(lambda x, loc, scale: np.sum(stats.norm.logpdf(x, loc, scale)),
                                  argnums=(0, 1, 2))(x, loc, scale)
    np.testing.assert_allclose(g_x, -z / scale, rtol=1e-14)
    assert float(g_loc) == pytest.approx(np.sum(z) / scale, rel=1e-14)
    assert float(g_scale) == pytest.approx(np.sum(z ** 2 - 1) / scale, rel=1e-14)
    # the cdf's derivative is the density, for t too
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(stats.t.cdf(x, 3.5, loc, scale)))(x),
                               scipy.stats.t.pdf(x, 3.5, loc, scale), rtol=1e-13)


def test_multivariate_normal_gradient_in_cov_is_the_closed_form_on_the_lower_triangle():
    """d logpdf / d Sigma = (P d d' P - P) / 2 with P = Sigma^-1, d = x - mean; scipy and NumPy read
    the lower triangle, so an off-diagonal entry there gets both halves, and the upper triangle 0."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    x, mean = rng.normal(size=3), rng.normal(size=3)
    g = ad.grad(lambda c: stats.multivariate_normal.logpdf(x, mean, c))(cov)
    p = np.linalg.inv(cov)
    d = x - mean
    full = 0.5 * (p @ np.outer(d, d) @ p - p)
    np.testing.assert_allclose(g, np.tril(2 * full) - np.diag(np.diag(full)), rtol=1e-12, atol=1e-14)
    assert float(stats.multivariate_normal.logpdf(x, mean, cov)) == pytest.approx(
        scipy.stats.multivariate_normal.logpdf(x, mean, cov), rel=1e-14)


def test_multivariate_normal_refuses_what_scipy_refuses():
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular"):
        stats.multivariate_normal.logpdf(ad.constant([0.0, 0.0]), None, singular)
    with pytest.raises(ValueError, match="positive semidefinite"):
        stats.multivariate_normal.logpdf(ad.constant([0.0, 0.0]), None, np.array([[1.0, 0.0], [0.0, -1.0]]))
    # allowed: the pseudo-determinant on the range, -inf off the support (as scipy)
    points = np.array([[0.5, 0.5], [0.5, -0.5]])
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(ad.constant(points), None, singular,
                                                                allow_singular=True).numpy(),
                               scipy.stats.multivariate_normal.logpdf(points, None, singular, allow_singular=True),
                               rtol=1e-14)


def test_dirichlet_refuses_a_point_off_the_simplex():
    with pytest.raises(ValueError, match="simplex"):
        stats.dirichlet.logpdf(ad.constant([0.5, 0.6, 0.1]), np.ones(3))
    assert stats.dirichlet.logpdf(ad.constant([0.5, 0.25, 0.25]), np.array([1.0, 2.0, 3.0])).numpy() == \
        pytest.approx(scipy.stats.dirichlet.logpdf([0.5, 0.25, 0.25], [1.0, 2.0, 3.0]), rel=1e-14)


@pytest.mark.parametrize("call, ours", [
    (lambda x: scipy.stats.norm.logpdf(x, 1.0), "autodiff.numpy.stats.norm.logpdf"),
    (lambda x: scipy.stats.norm(1.0, 2.0).cdf(x), "autodiff.numpy.stats.norm.cdf"),
    (lambda x: scipy.stats.multivariate_normal.logpdf(x, np.zeros(2)),
     "autodiff.numpy.stats.multivariate_normal.logpdf"),
])
def test_scipy_stats_on_a_tracked_tensor_names_our_version(call, ours):
    with pytest.raises(TypeError, match=rf"converted it.*{ours.replace('.', r'.')} is its differentiable version"):
        ad.grad(lambda x: np.sum(call(x)))(np.array([0.3, 0.5]))


def test_a_scipy_stats_function_without_a_version_here_says_so():
    with pytest.raises(TypeError, match=r"scipy\.stats\.cauchy\.logpdf converted it.*write that step"):
        ad.grad(lambda x: np.sum(scipy.stats.cauchy.logpdf(x)))(np.array([0.3, 0.5]))


def test_the_log_tails_of_the_normal_are_accurate_far_out():
    """logcdf at -40 is log_ndtr's -804.6..., not log(0)."""
    assert stats.norm.logcdf(ad.constant(-40.0)).numpy() == pytest.approx(scipy.stats.norm.logcdf(-40.0),
                                                                           rel=1e-14)
    assert math.isfinite(float(ad.grad(stats.norm.logsf)(40.0)))


def test_complex_arguments_are_refused():
    with pytest.raises(TypeError, match=r"stats\.norm\.logpdf takes real arguments"):
        stats.norm.logpdf(ad.constant(np.array([1.0 + 1.0j])))
    with pytest.raises(TypeError, match=r"multivariate_normal\.logpdf takes real arguments"):
        stats.multivariate_normal.logpdf(np.zeros(2), mean=np.array([1j, 0.0]))
