"""hessopt.minimize: scipy's interface, exact derivatives from autodiff, pytrees, callbacks, bad input."""
import inspect
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import scipy.optimize

import hessopt
from hessopt import problems

METHODS = sorted(hessopt.METHODS)


def rosen(x):
    """Extended Rosenbrock (independent pairs: one minimum, at ones) in plain NumPy."""
    return np.sum(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2)


def quadratic(x, A, b):
    return 0.5 * x @ (A @ x) - b @ x


X0 = np.array([-1.2, 1.0, -1.2, 1.0, -1.2, 1.0])
X0_2 = np.array([-1.2, 1.0])  # scipy's chained rosen has a second local minimum for n >= 4


def test_signature_matches_scipy():
    ours = inspect.signature(hessopt.minimize).parameters
    theirs = inspect.signature(scipy.optimize.minimize).parameters
    shared = ["fun", "x0", "args", "method", "jac", "hess", "hessp", "bounds", "constraints", "tol",
              "callback", "options"]
    assert [p for p in ours] == shared == [p for p in theirs]   # scipy's order: positional calls work
    for name in shared[2:]:
        assert ours[name].default == theirs[name].default


@pytest.mark.parametrize("method", METHODS)
def test_every_method_finds_the_rosenbrock_minimum(method):
    result = hessopt.minimize(rosen, X0, method=method)   # the defaults: no tol, no options
    assert result.success and result.status == 0
    np.testing.assert_allclose(result.x, np.ones(6), atol=1e-6)
    assert result.fun < 1e-12
    assert np.max(np.abs(result.jac)) <= 1e-8
    for field in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "success", "message"):
        assert field in result
    assert len(result.history) == result.nit + 1
    assert result.history[-1]["f"] == pytest.approx(result.fun)


def squared_determinant(a):
    return np.linalg.det(a.reshape(3, 3)) ** 2


@pytest.mark.parametrize("method", METHODS)
def test_det_squared_is_minimized_through_singular_matrices(method):
    """d det/dA at a singular A is its cofactor matrix (it raised LinAlgError there, and the run
    died): started at the singular [[1, 2, 3], [4, 5, 6], [7, 8, 9]] every method stays (g = 0);
    from it plus the identity, each ends at a singular matrix."""
    singular = np.arange(1.0, 10.0)
    at = hessopt.minimize(squared_determinant, singular, method=method)
    assert at.success and at.nit == 0 and at.fun == squared_determinant(singular) < 1e-25
    result = hessopt.minimize(squared_determinant, singular + np.eye(3).ravel(), method=method)
    assert result.success and 0 < result.nit and result.fun < 1e-20
    assert np.linalg.svd(result.x.reshape(3, 3), compute_uv=False)[-1] < 1e-9   # singular to rounding


FLAT = {"sum((x - 1)^4) at its minimizer": (lambda x: np.sum((x - 1.0) ** 4), np.ones(4)),
        "a constant": (lambda x: 3.0 + 0.0 * np.sum(x), np.array([0.5, -2.0, 1.0, 0.0]))}


@pytest.mark.parametrize("method", METHODS + ["adam", "gd"])
@pytest.mark.parametrize("flat", sorted(FLAT))
@pytest.mark.parametrize("bounds", [None, [(-3.0, 3.0)] * 4], ids=["free", "bounded"])
def test_started_where_gradient_and_hessian_vanish_every_method_stays(method, flat, bounds):
    """g = 0 and H = 0 (exact, from autodiff): a non-strict minimum, not a saddle (0 <= -c * 0
    took it for one, status 5 after 26-52 iterations of trust-ncg and trust-exact)."""
    if bounds is not None and method in ("arc", "hessian-free"):
        pytest.skip("takes no bounds")
    fun, x0 = FLAT[flat]
    result = hessopt.minimize(fun, x0, method=method, bounds=bounds)
    assert result.status == 0 and result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, x0)
    assert result.fun == fun(x0)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg"])
