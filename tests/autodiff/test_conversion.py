"""Leaving the engine is explicit (DESIGN.md): a Tensor that a tape or accumulator tracks refuses the
implicit conversions NumPy and Python make (``__array__``, ``__float__``, ``__int__``, ``__complex__``,
``__index__``), naming the ways out and in; values nothing tracks convert freely; every functional
entry point refuses a function whose result does not depend on its inputs through the engine.
"""
import math
import operator

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.check import central_differences

X = np.array([0.7, -1.3])
WAYS_OUT_AND_IN = r"np\.stack.*autodiff\.numpy\.array.*t\.numpy\(\).*autodiff\.stop_gradient"


def rosenbrock_residuals_into_an_array(x):
    """The seed bug: residuals stored into an ndarray lose their gradient (x = 0 came back as optimal)."""
    r = np.empty(2)
    r[0] = 10 * (x[1] - x[0] ** 2)
    r[1] = 1 - x[0]
    return np.sum(r ** 2)


IMPLICIT_CONVERSIONS = {
    "np.asarray": lambda x: np.asarray(x),
    "np.array of a Tensor": lambda x: np.array(x),
    "np.asanyarray": lambda x: np.asanyarray(x),
    "np.ascontiguousarray": lambda x: np.ascontiguousarray(x),
    "np.array of a list": lambda x: np.array([x[0], x[1]]),
    "np.sum of a list": lambda x: np.sum([x[0] ** 2, x[1] ** 2]),
    "np.mean of a list": lambda x: np.mean([x[0], x[1]]),
    "np.prod of a list": lambda x: np.prod([x[0], x[1]]),
    "np.max of a list": lambda x: np.max([x[0], x[1]]),
    "np.min of a list": lambda x: np.min([x[0], x[1]]),
    "np.diag of a list": lambda x: np.diag([x[0], x[1]]),
    "np.float64": lambda x: np.float64(x[0]),
    "np.full": lambda x: np.full(2, x[0]),
    "slice assignment": lambda x: np.zeros(3).__setitem__(slice(0, 2), x),
    "list into a slice": lambda x: np.zeros(2).__setitem__(slice(None), [x[0], x[1]]),
    "float": lambda x: float(x[0]),
    "int": lambda x: int(x[0]),
    "complex": lambda x: complex(x[0]),
    "operator.index": lambda x: operator.index(x[0]),
    "math.sin": lambda x: math.sin(x[0]),
}


@pytest.mark.parametrize("convert", IMPLICIT_CONVERSIONS.values(), ids=IMPLICIT_CONVERSIONS.keys())
def test_a_tensor_a_tape_watches_refuses_implicit_conversion(convert):
    x = ad.constant(X)
    with ad.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match=WAYS_OUT_AND_IN):
            convert(x)
        with pytest.raises(TypeError, match="losing its gradient"):
            convert(x * 2.0)  # an intermediate the tape recorded


@pytest.mark.parametrize("convert", IMPLICIT_CONVERSIONS.values(), ids=IMPLICIT_CONVERSIONS.keys())
def test_a_tensor_an_accumulator_carries_refuses_implicit_conversion(convert):
    x = ad.constant(X)
    with ad.ForwardAccumulator(x, np.ones(2)):
        with pytest.raises(TypeError, match=WAYS_OUT_AND_IN):
            convert(anp.sin(x))


# Where an autodiff function receives the list (NumPy dispatched on a Tensor among the arguments, or
# autodiff.numpy is called), a list or tuple holding Tensors is stacked differentiably instead.
LISTS_STACKED = {
    "np.append(x, [x[0]])": (lambda x: np.sum(np.append(x, [x[0]]) ** 2), lambda x: 2 * x + [2 * x[0], 0]),
    "[x[0], x[1]] @ x": (lambda x: [x[0], x[1]] @ x, lambda x: 2 * x),
    "(x[1], x[0]) * x": (lambda x: np.sum((x[1], x[0]) * x), lambda x: 2 * x[::-1]),
    "anp.mean([x[0], 3 x[1]])": (lambda x: anp.mean([x[0], 3 * x[1]]), lambda x: np.array([0.5, 1.5])),
    "anp.linalg.norm((x[0], x[1]))": (lambda x: anp.linalg.norm((x[0], x[1])), lambda x: x / np.hypot(*x)),
}


