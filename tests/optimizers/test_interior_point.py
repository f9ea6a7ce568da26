"""The interior-point method (optimizers.minimize_ipm): closed-form solutions and multipliers, the
KKT conditions recomputed from the result, infeasible and unbounded problems, evaluations only
inside the bounds, degenerate and nonconvex problems, the sparse KKT path at thousands of
variables against the dense one, and the KKT factorizations' inertia against eigenvalues.

Iteration counts quoted in comments are IPOPT 3.14's (cyipopt, MUMPS, default options) from the
same start points with the same exact derivatives; the tests do not depend on them.
"""
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
from scipy.optimize import rosen, rosen_der, rosen_hess

from optimizers import CanonicalConstraint, Status, minimize_ipm
from optimizers.barrier import push_inside
from optimizers.kkt import DenseLDL, InertiaCorrection, KKTMatrix, SparseAssembly, SparseLDL

TOL = 1e-8
EPS = np.finfo(float).eps


def assert_kkt(result, tol=TOL):
    """The KKT conditions of the problem, recomputed from the result's public fields, to the
    accuracy the method's scaled test E_0 <= tol guarantees (W&B eq. (5)-(6), s_max = 100):
    stationarity of the Lagrangian, feasibility, sign and complementarity of every multiplier."""
    assert result.success and result.status == 0, result.message
    v = np.concatenate(result.v) if result.v else np.zeros(0)
    z = np.concatenate([result.z_lower, result.z_upper])
    count = max(v.size + np.count_nonzero(z), 1)
    s_d = max(100.0, (np.abs(v).sum() + z.sum()) / count) / 100.0
    s_c = max(100.0, z.sum() / max(np.count_nonzero(z), 1)) / 100.0
    assert np.abs(result.lagrangian_grad).max() <= tol * s_d
    assert result.constr_violation <= tol
    assert np.all(result.z_lower >= 0) and np.all(result.z_upper >= 0)
    return s_c


def assert_complementary(result, constraint, lower, upper, tol=TOL):
    """Each multiplier is zero unless its constraint or bound is active (to tol * s_c): v_i < 0 only
    at a lower bound of c_i, v_i > 0 only at an upper one; z times the distance to its bound."""
    s_c = assert_kkt(result, tol)
    x, c = result.x, constraint.fun(result.x)
    v = np.concatenate(result.v[:len(constraint.groups)]) if constraint.m else np.zeros(0)
    with np.errstate(invalid="ignore"):
        assert np.all(np.where(v < 0, -v * (c - constraint.lower), 0.0) <= 10 * tol * s_c)
        assert np.all(np.where(v > 0, v * (constraint.upper - c), 0.0) <= 10 * tol * s_c)
        assert np.all(np.nan_to_num(result.z_lower * (x - lower)) <= 10 * tol * s_c)
        assert np.all(np.nan_to_num(result.z_upper * (upper - x)) <= 10 * tol * s_c)


# --- closed forms -------------------------------------------------------------------------------

def test_equality_constrained_quadratic_has_the_closed_form_solution_and_multipliers():
    # min 1/2 x^T Q x + q^T x s.t. A x = b: the KKT system [[Q, A^T], [A, 0]] [x; v] = [-q; b]
    rng = np.random.default_rng(0)
    M = rng.standard_normal((6, 6))
    Q, q = M @ M.T + np.eye(6), rng.standard_normal(6)
    A, b = rng.standard_normal((2, 6)), rng.standard_normal(2)
    kkt = np.block([[Q, A.T], [A, np.zeros((2, 2))]])
    exact = np.linalg.solve(kkt, np.concatenate([-q, b]))
    constraint = CanonicalConstraint.linear(A, b, b)
    result = minimize_ipm(lambda x: 0.5 * x @ Q @ x + q @ x, np.zeros(6), lambda x: Q @ x + q,
                          hess=lambda x: Q, constraints=constraint)
    assert_kkt(result)
    np.testing.assert_allclose(result.x, exact[:6], atol=1e-8)
    np.testing.assert_allclose(result.v[0], exact[6:], atol=1e-8)
    assert result.nit == 1          # a quadratic with linear equalities: one Newton step


def test_sphere_constraint_multiplier_is_the_closed_form():
    # min sum(x) s.t. ||x||^2 = 1: x* = -1/sqrt(n), and 1 + 2 v x_i = 0 gives v = sqrt(n) / 2
    n = 5
    sphere = CanonicalConstraint(lambda x: np.array([x @ x]), lambda x: 2 * x[None, :], 1.0, 1.0,
                                 hess=lambda x, v: 2 * v[0] * np.eye(x.size))
    result = minimize_ipm(np.sum, np.eye(n)[0], lambda x: np.ones(n), hess=lambda x: np.zeros((n, n)),
                          constraints=sphere)
    assert_kkt(result)
    np.testing.assert_allclose(result.x, -np.ones(n) / np.sqrt(n), atol=1e-8)
    np.testing.assert_allclose(result.v[0], [np.sqrt(n) / 2], rtol=1e-8)


def test_linear_inequalities_and_bounds():
    # scipy's tutorial problem: min (x0 - 1)^2 + (x1 - 2.5)^2, three linear inequalities, x >= 0;
    # x* = (1.4, 1.7), only the first inequality active, with v = -0.8 (a lower bound: v <= 0)
    A = np.array([[1.0, -2.0], [-1.0, -2.0], [-1.0, 2.0]])
    constraint = CanonicalConstraint.linear(A, [-2.0, -6.0, -2.0], np.inf)
    lower, upper = np.zeros(2), np.full(2, np.inf)
    result = minimize_ipm(lambda x: (x[0] - 1) ** 2 + (x[1] - 2.5) ** 2, [2.0, 0.0],
                          lambda x: np.array([2 * (x[0] - 1), 2 * (x[1] - 2.5)]), hess=lambda x: 2 * np.eye(2),
                          constraints=constraint, bounds=(lower, upper))
    assert_complementary(result, constraint, lower, upper)
    np.testing.assert_allclose(result.x, [1.4, 1.7], atol=1e-8)
    np.testing.assert_allclose(result.v[0], [-0.8, 0.0, 0.0], atol=1e-7)
    assert len(result.v) == 2 and len(result.constr) == 2     # the bounds are the last group, as in scipy
    assert result.nit <= 12                                    # IPOPT: 8


def test_multipliers_have_scipy_trust_constr_signs():
    # lower <= x0 + x1 <= upper active at its upper side, and at its lower side: scipy's v is
    # positive at an upper bound and negative at a lower one
    for target, bounds, sign in ((3.0, (-np.inf, 1.0), 1), (-3.0, (-1.0, np.inf), -1)):
        constraint = CanonicalConstraint.linear([[1.0, 1.0]], *bounds)
        result = minimize_ipm(lambda x, t=target: (x - t) @ (x - t), np.zeros(2),
                              lambda x, t=target: 2 * (x - t), hess=lambda x: 2 * np.eye(2), constraints=constraint)
        assert_kkt(result)
        np.testing.assert_allclose(result.v[0], [sign * 2 * (abs(target) - 0.5)], rtol=1e-7)


