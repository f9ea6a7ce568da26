"""Content keys: when two recordings are the same program.

Two recordings of a function (at two calls, say, with the same signature) make the same program
when they record the same ops, in the same order, on the same operands: each input-dependent
operand the same input or the same earlier result, each constant of the same type, shape and bytes.
What the function read from its surroundings (a global array, a closure's number, an argument held
fixed) is in its constants, so a changed global or an array changed in place changes the key.
``content_key`` is that key, or None where equal keys would not be enough: a guard (the program's
branches hold for some inputs only), a Variable (read afresh), an op whose derivative rules are
not the engine's own (a rule of the user's may read what the recording does not show), a
constant of a type with no content here, or constants above ``MAX_BYTES`` in all.

A caller that keeps the programs of a recording under its key must also check, when it meets the
key again, that the constants of that recording still hold their bytes (``unchanged``): a program
holds its constants by reference, and an array changed in place since would make it compute
something else than the new recording.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ..core import Tensor, Variable
from .tracing import Recording

MAX_BYTES = 1 << 20   # constants' bytes kept with a key at most (their copies are the key)


class _NoContent(Exception):
    """A value without a content key here."""


def content_key(recording: Recording) -> tuple | None:
    """``(key, constants)``: the content of ``recording`` as a hashable key, and its constant arrays
    as ``(array, bytes)`` pairs for ``unchanged``; None when equal keys would not make equal
    programs (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import content_key, trace
    >>> centre = np.array([1.0, 2.0])
    >>> f = lambda x: np.sum((x - centre) ** 2)
    >>> key, constants = content_key(trace(f, np.zeros(2)))
    >>> key == content_key(trace(f, np.array([5.0, 6.0])))[0]     # another point, the same program
    True
    >>> key == content_key(trace(lambda x: np.sum((x - 2.0 * centre) ** 2), np.zeros(2)))[0]
    False
    >>> content_key(trace(lambda x: x[0] if x[1] > 0 else x[1], np.ones(2))) is None   # a branch
    True
    """
    if recording.guards or any(isinstance(t, Variable) for t in recording.inputs):
        return None
    names = {t._id: ("input", k, t.shape, t.dtype.str) for k, t in enumerate(recording.inputs)}
    constants = _Constants()
    try:
        ops = tuple(_op_key(record, names, constants) for record in recording.records)
        outputs = tuple(_value_key(o, names, constants) for o in recording.outputs)
    except _NoContent:
        return None
    form = repr(recording.structure(list(range(len(recording.outputs)))))
    inputs = tuple((t.shape, t.dtype.str) for t in recording.inputs)
    return (inputs, ops, outputs, form), list(constants)


class _Constants(list):
    """The ``(array, bytes)`` pairs of a recording's constant arrays, refusing more than
    ``MAX_BYTES`` in all."""

    nbytes = 0

    def add(self, array: np.ndarray) -> bytes:
        self.nbytes += array.nbytes
        if self.nbytes > MAX_BYTES:
            raise _NoContent("constants above MAX_BYTES")
        data = array.tobytes()
        self.append((array, data))
        return data


def unchanged(constants: list) -> bool:
    """Whether each array of ``constants`` (``content_key``'s) still holds the bytes it had.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.jit import content_key, trace, unchanged
    >>> centre = np.array([1.0, 2.0])
    >>> _, constants = content_key(trace(lambda x: np.sum((x - centre) ** 2), np.zeros(2)))
    >>> unchanged(constants)
    True
    >>> centre[0] = 3.0
    >>> unchanged(constants)
    False
    """
    return all(array.tobytes() == data for array, data in constants)


def _op_key(record: tuple, names: dict, constants: _Constants) -> tuple:
    prim, args, raw, kwargs, out, parents = record
    if not (prim.engine or not (prim.vjps or prim.jvps)):   # a rule of the user's may read what we do not see
        raise _NoContent(prim.name)
    operands = tuple(_input_key(args[i], names) if i in parents else _value_key(raw[i], names, constants)
                     for i in range(len(args)))
    options = tuple(sorted((k, _value_key(v, names, constants)) for k, v in kwargs.items())) if kwargs else ()
    outs = out if type(out) is tuple else (out,)
    for k, o in enumerate(outs):
        names[o._id] = ("result", len(names), k, o.shape, o.dtype.str)
    return prim.tensor_fun, prim.name, operands, options, type(out) is tuple


def _input_key(tensor, names: dict) -> tuple:
    """An operand computed from the inputs: the input, or the earlier result, it is."""
    name = names.get(tensor._id)
    if name is None:   # (a late input of a split, say: not an input of the recording)
        raise _NoContent("an operand that is neither an input nor an earlier result")
    return name


def _value_key(value, names: dict, constants: _Constants) -> Hashable:
    """An operand's key: an earlier value by position, a constant by content."""
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind is int or kind is bool or kind is str or value is None or value is Ellipsis or kind is np.dtype:
        return (kind, value)
    if isinstance(value, Tensor):
        name = names.get(value._id)
        return name if name is not None else _value_key(value._value, names, constants)
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.hasobject:
            raise _NoContent("object array")
        data = constants.add(value) if isinstance(value, np.ndarray) else value.tobytes()
        return (kind, value.dtype.str, value.shape, data)
    if kind is complex:
        return (complex, value.real.hex(), value.imag.hex())
    if kind is slice:
        return (slice,) + tuple(_value_key(v, names, constants) for v in (value.start, value.stop, value.step))
    if kind is tuple or kind is list:
        return (kind,) + tuple(_value_key(v, names, constants) for v in value)
    if isinstance(value, type):
        return (type, value)
    raise _NoContent(kind.__name__)
