"""Native programs: a program's ops written as one function that numba compiles to machine code
(the optional ``compiled`` extra: ``pip install hessopt[compiled]``).

The plain replay calls NumPy once per op, and on small arrays that call is most of the cost. Here
the whole straight-line program is one numba function: one call from Python per replay. It is
made where numba is installed and every op has a spelling here (elementwise arithmetic and
functions, reads and slice writes, reads at an integer vector and their cotangents' sums,
reshapes, broadcasts, reductions, products, concatenations, the unrolled sums of slice
cotangents); for any other program, one with guards, or when numba is
missing, ``native_program`` says why not and the NumPy replay runs.

A program whose values are all small (``scalar.MAX_SIZE`` elements; up to ``MAX_FLOAT_NAMES``
values; its constants may be larger, a data matrix times a small vector, their elements numba's
constants) is written on floats instead (``_FloatWriter``: the scalar program's writer in numba's
dialect): no array is made inside, and its array outputs are made by NumPy in a Python function
around it, which hands them to numba to fill (an array numba makes costs ~0.8 us more to return to
Python). A call then costs about numba's dispatch, ~0.5 us; it compiles in a second or a few where
the array source takes several. Any program the float writer refuses is written with arrays.

The results are the NumPy replay's within rounding, not bit for bit: numba sums in order where
NumPy sums pairwise (``np.sum``, ``@`` on long vectors), its ``exp``, ``log``, ``sin``, ...
come from LLVM's math library rather than NumPy's SIMD loops (on arrays of ``NUMPY_LOOP_FROM``
elements or more, where those loops are several times faster, NumPy's are called: ``_numpy_loop``),
and 0-d results are Python floats. Products go to BLAS with their operands as they are when
contiguous either way (a transpose is F-contiguous), as NumPy's ``@`` does.
A native program is checked once against its trace's results when it is made (a translation
that disagreed beyond rounding would be refused).

``row_loop`` is one more numba function around a native program: it runs the program at each row of
an array (a batch of small problems, ``autodiff.hessian_rows``), numba calling numba, so that a row
costs the program's own time and no call from Python.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable

import numpy as np

from ..core import Tensor
from .cache import LeastRecentlyUsed
from .lowering import accumulate_lines, accumulate_sliced_lines
from .scalar import MAX_SIZE, _in_order
from .scalar import Unsupported as _NoScalar
from .scalar import _Writer as _ScalarWriter

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "power": "**"}
_UFUNCS = {"exp", "log", "sin", "cos", "tan", "sqrt", "absolute", "tanh", "arctan2", "log1p", "expm1",
           "arctan", "arcsin", "arccos", "sinh", "cosh", "square", "sign", "maximum", "minimum", "reciprocal"}
_LIBM = {"exp", "log", "sin", "cos", "tan", "tanh", "arctan2", "log1p", "expm1", "arctan", "arcsin", "arccos",
         "sinh", "cosh"}  # the ufuncs that numba calls LLVM's math library for, one element at a time
NUMPY_LOOP_FROM = 1024  # elements from which those run in NumPy's own loop (``_numpy_loop``)
_DTYPES = (np.float64, np.int64, np.bool_)  # the values spelled here (float32 and complex are not)
MAX_PRODUCT_TERMS = 4096  # multiplications of a matrix product written on floats at most
MAX_FLOAT_NAMES = 8000    # values of a program written on floats at most (numba compiles ~1 ms a value)
CHECK_RTOL = 1e-8  # a native program's results at its trace point agree with the trace's this well


class Unsupported(Exception):
    """An op, or a value, without a spelling for numba here."""


def _is_scalar(value) -> bool:
    return np.ndim(value) == 0


def _index_source(index, array: Callable | None = None) -> str:
    """An index as numba source (ints, slices, Ellipsis, None; with ``array``, the source of a
    constant, integer arrays too: numba takes one); a tuple's subclass (a batched sweep's index,
    ``program._BatchedIndex``) as the tuple it is."""
    if isinstance(index, tuple):
        index = tuple(index)
    pieces = index if type(index) is tuple else (index,)
    parts = []
    for piece in pieces:
        if type(piece) is int:
            parts.append(repr(piece))
        elif type(piece) is slice and all(p is None or type(p) is int for p in (piece.start, piece.stop, piece.step)):
            parts.append(f"slice({piece.start!r}, {piece.stop!r}, {piece.step!r})")
        elif piece is Ellipsis:
            parts.append("Ellipsis")
        elif array is not None and isinstance(piece, np.ndarray) and piece.dtype.kind == "i":
            parts.append(array(piece))
        else:
            raise Unsupported(f"index {type(piece).__name__}")
    return parts[0] if len(parts) == 1 and type(index) is not tuple else f"({', '.join(parts)},)"


class _Writer:
    """The source of one native function: names of values, constants as globals."""

    def __init__(self):
        self.globals: dict = {"np": np}
        self.lines: list = []

    def constant(self, value) -> str:
        if value is None or type(value) in (bool, int):
            return repr(value)
        if isinstance(value, (float, np.floating)) and math.isfinite(value):
            return repr(float(value))
        if isinstance(value, (float, np.floating)):
            return "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
        if isinstance(value, np.dtype) and value == np.float64:
            return "np.float64"
        if type(value) is tuple and all(type(v) is int for v in value):
            return repr(value)
        if isinstance(value, np.ndarray) and value.dtype.kind in "fib":
            name = f"k{len(self.globals)}"
            self.globals[name] = np.ascontiguousarray(value)
            return name
        if isinstance(value, (tuple, slice)) or value is Ellipsis:
            return _index_source(value, self.constant)
        raise Unsupported(f"constant {type(value).__name__}")


class _FloatWriter(_ScalarWriter):
    """A scalar program (``scalar``: each element a float, elementwise ops unrolled, sums in NumPy's
    order) in numba's dialect, for a program whose values are all small: a float costs nothing
    where a numba array costs an allocation (~0.1 us) and, handed to Python, ~0.8 us more.

    Inputs are read once per element, NumPy's functions (``exp``, ``arctan2``, ...) called on each
    element (numba's ``np.exp`` of a float: LLVM's math library), products written as their sums in
    order. The numba function (the kernel) writes the array outputs into arrays it is given and
    returns the 0-d ones (floats); a Python function around it (``wrapper``) makes those arrays
    with NumPy (~0.2 us each) and returns the outputs as ``_source``'s program does."""

    max_names = MAX_FLOAT_NAMES
    # a constant larger than the values (a matrix times a small vector): its elements are numba's
    # constants, and what the program computes with them stays bounded by MAX_PRODUCT_TERMS and max_names
    max_constant = MAX_PRODUCT_TERMS

    def program(self, live: list, inputs: list, outputs: list, single: bool, fresh: int) -> tuple:
        """``(kernel source, its globals, wrapper source)``: the wrapper defines ``program``, calling
        the compiled ``kernel`` as ``_kernel``; without one (None: no array out) the kernel is
        ``program``, its results the outputs."""
        values = self.computed(live, inputs, 0)
        shapes: dict = {}   # the array outputs' names: their shapes
        results = [self.output(k, o, values, inputs, fresh, shapes) for k, o in enumerate(outputs)]
        floats = [name for name in results if name.startswith("f")]
        params = [f"a{k}" for k in range(len(inputs))]
        returned = "    return " + (results[0] if single else f"({', '.join(results)},)")
        body, namespace = [f"    {line}" for line in self.lines], dict(self.globals, np=np)
        if len(floats) == len(results):
            return "\n".join([f"def program({', '.join(params)}):"] + body + [returned]), namespace, None
        call = f"_kernel({', '.join(params + list(shapes))})"
        wrapper = ([f"def program({', '.join(params)}):"]
                   + [f"    {name} = _empty({shape!r})" for name, shape in shapes.items()]
                   + [f"    {_packed(floats)} = {call}" if floats else f"    {call}", returned])
        kernel = [f"def kernel({', '.join(params + list(shapes))}):"] + body + [f"    return {_packed(floats)}"]
        return "\n".join(kernel), namespace, "\n".join(wrapper)

    def output(self, k: int, o, values: dict, inputs: list, fresh: int, shapes: dict) -> str:
        """The name of output ``k`` in the wrapper: an input as it is (copied when ``fresh``), a 0-d
        value as the float ``f<k>``, an array ``r<k>`` whose elements the kernel writes (``shapes``)."""
        if not isinstance(o, Tensor) or o._id not in values:
            raise Unsupported("a constant output")
        position = next((j for j, t in enumerate(inputs) if t._id == o._id), None)
        elements = values[o._id]
        if position is not None:
            return f"a{position}.copy()" if k >= fresh and not _is_scalar(o._value) else f"a{position}"
        if elements.ndim == 0:
            self.lines.append(f"f{k} = {elements.item()}")
            return f"f{k}"
        shapes[f"r{k}"] = elements.shape
        self.lines += [f"r{k}[{_at(index)}] = {element}" for index, element in np.ndenumerate(elements)]
        return f"r{k}"

    def unpacked(self, name: str, value, listed: bool) -> np.ndarray:
        """The lines reading an input's elements (a 0-d one comes as a float)."""
        if np.result_type(value) != np.float64 or not 0 < np.size(value) <= MAX_SIZE:
            raise Unsupported("an input that is not float64, is empty or is large")
        if np.ndim(value) == 0:
            return self.assigned([name], ())
        names = np.array(self.fresh_names(int(np.size(value))), object).reshape(np.shape(value))
        self.lines += [f"{target} = {name}[{_at(index)}]" for index, target in np.ndenumerate(names)]
        return names

    def numpy_call(self, fun: Callable, operands: list, raw: list, kwargs: dict, value, own: list) -> np.ndarray:
        """A NumPy function's elements: per element (broadcast), a matrix product as its sums."""
        if kwargs:
            raise Unsupported("a NumPy call with keywords")
        arguments = [o if o is not None else self.elements(r) for o, r in zip(operands, raw)]
        if fun is np.matmul:
            return self.product(*arguments, np.shape(value))
        if fun is operator.pow:
            return self.binary("**", *arguments)
        if fun.__name__ not in _UFUNCS:
            raise Unsupported(f"the function {fun.__name__}")
        arguments = np.broadcast_arrays(*arguments)
        calls = [f"np.{fun.__name__}({', '.join(elements)})" for elements in zip(*(a.ravel() for a in arguments))]
        return self.assigned(calls, arguments[0].shape)

    def sum(self, elements: np.ndarray, value, axis, shape: tuple) -> np.ndarray:
        """A sum's additions in NumPy's order where ``scalar`` writes it, else (interleaved or
        strided axes) in order: within rounding of NumPy's."""
        try:
            return super().sum(elements, value, axis, shape)
        except _NoScalar:
            axes = range(elements.ndim) if axis is None else [a % elements.ndim for a in np.atleast_1d(axis).tolist()]
            moved = np.moveaxis(elements, list(axes), range(elements.ndim - len(axes), elements.ndim))
            terms = moved.reshape(-1, math.prod(elements.shape[a] for a in axes)).tolist()
            return self.assigned([_in_order(["0.0"] + group) for group in terms], shape)

    def product(self, left: np.ndarray, right: np.ndarray, shape: tuple) -> np.ndarray:
        """``left @ right`` (vectors or matrices) as sums of products in order."""
        if not (left.ndim in (1, 2) and right.ndim in (1, 2)) or left.size * np.shape(right)[-1] > MAX_PRODUCT_TERMS:
            raise Unsupported("a product of stacks or of many terms")
        rows = left.reshape(-1, left.shape[-1])
        columns = right.reshape(right.shape[0], -1).T
        sums = [_in_order([f"{a} * {b}" for a, b in zip(row, column)]) for row in rows for column in columns]
        return self.assigned(sums, shape)


