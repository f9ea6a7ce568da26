"""``Traced``: a callable traced once per input signature and replayed as a NumPy program.

The first call with a given signature (the structure of the arguments, the shape and dtype of each
floating-point array, the value of everything else) runs f under a ``Trace`` and returns what that
run computed (f is not run twice); later calls run the program made from its recording. A
program has guards (the branches f took); a replay that fails one traces again, and up to
``MAX_TRACES_PER_SIGNATURE`` alternatives are kept per signature. At most ``cache_size``
signatures are kept (default ``CACHE_SIZE``), the least recently used going first.

Transforms apply to a Traced through the protocol of ``autodiff.transforms``: a transform of it is
a Traced of the transformed function (``__autodiff_transform__``), and a pair (value, function of
late arguments), such as a VJP or a Hessian operator's product, is one traced program split at the
late arguments (``__autodiff_partial__``: partial evaluation). Nothing here knows which transform.
"""
from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Tensor, Variable, state, value_of
from ..tree import flatten, mirror
from .cache import LeastRecentlyUsed
from .program import Program, Retrace, joined, split
from .scalar import as_listed
from .signature import CALL_WITH_ARRAYS, ONE_ARRAY, signature
from .tracing import UntraceableError, record

MAX_TRACES_PER_SIGNATURE = 8  # guarded alternatives kept per signature (least recently used go)
CACHE_SIZE = 64               # signatures kept per function (least recently used go)
JOIN_MAX_BYTES = 1 << 20      # a split keeps its recording for a joined program up to this size (``Pending``)
_EAGER = "eager"              # a cache entry: the trace was refused, f runs eagerly
_REPLAY = "replay"            # a traced call's result: the program's, not the recording's, is to be returned


class _Counts:
    """What a function and the functions derived from it (its transforms) count together."""

    __slots__ = ("traces", "fallback_reason", "native_reason")

    def __init__(self):
        self.traces = 0
        self.fallback_reason: str | None = None
        self.native_reason: str | None = None


