"""Sparse Hessians and Jacobians: exact patterns read from the recorded program, colourings, and
the whole matrix from a few products.

The engine records every operation, so the structure of a derivative is visible without probing:
each element of each recorded tensor carries the set of inputs it depends on, propagated through
the recording one primitive at a time, vectorized (``autodiff._propagation``). A Jacobian's pattern
is that of f's output; a Hessian's is the Jacobian pattern of the gradient, whose computation is
itself recorded as ordinary primitives (every rule is written with the engine's ops), so no
second-order rules are needed (Walther's nonlinear-interaction propagation, ACM TOMS 2008, would
need one per primitive). Patterns depend on shapes, axes and index arrays, never on values: a
multiplication by a value that happens to be zero keeps its entry, so no input that runs the same
program can produce a nonzero outside the pattern.

A colouring (``autodiff.coloring``) then groups the columns into k seeds, and one batched sweep of
k products recovers every entry (Curtis, Powell & Reid 1974; Coleman & Moré 1984). A Jacobian may
also be read from reverse products U^T J, a row colouring's: its dense rows (a budget, a total)
from one each, the rest from a column colouring (a bicolouring). ``sparse_hessian`` and
``sparse_jacobian`` find the pattern and colouring once per input signature and reuse them; a
pattern no colouring can compress to half the dense matrix's products is said so
(``DensePatternWarning``).

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> rosen = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
>>> pattern = ad.hessian_sparsity(rosen, np.zeros(5))
>>> pattern.nnz, pattern.coloring()          # tridiagonal: 3 colours, whatever n is
(13, array([0, 1, 2, 0, 1]))
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from . import coloring as coloring_
from ._propagation import propagate
from .core import Tensor, constant, value_of
from .function import function as replayed
from .jit import CACHE_SIZE, LeastRecentlyUsed
from .operators import hessian_operator
from .tape import GradientTape, UnconnectedGradients, require_scalar, require_tensors
from .tree import ravel

if TYPE_CHECKING:
    import scipy.sparse

    from .typing import ArrayLike

__all__ = ["DensePatternWarning", "SparsityPattern", "hessian_sparsity", "jacobian_sparsity", "sparse_hessian",
           "sparse_jacobian"]

ZERO = UnconnectedGradients.ZERO
_ALTERNATIVES = 8  # patterns kept per input signature (one per branch the program took)
_SEED_ENTRIES = 1 << 16  # seeds per sweep times n: a batch of products stays in cache


class SparsityPattern:
    """The structural nonzeros of a Jacobian (m x n) or a symmetric Hessian (n x n).

    ``rows`` and ``cols`` list the entries in row-major order. ``coloring()`` groups the columns
    for compressed products: a star colouring for a Hessian, a column colouring for a Jacobian;
    ``bicoloring()`` groups a Jacobian's columns and rows for forward and reverse products.

    Attributes
    ----------
    shape : tuple
        ``(m, n)``.
    nnz : int
        The number of structural nonzeros.
    rows, cols : ndarray of int
        Their positions, sorted by row, then column.
    symmetric : bool
        Whether it is a Hessian's pattern (coloured by a star colouring).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> pattern = ad.jacobian_sparsity(lambda x: x[1:] * x[:-1], np.ones(4))
    >>> pattern
    SparsityPattern(shape=(3, 4), nnz=6)
    >>> pattern.to_dense().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """

    def __init__(self, shape: tuple, rows: np.ndarray, cols: np.ndarray, symmetric: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.rows, self.cols = rows, cols
        self.nnz = int(rows.size)
        self.symmetric = symmetric
        self._coloring = None
        self._bicolorings: dict = {}

    def __repr__(self):
        return f"SparsityPattern(shape={self.shape}, nnz={self.nnz})"

    def coloring(self) -> np.ndarray:
        """One colour per column, computed once: columns of one colour share a product.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> arwhead = lambda x: np.sum(-4 * x[:-1] + 3) + np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2)
        >>> ad.hessian_sparsity(arwhead, np.ones(6)).coloring()   # an arrowhead: 2 colours
        array([0, 0, 0, 0, 0, 1])
        """
        if self._coloring is None:
            if self.symmetric:  # symmetric by construction
                self._coloring = coloring_._star(coloring_._csr(self.rows, self.cols, self.shape[0]))
            else:
                self._coloring = coloring_.column_coloring(self.rows, self.cols, self.shape)
        return self._coloring

    def bicoloring(self, partition: str = "auto") -> tuple[np.ndarray, np.ndarray]:
        """Colours of the columns (forward products J S) and of the rows (reverse products U^T J),
        -1 for a column or row in no product, computed once per ``partition``: "auto" (the fewest
        products), "columns", "rows" or "bidirectional" (see ``autodiff.coloring.bicoloring``).
        A Jacobian with a dense row (a budget, a total) takes a few colours and one reverse product
        where a column colouring takes one colour per column.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> pattern = ad.jacobian_sparsity(lambda x: np.append(x[1:] * x[:-1], np.sum(x)), np.ones(5))
        >>> columns, rows = pattern.bicoloring()
        >>> columns, rows                        # 2 forward products, 1 reverse product (the sum)
        (array([0, 1, 0, 1, 0]), array([-1, -1, -1, -1,  0]))
        >>> int(pattern.coloring().max()) + 1    # a column colouring alone: one colour per column
        5
        """
        if partition not in self._bicolorings:
            self._bicolorings[partition] = coloring_.bicoloring(self.rows, self.cols, self.shape, partition)
        return self._bicolorings[partition]

    def to_dense(self) -> np.ndarray:
        """The pattern as a boolean array.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> ad.hessian_sparsity(lambda x: np.sum(x ** 3), np.ones(2)).to_dense()
        array([[ True, False],
               [False,  True]])
        """
        dense = np.zeros(self.shape, bool)
        dense[self.rows, self.cols] = True
        return dense

    def to_scipy(self) -> scipy.sparse.csc_matrix:
        """The pattern as a boolean ``scipy.sparse.csc_matrix`` (scipy is imported here only).

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> ad.jacobian_sparsity(lambda x: x[::-1] ** 2, np.ones(3)).to_scipy().toarray()
        array([[False, False,  True],
               [False,  True, False],
               [ True, False, False]])
        """
        from scipy.sparse import csc_matrix
        return csc_matrix((np.ones(self.nnz, bool), (self.rows, self.cols)), shape=self.shape)


# --- the recording ------------------------------------------------------------------------------

class _Recording:
    """A recorded program: ``records`` compute ``target`` from ``source`` (x as a Tensor).
    ``same_program(x)`` tells whether another x of the same signature runs the same program (takes
    the same branches, reads the same integers); ``None``: it cannot be checked, so no other x does.
    """

    def __init__(self, records: list, source: Tensor, target, same_program: Callable | None):
        self.records, self.source, self.target = records, source, target
        self.same_program = same_program or (lambda x: False)


def _record(f: Callable, x: np.ndarray, hessian: bool) -> _Recording:
    """Record f at x (``hessian``: f and its gradient, which is the target) as a traced program.

    The one place that obtains recordings: traced by ``autodiff.function``'s tracer, whose guards
    say when another x would run another program; a function it refuses (one reading float values)
    is recorded eagerly on a tape, and its pattern holds at this x only.
    """
    from .jit import Program, UntraceableError
    from .jit.program import Retrace
    from .jit.tracing import record
    source = constant(x)

    def build():
        if not hessian:
            return require_tensors(f(source), "jacobian_sparsity")
        with GradientTape() as inner:
            inner.watch(source)
            y = require_scalar(f(source), "hessian_sparsity")
        return inner.gradient(y, source, unconnected_gradients=ZERO)
    try:
        recording = record(build, [source])
    except UntraceableError:
        with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
            tape.watch(source)
            target = build()
        return _Recording(tape.records, source, target, None)
    records, target = recording.records, recording.structure(recording.outputs)
    if not recording.guards:
        return _Recording(records, source, target, lambda x: True)
    check = Program(records, recording.inputs, [], recording.guards).run
    variables = recording.inputs[1:]

    def same_program(x):
        try:
            check(x, *[value_of(v) for v in variables])
            return True
        except Retrace:
            return False
    return _Recording(records, source, target, same_program)


def _prepared(f: Callable, x) -> tuple[tuple, np.ndarray, Callable]:
    """(signature, point, function of the point): an array as it is; a pytree (dicts, lists,
    tuples of arrays) as ``ravel(x)``'s flat vector, with f of the tree it unravels to."""
    if isinstance(x, (np.ndarray, np.generic, Tensor, int, float, complex)):
        point = np.asarray(value_of(x))
        point = point if point.dtype.kind in "fc" else point.astype(np.float64)
        return ("array", point.shape, point.dtype.str), point, f
    point, unravel = ravel(x)
    return ("tree", _structure(x)), point, lambda flat: f(unravel(flat))


