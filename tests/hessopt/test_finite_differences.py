"""The finite-difference fallback (issue 35): code autodiff cannot follow still optimizes, with a
warning naming what stopped autodiff and the line, approximate derivatives that never leave the
box, every call of fun counted, and a result that says where its derivatives came from."""
import math
import warnings

import numpy as np
import pytest
from scipy.optimize import OptimizeWarning

import autodiff as ad
import hessopt
from hessopt import problems
from hessopt._constraints import _central_curvature, _central_jacobian
from hessopt._finite_differences import (
    DENSE_MAX,
    FiniteDifferences,
    LaterRefusal,
    difference_gradient,
    difference_jacobian,
)

EPS = np.finfo(float).eps
MINIMUM = np.array([1.0, -2.0])


def built_array(x):
    """An array built from x's entries: np.array turns the Tensors into plain numbers."""
    r = np.array([x[0] ** 2 - 1.0, x[1] + 2.0, x[0] - 1.0])
    return r @ r


def with_math_pow(x):
    return math.pow(x[0] - 1.0, 2) + math.pow(x[1] + 2.0, 2) + math.pow(x[0] - 1.0, 4)


def with_float(x):
    return (float(x[0]) - 1.0) ** 2 + (float(x[1]) + 2.0) ** 4 + (float(x[1]) + 2.0) ** 2


OPAQUE = {"np.asarray()": built_array, "float()": with_math_pow, "float() ": with_float}


