"""Colourings that compress a sparse Jacobian or Hessian into a few products, and their recovery.

Columns of one colour are summed into one product (a seed vector), so k colours give the whole
matrix from k products. A *column colouring* (Curtis, Powell & Reid 1974) gives two columns that
share a row different colours, so each entry of J S is one entry of J. For a symmetric Hessian a
*star colouring* needs fewer colours (Coleman & Moré 1984; Gebremedhin, Manne & Pothen, "What
color is your Jacobian? Graph coloring for computing derivatives", SIAM Review 2005): a distance-1
colouring in which every path on four vertices uses three colours, which is exactly what makes
every entry readable directly from H S, at row i or, by symmetry, at row j.

Both are built as a conflict graph (two columns that may not share a colour) coloured greedily.
For the star colouring each off-diagonal entry is assigned beforehand to the row of its endpoint
of smaller degree (an arrowhead's dense row reads nothing, its short rows read the dense column),
and the colour of the entry's column must be unique in that row. The greedy colouring runs in
vectorized rounds (Jones & Plassmann 1993): a vertex takes the smallest colour its coloured
neighbours leave free as soon as its neighbours of higher priority are coloured. Priorities follow
the vertex order, taken modulo the bandwidth on a narrow band (the natural greedy colouring, 3
colours for a tridiagonal Hessian, in a few rounds instead of n). Everything is linear in the
vertices and the conflicts, with no Python loop per vertex.

Examples
--------
>>> import numpy as np
>>> from autodiff.coloring import star_coloring
>>> rows = np.array([0, 0, 1, 1, 1, 2, 2, 2, 3, 3])      # a tridiagonal 4 x 4 pattern
>>> cols = np.array([0, 1, 0, 1, 2, 1, 2, 3, 2, 3])
>>> star_coloring(rows, cols, 4)
array([0, 1, 2, 0])
"""
from __future__ import annotations

import numpy as np

from ._index_sets import Sets, gather

__all__ = ["star_coloring", "column_coloring", "star_recovery", "column_recovery"]

def _csr(rows: np.ndarray, cols: np.ndarray, count: int) -> Sets:
    """Rows of sorted, distinct column indices from (row, col) pairs."""
    keys = np.sort(rows.astype(np.int64) * count + cols, kind="stable")
    if keys.size > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return Sets.from_keys(keys, count, count)


def _adjacency(u: np.ndarray, v: np.ndarray, count: int) -> Sets:
    """The symmetric graph of the pairs (u, v), without self-loops."""
    off = u != v
    u, v = u[off], v[off]
    return _csr(np.concatenate([u, v]), np.concatenate([v, u]), count)


