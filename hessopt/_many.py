"""hessopt.minimize_many: independent runs (multistart, sweeps) where one bad start costs one entry.

Each start runs as its own task on an existing engine (no executor: here; a process pool; a Dask
cluster). Whatever a run raises, any BaseException (but Ctrl-C to the caller, when the run is the
caller), comes back as a failed result from the worker itself; a run that outlives its timeout or
whose worker dies is settled here, and every other run is kept. A run's clock starts when the run
does (it says so from its worker), not when it is handed out, so that waiting for a worker (one
that replaces a stopped one, a pool's initializer, a cluster that is starting) never counts against
it. Runs hit by a dying worker they did not cause (they shared a broken pool, or a worker that
died) are run again, alone, so that only the run that kills its worker is reported as such. A
result that comes back from another process travels field by field, so that a field that does not
pickle costs only itself.
"""
from __future__ import annotations

import importlib
import inspect
import math
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
import traceback
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, InvalidStateError, wait
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from scipy.optimize import OptimizeResult

from ._arguments import as_args, check_option, flatten_x0, takes_intermediate_result
from ._derivatives import SHARED_TRACES
from ._minimize import method_declaration, minimize
from ._vectorized import minimize_vectorized, refusal

if TYPE_CHECKING:       # multiprocessing is loaded only by those who use processes
    from concurrent.futures import ProcessPoolExecutor

#: Seconds between looks at runs that have not said they started, and at a Dask cluster's workers.
_POLL = 0.1


class BatchStatus(IntEnum):
    """Statuses of the runs :func:`minimize_many` could not finish; negative, so that they never
    meet the optimizers' own (``optimizers.Status``: 0, 1, 2, 3, 5, 6, 7, 99).

    Examples
    --------
    >>> import hessopt
    >>> hessopt.BatchStatus(-2).name, hessopt.BatchStatus.WORKER_DIED == -3
    ('TIMED_OUT', True)
    """
    RAISED = -1         # the run raised an exception
    TIMED_OUT = -2      # the run outlived ``timeout``
    WORKER_DIED = -3    # the process running it ended (os._exit, a signal, a crash)
    NOT_RUN = -4        # never started: every worker was held by a hung run that could not be stopped


def _failed(x0, status: BatchStatus, message: str, last: OptimizeResult | None = None) -> OptimizeResult:
    """A run's failed result: at its last iterate if one is known (``last``), else at its start."""
    if last is not None:
        return OptimizeResult(x=last.x, fun=float(last.fun), nit=last.nit, success=False,
                              status=status, message=message)
    try:
        flat, unravel = flatten_x0(x0)
        x0 = unravel(flat)          # the form minimize gives x (a list of numbers -> an array)
    except Exception:               # a start minimize refuses is reported as it was given
        pass
    return OptimizeResult(x=x0, fun=math.nan, nit=0, success=False, status=status, message=message)


def _named(error: BaseException) -> str:
    """``"TypeName: text"``, also for an exception whose str() raises."""
    try:
        text = str(error)
    except Exception as failure:
        text = f"<str() raised {type(failure).__name__}>"
    return f"{type(error).__name__}: {text}"


class _LastIterate:
    """The callback each run is given: keeps the last iterate, then calls the user's callback
    (``new_style``: with the OptimizeResult, scipy's rule, decided once for the batch).

    Its signature is declared, so that minimize reads its style without inspecting it (a fixed
    cost of every run)."""

    __signature__ = inspect.Signature([inspect.Parameter("intermediate_result",
                                                         inspect.Parameter.POSITIONAL_OR_KEYWORD)])

    def __init__(self, callback: Callable | None, new_style: bool):
        self.callback, self.new_style = callback, new_style
        self.result: OptimizeResult | None = None

    def __call__(self, intermediate_result: OptimizeResult) -> None:
        self.result = intermediate_result
        if self.new_style:
            self.callback(intermediate_result=intermediate_result)
        elif self.callback is not None:
            self.callback(intermediate_result.x)


@dataclass(frozen=True)
class _FileBeacon:
    """How a run in a process of this machine says it has started: it creates the file named by its
    token in ``folder`` (a pool's processes share the file system, not the caller's memory)."""

    folder: str

    def __call__(self, token: str) -> None:
        with open(self.path(token), "w"):
            pass

    def path(self, token: str) -> str:
        return os.path.join(self.folder, token)


