"""Propagating index sets through a recording, one rule per kind of primitive.

Each rule maps the index sets of a record's operands (``None`` for an operand that does not
depend on the inputs) to those of its output, from shapes, axes and index arrays only, never from
values: a pattern holds for every input that runs the same program. Rules exist for elementwise
ops (every NumPy ufunc, where, clip, ...), reductions, contractions (matmul, einsum), the ops that
move elements (indexing, scatter, reshape, transpose, broadcast, concatenate, pad, flip, diagonal,
triangles), cumulative sums and batched linear algebra; an op without one is taken to make every
output element depend on every input element of its operands, which may overestimate a pattern but
never misses an entry. An operand without a derivative rule (a mask, a condition) adds nothing.
"""
from __future__ import annotations

import math
import string

import numpy as np

from . import _index_sets as sets_
from ._index_sets import Sets
from .core import snapshot_read
from .numpy import linalg, ops


def propagate(records: list, source, target) -> Sets:
    """The index sets of ``target``'s elements over ``source``'s (both Tensors of ``records``)."""
    n = int(source.size)
    live = _live(records, target)
    last_use: dict = {}
    for k, (_, args, _, _, _, parents) in enumerate(live):
        for i in parents:
            last_use[args[i]._id] = k
    known = {source._id: Sets.identity(n)}
    for k, (prim, args, raw, kwargs, out, parents) in enumerate(live):
        operands = [None] * len(args)
        for i in parents:
            found = known.get(args[i]._id)
            if found is not None and not found.empty and (prim.joint or i in prim.vjps):
                operands[i] = found
        if any(o is not None for o in operands):
            result = rule_for(prim)(operands, raw, kwargs, out)
            for o, s in zip(out if type(out) is tuple else (out,), result if type(out) is tuple else (result,)):
                if not s.empty:
                    known[o._id] = s
        for i in parents:
            key = args[i]._id
            if last_use.get(key) == k and key != target._id:
                known.pop(key, None)
    return known.get(target._id) or Sets.empty_rows(int(target.size), n)


def _live(records: list, target) -> list:
    """The records the target is computed from, in order."""
    needed = {target._id}
    live = []
    for record in reversed(records):
        out = record[4]
        if any(o._id in needed for o in (out if type(out) is tuple else (out,))):
            live.append(record)
            needed.update(record[1][i]._id for i in record[5])
    live.reverse()
    return live


# --- the rules ------------------------------------------------------------------------------------
# rule(operands, raw, kwargs, out) -> Sets of out (a tuple of them for a tuple of outputs)

def _shape(value) -> tuple:
    return np.shape(value)


def elementwise(operands, raw, kwargs, out):
    """Each output element depends on the elements it is computed from (NumPy broadcasting)."""
    return sets_.union([sets_.broadcast(s, _shape(raw[i]), out.shape)
                        for i, s in enumerate(operands) if s is not None])


def same_order(operands, raw, kwargs, out):
    """The elements in the same (C) order: reshape, a float cast."""
    return operands[0]


def moved(raw_fun):
    """An op that only moves elements (and fills zeros): ``raw_fun`` applied to the positions
    plus one, with the op's other arguments, tells where each output element comes from."""
    def rule(operands, raw, kwargs, out):
        where_from = raw_fun(sets_.positions(_shape(raw[0])) + 1, *raw[1:], **kwargs)
        return sets_.gather(operands[0], np.asarray(where_from) - 1)
    return rule


def concatenated(operands, raw, kwargs, out):
    tracked = [s for s in operands if s is not None]
    offset, pieces = 0, []
    for s, value in zip(operands, raw):
        shape = _shape(value)
        if s is None:
            pieces.append(np.zeros(shape, np.int64))
        else:
            pieces.append(sets_.positions(shape) + offset + 1)
            offset += s.rows
    return sets_.gather(sets_.stack(tracked), np.concatenate(pieces, axis=kwargs["axis"]) - 1)


def scattered(operands, raw, kwargs, out):
    """``scatter_add(g, index, shape, nb)``: each element of g adds into one output position."""
    g, index, _, nb = raw
    target = ops._gather_raw(sets_.positions(out.shape), index, nb)
    return sets_.reduce(operands[0], np.broadcast_to(target, _shape(g)), out.size)


def _reduction_arguments(raw, kwargs):
    axis = kwargs.get("axis", raw[1] if len(raw) > 1 else None)
    keepdims = kwargs.get("keepdims", raw[2] if len(raw) > 2 else False)
    return axis, keepdims


def reduction(operands, raw, kwargs, out):
    """sum, prod, max, min, norm: each output element joins the elements reduced into it."""
    shape = _shape(raw[0])
    axis, _ = _reduction_arguments(raw, kwargs)
    kept = ops._keepdims_shape(shape, axis)
    groups = np.broadcast_to(sets_.positions(kept), shape)
    return sets_.reduce(operands[0], groups, out.size)


def cumulative(operands, raw, kwargs, out):
    """cumsum: element j along the axis joins elements 0..j."""
    x, axis = raw
    if axis is None:
        shape, axis = (np.size(x),), 0
    else:
        shape = _shape(x)
    place = np.moveaxis(sets_.positions(shape), axis, -1)
    length = place.shape[-1]
    later, earlier = np.tril_indices(length)
    rows = place.reshape(-1, length)
    return _joined(operands[0], rows[:, earlier].ravel(), rows[:, later].ravel(), out.size)


def _joined(sets: Sets, source: np.ndarray, destination: np.ndarray, count: int) -> Sets:
    """Output row d joins the rows ``source[e]`` with ``destination[e] == d``."""
    return sets_.reduce(sets_.gather(sets, source), destination, count)


