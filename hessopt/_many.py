"""hessopt.minimize_many: independent runs (multistart, sweeps) where one bad start costs one entry.

Each start runs as its own task on an existing engine (no executor: here; a process pool; a Dask
cluster). A run that raises comes back as a failed result from the worker itself; a run that outlives
its timeout or whose worker dies is settled here, and every other run is kept. Runs hit by a dying
worker they did not cause (they shared a broken pool, or a worker that died) are run again, alone, so
that only the run that kills its worker is reported as such.
"""
from __future__ import annotations

import inspect
import math
import os
import pickle
import sys
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, InvalidStateError, wait
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from scipy.optimize import OptimizeResult

from ._arguments import check_option, flatten_x0, takes_intermediate_result
from ._minimize import method_declaration, minimize

if TYPE_CHECKING:       # multiprocessing is loaded only by those who use processes
    from concurrent.futures import ProcessPoolExecutor


class BatchStatus(IntEnum):
    """Statuses of the runs :func:`minimize_many` could not finish; negative, so that they never
    meet the optimizers' own (``optimizers.Status``: 0, 1, 2, 3, 5, 99).

    Examples
    --------
    >>> import hessopt
    >>> hessopt.BatchStatus(-2).name, hessopt.BatchStatus.WORKER_DIED == -3
    ('TIMED_OUT', True)
    """
    RAISED = -1         # the run raised an exception
    TIMED_OUT = -2      # the run outlived ``timeout``
    WORKER_DIED = -3    # the process running it ended (os._exit, a signal, a crash)


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


class _LastIterate:
    """The callback each run is given: keeps the last iterate, then calls the user's callback."""

    def __init__(self, callback: Callable | None):
        self.callback = callback
        self.new_style = callback is not None and takes_intermediate_result(callback)
        self.result: OptimizeResult | None = None

    def __call__(self, intermediate_result: OptimizeResult) -> None:
        self.result = intermediate_result
        if self.new_style:
            self.callback(intermediate_result=intermediate_result)
        elif self.callback is not None:
            self.callback(intermediate_result.x)


@dataclass(frozen=True)
class _Run:
    """One start's run wherever it executes: minimize's result, or a failed one naming the exception
    (with ``traceback``), at the last iterate reached. Only strings cross back, never the exception."""

    fun: Callable
    method: str
    kwargs: dict

    def __call__(self, x0) -> OptimizeResult:
        last = _LastIterate(self.kwargs.get("callback"))
        try:
            return minimize(self.fun, x0, method=self.method, **{**self.kwargs, "callback": last})
        except (Exception, SystemExit) as error:
            result = _failed(x0, BatchStatus.RAISED, _named(error), last.result)
            result.traceback = traceback.format_exc()
            return result


