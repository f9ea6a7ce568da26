"""``autodiff.function``: trace once per input signature, replay without the tape machinery.

Like ``tf.function`` and ``jax.jit``. The first call with a given signature (the structure of the
arguments, the shape and dtype of each floating-point array, the value of everything else) runs f
on a tape that records every op, including the backward sweeps that compute derivatives: every rule
is written with the engine's own ops, so a gradient, a Hessian-vector product or a Jacobian is
itself a flat list of primitive applications. That list becomes a straight-line Python function of
NumPy arrays (dead ops dropped, repeated ones computed once, ops that read no input folded into
constants); later calls run it, with no Tensor, record or rule lookup.

What a trace cannot see it checks or refuses, never silently bakes in:

- a branch on a traced value (``if t > 0``, ``bool(t)``) is *guarded*: the replay checks that the
  same branch is taken and traces again when it is not (both branches are then kept);
- an integer or boolean value read to compute with (an index, a mask) is guarded the same way;
- a floating-point value leaving the engine (``t.numpy()``, ``t.item()``, ``float(t)``) is refused
  with ``UntraceableError`` (with ``eager_fallback=True``, f then runs eagerly for that signature);
- Variables that f reads are inputs of the program, read afresh at each call.

Python values (floats, ints, strings) and non-float arrays among the arguments are part of the
signature, as in ``tf.function``: a new value traces again. A global NumPy array f reads, or a
random draw inside f, is fixed at its trace-time value, as in JAX.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Callable

import numpy as np

from . import numpy as anp
from .core import Primitive, Tensor, Variable, add_piece, state
from .tape import GradientTape, UnconnectedGradients, _Node, _require_scalar, _require_tensors
from .tree import flatten

ZERO = UnconnectedGradients.ZERO
MAX_TRACES_PER_SIGNATURE = 8  # guarded alternatives kept per signature (least recently used go)


class UntraceableError(TypeError):
    """f does something a replay could not reproduce (a float value leaving the engine).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> scaled = ad.function(lambda x: x * x.numpy().max())
    >>> try:
    ...     scaled(np.array([1.0, 2.0]))
    ... except ad.UntraceableError as error:
    ...     print(str(error)[:60])
    autodiff.function: the traced function reads the value of a
    >>> ad.function(scaled.f, eager_fallback=True)(np.array([1.0, 2.0]))
    array([2., 4.])
    """


class _Retrace(Exception):
    """A guard failed: the replay took another branch than its trace."""


class _TraceTape(GradientTape):
    """The tape of a trace: records every op on its inputs and on any Variable, paused or not."""

    records_paused = True

    def __init__(self):
        super().__init__(persistent=True)
        self._watch_accessed = "all"


class _Trace:
    """One trace in progress: its tape, and the guards its value reads asked for."""

    def __init__(self):
        self.tape = _TraceTape()
        self.guards: list = []  # (tensor, "bool" or "equal", value)
        self.raw_from: int | None = None  # where the sweep that eager code runs on raw arrays starts

    def read(self, t: Tensor, how: str) -> None:
        """Called by the engine when ``t``'s value is read (see ``core.concrete``)."""
        if isinstance(t, Variable) and t._id not in self.tape._watched:
            self.tape._watched.add(t._id)           # a Variable is an input, even if only read
            self.tape._variables.setdefault(t._id, t)
        if t._id not in self.tape._watched:
            return                                   # a constant: nothing to check
        value = np.asarray(t._value)
        if how == "bool":
            self.guards.append((t, "bool", bool(value)))
        elif value.dtype.kind in "biu" and how not in ("numpy", "item", "float", "complex"):
            self.guards.append((t, "equal", value.copy()))
        else:
            raise UntraceableError(
                f"autodiff.function: the traced function reads the value of a {value.dtype} Tensor "
                f"that depends on its inputs ({_READS.get(how, how)}); a replay could not reproduce "
                "what it computes from it. Keep the computation in NumPy operations on Tensors, or "
                "call the function without autodiff.function.")


_READS = {"numpy": "t.numpy()", "item": "t.item()", "value": "a value-dependent op such as sort, "
          "interp, slogdet's sign or a float exponent", "float": "float(t)", "complex": "complex(t)"}


