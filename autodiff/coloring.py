"""Colourings that compress a sparse Jacobian or Hessian into a few products, and their recovery.

Columns of one colour are summed into one product (a seed vector), so k colours give the whole
matrix from k products. A *column colouring* (Curtis, Powell & Reid 1974) gives two columns that
share a row different colours, so each entry of J S is one entry of J. For a symmetric Hessian a
*star colouring* needs fewer colours (Coleman & Moré 1984; Gebremedhin, Manne & Pothen, "What
color is your Jacobian? Graph coloring for computing derivatives", SIAM Review 2005): a distance-1
colouring in which every path on four vertices uses three colours, which is exactly what makes
every entry readable directly from H S, at row i or, by symmetry, at row j.

Both are stated row by row, never as a list of conflicting pairs (a distance-2 list holds about
the sum of the squared row lengths; an arrowhead's dense row alone would make it n^2): in each row
some members are *read* there, and a read member's colour must differ from those of all the
row's other members. For a column colouring every member of every row is read. For a star
colouring each off-diagonal entry is read at the row of its endpoint of smaller degree (ties: the
smaller index), so an arrowhead's dense row reads nothing and its short rows read the dense
column; the rule gives every edge distinct colours and leaves no path a-b-c-d two-coloured (the
edge b-c is read at b or at c, and a or d would share the read colour there).

The colouring is greedy, in an order opened class by class: dense vertices (in many rows) first,
then the classes ``(b * (i // L) + i % L) % p`` of a periodic colouring of the vertex indices i,
with the smallest p under which no two conflicting vertices of a sample share a class. On a band
of half-bandwidth h that is i % (2h + 1), the natural greedy order; on a grid stored row by row
(rows of length L) a lattice colouring (p = 7 on a 7-point stencil: a perfect distance-2
colouring). When the classes have no conflict, each is coloured in one round: a vertex takes the
smallest colour absent from per-row bitmasks of 64 colours (one OR per row it is in, kept up to
date), so the whole colouring costs a few passes over the rows, and the result is checked. When
no period fits (an irregular pattern), or the check fails, the greedy colouring runs in
Jones-Plassmann rounds (Jones & Plassmann 1993: a vertex is coloured once every conflicting
vertex before it in the order is, which gives exactly the sequential greedy colouring) and is
then recoloured by iterated greedy (Culberson 1992: the classes of the last colouring, largest
colour first, each in one round; a pass never adds a colour). No step loops over vertices in
Python.

A Jacobian with a dense row (a budget sum(x) = 1 beside sparse rows) would take one column colour
per column, and one with a dense column one row colour per row. A *bicolouring* computes it from
both sides: forward products J S for a column colouring of some entries and reverse products U^T J
for a row colouring of the others, each a partial distance-2 colouring of its part (Gebremedhin,
Manne & Pothen 2005), together a star bicolouring in the sense of Coleman & Verma ("The efficient
computation of sparse Jacobian matrices using automatic differentiation", SIAM J. Sci. Comput.
19, 1998), in which a row or column in no product has the neutral colour -1. The split is by
length: the d longest rows go to reverse products (or the d longest columns to forward ones), d
minimizing d + the longest line left. ``bicoloring`` colours the candidates (all forward, all
reverse, the two splits) in the order of lower bounds on their products (the longest row of the
forward part plus the longest column of the reverse part) and stops when no bound left is below
the fewest products found, so "auto" never takes more products than another partition.

A pattern so dense that no colouring can save half the products of the dense matrix (every
vertex conflicting with most others: a rank-one term's dense Hessian) gets one colour per vertex
at once: its greedy search, with hundreds of colours past the 64 of one bitmask word, would cost
more than the products it could save (``worth_colouring``).

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

from ._index_sets import Sets, _distinct_sorted, segments, union

__all__ = ["star_coloring", "column_coloring", "bicoloring", "star_recovery", "column_recovery",
           "bicoloring_recovery", "worth_colouring", "check_partition", "PARTITIONS"]

_WORD = 64                          # colours looked at per pass, one bit each in a uint64
_LAST = np.iinfo(np.int64).max      # the priority of a vertex no longer waiting
_BIT = np.append(np.left_shift(np.uint64(1), np.arange(_WORD, dtype=np.uint64)), np.uint64(0))
_SAMPLE = 1000                      # vertices whose conflicts choose the period p
_PAIRS = 1 << 14                    # conflicting pairs of theirs looked at, at most
_PERIODS = 64                       # the largest period p tried
_LENGTHS = 32                       # row lengths L tried (the most frequent spans)
_RECOLOURINGS = 3                   # iterated greedy passes at most
_BLOCK = 1 << 15                    # vertices of a class coloured at a time


def _csr(rows: np.ndarray, cols: np.ndarray, count: int) -> Sets:
    """Rows of sorted, distinct column indices from (row, col) pairs (no sort when they come so)."""
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    keys = rows * count + cols
    if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
        return Sets.from_keys(_distinct_sorted(np.sort(keys, kind="stable")), count, count)
    indptr = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=count), out=indptr[1:])
    return Sets(indptr, cols, count)


def _transposed(matrix: Sets, columns: int) -> Sets:
    """The column-wise layout of a row-wise pattern."""
    order = np.argsort(matrix.indices, kind="stable")   # a stable sort: rows stay sorted per column
    indptr = np.zeros(columns + 1, np.int64)
    np.cumsum(np.bincount(matrix.indices, minlength=columns), out=indptr[1:])
    return Sets(indptr, matrix.row_of_entries()[order], matrix.rows)


class _Rows:
    """Colouring constraints by rows: a member that a row reads differs in colour from every other
    member of the row. ``members``: row -> vertices; ``reads``: per member entry, whether the row
    reads it; ``incidence``: vertex -> the rows it is a member of; ``read_at``: per incidence entry,
    whether that row reads the vertex."""

    def __init__(self, members: Sets, reads: np.ndarray, incidence: Sets, read_at: np.ndarray):
        self.members, self.incidence, self.read_at = members, incidence, read_at
        self.reads = reads
        if reads.all():
            self.read = members
        else:
            indptr = np.zeros(members.rows + 1, np.int64)
            np.cumsum(np.bincount(members.row_of_entries()[reads], minlength=members.rows), out=indptr[1:])
            self.read = Sets(indptr, members.indices[reads], members.n)

    def around(self, vertices: np.ndarray, colours: np.ndarray, waiting: np.ndarray, window: int):
        """For each vertex, the colours in ``window`` (64 of them) that the vertices it conflicts
        with have taken, as a bitmask, and the smallest ``waiting`` priority among them (itself
        included)."""
        indptr, where = segments(self.incidence, vertices)
        rows = self.incidence.indices[where]
        mask, low = _over(self.read, rows, colours, waiting, window)      # a row's read members
        reading = self.read_at[where]
        if self.read is self.members:
            return _fold(mask, low, indptr)
        whole, whole_low = _over(self.members, rows[reading], colours, waiting, window)
        mask[reading] |= whole                                             # all members of a reading row
        low[reading] = np.minimum(low[reading], whole_low)
        return _fold(mask, low, indptr)


def _over(sets: Sets, rows: np.ndarray, colours: np.ndarray, waiting: np.ndarray, window: int):
    """Per row in ``rows``: the bitmask of its members' colours in ``window`` and their smallest
    waiting priority."""
    indptr, where = segments(sets, rows)
    members = sets.indices[where]
    return _fold(_bits(colours[members], window), waiting[members], indptr)


def _fold(mask: np.ndarray, low: np.ndarray | None, indptr: np.ndarray):
    """Bitwise OR and minimum (unless ``low`` is None) over consecutive segments (empty ones: 0
    and no priority)."""
    count = indptr.size - 1
    mask_out = np.zeros(count, np.uint64)
    low_out = None if low is None else np.full(count, _LAST, np.int64)
    filled = indptr[:-1] < indptr[1:]
    if mask.size:
        starts = indptr[:-1][filled]
        mask_out[filled] = np.bitwise_or.reduceat(mask, starts)
        if low is not None:
            low_out[filled] = np.minimum.reduceat(low, starts)
    return mask_out, low_out


def _bits(colours: np.ndarray, window: int) -> np.ndarray:
    """One bit per colour inside ``window`` (colours window*64 .. window*64 + 63); 0 otherwise
    (uncoloured: -1)."""
    return _BIT[np.minimum((colours - window * _WORD).astype(np.uint64), _WORD)]


def _first_free(mask: np.ndarray) -> np.ndarray:
    """The lowest clear bit of each mask (-1 where all 64 are set)."""
    free = ~mask
    lowest = free & (~free + np.uint64(1))
    found = np.frexp(lowest.astype(np.float64))[1] - 1     # exact: a power of two
    return np.where(free == 0, -1, found).astype(np.int64)


def _by_classes(rows: _Rows, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The greedy colouring in ``order`` when no two vertices of a class (bounded by ``starts``)
    conflict: one round per class, reading the colours around each vertex from bitmasks per row
    kept up to date (the colours of its members and of its read members), so the whole colouring
    costs a few passes over the rows."""
    incidence = rows.incidence
    colours = np.full(incidence.rows, -1, np.int64)
    of_members = np.zeros(rows.members.rows, np.uint64)
    of_read = np.zeros(rows.members.rows, np.uint64)
    for low, high in _blocks(starts):
        vertices = order[low:high]
        indptr, where = segments(incidence, vertices)
        row = incidence.indices[where]
        reading = rows.read_at[where]
        around = of_read[row]
        around[reading] |= of_members[row[reading]]
        found = _first_free(_fold(around, None, indptr)[0])
        full = found < 0
        if full.any():
            found[full] = _beyond(rows, vertices[full], colours)
        colours[vertices] = found
        bits = np.repeat(_bits(found, 0), np.diff(indptr))
        np.bitwise_or.at(of_members, row, bits)
        np.bitwise_or.at(of_read, row[reading], bits[reading])
    return colours


