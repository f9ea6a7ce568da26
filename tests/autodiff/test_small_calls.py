"""Small problems at the cost of their NumPy ops: a replayed call with one array goes straight to
its program (no signature walk, no tree rebuild), the per-iterate split of a Hessian operator
likewise, and programs are lowered (operators as operators, sums of slice cotangents unrolled, a
value read once fused into its reader) with the same floating-point operations: bit for bit."""
from __future__ import annotations

import operator
import sys

import numpy as np
import pytest

import autodiff as ad
from autodiff.jit import Program, lowering, scalar, split, trace
from autodiff.jit.program import _accumulate, _accumulate_sliced, joined


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def stacked(x):  # MGH's Rosenbrock: scalar reads stacked, the squared norm (slice cotangents)
    r = np.stack([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])
    return r @ r


@pytest.fixture(autouse=True)
def hot(monkeypatch):
    """The calls of hot programs, which run their scalar programs where those are faster: hot from
    their construction here (``test_scalar_programs`` checks that a program made hot by its calls
    is called as these are)."""
    monkeypatch.setattr(scalar, "HOT_CALLS", 0)


def python_calls(call) -> list:
    """The Python functions of autodiff (and its programs) that ``call()`` enters."""
    entered = []

    def profile(frame, event, _):
        if event == "call" and "numpy" not in frame.f_code.co_filename:
            entered.append(frame.f_code.co_name)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered[1:]  # call itself not counted


def test_a_replayed_call_with_one_array_goes_straight_to_its_program():
    x = np.array([-1.2, 1.0, 0.5])
    for f in (rosenbrock, stacked):
        traced = ad.function(f)
        grad, value_and_grad = traced.grad(), traced.value_and_grad()
        expected = ad.grad(f)(x)
        np.testing.assert_array_equal(grad(x), expected)
        assert python_calls(lambda: grad(x)) == ["__call__", "program"]  # noqa: B023
        np.testing.assert_array_equal(grad(x), expected)
        value, gradient = value_and_grad(x)
        value, gradient = value_and_grad(x)        # the fast path: a 0-d value as a NumPy scalar
        assert type(value) is np.float64 and value == f(x)
        np.testing.assert_array_equal(gradient, expected)
    traced = ad.function(rosenbrock)
    traced(x)
    assert type(traced(x)) is np.float64 and traced(x) == rosenbrock(x)
    # another shape, another dtype and Tensors in take the signature's path, and come back
    np.testing.assert_array_equal(traced.grad()(np.ones(5)), np.zeros(5))
    assert traced.grad()(x.astype(np.float32)).dtype == np.float32
    assert isinstance(traced.grad()(ad.constant(x)), ad.Tensor)
    np.testing.assert_array_equal(traced.grad()(x), ad.grad(rosenbrock)(x))
    assert traced.traces == 5


def test_a_gradient_made_hot_by_its_calls_goes_straight_to_its_scalar_program(monkeypatch):
    """Until hot, a replayed call's program counts its calls (one more Python call); the call that
    makes it hot switches it to its scalar program, and the calls after go straight to that, as a
    program hot from its construction: no layer left. The results are the eager sweep's bit for bit."""
    monkeypatch.setattr(scalar, "HOT_CALLS", 30)
    monkeypatch.setattr(scalar, "_faster", lambda *_: True)
    x = np.array([-1.2, 1.0, 0.5])
    grad = ad.function(rosenbrock).grad()
    np.testing.assert_array_equal(grad(x), ad.grad(rosenbrock)(x))
    (replay,) = next(iter(grad._cache.values()))
    assert python_calls(lambda: grad(x)) == ["__call__", "counted", "program"] and replay.program.scalar_source is None
    for k in range(30):
        np.testing.assert_array_equal(grad(x + 0.1 * k), ad.grad(rosenbrock)(x + 0.1 * k))
    assert replay.program.scalar_source is not None and replay.direct is replay.program.run
    assert python_calls(lambda: grad(x)) == ["__call__", "program"]
    for point in (x, -x, x + 0.25):
        np.testing.assert_array_equal(grad(point), ad.grad(rosenbrock)(point))


