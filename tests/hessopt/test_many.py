"""hessopt.minimize_many: every start gets its own entry, with no executor, a process pool and a Dask
cluster; a run that raises, hangs or kills its worker costs only its own entry.

The objectives live in _many_tasks.py (module level, so workers unpickle them). Tests are grouped by
where the runs go (a module-scoped parameter), so the Dask cluster starts once, last: no process pool
forks while its threads run.

Times here are margins, not measurements: a good run takes milliseconds and gets seconds, a hung one
waits for a file, a slow start sleeps longer than the timeout it must not count against, and the
only elapsed times asserted are lower bounds (what the batch had to wait for) or ceilings far from
what is promised, so that the tests hold on a loaded machine.
"""
import math
import signal
import time
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import hessopt
from hessopt import BatchStatus

from _many_tasks import (
    BAD,
    SLOW_START,
    PauseAtStart,
    cancelled,
    dying,
    dying_once_logged,
    exiting,
    hanging,
    interrupted,
    interrupting_its_caller,
    killed,
    locked_operator_hessian,
    quartic_refusing_near_minimum,
    raising,
    raising_unprintable,
    shifted_sphere,
    traced_sphere,
)

STARTS = [np.zeros(2), np.full(2, BAD), np.ones(2), np.array([2.0, -1.0])]
# Seconds: a good run here takes milliseconds (up to a third of a second on a fresh Dask worker of a
# machine loaded eightfold), the hanging one two minutes; shorter than a slow start, so that a clock
# that counted the start would time out.
TIMEOUT = SLOW_START - 1.0
HUNG = 120.0    # seconds after which a batch that has not returned is taken for hung
# A LocalCluster gives up on a worker whose name has been missing 15 s after it left: on a loaded
# machine, the replacement of a worker a test ends (twice, one after the other) can take that long.
DASK_CONFIG = {"distributed.deploy.lost-worker-timeout": "10 minutes"}


@pytest.fixture(scope="module", params=["no executor", "process pool", "dask"])
def where(request):
    """Where the runs go: a factory of executors (None: no executor), and what it is called."""
    if request.param == "no executor":
        yield request.param, lambda: None
    elif request.param == "process pool":
        pools = []
        yield request.param, lambda: pools.append(ProcessPoolExecutor(2)) or pools[-1]
        for pool in pools:
            pool.shutdown()
    else:
        distributed = pytest.importorskip("distributed")
        import dask
        with dask.config.set(DASK_CONFIG | {"distributed.scheduler.allowed-failures": 0}):  # KilledWorker at once
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None) as cluster, \
                    distributed.Client(cluster) as client:
                yield request.param, client.get_executor


def assert_solved(results, indices, starts=STARTS):
    """The runs at ``indices`` reached the minimum, (3, 3), as minimize does from their starts."""
    for i in indices:
        alone = hessopt.minimize(shifted_sphere, starts[i], method="newton")
        assert results[i].success and results[i].nit == alone.nit
        np.testing.assert_allclose(results[i].x, [3.0, 3.0], rtol=1e-12)
        np.testing.assert_allclose(results[i].x, alone.x, rtol=1e-14)


def test_a_run_that_exits_is_a_failed_entry_not_the_end_of_the_batch():
    results = hessopt.minimize_many(exiting, STARTS, method="newton")
    assert (results[1].status, results[1].message) == (BatchStatus.RAISED,
                                                       "SystemExit: the objective called sys.exit")
    assert_solved(results, [0, 2, 3])


def test_a_timeout_counts_from_when_a_run_can_start():
    # 7 runs of half a second (the start (3, 3) makes no iteration) on 2 workers take 2 s in all:
    # each still has its 1.5 s.
    starts = [np.full(2, float(k)) for k in range(8)]
    with ProcessPoolExecutor(2) as pool:
        begin = time.monotonic()
        results = hessopt.minimize_many(shifted_sphere, starts, method="newton", executor=pool,
                                        timeout=1.5, callback=PauseAtStart())
        elapsed = time.monotonic() - begin
    assert [r.success for r in results] == [True] * 8
    assert elapsed >= 4 * 0.5 > 1.5     # the batch outlived one timeout: the pauses happened


