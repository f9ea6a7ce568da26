"""hessopt.minimize_many: independent runs (multistart, sweeps) over an existing executor."""
from __future__ import annotations

import functools
from concurrent.futures import Executor
from typing import Any, Callable, Iterable

from scipy.optimize import OptimizeResult

from ._minimize import minimize


def minimize_many(fun: Callable, x0s: Iterable, method: str = "newton-cg",
                  executor: Executor | None = None, **kwargs: Any) -> list[OptimizeResult]:
    """Independent runs (multistart, sweeps) mapped over any ``concurrent.futures.Executor``.

    A process pool on one machine, a Dask cluster (``distributed.Client(...).get_executor()``) or Ray
    beyond it; with no executor the runs are sequential. ``fun`` must be picklable for process and
    cluster executors (a module-level function). ``kwargs`` go to :func:`minimize`.

    Returns
    -------
    list of OptimizeResult
        One per starting point, in order.

    Examples
    --------
    A double well: each start finds its own minimum.

    >>> import numpy as np
    >>> import hessopt
    >>> runs = hessopt.minimize_many(lambda x: (x[0] ** 2 - 1) ** 2, [[-2.0], [0.5]], method="newton")
    >>> [float(r.x[0].round(4)) for r in runs]
    [-1.0, 1.0]
    """
    run = functools.partial(minimize, fun, method=method, **kwargs)
    if executor is None:
        return [run(x0) for x0 in x0s]
    return list(executor.map(run, x0s))
