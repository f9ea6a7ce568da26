"""Programs: a recording turned into a straight-line Python function of NumPy arrays, and the
passes that make it (dead code, simplification, partial evaluation).

A pass keeps the floating-point operations of the recording and their order, so a program's results
are the eager ones bit for bit: dead ops are dropped, repeated ones computed once, multiplications
by constant ones and no-op reshapes skipped, and a sum of slice cotangents written into one buffer,
as the eager sweep does (or concatenated, when its slices tile an axis: a zero's sign aside).
``split`` is partial evaluation: the part of a program that does not depend on some late inputs runs
once, the rest at each call.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import numpy as anp
from ..core import Primitive, Tensor, add_piece
from .lowering import NAME, accumulate_lines, accumulate_sliced_lines, compiled_once, fused, lowered
from .native import native_program
from .scalar import Tiering, possible, scalar_program
from .tracing import UntraceableError


class Retrace(Exception):
    """A guard failed: the replay took another branch than its trace."""


def _const_key(value):
    """A key under which equal constants are one (for merging repeated ops), else their identity.
    Floats are keyed by their bits: 0.0 and -0.0 are two constants, and a NaN is one."""
    if type(value) is float:
        return (float, value.hex())
    if value is None or type(value) in (bool, int, str):
        return (type(value), value)
    if type(value) is slice:
        return (slice, _const_key(value.start), _const_key(value.stop), _const_key(value.step))
    if type(value) is tuple:
        return (tuple,) + tuple(_const_key(v) for v in value)
    return ("id", id(value))


class Program:
    """A recording turned into a straight-line Python function of NumPy arrays: ``run(*values)``.

    ``inputs`` are Tensors of the recording whose values the caller passes in order; ``outputs``
    are Tensors of the recording or constants; ``guards`` (see ``tracing.Recording``) raise
    ``Retrace`` when a replay takes another branch. Ops that the outputs and guards do not need
    are dropped, and an op applied again to the same operands reuses the first result. Ops are
    written as ``lowering`` writes them: operators as operators, sums of slices unrolled, and a
    value that one line reads fused into that line.

    Each intermediate array is freed after its last use, as an eager sweep frees a cotangent once
    it has passed it (a plain straight-line function would keep them all until it returns).

    Without ``native``, a program whose values are all small runs on Python floats once it is hot,
    where that is faster (``scalar.scalar_program``: the same results, bit for bit; ``tiering``, a
    ``scalar.Tiering``, counts its calls until then, None: it cannot have one): ``scalar_source`` is
    its code (None: the NumPy program runs), ``numpy_run`` the NumPy program's function. Such a
    program takes its first ``lists_in`` inputs as lists too (``takes_lists``): the values ``split``
    saves for ``after``; given ``after`` (that program), it returns its outputs at the positions
    ``listed`` as lists of floats when ``after`` takes them, and the two switch together.

    ``run`` returns the list of outputs, or with ``single`` the one output. With ``fresh`` an output
    is never an input or a view (it may be changed in place by the caller; eager sweeps give fresh
    arrays too); an int ``fresh``: the outputs from that position on. ``source`` is the generated
    Python code. With ``native``, ``run`` is the program compiled by numba where it can be
    (``native.native_program``: a tuple of outputs, equal within rounding; ``scalars_in``: its 0-d
    inputs are a native program's float results); ``native_reason`` says why it is not (None: it
    is, or was not asked for). ``repeats_recording``: ``run`` does the recording's own operations
    in its order, so the values the recording computed are its results (False for a native
    program, or a raw sweep's sums of slices, which the program adds in ``SlicedCotangent``'s
    order, as eager code does, not in the traced adds').

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import Program, trace
    >>> def f(x):
    ...     s = np.sin(x)
    ...     v = np.exp(s * 1.0 + x * s)
    ...     return v * v
    >>> recording = trace(f, np.zeros(2))
    >>> program = Program(recording.records, recording.inputs, recording.outputs, single=True)
    >>> print(program.source)  # s * 1.0 dropped (same bits), a value read once fused, t1 freed when used
    def program(a0):
        t1 = c0(a0)
        t5 = c1((t1 + (a0 * t1)))
        del t1
        return (t5 * t5)
    >>> program.run(np.array([0.0, np.pi / 2]))
    array([  1.        , 170.98787603])
    """

    def __init__(self, records: list, inputs: list, outputs: list, guards: list = (),
                 raw: set = frozenset(), single: bool = False, fresh: bool | int = False, native: bool = False,
                 scalars_in: bool = False, listed: range = range(0), lists_in: int = 0, after: Program | None = None):
        fresh = 0 if fresh is True else len(outputs) if fresh is False else fresh  # the first fresh output
        self.source, self.run, live = self._generate(records, inputs, outputs, guards, raw, single, fresh)
        self.numpy_run, self.native_reason, self.scalar_source, self.takes_lists = self.run, None, None, False
        # the recording's own operations in its order (its values are then the program's, bit for bit)
        self.repeats_recording = not any(record[0] is _ACCUMULATE_SLICED for record in live)
        self.tiering = None
        if native:
            run, self.native_reason = native_program(live, inputs, outputs, guards, single, fresh, self.run,
                                                     scalars_in)
            self.run = run or self.run
            self.repeats_recording = self.repeats_recording and run is None
        elif possible(live, inputs, guards):  # the same results on Python floats, once hot (scalar.Tiering)
            self._scalar = (live, inputs, outputs, guards, single, fresh, listed, lists_in, after)
            self.tiering = getattr(after, "tiering", None) or Tiering()
            self.run = self.tiering.counting(self.numpy_run)
            self.tiering.join(self._to_scalar)

    def _to_scalar(self) -> None:
        """Make the scalar program (once, when hot: ``scalar.Tiering``) and run it from now on where it is
        faster; its ``listed`` outputs are lists when ``after`` (switched first) takes them."""
        live, inputs, outputs, guards, single, fresh, listed, lists_in, after = self._scalar
        del self._scalar   # the recording goes with it
        listed = listed if after is not None and after.takes_lists else range(0)
        self.scalar_source, run = scalar_program(live, inputs, outputs, guards, single, fresh, self.numpy_run, listed,
                                                 lists_in)
        self.takes_lists = lists_in > 0 and run is not None
        self.run = run or self.numpy_run

    @staticmethod
    def _generate(records, inputs, outputs, guards, raw, single, fresh):
        names = {t._id: f"a{k}" for k, t in enumerate(inputs)}
        produced = set(names)
        for _, _, _, _, out, _ in records:
            if type(out) is tuple:
                produced.update(o._id for o in out)
            else:
                produced.add(out._id)
        live = live_records(records, outputs, guards, produced)
        live = simplified(live, outputs, guards, raw)
        produced.update(r[4]._id for r in live if type(r[4]) is not tuple)   # (values the passes made)
        live = live_records(live, outputs, guards, produced)
        constants: dict = {"_Retrace": Retrace, "_equal": np.array_equal, "_ndarray": np.ndarray}
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
        parameters = [names[t._id] for t in inputs]
        lines = _guard_lines(guards_of, [t._id for t in inputs], names, constant)
        seen: dict = {}
        pure: set = set()   # names one line makes from its operands (see lowering.fused)
        for prim, args, values, kwargs, out, parents in live:
            operands, keys = [], []
            for i, value in enumerate(values):
                name = names.get(args[i]._id) if i in parents else None
                operands.append(constant(value) if name is None else name)
                keys.append(_const_key(value) if name is None else name)
            outs = out if type(out) is tuple else (out,)
            if prim is _ALIAS:
                names[out._id] = operands[0]
                lines += _guard_lines(guards_of, [out._id], names, constant) if guards_of else []
                continue
            key = (id(prim.tensor_fun), tuple(keys),
                   tuple(sorted((k, _const_key(v)) for k, v in kwargs.items())) if kwargs else ())
            if key in seen and all(o._id not in guards_of for o in outs):
                for o, name in zip(outs, seen[key]):
                    names[o._id] = name
                continue
            targets = [f"t{len(names) + k}" for k in range(len(outs))]
            for o, name in zip(outs, targets):
                names[o._id] = name
            seen[key] = targets
            lines += _op_lines(prim, operands, values, kwargs, targets, type(out) is tuple, constant, pure)
            if guards_of:
                lines += _guard_lines(guards_of, [o._id for o in outs], names, constant)
        lines += _return_lines(outputs, names, constant, constants, parameters, single, fresh)
        body = _freeing(fused(lines, pure=pure, grouped=True), parameters)
        source = "\n".join([f"def program({', '.join(parameters)}):"] + body)
        exec(compiled_once(source, "<autodiff.function program>"), constants)
        return source, constants.pop("program"), live  # its globals do not hold it: no cycle to collect


def _return_lines(outputs: list, names: dict, constant, constants: dict, parameters: list, single: bool,
                  fresh: int) -> list:
    """The lines returning ``outputs`` (see ``Program``: ``single``; the outputs from position
    ``fresh`` on are fresh)."""
    results = [names[o._id] if isinstance(o, Tensor) and o._id in names else constant(_fixed(o)) for o in outputs]
    # a constant result is the caller's to change: a copy, so the program's stays as traced
    results = [f"{r}.copy()" if isinstance(constants.get(r), np.ndarray) or (k >= fresh and r in parameters)
               else r for k, r in enumerate(results)]
    # a view (of an input, say) is copied: a fresh array, as the eager sweep gives
    lines = [f"    if type({r}) is _ndarray and {r}.base is not None: {r} = {r}.copy()"
             for r in dict.fromkeys(results[fresh:]) if r.startswith("t")]
    return lines + [f"    return {results[0]}" if single else f"    return [{', '.join(results)}]"]


def _op_lines(prim, operands: list, values: list, kwargs: dict, targets: list, tuple_out: bool, constant,
              pure: set) -> list:
    """The lines of one op: lowered (``lowering``), or a call of its primitive's function."""
    unroll = _UNROLLED.get(prim.tensor_fun)
    if unroll is not None and not kwargs:
        return unroll(targets[0], operands[2:], values[2:], constant(values[0]), constant(values[1]), constant)
    lines = None if tuple_out else lowered(prim, operands, values, kwargs, targets, constant)
    if lines is None:
        call = f"{constant(prim.tensor_fun)}({', '.join(operands)}"
        call += f", **{constant(kwargs)})" if kwargs else ")"
        lines = [f"    {', '.join(targets)}{',' if tuple_out and len(targets) == 1 else ''} = {call}"]
    if len(lines) == 1 and len(targets) == 1:
        pure.add(targets[0])
    return lines


_NAME = NAME


def _freeing(lines: list, parameters: list) -> list:
    """``lines`` with each intermediate deleted after the line that last reads it (or makes it,
    when nothing reads it), as the eager sweep frees a cotangent once it is passed: a straight-line
    function would otherwise keep every intermediate array alive until it returns."""
    last: dict = {}
    for k, line in enumerate(lines):
        for name in _NAME.findall(line):
            last[name] = k
    kept = set(_NAME.findall(lines[-1]))   # the returned values
    freed: dict = {}
    for name, k in last.items():
        if name not in kept:
            freed.setdefault(k, []).append(name)
    out = []
    for k, line in enumerate(lines):
        out.append(line)
        if k in freed:
            out.append(f"    del {', '.join(sorted(freed[k], key=lambda n: [int(p) for p in n[1:].split('_')]))}")
    return out


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


def live_records(records: list, outputs: list, guards: list, produced: set) -> list:
    """The records the outputs and guards need, in order (dead code removed)."""
    needed = {o._id for o in outputs if isinstance(o, Tensor)} | {t._id for t, _, _ in guards}
    live = []
    for record in reversed(records):
        _, args, _, _, out, parents = record
        if not (any(o._id in needed for o in out) if type(out) is tuple else out._id in needed):
            continue
        live.append(record)
        for i in parents:
            if args[i]._id in produced:
                needed.add(args[i]._id)
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
_UNROLLED = {_accumulate: accumulate_lines}
_GETITEM = Primitive(operator.getitem, "getitem")  # what getitem's NumPy function does unbatched
_ACCUMULATE_SLICED = Primitive(_accumulate_sliced, "accumulate_sliced")
_UNROLLED[_accumulate_sliced] = accumulate_sliced_lines


def simplified(live: list, outputs: list, guards: list, raw: set) -> list:
    """``live`` with multiplications by constant ones dropped (x * 1 is x, bit for bit), a
    concatenation of concatenations made one (``_spliced``) and each
    left-to-right sum of slice cotangents (``scatter_add`` records, as a traced sweep writes them)
    done without full-size zeros: as the traced adds do, or, for the records of a sweep that eager
    code runs raw (ids in ``raw``), as ``SlicedCotangent`` does, or, when the slices tile an axis,
    as the concatenation of the pieces (``_Tiles``; not for a raw sum that a later raw add
    continues: ``SlicedCotangent`` adds a dense term before the slices), and a large transposed
    matrix product made as the product of the transposes (``_transposed_products``: contiguous,
    where both give the same bits at the traced values). Same operations, same order."""
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
    transposed = _transposed_products(live, uses, producers)
    # SlicedCotangent adds a dense term first and the slices after: a raw sum of tiles that a later
    # raw add continues is left to it (as the concatenation, its tiles would be added first)
    ops = anp.ops
    continued = {a._id for r in live if r[0] is ops.add and r[4]._id in raw for a in r[1] if isinstance(a, Tensor)}
    chains: dict = {}  # id of a fused add's output -> its items
    tiles: dict = {}  # id of a scatter, or of a sum of them -> its Tiles
    result = []
    for record in live:
        prim, args, raw_args, kwargs, out, parents = record
        if type(out) is not tuple and out._id in transposed:   # the product: made transposed, below
            continue
        if prim is ops._transpose and parents == (0,) and args[0]._id in transposed:
            result += _product_transposed(producers[args[0]._id], out)
            continue
        if prim is ops._scatter:
            tiling = _Tiles.of_scatter(record)
            if tiling is not None:
                tiles[out._id] = tiling
        if prim is ops.add and tuple(parents) == (0, 1) and not kwargs:
            tiling = _Tiles.of_sum(args, out, tiles, uses)
            if tiling is not None:
                tiles[out._id] = tiling
                if tiling.complete() and not (out._id in raw and out._id in continued):
                    result.append(tiling.concatenation(out))
                    continue
        if prim is ops.multiply and len(parents) == 1 and not kwargs:
            other = args[parents[0]]
            constant = raw_args[1 - parents[0]]
            if (type(other._value) is np.ndarray and _is_one(constant) and out.shape == other.shape
                    and out.dtype == other.dtype):
                result.append((_ALIAS, (other,), [other._value], {}, out, (0,)))
                continue
        if prim is ops._gather and raw_args[2] == 0 and not kwargs:  # x[index], no batch axes
            result.append((_GETITEM, args[:2], raw_args[:2], {}, out, tuple(i for i in parents if i < 2)))
            continue
        if prim.name in _SAME_VALUES and list(parents) == [0] and _same_array(args[0], out):
            result.append((_ALIAS, (args[0],), [args[0]._value], {}, out, (0,)))
            continue
        if prim is ops._concatenate:
            record = _spliced(record, uses, producers)
        if prim is ops.add and tuple(parents) == (0, 1) and type(out._value) is np.ndarray:
            items = _sum_items(args, out, uses, producers, chains)
            if items is not None:
                chains[out._id] = items
                call_args = (out.shape, out.dtype) + tuple(items)
                # a batched sweep adds dense scatters in order, raw or not (no SlicedCotangent)
                fused = _ACCUMULATE_SLICED if out._id in raw and not _batched(items) else _ACCUMULATE
                result.append((fused, call_args, [a._value if isinstance(a, Tensor) else a for a in call_args],
                               {}, out, tuple(k for k, a in enumerate(call_args) if isinstance(a, Tensor))))
                continue
        result.append(record)
    return result


#: Elements of a transposed matrix product at least for it to be made as the product of the transposes
TRANSPOSED_PRODUCT_MIN = 1024


def _transposed_products(live: list, uses: dict, producers: dict) -> set:
    """The ids of the matrix products ``A @ B`` whose one use is their transpose, an operand of a
    second sweep (the cotangent of a transposed operand), of at least ``TRANSPOSED_PRODUCT_MIN``
    elements: made as ``B.T @ A.T`` (``_product_transposed``) they are contiguous, where the transpose
    of the product is a view whose every elementwise use walks it across its rows (several times
    slower than the product's own time on a 48 x 256 result). Only where both ways are BLAS's matrix
    product (more than one row and column) and give the same bits at the traced values."""
    found = set()
    for prim, args, raw, kwargs, out, parents in live:
        if not (prim is anp.ops._transpose and parents == (0,) and not kwargs and np.ndim(out._value) == 2
                and (raw[1] is None or tuple(raw[1]) == (1, 0))):
            continue
        product = producers.get(args[0]._id)
        if (product is None or product[0] is not anp.ops.matmul or product[3] or uses.get(args[0]._id) != 1
                or out._value.size < TRANSPOSED_PRODUCT_MIN):
            continue
        a, b = product[2]
        if not (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == b.ndim == 2
                and a.shape[0] > 1 and b.shape[1] > 1):
            continue
        with np.errstate(all="ignore"):   # (the recorded values may have been summed into since)
            if np.array_equal(np.matmul(b.T, a.T), np.matmul(a, b).T, equal_nan=True):
                found.add(args[0]._id)
    return found


def _product_transposed(product: tuple, out: Tensor) -> list:
    """The records of ``out = (A @ B).T`` as ``B.T @ A.T`` (the product's record and its transpose's
    output): the transposes of Tensor operands recorded, of constants taken."""
    records, operands, values = [], [], []
    for k in (1, 0):
        operand, value = product[1][k], product[2][k]
        transposed = value.T
        if k in product[5]:
            records.append((anp.ops._transpose, (operand, (1, 0)), [value, (1, 0)], {}, Tensor(transposed), (0,)))
            operands.append(records[-1][4])
        else:
            operands.append(transposed)
        values.append(transposed)
    parents = tuple(j for j, k in enumerate((1, 0)) if k in product[5])
    return records + [(anp.ops.matmul, tuple(operands), values, {}, out, parents)]


class _Tiles:
    """A sum of scatters into zeros (a sweep's cotangents of slices: ``np.stack``'s pieces, a
    linearization's outputs) whose slices along one axis are disjoint: when they cover the axis,
    the sum is the concatenation of the pieces, with no full-size zeros and no additions (equal
    values; only a zero's sign may differ, as with ``_accumulate``'s first slice)."""

    def __init__(self, axis: int, shape: tuple, dtype, pieces: list):
        self.axis, self.shape, self.dtype, self.pieces = axis, shape, dtype, pieces  # (start, stop, Tensor)

    @classmethod
    def of_scatter(cls, record: tuple) -> _Tiles | None:
        """The one tile of a scatter record whose index is a unit-step slice along one axis, full
        along the others; else None."""
        _, args, raw, _, out, parents = record
        index, batch_axes = raw[1], raw[3]
        if list(parents) != [0] or type(index) is not tuple:
            return None
        if any(type(piece) not in (slice, type(Ellipsis)) for piece in index) or index.count(Ellipsis) > 1:
            return None
        full = (slice(None),) * batch_axes + index
        if Ellipsis in full:
            at = full.index(Ellipsis)
            full = full[:at] + (slice(None),) * (out.ndim - len(full) + 1) + full[at + 1:]
        full += (slice(None),) * (out.ndim - len(full))
        partial = [(axis, piece.indices(size)) for axis, (piece, size) in enumerate(zip(full, out.shape))
                   if piece.indices(size) != (0, size, 1)]
        if len(partial) != 1 or partial[0][1][2] != 1:
            return None
        axis, (start, stop, _) = partial[0]
        if args[0].shape != out.shape[:axis] + (stop - start,) + out.shape[axis + 1:] or args[0].dtype != out.dtype:
            return None
        return cls(axis, out.shape, out.dtype, [(start, stop, args[0])])

    @classmethod
    def of_sum(cls, args: tuple, out: Tensor, tiles: dict, uses: dict) -> _Tiles | None:
        """The tiles of ``args[0] + args[1]``, each side tiles read only here, along the same axis of
        the same array, disjoint; else None."""
        left, right = tiles.get(args[0]._id), tiles.get(args[1]._id)
        if left is None or right is None or uses.get(args[0]._id) != 1 or uses.get(args[1]._id) != 1:
            return None
        if (left.axis, left.shape, left.dtype) != (right.axis, right.shape, right.dtype) or out.shape != left.shape:
            return None
        pieces = sorted(left.pieces + right.pieces, key=lambda piece: piece[0])
        if any(before[1] > after[0] for before, after in zip(pieces, pieces[1:])):
            return None
        return cls(left.axis, left.shape, left.dtype, pieces)

    def complete(self) -> bool:
        """Whether the tiles cover their axis, end to end."""
        ends = [0] + [stop for _, stop, _ in self.pieces]
        return ends[-1] == self.shape[self.axis] and all(a == start for a, (start, _, _) in zip(ends, self.pieces))

    def concatenation(self, out: Tensor) -> tuple:
        """The record of ``out`` as the concatenation of the pieces."""
        pieces = tuple(piece for _, _, piece in self.pieces)
        return (anp.ops._concatenate, pieces, [piece._value for piece in pieces], {"axis": self.axis}, out,
                tuple(range(len(pieces))))


def _spliced(record: tuple, uses: dict, producers: dict) -> tuple:
    """A concatenation ``record`` with each operand that is a concatenation along the same axis, of
    the same dtype and read only here, replaced by that one's operands: the same values (both copy),
    one array made instead of two (``np.stack`` in a rate, then its tangents appended)."""
    prim, args, raw, kwargs, out, parents = record
    axis = kwargs.get("axis", 0) % out.ndim
    spliced, spliced_raw, spliced_parents = [], [], []
    for k, (arg, value) in enumerate(zip(args, raw)):
        inner = producers.get(arg._id) if k in parents else None
        if (inner is None or inner[0] is not prim or uses.get(arg._id) != 1 or inner[4].dtype != out.dtype
                or inner[3].get("axis", 0) % inner[4].ndim != axis):
            spliced_parents += [len(spliced)] if k in parents else []
            spliced.append(arg)
            spliced_raw.append(value)
            continue
        spliced_parents += [len(spliced) + i for i in inner[5]]
        spliced += inner[1]
        spliced_raw += inner[2]
    if len(spliced) == len(args):
        return record
    return prim, tuple(spliced), spliced_raw, kwargs, out, tuple(spliced_parents)


# Ops whose output holds the values of their first argument when shapes and dtypes agree (a
# reshape or broadcast to its own shape, a concatenation of one array, a transform's alias of its
# argument): the argument itself.
_SAME_VALUES = {"reshape", "broadcast_to", "concatenate", "alias"}


def _is_one(constant) -> bool:
    """Whether a constant operand is a number or an array of ones (NumPy's ``all`` only for an array
    whose first element is one)."""
    if isinstance(constant, (float, int, np.generic)):
        return bool(constant == 1)
    if type(constant) is not np.ndarray or (constant.size and constant.flat[0] != 1):
        return False
    return bool(np.all(constant == 1))


def _same_array(a: Tensor, out: Tensor) -> bool:
    return (type(a._value) is np.ndarray and type(out._value) is np.ndarray and a.shape == out.shape
            and a.dtype == out.dtype)


def _items_of(t: Tensor, out: Tensor, uses: dict, producers: dict, chains: dict):
    """``t`` as items of a sum into ``out``: a fused sum's items, [index, piece] for a scatter of
    ``piece`` into a basic slice of ``out``'s shape (after its batch axes, if any), [None, t] for
    a dense array; used only here
    (a dense one any number of times); else None."""
    if t._id in chains and uses.get(t._id) == 1:
        return chains[t._id]
    record = producers.get(t._id)
    if record is not None and record[0] is anp.ops._scatter and uses.get(t._id) == 1:
        _, args, raw, _, result, parents = record
        if (list(parents) == [0] and anp.ops._is_basic(raw[1])
                and result.shape == out.shape and result.dtype == out.dtype):
            return [_BatchedIndex((slice(None),) * raw[3] + raw[1]) if raw[3] else raw[1], args[0]]
    if type(t._value) is np.ndarray and t.shape == out.shape and t.dtype == out.dtype:
        return [None, t]
    return None


class _BatchedIndex(tuple):
    """The index of a scatter into a batch of cotangents (the batch axes' slices first)."""


def _batched(items: list) -> bool:
    return any(type(index) is _BatchedIndex for index in items[::2])


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
    for _prim, args, _raw, _kwargs, out, parents in records:
        for i in parents:
            if args[i]._id in dependent:
                if type(out) is tuple:
                    dependent.update(o._id for o in out)
                else:
                    dependent.add(out._id)
                break
    return dependent


def split(records: list, inputs: list, late: list, outputs: list, guards: list = (),
          raw: set = frozenset(), native: bool = False) -> tuple:
    """Partial evaluation: the program of ``records`` split at the ``late`` inputs.

    Returns ``(before, after, n_saved, late_positions)``: ``before.run(*inputs)`` computes the
    ``outputs`` that do not depend on the late inputs, then the ``n_saved`` values that the rest
    needs; ``after.run(*saved, *late)`` computes the outputs that do, at ``late_positions`` among
    ``outputs`` (``after`` is ``single`` when there is one, and ``fresh``). The cached
    Hessian-vector product is this split of ``(x, v) -> (f, gradient, H v)``: once per x, f, its
    gradient and every part of the second sweep that does not involve v; each product, only the rest.
    ``native``: both programs compiled by numba where they can be (see ``Program``; ``after`` only
    when ``before`` is).

    Raises
    ------
    UntraceableError
        If a guard depends on a late input: each late call would have to be able to trace again.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import split, trace
    >>> recording = trace(lambda x, v: (np.sum(np.exp(x)), np.exp(x) * v), np.zeros(2), np.ones(2))
    >>> x, v = recording.inputs
    >>> before, after, n_saved, late_positions = split(recording.records, [x], [v], recording.outputs)
    >>> value, *saved = before.run(np.array([0.0, 1.0]))    # exp(x) is computed once, and saved
    >>> float(value), n_saved, late_positions
    (3.718281828459045, 1, [1])
    >>> after.run(*saved, np.array([2.0, 3.0]))             # each call: one multiplication
    array([2.        , 8.15484549])
    """
    early, late_records, late_positions, saved_list = _parts(records, inputs, late, outputs, guards)
    outputs_after = [outputs[k] for k in late_positions]
    outputs_before = [o for k, o in enumerate(outputs) if k not in late_positions]

    def after_program(native_before: bool) -> Program:
        return Program(late_records, saved_list + list(late), outputs_after, (), raw, single=len(outputs_after) == 1,
                       fresh=True, native=native_before, scalars_in=native_before, lists_in=len(saved_list))
    if native:
        before = Program(early, inputs, outputs_before + saved_list, guards, raw, native=True)
        return before, after_program(before.native_reason is None), len(saved_list), late_positions
    after = after_program(False)  # first: it switches first, and when it takes lists before saves lists
    before = Program(early, inputs, outputs_before + saved_list, guards, raw,
                     listed=range(len(outputs_before), len(outputs)), after=after)
    return before, after, len(saved_list), late_positions


def _parts(records: list, inputs: list, late: list, outputs: list, guards: list) -> tuple:
    """``split``'s parts: (the records that do not depend on ``late``, those that do, the positions
    of the late outputs among ``outputs``, the early values the late records read)."""
    dependent = _depends_on(records, {t._id for t in late})
    early, late_records = [], []
    for r in records:
        (late_records if _outs(r)[0]._id in dependent else early).append(r)
    if any(g[0]._id in dependent for g in guards):
        raise UntraceableError("autodiff.function: a branch or read depends on the vector of a "
                               "Hessian-vector product")
    late_positions = [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o._id in dependent]
    outputs_after = [outputs[k] for k in late_positions]
    produced = {t._id for t in inputs}
    for r in early:
        produced.update(o._id for o in _outs(r))
    saved: dict = {}
    for _, args, _, _, _, parents in live_records(late_records, outputs_after, (), dependent | produced):
        for i in parents:
            if args[i]._id in produced:
                saved.setdefault(args[i]._id, args[i])
    return early, late_records, late_positions, list(saved.values())


def joined(records: list, inputs: list, late: list, outputs: list, guards: list = (), raw: frozenset = frozenset(),
           native: bool = False, saves: bool = True, after: Program | None = None) -> Program:
    """``split``'s two programs as one, for a single late call at a point: ``run(*inputs, *late)``
    returns ``before``'s saved values, then ``after``'s outputs, as ``before`` then ``after``
    compute them (the same records in the same order: the same values), without the early
    outputs that no late one needs (a Hessian operator's value and gradient, when only one product
    is asked). ``native`` as in ``split``; its saved 0-d values are then floats, as ``before``'s.
    Given ``split``'s ``after``, it switches to its scalar program with it, and that saves lists when
    ``after`` takes them, as ``before`` (``Program``).
    Without ``saves``, the late outputs alone (one, if there is one): a native program's arrays
    out cost a conversion each, more than the arithmetic of a small problem.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import trace
    >>> from autodiff.jit.program import joined
    >>> recording = trace(lambda x, v: (np.sum(np.exp(x)), np.exp(x) * v), np.zeros(2), np.ones(2))
    >>> x, v = recording.inputs
    >>> joined(recording.records, [x], [v], recording.outputs).run(np.array([0.0, 1.0]), np.array([2.0, 3.0]))
    [array([1.        , 2.71828183]), array([2.        , 8.15484549])]
    """
    _, _, late_positions, saved_list = _parts(records, inputs, late, outputs, guards)
    saved_list = saved_list if saves else []
    return Program(records, list(inputs) + list(late), saved_list + [outputs[k] for k in late_positions], guards,
                   raw, single=not saves and len(late_positions) == 1, fresh=len(saved_list), native=native,
                   listed=range(len(saved_list)), after=after)


def _outs(record) -> tuple:
    out = record[4]
    return out if type(out) is tuple else (out,)
