"""Bounds as scipy users write them (hessopt._bounds): Bounds, (lo, hi) pairs, (lb, ub), over
array and pytree x0, into one flat box; the errors that name what is wrong; clipping x0."""
from collections import namedtuple

import numpy as np
import pytest
from scipy.optimize import Bounds

import autodiff as ad
from hessopt._bounds import box_from_bounds, feasible_set

INF = np.inf


def assert_box(box, lower, upper):
    np.testing.assert_array_equal(box.lower, lower)
    np.testing.assert_array_equal(box.upper, upper)


def test_no_bounds_is_no_box():
    assert box_from_bounds(None, np.zeros(3)) is None
    assert box_from_bounds(None, np.zeros(3), pairs=False) is None


def test_pairs_with_none_and_infinities_as_scipy_minimize_takes_them():
    box = box_from_bounds([(0, None), (None, 2.5), (-INF, INF), (1, 1)], [0.0, 0.0, 0.0, 1.0])
    assert_box(box, [0, -INF, -INF, 1], [INF, 2.5, INF, 1])
    # a numpy array of shape (n, 2) works too, and a 2-D x0 is bounded in its raveled order
    box = box_from_bounds(np.array([[0, 1], [2, 3], [4, 5], [6, 7]]), np.zeros((2, 2)))
    assert_box(box, [0, 2, 4, 6], [1, 3, 5, 7])


def test_scipy_bounds_broadcast_over_x0s_shape():
    assert_box(box_from_bounds(Bounds(0, 1), np.zeros(3)), [0, 0, 0], [1, 1, 1])
    assert_box(box_from_bounds(Bounds([0, 1, 2], INF), np.zeros(3)), [0, 1, 2], [INF] * 3)
    x0 = np.zeros((2, 3))
    box = box_from_bounds(Bounds(np.array([[0], [1]]), 5), x0)    # lb broadcast along rows
    assert_box(box, [0, 0, 0, 1, 1, 1], [5] * 6)
    assert_box(box_from_bounds(Bounds(np.arange(6.0), 9), x0), np.arange(6.0), [9] * 6)
    assert_box(box_from_bounds(Bounds(0, [[1, 2, 3], [4, 5, 6]]), x0, pairs=False), [0] * 6,
               [1, 2, 3, 4, 5, 6])


def test_least_squares_lb_ub_pairs():
    assert_box(box_from_bounds((0, INF), np.ones(3), pairs=False), [0, 0, 0], [INF] * 3)
    assert_box(box_from_bounds(([0, -1], [1, 1]), np.ones(2), pairs=False), [0, -1], [1, 1])
    assert_box(box_from_bounds((None, 2.0), np.ones(2), pairs=False), [-INF, -INF], [2, 2])
    # with two variables, a pair (lb, ub) means lb and ub, never two (lo, hi) pairs
    assert_box(box_from_bounds(([0, 1], [2, 3]), np.ones(2), pairs=False), [0, 1], [2, 3])
    assert_box(box_from_bounds([(0, 1), (2, 3)], np.ones(2)), [0, 2], [1, 3])


def test_pytree_x0_takes_flat_pairs_or_a_tree_of_pairs():
    x0 = {"w": np.ones((2, 2)), "b": np.zeros(1)}
    flat, _ = ad.ravel(x0)
    assert flat.size == 5
    flat_pairs = [(0, 1)] * 4 + [(None, 3)]
    tree_pairs = {"b": (None, 3), "w": (0, 1)}             # dict order need not match
    expected = ([0, 0, 0, 0, -INF], [1, 1, 1, 1, 3])
    assert_box(box_from_bounds(flat_pairs, x0), *expected)
    assert_box(box_from_bounds(tree_pairs, x0), *expected)
    # per-array sides may be arrays of the array's shape
    per_entry = {"w": (np.array([[0, 1], [2, 3]]), None), "b": (-1, 1)}
    assert_box(box_from_bounds(per_entry, x0), [0, 1, 2, 3, -1], [INF] * 4 + [1])
    # Bounds over the flat vector, and least_squares' (lb, ub) as trees
    assert_box(box_from_bounds(Bounds(0, np.arange(5.0)), x0), [0] * 5, np.arange(5.0))
    assert_box(box_from_bounds(({"w": 0.0, "b": -2.0}, None), x0, pairs=False),
               [0, 0, 0, 0, -2], [INF] * 5)
    Params = namedtuple("Params", "a c")
    params = Params(np.zeros(2), ad.Variable(np.zeros(3)))
    assert_box(box_from_bounds(Params((0, 1), (None, 0)), params), [0, 0, -INF, -INF, -INF],
               [1, 1, 0, 0, 0])
    # a list of Variables (a model's parameters) with one pair each
    variables = [ad.Variable(np.zeros(2)), ad.Variable(1.0)]
    assert_box(box_from_bounds([(0, 2), (-1, 1)], variables), [0, 0, -1], [2, 2, 1])