def _raw_sweep_follows() -> None:
    """Mark the records from here on as a sweep that eager code runs on raw arrays (where slice
    cotangents are ``SlicedCotangent``s): the replay then adds them up the same way."""
    trace = state.traces[-1]
    trace.raw_from = len(trace.tape._records)


def _trace(build: Callable, tensors: list) -> tuple[list, list, list, object, set]:
    """Run ``build()`` on a trace tape watching ``tensors``: (records, the Variables read, guards,
    output, the ids of the outputs of the raw sweep's records)."""
    trace = _Trace()
    state.traces.append(trace)
    try:
        with trace.tape:
            trace.tape.watch(tensors)
            out = build()
    finally:
        state.traces.remove(trace)
    records = trace.tape._records
    for prim, args, values, kwargs, result, parents in records:
        if isinstance(prim, _Node):
            raise UntraceableError(f"autodiff.function: {prim.name} (custom_gradient or "
                                   "recompute_grad) cannot be traced yet")
        if any(type(args[i]) is Variable and args[i]._value is not values[i] for i in parents):
            raise UntraceableError("autodiff.function: the traced function assigns a Variable it "
                                   "reads; a replay reads each Variable once, at the start")
    variables = list(trace.tape._variables.values())
    raw = set() if trace.raw_from is None else \
        {o._id for record in records[trace.raw_from:] for o in _outs(record)}
    return records, variables, trace.guards, out, raw


# --- programs ---------------------------------------------------------------------------------------

def _const_key(value):
    """A key under which equal constants are one (for merging repeated ops), else their identity."""
    if value is None or type(value) in (bool, int, float, str):
        return (type(value), value)
    if type(value) is slice:
        return (slice, _const_key(value.start), _const_key(value.stop), _const_key(value.step))
    if type(value) is tuple:
        return (tuple,) + tuple(_const_key(v) for v in value)
    return ("id", id(value))


class Program:
    """A recording turned into a straight-line Python function of NumPy arrays.

    ``inputs`` are Tensors of the recording whose values the caller passes in order; ``outputs``
    are Tensors of the recording or constants. Ops that the outputs and guards do not need are
    dropped, and an op applied again to the same operands reuses the first result.
    """

    def __init__(self, records: list, inputs: list, outputs: list, guards: list, raw: set = frozenset()):
        self.source, self.run = self._generate(records, inputs, outputs, guards, raw)

    @staticmethod
    def _generate(records, inputs, outputs, guards, raw):
        names = {t._id: f"a{k}" for k, t in enumerate(inputs)}
        produced = set(names)
        for _, _, _, _, out, _ in records:
            produced.update(o._id for o in (out if type(out) is tuple else (out,)))
        live = _live_records(records, outputs, guards, produced)
        live = _live_records(_simplified(live, outputs, guards, raw), outputs, guards, produced)
        constants: dict = {"_Retrace": _Retrace, "_equal": np.array_equal}
        by_id: dict = {}

        def constant(value) -> str:
            if value is None or type(value) in (bool, int) or (type(value) is float and math.isfinite(value)):
                return repr(value)
            key = id(value)
            if key not in by_id:
                by_id[key] = f"c{len(by_id)}"
                constants[by_id[key]] = value
            return by_id[key]

        guards_of: dict = {}
        for tensor, kind, value in guards:
            guards_of.setdefault(tensor._id, []).append((kind, value))
        lines = [f"def program({', '.join(names[t._id] for t in inputs)}):"]
        lines += _guard_lines(guards_of, [t._id for t in inputs], names, constant)
        seen: dict = {}
        for prim, args, raw, kwargs, out, parents in live:
            operands, keys = [], []
            for i in range(len(args)):
                if i in parents and args[i]._id in names:
                    operands.append(names[args[i]._id])
                    keys.append(names[args[i]._id])
                else:
                    operands.append(constant(raw[i]))
                    keys.append(_const_key(raw[i]))
            outs = out if type(out) is tuple else (out,)
            if prim is _ALIAS:
                names[out._id] = operands[0]
                lines += _guard_lines(guards_of, [out._id], names, constant)
                continue
            key = (id(prim.tensor_fun), tuple(keys), tuple(sorted((k, _const_key(v)) for k, v in kwargs.items())))
            if key in seen and all(o._id not in guards_of for o in outs):
                for o, name in zip(outs, seen[key]):
                    names[o._id] = name
                continue
            targets = [f"t{len(names) + k}" for k in range(len(outs))]
            for o, name in zip(outs, targets):
                names[o._id] = name
            seen[key] = targets
            call = f"{constant(prim.tensor_fun)}({', '.join(operands)}"
            call += f", **{constant(kwargs)})" if kwargs else ")"
            lines.append(f"    {', '.join(targets)}{',' if type(out) is tuple and len(outs) == 1 else ''} = {call}")
            lines += _guard_lines(guards_of, [o._id for o in outs], names, constant)
        results = [names[o._id] if isinstance(o, Tensor) and o._id in names else constant(_fixed(o))
                   for o in outputs]
        # a constant result is the caller's to change: a copy, so the program's stays as traced
        results = [f"{r}.copy()" if isinstance(constants.get(r), np.ndarray) else r for r in results]
        lines.append(f"    return [{', '.join(results)}]")
        source = "\n".join(lines)
        exec(compile(source, "<autodiff.function program>", "exec"), constants)
        return source, constants["program"]