def test_bounds_only_is_the_projection_of_the_unconstrained_minimum():
    target = np.array([-3.0, 0.5, 7.0, 2.0])
    lower, upper = np.array([-1.0, -1.0, -np.inf, 2.0]), np.array([1.0, 1.0, 4.0, 2.0])   # x3 fixed
    result = minimize_ipm(lambda x: 0.5 * (x - target) @ (x - target), np.zeros(4), lambda x: x - target,
                          hess=lambda x: np.eye(4), bounds=(lower, upper))
    assert_complementary(result, CanonicalConstraint.linear(np.zeros((0, 4)), [], []), lower, upper)
    np.testing.assert_allclose(result.x, np.clip(target, lower, upper), atol=1e-8)
    # the multipliers of the active bounds are the gradient there (g = x - target)
    np.testing.assert_allclose(result.z_lower, [2.0, 0.0, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(result.z_upper, [0.0, 0.0, 3.0, 0.0], atol=1e-7)


def test_rosenbrock_in_a_box_stops_at_the_bound():
    # x0 <= 0.5 binds: x* = (0.5, 0.25), where df/dx0 = -1, so z_upper[0] = 1
    lower, upper = np.array([-2.0, -2.0]), np.array([0.5, 2.0])
    result = minimize_ipm(rosen, [-1.2, 1.0], rosen_der, hess=rosen_hess, bounds=(lower, upper))
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [0.5, 0.25], atol=1e-8)
    np.testing.assert_allclose(result.z_upper, [1.0, 0.0], atol=1e-7)
    assert result.nit <= 25                                     # IPOPT: 18


def hs071():
    """Hock & Schittkowski problem 71 (IPOPT's example), written from the published problem."""
    def f(x):
        return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]

    def g(x):
        return np.array([x[3] * (2 * x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1, x[0] * (x[0] + x[1] + x[2])])

    def hessian(x, obj_factor, v):
        s = 2 * x[0] + x[1] + x[2]
        h = obj_factor * np.array([[2 * x[3], x[3], x[3], s], [x[3], 0, 0, x[0]], [x[3], 0, 0, x[0]],
                                   [s, x[0], x[0], 0]])
        product = np.prod(x) / np.outer(x, x)
        np.fill_diagonal(product, 0.0)
        return h + v[0] * product + 2 * v[1] * np.eye(4)

    constraint = CanonicalConstraint(lambda x: np.array([np.prod(x), x @ x]),
                                     lambda x: np.array([np.prod(x) / x, 2 * x]), [25.0, 40.0], [np.inf, 40.0])
    return f, g, hessian, constraint


def test_hs071_reaches_the_published_solution():
    f, g, hessian, constraint = hs071()
    lower, upper = np.ones(4), np.full(4, 5.0)
    result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(lower, upper))
    assert_complementary(result, constraint, lower, upper)
    # Hock & Schittkowski (1981): f* = 17.0140173, x* = (1, 4.7429994, 3.8211503, 1.3794082); the
    # printed x* is accurate to about 4e-7 (the KKT system solved to 1e-15 gives 4.74299964,
    # 3.82114998, 1.37940829, as IPOPT reports)
    assert abs(result.fun - 17.0140173) <= 1e-7
    np.testing.assert_allclose(result.x, [1.0, 4.7429994, 3.8211503, 1.3794082], atol=5e-7)
    np.testing.assert_allclose(result.x, [1.0, 4.742999637, 3.821149984, 1.379408293], atol=1e-8)
    # IPOPT's multipliers for this problem: lambda = (-0.55229366, 0.16146857), z_L[0] = 1.08787121
    np.testing.assert_allclose(result.v[0], [-0.55229366, 0.16146857], atol=1e-7)
    assert abs(result.z_lower[0] - 1.08787121) <= 1e-7
    assert result.nit == 8                                       # IPOPT: 8


def test_result_fields_and_history():
    f, g, hessian, constraint = hs071()
    result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(np.ones(4), np.full(4, 5.0)), mu_strategy="monotone")   # mu never rises
    history = result.history
    assert len(history) == result.nit + 1
    for column in ("f", "gnorm", "violation", "mu", "alpha", "ls", "delta_w", "restoration"):
        assert column in history.columns
    assert history["violation"][-1] == result.constr_violation <= TOL
    assert np.all(np.diff(history["mu"]) <= 0)                     # the monotone barrier update
    np.testing.assert_allclose(result.constr[0], constraint.fun(result.x))
    np.testing.assert_array_equal(result.constr[1], result.x)
    assert result.optimality == np.abs(result.lagrangian_grad).max()
    assert result.kkt_error <= TOL and TOL / 10 <= result.barrier_parameter <= TOL
    # one Hessian an iteration, one more at the solution for the second-order check
    assert result.constr_nfev >= result.nit and result.nhev == result.nit + 1
    assert result.second_order == "passed"
    assert not result.sparse


# --- honest failures ----------------------------------------------------------------------------

def square(lower, upper):
    return CanonicalConstraint(lambda x: x ** 2, lambda x: np.diag(2 * x), lower, upper,
                               hess=lambda x, v: np.diag(2 * v))


@pytest.mark.parametrize("problem", ["x^2 <= -1", "incompatible equalities"])
def test_infeasible_problems_end_locally_infeasible(problem):
    if problem == "x^2 <= -1":
        constraint, x0 = square(-np.inf, -1.0), np.array([1.0])       # IPOPT: 12 iterations, infeasible
    else:
        constraint, x0 = CanonicalConstraint.linear([[1.0, 1.0], [1.0, 1.0]], [1.0, 2.0], [1.0, 2.0]), np.zeros(2)
    result = minimize_ipm(lambda x: x @ x, x0, lambda x: 2 * x, hess=lambda x: 2 * np.eye(x.size),
                          constraints=constraint)
    assert result.status == Status.INFEASIBLE == 6 and not result.success
    assert "infeasib" in result.message
    assert result.constr_violation >= 0.5 - 1e-6                       # 1 and 0.5 at the best points
    assert np.any(result.history["restoration"])


@pytest.mark.parametrize("bounded", [True, False])
def test_unbounded_problems_end_unbounded(bounded):
    # min -x0 - x1 s.t. x0 = x1, x >= 0 (IPOPT: 6 iterations, diverging iterates); min x0 - x1 s.t.
    # x0 + x1 = 0, no bounds
    if bounded:
        result = minimize_ipm(lambda x: -x.sum(), np.zeros(2), lambda x: -np.ones(2), hess=lambda x: np.zeros((2, 2)),
                              constraints=CanonicalConstraint.linear([[1.0, -1.0]], 0.0, 0.0),
                              bounds=(np.zeros(2), np.full(2, np.inf)))
    else:
        result = minimize_ipm(lambda x: x[0] - x[1], np.zeros(2), lambda x: np.array([1.0, -1.0]),
                              hess=lambda x: np.zeros((2, 2)),
                              constraints=CanonicalConstraint.linear([[1.0, 1.0]], 0.0, 0.0))
    assert result.status == Status.UNBOUNDED == 7 and not result.success
    assert "unbounded" in result.message
    assert result.fun < -1e20 or np.abs(result.x).max() > 1e20


