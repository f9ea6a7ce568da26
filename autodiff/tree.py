"""Pytrees: single values, or lists, tuples (namedtuples too) and dicts of them, nested.

``flatten`` lists a tree's leaves in order together with its structure; ``unflatten`` rebuilds the
tree from new leaves; ``flatten_like`` lists a tree's leaves in the order of a tree of the same
structure; ``ravel`` turns a tree of arrays into one flat vector and back (as JAX's
``tree_flatten``, ``tree_unflatten`` and ``ravel_pytree``). ``mirror`` gives a transform's result
in the kind of its inputs (Tensors in, Tensors out; arrays in, NumPy out).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import numpy as anp
from .core import Tensor, state, tracked, value_of

_CONTAINERS = (dict, list, tuple)


class TreeDef:
    """The structure of a flattened tree: call it (or ``unflatten``) with new leaves to rebuild.

    Examples
    --------
    >>> from autodiff.tree import flatten
    >>> leaves, treedef = flatten({"w": [1, 2], "b": 3})
    >>> treedef.num_leaves, treedef([10, 20, 30])
    (3, {'w': [10, 20], 'b': 30})
    """

    __slots__ = ("_build", "num_leaves")

    def __init__(self, build: Callable[[list], Any], num_leaves: int):
        self._build, self.num_leaves = build, num_leaves

    def __call__(self, leaves: Any) -> Any:
        return self._build(list(leaves))


def flatten(tree: Any) -> tuple[list, TreeDef]:
    """The leaves of ``tree`` in order, and its structure.

    Dicts keep their insertion order, lists and tuples (namedtuples too) theirs; anything else is a
    leaf.

    Examples
    --------
    >>> from autodiff.tree import flatten
    >>> flatten({"w": [1, 2], "b": 3})[0]
    [1, 2, 3]
    """
    if not isinstance(tree, _CONTAINERS):
        return [tree], _LEAF
    if isinstance(tree, dict):
        keys = list(tree)
        return _join([flatten(tree[k]) for k in keys], lambda items: dict(zip(keys, items)))
    kind = type(tree)
    build = kind if kind in (list, tuple) else (lambda items: kind(*items))  # namedtuple
    return _join([flatten(item) for item in tree], build)


def flatten_like(tree: Any, template: Any) -> list:
    """The leaves of ``tree`` in the order of ``template``'s leaves; the two must have the same
    structure (dict entries are matched by key, so their order may differ). Tangents and cotangents
    are paired with their primals this way.

    Raises
    ------
    ValueError
        If the structures differ.

    Examples
    --------
    >>> from autodiff.tree import flatten_like
    >>> flatten_like({"b": "B", "w": ["W0", "W1"]}, {"w": [1, 2], "b": 3})
    ['W0', 'W1', 'B']
    """
    if isinstance(template, dict):
        if not isinstance(tree, dict) or set(tree) != set(template):
            raise ValueError(f"expected a dict with keys {sorted(template, key=str)}, got "
                             f"{sorted(tree, key=str) if isinstance(tree, dict) else type(tree).__name__}")
        return [leaf for key in template for leaf in flatten_like(tree[key], template[key])]
    if isinstance(template, (list, tuple)):
        if not isinstance(tree, (list, tuple)) or len(tree) != len(template):
            raise ValueError(f"expected a {type(template).__name__} of {len(template)} entries, got "
                             f"{len(tree) if isinstance(tree, (list, tuple)) else type(tree).__name__}")
        return [leaf for item, like in zip(tree, template) for leaf in flatten_like(item, like)]
    return [tree]


def unflatten(treedef: TreeDef, leaves: Any) -> Any:
    """The tree of structure ``treedef`` holding ``leaves``.

    Examples
    --------
    >>> from autodiff.tree import flatten, unflatten
    >>> unflatten(flatten((1, [2, 3]))[1], "abc")
    ('a', ['b', 'c'])
    """
    return treedef(leaves)


_LEAF = TreeDef(lambda leaves: leaves[0], 1)


def _join(parts: list, build: Callable) -> tuple[list, TreeDef]:
    leaves = [leaf for part_leaves, _ in parts for leaf in part_leaves]

    def rebuild(new_leaves):
        items, start = [], 0
        for _, part in parts:
            items.append(part(new_leaves[start:start + part.num_leaves]))
            start += part.num_leaves
        return build(items)

    return leaves, TreeDef(rebuild, len(leaves))


def ravel(tree: Any) -> tuple[Any, Callable]:
    """Flatten a tree of arrays to one float vector, and the way back.

    ``unravel`` is differentiable: given a Tensor it returns Tensors (slices and reshapes). As JAX's
    ``ravel_pytree``: optimizers work on the flat vector, models keep their structure.

    Returns
    -------
    flat : ndarray or Tensor
        The leaves' values, raveled and concatenated in ``flatten`` order (float, or complex if a
        leaf is). A Tensor when a recording tape or accumulator tracks a leaf, or a trace
        (``autodiff.function``) observes: the flat vector then differentiates, and replays, what it
        is made of instead of silently freezing its values.
    unravel : callable
        A flat vector of that length -> the tree.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> flat, unravel = ad.ravel({"w": np.ones((2, 2)), "b": np.zeros(2)})
    >>> flat
    array([1., 1., 1., 1., 0., 0.])
    >>> unravel(np.arange(6.0))["b"]
    array([4., 5.])
    """
    if type(tree) is np.ndarray:    # one array (scipy's x0): its raveled copy, without the tree walk
        return np.ravel(tree).astype(np.result_type(float, tree.dtype)), _unravel_array(tree.shape)
    leaves, treedef = flatten(tree)
    shapes = [np.shape(value_of(leaf)) for leaf in leaves]
    offsets = np.concatenate([[0], np.cumsum([int(np.prod(shape)) for shape in shapes])]).astype(int)
    dtype = np.result_type(float, *[np.asarray(value_of(leaf)).dtype for leaf in leaves])
    if any(isinstance(leaf, Tensor) and (tracked(leaf) or state.observers) for leaf in leaves):
        flat = anp.concatenate([anp.ravel(anp.astype(leaf, dtype)) for leaf in leaves])
    else:
        flat = np.concatenate([np.ravel(value_of(leaf)).astype(dtype) for leaf in leaves]) \
            if leaves else np.zeros(0)
    if treedef is _LEAF:
        return flat, _unravel_array(shapes[0])

    def unravel(vector: Any) -> Any:
        return treedef([anp.reshape(vector[offsets[k]:offsets[k + 1]], shape)
                        for k, shape in enumerate(shapes)])

    return flat, unravel


def _unravel_array(shape: tuple) -> Callable:
    """``unravel`` of a tree that is one leaf of ``shape``: an ndarray (an optimizer's iterate) is
    reshaped directly, as ``anp.reshape`` would, with no dispatch; a Tensor differentiably."""
    def unravel(vector: Any) -> Any:
        return vector.reshape(shape) if type(vector) is np.ndarray else anp.reshape(vector, shape)
    return unravel


def mirror(result: Any, tensors_in: bool) -> Any:
    """A transform's (or a replayed program's) ``result`` in the kind of its inputs: Tensors in,
    Tensors out (array leaves, as a program computes them, become Tensors); arrays in, NumPy out,
    0-d results as NumPy scalars. With arrays in, a Tensor that an enclosing tape or accumulator
    tracks stays a Tensor: the function may close over a tracked value (``grad(lambda y: x *
    y)(2.0)`` inside a transform of x).

    Examples
    --------
    >>> import numpy as np
    >>> from autodiff.core import Tensor
    >>> from autodiff.tree import mirror
    >>> mirror((Tensor(np.float64(2.0)), np.ones(2)), tensors_in=False)
    (np.float64(2.0), array([1., 1.]))
    >>> type(mirror({"g": np.ones(2)}, tensors_in=True)["g"]).__name__
    'Tensor'
    """
    if tensors_in:
        if isinstance(result, Tensor):
            return result
        leaves, rebuild = flatten(result)
        return rebuild([Tensor(r) if isinstance(r, (np.ndarray, np.generic)) else r for r in leaves])
    if type(result) is np.ndarray:   # the common results, without a tree walk
        return result[()] if result.ndim == 0 else result
    if type(result) is tuple and all(type(r) is np.ndarray or isinstance(r, np.generic) for r in result):
        return tuple(r[()] if type(r) is np.ndarray and r.ndim == 0 else r for r in result)
    leaves, rebuild = flatten(result)
    return rebuild([_plain(leaf) for leaf in leaves])


def _plain(leaf: Any) -> Any:
    """A leaf out of the engine (a 0-d array as a NumPy scalar), unless a recording tracks it."""
    if isinstance(leaf, Tensor):
        if (state.tapes or state.accumulators) and tracked(leaf):
            return leaf
        leaf = np.asarray(value_of(leaf))
    return leaf[()] if isinstance(leaf, np.ndarray) and leaf.ndim == 0 else leaf
