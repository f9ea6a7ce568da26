"""Plain NumPy code on Tensors: dispatch, mixed operands, dtypes, and the errors for what has no rule."""
import numpy as np
import pytest
import scipy.optimize

import autodiff as ad
import autodiff.numpy as anp


def gradient(f, x):
    x = ad.constant(x)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def hessian(f, x):
    x = ad.constant(x)
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)


def rosenbrock_in_plain_numpy(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


# --- plain NumPy code differentiates ---------------------------------------------------------------

@pytest.mark.parametrize("x", [[-1.2, 1.0], [0.5, -0.3, 2.0, 1.1, 0.0], np.linspace(-2, 2, 9)])
def test_rosenbrock_written_in_numpy_has_scipys_gradient_and_hessian(x):
    x = np.asarray(x, dtype=float)
    np.testing.assert_allclose(gradient(rosenbrock_in_plain_numpy, x).numpy(), scipy.optimize.rosen_der(x),
                               rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(hessian(rosenbrock_in_plain_numpy, x).numpy(), scipy.optimize.rosen_hess(x),
                               rtol=1e-13, atol=1e-12)


def test_numpy_functions_on_a_tensor_return_tensors():
    x = ad.constant([0.5, 1.0, 2.0])
    for result, expected in [
        (np.sin(x), np.sin([0.5, 1.0, 2.0])),
        (np.exp(x), np.exp([0.5, 1.0, 2.0])),
        (np.sum(x), 3.5),
        (np.mean(x), 3.5 / 3),
        (np.linalg.norm(x), np.sqrt(5.25)),
        (np.maximum(x, 1.0), [1.0, 1.0, 2.0]),
        (np.where(x > 0.7, x, 0.0), [0.0, 1.0, 2.0]),
        (np.concatenate([x, x]), [0.5, 1.0, 2.0] * 2),
        (np.add.reduce(x), 3.5),
        (np.cumsum(x), [0.5, 1.5, 3.5]),
    ]:
        assert isinstance(result, ad.Tensor)
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-15)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.diff(x, n=2, prepend=0.5) ** 2),
    lambda x: np.sum(np.hypot(x, 2 * x) + np.exp2(x) + np.fabs(x - 0.5) ** 3 + np.copysign(x, -1.0)),
    lambda x: np.sum(np.sinc(3.0 * x - 0.6)),
    lambda x: np.sum(np.sin(np.deg2rad(100 * x)) + np.rad2deg(x) + np.float_power(x, 3)),
    lambda x: np.sum(np.roll(x, 2) * x) + np.sum(np.kron(x[:2], x[2:]) ** 2),
    lambda x: np.sum(np.cross(x[:3], x[3:]) ** 2) + np.polyval(x[:3], x[4]),
    lambda x: np.trapezoid(x ** 2, x=np.cumsum(x)) + np.average(x ** 2, weights=x) + np.ptp(x ** 2),
    lambda x: np.median(x ** 2) + np.nansum(x ** 3) + np.nanmean(x) + np.sum(np.append(x, x ** 2) ** 2),
    lambda x: np.sum(np.column_stack([x, x ** 2]) ** 2) + np.sum(np.interp(x, [0.0, 0.35, 1.0], [0, 2, 1]) ** 2),
    lambda x: np.sum(np.linalg.matrix_power(np.eye(2) + np.reshape(x[:4], (2, 2)), -2)),
    lambda x: np.sum(np.cumprod(x) ** 2) + np.sum(np.convolve(x, x[:3] ** 2, mode="same") ** 2),
    lambda x: np.sum(np.correlate(x, x[:2])) + np.percentile(x ** 2, 45) + np.quantile(x, 0.3),
    lambda x: np.sum(np.cov(np.reshape(x, (2, 3)) ** 2)) + np.sum(np.corrcoef(x[:3], x[3:] ** 2)),
    lambda x: np.linalg.multi_dot([x[:2], np.reshape(x, (2, 3)), x[3:]]),
    lambda x: np.linalg.norm(np.reshape(x, (2, 3)), "nuc") + np.sum(np.linalg.pinv(np.reshape(x, (3, 2))) ** 2),
    lambda x: np.linalg.norm(np.reshape(x, (3, 2)), 2) + np.sum(np.linalg.svd(np.reshape(x, (2, 3)), compute_uv=False)),
    lambda x: np.sum(np.linalg.qr(np.reshape(x, (3, 2)) + np.eye(3, 2)).R ** 2),
    lambda x: np.sum(np.multiply.outer(x, x[:2] ** 2) ** 2) + np.sum(np.subtract.outer(x, x) ** 3),
    lambda x: np.sum(np.multiply.accumulate(x)) + np.sum(np.add.accumulate(x ** 2)),
    lambda x: np.sum(np.linalg.lstsq(np.reshape(x, (3, 2)) + np.eye(3, 2), x[:3])[0] ** 2),
])
def test_numpy_functions_built_from_primitives_dispatch_and_differentiate(f):
    """The functions of autodiff/numpy/composite.py, called through NumPy on a Tensor."""
    x0 = np.linspace(0.1, 0.9, 6)
    result = f(ad.constant(x0))
    assert isinstance(result, ad.Tensor)
    np.testing.assert_allclose(result.numpy(), f(x0), rtol=1e-13)
    ad.check_grad(f, x0, order=2)