def test_f_and_c_are_never_evaluated_on_or_outside_the_bounds():
    lower, upper = np.array([0.0, 1.0, -np.inf]), np.array([2.0, np.inf, 0.5])
    seen = []

    def inside(x):
        seen.append(x.copy())
        if not (np.all(x > lower) and np.all(x < upper)):
            raise AssertionError(f"evaluated at {x}, outside the open box")

    def f(x):
        inside(x)
        return (x[0] + 1) ** 2 + (x[1] - 0.5) ** 2 + (x[2] - 3) ** 2     # the optimum lies on the bounds

    def c(x):
        inside(x)
        return np.array([x[0] + x[1] + x[2]])

    constraint = CanonicalConstraint(c, lambda x: np.ones((1, 3)), 1.5, np.inf)
    result = minimize_ipm(f, [-5.0, -5.0, 9.0], lambda x: 2 * (x - [-1.0, 0.5, 3.0]), hess=lambda x: 2 * np.eye(3),
                          constraints=constraint, bounds=(lower, upper))
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [0.0, 1.0, 0.5], atol=1e-8)
    assert len(seen) >= result.nit


def test_a_fixed_variable_keeps_its_value_and_gets_the_multiplier():
    values = []

    def f(x):
        values.append(x[1])
        return (x[0] - 1) ** 2 + x[0] * x[1]

    result = minimize_ipm(f, [0.0, 5.0], lambda x: np.array([2 * (x[0] - 1) + x[1], x[0]]),
                          hess=lambda x: np.array([[2.0, 1.0], [1.0, 0.0]]),
                          bounds=(np.array([-np.inf, 3.0]), np.array([np.inf, 3.0])))
    assert set(values) == {3.0}
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [-0.5, 3.0], atol=1e-8)        # 2 (x0 - 1) + 3 = 0
    np.testing.assert_allclose(result.z_lower - result.z_upper, [0.0, -0.5], atol=1e-8)   # df/dx1 = x0


def test_nonfinite_trial_points_are_refused():
    # f = x + 1/x on x > 0 (NaN elsewhere, no bound given): the first step from x0 = 3 lands at -9
    f = lambda x: float(x[0] + 1 / x[0]) if x[0] > 0 else np.nan
    result = minimize_ipm(f, [3.0], lambda x: np.array([1 - 1 / x[0] ** 2]), hess=lambda x: np.array([[2 / x[0] ** 3]]))
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [1.0], atol=1e-8)
    assert result.history["ls"][1] > 1


def test_nonfinite_start_is_status_3():
    result = minimize_ipm(lambda x: np.nan, [1.0], lambda x: np.ones(1), hess=lambda x: np.eye(1))
    assert result.status == 3 and not result.success
    constraint = CanonicalConstraint(lambda x: np.array([np.inf]), lambda x: np.ones((1, 1)), 0.0, 0.0)
    result = minimize_ipm(lambda x: x @ x, [1.0], lambda x: 2 * x, hess=lambda x: 2 * np.eye(1), constraints=constraint)
    assert result.status == 3 and "constraints are not finite" in result.message


def test_maxiter_and_callback():
    f, g, hessian, constraint = hs071()
    result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(np.ones(4), np.full(4, 5.0)), maxiter=3)
    assert result.status == 1 and result.nit == 3 and "KKT" in result.message
    calls = []

    def stop(intermediate):
        calls.append(intermediate.nit)
        if intermediate.nit == 2:
            raise StopIteration

    result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(np.ones(4), np.full(4, 5.0)), callback=stop)
    assert result.status == 99 and calls == [1, 2]


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="second derivatives"):
        minimize_ipm(lambda x: x @ x, [1.0], lambda x: 2 * x)
    with pytest.raises(ValueError, match="tol"):
        minimize_ipm(lambda x: x @ x, [1.0], lambda x: 2 * x, hess=lambda x: 2 * np.eye(1), gtol=0.0)
    with pytest.raises(ValueError, match="lower bound exceeds"):
        CanonicalConstraint.linear([[1.0]], 2.0, 1.0)
    with pytest.raises(ValueError, match="bounds are over 1 variables, but x0 has 2"):
        minimize_ipm(lambda x: x @ x, [1.0, 1.0], lambda x: 2 * x, hess=lambda x: 2 * np.eye(2),
                     bounds=([0.0], [1.0]))
    with pytest.raises(ValueError, match="returned 2 values for 1"):
        constraint = CanonicalConstraint(lambda x: x, lambda x: np.eye(2), [0.0], [1.0])
        minimize_ipm(lambda x: x @ x, [1.0, 1.0], lambda x: 2 * x, hess=lambda x: 2 * np.eye(2), constraints=constraint)


# --- degenerate and nonconvex -------------------------------------------------------------------

def test_redundant_equalities_are_solved_with_the_jacobian_regularization():
    # x0 + x1 = 1 twice (the second scaled by 2) and x1 + x2 = 1: J has rank 2, the KKT matrix is
    # singular; min ||x||^2 gives x* = (1/3, 2/3, 1/3) (IPOPT: 1 iteration)
    A = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    constraint = CanonicalConstraint.linear(A, [1.0, 2.0, 1.0], [1.0, 2.0, 1.0])
    result = minimize_ipm(lambda x: x @ x, np.zeros(3), lambda x: 2 * x, hess=lambda x: 2 * np.eye(3),
                          constraints=constraint)
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [1 / 3, 2 / 3, 1 / 3], atol=1e-8)
    np.testing.assert_allclose(A.T @ result.v[0], -2 * result.x, atol=1e-8)


def test_nonconvex_problem_needs_the_inertia_correction_and_avoids_the_saddle():
    # min (x0^2 - 1)^2 + x1^2 s.t. x0 + x1 = 0: along the line f = (x0^2 - 1)^2 + x0^2 has a maximum
    # at 0 and minima at x0 = +-1/sqrt(2) (f = 3/4). From x0 = 0.1, where the Hessian is indefinite on
    # the constraint's null space, Newton's method on the KKT conditions heads for the maximum
    f = lambda x: (x[0] ** 2 - 1) ** 2 + x[1] ** 2
    g = lambda x: np.array([4 * x[0] * (x[0] ** 2 - 1), 2 * x[1]])
    hess = lambda x: np.diag([12 * x[0] ** 2 - 4, 2.0])
    result = minimize_ipm(f, [0.1, -0.1], g, hess=hess, constraints=CanonicalConstraint.linear([[1.0, 1.0]], 0.0, 0.0))
    assert_kkt(result)
    np.testing.assert_allclose(np.abs(result.x), [1 / np.sqrt(2)] * 2, atol=1e-8)
    assert result.fun == pytest.approx(0.75, abs=1e-12)
    assert result.history["delta_w"][1] > 0


# --- the sparse KKT path ------------------------------------------------------------------------