def _fixed(output):
    """An output that does not depend on the inputs: its value (a Tensor's array)."""
    return output._value if isinstance(output, Tensor) else output


def _guard_lines(guards_of: dict, ids: list, names: dict, constant) -> list:
    lines = []
    for i in ids:
        for kind, value in guards_of.get(i, ()):
            test = names[i] if kind == "bool" else f"_equal({names[i]}, {constant(value)})"
            negate = "not " if kind != "bool" or value else ""
            lines.append(f"    if {negate}{test}: raise _Retrace")
    return lines


def _live_records(records: list, outputs: list, guards: list, produced: set) -> list:
    """The records the outputs and guards need, in order (dead code removed)."""
    needed = {o._id for o in outputs if isinstance(o, Tensor)} | {t._id for t, _, _ in guards}
    live = []
    for record in reversed(records):
        prim, args, raw, kwargs, out, parents = record
        outs = out if type(out) is tuple else (out,)
        if not any(o._id in needed for o in outs):
            continue
        live.append(record)
        needed.update(args[i]._id for i in parents if args[i]._id in produced)
    live.reverse()
    return live


# --- simplification: same floating-point operations, fewer of them ---------------------------------

_ALIAS = object()  # a pseudo-primitive: the output is its one argument


def _accumulate(shape: tuple, dtype, *items):
    """The left-to-right sum of ``items`` ((index, value) pairs, flat): a value with index None is
    a dense cotangent, any other one is zero outside its slice. Each position sees the additions
    of the recorded adds, in their order, without their full-size zeros."""
    total, owned = None, False
    for k in range(0, len(items), 2):
        index, value = items[k], items[k + 1]
        if total is None:
            if index is None:
                total = value
            else:
                total, owned = np.zeros(shape, dtype), True
                total[index] = value
        elif index is None:
            total, owned = total + value, True
        else:
            if not owned:
                total, owned = total.copy(), True
            total[index] += value
    return total


def _accumulate_sliced(shape: tuple, dtype, *items):
    """``_accumulate`` as a raw sweep adds ``SlicedCotangent``s: pieces of one index are summed
    first, and the pieces go into the first dense cotangent (or zeros) in order."""
    pieces: list = []
    total = None
    for k in range(0, len(items), 2):
        index, value = items[k], items[k + 1]
        if index is None:
            if total is not None:
                total = total + value
            elif pieces:
                total = value.copy()
                for known, piece in pieces:
                    total[known] += piece
                pieces = []
            else:
                total = value
        elif total is not None:
            total = total.copy()
            total[index] += value
        else:
            add_piece(pieces, index, value)
    if total is None:
        total = np.zeros(shape, dtype)
        total[pieces[0][0]] = pieces[0][1]
        for known, piece in pieces[1:]:
            total[known] += piece
    return total


_ACCUMULATE = Primitive(_accumulate, "accumulate")
_GETITEM = Primitive(operator.getitem, "getitem")  # what getitem's NumPy function does unbatched
_ACCUMULATE_SLICED = Primitive(_accumulate_sliced, "accumulate_sliced")