@pytest.mark.parametrize("bounds, x0, pairs, error, message", [
    ([(0, 1)] * 3, np.zeros(4), True, ValueError, "3 \\(lo, hi\\) pairs, but x0 has 4 entries"),
    ([(0, 1, 2)] * 2, np.zeros(2), True, ValueError, "bounds\\[0\\] must be a pair"),
    ([(2, 1), (0, 1)], np.zeros(2), True, ValueError, "lower bound exceeds the upper bound at index 0"),
    ([(0, 1), (0, np.nan)], np.zeros(2), True, ValueError, "NaN at index 1"),
    ([(INF, INF)], np.zeros(1), True, ValueError, "lower bound is \\+inf"),
    ([(0, "one")], np.zeros(1), True, TypeError, "must be numbers or None"),
    (Bounds([0, 1, 2], 3), np.zeros(2), True, ValueError, "lb has shape \\(3,\\)"),
    ((0, 1, 2), np.zeros(3), False, ValueError, "a pair \\(lb, ub\\)"),
    (([0, 1, 2], 5), np.zeros((2, 2)), False, ValueError, "lb has shape \\(3,\\)"),
    ({"w": (0, 1)}, {"w": np.ones(2), "b": 0.0}, True, ValueError, "structure"),
    ({"w": (np.zeros(3), 1), "b": (0, 1)}, {"w": np.ones(2), "b": 0.0}, True, ValueError,
     "does not fit the array of shape \\(2,\\)"),
    (([0] * 4, None), {"w": np.ones(2), "b": 0.0}, False, ValueError, "shape \\(4,\\)"),
    ("0,1", np.zeros(2), True, ValueError, "sequence of \\(lo, hi\\) pairs"),
])
def test_bad_bounds_raise_errors_that_name_the_problem(bounds, x0, pairs, error, message):
    with pytest.raises(error, match=message):
        box_from_bounds(bounds, x0, pairs=pairs)


TWO_READINGS = ([(0, 1), (2, 3)], ((0, 1), (2, 3)), np.array([[0, 1], [2, 3]]),
                (np.array([0, 1]), np.array([2, 3])))


@pytest.mark.parametrize("pair", TWO_READINGS)
def test_two_pairs_for_an_array_of_two_entries_are_refused_with_both_readings(pair):
    """{"a": [(0, 1), (2, 3)]} over a 2-entry array is (lo, hi) = ((0, 1), (2, 3)) or one (lo, hi)
    pair per entry, minimize's form: which was meant cannot be known, so both are shown."""
    x0 = {"a": np.zeros(2), "b": 0.0}
    with pytest.raises(ValueError) as refusal:
        box_from_bounds({"a": pair, "b": (0, 1)}, x0)
    message = str(refusal.value)
    assert "array 0" in message and "can be read two ways" in message and "Bounds(lo, hi)" in message
    assert "lo = [0, 1] and hi = [2, 3]" in message      # (lo, hi) for the array
    assert "lo = [0, 2] and hi = [1, 3]" in message      # a pair per entry
    # Bounds says which reading is meant
    assert_box(box_from_bounds({"a": Bounds([0, 1], [2, 3]), "b": (0, 1)}, x0), [0, 1, 0], [2, 3, 1])
    assert_box(box_from_bounds({"a": Bounds([0, 2], [1, 3]), "b": (0, 1)}, x0), [0, 2, 0], [1, 3, 1])


