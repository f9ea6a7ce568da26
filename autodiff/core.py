"""The engine's heart: Tensor, Variable, primitives, and the record/sweep loop.

A primitive is a NumPy function plus derivative rules. Calling it on plain arrays is the NumPy call;
calling it on Tensors wraps the result and appends one record to every active tape that watches an
input. A tape is a list of records in execution order, so its reverse is a topological order and the
backward sweep is a plain loop. Rules are written with the engine's own ops: run on Tensors while an
outer tape records, they are themselves recorded, which gives higher derivatives for free; run on raw
ndarrays, they are as cheap as NumPy.
"""
from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # autodiff.typing imports this module, so here its ArrayLike and DTypeLike are spelled out
    import numpy.typing as npt

_next_id = itertools.count().__next__


class _State(threading.local):
    """Per-thread engine state: the recording tapes, the active forward accumulators, and the
    observers (the traces of ``autodiff.jit`` in progress).

    An observer sees the engine run without taking part in differentiation: pausing does not
    pause it, and it does not count as tracking a Tensor. It has three methods:

    - ``record(prim, args, raw, kwargs, out, parents)``: every op on Tensors (the record format of
      ``GradientTape.record``), and every op with no derivative that a rule or ``nondiff`` applies
      to Tensors (so that a replay recomputes a mask);
    - ``read(tensor, how)``: a Tensor's value was read to compute with outside the engine (``how``:
      "bool", "numpy", "item", "float", "int", "value", ...);
    - ``raw_sweep(active)``: a reverse sweep that eager code runs on raw arrays (no tape records it)
      starts (True) or ends (False); it runs on Tensors here so that the observer sees its ops.
    """

    def __init__(self):
        self.tapes = []
        self.accumulators = []
        self.observers = []


state = _State()


class paused:
    """Context manager: inside it, the given tapes and forward accumulators record nothing.

    ``tapes`` and ``accumulators`` are each True (every active one), False (none), or a collection
    of the ones to pause. On exit the active ones are those of the entry again, in their order.
    """

    __slots__ = ("tapes", "accumulators", "_active")

    def __init__(self, tapes: bool | Iterable[Any] = True, accumulators: bool | Iterable[Any] = True):
        self.tapes, self.accumulators = tapes, accumulators

    def __enter__(self) -> None:
        self._active = tapes, accumulators = state.tapes, state.accumulators
        if self.tapes is not False:
            state.tapes = _without(tapes, self.tapes)
        if self.accumulators is not False:
            state.accumulators = _without(accumulators, self.accumulators)

    def __exit__(self, exc_type, exc, traceback) -> bool:
        state.tapes, state.accumulators = self._active
        return False


def _without(active: list, which) -> list:
    """A new list of the recorders of ``active`` that ``which`` (True: all) does not pause."""
    if which is True:
        return []
    kept = active[:]
    for recorder in which:
        if recorder in kept:
            kept.remove(recorder)
    return kept