def _simplified(live: list, outputs: list, guards: list, raw: set) -> list:
    """``live`` with multiplications by constant ones dropped (x * 1 is x, bit for bit) and each
    left-to-right sum of slice cotangents (``scatter_add`` records, as a traced sweep writes them)
    done without full-size zeros: as the traced adds do, or, for the records of a sweep that eager
    code runs raw (ids in ``raw``), as ``SlicedCotangent`` does. Same operations, same order."""
    uses: dict = {}
    for o in outputs:
        if isinstance(o, Tensor):
            uses[o._id] = uses.get(o._id, 0) + 2  # an output is never absorbed
    for t, _, _ in guards:
        uses[t._id] = uses.get(t._id, 0) + 2
    for _, args, _, _, _, parents in live:
        for i in parents:
            uses[args[i]._id] = uses.get(args[i]._id, 0) + 1
    producers = {r[4]._id: r for r in live if type(r[4]) is not tuple}
    chains: dict = {}  # id of a fused add's output -> its items
    result = []
    for record in live:
        prim, args, raw_args, kwargs, out, parents = record
        if prim is anp.ops.multiply and len(parents) == 1 and not kwargs:
            other = args[parents[0]]
            constant = raw_args[1 - parents[0]]
            if (type(other._value) is np.ndarray and out.shape == other.shape and out.dtype == other.dtype
                    and isinstance(constant, (np.ndarray, np.generic, float, int)) and np.all(constant == 1)):
                result.append((_ALIAS, (other,), [other._value], {}, out, (0,)))
                continue
        if prim is anp.ops._gather and raw_args[2] == 0 and not kwargs:  # x[index], no batch axes
            result.append((_GETITEM, args[:2], raw_args[:2], {}, out, tuple(i for i in parents if i < 2)))
            continue
        if prim.name in _SAME_VALUES and list(parents) == [0] and _same_array(args[0], out):
            result.append((_ALIAS, (args[0],), [args[0]._value], {}, out, (0,)))
            continue
        if prim is anp.ops.add and tuple(parents) == (0, 1) and type(out._value) is np.ndarray:
            items = _sum_items(args, out, uses, producers, chains)
            if items is not None:
                chains[out._id] = items
                call_args = (out.shape, out.dtype) + tuple(items)
                fused = _ACCUMULATE_SLICED if out._id in raw else _ACCUMULATE
                result.append((fused, call_args, [a._value if isinstance(a, Tensor) else a for a in call_args],
                               {}, out, tuple(k for k, a in enumerate(call_args) if isinstance(a, Tensor))))
                continue
        result.append(record)
    return result


# Ops whose output holds the values of their first argument when shapes and dtypes agree (a
# reshape or broadcast to its own shape, a concatenation of one array): the argument itself.
_SAME_VALUES = {"reshape", "broadcast_to", "concatenate"}


def _same_array(a: Tensor, out: Tensor) -> bool:
    return (type(a._value) is np.ndarray and type(out._value) is np.ndarray and a.shape == out.shape
            and a.dtype == out.dtype)


def _items_of(t: Tensor, out: Tensor, uses: dict, producers: dict, chains: dict):
    """``t`` as items of a sum into ``out``: a fused sum's items, [index, piece] for a scatter of
    ``piece`` into a basic slice of ``out``'s shape, [None, t] for a dense array; used only here
    (a dense one any number of times); else None."""
    if t._id in chains and uses.get(t._id) == 1:
        return chains[t._id]
    record = producers.get(t._id)
    if record is not None and record[0] is anp.ops._scatter and uses.get(t._id) == 1:
        _, args, raw, _, result, parents = record
        if (list(parents) == [0] and raw[3] == 0 and anp.ops._is_basic(raw[1])
                and result.shape == out.shape and result.dtype == out.dtype):
            return [raw[1], args[0]]
    if type(t._value) is np.ndarray and t.shape == out.shape and t.dtype == out.dtype:
        return [None, t]
    return None


def _sum_items(args, out, uses, producers, chains):
    """The items of ``out = args[0] + args[1]`` when at least one side is a slice or a fused sum."""
    left = _items_of(args[0], out, uses, producers, chains)
    right = _items_of(args[1], out, uses, producers, chains)
    if left is None or right is None or len(right) != 2 or (left[0] is None and right[0] is None):
        return None  # only prev + one cotangent, as the sweep adds them
    return left + right


