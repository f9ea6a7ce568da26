"""Scalar programs (``autodiff.jit.scalar``): a replay whose values are all small runs on Python
floats, with the NumPy program's results bit for bit (sums in NumPy's pairwise order, ``x ** 2``
as NumPy's fast path, transcendental functions and products as NumPy calls), and the NumPy program
runs instead where Python's arithmetic raises or an op has no spelling."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import autodiff as ad
import autodiff.jit.program as program_module
from autodiff.jit import Program, scalar, split, trace
from hessopt import problems

T20 = np.linspace(0.0, 4.0, 20)
Y20 = 2.5 * np.exp(-1.3 * T20) + 0.4 + 0.01 * np.random.default_rng(2).standard_normal(20)
T40 = np.linspace(-3.0, 3.0, 40)
Y40 = 1.5 * np.exp(-((T40 - 0.3) / 0.8) ** 2) + 0.2 * T40


def exp_decay(p):
    r = p[0] * np.exp(-p[1] * T20) + p[2] - Y20
    return r @ r


def gauss_peak(p):
    r = p[0] * np.exp(-((T40 - p[1]) / p[2]) ** 2) + p[3] * T40 - Y40
    return r @ r


def two_exponentials(p):
    r = p[0] * np.exp(-p[1] * T20) + p[2] * np.exp(-p[3] * T20) + p[4] - Y20
    return r @ r


FITS = [("exp_decay", exp_decay, [2.0, 1.0, 0.5]), ("gauss_peak", gauss_peak, [1.0, 0.0, 1.0, 0.1]),
        ("two_exponentials", two_exponentials, [2.0, 1.0, 0.5, 3.0, 0.3])]
CASES = [(p.name + f" {p.n}", p.fun, p.x0) for p in problems.MGH] + FITS


@pytest.fixture
def always_scalar(monkeypatch):
    """Every program that has a scalar spelling runs it from its construction (hot at once; whichever
    is faster here)."""
    monkeypatch.setattr(scalar, "_faster", lambda *_: True)
    monkeypatch.setattr(scalar, "HOT_CALLS", 0)


def program_of(f, *args) -> Program:
    recording = trace(f, *args)
    return Program(recording.records, recording.inputs, recording.outputs, single=True)


def same_bits(a, b) -> bool:
    return type(a) is type(b) and np.shape(a) == np.shape(b) and np.asarray(a).tobytes() == np.asarray(b).tobytes()


def wide(rng, shape) -> np.ndarray:
    """Values of many magnitudes and both signs, and signed zeros: any other order of additions
    rounds differently somewhere."""
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 9, shape)
    values[rng.random(shape) < 0.1] = -0.0
    return values


def test_a_sum_adds_in_numpys_pairwise_order_at_every_size(always_scalar):
    rng = np.random.default_rng(0)
    for n in range(1, scalar.MAX_SIZE + 1):
        program = program_of(lambda x: np.sum(x), np.ones(n))
        assert program.scalar_source is not None
        for x in [wide(rng, n) for _ in range(20)] + [np.full(n, -0.0)]:
            assert same_bits(program.run(x), np.sum(x)), n


def test_a_sum_over_axes_adds_in_numpys_order(always_scalar):
    """Along the contiguous axes pairwise, along the leading ones in order (from 0.0), whatever
    axes of length one lie between."""
    rng = np.random.default_rng(1)
    made = 0
    for shape in [(3, 5), (1, 9), (9, 1), (2, 3, 4), (4, 1, 3), (2, 9, 1), (1, 1, 5)]:
        for r in range(1, len(shape) + 1):
            for axes in itertools.combinations(range(len(shape)), r):
                program = program_of(lambda x, axes=axes: np.sum(x, axis=axes, keepdims=True), np.ones(shape))
                made += program.scalar_source is not None
                for x in [wide(rng, shape) for _ in range(10)]:
                    assert same_bits(program.run(x), np.sum(x, axis=axes, keepdims=True)), (shape, axes)
    assert made >= 30   # the interleaved axes of (2, 3, 4) (sum over 0 and 2) are NumPy's


@pytest.mark.parametrize("f", [lambda x: x ** 2, lambda x: x[0] ** 2 + x[1] ** 3 - x[2] ** -2, lambda x: x ** 0.5,
                               lambda x: x ** 3, lambda x: x ** -1, lambda x: 2.0 ** x, lambda x: x[0] ** x])
def test_powers_are_numpys_bit_for_bit(always_scalar, f):
    """An array's square is NumPy's fast path (x * x); a NumPy float's integer power is the C
    library's pow, as Python's (which raises where it overflows: that call is NumPy's); other
    powers are NumPy's own call."""
    rng = np.random.default_rng(2)
    program = program_of(f, np.ones(3))
    assert program.scalar_source is not None
    with np.errstate(over="ignore", invalid="ignore"):
        for x in np.abs(rng.standard_normal((20000, 3))) * 10.0 ** rng.integers(-170, 150, (20000, 3)):
            assert same_bits(program.run(x), f(x))


def test_transcendental_functions_and_products_are_numpys_own_calls(always_scalar):
    """exp, sin, ... differ in the last bit between NumPy's SIMD loops and the C library: they
    are NumPy's calls on the elements gathered (so is a product, BLAS's)."""
    def f(x):
        return np.exp(x) @ np.sin(x) + np.log(x[0]) * np.tanh(x[1]) + np.arctan2(x, 2.0) @ x
    program = program_of(f, np.ones(5))
    assert program.scalar_source is not None and "math." not in program.scalar_source
    rng = np.random.default_rng(3)
    for x in [rng.uniform(0.1, 30.0, 5) for _ in range(300)]:
        assert same_bits(program.run(x), f(x))


def test_a_division_by_zero_runs_the_numpy_program(always_scalar):
    """Python raises where NumPy gives inf or nan (with its warning): that call is the NumPy
    program's."""
    program = program_of(lambda x: x[0] / x[1] + x ** 2, np.ones(2))
    assert program.scalar_source is not None
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        result = program.run(np.array([1.0, 0.0]))
    assert same_bits(result, np.array([np.inf, np.inf]))
    assert same_bits(program.run(np.array([1.0, 4.0])), np.array([1.25, 16.25]))


def test_programs_without_a_scalar_spelling_stay_numpys(always_scalar):
    """An op with no spelling here (a cumulative sum), a guard (a branch), a value above MAX_SIZE:
    the whole program is the NumPy one."""
    cumulative = program_of(lambda x: np.cumsum(x) * 2.0, np.ones(3))
    large = program_of(lambda x: np.sum(x * x), np.ones(scalar.MAX_SIZE + 1))
    recording = trace(lambda x: x * 2.0 if x[0] > 0 else -x, np.ones(2))
    branch = Program(recording.records, recording.inputs, recording.outputs, recording.guards, single=True)
    for program in (cumulative, large, branch):
        assert program.scalar_source is None and program.run is program.numpy_run
    assert program_of(lambda x: np.sum(x * x), np.ones(3)).scalar_source is not None


@pytest.mark.parametrize("name, f, x0", CASES, ids=[case[0] for case in CASES])
def test_derivative_programs_of_the_mgh_problems_and_fits_are_the_numpy_ones_bit_for_bit(
        always_scalar, monkeypatch, name, f, x0):
    """The gradient, a Hessian operator's products (at a new point: the joined program; at a made
    point: the split's), the functional HVP and the Hessian, at points other than the trace's."""
    x0 = np.asarray(x0, dtype=float) + 0.1
    rng = np.random.default_rng(4)
    points = [x0, 1.5 * x0 - 0.3, x0 + 0.5 * rng.standard_normal(x0.size)]
    v = rng.standard_normal(x0.size)

    def calls():
        traced = ad.function(f)
        grad, hvp, hessian = traced.grad(), ad.hvp(traced), ad.hessian(traced)
        results = []
        for x in points:
            operator = ad.hessian_operator(traced, x)
            results += [grad(x), ad.hessian_operator(traced, x).matvec(v), operator.matvec(v), operator.matvec(2 * v),
                        hvp(x, v), hessian(x)]
        return results
    with np.errstate(all="ignore"):
        fast = calls()
        monkeypatch.setattr(scalar, "MAX_SIZE", 0)
        plain = calls()
    assert all(same_bits(a, b) for a, b in zip(fast, plain))


def test_a_split_saves_lists_for_a_scalar_second_part_which_falls_back_on_arrays(always_scalar):
    """``before`` saves its values for ``after`` as lists when ``after`` takes them (no arrays
    built); a division by zero in ``after`` runs the NumPy ``after`` on those values as arrays."""
    recording = trace(lambda x, v: (np.sum(x), v / (x - 1.0)), np.zeros(3), np.ones(3))
    x, v = recording.inputs
    before, after, n_saved, _ = split(recording.records, [x], [v], recording.outputs)
    assert after.takes_lists and n_saved == 1
    for point, vector in [(np.array([0.5, 2.0, 3.0]), np.array([1.0, -2.0, 0.5])),
                          (np.array([0.5, 1.0, 3.0]), np.array([1.0, -2.0, 0.5]))]:
        value, saved = before.run(point)
        assert type(saved) is list and same_bits(value, np.sum(point))
        with np.errstate(divide="ignore"):
            assert same_bits(after.run(saved, vector), vector / (point - 1.0))


def test_a_read_at_repeated_indices_adds_its_cotangents_as_np_add_at(always_scalar):
    """The gradient of ``x[[0, 2, 2, 1, 2]]`` adds three cotangents into position 2, from 0.0 and
    in the index's order, as ``np.add.at``."""
    index, weights = np.array([0, 2, 2, 1, 2]), np.array([1e-8, 3.0, -7e5, 0.25, 1e8])

    def f(x):
        return np.sum(np.sin(x[index]) * weights)
    program = program_of(ad.grad(f), np.ones(3))
    assert program.scalar_source is not None
    rng = np.random.default_rng(5)
    for x in [wide(rng, 3) for _ in range(50)]:
        assert same_bits(program.run(x), program.numpy_run(x)) and same_bits(program.run(x), ad.grad(f)(x))


@pytest.fixture
def builds(monkeypatch) -> list:
    """The scalar programs made (one entry per ``scalar_program`` call), each the faster."""
    made: list = []

    def counted(*args):
        made.append(args)
        return scalar.scalar_program(*args)
    monkeypatch.setattr(program_module, "scalar_program", counted)
    monkeypatch.setattr(scalar, "_faster", lambda *_: True)
    return made


def test_a_program_makes_its_scalar_program_once_hot_and_then_runs_it_with_the_same_bits(builds):
    """A new program runs its NumPy program and writes no scalar program (a fresh trace does not pay
    for it); its ``HOT_CALLS``-th call makes it, once, and the calls after that run it, with the
    NumPy program's results bit for bit."""
    program = program_of(ad.grad(exp_decay), np.array([2.0, 1.0, 0.5]))
    assert builds == [] and program.scalar_source is None and program.run is not program.numpy_run
    rng = np.random.default_rng(6)
    points = [np.array([2.0, 1.0, 0.5]) + rng.standard_normal(3) for _ in range(scalar.HOT_CALLS + 20)]
    results = []
    for k, x in enumerate(points):
        assert len(builds) == (k >= scalar.HOT_CALLS) and (program.scalar_source is None) == (k < scalar.HOT_CALLS)
        results.append(program.run(x))
    assert len(builds) == 1 and program.run is not program.numpy_run
    assert all(same_bits(result, program.numpy_run(x)) for result, x in zip(results, points))
    assert all(same_bits(result, ad.grad(exp_decay)(x)) for result, x in zip(results, points))


def test_a_scalar_program_refused_or_slower_is_not_tried_again(builds, monkeypatch):
    """Once hot, a program whose scalar program is slower (or refused) runs its NumPy program itself
    (no counting left) and never makes it again; a program that cannot have one (a value above
    MAX_SIZE) neither counts nor keeps its recording."""
    monkeypatch.setattr(scalar, "_faster", lambda *_: False)
    x = np.array([2.0, 1.0, 0.5])
    slower = program_of(ad.grad(exp_decay), x)
    for _ in range(3 * scalar.HOT_CALLS):
        slower.run(x)
    assert len(builds) == 1 and slower.scalar_source is None and slower.run is slower.numpy_run
    large = program_of(lambda x: np.sum(x * x), np.ones(scalar.MAX_SIZE + 1))
    assert large.tiering is None and large.run is large.numpy_run and not hasattr(large, "_scalar")


def test_a_late_made_before_its_split_switches_gives_the_same_products_after_it(builds, monkeypatch):
    """A split's ``after``, ``before`` and joined program count their calls together and switch
    together (``after`` first, ``before`` then saving lists for it). A ``Late`` made before the
    switch runs the NumPy ``after`` on the arrays the NumPy ``before`` saved, then the scalar
    ``after`` on them as lists; a pending operator keeps the NumPy ``after`` of its joined program's
    arrays; a ``Late`` made after the switch takes the scalar ``after`` and lists. Every product is
    the NumPy replay's bit for bit."""
    traced, numpy_replay, x = ad.function(exp_decay), ad.function(exp_decay), np.array([2.0, 1.0, 0.5])
    rng = np.random.default_rng(7)
    v = rng.standard_normal(3)
    monkeypatch.setattr(scalar, "HOT_CALLS", 10 ** 9)
    ad.hessian_operator(numpy_replay, x + 1.0).matvec(v)   # its split and joined program, never hot: NumPy's
    monkeypatch.setattr(scalar, "HOT_CALLS", 12)

    def same_products(operator_, point, vectors):
        expected = ad.hessian_operator(numpy_replay, point)
        return all(same_bits(operator_.matvec(w), expected.matvec(w)) for w in vectors)
    early = ad.hessian_operator(traced, x)                # traced: its Late made by the NumPy before
    assert early.gradient.shape == x.shape
    numpy_after = early.product._product.func
    assert all(type(saved) is not list for saved in early.product._product.args)
    assert same_products(early, x, [v])
    pending = ad.hessian_operator(traced, x + 0.25)
    assert same_products(pending, x + 0.25, [v])          # the NumPy joined program's saved arrays
    staged = early.product._splits[next(iter(early.product._splits))][0]
    assert builds == [] and staged.after.scalar_source is None and staged.before.scalar_source is None
    for k in range(8):   # products at new points (joined programs): 11 calls with before's, early's and pending's
        assert same_products(ad.hessian_operator(traced, x + 0.01 * k), x + 0.01 * k, [v])
    assert builds == []
    switching = ad.hessian_operator(traced, x + 0.5)
    assert switching.gradient.shape == x.shape            # its before's call, the 12th, switches the pair
    joined = staged.joined_program()
    assert [program.scalar_source is not None for program in (staged.after, staged.before, joined)] == [True] * 3
    assert staged.after.takes_lists and len(builds) == 3
    assert builds[0][-1] > 0 and len(builds[1][-2]) > 0 and len(builds[2][-2]) > 0   # after's lists; before's, joined's
    assert early.product._product.func is staged.after.run is not numpy_after   # the scalar after, on lists
    assert all(type(saved) in (list, float) for saved in early.product._product.args)
    assert pending.product._after is numpy_after              # the NumPy after, for the NumPy joined program's arrays
    assert switching.product._product.func is staged.after.run   # made by the NumPy before, then switched
    vectors = rng.standard_normal((4, 3))
    assert same_products(early, x, vectors) and same_products(pending, x + 0.25, vectors)
    assert same_products(switching, x + 0.5, vectors)
    late = ad.hessian_operator(traced, x - 0.5)
    assert late.gradient.shape == x.shape             # started: its Late made by the scalar before
    assert late.product._product.func is staged.after.run and type(late.product._product.args[0]) is list
    assert same_products(late, x - 0.5, vectors) and same_products(ad.hessian_operator(traced, x), x, vectors)
    assert len(builds) == 3


def test_the_lates_of_past_points_do_not_pile_up_in_a_split_that_is_never_hot():
    """A branch keeps ``before`` NumPy's (no calls counted), so operators whose products are never
    asked never make the split hot: the ``Late`` each point made (waiting for the switch) goes with it."""
    traced = ad.function(lambda x: np.sum(x ** 4) if x[0] > 0 else np.sum(x ** 3))
    x = np.array([1.0, 2.0])
    for k in range(1000):
        point = x + 1e-3 * k
        assert same_bits(ad.hessian_operator(traced, point).gradient, 4.0 * point ** 3)
    staged = next(iter(traced._fast_partial.values()))[1]
    assert staged.before.tiering is None and staged.after.tiering.left == scalar.HOT_CALLS
    assert len(staged.after.tiering.members) < 64