def test_a_runs_clock_starts_when_its_process_is_ready(tmp_path):
    # Each process of this pool starts SLOW_START s late (its initializer sleeps), longer than the
    # timeout: the hung run's clock starts when it runs, and so do the clocks of the runs after it,
    # on the fresh pool (same initializer) that replaces the one killed to stop it.
    starts = [STARTS[1], STARTS[0], STARTS[2]]
    with ProcessPoolExecutor(1, initializer=time.sleep, initargs=(SLOW_START,)) as pool:
        begin = time.monotonic()
        results = hessopt.minimize_many(hanging, starts, method="newton", executor=pool,
                                        timeout=TIMEOUT, args=(str(tmp_path / "release"),))
        elapsed = time.monotonic() - begin
    assert [r.status for r in results] == [BatchStatus.TIMED_OUT, 0, 0]
    assert_solved(results, [1, 2], starts)
    assert elapsed >= 2 * SLOW_START + TIMEOUT     # two starts and the hung run's timeout


def test_a_run_in_flight_when_another_kills_the_pool_is_run_again(tmp_path):
    # The first run writes the log after its first iteration and pauses; the second waits for the
    # log and kills the pool, so the first fails with BrokenProcessPool too. It is run again alone
    # (its pause is logged twice) and keeps its result.
    log = str(tmp_path / "pauses")
    with ProcessPoolExecutor(2) as pool:
        results = hessopt.minimize_many(dying_once_logged, STARTS[:2], method="newton", executor=pool,
                                        args=(log,), callback=PauseAtStart(log))
    assert [r.status for r in results] == [0, BatchStatus.WORKER_DIED]
    np.testing.assert_allclose(results[0].x, [3.0, 3.0], rtol=1e-12)
    logged = np.loadtxt(log)
    assert logged.shape == (2,)                              # the first run ran twice
    np.testing.assert_allclose(logged, 3.0, rtol=1e-12)      # Newton's one step from 0, each time


def test_a_thread_pool_abandons_a_hanging_run(tmp_path):
    release = str(tmp_path / "release")
    with ThreadPoolExecutor(2) as pool:
        results = hessopt.minimize_many(hanging, STARTS, method="newton", executor=pool,
                                        timeout=TIMEOUT, args=(release,))
        open(release, "w").close()
    assert [r.status for r in results][1] == BatchStatus.TIMED_OUT
    assert_solved(results, [0, 2, 3])


def test_a_thread_pool_whose_threads_all_hang_reports_the_runs_left_as_not_run(tmp_path):
    # The one thread is held by the hung run, which cannot be stopped: the runs after it never
    # start, and say so (they did not time out).
    release = str(tmp_path / "release")
    with ThreadPoolExecutor(1) as pool:
        results = hessopt.minimize_many(hanging, STARTS, method="newton", executor=pool,
                                        timeout=TIMEOUT, args=(release,))
        open(release, "w").close()
    assert [r.status for r in results] == [0, BatchStatus.TIMED_OUT, BatchStatus.NOT_RUN, BatchStatus.NOT_RUN]
    assert results[2].message.startswith("not run: ")
    for result, start in zip(results[2:], STARTS[2:]):
        assert not result.success and result.nit == 0 and math.isnan(result.fun)
        np.testing.assert_array_equal(result.x, start)
    assert_solved(results, [0])


