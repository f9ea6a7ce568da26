"""hessopt.minimize traces the objective by default (autodiff.function): the iterates are those of
eager evaluation, bit for bit; an objective that cannot be traced runs eagerly with the same result."""
import gc
import weakref

import numpy as np
import pytest

import autodiff as ad
import autodiff.jit.traced
import hessopt
from hessopt import problems
from hessopt._derivatives import with_hessian_rows

PROBLEMS = ["helical_valley", "wood", "brown_dennis", "extended_rosenbrock", "trigonometric"]


def both_modes(fun, x0, method, **options):
    traced = hessopt.minimize(fun, x0, method=method, options=dict(options))
    eager = hessopt.minimize(fun, x0, method=method, options={**options, "trace": False})
    return traced, eager


@pytest.mark.parametrize("method", ["newton-cg", "trust-krylov", "trust-exact", "arc", "newton"])
@pytest.mark.parametrize("name", PROBLEMS)
def test_traced_and_eager_runs_have_identical_iterates(name, method):
    problem = problems.get(name)
    traced, eager = both_modes(problem.fun, problem.x0, method, maxiter=60)
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    np.testing.assert_array_equal(traced.x, eager.x)
    assert (traced.nit, traced.nfev, traced.njev, traced.nhev) == (eager.nit, eager.nfev, eager.njev, eager.nhev)
    assert "untraced_reason" not in traced


def test_an_objective_that_leaves_the_engine_runs_eagerly_with_the_same_result():
    def fun(x):  # the centre is a constant to differentiation: .numpy() leaves the engine
        centre = x.numpy().mean() if isinstance(x, ad.Tensor) else x.mean()
        return np.sum((x - 0.5 * centre) ** 4) + np.sum(x ** 2)
    x0 = np.array([1.0, -2.0, 0.5])
    traced, eager = both_modes(fun, x0, "newton-cg")
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    assert "t.numpy()" in traced.untraced_reason
    assert traced.success


def test_variables_as_x0_give_the_same_iterates_traced_and_eager():
    def run(trace):
        w = ad.Variable(np.array([0.5, -1.5]))
        b = ad.Variable(0.3, trainable=False)
        result = hessopt.minimize(lambda: np.sum((w - b) ** 4 + w ** 2 * b), [w], method="trust-krylov",
                                  options={"trace": trace})
        return result, w.numpy()
    (traced, w_traced), (eager, w_eager) = run(True), run(False)
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    np.testing.assert_array_equal(w_traced, w_eager)


@pytest.mark.parametrize("method", ["lm", "gn"])
@pytest.mark.parametrize("name", ["helical_valley", "brown_dennis", "biggs_exp6"])
def test_least_squares_traced_and_eager_have_identical_iterates(name, method):
    problem = problems.get(name)
    traced = hessopt.least_squares(problem.residuals, problem.x0, method=method, options={"maxiter": 40})
    eager = hessopt.least_squares(problem.residuals, problem.x0, method=method,
                                  options={"maxiter": 40, "trace": False})
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    np.testing.assert_array_equal(traced.jac, eager.jac)
    assert "untraced_reason" not in traced


@pytest.mark.parametrize("method", ["adam", "gd"])
def test_first_order_runs_traced_and_eager_have_identical_iterates(method):
    problem = problems.get("trigonometric")
    traced, eager = both_modes(problem.fun, problem.x0, method, maxiter=50)
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    assert traced.fun < problem.fun(problem.x0)
    assert "untraced_reason" not in traced


def test_gauss_newton_runs_traced_and_eager_have_identical_iterates():
    rng = np.random.default_rng(2)
    features, targets = rng.normal(size=(20, 3)), rng.normal(size=20)

    def predict(p):
        return np.tanh(features @ p["w"] + p["b"]) @ p["v"]

    def loss(z):
        return 0.5 * np.mean((z - targets) ** 2)

    x0 = {"w": rng.normal(size=(3, 4)), "b": np.zeros(4), "v": rng.normal(size=4)}
    traced, eager = both_modes(lambda p: loss(predict(p)), x0, "hessian-free", ggn=(predict, loss), maxiter=15)
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    assert traced.nhev == eager.nhev > 0
    assert "untraced_reason" not in traced


