"""Derivatives of minimize's and least_squares' solutions (hessopt._implicit): the transforms see
through a solve to what the objective closes over or gets in ``args``.

References: closed forms (ridge regression's minimizer in the strength and its derivatives; a box
quadratic's solution on its active set; linear least squares' pseudo-inverse), central differences
of re-solved problems, and JAX when it is installed. Tolerances: the solution is off the exact one
by at most ||H^-1|| sqrt(n) gtol (the stopping test ||g||_inf <= gtol), which moves a derivative
that depends on it by about ||H^-1|| times that; the solves with the Hessian are Cholesky (up to 200
variables: cond eps) or CG to ||r|| <= 1e-10 ||b|| (a relative error of cond 1e-10); a central
difference with step h errs by h^2 / 6 |f'''| plus the solutions' errors divided by h.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from _ridge import relative_error, ridge_derivative

import autodiff as ad
import hessopt

EPS = np.finfo(float).eps
GTOL = 1e-10
RIDGE_GTOL = 1e-12     # ridge is held to 1e-10 (the figure): the bound below needs gtol <= 1e-12

# --- ridge regression: w(lam) = (X^T X + lam I)^-1 X^T y, cond(M) = 3 -----------------------------

_rng = np.random.default_rng(32)
N = 6
X = np.linalg.qr(_rng.normal(size=(40, N)))[0] * np.linspace(1.0, 2.0, N)   # X^T X: eigenvalues 1..4
Y = _rng.normal(size=40)
LAM = 0.5


def ridge_loss(w, lam):
    return 0.5 * np.sum((X @ w - Y) ** 2) + 0.5 * lam * np.sum(w ** 2)


def ridge_solution(lam):
    """The minimizer by hessopt.minimize, the strength reached through a closure."""
    return hessopt.minimize(lambda w: ridge_loss(w, lam), np.zeros(N), options={"gtol": RIDGE_GTOL}).x


closed_form = functools.partial(ridge_derivative, X, Y)   # closed_form(lam, order)


# ||M^-1|| = 1 / 1.5: the solution errs by at most sqrt(N) RIDGE_GTOL / 1.5 ~ 1.6e-12 absolute; the
# k-th derivative is k! M^-k applied to it, and |w| ~ 1, so the relative errors stay below ~1e-11
# (Cholesky adds cond eps). The runs stop far below gtol on a quadratic (Newton-CG's last step is exact), so
# the observed errors are ~1e-15; the bound is what the stopping test guarantees.
FIRST_ORDER_RTOL = 1e-10


@pytest.mark.parametrize("mode", ["jacobian", "jvp", "vjp"])
def test_ridge_derivative_in_the_strength_is_the_closed_form(mode):
    derivative = {"jacobian": lambda: ad.jacobian(ridge_solution)(LAM),
                  "jvp": lambda: ad.jvp(ridge_solution, (LAM,), (1.0,))[1],
                  "vjp": lambda: ad.vjp(ridge_solution, LAM)[1](np.eye(N))[0]}[mode]()
    assert relative_error(derivative, closed_form(LAM, 1)) < FIRST_ORDER_RTOL


def test_the_strength_may_be_an_argument():
    solution = lambda lam: hessopt.minimize(ridge_loss, np.zeros(N), args=(lam,), options={"gtol": RIDGE_GTOL}).x  # noqa: E731
    assert relative_error(ad.jacobian(solution)(LAM), closed_form(LAM, 1)) < FIRST_ORDER_RTOL


SECOND_DERIVATIVES = {
    "reverse over reverse": lambda: ad.jacobian(ad.jacobian(ridge_solution))(LAM),
    "forward over reverse": lambda: ad.jvp(ad.jacobian(ridge_solution), (LAM,), (1.0,))[1],
    "reverse over forward": lambda: ad.jacobian(lambda lam: ad.jvp(ridge_solution, (lam,), (1.0,))[1])(LAM),
}


@pytest.mark.parametrize("compose", SECOND_DERIVATIVES.values(), ids=SECOND_DERIVATIVES.keys())
def test_ridge_second_derivative_is_the_closed_form_and_the_differences(compose):
    second = compose()
    assert relative_error(second, closed_form(LAM, 2)) < FIRST_ORDER_RTOL
    # central differences of the first derivative of re-solved problems, h = 1e-3: truncation
    # h^2 / 6 |w''''| / |w''| ~ 1e-7 relative (|M^-1| <= 2/3), plus 2 x 1e-9 |w'| / h ~ 1e-6 from the solutions
    h = 1e-3
    differences = (ad.jacobian(ridge_solution)(LAM + h) - ad.jacobian(ridge_solution)(LAM - h)) / (2 * h)
    assert relative_error(second, differences) < 5e-6


def test_ridge_third_derivative_is_the_closed_form():
    assert relative_error(ad.jacobian(ad.jacobian(ad.jacobian(ridge_solution)))(LAM), closed_form(LAM, 3)) < 1e-8


def test_fun_differentiates_by_the_envelope_theorem():
    # d/dlam min_w loss(w, lam) = d loss/d lam at w* = |w*|^2 / 2; its derivative w* . w*'
    value = lambda lam: hessopt.minimize(lambda w: ridge_loss(w, lam), np.zeros(N), options={"gtol": RIDGE_GTOL}).fun  # noqa: E731
    w, dw = closed_form(LAM, 0), closed_form(LAM, 1)
    np.testing.assert_allclose(ad.grad(value)(LAM), 0.5 * w @ w, rtol=FIRST_ORDER_RTOL)
    np.testing.assert_allclose(ad.hessian(value)(LAM), w @ dw, rtol=FIRST_ORDER_RTOL)


def test_a_pytree_solution_differentiates_in_its_structure():
    def solution(lam):
        loss = lambda p: ridge_loss(np.concatenate([p["a"], p["b"]]), lam)  # noqa: E731
        return hessopt.minimize(loss, {"a": np.zeros(2), "b": np.zeros(N - 2)}, options={"gtol": RIDGE_GTOL}).x
    jac = ad.jacobian(solution)(LAM)
    assert set(jac) == {"a", "b"}
    assert relative_error(np.concatenate([jac["a"], jac["b"]]), closed_form(LAM, 1)) < FIRST_ORDER_RTOL


def test_large_problems_solve_by_cg_on_the_cached_operator():
    # 250 > DENSE_UP_TO variables: the solves are CG to 1e-10; cond(M) = (4 + lam) / (1 + lam) = 3
    n = 250
    A = np.linalg.qr(_rng.normal(size=(300, n)))[0] * np.linspace(1.0, 2.0, n)
    b = _rng.normal(size=300)
    M = A.T @ A + LAM * np.eye(n)
    solution = lambda lam: hessopt.minimize(  # noqa: E731
        lambda w: 0.5 * np.sum((A @ w - b) ** 2) + 0.5 * lam * np.sum(w ** 2), np.zeros(n), options={"gtol": GTOL}).x
    target = -np.linalg.solve(M, np.linalg.solve(M, A.T @ b))
    cond = np.linalg.cond(M)
    # forward mode: one solve, error cond 1e-10; the solution's error adds ||M^-1||^2 sqrt(n) GTOL
    bound = cond * 1e-10 + np.sqrt(n) * GTOL / 1.5 ** 2 / np.linalg.norm(target)
    assert relative_error(ad.jvp(solution, (LAM,), (1.0,))[1], target) < bound


# --- logistic regression: a hypergradient of the validation loss in the L2 strength ----------------

_data = np.random.default_rng(7)
N_LOGISTIC = 5
X_TRAIN, X_VALID = _data.normal(size=(80, N_LOGISTIC)), _data.normal(size=(40, N_LOGISTIC))
TRUE_W = _data.normal(size=N_LOGISTIC)
Y_TRAIN = (X_TRAIN @ TRUE_W + _data.normal(size=80) > 0).astype(float)
Y_VALID = (X_VALID @ TRUE_W + _data.normal(size=40) > 0).astype(float)


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def trained(lam, gtol=GTOL):
    return hessopt.minimize(lambda w: logistic_loss(w, X_TRAIN, Y_TRAIN) + 0.5 * lam * np.sum(w ** 2),
                            np.zeros(N_LOGISTIC), options={"gtol": gtol}).x


def validation_loss(lam, gtol=GTOL):
    return logistic_loss(trained(lam, gtol), X_VALID, Y_VALID)


def test_logistic_hypergradient_matches_central_differences_of_resolved_problems():
    """To 1e-9 relative (the issue's figure), against fourth-order central differences of problems
    re-solved to gtol 1e-13 (the hypergradient's own solve too): the stencil errs by h^4 / 30
    |L^(5)| (measured from the stencils at h and 2h, whose difference falls 16-fold per halving
    here: ~2e-9 at h = 5e-4, ~1e-11 at 1.25e-4), the
    re-solves by ||H^-1|| sqrt(n) 1e-13 |grad L| / h ~ 1e-9 at worst, ~1e-12 observed (a re-solve stops
    far below its gtol on this smooth problem)."""
    lam, h = 0.05, 1.25e-4
    hypergradient = ad.grad(lambda strength: validation_loss(strength, gtol=1e-13))(lam)
    value = lambda step: validation_loss(lam + step, gtol=1e-13)  # noqa: E731
    differences = (-value(2 * h) + 8 * value(h) - 8 * value(-h) + value(-2 * h)) / (12 * h)
    assert abs(hypergradient - differences) <= 1e-9 * abs(hypergradient)
    assert abs(hypergradient) > 1e-3            # a hypergradient that is not zero by accident


def test_logistic_hypergradient_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    lam = 0.05
    w = np.asarray(trained(lam))

    def train_loss(w, lam):
        z = X_TRAIN @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - Y_TRAIN * z) + 0.5 * lam * jnp.sum(w ** 2)

    def valid_loss(w):
        z = X_VALID @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - Y_VALID * z)

    @jax.jit
    def by_hand(w, lam):   # the implicit function theorem: u = H^-1 grad L_valid, dL/dlam = -u . d(grad)/dlam
        u = jnp.linalg.solve(jax.hessian(train_loss)(w, lam), jax.grad(valid_loss)(w))
        return -u @ jax.jacobian(jax.grad(train_loss), argnums=1)(w, lam)
    expected = float(by_hand(w, lam))
    # both at the same w: the difference is the solves' rounding, cond(H) eps ~ 1e-14
    assert abs(ad.grad(validation_loss)(lam) - expected) < 1e-9 * abs(expected)


# --- active bounds: a box quadratic 0.5 x^T Q x - theta^T x, x >= 0 -------------------------------

Q = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
THETA = np.array([2.0, 1.0, -1.0])       # the third variable ends on its bound (multiplier > 0)


def box_solution(theta):
    return hessopt.minimize(lambda x: 0.5 * x @ Q @ x - theta @ x, np.ones(3), bounds=[(0, None)] * 3,
                            options={"gtol": GTOL}).x


def test_active_coordinates_do_not_move_and_free_ones_solve_the_reduced_system():
    x = np.asarray(box_solution(THETA))
    assert x[2] == 0.0 and np.all(x[:2] > 0.1)
    expected = np.zeros((3, 3))
    expected[:2, :2] = np.linalg.inv(Q[:2, :2])        # x_F = Q_FF^-1 theta_F, x_A = 0
    np.testing.assert_allclose(ad.jacobian(box_solution)(THETA), expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ad.jvp(box_solution, (THETA,), (np.ones(3),))[1], expected.sum(axis=1),
                               rtol=0, atol=1e-9)
    # central differences of re-solved problems (the active set does not change within h)
    h = 1e-4
    differences = np.stack([(box_solution(THETA + h * e) - box_solution(THETA - h * e)) / (2 * h)
                            for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(ad.jacobian(box_solution)(THETA), differences, rtol=0, atol=1e-6)


# --- least squares: residuals A x - y(theta) --------------------------------------------------------

A_LS = _rng.normal(size=(12, 3))
Y_LS = _rng.normal(size=12)


def test_least_squares_solution_derivative_is_the_pseudo_inverse():
    # y(s) = s * Y: x(s) = s pinv(A) Y, dx/ds = pinv(A) Y; cost(s) = s^2 |(I - A pinv(A)) Y|^2 / 2
    result = lambda s: hessopt.least_squares(lambda x: A_LS @ x - s * Y_LS, np.zeros(3), method="gn",  # noqa: E731
                                             options={"gtol": GTOL})
    pinv_y = np.linalg.pinv(A_LS) @ Y_LS
    np.testing.assert_allclose(ad.jacobian(lambda s: result(s).x)(2.0), pinv_y, rtol=1e-9)
    leftover = Y_LS - A_LS @ pinv_y
    np.testing.assert_allclose(ad.grad(lambda s: result(s).cost)(2.0), 2.0 * leftover @ leftover, rtol=1e-9)


def test_nonlinear_least_squares_matches_central_differences():
    t = np.linspace(0.0, 3.0, 10)
    data = 2.0 * np.exp(-0.7 * t) + 0.05 * np.cos(5 * t)

    def rate(scale):
        residuals = lambda p: p[0] * np.exp(-p[1] * t) - scale * data  # noqa: E731
        return hessopt.least_squares(residuals, np.array([1.0, 1.0]), options={"gtol": GTOL}).x[1]

    h = 1e-4
    differences = (rate(1.0 + h) - rate(1.0 - h)) / (2 * h)
    np.testing.assert_allclose(ad.grad(rate)(1.0), differences, rtol=0, atol=1e-6)


# --- refusals -----------------------------------------------------------------------------------

def test_a_run_that_did_not_converge_is_not_differentiated():
    rosenbrock = lambda x, a: (a - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    with pytest.raises(ValueError, match="hessopt.minimize: the run did not converge"):
        ad.grad(lambda a: hessopt.minimize(rosenbrock, [-1.2, 1.0], args=(a,), options={"maxiter": 2}).x[0])(1.0)


def test_without_a_tracked_tensor_minimize_runs_as_before():
    result = ad.grad(lambda lam: lam * hessopt.minimize(lambda w: ridge_loss(w, 0.5), np.zeros(N)).fun)(1.0)
    np.testing.assert_allclose(result, ridge_loss(closed_form(0.5, 0), 0.5), rtol=1e-9)


def test_a_loss_over_variables_that_reads_a_differentiated_tensor_is_refused_by_name():
    w = ad.Variable(np.zeros(2))
    with pytest.raises(TypeError, match="loss over Variables reads a Tensor that a transform differentiates"):
        ad.grad(lambda lam: hessopt.minimize(lambda: np.sum((w - lam) ** 2), [w]).fun)(1.0)


def test_a_bilevel_problem_minimizes_through_the_inner_solution():
    # the outer newton-cg needs the validation loss's gradient and Hessian-vector products in
    # log lam, both through the inner solution; its objective cannot be traced (a replay could not
    # solve again), so it runs eagerly and says why
    def validation(log_lam):   # log_lam of shape (1,): the inner objective's value has size one
        return logistic_loss(trained(np.exp(log_lam)), X_VALID, Y_VALID)

    outer = hessopt.minimize(validation, np.array([np.log(0.05)]), method="newton-cg", options={"gtol": 1e-9})
    assert outer.success and "hessopt.minimize solves with its value" in outer.untraced_reason
    # at the outer minimum the central difference of re-solved problems vanishes: h = 1e-3 leaves
    # a truncation of h^2 / 6 |L'''| and the inner solutions' errors over h (~1e-8 / h)
    h = 1e-3
    slope = (validation(outer.x + h) - validation(outer.x - h)) / (2 * h)
    assert abs(slope) < 1e-6 + 1e-8 / h
    assert validation(outer.x) < min(validation(outer.x + 0.1), validation(outer.x - 0.1))


def test_a_constrained_solution_is_not_differentiated_silently():
    """Its derivative solves the KKT system, not H w' = -b: refused by name instead of a wrong value."""
    def solution(lam):
        return hessopt.minimize(lambda w: ridge_loss(w, lam), np.zeros(N),
                                constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1.0}]).x
    assert np.isclose(np.sum(solution(LAM)), 1.0)               # outside a transform it solves
    with pytest.raises(NotImplementedError, match="constrained solution"):
        ad.jacobian(solution)(LAM)