def test_an_interrupt_in_a_run_here_stops_the_batch_with_what_finished():
    # With no executor the run is the caller: Ctrl-C there is the caller's, and stops the batch.
    with pytest.raises(KeyboardInterrupt) as interrupt:
        hessopt.minimize_many(interrupted, STARTS, method="newton")
    results = interrupt.value.results
    assert results[1:] == [None, None, None]
    assert_solved(results, [0])


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt here, as in an interactive Python, also where the suite was
    started with SIGINT ignored (a background job of a non-interactive shell, as CI may run it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_runs_are_in_flight_stops_the_batch_with_what_finished(tmp_path, ctrl_c_raises):
    # The BAD run sends this process SIGINT, as Ctrl-C would, and hangs: the batch stops at once,
    # without that run, which had not finished.
    release = str(tmp_path / "release")
    with ProcessPoolExecutor(2) as pool:
        with pytest.raises(KeyboardInterrupt) as interrupt:
            hessopt.minimize_many(interrupting_its_caller, STARTS, method="newton", executor=pool,
                                  args=(release,))
        open(release, "w").close()
    results = interrupt.value.results
    assert len(results) == 4 and results[1] is None
    assert_solved(results, [i for i, r in enumerate(results) if r is not None])


def test_a_raising_run_reports_its_last_iterate():
    # Newton on sum (x - 3)^4 from 0 accepts 1 and 5/3, then f raises at 19/9.
    result, = hessopt.minimize_many(quartic_refusing_near_minimum, [np.zeros(1)], method="newton")
    assert (result.status, result.nit) == (BatchStatus.RAISED, 2)
    assert result.message == "FloatingPointError: too close to the minimum"
    np.testing.assert_allclose(result.x, [5.0 / 3.0], rtol=1e-12)
    assert result.fun == pytest.approx((4.0 / 3.0) ** 4, rel=1e-12)


def test_the_users_callback_still_sees_every_iterate():
    seen, new_style = [], []
    hessopt.minimize_many(quartic_refusing_near_minimum, [np.zeros(1)], method="newton",
                          callback=lambda xk: seen.append(xk.copy()))
    hessopt.minimize_many(quartic_refusing_near_minimum, [np.zeros(1)], method="newton",
                          callback=lambda intermediate_result: new_style.append(intermediate_result.nit))
    np.testing.assert_allclose(np.ravel(seen), [1.0, 5.0 / 3.0], rtol=1e-12)   # after each iteration
    assert new_style == [1, 2]



def test_callbacks_are_inspected_once_per_batch_not_per_run(monkeypatch):
    """scipy's rule for a callback's style is read from its signature once for the batch; each run's
    own callback (which keeps the last iterate) declares its signature, so minimize does not
    inspect it either: a fixed cost of every run. Both styles still see every iterate."""
    import inspect

    from hessopt import _arguments, _many
    inspected = []

    def counted(callback):
        inspected.append(callback)
        return takes_intermediate_result(callback)
    takes_intermediate_result = _arguments.takes_intermediate_result
    monkeypatch.setattr(_arguments, "takes_intermediate_result", counted)
    monkeypatch.setattr(_many, "takes_intermediate_result", counted)
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.nit)
    runs = hessopt.minimize_many(lambda x: np.sum((x - 1.0) ** 4), [np.zeros(2)] * 5, method="newton",
                                 callback=callback)
    assert inspected.count(callback) == 1 and all(run.success for run in runs)
    assert seen == list(range(1, runs[0].nit + 1)) * 5
    last = _many._LastIterate(None, False)          # what minimize inspects: its declared signature
    assert inspect.signature(last) is _many._LastIterate.__signature__ and takes_intermediate_result(last)


def test_progress_reports_each_finished_run(capsys):
    calls = []
    hessopt.minimize_many(raising, STARTS, method="newton",
                          progress=lambda done, total, result: calls.append((done, total, result.success)))
    assert calls == [(1, 4, True), (2, 4, False), (3, 4, True), (4, 4, True)]
    hessopt.minimize_many(raising, STARTS, method="newton", progress=True)
    err = capsys.readouterr().err
    assert err.count("\r") == 5 and err.endswith("] 4/4 runs, 1 not successful\n")