class Tensor:
    """An immutable array value that tapes can record. ``.numpy()`` gives the ndarray.

    Tensors behave like read-only ndarrays: arithmetic, ``@``, indexing, the common ndarray methods,
    and NumPy functions (``np.sin(t)``) return Tensors, so a tape watching the inputs records every
    step. Make one with :func:`constant`; mutable model state is a :class:`Variable`.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> t = ad.constant([1.0, 2.0])
    >>> np.sin(t * 2).round(3)
    Tensor(array([ 0.909, -0.757]))
    >>> t.numpy(), t.shape
    (array([1., 2.]), (2,))
    """

    __slots__ = ("_value", "_id", "__weakref__")
    __array_priority__ = 100.0
    __hash__ = object.__hash__

    def __init__(self, value: np.ndarray | np.generic):
        self._value = value
        self._id = _next_id()

    # --- the value -------------------------------------------------------------------------------
    # ``numpy()`` and ``item()`` leave the engine by name. The implicit conversions (``__array__``,
    # ``__float__``, ...), which NumPy also makes when it stores a Tensor into an ndarray, refuse a
    # Tensor that is being differentiated: its gradient would be lost without a word.
    def numpy(self) -> np.ndarray:
        """The value as an ndarray: leaves the engine on purpose (no gradient flows through it)."""
        if state.observers:
            note_read(self, "numpy")
        return np.asarray(self._value)

    def __array__(self, dtype=None, copy=None):
        _check_untracked(self, "np.asarray")
        value = np.asarray(self._value)
        return value if dtype is None else value.astype(dtype, copy=False)

    # Values are always NumPy arrays or NumPy scalars, which have these attributes.
    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)

    def item(self) -> Any:
        if state.observers:
            note_read(self, "item")
        return np.asarray(self._value).item()

    def __float__(self):
        _check_untracked(self, "float")
        return float(self._value)

    def __int__(self):
        _check_untracked(self, "int")
        return int(self._value)

    def __complex__(self):
        _check_untracked(self, "complex")
        return complex(self._value)

    def __index__(self):
        _check_untracked(self, "operator.index")
        return np.asarray(self._value).__index__()

    def __bool__(self):  # control flow on a value (``if x > 0``) is fine: a branch has no gradient
        if state.observers:  # but a trace must check the branch when it replays (autodiff.jit)
            note_read(self, "bool")
        return bool(self._value)

    def __len__(self):
        return len(self._value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return f"{type(self).__name__}({np.asarray(self._value)!r})".replace("\n", "\n" + " " * 7)

    def __reduce__(self):
        return (constant, (np.asarray(self._value),))

    def __copy__(self):  # a copy is a new, untracked Tensor (scipy.integrate.odeint copies y0 first)
        _check_untracked(self, "copy.copy")
        return constant(self._value)


class Variable(Tensor):
    """A mutable Tensor holding model state. Trainable ones are watched when a tape reads them.

    As ``tf.Variable``: ``assign``, ``assign_add`` and ``assign_sub`` change the value in place
    (optimizers update parameters this way), and a recording tape watches a trainable Variable the
    moment it is read, so no ``tape.watch`` is needed.

    Parameters
    ----------
    value : array_like
        The initial value; integers become float64, other float types are kept.
    trainable : bool, default True
        Whether tapes watch it automatically (``watch_accessed_variables``).
    name : str, optional
        A label shown in its repr.
    dtype : dtype, optional
        The dtype of the value.

    Examples
    --------
    >>> import autodiff as ad
    >>> w = ad.Variable([1.0, 2.0], name="w")
    >>> with ad.GradientTape() as tape:
    ...     loss = (w ** 2).sum()
    >>> w.assign_sub(0.1 * tape.gradient(loss, w))
    Variable(array([0.8, 1.6]), name='w', trainable=True)
    """

    __slots__ = ("trainable", "name")

    def __init__(self, value: Tensor | npt.ArrayLike, trainable: bool = True, name: str | None = None,
                 dtype: npt.DTypeLike | None = None):
        super().__init__(_as_float_array(value, dtype))
        self.trainable = bool(trainable)
        self.name = name

    def assign(self, value: Any) -> Variable:
        """Replace the value (same shape; cast to this Variable's dtype). Returns the Variable."""
        value = np.asarray(value._value if isinstance(value, Tensor) else value,
                           dtype=self._value.dtype)
        if value.shape != self._value.shape:
            raise ValueError(f"cannot assign a value of shape {value.shape} to a Variable of shape "
                             f"{self._value.shape}")
        self._value = value.copy()
        return self

    def assign_add(self, delta: Any) -> Variable:
        """Add ``delta`` to the value in place. Returns the Variable."""
        return self.assign(self._value + np.asarray(getattr(delta, "_value", delta)))

    def assign_sub(self, delta: Any) -> Variable:
        """Subtract ``delta`` from the value in place. Returns the Variable."""
        return self.assign(self._value - np.asarray(getattr(delta, "_value", delta)))

    def __repr__(self):
        name = f", name={self.name!r}" if self.name else ""
        return f"Variable({np.asarray(self._value)!r}{name}, trainable={self.trainable})"

    def __reduce__(self):
        return (Variable, (self._value, self.trainable, self.name))


def trackers(t: Tensor) -> list:
    """The recording tapes that watch ``t`` and the active accumulators that carry its tangent."""
    return [tape for tape in state.tapes if tape.watches(t)] + \
        [accumulator for accumulator in state.accumulators if accumulator.watches((t,))]


def tracked(t: Tensor) -> bool:
    """Whether an active tape or accumulator tracks ``t`` (see ``trackers``); a trainable Variable
    also counts while a recording tape watches the variables it reads."""
    if isinstance(t, Variable) and t.trainable and any(tape.watches_reads for tape in state.tapes):
        return True
    return bool(trackers(t))


def _check_untracked(t: Tensor, conversion: str) -> None:
    """Refuse to turn a tracked Tensor into a plain value implicitly (as JAX and PyTorch refuse).

    Observers (traces) are told of the read instead: they decide themselves (a trace refuses a
    float read)."""
    if (state.tapes or state.accumulators) and tracked(t):
        raise TypeError(
            f"autodiff: {conversion}() would turn a Tensor that a GradientTape or ForwardAccumulator "
            "is tracking into a plain value, losing its gradient without a word. NumPy does this too "
            "when it stores a Tensor into an array (r[i] = t, np.array([t0, t1]), np.sum([t0, t1])). "
            "To build an array from Tensors and keep the gradient, use np.stack([...]), "
            "np.concatenate or autodiff.numpy.array([...]); to leave the engine on purpose, use "
            "t.numpy() (or t.item()) for the value, or autodiff.stop_gradient(t)."
            + _converting_scipy_function())
    if state.observers:
        note_read(t, conversion)


def _converting_scipy_function() -> str:
    """A sentence naming the scipy function that made the conversion (scipy's Python functions turn
    their inputs into ndarrays), and its differentiable version when autodiff has one; else ''."""
    frame, entry = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            entry = frame
        elif entry is not None:
            break
        frame = frame.f_back
    if entry is None:
        return ""
    wrapped = entry.f_locals.get("f") if "f" in entry.f_code.co_freevars else None
    if callable(wrapped):  # a decorator's wrapper (scipy.linalg's batching): name the function it wraps
        module, name = wrapped.__module__, wrapped.__name__
    else:
        module, name = entry.f_globals["__name__"], entry.f_code.co_name
    module = ".".join(p for p in module.split(".") if not p.startswith("_"))
    if module == "scipy.stats":  # a distribution's method: name it by its distribution
        distribution = entry.f_locals.get("self")
        distribution = getattr(distribution, "dist", distribution)  # a frozen one
        name = f"{getattr(distribution, 'name', type(distribution).__name__.removesuffix('_gen'))}.{name}"
    ours = _DIFFERENTIABLE_SCIPY.get(module)
    ours_module = sys.modules.get(f"{__package__}.numpy.{ours}") if ours else None  # loaded with autodiff
    ours = f"autodiff.numpy.{ours}.{name}" if ours_module is not None and _has_path(ours_module, name) else None
    return (f" Here {module}.{name} converted it: scipy's Python functions turn their inputs into "
            "ndarrays, so no autodiff engine can see through them; "
            + (f"{ours} is its differentiable version." if ours else
               "write that step with NumPy operations on the Tensor."))


# scipy's modules with differentiable versions in autodiff.numpy, and their names there (scipy.linalg's
# cannot be autodiff.numpy.linalg, which is numpy.linalg).
_DIFFERENTIABLE_SCIPY = {"scipy.special": "special", "scipy.stats": "stats", "scipy.linalg": "scipy_linalg",
                         "scipy.signal": "scipy_signal", "scipy.integrate": "scipy_integrate"}


def _has_path(module, dotted: str) -> bool:
    """Whether ``module.a.b`` exists for ``dotted`` = "a.b", with a in the module's ``__all__``."""
    first, *rest = dotted.split(".")
    value = module if first in module.__all__ else None
    for part in [first] + rest:
        if value is None or part.startswith("_") or not hasattr(value, part):
            return False
        value = getattr(value, part)
    return True


def _as_float_array(value, dtype=None) -> np.ndarray:
    """float64 unless told otherwise; float32 (and other float types) are preserved."""
    if isinstance(value, Tensor):
        value = value._value
    value = np.asarray(value, dtype=dtype)
    if dtype is None and value.dtype.kind in "biu":
        value = value.astype(np.float64)
    if value.dtype == object:
        raise TypeError("cannot make a Tensor from an object array")
    return value


def constant(value: Tensor | npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> Tensor:
    """A Tensor that no tape watches unless told to (float64 by default).

    Parameters
    ----------
    value : array_like
        The value; integers become float64, other float types (float32, ...) are kept.
    dtype : dtype, optional
        The dtype of the value.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import autodiff as ad
    >>> ad.constant([1, 2])
    Tensor(array([1., 2.]))
    >>> ad.constant(1.5, dtype="float32").dtype
    dtype('float32')
    """
    return Tensor(_as_float_array(value, dtype))


def value_of(x: Any) -> Any:
    """The raw ndarray behind a Tensor; anything else unchanged."""
    return x._value if isinstance(x, Tensor) else x


def concrete(x: Any) -> Any:
    """The raw value of ``x`` read to compute with outside the engine (a mask, an index, a branch).

    Unlike ``value_of`` (for shapes and dtypes), the read is reported to the observers (the traces
    of ``autodiff.jit`` in progress): a replay must check it (or the trace refuses).
    """
    if isinstance(x, Tensor):
        if state.observers:
            note_read(x, "value")
        return x._value
    return x


def note_read(t: Tensor, how: str) -> None:
    """Tell each observer that ``t``'s value was read (``how``: "bool", "numpy", ...)."""
    for observer in state.observers:
        observer.read(t, how)


def record_constant(fun: Callable, args: tuple, kwargs: dict, out: Tensor) -> None:
    """Show the observers ``out = fun(*values of args, **kwargs)``, an op with no derivative (only
    them: no gradient flows through it), so that a replay recomputes it."""
    parents = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    prim = Primitive(fun, getattr(fun, "__name__", "nondiff"))
    raw = [value_of(a) for a in args]
    for observer in state.observers:
        observer.record(prim, args, raw, kwargs, out, parents)


def shape_of(x: Tensor | npt.ArrayLike) -> tuple[int, ...]:
    """The shape of a Tensor, array, NumPy scalar or Python value (a list may hold Tensors), without
    NumPy's dispatch."""
    x = value_of(x)
    return x.shape if isinstance(x, (np.ndarray, np.generic)) else np.shape(_values_in(x))


def ndim_of(x: Tensor | npt.ArrayLike) -> int:
    """The number of axes of a Tensor, array, NumPy scalar or Python value, without NumPy's dispatch."""
    x = value_of(x)
    return x.ndim if isinstance(x, (np.ndarray, np.generic)) else np.ndim(_values_in(x))


def dtype_of(x: Tensor | npt.ArrayLike) -> np.dtype:
    """The dtype of a Tensor, array, NumPy scalar or Python value, without NumPy's dispatch."""
    x = value_of(x)
    return x.dtype if isinstance(x, (np.ndarray, np.generic)) else np.asarray(_values_in(x)).dtype


def _values_in(x):
    """A (nested) list or tuple with each Tensor replaced by its value: for shapes and dtypes only."""
    return type(x)(_values_in(v) for v in x) if isinstance(x, (list, tuple)) else value_of(x)


_SEQUENCES = (list, tuple)


def list_operand(a: list | tuple) -> Tensor | np.ndarray:
    """A list (or tuple) in an operand's place: an ndarray, or the Tensors it holds stacked (differentiably)."""
    if not holds_tensor(a):
        return np.asarray(a)
    return sys.modules[f"{__package__}.numpy"].array(a)  # loaded with autodiff (no import cycle)


def holds_tensor(obj: Iterable) -> bool:
    """Whether a list or tuple holds a Tensor, at any depth."""
    return any(isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and holds_tensor(x)) for x in obj)


class Primitive:
    """A NumPy function the engine can differentiate.

    ``vjps[i](g, ans, *args, **kwargs)`` maps the output cotangent ``g`` (with any number of leading
    batch axes) to the cotangent of argument ``i``; ``jvps[i](t, ans, *args, **kwargs)`` maps a tangent
    of argument ``i`` to the output tangent. ``tensor_fun``, used when a Tensor is among the
    arguments (so NumPy semantics are guaranteed), may be a faster spelling such as ``operator.mul``,
    which skips the ufunc machinery on scalars.
    """

    def __init__(self, fun: Callable, name: str | None = None, tensor_fun: Callable | None = None):
        self.fun = fun
        self.tensor_fun = tensor_fun or fun  # may assume NumPy-typed values (e.g. operator.mul)
        self.name = name or fun.__name__
        self.vjps = _Rules(self.name, "derivative")
        self.jvps = _Rules(self.name, "forward-mode (JVP)")
        self.variadic = False  # one rule for every argument, called with argnum=i
        self.joint = False     # backward() computes all cotangents at once (variadic, custom nodes)
        self.complex_ok = False  # rules verified for complex values (JAX's convention); else refused
        self.engine = False      # made by autodiff's own modules (extend.primitive): its rules read nothing else

    def __repr__(self):
        return f"<primitive {self.name}>"

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):  # most elementwise calls
            return apply_unary(self, args[0])
        for k, a in enumerate(args):
            if isinstance(a, Tensor) or (type(a) in _SEQUENCES and (self.variadic or k in self.vjps)
                                         and holds_tensor(a)):
                return apply(self, args, kwargs)
        return self.fun(*args, **kwargs)  # plain NumPy, as rules run in raw sweeps

    def backward(self, g: Any, ans: Any, args: Any, kwargs: dict, parents: tuple) -> list:
        """The cotangents of the Tensor arguments ``parents``, given the output cotangent ``g``."""
        if self.variadic:
            return [self.vjps[0](g, ans, *args, argnum=i, **kwargs) for i in parents]
        return [self.vjps[i](g, ans, *args, **kwargs) for i in parents]

    def forward(self, tangents: dict, ans: Any, args: Any, kwargs: dict) -> Any:
        """The output tangent, given ``{argnum: tangent}`` for the arguments that have one."""
        if not self.complex_ok:
            refuse_complex(self, [value_of(a) for a in args], ans)
        total = None
        for i, t in tangents.items():
            ti = self.jvps[0](t, ans, *args, argnum=i, **kwargs) if self.variadic \
                else self.jvps[i](t, ans, *args, **kwargs)
            total = ti if total is None else total + ti
        return total


