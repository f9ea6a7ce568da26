"""Signatures: what makes two calls replay the same program.

Floating-point arrays (and Tensors) are inputs: their shape and dtype count. Every other argument
is static, part of the program: it counts by value. A static argument must be hashable (a set, or
an object with ``__eq__`` and no ``__hash__``, is refused, naming it, as JAX refuses it: keyed by
its identity it would be confused with a later object at the same address). Floats count by their
bits: ``0.0`` and ``-0.0`` are two signatures (``x / -0.0`` is -inf), and a NaN is one signature,
equal to itself. Non-float arrays count by their bytes; Variables by identity (their values are
read afresh by every replay).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Tensor, Variable, value_of
from ..tree import flatten
from .tracing import is_traced_leaf

CALL_WITH_ARRAYS = "call with arrays"  # the signature kind of f(x, ...), positional float arrays only
ONE_ARRAY = "one array"                # ... of the arguments (x,) of a transform


class _Unhashable(TypeError):
    """A static leaf that cannot be a key."""


def _leaf_key(leaf):
    if is_traced_leaf(leaf):
        return (type(leaf) is Tensor, leaf.shape, leaf.dtype.str)
    if isinstance(leaf, Variable):
        return ("variable", id(leaf))  # a replay reads it: kept alive by the program, its id is its own
    if isinstance(leaf, (np.ndarray, np.generic)):
        return ("array", leaf.shape, leaf.dtype.str, np.asarray(leaf).tobytes())
    if type(leaf) is float:
        return ("float", leaf.hex())
    if type(leaf) is complex:
        return ("complex", leaf.real.hex(), leaf.imag.hex())
    try:
        hash(leaf)
    except TypeError:
        raise _Unhashable(type(leaf).__name__) from None
    return ("value", type(leaf), leaf)


def _structure_key(tree):
    if isinstance(tree, dict):
        return (dict, tuple((k, _structure_key(v)) for k, v in tree.items()))
    if isinstance(tree, (list, tuple)):
        return (type(tree), tuple(_structure_key(v) for v in tree))
    return _leaf_key(tree)


def signature(tree: Any) -> tuple:
    """``(key, values, rebuild, tensors_in)`` of the arguments ``tree`` (``(args, kwargs)`` of a
    call, or a tuple of arguments): a hashable key, the values of the traced leaves (arrays),
    ``rebuild(leaves)`` -> the tree with those leaves replaced, and whether Tensors came in.

    Raises
    ------
    TypeError
        For an unhashable static argument, naming it.
    """
    arrays = _arrays(tree)
    if arrays is not None:  # the optimizers' case (and a Hessian-vector product's), without the tree walk
        return arrays
    leaves, treedef = flatten(tree)
    traced = [k for k, leaf in enumerate(leaves) if is_traced_leaf(leaf)]
    values = [np.asarray(value_of(leaves[k])) for k in traced]
    tensors_in = any(isinstance(leaf, Tensor) for leaf in leaves)

    def rebuild(new_leaves):
        new = list(leaves)
        for k, leaf in zip(traced, new_leaves):
            new[k] = leaf
        return treedef(new)
    try:
        key = _structure_key(tree)
    except _Unhashable as error:
        raise TypeError(f"autodiff.function: the static argument {_name_of_unhashable(tree)} is "
                        f"an unhashable {error}; static arguments (everything but float arrays) "
                        "are part of the signature and must be hashable: pass a tuple or a "
                        "frozenset, or an array") from None
    return key, values, rebuild, tensors_in


def _name_of_unhashable(tree) -> str:
    """Where the unhashable leaf is: ``argument 1``, ``keyword argument 'k'``, ``argument 0['a'][2]``."""
    def find(node, path):
        if isinstance(node, (dict, list, tuple)):
            for k, child in (node.items() if isinstance(node, dict) else enumerate(node)):
                found = find(child, path + [k])
                if found is not None:
                    return found
            return None
        try:
            _leaf_key(node)
        except _Unhashable:
            return path
        return None
    path = find(tree, [])
    if _is_call(tree):  # (args, kwargs)
        head = f"argument {path[1]}" if path[0] == 0 else f"keyword argument {path[1]!r}"
        path = path[2:]
    else:
        head, path = f"argument {path[0]}", path[1:]
    return head + "".join(f"[{k!r}]" for k in path)


def _is_call(tree) -> bool:
    return type(tree) is tuple and len(tree) == 2 and type(tree[0]) is tuple and type(tree[1]) is dict


def _arrays(tree):
    """``signature`` of a call ``((array, ...), {})`` of float arrays alone, or of the arguments
    ``(array,)``: key ``(CALL_WITH_ARRAYS, ((shape, dtype), ...))`` or ``(ONE_ARRAY, shape, dtype)``;
    else None."""
    if _is_call(tree):
        arrays = tree[0]
        if tree[1] or not arrays:
            return None
        for x in arrays:
            if type(x) is not np.ndarray or x.dtype.kind not in "fc":
                return None
        return (CALL_WITH_ARRAYS, tuple([(x.shape, x.dtype) for x in arrays])), list(arrays), _as_call, False
    if type(tree) is tuple and len(tree) == 1:
        x = tree[0]
        if type(x) is np.ndarray and x.dtype.kind in "fc":
            return (ONE_ARRAY, x.shape, x.dtype), [x], _as_arguments, False
    return None


def _as_call(leaves):
    return tuple(leaves), {}


def _as_arguments(leaves):
    return (leaves[0],)