def _depends_on(records: list, sources: set) -> set:
    """The ids of the tensors computed from ``sources`` (ids), the sources included."""
    dependent = set(sources)
    for prim, args, raw, kwargs, out, parents in records:
        if any(args[i]._id in dependent for i in parents):
            dependent.update(o._id for o in (out if type(out) is tuple else (out,)))
    return dependent


class SplitProgram:
    """A recording split at a late input: ``before`` computes everything that does not depend on
    it (once), ``after`` the rest from the saved values and that input (each call).

    The cached Hessian-vector product: ``before`` is f, its gradient and the parts of the second
    sweep that do not involve the seed v; ``after`` is what each H v costs. ``outputs`` are those
    of ``before`` followed by the one of ``after``.
    """

    def __init__(self, records: list, inputs: list, late: Tensor, outputs: list, guards: list,
                 raw: set = frozenset()):
        outputs_before, outputs_after = outputs[:-1], outputs[-1:]
        dependent = _depends_on(records, {late._id})
        early = [r for r in records if _first_out(r)._id not in dependent]
        late_records = [r for r in records if _first_out(r)._id in dependent]
        produced = {t._id for t in inputs}
        for r in early:
            produced.update(o._id for o in _outs(r))
        late_guards = [g for g in guards if g[0]._id in dependent]
        if late_guards:  # each product would have to be able to trace again: eager instead
            raise UntraceableError("autodiff.function: a branch or read depends on the vector of a "
                                   "Hessian-vector product")
        saved: dict = {}
        for _, args, _, _, _, parents in _live_records(late_records, outputs_after,
                                                                    late_guards, dependent | produced):
            for i in parents:
                if args[i]._id in produced:
                    saved.setdefault(args[i]._id, args[i])
        for o in outputs_after:
            if isinstance(o, Tensor) and o._id in produced:
                saved.setdefault(o._id, o)
        saved_list = list(saved.values())
        self.n_before = len(outputs_before)
        self.before = Program(early, inputs, outputs_before + saved_list,
                              [g for g in guards if g[0]._id not in dependent], raw)
        self.after = Program(late_records, saved_list + [late], outputs_after, [], raw)


def _outs(record) -> tuple:
    out = record[4]
    return out if type(out) is tuple else (out,)


def _first_out(record) -> Tensor:
    return _outs(record)[0]


# --- signatures ----------------------------------------------------------------------------------------

def _is_traced_leaf(leaf) -> bool:
    """Floating-point arrays and Tensors are program inputs; everything else is part of the signature."""
    if isinstance(leaf, Variable):
        return False
    if isinstance(leaf, (Tensor, np.ndarray, np.generic)):
        return leaf.dtype.kind in "fc"
    return False


def _leaf_key(leaf):
    if _is_traced_leaf(leaf):
        return (type(leaf) is Tensor, leaf.shape, leaf.dtype.str)
    if isinstance(leaf, Variable):
        return ("variable", id(leaf))
    if isinstance(leaf, (np.ndarray, np.generic)):
        return ("array", leaf.shape, leaf.dtype.str, np.asarray(leaf).tobytes())
    try:
        hash(leaf)
    except TypeError:
        return ("object", id(leaf))
    return ("value", type(leaf), leaf)


def _structure_key(tree):
    if isinstance(tree, dict):
        return (dict, tuple((k, _structure_key(v)) for k, v in tree.items()))
    if isinstance(tree, (list, tuple)):
        return (type(tree), tuple(_structure_key(v) for v in tree))
    return _leaf_key(tree)


def _signature(tree):
    """(hashable key, the values of the traced leaves, rebuild(tensors) -> the tree with them)."""
    single = _single_array(tree)
    if single is not None:  # the optimizers' case, without the tree walk
        return single
    leaves, treedef = flatten(tree)
    traced = [k for k, leaf in enumerate(leaves) if _is_traced_leaf(leaf)]
    values = [np.asarray(leaves[k]._value if isinstance(leaves[k], Tensor) else leaves[k]) for k in traced]

    def rebuild(tensors):
        new = list(leaves)
        for k, t in zip(traced, tensors):
            new[k] = t
        return treedef(new)
    return _structure_key(tree), values, rebuild