def test_two_pairs_that_read_alike_either_way_are_that_box():
    x0 = {"a": np.zeros(2), "b": 0.0}
    assert_box(box_from_bounds({"a": [(0, 5), (5, 9)], "b": (0, 1)}, x0), [0, 5, 0], [5, 9, 1])
    assert_box(box_from_bounds({"a": [(0, None), (None, 3)], "b": (0, 1)}, x0), [0, -INF, 0], [INF, 3, 1])
    # a None inside a side is no (lo, hi) reading, but a pair per entry: still refused, both shown
    with pytest.raises(ValueError, match=r"lo = \[0, None\] and hi = \[2, 3\].*lo = \[0, 2\] and "
                                         r"hi = \[None, 3\]"):
        box_from_bounds({"a": [(0, None), (2, 3)], "b": (0, 1)}, x0)


def test_least_squares_refuses_minimizes_pairs_where_scipy_refuses_them():
    """least_squares reads a 2 x 2 over two variables as (lb, ub), as scipy does; where scipy
    refuses that reading (lb >= ub somewhere), the pairs were minimize's: refused with both
    readings and scipy's words, instead of fixing the variables."""
    import scipy.optimize
    scipy_words = "Each lower bound must be strictly less than each upper bound"
    for bounds, lb_ub, per_entry in [([(0, 1), (0, 1)], "lb = [0, 1] and ub = [0, 1]", "lb = [0, 0] and ub = [1, 1]"),
                                     ([(0, 1), (-1, 0)], "lb = [0, 1] and ub = [-1, 0]",
                                      "lb = [0, -1] and ub = [1, 0]")]:
        with pytest.raises(ValueError, match=scipy_words):
            scipy.optimize.least_squares(lambda x: x, np.full(2, 0.5), bounds=bounds)
        with pytest.raises(ValueError) as refusal:
            box_from_bounds(bounds, np.zeros(2), pairs=False)
        message = str(refusal.value)
        assert scipy_words in message and lb_ub in message and per_entry in message
        assert "Bounds(lb, ub)" in message
    with pytest.raises(ValueError, match=r"lb = \[0, None\] and ub = \[2, 3\], with a None inside lb or ub, "
                                         r"which scipy.optimize.least_squares reads as NaN; or as minimize's"):
        box_from_bounds([(0, None), (2, 3)], np.zeros(2), pairs=False)
    # where scipy takes the (lb, ub) reading, so does hessopt (and where both readings agree)
    assert_box(box_from_bounds(([0, 0], [INF, 0.4]), np.zeros(2), pairs=False), [0, 0], [INF, 0.4])
    assert_box(box_from_bounds([(0, 0), (0, 1)], np.zeros(2), pairs=False), [0, 0], [0, 1])


def test_fixed_variables_are_allowed():
    box = box_from_bounds([(1.5, 1.5), (0, 1)], np.zeros(2))
    assert box.lower[0] == box.upper[0] == 1.5
    np.testing.assert_array_equal(box.active_mask(np.array([1.5, 0.5])), [-1, 0])


def test_x0_outside_the_box_is_clipped_with_a_note():
    box = box_from_bounds([(0, 1), (0, None), (-1, 1)], np.zeros(3))
    inside, note = box.start(np.array([0.5, 2.0, 0.0]))
    np.testing.assert_array_equal(inside, [0.5, 2.0, 0.0])
    assert note is None
    clipped, note = box.start(np.array([-3.0, 2.0, 4.0]))
    np.testing.assert_array_equal(clipped, [0.0, 2.0, 1.0])
    assert "2 of 3 entries" in note and "flat index 0" in note and "clipped" in note


def test_bounds_without_a_finite_entry_are_no_set_to_run_in():
    assert feasible_set(None, np.zeros(2)) is feasible_set([(None, None)] * 2, np.zeros(2))
    assert feasible_set((-np.inf, np.inf), np.zeros(2), pairs=False).result_fields(np.zeros(2)) == {}
    assert feasible_set([(None, 1.0), (None, None)], np.zeros(2)).history(np.ones(2)) == {"active": 1}