def _structure(tree):
    """What makes two pytrees ravel alike: containers, keys, leaf shapes."""
    if isinstance(tree, dict):
        return dict, tuple((key, _structure(value)) for key, value in tree.items())
    if isinstance(tree, (list, tuple)):
        return type(tree), tuple(_structure(item) for item in tree)
    return np.shape(value_of(tree))


def _pattern(recording: _Recording, hessian: bool) -> SparsityPattern:
    target = recording.target
    if not isinstance(target, Tensor):
        raise TypeError("autodiff: the function's result is not a single array")
    n = recording.source.size
    found = propagate(recording.records, recording.source, target)
    rows, cols = found.row_of_entries(), found.indices
    if hessian:  # the gradient program's pattern, made symmetric (a superset, never a subset)
        both = coloring_._symmetric(found)
        return SparsityPattern((n, n), both.row_of_entries(), both.indices, symmetric=True)
    return SparsityPattern((target.size, n), rows, cols)


def hessian_sparsity(f: Callable, x: ArrayLike) -> SparsityPattern:
    """The exact structural pattern of the Hessian of a scalar f, found in its recorded program.

    The pattern is that of the Jacobian of the recorded gradient computation, made symmetric. It
    holds for every x that runs the same program as this one (the same branches and index
    values): it depends on shapes and indices, never on values.

    Parameters
    ----------
    f : callable
        A scalar function of one array (or pytree).
    x : array_like or pytree
        A point; the Hessian is over ``x.ravel()`` (n = x.size), or over ``ad.ravel(x)``'s flat
        vector for a pytree (dicts, lists, tuples of arrays).

    Returns
    -------
    SparsityPattern
        n x n, symmetric; ``coloring()`` is a star colouring.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.hessian_sparsity(lambda x: np.sum(x[1:] * x[:-1]) + x[0] ** 3, np.ones(3)).to_dense()
    array([[ True,  True, False],
           [ True, False,  True],
           [False,  True, False]])
    """
    _, point, function = _prepared(f, x)
    return _pattern(_record(function, point, hessian=True), hessian=True)