@dataclass(frozen=True)
class _DaskBeacon:
    """How a run on a Dask worker says it has started: an event on ``topic`` naming its task and its
    worker, sent through the scheduler (and awaited, so that it arrives even if the run then kills
    its worker)."""

    topic: str

    def __call__(self, token: str) -> None:
        from distributed import get_client, get_worker
        get_client().log_event(self.topic, {"token": token, "worker": get_worker().address})


@dataclass(frozen=True)
class _Packed:
    """A result on its way from a worker process, each field pickled on its own, so that a field
    that does not pickle (a Hessian operator built from a lambda) costs only itself: it is left
    out, and ``unpicklable`` names it with the error."""

    fields: dict[str, bytes]
    lost: dict[str, str]

    @classmethod
    def pack(cls, result: OptimizeResult, pickler: str) -> _Packed:
        dumps = importlib.import_module(pickler).dumps
        fields, lost = {}, {}
        for name, value in result.items():
            try:
                fields[name] = dumps(value)
            except Exception as error:
                lost[name] = _named(error)
        return cls(fields, lost)

    def unpack(self) -> OptimizeResult:
        result, lost = OptimizeResult(), dict(self.lost)
        for name, data in self.fields.items():
            try:
                result[name] = pickle.loads(data)
            except Exception as error:
                lost[name] = f"did not unpickle here: {_named(error)}"
        if lost:
            result.unpicklable = lost
            result.message = f"{result.get('message', '')} [not returned, did not pickle: {', '.join(lost)}]"
        return result


@dataclass(frozen=True)
class _Run:
    """One start's run wherever it executes: minimize's result, or a failed one naming what it
    raised (any BaseException, with ``traceback``) at the last iterate reached. Only strings cross
    back, never the exception. ``beacon`` (if any) is told the run's token as it starts; with a
    ``pickler`` (a module's name) the result goes back packed (:class:`_Packed`)."""

    fun: Callable
    method: str
    kwargs: dict
    caller: int                             # the process minimize_many was called in
    beacon: Callable[[str], None] | None = None
    pickler: str | None = None
    traces: dict = field(default_factory=dict, compare=False, repr=False)  # fun's, by thread (SharedTraces)
    new_style_callback: bool = False        # the user's callback takes the OptimizeResult (scipy's rule)

    def __getstate__(self) -> dict:
        """Pickled without the traces: a run sent to another process traces fun there."""
        return {**self.__dict__, "traces": {}}

    def __call__(self, x0, token: str | None = None) -> OptimizeResult | _Packed:
        if self.beacon is not None:
            self.beacon(token)
        result = self._minimize(x0)
        return result if self.pickler is None else _Packed.pack(result, self.pickler)

    def _minimize(self, x0) -> OptimizeResult:
        last = _LastIterate(self.kwargs.get("callback"), self.new_style_callback)
        try:
            args = as_args(self.kwargs.get("args", ()))
            with SHARED_TRACES.of(self.fun, args, self.traces):
                return minimize(self.fun, x0, method=self.method, **{**self.kwargs, "callback": last})
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt) and self._in_callers_main_thread():
                raise                       # Ctrl-C to the caller, who runs this start itself
            result = _failed(x0, BatchStatus.RAISED, _named(error), last.result)
            result.traceback = traceback.format_exc()
            return result

    def _in_callers_main_thread(self) -> bool:
        return os.getpid() == self.caller and threading.current_thread() is threading.main_thread()


def _worker_died(error: BaseException) -> bool:
    """A broken pool (BrokenProcessPool), Dask's KilledWorker, or a Dask worker that left while the
    run was on it (WorkerLost): the run's process ended under it."""
    distributed = sys.modules.get("distributed")
    return isinstance(error, (BrokenExecutor, WorkerLost)) or (
        distributed is not None and isinstance(error, distributed.KilledWorker))


class WorkerLost(Exception):
    """The Dask worker a run had started on left the cluster before the run finished."""


