"""scipy.signal on Tensors: values equal scipy's on many shapes (every mode, both orders of size, even
and odd sides, complex), errors that name the problem, the refusal of scipy's own functions naming the
version here. Finite differences of both orders, batches and JVPs are cases of test_ops.py, exact replay
under ad.function is checked with scipy_linalg's in test_scipy_linalg.py.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.signal

import autodiff as ad
import autodiff.numpy as anp
from autodiff.numpy import scipy_signal

RNG = np.random.default_rng(11)
MODES = ("full", "valid", "same")


def _drawn(shape, complex_values):
    real = RNG.standard_normal(shape)
    return real + 1j * RNG.standard_normal(shape) if complex_values else real


def _shape_pairs(ndim):
    """Every pair of shapes with sides 1 to 4 (1-D), 1 to 3 (2-D) or 1, 2 (3-D): odd and even sides,
    in2 smaller, larger, equal and neither."""
    sides = {1: range(1, 5), 2: range(1, 4), 3: range(1, 3)}[ndim]
    shapes = list(itertools.product(sides, repeat=ndim))
    return list(itertools.product(shapes, shapes))


def _dominated(shape1, shape2):
    return all(a >= b for a, b in zip(shape1, shape2)) or all(b >= a for a, b in zip(shape1, shape2))


@pytest.mark.parametrize("name, ndim", [(name, ndim) for name in ("convolve", "correlate") for ndim in (1, 2, 3)]
                         + [("convolve2d", 2), ("correlate2d", 2)])
def test_values_equal_scipys_in_every_mode(name, ndim):
    for (shape1, shape2), complex1, complex2 in itertools.product(_shape_pairs(ndim), (False, True), (False, True)):
        in1, in2 = _drawn(shape1, complex1), _drawn(shape2, complex2)
        for mode in MODES:
            if mode == "valid" and not _dominated(shape1, shape2):
                continue
            expected = getattr(scipy.signal, name)(in1, in2, mode)
            result = getattr(scipy_signal, name)(ad.constant(in1), in2, mode).numpy()
            scale = np.sum(np.abs(in1)) * np.max(np.abs(in2))
            assert result.shape == expected.shape, (name, mode, shape1, shape2)
            np.testing.assert_allclose(result, expected, rtol=0, atol=1e-14 * scale, err_msg=f"{name} {mode} "
                                       f"{shape1} {shape2} complex {complex1, complex2}")


def test_same_mode_is_centred_as_scipy_centres_it():
    """An impulse kernel of even length shows where "same" starts: convolve and correlate at
    (m - 1) // 2 of the full output, correlate2d at m // 2."""
    x = np.arange(1.0, 7.0).reshape(2, 3)
    shift = np.array([[0.0, 1.0]])  # convolution with it delays by one column
    np.testing.assert_array_equal(scipy_signal.convolve(x, shift, "same"), scipy.signal.convolve(x, shift, "same"))
    np.testing.assert_array_equal(scipy_signal.convolve(x, shift, "same"), [[0.0, 1.0, 2.0], [0.0, 4.0, 5.0]])
    np.testing.assert_array_equal(scipy_signal.correlate(x, shift, "same"), x)
    np.testing.assert_array_equal(scipy_signal.correlate2d(x, shift, "same"), [[2.0, 3.0, 0.0], [5.0, 6.0, 0.0]])
    np.testing.assert_array_equal(scipy_signal.correlate2d(x, shift, "same"),
                                  scipy.signal.correlate2d(x, shift, "same"))


def test_zero_dimensional_inputs_are_multiplied():
    assert scipy_signal.convolve(2.0, 3.0) == 6.0
    assert scipy_signal.correlate(np.array(2.0), np.array(3.0 + 1.0j)) == scipy.signal.correlate(2.0, 3.0 + 1.0j)


@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
def test_method_changes_nothing(method):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 2))
    np.testing.assert_array_equal(scipy_signal.convolve(a, b, method=method), scipy_signal.convolve(a, b))
    np.testing.assert_array_equal(scipy_signal.correlate(a, b, method=method), scipy_signal.correlate(a, b))


def test_np_convolve_and_correlate_keep_numpys_values():
    """np.convolve is now a 1-D block of the same N-d core; np.correlate's "same" block with v the longer
    starts where NumPy's does (len(a) // 2)."""
    for n, m in itertools.product(range(1, 6), repeat=2):
        a, v = RNG.standard_normal(n), RNG.standard_normal(m) + 1j * RNG.standard_normal(m)
        for mode in MODES:
            np.testing.assert_allclose(anp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-14, atol=1e-14)
            np.testing.assert_allclose(anp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-14, atol=1e-14)