def jacobian_sparsity(f: Callable, x: ArrayLike) -> SparsityPattern:
    """The exact structural pattern of the Jacobian of f, found in its recorded program.

    Rows are the elements of ``f(x).ravel()``, columns those of ``x.ravel()``. It holds for every x
    that runs the same program (see ``hessian_sparsity``).

    Parameters
    ----------
    f : callable
        A function of one array (or pytree) returning an array.
    x : array_like or pytree
        A point (a pytree: columns over ``ad.ravel(x)``'s flat vector).

    Returns
    -------
    SparsityPattern
        m x n; ``coloring()`` is a column colouring.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> ad.jacobian_sparsity(lambda x: np.cumsum(x), np.ones(3)).to_dense()
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    """
    _, point, function = _prepared(f, x)
    return _pattern(_record(function, point, hessian=False), hessian=False)


# --- the matrices ------------------------------------------------------------------------------------

class DensePatternWarning(UserWarning):
    """A sparse Hessian or Jacobian was asked of a pattern so dense that its products save less
    than half of those of the dense matrix (``ad.hessian``, ``ad.jacobian``): no colouring is
    searched (each column is its own colour) and the caller decides (a dense method, or a
    structure the pattern cannot show, such as a low-rank term). Said once per pattern.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import autodiff as ad
    >>> rank_one = lambda x: np.sum(x) ** 2 + np.sum(x ** 4)     # a dense Hessian
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     H = ad.sparse_hessian(rank_one)(np.ones(100))
    >>> said[0].category.__name__, H.nnz
    ('DensePatternWarning', 10000)
    """