@pytest.mark.parametrize("f, gradient", LISTS_STACKED.values(), ids=LISTS_STACKED.keys())
def test_a_list_of_tensors_an_autodiff_function_receives_is_stacked(f, gradient):
    np.testing.assert_allclose(ad.grad(f)(X), gradient(X), rtol=1e-15)


CHAINED_BY_NUMPY = {
    "element assignment": rosenbrock_residuals_into_an_array,
    "np.fromiter": lambda x: np.fromiter([x[0], x[1]], float),
}


@pytest.mark.parametrize("convert", CHAINED_BY_NUMPY.values(), ids=CHAINED_BY_NUMPY.keys())
def test_storing_into_an_ndarray_element_raises_with_the_reason_as_its_cause(convert):
    """For ``r[i] = t`` and ``np.fromiter`` NumPy replaces the error of ``float(t)`` by its own
    ValueError, with the refusal as its cause (shown first in the traceback)."""
    x = ad.constant(X)
    with ad.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ValueError, match="sequence") as raised:
            convert(x)
    assert isinstance(raised.value.__cause__, TypeError)
    assert "float() would turn a Tensor" in str(raised.value.__cause__)


def test_grad_of_a_function_that_stores_into_an_array_raises_instead_of_answering_zeros():
    with pytest.raises(ValueError) as raised:
        ad.grad(rosenbrock_residuals_into_an_array)(np.zeros(2))
    assert "losing its gradient" in str(raised.value.__cause__)
    with pytest.raises(TypeError, match=r"float\(\) would turn"):
        ad.grad(lambda x: float(x[0]) ** 2)(X)


def test_a_trainable_variable_counts_as_tracked_while_a_tape_watches_accessed_variables():
    v = ad.Variable(X)
    with ad.GradientTape():
        with pytest.raises(TypeError, match="losing its gradient"):
            np.asarray(v)
    with ad.GradientTape(watch_accessed_variables=False):
        np.testing.assert_array_equal(np.asarray(v), X)  # nothing watches it
    frozen = ad.Variable(X, trainable=False)
    with ad.GradientTape():
        np.testing.assert_array_equal(np.asarray(frozen), X)


def test_values_nothing_tracks_convert_freely():
    x, other = ad.constant(X), ad.constant([2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(x), X)  # eager code
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = anp.sum(x ** 2)
        assert float(other[0]) == 2.0 and int(other[1]) == 3  # not watched
        np.testing.assert_array_equal(np.array([other[0], other[1]]), [2.0, 3.0])
    assert float(y) == pytest.approx(np.sum(X ** 2))  # the tape has exited
    np.testing.assert_array_equal(np.asarray(x), X)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * X)


def test_conversion_is_allowed_while_the_tape_is_paused_but_not_under_an_outer_recording_tape():
    x = ad.constant(X)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
        with tape.stop_recording():
            np.testing.assert_allclose(np.asarray(y), 3 * X)
            assert float(y[0]) == pytest.approx(2.1)
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = x * 3.0
            with inner.stop_recording(), pytest.raises(TypeError, match="losing its gradient"):
                np.asarray(y)  # the outer tape still records y


def test_the_explicit_ways_out_work_and_carry_no_gradient():
    x = ad.constant(X)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        np.testing.assert_array_equal(x.numpy(), X)
        assert x[0].item() == 0.7
        detached = ad.stop_gradient(x)
        np.testing.assert_array_equal(np.asarray(detached), X)
        y = anp.sum(x * float(detached[1]))
        z = ad.constant(x.numpy() ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [-1.3, -1.3])
    assert tape.gradient(z, x) is None


