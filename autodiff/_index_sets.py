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

_ELL_WIDTH = 32      # rows this short (all parts together) are sorted side by side in a block
_CHUNK = 1 << 15     # rows merged or gathered at a time (their arrays stay in cache; a dense row
                     # sorts only its chunk)
_DEFERRED = 8        # parts a union keeps unmerged at most


class Sets:
    """Rows of sorted input indices (CSR over ``n`` inputs); immutable, so ops may share them.

    A union may stay *deferred*: a list of parts merged only when its rows are first read, so a
    chain of elementwise ops (``a + b + c + ...``) merges once instead of once per op.
    """

    __slots__ = ("_indptr", "_indices", "n", "_width", "_parts", "_rows", "_covers")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, n: int, width: int | None = None):
        self._indptr, self._indices, self.n = indptr, indices, n
        self._width = width  # the length of every row, when all rows have one length
        self._parts = None
        self._rows = len(indptr) - 1
        self._covers = (self,)  # Sets whose union this is

    @classmethod
    def deferred(cls, parts: list) -> Sets:
        """The union of ``parts`` (nonempty, same rows), merged when first read."""
        sets = cls.__new__(cls)
        sets._indptr = sets._indices = sets._width = None
        sets.n, sets._rows, sets._parts = parts[0].n, parts[0].rows, parts
        sets._covers = (sets,) + tuple(parts)
        return sets

    @property
    def indptr(self) -> np.ndarray:
        if self._parts is not None:
            self._merge()
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        if self._parts is not None:
            self._merge()
        return self._indices

    def _merge(self):
        merged = _merged([(part.indptr, part.indices) for part in self._parts], self._rows, self.n)
        self._indptr, self._indices, self._parts = merged.indptr, merged.indices, None

    @property
    def empty(self) -> bool:
        """Whether no row holds an index (known without merging a deferred union)."""
        return self._parts is None and self._indices.size == 0

    @classmethod
    def identity(cls, n: int) -> Sets:
        """Element i of the input depends on input i."""
        return cls(np.arange(n + 1), np.arange(n), n, 1)

    @classmethod
    def empty_rows(cls, rows: int, n: int) -> Sets:
        return cls(np.zeros(rows + 1, np.int64), np.zeros(0, np.int64), n, 0)

    @classmethod
    def from_keys(cls, keys: np.ndarray, rows: int, n: int) -> Sets:
        """From sorted, distinct keys ``row * n + index``."""
        row = keys // n
        indptr = np.zeros(rows + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=rows), out=indptr[1:])
        return cls(indptr, keys - row * n, n)

    @property
    def rows(self) -> int:
        return self._rows

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
        for part in self._parts or [self]:
            mark[part.indices] = True
        return np.flatnonzero(mark)


def gather(sets: Sets, index: np.ndarray) -> Sets:
    """Row j of the result is row ``index[j]`` of ``sets`` (empty where ``index[j]`` is -1)."""
    index = np.asarray(index, np.int64).ravel()
    shifted = _shifted(sets, index)
    if shifted is not None:
        return shifted
    width = sets.width()
    if width is not None and not (index.size and index.min() < 0):  # rows equally long: one fancy index
        indices = sets.indices.reshape(sets.rows, width)[index].ravel()
        return Sets(np.arange(index.size + 1) * width, indices, sets.n, width)
    lengths, pieces = [], []
    for low in range(0, index.size, _CHUNK):  # in chunks: the positions stay in cache
        bounds, where = segments(sets, index[low:low + _CHUNK])
        lengths.append(np.diff(bounds))
        pieces.append(sets.indices[where])
    indptr = np.zeros(index.size + 1, np.int64)
    if index.size:
        np.cumsum(np.concatenate(lengths), out=indptr[1:])
    return Sets(indptr, np.concatenate(pieces) if pieces else np.zeros(0, np.int64), sets.n)


def _shifted(sets: Sets, index: np.ndarray) -> Sets | None:
    """A gather of consecutive rows into consecutive places, -1 elsewhere (a slice, or the
    scatter of one), as a view of the entries; None for any other index."""
    valid = np.flatnonzero(index >= 0)
    if not valid.size:
        return Sets.empty_rows(index.size, sets.n)
    first, last = int(valid[0]), int(valid[-1])
    if last - first + 1 != valid.size:
        return None
    low = int(index[first])
    if np.any(index[first:last + 1] != np.arange(low, low + valid.size)):
        return None
    bounds = sets.indptr[low:low + valid.size + 1]
    indptr = np.concatenate([np.zeros(first, np.int64), bounds - bounds[0],
                             np.full(index.size - last - 1, bounds[-1] - bounds[0])])
    return Sets(indptr, sets.indices[bounds[0]:bounds[-1]], sets.n)