def test_a_failed_guard_on_the_direct_path_takes_the_other_branch():
    f = ad.function(lambda x: np.sum(x ** 2) if np.sum(x) > 0 else np.sum(x ** 3))
    grad = f.grad()
    for x in (np.array([1.0, 2.0]), np.array([-1.0, -2.0]), np.array([1.0, 2.0]), np.array([-3.0, 1.0])):
        np.testing.assert_array_equal(grad(x), 2 * x if np.sum(x) > 0 else 3 * x ** 2)
    assert f.traces == 2


def test_the_hessian_operator_of_each_iterate_goes_straight_to_its_split():
    traced = ad.function(stacked)
    x, v = np.array([-1.2, 1.0]), np.array([0.5, -2.0])
    ad.hessian_operator(traced, x)
    calls = python_calls(lambda: ad.hessian_operator(traced, x + 1.0))
    # a Pending pair (the point's copy) and the operator, without the constructor's checks (the
    # signature's path: 37 calls); nothing runs until the operator is used
    assert calls == ["hessian_operator", "__autodiff_deferred__", "__init__", "_fill"], calls
    operator_ = ad.hessian_operator(traced, x)
    # its gradient read: the split's program, the value (_scalars and its list), Late (of the point's copy)
    calls = python_calls(lambda: operator_.gradient)
    assert calls == ["gradient", "_started", "start", "start", "program", "_scalars", "<listcomp>", "__init__",
                     "_value_and_flat"], calls
    operator_.matvec(v)
    assert python_calls(lambda: operator_.matvec(v)) == ["matvec", "__call__", "program", "_array"]  # unrolled sums
    for point in (x, x + 1.0, np.array([3.0, -1.0])):
        operator_, eager = ad.hessian_operator(traced, point), ad.hessian_operator(stacked, point)
        assert type(operator_) is type(eager) and type(operator_.value) is type(eager.value) is float
        assert (operator_.shape, operator_.dtype, operator_.chunk_size, operator_.x) == (eager.shape, eager.dtype,
                                                                                         None, point)
        assert operator_.value == eager.value
        np.testing.assert_array_equal(operator_.gradient, eager.gradient)
        np.testing.assert_array_equal(operator_.matvec(v), eager.matvec(v))
        np.testing.assert_array_equal(operator_.to_dense(), eager.to_dense())


def box_3d(x):  # MGH 12: exponentials and a sum of squares over ten points
    t = 0.1 * np.arange(1, 11)
    r = np.exp(-t * x[0]) - np.exp(-t * x[1]) - x[2] * (np.exp(-t) - np.exp(-10.0 * t))
    return np.sum(r ** 2)


@pytest.mark.parametrize("f, x", [(stacked, [-1.2, 1.0]), (rosenbrock, [-1.2, 1.0, 0.5, 2.0]),
                                  (box_3d, [0.0, 10.0, 20.0])])
