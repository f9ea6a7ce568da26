"""GradientTape and the tape-level tools, reproducing TensorFlow's autodiff guides.

"Introduction to gradients and automatic differentiation" and "Advanced automatic differentiation":
every behaviour users bring from them, written with our API and checked against the guides' values,
closed forms and central finite differences in float64.
"""
import gc
import threading
import weakref

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.check import central_differences as central_difference


def dense(x, kernel, bias, activation=None):
    """A Dense layer written inline: activation(x @ kernel + bias)."""
    y = anp.matmul(x, kernel) + bias
    return y if activation is None else activation(y)


def relu(x):
    return anp.maximum(x, 0.0)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def names(variables):
    assert type(variables) is tuple
    return [v.name for v in variables]


# --- basics ----------------------------------------------------------------------------------------

def test_square_at_three_has_gradient_six():
    x = ad.Variable(3.0)
    with ad.GradientTape() as tape:
        y = x ** 2
    assert tape.gradient(y, x).numpy() == 6.0


def test_gradient_with_respect_to_a_dense_layers_variables():
    rng = np.random.default_rng(0)
    kernel = ad.Variable(rng.normal(size=(3, 2)), name="kernel")
    bias = ad.Variable(np.zeros(2), name="bias")
    x = np.array([[1.0, 2.0, 3.0]])
    with ad.GradientTape(persistent=True) as tape:
        y = dense(x, kernel, bias)
        loss = anp.mean(y ** 2)
    dl_dw, dl_db = tape.gradient(loss, [kernel, bias])

    dl_dy = 2 * y.numpy() / y.size
    np.testing.assert_allclose(dl_dw.numpy(), x.T @ dl_dy, rtol=1e-12)
    np.testing.assert_allclose(dl_db.numpy(), dl_dy.sum(axis=0), rtol=1e-12)
    assert dl_dw.shape == kernel.shape and dl_db.shape == bias.shape

    by_name = tape.gradient(loss, {"kernel": kernel, "bias": bias})
    assert list(by_name) == ["kernel", "bias"]
    np.testing.assert_array_equal(by_name["kernel"].numpy(), dl_dw.numpy())
    np.testing.assert_array_equal(by_name["bias"].numpy(), dl_db.numpy())


def test_gradient_mirrors_list_tuple_dict_and_nested_sources():
    a, b, c = ad.Variable(1.0), ad.Variable(2.0), ad.Variable(3.0)
    with ad.GradientTape(persistent=True) as tape:
        y = a * b * c  # dy/da = 6, dy/db = 3, dy/dc = 2

    as_tuple = tape.gradient(y, (a, b))
    assert type(as_tuple) is tuple and [g.numpy() for g in as_tuple] == [6.0, 3.0]
    as_list = tape.gradient(y, [c])
    assert type(as_list) is list and as_list[0].numpy() == 2.0
    nested = tape.gradient(y, {"first": [a, (b,)], "second": {"c": c}})
    assert set(nested) == {"first", "second"}
    assert type(nested["first"]) is list and type(nested["first"][1]) is tuple
    assert nested["first"][0].numpy() == 6.0
    assert nested["first"][1][0].numpy() == 3.0
    assert nested["second"]["c"].numpy() == 2.0


# --- what is watched -------------------------------------------------------------------------------

def test_only_trainable_variables_are_watched_automatically():
    x0 = ad.Variable(3.0, name="x0")
    x1 = ad.Variable(3.0, name="x1", trainable=False)
    x2 = ad.Variable(2.0, name="x2") + 1.0  # a Tensor, not a Variable
    x3 = ad.constant(3.0)
    sources = [x0, x1, x2, x3]

    with ad.GradientTape() as tape:
        y = x0 ** 2 + x1 ** 2 + x2 ** 2 + x3 ** 2
    grads = tape.gradient(y, sources)
    assert grads[0].numpy() == 6.0 and grads[1:] == [None, None, None]

    with ad.GradientTape() as tape:
        tape.watch([x1, x2, x3])
        y = x0 ** 2 + x1 ** 2 + x2 ** 2 + x3 ** 2
    assert [g.numpy() for g in tape.gradient(y, sources)] == [6.0, 6.0, 6.0, 6.0]


def test_watch_accessed_variables_false_watches_only_what_it_is_told():
    a, b = ad.Variable(3.0, name="a"), ad.Variable(5.0, name="b")
    with ad.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a ** 2
        z = b ** 3
    assert names(tape.watched_variables()) == ["a"]
    grads = tape.gradient([y, z], [a, b])
    assert grads[0].numpy() == 6.0 and grads[1] is None


def test_watched_variables_lists_every_trainable_variable_read_in_first_seen_order():
    v1, v2, v3 = ad.Variable(1.0, name="v1"), ad.Variable(2.0, name="v2"), ad.Variable(3.0, name="v3")
    frozen = ad.Variable(4.0, trainable=False, name="frozen")
    with ad.GradientTape() as tape:
        y = v2 * v1 + frozen * v3
    assert names(tape.watched_variables()) == ["v2", "v1", "v3"]
    assert [g.numpy() for g in tape.gradient(y, [v1, v2, v3])] == [2.0, 1.0, 4.0]