def _packed(names: list) -> str:
    """The source of the kernel's floats: a single one as itself, several as a tuple, none as None."""
    return "None" if not names else names[0] if len(names) == 1 else f"({', '.join(names)},)"


def _at(index: tuple) -> str:
    return ", ".join(map(str, index))


def native_program(live: list, inputs: list, outputs: list, guards: list, single: bool, fresh: int,
                   run_plain: Callable, scalars_in: bool = False) -> tuple:
    """``(run, reason)``: the program of ``live`` (records after the passes of ``program``) compiled
    by numba, checked at the trace's values against ``run_plain``; or ``(None, why not)``.
    ``scalars_in``: 0-d inputs come as floats (the results of a native program), else they are
    refused (a caller's 0-d array would need numba's 0-d arrays)."""
    if guards:
        return None, "the program has guards (branches)"
    if not scalars_in and any(type(t._value) is np.ndarray and t._value.ndim == 0 for t in inputs):
        return None, "a 0-d array input (numba's scalars are floats)"
    try:
        import numba
    except ImportError:
        return None, "numba is not installed (the compiled extra)"
    args = [float(t._value) if scalars_in and _is_scalar(t._value) else t._value  # the types of replays:
            for t in inputs]                                                     # compiled for them now
    try:   # small values: on floats
        written = _FloatWriter().program(live, inputs, outputs, single, fresh)
        return _compiled(numba, *written, args, single, run_plain), None
    except Exception:  # no float spelling, or numba's refusal of it: the array one
        pass
    try:
        return _compiled(numba, *_source(live, inputs, outputs, single, fresh), None, args, single, run_plain), None
    except Exception as error:  # numba's typing errors and refusals: the NumPy replay runs
        return None, reason(error)