def test_gauss_newton_runs_over_variables_traced_and_eager_have_identical_iterates():
    def run(trace):
        rng = np.random.default_rng(3)
        features, targets = rng.normal(size=(12, 2)), rng.normal(size=12)
        w, v = ad.Variable(rng.normal(size=(2, 3))), ad.Variable(rng.normal(size=3))
        predict = lambda: np.tanh(features @ w) @ v  # noqa: E731
        loss = lambda z: 0.5 * np.mean((z - targets) ** 2)  # noqa: E731
        result = hessopt.minimize(lambda: loss(predict()), [w, v], method="hessian-free",
                                  options={"ggn": (predict, loss), "maxiter": 10, "trace": trace})
        return result, w.numpy()
    (traced, w_traced), (eager, w_eager) = run(True), run(False)
    np.testing.assert_array_equal(traced.history["x"], eager.history["x"])
    np.testing.assert_array_equal(w_traced, w_eager)


@pytest.mark.parametrize("method", ["trust-ncg", "hessian-free", "newton-cg"])
def test_an_iterate_recording_is_dropped_before_the_next_one_is_made(monkeypatch, method):
    """One recording at a time: a line search lets go of its iterate's operator once it has its
    direction, so none is alive when a trial point's is made; a trust region (which may need its
    iterate's products again after a rejected trial) holds its iterate's, but no earlier one."""
    made, alive_at_creation = [], []
    hessian_operator = ad.hessian_operator

    def tracked(f, x, **options):
        gc.collect()
        alive_at_creation.append(sum(ref() is not None for ref in made))
        op = hessian_operator(f, x, **options)
        made.append(weakref.ref(op))
        return op

    monkeypatch.setattr(ad, "hessian_operator", tracked)
    problem = problems.get("extended_rosenbrock")
    hessopt.minimize(problem.fun, problem.x0, method=method, options={"maxiter": 20})
    assert len(made) > 10
    assert max(alive_at_creation) <= (1 if method == "trust-ncg" else 0), alive_at_creation


@pytest.mark.parametrize("native", [False, True])
def test_an_autodiff_function_is_traced_once_across_minimize_calls(monkeypatch, native):
    """An objective made once with autodiff.function (as a function is given to jax.jit once) keeps
    its traces across minimize calls: the second and third runs trace nothing and repeat the first's
    iterates bit for bit, which are the plain function's."""
    traces = []
    record = autodiff.jit.traced.record
    monkeypatch.setattr(autodiff.jit.traced, "record", lambda *a: traces.append(1) or record(*a))
    problem = problems.get("helical_valley")
    fun = ad.function(problem.fun, native=native)
    runs = [hessopt.minimize(fun, problem.x0, method="trust-exact")]
    first = len(traces)
    runs += [hessopt.minimize(fun, problem.x0, method="trust-exact") for _ in range(2)]
    assert first > 0 and len(traces) == first
    plain = hessopt.minimize(problem.fun, problem.x0, method="trust-exact")
    for run in runs:
        np.testing.assert_array_equal(run.history["x"], plain.history["x"])
        assert (run.nit, run.nfev, run.njev, run.nhev) == (plain.nit, plain.nfev, plain.njev, plain.nhev)


def test_an_autodiff_function_takes_args_as_inputs_and_lets_go_of_its_traces(monkeypatch):
    """args' float arrays are inputs of the kept programs (as jax.jit's arguments): fits to new data,
    or to data changed in place, trace nothing new and find each curve's own parameters; the traces
    live and die with the function."""
    traces = []
    record = autodiff.jit.traced.record
    monkeypatch.setattr(autodiff.jit.traced, "record", lambda *a: traces.append(1) or record(*a))

    def fit(p, t, y):
        return np.sum((p[0] * np.exp(-p[1] * t) - y) ** 2)
    t, y = np.linspace(0.0, 3.0, 20), np.empty(20)
    fun = ad.function(fit)
    for step, truth in enumerate(([2.0, 1.0], [3.0, 0.5], [1.5, 2.0])):
        y[:] = truth[0] * np.exp(-truth[1] * t)    # the same array, changed in place
        result = hessopt.minimize(fun, np.array([1.0, 1.0]), args=(t, y if step < 2 else y.copy()),
                                  method="trust-exact")
        np.testing.assert_allclose(result.x, truth, rtol=1e-6)
        if step == 0:
            first = len(traces)
    assert first > 0 and len(traces) == first
    gone = weakref.ref(fun)
    del fun, result   # (result.hess_inv holds the last iterate's operator)
    gc.collect()
    assert gone() is None