def test_one_product_at_each_new_point_is_one_program_and_the_split_bit_for_bit(f, x):
    traced, x = ad.function(f), np.array(x)
    for _ in range(2):  # the trace (its operator started), then the joined program made on first use
        ad.hessian_operator(traced, x).matvec(np.ones(x.size))
    rng = np.random.default_rng(3)
    for point in (x, x + 0.5, x * rng.uniform(0.5, 1.5, x.size)):
        v, w = rng.standard_normal((2, x.size))
        split = ad.hessian_operator(traced, point)
        assert split.gradient.shape == x.shape  # started: ``before``, then each product ``after``
        operator_ = ad.hessian_operator(traced, point)
        # one product at a new point: before and after joined into one program, without the value and
        # gradient's own ops (made on first use)
        calls = python_calls(lambda: operator_.matvec(v))  # noqa: B023
        assert calls == ["matvec", "vector_product", "joined_program", "program"], calls
        product = split.matvec(v)
        np.testing.assert_array_equal(operator_.matvec(v), product)
        np.testing.assert_array_equal(product, ad.hessian_operator(f, point).matvec(v))  # the eager sweep
        # more products at the point: ``after`` alone, on the values the joined program saved
        assert python_calls(lambda: operator_.matvec(w)) == ["matvec", "vector_product", "program"]  # noqa: B023
        np.testing.assert_array_equal(operator_.matvec(w), split.matvec(w))
        assert operator_.value == split.value and type(operator_.value) is float
        np.testing.assert_array_equal(operator_.gradient, split.gradient)
        np.testing.assert_array_equal(operator_.matvec(w), split.matvec(w))
        np.testing.assert_array_equal(operator_.to_dense(), split.to_dense())
        # a first call of another signature (a dense Hessian's batch) starts the pair
        np.testing.assert_array_equal(ad.hessian_operator(traced, point).to_dense(), split.to_dense())
    assert traced.traces == 2   # the split, and its batched late signature


def test_a_pending_operator_is_taken_at_its_point_as_it_was_and_retraces_another_branch():
    traced = ad.function(lambda x: np.sum(x ** 4) if x[0] > 0 else np.sum(x[1] * x ** 3))
    x, v = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    ad.hessian_operator(traced, x)
    point = x.copy()
    operator_ = ad.hessian_operator(traced, point)
    point += 10.0                                     # the operator is the Hessian at x
    np.testing.assert_array_equal(operator_.matvec(v), 12.0 * x ** 2 * v)
    for point in (-x, x, np.array([-2.0, 3.0])):      # a guard fails in the joined program: traced again
        expected = ad.hessian_operator(traced.f, point)
        operator_ = ad.hessian_operator(traced, point)
        np.testing.assert_array_equal(operator_.matvec(v), expected.matvec(v))
        assert operator_.value == expected.value
        np.testing.assert_array_equal(operator_.gradient, expected.gradient)
    assert traced.traces == 2


def test_a_large_recording_is_not_kept_for_a_joined_program(monkeypatch):
    from autodiff.jit import traced as traced_module
    monkeypatch.setattr(traced_module, "JOIN_MAX_BYTES", 1000)   # the recording of 200 variables: larger
    traced, x, v = ad.function(rosenbrock), np.linspace(-1.0, 1.0, 200), np.ones(200)
    ad.hessian_operator(traced, x)
    operator_ = ad.hessian_operator(traced, x)
    assert "joined_program" in python_calls(lambda: operator_.matvec(v)) and operator_.product._staged._join is None
    np.testing.assert_array_equal(operator_.matvec(v), ad.hessian_operator(rosenbrock, x).matvec(v))  # the split
    monkeypatch.undo()   # the default (1 MB): this recording (a few kB) is kept
    small = ad.function(rosenbrock)
    ad.hessian_operator(small, x[:4])
    assert ad.hessian_operator(small, x[:4]).product._staged._join is not None


def test_the_joined_program_is_the_split_and_copies_only_its_late_outputs():
    def f(x, v):
        s = np.sin(x)
        return np.sum(s), (s * x) * v, x[1:] * v[1:]
    recording = trace(f, np.zeros(3), np.ones(3))
    x, v = recording.inputs
    args = (recording.records, [x], [v], recording.outputs)
    before, after, n_saved, _ = split(*args)
    program = joined(*args)
    assert "np.sum" not in program.source and program.source.count("c0(") == 1  # no value; sin once
    a, b = np.array([0.3, -1.0, 2.0]), np.array([1.5, 0.5, -2.0])
    *saved, product, tail = program.numpy_run(a, b)   # (the NumPy program's: run may be the scalar one)
    expected_saved = before.numpy_run(a)[-n_saved:]
    assert len(saved) == n_saved and any(s.base is a for s in saved)  # a view of x saved as it is, not copied
    for got, expected in zip(saved + [product, tail], expected_saved + after.numpy_run(*expected_saved, b)):
        np.testing.assert_array_equal(got, expected)
    assert tail.base is None                          # a late output is fresh (not a view of b)