def _compiled(numba, source: str, namespace: dict, wrapper: str | None, args: list, single: bool,
              run_plain: Callable) -> Callable:
    """The numba function of ``source`` (with ``namespace``'s globals) or the Python ``wrapper``
    around it (``_FloatWriter``), made once per content, checked at ``args`` against
    ``run_plain``. Divisions by zero give inf or nan, as NumPy's."""
    key = _content(source if wrapper is None else f"{source}\n{wrapper}", namespace)
    compiled = _COMPILED.get(key)
    if compiled is None:
        namespace.update(_numba_globals())
        exec(compile(source, "<autodiff.function native program>", "exec"), namespace)
        compiled = numba.njit(namespace.pop("program" if wrapper is None else "kernel"), error_model="numpy")
        if wrapper is not None:
            around = {"_empty": np.empty, "_kernel": compiled}
            exec(compile(wrapper, "<autodiff.function native program's arrays>", "exec"), around)
            compiled = around["program"]
            compiled.kernel = around["_kernel"]
            compiled.in_numba = numba.njit(compiled)   # the same for numba's callers (``row_loop``): compiled there
    _check(compiled(*args), run_plain(*args), single)
    _COMPILED.put(key, compiled)
    return compiled


#: Compiled programs by content (source and constants), the least recently made or used going
#: first: a program traced again (a new ``autodiff.function`` of the same f, minimize_many's next
#: batch of a plain function) reuses numba's compile when it is the same program, and compiles
#: anew when anything it computes with differs (a global array f reads, rebound).
COMPILED_KEPT = 64
_COMPILED = LeastRecentlyUsed(COMPILED_KEPT)