def chained_problem(n):
    """Lukšan & Vlček (1999), problem 5.1: the chained Rosenbrock function with n - 2
    trigonometric-exponential equality constraints c_i(x_i, x_{i+1}, x_{i+2}); derivatives by hand,
    sparse (tridiagonal Hessians, a Jacobian with three diagonals)."""
    def f(x):
        return float(np.sum(100 * (x[:-1] ** 2 - x[1:]) ** 2 + (x[:-1] - 1) ** 2))

    def g(x):
        r = x[:-1] ** 2 - x[1:]
        out = np.zeros_like(x)
        out[:-1] += 400 * x[:-1] * r + 2 * (x[:-1] - 1)
        out[1:] -= 200 * r
        return out

    def hess(x):
        d = np.zeros(x.size)
        d[:-1] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
        d[1:] += 200
        return scipy.sparse.diags([-400 * x[:-1], d, -400 * x[:-1]], [-1, 0, 1], format="csc")

    def c(x):   # 3 b^3 + 2 d - 5 + sin(b - d) sin(b + d) + 4 b - a e^(a - b) - 3
        a, b, d = x[:-2], x[1:-1], x[2:]
        return 3 * b ** 3 + 2 * d - 5 + np.sin(b - d) * np.sin(b + d) + 4 * b - a * np.exp(a - b) - 3

    def jac(x):
        a, b, d = x[:-2], x[1:-1], x[2:]
        e, i = np.exp(a - b), np.arange(x.size - 2)
        values = np.concatenate([-(1 + a) * e, 9 * b ** 2 + 4 + np.sin(2 * b) + a * e, 2 - np.sin(2 * d)])
        return scipy.sparse.csr_matrix((values, (np.tile(i, 3), np.concatenate([i, i + 1, i + 2]))),
                                       shape=(x.size - 2, x.size))

    def chess(x, v):   # sin(b - d) sin(b + d) = sin^2 b - sin^2 d
        a, b, d = x[:-2], x[1:-1], x[2:]
        e, i = np.exp(a - b), np.arange(x.size - 2)
        rows = np.concatenate([i, i + 1, i, i + 1, i + 2])
        cols = np.concatenate([i, i + 1, i + 1, i, i + 2])
        values = np.concatenate([-(2 + a) * e * v, (18 * b + 2 * np.cos(2 * b) - a * e) * v, (1 + a) * e * v,
                                 (1 + a) * e * v, -2 * np.cos(2 * d) * v])
        return scipy.sparse.csc_matrix((values, (rows, cols)), shape=(x.size, x.size))

    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    return f, g, hess, CanonicalConstraint(c, jac, 0.0, 0.0, hess=chess), x0


def test_chained_problem_derivatives_match_central_differences():
    f, g, hess, constraint, x0 = chained_problem(7)
    x, v, h = x0 + 0.1 * np.arange(7), np.linspace(-1, 1, 5), 1e-6
    columns = np.eye(7) * h
    np.testing.assert_allclose(g(x), [(f(x + e) - f(x - e)) / (2 * h) for e in columns], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hess(x).toarray(), np.array([(g(x + e) - g(x - e)) / (2 * h) for e in columns]),
                               rtol=1e-6, atol=1e-5)
    constraint_jac = np.array([(constraint.fun(x + e) - constraint.fun(x - e)) / (2 * h) for e in columns]).T
    np.testing.assert_allclose(constraint.jac(x).toarray(), constraint_jac, rtol=1e-6, atol=1e-6)
    vjac = np.array([(constraint.jac(x + e).T @ v - constraint.jac(x - e).T @ v) / (2 * h) for e in columns])
    np.testing.assert_allclose(constraint.hess(x, v).toarray(), vjac, rtol=1e-6, atol=1e-6)


def test_thousands_of_variables_take_the_sparse_path():
    f, g, hess, constraint, x0 = chained_problem(5000)
    result = minimize_ipm(f, x0, g, hess=hess, constraints=constraint)
    assert result.sparse
    assert_kkt(result)
    # a local minimum (the global one is x = 1, f = 0); IPOPT reaches the same, f = 6.232458632437989,
    # in 6 iterations for every n from 100 to 20,000
    assert result.fun == pytest.approx(6.232458632437989, rel=1e-9)
    assert result.nit == 6


def test_sparse_and_dense_paths_agree():
    f, g, hess, constraint, x0 = chained_problem(200)
    dense = minimize_ipm(f, x0, g, hess=hess, constraints=constraint, sparse=False)
    f, g, hess, constraint, x0 = chained_problem(200)
    sparse = minimize_ipm(f, x0, g, hess=hess, constraints=constraint, sparse=True)
    assert sparse.sparse and not dense.sparse
    assert_kkt(dense)
    assert_kkt(sparse)
    assert sparse.nit == dense.nit
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-8)
    np.testing.assert_allclose(sparse.v[0], dense.v[0], atol=1e-6 * np.abs(dense.v[0]).max())


# --- the KKT factorizations ---------------------------------------------------------------------

def eigen_inertia(K):
    eigenvalues = np.linalg.eigvalsh(K)
    return int(np.sum(eigenvalues > 0)), int(np.sum(eigenvalues < 0)), int(np.sum(eigenvalues == 0))


def test_dense_inertia_is_the_eigenvalues_signs():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 15))
        K = rng.standard_normal((n, n))
        K = K + K.T
        K[rng.random((n, n)) < 0.3] = 0.0
        K = np.triu(K) + np.triu(K, 1).T          # symmetric, with zeros forcing 2x2 pivots
        if np.linalg.cond(K) > 1e10:              # (numerically) singular: its zero eigenvalues are rounding's
            continue
        ldl = DenseLDL()
        assert tuple(ldl.factor(K)) == eigen_inertia(K)
        b = rng.standard_normal(n)
        bound = 1e-12 * np.linalg.cond(K) * np.abs(K).max() * np.abs(b).max()   # backward stable, cond x eps
        np.testing.assert_allclose(K @ ldl.solve(b), b, atol=bound)


def test_sparse_inertia_of_quasidefinite_matrices_is_the_eigenvalues_signs():
    rng = np.random.default_rng(2)
    for _ in range(50):
        n, m = int(rng.integers(2, 30)), int(rng.integers(1, 20))
        H = scipy.sparse.random(n, n, density=0.2, random_state=rng)
        H = H @ H.T + 0.1 * scipy.sparse.identity(n)
        J = scipy.sparse.random(m, n, density=0.3, random_state=rng)
        K = scipy.sparse.bmat([[H, J.T], [J, -1e-3 * scipy.sparse.identity(m)]], format="csc")
        K.sort_indices()
        assert tuple(SparseLDL().factor(K)) == eigen_inertia(K.toarray()) == (n, m, 0)


def test_inertia_correction_follows_algorithm_ic():
    # W = diag(-0.5, 1, 1), J = (0, 1, 1): the null space of J holds e_0, of curvature -0.5, so
    # delta_w must exceed 0.5: Algorithm IC tries 1e-4, then times 100 -> 1e-2, 1.0
    for sparse in (False, True):
        W = np.diag([-0.5, 1.0, 1.0])
        kkt = KKTMatrix(scipy.sparse.csc_matrix(W) if sparse else W, np.zeros(3), np.array([[0.0, 1.0, 1.0]]), sparse)
        correction = InertiaCorrection(SparseLDL() if sparse else DenseLDL())
        assert correction.factor(kkt, mu=0.1).delta_w == pytest.approx(1.0)
        # the next search starts from a third of the last delta_w, then grows by 8
        assert correction.factor(kkt, mu=0.1).delta_w == pytest.approx(8 / 3)