def test_programs_write_operators_as_operators_and_unroll_the_sums_of_slices():
    for f in (rosenbrock, stacked):
        program = ad.function(f).grad()
        program(np.array([-1.2, 1.0]))
        (replay,) = next(iter(program._cache.values()))
        called = set(map(id, replay.run_program.__globals__.values()))
        for function in (operator.mul, operator.add, operator.sub, operator.neg, operator.getitem, operator.pow,
                         _accumulate, _accumulate_sliced, ad.numpy.ops._scatter_raw):
            assert id(function) not in called, function


def test_a_negative_constant_keeps_its_sign_under_a_power():
    f = ad.function(lambda x: (-2.0) ** x + x ** -2.0)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f(x), (-2.0) ** x + x ** -2.0)
    np.testing.assert_array_equal(f(x), [-1.0, 4.25, -8.0 + 1 / 9])


def test_a_chain_of_two_thousand_ops_is_fused_within_the_parsers_nesting_and_replays_exactly():
    def chain(x):
        for _ in range(700):
            x = np.sin(x) * 1.1 + 0.1
        return np.sum(x)
    x = np.linspace(-1.0, 1.0, 5)
    recording = trace(chain, x)
    program = Program(recording.records, recording.inputs, recording.outputs, single=True)
    assert program.source.count("\n") < 2 * 2100 / lowering.MAX_DEPTH + 10   # fused (and del lines)
    np.testing.assert_array_equal(program.run(x), chain(x))
    np.testing.assert_array_equal(ad.function(chain).grad()(x), ad.grad(chain)(x))


def _unrolled(unroll, shape: tuple, items: list) -> np.ndarray:
    """The sum of ``items`` as the lines ``unroll`` writes, run."""
    constants: dict = {}

    def constant(value):
        constants[f"c{len(constants)}"] = value
        return f"c{len(constants) - 1}"
    operands = [constant(item) for item in items]
    lines = unroll("t0", operands, items, constant(shape), constant(np.dtype(float)), constant)
    exec(compile("\n".join(["def run():"] + lines + ["    return t0"]), "<test>", "exec"), constants)
    return constants["run"]()


@pytest.mark.parametrize("seed", range(40))
def test_unrolled_sums_of_slices_are_the_functions_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    shape = (6,)
    slices = [(slice(0, 2),), (slice(2, 5),), (slice(1, 4),), (Ellipsis, slice(0, 2)), (4,)]
    items = []
    for _ in range(rng.integers(2, 7)):
        if rng.uniform() < 0.3:
            items += [None, rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8)]
        else:
            index = slices[rng.integers(len(slices))]
            value = np.zeros(shape)[index]
            items += [index, rng.standard_normal(np.shape(value)) * 10.0 ** rng.integers(-8, 8)]
    for unroll, function in ((lowering.accumulate_lines, _accumulate),
                             (lowering.accumulate_sliced_lines, _accumulate_sliced)):
        expected = function(shape, np.dtype(float), *items)
        assert _unrolled(unroll, shape, items).tobytes() == expected.tobytes()