_FIRST, _SECOND, _BOTH = (0,), (1,), (0, 1)  # the parents of one- and two-argument records
_NO_KWARGS: dict = {}


def apply(prim: Primitive, args: tuple, kwargs: dict = _NO_KWARGS) -> Any:
    """Run ``prim`` on ``args``: plain NumPy when no Tensor is among them, else a recorded Tensor.

    A module-level function, so Tensor operators call it without going through ``__call__``. A list
    in an operand's place (one with a rule) becomes an ndarray here, once for every rule, or a
    stacked Tensor if it holds Tensors (``anp.mean([t0, t1])``). (Tuples are left alone: they are the
    index, shape and axes arguments of the hot ops, and checking their places would cost every
    getitem; operators convert both, see ``apply_binary``.)
    """
    parents, raw = [], []
    operands = None  # args with lists converted, when there are any
    for a in args:
        if type(a) in _SEQUENCES and (prim.variadic or len(raw) in prim.vjps) and \
                (type(a) is list or holds_tensor(a)):  # a tuple operand holding no Tensor is left alone
            operands = operands or list(args)
            a = operands[len(raw)] = list_operand(a)
        if isinstance(a, Tensor):
            parents.append(len(raw))
            raw.append(a._value)
        else:
            raw.append(a)
    if operands is not None:
        args = tuple(operands)
    if not parents:
        return prim.fun(*args, **kwargs)
    value = prim.tensor_fun(*raw, **kwargs) if kwargs else prim.tensor_fun(*raw)
    return _output(prim, args, raw, kwargs, parents, value)


