"""The right-hand sides of odeint's derivative systems, traced once and replayed as NumPy programs.

A derivative of ``odeint`` is itself an integration: of the forward sensitivities or of the
adjoint, whose rates need Jacobians or vector-Jacobian products of ``func`` at every step. Written
with the engine's ops they would record and sweep a tape at each of LSODA's evaluations; here each
rate is traced once (``autodiff.jit``: the same recording ``autodiff.function`` replays) and LSODA
calls the straight-line program, plain NumPy with no Tensor and no tape. On Tensors (a derivative
of the derivative) a rate runs on the engine's ops as written, so it differentiates again.

Programs are kept per ``func`` while it lives, as ``jax.experimental.ode`` keeps its compiled
``func``: one trace per derivative system and argument signature (shapes and dtypes of the float
arrays, values of the rest). A value ``func`` reads from a global or a closure is a constant of the
program, so each derivative computation first checks the program of ``func`` itself against
``func`` at its initial point and traces again when they differ (a changed global or closure).
A branch on the state is guarded (a replay that takes another branch traces again); a ``func`` that
a trace cannot follow (one that reads a float value, ``float(t)``, ``np.interp``) runs on the
engine's ops at each evaluation, as before this module existed.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as _np

from ..core import shape_of, value_of
from ..jit import CACHE_SIZE, MAX_TRACES_PER_SIGNATURE, LeastRecentlyUsed, Program, UntraceableError, trace
from ..jit.program import Retrace
from ..jit.signature import signature
from ..transforms import vjp

# the largest state whose derivative system gets its exact (dense) Jacobian for LSODA's stiff method
DENSE_JACOBIAN_LIMIT = 128
_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # func -> its programs by key
_EAGER = "eager"  # a cache entry: the trace was refused, the rate runs on the engine's ops


class Dynamics:
    """The rate ``rate(z, s, *args)`` of a derivative system of ``func``, written with the engine's
    ops; ``key`` (hashable) names it among the systems of ``func``. ``block_jacobian(z, s, *args)``,
    when given, is the square block (of ``func``'s Jacobian in y) that the rate's Jacobian repeats
    down its diagonal, for a state too large for the exact Jacobian (``stiff_jacobian``).

    Called on Tensors, it is the rate itself (recorded like any computation); ``compiled`` gives
    the replayed program for one solve.
    """

    def __init__(self, rate: Callable, key: tuple, func: Callable, block_jacobian: Callable | None = None):
        self.rate, self.key, self.func, self.block_jacobian = rate, key, func, block_jacobian

    def __call__(self, z, s, *args):
        return self.rate(z, s, *args)

    def compiled(self, z, s, args: tuple, more: tuple = ()) -> Callable:
        """``(z, s, *more) -> rate`` as an ndarray for the solves with these ``args``, replayed
        (``more``: examples of further arguments that change between calls, after s)."""
        return _Replay(self.rate, self.key, self.func, z, s, args, more)

    def stiff_jacobian(self, z, s, args: tuple) -> dict:
        """scipy odeint's options that give LSODA's stiff method the rate's Jacobian in z: the
        exact one (one sweep of the rate's program batched over its rows) for a state of at most
        ``DENSE_JACOBIAN_LIMIT`` entries; beyond, the block diagonal of ``block_jacobian`` in
        banded storage (O(size block^2) to factor, not O(size^3)), or none (LSODA's own
        differences) without it.

        The block diagonal leaves out the blocks below it (the sensitivities' rates depend on y
        through the second derivatives of ``func``): LSODA's Newton iteration still converges to
        the same solution, in more iterations and steps (tenfold for the stiff Robertson system,
        whose exact Jacobian is small enough).
        """
        size = _np.size(z)
        if size <= DENSE_JACOBIAN_LIMIT:
            exact = lambda z, s, *args: jacobian_rows(lambda z: self.rate(z, s, *args), z)  # noqa: E731
            return {"Dfun": _Replay(exact, self.key + ("jacobian",), self.func, z, s, args)}
        if self.block_jacobian is None:
            return {}
        block = _Replay(self.block_jacobian, self.key + ("block",), self.func, z, s, args)
        width = _np.shape(block(z, s))[0]
        return {"Dfun": lambda z, s: banded(block(z, s), size // width, size), "ml": width - 1, "mu": width - 1}


def jacobian_rows(f: Callable, z):
    """The Jacobian of ``f`` (1-d to 1-d) at z: one sweep batched over its rows."""
    value, pullback = vjp(f, z)
    return pullback(_np.eye(shape_of(value)[0]))[0]


def banded(block, copies: int, size: int) -> _np.ndarray:
    """The matrix of ``copies`` of the square ``block`` down the diagonal (zeros after them, up
    to ``size``) in LSODA's banded storage: ``band[i - j + b - 1, j]`` is its (i, j) entry."""
    b = block.shape[0]
    rows, columns = _np.indices((b, b))
    one = _np.zeros((2 * b - 1, b))
    one[rows - columns + b - 1, columns] = block
    band = _np.zeros((2 * b - 1, size))
    band[:, :b * copies] = _np.tile(one, (1, copies))
    return band


class _Replay:
    """A rate for the solves with fixed ``args``: ``(z, s, *more) -> ndarray`` (``more``: further
    arrays that change from call to call, as z does), by the programs traced for its signature
    (alternatives for the branches taken), or on the engine's ops when the trace was refused."""

    def __init__(self, rate: Callable, key: tuple, func: Callable, z, s, args: tuple, more: tuple = ()):
        example = (_np.asarray(z, dtype=_np.float64), _np.float64(s), *more, *args)
        signature_key, values, self._rebuild, _ = signature(example)
        self._rate, self._cache, self._key = rate, _programs_of(func), (key, signature_key)
        self._changing = 2 + len(more)
        # the float arrays of args (after z, s and more); a 0-d one as a NumPy scalar, on which
        # NumPy's arithmetic is several times faster, with the same values
        self._fixed = tuple(value[()] if value.ndim == 0 else value for value in values[self._changing:])
        self._args = args
        self._entry = self._cache.get(self._key) or []  # traced at the first call, if not kept
        self._last = None  # the program that ran last, when it reads nothing afresh: tried first

    def __call__(self, z, s, *more):
        s = _np.float64(s)
        if self._last is not None:
            try:
                return self._last.run(z, s, *more, *self._fixed)
            except Retrace:
                pass
        while True:
            if self._entry is _EAGER:
                return _np.asarray(value_of(self._rate(z, s, *more, *self._args)), dtype=_np.float64)
            for program, variables in self._entry:
                try:
                    rate = program.run(z, s, *more, *self._fixed, *[value_of(v) for v in variables])
                except Retrace:
                    continue
                self._last = None if variables else program
                return rate
            self._entry = self._trace(self._rebuild([z, s, *more, *self._fixed]))

    def _trace(self, example: tuple):
        """Trace the rate at ``example`` and keep the program among the alternatives of its key."""
        try:
            recording = trace(self._rate, *example)
        except UntraceableError:
            self._cache.put(self._key, _EAGER)
            return _EAGER
        program = Program(recording.records, recording.inputs, recording.outputs, recording.guards,
                          recording.raw, single=True)
        entry = self._cache.get(self._key)
        alternatives = [] if entry is None or entry is _EAGER else entry
        variables = recording.inputs[self._changing + len(self._fixed):]  # read afresh by each call
        entry = [(program, variables)] + alternatives[:MAX_TRACES_PER_SIGNATURE - 1]
        self._cache.put(self._key, entry)
        return entry


def _programs_of(func: Callable) -> LeastRecentlyUsed:
    """The programs kept for ``func`` (a fresh cache when ``func`` cannot be a weak key: they then
    live for one derivative computation)."""
    try:
        programs = _PROGRAMS.get(func)
        if programs is None:
            programs = _PROGRAMS[func] = LeastRecentlyUsed(CACHE_SIZE)
        return programs
    except TypeError:
        return LeastRecentlyUsed(CACHE_SIZE)


def check_fresh(func: Callable, y0, t0, args: tuple) -> None:
    """Keep the programs of ``func`` only if its own program, kept with them, still gives
    ``func``'s rate at ``(y0, t0)``: a global or a closure it reads may have changed since they
    were traced. Called before a derivative computation makes or takes any other program."""
    if not _weak_key(func):
        return  # its programs live for one derivative computation
    y0, t0 = _np.asarray(y0, dtype=_np.float64), _np.float64(t0)
    programs = _PROGRAMS.get(func)
    if programs is not None and programs.get((("rate",), signature((y0, t0, *args))[0])) is not None:
        rate = _Replay(func, ("rate",), func, y0, t0, args)
        if _np.array_equal(rate(y0, t0), _np.asarray(value_of(func(y0, t0, *args))), equal_nan=True):
            return
    _PROGRAMS.pop(func, None)
    _Replay(func, ("rate",), func, y0, t0, args)(y0, t0)  # traced now, with the programs to come


def replayed_rate(func: Callable, y0, t0, args: tuple) -> Callable:
    """``(y, t) -> func(y, t, *args)`` on plain arrays, as the program of ``func`` that
    ``check_fresh`` keeps (traced now if it keeps none): a further solve of the values (the
    adjoint's checkpoints) without ``func``'s own overhead per call (``np.stack`` is Python)."""
    return _Replay(func, ("rate",), func, _np.asarray(y0, dtype=_np.float64), _np.float64(t0), args)


def _weak_key(func: Callable) -> bool:
    try:
        weakref.ref(func)
        hash(func)
    except TypeError:
        return False
    return True