def test_control_flow_on_values_keeps_working():
    """bool() is a branch, with no gradient to lose: ``if x > 0`` and ``if x`` are fine."""
    def f(x):
        if x[0] > 0:
            y = x[0] ** 3
        else:
            y = -x[0]
        return y * x[1] if x[1] else y
    np.testing.assert_allclose(ad.grad(f)(X), [3 * 0.7 ** 2 * -1.3, 0.7 ** 3])
    np.testing.assert_allclose(ad.grad(f)(np.array([-0.5, 2.0])), [-2.0, 0.5])
    x = ad.constant(X)
    with ad.GradientTape() as tape:
        tape.watch(x)
        assert bool(x[0] > 0) and bool(x[1]) and not bool(x[0] > 1)


DIFFERENTIABLE_WAYS_IN = {
    "np.stack": lambda x: np.stack([x[0] ** 2, x[0] * x[1]]),
    "np.concatenate": lambda x: np.concatenate([x ** 2, [1.0], x[:1] * x[1:]]),
    "np.hstack": lambda x: np.hstack([x[0] ** 2, 1.0, x[1]]),
    "np.vstack": lambda x: np.vstack([x, x ** 2]),
    "np.column_stack": lambda x: np.column_stack([x, x ** 3]),
    "anp.array": lambda x: anp.array([[x[0] ** 2, 1.0], [x[0] * x[1], x[1]]]),
    "anp.asarray": lambda x: anp.asarray([x[1], x[0] ** 3]),
}


@pytest.mark.parametrize("build", DIFFERENTIABLE_WAYS_IN.values(), ids=DIFFERENTIABLE_WAYS_IN.keys())
def test_arrays_built_from_tensors_the_differentiable_way_keep_their_gradient(build):
    jacobian = ad.jacobian(build)(X)
    np.testing.assert_allclose(jacobian, central_differences(lambda z: build(ad.constant(z)).numpy(), X),
                               rtol=1e-8, atol=1e-10)


# --- the functional layer refuses a result that does not depend on its inputs ---------------------

ENTRY_POINTS = {
    "grad": lambda f: ad.grad(f)(X),
    "value_and_grad": lambda f: ad.value_and_grad(f)(X),
    "jacobian": lambda f: ad.jacobian(f)(X),
    "hessian": lambda f: ad.hessian(f)(X),
    "hessian of a pytree": lambda f: ad.hessian(lambda p: f(anp.stack([p["a"], p["b"]])))(
        {"a": 0.7, "b": -1.3}),
    "hvp": lambda f: ad.hvp(f, X, np.ones(2)),
    "hvp inside a tape": lambda f: ad.hvp(f, ad.constant(X), np.ones(2)),
    "jvp": lambda f: ad.jvp(f, (X,), (np.ones(2),)),
    "vjp": lambda f: ad.vjp(f, X),
    "hessian_operator": lambda f: ad.hessian_operator(f, X),
}
PLAIN_RESULTS = {
    "x.numpy()": lambda x: np.sum(x.numpy() ** 2),
    "x.item()": lambda x: x[0].item() ** 2,
    "a constant": lambda x: 3.0,
    "a structure holding a plain value": lambda x: {"value": anp.sum(x), "constant": 1.0},
}   # (a tuple or list to grad is refused naming has_aux: test_jax_habits.py)


@pytest.mark.parametrize("result", PLAIN_RESULTS.values(), ids=PLAIN_RESULTS.keys())
@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_every_entry_point_refuses_a_plain_result(entry, result):
    with pytest.raises(TypeError, match=r"returned a plain \w+, not a Tensor: its value does not "
                                        r"depend on x"):
        entry(result)


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_a_constant_function_of_a_tensor_still_gives_zeros(entry):
    results = entry(lambda x: anp.sum(x * 0.0))
    results = results[1] if isinstance(results, tuple) and not callable(results[1]) else results
    if isinstance(results, tuple):  # vjp: (value, vjp_fn)
        results = results[1](1.0)
    if isinstance(results, ad.HessianOperator):
        assert results.value == 0.0
        results = results.to_dense()
    results = results.numpy() if isinstance(results, ad.Tensor) else np.asarray(results)
    assert results.size and np.all(results == 0.0)