def apply_unary(prim: Primitive, x: Tensor) -> Tensor:
    """``apply(prim, (x,), {})`` for a Tensor ``x``, without the loop."""
    raw = (x._value,)
    return _output(prim, (x,), raw, _NO_KWARGS, _FIRST, prim.tensor_fun(*raw))


def apply_binary(prim: Primitive, x: Any, y: Any) -> Tensor:
    """``apply(prim, (x, y), {})`` for Tensor operators (one of x, y is a Tensor), without the loop.

    Both arguments are operands: a list or tuple becomes an ndarray (as in ``apply``)."""
    if isinstance(x, Tensor):
        if isinstance(y, Tensor):
            raw, parents = (x._value, y._value), _BOTH
        else:
            if type(y) is list or type(y) is tuple:
                return apply_binary(prim, x, list_operand(list(y)))
            raw, parents = (x._value, y), _FIRST
    else:
        if type(x) is list or type(x) is tuple:
            return apply_binary(prim, list_operand(list(x)), y)
        raw, parents = (x, y._value), _SECOND
    return _output(prim, (x, y), raw, _NO_KWARGS, parents, prim.tensor_fun(*raw))


def _output(prim, args, raw, kwargs, parents, value):
    """Wrap an op's result in a Tensor and record it on the active tapes and accumulators."""
    if type(value) is np.ndarray:
        if value.dtype.hasobject:
            raise TypeError(f"autodiff: {prim.name} produced an object array (an operand holds Python "
                            "objects); use numeric arrays")
    elif type(value) is complex:  # Python's complex * np.float64 is a Python complex: keep NumPy types
        value = np.complex128(value)
    out = Tensor(value)
    for tape in state.tapes:  # as ``record``, inline: this runs for every op
        tape.record(prim, args, raw, kwargs, out, parents)
    if state.observers:
        for observer in state.observers:
            observer.record(prim, args, raw, kwargs, out, parents)
    if state.accumulators:
        for accumulator in state.accumulators:
            accumulator.push(prim, args, kwargs, out, parents)
    return out