def _content(source: str, namespace: dict) -> tuple:
    """A program's identity: its source and its constants (arrays by dtype, shape and bytes, numbers
    by value: numba compiles a global as the constant it is)."""
    return (source,) + tuple((name, value.dtype.str, value.shape, value.tobytes()) if isinstance(value, np.ndarray)
                             else (name, repr(value)) for name, value in namespace.items()
                             if isinstance(value, (np.ndarray, float, int)))


def reason(error: Exception) -> str:
    """Why numba (or a trace) refused, in a line: ``"TypingError: <its first line>"``."""
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"


def row_loop(program: Callable, rows: tuple) -> Callable:
    """One numba function ``loop(X, values, gradients, hessians, *inputs)`` that runs the native
    ``program`` (a function of ``(x, *inputs)`` returning (value, gradient, Hessian)) at each row
    ``X[i]``, with the inputs flagged in ``rows`` read at their row ``[i]`` and the others whole,
    and writes its results into ``values[i]``, ``gradients[i]`` and ``hessians[i]`` (preallocated).
    Compiled for its argument types at the first call; numba's errors are raised then."""
    import numba
    callee = getattr(program, "in_numba", program)   # (a Python wrapper's numba twin)
    inputs = [f"a{k}" for k in range(len(rows))]
    call = ", ".join(["X[i]"] + [f"{name}[i]" if row else name for name, row in zip(inputs, rows)])
    source = "\n".join([f"def loop({', '.join(['X', 'values', 'gradients', 'hessians'] + inputs)}):",
                        "    for i in range(X.shape[0]):",
                        f"        value, gradient, hessian = program({call})",
                        "        values[i] = value",
                        "        gradients[i, :] = gradient",
                        "        hessians[i, :, :] = hessian"])
    loop = _LOOPS.get((program, rows))   # (a program reused by content reuses its loop)
    if loop is None:
        namespace = {"program": callee}
        exec(compile(source, "<autodiff.hessian_rows native loop>", "exec"), namespace)
        loop = numba.njit(namespace["loop"])
    _LOOPS.put((program, rows), loop)
    return loop


