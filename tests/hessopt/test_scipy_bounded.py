"""scipy's bounded calls run unchanged (issue 35): method="L-BFGS-B" and "TNC" run hessopt's bounded
trust-region method with their options mapped or refused by name, scipy's words for bad bounds,
scipy's early return when the bounds fix every variable, a constant NaN a failed result."""
import math
import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import Bounds, OptimizeWarning

import hessopt

BOUNDS = [(-1.0, 0.5), (-1.0, 2.0)]   # Rosenbrock's minimizer (1, 1) is outside: x[0] ends at 0.5
X0 = np.array([-0.5, 1.5])


def rosen(x):
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


def opaque_rosen(x):
    return 100.0 * math.pow(x[1] - math.pow(x[0], 2), 2) + math.pow(1.0 - x[0], 2)


@pytest.mark.parametrize("method", ["L-BFGS-B", "l-bfgs-b", "TNC", "tnc"])
def test_scipys_bounded_methods_run_the_bounded_trust_region_method(method):
    ours = hessopt.minimize(rosen, X0, method=method, bounds=BOUNDS)
    same = hessopt.minimize(rosen, X0, method="trust-ncg", bounds=BOUNDS)
    assert ours.success and f"Method {method.upper() if method.lower() == 'tnc' else 'L-BFGS-B'!r} ran as" \
        in ours.message
    np.testing.assert_array_equal(ours.x, same.x)
    assert ours.nit == same.nit
    # on the bound x0 = 0.5 the minimum over x1 is x1 = 0.25, exactly
    np.testing.assert_allclose(ours.x, [0.5, 0.25], atol=1e-8)
    np.testing.assert_array_equal(ours.active_mask, [1, 0])


@pytest.mark.parametrize("name", ["gtol", "pgtol"])
def test_gtol_and_pgtol_are_the_projected_gradient_test(name):
    loose = hessopt.minimize(rosen, X0, method="L-BFGS-B", bounds=BOUNDS, options={name: 1e-1})
    same = hessopt.minimize(rosen, X0, method="trust-ncg", bounds=BOUNDS, options={"gtol": 1e-1})
    assert loose.success and loose.nit == same.nit
    np.testing.assert_array_equal(loose.x, same.x)


@pytest.mark.parametrize("method, option, value", [("L-BFGS-B", "maxcor", 5), ("L-BFGS-B", "maxls", 1),
                                                   ("TNC", "scale", [1.0, 2.0]), ("TNC", "maxCGit", 3),
                                                   ("TNC", "xtol", 1e-3)])
def test_options_of_the_methods_own_machinery_are_refused_by_name(method, option, value):
    with pytest.raises(ValueError, match=rf"^options\['{option}'\] = .* is {method}'s own"):
        hessopt.minimize(rosen, X0, method=method, bounds=BOUNDS, options={option: value})


@pytest.mark.parametrize("options, error, match", [
    ({"ftol": "a"}, TypeError, r"options\['ftol'\] must be a non-negative number"),
    ({"ftol": -1.0}, ValueError, r"options\['ftol'\] must be a non-negative number"),
    ({"maxfun": 0}, ValueError, r"options\['maxfun'\] must be a positive number"),
    ({"maxfun": True}, TypeError, r"options\['maxfun'\] must be a positive number")])
def test_ftol_and_maxfun_are_checked_before_anything_runs(options, error, match):
    calls = []
    with pytest.raises(error, match=match):
        hessopt.minimize(lambda x: calls.append(1) or rosen(x), X0, method="L-BFGS-B", options=options)
    assert calls == []


def test_the_methods_defaults_of_those_options_are_accepted():
    defaults = {"maxcor": 10, "maxls": 20, "iprint": -1}
    result = hessopt.minimize(rosen, X0, method="L-BFGS-B", bounds=BOUNDS, options=defaults)
    tnc = hessopt.minimize(rosen, X0, method="TNC", bounds=BOUNDS,
                           options={"maxCGit": -1, "eta": -1, "stepmx": 0, "gtol": -1, "ftol": -1, "xtol": -1})
    assert result.success and tnc.success