def minimize_quietly(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        return hessopt.minimize(*args, **kwargs)


@pytest.mark.parametrize("operation", sorted(OPAQUE))
@pytest.mark.parametrize("jac", [None, False, "2-point", "3-point", "cs"])
def test_code_autodiff_cannot_follow_is_minimized_with_a_warning_naming_it(operation, jac):
    fun = OPAQUE[operation]
    with pytest.warns(OptimizeWarning, match="autodiff cannot follow fun") as caught:
        result = hessopt.minimize(fun, [3.0, 1.0], jac=jac, method="trust-ncg")
    warning = str(caught[0].message)
    assert operation.strip() in warning and "approximate" in warning
    # the line of the user's code: this file, and the source of that line
    assert "test_finite_differences.py:" in warning and "x[0]" in warning
    assert result.success and result.derivatives == "finite differences"
    assert "finite differences" in result.message
    # the default relative gradient test (1e-8 at f ~ 0) on a gradient accurate to ~eps^(2/3)
    # near the end (central differences): x within ~1e-7 of the minimizer, f within ~1e-14
    np.testing.assert_allclose(result.x, MINIMUM, atol=1e-6)
    assert result.fun < 1e-12


def test_code_autodiff_follows_gets_exact_derivatives_for_2_point():
    quadratic = lambda x: (x[0] - 1.0) ** 2 + (x[1] + 2.0) ** 4 + (x[1] + 2.0) ** 2   # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", OptimizeWarning)   # no fallback, no warning
        result = hessopt.minimize(quadratic, [3.0, 1.0], jac="2-point", options={"maxiter": 0})
    assert result.derivatives == "autodiff"
    # exact: the gradient at x0 = (3, 1) is (2 (x0 - 1), 4 (x1 + 2)^3 + 2 (x1 + 2)) = (4, 114), to the ulp
    np.testing.assert_array_equal(result.jac, [4.0, 114.0])
    assert result.nfev == 1


def test_a_user_jac_is_named_as_the_source():
    result = hessopt.minimize(lambda x: x @ x, [1.0, 2.0], jac=lambda x: 2 * x)
    assert result.derivatives == "jac"


def test_every_call_of_fun_is_counted_in_nfev():
    calls, points = [0], []

    def counted(x):
        calls[0] += 1              # the call autodiff's recording makes (and abandons) at x0 too
        value = with_float(x)
        points.append(np.array(x, dtype=float))
        return value
    result = minimize_quietly(counted, [3.0, 1.0], method="newton-cg")
    assert result.success and result.nfev == calls[0] == len(points) + 1
    # no point is evaluated twice in a row (f is kept per point)
    assert not any(np.array_equal(a, b) for a, b in zip(points, points[1:]))


def test_fun_is_never_evaluated_outside_the_box():
    lower, upper = np.array([1.5, -1.0]), np.array([4.0, 3.0])   # the minimizer (1, -2) is outside

    def guarded(x):
        x = np.asarray(x)     # also leaves the engine
        assert np.all(x >= lower) and np.all(x <= upper), x
        return with_float(x)
    for method in ("trust-ncg", "newton-cg", "trust-exact"):
        result = minimize_quietly(guarded, [1.5, 3.0], method=method, bounds=list(zip(lower, upper)))
        assert result.success and result.derivatives == "finite differences", method
        np.testing.assert_array_equal(result.x, [1.5, -1.0])
        np.testing.assert_array_equal(result.active_mask, [-1, -1])


@pytest.mark.parametrize("scheme", ["2-point", "3-point"])
def test_the_difference_gradient_stays_in_the_box_and_matches_the_gradient(scheme):
    lower, upper = np.array([0.0, -np.inf, 2.0]), np.array([np.inf, 1.0, 2.0])   # x[2] fixed

    def f(x):
        assert np.all(x >= lower) and np.all(x <= upper), x
        return math.exp(x[0]) + x[1] ** 3 + x[0] * x[1] + x[2] ** 2
    for x in (np.array([0.0, 1.0, 2.0]), np.array([0.5, -0.3, 2.0])):   # on the bounds; inside them
        g = difference_gradient(f, x, f(x), lower, upper, scheme)
        exact = np.array([math.exp(x[0]) + x[1], 3 * x[1] ** 2 + x[0], 0.0])   # a fixed variable: 0
        # truncation h |f''| / 2 (forward, h = sqrt(eps)) or h^2 |f'''| (three-point, h = eps^(1/3)),
        # plus rounding 2 eps |f| / h; |f''|, |f'''| <= 7 here
        h = {"2-point": EPS ** 0.5, "3-point": EPS ** (1 / 3)}[scheme]
        bound = 7 * (h / 2 if scheme == "2-point" else h ** 2) + 4 * EPS * 10 / h
        np.testing.assert_allclose(g, exact, rtol=0, atol=bound)


def cubic(x):
    """Two cubics: along each coordinate line |f''| <= 6 |x_i| + 2 and |f'''| <= 6."""
    return np.array([x[0] ** 3 + 2 * x[0] * x[1], x[1] ** 3 - x[0] ** 2])


def cubic_jacobian(x):
    return np.array([[3 * x[0] ** 2 + 2 * x[1], 2 * x[0]], [-2 * x[0], 3 * x[1] ** 2]])


@pytest.mark.parametrize("scheme", ["2-point", "3-point"])
def test_the_difference_jacobian_matches_the_closed_form_within_its_truncation_error_in_the_box(scheme):
    """On a bound (x[0] at its lower one, x[1] at its upper one: steps turned into the box, one-sided
    three-point differences) and inside: no evaluation leaves the box, and the error is below the
    truncation bound, h |f''| / 2 (forward, h = sqrt(eps) max(1, |x_i|)) or h^2 |f'''| / 3 (one-sided
    three-point, central h^2 |f'''| / 6; h = eps^(1/3) max(1, |x_i|)), plus rounding, 8 eps (|f| +
    |x| |J|) / h, for the values and the steps' representation (coefficients 3 + 4 + 1 over 2h at worst)."""
    lower, upper = np.array([-1.0, -np.inf]), np.array([np.inf, 2.0])
    evaluated = []

    def fun(x):
        evaluated.append(x.copy())
        return cubic(x)
    for x in (np.array([-1.0, 2.0]), np.array([0.5, -1.5])):
        evaluated.clear()
        jacobian = difference_jacobian(fun, x, None, lower, upper, scheme)
        assert all(np.all(y >= lower) and np.all(y <= upper) for y in evaluated)
        h = (EPS ** 0.5 if scheme == "2-point" else EPS ** (1 / 3)) * np.maximum(1.0, np.abs(x)).max()
        reach = np.abs(x).max() + 2 * h
        truncation = h / 2 * (6 * reach + 2) if scheme == "2-point" else 6 * h ** 2 / 3
        exact = cubic_jacobian(x)
        rounding = 8 * EPS * (np.abs(cubic(x)).max() + reach * np.abs(exact).max()) / h
        np.testing.assert_allclose(jacobian, exact, rtol=0, atol=truncation + rounding)
        # the gradient is its one-row case, to the bit
        first = difference_gradient(lambda y: cubic(y)[0], x, cubic(x)[0], lower, upper, scheme)
        np.testing.assert_array_equal(first, jacobian[0])


def test_constraint_differences_stay_in_the_box_at_a_bound():
    """A constraint autodiff cannot follow, differenced at x on its bounds: no evaluation outside
    them (the constraints' own central steps stepped over a bound they touched), and the Jacobian
    and the curvature v^T c'' within the three-point bound of the test above (|f'''| <= 6 for the
    Jacobian; the curvature differences a Jacobian that is quadratic: no truncation, rounding only)."""
    lower, upper = np.array([-1.0, -np.inf]), np.array([np.inf, 2.0])
    evaluated = []

    def fun(x):
        evaluated.append(x.copy())
        return cubic(x)

    def jac(x):
        evaluated.append(x.copy())
        return cubic_jacobian(x)
    x, v = np.array([-1.0, 2.0]), np.array([1.0, -2.0])
    h = EPS ** (1 / 3) * 2.0
    bound = 2 * h ** 2 + 8 * EPS * (8 + 2 * 12) / h
    np.testing.assert_allclose(_central_jacobian(fun, lower, upper)(x), cubic_jacobian(x), rtol=0, atol=bound)
    exact_curvature = v[0] * np.array([[6 * x[0], 2], [2, 0]]) + v[1] * np.array([[-2, 0], [0, 6 * x[1]]])
    np.testing.assert_allclose(_central_curvature(jac, lower, upper)(x, v), exact_curvature, rtol=0,
                               atol=3 * bound)
    assert all(np.all(y >= lower) and np.all(y <= upper) for y in evaluated)


def test_hessian_products_from_second_differences_and_from_gradient_differences():
    """Up to DENSE_MAX variables products come from the matrix of f's second differences, above
    from forward differences of the (central) gradient; both against the exact Hessian of
    f = sum x_i^4 + x_0 sum x_i^2 at x_i = 1 + i / n."""
    def f(x):
        x = np.array([float(value) for value in x])
        return np.sum(x ** 4) + x[0] * np.sum(x ** 2)
    for n in (2, DENSE_MAX + 5):
        x = 1.0 + np.arange(n) / n
        exact = np.diag(12 * x ** 2 + 2 * x[0])
        exact[0, :] += 2 * x
        exact[:, 0] += 2 * x
        exact[0, 0] = 12 * x[0] ** 2 + 6 * x[0]
        point = FiniteDifferences(f, np.full(n, -np.inf), np.full(n, np.inf), "3-point").at(x)
        # step eps^(1/3) max(1, |x|) (<= 2): error about 2 eps^(1/3) times the third derivatives
        # (<= 24 x_max + 6 <= 54), plus rounding eps |f| / step^2 (|f| <= 32 n here)
        bound = 2 * EPS ** (1 / 3) * 54 + EPS * 32 * n / EPS ** (2 / 3)
        for v in (np.eye(n)[0], np.linspace(-1.0, 1.0, n)):
            np.testing.assert_allclose(point.matvec(v), exact @ v, rtol=0, atol=bound * np.abs(v).sum())
        dense = point.to_dense()
        np.testing.assert_array_equal(dense, dense.T)
        np.testing.assert_allclose(dense, exact, rtol=0, atol=bound)


def test_eps_is_scipys_absolute_step():
    cubic = lambda x: float(x[0]) ** 3 + float(x[1]) ** 3   # noqa: E731
    result = minimize_quietly(cubic, [1.0, 2.0], jac="2-point", options={"eps": 1e-2, "maxiter": 0})
    # forward differences with h = 0.01: 3 x^2 + 3 x h + h^2
    np.testing.assert_allclose(result.jac, [3.0301, 12.0601], rtol=1e-12)


def test_forward_differences_give_way_to_central_ones_so_no_false_success():
    """Watson (n = 9) on forward differences alone stops where they vanish, 2% above the minimum
    (f = 1.432e-6 against 1.39976e-6) and reports success; central differences near the test end
    at the minimum."""
    watson = next(p for p in problems.MGH if p.name == "watson" and p.n == 9)
    result = minimize_quietly(lambda x: watson.fun(np.asarray(x)), watson.x0, method="newton-cg")
    assert result.success and watson.solved(result.fun)
    assert "finite differences (3-point, 2-point for the first" in result.message


def test_the_suite_runs_with_the_fallback_forced(capsys):
    """``python -m hessopt --finite-differences``: the objectives hidden from autodiff, so every call
    of f (the differences too) is in nfev; Beale is solved either way."""
    from hessopt import suite
    from hessopt.__main__ import main
    beale = problems.get("beale")
    exact, differenced = (suite.run_suite([beale], ["newton-cg"], finite_differences=forced)[0]
                          for forced in (False, True))
    assert exact.solved and differenced.solved and not differenced.false_success
    # a difference gradient costs n = 2 calls of f or more, besides the iterate's own
    assert differenced.nfev >= differenced.nit + 2 * differenced.njev > exact.nfev
    assert main(["--problems", "beale", "--methods", "newton-cg", "--finite-differences"]) == 0
    assert "beale" in capsys.readouterr().out


def branching(x):
    """Plain NumPy at x0 = (0, 0); past x[0] = 2 it calls float(), which autodiff cannot follow."""
    if x[0] > 2:
        return (float(x[0]) - 3.0) ** 2 + (x[1] - 1.0) ** 2 + (float(x[0]) - 3.0) ** 4
    return (x[0] - 3.0) ** 2 + (x[1] - 1.0) ** 2 + (x[0] - 3.0) ** 4


@pytest.mark.parametrize("method", ["trust-ncg", "newton-cg", "newton", "trust-exact"])
@pytest.mark.parametrize("trace", [True, False])
def test_a_refusal_after_x0_switches_the_run_to_finite_differences(method, trace):
    calls = [0]

    def counted(x):
        calls[0] += 1
        return branching(x)
    with pytest.warns(OptimizeWarning, match="autodiff cannot follow fun at a point of the run after x0") as caught:
        result = hessopt.minimize(counted, [0.0, 0.0], method=method, options={"trace": trace})
    warning = str(next(w.message for w in caught if "after x0" in str(w.message)))
    assert "float()" in warning and "test_finite_differences.py:" in warning and "approximate" in warning
    assert result.success and result.derivatives == "autodiff, then finite differences"
    assert "autodiff's up to x = " in result.message
    # the minimizer (3, 1) is in the branch autodiff cannot follow: the gradient test there on
    # central differences (error ~eps^(2/3)) puts x within ~1e-7 of it
    np.testing.assert_allclose(result.x, [3.0, 1.0], atol=1e-6)
    if not trace:   # every call of fun counted (traced recordings replay a program, not fun)
        assert result.nfev == calls[0]


def test_a_later_refusal_is_the_engines_only_and_warns_at_the_callers_level():
    """LaterRefusal (the switch's and the constrained restart's): None for the user's own TypeError;
    for autodiff's, the label and the site (operation and line), and a warning whose first sentence
    says so, at the stack level its caller names (here 1: this test)."""
    with pytest.raises(TypeError) as user:
        raise TypeError("the user's own")
    assert LaterRefusal.of(user.value, "fun") is None
    with pytest.raises(TypeError) as engine:
        ad.grad(lambda x: float(x[0]) ** 2)(np.ones(2))
    refusal = LaterRefusal.of(engine.value, "constraints[0] (eq)")
    assert refusal.label == "constraints[0] (eq)" and refusal.site.startswith("float()")
    assert "test_finite_differences.py:" in refusal.site
    with pytest.warns(OptimizeWarning) as record:
        refusal.warn("Then this.", stacklevel=1)
    assert str(record[0].message) == (f"autodiff cannot follow constraints[0] (eq) at a point of the run after x0 "
                                      f"(it could at x0): {refusal.site}. Then this.")
    assert record[0].filename == __file__


def test_finite_differences_take_bfgs_updates_unless_hess_asks_for_differences():
    """The Hessian of a run on finite differences costs no evaluation by default (BFGS updates);
    hess="2-point" asks for second differences of f, n (n + 3) / 2 = 5 values a point here.
    scipy's TNC test 1b: Rosenbrock written with math.pow, x[1] >= -1.5, maxfun=200."""
    def rosenbrock(x):
        return math.pow(1 - x[0], 2) + 100 * math.pow(x[1] - x[0] ** 2, 2)
    bounds = [(-np.inf, None), (-1.5, None)]
    with pytest.warns(OptimizeWarning, match="BFGS updates"):
        quasi = hessopt.minimize(rosenbrock, [-2.0, 1.0], method="TNC", bounds=bounds, options={"maxfun": 200})
    assert quasi.success and quasi.hessian_source == "quasi-Newton (BFGS updates)"
    # the projected gradient test (relative 1e-8) on central differences: f at the minimum 0 to ~1e-12
    assert quasi.fun < 1e-10 and quasi.nfev <= 200
    with pytest.warns(OptimizeWarning, match="second differences"):
        differenced = hessopt.minimize(rosenbrock, [-2.0, 1.0], method="trust-ncg", bounds=bounds, hess="2-point")
    assert differenced.success and differenced.hessian_source == "finite differences"
    assert differenced.fun < 1e-10
    # each iteration's Hessian costs 5 values of f beyond the gradients, the quasi-Newton one none
    assert differenced.nfev >= 5 * differenced.nit


def test_the_quasi_newton_hessian_recovers_from_an_overestimated_first_curvature():
    """Penalty function I (MGH, n = 4) on finite differences with trust-ncg: the first BFGS update
    sees the quartic term's curvature at x0 = (1, 2, 3, 4); skipped updates never bring it down
    (1,000 iterations at f = 0.05), Powell-damped ones reach the documented minimum 2.24998e-5."""
    penalty = next(p for p in problems.MGH if p.name == "penalty1" and p.n == 4)
    result = minimize_quietly(lambda x: penalty.fun(np.asarray(x)), penalty.x0, method="trust-ncg")
    assert result.success and penalty.solved(result.fun)
    assert result.hessian_source == "quasi-Newton (BFGS updates)" and result.nit < 200