_LOOPS = LeastRecentlyUsed(COMPILED_KEPT)   # (native program, row flags) -> its compiled loop


def blas_layout(array: np.ndarray) -> np.ndarray:
    """``array`` as BLAS takes it: as it is when C- or F-contiguous, else a C-contiguous copy (numba's
    ``np.dot`` would copy it too, with a warning). Spelled for numba by ``_numba_globals``."""
    return array if array.flags.c_contiguous or array.flags.f_contiguous else np.ascontiguousarray(array)


@functools.cache
def _numba_globals() -> dict:
    """The names a native program uses besides ``np``: numba (``_numpy_loop``) and ``blas_layout``,
    typed at compile time (no copy or test for an array that numba knows to be contiguous)."""
    import numba
    from numba.extending import overload

    @overload(blas_layout)
    def typed(array):
        if array.layout in "CF":
            return lambda array: array
        return lambda array: np.ascontiguousarray(array)
    return {"numba": numba, "blas_layout": blas_layout}


def _check(native, plain, single: bool) -> None:
    """Raise when the native results differ from the plain replay's beyond rounding."""
    natives, plains = ((native,), (plain,)) if single else (native, plain)
    for a, b in zip(natives, plains):
        a, b = np.asarray(a), np.asarray(b)
        scale = np.max(np.abs(b), initial=0.0) if b.size else 0.0
        if a.shape != b.shape or not np.allclose(a, b, rtol=CHECK_RTOL, atol=CHECK_RTOL * scale, equal_nan=True):
            raise Unsupported("the native results differ from the replay's")


def _source(live: list, inputs: list, outputs: list, single: bool, fresh: int) -> tuple:
    """The numba source of the program and its globals (``Unsupported`` for an op without one); the
    outputs from position ``fresh`` on are fresh (``Program``)."""
    writer = _Writer()
    names = {t._id: f"a{k}" for k, t in enumerate(inputs)}
    scalars = {t._id for t in inputs if _is_scalar(t._value)}
    for record in live:
        _op(writer, record, names, scalars)
    results = []
    for k, o in enumerate(outputs):
        if isinstance(o, Tensor) and o._id in names:
            name = names[o._id]
            results.append(name if o._id in scalars or not (k >= fresh or name.startswith("a")) else f"{name}.copy()")
        else:  # a constant result: a copy, the caller's to change
            value = o._value if isinstance(o, Tensor) else o
            results.append(writer.constant(value) if _is_scalar(value) else
                           f"{writer.constant(np.asarray(value))}.copy()")
    body = writer.lines + [f"    return {results[0]}" if single else f"    return ({', '.join(results)},)"]
    header = f"def program({', '.join(names[t._id] for t in inputs)}):"
    return "\n".join([header] + body), writer.globals