def test_watch_accepts_nested_structures_and_watched_variables_include_them():
    frozen = ad.Variable(2.0, trainable=False, name="frozen")
    t = ad.constant(3.0)
    with ad.GradientTape() as tape:
        tape.watch({"frozen": frozen, "others": [t]})
        y = frozen * t
    assert names(tape.watched_variables()) == ["frozen"]
    assert [g.numpy() for g in tape.gradient(y, [frozen, t])] == [3.0, 2.0]


# --- persistence and several targets ---------------------------------------------------------------

def test_persistent_tape_answers_several_gradient_calls():
    x = ad.constant(3.0)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert tape.gradient(z, x).numpy() == 108.0
    assert tape.gradient(y, x).numpy() == 6.0
    assert tape.gradient(z, y).numpy() == 18.0  # gradient with respect to an intermediate: 2y


def test_second_gradient_on_a_non_persistent_tape_raises_runtime_error():
    x = ad.Variable(3.0)
    with ad.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.jacobian(y, x)


def test_non_persistent_tape_releases_its_recording_after_gradient():
    x = ad.Variable([1.0, 2.0])
    for persistent in (False, True):
        with ad.GradientTape(persistent=persistent) as tape:
            y = x * x
            z = anp.sin(y)
        intermediate = weakref.ref(y)
        del y
        gc.collect()
        assert intermediate() is not None  # the tape keeps what the backward pass needs
        tape.gradient(z, x)
        gc.collect()
        assert (intermediate() is None) == (not persistent)


def test_persistent_tape_can_be_entered_again_to_record_more():
    x = ad.Variable(2.0)
    tape = ad.GradientTape(persistent=True)
    with tape:
        y = x * x
    with tape:
        z = y * x
    assert tape.gradient(z, x).numpy() == 12.0  # d(x^3)/dx


def test_gradient_of_a_source_with_respect_to_itself_is_ones():
    x = ad.Variable([1.0, 2.0])
    with ad.GradientTape() as tape:
        pass
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])


def test_gradient_with_respect_to_an_intermediate_tensor():
    x = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        y = anp.sin(x)
        z = y ** 3
    np.testing.assert_allclose(tape.gradient(z, y).numpy(), 3 * np.sin(2.0) ** 2, rtol=1e-14)


def test_gradient_taken_inside_a_persistent_tape_is_recorded_for_second_order():
    x = ad.Variable(1.0)
    with ad.GradientTape(persistent=True) as tape:
        y = x ** 3
        dy_dx = tape.gradient(y, x)
    assert dy_dx.numpy() == 3.0
    assert tape.gradient(dy_dx, x).numpy() == 6.0


def test_non_scalar_target_is_summed():
    x = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        y = x * [3.0, 4.0]
    assert tape.gradient(y, x).numpy() == 7.0