def test_the_default_call_is_honest_where_scipys_test_is_not(method):
    """Watson, n = 9 (minimum 1.39976e-6): scipy's ||g||_inf <= 1e-5, asked for with ``tol`` or
    scipy's option name ``gtol``, stops far above it; the default reaches it."""
    problem = problems.get("watson", 9)
    default = hessopt.minimize(problem.fun, problem.x0, method=method)
    assert default.success and default.fun == pytest.approx(problem.fmin, rel=1e-6)
    for loose in (hessopt.minimize(problem.fun, problem.x0, method=method, tol=1e-5),
                  hessopt.minimize(problem.fun, problem.x0, method=method,
                                   options={"gtol": 1e-5})):
        assert loose.success and np.abs(loose.jac).max() <= 1e-5
        assert loose.fun > 2 * problem.fmin and loose.nit < default.nit
        assert "gtol = 1.0e-05" in loose.message


@pytest.mark.parametrize("method", ["newton-cg", "trust-krylov", "trust-exact"])
def test_args_and_tol_reach_a_known_quadratic_minimum(method):
    rng = np.random.default_rng(0)
    M = rng.standard_normal((5, 5))
    A, b = M @ M.T + 5 * np.eye(5), rng.standard_normal(5)
    result = hessopt.minimize(quadratic, np.zeros(5), args=(A, b), method=method, tol=1e-10)
    np.testing.assert_allclose(result.x, np.linalg.solve(A, b), atol=1e-9)


def test_method_names_are_case_insensitive_and_unknown_ones_are_named():
    assert hessopt.minimize(rosen, X0, method="Newton-CG").success
    with pytest.raises(ValueError, match="unknown method 'bfgs'"):
        hessopt.minimize(rosen, X0, method="bfgs")


def test_user_supplied_derivatives_are_honoured():
    calls = {"jac": 0, "hessp": 0}

    def jac(x):
        calls["jac"] += 1
        return scipy.optimize.rosen_der(x)

    def hessp(x, p):
        calls["hessp"] += 1
        return scipy.optimize.rosen_hess_prod(x, p)

    result = hessopt.minimize(scipy.optimize.rosen, X0_2, method="trust-ncg", jac=jac, hessp=hessp)
    assert result.success
    assert calls["jac"] == result.njev > 0 and calls["hessp"] == result.nhev > 0
    dense = hessopt.minimize(scipy.optimize.rosen, X0_2, method="trust-exact", jac=scipy.optimize.rosen_der,
                             hess=scipy.optimize.rosen_hess)
    np.testing.assert_allclose(dense.x, np.ones(2), atol=1e-5)


def test_jac_true_means_fun_returns_value_and_gradient():
    result = hessopt.minimize(lambda x: (scipy.optimize.rosen(x), scipy.optimize.rosen_der(x)), X0_2,
                              method="trust-exact", jac=True, hess=scipy.optimize.rosen_hess)
    np.testing.assert_allclose(result.x, np.ones(2), atol=1e-5)
    assert result.nfev == result.njev


def test_pytree_x0_gives_a_result_of_the_same_structure():
    target = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array([0.25])}

    def loss(params):
        return np.sum((params["w"] - target["w"]) ** 2) + np.sum((params["b"] - target["b"]) ** 4 + params["b"] ** 2)

    x0 = {"w": np.zeros((2, 2)), "b": np.zeros(1)}
    result = hessopt.minimize(loss, x0, method="trust-krylov", options={"gtol": 1e-10})
    assert set(result.x) == {"w", "b"} and result.x["w"].shape == (2, 2)
    np.testing.assert_allclose(result.x["w"], target["w"], atol=1e-8)
    assert result.jac["b"].shape == (1,)
    lists = hessopt.minimize(lambda p: np.sum((p[0] - 1) ** 2) + np.sum((p[1] + 2) ** 2),
                             [np.zeros(3), np.zeros(2)])
    np.testing.assert_allclose(lists.x[0], np.ones(3), atol=1e-6)
    np.testing.assert_allclose(lists.x[1], -2 * np.ones(2), atol=1e-6)