class _Engine:
    """An executor as minimize_many uses it: submit a run, how many runs at once, when a run
    started, stop a hung one.

    A run that hangs on a generic executor (a thread pool, say) cannot be stopped: it is abandoned
    and keeps its worker, one run fewer is handed out at a time until it ends, and when every
    worker is held so, the runs left are not run. A run starts when its future says it is running.
    """

    watches = False         # whether the batch must call watch() every _POLL seconds

    def __init__(self, executor: Executor):
        self.executor = executor
        self.workers = max(1, getattr(executor, "_max_workers", None) or os.cpu_count() or 1)
        self.abandoned: list[Future] = []

    @property
    def capacity(self) -> int:
        """How many runs may be in flight now (0: every worker is held by an abandoned run)."""
        self.abandoned = [future for future in self.abandoned if not future.done()]
        return self.workers - len(self.abandoned)

    def prepare(self, run: _Run) -> _Run:
        """The run as this engine sends it (how it says it started, how its result travels)."""
        return run

    def submit(self, run: _Run, x0) -> Future:
        return self.executor.submit(run, x0)

    def started(self, future: Future) -> float | None:
        """When the run began (``time.monotonic()``, or as soon as that is seen), None while it waits."""
        return time.monotonic() if future.running() or future.done() else None

    def finished(self, future: Future) -> bool:
        """Whether the run is over where it ran (its result may still be on its way here)."""
        return future.done()

    def watch(self) -> None:
        """Look at the workers (engines that lose runs without a word: Dask)."""

    def alone(self, future: Future) -> bool:
        """Whether this run, whose worker died, was the only run in that worker's process (then it
        is the one that killed it)."""
        return False

    def stop(self, futures: list[Future]) -> list[Future]:
        """Stop these runs; returns the other runs in flight that stopping them stopped too."""
        for future in futures:
            if not future.cancel():
                self.abandoned.append(future)
        return []

    def close(self, clean: bool) -> None:
        """Release what this engine created (nothing here)."""


class _InProcess(_Engine):
    """No executor: each run here, in turn (a run that ends the process ends the caller too)."""

    def __init__(self):
        self.workers, self.abandoned = 1, []

    def submit(self, run: _Run, x0) -> Future:
        future = Future()
        future.set_result(run(x0))
        return future


class _ProcessPool(_Engine):
    """A process pool. A dead worker breaks a pool for good, and a hung run is stopped only by
    killing the pool's processes: the batch goes on on a fresh pool of the same size, start method
    and initializer, which this engine owns and shuts down at the end (a pool passed in is left
    broken). Runs must pickle, so that is checked once, up front; results come back packed, and
    with a timeout each run says it started with a file, once its process is up (initializer
    included)."""

    def __init__(self, executor: ProcessPoolExecutor, timed: bool, owned: bool = False):
        super().__init__(executor)
        self.owned = owned
        self.futures: list[Future] = []     # the current pool's
        self.beacon = _FileBeacon(tempfile.mkdtemp(prefix="minimize_many-")) if timed else None
        self.tokens: dict[Future, str] = {}

    def prepare(self, run: _Run) -> _Run:
        run = replace(run, beacon=self.beacon, pickler="pickle")
        try:
            pickle.dumps(run)
        except Exception as error:
            raise TypeError("minimize_many: runs in worker processes need fun and the options of "
                            f"minimize to pickle (fun defined at module level): {_named(error)}") \
                from None
        return run

    def submit(self, run: _Run, x0) -> Future:
        token = uuid.uuid4().hex
        try:
            future = self.executor.submit(run, x0, token)
        except BrokenExecutor:
            self._renew()
            future = self.executor.submit(run, x0, token)
        self.futures = [f for f in self.futures if not f.done()] + [future]
        self.tokens = {f: t for f, t in self.tokens.items() if not f.done()} | {future: token}
        return future

    def started(self, future: Future) -> float | None:
        """Seen as soon as the run is done or its file is (which is then removed)."""
        if not future.done():
            path = self.beacon.path(self.tokens[future])
            if not os.path.exists(path):
                return None
            os.remove(path)
        return time.monotonic()

    def stop(self, futures: list[Future]) -> list[Future]:
        stopped = [f for f in self.futures if f not in futures and not f.done()]
        self._kill()
        self._renew()
        return stopped

    def _kill(self) -> None:
        for process in list((self.executor._processes or {}).values()):
            process.kill()

    def _renew(self) -> None:
        from concurrent.futures import ProcessPoolExecutor
        old = self.executor
        options = {"mp_context": getattr(old, "_mp_context", None),
                   "initializer": getattr(old, "_initializer", None),
                   "initargs": getattr(old, "_initargs", ())}
        if getattr(old, "_max_tasks_per_child", None) is not None:
            options["max_tasks_per_child"] = old._max_tasks_per_child
        self.executor, self.futures = ProcessPoolExecutor(self.workers, **options), []
        if self.owned:                  # broken: its processes are gone, so this returns at once
            old.shutdown(wait=True, cancel_futures=True)
        self.owned = True

    def close(self, clean: bool) -> None:
        if self.owned:
            if not clean:       # interrupted: runs may still be going, and nobody waits for them
                self._kill()
            self.executor.shutdown(wait=True, cancel_futures=True)
        if self.beacon is not None:
            shutil.rmtree(self.beacon.folder, ignore_errors=True)


