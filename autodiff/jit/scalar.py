"""Scalar programs: a program whose arrays are all small, written with Python floats.

On arrays of a few elements a NumPy call costs far more than its arithmetic (about half a
microsecond against a nanosecond an element). When every value of a program has at most
``MAX_SIZE`` elements, its source here unpacks the input arrays once, computes each element with
Python floats (an elementwise op unrolled per element, a read, reshape, concatenation or write as a
renaming of elements, a sum, or a write at repeated indices, as additions; a value read once written
into its reader's expression) and builds its outputs once.

The results are the NumPy replay's bit for bit: Python's ``+ - * /`` and ``abs`` on floats are
IEEE's correctly rounded operations, as NumPy's loops; a sum adds in NumPy's order (``np.add.reduce``
is pairwise in blocks of eight along the contiguous axis, from the identity 0.0: ``_pairwise``);
``x ** 2`` of an array is ``x * x``, as NumPy's fast path for the exponent 2, and a NumPy float's
integer power is the C library's ``pow``, which Python's ``**`` calls too. What is not exact in
Python is left to NumPy: a transcendental function (NumPy's SIMD loops differ from the C library in
the last bit) or a matrix product (BLAS's order and fused multiply-adds) runs as the same NumPy call
on its operands gathered into arrays of their traced types and shapes. An error in Python's
arithmetic where NumPy gives inf or nan (a division by zero, an overflowing power) runs the NumPy
program instead, for that call.

Any op without a spelling here, a guard (branch), a value other than float64 or above the size
makes ``scalar_program`` refuse, and the whole program stays the NumPy one: results never depend
on partial support. Programs are also checked once, at the trace's values, against the NumPy one.

A scalar program is made once its program is hot (``Tiering``): writing, checking and timing it
costs as much as some hundreds of calls of the NumPy program, which a fresh trace (a ``minimize(f)``)
does not make.
"""
from __future__ import annotations

import math
import operator
import re
import time
import weakref
from collections.abc import Callable

import numpy as np

from .. import numpy as anp
from .lowering import compiled_once, fused

MAX_SIZE = 128   # elements of the largest value of a program written with Python floats (pairwise sums' block)
MAX_NAMES = 2000  # values a scalar program names at most (beyond, its time is the NumPy program's or more)
TIMED_CALLS = 5   # alternated calls of each program that choose the faster
MAX_DEPTH = 24    # ops nested into one expression at most (Python's parser caps the nesting)
HOT_CALLS = 200   # calls of a program (a split's pair: together) that make its scalar program (``Tiering``)

_EXACT = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/"}
_STRUCTURAL = {"reshape", "getitem", "transpose", "flip", "broadcast_to", "concatenate", "alias"}
_FLOAT64 = np.dtype(np.float64)
_READS = {operator.getitem, anp.ops._gather_raw}   # x[index] (the second: with its batch axes, none here)


class Unsupported(Exception):
    """An op or a value without a scalar spelling here."""