def test_push_inside_moves_the_start_point_inside_the_bounds():
    x = push_inside(np.array([-1.0, 10.0, 0.5, 1e6, 3.0]), np.array([0.0, -np.inf, 0.0, 1e6, -np.inf]),
                    np.array([np.inf, 5.0, 1e-3, np.inf, np.inf]))
    # kappa_1 max(1, |bound|) = 1e-2 from a single bound; 1e-2 of the gap between two close ones
    np.testing.assert_allclose(x, [0.01, 4.95, 1e-3 - 1e-5, 1e6 + 1e4, 3.0])


def test_a_rank_deficient_jacobian_gets_delta_c_alone():
    # W positive definite, J with a repeated row: the KKT matrix is singular (fewer than m negative
    # eigenvalues, or a zero one); delta_c > 0 alone corrects it, W is left as it is (on the sparse
    # path delta_c is the floor every factorization has)
    W, J = np.diag([2.0, 1.0, 3.0]), np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    for sparse in (False, True):
        kkt = KKTMatrix(scipy.sparse.csc_matrix(W) if sparse else W, np.zeros(3),
                        scipy.sparse.csr_matrix(J) if sparse else J, sparse)
        factored = InertiaCorrection(SparseLDL() if sparse else DenseLDL()).factor(kkt, mu=1e-2)
        assert factored.delta_w == factored.factor_delta_w == 0.0
        assert factored.factor_delta_c == pytest.approx(1e-8 * 1e-2 ** 0.25)
        assert factored.delta_c == (0.0 if sparse else factored.factor_delta_c)
        # the system is solvable: a consistent right-hand side is solved to the refinement's ratio
        rhs = kkt.matvec(np.arange(5.0), factored.factor_delta_w, factored.factor_delta_c)
        assert factored.solve(rhs)[1] <= 1e-10


def test_least_squares_multipliers_are_zero_for_a_rank_deficient_jacobian():
    # IPOPT's rule: no unique least-squares estimate, so y0 = 0; with a full-rank J, the estimate
    # solves min ||g + J^T y|| (here g = (1, 2, 3), J = (1, 1, 1): y = -2). The sparse path factors
    # with delta_c >= 1e-8, whose inertia hides a rank-deficient J: its solves of the unfloored
    # system tell
    from optimizers.barrier_method import BarrierSolver

    class Problem:
        n, lower, upper = 3, np.full(3, -np.inf), np.full(3, np.inf)

        def __init__(self, rows):
            self.rows = np.array(rows, dtype=float)
            self.m = self.rows.shape[0]

        def objective(self, w): return float(w @ [1.0, 2.0, 3.0])
        def gradient(self, w): return np.array([1.0, 2.0, 3.0])
        def constraints(self, w): return self.rows @ w
        def jacobian(self, w): return self.rows
        def hessian(self, w, obj_factor, y): return np.zeros((3, 3))

    def estimate(rows, sparse):
        solver = BarrierSolver(Problem(rows), np.zeros(3), np.zeros(len(rows)), np.zeros(0), np.zeros(0),
                               mu=0.1, tol=1e-8, sparse=sparse)
        return solver.least_squares_multipliers()

    for sparse in (False, True):
        np.testing.assert_allclose(estimate([[1.0, 1.0, 1.0]], sparse), [-2.0])
        np.testing.assert_array_equal(estimate([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0]], sparse), [0.0, 0.0])


def test_sparse_solve_is_the_systems_where_the_floors_stall_refinement():
    # W = diag(0, 1), J = (eps, 1): the zero pivot of w_0 is floored (1e-8 on the diagonal) while K's
    # smallest eigenvalue is about eps^2 = 1e-10, far below the floor: refinement from the floored
    # factorization stalls (it returned the floored system's solution, 10x off), GMRES preconditioned
    # by it solves the system itself. Forward error: cond(K) eps_machine ~ 1e10 * 2.2e-16 ~ 2e-6
    eps = 1e-5
    W, J = np.diag([0.0, 1.0]), np.array([[eps, 1.0]])
    kkt = KKTMatrix(scipy.sparse.csc_matrix(W), np.zeros(2), scipy.sparse.csr_matrix(J), sparse=True)
    factored = InertiaCorrection(SparseLDL()).factor(kkt, mu=1.0)
    assert (factored.delta_w, factored.delta_c) == (0.0, 0.0)
    assert factored.factor_delta_w == factored.factor_delta_c == 1e-8
    rhs = np.ones(3)
    x, ratio = factored.solve(rhs)
    np.testing.assert_allclose(x, np.linalg.solve(np.block([[W, J.T], [J, np.zeros((1, 1))]]), rhs), rtol=1e-5)