class _Dask(_Engine):
    """A Dask client (``client.get_executor()`` or the client itself). Each run is a task of its own
    (a key of its own: equal starts are not merged, and a rerun is a new task) that says when it
    starts and on which worker; results come back packed (cloudpickle, as Dask ships functions).

    The cluster is watched: how many threads it has now (runs wait for workers without their
    clocks running), and whether a worker left while a run was on it: that run's worker died (Dask
    would run it again on another worker, and kill that one too); if no other run of the batch was
    on that worker, the run killed it. Dask cannot stop a running task, so a hung run's worker
    process is ended and its nanny starts a fresh one; a worker without a nanny keeps running the
    hung task and gets no more runs."""

    watches = True

    def __init__(self, client, options: dict):
        self.client, self.options = client, options
        self.threads: dict[str, int] = client.nthreads()
        self.held: set[str] = set()         # workers without a nanny, left running a hung run
        self.tasks: dict[Future, Any] = {}
        self.beacon = _DaskBeacon(f"minimize_many-{uuid.uuid4().hex}")
        self.unannounced: set[str] = set()                      # tasks in flight that have not started
        self.announced: dict[str, tuple[float, str]] = {}      # task -> (when it started, its worker)
        self.running_on: dict[str, set[str]] = {}               # worker -> its tasks that started
        self.sole: dict[Future, bool] = {}  # runs whose worker died: whether they were its only run
        self.next_look = 0.0
        client.subscribe_topic(self.beacon.topic, self._announce)

    @property
    def capacity(self) -> int:
        free = sum(n for worker, n in self.threads.items() if worker not in self.held)
        return free if free or self.held else 1         # no worker yet: one run waits for it

    def prepare(self, run: _Run) -> _Run:
        return replace(run, beacon=self.beacon, pickler="cloudpickle")

    def submit(self, run: _Run, x0) -> Future:
        key = f"minimize_many-{uuid.uuid4().hex}"
        options = self.options
        if self.held:
            options = {**options, "workers": [w for w in self.threads if w not in self.held],
                       "allow_other_workers": False}
        self.unannounced.add(key)
        task = self.client.submit(run, x0, key, key=key, **options)
        future = Future()
        self.tasks[future] = task
        task.add_done_callback(lambda task: self._settle(future, task))
        return future

    def _announce(self, event: tuple[float, dict]) -> None:
        """A run's beacon (in the client's event loop): the first start of a task in flight counts."""
        key, worker = event[1]["token"], event[1]["worker"]
        if key in self.unannounced:
            self.unannounced.discard(key)
            self.announced[key] = (time.monotonic(), worker)
            self.running_on.setdefault(worker, set()).add(key)

    def started(self, future: Future) -> float | None:
        task = self.tasks.get(future)
        announced = None if task is None else self.announced.get(task.key)
        return time.monotonic() if future.done() else announced and announced[0]

    def alone(self, future: Future) -> bool:
        return self.sole.pop(future, False)

    def finished(self, future: Future) -> bool:
        """Also once its task is done on its worker, while the client fetches the result."""
        task = self.tasks.get(future)
        return future.done() or (task is not None and task.done())

    def _settle(self, future: Future, task) -> None:
        """Dask's outcome onto the concurrent.futures Future (in Dask's callback thread), unless
        the run was settled here already (stopped, or its worker seen to leave): whatever happens,
        the future is settled once, so the batch never waits for it in vain."""
        try:
            if task.cancelled():
                if self._forget(future, died=False) is not None and future.cancel():
                    future.set_running_or_notify_cancel()
                return
            try:
                value = task.result()
            except BaseException as error:  # KilledWorker, or a result that did not travel
                if self._forget(future, died=_worker_died(error)) is not None:
                    future.set_exception(error)
            else:
                if self._forget(future, died=False) is not None:
                    future.set_result(value)
        except InvalidStateError:           # the batch was interrupted, and cancelled it
            pass

    def _forget(self, future: Future, died: bool) -> Any:
        """Done with this run's task (returned); if its worker died under it, note whether the run
        was that worker's only one (then it killed the worker: it is not run again)."""
        task = self.tasks.pop(future, None)
        if task is None:
            return None
        self.unannounced.discard(task.key)
        worker = self.announced.pop(task.key, (None, None))[1]
        on_worker = self.running_on.get(worker, set())
        if died:
            self.sole[future] = on_worker == {task.key}
        else:
            on_worker.discard(task.key)
        return task

    def watch(self) -> None:
        now = time.monotonic()
        if now < self.next_look:
            return
        self.next_look = now + _POLL
        self.threads = self.client.nthreads()
        for future, task in list(self.tasks.items()):
            worker = self.announced.get(task.key, (None, None))[1]
            if worker is not None and worker not in self.threads and self._forget(future, died=True):
                future.set_exception(WorkerLost(f"its worker {worker} left the cluster while it ran"))
                self.client.cancel([task])      # not to be run again on another worker

    def stop(self, futures: list[Future]) -> list[Future]:
        hung = {self.tasks[f].key for f in futures if f in self.tasks}
        processing = self.client.processing()
        workers = [worker for worker, keys in processing.items() if hung & set(keys)]
        held = {key for worker in workers for key in processing[worker]}
        stopped = [f for f, task in list(self.tasks.items()) if f in futures or task.key in held]
        self.client.cancel([task for task in (self._forget(f, died=False) for f in stopped) if task is not None])
        for future in stopped:
            future.cancel()
        info = self.client.scheduler_info().get("workers", {})
        ended = [worker for worker in workers if info.get(worker, {}).get("nanny", True)]
        self.held.update(set(workers) - set(ended))
        if ended:
            self.client.run(_end_worker_process, workers=ended, wait=False)
            self._wait_until_gone(ended)
        return [f for f in stopped if f not in futures]

    def _wait_until_gone(self, workers: list, patience: float = 60.0) -> None:
        """Until the scheduler has dropped the ended workers (or ``patience`` seconds), so that no
        run handed out next lands on a dying process and dies there with a KilledWorker that is
        not its own doing."""
        deadline = time.monotonic() + patience
        while set(workers) & set(self.client.nthreads()) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.threads = self.client.nthreads()

    def close(self, clean: bool) -> None:
        self.client.unsubscribe_topic(self.beacon.topic)
        if not clean:
            self.client.cancel(list(self.tasks.values()))