def relative_reductions(result) -> np.ndarray:
    """(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) over the accepted steps of the history."""
    f = np.asarray(result.history["f"])
    f = f[np.concatenate([[True], np.diff(f) != 0])]   # rejected trials leave f as it was
    return (f[:-1] - f[1:]) / np.maximum(np.maximum(abs(f[:-1]), abs(f[1:])), 1.0)


def test_ftol_stops_at_the_first_small_relative_reduction():
    ftol = 1e-3
    result = hessopt.minimize(rosen, [-1.2, 1.0], method="L-BFGS-B", options={"ftol": ftol})
    reductions = relative_reductions(result)
    assert result.success and result.status == 0 and "RELATIVE REDUCTION OF F <= FTOL" in result.message
    assert reductions[-1] <= ftol and np.all(reductions[:-1] > ftol)


def test_maxfun_caps_the_evaluations_as_a_failure():
    free = hessopt.minimize(rosen, [-1.2, 1.0], method="TNC")
    capped = hessopt.minimize(rosen, [-1.2, 1.0], method="TNC", options={"maxfun": 10})
    assert free.nfev > 10 and not capped.success and capped.status == 1
    assert "EXCEEDS LIMIT" in capped.message
    # the stop comes after the first iteration that reaches 10: never before, at most one iteration late
    nfev = np.asarray(capped.history["nfev"])
    assert nfev[-1] >= 10 > nfev[-2]


def test_maxfun_counts_every_call_with_finite_differences():
    calls = [0]

    def counted(x):
        calls[0] += 1
        return opaque_rosen(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        result = hessopt.minimize(counted, [-1.2, 1.0], method="L-BFGS-B", options={"maxfun": 50})
    assert result.status == 1 and result.nfev == calls[0] >= 50


def test_all_variables_fixed_by_bounds_return_at_once_with_one_evaluation():
    calls = []

    def f(x, p=1.0):
        calls.append(np.array(x))
        return np.linalg.norm(x) + p
    for method in ("L-BFGS-B", "TNC", None, "newton-cg"):
        calls.clear()
        result = hessopt.minimize(f, (1.0, 3.0), args=(2.0,), bounds=[(1, 1), (2, 2)], method=method)
        assert result.success and result.nfev == 1 and len(calls) == 1 and result.nit == 0
        assert result.message == "All independent variables were fixed by bounds."
        np.testing.assert_array_equal(result.x, [1.0, 2.0])
        assert result.fun == math.sqrt(5.0) + 2.0


@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", None])
def test_bounds_of_the_wrong_length_or_crossed_get_scipys_words(method):
    for bounds in (Bounds([1, 2], [3, 4]), [(1, 3), (2, 4)]):
        with pytest.raises(ValueError, match=r"^The number of bounds is not compatible with the length of `x0`\."):
            hessopt.minimize(lambda x: x @ x, [1.0, 2.0, 3.0], method=method, bounds=bounds)
        with pytest.raises(ValueError, match=r"The number of bounds is not compatible"):
            scipy.optimize.minimize(lambda x: x @ x, [1.0, 2.0, 3.0], method=method or "L-BFGS-B", bounds=bounds)
    with pytest.raises(ValueError, match=r"^An upper bound is less than the corresponding lower bound\. .*index 1"):
        hessopt.minimize(lambda x: x @ x, [1.0, 2.0, 3.0], method=method, bounds=Bounds([1, 6, 1], [3, 4, 2]))


@pytest.mark.parametrize("method", ["L-BFGS-B", "TNC", None, "newton-cg"])
def test_a_constant_nan_objective_is_a_failed_result(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error", OptimizeWarning)   # no "cannot follow" warning for a NaN at x0
        result = hessopt.minimize(lambda x: np.nan, np.array([1.0]), method=method,
                                  bounds=None if method == "newton-cg" else [(0.0, 2.0)])
    assert not result.success and result.status == 3 and "f(x0) = nan" in result.message
