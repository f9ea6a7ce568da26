"""autodiff.hessian_rows: f, gradient and dense Hessian at every row of an array, equal to each row's
replayed Hessian operator (bit for bit for the replay loop, within rounding for the native loop)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import autodiff as ad
from hessopt import problems

MGH = ["rosenbrock", "beale", "box_3d", "wood", "biggs_exp6"]


def looped(f, X, args=(), row_args=()):
    """Each row's value, gradient and dense Hessian from its own replayed Hessian operator."""
    traced = ad.function(f)
    operators = [ad.hessian_operator(traced, x, args=tuple(args) + tuple(r[i] for r in row_args))
                 for i, x in enumerate(X)]
    return (np.array([op.value for op in operators]), np.array([op.gradient for op in operators]),
            np.array([op.to_dense() for op in operators]))


def starts(name: str, m: int = 7) -> np.ndarray:
    x0 = np.asarray(problems.get(name).x0, dtype=float)
    return x0 * (1.0 + 0.2 * np.random.default_rng(4).standard_normal((m, x0.size)))


def decay_fit(p, t, y):
    """Least squares of a exp(-b t) + c against y (a row's data)."""
    r = p[0] * np.exp(-p[1] * t) + p[2] - y
    return r @ r


def scaled_quartic(p, weight):
    """A row's 0-d weight (a per-start scalar) times a quartic."""
    return weight * np.sum(p ** 4) + np.sum(p[1:] * p[:-1])


T = np.linspace(0.0, 3.0, 12)
Y = 2.0 * np.exp(-np.outer([0.5, 1.0, 1.5], T)) + np.array([[0.1], [0.2], [0.3]])  # 3 rows of data


@pytest.mark.parametrize("name", MGH)
def test_the_replay_loop_is_each_rows_hessian_operator_bit_for_bit(name):
    f, X = problems.get(name).fun, starts(name)
    values, gradients, hessians = ad.hessian_rows(f)(X)
    expected = looped(f, X)
    for got, want in zip((values, gradients, hessians), expected):
        assert got.shape == want.shape and got.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_shared_args_and_each_rows_own_args_are_passed_to_f():
    X = np.array([[2.0, 0.5, 0.1], [1.5, 1.2, 0.3], [2.2, 1.4, 0.2]])
    rows = ad.hessian_rows(decay_fit)
    with_rows = rows(X, T, row_args=(Y,))
    for got, want in zip(with_rows, looped(decay_fit, X, (T,), (Y,))):
        np.testing.assert_array_equal(got, want)
    shared = rows(X, T, Y[0])           # the same data for every row
    for got, want in zip(shared, looped(decay_fit, X, (T, Y[0]))):
        np.testing.assert_array_equal(got, want)
    weights = np.array([1.0, 2.0, 0.5])  # a per-row scalar: rows of a 1-D array are 0-d
    for got, want in zip(ad.hessian_rows(scaled_quartic)(X, row_args=(weights,)),
                         looped(scaled_quartic, X, (), (weights,))):
        np.testing.assert_array_equal(got, want)
    # the closed form at one row: H = 12 w diag(p^2) + the off-diagonal ones of the product sum
    _, _, hessians = ad.hessian_rows(scaled_quartic)(X, row_args=(weights,))
    np.testing.assert_allclose(hessians[1], 12 * 2.0 * np.diag(X[1] ** 2) + np.eye(3, k=1) + np.eye(3, k=-1),
                               rtol=1e-14)


def test_a_branch_in_f_is_taken_per_row():
    def kinked(x):
        return np.sum(x ** 3) if x[0] > 0 else np.sum(x ** 2)
    X = np.array([[1.0, 2.0], [-1.0, 2.0], [3.0, -1.0]])
    _, gradients, hessians = ad.hessian_rows(kinked)(X)
    np.testing.assert_array_equal(gradients, [[3.0, 12.0], [-2.0, 4.0], [27.0, 3.0]])
    np.testing.assert_array_equal(hessians[1], 2 * np.eye(2))
    np.testing.assert_array_equal(hessians[2], np.diag([18.0, -6.0]))