def test_linear_variables_without_bounds_on_the_sparse_path():
    # z enters f not at all and the constraint linearly, with no bound: W + Sigma has a zero on its
    # diagonal, where an LDL^T without pivoting can stop; the floor delta_w = 1e-8 mu^(1/4) lets it
    # through. min x^2 + (y - 1)^2 s.t. x + y + z = 3, z = 1: x* = 0.5, y* = 1.5 (KKT: 2x = 2(y - 1))
    A = scipy.sparse.csr_matrix([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    constraint = CanonicalConstraint.linear(A, [3.0, 1.0], [3.0, 1.0])
    result = minimize_ipm(lambda w: w[0] ** 2 + (w[1] - 1) ** 2, np.zeros(3),
                          lambda w: np.array([2 * w[0], 2 * (w[1] - 1), 0.0]),
                          hess=lambda w: scipy.sparse.diags([2.0, 2.0, 0.0], format="csc"),
                          constraints=constraint, sparse=True)
    assert result.sparse
    assert_kkt(result)
    np.testing.assert_allclose(result.x, [0.5, 1.5, 1.0], atol=1e-8)
    assert np.nanmax(result.history["delta_w"]) == 0.0      # the floor only, not Algorithm IC's 1e-4


def hanging_chain(intervals):
    """COPS 3.0's hanging chain (Dolan, Moré & Munson 2004; Cesari 1983): (y_i, u_i, z_i) at N + 1
    nodes, min the trapezoidal integral of y sqrt(1 + u^2) with y' = u, z' = sqrt(1 + u^2), y(0) =
    1, y(1) = 3, z(0) = 0, z(1) = 4; derivatives from autodiff. At the start (u constant) the
    Jacobian is rank-deficient: the z-equations' u-parts are multiples of the y-equations'."""
    import autodiff as ad
    N, h = intervals, 1.0 / intervals

    def split(x):
        nodes = np.reshape(x, (N + 1, 3))
        return nodes[:, 0], nodes[:, 1], nodes[:, 2]

    def trapezoid(v):
        return 0.5 * h * (v[1:] + v[:-1])

    def f(x):
        y, u, _ = split(x)
        return np.sum(trapezoid(y * np.sqrt(1.0 + u ** 2)))

    def c(x):
        y, u, z = split(x)
        return np.concatenate([y[1:] - y[:-1] - trapezoid(u), z[1:] - z[:-1] - trapezoid(np.sqrt(1.0 + u ** 2)),
                               np.stack([y[0] - 1.0, y[-1] - 3.0, z[0], z[-1] - 4.0])])

    gradient, jacobian = ad.grad(f), ad.jacobian(c)

    def hessian(x, obj_factor, v):
        return np.asarray(ad.hessian(lambda p: obj_factor * f(p) + v @ c(p))(x))

    t = np.linspace(0.0, 1.0, N + 1)
    x0 = np.stack([1.0 + 2.0 * t, np.full(N + 1, 2.0), 4.0 * t], axis=1).ravel()
    constraint = CanonicalConstraint(c, lambda x: np.asarray(jacobian(x)), np.zeros(2 * N + 4), np.zeros(2 * N + 4))
    return f, lambda x: np.asarray(gradient(x)), hessian, constraint, x0


def test_hanging_chain_from_its_degenerate_start():
    f, g, hessian, constraint, x0 = hanging_chain(19)
    result = minimize_ipm(f, x0, g, lagrangian_hess=hessian, constraints=constraint)
    assert_kkt(result)
    # IPOPT 3.14 from the same start: f = 5.084579987, 21 iterations. The iterations here are not
    # asserted: from a rank-deficient start they depend on rounding (22 with OpenBLAS's Haswell
    # kernels, 50 with Sandybridge's), the point reached does not
    assert result.fun == pytest.approx(5.084579987, abs=1e-8)


def test_sparse_assembly_equals_the_block_matrix_and_reuses_its_pattern():
    rng = np.random.default_rng(3)
    assembly = SparseAssembly()
    H = scipy.sparse.random(6, 6, density=0.4, random_state=rng)
    H = (H + H.T).tocsc()
    J = scipy.sparse.random(3, 6, density=0.5, random_state=rng).tocsr()
    for scale in (1.0, -2.5):      # a second matrix of the same pattern takes the cached positions
        sigma = scale * rng.random(6)
        K, diagonal = assembly.assemble(scale * H, sigma, scale * J)
        expected = np.block([[scale * H.toarray() + np.diag(sigma), scale * J.toarray().T],
                             [scale * J.toarray(), np.zeros((3, 3))]])
        np.testing.assert_array_equal(K.toarray(), expected)
        np.testing.assert_array_equal(K.data[diagonal], np.diag(expected))


def test_restoration_phase_returns_to_the_regular_phase():
    # Hock & Schittkowski 65 from its published start (-5, 5, 0), outside the bounds: the first
    # line search fails and the restoration phase takes one iteration (IPOPT: 28 iterations);
    # f* = 0.9535288567 (Hock & Schittkowski 1981)
    def f(x):
        return (x[0] - x[1]) ** 2 + (x[0] + x[1] - 10) ** 2 / 9 + (x[2] - 5) ** 2

    def g(x):
        s = 2 * (x[0] + x[1] - 10) / 9
        return np.array([2 * (x[0] - x[1]) + s, -2 * (x[0] - x[1]) + s, 2 * (x[2] - 5)])

    def hessian(x, obj_factor, v):
        h = np.array([[2 + 2 / 9, -2 + 2 / 9, 0.0], [-2 + 2 / 9, 2 + 2 / 9, 0.0], [0.0, 0.0, 2.0]])
        return obj_factor * h - 2 * v[0] * np.eye(3)

    constraint = CanonicalConstraint(lambda x: np.array([48 - x @ x]), lambda x: -2 * x[None, :], [0.0], [np.inf])
    lower, upper = np.array([-4.5, -4.5, -5.0]), np.array([4.5, 4.5, 5.0])
    result = minimize_ipm(f, [-5.0, 5.0, 0.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(lower, upper), mu_strategy="monotone")   # the adaptive rule needs no restoration
    assert_complementary(result, constraint, lower, upper)
    assert np.nansum(result.history["restoration"]) >= 1 and result.history["restoration"][-1] == 0
    # f - f* is about the complementarity gap, seven pairs each at most tol (E_0 <= tol, s_c = 1)
    assert result.fun == pytest.approx(0.9535288567, abs=7 * TOL)


@pytest.mark.parametrize("intervals, mu", [(99, 1e-6), (299, 1.5e-4)])
def test_sparse_inertia_correction_leaves_w_alone_where_the_dense_one_does(intervals, mu):
    # the hanging chain's KKT matrix at its start: J rank-deficient, W = the objective's Hessian.
    # The dense path needs delta_c only; the sparse path's LDL^T without pivoting can miss the
    # eigenvalue -delta_c at the floor's size and then perturbed W (delta_w = 1e-4): it now raises
    # delta_c first
    f, g, hessian, constraint, x0 = hanging_chain(intervals)
    W, J = hessian(x0, 1.0, np.zeros(constraint.m)), constraint.jac(x0)
    for sparse in (False, True):
        kkt = KKTMatrix(scipy.sparse.csc_matrix(W) if sparse else W, np.zeros(x0.size),
                        scipy.sparse.csr_matrix(J) if sparse else J, sparse)
        factored = InertiaCorrection(SparseLDL() if sparse else DenseLDL()).factor(kkt, mu)
        assert factored.delta_w == 0.0


# --- the adaptive barrier update ------------------------------------------------------------------

def test_adaptive_update_reaches_the_same_solutions():
    f, g, hessian, constraint = hs071()
    lower, upper = np.ones(4), np.full(4, 5.0)
    result = minimize_ipm(f, [1.0, 5.0, 5.0, 1.0], g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(lower, upper), mu_strategy="adaptive")
    assert_complementary(result, constraint, lower, upper)
    np.testing.assert_allclose(result.x, [1.0, 4.742999637, 3.821149984, 1.379408293], atol=1e-8)
    target = np.array([-3.0, 0.5, 7.0])
    lower, upper = np.array([-1.0, -1.0, -np.inf]), np.array([1.0, 1.0, 4.0])
    result = minimize_ipm(lambda x: 0.5 * (x - target) @ (x - target), np.zeros(3), lambda x: x - target,
                          hess=lambda x: np.eye(3), bounds=(lower, upper), mu_strategy="adaptive")
    assert_kkt(result)
    np.testing.assert_allclose(result.x, np.clip(target, lower, upper), atol=1e-8)
    result = minimize_ipm(lambda x: x @ x, np.array([1.0]), lambda x: 2 * x, hess=lambda x: 2 * np.eye(1),
                          constraints=square(-np.inf, -1.0), mu_strategy="adaptive")
    assert result.status == Status.INFEASIBLE


def test_quality_function_oracle_finds_the_minimum_of_the_quality():
    # min (x - 2)^2 + (y + 1)^2 in the box [0, 1]^2 from (0.5, 0.5): the oracle's sigma, by eight
    # golden sections on log sigma, is within the last bracket of the quality function's minimum
    from optimizers.barrier_method import BarrierSolver
    from optimizers.barrier_update import AdaptiveUpdate, average_complementarity

    class Box:
        n, m, lower, upper = 2, 0, np.zeros(2), np.ones(2)
        def objective(self, w): return float((w[0] - 2) ** 2 + (w[1] + 1) ** 2)
        def gradient(self, w): return np.array([2 * (w[0] - 2), 2 * (w[1] + 1)])
        def constraints(self, w): return np.zeros(0)
        def jacobian(self, w): return np.zeros((0, 2))
        def hessian(self, w, obj_factor, y): return 2 * obj_factor * np.eye(2)

    update = AdaptiveUpdate()
    solver = BarrierSolver(Box(), np.full(2, 0.5), np.zeros(0), np.ones(2), np.ones(2), mu=0.1, tol=1e-8,
                           update=update)
    update.mu_max = 1e3
    factored = solver.factor()
    base, part = solver.residual(0.0), solver.terms.gradient(solver.w, 1.0)
    affine, _ = solver.solve(factored, -base, np.zeros(0))
    per_mu, _ = solver.solve(factored, -part, np.zeros(0))
    average = average_complementarity(solver)
    sigma = update._oracle(solver, affine, per_mu, average)
    grid = np.exp(np.linspace(np.log(1e-6), np.log(1e2), 2001))
    qualities = [update.quality(solver, affine, per_mu, s * average) for s in grid]
    best = grid[int(np.argmin(qualities))]
    bracket = np.exp(0.618 ** 8 * (np.log(1e2) - np.log(1e-6)))    # the last bracket's width in sigma
    assert best / bracket <= sigma <= best * bracket


def test_adaptive_update_follows_a_changing_active_set_in_fewer_iterations():
    # Bryson-Denham (hessopt.problems, derivatives from autodiff, sparse): the state bound x <= 1/9
    # becomes active along an arc of ~3,000 nodes. The monotone rule's superlinear decrease of mu
    # leaves the iterates far from the new central path and the fraction to the boundary cuts
    # the steps short (61 iterations); the adaptive rule keeps mu near the iterates'
    # complementarity (26). IPOPT: 37 monotone, 34 adaptive
    import autodiff as ad
    from hessopt import problems

    p = problems.constrained("bryson_denham", 9999)
    weights = ad.Variable(np.ones(1 + p.n_constraints))
    hessian = ad.sparse_hessian(lambda x: weights[0] * p.fun(x) + weights[1:] @ p.constraint(x))

    def lagrangian(x, obj_factor, v):
        weights.assign(np.concatenate([[obj_factor], v]))
        return hessian(x)

    gradient = ad.function(ad.grad(p.fun))
    constraint = CanonicalConstraint(ad.function(p.constraint), ad.sparse_jacobian(p.constraint),
                                     p.constraint_lower, p.constraint_upper)
    runs = {mu: minimize_ipm(p.fun, p.x0, lambda x: np.asarray(gradient(x)), lagrangian_hess=lagrangian,
                             constraints=constraint, bounds=(p.lower, p.upper), mu_strategy=mu, keep_iterates=False)
            for mu in ("monotone", "adaptive")}
    for result in runs.values():
        assert_kkt(result)
        assert result.sparse and abs(result.fun - 4.0) <= 1e-5      # the continuous minimum is 4
    assert 1.5 * runs["adaptive"].nit < runs["monotone"].nit


def hock_schittkowski(number):
    """A problem of hessopt.problems' Hock-Schittkowski set with dense derivatives from autodiff."""
    import autodiff as ad
    from hessopt import problems

    p = problems.hock_schittkowski(number)
    gradient, jacobian = ad.grad(p.fun), ad.jacobian(p.constraint)

    def hessian(x, obj_factor, v):
        return np.asarray(ad.hessian(lambda y: obj_factor * p.fun(y) + v @ p.constraint(y))(x))

    constraint = CanonicalConstraint(p.constraint, lambda x: np.asarray(jacobian(x)), p.constraint_lower,
                                     p.constraint_upper)
    return p, lambda x: np.asarray(gradient(x)), hessian, constraint


@pytest.mark.parametrize("number, x0, mu_strategy", [
    (59, [-4.900272829589923, 16.74435449970238], "adaptive"),
    (56, [0.9399443735411303, 1.3479318777924068, -2.3417001212302253, 1.7622634324727195, -0.35796700044118746,
          -1.2614245547608134, 2.251117487428112], "monotone")])
def test_the_restoration_phase_converges_to_what_the_violation_allows(number, x0, mu_strategy):
    # From these starts (the published ones perturbed by rng(0) and rng(1) normals times 1 + |x0|) the
    # restoration phase runs while mu is large; its proximity term zeta/2 ||D (w - w_R)||^2 with
    # zeta = sqrt(mu) frozen at the phase's start held it at a feasible point that its
    # filter would not take (HS59: reported locally infeasible, at violation 0) or short of one
    # (HS56: a tiny step at the smallest mu). With zeta following the phase's own mu, as IPOPT's,
    # both runs succeed, at HS59's and HS56's published minima
    p, g, hessian, constraint = hock_schittkowski(number)
    result = minimize_ipm(p.fun, np.array(x0), g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(p.lower, p.upper), mu_strategy=mu_strategy)
    assert_kkt(result)
    assert result.fun == pytest.approx(p.fmin, abs=1e-6 * (1 + abs(p.fmin)))


def reduced_hessian_eigenvalues(hessian: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The eigenvalues of the Hessian on the null space of ``rows`` (an SVD's, scipy's rank rule)."""
    null = scipy.linalg.null_space(rows)
    return np.linalg.eigvalsh(null.T @ hessian @ null)


def test_soft_restoration_takes_the_step_the_filter_refuses_at_a_feasible_point():
    # HS55 with the adaptive update: at iteration 6 the iterate is feasible and no step passes the
    # filter's tests, where the restoration phase cannot help (the run ended with status 2); the
    # step that reduces the barrier problem's error is taken instead (IPOPT's soft restoration),
    # and the run reaches a KKT point, f = 6.8058 (IPOPT's adaptive run ends near it), which is a
    # saddle point (test_a_saddle_point_that_passes_the_kkt_test_is_left_along_its_negative_curvature):
    # the second-order check steps off it, and the run ends at the minimum
    p, g, hessian, constraint = hock_schittkowski(55)
    result = minimize_ipm(p.fun, np.array(p.x0), g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(p.lower, p.upper), mu_strategy="adaptive")
    assert_complementary(result, constraint, p.lower, p.upper)
    assert result.status == Status.SUCCESS and "after 1 escape(s)" in result.second_order


def test_a_saddle_point_that_passes_the_kkt_test_is_left_along_its_negative_curvature():
    # HS55, adaptive update: six linear equalities of rank 5 and no active bound at the KKT point
    # f = 6.8058 the run reached (and reported as a success), where the Hessian has curvature -0.42
    # on the null space. The check (least-squares multipliers, SVD null space) finds it, and the
    # step along it leads to the published minimum f* = 19/3, a point where the reduced Hessian of
    # the problem (f's: the constraints are linear) on the active constraints and bounds is
    # positive semidefinite
    p, g, hessian, constraint = hock_schittkowski(55)
    result = minimize_ipm(p.fun, np.array(p.x0), g, lagrangian_hess=hessian, constraints=constraint,
                          bounds=(p.lower, p.upper), mu_strategy="adaptive")
    assert_complementary(result, constraint, p.lower, p.upper)
    assert result.success and result.fun == pytest.approx(19 / 3, abs=TOL * 19 / 3)
    at_bound = (result.x - p.lower <= np.sqrt(TOL)) | (p.upper - result.x <= np.sqrt(TOL))
    rows = np.vstack([constraint.jac(result.x), np.eye(6)[at_bound]])
    h = hessian(result.x, 1.0, np.zeros(constraint.m))
    assert np.all(reduced_hessian_eigenvalues(h, rows) >= -np.sqrt(EPS) * np.abs(h).max())


def test_a_minimum_where_licq_fails_passes_the_second_order_check():
    # HS13: min (x_0 - 2)^2 + x_1^2 s.t. (1 - x_0)^3 - x_1 >= 0, x >= 0; its minimum (1, 0) is a cusp
    # where the constraint's and x_1 >= 0's gradients are parallel (LICQ fails, no multipliers
    # exist), and the solver's multipliers grow without bound (about 7e15). With them the
    # Lagrangian's Hessian has curvature about -3e8 along x_0, the null space of the active rows, and
    # a check with them would call the minimum a saddle; the check's least-squares multipliers
    # (of minimum norm, the rank cut at cond x eps) leave f's curvature 2 there
    p, g, hessian, constraint = hock_schittkowski(13)
    for mu_strategy in ("adaptive", "monotone"):
        result = minimize_ipm(p.fun, np.array(p.x0), g, lagrangian_hess=hessian, constraints=constraint,
                              bounds=(p.lower, p.upper), mu_strategy=mu_strategy)
        assert result.success and result.second_order.startswith("passed")
        assert result.fun == pytest.approx(1.0, abs=1e-6) and result.x == pytest.approx([1.0, 0.0], abs=1e-6)
    rows = np.vstack([[0.0, 1.0], [0.0, -1.0]])      # the active rows at (1, 0)
    solvers = hessian(result.x, 1.0, result.v[0])
    assert reduced_hessian_eigenvalues(solvers, rows)[0] < -1e3


@pytest.mark.parametrize("mu_strategy", ["adaptive", "monotone"])
@pytest.mark.parametrize("width", [1e-2, 1.0, 1e3])
def test_a_saddle_at_the_start_is_left_to_the_minimum_on_the_bounds(mu_strategy, width):
    # min x_0^2 - x_1^2 s.t. x_0 = 0, |x_1| <= width: x0 = (0.3, 0) reaches the saddle (0, 0), a KKT
    # point (the run reported success there); the minima are (0, +-width), f* = -width^2
    f = lambda x: x[0] ** 2 - x[1] ** 2
    result = minimize_ipm(f, [0.3, 0.0], lambda x: np.array([2 * x[0], -2 * x[1]]),
                          hess=lambda x: np.diag([2.0, -2.0]),
                          constraints=CanonicalConstraint.linear([[1.0, 0.0]], 0.0, 0.0),
                          bounds=(np.array([-1.0, -width]), np.array([1.0, width])), mu_strategy=mu_strategy)
    assert_kkt(result)
    # f - f* is the complementarity gap, at most tol max(1, |f|) (the success test)
    assert -width ** 2 <= result.fun <= -width ** 2 + TOL * max(1.0, width ** 2)
    assert result.second_order == "passed (the null space is {0}; after 1 escape(s) from saddle points)"


def test_a_saddle_point_that_cannot_be_left_ends_the_run_not_a_minimum():
    # min 1e8 + x_0^2 - x_1^2 s.t. x_0 = 0, |x_1| <= 1e-5, tol 1e-12: (0, 0) passes the KKT test, the
    # bounds are inactive (slack 1e-5 above sqrt(tol), multipliers about mu / 1e-5), and the
    # curvature -2 is clear; but f falls by at most 1e-10 in the box, below the rounding of 1e8
    # (1.5e-8): no step lowers f at working precision, and the run ends there, status 5, not success
    f = lambda x: 1e8 + x[0] ** 2 - x[1] ** 2
    result = minimize_ipm(f, [0.3, 0.0], lambda x: np.array([2 * x[0], -2 * x[1]]),
                          hess=lambda x: np.diag([2.0, -2.0]),
                          constraints=CanonicalConstraint.linear([[1.0, 0.0]], 0.0, 0.0),
                          bounds=(np.array([-1.0, -1e-5]), np.array([1.0, 1e-5])), gtol=1e-12)
    assert result.status == Status.NOT_A_MINIMUM and not result.success
    assert result.message.startswith("Stopped at a saddle point: the KKT test passed, but the Hessian of the "
                                     "Lagrangian has clearly negative curvature (-2.0e+00")
    assert "no step along it lowers the Lagrangian" in result.message
    np.testing.assert_array_equal(result.x, [0.0, 0.0])


def test_success_means_f_is_within_tol_of_the_minimum_whatever_the_number_of_bounds():
    # min 1/2 ||x - t||^2 in [0, 1]^20000: f* = 1/2 ||clip(t) - t||^2. E_0 <= tol bounds each of the
    # 40,000 complementarity terms by tol; their sum, this convex problem's duality gap, left
    # f - f* = 3.3e-5 > tol f* = 2.2e-5. Success now also asks the sum to be at most tol max(1, |f|)
    rng = np.random.default_rng(0)
    n = 20000
    t = rng.uniform(-1.0, 2.0, n)
    f_star = 0.5 * float((np.clip(t, 0.0, 1.0) - t) @ (np.clip(t, 0.0, 1.0) - t))
    result = minimize_ipm(lambda x: 0.5 * float((x - t) @ (x - t)), np.full(n, 0.5), lambda x: x - t,
                          hess=lambda x: scipy.sparse.identity(n, format="csc"), bounds=(np.zeros(n), np.ones(n)),
                          keep_iterates=False)
    assert_kkt(result)
    assert 0.0 <= result.fun - f_star <= TOL * f_star


def test_a_hessian_turning_nonfinite_stops_the_run_truthfully():
    """No direction exists where the Lagrangian's Hessian is NaN: status 3 with a message saying
    so, at the last iterate (it ended in the restoration phase or the line search before)."""
    calls = []

    def hess(x):
        calls.append(1)
        return np.eye(2) * 2 if len(calls) <= 2 else np.full((2, 2), np.nan)
    constraint = CanonicalConstraint(lambda x: np.array([x @ x]), lambda x: 2 * x[None, :], [1.0], [4.0])
    result = minimize_ipm(lambda x: (x - 3) @ (x - 3), [1.0, 0.5], lambda x: 2 * (x - 3), hess=hess,
                          constraints=constraint)
    assert result.status == 3 and not result.success and result.nit == 2
    assert "Hessian of the Lagrangian is not finite" in result.message