async def _end_worker_process(dask_worker) -> None:
    """Run on a Dask worker by ``client.run`` (a coroutine, so the call need not wait): end its
    process, if a nanny will start a new one (without, the process is the caller's, or nobody's)."""
    if dask_worker.nanny:
        os._exit(1)


def _engine(executor: Executor | None, timeout: float | None) -> _Engine:
    if executor is None and timeout is None:
        return _InProcess()
    if executor is None:
        from concurrent.futures import ProcessPoolExecutor
        return _ProcessPool(ProcessPoolExecutor(1), timed=True, owned=True)
    processes = sys.modules.get("concurrent.futures.process")     # loaded if executor is a pool
    if processes is not None and isinstance(executor, processes.ProcessPoolExecutor):
        return _ProcessPool(executor, timed=timeout is not None)
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        if isinstance(executor, distributed.Client):
            return _Dask(executor, {})
        if isinstance(executor, distributed.cfexecutor.ClientExecutor):
            return _Dask(executor._client, executor._kwargs)
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor (a process pool, "
                        f"client.get_executor() of Dask), got {type(executor).__name__}")
    return _Engine(executor)


class _Progress:
    """Finished runs as they come: ``True`` draws a one-line bar on stderr, a callable is called
    with (done, total, result). A report that raises costs that report only: a RuntimeWarning says
    so, and the batch goes on."""

    def __init__(self, progress: bool | Callable, total: int):
        self.report, self.total, self.done, self.failed = progress, total, 0, 0
        if progress is True:
            self._draw()

    def update(self, index: int, result: OptimizeResult) -> None:
        self.done += 1
        self.failed += not result.success
        try:
            if self.report is True:
                self._draw()
            elif self.report:
                self.report(self.done, self.total, result)
        except Exception as error:
            warnings.warn(f"minimize_many: progress raised {_named(error)} on the result of start "
                          f"{index}; the batch goes on", RuntimeWarning, stacklevel=2)

    def _draw(self) -> None:
        filled = 30 * self.done // max(self.total, 1)
        end = "\n" if self.done == self.total else ""
        sys.stderr.write(f"\rminimize_many [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
                         f" runs, {self.failed} not successful{end}")
        sys.stderr.flush()