def counted_traces(monkeypatch) -> list:
    """A list that gets an item at each trace an autodiff.function takes."""
    traces = []
    record = autodiff.jit.traced.record
    monkeypatch.setattr(autodiff.jit.traced, "record", lambda *a: traces.append(1) or record(*a))
    return traces


def test_a_plain_function_called_again_replays_the_programs_of_its_last_call(monkeypatch):
    """minimize(f, x0) called again with the same plain f: its first call traces as always, and from
    the second on, each call records f once and replays the programs of the last call that traced
    when f computes the same program: no new trace from the third call on, the iterates bit for bit."""
    traces = counted_traces(monkeypatch)
    problem = problems.get("wood")

    def wood(x):   # a function of this test's (problem.fun may have been solved before)
        return problem.fun(x)
    runs = [hessopt.minimize(wood, problem.x0, method="trust-exact")]
    first = len(traces)
    runs += [hessopt.minimize(wood, problem.x0, method="trust-exact") for _ in range(3)]
    assert first > 0 and len(traces) == 2 * first
    eager = hessopt.minimize(problem.fun, problem.x0, method="trust-exact", options={"trace": False})
    for run in runs:
        np.testing.assert_array_equal(run.history["x"], eager.history["x"])
        assert (run.nit, run.nfev, run.njev, run.nhev) == (eager.nit, eager.nfev, eager.njev, eager.nhev)


def test_a_plain_function_fits_new_data_in_args_with_the_programs_of_its_last_call(monkeypatch):
    """scipy's loop over data sets, ``minimize(f, x0, args=(t, y))`` with a new y each call: args' float
    arrays are inputs of the kept programs (as an autodiff.function's), so from the third call on no
    call traces, whether y is a new array or the same one changed in place; each fit finds its own
    curve's parameters, its iterates those of the eager run bit for bit. A new shape of y, or
    another value of a number in args, is another program: traced, and right."""
    traces = counted_traces(monkeypatch)

    def fit(p, t, y, scale):
        return np.sum((scale * p[0] * np.exp(-p[1] * t) - y) ** 2)
    t, y = np.linspace(0.0, 3.0, 20), np.empty(20)
    x0 = np.array([1.0, 1.0])
    for step, truth in enumerate(([2.0, 1.0], [3.0, 0.5], [1.5, 2.0], [2.5, 0.75])):
        y[:] = truth[0] * np.exp(-truth[1] * t)
        data = (t, y if step % 2 else y.copy(), 1.0)   # a new array, or the same one changed in place
        result = hessopt.minimize(fit, x0, args=data, method="trust-exact")
        eager = hessopt.minimize(fit, x0, args=data, method="trust-exact", options={"trace": False})
        np.testing.assert_allclose(result.x, truth, rtol=1e-6)
        np.testing.assert_array_equal(result.history["x"], eager.history["x"])
        assert (result.nit, result.nfev, result.njev, result.nhev) == (eager.nit, eager.nfev, eager.njev, eager.nhev)
        if step == 0:
            first = len(traces)
    assert first > 0 and len(traces) == 2 * first
    t40 = np.linspace(0.0, 3.0, 40)
    result = hessopt.minimize(fit, x0, args=(t40, 2.0 * np.exp(-0.5 * t40), 1.0), method="trust-exact")
    np.testing.assert_allclose(result.x, [2.0, 0.5], rtol=1e-6)
    result = hessopt.minimize(fit, x0, args=(t, 2.0 * np.exp(-0.5 * t), 2.0), method="trust-exact")
    np.testing.assert_allclose(result.x, [1.0, 0.5], rtol=1e-6)
    assert len(traces) == 4 * first