@pytest.mark.parametrize("call, error, match", [
    (dict(fun=1.0), TypeError, "fun must be callable"),
    (dict(method="bfgs"), ValueError, "unknown method 'bfgs'"),
    (dict(maxiter=3), TypeError, "maxiter"),
    (dict(callback=3), TypeError, "callback must be callable"),
    (dict(timeout=0), ValueError, "timeout must be a positive number"),
    (dict(timeout=float("nan")), ValueError, "timeout must be a positive number"),
    (dict(timeout="a"), TypeError, "timeout must be a positive number of seconds or None; got 'a'"),
    (dict(timeout=True), TypeError, "timeout must be a positive number of seconds or None; got True"),
    (dict(progress="yes"), TypeError, "progress must be True, False or a callable"),
    (dict(executor=object()), TypeError, "executor must be a concurrent.futures.Executor"),
    (dict(fun=lambda x: x @ x, timeout=5.0), TypeError, "fun and the options of minimize to pickle"),
])
def test_bad_arguments_raise_before_any_run(call, error, match):
    arguments = {"fun": shifted_sphere, "x0s": STARTS, "method": "newton", **call}
    with pytest.raises(error, match=match):
        hessopt.minimize_many(**arguments)


def test_a_lambda_cannot_go_to_a_process_pool():
    with ProcessPoolExecutor(1) as pool, pytest.raises(TypeError, match="defined at module level"):
        hessopt.minimize_many(lambda x: x @ x, STARTS, executor=pool)


def test_good_runs_are_minimize_on_each_start(where):
    name, executor = where
    executor = executor()
    if name == "dask":           # the Client itself serves as well as client.get_executor()
        executor = executor._client
    starts = [np.full(3, float(k)) for k in range(4)]
    results = hessopt.minimize_many(shifted_sphere, starts, method="trust-exact", executor=executor)
    for start, result in zip(starts, results):
        alone = hessopt.minimize(shifted_sphere, start, method="trust-exact")
        assert result.success and result.nit == alone.nit
        np.testing.assert_allclose(result.x, [3.0, 3.0, 3.0], atol=1e-8)
        np.testing.assert_allclose(result.x, alone.x, rtol=1e-14)


def test_a_module_level_autodiff_function_goes_to_every_executor(where):
    """docs/guides/replay.md: a module-level @ad.function pickles by reference, so it goes to a process pool or
    Dask (its traces are made again there)."""
    traced_sphere(np.zeros(2))           # traced here first: the traces do not travel
    results = hessopt.minimize_many(traced_sphere, STARTS, method="newton", executor=where[1]())
    assert_solved(results, range(4))


def test_a_run_that_raises_is_its_own_failed_entry(where):
    reports = []
    results = hessopt.minimize_many(raising, STARTS, method="newton", executor=where[1](),
                                    progress=lambda done, total, result: reports.append((done, total, result)))
    assert [(done, total) for done, total, _ in reports] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted(id(result) for _, _, result in reports) == sorted(map(id, results))   # each run once
    bad = results[1]
    assert (bad.success, bad.status, bad.message) == (False, BatchStatus.RAISED,
                                                      "ValueError: no model at x[0] = -7.0")
    np.testing.assert_array_equal(bad.x, [BAD, BAD])
    assert math.isnan(bad.fun) and bad.nit == 0
    assert "raise ValueError" in bad.traceback
    assert_solved(results, [0, 2, 3])


def returns_within(seconds, call):
    """call()'s value, failing (instead of hanging) if it has not returned within ``seconds``."""
    waiter = ThreadPoolExecutor(1)
    try:
        return waiter.submit(call).result(timeout=seconds)
    finally:
        waiter.shutdown(wait=False)