class Tiering:
    """When programs switch from their NumPy programs to their scalar programs: once hot.

    Writing, checking and timing a scalar program (``scalar_program``) costs as much as 75 to 550
    calls of its NumPy program, and the scalar program saves 10 to 90% of a call: it pays for
    itself after 80 to 2,200 calls, 210 for the median program (the four programs of a fresh
    trust-exact solve of each of 15 small problems, 2026-11-29), while a fresh solve calls each
    program once per iteration (4 to 50 times there). So a program runs its NumPy program, counting
    calls, and once the calls reach ``HOT_CALLS`` (about that median: buying once the rent paid
    reaches the price, the ski-rental rule, costs at most twice the best choice in hindsight) it
    makes its scalar program and from then on runs the faster one. A refused or slower one is not
    tried again.

    The programs of a split (``program.split``: ``after``, ``before`` and a ``joined`` one) share one
    Tiering: their calls count together and they switch together, in the order they joined
    (``after`` first: ``before`` saves lists only for an ``after`` that takes them). A member's run
    until then (``counting``) stays its NumPy program: a holder that kept it with values the NumPy
    ``before`` or joined program saved (a pending operator) keeps the NumPy ``after``, and never
    hands lists to it. Holders join too, to rebind: a ``Late`` made before the switch then runs the
    switched ``after`` on its values as lists (``as_listed``, the same floats); a replayed call, the
    program's run. Members are held weakly, by the method that switches them.
    """

    __slots__ = ("left", "members")

    def __init__(self):
        self.left = HOT_CALLS   # calls until hot (at most 0: hot)
        self.members: list = []  # weak methods switching the members, in the order they joined

    def counting(self, run: Callable) -> Callable:
        """``run`` counting its calls with the other members'; the call that makes them hot switches them."""
        def counted(*args):
            self.left -= 1
            if self.left == 0:
                self.switch()
            return run(*args)
        return counted

    def join(self, switch: Callable) -> None:
        """Add a member by its method ``switch()`` (called when the members are hot, or now if they are)."""
        if self.left <= 0:
            with np.errstate(all="ignore"):   # (see ``switch``)
                switch()
        else:
            members = self.members
            if len(members) >= 64 and len(members) & (len(members) - 1) == 0:   # at 64, 128, ...: the dead go
                members[:] = [member for member in members if member() is not None]   # (Lates of past points)
            members.append(weakref.WeakMethod(switch))

    def switch(self) -> None:
        """Switch every member (once: a member joining later switches as it joins)."""
        self.left, members, self.members = min(self.left, 0), self.members, []
        with np.errstate(all="ignore"):   # the checks at the trace's values warn at their trace, not here
            for member in members:
                switch = member()
                if switch is not None:
                    switch()


def possible(live: list, inputs: list, guards: list) -> bool:
    """Whether ``scalar_program`` may write the program of ``live`` at all (no guard, every input and
    value small): a program that cannot have one neither keeps its recording nor counts its calls."""
    return (not guards and len(inputs) > 0 and all(_small(t._value) for t in inputs)
            and all(type(record[4]) is not tuple and _small(record[4]._value) for record in live))


def as_listed(value: np.ndarray | np.float64 | float) -> list | float:
    """A float64 value as a scalar program returns it at a listed position (``scalar_program``):
    its elements in C order as a list of floats, or a float when 0-d."""
    return value.ravel().tolist() if np.ndim(value) else float(value)


def _small(value) -> bool:
    """Whether ``value`` is float64 with 1 to ``MAX_SIZE`` elements (the values a scalar program holds)."""
    if not hasattr(value, "dtype"):   # a Python number
        value = np.asarray(value)
    return value.dtype == _FLOAT64 and 0 < value.size <= MAX_SIZE


def scalar_program(live: list, inputs: list, outputs: list, guards: list, single: bool, fresh: int,
                   run_plain: Callable, listed: range = range(0), lists_in: int = 0) -> tuple:
    """``(source, run)``: the program of ``live`` (records after ``program``'s passes) on Python
    floats, its results those of ``run_plain`` (the NumPy program, which runs instead when Python's
    arithmetic raises); or ``(None, None)`` when some value or op has no spelling here.

    The outputs at positions ``listed`` are Python lists of their elements (C order), or floats
    when 0-d, and the first ``lists_in`` inputs may come so: values a split program saves for its
    second part, which reads them without building arrays (``program.split``)."""
    if guards or not inputs:
        return None, None
    try:
        writer = _Writer()
        source = writer.program(live, inputs, outputs, single, fresh, listed, lists_in)
        namespace = dict(writer.globals, _plain=run_plain)
        exec(compiled_once(source, "<autodiff.function scalar program>"), namespace)
        run = namespace.pop("program")
        args = [t._value for t in inputs]
        _check(run(*args), run_plain(*args), single, listed)
    except (Unsupported, ValueError, TypeError, IndexError):  # no spelling (NumPy's refusals of the elements' arrays)
        return None, None
    return (source, run) if _faster(run, run_plain, args) else (None, None)