class Traced:
    """f, traced once per signature and replayed (see the module docstring).

    ``traces`` counts the traces taken for f and its transforms (a retrace after a failed guard
    included); ``fallback_reason`` says why the last refused trace was refused (with
    ``eager_fallback``, f then runs eagerly for that signature). Called while a tape, an
    accumulator or a trace records, f runs as it is (its ops are recorded). With ``native``, the
    programs are compiled by numba where they can be (``native.native_program``);
    ``native_reason`` says why the last one made is not.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import Traced
    >>> f = Traced(lambda x: np.sum(np.sin(x)))
    >>> float(f(np.zeros(3))), float(f(np.ones(3)).round(6)), f.traces
    (0.0, 2.524413, 1)
    """

    def __init__(self, f: Callable, eager_fallback: bool = False, cache_size: int = CACHE_SIZE,
                 _counts: _Counts | None = None, native: bool = False):
        if not callable(f):
            raise TypeError(f"autodiff.function needs a callable, got {type(f).__name__}")
        cache = LeastRecentlyUsed(cache_size)
        functools.update_wrapper(self, f)       # (copies f's __dict__: what is ours comes after)
        self.f = f
        self.eager_fallback = eager_fallback
        self.cache_size = cache_size
        self.native = native
        self._counts = _counts or _Counts()
        self._cache = cache
        self._derived: dict = {}
        self._fast: _Replay | None = None        # the program of the last call, if it had arrays alone
        self._fast_partial: dict = {}            # build -> (_Staging, _Staged) of the last one-array pair
        self.memo: dict = {}   # what callers derive from f and keep with it, to live and die with it

    @property
    def traces(self) -> int:
        """Traces taken for f and its transforms."""
        return self._counts.traces

    @property
    def fallback_reason(self) -> str | None:
        """Why the last refused trace was refused (None: none was)."""
        return self._counts.fallback_reason

    @property
    def native_reason(self) -> str | None:
        """With ``native``: why the last program made is not compiled by numba (None: it is)."""
        return self._counts.native_reason

    def __repr__(self):
        return f"<autodiff.function {getattr(self.f, '__name__', self.f)!r}>"

    def __get__(self, instance, owner):  # decorating a method: bind like a function
        return self if instance is None else functools.partial(self, instance)

    def __reduce__(self):
        """By reference when this object is a module-level name (``@ad.function`` on a function),
        else as a new one of f (pickled as usual). Traces are not pickled: they are made again."""
        found = sys.modules.get(getattr(self, "__module__", None) or "")
        for part in getattr(self, "__qualname__", "<>").split("."):
            found = getattr(found, part, None)
        if found is self:
            return self.__qualname__
        return (type(self), (self.f, self.eager_fallback, self.cache_size, None, self.native))

    # --- calls -----------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        fast = self._fast  # the common call (arrays, as last time) goes straight to the program
        if (fast is not None and len(args) == len(fast.arrays) and not kwargs
                and not (state.tapes or state.accumulators or state.observers)):
            x = args[0]   # the first array inline (a gradient's only one), a second too (an HVP's v), more in a loop
            if (type(x) is np.ndarray and (x.shape, x.dtype) == fast.first
                    and (not fast.rest or (type(y := args[1]) is np.ndarray and (y.shape, y.dtype) == fast.rest[0]
                                           and (len(args) == 2 or _matching(args, fast.rest))))):
                try:
                    return fast.direct(*args)
                except Retrace:
                    pass
        if state.tapes or state.accumulators or state.observers:  # recorded: f's own ops
            return self.f(*args, **kwargs)
        key, values, rebuild, tensors_in = signature((args, kwargs))
        entry = self._entry(key)
        self._fast = None
        while True:
            if entry is _EAGER:
                return mirror(self._call(rebuild, [Tensor(v) for v in values]), tensors_in)
            for program in entry or ():
                try:
                    result = mirror(program.run(values), tensors_in)
                except Retrace:
                    continue
                if program.direct is not None:
                    self._fast = program
                return result
            entry, result = self._trace_call(key, rebuild, values)
            if entry is not _EAGER and result is not _REPLAY:
                return mirror(result, tensors_in)

    def _call(self, rebuild: Callable, leaves: list) -> Any:
        call_args, call_kwargs = rebuild(leaves)
        return self.f(*call_args, **call_kwargs)

    def _trace_call(self, key: Any, rebuild: Callable, values: list) -> tuple:
        """Trace f at ``values``: (the cache entry of ``key``, f's result there as the recording computed
        it), so that the call that traces does not run the program again; ``_REPLAY`` for the result
        when the program's values may differ from the recording's in rounding (it is run then, so
        that every call gives its values); (``_EAGER``, None) when the trace was refused."""
        tensors = [Tensor(v) for v in values]
        try:
            recording = record(lambda: self._call(rebuild, tensors), tensors)
            program = _Replay(recording, key, self.native)
        except Exception as error:
            return self._refuse(error, key), None
        self._counts.native_reason = program.native_reason
        entry = self._keep(key, program)
        if not program.repeats_recording:
            return entry, _REPLAY
        if program.direct is not None:
            self._fast = program
        return entry, recording.structure(_traced_results(recording))

    # --- the cache -------------------------------------------------------------------------------
    def _entry(self, key):
        """The cache entry of ``key`` (alternatives, ``_EAGER`` or None), made the most recent."""
        return self._cache.get(key)

    def _refuse(self, error: Exception, key) -> str:
        """Re-raise ``error`` unless it is (or comes from) a refusal and ``eager_fallback`` is set;
        then the entry of ``key`` is ``_EAGER``."""
        refusal = _refusal(error)  # NumPy may wrap it (r[i] = t raises ValueError from it)
        if refusal is None or not self.eager_fallback:
            raise error
        self._counts.fallback_reason = str(refusal)
        self._cache.put(key, _EAGER)
        return _EAGER

    def _keep(self, key, traced) -> list:
        """Add a trace to the alternatives of ``key`` (first: the newest is the likeliest)."""
        self._counts.traces += 1
        entry = self._cache.get(key)
        entry = ([traced] + (entry if isinstance(entry, list) else []))[:MAX_TRACES_PER_SIGNATURE]
        self._cache.put(key, entry)
        return entry

    # --- the transform protocol (autodiff.transforms) ----------------------------------------------
    def __autodiff_transform__(self, transform: Callable, *args):
        """``transform(f, *args)`` as a Traced that shares this one's counts (made once)."""
        key = (transform, _hashable(args))
        derived = self._derived.get(key)
        if derived is None:
            derived = self._derived[key] = type(self)(transform(self.f, *args), self.eager_fallback,
                                                      self.cache_size, self._counts, self.native)
        return derived

    def __autodiff_partial__(self, build: Callable, args: tuple, late: Callable):
        """``build(f, *args)``, a value and a function of late arguments, replayed.

        ``(args, late args) -> (value, function(*late args))`` is traced once, with the late
        arguments ``late(value)`` returns (examples: their shapes and dtypes count), and split
        there (partial evaluation, ``program.split``): the value and what the late part needs are
        computed now; each call of the function runs only the rest. Late arguments of another
        signature get their own split, at the same point (the Variables' values of now).
        """
        if state.tapes or state.accumulators or state.observers:
            return build(self.f, *args)
        fast = self._fast_partial.get(build)  # one array, as last time: straight to the split
        if fast is not None and len(args) == 1:
            staging, staged = fast
            x = args[0]
            if type(x) is np.ndarray and x.shape == staging.key[1] and x.dtype == staging.key[2]:
                try:
                    return staged.start(staging, [x], False)
                except Retrace:
                    pass
        key, values, rebuild, tensors_in = signature(args)
        staging = _Staging(self, build, key, rebuild, late)
        entry = self._entry(staging.cache_key(None))
        self._fast_partial.pop(build, None)
        while True:
            if entry is _EAGER:
                return build(self.f, *args)
            for staged in entry or ():
                try:
                    started = staged.start(staging, values, tensors_in)
                except Retrace:
                    continue
                if key[0] == ONE_ARRAY and not staged.variables:
                    self._fast_partial[build] = (staging, staged)
                return started
            entry = staging.trace(values, None, None)

    def __autodiff_deferred__(self, build: Callable, x: Any) -> Pending | None:
        """``build(f, x)`` as a ``Pending`` (its value made on first use, a single late call one
        program) when x is one array of the signature of the last split of ``build`` and that split
        has a fast late call (the fast path of ``__autodiff_partial__``); else None."""
        fast = self._fast_partial.get(build)
        if fast is None or type(x) is not np.ndarray or state.tapes or state.accumulators or state.observers:
            return None
        staging, staged = fast
        _, shape, dtype = staging.key
        if x.shape != shape or (x.dtype is not dtype and x.dtype != dtype) or staged.fast is None:
            return None
        return Pending(staging, staged, x)