class _Rules(dict):
    """Rules by argument number; a missing one raises (naming the op) when it is needed.
    ``reads_cache`` keeps what the rules read (:func:`autodiff.residuals.rules_read`), until a rule
    changes."""

    def __init__(self, op_name: str, kind: str):
        super().__init__()
        self.op_name, self.kind = op_name, kind
        self.reads_cache: dict = {}

    def __missing__(self, i):
        def missing(*args, **kwargs):
            raise TypeError(f"autodiff: {self.op_name} has no {self.kind} rule for argument {i}")
        return missing

    def __setitem__(self, i, rule) -> None:
        super().__setitem__(i, rule)
        self.reads_cache = {}


def record(prim: Primitive, args: tuple, raw: list, kwargs: dict, out: Any, parents: tuple) -> None:
    """Show an op to the recording tapes (each keeps it if it watches an input, see
    ``GradientTape.record``) and to the observers."""
    for tape in state.tapes:
        tape.record(prim, args, raw, kwargs, out, parents)
    for observer in state.observers:
        observer.record(prim, args, raw, kwargs, out, parents)


def refuse_complex(prim: Primitive, raw: Sequence[Any], out: Any) -> None:
    """Raise if an op whose rules are not verified for complex numbers meets a complex operand or
    result while it is being differentiated (its derivative would be silently wrong)."""
    values = list(raw) + (list(out) if type(out) is tuple else [out])
    if any(_np_kind(value_of(v)) == "c" for v in values):
        raise TypeError(f"autodiff: {prim.name} does not differentiate complex numbers (its derivative "
                        "rule is verified for real values only); differentiate its real and imaginary "
                        "parts (np.real, np.imag) separately, or use real arithmetic")