def test_nan_entries_get_zero_cotangents_from_nansum_and_nanmean():
    x0 = np.array([1.0, np.nan, 3.0])
    g = ad.grad(lambda x: np.nansum(3.0 * x) + np.nanmean(x))(x0)
    np.testing.assert_array_equal(g, [3.0 + 0.5, 0.0, 3.0 + 0.5])


@pytest.mark.parametrize("weights", [None, np.array([1.0, 2.0, 0.5])])
def test_average_returned_gives_numpys_sum_of_weights(weights):
    x0 = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]])
    average, total = np.average(ad.constant(x0), axis=1, weights=weights, returned=True)
    expected_average, expected_total = np.average(x0, axis=1, weights=weights, returned=True)
    np.testing.assert_allclose(average.numpy(), expected_average, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(total), expected_total, rtol=1e-15)


def test_cross_of_2_vectors_is_the_z_component():
    x0 = np.array([1.0, 2.0, 3.0, 5.0])
    g = ad.grad(lambda x: anp.cross(x[:2], x[2:]))(x0)  # x0 * x3 - x1 * x2
    np.testing.assert_array_equal(g, [5.0, -3.0, -2.0, 1.0])


def test_check_grad_on_a_plain_numpy_function():
    w = np.random.default_rng(0).standard_normal((3, 2))
    ad.check_grad(lambda x: np.sum(np.tanh(x @ w) ** 2) + np.linalg.norm(x) ** 3, np.array([0.3, -0.7, 1.1]))


