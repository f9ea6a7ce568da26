"""Nested structures (single values, lists, tuples, dicts) flattened to lists and rebuilt."""
from __future__ import annotations

from typing import Any, Callable


def flatten(structure) -> tuple[list, Callable[[list], Any]]:
    """Leaves of ``structure`` in order, and a function that rebuilds it from new leaves."""
    if type(structure) not in _CONTAINERS and not isinstance(structure, (dict, list, tuple)):
        return [structure], _single
    if isinstance(structure, dict):
        keys = list(structure)
        parts = [flatten(structure[k]) for k in keys]
        return _join(parts, lambda items: dict(zip(keys, items)))
    if isinstance(structure, (list, tuple)):
        parts = [flatten(item) for item in structure]
        kind = type(structure)
        if kind in (list, tuple):
            return _join(parts, kind)
        return _join(parts, lambda items: kind(*items))  # namedtuple
    return [structure], _single


_CONTAINERS = (dict, list, tuple)


def _single(leaves):
    return leaves[0]


def _join(parts, build):
    leaves, sizes = [], []
    for part_leaves, _ in parts:
        leaves.extend(part_leaves)
        sizes.append(len(part_leaves))

    def rebuild(new_leaves):
        items, start = [], 0
        for (_, rebuild_part), size in zip(parts, sizes):
            items.append(rebuild_part(new_leaves[start:start + size]))
            start += size
        return build(items)

    return leaves, rebuild