def _np_kind(value) -> str:
    dtype = getattr(value, "dtype", None)
    return dtype.kind if dtype is not None else "c" if isinstance(value, complex) else "f"


def sweep(records: Sequence[tuple], seeds: dict, keep: set, use_tensors: bool) -> dict:
    """Reverse-mode sweep over ``records`` from ``seeds`` ({tensor id: cotangent}).

    Returns the cotangents of the ids in ``keep``; others are freed as soon as the sweep passes their
    record. With ``use_tensors`` the rules run on Tensors (so outer tapes record them), otherwise on
    raw ndarrays.
    """
    grads = dict(seeds)
    for prim, args, raw, kwargs, out, parents in reversed(records):
        if type(out) is tuple:
            g = _output_cotangents(grads, out, keep)
            ans = out if use_tensors else tuple(o._value for o in out)
        else:
            g = grads.get(out._id) if out._id in keep else grads.pop(out._id, None)
            ans = out if use_tensors else out._value
        if g is None:
            continue
        if type(g) is SlicedCotangent:
            g = g.dense()
        values = _as_recorded(args, raw, parents) if use_tensors else raw
        if prim.joint:
            cotangents = prim.backward(g, ans, values, kwargs, parents)
        elif kwargs:
            cotangents = [prim.vjps[i](g, ans, *values, **kwargs) for i in parents]
        elif len(parents) == 1:  # the common case, without a comprehension
            cotangents = (prim.vjps[parents[0]](g, ans, *values),)
        else:
            cotangents = [prim.vjps[i](g, ans, *values) for i in parents]
        if (out._value if type(out) is not tuple else out[0]._value).dtype.kind == "c":
            cotangents = _real_for_real_inputs(cotangents, raw, parents)
        for i, gi in zip(parents, cotangents):
            if gi is not None:  # None: no contribution
                key = args[i]._id
                prev = grads.get(key)
                grads[key] = gi if prev is None else prev + gi
    return {k: _dense(grads[k]) for k in keep if k in grads}