def test_list_and_dict_of_targets_give_the_gradient_of_their_sum():
    x = ad.Variable(3.0)
    with ad.GradientTape(persistent=True) as tape:
        y0 = x ** 2
        y1 = 1 / x
    expected = 2 * 3.0 - 1 / 9.0
    np.testing.assert_allclose(tape.gradient([y0, y1], x).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(tape.gradient({"a": y0, "b": y1}, x).numpy(), expected, rtol=1e-15)


def test_output_gradients_weight_the_target():
    x = ad.Variable(2.0)
    with ad.GradientTape(persistent=True) as tape:
        y = x * [3.0, 4.0]
        z = x ** 2
    assert tape.gradient(y, x, output_gradients=ad.constant([1.0, 10.0])).numpy() == 43.0
    assert tape.gradient(y, x, output_gradients=np.array([1.0, 10.0])).numpy() == 43.0
    weighted = tape.gradient([y, z], x, output_gradients=[np.array([1.0, 0.0]), 2.0])
    assert weighted.numpy() == 3.0 + 2.0 * 4.0


def test_output_gradients_with_a_wrong_shape_raise_value_error():
    x = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        y = x * [3.0, 4.0]
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient(y, x, output_gradients=np.ones(3))
    assert tape.gradient(y, x, output_gradients=np.ones(2)).numpy() == 7.0


def test_output_gradients_count_must_match_the_targets():
    x = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        y = x * 3.0
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient([y, y], x, output_gradients=[1.0])


def test_python_control_flow_picks_the_recorded_branch():
    x = ad.constant(1.0)
    v0, v1 = ad.Variable(2.0), ad.Variable(2.0)
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        result = v0 if x > 0.0 else v1 ** 2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert dv0.numpy() == 1.0 and dv1 is None
    assert tape.gradient(result, x) is None  # the condition carries no gradient


# --- unconnected and non-differentiable paths ------------------------------------------------------

def test_unconnected_gradients_none_and_zero():
    x = ad.Variable(2.0)
    unused = ad.Variable([1.0, 2.0, 3.0])
    with ad.GradientTape(persistent=True) as tape:
        y = x * 2
    assert tape.gradient(y, unused) is None
    assert tape.gradient(y, unused, unconnected_gradients=ad.UnconnectedGradients.NONE) is None
    assert tape.gradient(y, unused, unconnected_gradients="none") is None
    for zero in (ad.UnconnectedGradients.ZERO, "zero"):
        g = tape.gradient(y, [x, unused], unconnected_gradients=zero)
        assert g[0].numpy() == 2.0
        np.testing.assert_array_equal(g[1].numpy(), np.zeros(3))
        assert g[1].dtype == np.float64


def test_unknown_unconnected_gradients_raises_value_error():
    x = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        y = x * 2
    with pytest.raises(ValueError):
        tape.gradient(y, x, unconnected_gradients="nan")
    assert tape.gradient(y, x).numpy() == 2.0  # a rejected call does not use up the tape


def test_watching_an_integer_tensor_warns_and_gives_no_gradient():
    x = ad.constant(10, dtype=np.int64)
    with ad.GradientTape() as tape:
        with pytest.warns(UserWarning, match="floating"):
            tape.watch(x)
        y = x * x
    assert tape.gradient(y, x) is None


def test_casting_to_an_integer_stops_the_gradient():
    x = ad.Variable(2.5)
    with ad.GradientTape() as tape:
        y = anp.astype(x, np.int64) * x
    assert tape.gradient(y, x).numpy() == 2.0  # only the float factor carries a gradient


def test_replacing_a_variable_by_a_tensor_loses_the_gradient():
    x = ad.Variable(2.0)
    grads = []
    for _ in range(2):
        with ad.GradientTape() as tape:
            y = x + 1
        grads.append(tape.gradient(y, x))
        x = x + 1  # should have been x.assign_add(1)
    assert grads[0].numpy() == 1.0 and grads[1] is None


def test_stateful_assign_does_not_carry_a_gradient():
    x0 = ad.Variable(3.0)
    x1 = ad.Variable(0.0)
    with ad.GradientTape() as tape:
        x1.assign_add(x0)
        y = x1 ** 2
    dy_dx0, dy_dx1 = tape.gradient(y, [x0, x1])
    assert dy_dx0 is None and dy_dx1.numpy() == 6.0


def test_leaving_the_engine_through_numpy_values_gives_no_gradient():
    x = ad.Variable([1.0, 2.0])
    with ad.GradientTape() as tape:
        y = ad.constant(np.mean(x.numpy()))
    assert tape.gradient(y, x) is None


# --- controlling what is recorded ------------------------------------------------------------------

def _x_and_y():
    return ad.Variable(2.0), ad.Variable(3.0)


def test_stop_recording_pauses_the_tape():
    x, y = _x_and_y()
    with ad.GradientTape() as tape:
        x_sq = x * x
        with tape.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grads = tape.gradient(z, {"x": x, "y": y})
    assert grads["x"].numpy() == 4.0 and grads["y"] is None


def test_reset_forgets_what_was_recorded():
    x, y = _x_and_y()
    with ad.GradientTape() as tape:
        y_sq = y * y
        tape.reset()
        x_sq = x * x
        z = x_sq + y_sq
    grads = tape.gradient(z, {"x": x, "y": y})
    assert grads["x"].numpy() == 4.0 and grads["y"] is None


def test_stop_gradient_blocks_one_path():
    x, y = _x_and_y()
    with ad.GradientTape() as tape:
        z = x * x + ad.stop_gradient(y * y)
    grads = tape.gradient(z, {"x": x, "y": y})
    assert grads["x"].numpy() == 4.0 and grads["y"] is None


def test_stop_recording_pauses_only_its_own_tape():
    x = ad.Variable(2.0)
    with ad.GradientTape() as outer:
        with ad.GradientTape() as inner:
            with inner.stop_recording():
                y = x * x
            z = x * 3
        assert inner.gradient([y, z], x).numpy() == 3.0
    assert outer.gradient(y, x).numpy() == 4.0


def test_stop_recording_on_a_tape_that_is_not_recording_raises_runtime_error():
    tape = ad.GradientTape()
    with pytest.raises(RuntimeError, match="recording"):
        with tape.stop_recording():
            pass
    with tape:
        pass
    with pytest.raises(RuntimeError, match="recording"):
        with tape.stop_recording():
            pass


def test_paused_records_nothing_on_what_it_pauses_and_everything_after():
    x = ad.constant(2.0)
    with ad.GradientTape(persistent=True) as outer, ad.GradientTape(persistent=True) as inner, \
            ad.ForwardAccumulator(x, 1.0) as accumulator:
        outer.watch(x)
        inner.watch(x)
        with ad.core.paused(tapes=[inner], accumulators=False):
            square = x * x
        with ad.core.paused():
            cube = x * x * x
        triple = 3.0 * x
        active = (list(ad.core.state.tapes), list(ad.core.state.accumulators))
    assert active == ([outer, inner], [accumulator])
    assert outer.gradient(square, x).numpy() == 4.0 and inner.gradient(square, x) is None
    assert accumulator.jvp(square).numpy() == 4.0
    assert outer.gradient(cube, x) is None and inner.gradient(cube, x) is None
    assert accumulator.jvp(cube) is None
    assert outer.gradient(triple, x).numpy() == inner.gradient(triple, x).numpy() == 3.0
    assert accumulator.jvp(triple).numpy() == 3.0


def test_tape_sweep_with_a_batch_of_seeds_gives_the_jacobian_rows():
    x0 = np.array([0.5, -1.0, 2.0])
    x = ad.constant(x0)
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = x[:2] * x[1:]  # J = [[x1, x0, 0], [0, x2, x1]]
    (rows,) = tape.sweep([y], [np.eye(2)], [x], (2,))
    assert type(rows) is np.ndarray  # no tape records the sweep: raw arrays
    np.testing.assert_array_equal(rows, [[-1.0, 0.5, 0.0], [0.0, 2.0, -1.0]])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [-1.0, 2.5, -1.0])  # not used up