def _faster(run: Callable, run_plain: Callable, args: list) -> bool:
    """Whether ``run`` takes less time than ``run_plain`` at ``args`` (the best of a few alternated
    calls each): which one wins depends on the sizes, the ops and the machine, not the results."""
    best, best_plain = math.inf, math.inf
    for _ in range(TIMED_CALLS):
        start = time.perf_counter()
        run(*args)
        middle = time.perf_counter()
        run_plain(*args)
        best, best_plain = min(best, middle - start), min(best_plain, time.perf_counter() - middle)
    return best < best_plain


def _check(got, expected, single: bool, listed: range) -> None:
    """Raise ``Unsupported`` unless the results are the NumPy program's: types, shapes and bits (a
    listed output: its elements')."""
    for k, (a, b) in enumerate(zip(*(((got,), (expected,)) if single else (got, expected)))):
        if k in listed and type(a) in (list, float):
            a, b = np.asarray(a, dtype=float), np.ravel(b) if np.ndim(b) else np.asarray(b).astype(float)
        if type(a) is not type(b) or np.shape(a) != np.shape(b) or np.asarray(a).tobytes() != np.asarray(b).tobytes():
            raise Unsupported("the scalar results differ from the NumPy program's")


def _pairwise(terms: list) -> str:
    """The expression NumPy's pairwise summation makes of ``terms`` (at most 128): in order below
    eight, else eight running sums joined as a tree, then the rest in order."""
    if len(terms) < 8:
        return _in_order(terms)
    sums = terms[:8]
    end = len(terms) - len(terms) % 8
    for start in range(8, end, 8):
        sums = [f"({s} + {t})" for s, t in zip(sums, terms[start:start + 8])]
    s = sums
    return _in_order([f"((({s[0]} + {s[1]}) + ({s[2]} + {s[3]})) + (({s[4]} + {s[5]}) + ({s[6]} + {s[7]})))"]
                     + terms[end:])


def _in_order(terms: list) -> str:
    """The expression adding ``terms`` from the left (Python's ``+`` associates to the left)."""
    return f"({' + '.join(terms)})" if len(terms) > 1 else terms[0]


def _literal(value) -> str:
    """A number as Python source of the float NumPy computes with (float64)."""
    value = float(value)
    if math.isfinite(value):
        return f"({value!r})" if value < 0 or (value == 0 and math.copysign(1, value) < 0) else repr(value)
    return "_nan" if math.isnan(value) else ("_inf" if value > 0 else "(-_inf)")


