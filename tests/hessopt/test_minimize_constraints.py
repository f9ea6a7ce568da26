"""hessopt.minimize with general constraints, as scipy users pass them (dicts, LinearConstraint,
NonlinearConstraint, mixed with bounds, array and pytree x0), against closed-form solutions and the
published HS071; multipliers checked by recomputing the KKT conditions with scipy trust-constr's
sign convention (grad f + sum J_i^T v_i = 0: v <= 0 where a lower bound is active, >= 0 at an upper
one); infeasible and unbounded problems; thousands of variables with sparse constraints; and the
errors that name what is wrong.

Tolerances: the interior point succeeds when the scaled KKT error E_0 <= gtol = 1e-8 (W&B eq. (5));
on these problems the scalings s_d, s_c and s_f are 1 (multipliers under 100, gradients at x0 under
100), so the Lagrangian's gradient, the violation and each complementarity product are at most 1e-8
in the user's units; recomputing them in float64 adds rounding, hence KKT_TOL = 1e-7. At a
nondegenerate solution (strict complementarity, second-order sufficiency), x and the multipliers
are within a modest multiple of E_0 of the solution: X_TOL = 1e-6.
"""
import math
import re
import warnings

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import Bounds, LinearConstraint, NonlinearConstraint, OptimizeWarning

import autodiff as ad
import hessopt
from hessopt import problems
from hessopt._constraints import LagrangianCurvature, parse_constraints

KKT_TOL = 1e-7
X_TOL = 1e-6


def assert_kkt(result, grad, jacobians, bound_gradient=True):
    """The KKT conditions recomputed at result.x: grad f + sum J_i^T v_i (+ the bounds' v) = 0, the
    violation at most KKT_TOL; ``jacobians`` one callable per constraint group."""
    x = np.asarray(result.x)
    stationarity = grad(x) + sum(np.atleast_2d(J(x)).T @ v for J, v in zip(jacobians, result.v))
    if bound_gradient:
        stationarity = stationarity + result.v[-1]
    assert np.max(np.abs(stationarity)) <= KKT_TOL
    assert result.constr_violation <= KKT_TOL
    np.testing.assert_allclose(result.lagrangian_grad, stationarity, atol=KKT_TOL)


# --- scipy's forms, each against a known solution -------------------------------------------------

def test_dicts_scipy_tutorial_problem():
    """scipy's SLSQP tutorial: min (x0 - 1)^2 + (x1 - 2.5)^2 over three inequalities and x >= 0; the
    first is active: x* is the projection of (1, 2.5) on x0 - 2 x1 + 2 = 0, (1.4, 1.7), v = -0.8."""
    rows = np.array([[1.0, -2.0], [-1.0, -2.0], [-1.0, 2.0]])
    offsets = np.array([2.0, 6.0, 2.0])
    constraints = [{"type": "ineq", "fun": lambda x, i=i: rows[i] @ x + offsets[i]} for i in range(3)]
    result = hessopt.minimize(lambda x: (x[0] - 1) ** 2 + (x[1] - 2.5) ** 2, [2.0, 0.0],
                              bounds=[(0, None), (0, None)], constraints=constraints)
    assert result.success and result.status == 0
    np.testing.assert_allclose(result.x, [1.4, 1.7], atol=X_TOL)
    np.testing.assert_allclose(np.concatenate(result.v[:3]), [-0.8, 0.0, 0.0], atol=X_TOL)
    assert_kkt(result, lambda x: 2 * (x - [1.0, 2.5]), [lambda x, i=i: rows[i] for i in range(3)])
    assert [c.shape for c in result.constr] == [(1,), (1,), (1,), (2,)]   # one per constraint, bounds last


