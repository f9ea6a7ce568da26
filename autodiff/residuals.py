"""What a record keeps: the values its rules read, and stand-ins for the rest (residual memory).

A record holds the values its rules may read; an array they never read (only its shape and dtype)
is kept as a stand-in (:func:`stand_in`), so that a tape (or a trace) holds what its sweep needs
and not every intermediate array of the computation it watched (z = x @ W feeds z + b, whose rules
read neither). Which values a rule reads is found once, in its code (:func:`values_read`: the
parameters it loads other than for ``.shape``, ``.ndim``, ``.dtype`` or ``.size``), and joined over
the rules of a record's tracked arguments (:func:`rules_read`); :func:`kept_values` makes the
record's arguments and output with the stand-ins. ``GradientTape.record`` and the tracer use it;
``autodiff.core`` knows nothing of it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import Tensor, Variable

STAND_IN_BYTES = 1 << 14   # smaller arrays are kept as they are: a stand-in would not save memory


def stand_in(t: Tensor) -> Tensor:
    """A Tensor with t's identity, shape and dtype whose value holds no memory (a zero broadcast to
    t's shape), for a floating-point array of at least ``STAND_IN_BYTES``; else t itself.

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.core import Tensor
    >>> from autodiff.residuals import stand_in
    >>> t = Tensor(np.ones((100, 100)))
    >>> s = stand_in(t)
    >>> s._id == t._id, s.shape, s.dtype, s._value.strides
    (True, (100, 100), dtype('float64'), (0, 0))
    """
    value = t._value
    if type(value) is not np.ndarray or value.dtype.kind not in "fc" or value.nbytes < STAND_IN_BYTES \
            or isinstance(t, Variable):
        return t
    shadow = Tensor.__new__(Tensor)
    shadow._value = np.broadcast_to(np.zeros((), value.dtype), value.shape)
    shadow._id = t._id
    return shadow


def values_read(rule: Any, skip: int = 1) -> frozenset | None:
    """Which values a VJP rule ``rule(g, ans, *args)`` reads: -1 for ans, k for argument k (found in
    its code); None when that cannot be told (not a Python function, or ``*args``).

    ``skip`` is the number of parameters before ``ans``. A rule made by a wrapper of another
    function (``defderiv``, ``broadcasting=True``) names it as ``rule.reads_of = (inner, skip)``:
    the wrapper itself reads only shapes.

    Examples
    --------
    >>> from autodiff.residuals import values_read
    >>> sorted(values_read(lambda g, ans, x, y: g * y)), sorted(values_read(lambda g, ans, x: g * ans))
    ([1], [-1])
    """
    if rule is None:
        return None
    inner = getattr(rule, "reads_of", None)
    if inner is not None:
        return values_read(*inner)
    found = _READS.get(rule)
    if found is None and rule not in _READS:
        found = _READS[rule] = _code_reads(rule, skip)
    return found


_READS: dict = {}


_METADATA_ATTRIBUTES = {"shape", "ndim", "dtype", "size"}


def _code_reads(rule: Any, skip: int) -> frozenset | None:
    """The parameters after ``skip`` that the code of ``rule`` loads other than to read one of
    their metadata attributes (``x.shape``), as positions (ans -1, then 0, 1, ...)."""
    import dis
    code = getattr(rule, "__code__", None)
    if code is None or code.co_flags & 0x04:   # no Python code, or *args
        return None
    params = code.co_varnames[skip:code.co_argcount]
    instructions = list(dis.get_instructions(code))
    loaded = set()
    for k, instruction in enumerate(instructions):
        if instruction.opname.startswith("LOAD_"):
            value = instruction.argval
            names = value if type(value) is tuple else (value,)
            following = instructions[k + 1] if k + 1 < len(instructions) else None
            if (len(names) == 1 and following is not None and following.opname == "LOAD_ATTR"
                    and following.argval in _METADATA_ATTRIBUTES):
                continue   # x.shape: the stand-in has it
            loaded.update(names)
    return frozenset(k - 1 for k, name in enumerate(params) if name in loaded)


def kept_values(args: tuple, raw: list, out: Any, reads: frozenset) -> tuple:
    """A record's ``(args, raw, out)`` with stand-ins (:func:`stand_in`) for the arrays its rules
    do not read (``reads``: -1 for out, k for argument k)."""
    if -1 not in reads and type(out) is not tuple:
        out = stand_in(out)
    new_args = None
    for k, a in enumerate(args):
        if k in reads or not isinstance(a, Tensor):
            continue
        shadow = stand_in(a)
        if shadow is not a:
            if new_args is None:
                new_args, raw = list(args), list(raw)
            new_args[k], raw[k] = shadow, shadow._value
    return (args if new_args is None else tuple(new_args)), raw, out


def rules_read(rules: dict, parents: tuple) -> frozenset | None:
    """The values the rules of ``parents`` (a Primitive's ``vjps``) read (:func:`values_read`,
    joined; -1 for the output, k for argument k); None: all. Kept in ``rules.reads_cache``.

    Examples
    --------
    >>> from autodiff.extend import defvjp, primitive
    >>> from autodiff.residuals import rules_read
    >>> scale = primitive(lambda x, a: x * a, "scale_for_rules_read")
    >>> defvjp(scale, lambda g, ans, x, a: g * a, lambda g, ans, x, a: g * x)
    >>> sorted(rules_read(scale.vjps, (0,))), sorted(rules_read(scale.vjps, (0, 1)))
    ([1], [0, 1])
    """
    if type(parents) is not tuple:
        parents = tuple(parents)
    reads = rules.reads_cache.get(parents, False)
    if reads is False:
        found: set | None = set()
        for i in parents:
            one = values_read(dict.get(rules, i))
            if one is None:
                found = None
                break
            found |= one
        reads = rules.reads_cache[parents] = None if found is None else frozenset(found)
    return reads
