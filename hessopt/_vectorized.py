"""minimize_many's vectorized batch (``vectorize=True``): every start advanced together.

A run of ``minimize`` per start costs about a millisecond of Python machinery however small the
problem (issue 36: 106-494 solves per CPU second on 2-5 parameter fits). Here trust-exact runs once
on the whole batch (``optimizers.batched.minimize_batch``: stacked eigendecompositions, one step of
every running start per iteration) and each iteration evaluates f, its gradient and its Hessian at
all the running starts in one call of ``autodiff.hessian_rows``: a loop of the replayed program, or
with ``native=True`` one numba loop over the native program (the compiled extra).

What the batch cannot do it refuses by name (other methods, bounds, constraints, callbacks,
executors, timeouts, user derivatives, pytree starts) rather than quietly running the starts one by
one. Each start may have its own data: ``batch_args``, arrays whose leading axis is the starts',
row i of each passed after ``args`` to the i-th start's fun.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
from optimizers.batched import minimize_batch

from ._arguments import as_args, check_option, is_tree, real_array

#: minimize_many's keywords the vectorized batch takes (the others are refused by name).
TAKEN = {"args", "tol", "options"}
#: the options of trust-exact the batch takes, as ``minimize_batch``'s keywords.
OPTIONS = ("gtol", "maxiter", "initial_trust_radius", "max_trust_radius", "eta")

def refusal(method: str, executor, timeout, progress, kwargs: dict) -> str | None:
    """Why minimize_many cannot run these arguments as one vectorized batch (None: it can)."""
    if method != "trust-exact":
        return f"it runs method='trust-exact' only, not {method!r}"
    if executor is not None or timeout is not None:
        return ("it advances every start together in this process: executor and timeout are for runs "
                "of their own")
    if progress:
        return "it finishes every start together: progress reports runs finishing one by one"
    for name, value in kwargs.items():
        if name not in TAKEN and value is not None:
            return f"{name}= is not taken (it takes args, tol and the options {', '.join(OPTIONS)})"
    unknown = sorted(set(kwargs.get("options") or {}) - set(OPTIONS))
    if unknown:
        return f"the option {unknown[0]!r} is not taken (it takes {', '.join(OPTIONS)})"
    return None


def minimize_vectorized(fun: Callable, starts: list, args, batch_args, native: bool,
                        options: dict | None, tol: float | None = None) -> list[OptimizeResult]:
    """The vectorized batch's results, one OptimizeResult per start, in order (see the module);
    ``tol`` is the gradient test's ``gtol`` unless the options give one (as minimize takes it)."""
    X0, shape = _stacked(starts)
    args = as_args(args if args is not None else ())
    batch = _batch_arrays(batch_args, len(starts))
    taken = {name: check_option(name, value, "trust-exact") for name, value in (options or {}).items()}
    if tol is not None:
        taken.setdefault("gtol", check_option("gtol", tol, label="tol"))
    derivatives = _rows_of(fun, shape, native)

    def evaluate(X: np.ndarray, rows: np.ndarray) -> tuple:
        """f, g, H at the running starts' points; ``rows``: their indices among the starts."""
        return derivatives(X, *args, row_args=tuple(b[rows] for b in batch))

    results = minimize_batch(evaluate, X0, indexed=True, **taken) if X0.shape[0] else []
    for result in results:
        result.x = result.x.reshape(shape)
        result.jac = np.asarray(result.jac).reshape(shape)
        if native and derivatives.native_reason is not None:   # asked for, and why it did not compile
            result.native_reason = derivatives.native_reason
    return results


def _stacked(starts: list) -> tuple[np.ndarray, tuple]:
    """The starts as the rows of one float array, and their common shape."""
    arrays = []
    for k, x0 in enumerate(starts):
        if is_tree(x0) or isinstance(x0, (ad.Tensor, ad.Variable)):
            raise TypeError(f"minimize_many(vectorize=True): start {k} is a {type(x0).__name__} (a pytree, a "
                            "Tensor or a Variable); the vectorized batch takes starts that are arrays of one shape")
        array = real_array(x0, f"minimize_many(vectorize=True): start {k}").astype(float)
        if arrays and array.shape != arrays[0].shape:
            raise ValueError(f"minimize_many(vectorize=True): start {k} has shape {array.shape}, start 0 "
                             f"{arrays[0].shape}; the vectorized batch takes starts of one shape")
        arrays.append(array)
    if not arrays:
        return np.empty((0, 0)), (0,)
    return np.array([a.reshape(-1) for a in arrays]), arrays[0].shape


def _batch_arrays(batch_args, m: int) -> tuple:
    """``batch_args`` as float arrays whose leading axis is the m starts'."""
    if batch_args is None:
        return ()
    batch = as_args(batch_args)
    arrays = []
    for k, values in enumerate(batch):
        array = real_array(values, f"minimize_many: batch_args[{k}]")
        if array.ndim == 0 or array.shape[0] != m:
            raise ValueError(f"minimize_many: batch_args[{k}] has shape {array.shape}; its leading axis must be "
                             f"the starts' ({m})")
        arrays.append(np.asarray(array, dtype=float))
    return tuple(arrays)


def _rows_of(fun: Callable, shape: tuple, native: bool) -> ad.HessianRows:
    """``autodiff.hessian_rows`` of fun on flat rows (reshaped to the starts' shape). An
    ``autodiff.function`` keeps them for its next batch (traced once, as minimize keeps its
    programs); a plain fun is traced at each batch, so a global it reads is read again, and numba's
    compile is reused where the program is the same (``autodiff.jit.native``)."""
    key = (_rows_of, shape, native)
    rows = fun.memo.get(key) if isinstance(fun, ad.Function) else None
    if rows is None:
        flat = fun if len(shape) == 1 else (lambda x, *args: fun(np.reshape(x, shape), *args))
        rows = ad.hessian_rows(flat, native=native)
        if isinstance(fun, ad.Function):
            fun.memo[key] = rows
    return rows