@pytest.mark.parametrize("objective, name", [(interrupted, "KeyboardInterrupt"), (cancelled, "CancelledError")])
def test_a_base_exception_in_a_run_is_its_own_failed_entry(where, objective, name):
    if where[0] == "no executor" and objective is interrupted:
        pytest.skip("here the run is the caller: Ctrl-C stops the batch (test above)")
    results = returns_within(HUNG, lambda: hessopt.minimize_many(objective, STARTS, method="newton",
                                                                 executor=where[1]()))
    assert (results[1].status, results[1].message.split(":")[0]) == (BatchStatus.RAISED, name)
    assert f"{name}" in results[1].traceback
    assert_solved(results, [0, 2, 3])


def test_an_interrupt_here_stops_the_batch_with_what_finished_attached(where):
    finished = []

    def progress(done, total, result):      # Ctrl-C in the caller, as the second run is reported
        finished.append(result)
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as interrupt:
        hessopt.minimize_many(shifted_sphere, STARTS, method="newton", executor=where[1](), progress=progress)
    results = interrupt.value.results
    assert len(results) == 4
    assert sorted(id(r) for r in results if r is not None) == sorted(map(id, finished))
    assert_solved(results, [i for i, r in enumerate(results) if r is not None])


def test_an_exception_whose_str_raises_costs_only_its_entry(where):
    results = hessopt.minimize_many(raising_unprintable, STARTS, method="newton", executor=where[1]())
    assert (results[1].status, results[1].message) == (BatchStatus.RAISED,
                                                       "Unprintable: <str() raised RuntimeError>")
    assert_solved(results, [0, 2, 3])


def test_a_progress_that_raises_costs_only_its_report(where):
    reported = []

    def progress(done, total, result):      # a failed entry has no jac: AttributeError there
        reported.append(done)
        return result.jac

    with pytest.warns(RuntimeWarning, match=r"progress raised AttributeError: jac .*start 1\b"):
        results = hessopt.minimize_many(raising, STARTS, method="newton", executor=where[1](),
                                        progress=progress)
    assert reported == [1, 2, 3, 4]
    assert results[1].status == BatchStatus.RAISED
    assert_solved(results, [0, 2, 3])


def test_a_result_that_does_not_pickle_comes_back_with_the_fields_that_do(where):
    name, executor = where
    starts = [np.zeros(2), np.ones(2)]
    results = hessopt.minimize_many(shifted_sphere, starts, method="trust-ncg", executor=executor(),
                                    hess=locked_operator_hessian)
    for start, result in zip(starts, results):
        alone = hessopt.minimize(shifted_sphere, start, method="trust-ncg", hess=locked_operator_hessian)
        assert result.success and result.nit == alone.nit
        np.testing.assert_array_equal(result.x, alone.x)
        np.testing.assert_array_equal(result.jac, alone.jac)
        if name == "no executor":           # nothing travelled: the result is minimize's
            assert result.keys() == alone.keys() and result.message == alone.message
            np.testing.assert_array_equal(result.hess.matvec(np.ones(2)), [2.0, 2.0])
        else:
            assert result.keys() == alone.keys() - {"hess"} | {"unpicklable"}
            assert list(result.unpicklable) == ["hess"]
            assert result.message == f"{alone.message} [not returned, did not pickle: hess]"


@pytest.mark.parametrize("objective", [dying, killed], ids=["os._exit", "SIGKILL"])
def test_a_run_whose_worker_dies_is_its_own_failed_entry(where, objective):
    name, executor = where
    timeout = 60.0 if name == "no executor" else None   # with no executor, a timeout isolates runs
    results = hessopt.minimize_many(objective, STARTS, method="newton", executor=executor(), timeout=timeout)
    bad = results[1]
    assert (bad.success, bad.status) == (False, BatchStatus.WORKER_DIED)
    # Dask (allowed-failures 0) says KilledWorker, unless minimize_many sees the worker leave first
    causes = ("KilledWorker", "WorkerLost") if name == "dask" else ("BrokenProcessPool",)
    assert bad.message.startswith(tuple(f"worker died ({cause}: " for cause in causes))
    np.testing.assert_array_equal(bad.x, [BAD, BAD])
    assert_solved(results, [0, 2, 3])


