"""``LeastRecentlyUsed``: the bounded cache the replay keeps its programs in (by signature, by
content)."""
from __future__ import annotations

import collections
from collections.abc import Hashable, ValuesView
from typing import Any


class LeastRecentlyUsed:
    """At most ``size`` entries by key, the least recently used (read or stored) going first: the
    cache of a ``Traced`` and of ``autodiff.sparse_hessian``, whatever they keep per signature, and
    of the native programs compiled by content.

    Examples
    --------
    >>> from autodiff.jit import LeastRecentlyUsed
    >>> cache = LeastRecentlyUsed(2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
    1
    >>> list(cache.values())          # "b" was the least recently used
    [1, 3]
    """

    def __init__(self, size: int):
        if type(size) is not int or size < 1:
            raise ValueError(f"cache_size must be a positive int, got {size!r}")
        self.size = size
        self._entries: collections.OrderedDict = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> ValuesView:
        return self._entries.values()

    def get(self, key: Hashable) -> Any:
        """The entry of ``key``, made the most recent; None when there is none."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, entry: Any) -> None:
        """``entry`` as ``key``'s, the most recent; the least recent beyond ``size`` are dropped."""
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