def test_nonlinear_constraint_disk_with_autodiff_and_with_the_users_derivatives():
    """min x0 + x1 on the disk x0^2 + x1^2 <= 2: x* = (-1, -1), v = 1/2 (an active upper bound)."""
    jac_calls, hess_calls = [], []

    def jac(x):
        jac_calls.append(1)
        return 2 * x[None, :]

    def hess(x, v):
        hess_calls.append(1)
        return 2 * v[0] * np.eye(2)
    for disk in (NonlinearConstraint(lambda x: x @ x, -np.inf, 2.0),
                 NonlinearConstraint(lambda x: x @ x, -np.inf, 2.0, jac="2-point"),
                 NonlinearConstraint(lambda x: x @ x, -np.inf, 2.0, jac=jac, hess=hess)):
        result = hessopt.minimize(lambda x: x[0] + x[1], [0.5, 0.0], constraints=disk)
        assert result.success
        np.testing.assert_allclose(result.x, [-1.0, -1.0], atol=X_TOL)
        np.testing.assert_allclose(result.v[0], [0.5], atol=X_TOL)
        assert_kkt(result, lambda x: np.ones(2), [lambda x: 2 * x], bound_gradient=False)
    assert len(jac_calls) == result.constr_njev > 0 and len(hess_calls) == result.constr_nhev > 0


@pytest.mark.parametrize("matrix", [np.ones((1, 5)), scipy.sparse.csr_matrix(np.ones((1, 5)))])
def test_linear_constraint_dense_and_sparse(matrix):
    """The projection of a on sum(x) = 1: x = a - (sum a - 1) / n, v = 2 (sum a - 1) / n."""
    a = np.arange(5.0)
    result = hessopt.minimize(lambda x: np.sum((x - a) ** 2), np.zeros(5), constraints=LinearConstraint(matrix, 1, 1))
    shift = (a.sum() - 1) / 5
    assert result.success
    np.testing.assert_allclose(result.x, a - shift, atol=X_TOL)
    np.testing.assert_allclose(result.v[0], [2 * shift], rtol=X_TOL)
    assert_kkt(result, lambda x: 2 * (x - a), [lambda x: np.ones((1, 5))], bound_gradient=False)