def test_hung_runs_time_out_and_the_runs_after_them_run_in_full(where, tmp_path):
    # On two workers two runs hang; the four after them wait for the workers that replace those
    # stopped, and run in full (on Dask they came back timed out, never having run). With no
    # executor, runs go one at a time: one hangs.
    name, executor = where
    executor = executor()
    if name == "no executor":
        hung, starts = [1], STARTS
    else:
        hung, starts = [0, 1], [np.full(2, BAD)] * 2 + [np.full(2, float(k)) for k in range(4)]
    start = time.monotonic()
    results = hessopt.minimize_many(hanging, starts, method="newton", executor=executor,
                                    timeout=TIMEOUT, args=(str(tmp_path / "release"),))
    elapsed = time.monotonic() - start
    assert elapsed < 60.0        # a hung run would take 120 s: its worker was stopped
    for i in hung:
        assert (results[i].success, results[i].status, results[i].message) == (
            False, BatchStatus.TIMED_OUT, f"timed out after {TIMEOUT:g} s")
        np.testing.assert_array_equal(results[i].x, [BAD, BAD])
    assert_solved(results, [i for i in range(len(starts)) if i not in hung], starts)
    if name == "process pool":   # its hung workers were killed: the pool passed in is broken
        with pytest.raises(BrokenExecutor):
            executor.submit(shifted_sphere, np.zeros(2)).result()
    if name == "dask":           # the hung workers' processes were ended and their nannies started anew
        assert hessopt.minimize_many(shifted_sphere, STARTS, method="newton", executor=executor)[1].success


@pytest.fixture(scope="module")
def slow_worker():
    """A one-worker Dask cluster whose worker registers SLOW_START s after its process starts (a
    preload that sleeps), as a replacement does on a loaded machine; Dask's default configuration
    (a task whose worker dies is retried on up to three more)."""
    distributed = pytest.importorskip("distributed")
    import dask
    with dask.config.set(DASK_CONFIG), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                     preload=["_many_tasks"]) as cluster, \
            distributed.Client(cluster) as client:
        yield client.get_executor()


def test_after_a_timeout_the_next_run_waits_for_the_slow_replacement_worker(slow_worker, tmp_path):
    """The hung run's worker is ended; the runs after it wait for its replacement (which takes
    longer to start than their timeout) before their clocks start, and do not land on the dying
    process (a KilledWorker there, final on one worker, was reported as the innocent run's own)."""
    release = str(tmp_path / "release")
    begin = time.monotonic()
    results = hessopt.minimize_many(hanging, STARTS, method="newton", executor=slow_worker,
                                    timeout=TIMEOUT, args=(release,))
    elapsed = time.monotonic() - begin
    open(release, "w").close()
    assert [r.status for r in results] == [0, BatchStatus.TIMED_OUT, 0, 0]
    assert_solved(results, [0, 2, 3])
    assert elapsed >= TIMEOUT + SLOW_START        # the hung run's timeout, then the replacement


def test_a_run_that_kills_its_slow_worker_is_worker_died_not_timed_out(slow_worker):
    """Dask would retry the run on the replacement (and the next), each slower to start than the
    timeout: the run is reported when its worker dies, and the others wait for the replacement."""
    results = hessopt.minimize_many(dying, STARTS, method="newton", executor=slow_worker, timeout=TIMEOUT)
    assert [r.status for r in results] == [0, BatchStatus.WORKER_DIED, 0, 0]
    assert results[1].message.startswith("worker died (")
    assert_solved(results, [0, 2, 3])