def _op(writer: _Writer, record, names: dict, scalars: set) -> None:
    """Write one record: ``names`` and ``scalars`` (ids of 0-d values, numba scalars) grow."""
    prim, args, values, kwargs, out, parents = record
    if type(out) is tuple:
        raise Unsupported(f"{prim.name}: several outputs")
    operands = [names[args[i]._id] if i in parents and args[i]._id in names else writer.constant(values[i])
                for i in range(len(args))]
    if getattr(prim, "tensor_fun", None) is None or prim.name == "alias":  # program._ALIAS
        names[out._id] = operands[0]
        if _is_scalar(values[0]):
            scalars.add(out._id)
        return
    if np.result_type(out._value) not in _DTYPES:
        raise Unsupported(f"{prim.name}: a {np.result_type(out._value)} value")
    target = f"t{len(names)}"
    names[out._id] = target
    if _is_scalar(out._value):
        scalars.add(out._id)
    writer.lines += [f"    {line}" for line in _spelling(prim, operands, values, kwargs, out, target, writer.constant)]


def _spelling(prim, operands: list, values: list, kwargs: dict, out, target: str, constant: Callable) -> list:
    """The numba lines computing ``target`` (``out``'s value) from ``operands`` (``constant``: the
    source of a constant)."""
    name, shape, scalar = prim.name, out.shape, _is_scalar(out._value)
    if name in _INFIX and len(operands) == 2 and not kwargs:
        return [f"{target} = {operands[0]} {_INFIX[name]} {operands[1]}"]
    if name == "negative":
        return [f"{target} = -{operands[0]}"]
    if name in _UFUNCS and isinstance(prim.fun, np.ufunc) and not kwargs:
        call = f"np.{prim.fun.__name__}({', '.join(operands)})"
        if name in _LIBM and not scalar and out._value.size >= NUMPY_LOOP_FROM and out._value.dtype == np.float64:
            return _numpy_loop(target, call, len(shape))
        return [f"{target} = {call}"]
    if prim.tensor_fun is operator.getitem:
        return [f"{target} = {operands[0]}[{_index_source(values[1], constant)}]"]
    if name == "getitem":  # batch axes in front (a Jacobian's sweep): the index applies after them
        return [f"{target} = {operands[0]}[{_index_source((slice(None),) * values[2] + values[1], constant)}]"]
    if name in ("reshape", "broadcast_to"):
        return [_shaped(target, operands[0], values[0], shape, scalar, name)]
    if name in ("sum", "prod") and set(kwargs) <= {"axis", "keepdims"}:
        return _reduction(target, name, operands[0], kwargs.get("axis"), shape, scalar)
    if name == "matmul" and not kwargs and all(np.ndim(v) in (1, 2) for v in values):
        return [f"{target} = np.dot(blas_layout({operands[0]}), blas_layout({operands[1]}))"]
    if name == "concatenate" and list(kwargs) == ["axis"]:
        return [f"{target} = np.concatenate(({', '.join(operands)},), axis={kwargs['axis'] % len(shape)})"]
    if name == "scatter_add" and any(isinstance(piece, np.ndarray) for piece in values[1]):
        return _added_at(target, operands[0], (slice(None),) * values[3] + values[1], shape, constant)
    if name == "scatter_add":
        index = _index_source((slice(None),) * values[3] + values[1])
        return [f"{target} = np.zeros({shape!r}, np.float64)", f"{target}[{index}] = {operands[0]}"]
    if name in ("accumulate", "accumulate_sliced"):
        return _accumulated(target, name, operands, values)
    if name == "where" and not kwargs:
        return [f"{target} = np.where({', '.join(operands)})"]
    if name == "cumsum" and values[1] in (None, 0, -1) and np.ndim(values[0]) == 1:
        return [f"{target} = np.cumsum({operands[0]})"]
    if name == "flip":
        axes = range(len(shape)) if values[1] is None else np.atleast_1d(values[1]) % len(shape)
        index = tuple(slice(None, None, -1) if k in set(axes) else slice(None) for k in range(len(shape)))
        return [f"{target} = {operands[0]}[{_index_source(index)}]"]
    if name == "transpose" and not kwargs and (values[1] is None or [a % 2 for a in values[1]] == [1, 0]):
        # (2-D) numba types a C array's .T as F-contiguous, which BLAS takes as it is
        return [f"{target} = {operands[0]}.T"]
    if name == "transpose" and not kwargs:
        return [f"{target} = np.transpose({operands[0]}{'' if values[1] is None else ', ' + repr(tuple(values[1]))})"]
    raise Unsupported(f"the op {name}")