# --- custom gradients ------------------------------------------------------------------------------

@ad.custom_gradient
def clip_gradient_norm(y):
    def backward(dy):
        return dy * anp.minimum(1.0, 0.5 / anp.sqrt(anp.sum(dy * dy)))
    return y, backward


def test_custom_gradient_clips_the_upstream_gradient():
    v = ad.Variable(2.0)
    with ad.GradientTape() as tape:
        output = clip_gradient_norm(v * v)
    assert tape.gradient(output, v).numpy() == 2.0  # upstream 1 clipped to 0.5, times 2v = 4


def test_custom_gradient_with_several_outputs_receives_one_upstream_each():
    @ad.custom_gradient
    def double_and_triple(x):
        def grad_fn(d_double, d_triple):
            return 2 * d_double + 3 * d_triple
        return (2 * x, 3 * x), grad_fn

    z = ad.Variable(1.0)
    with ad.GradientTape(persistent=True) as tape:
        doubled, tripled = double_and_triple(z)
        combined = doubled + 10 * tripled
    assert tape.gradient(combined, z).numpy() == 32.0
    assert tape.gradient(tripled, z).numpy() == 3.0  # the unused output's upstream is zero


def test_custom_gradient_over_variables_read_inside():
    w = ad.Variable([2.0, -1.0], name="w")
    seen = []

    @ad.custom_gradient
    def scaled_product(x):
        y = x * w

        def grad_fn(dy, variables=None):
            seen.append(variables)
            return dy * w, [10 * dy * x]  # the variable's gradient deliberately scaled by 10
        return y, grad_fn

    x = ad.constant([3.0, 4.0])
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = anp.sum(scaled_product(x))
    dx, dw = tape.gradient(y, [x, w])
    assert len(seen) == 1 and len(seen[0]) == 1 and seen[0][0] is w
    np.testing.assert_array_equal(dx.numpy(), [2.0, -1.0])
    np.testing.assert_array_equal(dw.numpy(), [30.0, 40.0])


@ad.custom_gradient
def log1pexp(x):
    e = anp.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))
    return anp.log(1 + e), grad


@pytest.mark.parametrize("x0", [-2.0, 0.0, 0.7, 30.0])
def test_custom_gradient_built_from_engine_ops_is_differentiable(x0):
    x = ad.constant(x0)
    with ad.GradientTape() as outer:
        outer.watch(x)
        with ad.GradientTape() as inner:
            inner.watch(x)
            y = log1pexp(x)
        dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    np.testing.assert_allclose(y.numpy(), np.log1p(np.exp(x0)), rtol=1e-14)
    np.testing.assert_allclose(dy_dx.numpy(), sigmoid(x0), rtol=1e-14)
    np.testing.assert_allclose(d2y_dx2.numpy(), sigmoid(x0) * sigmoid(-x0), rtol=1e-12)


def test_custom_gradient_is_stable_where_exp_overflows():
    x = ad.constant(100.0, dtype=np.float32)  # exp(100) overflows float32
    with np.errstate(over="ignore", invalid="ignore"), ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = log1pexp(x)
        naive = anp.log(1 + anp.exp(x))
        assert tape.gradient(y, x).numpy() == 1.0
        assert np.isnan(tape.gradient(naive, x).numpy())


# --- several tapes, nested tapes, threads ----------------------------------------------------------

def test_two_tapes_each_watching_its_own_tensor():
    x0, x1 = ad.constant(0.0), ad.constant(0.0)
    with ad.GradientTape() as tape0, ad.GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        y = anp.sin(x0) + anp.sigmoid(x1)
    assert tape0.gradient(y, x0).numpy() == 1.0
    assert tape1.gradient(y, x1).numpy() == 0.25