class _Compression:
    """A pattern with the products that recover it: forward seeds S (k_f x n: the products J S or
    H S) and reverse cotangents U (k_r x m: the products U^T J), and where each entry is read from
    them, in CSC order. Coloured on first use: a pattern asked for alone is not coloured."""

    def __init__(self, pattern: SparsityPattern, recording: _Recording, partition: str | None):
        self.pattern, self.recording, self.partition = pattern, recording, partition
        self.said_dense = False

    @cached_property
    def _colours(self) -> tuple[np.ndarray, np.ndarray]:
        """(column colours, row colours); -1: in no product. A Hessian: its star colouring, forward."""
        if self.pattern.symmetric:
            return self.pattern.coloring(), np.full(self.pattern.shape[0], -1, np.int64)
        return self.pattern.bicoloring(self.partition)

    @cached_property
    def seeds(self) -> np.ndarray:
        """One row per column colour."""
        return _indicators(self._colours[0])

    @cached_property
    def cotangents(self) -> np.ndarray:
        """One row per row colour."""
        return _indicators(self._colours[1])

    @property
    def products(self) -> int:
        """k_f + k_r."""
        return self.seeds.shape[0] + self.cotangents.shape[0]

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row indices, column pointers, where each entry is read) of the CSC matrix."""
        pattern, (columns, rows_) = self.pattern, self._colours
        rows, cols, n = pattern.rows, pattern.cols, pattern.shape[1]
        if pattern.symmetric:  # CSC of a symmetric pattern: the CSR arrays
            k = self.seeds.shape[0]
            read = coloring_.star_recovery(rows, cols, columns)     # in H S (n x k)
            read = (read % k) * n + read // k
            indices, order = cols, slice(None)
        else:
            read = coloring_.bicoloring_recovery(rows, cols, columns, rows_)
            order = np.argsort(cols, kind="stable")    # rows stay sorted within a column
            indices = rows[order]
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(cols if not pattern.symmetric else rows, minlength=n), out=indptr[1:])
        return indices, indptr, read[order]

    def matrix(self, forward: np.ndarray, reverse: np.ndarray):
        """The sparse matrix from the products: forward (k_f x m) and reverse (k_r x n), one row each."""
        from scipy.sparse import csc_matrix
        indices, indptr, read = self._layout
        values = np.concatenate([forward.ravel(), reverse.ravel()])[read]
        return csc_matrix((values, indices, indptr), shape=self.pattern.shape)


def _indicators(colours: np.ndarray) -> np.ndarray:
    """One row per colour, 1 at the members of that colour (-1: in none)."""
    coloured = colours >= 0
    found = np.zeros((int(colours.max(initial=-1)) + 1, colours.size))
    found[colours[coloured], np.flatnonzero(coloured)] = 1.0
    return found


class _Signature:
    """What a _Sparse keeps for one input signature: the compressions of the programs f ran (one
    per set of branches, the latest first) and the programs of the products."""

    __slots__ = ("compressions", "programs")

    def __init__(self, programs: tuple):
        self.compressions: list = []
        self.programs = programs


class _Sparse:
    """The shared part of sparse_hessian and sparse_jacobian. Per input signature (at most
    ``cache_size`` of them, the least recently used going first, as ``autodiff.function`` keeps
    its traces): the compressions of the programs f ran, found once, and the programs of the
    products, each an ``autodiff.function`` traced once and replayed (run eagerly when the tracer
    refuses f: ``untraced_reason`` says why). Pickled without them (they are made again), as
    ``autodiff.function`` is."""

    _hessian: bool
    _partition: str | None = None

    def __init__(self, f: Callable, cache_size: int = CACHE_SIZE):
        self.f = f
        self._cache = LeastRecentlyUsed(cache_size)     # signature -> _Signature
        self.cache_size = cache_size

    def __reduce__(self):
        return (type(self), (self.f, self.cache_size))

    @property
    def untraced_reason(self) -> str | None:
        """Why the products run eagerly (the tracer refused f), or None."""
        reasons = [program.fallback_reason for kept in self._cache.values() for program in kept.programs]
        return next((reason for reason in reasons[::-1] if reason), None)

    def __call__(self, x):
        signature, point, f = _prepared(self.f, x)
        compression = self.compression(point, signature, f)
        self._say_if_dense(compression)
        chunk = max(1, _SEED_ENTRIES // max(point.size, 1))
        programs = self._cache.get(signature).programs
        return compression.matrix(*self._products(programs, point, compression, chunk))

    def _say_if_dense(self, compression: _Compression) -> None:
        """Warn, once per pattern, when the fewest products found save less than half of the dense
        matrix's (a partition the caller chose is theirs)."""
        m, n = compression.pattern.shape
        dense = n if self._hessian else min(m, n)
        if (compression.said_dense or compression.partition not in (None, "auto")
                or coloring_.worth_colouring(compression.products, dense)):
            return
        compression.said_dense = True
        kind, whole = ("Hessian", "ad.hessian") if self._hessian else ("Jacobian", "ad.jacobian")
        warnings.warn(f"autodiff: the {kind}'s pattern is dense ({compression.pattern.nnz:,} of {m:,} x {n:,} "
                      f"entries): its {compression.products:,} products save less than half of the dense "
                      f"matrix's {dense:,}; {whole} gives it as an array", DensePatternWarning, stacklevel=3)

    def pattern(self, x) -> SparsityPattern:
        """The pattern for x, found once per input signature and branch (as the matrices' own):
        asking it first and the matrix after detects it once.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> hessian = ad.sparse_hessian(lambda x: np.sum(x[1:] * x[:-1] ** 2))
        >>> pattern = hessian.pattern(np.ones(1000))
        >>> pattern.nnz, hessian(np.ones(1000)).nnz
        (2997, 2997)
        """
        signature, point, f = _prepared(self.f, x)
        return self.compression(point, signature, f).pattern

    def compression(self, x: np.ndarray, signature: tuple, f: Callable) -> _Compression:
        """The pattern and colouring for x, from the cache when x runs a program seen before."""
        kept = self._cache.get(signature)
        if kept is None:
            kept = _Signature(self._programs(f))
            self._cache.put(signature, kept)
        known = kept.compressions
        for compression in known:
            if compression.recording.same_program(x):
                return compression
        recording = _record(f, x, self._hessian)
        compression = _Compression(_pattern(recording, self._hessian), recording, self._partition)
        known.insert(0, compression)
        del known[_ALTERNATIVES:]
        return compression