def hs071():
    f = lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]   # noqa: E731
    grad = lambda x: np.array([x[3] * (2 * x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1,  # noqa: E731
                               x[0] * (x[0] + x[1] + x[2])])
    return f, grad


def test_hs071_mixed_forms_with_bounds_matches_the_published_solution():
    """HS071 (Hock & Schittkowski 1981): x0 x1 x2 x3 >= 25 as a NonlinearConstraint, ||x||^2 = 40 as a
    dict, 1 <= x <= 5; f* = 17.0140173, x* = (1, 4.743, 3.82115, 1.379408). At x*, x0 = 1 is
    active: its bound multiplier is negative in scipy's convention, the product's too."""
    f, grad = hs071()
    constraints = [NonlinearConstraint(lambda x: np.prod(x), 25, np.inf), {"type": "eq", "fun": lambda x: x @ x - 40}]
    result = hessopt.minimize(f, [1.0, 5.0, 5.0, 1.0], bounds=Bounds(1, 5), constraints=constraints)
    assert result.success
    np.testing.assert_allclose(result.fun, 17.0140173, rtol=1e-8)
    np.testing.assert_allclose(result.x, [1.0, 4.743, 3.82115, 1.379408], atol=1e-5)   # as printed
    assert_kkt(result, grad, [lambda x: np.prod(x) / x, lambda x: 2 * x])
    assert result.v[0][0] < 0 and result.v[2][0] < 0 and np.all(result.v[2][1:] == pytest.approx(0, abs=KKT_TOL))
    np.testing.assert_array_equal(result.active_mask, [-1, 0, 0, 0])
    for column in ("violation", "mu"):
        assert column in result.history
    assert result.history["violation"][-1] <= KKT_TOL and result.history["mu"][-1] <= 1e-8


def test_multipliers_have_scipy_trust_constrs_signs():
    """min x0 + 2 x1 with x0^2 + x1^2 <= 2 (active upper: v > 0), x0 - x1 = 1/2 (an equality): the
    closed form x0 = (1/2 - sqrt(15/4)) / 2, v from grad f + J^T v = 0, as scipy's trust-constr
    reports it (checked by hand: v = (0.7746, 0.1127))."""
    x0 = (0.5 - np.sqrt(3.75)) / 2
    x = np.array([x0, x0 - 0.5])
    J = np.array([2 * x, [1.0, -1.0]])
    v = np.linalg.solve(J.T, -np.array([1.0, 2.0]))
    constraints = [NonlinearConstraint(lambda x: x @ x, -np.inf, 2), LinearConstraint([[1, -1]], 0.5, 0.5)]
    for method in (None, "trust-constr", "SLSQP"):
        result = hessopt.minimize(lambda x: x[0] + 2 * x[1], [0.0, 0.0], method=method, constraints=constraints)
        assert result.success
        np.testing.assert_allclose(result.x, x, atol=X_TOL)
        np.testing.assert_allclose(np.concatenate(result.v), v, atol=X_TOL)
        assert v[0] > 0
        if method is not None:
            assert f"method={method!r} ran hessopt's interior-point method" in result.message


def test_pytree_x0_with_a_dict_and_a_linear_constraint_on_the_flat_vector():
    """min ||w - (3, 1)||^2 + (b - 2)^2 s.t. w0 + w1 + b = 3 and b <= 1/2 (A over the flat vector,
    autodiff.ravel order: w then b): b = 1/2, w = (2.25, 0.25), v = (1.5, 1.5)."""
    def f(p):
        return np.sum((p["w"] - np.array([3.0, 1.0])) ** 2) + (p["b"] - 2.0) ** 2
    x0 = {"w": np.zeros(2), "b": np.array(0.0)}
    constraints = [{"type": "eq", "fun": lambda p: np.sum(p["w"]) + p["b"] - 3.0},
                   LinearConstraint([[0.0, 0.0, 1.0]], -np.inf, 0.5)]
    result = hessopt.minimize(f, x0, constraints=constraints)
    assert result.success and set(result.x) == {"b", "w"}
    np.testing.assert_allclose(result.x["w"], [2.25, 0.25], atol=X_TOL)
    np.testing.assert_allclose(result.x["b"], 0.5, atol=X_TOL)
    np.testing.assert_allclose(np.concatenate(result.v), [1.5, 1.5], atol=X_TOL)
    np.testing.assert_allclose(result.jac["w"], [-1.5, -1.5], atol=1e-5)


def test_bounds_with_constraints_and_nothing_evaluated_outside_the_bounds():
    """min (x0 - 2)^2 + (x1 - 2)^2 s.t. 2.5 - x0 - x1 >= 0, 0 <= x0 <= 1.8, 0 <= x1 <= 1, from x0 on
    the bounds: x* = (1.5, 1), where grad f = (-1, -2), so v = -1 (the dict's c >= 0, active) and
    x1 <= 1's multiplier +1; f and c raise outside the box."""
    def inside(x):
        if np.any(x < 0) or x[0] > 1.8 or x[1] > 1:
            raise ValueError("evaluated outside the bounds")

    def f(x):
        inside(x)
        return np.sum((x - 2.0) ** 2)

    def c(x):
        inside(x)
        return 2.5 - x[0] - x[1]
    result = hessopt.minimize(f, [0.0, 1.0], bounds=[(0, 1.8), (0, 1)], constraints={"type": "ineq", "fun": c})
    assert result.success
    np.testing.assert_allclose(result.x, [1.5, 1.0], atol=X_TOL)
    np.testing.assert_allclose(result.v[0], [-1.0], atol=X_TOL)
    np.testing.assert_allclose(result.v[1], [0.0, 1.0], atol=X_TOL)
    np.testing.assert_array_equal(result.active_mask, [0, 1])
    assert_kkt(result, lambda x: 2 * (x - 2.0), [lambda x: -np.ones(2)])
    assert "x0 was moved strictly inside the bounds" in result.message


# --- what the method reports when there is no solution ---------------------------------------------

def test_infeasible_constraints_end_locally_infeasible():
    constraints = [{"type": "ineq", "fun": lambda x: x[0] + x[1] - 1},
                   {"type": "ineq", "fun": lambda x: -1 - x[0] - x[1]}]
    result = hessopt.minimize(lambda x: x @ x, [0.0, 0.0], constraints=constraints)
    assert result.status == 6 and not result.success
    assert "local infeasibility" in result.message and result.constr_violation >= 1.0 - KKT_TOL
    disjoint = [NonlinearConstraint(lambda x: x @ x, 0, 1), NonlinearConstraint(lambda x: x[0], 2, np.inf)]
    result = hessopt.minimize(lambda x: x @ x, [2.0, 0.0], constraints=disjoint)
    assert result.status == 6 and not result.success and result.constr_violation > 0.5


def test_unbounded_problem_is_reported_unbounded():
    diagonal = {"type": "eq", "fun": lambda x: x[0] - x[1]}
    result = hessopt.minimize(lambda x: -x[0] - x[1], [0.0, 0.0], constraints=diagonal)
    assert result.status == 7 and not result.success
    assert "unbounded" in result.message and result.fun < -1e20


# --- thousands of variables, sparse constraints ------------------------------------------------------

@pytest.mark.parametrize("name, n", [("bryson_denham", 9999), ("rosenbrock_trigexp", 10000), ("hanging_chain", 10000)])
def test_thousands_of_variables_with_sparse_constraints(name, n):
    """Scalable problems of hessopt.problems.constrained: optimal control with its dynamics as
    equalities, Lukšan-Vlček's chained Rosenbrock with trigonometric-exponential constraints; sparse
    Jacobians and Lagrangian Hessians from autodiff, factored sparse. The hanging chain (COPS 3.0's:
    W + Sigma with zeros on its diagonal) needs the sparse path's solves of the unfloored system."""
    problem = problems.constrained(name, n)
    result = hessopt.minimize(problem.fun, problem.x0, bounds=Bounds(problem.lower, problem.upper),
                              constraints=problem.constraints)
    assert result.success and result.sparse
    target = min([problem.fmin, *problem.local_minima], key=lambda value: abs(value - result.fun))
    assert result.fun == pytest.approx(target, rel=1e-6)
    jacobians = [ad.sparse_jacobian(c["fun"]) for c in problem.constraints]
    stationarity = ad.grad(problem.fun)(result.x) + sum(J(result.x).T @ v for J, v in zip(jacobians, result.v))
    bounded = np.isfinite(problem.lower).any() or np.isfinite(problem.upper).any()
    stationarity = stationarity + (result.v[-1] if bounded else 0.0)
    assert np.max(np.abs(stationarity)) <= 1e-6 * max(1.0, np.max(np.abs(ad.grad(problem.fun)(result.x))))


def test_hanging_chain_at_1800_reaches_its_discrete_minimum():
    """COPS 3.0's chain at n = 1800 (nh = 449), from COPS's start. With the straight-line start used
    before (u = 2, three unknowns per node) this size ended after 90 iterations at f = 5.1377, and n =
    10^5 diverged. The discrete minima fall towards the catenary's energy as h does (second order), so
    the minimum at nh = 449 lies between the catenary's energy and the one stored for n = 1000."""
    problem = problems.constrained("hanging_chain", 1800)
    result = hessopt.minimize(problem.fun, problem.x0, constraints=problem.constraints)
    assert result.success and result.constr_violation <= 1e-8
    catenary = 5.068480110993413      # tests/hessopt/test_constrained_problems.catenary_energy()
    assert catenary < result.fun < problems.constrained("hanging_chain", 1000).fmin


def test_sparse_and_dense_paths_agree():
    problem = problems.constrained("wood_broyden", 60)
    kwargs = dict(bounds=Bounds(problem.lower, problem.upper), constraints=problem.constraints)
    dense = hessopt.minimize(problem.fun, problem.x0, options={"sparse": False}, **kwargs)
    sparse = hessopt.minimize(problem.fun, problem.x0, options={"sparse": True}, **kwargs)
    assert dense.success and sparse.success and sparse.sparse and not dense.sparse
    np.testing.assert_allclose(sparse.x, dense.x, atol=X_TOL)


def test_the_lagrangian_hessian_replays_with_new_multipliers():
    """One program for s f + v^T c, its weights read at each call: the Hessian at new (s, v) is the
    closed form's, dense and sparse."""
    f = lambda x: np.sum(x ** 4)   # noqa: E731
    groups = parse_constraints([{"type": "eq", "fun": lambda x: x[0] * x[1]},
                                NonlinearConstraint(lambda x: np.sum(x ** 2), 0, 1)], np.ones(3), lambda x: x)
    x = np.array([1.0, 2.0, 3.0])
    for sparse in (False, True):
        curvature = LagrangianCurvature(groups, f, 3, sparse=sparse, trace=True)
        for s, v in ((1.0, np.array([1.0, 1.0])), (0.0, np.array([2.0, -1.0])), (0.5, np.array([0.0, 3.0]))):
            H = curvature(x, s, v)
            H = H.toarray() if scipy.sparse.issparse(H) else H
            expected = s * np.diag(12 * x ** 2) + v[0] * np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]) \
                + 2 * v[1] * np.eye(3)
            np.testing.assert_allclose(H, expected, rtol=1e-14)