@dataclass
class _Slot:
    """A run in flight: its start's index, whether it runs alone, and when it started (None while
    it waits for a worker: its clock has not started)."""

    index: int
    alone: bool
    started: float | None = None


class _Batch:
    """The loop: hand out runs (no more than the engine has free workers), settle finished and
    overdue ones (a run's timeout counts from when it started), and rerun alone the runs a worker
    died under, so that only a run that kills its worker on its own is reported as such."""

    def __init__(self, run: _Run, starts: list, engine: _Engine, timeout: float | None,
                 progress: _Progress):
        self.run, self.starts, self.engine = run, starts, engine
        self.timeout, self.progress = timeout, progress
        self.results: list[OptimizeResult | None] = [None] * len(starts)
        self.pending = deque(range(len(starts)))
        self.suspects: deque[int] = deque()
        self.inflight: dict[Future, _Slot] = {}

    def __call__(self) -> list[OptimizeResult]:
        clean = False
        try:
            while self.pending or self.suspects or self.inflight:
                self._hand_out()
                self._settle()
            clean = True
        except BaseException as stop:       # Ctrl-C here: the runs that finished go with it
            stop.results = self.results
            raise
        finally:
            for future in self.inflight:
                future.cancel()
            self.engine.close(clean)
        return self.results

    def _hand_out(self) -> None:
        capacity = self.engine.capacity
        if capacity == 0 and not self.inflight:
            for index in sorted([*self.suspects, *self.pending]):
                self._finish(index, _failed(self.starts[index], BatchStatus.NOT_RUN,
                                            "not run: every worker is held by a run that timed out "
                                            "and could not be stopped"))
            self.suspects.clear()
            self.pending.clear()
        elif self.suspects:
            if not self.inflight:
                self._start(self.suspects.popleft(), alone=True)
        else:
            while self.pending and len(self.inflight) < capacity:
                self._start(self.pending.popleft(), alone=False)

    def _start(self, index: int, alone: bool) -> None:
        try:
            future = self.engine.submit(self.run, self.starts[index])
        except BrokenExecutor as error:     # a broken executor that cannot be renewed
            self._finish(index, _failed(self.starts[index], BatchStatus.WORKER_DIED,
                                        f"worker died: the executor is broken ({_named(error)})"))
            return
        self.inflight[future] = _Slot(index, alone or self.engine.capacity == 1)

    def _settle(self) -> None:
        if not self.inflight:
            return
        self.engine.watch()
        done, _ = wait(list(self.inflight), timeout=self._patience(), return_when=FIRST_COMPLETED)
        for future in done:
            self._settle_one(future, self.inflight.pop(future))
        if self.timeout is None:
            return
        left = {future: self._time_left(future, slot) for future, slot in self.inflight.items()}
        overdue = [future for future, seconds in left.items() if seconds is not None and seconds <= 0.0]
        if not overdue:
            return
        for future in overdue:
            index = self.inflight.pop(future).index
            self._finish(index, _failed(self.starts[index], BatchStatus.TIMED_OUT,
                                        f"timed out after {self.timeout:g} s"))
        for other in self.engine.stop(overdue):     # innocent: run them again
            if other in self.inflight:
                self.pending.appendleft(self.inflight.pop(other).index)

    def _patience(self) -> float | None:
        """Seconds to wait for a run to finish before looking again: until the first deadline, and
        no more than _POLL while a run's clock is not running or the engine watches its workers."""
        waits = [_POLL] if self.engine.watches else []
        if self.timeout is not None:
            waits += [_POLL if left is None else left
                      for left in (self._time_left(f, slot) for f, slot in self.inflight.items())]
        return max(0.0, min(waits)) if waits else None

    def _time_left(self, future: Future, slot: _Slot) -> float | None:
        """Seconds left on this run's clock; None while it is not running: the run has not started
        (its clock starts when it does), or it has finished and its result is on its way."""
        if slot.started is None:
            slot.started = self.engine.started(future)
        if slot.started is None or self.engine.finished(future):
            return None
        return slot.started + self.timeout - time.monotonic()

    def _settle_one(self, future: Future, slot: _Slot) -> None:
        try:
            value = future.result()
        except KeyboardInterrupt:           # Ctrl-C here, not the run's (a run's comes back as its result)
            raise
        except BaseException as error:      # the engine's: a dead worker, a run that did not travel
            cause = error
        else:
            self._finish(slot.index, value.unpack() if isinstance(value, _Packed) else value)
            return
        start = self.starts[slot.index]
        if not _worker_died(cause):
            self._finish(slot.index, _failed(start, BatchStatus.RAISED, _named(cause)))
        elif slot.alone or self.engine.alone(future):
            self._finish(slot.index, _failed(start, BatchStatus.WORKER_DIED, f"worker died ({_named(cause)})"))
        else:
            self.suspects.append(slot.index)

    def _finish(self, index: int, result: OptimizeResult) -> None:
        self.results[index] = result
        self.progress.update(index, result)