def _real_for_real_inputs(cotangents, raw, parents):
    """A complex op's cotangents, the real part for each real input: under JAX's convention (a VJP is
    the transpose for the pairing Re(sum(a * b))) a real input's cotangent is the real part."""
    return [gi.real if gi is not None and type(gi) is not SlicedCotangent and _np_kind(gi) == "c"
            and _np_kind(raw[i]) != "c" else gi for i, gi in zip(parents, cotangents)]


def add_piece(pieces: list, index: tuple, piece: np.ndarray) -> None:
    """Add ``piece`` at ``index`` to a list of ``(index, piece)`` pairs: into the piece already at that
    index (existing + new), else as a new pair. Replays sum slice cotangents with it too, bit for bit."""
    for k, (known, total) in enumerate(pieces):
        if known == index:
            pieces[k] = (index, total + piece)
            return
    pieces.append((index, piece))


class SlicedCotangent:
    """A cotangent that is zero outside some basic-index slices, like TensorFlow's IndexedSlices.

    Reads such as ``x[::2]`` and ``x[1::2]`` would each scatter into a full-size array of zeros that
    the sweep then adds up; kept as ``(index, piece)`` pairs instead, they share one buffer, written
    once when a rule needs the dense cotangent. Only unbatched ndarray cotangents become them (in a
    sweep that outer tapes record, an ndarray cotangent is a constant to them).
    """

    __slots__ = ("shape", "pieces")
    __array_ufunc__ = None  # ndarray + SlicedCotangent defers to __radd__

    def __init__(self, shape: tuple, pieces: list):
        self.shape, self.pieces = shape, pieces

    def __add__(self, other):
        if type(other) is not SlicedCotangent:
            return self.dense(other)
        pieces = list(self.pieces)
        for index, piece in other.pieces:
            add_piece(pieces, index, piece)
        return SlicedCotangent(self.shape, pieces)

    __radd__ = __add__

    def dense(self, base: Any = None) -> Any:
        """The pieces added into zeros, or into ``base``.

        A Tensor base (a cotangent an outer tape records) gets the pieces, which are constants to
        that tape, added by a recorded op; an ndarray base is copied and added into in place.
        """
        if base is not None and type(base) is not np.ndarray:
            return base + self.dense()
        pieces = iter(self.pieces)
        if base is None:
            index, piece = next(pieces)
            out = np.zeros(self.shape, piece.dtype)
            out[index] = piece
        else:
            out = base.copy()
        for index, piece in pieces:
            out[index] += piece
        return out


def _dense(g):
    return g.dense() if type(g) is SlicedCotangent else g


def _as_recorded(args, raw, parents):
    """A record's Tensor arguments, with each Variable assigned since the op read it replaced by a read
    of the value it had then (as TensorFlow reads a snapshot): rules must see the recorded values."""
    for i in parents:   # (for every record of a sweep on Tensors: a loop, no generator)
        if args[i]._value is not raw[i]:
            break
    else:
        return args
    values = list(args)
    for i in parents:
        if args[i]._value is not raw[i]:
            values[i] = snapshot_read(args[i], raw[i])
    return values


snapshot_read = Primitive(lambda variable, value: value, "read")
snapshot_read.vjps[0] = lambda g, ans, variable, value: g
snapshot_read.jvps[0] = lambda t, ans, variable, value: t


def _output_cotangents(grads, outputs, keep):
    """Cotangents of a multi-output record (zeros where an output has none), or None if it has none."""
    gs = [_dense(grads.get(o._id) if o._id in keep else grads.pop(o._id, None)) for o in outputs]
    if all(g is None for g in gs):
        return None
    i, some = next((i, g) for i, g in enumerate(gs) if g is not None)
    batch = some.shape[:some.ndim - outputs[i].ndim]
    return tuple(g if g is not None else np.zeros(batch + o.shape, o.dtype)
                 for g, o in zip(gs, outputs))