def _single_array(tree):
    """``_signature`` of a float ndarray, or of ``((array,), {})``; None for anything else."""
    if type(tree) is np.ndarray:
        if tree.dtype.kind in "fc":
            return ("array", tree.shape, tree.dtype.str), [tree], _first
        return None
    if type(tree) is tuple and len(tree) == 2 and type(tree[0]) is tuple and len(tree[0]) == 1 \
            and not tree[1] and type(tree[0][0]) is np.ndarray and tree[0][0].dtype.kind in "fc":
        x = tree[0][0]
        return ("call with an array", x.shape, x.dtype.str), [x], _only_argument
    return None


def _first(tensors):
    return tensors[0]


def _only_argument(tensors):
    return (tensors[0],), {}


# --- the decorator ------------------------------------------------------------------------------------

class Function:
    """f, traced once per signature and replayed (see the module docstring and ``function``).

    ``traces`` counts the traces taken (a retrace after a failed guard included);
    ``fallback_reason`` says why the last refused trace was refused (``eager_fallback``).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> w = ad.Variable(2.0)
    >>> f = ad.function(lambda x: np.sum(w * x ** 2))
    >>> f.grad()(np.array([1.0, 3.0]))
    array([ 4., 12.])
    >>> _ = w.assign(0.5)              # Variables are read afresh at every call
    >>> f.grad()(np.array([1.0, 3.0])), f.traces
    (array([1., 3.]), 1)
    """

    def __init__(self, f: Callable, eager_fallback: bool = False):
        functools.update_wrapper(self, f)
        self.f = f
        self.eager_fallback = eager_fallback
        self.fallback_reason: str | None = None  # why the last refused trace was refused
        self.traces = 0                          # how many traces were taken (retraces included)
        self._cache: dict = {}

    def __repr__(self):
        return f"<autodiff.function {getattr(self.f, '__name__', self.f)!r}>"

    def __get__(self, instance, owner):  # decorating a method: bind like a function
        return self if instance is None else functools.partial(self, instance)

    # --- the programs ------------------------------------------------------------------------------
    def _replay(self, kind: tuple, tree, build: Callable, finish: Callable, eager: Callable,
                seed_shape: tuple | None = None, snapshot: dict | None = None):
        """The answer of the program of ``kind`` for ``tree``'s signature, traced first if needed.

        ``build(rebuilt tree, seed)`` computes the outputs on Tensors; ``finish(flat results)``
        makes the answer; ``eager()`` answers without tracing (a refused trace, with
        ``eager_fallback``). With ``seed_shape`` the program is split at a seed input of that shape
        (see ``SplitProgram``) and the answer is ``finish`` of its first part plus the second.
        ``snapshot`` ({Variable id: value}) overrides the Variables' current values.
        """
        key, values, rebuild = _signature(tree)
        cache_key = (kind, key)
        entry = self._cache.get(cache_key)
        if entry == "eager":
            return eager()
        for traced in entry or ():
            try:
                return traced.run(values, snapshot)
            except _Retrace:
                continue
        tensors = [Tensor(v) for v in values]
        seed = None if seed_shape is None else Tensor(np.zeros(seed_shape))
        try:
            records, variables, guards, out, raw = _trace(lambda: build(rebuild(tensors), seed),
                                                          tensors + ([] if seed is None else [seed]))
            outputs, treedef = flatten(out)
            if seed is None:
                program = Program(records, tensors + variables, outputs, guards, raw)
            else:
                program = SplitProgram(records, tensors + variables, seed, outputs, guards, raw)
        except Exception as error:
            refusal = _refusal(error)  # NumPy may wrap it (r[i] = t raises ValueError from it)
            if refusal is None or not self.eager_fallback:
                raise
            self.fallback_reason = str(refusal)
            self._cache[cache_key] = "eager"
            return eager()
        self.traces += 1
        traced = _Traced(program, variables, lambda results: finish(treedef(results)))
        entry = self._cache.setdefault(cache_key, [])
        entry.insert(0, traced)
        del entry[MAX_TRACES_PER_SIGNATURE:]
        return traced.run(values, snapshot)

    def __call__(self, *args, **kwargs):
        if state.tapes or state.accumulators:  # differentiated from outside: run eagerly, recorded
            return self.f(*args, **kwargs)
        tensors_in = any(isinstance(leaf, Tensor) for leaf in flatten((args, kwargs))[0])
        mirrored = lambda result: _mirror(result, tensors_in)  # noqa: E731

        def eager():  # f on Tensors, as traced
            _, values, rebuild = _signature((args, kwargs))
            call_args, call_kwargs = rebuild([Tensor(v) for v in values])
            return mirrored(self.f(*call_args, **call_kwargs))
        return self._replay(("call",), (args, kwargs), lambda tree, _: self.f(*tree[0], **tree[1]),
                            mirrored, eager)

    def value_and_grad(self, argnums: int | tuple = 0) -> Callable:
        """``ad.value_and_grad(f, argnums)`` with the value and gradient replayed together."""
        return self._differentiated(argnums, "value_and_grad")

    def grad(self, argnums: int | tuple = 0) -> Callable:
        """``ad.grad(f, argnums)``, replayed."""
        value_and_grad_f = self.value_and_grad(argnums)
        return lambda *args, **kwargs: value_and_grad_f(*args, **kwargs)[1]

    def jacobian(self, argnums: int | tuple = 0) -> Callable:
        """``ad.jacobian(f, argnums)``: the batched sweep, replayed."""
        return self._differentiated(argnums, "jacobian")

    def _differentiated(self, argnums, kind: str) -> Callable:
        from . import functional
        eager = getattr(functional, kind)(self.f, argnums)
        numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)

        def build(tree, _):
            call_args, call_kwargs = tree
            sources = [call_args[k] for k in numbers]
            sources = sources[0] if isinstance(argnums, int) else tuple(sources)
            with GradientTape() as tape:
                tape.watch(sources)
                y = self.f(*call_args, **call_kwargs)
            _raw_sweep_follows()  # eager code sweeps on raw arrays
            if kind == "jacobian":
                return tape.jacobian(_require_tensors(y, "jacobian"), sources, unconnected_gradients=ZERO)
            return _require_scalar(y, "grad"), tape.gradient(y, sources, unconnected_gradients=ZERO)

        def differentiated(*args, **kwargs):
            plain = len(args) == 1 and type(args[0]) is np.ndarray  # one array: nothing to walk
            if state.tapes or state.accumulators or not (plain or _all_traced(args, numbers)):
                return eager(*args, **kwargs)
            tensors_in = not plain and any(isinstance(leaf, Tensor) for leaf in flatten(args)[0])
            return self._replay((kind, numbers), (args, kwargs), build,
                                lambda result: _mirror(result, tensors_in), lambda: eager(*args, **kwargs))
        differentiated.__name__ = f"{kind}_{getattr(self.f, '__name__', 'f')}"
        return differentiated

    def hessian_operator(self, x, chunk_size: int | None = None):
        """``ad.hessian_operator(f, x)`` whose gradient and products are replayed programs."""
        from .hessian_operator import hessian_operator
        return hessian_operator(self, x, chunk_size)

    def _curvature_at(self, x, batch_shape: tuple, snapshot: dict | None = None):
        """At x, for seeds of shape ``batch_shape + (n,)``: (value, flat gradient, products), where
        ``products(seeds)`` runs the replayed second sweep; None when the trace was refused with
        ``eager_fallback`` (or x holds non-float leaves)."""
        variables = _variables_of(x)
        leaves = flatten(x)[0]
        if variables is None and not all(_is_traced_leaf(leaf) for leaf in leaves):
            return None
        n = sum(int(np.size(leaf._value if isinstance(leaf, Tensor) else leaf)) for leaf in leaves)

        def build(point, seed):
            sources = variables if variables is not None else flatten(point)[0]
            with GradientTape(persistent=True) as outer:
                outer.watch(sources)
                with GradientTape() as inner:
                    inner.watch(sources)
                    y = self.f() if variables is not None else self.f(point)
                _require_scalar(y, "hessian_operator")
                grads = inner.gradient(y, sources, unconnected_gradients=ZERO)
                flat = [anp.ravel(g) for g in grads]
                g = flat[0] if len(flat) == 1 else anp.concatenate(flat)
            _raw_sweep_follows()  # the products: the eager operator sweeps on raw arrays
            parts = outer.sweep([g], [seed], sources, batch_shape)
            products = anp.concatenate([
                np.zeros(batch_shape + (s.size,)) if p is None else anp.reshape(p, batch_shape + (-1,))
                for p, s in zip(parts, sources)], axis=-1)
            return [y, g, products]

        return self._replay(("hessian_operator", batch_shape), None if variables is not None else x,
                            build, lambda result: result, lambda: None, batch_shape + (n,), snapshot)