def minimize_many(fun: Callable, x0s: Iterable, method: str = "newton-cg",
                  executor: Executor | None = None, timeout: float | None = None,
                  progress: bool | Callable = False, *, vectorize: bool = False, native: bool = False,
                  batch_args: tuple | None = None, **kwargs: Any) -> list[OptimizeResult]:
    """Independent runs of :func:`minimize` (multistart, sweeps), one per start; a run that fails
    costs only its own entry.

    The executor is an existing engine: a ``concurrent.futures.ProcessPoolExecutor``, a Dask cluster
    (``client.get_executor()``, or the ``distributed.Client`` itself), or any other
    ``concurrent.futures.Executor``; with none the runs are sequential, here. Every start gets its
    own entry, in order. A run that fails is a result with ``success=False``, the other runs' results
    are kept:

    - it raised (``status`` ``BatchStatus.RAISED``, -1), any exception, KeyboardInterrupt and
      other BaseExceptions included: ``message`` is ``"TypeName: text"``, ``traceback`` the
      worker's traceback, ``x`` and ``fun`` the last iterate reached (the start, with ``fun`` NaN,
      before the first), ``nit`` the iterations done;
    - it ran longer than ``timeout`` (``BatchStatus.TIMED_OUT``, -2): ``message`` "timed out after
      ... s", ``x`` the start;
    - its worker died (``BatchStatus.WORKER_DIED``, -3; os._exit, a signal, a crash, Dask's
      KilledWorker, a Dask worker that left while the run was on it): ``message`` "worker died
      (...)", ``x`` the start. Runs that were in flight when a worker died are run again, alone, so
      only a run that kills its worker by itself is reported;
    - it never started (``BatchStatus.NOT_RUN``, -4), because every worker is held by a hung run
      that could not be stopped (a thread pool's, a Dask worker's without a nanny).

    A result from another process travels field by field: a field that does not pickle (a
    ``hess`` operator built from a lambda) is left out, named with its error in
    ``result.unpicklable``, and the message says so. A ``progress`` that raises costs that report
    only (a RuntimeWarning names the error).

    A hung run is stopped where it can be: a process pool's processes are killed (the batch goes on
    on a fresh pool of the same size, start method and initializer; the pool passed in is then
    broken, as any pool whose worker died), a Dask worker's process is ended and its nanny starts a
    new one. Other executors (a thread pool) cannot stop a run: it is abandoned and keeps its
    worker. With no executor, a ``timeout`` runs the starts one at a time in a child process (a
    fresh one after a run that kills it or hangs); without a timeout the runs share this process,
    and a run that ends it ends the caller. Runs in other processes need ``fun`` (and the options)
    to pickle: a module-level function (Dask also ships lambdas).

    The runs of a thread (here, or a thread pool's) trace fun once and replay its programs: an
    ``autodiff.function``'s own, or for a plain fun those its last ``minimize`` or batch kept, when
    it computes the same program (as ``minimize(f)`` called again), else new ones.

    Parameters
    ----------
    fun : callable
        The objective, as for :func:`minimize`.
    x0s : iterable
        The starting points (rows of a 2-D array, a list of arrays or pytrees).
    method : str, default "newton-cg"
        As for :func:`minimize`.
    executor : concurrent.futures.Executor or distributed.Client, optional
        Where the runs go (default: here, one after another).
    timeout : float, optional
        Seconds each run may take, counted from when it starts on its worker: the time it waits
        for one (a pool's initializer, a replacement for a stopped worker, a cluster that is
        starting) does not count. No more runs are handed out at a time than the executor has
        workers.
    progress : bool or callable, default False
        ``True`` draws a one-line bar on stderr as runs finish; a callable is called as
        ``progress(done, total, result)`` with each finished run (in the order they finish).
    vectorize : bool, default False
        Advance every start together instead of one run per start: trust-exact (Moré-Sorensen's
        step, the same stopping test) on the whole batch, each iteration evaluating f, g and H at
        all running starts in one call (``autodiff.hessian_rows``). For many small problems (2-10
        parameters) this removes the ~1 ms of machinery a run costs. It takes
        ``method="trust-exact"``, starts that are arrays of one shape, ``args``, ``batch_args``
        and the options ``gtol``, ``maxiter``, ``initial_trust_radius``, ``max_trust_radius`` and
        ``eta``; anything else (another method, bounds, constraints, callback, jac/hess/hessp,
        executor, timeout, progress, pytree starts) raises ValueError (or TypeError for the
        starts) naming it. Each result has x, fun, jac, hess, nit, nfev, njev, nhev, status,
        success and message (njev and nhev equal nfev: g and H come with every evaluation).
    native : bool, default False
        With ``vectorize``: evaluate the batch in one numba-compiled loop over a native program of
        fun (the compiled extra, ``pip install hessopt[compiled]``; about a microsecond a start and
        an evaluation, after a compilation of seconds that is kept for the next batch of the same
        fun). Without numba, or for a fun numba refuses, the NumPy replay runs and each result's
        ``native_reason`` says why. A plain fun is traced at each call (the compile is reused
        where the program is the same); an ``autodiff.function`` keeps its batch's programs (as
        jax.jit's), so its data that changes between batches goes in ``args`` or ``batch_args``.
    batch_args : tuple of arrays, optional
        With ``vectorize``: each start's own data (a fit per pixel, per patient): arrays whose
        leading axis is the starts', row i of each passed to start i's fun after ``args``, as
        ``fun(x, *args, *(b[i] for b in batch_args))`` (as floats).
    **kwargs
        Passed to :func:`minimize` (``args``, ``jac``, ``options``, ``callback``, ...).

    Returns
    -------
    list of OptimizeResult
        One per start, in order.

    Raises
    ------
    TypeError
        Before any run, if fun, callback, progress or executor is of the wrong kind, a keyword is
        not one of minimize's, or runs bound for worker processes do not pickle.
    ValueError
        Before any run, for an unknown method or a timeout that is not a positive number; with
        ``vectorize``, for what the vectorized batch does not take (named); ``native`` or
        ``batch_args`` without ``vectorize``.
    KeyboardInterrupt
        Ctrl-C in this process (with no executor, also in a run, which is then this process) stops
        the batch: runs not yet started are cancelled, running ones are killed in the pool made
        here for a ``timeout`` (elsewhere they run to their end, unreported), and the interrupt
        is re-raised with ``.results`` attached, the list so far (None for each run not finished).

    Examples
    --------
    A double well: each start finds its own minimum; a start where ``f`` raises is a failed entry.

    >>> import numpy as np
    >>> import hessopt
    >>> def f(x):
    ...     if x[0] < -5:
    ...         raise ValueError("outside the model")
    ...     return (x[0] ** 2 - 1) ** 2
    >>> runs = hessopt.minimize_many(f, [[-2.0], [-9.0], [0.5]], method="newton")
    >>> [float(r.x[0].round(4)) for r in runs]
    [-1.0, -9.0, 1.0]
    >>> runs[1].success, runs[1].status.name, runs[1].message
    (False, 'RAISED', 'ValueError: outside the model')
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    declaration = method_declaration(method)
    inspect.signature(minimize).bind(fun, None, method=method, **kwargs)
    callback = kwargs.get("callback")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    if timeout is not None:
        check_option("timeout", timeout, label="timeout")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False or a callable, got {type(progress).__name__}")
    starts = list(x0s)
    if vectorize:
        why = refusal(declaration.name, executor, timeout, progress, kwargs)
        if why is not None:
            raise ValueError(f"minimize_many(vectorize=True): {why}")
        return minimize_vectorized(fun, starts, kwargs.get("args"), batch_args, native, kwargs.get("options"),
                                   kwargs.get("tol"))
    for name, given in (("native", native), ("batch_args", batch_args is not None)):
        if given:
            raise ValueError(f"minimize_many: {name}= is for the vectorized batch (vectorize=True, "
                             "method='trust-exact')")
    engine = _engine(executor, timeout)
    try:
        run = engine.prepare(_Run(fun, method, kwargs, caller=os.getpid(),
                                  new_style_callback=callback is not None and takes_intermediate_result(callback)))
    except TypeError:
        engine.close(clean=True)
        raise
    return _Batch(run, starts, engine, timeout, _Progress(progress, len(starts)))()