def _added_at(target: str, operand: str, index: tuple, shape: tuple, constant: Callable) -> list:
    """``np.add.at(zeros, index, operand)`` (a gather's cotangent) for an index of whole axes and one
    integer vector: its additions, in its order (repeated entries accumulate as there)."""
    at = [k for k, piece in enumerate(index) if isinstance(piece, np.ndarray)]
    if (len(at) != 1 or index[at[0]].ndim != 1 or index[at[0]].dtype.kind != "i"
            or any(piece != slice(None) for piece in index[:at[0]] + index[at[0] + 1:])):
        raise Unsupported("a scatter at an index other than whole axes and one integer vector")
    before = ":, " * at[0]
    return [f"{target} = np.zeros({shape!r}, np.float64)",
            f"for i in range({index[at[0]].size}):",
            f"    {target}[{before}{constant(index[at[0]])}[i]] += {operand}[{before}i]"]


def _numpy_loop(target: str, call: str, ndim: int) -> list:
    """``target = call`` run by NumPy (numba's object mode, ~1 us a call): on a large array, NumPy's
    SIMD loops of exp, tanh, ... run up to ten times faster than numba's call of the math library
    per element (its results are then the replay's bit for bit)."""
    layout = ", ".join([":"] * (ndim - 1) + ["::1"])
    call = call if ndim == 1 else f"np.ascontiguousarray({call})"  # (a ufunc keeps an F operand's order)
    return [f"with numba.objmode({target}='float64[{layout}]'):", f"    {target} = {call}"]


def _shaped(target: str, operand: str, value, shape: tuple, scalar: bool, name: str) -> str:
    """A reshape or broadcast to ``shape``: 0-d values are numba scalars."""
    if scalar:
        return f"{target} = {operand}" if _is_scalar(value) else f"{target} = np.ravel({operand})[0]"
    if _is_scalar(value):
        return f"{target} = np.full({shape!r}, {operand})"
    if name == "reshape":
        return f"{target} = np.ascontiguousarray({operand}).reshape({shape!r})"
    return f"{target} = np.ascontiguousarray(np.broadcast_to({operand}, {shape!r}))"


def _reduction(target: str, name: str, operand: str, axis, shape: tuple, scalar: bool) -> list:
    if axis is None or (type(axis) is tuple and len(shape) == 0):
        total = f"np.{name}({operand})"
    elif type(axis) is int or (type(axis) is tuple and len(axis) == 1):
        if name == "prod":
            raise Unsupported("prod along an axis")
        total = f"np.sum({operand}, axis={axis if type(axis) is int else axis[0]})"
    else:
        raise Unsupported(f"{name} over the axes {axis}")
    if scalar:
        return [f"{target} = {total}"]
    return [f"{target} = np.asarray({total}).reshape({shape!r})" if axis is not None
            else f"{target} = np.full({shape!r}, {total})"]


def _accumulated(target: str, name: str, operands: list, values: list) -> list:
    """The unrolled sums of slice cotangents (``lowering``), spelled for numba."""
    unroll = accumulate_lines if name == "accumulate" else accumulate_sliced_lines
    if any(v is not None and not isinstance(v, tuple) for v in values[2::2]):
        raise Unsupported("a sum of slices at an advanced index")
    spelled = {"np.zeros": "np.zeros"}

    def constant(value):
        if value is np.zeros:
            return spelled["np.zeros"]
        if isinstance(value, np.dtype):
            return "np.float64" if value == np.float64 else _raise(value)
        if type(value) is tuple and all(type(v) is int for v in value):
            return repr(value)
        return _index_source(value)
    return [line.strip() for line in unroll(target, operands[2:], values[2:], constant(values[0]),
                                            constant(values[1]), constant)]


def _raise(value):
    raise Unsupported(f"dtype {value}")