def _blocks(starts: np.ndarray):
    """Each class bounded by ``starts`` in blocks of at most ``_BLOCK`` vertices, which keep the
    arrays of a round in cache (a class has no conflict inside, so its blocks may follow one
    another): (low, high) bounds."""
    for k in range(starts.size - 1):
        for low in range(starts[k], starts[k + 1], _BLOCK):
            yield low, min(low + _BLOCK, starts[k + 1])


def _outlying(lengths: np.ndarray) -> np.ndarray:
    """Which lengths stand far above the typical one (4 x the median): dense rows and columns."""
    return lengths > 4 * max(float(np.median(lengths)), 1.0) if lengths.size else lengths > 0


def _jones_plassmann(rows: _Rows, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The greedy colouring in ``order``, in Jones-Plassmann rounds; ``starts`` bounds the classes
    of ``order`` opened one per round (a vertex waits while a conflicting one before it in
    ``order`` is uncoloured, so a round colours what is ready of what is open)."""
    count = rows.incidence.rows
    colours = np.full(count, -1, np.int64)
    rank = np.empty(count, np.int64)
    rank[order] = np.arange(count)
    waiting = np.full(count, _LAST, np.int64)
    pending = np.zeros(0, np.int64)
    opened = 0
    while opened < starts.size - 1 or pending.size:
        if opened < starts.size - 1:
            new = order[starts[opened]:starts[opened + 1]]
            waiting[new] = rank[new]
            pending = np.concatenate([pending, new])
            opened += 1
        mask, low = rows.around(pending, colours, waiting, 0)
        ready = low >= rank[pending]
        vertices = pending[ready]
        found = _first_free(mask[ready])
        full = found < 0
        if full.any():
            found[full] = _beyond(rows, vertices[full], colours)
        colours[vertices] = found
        waiting[vertices] = _LAST
        pending = pending[~ready]
    return colours


def _beyond(rows: _Rows, vertices: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """For vertices no two of which conflict, all of whose first 64 colours are taken around
    them: the smallest colour not taken, looking 64 colours further at a time."""
    found = np.full(vertices.size, -1, np.int64)
    waiting = np.full(colours.size, _LAST, np.int64)
    window, full = 0, np.arange(vertices.size)
    while full.size:
        window += 1
        further = _first_free(rows.around(vertices[full], colours, waiting, window)[0])
        found[full] = np.where(further < 0, -1, further + window * _WORD)
        full = full[further < 0]
    return found


def _valid(rows: _Rows, colours: np.ndarray) -> bool:
    """Whether every member a row reads has a colour no other member of the row has: the colours
    counted per row, in blocks of rows whose tables stay in cache."""
    members, k = rows.members, int(colours.max()) + 1
    for low in range(0, members.rows, _BLOCK):
        bounds = members.indptr[low:low + _BLOCK + 1]
        entries = slice(bounds[0], bounds[-1])
        keys = np.repeat(np.arange(bounds.size - 1) * k, np.diff(bounds)) + colours[members.indices[entries]]
        if not np.all(np.bincount(keys, minlength=(bounds.size - 1) * k)[keys[rows.reads[entries]]] == 1):
            return False
    return True


def _order(rows: _Rows) -> tuple[np.ndarray, np.ndarray, bool]:
    """The priority order, in classes opened one per round: dense vertices (in many rows) first,
    then the others by the class of a periodic colouring that fits a sample of the conflicts (see
    ``_periodic``), by index within a class; random when none fits."""
    count = rows.incidence.rows
    dense = _outlying(rows.incidence.lengths())
    classes = _periodic(rows, dense)
    if classes is None:
        order = np.random.default_rng(0).permutation(np.flatnonzero(~dense))
        return np.concatenate([np.flatnonzero(dense), order]), np.array([0, dense.sum(), count]), False
    classes = np.where(dense, 0, classes + 1).astype(np.uint16)
    order = np.argsort(classes, kind="stable")                  # a radix sort: linear
    return order, np.concatenate([[0], np.cumsum(np.bincount(classes))]), True


def _periodic(rows: _Rows, dense: np.ndarray) -> np.ndarray | None:
    """Classes ``(b * (i // L) + i % L) % p`` for vertex i, with the smallest p (then L and b)
    under which no two conflicting ordinary vertices in a sample share a class, or None if no
    p up to 64 does. On a band L is n (the class is i % p, p = 2 x half-bandwidth + 1: the natural
    greedy order); on a grid of rows of length L it is a lattice colouring (p = 7 on a 7-point
    stencil, a perfect distance-2 colouring)."""
    count = dense.size
    first, second = _sampled_conflicts(rows, dense)
    if not first.size:
        return np.zeros(count, np.int64)
    spans = np.abs(second - first)
    spans = spans[spans > 1]
    distinct, times = np.unique(spans, return_counts=True)
    steps = []
    for length in [count] + list(distinct[np.argsort(-times, kind="stable")][:_LENGTHS]):
        down = second // length - first // length
        across = second % length - first % length
        key = np.unique(down * (2 * count + 1) + across + count)
        down = key // (2 * count + 1)
        steps.append((int(length), (down, key - down * (2 * count + 1) - count)))
    for period in range(2, _PERIODS + 1):
        b = np.arange(period)[:, None]
        for length, (down, across) in steps:
            seen = np.zeros(period * period, bool)               # the shifts modulo p, at most p^2
            seen[(down % period) * period + across % period] = True
            down_p, across_p = np.divmod(np.flatnonzero(seen), period)
            fits = np.all((b * down_p + across_p) % period != 0, axis=1)
            if fits.any():
                i = np.arange(count)
                return (int(np.argmax(fits)) * (i // length) + i % length) % period
    return None


def _sampled_conflicts(rows: _Rows, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of conflicting ordinary vertices through ordinary rows, from a sample spread evenly
    over the vertices."""
    count = dense.size
    sample = np.unique(np.linspace(0, count - 1, min(count, _SAMPLE)).astype(np.int64))
    sample = sample[~dense[sample]]
    long_rows = _outlying(rows.members.lengths())
    indptr, where = segments(rows.incidence, sample)
    row = rows.incidence.indices[where]
    kept = ~long_rows[row]
    owner = np.repeat(sample, np.diff(indptr))[kept]
    row, reading = row[kept], rows.read_at[where][kept]
    firsts, seconds = [], []
    for sets, chosen in ((rows.read, slice(None)), (rows.members, reading)):
        bounds, at = segments(sets, row[chosen])
        other = sets.indices[at]
        first = np.repeat(owner[chosen], np.diff(bounds))
        keep = ~dense[other] & (other != first)
        firsts.append(first[keep])
        seconds.append(other[keep])
    first, second = np.concatenate(firsts), np.concatenate(seconds)
    if first.size > _PAIRS:                                     # a dense pattern: a spread of them
        kept = np.linspace(0, first.size - 1, _PAIRS).astype(np.int64)
        first, second = first[kept], second[kept]
    return first, second


def _recoloured(rows: _Rows, colours: np.ndarray) -> np.ndarray:
    """Iterated greedy (Culberson 1992): recolour class by class, the last colour's class first;
    each class is independent, so each is one round, and the colours never grow."""
    for _ in range(_RECOLOURINGS):
        k = int(colours.max()) + 1
        later = (k - 1 - colours).astype(np.uint16 if k <= 1 << 16 else np.int64)
        again = _by_classes(rows, np.argsort(later, kind="stable"),
                            np.concatenate([[0], np.cumsum(np.bincount(later, minlength=k))]))
        if again.max() >= colours.max():
            break
        colours = again
    return colours


def _colour(rows: _Rows) -> np.ndarray:
    """The greedy colouring in the order of ``_order``: class by class when its classes fit (the
    result checked), else in Jones-Plassmann rounds and then recoloured; each vertex its own colour
    when no colouring can be worth its search (``worth_colouring``)."""
    if not rows.incidence.rows:
        return np.zeros(0, np.int64)
    present = rows.incidence.lengths() > 0
    if not worth_colouring(_needed(rows), int(present.sum())):
        colours = np.zeros(rows.incidence.rows, np.int64)
        colours[present] = np.arange(int(present.sum()))
        return colours
    order, starts, fitted = _order(rows)
    if fitted:
        colours = _by_classes(rows, order, starts)
        if _valid(rows, colours):
            return colours
    return _recoloured(rows, _jones_plassmann(rows, order, starts))


def _needed(rows: _Rows) -> int:
    """A lower bound on the colours of any colouring: in each row, every read member takes a colour
    of its own, and the members it does not read at least one more."""
    lengths, read = rows.members.lengths(), rows.read.lengths()
    return int(np.max(read + (lengths > read), initial=0))


def worth_colouring(colours: int, dense: int) -> bool:
    """Whether ``colours`` products (at least) can be worth a colouring against the ``dense``
    products of the whole matrix: within one word of 64 colours (the greedy search is fast there)
    or under half of them. Past that a colouring saves less than half the products, and its search
    (every vertex conflicting with most others, hundreds of colours) costs more than it saves.

    Examples
    --------
    >>> worth_colouring(3, 100_000), worth_colouring(60, 100), worth_colouring(600, 1000)
    (True, True, False)
    """
    return colours <= _WORD or 2 * colours < dense


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
    return _star(_symmetric(_csr(rows, cols, n)))


def _star(graph: Sets) -> np.ndarray:
    """A star colouring of a symmetric pattern: each off-diagonal entry read at the row of its
    endpoint of smaller degree (ties: smaller index), every row holding its own vertex."""
    n = graph.rows
    owner = graph.row_of_entries()
    if not np.array_equal(np.bincount(owner[graph.indices == owner], minlength=n), np.ones(n, np.int64)):
        graph = union([graph, Sets.identity(n)])
        owner = graph.row_of_entries()
    degree = graph.lengths()
    member = graph.indices
    mine, theirs = np.repeat(degree, degree), degree[member]
    off_diagonal = owner != member
    reads = off_diagonal & ((mine < theirs) | ((mine == theirs) & (owner < member)))
    return _colour(_Rows(graph, reads, graph, off_diagonal & ~reads))   # the other end reads the rest


def _symmetric(graph: Sets) -> Sets:
    """The pattern joined with its transpose (itself when it is symmetric). Symmetric: every row's
    length is its column's count, and the keys of the transposed entries, sorted, are the keys;
    long columns (a dense one) and the others are compared apart, so that each part of the
    transposed keys comes in a few sorted runs, which a stable sort merges in linear time."""
    n = graph.rows
    rows, lengths = graph.row_of_entries(), graph.lengths()
    keys = rows * n + graph.indices
    if np.array_equal(np.bincount(graph.indices, minlength=n), lengths):
        long = _outlying(lengths)
        mirrored = graph.indices * n + rows
        if not long.any():
            if np.array_equal(np.sort(mirrored, kind="stable"), keys):
                return graph
        else:
            in_long = long[graph.indices]
            if all(np.array_equal(np.sort(mirrored[part], kind="stable"), keys[long[rows] == side])
                   for part, side in ((in_long, True), (~in_long, False))):
                return graph
    mirrored = np.sort(graph.indices * n + rows, kind="stable")
    return Sets.from_keys(_distinct_sorted(np.sort(np.concatenate([keys, mirrored]), kind="stable")), n, n)


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
    by_row = _csr(rows, cols, max(m, n))
    by_column = _transposed(by_row, max(m, n))
    everywhere = np.ones(by_row.nnz, bool)
    colours = _colour(_Rows(by_row, everywhere, by_column, everywhere))
    return colours[:n]


PARTITIONS = ("auto", "columns", "rows", "bidirectional")   # the products a Jacobian may be computed from


def bicoloring(rows: np.ndarray, cols: np.ndarray, shape: tuple,
               partition: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Colours of the columns and of the rows of an m x n Jacobian pattern for forward products
    J S (a seed per column colour) and reverse products U^T J (a cotangent per row colour); -1 for
    a column or row in no product. ``bicoloring_recovery`` reads every entry from them.

    ``partition``: "columns" (forward products only: a column colouring), "rows" (reverse only: a
    column colouring of the transpose), "bidirectional" (the entries of the longest rows read from
    reverse products, the rest from forward ones, or the longest columns forward and the rest
    reverse, whichever takes fewer products), "auto" (the fewest products of them all). Candidates
    are coloured in the order of their lower bounds, and one whose bound reaches the products
    already found is not coloured.

    Examples
    --------
    A chain of rows (i, i + 1) with a dense last row (a budget): a column colouring needs one
    colour per column, the split two colours and one reverse product.

    >>> import numpy as np
    >>> n = 6
    >>> rows = np.concatenate([np.repeat(np.arange(n - 1), 2), np.full(n, n - 1)])
    >>> cols = np.concatenate([np.stack([np.arange(n - 1), np.arange(1, n)], 1).ravel(), np.arange(n)])
    >>> bicoloring(rows, cols, (n, n))
    (array([0, 1, 0, 1, 0, 1]), array([-1, -1, -1, -1, -1,  0]))
    >>> bicoloring(rows, cols, (n, n), "columns")[0]
    array([0, 1, 2, 3, 4, 5])
    """
    check_partition(partition)
    rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
    best, fewest = None, 0
    for bound, reverse in sorted(_candidates(rows, cols, shape, partition), key=lambda candidate: candidate[0]):
        if best is not None and bound >= fewest:
            break
        found = _split(rows, cols, shape, reverse)
        products = int(found[0].max(initial=-1)) + int(found[1].max(initial=-1)) + 2
        if best is None or products < fewest:
            best, fewest = found, products
    return best


def check_partition(partition: str) -> None:
    """Refuse, by name, a partition that is not one of ``PARTITIONS``.

    Examples
    --------
    >>> check_partition("rows")
    >>> check_partition("row")
    Traceback (most recent call last):
    ...
    ValueError: partition must be one of 'auto', 'columns', 'rows', 'bidirectional', got 'row'
    """
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {', '.join(map(repr, PARTITIONS))}, got {partition!r}")


def _candidates(rows: np.ndarray, cols: np.ndarray, shape: tuple, partition: str) -> list:
    """(lower bound on the products, which entries are read from reverse products) of each way to
    compute the matrix that ``partition`` allows, in the order preferred among equal bounds: all
    entries forward, the longest rows reverse, all reverse, the longest columns forward (a split
    only where there are long rows or columns, unless asked for)."""
    m, n = shape
    long_rows, long_columns = _longest(np.bincount(rows, minlength=m)), _longest(np.bincount(cols, minlength=n))
    reverse = []
    if partition in ("auto", "columns"):
        reverse.append(np.zeros(rows.size, bool))
    if partition == "bidirectional" or (partition == "auto" and long_rows.any()):
        reverse.append(long_rows[rows])
    if partition in ("auto", "rows"):
        reverse.append(np.ones(rows.size, bool))
    if partition == "bidirectional" or (partition == "auto" and long_columns.any()):
        reverse.append(~long_columns[cols])
    return [(_lower_bound(rows, cols, shape, chosen), chosen) for chosen in reverse]


def _longest(lengths: np.ndarray) -> np.ndarray:
    """The d longest lines (rows or columns), d minimizing d + the longest line left (their own
    products and a colouring of the rest, at least), the fewest among equal values."""
    descending = np.append(np.sort(lengths)[::-1], 0)
    d = int(np.argmin(np.arange(descending.size) + descending))
    return lengths > descending[d]


def _lower_bound(rows: np.ndarray, cols: np.ndarray, shape: tuple, reverse: np.ndarray) -> int:
    """The products no colouring of a split can go below: the longest row of its forward part
    (one colour per member) and the longest column of its reverse part."""
    m, n = shape
    return (int(np.bincount(rows[~reverse], minlength=m).max(initial=0))
            + int(np.bincount(cols[reverse], minlength=n).max(initial=0)))


def _split(rows: np.ndarray, cols: np.ndarray, shape: tuple, reverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column colours for the entries not in ``reverse`` and row colours for those in it, each a
    partial distance-2 colouring of its part (Gebremedhin, Manne & Pothen 2005)."""
    m, n = shape
    return _partial(rows, cols, (m, n), ~reverse), _partial(cols, rows, (n, m), reverse)


def _partial(rows: np.ndarray, cols: np.ndarray, shape: tuple, kept: np.ndarray) -> np.ndarray:
    """A column colouring of the entries ``kept``: -1 for a column without one, the others numbered
    from 0 without gaps."""
    colours = np.full(shape[1], -1, np.int64)
    if kept.any():
        found = column_coloring(rows[kept], cols[kept], shape)
        present = np.zeros(shape[1], bool)
        present[cols[kept]] = True
        colours[present] = np.unique(found[present], return_inverse=True)[1]
    return colours


def bicoloring_recovery(rows: np.ndarray, cols: np.ndarray, column_colours: np.ndarray,
                        row_colours: np.ndarray) -> np.ndarray:
    """Where each entry (rows, cols) is read from the products laid flat one after the other: the
    k_f forward products J S (m each) then the k_r reverse products U^T J (n each).

    Entry (i, j) is read from forward product colour(j) at i when no other coloured column of row i
    shares that colour, else from reverse product colour(i) at j when no other coloured row of
    column j shares it.

    Raises
    ------
    ValueError
        If some entry is readable from neither.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = np.array([0, 0, 1]), np.array([0, 1, 0])      # a dense first row and column
    >>> bicoloring_recovery(rows, cols, np.array([0, -1]), np.array([0, -1]))   # J e_0, then e_0^T J
    array([0, 3, 1])
    """
    m, n = row_colours.size, column_colours.size
    k_forward = int(column_colours.max(initial=-1)) + 1
    k_reverse = int(row_colours.max(initial=-1)) + 1
    forward, reverse = column_colours[cols], row_colours[rows]
    forward_read = _readable(rows, forward, k_forward, m)
    reverse_read = _readable(cols, reverse, k_reverse, n)
    if not np.all(forward_read | reverse_read):
        raise ValueError("autodiff: the bicolouring leaves an entry readable from no product")
    return np.where(forward_read, forward * m + rows, k_forward * m + reverse * n + cols)


def _readable(lines: np.ndarray, colours: np.ndarray, k: int, count: int) -> np.ndarray:
    """For each entry, whether it has a colour (not -1) that no other entry of its line shares."""
    coloured = colours >= 0
    readable = np.zeros(lines.size, bool)
    readable[coloured] = _unique_in_row(lines[coloured], colours[coloured], k, count)
    return readable


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
    low, high = np.minimum(rows, cols), np.maximum(rows, cols)
    at_low = low * k + colours[high]
    at_high = high * k + colours[low]
    counts = _occurrences(rows.astype(np.int64) * k + colours[cols], np.concatenate([at_low, at_high]),
                          colours.size * k)
    readable_low = counts[:rows.size] == 1
    if not np.all(readable_low | (counts[rows.size:] == 1)):
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
    return _occurrences(keys, keys, count * k) == 1


def _occurrences(keys: np.ndarray, queries: np.ndarray, size: int) -> np.ndarray:
    """How often each query occurs among ``keys`` (all in range(size)): counted in a table when it
    is not much larger than the keys, else found by a sort."""
    if size <= 4 * keys.size + (1 << 20):
        return np.bincount(keys, minlength=size)[queries]
    ordered = np.sort(keys)
    return np.searchsorted(ordered, queries, "right") - np.searchsorted(ordered, queries, "left")