class SparseHessian(_Sparse):
    """``sparse_hessian(f)``: x -> the Hessian of f as a scipy.sparse CSC matrix.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> hessian = ad.sparse_hessian(lambda x: np.sum(x[1:] * x[:-1] ** 2))
    >>> hessian(np.array([1.0, 2.0, 3.0])).toarray()
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    >>> hessian.untraced_reason is None          # its products are a replayed program
    True
    """

    _hessian = True

    @staticmethod
    def _programs(f: Callable) -> tuple:
        return (replayed(f, eager_fallback=True),)

    @staticmethod
    def _products(programs: tuple, x: np.ndarray, compression: _Compression, chunk: int) -> tuple:
        """(H S)^T (k x n) from the replayed gradient, ``chunk`` seeds per sweep; no reverse products."""
        seeds, n = compression.seeds, x.size
        forward = hessian_operator(programs[0], x, chunk_size=chunk).matmat(seeds.T).T if seeds.size else seeds
        return forward, np.zeros((0, n))


class SparseJacobian(_Sparse):
    """``sparse_jacobian(f)``: x -> the Jacobian of f (f(x).size x x.size) as a CSC matrix.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> jacobian = ad.sparse_jacobian(lambda x: x[1:] ** 2 - x[:-1])
    >>> jacobian(np.array([1.0, 2.0, 3.0])).toarray()
    array([[-1.,  4.,  0.],
           [ 0., -1.,  6.]])
    """

    _hessian = False

    def __init__(self, f: Callable, cache_size: int = CACHE_SIZE, partition: str = "auto"):
        coloring_.check_partition(partition)
        super().__init__(f, cache_size)
        self._partition = partition

    def __reduce__(self):
        return (type(self), (self.f, self.cache_size, self._partition))

    @staticmethod
    def _programs(f: Callable) -> tuple:
        return (replayed(lambda x, seeds: _jacobian_products(f, x, seeds), eager_fallback=True),
                replayed(lambda x, cotangents: _vector_jacobian_products(f, x, cotangents), eager_fallback=True))

    @staticmethod
    def _products(programs: tuple, x: np.ndarray, compression: _Compression, chunk: int) -> tuple:
        """(J S)^T (k_f x m) and U^T J (k_r x n) from the replayed programs, ``chunk`` vectors per replay."""
        forward, reverse = programs
        m, n = compression.pattern.shape
        return (_in_chunks(lambda seeds: forward(x, seeds.reshape((-1,) + x.shape)), compression.seeds, m, chunk),
                _in_chunks(lambda cotangents: reverse(x, cotangents), compression.cotangents, n, chunk))