class _Replay:
    """A program of a call: its inputs are the traced leaves, then the Variables it reads.

    ``direct(*arrays)``, for a call with float arrays alone (``arrays``: their shapes and dtypes)
    and no Variables, is the program's result as ``Traced.__call__`` returns it (mirrored), with no
    tree walk: one array out, or a tuple of arrays (0-d ones as NumPy scalars); None for any other
    call (and ``arrays`` is then ``()``; ``first``: the first array's (shape, dtype), ``rest``: the
    others'). ``single``: such a call's result is one array (not 0-d);
    the program returns it alone, and is ``direct`` (a gradient's call is the program's call).
    Both follow the program's run when it switches to its scalar program (``scalar.Tiering``).
    """

    __slots__ = ("program", "run_program", "variables", "structure", "n_out", "arrays", "first", "rest", "single",
                 "direct", "native_reason", "repeats_recording", "__weakref__")

    def __init__(self, recording, key, native: bool = False):
        self.variables = [t for t in recording.inputs if isinstance(t, Variable)]
        arrays = key[0] == CALL_WITH_ARRAYS and not self.variables
        n_out = len(recording.outputs)
        self.single = (arrays and recording.structure(list(range(n_out))) == 0
                       and np.ndim(value_of(recording.outputs[0])) > 0)
        program = Program(recording.records, recording.inputs, recording.outputs, recording.guards,
                          recording.raw, single=self.single, native=native)
        self.program, self.structure, self.n_out = program, recording.structure, n_out
        self.native_reason, self.repeats_recording = program.native_reason, program.repeats_recording
        self.arrays = key[1] if arrays else ()
        self.first, self.rest = (key[1][0], key[1][1:]) if arrays else (None, ())
        self._bind()
        if program.tiering is not None:
            program.tiering.join(self._bind)

    def _bind(self) -> None:
        """``run_program`` and ``direct`` from the program's run (again when it switches)."""
        run = self.run_program = self.program.run
        self.direct = (run if self.single else
                       _direct(run, self.structure, self.n_out) if self.first is not None else None)

    def run(self, values: list):
        results = self.run_program(*values, *[value_of(v) for v in self.variables])
        return self.structure([results] if self.single else results)


