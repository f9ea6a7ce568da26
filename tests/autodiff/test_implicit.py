"""Implicit derivatives of a solver's solution (custom_root, custom_fixed_point, fixed_point) and the
linear solves behind them (autodiff.linear_solve).

References: closed forms (ridge regression's weights in the strength and their derivatives, a
fixed point's (I - D W)^-1 D, the implicit derivatives of a cubic's root) and central differences of
re-solved problems in float64. Tolerances: a Krylov solve that stops at ||r|| <= rtol ||b|| leaves
a relative error of at most cond(A) rtol in its solution; a central difference with step h errs by
O(h^2) (truncation) plus O(eps / h) (rounding), both stated where used.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from _ridge import relative_error, ridge_derivative

import autodiff as ad
from autodiff.check import central_differences
from autodiff.linear_solve import solve_cg, solve_gmres, solve_lu

EPS = np.finfo(float).eps

# --- ridge regression: w(lam) = (X^T X + lam I)^-1 X^T y -------------------------------------------

_rng = np.random.default_rng(32)
N_FEATURES = 6
_Q = np.linalg.qr(_rng.normal(size=(40, N_FEATURES)))[0]
X = _Q * np.linspace(1.0, 2.0, N_FEATURES)          # singular values 1..2: X^T X has eigenvalues 1..4
Y = _rng.normal(size=40)
LAM = 0.5
M = X.T @ X + LAM * np.eye(N_FEATURES)              # cond(M) = 4.5 / 1.5 = 3
CG_RTOL = 1e-13


def ridge_loss(w, lam):
    return 0.5 * np.sum((X @ w - Y) ** 2) + 0.5 * lam * np.sum(w ** 2)


@ad.custom_root(ad.grad(ridge_loss), solve=functools.partial(solve_cg, rtol=CG_RTOL))
def ridge(w0, lam):
    """The minimizer by a direct solve (it knows nothing of differentiation)."""
    return np.linalg.solve(X.T @ X + lam * np.eye(N_FEATURES), X.T @ Y)


def ridge_weights(lam):
    return ridge(np.zeros(N_FEATURES), lam)


closed_form = functools.partial(ridge_derivative, X, Y)   # closed_form(lam, order)


def test_ridge_tolerance_comes_from_the_solve():
    # reverse mode solves M u = e_i per entry: each entry errs by cond ||M^-1|| ||w|| rtol, and
    # ||dw/dlam|| >= ||w|| / ||M||, so the vector's relative error is at most sqrt(n) cond^2 rtol
    # (forward mode: cond rtol); plus w's own error from LU, about cond eps.
    cond = np.linalg.cond(M)
    assert cond < 3.0 + 1e-9
    assert np.sqrt(N_FEATURES) * cond ** 2 * CG_RTOL + 10 * cond * EPS < 1e-10


@pytest.mark.parametrize("mode", ["jacobian", "jvp", "vjp"])
def test_ridge_first_derivative_is_the_closed_form(mode):
    derivative = {"jacobian": lambda: ad.jacobian(ridge_weights)(LAM),
                  "jvp": lambda: ad.jvp(ridge_weights, (LAM,), (1.0,))[1],
                  "vjp": lambda: ad.vjp(ridge_weights, LAM)[1](np.eye(N_FEATURES))[0]}[mode]()
    assert relative_error(derivative, closed_form(LAM, 1)) < 1e-10


SECOND_DERIVATIVES = {
    "reverse over reverse": lambda: ad.jacobian(ad.jacobian(ridge_weights))(LAM),
    "forward over forward": lambda: ad.jvp(lambda lam: ad.jvp(ridge_weights, (lam,), (1.0,))[1], (LAM,), (1.0,))[1],
    "reverse over forward": lambda: ad.jacobian(lambda lam: ad.jvp(ridge_weights, (lam,), (1.0,))[1])(LAM),
    "forward over reverse": lambda: ad.jvp(ad.jacobian(ridge_weights), (LAM,), (1.0,))[1],
}


@pytest.mark.parametrize("compose", SECOND_DERIVATIVES.values(), ids=SECOND_DERIVATIVES.keys())
def test_ridge_second_derivative_is_the_closed_form_in_every_composition(compose):
    second = compose()
    assert relative_error(second, closed_form(LAM, 2)) < 1e-10
    # and central differences of the re-solved first derivative: h = 1e-4 gives a truncation error
    # of h^2 / 6 |w'''| (relative ~ 1e-9 here) and a rounding error of eps / h ~ 2e-12
    differences = central_differences(lambda lam: closed_form(float(lam), 1), np.array(LAM), 1e-4)
    assert relative_error(second, differences) < 1e-7


def test_ridge_third_derivative_is_the_closed_form():
    third = ad.jacobian(ad.jacobian(ad.jacobian(ridge_weights)))(LAM)
    assert relative_error(third, closed_form(LAM, 3)) < 1e-10


def test_a_hypergradient_and_its_hessian_over_two_strengths():
    # validation loss of w(lam_1 + lam_2): d/dlam_i all equal, the Hessian all-equal entries
    X_val, y_val = _rng.normal(size=(15, N_FEATURES)), _rng.normal(size=15)

    def validation(lams):
        w = ridge_weights(lams[0] + lams[1])
        return 0.5 * np.sum((X_val @ w - y_val) ** 2)

    lams = np.array([0.2, 0.3])
    w, d1, d2 = (closed_form(0.5, k) for k in range(3))
    residual = X_val @ w - y_val
    gradient = residual @ X_val @ d1
    curvature = np.sum((X_val @ d1) ** 2) + residual @ X_val @ d2
    np.testing.assert_allclose(ad.grad(validation)(lams), [gradient, gradient], rtol=1e-10)
    np.testing.assert_allclose(ad.hessian(validation)(lams), np.full((2, 2), curvature), rtol=1e-9)
    op = ad.hessian_operator(validation, lams)        # the gradient recorded once, products replayed
    np.testing.assert_allclose(op.to_dense(), np.full((2, 2), curvature), rtol=1e-9)


def test_a_solution_that_is_a_pytree_gets_derivatives_in_its_structure():
    # ridge with an unpenalized intercept: z = (w, b) = (A^T A + lam D)^-1 A^T y, D = diag(1, .., 1, 0),
    # so dz/dlam = -(A^T A + lam D)^-1 D z
    def loss(params, lam):
        return 0.5 * np.sum((X @ params["w"] + params["b"] - Y) ** 2) + 0.5 * lam * np.sum(params["w"] ** 2)

    A = np.hstack([X, np.ones((len(Y), 1))])
    D = np.diag([1.0] * N_FEATURES + [0.0])

    @ad.custom_root(ad.grad(loss), solve="lu")
    def fit(params0, lam):
        z = np.linalg.solve(A.T @ A + lam * D, A.T @ Y)
        return {"w": z[:-1], "b": z[-1]}

    jacobian = ad.jacobian(lambda lam: fit({"w": np.zeros(N_FEATURES), "b": 0.0}, lam))(LAM)
    z = np.linalg.solve(A.T @ A + LAM * D, A.T @ Y)
    exact = -np.linalg.solve(A.T @ A + LAM * D, D @ z)
    assert set(jacobian) == {"w", "b"}
    np.testing.assert_allclose(jacobian["w"], exact[:-1], rtol=1e-12)
    np.testing.assert_allclose(jacobian["b"], exact[-1], rtol=1e-12, atol=1e-15)


# --- a fixed point: x = tanh(W x + theta) ---------------------------------------------------------

N_STATE = 8
_W = _rng.normal(size=(N_STATE, N_STATE))
W = 0.5 * _W / np.linalg.norm(_W, 2)                # ||W|| = 1/2: a contraction (|tanh'| <= 1)
THETA = _rng.normal(size=N_STATE)
GMRES = functools.partial(solve_gmres, rtol=1e-13)


def layer(x, theta):
    return np.tanh(W @ x + theta)


def equilibrium(theta):
    return ad.fixed_point(layer, np.zeros(N_STATE), theta, tol=1e-15, solve=GMRES)


def test_fixed_point_jacobian_in_both_modes_is_the_closed_form_and_the_differences():
    x = equilibrium(THETA)
    np.testing.assert_allclose(x, layer(x, THETA), rtol=0, atol=1e-15)
    D = np.diag(1 - x ** 2)
    exact = np.linalg.solve(np.eye(N_STATE) - D @ W, D)     # cond(I - D W) <= 1.5 / 0.5 = 3
    reverse = ad.jacobian(equilibrium)(THETA)
    forward = np.stack([ad.jvp(equilibrium, (THETA,), (e,))[1] for e in np.eye(N_STATE)], axis=1)
    for jacobian in (reverse, forward):
        assert relative_error(jacobian, exact) < 1e-11      # n cond^2 rtol + cond eps
    # re-solved problems, h = 1e-6: truncation h^2 |x'''| ~ 1e-12, rounding eps / h ~ 1e-10
    np.testing.assert_allclose(reverse, central_differences(equilibrium, THETA, 1e-6), rtol=0, atol=1e-9)


def test_a_fixed_point_at_zero_passes_the_check_with_xatol_zero():
    # theta = 0: x* = 0 exactly, F(0) = 0 exactly, so the Newton step is 0 <= xtol ||x*|| + 0
    assert np.all(equilibrium(np.zeros(N_STATE)) == 0)
    jacobian = ad.jacobian(equilibrium)(np.zeros(N_STATE))            # D = I there: (I - W)^-1
    assert relative_error(jacobian, np.linalg.inv(np.eye(N_STATE) - W)) < 1e-11


def test_fixed_point_second_derivatives_match_differences_of_the_gradient():
    def energy(theta):
        return np.sum(equilibrium(theta) ** 3)

    hessian = ad.hessian(energy)(THETA)
    np.testing.assert_allclose(hessian, hessian.T, rtol=0, atol=1e-13)
    # the gradient itself matches central differences of re-solved values (h = 1e-6: ~1e-9)
    np.testing.assert_allclose(ad.grad(energy)(THETA), central_differences(energy, THETA, 1e-6), atol=1e-8)
    # h = 1e-5 on the gradient: truncation ~1e-10, rounding ~1e-11
    np.testing.assert_allclose(hessian, central_differences(ad.grad(energy), THETA, 1e-5), atol=1e-8)
    forward_over_reverse = ad.jvp(ad.grad(energy), (THETA,), (np.ones(N_STATE),))[1]
    np.testing.assert_allclose(forward_over_reverse, hessian @ np.ones(N_STATE), rtol=1e-11, atol=1e-13)


def test_fixed_point_parameters_as_a_pytree_give_a_pytree_of_derivatives():
    def tree_layer(x, params):
        return np.tanh(params["W"] @ x + params["b"])

    params = {"W": W, "b": THETA}
    gradient = ad.grad(lambda p: np.sum(ad.fixed_point(tree_layer, np.zeros(N_STATE), p, tol=1e-15)))(params)
    assert set(gradient) == {"W", "b"} and gradient["W"].shape == W.shape
    x = equilibrium(THETA)
    D = np.diag(1 - x ** 2)
    u = np.linalg.solve((np.eye(N_STATE) - D @ W).T, np.ones(N_STATE))    # d sum(x) / d(W x + b) = D^T u
    np.testing.assert_allclose(gradient["b"], D @ u, rtol=1e-9)
    np.testing.assert_allclose(gradient["W"], np.outer(D @ u, x), rtol=1e-9)


# --- a root finder: Newton on x^3 + a x - b = 0 ----------------------------------------------------

def cubic(x, a, b):
    return x ** 3 + a * x - b


@ad.custom_root(cubic)
def newton(x, a, b):
    for _ in range(100):
        x = x - cubic(x, a, b) / (3 * x ** 2 + a)
    return x


def test_newton_root_in_reverse_and_forward_mode_is_the_implicit_closed_form():
    a, b = 2.0, 5.0
    x = newton(1.0, a, b)
    slope = 3 * x ** 2 + a
    dx_da, dx_db = -x / slope, 1.0 / slope
    assert abs(cubic(x, a, b)) < 1e-14
    np.testing.assert_allclose(ad.grad(newton, argnums=(1, 2))(1.0, a, b), (dx_da, dx_db), rtol=1e-13)
    np.testing.assert_allclose(ad.jvp(lambda a, b: newton(1.0, a, b), (a, b), (1.0, 0.0))[1], dx_da, rtol=1e-13)
    np.testing.assert_allclose(ad.jvp(lambda a, b: newton(1.0, a, b), (a, b), (0.0, 1.0))[1], dx_db, rtol=1e-13)
    # second derivatives, from differentiating slope x_a + x = 0 and slope x_b = 1 again
    x_aa = -(6 * x * dx_da ** 2 + 2 * dx_da) / slope
    x_ab = -(dx_db + 6 * x * dx_da * dx_db) / slope
    x_bb = -6 * x * dx_db ** 3
    exact = np.array([[x_aa, x_ab], [x_ab, x_bb]])
    np.testing.assert_allclose(ad.grad(ad.grad(newton, argnums=2), argnums=2)(1.0, a, b), x_bb, rtol=1e-12)
    hessian = ad.hessian(lambda ab: newton(1.0, ab[0], ab[1]))(np.array([a, b]))
    np.testing.assert_allclose(hessian, exact, rtol=1e-12)
    # and central differences of re-solved roots' slopes (h = 1e-4: truncation ~1e-9, rounding ~1e-12)
    slopes = lambda ab: np.array([-newton(1.0, *ab) / (3 * newton(1.0, *ab) ** 2 + ab[0]),  # noqa: E731
                                  1 / (3 * newton(1.0, *ab) ** 2 + ab[0])])
    np.testing.assert_allclose(hessian, central_differences(slopes, np.array([a, b]), 1e-4), rtol=1e-7)


def test_the_initial_guess_gets_zero_derivatives_and_plain_calls_run_the_solver_alone():
    calls = []

    @ad.custom_root(cubic)
    def counted(x, a, b):
        calls.append(isinstance(x, ad.Tensor) or isinstance(b, ad.Tensor))
        return newton.__wrapped__(x, a, b)

    assert float(ad.grad(counted)(1.0, 2.0, 5.0)) == 0.0
    assert float(ad.grad(counted, argnums=2)(1.0, 2.0, 5.0)) > 0.0
    assert calls == [False, False]                       # on plain values, never Tensors
    assert type(counted(1.0, 2.0, 5.0)) is float         # no Tensor in, the solver's own result out


def test_has_aux_returns_the_solvers_aux_as_computed():
    @ad.custom_root(cubic, has_aux=True)
    def with_iterations(x, a, b):
        for k in range(100):
            step = cubic(x, a, b) / (3 * x ** 2 + a)
            x = x - step
            if abs(step) < 1e-15:
                return x, {"iterations": k + 1}
        return x, {"iterations": 100}

    (x, aux), gradient = ad.value_and_grad(lambda b: with_iterations(1.0, 2.0, b), has_aux=True)(5.0)
    assert aux == with_iterations(1.0, 2.0, 5.0)[1] and 3 <= aux["iterations"] < 100
    np.testing.assert_allclose(gradient, 1 / (3 * x ** 2 + 2.0), rtol=1e-13)


# --- refusals: never a wrong value ----------------------------------------------------------------

def stopped_early(delta):
    """The cubic's root moved by ``delta`` times xtol |x|: Newton's step there is about that far."""
    @ad.custom_root(cubic, solve="lu")
    def solver(x, a, b):
        root = newton.__wrapped__(x, a, b)
        return root * (1 + delta * 1e-6)
    return solver


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_solution_that_is_not_one_is_refused_and_one_within_xtol_is_differentiated(mode):
    differentiate = {"grad": lambda solver: ad.grad(solver, argnums=2)(1.0, 2.0, 5.0),
                     "jvp": lambda solver: ad.jvp(lambda b: solver(1.0, 2.0, b), (5.0,), (1.0,))[1]}[mode]
    # the check: ||(dF/dx)^-1 F(x, args)|| <= xtol ||x|| (xatol 0), the Newton step ~ delta xtol |x|
    with pytest.raises(ValueError, match=r"solver did not converge.*Newton step"):
        differentiate(stopped_early(3.0))
    x = newton(1.0, 2.0, 5.0)
    np.testing.assert_allclose(differentiate(stopped_early(0.3)), 1 / (3 * x ** 2 + 2.0), rtol=1e-6)


def test_a_fixed_point_iteration_stopped_early_is_refused():
    @ad.custom_fixed_point(layer)
    def three_steps(x, theta):
        for _ in range(3):
            x = layer(x, theta)
        return x

    three_steps(np.zeros(N_STATE), THETA)                # plain values: the solver's business
    with pytest.raises(ValueError, match="did not converge"):
        ad.jacobian(lambda t: three_steps(np.zeros(N_STATE), t))(THETA)


def test_a_non_isolated_root_is_refused_by_its_singular_linear_system():
    @ad.custom_root(lambda x, a: (x - a) ** 2)       # a double root: dF/dx = 0 there
    def double_root(x, a):
        return a

    with pytest.raises(RuntimeError, match=r"could not be solved.*not isolated"):
        ad.grad(lambda a: double_root(0.0, a))(1.5)


def test_a_tracked_value_read_from_a_closure_is_refused():
    def solve_with_closure(c):
        @ad.custom_root(lambda x, a: x - a * c)
        def solver(x, a):
            return a * c.numpy()
        return solver(0.0, 2.0)

    with pytest.raises(TypeError, match="not among the arguments"):
        ad.grad(solve_with_closure)(3.0)


def test_an_optimality_condition_of_another_size_is_refused():
    @ad.custom_root(lambda x, a: np.stack([x[0] - a, x[1] - a, x[0] - x[1]]))
    def solver(x, a):
        return np.array([a, a])

    with pytest.raises(ValueError, match="3 values for a solution of 2"):
        ad.jacobian(lambda a: solver(np.zeros(2), a))(1.0)


def test_a_non_converging_fixed_point_iteration_raises():
    with pytest.raises(RuntimeError, match="no fixed point"):
        ad.fixed_point(lambda x, a: 2 * x + a, 1.0, 1.0, maxiter=50)


# --- the linear solves and their settings ---------------------------------------------------------

@pytest.mark.parametrize("solve", ["gmres", "cg", "lu", functools.partial(solve_gmres, restart=2)])
def test_every_solve_gives_the_ridge_derivative(solve):
    solver = ad.custom_root(ad.grad(ridge_loss), solve=solve)(ridge.__wrapped__)
    derivative = ad.jacobian(lambda lam: solver(np.zeros(N_FEATURES), lam))(LAM)
    # default rtol 1e-10: sqrt(n) cond^2 rtol = 2.2e-9
    assert relative_error(derivative, closed_form(LAM, 1)) < 3e-9


def test_a_users_solve_is_called_with_one_right_hand_side_at_a_time():
    shapes = []

    def dense(matvec, b):           # jaxopt's form: solve(matvec, b), b of shape (n,)
        shapes.append(np.shape(b))
        return np.linalg.solve(np.stack([matvec(e) for e in np.eye(len(b))], axis=1), b)

    solver = ad.custom_root(ad.grad(ridge_loss), solve=dense)(ridge.__wrapped__)
    derivative = ad.jacobian(lambda lam: solver(np.zeros(N_FEATURES), lam))(LAM)
    assert relative_error(derivative, closed_form(LAM, 1)) < 1e-12
    assert set(shapes) == {(N_FEATURES,)} and len(shapes) == 1 + N_FEATURES   # the check, then one per row


def test_the_traced_gradient_of_a_solve_replays_the_solves():
    def validation(lam):
        return np.sum(ridge_weights(lam) ** 2)

    traced = ad.function(ad.grad(validation))
    for lam in (0.5, 0.7, 1.1):      # arrays are the program's inputs (a Python float is static)
        np.testing.assert_allclose(traced(np.array(lam)), 2 * closed_form(lam, 0) @ closed_form(lam, 1), rtol=1e-10)
    assert traced.traces == 1


_A = _rng.normal(size=(7, 7)) + 3 * np.eye(7)
_SPD = _A @ _A.T + np.eye(7)


@pytest.mark.parametrize("solve, matrix", [(solve_cg, _SPD), (solve_gmres, _A), (solve_lu, _A),
                                           (functools.partial(solve_gmres, restart=3), _A)],
                         ids=["cg", "gmres", "lu", "gmres(3)"])
def test_batched_solves_equal_looped_ones_and_numpy(solve, matrix):
    B = _rng.normal(size=(2, 3, 7))
    matvec = lambda V: V @ matrix.T   # noqa: E731
    batched = solve(matvec, B)
    looped = np.stack([solve(matvec, b) for b in B.reshape(-1, 7)]).reshape(B.shape)
    exact = np.linalg.solve(matrix, B.reshape(-1, 7).T).T.reshape(B.shape)
    cond = np.linalg.cond(matrix)
    assert np.abs(batched - exact).max() <= cond * 1e-10 * np.abs(exact).max()
    assert np.abs(looped - exact).max() <= cond * 1e-10 * np.abs(exact).max()


def test_solves_refuse_what_they_cannot_solve():
    indefinite = np.diag([1.0, -1.0, 2.0])
    with pytest.raises(RuntimeError, match="not positive definite"):
        solve_cg(lambda V: V @ indefinite.T, np.ones(3))
    np.testing.assert_allclose(solve_gmres(lambda V: V @ indefinite.T, np.ones(3)), [1.0, -1.0, 0.5])
    singular = np.diag([1.0, 2.0, 0.0])
    with pytest.raises(RuntimeError, match="residual"):
        solve_gmres(lambda V: V @ singular.T, np.ones(3))
    with pytest.raises(RuntimeError, match="singular"):
        solve_lu(lambda V: V @ singular.T, np.ones(3))
    np.testing.assert_allclose(solve_gmres(lambda V: V @ singular.T, np.array([1.0, 1.0, 0.0])), [1.0, 0.5, 0.0])


def test_a_traced_solve_with_aux_is_refused_since_a_replay_could_not_recompute_it():
    @ad.custom_root(cubic, has_aux=True)
    def with_note(x, a, b):
        return newton.__wrapped__(x, a, b), "converged"

    assert with_note(1.0, 2.0, ad.constant(5.0))[1] == "converged"
    with pytest.raises(ad.UntraceableError, match="custom_root's aux"):
        ad.function(lambda b: with_note(1.0, 2.0, b)[0])(np.array(5.0))
