"""scipy.integrate.odeint on Tensors: values equal scipy's, derivatives of the decay equation in closed form,
first and second derivatives of a nonlinear system against central finite differences in y0, t and args
(mixed ones included), batched cotangents equal looped ones, exact replay under ad.function, scipy's own
odeint on a tracked Tensor naming the version here, and bad input refused by name.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.integrate
from test_function import assert_replays_exactly

import autodiff as ad
from autodiff.check import central_differences
from autodiff.numpy import scipy_integrate
from hessopt.problems import lotka_volterra, robertson, saturating_chain, sir

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


def solution(x, derivatives="auto"):
    """The solution of the nonlinear system as a function of all its inputs packed in one vector."""
    y0, t, a1, a2 = np.split(x, np.cumsum(SIZES)[:-1])
    return scipy_integrate.odeint(nonlinear, y0, t, args=(a1, a2[0]), derivatives=derivatives, **TIGHT)


def loss(x, derivatives="auto"):
    return np.sum(solution(x, derivatives) * WEIGHTS)


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


@pytest.mark.parametrize("derivatives", ["forward", "adjoint"])
def test_gradient_in_y0_t_and_args_equals_finite_differences(derivatives):
    gradient = ad.grad(lambda x: loss(x, derivatives))(X)
    differences = central_differences(loss, X, 1e-5)
    np.testing.assert_allclose(gradient, differences, rtol=0, atol=1e-7 * np.max(np.abs(differences)))


def test_hessian_in_y0_t_and_args_equals_finite_differences_of_the_gradient():
    """Second order, mixed derivatives included: the backward pass is odeint itself, differentiated again."""
    hessian = ad.hessian(loss)(X)
    differences = central_differences(ad.grad(loss), X, 1e-4)
    np.testing.assert_allclose(hessian, differences, rtol=0, atol=1e-6 * np.max(np.abs(differences)))
    np.testing.assert_allclose(hessian, hessian.T, rtol=0, atol=1e-8 * np.max(np.abs(hessian)))


@pytest.mark.parametrize("derivatives", ["forward", "adjoint"])
def test_a_batch_of_cotangents_equals_one_at_a_time(derivatives):
    """To the integration's tolerance, not bit for bit: the batch is one larger adjoint system, whose
    adaptive steps differ from those of each of its parts (the sensitivities are one system for all)."""
    _, pullback = ad.vjp(lambda x: solution(x, derivatives), X)
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


# --- the derivatives' methods: forward sensitivities, the checkpointed adjoint, replayed rates ----------

ROBERTSON_TIMES = np.array([0.0, 0.4, 4.0, 40.0, 400.0, 4e3, 4e4])
SYSTEMS = {  # func, y0, t, args, tolerances
    "lotka_volterra": (lotka_volterra, np.array([10.0, 5.0]), np.linspace(0.0, 15.0, 16), (1.0, 0.1, 1.5, 0.075),
                       {"rtol": 1e-10, "atol": 1e-10}),
    "sir": (sir, np.array([0.99, 0.01, 0.0]), np.linspace(0.0, 100.0, 11), (0.3, 0.1), {"rtol": 1e-10, "atol": 1e-12}),
    "robertson": (robertson, np.array([1.0, 0.0, 0.0]), ROBERTSON_TIMES, (0.04, 3e7, 1e4),
                  {"rtol": 1e-8, "atol": 1e-14}),
    "chain": (saturating_chain, np.r_[1.0, np.linspace(0.5, 0.1, 49)], np.linspace(0.0, 20.0, 6), (1.0, 0.5),
              {"rtol": 1e-10, "atol": 1e-12}),
}


def system_gradient(name, derivatives="auto", **options):
    """The gradient of a random linear functional of the solution in (y0, args)."""
    func, y0, t, args, tolerances = SYSTEMS[name]
    n, weights = y0.size, np.random.default_rng(0).standard_normal((t.size, y0.size))

    def functional(x):
        ys = scipy_integrate.odeint(func, x[:n], t, args=tuple(x[n + k] for k in range(len(args))),
                                    derivatives=derivatives, **{**tolerances, **options})
        return np.sum(ys * weights)
    return ad.grad(functional)(np.concatenate([y0, args]))


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_forward_sensitivities_and_the_adjoint_agree_on_each_system(name):
    """Two integrations of different systems (y with its sensitivities; the adjoint backward, reading
    y from the checkpoints of another solve), each to the tolerances: they agree to what the global
    error of the tolerances allows (a few tens of rtol here, relative to the largest entry: 1000 rtol)."""
    forward, adjoint = system_gradient(name, "forward"), system_gradient(name, "adjoint")
    rtol = SYSTEMS[name][4]["rtol"]
    np.testing.assert_allclose(adjoint, forward, rtol=0, atol=1e3 * rtol * np.max(np.abs(forward)))


def sizes_of_the_solves(monkeypatch) -> list:
    """The sizes of the states of the scipy.integrate.odeint calls that follow."""
    sizes, solve = [], scipy.integrate.odeint
    monkeypatch.setattr(scipy.integrate, "odeint", lambda func, y0, *a, **k: sizes.append(np.size(y0)) or
                        solve(func, y0, *a, **k))
    return sizes


@pytest.mark.parametrize("name, derivatives, expected", [
    ("lotka_volterra", "auto", {2, 2 * (1 + 6)}),     # the values, then [y, 6 sensitivities]
    ("lotka_volterra", "adjoint", {2, 2 + 4}),        # the values, then [a, 4 parameters' cotangents]
    ("chain", "auto", {50, 50 + 2}),                  # 52 directions: the adjoint
    ("chain", "forward", {50, 50 * (1 + 52)}),
])
def test_the_method_is_chosen_by_the_work_of_its_rates_or_by_the_option(monkeypatch, name, derivatives, expected):
    """A few inputs (Lotka-Volterra's 2 states and 4 parameters): the forward sensitivities; many
    (the chain's 50 states and 2 parameters): the adjoint, restarted between the output times."""
    sizes = sizes_of_the_solves(monkeypatch)
    system_gradient(name, derivatives)
    assert set(sizes) == expected


def test_a_jacobian_of_many_outputs_takes_the_sensitivities_once(monkeypatch):
    """All 300 rows of the chain's Jacobian in y0 come from one integration of its 50 directions,
    not from 300 adjoints."""
    func, y0, t, args, tolerances = SYSTEMS["chain"]
    sizes = sizes_of_the_solves(monkeypatch)
    jacobian = ad.jacobian(lambda v: scipy_integrate.odeint(func, v, t, args=args, **tolerances))(y0)
    assert sizes == [50, 50 * (1 + 50)] and jacobian.shape == (6, 50, 50)
    np.testing.assert_array_equal(jacobian[0], np.eye(50))


def test_the_sensitivities_take_the_values_steps(monkeypatch):
    """LSODA's error test is on y alone: the Jacobian of Lotka-Volterra's solution in its 4 parameters
    integrates [y, 4 sensitivities] with about the values' own evaluations of the rate (a few more:
    its first step is chosen from the wider state). With the sensitivities in the error test too, their
    oscillations took 1.7 times as many."""
    evaluations, solve = {}, scipy.integrate.odeint

    def counting(func, y0, *args, **options):
        def rate(y, t, *more):
            evaluations[np.size(y0)] = evaluations.get(np.size(y0), 0) + 1
            return func(y, t, *more)
        return solve(rate, y0, *args, **options)
    monkeypatch.setattr(scipy.integrate, "odeint", counting)
    func, y0, t, args, tolerances = SYSTEMS["lotka_volterra"]
    ad.jacobian(lambda p: scipy_integrate.odeint(func, y0, t, args=tuple(p[k] for k in range(4)), **tolerances))(
        np.array(args))
    assert set(evaluations) == {2, 2 * (1 + 4)}
    assert evaluations[2 * (1 + 4)] <= 1.2 * evaluations[2]


def test_the_call_that_traces_a_jacobian_integrates_once(monkeypatch):
    """The first call of a traced Jacobian (a fit's first) returns what its trace computed: one solve of
    the values and one of the sensitivities, not the program's replay of them too; later calls replay
    the sensitivities alone (the values are dead code), to the same bits."""
    func, y0, t, args, tolerances = SYSTEMS["lotka_volterra"]
    jacobian = ad.jacobian(ad.function(
        lambda p: scipy_integrate.odeint(func, y0, t, args=tuple(p[k] for k in range(4)), **tolerances)))
    sizes = sizes_of_the_solves(monkeypatch)
    first = jacobian(np.array(args))
    assert sorted(sizes) == [2, 2 * (1 + 4)]
    sizes.clear()
    np.testing.assert_array_equal(jacobian(np.array(args)), first)
    assert sizes == [2 * (1 + 4)]


def test_the_jacobian_in_the_parameters_equals_central_differences():
    """Lotka-Volterra's solution in its 4 parameters, the sensitivities outside LSODA's error test,
    against fourth-order central differences (step 1e-3 relative) of solves at rtol 1e-13, whose own
    error is about 1e-12 + 1e-13 / 1e-3 relative: within the 1000 rtol of the largest entry that the
    global error of the tolerances allows (the values' own error here is 17 rtol, the Jacobian's 60)."""
    func, y0, t, args, tolerances = SYSTEMS["lotka_volterra"]

    def solution(p, tolerances):
        return scipy_integrate.odeint(func, y0, t, args=tuple(p[k] for k in range(4)), **tolerances)
    p, tight = np.array(args), {"rtol": 1e-13, "atol": 1e-13}
    steps = 1e-3 * p
    differences = np.stack([(8 * (solution(p + step, tight) - solution(p - step, tight))
                             - (solution(p + 2 * step, tight) - solution(p - 2 * step, tight))) / (12 * steps[k])
                            for k, step in enumerate(np.diag(steps))], axis=-1)
    jacobian = ad.jacobian(lambda p: solution(p, tolerances))(p)
    np.testing.assert_allclose(jacobian, differences, rtol=0,
                               atol=1e3 * tolerances["rtol"] * np.max(np.abs(differences)))


def backsolve_gradient(func, y0, t, args, weights, tolerances):
    """The adjoint as odeint computed it before its checkpoints: y integrated backward with it, from
    each output time (the vector-Jacobian products replayed by autodiff.function)."""
    n = y0.size
    ys = scipy.integrate.odeint(func, y0, t, args=args, **tolerances)
    products = ad.function(lambda y, s, a: ad.vjp(lambda y, *p: func(y, s, *p), y, *args)[1](a))

    def rate(state, s):
        cotangents = products(state[:n], np.float64(-s), state[n:2 * n])
        return np.concatenate([-func(state[:n], -s, *args), cotangents[0], np.array(cotangents[1:], dtype=float)])
    a, parameters = np.zeros(n), np.zeros(len(args))
    for i in range(len(t) - 1, 0, -1):
        a = a + weights[i]
        state = scipy.integrate.odeint(rate, np.concatenate([ys[i], a, parameters]), [-t[i], -t[i - 1]],
                                       **tolerances)[1]
        a, parameters = state[n:2 * n], state[2 * n:]
    return np.concatenate([a + weights[0], parameters])


def test_checkpoints_give_the_derivatives_of_the_backward_integration_and_stay_stable_where_it_fails():
    """Lotka-Volterra (not dissipative): the checkpointed adjoint gives the derivatives that
    integrating y backward gave, to the tolerances. Robertson (stiff): its fast modes, damped
    forward, grow backward: integrating y back from each output time fails (scipy warns and the
    numbers are off by orders of magnitude), while the checkpoints give the forward sensitivities'."""
    for name in ("lotka_volterra", "robertson"):
        func, y0, t, args, tolerances = SYSTEMS[name]
        weights = np.random.default_rng(0).standard_normal((t.size, y0.size))
        checkpointed, forward = system_gradient(name, "adjoint"), system_gradient(name, "forward")
        np.testing.assert_allclose(checkpointed, forward, rtol=0,
                                   atol=1e3 * tolerances["rtol"] * np.max(np.abs(forward)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.integrate.ODEintWarning)
            backward = backsolve_gradient(func, y0, t, args, weights, tolerances)
        error = np.max(np.abs(backward - forward)) / np.max(np.abs(forward))
        if name == "lotka_volterra":
            assert error <= 1e3 * tolerances["rtol"]
        else:
            assert not error < 1e-2


def test_robertsons_gradient_equals_central_differences():
    """Stiff, in the logarithms of the rate constants. The computed solution moves with the
    parameters only as smoothly as the tolerance allows (its steps change), so the central
    difference of step h = rtol^(1/3) is off by about rtol / h + h^2 = 2 rtol^(2/3)."""
    rtol = 1e-9
    weights = np.random.default_rng(3).standard_normal((ROBERTSON_TIMES.size, 3)) * np.array([1.0, 1e4, 1.0])

    def functional(log_k):
        k = np.exp(log_k)
        ys = scipy_integrate.odeint(robertson, np.array([1.0, 0.0, 0.0]), ROBERTSON_TIMES, args=(k[0], k[1], k[2]),
                                    rtol=rtol, atol=1e-15)
        return np.sum(ys * weights)
    log_k = np.log([0.04, 3e7, 1e4])
    differences = central_differences(functional, log_k, rtol ** (1 / 3))
    np.testing.assert_allclose(ad.grad(functional)(log_k), differences, rtol=0,
                               atol=10 * rtol ** (2 / 3) * np.max(np.abs(differences)))


@pytest.mark.parametrize("derivatives", ["forward", "adjoint"])
def test_a_gradient_replays_its_rates_with_no_tape_and_few_evaluations(monkeypatch, derivatives):
    """Once the rates are traced (the first gradient), a gradient evaluates func on plain arrays
    only for the values' solve, the check of its programs and f(y0) (once each), and records no tape but its
    own: the derivatives' rates, and the adjoint's checkpoints' solve, are replayed programs."""
    calls = {"numpy": 0, "Tensor": 0}

    def counted(y, t, a, b, c, d):
        calls["Tensor" if isinstance(y, ad.Tensor) else "numpy"] += 1
        return lotka_volterra(y, t, a, b, c, d)
    _, y0, t, args, tolerances = SYSTEMS["lotka_volterra"]

    def functional(x):
        ys = scipy_integrate.odeint(counted, x[:2], t, args=tuple(x[2 + k] for k in range(4)),
                                    derivatives=derivatives, **tolerances)
        return np.sum(ys ** 2)
    ad.grad(functional)(np.concatenate([y0, args]))
    x = np.concatenate([1.1 * y0, args])
    calls.update(numpy=0, Tensor=0)
    scipy_integrate.odeint(counted, x[:2], t, args=tuple(x[2:]), **tolerances)
    solve_evaluations, calls["numpy"] = calls["numpy"], 0
    tapes, enter = [], ad.GradientTape.__enter__
    monkeypatch.setattr(ad.GradientTape, "__enter__", lambda tape: tapes.append(tape) or enter(tape))
    ad.grad(functional)(x)
    assert calls["Tensor"] == 0 and len(tapes) == 1
    assert solve_evaluations <= calls["numpy"] <= solve_evaluations + 2   # + the check, + f(y0) (sensitivities)


def test_a_changed_global_is_seen_by_the_derivatives():
    """The traced rates are kept per func; a value func reads from outside changes them: checked at
    each derivative, and traced again (d/dy0 of y(1) = y0 exp(-k) is exp(-k), for each k)."""
    rate = {"k": 1.0}

    def decaying(y, t):
        return -rate["k"] * y
    end = lambda y0: np.sum(scipy_integrate.odeint(decaying, y0, np.array([0.0, 1.0]), **TIGHT)[-1])  # noqa: E731
    for k in (1.0, 2.0, 0.5):
        rate["k"] = k
        np.testing.assert_allclose(ad.grad(end)(np.array([1.0, 2.0])), np.exp(-k), rtol=1e-9)


@pytest.mark.parametrize("derivatives", ["forward", "adjoint"])
def test_a_func_that_cannot_be_traced_runs_on_the_engines_ops(derivatives):
    """float(t) leaves the engine: the trace is refused and the rates run eagerly, with the same
    derivatives. y' = -k y + sin t: y(t) = (y0 - c(0)) exp(-k t) + c(t), c(t) = (k sin t - cos t) / (1 + k^2);
    its derivative in k by central differences of the closed form."""
    def forced(y, t, k):
        return -k * y + math.sin(float(t))

    def closed_form(y0, k, t):
        c = lambda s: (k * np.sin(s) - np.cos(s)) / (1 + k ** 2)  # noqa: E731
        return (y0 - c(0.0)) * np.exp(-k * t) + c(t)
    t, y0, k = np.linspace(0.0, 2.0, 5), np.array([1.0, -0.5]), 0.7
    x = np.array([*y0, k])
    functional = lambda x: np.sum(scipy_integrate.odeint(forced, x[:2], t, args=(x[2],), derivatives=derivatives,  # noqa: E731
                                                         **TIGHT))
    expected = [np.sum(np.exp(-k * t)), np.sum(np.exp(-k * t)),
                np.sum(central_differences(lambda c: closed_form(y0[:, None], c[0], t), np.array([k]), 1e-5))]
    np.testing.assert_allclose(ad.grad(functional)(x), expected, rtol=1e-8)


def test_a_failed_derivative_integration_raises_with_lsodas_message():
    """The values' solve warns as scipy's does; a derivative's integration that fails (out of steps,
    even with ten times mxstep) raises rather than give wrong numbers."""
    functional = lambda y0: np.sum(scipy_integrate.odeint(decay, y0, [0.0, 1000.0], args=(1.0,), mxstep=2))  # noqa: E731
    with pytest.warns(scipy.integrate.ODEintWarning), \
            pytest.raises(RuntimeError, match="odeint's derivatives: the integration of the forward sensitivities "
                                              "failed: Excess work done"):
        ad.grad(functional)(Y0)


def test_a_stiff_system_beyond_the_dense_jacobian_limit_gets_its_block_diagonal(monkeypatch):
    """Beyond DENSE_JACOBIAN_LIMIT, LSODA's stiff method gets the banded block diagonal of the
    derivative system's Jacobian (its blocks are func's Jacobian): slower to converge, the same
    derivatives to the tolerances."""
    from autodiff.numpy import _ode_adjoint, _ode_replay
    dense = {method: system_gradient("robertson", method) for method in ("forward", "adjoint")}
    monkeypatch.setattr(_ode_replay, "DENSE_JACOBIAN_LIMIT", 0)
    monkeypatch.setattr(_ode_adjoint, "DENSE_JACOBIAN_LIMIT", 0)
    for method, expected in dense.items():
        np.testing.assert_allclose(system_gradient("robertson", method), expected, rtol=0,
                                   atol=1e3 * SYSTEMS["robertson"][4]["rtol"] * np.max(np.abs(expected)))


def test_the_adjoint_replays_exactly_under_autodiff_function():
    gradient = ad.grad(lambda x: loss(x, "adjoint"))
    traced = ad.function(gradient)
    for x in (X, X + 1e-3):
        np.testing.assert_array_equal(traced(x), gradient(x))


def test_an_unknown_method_of_derivatives_is_refused_by_name():
    with pytest.raises(ValueError, match="derivatives must be one of 'auto', 'forward', 'adjoint'; got 'backward'"):
        scipy_integrate.odeint(decay, Y0, TIMES, args=(1.0,), derivatives="backward")


@pytest.mark.parametrize("derivatives", ["forward", "adjoint"])
def test_tolerances_per_equation_carry_over_to_the_derivatives(derivatives):
    """One rtol and atol per equation: each block of the derivatives' larger state gets its
    equation's (before, the backward integration refused an atol of y0's length for its state).
    dy_i(t)/dk = -t y0_i exp(-k t) for the decay."""
    y0, t, k = np.array([1.5, -0.5]), np.linspace(0.0, 2.0, 5), 0.8
    tolerances = {"rtol": [1e-11, 1e-10], "atol": np.array([1e-12, 1e-11])}
    functional = lambda x: np.sum(scipy_integrate.odeint(decay, x[:2], t, args=(x[2],), derivatives=derivatives,  # noqa: E731
                                                         **tolerances))
    expected = [np.sum(np.exp(-k * t)), np.sum(np.exp(-k * t)), np.sum(-t[:, None] * y0 * np.exp(-k * t)[:, None])]
    np.testing.assert_allclose(ad.grad(functional)(np.array([*y0, k])), expected, rtol=1e-8)


def checkpoints(monkeypatch, dense_output: bool):
    """The checkpoints of Lotka-Volterra's solve, and their LSODA solver, its history read from
    LSODA's work arrays or (``dense_output``) through scipy's ``dense_output()``."""
    from autodiff.numpy import _ode_adjoint
    func, y0, t, args, tolerances = SYSTEMS["lotka_volterra"]
    solvers, reader = [], _ode_adjoint._history_reader
    monkeypatch.setattr(_ode_adjoint, "_history_reader", lambda solver, integrator: solvers.append(solver) or reader(
        solver, None if dense_output else integrator))
    solution = _ode_adjoint.ForwardSolution(lambda y, s: func(y, s, *args), y0, t[0], t[-1], tolerances["rtol"],
                                            tolerances["atol"], {})
    return solution, solvers[0]


def test_the_checkpoints_are_lsodas_interpolant_read_without_dense_output_objects(monkeypatch):
    """The adjoint's checkpoints read each step's Nordsieck history from LSODA's work arrays, as
    its own interpolation does, building no scipy dense-output object per step: they give y at the
    end of each step exactly, and agree with scipy's dense output (the last step's order) between
    the steps' ends to the solver's tolerance; without the work arrays, scipy's dense output."""
    solution, solver = checkpoints(monkeypatch, dense_output=False)
    monkeypatch.setattr(type(solver), "dense_output", lambda self: pytest.fail("a dense-output object was built"))
    ends = np.array(solution.ends)
    assert len(solution.pieces) == len(ends) - 1 > 100
    for k in range(1, len(ends)):
        np.testing.assert_array_equal(solution(ends[k]), solution.pieces[k - 1][0][0])
    monkeypatch.undo()
    dense, _ = checkpoints(monkeypatch, dense_output=True)
    assert dense.ends == solution.ends
    middles = (ends[1:] + ends[:-1]) / 2
    scale = np.max(np.abs([dense(s) for s in middles]))
    rtol = SYSTEMS["lotka_volterra"][4]["rtol"]
    for s in middles:
        np.testing.assert_allclose(solution(s), dense(s), rtol=0, atol=1e3 * rtol * scale)