def test_nested_tapes_give_second_derivatives():
    for x0, f, first, second in [(3.0, lambda x: x * x, 6.0, 2.0), (1.0, lambda x: x ** 3, 3.0, 6.0)]:
        x = ad.Variable(x0)
        with ad.GradientTape() as outer:
            with ad.GradientTape() as inner:
                y = f(x)
            dy_dx = inner.gradient(y, x)
        assert dy_dx.numpy() == first
        assert outer.gradient(dy_dx, x).numpy() == second


@pytest.mark.parametrize("f, derivatives", [
    (lambda x: x ** 4, [lambda x: 4 * x ** 3, lambda x: 12 * x ** 2, lambda x: 24 * x, lambda x: 24.0]),
    (anp.sin, [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]),
], ids=["x**4", "sin"])
def test_four_nested_tapes_give_the_fourth_derivative(f, derivatives):
    x0 = 1.3
    x = ad.Variable(x0)
    with ad.GradientTape() as t4:
        with ad.GradientTape() as t3:
            with ad.GradientTape() as t2:
                with ad.GradientTape() as t1:
                    y = f(x)
                d1 = t1.gradient(y, x)
            d2 = t2.gradient(d1, x)
        d3 = t3.gradient(d2, x)
    d4 = t4.gradient(d3, x)
    for computed, exact in zip([d1, d2, d3, d4], derivatives):
        np.testing.assert_allclose(computed.numpy(), exact(x0), rtol=1e-13)


def test_tapes_are_thread_local():
    """Each thread waits for the other's event, so the tapes overlap however the threads are scheduled;
    the timeouts only keep a broken engine from hanging the suite (a minute: a loaded machine may
    hold a thread back for seconds)."""
    x = ad.constant(3.0)
    thread_tape_open, main_done = threading.Event(), threading.Event()
    from_thread = {}

    def record_in_a_thread():
        with ad.GradientTape(persistent=True) as tape:
            tape.watch(x)
            thread_tape_open.set()
            waited = main_done.wait(timeout=60)
            own = 5 * x
        from_thread.update(tape=tape, own=own, waited=waited)

    with ad.GradientTape(persistent=True) as main_tape:
        main_tape.watch(x)
        worker = threading.Thread(target=record_in_a_thread)
        worker.start()
        assert thread_tape_open.wait(timeout=60)
        mine = x * x  # recorded while the other thread's tape is recording
        main_done.set()
        worker.join(timeout=60)
    assert not worker.is_alive() and from_thread["waited"], "the recording thread did not finish"
    thread_tape = from_thread["tape"]
    assert main_tape.gradient(mine, x).numpy() == 6.0
    assert main_tape.gradient(from_thread["own"], x) is None
    assert thread_tape.gradient(from_thread["own"], x).numpy() == 5.0
    assert thread_tape.gradient(mine, x) is None


# --- jacobian and batch_jacobian -------------------------------------------------------------------

def test_jacobian_of_sigmoid_with_respect_to_a_scalar_shift():
    x = np.linspace(-10.0, 10.0, 201)
    delta = ad.Variable(0.0)
    with ad.GradientTape() as tape:
        y = anp.sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta)
    assert dy_dx.shape == (201,)
    s = sigmoid(x)
    np.testing.assert_allclose(dy_dx.numpy(), s * (1 - s), rtol=1e-12, atol=1e-18)


@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-12), (np.float32, 1e-3)])
def test_jacobian_of_a_dense_output_with_respect_to_its_kernel(dtype, tolerance):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 5)).astype(dtype)
    kernel = ad.Variable(rng.normal(size=(5, 10)).astype(dtype))
    bias = ad.Variable(np.zeros(10, dtype))
    with ad.GradientTape(persistent=True) as tape:
        y = dense(x, kernel, bias)
    jac = tape.jacobian(y, kernel)
    assert jac.shape == (7, 10, 5, 10) and jac.dtype == dtype
    # d y[i, j] / d kernel[k, l] = x[i, k] * (j == l)
    np.testing.assert_allclose(jac.numpy(), np.einsum("ik,jl->ijkl", x, np.eye(10)), atol=tolerance)
    grad = tape.gradient(y, kernel)
    np.testing.assert_allclose(jac.numpy().sum(axis=(0, 1)), grad.numpy(), atol=tolerance)
    np.testing.assert_array_equal(tape.jacobian(y, kernel, chunk_size=3).numpy(), jac.numpy())


def test_jacobian_of_a_scalar_target_is_the_gradient():
    x = ad.Variable([1.0, 2.0])
    with ad.GradientTape(persistent=True) as tape:
        y = anp.sum(x ** 3)
    jac = tape.jacobian(y, x)
    assert jac.shape == (2,)
    np.testing.assert_array_equal(jac.numpy(), tape.gradient(y, x).numpy())
    np.testing.assert_array_equal(jac.numpy(), [3.0, 12.0])