def _named(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _worker_died(error: BaseException) -> bool:
    """A broken pool (BrokenProcessPool) or Dask's KilledWorker: the run's process ended under it."""
    distributed = sys.modules.get("distributed")
    return isinstance(error, BrokenExecutor) or (
        distributed is not None and isinstance(error, distributed.KilledWorker))


class _Engine:
    """An executor as minimize_many uses it: submit a run, how many runs at once, stop a hung one.

    A run that hangs on a generic executor (a thread pool, say) cannot be stopped: it is abandoned,
    its worker stays busy, and one run fewer is handed out at a time from then on.
    """

    def __init__(self, executor: Executor):
        self.executor = executor
        self.capacity = max(1, getattr(executor, "_max_workers", None) or os.cpu_count() or 1)

    def submit(self, run: _Run, x0) -> Future:
        return self.executor.submit(run, x0)

    def stop(self, futures: list[Future]) -> list[Future]:
        """Stop these runs; returns the other runs in flight that stopping them stopped too."""
        for future in futures:
            future.cancel()
        self.capacity = max(1, self.capacity - len(futures))
        return []

    def close(self, clean: bool) -> None:
        """Release what this engine created (nothing here)."""


class _InProcess(_Engine):
    """No executor: each run here, in turn (a run that ends the process ends the caller too)."""

    def __init__(self):
        self.capacity = 1

    def submit(self, run: _Run, x0) -> Future:
        future = Future()
        future.set_result(run(x0))
        return future


class _ProcessPool(_Engine):
    """A process pool. A dead worker breaks a pool for good, and a hung run is stopped only by
    killing the pool's processes: the batch goes on on a fresh pool of the same size, start method
    and initializer, which this engine owns and shuts down at the end (a pool passed in is left
    broken). Runs must pickle, so that is checked once, up front."""

    def __init__(self, executor: ProcessPoolExecutor, owned: bool = False):
        super().__init__(executor)
        self.owned = owned
        self.futures: list[Future] = []     # the current pool's

    def check_pickles(self, run: _Run) -> None:
        try:
            pickle.dumps(run)
        except Exception as error:
            raise TypeError("minimize_many: runs in worker processes need fun and the options of "
                            f"minimize to pickle (fun defined at module level): {_named(error)}") \
                from None

    def submit(self, run: _Run, x0) -> Future:
        try:
            future = self.executor.submit(run, x0)
        except BrokenExecutor:
            self._renew()
            future = self.executor.submit(run, x0)
        self.futures = [f for f in self.futures if not f.done()] + [future]
        return future

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
        self.executor, self.futures = ProcessPoolExecutor(self.capacity, **options), []
        if self.owned:                  # broken: its processes are gone, so this returns at once
            old.shutdown(wait=True, cancel_futures=True)
        self.owned = True

    def close(self, clean: bool) -> None:
        if self.owned:
            if not clean:       # interrupted: runs may still be going, and nobody waits for them
                self._kill()
            self.executor.shutdown(wait=True, cancel_futures=True)


class _Dask(_Engine):
    """A Dask client (``client.get_executor()`` or the client itself). Each run is a task of its own
    (a key of its own: equal starts are not merged, and a rerun is a new task). Dask cannot stop a
    running task, so a hung run's worker process is ended and its nanny starts a fresh one; a
    worker without a nanny keeps running the hung task."""

    def __init__(self, client, options: dict):
        self.client = client
        self.options = options
        self.capacity = max(1, sum(client.nthreads().values()))
        self.tasks: dict[Future, Any] = {}

    def submit(self, run: _Run, x0) -> Future:
        task = self.client.submit(run, x0, key=f"minimize_many-{uuid.uuid4().hex}", **self.options)
        future = Future()
        self.tasks[future] = task
        task.add_done_callback(lambda task: self._settle(future, task))
        return future

    def _settle(self, future: Future, task) -> None:
        """Dask's outcome onto the concurrent.futures Future (in Dask's callback thread)."""
        self.tasks.pop(future, None)
        try:
            if task.cancelled():
                future.cancel()
                future.set_running_or_notify_cancel()
                return
            try:
                value = task.result()
            except Exception as error:  # KilledWorker, or a result that did not travel
                future.set_exception(error)
            else:
                future.set_result(value)
        except InvalidStateError:       # settled already: stopped here after its timeout
            pass

    def stop(self, futures: list[Future]) -> list[Future]:
        hung = {self.tasks[f].key for f in futures if f in self.tasks}
        processing = self.client.processing()
        workers = [worker for worker, keys in processing.items() if hung & set(keys)]
        held = {key for worker in workers for key in processing[worker]}
        stopped = [f for f, task in list(self.tasks.items()) if f in futures or task.key in held]
        self.client.cancel([t for t in (self.tasks.pop(f, None) for f in stopped) if t is not None])
        for future in stopped:
            future.cancel()
        if workers:
            self.client.run(_end_worker_process, workers=workers, wait=False)
            self._wait_until_gone(workers)
        return [f for f in stopped if f not in futures]

    def _wait_until_gone(self, workers: list, patience: float = 10.0) -> None:
        """Until the scheduler has dropped the ended workers (or ``patience`` seconds), so that no
        run handed out next lands on a dying process and dies there with a KilledWorker that is
        not its own doing."""
        deadline = time.monotonic() + patience
        while set(workers) & set(self.client.nthreads()) and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self, clean: bool) -> None:
        if not clean:
            self.client.cancel(list(self.tasks.values()))