class _Traced:
    """A program, the Variables it reads (afresh at each run) and how its results become the answer."""

    def __init__(self, program, variables: list, finish: Callable):
        self.program, self.variables, self.finish = program, variables, finish

    def run(self, values: list, snapshot: dict | None = None):
        if snapshot is None:
            inputs = values + [v._value for v in self.variables]
        else:
            inputs = values + [snapshot.get(v._id, v._value) for v in self.variables]
        if type(self.program) is Program:
            return self.finish(self.program.run(*inputs))
        results = self.program.before.run(*inputs)
        head, saved = results[:self.program.n_before], results[self.program.n_before:]
        after = self.program.after.run
        kept = [a for a in saved if isinstance(a, np.ndarray)]

        def product(seed):  # a fresh array, as the eager sweep gives: never the seed or a saved value
            result = after(*saved, seed)[0]
            if any(np.may_share_memory(result, a) for a in kept) or np.may_share_memory(result, seed):
                return result.copy()
            return result
        return self.finish(head[:2] + [product])


def _mirror(result, tensors_in: bool):
    """Tensors in, Tensors out; arrays in, NumPy out (0-d results as NumPy scalars)."""
    if not tensors_in and type(result) is tuple and all(type(r) is np.ndarray or isinstance(r, np.generic)
                                                        for r in result):
        return tuple(r[()] if type(r) is np.ndarray and r.ndim == 0 else r for r in result)  # no tree walk
    leaves, treedef = flatten(result)
    if tensors_in:
        return treedef([Tensor(r) if isinstance(r, (np.ndarray, np.generic)) else r for r in leaves])
    values = [r._value if isinstance(r, Tensor) else r for r in leaves]
    return treedef([r[()] if type(r) is np.ndarray and r.ndim == 0 else r for r in values])


