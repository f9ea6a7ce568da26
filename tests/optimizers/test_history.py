"""The column-wise history: the History container itself, and what every method records in it
(iterates, values, gradient norms and cumulative counters that match the run)."""
import functools

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess, rosen_hess_prod

from optimizers import (
    History,
    least_squares_lm,
    minimize_arc,
    minimize_dogleg,
    minimize_hessian_free,
    minimize_newton,
    minimize_newton_cg,
    minimize_trust_exact,
    minimize_trust_krylov,
    minimize_trust_ncg,
)

# --- the container ------------------------------------------------------------------------------


def three_records(keep_iterates=True):
    history = History(keep_iterates)
    history.append({"nit": 0, "f": 4.0, "gnorm": 2.0}, {"nfev": 1, "njev": 1}, np.array([2.0, 0.0]))
    history.append({"nit": 1, "f": 1.0, "gnorm": 1.0, "cg": 3, "rho": 0.5}, {"nfev": 3, "njev": 2},
                   np.array([1.0, 0.0]))
    history.append({"nit": 2, "f": 0.25, "gnorm": 0.5, "cg": 2, "rho": np.nan},
                   {"nfev": 4, "njev": 3}, np.array([0.5, 0.0]))
    return history


def test_columns_are_arrays_in_order_of_appearance():
    history = three_records()
    assert history.columns == ("nit", "f", "gnorm", "cg", "rho", "nfev", "njev", "x")
    assert list(history.keys()) == list(history.columns) and len(history) == 3
    np.testing.assert_array_equal(history["f"], [4.0, 1.0, 0.25])
    assert history["nit"].dtype == np.int64 and history["nfev"].dtype == np.int64
    np.testing.assert_array_equal(history["nfev"], [1, 3, 4])
    np.testing.assert_array_equal(history["x"], [[2.0, 0.0], [1.0, 0.0], [0.5, 0.0]])
    assert history["x"].shape == (3, 2)
    # a record without a value reads NaN; a NaN value stays NaN
    np.testing.assert_array_equal(history["cg"], [np.nan, 3.0, 2.0])
    np.testing.assert_array_equal(history["rho"], [np.nan, 0.5, np.nan])
    assert dict(history.items()).keys() == set(history.columns)
    assert "f" in history and "lambda" not in history and history.get("lambda") is None


def test_integer_index_gives_a_record_of_scalar_fields():
    history = three_records()
    assert set(history[0]) == {"nit", "f", "gnorm", "cg", "rho"}   # no x, no counters
    assert history[-1]["f"] == 0.25 and history[1]["cg"] == 3.0 and history[1]["nit"] == 1
    assert isinstance(history[1]["nit"], int) and isinstance(history[1]["f"], float)
    assert np.isnan(history[0]["cg"])
    assert [row["f"] for row in history] == [4.0, 1.0, 0.25]
    assert min(row["f"] for row in history) == 0.25
    with pytest.raises(IndexError):
        history[3]
    with pytest.raises(IndexError):
        history[-4]


def test_a_slice_is_the_history_of_those_records():
    tail = three_records()[1:]
    assert isinstance(tail, History) and len(tail) == 2
    np.testing.assert_array_equal(tail["nit"], [1, 2])
    np.testing.assert_array_equal(tail["cg"], [3, 2])   # complete here: ints again
    np.testing.assert_array_equal(tail["x"], [[1.0, 0.0], [0.5, 0.0]])
    assert all("cg" in row for row in tail)


def test_without_iterates_there_is_no_x_column():
    history = three_records(keep_iterates=False)
    assert "x" not in history and "x" not in history.columns
    with pytest.raises(KeyError, match="no column 'x'"):
        history["x"]


def test_columns_are_read_only_and_iterates_are_copied():
    history = History()
    x = np.array([1.0, 2.0])
    history.append({"f": 1.0}, {"nfev": 1}, x)
    x[0] = 99.0
    assert history["x"][0, 0] == 1.0
    with pytest.raises(ValueError):
        history["f"][0] = 0.0


def test_an_iterate_appended_without_copy_is_kept_as_it_is():
    history = History()
    x = np.array([1.0, 2.0])
    history.append({"f": 1.0}, {"nfev": 1}, x, copy=False)
    x[0] = 99.0   # the caller promised not to do this: the record shows it
    assert history["x"][0, 0] == 99.0
    history.append({"f": 1.0}, {"nfev": 1}, [3, 4], copy=False)   # a list is still converted
    np.testing.assert_array_equal(history["x"][1], [3.0, 4.0])


def test_bad_index_is_a_type_error():
    with pytest.raises(TypeError, match="column name, an integer or a slice"):
        three_records()[1.5]


def test_repr_is_one_line():
    assert repr(three_records()) == ("History(3 records; columns: nit, f, gnorm, cg, rho, nfev, "
                                     "njev, x)")


# --- what the methods record --------------------------------------------------------------------