@pytest.mark.parametrize("expression, value", [
    (lambda t, a: a @ t, lambda x, a: a @ x),
    (lambda t, a: t @ a.T, lambda x, a: x @ a.T),
    (lambda t, a: np.dot(a, t), lambda x, a: a.dot(x)),
    (lambda t, a: a + t, lambda x, a: a + x),
    (lambda t, a: a * t - t / a, lambda x, a: a * x - x / a),
    (lambda t, a: 2.0 * t, lambda x, a: 2.0 * x),
    (lambda t, a: np.float64(2.0) * t, lambda x, a: 2.0 * x),
    (lambda t, a: t ** np.float64(3.0), lambda x, a: x ** 3),
    (lambda t, a: [1.0, 2.0] - t, lambda x, a: np.array([1.0, 2.0]) - x),
    (lambda t, a: np.stack([t, np.ones(2)], axis=1), lambda x, a: np.stack([x, np.ones(2)], axis=1)),
    (lambda t, a: np.stack([t[1], 1.0]), lambda x, a: np.stack([x[1], 1.0])),
    (lambda t, a: np.concatenate([t, np.zeros(1)]), lambda x, a: np.concatenate([x, [0.0]])),
    (lambda t, a: np.outer(a[0], t), lambda x, a: np.outer(a[0], x)),
    (lambda t, a: np.einsum("ij,j->i", a, t), lambda x, a: a @ x),
])
def test_mixed_operands_give_tensors_with_gradients(expression, value):
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    x = np.array([0.7, -1.3])
    t = ad.constant(x)
    with ad.GradientTape() as tape:
        tape.watch(t)
        y = expression(t, a)
    assert isinstance(y, ad.Tensor)
    np.testing.assert_allclose(y.numpy(), value(x, a), rtol=1e-15)
    jacobian = tape.jacobian(y, t).numpy()
    eps = 1e-6
    columns = [(value(x + eps * e, a) - value(x - eps * e, a)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(jacobian, np.stack(columns, axis=-1), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("method, expected_gradient", [
    (lambda t: t.sum(), np.ones((2, 3))),
    (lambda t: t.sum(axis=0)[1], [[0, 1, 0], [0, 1, 0]]),
    (lambda t: t.mean(), np.full((2, 3), 1 / 6)),
    (lambda t: t.max(), [[0, 0, 0], [0, 0, 1]]),
    (lambda t: t.min(axis=1).sum(), [[1, 0, 0], [1, 0, 0]]),
    (lambda t: t.reshape(3, 2)[2, 1], [[0, 0, 0], [0, 0, 1]]),
    (lambda t: t.reshape((6,))[4], [[0, 0, 0], [0, 1, 0]]),
    (lambda t: t.T[0, 1], [[0, 0, 0], [1, 0, 0]]),
    (lambda t: t.dot(np.ones(3)).sum(), np.ones((2, 3))),
    (lambda t: t.ravel()[-1], [[0, 0, 0], [0, 0, 1]]),
    (lambda t: t.transpose(1, 0)[2, 0], [[0, 0, 1], [0, 0, 0]]),
    (lambda t: t.prod(), [[720 / k for k in (1, 2, 3)], [720 / k for k in (4, 5, 6)]]),
    (lambda t: t.var(), (np.arange(1.0, 7.0).reshape(2, 3) - 3.5) / 3),
    (lambda t: t.cumsum()[2], [[1, 1, 1], [0, 0, 0]]),
    (lambda t: t.astype(np.float32).sum(), np.ones((2, 3))),
    (lambda t: abs(-t).sum(), np.ones((2, 3))),
])
def test_tensor_methods_differentiate(method, expected_gradient):
    g = gradient(method, np.arange(1.0, 7.0).reshape(2, 3))
    np.testing.assert_allclose(g.numpy(), expected_gradient, rtol=1e-14)


def test_tensor_protocols():
    t = ad.constant([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.ndim == 2 and t.size == 4 and t.dtype == np.float64
    assert len(t) == 2 and [row.numpy().tolist() for row in t] == [[1.0, 2.0], [3.0, 4.0]]
    assert float(t[1, 0]) == 3.0 and t[0, 1].item() == 2.0 and bool(t[0, 0] > 0)
    value = np.asarray(t)
    assert type(value) is np.ndarray and value.dtype == np.float64
    np.testing.assert_array_equal(value, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float32), value.astype(np.float32))
    assert isinstance(t > 2, ad.Tensor) and (t > 2).dtype == bool
    with pytest.raises(TypeError):
        t[0, 0] = 5.0  # Tensors are immutable (Variables change through assign)


# --- dtypes ------------------------------------------------------------------------------------------

def test_float32_is_preserved_through_ops_and_derivatives():
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)

    def f(t):
        return np.sum(np.tanh(t) * 2.0 + t ** 2 / 3.0 + np.exp(-t) @ np.ones(3, np.float32))

    t = ad.constant(x)
    assert t.dtype == np.float32
    assert f(t).dtype == np.float32
    g, h = gradient(f, x), hessian(f, x)
    assert g.dtype == np.float32 and h.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), gradient(f, x.astype(np.float64)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(h.numpy(), hessian(f, x.astype(np.float64)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("value", [[1, 2, 3], np.arange(3), np.arange(3, dtype=np.int32), 4, [True, False],
                                   2.5])
def test_ints_bools_lists_and_python_floats_become_float64(value):
    assert ad.constant(value).dtype == np.float64
    assert ad.Variable(value).dtype == np.float64
    assert gradient(lambda t: np.sum(t * t), value).dtype == np.float64


@pytest.mark.parametrize("operation", [
    lambda t: np.stack([t[0], 1.0]),
    lambda t: np.concatenate([t, [1]]),
    lambda t: np.array([t, t]),
    lambda t: np.asarray([t[0], t[1]]),
    lambda t: [1.0, 2.0] * t,
    lambda t: [t[0], 2.0] * t,
    lambda t: np.where(np.array([True, False]), t, [5, 6]),
    lambda t: anp.array([t, 2.0 * t]),
])
def test_no_operation_makes_an_object_array(operation):
    result = operation(ad.constant([1.0, 2.0]))
    assert np.asarray(result).dtype == np.float64


@pytest.mark.parametrize("operation", [lambda t, objects: t + objects, lambda t, objects: objects * t])
def test_an_object_array_operand_is_rejected(operation):
    with pytest.raises(TypeError):
        operation(ad.constant([1.0, 2.0]), np.array([1.0, 2.0], dtype=object))


# --- what has no rule is an error, never a silent object array or lost gradient ----------------------

@pytest.mark.parametrize("call, name", [
    (lambda t: np.fft.hfft(t), "numpy.fft.hfft"),
    (lambda t: np.linalg.matrix_rank(t.reshape(2, 2)), "numpy.linalg.matrix_rank"),
    (lambda t: np.unwrap(t), "numpy.unwrap"),
    (lambda t: np.maximum.accumulate(t), "numpy.maximum.accumulate"),
    (lambda t: np.fmod.outer(t, t), "numpy.fmod.outer"),
])
def test_a_numpy_function_without_a_rule_raises_a_type_error_naming_it(call, name):
    with pytest.raises(TypeError, match=name.replace(".", r"\.") + " has no derivative rule"):
        call(ad.constant([1.0, 2.0, 3.0, 4.0]))


@pytest.mark.parametrize("call", [
    lambda t, out: np.sin(t, out=out),
    lambda t, out: np.add(t, 1.0, out=out),
    lambda t, out: np.sum(t, out=out[0]),
    lambda t, out: np.cumsum(t, out=out),
    lambda t, out: np.clip(t, 0, 1, out=out),
    lambda t, out: np.dot(t, t, out=out[0]),
])
def test_out_argument_raises_a_type_error(call):
    with pytest.raises(TypeError, match="out="):
        call(ad.constant([1.0, 2.0]), np.empty(2))


@pytest.mark.parametrize("call, message", [
    (lambda t: np.max(t, initial=5.0), r"max with \['initial'\]"),
    (lambda t: np.mean(t, where=np.array([True, False])), r"mean with \['where'\]"),
    (lambda t: np.std(t, where=np.array([True, False])), r"std with \['where'\]"),
    (lambda t: np.var(t, where=np.array([True, False])), r"var with \['where'\]"),
    (lambda t: np.einsum("i,i", t, t, dtype=np.float32), r"einsum with \['dtype'\]"),
    (lambda t: anp.logsumexp(t, dtype=np.float32), r"logsumexp with \['dtype'\]"),
    (lambda t: np.add(t, t, casting="unsafe"), r"numpy.add with \['casting'\]"),
])
def test_an_unsupported_keyword_raises_instead_of_being_ignored(call, message):
    with pytest.raises(TypeError, match=message):
        call(ad.constant([1.0, 2.0]))


def test_supported_reduction_keywords_match_numpy():
    x, mask = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([True, False])
    for call in [lambda a: np.sum(a, where=mask, axis=1), lambda a: np.sum(a, initial=2.5),
                 lambda a: np.prod(a, where=mask, initial=3.0), lambda a: np.linalg.norm(a[0], 0)]:
        np.testing.assert_array_equal(call(ad.constant(x)).numpy(), call(x))


def test_sort_and_mod_are_differentiable_not_silently_constant():
    x = np.array([0.3, -1.2, 2.5])
    np.testing.assert_array_equal(gradient(lambda t: np.sort(t) @ np.array([1.0, 2.0, 3.0]), x).numpy(),
                                  [2.0, 1.0, 3.0])
    np.testing.assert_array_equal(gradient(lambda t: np.sum(np.mod(t, 1.0)), x).numpy(), np.ones(3))
    np.testing.assert_array_equal(gradient(lambda t: np.sum(3.5 % t), x[[0, 2]]).numpy(),
                                  -np.floor_divide(3.5, x[[0, 2]]))


# --- recording -----------------------------------------------------------------------------------------

def test_without_an_active_tape_ops_return_tensors_and_record_nothing():
    x = ad.constant([0.5, 1.0])
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        inside = np.sin(x)
    outside = np.cos(x)
    assert isinstance(outside, ad.Tensor)
    np.testing.assert_array_equal(outside.numpy(), np.cos([0.5, 1.0]))
    assert tape.gradient(outside, x) is None
    np.testing.assert_array_equal(tape.gradient(inside, x).numpy(), np.cos([0.5, 1.0]))


def test_ops_on_arrays_only_stay_numpy():
    assert type(anp.sin(np.array([1.0]))) is np.ndarray
    assert type(anp.sum(np.ones(3))) in (np.float64, np.ndarray)
    assert type(anp.linalg.inv(np.eye(2))) is np.ndarray
