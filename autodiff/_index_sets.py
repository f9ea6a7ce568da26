"""Index sets per element, vectorized: the data structure of sparsity detection.

A ``Sets`` holds, for each element of a tensor (its rows, in C order), the sorted set of input
indices the element depends on, as CSR arrays (``indptr``, ``indices``). Every operation is a few
NumPy calls over all rows at once, linear in the rows and the entries for the patterns of
structured problems (a few entries per row): ``gather`` moves rows (indexing, transposes,
broadcasts), ``union`` joins rows of equal position (elementwise ops), ``reduce`` joins groups of
rows (sums, contractions). Sets never depend on the values of the arrays involved.
"""
from __future__ import annotations

import numpy as np

_ELL_WIDTH = 32  # unions of rows this short sort a (rows, width) block; longer ones sort flat keys


class Sets:
    """Rows of sorted input indices (CSR over ``n`` inputs); immutable, so ops may share them."""

    __slots__ = ("indptr", "indices", "n", "_width")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, n: int, width: int | None = None):
        self.indptr, self.indices, self.n = indptr, indices, n
        self._width = width  # the length of every row, when all rows have one length

    @classmethod
    def identity(cls, n: int) -> "Sets":
        """Element i of the input depends on input i."""
        return cls(np.arange(n + 1), np.arange(n), n, 1)

    @classmethod
    def empty(cls, rows: int, n: int) -> "Sets":
        return cls(np.zeros(rows + 1, np.int64), np.zeros(0, np.int64), n, 0)

    @classmethod
    def from_keys(cls, keys: np.ndarray, rows: int, n: int) -> "Sets":
        """From sorted, distinct keys ``row * n + index``."""
        row = keys // n
        indptr = np.zeros(rows + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=rows), out=indptr[1:])
        return cls(indptr, keys - row * n, n)

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return self.indices.size

    def lengths(self) -> np.ndarray:
        return np.diff(self.indptr)

    def width(self) -> int | None:
        """The common length of the rows, or None when they differ."""
        if self._width is None and self.rows:
            lengths = self.lengths()
            low = int(lengths.min())
            self._width = low if low == int(lengths.max()) else -1
        return None if self._width == -1 else self._width

    def row_of_entries(self) -> np.ndarray:
        """The row of each entry."""
        return np.repeat(np.arange(self.rows), self.lengths())

    def keys(self) -> np.ndarray:
        """``row * n + index`` of each entry: sorted, since rows are."""
        return self.row_of_entries() * self.n + self.indices

    def dependencies(self) -> np.ndarray:
        """The union of all rows: every input index some element depends on, sorted."""
        mark = np.zeros(self.n, bool)
        mark[self.indices] = True
        return np.flatnonzero(mark)


def gather(sets: Sets, index: np.ndarray) -> Sets:
    """Row j of the result is row ``index[j]`` of ``sets`` (empty where ``index[j]`` is -1)."""
    index = np.asarray(index, np.int64).ravel()
    width = sets.width()
    if width is not None and not (index.size and index.min() < 0):  # rows equally long: one fancy index
        indices = sets.indices.reshape(sets.rows, width)[index].ravel()
        return Sets(np.arange(index.size + 1) * width, indices, sets.n, width)
    indptr, where = segments(sets, index)
    return Sets(indptr, sets.indices[where], sets.n)


def segments(sets: Sets, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``index`` of ``sets`` one after the other (none where ``index[j]`` is -1): the
    bounds of each (an indptr) and the positions of their entries in ``sets.indices``, so that
    arrays aligned with the entries can be gathered alike."""
    index = np.asarray(index, np.int64).ravel()
    lengths = sets.lengths()[index]
    missing = index < 0
    if missing.any():
        lengths[missing] = 0
    indptr = np.zeros(index.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    return indptr, np.repeat(sets.indptr[index] - indptr[:-1], lengths) + np.arange(total)


def union(parts: list) -> Sets:
    """Row-wise union of Sets with the same rows."""
    distinct = []
    for part in parts:
        if part.nnz and not any(part is known for known in distinct):
            distinct.append(part)
    if len(distinct) <= 1:
        return distinct[0] if distinct else parts[0]
    rows, n = distinct[0].rows, distinct[0].n
    widths = [int(part.lengths().max()) for part in distinct]
    if sum(widths) <= _ELL_WIDTH:
        return _union_ell(distinct, widths, rows, n)
    keys = np.sort(np.concatenate([part.keys() for part in distinct]), kind="stable")  # merges runs
    return Sets.from_keys(_distinct_sorted(keys), rows, n)


def _union_ell(parts: list, widths: list, rows: int, n: int) -> Sets:
    """Union of short rows: each part laid into a block of columns padded with n, then one sort
    per row (a few columns: linear in the rows) and the repeats dropped."""
    block = np.full((rows, sum(widths)), n, np.int64)
    start = 0
    for part, w in zip(parts, widths):
        if part.width() == w:
            block[:, start:start + w] = part.indices.reshape(rows, w)
        else:
            row = part.row_of_entries()
            block[row, start + np.arange(part.nnz) - part.indptr[row]] = part.indices
        start += w
    block.sort(axis=1)
    keep = block != n
    keep[:, 1:] &= block[:, 1:] != block[:, :-1]
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return Sets(indptr, block[keep], n)


def _distinct_sorted(keys: np.ndarray) -> np.ndarray:
    if keys.size < 2:
        return keys
    keep = np.empty(keys.size, bool)
    keep[0] = True
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def reduce(sets: Sets, groups: np.ndarray, count: int) -> Sets:
    """Row g of the result is the union of the rows r with ``groups[r] == g`` (-1: none)."""
    groups = np.asarray(groups, np.int64).ravel()
    if count == 1 and not (groups < 0).any():
        found = sets.dependencies()
        return Sets(np.array([0, found.size]), found, sets.n, found.size)
    valid_rows = groups >= 0
    if not np.any(np.bincount(groups[valid_rows], minlength=count) > 1):  # no two rows meet: a move
        inverse = np.full(count, -1, np.int64)
        inverse[groups[valid_rows]] = np.flatnonzero(valid_rows)
        return gather(sets, inverse)
    group = groups[sets.row_of_entries()]
    valid = group >= 0
    keys = (group * sets.n + sets.indices)[valid]
    return Sets.from_keys(_distinct_sorted(np.sort(keys, kind="stable")), count, sets.n)


def broadcast(sets: Sets, shape: tuple, out_shape: tuple) -> Sets:
    """The rows of an array of ``shape`` broadcast to ``out_shape`` (NumPy's rules)."""
    if tuple(shape) == tuple(out_shape):
        return sets
    return gather(sets, np.broadcast_to(positions(shape), out_shape))


def positions(shape: tuple) -> np.ndarray:
    """The flat position of each element of an array of ``shape``."""
    return np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)


def stack(parts: list) -> Sets:
    """The rows of ``parts`` one after the other."""
    n = parts[0].n
    offsets = np.cumsum([0] + [part.nnz for part in parts[:-1]])
    indptr = np.concatenate([parts[0].indptr[:1]] + [part.indptr[1:] + offset
                                                      for part, offset in zip(parts, offsets)])
    return Sets(indptr, np.concatenate([part.indices for part in parts]), n)
