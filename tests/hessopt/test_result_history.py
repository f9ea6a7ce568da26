"""result.history through hessopt: column-wise, flat iterates for pytrees, keep_iterates passed
through, cumulative counters, one-line printing."""
import numpy as np
import pytest

import autodiff as ad
import hessopt

METHODS = sorted(hessopt.METHODS)
TARGET = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array([0.25])}


def loss(params):
    return (np.sum((params["w"] - TARGET["w"]) ** 4 + (params["w"] - TARGET["w"]) ** 2)
            + np.sum((params["b"] - TARGET["b"]) ** 2))


X0 = {"w": np.zeros((2, 2)), "b": np.zeros(1)}


@pytest.mark.parametrize("method", METHODS)
def test_pytree_iterates_are_the_flattened_parameters(method):
    result = hessopt.minimize(loss, X0, method=method, options={"gtol": 1e-8})
    history = result.history
    flat, unravel = ad.ravel(X0)
    assert result.success and history["x"].shape == (result.nit + 1, flat.size)
    np.testing.assert_array_equal(history["x"][0], flat)
    np.testing.assert_array_equal(history["x"][-1], ad.ravel(result.x)[0])
    for k, x in enumerate(history["x"]):
        assert history["f"][k] == pytest.approx(loss(unravel(x)), rel=1e-14, abs=1e-300)
    np.testing.assert_array_equal(history["nit"], np.arange(len(history)))
    assert history["f"][-1] == result.fun


@pytest.mark.parametrize("method", METHODS)
def test_cumulative_counters_end_at_the_results(method):
    result = hessopt.minimize(loss, X0, method=method)
    for counter in ("nfev", "njev", "nhev"):
        column = result.history[counter]
        assert np.all(np.diff(column) >= 0) and column[-1] <= result[counter]
    assert result.history["nfev"][-1] == result.nfev


@pytest.mark.parametrize("method", ["newton-cg", "trust-exact"])
def test_keep_iterates_false_is_passed_through(method):
    result = hessopt.minimize(loss, X0, method=method, options={"keep_iterates": False})
    assert result.success and "x" not in result.history and "f" in result.history
    assert len(result.history["f"]) == len(result.history) == result.nit + 1


def test_least_squares_history_is_column_wise_too():
    t = np.linspace(0.0, 3.0, 20)
    y = 2.0 * np.exp(-0.7 * t)

    def residuals(x):
        return x[0] * np.exp(-x[1] * t) - y

    result = hessopt.least_squares(residuals, np.array([1.0, 0.1]))
    history = result.history
    assert result.success and set(history[0]) == {"nit", "f", "gnorm", "step", "lambda"}
    np.testing.assert_array_equal(history["x"][-1], result.x)
    for k, x in enumerate(history["x"]):
        r = np.asarray(residuals(x))
        assert history["f"][k] == pytest.approx(0.5 * r @ r, rel=1e-14, abs=1e-300)
    assert history["nfev"][-1] == result.nfev and "nhev" not in history
    lean = hessopt.least_squares(residuals, np.array([1.0, 0.1]), options={"keep_iterates": False})
    assert "x" not in lean.history
    np.testing.assert_array_equal(lean.history["f"], history["f"])


def test_printed_result_summarizes_the_history_in_one_line():
    result = hessopt.minimize(loss, X0, method="trust-krylov")
    text = str(result)
    assert f"history: History({result.nit + 1} records; columns: nit, f, gnorm" in text
    assert len(text.splitlines()) < 25
