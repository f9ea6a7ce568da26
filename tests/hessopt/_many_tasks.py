"""Objectives for tests/hessopt/test_many.py, at module level in an importable module so that process
and Dask workers can unpickle them (pytest puts this folder on sys.path; workers inherit it).

Each misbehaves only at a start whose first coordinate is BAD: it raises (an Exception or another
BaseException), ends its process (os._exit, sys.exit, SIGKILL), or hangs until the file ``release``
exists (so a test can free a worker it could not stop). Loaded as a Dask worker's preload, this
module makes the worker start SLOW_START seconds late (``dask_setup``).
"""
import asyncio
import os
import signal
import sys
import threading
import time

import numpy as np
from scipy.sparse.linalg import LinearOperator

import autodiff as ad

BAD = -7.0
SLOW_START = 4.0    # seconds a slow worker takes to start (tests/hessopt/test_many.py)


def shifted_sphere(x):
    return np.sum((x - 3.0) ** 2)


@ad.function
def traced_sphere(x):
    """shifted_sphere as a module-level autodiff.function: it pickles by reference."""
    return np.sum((x - 3.0) ** 2)


def _at_bad_start(x) -> bool:
    return bool(x[0] == BAD)


def raising(x):
    if _at_bad_start(x):
        raise ValueError(f"no model at x[0] = {BAD}")
    return shifted_sphere(x)


def dying(x):
    if _at_bad_start(x):
        os._exit(3)
    return shifted_sphere(x)


def killed(x):
    if _at_bad_start(x):
        os.kill(os.getpid(), signal.SIGKILL)
    return shifted_sphere(x)


def dying_once_logged(x, log):
    """Ends its process at the BAD start once the file ``log`` exists (another run is then in
    flight: PauseAtStart(log) writes it and pauses)."""
    if _at_bad_start(x):
        deadline = time.monotonic() + 30.0
        while not os.path.exists(log) and time.monotonic() < deadline:
            time.sleep(0.01)
        os._exit(3)
    return shifted_sphere(x)


def hanging(x, release):
    if _at_bad_start(x):
        deadline = time.monotonic() + 120.0
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.02)
    return shifted_sphere(x)


def interrupting_its_caller(x, release):
    """At the BAD start, Ctrl-C to the process that handed the run out (a pool worker's parent),
    until ``release`` exists, then hangs as ``hanging`` does."""
    if _at_bad_start(x) and not os.path.exists(release):
        os.kill(os.getppid(), signal.SIGINT)
    return hanging(x, release)


def quartic_refusing_near_minimum(x):
    """sum (x - 3)^4, refusing points within 1 of the minimum: Newton from 0 contracts the distance
    by 2/3 a step, so it accepts 1 and 5/3, and raises at its third point, 19/9."""
    if np.max(np.abs(x - 3.0)) < 1.0:
        raise FloatingPointError("too close to the minimum")
    return np.sum((x - 3.0) ** 4)


def exiting(x):
    if _at_bad_start(x):
        sys.exit("the objective called sys.exit")
    return shifted_sphere(x)


class PauseAtStart:
    """A callback that makes each run take half a second more (after its first iteration: callbacks
    come once per iteration, not at x0), noting each pause in the file ``log`` if given."""

    def __init__(self, log: str | None = None):
        self.log = log

    def __call__(self, intermediate_result):
        if intermediate_result.nit == 1:
            if self.log is not None:
                with open(self.log, "a") as out:
                    out.write(f"{intermediate_result.x[0]}\n")
            time.sleep(0.5)


def interrupted(x):
    """Raises KeyboardInterrupt at the BAD start, as a run hit by Ctrl-C in its worker."""
    if _at_bad_start(x):
        raise KeyboardInterrupt
    return shifted_sphere(x)


def cancelled(x):
    """Raises asyncio.CancelledError (a BaseException) at the BAD start, as a framework's cancellation."""
    if _at_bad_start(x):
        raise asyncio.CancelledError("the run's framework cancelled it")
    return shifted_sphere(x)


class Unprintable(ValueError):
    """An exception whose str() raises."""

    def __str__(self):
        raise RuntimeError("no text for this exception")


def raising_unprintable(x):
    if _at_bad_start(x):
        raise Unprintable
    return shifted_sphere(x)


def locked_operator_hessian(x):
    """shifted_sphere's Hessian, 2 I, as a LinearOperator built from a lambda that holds a lock: it
    pickles neither with pickle (a lambda) nor with cloudpickle (a lock)."""
    lock = threading.Lock()
    return LinearOperator((x.size, x.size), matvec=lambda v: 2.0 * v if lock else None, dtype=float)


def dask_setup(worker):
    """Dask's preload hook: a worker with this module as its preload registers with the scheduler
    SLOW_START seconds late (a worker that starts slowly, as a replacement on a loaded machine)."""
    time.sleep(SLOW_START)
