"""NumPy habits met in code written for NumPy, JAX or autograd: conversions, column-major
reshapes, and a clear error for in-place assignment."""
from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp


@pytest.mark.parametrize("value", [np.float64(2.0), 2.0, [1.0, 2.0], (1, 2), np.arange(3.0)])
def test_asarray_of_plain_values_is_numpy_asarray(value):
    result = anp.asarray(value)
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, np.asarray(value))


def test_asarray_keeps_tensors_and_stacks_lists_of_them():
    x = ad.constant([1.0, 2.0])
    assert anp.asarray(x) is x
    g = ad.grad(lambda t: anp.sum(anp.asarray([t[0], 2.0 * t[1]]) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [2.0, 16.0])


def test_masked_assignment_names_the_differentiable_ways():
    def f(x):
        z = x * 2
        z[z < 0] = 0
        return np.sum(z)

    with pytest.raises(TypeError, match=r"np\.where\(z < 0, 0, z\).*np\.maximum"):
        ad.grad(f)(np.array([1.0, -1.0]))


def test_the_safe_where_pattern_has_finite_gradients():
    """np.where(x > 0, np.sqrt(x), 0) differentiates both branches: sqrt's slope at 0 is inf and
    0 * inf is NaN. Feeding the unused branch a safe value keeps the gradient finite (docs/guides/differentiate.md)."""
    x = np.array([0.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        naive = ad.grad(lambda t: np.sum(np.where(t > 0, np.sqrt(t), 0.0)))(x)
    assert np.isnan(naive[0])
    safe = ad.grad(lambda t: np.sum(np.where(t > 0, np.sqrt(np.where(t > 0, t, 1.0)), 0.0)))(x)
    np.testing.assert_array_equal(safe, [0.0, 0.25])


def test_fft_of_a_real_signal_has_parsevals_gradient():
    """sum |fft(x)|^2 = n sum x^2 (Parseval): gradient 2 n x. rfft keeps half the spectrum, the
    constant term once: for odd n, with norm='ortho', (sum x^2 + (sum x)^2 / n) / 2, gradient
    x + sum(x) / n."""
    x = np.array([0.5, -1.0, 2.0, 0.25, 1.5])
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x), 10 * x, rtol=1e-14)
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(np.abs(np.fft.rfft(x, norm="ortho")) ** 2))(x),
                               x + np.sum(x) / 5, rtol=1e-14)


def test_fft_refusals_name_the_problem():
    z = ad.constant(np.array([1.0 + 1.0j, 2.0]))
    with pytest.raises(TypeError, match=r"rfft takes real input"):
        ad.grad(lambda t: np.sum(np.abs(np.fft.rfft(t))))(z)
    with pytest.raises(TypeError, match=r"numpy\.fft\.hfft has no derivative rule"):
        ad.grad(lambda t: np.sum(np.fft.hfft(t)))(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match=r"numpy\.fft\.fft with out="):
        ad.grad(lambda t: np.sum(np.abs(np.fft.fft(t, out=np.empty(2, complex)))))(np.array([1.0, 2.0]))


def test_a_python_bool_combines_with_a_tensor_mask_from_either_side():
    x = ad.constant([-1.0, 2.0])
    for mask in (True & (x > 0), (x > 0) & True, False | (x > 0), True ^ (x > 0)):
        assert isinstance(mask, ad.Tensor)
    np.testing.assert_array_equal((True & (x > 0)).numpy(), [False, True])
    np.testing.assert_array_equal((True ^ (x > 0)).numpy(), [True, False])
