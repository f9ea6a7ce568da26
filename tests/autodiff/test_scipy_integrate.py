"""scipy.integrate.odeint on Tensors: values equal scipy's, derivatives of the decay equation in closed form,
first and second derivatives of a nonlinear system against central finite differences in y0, t and args
(mixed ones included), batched cotangents equal looped ones, exact replay under ad.function, scipy's own
odeint on a tracked Tensor naming the version here, and bad input refused by name.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
from test_function import assert_replays_exactly

import autodiff as ad
from autodiff.check import central_differences
from autodiff.numpy import scipy_integrate

TIGHT = {"rtol": 1e-11, "atol": 1e-11}  # so that finite differences of the computed values are meaningful


def nonlinear(y, t, a1, a2):
    """A time-dependent system with a coupling through the mean, and two parameters."""
    return -np.sqrt(t) - y + a1 - np.mean((y + a2) ** 2)


Y0 = np.array([0.3, -0.2, 0.5])
TIMES = np.array([0.1, 0.4, 1.0, 1.7])
A1 = np.array([0.5, -0.1, 0.2])
A2 = np.array(0.3)
SIZES = [3, 4, 3, 1]
WEIGHTS = np.random.default_rng(0).standard_normal((4, 3))


def solution(x):
    """The solution of the nonlinear system as a function of all its inputs packed in one vector."""
    y0, t, a1, a2 = np.split(x, np.cumsum(SIZES)[:-1])
    return scipy_integrate.odeint(nonlinear, y0, t, args=(a1, a2[0]), **TIGHT)


def loss(x):
    return np.sum(solution(x) * WEIGHTS)


X = np.concatenate([Y0, TIMES, A1, A2[None]])


def test_values_equal_scipys():
    expected = scipy.integrate.odeint(nonlinear, Y0, TIMES, args=(A1, A2))
    np.testing.assert_array_equal(scipy_integrate.odeint(nonlinear, Y0, TIMES, args=(A1, A2)), expected)
    options = {"rtol": 1e-9, "atol": 1e-12, "hmax": 0.05, "mxstep": 1000}
    expected = scipy.integrate.odeint(nonlinear, Y0, TIMES, args=(A1, A2), **options)
    result = scipy_integrate.odeint(nonlinear, ad.constant(Y0), TIMES, args=(ad.constant(A1), A2), **options)
    assert result.shape == (4, 3)
    np.testing.assert_array_equal(result.numpy(), expected)


def decay(y, t, k):
    return -k * y


def test_decay_derivatives_in_y0_k_and_t_are_the_closed_forms():
    """y_i = y0 exp(-k (t_i - t_0)): dy_i/dy0 = exp(-k (t_i - t_0)), dy_i/dk = -(t_i - t_0) y_i,
    dy_i/dt_i = -k y_i, dy_i/dt_0 = k y_i, d2y_i/dk2 = (t_i - t_0)^2 y_i."""
    y0, t, k = np.array([1.5, -0.5]), np.array([0.2, 0.7, 1.1, 2.0]), 0.8
    exact = y0 * np.exp(-k * (t - t[0]))[:, None]
    solve = lambda y0, t, k: scipy_integrate.odeint(decay, y0, t, args=(k,), **TIGHT)  # noqa: E731
    np.testing.assert_allclose(solve(y0, t, k), exact, rtol=1e-9)
    d_y0 = ad.jacobian(lambda v: solve(v, t, k))(y0)
    np.testing.assert_allclose(d_y0, np.exp(-k * (t - t[0]))[:, None, None] * np.eye(2), rtol=1e-8, atol=1e-12)
    d_k = ad.jacobian(lambda c: solve(y0, t, c))(k)
    np.testing.assert_allclose(d_k, -(t - t[0])[:, None] * exact, rtol=1e-8, atol=1e-12)
    d_t = ad.jacobian(lambda s: solve(y0, s, k))(t)  # shape (times, 2, times)
    expected = np.zeros((4, 2, 4))
    for i in range(1, 4):
        expected[i, :, i], expected[i, :, 0] = -k * exact[i], k * exact[i]
    np.testing.assert_allclose(d_t, expected, rtol=1e-8, atol=1e-10)
    d_kk = ad.hessian(lambda c: solve(y0, t, c)[-1, 0])(k)
    np.testing.assert_allclose(d_kk, (t[-1] - t[0]) ** 2 * exact[-1, 0], rtol=1e-7)


def test_a_single_time_returns_y0_whose_derivative_is_the_identity():
    y0 = np.array([2.0, 3.0])
    np.testing.assert_array_equal(scipy_integrate.odeint(decay, y0, [0.5], args=(1.0,)), y0[None])
    np.testing.assert_array_equal(ad.jacobian(lambda v: scipy_integrate.odeint(decay, v, [0.5], args=(1.0,)))(y0),
                                  np.eye(2)[None])
    assert ad.grad(lambda t: np.sum(scipy_integrate.odeint(decay, y0, t, args=(1.0,))))(np.array([0.5]))[0] == 0.0


def test_gradient_in_y0_t_and_args_equals_finite_differences():
    gradient = ad.grad(loss)(X)
    differences = central_differences(loss, X, 1e-5)
    np.testing.assert_allclose(gradient, differences, rtol=0, atol=1e-7 * np.max(np.abs(differences)))


def test_hessian_in_y0_t_and_args_equals_finite_differences_of_the_gradient():
    """Second order, mixed derivatives included: the backward pass is odeint itself, differentiated again."""
    hessian = ad.hessian(loss)(X)
    differences = central_differences(ad.grad(loss), X, 1e-4)
    np.testing.assert_allclose(hessian, differences, rtol=0, atol=1e-6 * np.max(np.abs(differences)))
    np.testing.assert_allclose(hessian, hessian.T, rtol=0, atol=1e-8 * np.max(np.abs(hessian)))


def test_a_batch_of_cotangents_equals_one_at_a_time():
    """To the integration's tolerance, not bit for bit: the batch is one larger adjoint system, whose
    adaptive steps differ from those of each of its parts."""
    _, pullback = ad.vjp(solution, X)
    cotangents = np.random.default_rng(1).standard_normal((2, 3, 4, 3))
    batched = pullback(cotangents)[0]
    looped = np.array([[pullback(c)[0] for c in row] for row in cotangents])
    np.testing.assert_allclose(batched, looped, rtol=0, atol=1e-9 * np.max(np.abs(looped)))


def test_replays_exactly_under_autodiff_function():
    assert_replays_exactly(solution, [X, X + 1e-3])


def test_scipys_odeint_on_a_tracked_tensor_names_the_differentiable_version():
    with pytest.raises(TypeError, match=r"scipy\.integrate\.odeint converted it.*"
                                        r"autodiff\.numpy\.scipy_integrate\.odeint is its differentiable version"):
        ad.grad(lambda y0: np.sum(scipy.integrate.odeint(decay, y0, TIMES, args=(1.0,))))(Y0)


def test_a_tracked_tensor_read_by_a_closure_is_refused():
    with pytest.raises(TypeError, match="func reads a tracked Tensor.*pass it through args="):
        ad.grad(lambda k: np.sum(scipy_integrate.odeint(lambda y, t: -k * y, Y0, TIMES)))(1.0)


def test_forward_mode_equals_finite_differences_and_both_mixed_orders_the_hessian():
    """The forward sensitivities give J v; forward over reverse and reverse over forward give H v."""
    direction = np.random.default_rng(5).standard_normal(X.shape)
    _, tangent = ad.jvp(solution, (X,), (direction,))
    differences = (solution(X + 1e-5 * direction) - solution(X - 1e-5 * direction)) / 2e-5
    np.testing.assert_allclose(tangent, differences, rtol=0, atol=1e-7 * np.max(np.abs(differences)))
    hessian_times = ad.hessian(loss)(X) @ direction
    forward_over_reverse = ad.jvp(ad.grad(loss), (X,), (direction,))[1]
    reverse_over_forward = ad.grad(lambda x: np.sum(ad.jvp(solution, (x,), (direction,))[1] * WEIGHTS))(X)
    scale = np.max(np.abs(hessian_times))
    np.testing.assert_allclose(forward_over_reverse, hessian_times, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(reverse_over_forward, hessian_times, rtol=0, atol=1e-8 * scale)


def test_forward_mode_of_the_decay_is_the_closed_form():
    """d y_i = (dy0 - k y0 (dt_i - dt_0) - (t_i - t_0) y0 dk) exp(-k (t_i - t_0))."""
    y0, t, k = np.array([1.5, -0.5]), np.array([0.2, 0.7, 2.0]), 0.8
    dy0, dt, dk = np.array([0.3, 1.0]), np.array([0.5, -1.0, 2.0]), 0.7
    _, tangent = ad.jvp(lambda y0, t, k: scipy_integrate.odeint(decay, y0, t, args=(k,), **TIGHT),
                        (y0, t, k), (dy0, dt, dk))
    elapsed, decayed = (t - t[0])[:, None], np.exp(-k * (t - t[0]))[:, None]
    expected = (dy0 - k * y0 * (dt - dt[0])[:, None] - elapsed * y0 * dk) * decayed
    np.testing.assert_allclose(tangent, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("call, error, message", [
    (lambda: scipy_integrate.odeint(decay, np.ones((2, 2)), TIMES, args=(1.0,)), ValueError, "y0 must be 1-d"),
    (lambda: scipy_integrate.odeint(decay, 1.0, TIMES, args=(1.0,)), ValueError, "y0 must be 1-d"),
    (lambda: scipy_integrate.odeint(decay, Y0, TIMES[None], args=(1.0,)), ValueError, "t must be a non-empty 1-d"),
    (lambda: scipy_integrate.odeint(decay, Y0, [], args=(1.0,)), ValueError, "t must be a non-empty 1-d"),
    (lambda: scipy_integrate.odeint(decay, Y0, TIMES[::-1], args=(1.0,)), ValueError, "t must be increasing"),
    (lambda: scipy_integrate.odeint(decay, Y0, [0.0, 1.0, 1.0], args=(1.0,)), ValueError, "t must be increasing"),
    (lambda: scipy_integrate.odeint(lambda y, t: y[:2], Y0, TIMES), ValueError,
     r"y0's shape \(3,\), not of shape \(2,\)"),
    (lambda: scipy_integrate.odeint(decay, [], TIMES, args=(1.0,)), ValueError, "y0 is empty"),
    (lambda: scipy_integrate.odeint(decay, Y0, TIMES, args=(1.0,), tfirst=True), NotImplementedError, "tfirst"),
])
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("tolerances, error, message", [
    ({"rtol": np.nan}, ValueError, r"rtol must be finite and non-negative; got nan"),
    ({"atol": np.nan}, ValueError, r"atol must be finite and non-negative; got nan"),
    ({"rtol": np.inf}, ValueError, r"rtol must be finite and non-negative; got inf"),
    ({"rtol": -1.0}, ValueError, r"rtol must be finite and non-negative; got -1.0"),
    ({"atol": [1e-8, -1e-8, 1e-8]}, ValueError, r"atol must be finite and non-negative; got \[1e-08, -1e-08, 1e-08\]"),
    ({"rtol": "tight"}, TypeError, r"rtol must be a number or an array of numbers; got 'tight'"),
    ({"rtol": [1e-6, 1e-6]}, ValueError, r"rtol must be a number or an array of len\(y0\) = 3 numbers, not of "
                                         r"shape \(2,\)"),
    ({"rtol": 0, "atol": 0}, ValueError, r"rtol and atol are both 0 \(for y\[0\]\)"),
    ({"rtol": 0.0, "atol": [1e-8, 0.0, 1e-8]}, ValueError, r"rtol and atol are both 0 \(for y\[1\]\)"),
])
def test_tolerances_are_checked_by_name(tolerances, error, message):
    """scipy takes rtol=nan and gives wrong values without a word, and rtol=atol=0 repeats y0 with
    only an 'Illegal input' warning: each is refused here, naming the tolerance."""
    with pytest.raises(error, match=message):
        scipy_integrate.odeint(decay, Y0, TIMES, args=(1.0,), **tolerances)


def test_tolerances_that_scipy_takes_give_scipys_values():
    """rtol = 0 (absolute control only), atol = 0 with rtol > 0, and one tolerance per equation."""
    for tolerances in ({"rtol": 0.0, "atol": 1e-10}, {"rtol": 1e-9, "atol": 0.0},
                       {"rtol": [1e-9, 1e-6, 1e-8], "atol": np.array([1e-12, 1e-9, 1e-10])}):
        np.testing.assert_array_equal(scipy_integrate.odeint(decay, Y0, TIMES, args=(1.0,), **tolerances),
                                      scipy.integrate.odeint(decay, Y0, TIMES, args=(1.0,), **tolerances))


def assert_same_report(report, expected):
    assert sorted(report) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(report[key], value, err_msg=key)


def test_full_output_returns_scipys_report_of_the_solve():
    """(y, infodict) as scipy returns them: the values' solve is scipy's own, so every count is."""
    values, report = scipy_integrate.odeint(nonlinear, Y0, TIMES, args=(A1, A2), full_output=True)
    expected_values, expected = scipy.integrate.odeint(nonlinear, Y0, TIMES, args=(A1, A2), full_output=True)
    np.testing.assert_array_equal(values, expected_values)
    assert report["message"] == "Integration successful."
    assert_same_report(report, expected)
    # on Tensors too, and the derivatives are those without full_output
    with_report = ad.grad(lambda y0: np.sum(scipy_integrate.odeint(decay, y0, TIMES, args=(1.0,), full_output=True)[0]))
    plain = ad.grad(lambda y0: np.sum(scipy_integrate.odeint(decay, y0, TIMES, args=(1.0,))))
    np.testing.assert_array_equal(with_report(Y0), plain(Y0))


def test_a_failed_solve_says_so_as_scipy_does():
    """LSODA out of steps: scipy's ODEintWarning, and its message and counts in the report."""
    options = {"args": (1.0,), "mxstep": 5, "full_output": True}
    with pytest.warns(scipy.integrate.ODEintWarning, match="Excess work done on this call"):
        expected_values, expected = scipy.integrate.odeint(decay, Y0, [0.0, 1000.0], **options)
    with pytest.warns(scipy.integrate.ODEintWarning, match="Excess work done on this call"):
        values, report = scipy_integrate.odeint(decay, Y0, [0.0, 1000.0], **options)
    assert report["message"].startswith("Excess work done on this call")
    assert_same_report(report, expected)
    np.testing.assert_array_equal(values, expected_values)


def test_full_output_is_refused_by_a_trace_and_fresh_at_each_eager_call():
    """A replay could not give the report of its own solve, so a trace refuses full_output (the
    eager fallback then reports each call's solve)."""
    steps = lambda y0: scipy_integrate.odeint(decay, y0, TIMES, args=(1.0,), full_output=True)[1]["nst"]  # noqa: E731
    with pytest.raises(ad.UntraceableError, match="odeint's full_output"):
        ad.function(steps)(Y0)
    fallback = ad.function(steps, eager_fallback=True)
    for y0 in (Y0, 100.0 * Y0):
        expected = scipy.integrate.odeint(decay, y0, TIMES, args=(1.0,), full_output=True)[1]["nst"]
        np.testing.assert_array_equal(fallback(y0), expected)