async def _end_worker_process(dask_worker) -> None:
    """Run on a Dask worker by ``client.run`` (a coroutine, so the call need not wait): end its
    process, if a nanny will start a new one."""
    if dask_worker.nanny:
        os._exit(1)


def _engine(executor: Executor | None, timeout: float | None) -> _Engine:
    if executor is None and timeout is None:
        return _InProcess()
    if executor is None:
        from concurrent.futures import ProcessPoolExecutor
        return _ProcessPool(ProcessPoolExecutor(1), owned=True)
    processes = sys.modules.get("concurrent.futures.process")     # loaded if executor is a pool
    if processes is not None and isinstance(executor, processes.ProcessPoolExecutor):
        return _ProcessPool(executor)
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
    with (done, total, result)."""

    def __init__(self, progress: bool | Callable, total: int):
        self.report, self.total, self.done, self.failed = progress, total, 0, 0
        if progress is True:
            self._draw()

    def update(self, result: OptimizeResult) -> None:
        self.done += 1
        self.failed += not result.success
        if self.report is True:
            self._draw()
        elif self.report:
            self.report(self.done, self.total, result)

    def _draw(self) -> None:
        filled = 30 * self.done // max(self.total, 1)
        end = "\n" if self.done == self.total else ""
        sys.stderr.write(f"\rminimize_many [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
                         f" runs, {self.failed} not successful{end}")
        sys.stderr.flush()


@dataclass
class _Slot:
    """A run in flight: its start's index, when it must be done, and whether it runs alone."""

    index: int
    deadline: float
    alone: bool


class _Batch:
    """The loop: hand out runs (no more than the engine has workers, so a run's timeout counts from
    when it can start), settle finished and overdue ones, and rerun alone the runs a worker died
    under, so that only a run that kills its worker on its own is reported as such."""

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
        finally:
            for future in self.inflight:
                future.cancel()
            self.engine.close(clean)
        return self.results

    def _hand_out(self) -> None:
        if self.suspects:
            if not self.inflight:
                self._start(self.suspects.popleft(), alone=True)
            return
        while self.pending and len(self.inflight) < self.engine.capacity:
            self._start(self.pending.popleft(), alone=False)

    def _start(self, index: int, alone: bool) -> None:
        try:
            future = self.engine.submit(self.run, self.starts[index])
        except BrokenExecutor as error:     # a broken executor that cannot be renewed
            self._finish(index, _failed(self.starts[index], BatchStatus.WORKER_DIED,
                                              f"worker died: the executor is broken ({_named(error)})"))
            return
        deadline = math.inf if self.timeout is None else time.monotonic() + self.timeout
        self.inflight[future] = _Slot(index, deadline, alone or self.engine.capacity == 1)

    def _settle(self) -> None:
        if not self.inflight:
            return
        first = min(slot.deadline for slot in self.inflight.values())
        done, _ = wait(list(self.inflight), return_when=FIRST_COMPLETED,
                       timeout=None if first == math.inf else max(0.0, first - time.monotonic()))
        for future in done:
            self._settle_one(future, self.inflight.pop(future))
        now = time.monotonic()
        overdue = [f for f, slot in self.inflight.items() if slot.deadline <= now and not f.done()]
        if not overdue:
            return
        for future in overdue:
            index = self.inflight.pop(future).index
            self._finish(index, _failed(self.starts[index], BatchStatus.TIMED_OUT,
                                        f"timed out after {self.timeout:g} s"))
        for other in self.engine.stop(overdue):     # innocent: run them again
            if other in self.inflight:
                self.pending.appendleft(self.inflight.pop(other).index)

    def _settle_one(self, future: Future, slot: _Slot) -> None:
        try:
            self._finish(slot.index, future.result())
            return
        except Exception as error:
            cause = error
        start = self.starts[slot.index]
        if not _worker_died(cause):
            self._finish(slot.index, _failed(start, BatchStatus.RAISED, _named(cause)))
        elif slot.alone:
            self._finish(slot.index, _failed(start, BatchStatus.WORKER_DIED,
                                                   f"worker died ({_named(cause)})"))
        else:
            self.suspects.append(slot.index)

    def _finish(self, index: int, result: OptimizeResult) -> None:
        self.results[index] = result
        self.progress.update(result)