class _Writer:
    """The source of one scalar program: each value an object array of its elements' source."""

    max_names = MAX_NAMES
    max_constant = MAX_SIZE   # elements of a constant array written as its elements' names at most

    def __init__(self):
        self.globals: dict = {"_array": np.array, "_float64": np.float64, "_ndarray": np.ndarray, "_nan": math.nan,
                              "_inf": math.inf}
        self.lines: list = []
        self.count = 0
        self.constants: dict = {}   # id -> name
        self.named: dict = {}       # expression -> the name holding its value (each is computed once)
        self.sources: dict = {}     # Tensor id -> source of the NumPy program's own array (an input, a read of one)
        self.input_roots: set = set()   # ids of the arrays that inputs are or view

    def fresh_names(self, n: int) -> list:
        """``n`` names not used yet (Unsupported beyond ``max_names``)."""
        start, self.count = self.count, self.count + n
        if self.count > self.max_names:
            raise Unsupported("a program of more than max_names values")
        return [f"s{k}" for k in range(start + 1, self.count + 1)]

    def constant(self, value) -> str:
        """A global name for ``value`` (one per object)."""
        if id(value) not in self.constants:
            self.constants[id(value)] = f"c{len(self.constants)}"
            self.globals[self.constants[id(value)]] = value
        return self.constants[id(value)]

    def elements(self, value) -> np.ndarray:
        """A constant's elements: a Python number as its literal (the NumPy program's source has
        it too), an array's elements as global names (one source for any data: compiled once)."""
        array = np.asarray(value)
        if array.dtype.kind not in "fiub" or (array.dtype.kind == "f" and array.dtype != _FLOAT64):
            raise Unsupported(f"a constant of {array.dtype}")
        if array.size > self.max_constant:
            raise Unsupported("a large constant")
        if array.dtype.kind in "iu" and np.any(np.abs(array) > 2 ** 53):
            raise Unsupported("an integer constant beyond float64's exact range")
        if type(value) in (float, int, bool):
            return np.array(_literal(value), object)
        name = self.constant(value)
        out = np.empty(array.shape, object)
        for k, (index, element) in enumerate(np.ndenumerate(array)):
            out[index] = f"{name}_{k}"
            self.globals[out[index]] = float(element)   # as NumPy promotes it: float64
        return out

    def program(self, live: list, inputs: list, outputs: list, single: bool, fresh: int, listed: range,
                lists_in: int) -> str:
        """The source of the program (see ``scalar_program``)."""
        params = [f"a{k}" for k in range(len(inputs))]
        values = self.computed(live, inputs, lists_in)
        results = []
        for k, o in enumerate(outputs):
            if not hasattr(o, "_id") or o._id not in values:
                raise Unsupported("a constant output")
            position = next((j for j, t in enumerate(inputs) if t._id == o._id), None)
            if position is not None:
                results.append(f"a{position}.copy()" if k >= fresh else f"a{position}")
            elif k in listed:
                elements = values[o._id]
                results.append(elements.item() if elements.ndim == 0 else f"[{', '.join(elements.ravel())}]")
            else:
                results.append(self.built(values[o._id], o._value))
        # a value read once written into its reader: a name stored and loaded costs a third of a float op
        body = fused(self.lines + [f"return {results[0]}" if single else f"return [{', '.join(results)}]"],
                     _NAME, MAX_DEPTH)
        arrays = [self.as_traced(name, t._value) if k < lists_in else name
                  for k, (name, t) in enumerate(zip(params, inputs))]
        return "\n".join([f"def program({', '.join(params)}):", "    try:"] + [f"        {line}" for line in body]
                         + ["    except Exception:", f"        return _plain({', '.join(arrays)})"])

    def computed(self, live: list, inputs: list, lists_in: int) -> dict:
        """The lines unpacking the inputs (parameters ``a0``, ``a1``, ...) and computing ``live``'s
        records: the elements of every value by Tensor id."""
        values: dict = {}
        for k, t in enumerate(inputs):
            values[t._id] = self.unpacked(f"a{k}", t._value, k < lists_in)
            self.sources[t._id] = f"a{k}"
            if type(t._value) is np.ndarray:
                self.input_roots.add(id(_root(t._value)))
        for record in live:
            self.record(record, values)
        return values

    def unpacked(self, name: str, value, listed: bool) -> np.ndarray:
        """The lines reading an input's elements into names (a ``listed`` one may come as a list);
        its elements."""
        if not _small(value):
            raise Unsupported("an input that is not float64, is empty or is large")
        if np.ndim(value) == 0:
            target, = self.fresh_names(1)
            self.lines.append(f"{target} = float({name})")
            return np.array(target, object)
        names = self.fresh_names(value.size)
        read = f"{name}.tolist()" if value.ndim == 1 else f"{name}.ravel().tolist()"
        read = f"{name} if {name}.__class__ is list else {read}" if listed else read
        self.lines.append(f"{', '.join(names)}, = {read}")
        return np.array(names, object).reshape(value.shape)

    def as_traced(self, name: str, value) -> str:
        """An input that may come as a list (or a float), as the NumPy program takes it (its traced type)."""
        if type(value) is np.float64:
            return f"_float64({name})"
        if type(value) is np.ndarray:
            return f"({name} if {name}.__class__ is _ndarray else _array({name}).reshape({value.shape!r}))"
        return name

    def built(self, elements: np.ndarray, value) -> str:
        """The source of an output of ``value``'s type made of ``elements``."""
        if type(value) is np.ndarray:
            flat = f"_array([{', '.join(elements.ravel())}])"
            return (flat if value.ndim == 1 else f"_array({elements.item()})" if value.ndim == 0
                    else f"{flat}.reshape({value.shape!r})")
        if type(value) is np.float64:
            return f"_float64({elements.item()})"
        if type(value) is float:
            return str(elements.item())
        raise Unsupported(f"an output of type {type(value).__name__}")

    def rebuilt(self, elements: np.ndarray, value) -> str:
        """An operand for a NumPy call: ``elements`` as an array of the traced ``value``'s type (made
        once). The NumPy program's operand must be laid out as a new array is: contiguous, and
        not a view of an input or at an offset off 16 bytes (BLAS kernels such as SSE2's take
        another order of additions on misaligned data)."""
        if type(value) is np.ndarray and value.ndim > 0:
            root = _root(value)
            offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            if not value.flags.c_contiguous or offset % 16 or id(root) in self.input_roots:
                raise Unsupported("a NumPy call on a strided, misaligned or input's view")
        return self.name_of(self.built(elements, value))

    def assigned(self, expressions: list, shape: tuple) -> np.ndarray:
        """Names holding the expressions' values (each expression computed once: names are assigned
        once and ops are pure), as an array of ``shape``."""
        return np.array(self.names_of(expressions), object).reshape(shape)

    def names_of(self, expressions: list) -> list:
        """The names holding the expressions' values: a line for each expression not computed yet."""
        named = self.named
        new = [expression for expression in dict.fromkeys(expressions) if expression not in named]
        if new:
            for expression, name in zip(new, self.fresh_names(len(new))):
                named[expression] = name
                self.lines.append(f"{name} = {expression}")
        return [named[expression] for expression in expressions]

    def name_of(self, expression: str) -> str:
        return self.names_of((expression,))[0]

    def binary(self, symbol: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        if left.shape != right.shape:
            left, right = np.broadcast_arrays(left, right)
        return self.assigned([f"{a} {symbol} {b}" for a, b in zip(left.ravel(), right.ravel())], left.shape)

    def record(self, record: tuple, values: dict) -> None:
        """Write one record: its output's elements into ``values``."""
        prim, args, raw, kwargs, out, parents = record
        if type(out) is tuple:
            raise Unsupported("several outputs")
        if not _small(out._value):
            raise Unsupported("a value that is not float64, is empty or is large")
        operands = [values[args[i]._id] if i in parents else None for i in range(len(args))]
        sources = [self.sources.get(args[i]._id) if i in parents else None for i in range(len(args))]
        result = self.op(prim, operands, raw, kwargs, out, sources)
        fun = getattr(prim, "tensor_fun", None)
        if sources and sources[0] is not None and not kwargs and (
                fun is None or (fun in _READS and _basic(raw[1]) and list(raw[2:]) in ([], [0]))):
            self.sources[out._id] = sources[0] if fun is None else f"{sources[0]}[{self.constant(raw[1])}]"
        if result.shape != np.shape(out._value):
            raise Unsupported(f"{getattr(prim, 'name', 'alias')}: a shape other than the trace's")
        values[out._id] = result

    def op(self, prim, operands: list, raw: list, kwargs: dict, out, sources: list) -> np.ndarray:
        """The elements of one op's result (``operands``: elements, None for a constant argument;
        ``sources``: the NumPy program's own arrays where they are an input or a read of one)."""
        def elems(i):
            return operands[i] if operands[i] is not None else self.elements(raw[i])
        fun, name = getattr(prim, "tensor_fun", None), getattr(prim, "name", "alias")
        if fun is None:    # program._ALIAS: the output is its argument
            return elems(0)
        if fun in _EXACT and len(operands) == 2 and not kwargs:
            return self.binary(_EXACT[fun], elems(0), elems(1))
        if fun is operator.neg and not kwargs:
            return self.assigned([f"-{a}" for a in elems(0).ravel()], np.shape(raw[0]))
        if fun is np.absolute and not kwargs:
            return self.assigned([f"abs({a})" for a in elems(0).ravel()], np.shape(raw[0]))
        if fun is operator.pow and not kwargs and operands[1] is None and np.ndim(raw[1]) == 0:
            power = self.power(elems(0), raw[0], raw[1])
            if power is not None:
                return power
        if name in _STRUCTURAL and (name == "concatenate" or (operands[0] is not None
                                                              and all(o is None for o in operands[1:]))):
            return self.structural(fun, elems, raw, kwargs, name == "concatenate")
        if name == "scatter_add" and operands[0] is not None and not kwargs:
            return self.scattered(elems(0), raw[1], tuple(raw[0].shape[:raw[3]]) + tuple(raw[2]), raw[3])
        if name == "where" and operands[0] is None and not kwargs:
            return np.where(np.asarray(raw[0], bool), elems(1), elems(2))
        if fun == np.add.reduce and operands[0] is not None and set(kwargs) <= {"axis", "keepdims"}:
            return self.sum(elems(0), raw[0], kwargs.get("axis"), np.shape(out._value))
        if name in ("accumulate", "accumulate_sliced"):
            return self.accumulated(name, elems, raw)
        if (isinstance(fun, np.ufunc) and fun.nout == 1) or fun is operator.pow:
            return self.numpy_call(fun, operands, raw, kwargs, out._value, sources)
        raise Unsupported(f"the op {name}")

    def scattered(self, piece: np.ndarray, index: tuple, shape: tuple, nb: int) -> np.ndarray:
        """``_scatter_raw``: ``piece`` written into zeros at a basic index, or added at an advanced
        one as ``np.add.at`` adds (each position from 0.0, in the order of the index's elements)."""
        full = (slice(None),) * nb + index
        if _basic(index):
            return self.written(np.full(shape, "0.0", object), full, piece)
        if nb and anp.ops._separated_advanced(index):
            a = anp.ops._advanced_ndim(index)
            piece = np.moveaxis(piece, tuple(range(nb, nb + a)), tuple(range(a)))
        positions = np.arange(math.prod(shape)).reshape(shape)[full]
        total = np.full(math.prod(shape), "0.0", object)
        for position, element in zip(positions.ravel().tolist(), np.broadcast_to(piece, positions.shape).ravel()):
            total[position] = self.name_of(f"{total[position]} + {element}")
        return total.reshape(shape)

    def power(self, base: np.ndarray, value, exponent) -> np.ndarray | None:
        """``x ** 2`` of an array as ``x * x`` (NumPy's fast path); a NumPy float's integer power by
        Python's ``**`` (the C library's ``pow``, as NumPy's scalar power); else None."""
        if type(value) is np.ndarray and exponent == 2:
            return self.assigned([f"{a} * {a}" for a in base.ravel()], base.shape)
        if type(value) is np.float64 and float(exponent).is_integer() and math.isfinite(exponent):
            return self.assigned([f"{base.item()} ** {_literal(exponent)}"], ())
        return None

    def structural(self, fun: Callable, elems: Callable, raw: list, kwargs: dict, every: bool) -> np.ndarray:
        """A read, reshape, transpose, flip, broadcast or concatenation: NumPy's own function on the
        arrays of elements (a renaming: no arithmetic). ``every`` argument is an array (else the first)."""
        arguments = [elems(i) if every or i == 0 else raw[i] for i in range(len(raw))]
        return np.asarray(fun(*arguments, **kwargs), dtype=object)

    def sum(self, elements: np.ndarray, value, axis, shape: tuple) -> np.ndarray:
        """``np.add.reduce(value, axis, keepdims)``'s additions, in its order on a C-contiguous array:
        axes of length one aside, a trailing block of reduced axes is summed pairwise, a leading
        one in order, each from the identity 0.0."""
        if type(value) is not np.ndarray or value.ndim == 0 or not value.flags.c_contiguous:
            raise Unsupported("a sum of a scalar or strided value")
        axes = set(range(value.ndim)) if axis is None else {a % value.ndim for a in np.atleast_1d(axis).tolist()}
        longer = [k for k in range(value.ndim) if value.shape[k] != 1]
        reduced, kept = [k for k in longer if k in axes], [k for k in longer if k not in axes]
        if reduced and kept and not (min(reduced) > max(kept) or max(reduced) < min(kept)):
            raise Unsupported("a sum over interleaved axes")
        pairwise = not kept or not reduced or min(reduced) > max(kept)
        moved = np.moveaxis(elements, sorted(axes), range(value.ndim - len(axes), value.ndim))
        groups = moved.reshape(-1, math.prod(value.shape[k] for k in axes))
        totals = [f"0.0 + {_pairwise(terms)}" if pairwise else _in_order(["0.0"] + terms)
                  for terms in groups.tolist()]
        return self.assigned(totals, shape)

    def accumulated(self, name: str, elems: Callable, raw: list) -> np.ndarray:
        """``program._accumulate`` (``_accumulate_sliced``): the same additions in the same order."""
        items = [(raw[k], elems(k + 1)) for k in range(2, len(raw), 2)]
        if any(index is not None and not _basic(tuple(index) if isinstance(index, tuple) else index)
               for index, _ in items):
            raise Unsupported("a sum of slices at an advanced index")
        zeros = np.full(raw[0], "0.0", object)
        if name == "accumulate":
            total = None
            for index, piece in items:
                if total is None:
                    total = piece if index is None else self.written(zeros, index, piece)
                else:
                    total = self.binary("+", total, piece) if index is None else self.added(total, index, piece)
            return total
        pieces, total = [], None
        for index, piece in items:
            if index is None:
                total = (self.binary("+", total, piece) if total is not None
                         else self.pieces_added(piece, pieces) if pieces else piece)
                pieces = []
            elif total is not None:
                total = self.added(total, index, piece)
            else:
                at = next((j for j, (known, _) in enumerate(pieces) if known == index), None)
                if at is None:
                    pieces.append((index, piece))
                else:
                    pieces[at] = (index, self.binary("+", pieces[at][1], piece))
        if total is None:
            total = self.pieces_added(self.written(zeros, *pieces[0]), pieces[1:])
        return total

    def written(self, total: np.ndarray, index, piece: np.ndarray) -> np.ndarray:
        """``total[index] = piece`` on a copy (a basic index: a view, or one element)."""
        total = total.copy()
        view = total[index]
        if type(view) is np.ndarray:
            view[...] = piece
        else:
            total[index] = piece.item()
        return total

    def added(self, total: np.ndarray, index, piece: np.ndarray) -> np.ndarray:
        """``total[index] += piece`` on a copy."""
        return self.written(total, index, self.binary("+", np.asarray(total[index], dtype=object), piece))

    def pieces_added(self, total: np.ndarray, pieces: list) -> np.ndarray:
        for index, piece in pieces:
            total = self.added(total, index, piece)
        return total

    def numpy_call(self, fun: Callable, operands: list, raw: list, kwargs: dict, value, own: list) -> np.ndarray:
        """An op that Python's floats would not round as NumPy does: NumPy's call on its operands,
        the program's own arrays where they are an input or a read of one (``own``), else rebuilt
        as arrays of their traced types and shapes (constants as they are)."""
        plain = isinstance(fun, np.ufunc) and fun is not np.matmul  # a ufunc takes a float as a NumPy float
        sources = [self.constant(r) if e is None else s if s is not None else
                   e.item() if plain and np.ndim(r) == 0 and type(r) is not np.ndarray else self.rebuilt(e, r)
                   for e, r, s in zip(operands, raw, own)]
        keywords = "".join(f", {k}={self.constant(v)}" for k, v in kwargs.items())
        call = f"{self.constant(fun)}({', '.join(sources)}{keywords})"
        if np.ndim(value) == 0:
            return self.assigned([f"float({call})"], ())
        if call not in self.named:
            names = self.fresh_names(np.size(value))
            self.lines.append(f"{', '.join(names)}, = {call}{'.ravel()' if np.ndim(value) > 1 else ''}.tolist()")
            self.named[call] = np.array(names, object).reshape(np.shape(value))
        return self.named[call]


_NAME = re.compile(r"(s(?<!\ws)\d+)\b")   # a value's name (see lowering.NAME)


def _root(array: np.ndarray) -> np.ndarray:
    """The array whose memory ``array`` views (itself if it owns its data)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _basic(index) -> bool:
    pieces = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(piece, (np.ndarray, list)) for piece in pieces)