HESS = {"hess": rosen_hess}
HESSP = {"hessp": rosen_hess_prod}
METHODS = {
    "newton": (minimize_newton, HESS), "newton-cg": (minimize_newton_cg, HESSP),
    "hessian-free": (minimize_hessian_free, HESSP), "trust-ncg": (minimize_trust_ncg, HESSP),
    "trust-krylov": (minimize_trust_krylov, HESSP), "trust-exact": (minimize_trust_exact, HESS),
    "dogleg": (minimize_dogleg, HESS), "arc": (minimize_arc, HESSP),
}
FIELDS = {
    "newton": {"nit", "f", "gnorm", "step"},
    "newton-cg": {"nit", "f", "gnorm", "step", "cg", "negative_curvature"},
    "hessian-free": {"nit", "f", "gnorm", "step", "lambda", "rho", "cg"},
    "arc": {"nit", "f", "gnorm", "step", "sigma", "rho"},
    "lm": {"nit", "f", "gnorm", "step", "lambda"}, "gn": {"nit", "f", "gnorm", "step"},
}
X0 = np.array([-1.2, 1.0, -1.2, 1.0])


def run(name, **options):
    if name in ("lm", "gn"):
        return least_squares_lm(residuals, X0, residuals_jac, method=name, **options)
    method, second = METHODS[name]
    return method(rosen, X0, rosen_der, **second, **options)


def residuals(x):
    return np.concatenate([10.0 * (x[1::2] - x[::2] ** 2), 1.0 - x[::2]])


def residuals_jac(x):
    J = np.zeros((4, 4))
    J[0, :2], J[1, 2:] = [-20.0 * x[0], 10.0], [-20.0 * x[2], 10.0]
    J[2, 0], J[3, 2] = -1.0, -1.0
    return J


def value_and_gradient(name, x):
    if name in ("lm", "gn"):
        r = residuals(x)
        return 0.5 * r @ r, residuals_jac(x).T @ r
    return rosen(x), rosen_der(x)


ALL = [*METHODS, "lm", "gn"]


@pytest.mark.parametrize("name", ALL)
def test_records_match_the_iterates_and_the_result(name):
    result = run(name)
    history = result.history
    assert result.success and len(history) == result.nit + 1
    np.testing.assert_array_equal(history["nit"], np.arange(result.nit + 1))
    assert history["x"].shape == (result.nit + 1, 4)
    np.testing.assert_array_equal(history["x"][0], X0)
    np.testing.assert_array_equal(history["x"][-1], result.x)
    for k, x in enumerate(history["x"]):
        f, g = value_and_gradient(name, x)
        assert history["f"][k] == f
        assert history["gnorm"][k] == np.abs(g).max()
    assert history["f"][-1] == (result.cost if name in ("lm", "gn") else result.fun)


@pytest.mark.parametrize("name", ALL)
def test_counters_are_cumulative_and_end_at_the_results(name):
    result = run(name)
    history = result.history
    counters = ("nfev", "njev") if name in ("lm", "gn") else ("nfev", "njev", "nhev")
    assert set(counters) <= set(history.columns) and ("nhev" in history) == (len(counters) == 3)
    for counter in counters:
        assert np.all(np.diff(history[counter]) >= 0) and history[counter][-1] <= result[counter]
    assert history["nfev"][0] >= 1 and history["nfev"][-1] == result.nfev


def test_counters_count_the_calls_made_by_each_record(counted):
    result = minimize_newton_cg(counted("f", rosen), X0, counted("g", rosen_der),
                                hessp=counted("hv", rosen_hess_prod))
    assert result.history["nfev"][-1] == counted.calls["f"] == result.nfev
    assert result.history["njev"][-1] == counted.calls["g"] == result.njev
    # after the last record only the second-order check runs: Hessian-vector products
    assert result.history["nhev"][-1] < counted.calls["hv"] == result.nhev


@pytest.mark.parametrize("name", ALL)
def test_records_hold_the_scalar_fields_only(name):
    result = run(name)
    expected = FIELDS.get(name, {"nit", "f", "gnorm", "radius", "step", "rho"})
    assert set(result.history[0]) == set(result.history[-1]) == expected
    assert set(result.history.columns) - expected == {"x", "nfev", "njev"} | (
        set() if name in ("lm", "gn") else {"nhev"})


@pytest.mark.parametrize("name", ALL)
def test_keep_iterates_false_leaves_out_x_only(name):
    kept, lean = run(name), run(name, keep_iterates=False)
    assert "x" in kept.history and "x" not in lean.history
    assert lean.history.columns == tuple(c for c in kept.history.columns if c != "x")
    np.testing.assert_array_equal(lean.history["f"], kept.history["f"])
    np.testing.assert_array_equal(lean.x, kept.x)


@pytest.mark.parametrize("name", ALL)
def test_printing_a_result_shows_the_history_in_one_line(name):
    result = run(name)
    text = str(result)
    lines = [line.strip() for line in text.splitlines() if "history" in line]
    assert lines == [f"history: {result.history!r}"]   # keys are padded to the longest one
    assert lines[0].startswith(f"history: History({result.nit + 1} records; columns: nit")
    assert len(text.splitlines()) < 25   # not one line per record


@pytest.mark.parametrize("method", [functools.partial(minimize_trust_ncg, hessp=rosen_hess_prod),
                                    functools.partial(minimize_newton, hess=rosen_hess)])
def test_maxiter_result_is_the_best_record(method):
    result = method(rosen, X0, rosen_der, maxiter=6)
    history = result.history
    assert result.status == 1 and len(history) == 7
    best = np.argmin(history["f"])
    assert result.fun == history["f"][best]
    np.testing.assert_array_equal(result.x, history["x"][best])