def test_gradient_of_a_valid_convolution_in_the_kernel_is_a_correlation():
    """d/dk sum(w * convolve(x, k, 'valid')) = correlate(x, w, 'valid') reversed: both entries exact."""
    x, k = RNG.standard_normal((5, 4)), RNG.standard_normal((2, 3))
    w = RNG.standard_normal((4, 2))
    g = ad.grad(lambda k: np.sum(w * scipy_signal.convolve(x, k, "valid")))(k)
    np.testing.assert_allclose(g, scipy.signal.correlate(x, w, "valid")[::-1, ::-1], rtol=1e-13, atol=1e-14)
    h = ad.hessian(lambda k: np.sum(scipy_signal.convolve(x, k, "valid") ** 2))(k).reshape(6, 6)
    windows = np.stack([scipy.signal.convolve(x, e.reshape(2, 3), "valid").ravel() for e in np.eye(6)])
    np.testing.assert_allclose(h, 2 * windows @ windows.T, rtol=1e-13, atol=1e-13 * np.abs(h).max())


# --- errors -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", scipy_signal.__all__)
def test_scipy_signal_on_a_tracked_tensor_names_the_differentiable_version(name):
    with pytest.raises(TypeError, match=rf"scipy\.signal\.{name} converted it.*"
                                        rf"autodiff\.numpy\.scipy_signal\.{name} is its differentiable version"):
        ad.grad(lambda x: np.sum(getattr(scipy.signal, name)(x, np.ones((2, 2)))))(np.ones((3, 3)))


@pytest.mark.parametrize("call, error, message", [
    (lambda a: scipy_signal.convolve(a[:1], a[:, :2], "valid"), ValueError,
     r"one input must be at least as large as the other in every dimension, not of shapes \(1, 3\) and \(3, 2\)"),
    (lambda a: scipy_signal.correlate(a[:2], a[:, :2], "valid"), ValueError, "at least as large"),
    (lambda a: scipy_signal.convolve2d(a[:1], a[:, :1], "valid"), ValueError, "at least as large"),
    (lambda a: scipy_signal.correlate2d(a[:1], a[:, :1], "valid"), ValueError, "at least as large"),
    (lambda a: scipy_signal.convolve(a, a, "circular"), ValueError, "mode must be 'full', 'valid' or 'same', not "
                                                                    "'circular'"),
    (lambda a: scipy_signal.convolve2d(a, a, 2), ValueError, "not 2"),
    (lambda a: scipy_signal.convolve(a, a, method="overlap-add"), ValueError, "not 'overlap-add'"),
    (lambda a: scipy_signal.correlate(a, a, method="fast"), ValueError, "not 'fast'"),
    (lambda a: scipy_signal.convolve(a, a[0]), ValueError, r"same dimensionality, not shapes \(3, 3\) and \(3,\)"),
    (lambda a: scipy_signal.convolve2d(a[0], a[0]), ValueError, r"2-D arrays, not of shapes \(3,\) and \(3,\)"),
    (lambda a: scipy_signal.convolve(a[:0], a), ValueError, r"empty array \(shapes \(0, 3\) and \(3, 3\)\)"),
    (lambda a: scipy_signal.convolve2d(a, a, boundary="wrap"), NotImplementedError, "boundary='fill' only, not 'wrap'"),
    (lambda a: scipy_signal.correlate2d(a, a, boundary="symm"), NotImplementedError, "not 'symm'"),
    (lambda a: scipy_signal.convolve2d(a, a, boundary="reflect"), ValueError, "boundary must be .* not 'reflect'"),
    (lambda a: scipy_signal.convolve2d(a, a, fillvalue=1.0), NotImplementedError, "fillvalue=0 only, not 1.0"),
])
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call(np.arange(9.0).reshape(3, 3))


def test_scipy_refuses_what_is_refused_here():
    """The 'valid' shapes and the modes refused above are scipy's errors too."""
    a = np.ones((3, 3))
    for call in (lambda: scipy.signal.convolve(a[:1], a[:, :2], "valid"),
                 lambda: scipy.signal.correlate2d(a[:1], a[:, :1], "valid"),
                 lambda: scipy.signal.convolve(a, a, "circular"), lambda: scipy.signal.convolve(a, a[0])):
        with pytest.raises(ValueError):
            call()