def _contracted(sets: Sets, shape: tuple, term: str, output: str, out_shape: tuple) -> Sets:
    """The sets of an einsum operand (``term``) carried to the output (``output``): joined over
    the letters summed away, then laid out in the output's order and broadcast."""
    kept = [c for c in term if c in output]
    kept_shape = tuple(d for c, d in zip(term, shape) if c in output)
    if len(kept) < len(term):
        spread = sets_.positions(kept_shape).reshape([d if c in output else 1 for c, d in zip(term, shape)])
        sets = sets_.reduce(sets, np.broadcast_to(spread, shape), math.prod(kept_shape))
    order = sorted(range(len(kept)), key=lambda k: output.index(kept[k]))
    laid = np.transpose(sets_.positions(kept_shape), order)
    in_output = [c for c in output if c in kept]
    laid = laid.reshape([laid.shape[in_output.index(c)] if c in kept else 1 for c in output])
    return sets_.gather(sets, np.broadcast_to(laid, out_shape))


def einsum(operands, raw, kwargs, out):
    spec = kwargs["subscripts"]
    terms, output = spec.split("->")
    terms = terms.split(",")
    if any(len(set(t)) < len(t) for t in terms):
        return fallback(operands, raw, kwargs, out)
    return sets_.union([_contracted(s, _shape(raw[i]), terms[i], output, out.shape)
                        for i, s in enumerate(operands) if s is not None])


def matmul(operands, raw, kwargs, out):
    """a @ b as the einsum it is (NumPy's 1-D and stacked cases)."""
    a, b = (np.ndim(v) for v in raw)
    batch = string.ascii_uppercase[:max(a, b, 2) - 2]
    term_a = "j" if a == 1 else batch[len(batch) - (a - 2):] + "ij"
    term_b = "j" if b == 1 else batch[len(batch) - (b - 2):] + "jk"
    output = batch[len(batch) - (out.ndim - (a > 1) - (b > 1)):] + ("i" if a > 1 else "") + ("k" if b > 1 else "")
    return sets_.union([_contracted(s, _shape(raw[i]), (term_a, term_b)[i], output, out.shape)
                        for i, s in enumerate(operands) if s is not None])


def batched_matrices(core_out: int | None):
    """A linear-algebra op on the last two axes: each output matrix (``core_out`` axes; None: as
    solve's, one for a 1-D right-hand side) depends on all of the matching input matrix and
    right-hand side."""
    def rule(operands, raw, kwargs, out):
        out_shape = out.shape
        core = core_out if core_out is not None else 1 if np.ndim(raw[1]) == 1 else 2
        batch_out = out_shape[:len(out_shape) - core]
        parts = []
        for i, s in enumerate(operands):
            if s is None:
                continue
            shape = _shape(raw[i])
            axes = 1 if (i == 1 and len(shape) == 1) else 2
            batch = shape[:len(shape) - axes]
            joined = sets_.reduce(s, np.broadcast_to(sets_.positions(batch).reshape(batch + (1,) * axes), shape),
                                  math.prod(batch))
            spread = np.broadcast_to(sets_.positions(batch), batch_out)
            parts.append(sets_.gather(joined, np.broadcast_to(spread.reshape(batch_out + (1,) * core),
                                                              out_shape)))
        return sets_.union(parts)
    return rule


def fallback(operands, raw, kwargs, out):
    """No rule: every output element depends on every element of the operands."""
    found = sets_.union([Sets(np.array([0, s.dependencies().size]), s.dependencies(), s.n)
                         for s in operands if s is not None])
    if type(out) is tuple:
        return tuple(sets_.gather(found, np.zeros(o.size, np.int64)) for o in out)
    return sets_.gather(found, np.zeros(out.size, np.int64))


_RULES = {
    ops._where: elementwise, ops._clip: elementwise, ops.sigmoid: elementwise, ops.softplus: elementwise,
    ops._astype: same_order, ops._reshape: same_order, snapshot_read: same_order, ops.alias: same_order,
    ops._broadcast_to: elementwise,
    ops._transpose: moved(np.transpose), ops._flip: moved(np.flip),
    ops._gather: moved(ops._gather_raw), ops._diagonal: moved(np.diagonal),
    ops._embed_diagonal: moved(ops._embed_diagonal_raw), ops._triu: moved(np.triu),
    ops._tril: moved(np.tril), ops._pad: moved(lambda x, widths, value: np.pad(x, widths)),
    ops._concatenate: concatenated, ops._scatter: scattered,
    ops._sum: reduction, ops._prod: reduction, linalg._norm2: reduction,
    ops._cumsum: cumulative,
    ops.matmul: matmul, ops._einsum: einsum,
    linalg.inv: batched_matrices(2), linalg.cholesky: batched_matrices(2), linalg._eigh: batched_matrices(2),
    linalg._svd: batched_matrices(2), linalg._qr: batched_matrices(2), linalg.det: batched_matrices(0),
    linalg._logabsdet: batched_matrices(0), linalg.solve: batched_matrices(None),
    linalg._cofactor: batched_matrices(2), linalg._cofactor_derivative: batched_matrices(2),
}
_RULES_BY_FUNCTION = {np.max: reduction, np.min: reduction}  # the primitives of ops.max and ops.min


def rule_for(prim):
    """The propagation rule of a primitive (the fallback when it has none)."""
    rule = _RULES.get(prim) or _RULES_BY_FUNCTION.get(prim.fun)
    if rule is not None:
        return rule
    if isinstance(prim.fun, np.ufunc) and prim.fun.nout == 1:
        return elementwise
    return fallback