# --- scipy's names and options, and bad input --------------------------------------------------------

def test_scipy_method_names_run_the_interior_point_and_map_their_options():
    f, _ = hs071()
    constraints = [NonlinearConstraint(lambda x: np.prod(x), 25, np.inf), {"type": "eq", "fun": lambda x: x @ x - 40}]
    short = hessopt.minimize(f, [1.0, 5.0, 5.0, 1.0], method="SLSQP", bounds=Bounds(1, 5), constraints=constraints,
                             options={"maxiter": 2, "ftol": 1e-10})
    assert short.status == 1 and short.nit == 2 and "method='SLSQP' ran" in short.message
    tight = hessopt.minimize(f, [1.0, 5.0, 5.0, 1.0], method="trust-constr", bounds=Bounds(1, 5),
                             constraints=constraints, options={"gtol": 1e-10, "verbose": 0})
    assert tight.success and tight.kkt_error <= 1e-10 and tight.method == "interior-point"
    assert tight.status == 1    # trust-constr's own code for convergence (0 is its maxiter)
    capped = hessopt.minimize(f, [1.0, 5.0, 5.0, 1.0], method="trust-constr", bounds=Bounds(1, 5),
                              constraints=constraints, options={"maxiter": 1})
    assert capped.status == 0 and not capped.success