def star_coloring(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """A star colouring of the symmetric n x n pattern with entries (rows, cols): one colour per
    column, such that ``star_recovery`` reads every entry from H S.

    Examples
    --------
    An arrowhead (diagonal, dense last row and column) takes two colours:

    >>> import numpy as np
    >>> n = 6
    >>> rows = np.concatenate([np.arange(n), np.full(n - 1, n - 1), np.arange(n - 1)])
    >>> cols = np.concatenate([np.arange(n), np.arange(n - 1), np.full(n - 1, n - 1)])
    >>> star_coloring(rows, cols, n)
    array([0, 0, 0, 0, 0, 1])
    """
    graph = _adjacency(np.asarray(rows), np.asarray(cols), n)
    degree = graph.lengths()
    owner = graph.row_of_entries()
    other = graph.indices
    reads = (degree[owner] < degree[other]) | ((degree[owner] == degree[other]) & (owner < other))
    reader, column = owner[reads], other[reads]          # entry (reader, column) is read at its row
    neighbours = gather(graph, reader)                    # the rest of the reading row
    repeated = np.repeat(column, neighbours.lengths())
    conflicts_u = np.concatenate([column, repeated])
    conflicts_v = np.concatenate([reader, neighbours.indices])
    return _greedy(_adjacency(conflicts_u, conflicts_v, n))


def column_coloring(rows: np.ndarray, cols: np.ndarray, shape: tuple) -> np.ndarray:
    """A column colouring (Curtis, Powell & Reid 1974) of an m x n pattern: columns that share a
    row differ in colour, so every entry of J S is one entry of J.

    Examples
    --------
    >>> import numpy as np
    >>> rows = np.array([0, 0, 1, 1, 2, 2])                  # row i: columns i and i + 1
    >>> cols = np.array([0, 1, 1, 2, 2, 3])
    >>> column_coloring(rows, cols, (3, 4))
    array([0, 1, 0, 1])
    """
    m, n = shape
    by_row = _csr(np.asarray(rows), np.asarray(cols), max(m, n))
    column = by_row.indices
    sharing = gather(by_row, by_row.row_of_entries())     # for each entry, the columns of its row
    return _greedy(_adjacency(np.repeat(column, sharing.lengths()), sharing.indices, n))


def _greedy(graph: Sets) -> np.ndarray:
    """Greedy colouring in vectorized rounds (Jones & Plassmann 1993) in the order of ``_priority``."""
    return _jones_plassmann(graph, _priority(graph))


def _priority(graph: Sets) -> np.ndarray:
    """A rank per vertex. A narrow band (the 99th percentile of the spans of the edges between
    vertices of ordinary degree, b, below sqrt(n)) is ranked by the vertex order modulo b + 1: each
    residue class is independent, so b + 1 rounds give the natural greedy colouring (3 colours for
    a tridiagonal Hessian) where the natural order would take n rounds. Otherwise (grids, irregular
    graphs) the natural order, whose chains of dependent vertices are short there."""
    count = graph.rows
    if not count:
        return np.zeros(0, np.int64)
    degree = graph.lengths()
    owner = graph.row_of_entries()
    ordinary = degree <= 4 * max(np.median(degree), 1)
    typical = ordinary[owner] & ordinary[graph.indices]
    spans = np.abs(owner[typical] - graph.indices[typical])
    period = int(np.percentile(spans, 99)) + 1 if spans.size else 1
    vertices = np.arange(count)
    if period * period > count:
        return vertices
    rank = np.empty(count, np.int64)
    rank[np.lexsort((vertices, vertices % period))] = vertices
    return rank


def _jones_plassmann(graph: Sets, rank: np.ndarray) -> np.ndarray:
    count = graph.rows
    owner = graph.row_of_entries()
    earlier = rank[graph.indices] < rank[owner]
    waiting = np.bincount(owner[earlier], minlength=count)
    colours = np.full(count, -1, np.int64)
    ready = np.flatnonzero(waiting == 0)
    while ready.size:
        around = gather(graph, ready)
        whose = around.row_of_entries()
        coloured = colours[around.indices]
        done = coloured >= 0
        colours[ready] = _smallest_free(whose[done], coloured[done], ready.size)
        released, times = _counted(around.indices[~done], count)
        waiting[released] -= times
        ready = released[waiting[released] == 0]
    return colours


def _counted(values: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values (all in range(count)) and how often each occurs: by a sort when there
    are few of them, so a round costs what its vertices touch, not the whole graph."""
    if values.size * 16 >= count:
        times = np.bincount(values, minlength=count)
        distinct = np.flatnonzero(times)
        return distinct, times[distinct]
    values = np.sort(values)
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1]))) if values.size else values
    return values[starts], np.diff(np.append(starts, values.size))


def _smallest_free(group: np.ndarray, colour: np.ndarray, count: int) -> np.ndarray:
    """For each group 0..count-1, the smallest colour >= 0 not among its ``colour`` entries."""
    if not group.size:
        return np.zeros(count, np.int64)
    span = int(colour.max()) + 2
    keys = np.sort(group * span + colour, kind="stable")
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    group, colour = keys // span, keys % span
    first = np.searchsorted(group, np.arange(count))
    consecutive = colour == np.arange(keys.size) - first[group]  # 0, 1, 2, ... from the start
    return np.bincount(group[consecutive], minlength=count)


def star_recovery(rows: np.ndarray, cols: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Where each entry (rows, cols) of a symmetric matrix is read from H S (n x k, flat, C order).

    Entries (i, j) and (j, i), i < j, are read at one place: at row i in column colour(j) when j's
    colour is unique in row i, else at row j in colour(i) (a star colouring makes one of the two
    unique), so the recovered matrix is exactly symmetric.

    Raises
    ------
    ValueError
        If the colouring is not a star colouring of the pattern (some entry is unreadable).

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> star_recovery(rows, cols, np.array([0, 1]))        # H S is 2 x 2: entries 0, 1, 1, 3
    array([0, 1, 1, 3])
    """
    k = int(colours.max()) + 1 if colours.size else 1
    counts = np.bincount(rows.astype(np.int64) * k + colours[cols], minlength=colours.size * k)
    low, high = np.minimum(rows, cols), np.maximum(rows, cols)
    at_low = low * k + colours[high]
    at_high = high * k + colours[low]
    readable_low = counts[at_low] == 1
    if not np.all(readable_low | (counts[at_high] == 1)):
        raise ValueError("autodiff: the colouring is not a star colouring of the pattern")
    return np.where(readable_low, at_low, at_high)


def column_recovery(rows: np.ndarray, cols: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Where each entry (rows, cols) is read from J S (m x k, flat, C order): row i, colour(j).

    Raises
    ------
    ValueError
        If two columns of one colour share a row.

    Examples
    --------
    >>> import numpy as np
    >>> column_recovery(np.array([0, 1]), np.array([0, 1]), np.array([0, 0]))   # a diagonal
    array([0, 1])
    """
    k = int(colours.max()) + 1 if colours.size else 1
    count = int(rows.max()) + 1 if rows.size else 0
    if not np.all(_unique_in_row(rows, colours[cols], k, count)):
        raise ValueError("autodiff: two columns of one colour share a row")
    return rows * k + colours[cols]


def _unique_in_row(rows: np.ndarray, colour: np.ndarray, k: int, count: int) -> np.ndarray:
    """For each entry, whether its colour occurs once in its row."""
    keys = rows.astype(np.int64) * k + colour
    return np.bincount(keys, minlength=count * k)[keys] == 1