def _in_chunks(products: Callable, vectors: np.ndarray, length: int, chunk: int) -> np.ndarray:
    """``products(vectors[i:i + chunk])`` for the chunks of ``vectors``, stacked: a row of
    ``length`` per vector."""
    count = vectors.shape[0]
    if not count:
        return np.zeros((0, length))
    return np.concatenate([np.reshape(products(vectors[i:i + chunk]), (min(chunk, count - i), length))
                           for i in range(0, count, chunk)])


def _jacobian_products(f: Callable, x, seeds):
    """(J S)^T for seeds (c,) + x.shape in one batched sweep: the VJP u -> J^T u is recorded
    once, linear in u, and its own reverse sweep with the seeds as cotangents gives the rows of
    (J S)^T."""
    source = x if isinstance(x, Tensor) else constant(x)
    with GradientTape(persistent=True) as outer:
        with GradientTape() as inner:
            inner.watch(source)
            y = require_tensors(f(source), "sparse_jacobian")
        cotangent = constant(np.zeros(y.shape, y.dtype))
        outer.watch(cotangent)
        pulled = inner.gradient(y, source, output_gradients=cotangent, unconnected_gradients=ZERO)
    (products,) = outer.sweep([pulled], [seeds], [cotangent], (seeds.shape[0],))
    return np.zeros((seeds.shape[0],) + y.shape) if products is None else products


def _vector_jacobian_products(f: Callable, x, cotangents):
    """U^T J (c,) + x.shape for cotangents U^T (c x f(x).size) in one batched reverse sweep."""
    source = x if isinstance(x, Tensor) else constant(x)
    with GradientTape() as tape:
        tape.watch(source)
        y = require_tensors(f(source), "sparse_jacobian")
    count = cotangents.shape[0]
    (products,) = tape.sweep([y], [np.reshape(cotangents, (count,) + y.shape)], [source], (count,))
    return np.zeros((count,) + source.shape) if products is None else products