def test_callback_sees_each_iterate_and_can_stop_the_run():
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.fun)
        np.testing.assert_allclose(intermediate_result.fun, rosen(intermediate_result.x))
        if len(seen) == 3:
            raise StopIteration

    result = hessopt.minimize(rosen, X0, method="newton-cg", callback=callback)
    assert result.status == 99 and not result.success and "StopIteration" in result.message
    assert len(seen) == 3
    assert result.fun == pytest.approx(min(seen))


def test_pytree_callback_gets_the_structure():
    shapes = []   # scipy's old-style callback(xk): the iterate itself
    hessopt.minimize(lambda p: np.sum((p["a"] - 1) ** 2), {"a": np.zeros(3)},
                     callback=lambda xk: shapes.append(xk["a"].shape))
    assert shapes and all(shape == (3,) for shape in shapes)
    results = []

    def callback(intermediate_result):
        results.append((intermediate_result.x["a"].shape, intermediate_result.jac["a"].shape))

    hessopt.minimize(lambda p: np.sum((p["a"] - 1) ** 2), {"a": np.zeros(3)}, callback=callback)
    assert results and all(shapes == ((3,), (3,)) for shapes in results)


def test_maxiter_returns_status_1_with_the_best_point():
    result = hessopt.minimize(rosen, X0, method="trust-ncg", options={"maxiter": 3})
    assert result.status == 1 and not result.success and result.nit == 3
    assert result.fun <= rosen(X0)
    assert result.fun == pytest.approx(min(h["f"] for h in result.history))


def test_disp_prints_an_iteration_table(capsys):
    with pytest.warns(RuntimeWarning, match="Maximum number of iterations"):   # scipy's disp habit
        hessopt.minimize(rosen, X0, method="trust-exact", options={"disp": True, "maxiter": 4})
    lines = capsys.readouterr().out.strip().splitlines()
    assert "nit" in lines[0] and "f" in lines[0]
    assert len(lines) >= 5


@pytest.mark.parametrize("fun, x0, error, match", [
    ("not callable", X0, TypeError, "callable"),
    (rosen, np.array([1.0, np.nan]), ValueError, "NaN"),
    (lambda x: x ** 2, X0, ValueError, "scalar"),
])
def test_bad_input_raises_a_clear_exception(fun, x0, error, match):
    with pytest.raises(error, match=match):
        hessopt.minimize(fun, x0)


def test_nan_mid_run_is_recovered_from():
    def guarded(x):  # finite only inside |x| < 3: a long first step lands on NaN
        return np.where(np.abs(x) < 3.0, (x - 2.5) ** 2, np.nan).sum() + 1e-3 * np.sum(x ** 4)

    for method in METHODS:
        result = hessopt.minimize(guarded, np.array([-2.9]), method=method)
        assert np.isfinite(result.fun) and np.all(np.isfinite(result.x)), method
        assert abs(result.x[0]) < 3.0


def test_least_squares_fits_an_exponential_model():
    t = np.linspace(0, 2, 20)
    y = 2.0 * np.exp(-1.3 * t) + 0.5

    def residuals(p):
        return p[0] * np.exp(p[1] * t) + p[2] - y

    for method in ("lm", "gn"):
        result = hessopt.least_squares(residuals, np.array([1.0, -1.0, 0.0]), method=method)
        np.testing.assert_allclose(result.x, [2.0, -1.3, 0.5], atol=1e-6)
        assert result.cost < 1e-12


def test_least_squares_matches_the_linear_solution():
    rng = np.random.default_rng(1)
    A, b = rng.standard_normal((30, 4)), rng.standard_normal(30)
    result = hessopt.least_squares(lambda x: A @ x - b, np.zeros(4))
    np.testing.assert_allclose(result.x, np.linalg.lstsq(A, b, rcond=None)[0], atol=1e-8)


def test_the_suite_runs_problems_by_name_in_worker_processes():
    from hessopt.suite import run_suite

    instances = [problems.get("rosenbrock"), problems.get("beale")]
    with ProcessPoolExecutor(2) as pool:
        runs = run_suite(instances, ["trust-exact"], compare_scipy=True, executor=pool,
                         options={"gtol": 1e-8})
    assert [r.method for r in runs] == ["trust-exact", "scipy trust-exact"] * 2
    assert all(r.solved for r in runs if r.method == "trust-exact")