def test_jacobian_of_several_sources_and_unconnected_zero():
    rng = np.random.default_rng(2)
    kernel, bias = ad.Variable(rng.normal(size=(3, 2))), ad.Variable(rng.normal(size=2))
    unused = ad.Variable(np.ones(4))
    x = rng.normal(size=(4, 3))
    with ad.GradientTape(persistent=True) as tape:
        y = dense(x, kernel, bias, anp.tanh)
    jacobians = tape.jacobian(y, {"kernel": kernel, "bias": bias})
    assert jacobians["kernel"].shape == (4, 2, 3, 2) and jacobians["bias"].shape == (4, 2, 2)
    np.testing.assert_allclose(
        jacobians["bias"].numpy(),
        central_difference(lambda b: dense(x, kernel.numpy(), b, np.tanh), bias.numpy()), atol=1e-9)
    assert tape.jacobian(y, unused) is None
    zero = tape.jacobian(y, unused, unconnected_gradients="zero")
    np.testing.assert_array_equal(zero.numpy(), np.zeros((4, 2, 4)))


def two_layer_loss(x, kernel1, bias1, kernel2, bias2):
    """Mean squared output of Dense(8, tanh) then Dense(2)."""
    return anp.mean(dense(dense(x, kernel1, bias1, anp.tanh), kernel2, bias2) ** 2)


def test_hessian_of_a_two_layer_loss_and_a_newton_step():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 5))
    kernel1 = ad.Variable(rng.normal(size=(5, 8)) / 2)
    bias1 = ad.Variable(rng.normal(size=8) / 4)
    kernel2 = ad.Variable(rng.normal(size=(8, 2)))
    bias2 = ad.Variable(rng.normal(size=2))

    with ad.GradientTape(persistent=True) as outer:
        with ad.GradientTape() as inner:
            loss = two_layer_loss(x, kernel1, bias1, kernel2, bias2)
        g = inner.gradient(loss, kernel1)
    hessian = outer.jacobian(g, kernel1)
    assert hessian.shape == (5, 8, 5, 8)
    np.testing.assert_allclose(outer.jacobian(g, kernel1, chunk_size=7).numpy(), hessian.numpy(),
                               rtol=1e-13, atol=1e-15)
    h = hessian.numpy().reshape(40, 40)
    np.testing.assert_allclose(h, h.T, atol=1e-12)

    def gradient_at(k1):
        k1 = ad.constant(k1)
        with ad.GradientTape() as tape:
            tape.watch(k1)
            value = two_layer_loss(x, k1, bias1.numpy(), kernel2.numpy(), bias2.numpy())
        return tape.gradient(value, k1).numpy()

    np.testing.assert_allclose(g.numpy(), central_difference(
        lambda k1: two_layer_loss(x, k1, bias1.numpy(), kernel2.numpy(), bias2.numpy()),
        kernel1.numpy()), atol=1e-8)
    np.testing.assert_allclose(hessian.numpy(), central_difference(gradient_at, kernel1.numpy()),
                               atol=1e-7)

    update = np.linalg.solve(h + 1e-3 * np.eye(40), g.numpy().reshape(40)).reshape(5, 8)
    eps = 1e-5
    h_update = (gradient_at(kernel1.numpy() + eps * update)
                - gradient_at(kernel1.numpy() - eps * update)) / (2 * eps)
    np.testing.assert_allclose(h_update + 1e-3 * update, g.numpy(), atol=1e-7)
    before = kernel1.numpy()
    kernel1.assign_sub(update)
    np.testing.assert_allclose(kernel1.numpy(), before - update, rtol=1e-15)


def test_batch_jacobian_is_the_diagonal_of_the_full_jacobian():
    rng = np.random.default_rng(4)
    x = ad.constant(rng.normal(size=(7, 5)))
    kernel, bias = ad.Variable(rng.normal(size=(5, 6))), ad.Variable(rng.normal(size=6))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = dense(x, kernel, bias, anp.tanh)
    per_example = tape.batch_jacobian(y, x)
    full = tape.jacobian(y, x)
    assert per_example.shape == (7, 6, 5) and full.shape == (7, 6, 7, 5)
    np.testing.assert_allclose(per_example.numpy(), np.einsum("bxby->bxy", full.numpy()), atol=1e-15)
    np.testing.assert_allclose(per_example.numpy(), full.numpy().sum(axis=2), atol=1e-15)
    exact = (1 - y.numpy() ** 2)[:, :, None] * kernel.numpy().T[None]
    np.testing.assert_allclose(per_example.numpy(), exact, rtol=1e-12)


def batch_normalize(h):
    """Training-mode batch normalization: statistics over the batch couple the examples."""
    return (h - anp.mean(h, axis=0)) / anp.std(h, axis=0)