def test_a_constraint_autodiff_cannot_follow_gets_finite_differences():
    """The SLSQP idiom np.array([...]) of Tensors leaves the engine: the Jacobian and the curvature
    come from central differences (steps inside the bounds), and the message says so. On the unit
    disk min x0 + x1 has x* = -(1, 1) / sqrt(2), v = -1 / sqrt(2) (c = 1 - ||x||^2 >= 0, active)."""
    disk = {"type": "ineq", "fun": lambda x: np.array([1 - x[0] ** 2 - x[1] ** 2])}
    for constraint in (disk, {**disk, "jac": lambda x: np.array([[-2 * x[0], -2 * x[1]]])}):
        result = hessopt.minimize(lambda x: x[0] + x[1], [0.5, 0.0], constraints=constraint)
        assert result.success and "constraints[0] (ineq)'s derivatives came from finite differences" in result.message
        np.testing.assert_allclose(result.x, -np.ones(2) / np.sqrt(2), atol=X_TOL)
        np.testing.assert_allclose(result.v[0], [-1 / np.sqrt(2)], atol=X_TOL)



def test_an_objective_autodiff_cannot_follow_gets_finite_differences_with_minimizes_warning():
    """HS071 with f written in math.pow and float(), which leave the engine: f's gradient comes from
    central differences in the box and its Hessian from second differences of f, as minimize's
    fallback gives them, with its warning (naming float() and the line) and the result saying so.
    The central gradient's error, ``eps^(2/3)`` times f's scale (~1e-9 here, f's third derivatives
    at most 2), is below the KKT test's 1e-8, so the published solution and the KKT conditions with
    the exact gradient hold to the tolerances of the autodiff run above."""
    _, grad = hs071()
    seen = []

    def f(x):
        x = [float(entry) for entry in x]
        seen.append(x)
        return x[0] * x[3] * (x[0] + x[1] + x[2]) + math.pow(x[2], 1)
    constraints = [NonlinearConstraint(lambda x: np.prod(x), 25, np.inf), {"type": "eq", "fun": lambda x: x @ x - 40}]
    with pytest.warns(OptimizeWarning, match=r"autodiff cannot follow fun: float\(\).*finite differences \(3-point\)") \
            as record:
        result = hessopt.minimize(f, [1.0, 5.0, 5.0, 1.0], bounds=Bounds(1, 5), constraints=constraints)
    assert record[0].filename == __file__   # the warning points at the user's call
    assert result.success and result.derivatives == "finite differences"
    assert "The derivatives are finite differences (3-point): float()" in result.message
    np.testing.assert_allclose(result.fun, 17.0140173, rtol=1e-8)
    np.testing.assert_allclose(result.x, [1.0, 4.743, 3.82115, 1.379408], atol=1e-5)   # as printed
    assert_kkt(result, grad, [lambda x: np.prod(x) / x, lambda x: 2 * x])
    assert result.nfev == len(seen) + 1   # every call of f: + the refused recording at x0, which raised before seen
    assert np.all((np.array(seen) >= 1) & (np.array(seen) <= 5))   # the difference steps stay in the box