def minimize_many(fun: Callable, x0s: Iterable, method: str = "newton-cg",
                  executor: Executor | None = None, timeout: float | None = None,
                  progress: bool | Callable = False, **kwargs: Any) -> list[OptimizeResult]:
    """Independent runs of :func:`minimize` (multistart, sweeps), one per start; a run that fails
    costs only its own entry.

    The executor is an existing engine: a ``concurrent.futures.ProcessPoolExecutor``, a Dask cluster
    (``client.get_executor()``, or the ``distributed.Client`` itself), or any other
    ``concurrent.futures.Executor``; with none the runs are sequential, here. Every start gets its
    own entry, in order. A run that fails is a result with ``success=False``, the other runs' results
    are kept:

    - it raised (``status`` ``BatchStatus.RAISED``, -1): ``message`` is ``"TypeName: text"``,
      ``traceback`` the worker's traceback, ``x`` and ``fun`` the last iterate reached (the start,
      with ``fun`` NaN, before the first), ``nit`` the iterations done;
    - it ran longer than ``timeout`` (``BatchStatus.TIMED_OUT``, -2): ``message`` "timed out after
      ... s", ``x`` the start;
    - its worker died (``BatchStatus.WORKER_DIED``, -3; os._exit, a signal, a crash, Dask's
      KilledWorker): ``message`` "worker died (...)", ``x`` the start. Runs that were in flight when
      a worker died are run again, alone, so only a run that kills its worker by itself is reported.

    A hung run is stopped where it can be: a process pool's processes are killed (the batch goes on
    on a fresh pool of the same size, start method and initializer; the pool passed in is then
    broken, as any pool whose worker died), a Dask worker's process is ended and its nanny starts a
    new one. Other executors (a thread pool) cannot stop a run: it is abandoned, its worker stays
    busy, and one fewer run is handed out at a time. With no executor, a ``timeout`` runs the starts
    one at a time in a child process (a fresh one after a run that kills it or hangs); without a
    timeout the runs share this process, and a run that ends it ends the caller. Runs in other
    processes need ``fun`` (and the options) to pickle: a module-level function (Dask also ships
    lambdas).

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
        Seconds each run may take, counted from when it is handed out; no more runs are handed out
        at a time than the executor has workers, so a run never waits behind another.
    progress : bool or callable, default False
        ``True`` draws a one-line bar on stderr as runs finish; a callable is called as
        ``progress(done, total, result)`` with each finished run (in the order they finish).
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
        Before any run, for an unknown method or a timeout that is not a positive number.

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
    method_declaration(method)
    inspect.signature(minimize).bind(fun, None, method=method, **kwargs)
    callback = kwargs.get("callback")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    if timeout is not None:
        check_option("timeout", timeout, label="timeout")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False or a callable, got {type(progress).__name__}")
    run, starts = _Run(fun, method, kwargs), list(x0s)
    engine = _engine(executor, timeout)
    if isinstance(engine, _ProcessPool):
        try:
            engine.check_pickles(run)
        except TypeError:
            engine.close(clean=True)
            raise
    return _Batch(run, starts, engine, timeout, _Progress(progress, len(starts)))()
