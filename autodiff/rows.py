"""``hessian_rows``: f, its gradient and its dense Hessian at every row of an (m, n) array.

A batch of small problems (fits per pixel, per patient or per sensor; multistart) asks for f, g and
H at m points each step. Each point's derivatives replayed one call at a time pay the replay's fixed
Python cost m times, which on a 3-parameter fit is most of the time. Here the program of one row,
``x -> (f(x), gradient, Hessian)`` (the Hessian as ``hessian_operator(f, x).to_dense()`` computes it:
one batched sweep of the recorded gradient), is traced once and run over the rows:

- by default, a loop of the replayed program's calls (``autodiff.function`` of it): each row's
  results are the replay's, bit for bit, whatever f does (branches retrace, Variables are read,
  an f that cannot be traced runs eagerly);
- with ``native=True`` (numba, the compiled extra), one numba function loops over the rows and
  calls the native program (``jit.native.row_loop``): no Python per row, a row costs the
  program's own microseconds. Results are the replay's within rounding (see ``jit.native``). Where
  numba is missing or refuses the program (branches, an op without a spelling), the replay loop
  runs and ``native_reason`` says why.

Arguments after the rows are f's other arguments, the same for every row (scipy's ``args``);
``row_args`` are arrays whose leading axis is the rows', row i of each passed to f at row i (each
start's own data).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .core import Tensor, value_of
from .function import Function
from .jit import Program, trace
from .jit.native import reason, row_loop
from .jit.signature import signature
from .transforms import cached_hvp


def _value_gradient_hessian(f: Callable) -> Callable:
    """``(x, *args) -> (f(x, *args), flat gradient, Hessian)`` for a flat x, the Hessian as the
    transpose of the products with the identity's rows (``HessianOperator.to_dense``'s numbers)."""
    def at(x, *args):
        (value, gradient), product = cached_hvp(lambda point: f(point, *args), x)
        return value, gradient, product(Tensor(np.eye(x.shape[-1]))).T
    return at


class HessianRows:
    """f, its gradient and its dense Hessian at the rows of an array (see :func:`hessian_rows`).

    ``native_reason`` says why the last call did not run the native loop (None: it did, or
    ``native`` is off).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> rows = ad.HessianRows(lambda x: np.sum(x ** 4))
    >>> values, gradients, hessians = rows(np.array([[1.0, 2.0], [-1.0, 0.5]]))
    >>> values, hessians[1]
    (array([17.    ,  1.0625]), array([[12.,  0.],
           [ 0.,  3.]]))
    """

    def __init__(self, f: Callable, native: bool = False):
        if not callable(f):
            raise TypeError(f"hessian_rows needs a callable, got {type(f).__name__}")
        self.f, self.native = f, native
        self.native_reason: str | None = None
        self._at = Function(_value_gradient_hessian(f), eager_fallback=True)
        self._loops: dict = {}      # signature of a row's arguments -> its _Loop, or why none

    def __repr__(self) -> str:
        return f"<autodiff.hessian_rows of {getattr(self.f, '__name__', self.f)!r}>"

    def __call__(self, X: Any, *args: Any, row_args: tuple = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values (m,), gradients (m, n), hessians (m, n, n))`` of f at the rows of X (m, n),
        f called as ``f(X[i], *args, *(r[i] for r in row_args))``.

        Raises
        ------
        ValueError
            If X is not a 2-D array of floats, or an array of ``row_args`` has not m rows.
        TypeError
            If an array of ``row_args`` is not of floats (rows of ints would be static arguments,
            one trace each).
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.dtype.kind != "f":
            raise ValueError(f"hessian_rows: X must be a 2-D array of floats (a point per row), got shape "
                             f"{X.shape} of {X.dtype}")
        rows = tuple(_row_arrays(row_args, X.shape[0]))
        m, n = X.shape
        values, gradients, hessians = np.empty(m), np.empty((m, n)), np.empty((m, n, n))
        if m == 0:
            return values, gradients, hessians
        loop = None
        if self.native:   # (the replay loop's calls walk their arguments themselves)
            key, shared, _, _ = signature(args)
            loop = self._native_loop((n, X.dtype.str, key, tuple((r.shape[1:], r.dtype.str) for r in rows)),
                                     X, args, rows)
        if loop is None:
            for i in range(m):
                values[i], gradients[i], hessians[i] = self._at(X[i], *args, *[r[i] for r in rows])
        else:
            loop.run(X, values, gradients, hessians, shared, rows)
        return values, gradients, hessians

    def _native_loop(self, key: tuple, X: np.ndarray, args: tuple, rows: tuple) -> _Loop | None:
        """The compiled loop of the arguments' signature ``key``, made once; None when numba cannot
        take them (``native_reason`` says why)."""
        made = self._loops.get(key)
        if made is None:
            made = self._loops[key] = self._compiled(X, args, rows)
        self.native_reason = made if type(made) is str else None
        return None if type(made) is str else made

    def _compiled(self, X: np.ndarray, args: tuple, rows: tuple) -> _Loop | str:
        """The native loop of a row's program traced at row 0, or why there is none."""
        try:
            recording = trace(self._at.f, X[0], *args, *[r[0] for r in rows])
        except Exception as error:  # an f the trace refuses: the replay loop runs it (eagerly)
            return reason(error)
        program = Program(recording.records, recording.inputs, recording.outputs, recording.guards,
                          recording.raw, native=True, scalars_in=True)
        if program.native_reason is not None:
            return program.native_reason
        shared = signature(args)[1]
        variables = recording.inputs[1 + len(shared) + len(rows):]
        loop = _Loop(row_loop(program.run, (False,) * len(shared) + (True,) * len(rows) + (False,) * len(variables)),
                     variables)
        n = X.shape[1]
        try:   # numba types the loop now, at row 0's arguments (its errors: the replay loop runs)
            loop.run(X[:1], np.empty(1), np.empty((1, n)), np.empty((1, n, n)), shared, [r[:1] for r in rows])
        except Exception as error:
            return reason(error)
        return loop