def test_a_dask_worker_without_a_nanny_left_running_a_hung_run_gets_no_more_runs(tmp_path):
    """A cluster of threads (no nanny): the hung run's worker cannot be ended, keeps the run, and
    its one thread: the runs after it never start, and say so."""
    distributed = pytest.importorskip("distributed")
    release = str(tmp_path / "release")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        results = hessopt.minimize_many(hanging, STARTS, method="newton", executor=client.get_executor(),
                                        timeout=TIMEOUT, args=(release,))
        open(release, "w").close()
    assert [r.status for r in results] == [0, BatchStatus.TIMED_OUT, BatchStatus.NOT_RUN, BatchStatus.NOT_RUN]
    assert_solved(results, [0])


BEALE_Y = np.array([1.5, 2.25, 2.625])


def beale_counting_traces(x, traces):
    """MGH's Beale function; counts its calls with a traced argument (not a NumPy array) in ``traces``."""
    if type(x) is not np.ndarray:
        traces.append(1)
    powers = x[1] ** np.arange(1, 4)
    residuals = BEALE_Y - x[0] * (1.0 - powers)
    return residuals @ residuals


@pytest.mark.parametrize("method", ["newton", "trust-exact", "trust-ncg"])
def test_the_runs_of_a_batch_here_trace_fun_once_and_are_minimize_on_each_start(method):
    starts = [np.array([1.0, 1.0]), np.array([2.0, 0.2]), np.array([0.5, -0.5]), np.array([3.5, 0.6])]
    traces_alone, traces_batch = [], []
    alone = [hessopt.minimize(beale_counting_traces, starts[0], args=(traces_alone,), method=method)]
    per_run = len(traces_alone)
    results = hessopt.minimize_many(beale_counting_traces, starts, method=method, args=(traces_batch,))
    assert per_run >= 1 and len(traces_batch) == per_run     # the first run's traces serve every run
    alone += [hessopt.minimize(beale_counting_traces, start, args=([],), method=method) for start in starts[1:]]
    for result, expected in zip(results, alone):
        assert result.success and result.nit > 3
        assert (result.nit, result.nfev, result.njev, result.nhev) == (expected.nit, expected.nfev,
                                                                        expected.njev, expected.nhev)
        np.testing.assert_array_equal(result.x, expected.x)      # the same replayed programs
        np.testing.assert_allclose(result.x, [3.0, 0.5], atol=1e-6)


def test_threads_of_a_pool_each_trace_for_their_own_runs():
    starts = [np.array([1.0, 1.0]) + 0.1 * k for k in range(8)]
    alone = [hessopt.minimize(beale_counting_traces, start, args=([],), method="newton") for start in starts]
    with ThreadPoolExecutor(2) as pool:
        results = hessopt.minimize_many(beale_counting_traces, starts, method="newton", args=([],),
                                        executor=pool)
    for result, expected in zip(results, alone):
        assert result.success and result.nit == expected.nit
        np.testing.assert_array_equal(result.x, expected.x)


def inner_quartic(y):
    return np.sum((y - 2.0) ** 4)


def around_an_inner_minimum(x):
    """(x - y*)^2, y* = 2 the minimum of another objective, found by minimize inside this one."""
    inner = hessopt.minimize(inner_quartic, np.zeros(1), method="newton", options={"gtol": 1e-12})
    return np.sum((x - inner.x) ** 2)


def test_an_objective_that_calls_minimize_on_another_function_traces_that_one_itself():
    results = hessopt.minimize_many(around_an_inner_minimum, [np.zeros(1), np.ones(1)], method="newton")
    inner = hessopt.minimize(inner_quartic, np.zeros(1), method="newton", options={"gtol": 1e-12}).x
    for result in results:
        assert result.success
        np.testing.assert_allclose(result.x, inner, rtol=1e-12)
        np.testing.assert_allclose(result.x, [2.0], atol=1e-3)    # Newton on a quartic: linear convergence