def sparse_hessian(f: Callable, *, cache_size: int = CACHE_SIZE) -> SparseHessian:
    """The Hessian of a scalar f as a function returning ``scipy.sparse`` CSC matrices.

    At the first x of a signature (shape and dtype, or pytree structure) the pattern is found in
    the recorded program and star-coloured with k colours; every call then takes one batched sweep
    of k Hessian-vector products and reads each entry from them. The products are an
    ``autodiff.function``, traced at the first call and replayed after; a function the tracer
    refuses (one reading float values) runs eagerly, ``untraced_reason`` says why, and its pattern
    is found again at every call (what it reads may change it). An x that takes other branches
    than the recorded program gets its own pattern. At most ``cache_size`` signatures are kept
    (the least recently used go first), as by ``autodiff.function``; a pickled one leaves them
    behind.

    Parameters
    ----------
    f : callable
        A scalar function of one array, or of a pytree (dicts, lists, tuples of arrays): the
        Hessian is over ``x.ravel()``, or over ``ad.ravel(x)``'s flat vector.
    cache_size : int, default 64
        How many input signatures (with their patterns and programs) are kept.

    Returns
    -------
    SparseHessian
        ``hessian(x)`` -> ``scipy.sparse.csc_matrix`` of shape (n, n), equal to the dense Hessian.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> rosen = lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> hessian = ad.sparse_hessian(rosen)
    >>> H = hessian(np.ones(100_000))                  # 3 products, not 100,000
    >>> H.shape, H.nnz, float(H[0, 0]), float(H[0, 1])
    ((100000, 100000), 299998, 802.0, -400.0)
    >>> ad.sparse_hessian(lambda p: np.sum(p["a"] ** 2 * p["b"]))({"a": np.ones(2), "b": 3.0}).toarray()
    array([[6., 0., 2.],
           [0., 6., 2.],
           [2., 2., 0.]])
    """
    return SparseHessian(f, cache_size)


def sparse_jacobian(f: Callable, *, partition: str = "auto", cache_size: int = CACHE_SIZE) -> SparseJacobian:
    """The Jacobian of f as a function returning ``scipy.sparse`` CSC matrices.

    At the first x of a signature the pattern is found in the recorded program and coloured
    (``SparsityPattern.bicoloring``): columns into k_f colours, for k_f Jacobian-vector products
    J S (Curtis, Powell & Reid 1974), and rows into k_r colours, for k_r vector-Jacobian products
    U^T J; every call then takes one batched sweep of each kind (traced and replayed, and at most
    ``cache_size`` signatures kept, as for ``sparse_hessian``) and reads each entry from them. A
    dense row (a budget sum(x) = 1, a total) would make a column colouring take one product per
    column: its entries come from one reverse product instead, the other rows' from a column
    colouring of the rest; a dense column likewise from one forward product. A pattern so dense that
    no colouring saves half the products of the dense matrix warns (``DensePatternWarning``).

    Parameters
    ----------
    f : callable
        A function of one array (or pytree: columns over ``ad.ravel(x)``) returning an array.
    partition : {"auto", "columns", "rows", "bidirectional"}, default "auto"
        Which products: the fewest of all ("auto"), forward only ("columns": a column colouring),
        reverse only ("rows": a row colouring), or both ("bidirectional": the longest rows by reverse
        products and the rest by a column colouring, or the longest columns forward and the rest by
        a row colouring, whichever takes fewer).
    cache_size : int, default 64
        How many input signatures (with their patterns and programs) are kept.

    Returns
    -------
    SparseJacobian
        ``jacobian(x)`` -> ``scipy.sparse.csc_matrix`` of shape (f(x).size, x.size).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> residuals = lambda x: np.concatenate([10 * (x[1:] - x[:-1] ** 2), 1 - x[:-1]])
    >>> J = ad.sparse_jacobian(residuals)(np.ones(4))
    >>> J.shape, J.nnz
    ((6, 4), 9)
    >>> budget = lambda x: np.append(x[1:] ** 2 - x[:-1], np.sum(x) - 1)   # a dense last row
    >>> columns, rows = ad.sparse_jacobian(budget).pattern(np.ones(100_000)).bicoloring()
    >>> int(columns.max()) + 1, int(rows.max()) + 1          # 2 + 1 products, not 100,000
    (2, 1)
    """
    return SparseJacobian(f, cache_size, partition)