def segments(sets: Sets, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``index`` of ``sets`` one after the other (none where ``index[j]`` is -1): the
    bounds of each (an indptr) and the positions of their entries in ``sets.indices``, so that
    arrays aligned with the entries can be gathered alike."""
    index = np.asarray(index, np.int64).ravel()
    first = sets.indptr[index]
    lengths = sets.indptr[index + 1] - first       # of these rows only: a round may ask for a few
    missing = index < 0
    if missing.any():
        lengths[missing] = 0
    indptr = np.zeros(index.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    return indptr, np.repeat(first - indptr[:-1], lengths) + np.arange(total)


def union(parts: list) -> Sets:
    """Row-wise union of Sets with the same rows (deferred while it has few parts)."""
    distinct = []
    for part in parts:
        for piece in part._parts or [part]:
            if not piece.empty and not any(piece is known for known in distinct):
                distinct.append(piece)
    if len(distinct) <= 1:
        return distinct[0] if distinct else parts[0]
    for part in parts:  # one operand holds all the others: it is the union (merged once if used again)
        if all(any(piece is known for known in part._covers) for piece in distinct):
            return part
    if len(distinct) <= _DEFERRED:
        return Sets.deferred(distinct)
    return _merged([(part.indptr, part.indices) for part in distinct], distinct[0].rows, distinct[0].n)


def _merged(parts: list, rows: int, n: int) -> Sets:
    """Rows sorted and made distinct: row r holds the indices of row r of every part (CSR pairs
    (indptr, indices) with ``rows`` rows, in any order, repeats allowed). A chunk of short rows is
    laid into a block padded with n and sorted per row (linear in the rows: a few columns); a
    chunk holding a long row sorts its entries as flat keys."""
    lengths, pieces = [], []
    for low in range(0, rows, _CHUNK):
        high = min(rows, low + _CHUNK)
        chunk = [(indptr[low:high + 1] - indptr[low], indices[indptr[low]:indptr[high]])
                 for indptr, indices in parts]
        counts = [np.diff(indptr) for indptr, _ in chunk]
        widths = [int(count.max()) for count in counts]
        if sum(widths) <= _ELL_WIDTH:
            found, kept = _merged_block(chunk, counts, widths, high - low, n)
        else:
            keys = np.sort(np.concatenate([np.repeat(np.arange(high - low), count) * n + indices
                                           for (_, indices), count in zip(chunk, counts)]), kind="stable")
            keys = _distinct_sorted(keys)
            row = keys // n
            found, kept = np.bincount(row, minlength=high - low), keys - row * n
        lengths.append(found)
        pieces.append(kept)
    indptr = np.zeros(rows + 1, np.int64)
    if rows:
        np.cumsum(np.concatenate(lengths), out=indptr[1:])
    return Sets(indptr, np.concatenate(pieces) if pieces else np.zeros(0, np.int64), n)


def _merged_block(chunk: list, counts: list, widths: list, rows: int, n: int):
    """The lengths and entries of short rows merged in a (rows, sum of widths) block."""
    total = sum(widths)
    block = np.full((rows, total), n, np.int64)
    flat = block.reshape(-1)
    start = 0
    for (indptr, indices), count, width in zip(chunk, counts, widths):
        place = np.repeat(np.arange(rows) * total + start - indptr[:-1], count)
        place += np.arange(indices.size)
        flat[place] = indices
        start += width
    block.sort(axis=1)
    keep = block != n
    keep[:, 1:] &= block[:, 1:] != block[:, :-1]
    return np.count_nonzero(keep, axis=1), block[keep]


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
    if np.any(groups[1:] < groups[:-1]):  # rows in group order
        order = np.argsort(groups, kind="stable")
        sets, groups = gather(sets, order), groups[order]
    valid = groups >= 0
    lengths = np.where(valid, sets.lengths(), 0)
    indptr = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(groups[valid], weights=lengths[valid], minlength=count).astype(np.int64),
              out=indptr[1:])
    first = int(np.argmax(valid)) if valid.any() else 0
    entries = sets.indices[sets.indptr[first]:sets.indptr[first] + indptr[-1]]
    return _merged([(indptr, entries)], count, sets.n)


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