def test_batch_jacobian_with_a_batch_coupled_layer_sums_over_the_target_examples():
    rng = np.random.default_rng(5)
    x = ad.constant(rng.normal(size=(7, 5)))
    kernel1, kernel2 = ad.Variable(rng.normal(size=(5, 4))), ad.Variable(rng.normal(size=(4, 6)))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = anp.matmul(anp.tanh(batch_normalize(anp.matmul(x, kernel1))), kernel2)
    full = tape.jacobian(y, x).numpy()
    off_diagonal = full.copy()
    off_diagonal[np.arange(7), :, np.arange(7)] = 0
    assert np.abs(off_diagonal).max() > 1e-2  # examples are no longer independent

    per_example = tape.batch_jacobian(y, x).numpy()
    assert per_example.shape == (7, 6, 5)
    # Documented meaning: entry [b] is the sum over b' of d y[b'] / d x[b]
    np.testing.assert_allclose(per_example, np.einsum("axby->bxy", full), atol=1e-12)
    assert np.abs(per_example - np.einsum("bxby->bxy", full)).max() > 1e-2

    def network(inputs):
        return np.asarray(anp.matmul(anp.tanh(batch_normalize(anp.matmul(inputs, kernel1.numpy()))),
                                     kernel2.numpy()))
    np.testing.assert_allclose(full, central_difference(network, x.numpy()), atol=1e-7)


def test_batch_jacobian_needs_a_shared_batch_dimension():
    x = ad.constant(np.ones((3, 2)))
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = anp.sum(x, axis=1, keepdims=True).T
    with pytest.raises(ValueError, match="batch"):
        tape.batch_jacobian(y, x)


# --- recompute_grad --------------------------------------------------------------------------------

def test_recompute_grad_reruns_the_function_in_the_backward_pass():
    calls = []

    def block(x):
        calls.append("running")
        return anp.sin(x) * x

    checkpointed = ad.recompute_grad(block)
    x = ad.Variable([0.3, 0.5, -1.2])
    with ad.GradientTape() as tape:
        y = anp.sum(checkpointed(checkpointed(checkpointed(checkpointed(x)))))
    assert len(calls) == 4
    g = tape.gradient(y, x)
    assert len(calls) == 8
    with ad.GradientTape() as tape:
        plain_y = anp.sum(block(block(block(block(x)))))
    assert plain_y.numpy() == y.numpy()
    np.testing.assert_allclose(g.numpy(), tape.gradient(plain_y, x).numpy(), rtol=1e-14)


def test_recompute_grad_differentiates_variables_read_inside():
    w = ad.Variable([1.5, -0.5])

    def block(x):
        return anp.tanh(x * w)

    x = ad.Variable([0.4, 0.8])
    with ad.GradientTape() as tape:
        y = anp.sum(ad.recompute_grad(block)(x))
    dx, dw = tape.gradient(y, [x, w])
    slope = 1 - np.tanh(x.numpy() * w.numpy()) ** 2
    np.testing.assert_allclose(dx.numpy(), slope * w.numpy(), rtol=1e-14)
    np.testing.assert_allclose(dw.numpy(), slope * x.numpy(), rtol=1e-14)


def test_recompute_grad_works_at_second_order():
    w = ad.Variable([1.5, -0.5])

    def block(x):
        return anp.tanh(x * w)

    x = ad.Variable([0.4, 0.8])
    with ad.GradientTape() as outer:
        with ad.GradientTape() as inner:
            y = anp.sum(ad.recompute_grad(block)(x))
        dx = inner.gradient(y, x)
    hessian = outer.jacobian(dx, x).numpy()
    t = np.tanh(x.numpy() * w.numpy())
    np.testing.assert_allclose(hessian, np.diag(-2 * t * (1 - t ** 2) * w.numpy() ** 2), rtol=1e-13)


# --- gradients of gradients with respect to a model ------------------------------------------------

def test_input_gradient_regularization():
    rng = np.random.default_rng(6)
    x = ad.constant(rng.normal(size=(7, 5)))
    kernel = ad.Variable(rng.normal(size=(5, 10)), name="kernel")
    bias = ad.Variable(rng.normal(size=10) / 2, name="bias")

    with ad.GradientTape() as outer:
        with ad.GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(x)
            out = anp.sum(dense(x, kernel, bias, relu) ** 2)
        g = inner.gradient(out, x)
        g_norm = anp.sqrt(anp.sum(g ** 2))
    assert names(inner.watched_variables()) == []
    d_kernel, d_bias = outer.gradient(g_norm, [kernel, bias])
    assert d_kernel.shape == (5, 10) and d_bias.shape == (10,)

    def input_gradient_norm(k, b):
        return np.linalg.norm(2 * np.maximum(x.numpy() @ k + b, 0) @ k.T)

    np.testing.assert_allclose(g_norm.numpy(), input_gradient_norm(kernel.numpy(), bias.numpy()),
                               rtol=1e-14)
    np.testing.assert_allclose(
        d_kernel.numpy(), central_difference(lambda k: input_gradient_norm(k, bias.numpy()),
                                             kernel.numpy()), atol=1e-7)
    np.testing.assert_allclose(
        d_bias.numpy(), central_difference(lambda b: input_gradient_norm(kernel.numpy(), b),
                                           bias.numpy()), atol=1e-7)