def test_an_empty_batch_has_empty_results():
    values, gradients, hessians = ad.hessian_rows(lambda x: np.sum(x ** 2))(np.zeros((0, 3)))
    assert values.shape == (0,) and gradients.shape == (0, 3) and hessians.shape == (0, 3, 3)


def test_bad_rows_are_refused_by_name():
    rows = ad.hessian_rows(decay_fit)
    X = np.ones((3, 3))
    with pytest.raises(ValueError, match="2-D array of floats"):
        rows(np.ones(3), T, Y[0])
    with pytest.raises(ValueError, match="2-D array of floats"):
        rows(np.ones((3, 3), dtype=int), T, Y[0])
    with pytest.raises(ValueError, match=r"row_args\[0\] has shape \(2, 12\); its leading axis must be X's rows \(3\)"):
        rows(X, T, row_args=(Y[:2],))
    with pytest.raises(TypeError, match=r"row_args\[0\] must be an array of floats"):
        rows(X, T, row_args=(np.ones((3, 12), dtype=int),))
    with pytest.raises(TypeError, match="row_args must be a tuple of arrays"):
        rows(X, T, row_args=Y)
    with pytest.raises(TypeError, match="needs a callable"):
        ad.hessian_rows(3.0)


def test_without_numba_native_rows_are_the_replay_and_say_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)     # import numba raises ImportError
    f, X = problems.get("beale").fun, starts("beale")
    rows = ad.hessian_rows(f, native=True)
    for got, want in zip(rows(X), looped(f, X)):
        np.testing.assert_array_equal(got, want)
    assert rows.native_reason == "numba is not installed (the compiled extra)"


# --- the native loop (numba installed) -----------------------------------------------------------

RTOL = 1e-12   # as in test_native: sums of a few hundred moderate terms reordered, LLVM's exp and log


def assert_within_rounding(native, plain):
    np.testing.assert_allclose(native, plain, rtol=RTOL, atol=RTOL * np.max(np.abs(plain), initial=1.0))


@pytest.mark.parametrize("name", ["rosenbrock", "box_3d"])
def test_the_native_loop_is_the_replay_loop_within_rounding(name):
    pytest.importorskip("numba")
    f, X = problems.get(name).fun, starts(name, 50)
    rows = ad.hessian_rows(f, native=True)
    got = rows(X)
    assert rows.native_reason is None
    for native, plain in zip(got, ad.hessian_rows(f)(X)):
        assert_within_rounding(native, plain)
    loop = next(iter(rows._loops.values())).compiled
    assert type(loop).__module__.startswith("numba")      # one compiled function over the rows


def test_the_native_loop_reads_each_rows_args_and_shared_scalars():
    pytest.importorskip("numba")
    X = np.array([[2.0, 0.5, 0.1], [1.5, 1.2, 0.3], [2.2, 1.4, 0.2]])
    rows = ad.hessian_rows(decay_fit, native=True)
    got = rows(X, T, row_args=(Y,))
    assert rows.native_reason is None
    for native, plain in zip(got, looped(decay_fit, X, (T,), (Y,))):
        assert_within_rounding(native, plain)
    weights = np.array([1.0, 2.0, 0.5])
    quartic = ad.hessian_rows(scaled_quartic, native=True)
    got = quartic(X, row_args=(weights,))
    assert quartic.native_reason is None
    for native, plain in zip(got, looped(scaled_quartic, X, (), (weights,))):
        assert_within_rounding(native, plain)


def test_a_program_numba_cannot_take_runs_the_replay_loop_and_says_why():
    pytest.importorskip("numba")
    def kinked(x):
        return np.sum(x ** 3) if x[0] > 0 else np.sum(x ** 2)
    X = np.array([[1.0, 2.0], [-1.0, 2.0]])
    rows = ad.hessian_rows(kinked, native=True)
    for got, want in zip(rows(X), ad.hessian_rows(kinked)(X)):
        np.testing.assert_array_equal(got, want)
    assert rows.native_reason == "the program has guards (branches)"