def test_a_plain_function_sees_what_it_reads_change_between_calls(monkeypatch):
    """What f reads from outside (here a dict's array) is part of its programs: rebound, changed in
    place, or rebound to the old bytes while the kept programs' array changed in place, each call
    traces again and finds the minimum of the f of now."""
    traces = counted_traces(monkeypatch)
    held = {"centre": np.array([1.0, 2.0])}

    def fun(x):
        return np.sum(np.cosh(x - held["centre"]))
    x0 = np.zeros(2)
    for _ in range(2):   # (kept from the second call on)
        np.testing.assert_allclose(hessopt.minimize(fun, x0, method="trust-exact").x, [1.0, 2.0], atol=1e-8)
    first = len(traces) // 2
    held["centre"][:] = [4.0, 4.0]   # the kept programs' array, changed in place, while f reads its old bytes
    held["centre"] = np.array([1.0, 2.0])
    np.testing.assert_allclose(hessopt.minimize(fun, x0, method="trust-exact").x, [1.0, 2.0], atol=1e-8)
    held["centre"] = np.array([3.0, -1.0])                                   # rebound
    np.testing.assert_allclose(hessopt.minimize(fun, x0, method="trust-exact").x, [3.0, -1.0], atol=1e-8)
    held["centre"][:] = [0.5, 0.25]                                          # changed in place
    np.testing.assert_allclose(hessopt.minimize(fun, x0, method="trust-exact").x, [0.5, 0.25], atol=1e-8)
    assert len(traces) == 5 * first


def test_a_plain_function_with_a_rule_of_its_own_is_traced_at_each_call(monkeypatch):
    """A primitive of the user's may have a derivative rule reading what no recording shows (here a
    global factor): its programs are not kept, and each call has the derivatives of now."""
    factor = [1.0]
    square = ad.extend.primitive(lambda x: x * x, "square")
    ad.extend.defvjp(square, lambda g, ans, x: g * 2.0 * factor[0] * x)

    def fun(x):
        return np.sum(square(x - 1.0)) + np.sum(x ** 4)
    x0 = np.array([3.0, -2.0])
    traces = counted_traces(monkeypatch)
    for _ in range(2):
        hessopt.minimize(fun, x0, method="trust-exact")
    first = len(traces) // 2
    factor[0] = 3.0
    again = hessopt.minimize(fun, x0, method="trust-exact")
    assert len(traces) == 3 * first
    alone = hessopt.minimize(lambda x: fun(x), x0, method="trust-exact")   # a new function: its own trace
    np.testing.assert_array_equal(again.history["x"], alone.history["x"])


def test_batches_of_a_function_replay_the_programs_kept_for_it(monkeypatch):
    """minimize_many(f, starts) called again with the same plain f (a sweep in a loop): the runs of
    a batch share the programs of its first run, which finds those its last batch kept (as
    ``minimize(f)`` called again): no new trace from the third batch on. An autodiff.function made
    once keeps its own: a batch after a minimize traces nothing. Each run's iterates are its eager
    run's bit for bit."""
    traces = counted_traces(monkeypatch)
    problem = problems.get("helical_valley")

    def helical_valley(x):   # a function of this test's (problem.fun may have been solved before)
        return problem.fun(x)
    starts = [problem.x0, 0.9 * problem.x0, problem.x0 + 0.5]
    eager = [hessopt.minimize(problem.fun, x0, method="trust-exact", options={"trace": False}) for x0 in starts]

    def solved_as_eager(runs):
        for run, alone in zip(runs, eager):
            np.testing.assert_array_equal(run.history["x"], alone.history["x"])
            assert (run.nit, run.nfev, run.njev, run.nhev) == (alone.nit, alone.nfev, alone.njev, alone.nhev)
    counts = []
    for _ in range(3):
        solved_as_eager(hessopt.minimize_many(helical_valley, starts, method="trust-exact"))
        counts.append(len(traces))
    assert counts[0] > 0 and counts == [counts[0], 2 * counts[0], 2 * counts[0]]
    made = ad.function(problem.fun)
    hessopt.minimize(made, starts[0], method="trust-exact")
    before = len(traces)
    solved_as_eager(hessopt.minimize_many(made, starts, method="trust-exact"))
    assert len(traces) == before