def _refusal(error: BaseException) -> UntraceableError | None:
    """The UntraceableError that ``error`` is, or was raised from, if any."""
    while error is not None:
        if isinstance(error, UntraceableError):
            return error
        error = error.__cause__ or error.__context__
    return None


def _all_traced(args: tuple, numbers: tuple) -> bool:
    """Whether every leaf of the differentiated arguments is a floating-point array (else: eager)."""
    return all(k < len(args) and all(_is_traced_leaf(leaf) for leaf in flatten(args[k])[0])
               for k in numbers)


def _variables_of(x) -> list | None:
    leaves = flatten(x)[0]
    return leaves if leaves and all(isinstance(leaf, Variable) for leaf in leaves) else None


def function(f: Callable | None = None, *, eager_fallback: bool = False):
    """Trace ``f`` once per input signature and replay it as plain NumPy calls (``tf.function``).

    ``ad.function(f)`` (or ``@ad.function``) returns a callable with f's results. Its
    ``value_and_grad(argnums)``, ``grad(argnums)``, ``jacobian(argnums)`` and
    ``hessian_operator(x)`` replay recorded derivative programs; ``ad.value_and_grad``,
    ``ad.grad``, ``ad.jacobian``, ``ad.hvp`` and ``ad.hessian_operator`` applied to it do the
    same. Called inside a GradientTape or ForwardAccumulator that tracks something, it runs f
    eagerly (recorded as usual).

    A branch on a traced value is checked at each replay (a different branch traces again); a
    float value leaving the engine (``t.numpy()``, ``t.item()``, a sort) raises
    ``UntraceableError``, or with ``eager_fallback=True`` runs f eagerly for that signature
    (``fallback_reason`` says why).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> @ad.function
    ... def rosen(x):
    ...     return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> x = np.array([-1.2, 1.0, 1.0])
    >>> round(float(rosen(x)), 12)
    24.2
    >>> rosen.grad()(x)
    array([-215.6,  -88. ,    0. ])
    >>> rosen.hessian_operator(x).matvec(np.array([1.0, 0.0, 0.0]))
    array([1330.,  480.,    0.])
    >>> rosen.traces  # the call, the gradient and the Hessian operator: one trace each
    3
    """
    if f is None:
        return lambda g: Function(g, eager_fallback)
    return Function(f, eager_fallback)
