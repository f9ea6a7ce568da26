"""Lowering: each op of a program written as Python source that makes fewer Python-level steps,
with the same NumPy operations on the same operands (results bit for bit).

``Program`` writes an op as a call of its primitive's function (``c3(t1, t2)``). Here:

- operators are written as operators (``(t1 * t2)``: no call of ``operator.mul``), a reshape as the
  method call, a concatenation as NumPy's own (no wrapper);
- the sums of slice cotangents (``program._accumulate``, ``_accumulate_sliced``), the scatter of
  a basic-index read's cotangent and a small broadcast are unrolled at generation time, where their
  indices and shapes are known: the writes into one buffer that the functions make, without their
  loops and tests;
- ``fused`` inlines a value that one later line reads into that line: a chain of elementwise ops
  becomes one expression (no name stored, loaded and deleted per op). Independent ops may then run
  in another order; each still computes the same bits from the same operands (ops are pure).
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
import re
from collections import Counter
from collections.abc import Callable

import numpy as np

from .. import numpy as anp
from ..core import Primitive

_INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.pow: "**",
          operator.matmul: "@", operator.floordiv: "//", operator.mod: "%"}
_RESHAPE = anp.ops._reshape.tensor_fun
MAX_DEPTH = 12  # ops nested into one expression at most (Python's parser caps the nesting)


def lowered(prim: Primitive, operands: list, values: list, kwargs: dict, targets: list,
            constant: Callable) -> list | None:
    """The lines computing ``targets`` from ``operands`` (source names or constants' source; the
    traced ``values``), or None when the op has no lowering here (it is then called as it is)."""
    fun = prim.tensor_fun
    if len(targets) != 1:
        return None
    target = targets[0]
    if fun in _INFIX and len(operands) == 2 and not kwargs:
        return [f"    {target} = ({_atom(operands[0])} {_INFIX[fun]} {_atom(operands[1])})"]
    if fun is operator.neg and not kwargs:
        return [f"    {target} = (-{_atom(operands[0])})"]
    if fun is operator.getitem and not kwargs:
        return [f"    {target} = {operands[0]}[{operands[1]}]"]
    if fun is _RESHAPE and not kwargs:
        return [f"    {target} = {operands[0]}.reshape({operands[1]})"]
    if fun is anp.ops._concatenate_raw and list(kwargs) == ["axis"]:
        return [f"    {target} = {constant(np.concatenate)}(({', '.join(operands)},), axis={kwargs['axis']!r})"]
    if fun is anp.ops._broadcast_to_raw and not kwargs and math.prod(values[1]) <= anp.ops._FILLED_UP_TO:
        return [f"    {target} = {constant(np.empty)}({operands[1]}, {constant(np.result_type(values[0]))})",
                f"    {target}[...] = {operands[0]}"]  # filled, as the function fills it at this size
    if fun in (anp.ops._scatter_raw, anp.ops._gather_raw) and not kwargs and _basic(values[1]):
        nb = values[-1]  # batch axes in front (a Jacobian's sweep): the index applies after them
        index = constant((slice(None),) * nb + values[1]) if nb else operands[1]
        if fun is anp.ops._gather_raw:
            return [f"    {target} = {operands[0]}[{index}]"]
        shape = constant(values[0].shape[:nb] + tuple(values[2])) if nb else operands[2]
        return [f"    {target} = {constant(np.zeros)}({shape}, {constant(values[0].dtype)})",
                f"    {target}[{index}] = {operands[0]}"]
    return None


def _basic(index) -> bool:
    """Whether an index (a tuple) is basic: no arrays (which scatter by ``np.add.at``, move axes)."""
    return type(index) is tuple and not any(isinstance(piece, (np.ndarray, list)) for piece in index)


def _atom(operand: str) -> str:
    """An operand that binds as one: a negative literal in parentheses (``-2.0 ** t`` is ``-(2.0 ** t)``)."""
    return f"({operand})" if operand.startswith("-") else operand


def accumulate_lines(target: str, operands: list, values: list, shape: str, dtype: str,
                     constant: Callable) -> list:
    """``program._accumulate(shape, dtype, *items)`` unrolled: the same additions into one buffer, in
    order (``operands``: the items' source, ``values``: their traced values)."""
    lines, owned = [], False
    for k in range(0, len(values), 2):
        index, value = values[k], operands[k + 1]
        if k == 0:
            if index is None:
                lines.append(f"    {target} = {value}")
            else:
                lines += [f"    {target} = {constant(np.zeros)}({shape}, {dtype})",
                          f"    {target}[{operands[k]}] = {value}"]
                owned = True
        elif index is None:
            lines.append(f"    {target} = {target} + {value}")
            owned = True
        else:
            if not owned:
                lines.append(f"    {target} = {target}.copy()")
                owned = True
            lines.append(f"    {target}[{operands[k]}] += {value}")
    return lines


def accumulate_sliced_lines(target: str, operands: list, values: list, shape: str, dtype: str,
                            constant: Callable) -> list:
    """``program._accumulate_sliced`` unrolled: pieces of one index summed first (``add_piece``),
    then written into the first dense cotangent (or zeros) in order."""
    lines: list = []
    pieces: list = []   # (index value, index source, name of the piece)
    dense = False
    for k in range(0, len(values), 2):
        index, value = values[k], operands[k + 1]
        if index is None:
            if dense:
                lines.append(f"    {target} = {target} + {value}")
            elif pieces:
                lines.append(f"    {target} = {value}.copy()")
                lines += [f"    {target}[{source}] += {name}" for _, source, name in pieces]
                pieces = []
            else:
                lines.append(f"    {target} = {value}")
            dense = True
        elif dense:
            lines += [f"    {target} = {target}.copy()", f"    {target}[{operands[k]}] += {value}"]
        else:
            at = next((j for j, p in enumerate(pieces) if p[0] == index), None)
            name = f"{target}_{k // 2}"
            if at is None:
                lines.append(f"    {name} = {value}")
                pieces.append((index, operands[k], name))
            else:
                lines.append(f"    {name} = {pieces[at][2]} + {value}")
                pieces[at] = (index, pieces[at][1], name)
    if not dense:
        lines.append(f"    {target} = {constant(np.zeros)}({shape}, {dtype})")
        lines += [f"    {target}[{source}] = {name}" if j == 0 else f"    {target}[{source}] += {name}"
                  for j, (_, source, name) in enumerate(pieces)]
    return lines


# the names of a program's intermediate values: a "t" that no word character precedes, and digits (the
# literal first: the regex engine looks for it before trying a match, twice as fast as a leading \b)
NAME = re.compile(r"(t(?<!\wt)\d+(?:_\d+)?)\b")


@functools.lru_cache(maxsize=512)
def compiled_once(source: str, filename: str):
    """The code of a program's source, compiled once: the source names its constants, which each
    program's globals hold, so one text is one code object (the same function traced again, say
    by each of minimize's calls, compiles no more)."""
    return compile(source, filename, "exec")


def fused(lines: list, names: re.Pattern = NAME, max_depth: int = MAX_DEPTH, pure: set | None = None,
          grouped: bool = False) -> list:
    """``lines`` with each value that exactly one later line reads written into that line, up to
    ``max_depth`` ops deep: a chain of ops becomes one expression (no name stored, loaded and
    deleted per op). ``names`` matches the values' names (one group); a value is one that a line
    ``<indent><name> = <expression>`` defines and, given ``pure``, one of those names (names one line
    defines from its operands alone: a buffer filled in place by the lines after is not one). Every
    value is still computed from the same operands: nothing is changed in place between (ops are
    pure). An inlined expression is parenthesised, unless ``grouped`` and it starts with "(" (the
    NumPy programs' lowering writes each operator in parentheses: such an expression is a group
    and its postfix calls, reads and attributes, which bind tighter than any operator).

    Each line is split at its names once: the reads are counted, and the values inlined, from its pieces.
    """
    pieces = list(map(names.split, lines))   # text, name, text, ...: the names at odd positions
    counts = Counter(itertools.chain.from_iterable([parts[1::2] for parts in pieces]))  # 2: defined, read once
    inlined: dict = {}   # name -> its expression, as its reader writes it
    depths: dict = {}    # name -> ops nested in its expression
    zeros = itertools.repeat(0)
    out = []
    for parts in pieces:
        if len(parts) == 1:
            out.append(parts[0])
            continue
        read = parts[1::2]
        depth = max(map(depths.get, read, zeros))
        if depth:
            parts[1::2] = map(inlined.get, read, read)
        name = parts[1]
        if (counts[name] == 2 and parts[2].startswith(" = ") and not parts[0].strip()
                and (pure is None or name in pure) and depth < max_depth):
            expression = "".join(parts[2:])[3:]
            inlined[name] = expression if grouped and expression.startswith("(") else f"({expression})"
            depths[name] = depth + 1
            continue
        out.append("".join(parts))
    return out