def test_without_numba_native_programs_are_the_numpy_replay(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    f = ad.function(stacked, native=True)
    x = np.array([-1.2, 1.0])
    np.testing.assert_array_equal(f.grad()(x), ad.grad(stacked)(x))
    assert f.native_reason == "numba is not installed (the compiled extra)"
    np.testing.assert_array_equal(f.hessian_operator(x).to_dense(), ad.hessian(stacked)(x))


def test_a_program_traced_again_compiles_once_and_keeps_its_own_constants():
    def fit(data):
        return lambda p: np.sum((p[0] * np.exp(-p[1] * data[0]) - data[1]) ** 2)
    first, second = np.array([[0.0, 1.0, 2.0], [1.0, 0.5, 0.2]]), np.array([[0.5, 1.5, 3.0], [2.0, 1.0, 0.1]])
    p = np.array([1.5, 0.7])
    programs = []
    for data in (first, second):
        recording = trace(fit(data), p)
        programs.append(Program(recording.records, recording.inputs, recording.outputs, single=True))
    assert programs[0].source == programs[1].source
    assert programs[0].run.__code__ is programs[1].run.__code__          # one compilation
    for program, data in zip(programs, (first, second)):                  # each with its own data
        assert program.run(p) == fit(data)(p)


def test_unravel_of_a_single_array_reshapes_an_ndarray_in_place_and_keeps_tensors_differentiable():
    """An optimizer's flat iterate goes back to x0's shape by ndarray.reshape, with no dispatch (a
    fixed cost of every call of the user's function); a Tensor still goes through autodiff's."""
    flat, unravel = ad.ravel(np.arange(6.0).reshape(2, 3))
    vector = np.linspace(0.0, 1.0, 6)
    assert python_calls(lambda: unravel(vector)) == ["unravel"]
    shaped = unravel(vector)
    assert shaped.shape == (2, 3) and np.shares_memory(shaped, vector)
    np.testing.assert_array_equal(shaped, vector.reshape(2, 3))
    gradient = ad.grad(lambda v: np.sum(unravel(v)[1] ** 2))(vector)
    np.testing.assert_array_equal(gradient, np.r_[0.0, 0.0, 0.0, 2 * vector[3:]])


@pytest.mark.parametrize("x0", [np.arange(6.0).reshape(2, 3), np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                                np.arange(3), np.array(2.5), np.arange(4, dtype=np.float32), np.array([1 + 2j, 3j])])
def test_ravel_of_one_array_is_its_raveled_copy_without_the_tree_walk(x0):
    """scipy's x0, one array: ravel gives its raveled copy (float, or complex) as the tree walk
    would, without walking (a fixed cost of every minimize call)."""
    flat, unravel = ad.ravel(x0)
    walked, unravel_walked = ad.ravel([x0])           # the same leaf, through the walk
    assert python_calls(lambda: ad.ravel(x0)) == ["ravel", "_unravel_array"]
    assert flat.dtype == walked.dtype == np.result_type(float, x0.dtype) and flat.flags.c_contiguous
    np.testing.assert_array_equal(flat, walked)
    assert not np.shares_memory(flat, x0)
    np.testing.assert_array_equal(unravel(flat), x0)
    assert unravel(flat).shape == unravel_walked(walked)[0].shape == x0.shape


def test_a_concatenation_of_concatenations_replays_as_one_with_the_same_values():
    """np.stack in a function whose result is appended to (an ODE rate and its tangents): one
    concatenation of all the pieces, not one of the stack's and another around it; an inner one read
    twice, or along another axis, stays."""
    def appended(x):
        return np.concatenate([np.stack([x[0] * x[1], -x[1]]), np.sin(x)])

    def kept(x):
        inner = np.stack([x, 2.0 * x], axis=1)
        return np.concatenate([inner, inner], axis=0), np.concatenate([np.stack([x, x]), inner.T], axis=0)
    x = np.array([0.5, -1.5, 2.0])
    recording = trace(appended, x)
    program = Program(recording.records, recording.inputs, recording.outputs, single=True)
    assert program.source.count("axis=0)") == 1
    np.testing.assert_array_equal(program.run(x), appended(x))
    np.testing.assert_array_equal(ad.function(appended).jacobian()(x), ad.jacobian(appended)(x))
    recording = trace(kept, x)
    program = Program(recording.records, recording.inputs, recording.outputs)
    for replayed, eager in zip(program.run(x), kept(x)):
        np.testing.assert_array_equal(replayed, eager)


def test_a_sum_of_slice_cotangents_that_tile_an_axis_replays_as_their_concatenation():
    """A batched Jacobian-vector product of np.stack's scalar pieces (an ODE's forward sensitivities)
    sums one scatter into zeros per piece: the pieces tile the columns, and the program
    concatenates them, with no zeros; overlapping slices (x[:2] and x[1:]) keep their sum. The
    values are the eager ones."""
    def tangents(x, directions):
        _, push = ad.linearize(lambda x: np.stack([x[0] * x[1], -x[1], np.sin(x[2])]), x)
        return push(directions)

    def overlapping(x, cotangents):
        _, pullback = ad.vjp(lambda x: x[:2] * x[1:], x)
        return pullback(cotangents)[0]
    x, directions = np.array([0.5, -1.5, 2.0]), np.random.default_rng(0).standard_normal((4, 3))
    for f, tiled in ((tangents, True), (overlapping, False)):
        recording = trace(f, x, directions[:, :2] if f is overlapping else directions)
        program = Program(recording.records, recording.inputs, recording.outputs, single=True)
        assert (np.zeros not in program.numpy_run.__globals__.values()) == tiled
        arguments = (x, directions[:, :2] if f is overlapping else directions)
        np.testing.assert_array_equal(program.run(*arguments), f(*arguments))


@pytest.mark.parametrize("f, x", [(stacked, [-1.2, 1.0]), (rosenbrock, [-1.2, 1.0, 0.5, 2.0]),
                                  (box_3d, [0.0, 10.0, 20.0])])
def test_a_call_of_arrays_alone_goes_straight_to_its_program(f, x):
    """``hvp(f)(x, v)`` of an ``autodiff.function``: one traced program of (x, v), called as the
    gradient is (no signature walk), equal to the eager sweep bit for bit; other arguments (a
    keyword, another dtype, Tensors) take the signature's path and come back."""
    traced, x = ad.function(f), np.array(x)
    hvp = ad.hvp(traced)
    rng = np.random.default_rng(5)
    for point in (x, x + 0.5, x * rng.uniform(0.5, 1.5, x.size)):
        v = rng.standard_normal(x.size)
        expected = ad.hvp(f)(point, v)
        np.testing.assert_array_equal(hvp(point, v), expected)
        assert python_calls(lambda: hvp(point, v)) == ["__call__", "program"]  # noqa: B023
        np.testing.assert_array_equal(hvp(point, v), expected)
    v = np.ones(x.size)
    np.testing.assert_array_equal(hvp(x, v=v), ad.hvp(f)(x, v))                   # a keyword: the signature's path
    x32, v32 = x.astype(np.float32), v.astype(np.float32)                        # another dtype: traced
    np.testing.assert_allclose(hvp(x32, v32), ad.hvp(f)(x32, v32), rtol=100 * np.finfo(np.float32).eps)
    assert isinstance(hvp(ad.constant(x), v), ad.Tensor)
    np.testing.assert_array_equal(hvp(x, v), ad.hvp(f)(x, v))
    assert traced.traces == 4


def test_a_failed_guard_on_the_direct_path_of_two_arrays_takes_the_other_branch():
    hvp = ad.hvp(ad.function(lambda x: np.sum(x ** 4) if x[0] > 0 else np.sum(x[1] * x ** 3)))
    v = np.array([0.5, -1.0])
    for x in (np.array([1.0, 2.0]), np.array([-1.0, 2.0]), np.array([1.0, 3.0]), np.array([-2.0, 3.0])):
        expected = 12.0 * x ** 2 * v if x[0] > 0 else ad.hessian(lambda z: np.sum(z[1] * z ** 3))(x) @ v
        np.testing.assert_allclose(hvp(x, v), expected, rtol=1e-14)
    assert hvp.traces == 2