def test_an_objective_autodiff_follows_is_not_differenced():
    """An f autodiff follows keeps autodiff's derivatives, f's curvature in the Lagrangian's program: no
    warning; on the line x0 + x1 = 1, min (x0 - 1)^2 + (x1 - 2)^2 is at (0, 1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", OptimizeWarning)
        result = hessopt.minimize(lambda x: (x[0] - 1) ** 2 + (x[1] - 2) ** 2, X0,
                                  constraints={"type": "eq", "fun": lambda x: x[0] + x[1] - 1})
    assert result.success and result.derivatives == "autodiff"
    assert result.hessian_source == "autodiff (the Lagrangian's)" and "finite differences" not in result.message
    np.testing.assert_allclose(result.x, [0.0, 1.0], atol=X_TOL)


def _leaves_the_engine_beyond_half(value):
    """``value(x)``, through float() where x[0] > 0.5: autodiff follows it at x0 = 0, not there."""
    def function(x):
        if x[0] > 0.5:
            return value(np.array([float(x[0]), x[1]]))
        return value(x)
    return function


@pytest.mark.parametrize("refused", ["fun", "constraints[0] (eq)"])
def test_a_function_autodiff_refuses_after_x0_restarts_the_run_on_finite_differences(refused):
    """f = (x0 - 2)^2 + (x1 - 1)^2 on the line x0 + x1 = 1 has its minimum at (1, 0), multiplier 2;
    f (or the constraint) leaves the engine only where x0 > 0.5, which the run reaches after x0 = 0.
    The run restarts from x0 with central differences of that function, warns (naming float() and
    the line, at the user's call) and says so; the differences' error, eps^(2/3) times f's third
    derivatives (0 here), is below the KKT test's, so x and v are within X_TOL."""
    objective, line = (lambda x: (x[0] - 2) ** 2 + (x[1] - 1) ** 2), (lambda x: x[0] + x[1] - 1)
    if refused == "fun":
        objective = _leaves_the_engine_beyond_half(objective)
    else:
        line = _leaves_the_engine_beyond_half(lambda x: np.stack([x[0] + x[1] - 1]))
    with pytest.warns(OptimizeWarning, match=rf"autodiff cannot follow {re.escape(refused)} at a point of the run "
                                             r"after x0 \(it could at x0\): float\(\).*restarts from x0") as record:
        result = hessopt.minimize(objective, X0, constraints={"type": "eq", "fun": line})
    assert [w.filename for w in record] == [__file__]   # one warning, at the user's call
    assert result.success and "not at x0: float()" in result.message and "restarted from x0" in result.message
    assert result.derivatives == ("finite differences" if refused == "fun" else "autodiff")
    np.testing.assert_allclose(result.x, [1.0, 0.0], atol=X_TOL)
    np.testing.assert_allclose(result.v[0], [2.0], atol=X_TOL)


@pytest.mark.parametrize("gtol", [1e-8, 1e-10])
def test_trust_constrs_status_1_means_its_gtol_holds_in_the_users_units(gtol):
    """Rosenbrock on x0 + 2 x1 <= 1 from (-1, -0.5) (scipy's IneqRosenbrock, MATLAB fmincon's example).
    |grad f(x0)| = 604, so the interior point scales f by s_f = 100 / 604 and E_0 <= gtol leaves the
    user's Lagrangian gradient up to 1 / s_f times larger (2.5e-8 at gtol 1e-8). trust-constr's status
    1 says that the largest entry of grad f + A^T v and the violation are below its gtol: for
    method="trust-constr" success requires both, recomputed here from result.x and result.v
    (to the rounding of grad f, eps |grad f| with |grad f| ~ 1 there)."""
    def rosenbrock(x):
        return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2

    def gradient(x):
        return np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
    result = hessopt.minimize(rosenbrock, [-1.0, -0.5], method="trust-constr",
                              constraints=LinearConstraint([[1.0, 2.0]], -np.inf, 1.0), options={"gtol": gtol})
    assert result.status == 1 and result.success
    lagrangian_gradient = gradient(result.x) + np.array([1.0, 2.0]) * result.v[0][0]
    assert np.max(np.abs(lagrangian_gradient)) <= gtol + 10 * np.finfo(float).eps
    assert result.optimality <= gtol and result.constr_violation <= gtol
    np.testing.assert_allclose(result.x, [0.5022, 0.2489], atol=1e-4)   # scipy's test's digits


X0 = np.zeros(2)
DISK = NonlinearConstraint(lambda x: x @ x, -np.inf, 1.0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(constraints={"type": "equal", "fun": lambda x: x[0]}), ValueError, r"'type' must be 'eq' or 'ineq'"),
    (dict(constraints={"type": "eq", "fun": lambda x: x[0], "jacobian": None}), ValueError,
     r"constraints\[0\]: unknown keys \['jacobian'\]"),
    (dict(constraints=[DISK, {"type": "eq", "fun": 3.0}]), TypeError,
     r"constraints\[1\] \(eq\): 'fun' must be callable"),
    (dict(constraints=LinearConstraint(np.ones((1, 3)), 0, 1)), ValueError,
     r"A has shape \(1, 3\), but x0 has 2 entries"),
    (dict(constraints=NonlinearConstraint(lambda x: x, [0, 0, 0], 1)), ValueError, r"lb and ub must be scalars or "
     r"arrays of the constraint's 2 values"),
    (dict(constraints=LinearConstraint(np.eye(2), 1, 0)), ValueError, r"lower bound exceeds the upper bound"),
    (dict(constraints=[DISK, "x >= 0"]), TypeError, r"constraints\[1\] must be a dict, a LinearConstraint"),
    (dict(constraints=DISK, method="newton-cg"), ValueError, r"method 'newton-cg' takes no general constraints"),
    (dict(constraints=DISK, method="trust-constr", options={"xtol": 1e-8}), ValueError,
     r"options\['xtol'\] of 'trust-constr' has no counterpart"),
    (dict(constraints=DISK, method="SLSQP", options={"eps": 1e-8}), ValueError, r"options\['eps'\] of 'SLSQP'"),
    (dict(constraints=DISK, options={"constraints": DISK}), ValueError, r"pass constraints to minimize"),
    (dict(constraints=DISK, options={"mu_strategy": "fast"}), ValueError, r"options\['mu_strategy'\] must be "),
    (dict(constraints=DISK, tol=-1.0), ValueError, r"tol must be"),
])
def test_bad_input_is_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        hessopt.minimize(lambda x: np.sum((x - 1) ** 2), X0, **kwargs)


def test_a_scalar_constraint_with_a_1d_jacobian_as_scipys_dicts_allow():
    """min ||x||^2 s.t. x0 + x1 = 1, fun a scalar (taken from an np.array: finite-difference
    curvature of the user's jac) and jac a list: x* = (1/2, 1/2), v = -1."""
    line = {"type": "eq", "fun": lambda x: np.array([x[0] + x[1] - 1.0])[0], "jac": lambda x: [1.0, 1.0]}
    result = hessopt.minimize(lambda x: x @ x, [3.0, -1.0], method="SLSQP", constraints=line)
    assert result.success
    np.testing.assert_allclose(result.x, [0.5, 0.5], atol=X_TOL)
    np.testing.assert_allclose(result.v[0], [-1.0], atol=X_TOL)
    assert result.niter == result.nit