class _Loop:
    """A compiled loop over the rows (``native.row_loop``) and the Variables its program reads."""

    def __init__(self, compiled: Callable, variables: list):
        self.compiled, self.variables = compiled, variables

    def run(self, X, values, gradients, hessians, shared: list, rows) -> None:
        """Fill ``values``, ``gradients`` and ``hessians`` at the rows of X (0-d inputs as floats)."""
        self.compiled(np.ascontiguousarray(X), values, gradients, hessians, *[_scalar_as_float(v) for v in shared],
                      *rows, *[_scalar_as_float(value_of(v)) for v in self.variables])


def _row_arrays(row_args: tuple, m: int):
    """Each array of ``row_args`` as a C-contiguous array of m rows of floats."""
    if not isinstance(row_args, (tuple, list)):
        raise TypeError(f"hessian_rows: row_args must be a tuple of arrays, got {type(row_args).__name__}")
    for k, r in enumerate(row_args):
        r = np.asarray(value_of(r))
        if r.dtype.kind != "f":
            raise TypeError(f"hessian_rows: row_args[{k}] must be an array of floats (rows of other "
                            f"kinds would be static arguments, traced once each), got {r.dtype}")
        if r.ndim == 0 or r.shape[0] != m:
            raise ValueError(f"hessian_rows: row_args[{k}] has shape {r.shape}; its leading axis must "
                             f"be X's rows ({m})")
        yield np.ascontiguousarray(r)


def _scalar_as_float(value):
    """A 0-d array as the float a native program takes (``scalars_in``); other values as they are."""
    return float(value) if np.ndim(value) == 0 else value


def hessian_rows(f: Callable, native: bool = False) -> HessianRows:
    """f, its gradient and its dense Hessian at each row of an (m, n) array, in one call.

    ``rows = hessian_rows(f)``; ``values, gradients, hessians = rows(X, *args, row_args=())``
    gives ``f(X[i], *args, *(r[i] for r in row_args))``, its gradient and its Hessian for each row:
    the batch of small problems a vectorized optimizer advances together (``hessopt.minimize_many``).
    The row's program is traced once per signature (the rows' length, the arguments' shapes) and
    replayed at each row (bit for bit the replay's numbers); with ``native=True`` and numba
    installed, one compiled loop runs the native program over the rows (see the module docstring).

    Parameters
    ----------
    f : callable
        A scalar function of a flat vector x (and of ``args`` and each row's ``row_args``).
    native : bool, default False
        Loop over the rows in one numba function (the compiled extra); without numba, or for a
        program numba refuses, the replay loop runs and ``native_reason`` says why.

    Returns
    -------
    HessianRows
        Called as ``rows(X, *args, row_args=())``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> rows = ad.hessian_rows(lambda x, a: np.sum(a * x ** 3))
    >>> values, gradients, hessians = rows(np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([1.0, 2.0]))
    >>> values, gradients[1], hessians[0]
    (array([17.   , -1.875]), array([0.75, 6.  ]), array([[ 6.,  0.],
           [ 0., 24.]]))
    >>> values, _, _ = rows(np.zeros((2, 2)) + 1.0, row_args=(np.array([[1.0, 1.0], [3.0, 0.0]]),))
    >>> values                                  # each row's own a
    array([2., 3.])
    """
    return HessianRows(f, native)