def test_a_plain_function_solved_once_is_not_kept_alive():
    """Nor is the next function made at its address: a note of a function gone is not the new one's
    (functions made in a loop, each solved once, are freed and their ids taken again)."""
    for _ in range(20):
        def quartic(x):
            return np.sum((x - 1.0) ** 4) + np.sum(x ** 2)
        hessopt.minimize(quartic, np.zeros(3), method="trust-exact")
        gone = weakref.ref(quartic)
        del quartic
        gc.collect()
        assert gone() is None


def test_calls_inside_a_transform_keep_no_programs():
    """Inside a transform (here a tape), f runs as it is: no recording of it for kept programs (the
    tape would record it too), and nothing noted for later calls."""
    from hessopt._derivatives import PLAIN_TRACES

    def f(x):
        return np.sum(x ** 2)
    with ad.GradientTape():
        assert [PLAIN_TRACES.of(f, (), np.ones(2)) for _ in range(3)] == [None] * 3
    assert PLAIN_TRACES.of(f, (), np.ones(2)) is None    # the first call outside: noted
    assert PLAIN_TRACES.of(f, (), np.ones(2)) == {}      # the second: programs kept from now on


def test_programs_kept_for_a_function_gone_are_not_found_by_a_new_one_at_its_id():
    """Programs kept for a fun that did not keep it alive (no run made them) are its own: a new
    function at the id of the one gone is a first call, noted and not recorded (the stale entry's
    record made a first call of a new function at a reused id record f once more)."""
    from hessopt._derivatives import PLAIN_TRACES

    def function():
        def f(x):
            return np.sum(x ** 2)
        return f
    f, point = function(), np.ones(2)
    assert PLAIN_TRACES.of(f, (), point) is None and PLAIN_TRACES.of(f, (), point) == {}
    gone = id(f)
    del f
    gc.collect()
    made = [function() for _ in range(64)]   # (CPython hands a freed address to the next objects)
    reused = [g for g in made if id(g) == gone] or made[:1]
    for g in reused:
        assert PLAIN_TRACES.of(g, (), point) is None     # a first call
        assert PLAIN_TRACES.of(g, (), point) == {}       # its second: kept from now on


def test_a_plain_function_with_a_branch_is_recorded_for_the_check_once():
    """A branch on f's values gives its recording no content key: the second call records f for the
    check and finds that; later calls run f as often as the first did."""
    calls = []

    def branchy(x):
        calls.append(type(x) is not np.ndarray)   # True: a recording (a trace or the check)
        return np.sum(x ** 4) + (x[0] if x[0] > 0 else -x[0]) + np.sum(x ** 2)
    recorded = []
    for _ in range(4):
        calls.clear()
        hessopt.minimize(branchy, np.array([1.0, -2.0]), method="trust-exact")
        recorded.append(sum(calls))
    assert recorded[1] == recorded[0] + 1 and recorded[2] == recorded[3] == recorded[0]


@pytest.mark.parametrize("method", ["trust-exact", "newton", "dogleg"])
def test_a_method_that_factors_the_hessian_traces_a_new_function_once(monkeypatch, method):
    """trust-exact, newton and dogleg factor each point's dense Hessian and ask for no products: a
    point's value, gradient and Hessian are one program, so a new function is traced once (an
    operator's pair and its matrix's batch were two traces)."""
    traces = counted_traces(monkeypatch)
    problem = problems.get("helical_valley")
    result = hessopt.minimize(lambda x: problem.fun(x), problem.x0, method=method)
    assert result.success and len(traces) == 1


@pytest.mark.parametrize("name", PROBLEMS + ["biggs_exp6", "osborne2"])
def test_a_point_made_with_its_hessian_is_the_operators_bit_for_bit(name):
    """The value, gradient and dense Hessian of one program (``with_hessian_rows``) are those of the
    point's Hessian operator and its ``to_dense``, bit for bit, traced and replayed."""
    problem = problems.get(name)
    traced = ad.function(problem.fun)
    with_hessian = ad.function(with_hessian_rows(problem.fun))
    identity = np.eye(problem.x0.size)
    for x in (problem.x0, problem.x0 + 0.25, 0.5 * problem.x0 - 0.125):
        operator = ad.hessian_operator(traced, x)
        value, gradient, rows = with_hessian(x, identity)
        assert value == operator.value
        np.testing.assert_array_equal(gradient, operator.gradient)
        np.testing.assert_array_equal(rows.T, operator.to_dense())