def _matching(arrays: tuple, rest: tuple) -> bool:
    """Whether the arrays after the first are ndarrays of the shapes and dtypes in ``rest`` (pairs)."""
    for x, (shape, dtype) in zip(arrays[1:], rest):
        if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype:
            return False
    return True


def _traced_results(recording) -> list:
    """The values of a recording's outputs, as its program returns them: what an op computed is
    returned as it is; an input or a constant, copied (the caller may change it in place)."""
    computed = set()
    for record_ in recording.records:
        out = record_[4]
        computed.update(o._id for o in (out if type(out) is tuple else (out,)))
    return [value_of(o) if isinstance(o, Tensor) and o._id in computed else _copied(value_of(o))
            for o in recording.outputs]


def _copied(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _direct(run: Callable, structure: Callable, n_out: int) -> Callable | None:
    """``run``'s result mirrored (see ``_Replay``) when ``structure`` is one leaf or a flat tuple."""
    form = structure(list(range(n_out)))
    if n_out == 1 and form == 0:
        def direct(*arrays):
            (result,) = run(*arrays)
            return result[()] if type(result) is np.ndarray and result.ndim == 0 else result
        return direct
    if type(form) is tuple and form == tuple(range(n_out)):
        return lambda *arrays: _scalars(run(*arrays))
    return None


def _scalars(results) -> tuple:
    """Results (arrays or scalars) as a tuple, 0-d arrays as NumPy scalars: ``mirror`` of them."""
    return tuple([r[()] if type(r) is np.ndarray and r.ndim == 0 else r for r in results])


# --- partial evaluation ---------------------------------------------------------------------------

class _Staging:
    """The split pairs of ``build`` for one early signature (``Traced.__autodiff_partial__``),
    cached in the owner's cache by late signature (None: the default one, of ``late(value)``)."""

    def __init__(self, owner: Traced, build: Callable, key, rebuild: Callable, late: Callable):
        self.owner, self.build, self.key, self.rebuild, self.late = owner, build, key, rebuild, late

    def cache_key(self, late_key):
        return ("partial", self.build, self.key, late_key)

    def trace(self, values: list, late_args: tuple | None, snapshot: dict | None):
        """Trace ``(args, late) -> (value, function(*late))`` and split it at the late arguments
        (``late_args``, or ``late(value)``); Variables read at their ``snapshot`` values."""
        owner = self.owner
        made: list = []

        def body(tensors):
            out, function = self.build(owner.f, *self.rebuild(tensors))
            example = self.late(out) if late_args is None else late_args
            leaves, structure = flatten(tuple(example))
            late_tensors = [Tensor(np.array(value_of(leaf))) for leaf in leaves]
            state.observers[-1].watch(late_tensors)
            made.append((late_tensors, structure))
            return out, function(*structure(late_tensors))

        tensors = [Tensor(v) for v in values]
        late_key = None if late_args is None else signature(tuple(late_args))[0]
        try:
            with _variables_at(snapshot):
                recording = record(lambda: body(tensors), tensors)
            staged = _Staged(recording, len(tensors), *made[0], owner.native)
        except Exception as error:
            return owner._refuse(error, self.cache_key(late_key))
        owner._counts.native_reason = staged.before.native_reason or staged.after.native_reason
        return owner._keep(self.cache_key(late_key), staged)

    def staged_at(self, values: list, snapshot: dict, late_args: tuple, late_key):
        """(the split for ``late_key``, its ``before`` results, the ``after`` run that takes them) at
        the point of ``values`` and ``snapshot``; ``_EAGER`` if its trace was refused."""
        entry = self.owner._entry(self.cache_key(late_key))
        while True:
            if entry is _EAGER:
                return _EAGER
            for staged in entry or ():
                after = staged.after.run   # read first (see _Staged.start)
                try:
                    return staged, staged.before.run(*values, *[snapshot.get(id(v), (v, value_of(v)))[1]
                                                                for v in staged.variables]), after
                except Retrace:
                    continue
            entry = self.trace(values, late_args, snapshot)


class _Staged:
    """One split recording: ``before`` computes the value's leaves, the late function's leaves that
    do not depend on the late arguments, and the saved values; ``after`` the rest."""

    def __init__(self, recording, n_early: int, late_tensors: list, late_structure, native: bool = False):
        self.variables = recording.inputs[n_early:]
        self.before, self.after, self.n_saved, late_positions = split(
            recording.records, recording.inputs, late_tensors, recording.outputs, recording.guards,
            recording.raw, native)
        out_structure, result_structure = _halves(recording.structure, recording.outputs)
        self.n_out = out_structure.num_leaves
        self.out_structure, self.result_structure = out_structure, result_structure
        form = out_structure(list(range(self.n_out)))
        self.out_flat = type(form) is tuple and form == tuple(range(self.n_out))  # (value, gradient)
        self.late_positions = [k - self.n_out for k in late_positions]  # among the result's leaves
        self.late_key = signature(tuple(late_structure([value_of(t) for t in late_tensors])))[0]
        # the fast path: one array in (the only late argument), one array (not 0-d) out, unwrapped
        one_in = len(late_tensors) == 1 and late_structure([0]) == (0,)
        one_out = result_structure.num_leaves == 1 and result_structure([0]) == 0 and self.late_positions == [0]
        self.fast = ((late_tensors[0].shape, late_tensors[0].dtype)
                     if one_in and one_out and recording.outputs[-1].ndim > 0 else None)
        # the joined program of a single late call (``Pending``; a small recording's), made on first use, native
        # as ``before``; a native one returns the late result alone (``joined``: its saved arrays would cost more)
        native_before = native and self.before.native_reason is None
        self.joined_saves = not native_before
        self._join = (functools.partial(joined, recording.records, recording.inputs, late_tensors, recording.outputs,
                                        recording.guards, recording.raw, native_before, self.joined_saves,
                                        self.after)
                      if self.fast and not self.variables and _recorded_bytes(recording) <= JOIN_MAX_BYTES else None)
        self._joined = None

    def start(self, staging: _Staging, values: list, tensors_in: bool, copied: bool = False):
        """Run ``before`` at ``values``: the value and the late function (a ``Late``, which keeps
        copies of them, unless they are ``copied`` already)."""
        after = self.after.run   # read first: a call of before that makes the pair switch (scalar.Tiering) is NumPy's
        if self.variables:
            snapshot = [value_of(v) for v in self.variables]
            results = self.before.run(*values, *snapshot)
        else:
            snapshot, results = (), self.before.run(*values)
        if self.out_flat and not tensors_in:
            value = _scalars(results[:self.n_out])
        else:
            value = mirror(self.out_structure(results[:self.n_out]), tensors_in)
        late = Late(staging, self, values if copied else [np.array(v) for v in values],
                    {id(v): (v, s) for v, s in zip(self.variables, snapshot)} if snapshot else {}, results,
                    tensors_in, after)
        return value, late

    def result(self, results: list, late_results) -> object:
        """The late function's result from ``before``'s results and ``after``'s."""
        fixed = iter(results[self.n_out:len(results) - self.n_saved])
        late = iter([late_results] if self.after_single else late_results)
        positions = set(self.late_positions)
        return self.result_structure([next(late) if k in positions else next(fixed)
                                      for k in range(self.result_structure.num_leaves)])

    @property
    def after_single(self) -> bool:
        return len(self.late_positions) == 1

    def joined_program(self) -> Program | None:
        """``program.joined`` of this split (made on first use; the recording is then let go), or None
        when there is none: no fast late call, or a native split whose joined program numba refused
        (the native split is then faster than a joined NumPy replay)."""
        if self._join is not None:
            build, self._join = self._join, None
            program = build()
            self._joined = program if program.native_reason is None else None
        return self._joined


class Late:
    """The function of the late arguments of a replayed pair (a VJP, a Hessian operator's
    product): each call runs only the program's part that depends on them.

    Late arguments of the signature of the trace take the fast path (one array: straight to the
    program); another signature (a batch of vectors) splits the pair again at the same point.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> y, pullback = ad.vjp(ad.function(np.sin), np.array([0.0, np.pi]))
    >>> type(pullback).__name__, pullback(np.array([1.0, 1.0]))     # cos(x) * cotangent
    ('Late', (array([ 1., -1.]),))
    """

    def __init__(self, staging: _Staging, staged: _Staged, values: list, snapshot: dict, results: list,
                 tensors_in: bool, after: Callable):
        self._staging, self._values, self._snapshot, self._tensors_in = staging, values, snapshot, tensors_in
        self._splits = {staged.late_key: (staged, results, after)}  # after: the run taking before's results
        saved = results[len(results) - staged.n_saved:]
        if staged.fast and not tensors_in:
            self._shape, self._dtype = staged.fast
            self._product = functools.partial(after, *saved)
            tiering = staged.after.tiering
            if tiering is not None and (tiering.left > 0 or after is not staged.after.run):
                self._after = staged.after   # made before its pair switched (or by the call that switched it): follows
                tiering.join(self._switched)
        else:
            self._shape = None
        self._eager = None

    def _switched(self) -> None:
        """The pair switched (``scalar.Tiering``): the products run the ``after`` it runs now, on the
        values the NumPy ``before`` saved as a scalar ``after`` takes them best (lists: the same
        floats, as the switched ``before`` saves them)."""
        saved = self._product.args
        self._product = functools.partial(self._after.run,
                                          *(map(as_listed, saved) if self._after.takes_lists else saved))

    def __call__(self, *late):
        if self._shape is not None and len(late) == 1:
            v = late[0]
            if type(v) is np.ndarray and v.shape == self._shape and v.dtype == self._dtype:
                return self._product(v)
        key, late_values, _, late_tensors_in = signature(late)
        found = self._splits.get(key)
        if found is None:
            found = self._staging.staged_at(self._values, self._snapshot, late, key)
            self._splits[key] = found
        if found is _EAGER:
            return self._eager_function()(*late)
        staged, results, after = found
        saved = results[len(results) - staged.n_saved:]
        late_results = after(*saved, *late_values)
        return mirror(staged.result(results, late_results), self._tensors_in or late_tensors_in)

    def _eager_function(self) -> Callable:
        """The pair built eagerly at the point (a late signature whose trace was refused)."""
        if self._eager is None:
            staging = self._staging
            with _variables_at(self._snapshot):
                self._eager = staging.build(staging.owner.f, *staging.rebuild(self._values))[1]
        return self._eager


class Pending:
    """A replayed pair at a point of one array whose early part has not run yet
    (``Traced.__autodiff_deferred__``): a Hessian operator asked for one product at each new point
    (Newton-CG's first, a Hessian-vector product at (x, v)) then costs one program.

    ``start()`` is the pair ``(value, Late)`` as ``__autodiff_partial__`` gives it (``before``
    runs then, once). A call with one late argument of the trace's signature, before the pair is
    started, runs ``program.joined``: ``before`` and ``after`` in one program, without the ops
    that only the value needs; later such calls run only ``after`` on the values it saved, as
    ``Late`` does (a native joined program saves none: they start the pair). Any other call
    starts the pair and is its ``Late``'s. ``shape``, ``dtype``: the late argument's.
    """

    __slots__ = ("_staging", "_staged", "_x", "_saved", "_after", "_started", "shape", "dtype")

    def __init__(self, staging: _Staging, staged: _Staged, x: np.ndarray):
        self._staging, self._staged, self._x = staging, staged, x.copy()  # the point as it is now
        self._saved = self._started = None   # _saved: () once a joined program that saves none has run
        self._after = None   # the after run that takes _saved
        self.shape, self.dtype = staged.fast

    def start(self) -> tuple:
        """``(value, Late)`` at the point (made once: ``before`` runs, or the pair is traced again
        when the point takes another branch)."""
        if self._started is None:
            staging = self._staging
            try:
                self._started = self._staged.start(staging, [self._x], False, copied=True)
            except Retrace:
                self._started = staging.owner.__autodiff_partial__(staging.build, (self._x,), staging.late)
        return self._started

    def __call__(self, *late):
        if len(late) == 1:
            v = late[0]
            if type(v) is np.ndarray and v.shape == self.shape and v.dtype == self.dtype:
                return self.vector_product(v)
        return self.start()[1](*late)

    def vector_product(self, v: np.ndarray) -> np.ndarray:
        """The call with one late argument ``v``, an ndarray of the trace's shape and dtype (the
        caller checked): the joined program, or ``after`` on the values it saved, or the pair's."""
        if self._started is None:
            if self._saved:
                return self._after(*self._saved, v)
            joined = None if self._saved is not None else self._staged.joined_program()
            if joined is not None:
                after = self._staged.after.run   # read first: it takes what the joined program saves
                try:
                    results = joined.run(self._x, v)
                except Retrace:   # another branch at this point: the pair starts (and traces it)
                    return self.start()[1](v)
                if not self._staged.joined_saves:
                    self._saved = ()
                    return results
                self._saved, self._after = results[:-1], after
                return results[-1]
        return self.start()[1](v)


def _recorded_bytes(recording) -> int:
    """The bytes of the arrays a recording's ops made. A joined program saves a call's fixed cost,
    which only small problems feel; a large recording is not kept for it (the split runs)."""
    return sum(getattr(value_of(o), "nbytes", 0) for r in recording.records
               for o in (r[4] if type(r[4]) is tuple else (r[4],)))


def _halves(structure: Callable, outputs: list) -> tuple:
    """The structures of the two halves of ``(value, result)``, from the structure of the pair."""
    pair = structure(list(range(len(outputs))))
    return flatten(pair[0])[1], flatten(pair[1])[1]


@contextlib.contextmanager
def _variables_at(snapshot: dict | None):
    """Inside: the Variables of ``snapshot`` ({id: (Variable, value)}) hold those values."""
    changed = []
    try:
        for variable, value in (snapshot or {}).values():
            if value_of(variable) is not value:
                changed.append((variable, value_of(variable)))
                variable.assign(value)
        yield
    finally:
        for variable, value in reversed(changed):
            variable.assign(value)


# --- helpers ----------------------------------------------------------------------------------------

def _refusal(error: BaseException) -> UntraceableError | None:
    """The UntraceableError that ``error`` is, or was raised from, if any."""
    while error is not None:
        if isinstance(error, UntraceableError):
            return error
        error = error.__cause__ or error.__context__
    return None


def _hashable(args: tuple) -> tuple:
    """``args`` with lists as tuples (argnums may be a list), to key the transforms of a function."""
    return tuple(tuple(a) if isinstance(a, list) else a for a in args)