def test_cached_inner_gradient_hessian_vector_products():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 3))
    variables = [ad.Variable(rng.normal(size=(3, 4))), ad.Variable(rng.normal(size=4)),
                 ad.Variable(rng.normal(size=(4, 1))), ad.Variable(rng.normal(size=1))]

    def loss():
        return two_layer_loss(x, *variables)

    with ad.GradientTape(persistent=True) as outer:
        with ad.GradientTape() as inner:
            value = loss()
        g = inner.gradient(value, variables)

    def gradient_at(point):
        with ad.GradientTape() as tape:
            tensors = [ad.constant(p) for p in point]
            tape.watch(tensors)
            result = two_layer_loss(x, *tensors)
        return [gi.numpy() for gi in tape.gradient(result, tensors)]

    def nested_tape_hvp(v):
        with ad.GradientTape() as outer_tape:
            with ad.GradientTape() as inner_tape:
                inner_value = loss()
            grads = inner_tape.gradient(inner_value, variables)
            dot = sum(anp.sum(gi * vi) for gi, vi in zip(grads, v))
        return outer_tape.gradient(dot, variables)

    point = [v.numpy() for v in variables]
    eps = 1e-5
    for _ in range(3):
        v = [rng.normal(size=p.shape) for p in point]
        hv = outer.gradient(g, variables, output_gradients=v)
        plus = gradient_at([p + eps * vi for p, vi in zip(point, v)])
        minus = gradient_at([p - eps * vi for p, vi in zip(point, v)])
        for hv_i, nested_i, plus_i, minus_i in zip(hv, nested_tape_hvp(v), plus, minus):
            np.testing.assert_allclose(hv_i.numpy(), nested_i.numpy(), rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(hv_i.numpy(), (plus_i - minus_i) / (2 * eps), atol=1e-7)


def test_output_gradients_are_differentiable():
    """d/dv of u . (H v) is H u: the seed of the cached-gradient sweep is recorded by an outer tape."""
    x = ad.Variable([0.3, -0.7])
    u = np.array([1.0, 2.0])
    v = ad.constant([0.5, 1.5])

    def f(z):
        return anp.sum(anp.sin(z) * z[::-1])

    with ad.GradientTape() as tape_v:
        tape_v.watch(v)
        with ad.GradientTape(persistent=True) as outer:
            with ad.GradientTape() as inner:
                y = f(x)
            g = inner.gradient(y, x)
        hv = outer.gradient(g, x, output_gradients=v)
        u_hv = anp.sum(hv * u)
    c, s = np.cos(x.numpy()), np.sin(x.numpy())
    hessian = np.array([[-s[0] * x.numpy()[1], c[0] + c[1]],
                        [c[0] + c[1], -s[1] * x.numpy()[0]]])
    np.testing.assert_allclose(hv.numpy(), hessian @ v.numpy(), rtol=1e-14)
    np.testing.assert_allclose(tape_v.gradient(u_hv, v).numpy(), hessian @ u, rtol=1e-14)


# --- error paths -----------------------------------------------------------------------------------

def test_re_entering_an_active_tape_raises_value_error():
    with ad.GradientTape() as tape:
        with pytest.raises(ValueError, match="recording"):
            with tape:
                pass


def test_watching_a_non_tensor_raises_value_error():
    with ad.GradientTape() as tape:
        for not_a_tensor in (3.0, np.ones(3), [ad.constant(1.0), np.ones(2)]):
            with pytest.raises(ValueError, match="Tensor"):
                tape.watch(not_a_tensor)


def test_non_tensor_sources_raise_type_error():
    x = ad.Variable(2.0)
    with ad.GradientTape(persistent=True) as tape:
        y = x * x
    for not_a_tensor in (np.ones(1), 2.0, [x, np.ones(1)]):
        with pytest.raises(TypeError, match="Tensor"):
            tape.gradient(y, not_a_tensor)


def test_jacobian_of_an_empty_target_is_empty_not_unconnected():
    x = ad.constant([1.0, 2.0, 3.0])
    with ad.GradientTape() as tape:
        tape.watch(x)
        y = x[2:1] * 2.0
    jacobian = tape.jacobian(y, x)
    assert jacobian is not None and jacobian.shape == (0, 3)


def test_a_sweep_computes_no_cotangent_for_an_input_its_tape_does_not_watch():
    """An input-gradient tape (watching x only) never runs the rule for the weights of x * w: double
    backpropagation and the finite-difference penalty pay for the input cotangents alone."""
    from autodiff.extend import defvjp, primitive

    calls = []
    scale = primitive(lambda x, w: x * w, "scale")
    defvjp(scale, lambda g, ans, x, w: calls.append("x") or g * w,
           lambda g, ans, x, w: calls.append("w") or g * x)
    x, w = ad.constant([1.0, 2.0]), ad.Variable([3.0, 4.0])
    with ad.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = anp.sum(scale(x, w) ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.array([3.0, 8.0]) * [3.0, 4.0])
    assert calls == ["x"]
    with ad.GradientTape() as both:
        both.watch(x)
        y = anp.sum(scale(x, w) ** 2)
    gx, gw = both.gradient(y, [x, w])
    np.testing.assert_allclose(gw.numpy(), 2 * np.array([3.0, 8.0]) * [1.0, 2.0])
    assert sorted(calls[1:]) == ["w", "x"]
