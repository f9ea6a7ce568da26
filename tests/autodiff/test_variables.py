"""The Variable API: mutable model state that tapes watch when it is read."""
import numpy as np
import pytest

import autodiff as ad


def test_assign_assign_add_assign_sub_update_the_value_in_place():
    v = ad.Variable([1.0, 2.0])
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    v.assign_add([1.0, 10.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 16.0])
    v.assign_sub(ad.constant([2.0, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [4.0, 14.0])


def test_assign_copies_the_value_it_is_given():
    source = np.array([1.0, 2.0])
    v = ad.Variable([0.0, 0.0])
    v.assign(source)
    source[0] = 99.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_assign_with_a_wrong_shape_raises_value_error():
    v = ad.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        v.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_name_and_trainable():
    kernel = ad.Variable(np.zeros((2, 3)), name="kernel")
    frozen = ad.Variable(1.0, trainable=False)
    assert kernel.name == "kernel" and kernel.trainable
    assert frozen.name is None and not frozen.trainable
    assert "kernel" in repr(kernel)


def test_repr_reads_like_the_constructor_call():
    variable = ad.Variable([1.0, 2.0], name="w")
    assert repr(variable) == "Variable(array([1., 2.]), name='w', trainable=True)"
    rebuilt = eval(repr(variable), {"Variable": ad.Variable, "array": np.array})
    assert rebuilt.name == "w" and rebuilt.trainable
    np.testing.assert_array_equal(rebuilt.numpy(), variable.numpy())


def test_float32_is_preserved_and_integers_become_float64():
    assert ad.Variable(np.float32(2.0)).dtype == np.float32
    assert ad.Variable(3).dtype == np.float64
    assert ad.Variable([1, 2]).dtype == np.float64
    assert ad.Variable(3, dtype=np.float32).dtype == np.float32
    assert ad.constant(3).dtype == np.float64


def test_assign_keeps_the_variable_dtype():
    v = ad.Variable(np.float32(1.0))
    v.assign(np.float64(2.5))
    assert v.dtype == np.float32 and v.numpy() == 2.5
    v.assign_add(1)
    assert v.dtype == np.float32 and v.numpy() == 3.5


def test_gradient_of_a_float32_variable_is_float32():
    v = ad.Variable(np.float32(2.0))
    with ad.GradientTape() as tape:
        y = v * v
    g = tape.gradient(y, v)
    assert g.dtype == np.float32
    assert g.numpy() == 4.0


def test_integer_variable_is_differentiable_as_float64():
    x = ad.Variable(3)
    with ad.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0


def test_gradient_uses_the_value_after_assign():
    x = ad.Variable(3.0)
    x.assign(4.0)
    with ad.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 8.0


def test_gradients_use_the_value_a_variable_had_when_it_was_read():
    x = ad.Variable(2.0)
    with ad.GradientTape() as outer:
        with ad.GradientTape(persistent=True) as inner:
            y = x * x * x
        x.assign(5.0)
        dy_dx = inner.gradient(y, x)  # the rules run on Tensors here, recorded by the outer tape
    assert dy_dx.numpy() == 12.0  # 3 x^2 at x = 2
    assert inner.gradient(y, x).numpy() == 12.0  # the same on raw arrays, with no tape recording
    assert outer.gradient(dy_dx, x).numpy() == 12.0  # 6 x at x = 2
