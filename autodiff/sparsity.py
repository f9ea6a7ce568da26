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
k products recovers every entry (Curtis, Powell & Reid 1974; Coleman & Moré 1984). ``sparse_hessian``
and ``sparse_jacobian`` find the pattern and colouring once per input signature and reuse them.

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
from .tape import GradientTape, UnconnectedGradients, _require_scalar, _require_tensors
from .tree import ravel

if TYPE_CHECKING:
    import scipy.sparse

    from .typing import ArrayLike

__all__ = ["SparsityPattern", "hessian_sparsity", "jacobian_sparsity", "sparse_hessian", "sparse_jacobian"]

ZERO = UnconnectedGradients.ZERO
_ALTERNATIVES = 8  # patterns kept per input signature (one per branch the program took)
_SEED_ENTRIES = 1 << 16  # seeds per sweep times n: a batch of products stays in cache


class SparsityPattern:
    """The structural nonzeros of a Jacobian (m x n) or a symmetric Hessian (n x n).

    ``rows`` and ``cols`` list the entries in row-major order. ``coloring()`` groups the columns
    for compressed products: a star colouring for a Hessian, a column colouring for a Jacobian.

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
            return _require_tensors(f(source), "jacobian_sparsity")
        with GradientTape() as inner:
            inner.watch(source)
            y = _require_scalar(f(source), "hessian_sparsity")
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

class _Compression:
    """A pattern with its colouring: the k seeds and where each entry is read from the k products,
    in CSC order (coloured on first use: a pattern asked for alone is not coloured)."""

    def __init__(self, pattern: SparsityPattern, recording: _Recording):
        self.pattern, self.recording = pattern, recording

    @cached_property
    def k(self) -> int:
        colours = self.pattern.coloring()
        return int(colours.max()) + 1 if self.pattern.shape[1] else 0

    @cached_property
    def seeds(self) -> np.ndarray:
        """One row per colour."""
        n = self.pattern.shape[1]
        seeds = np.zeros((self.k, n))
        seeds[self.pattern.coloring(), np.arange(n)] = 1.0
        return seeds

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row indices, column pointers, where each entry is read) of the CSC matrix."""
        pattern, colours = self.pattern, self.pattern.coloring()
        rows, cols, n = pattern.rows, pattern.cols, pattern.shape[1]
        if pattern.symmetric:  # CSC of a symmetric pattern: the CSR arrays
            read = coloring_.star_recovery(rows, cols, colours)
            indices, order = cols, slice(None)
        else:
            read = coloring_.column_recovery(rows, cols, colours)
            order = np.argsort(cols, kind="stable")    # rows stay sorted within a column
            indices = rows[order]
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(cols if not pattern.symmetric else rows, minlength=n), out=indptr[1:])
        return indices, indptr, read[order]

    def matrix(self, products: np.ndarray):
        """The sparse matrix from the products (k x m: one row per colour)."""
        from scipy.sparse import csc_matrix
        indices, indptr, read = self._layout
        return csc_matrix((products.T.ravel()[read], indices, indptr), shape=self.pattern.shape)


class _Signature:
    """What a _Sparse keeps for one input signature: the compressions of the programs f ran (one
    per set of branches, the latest first) and the program of the k products."""

    __slots__ = ("compressions", "program")

    def __init__(self, program):
        self.compressions: list = []
        self.program = program


class _Sparse:
    """The shared part of sparse_hessian and sparse_jacobian. Per input signature (at most
    ``cache_size`` of them, the least recently used going first, as ``autodiff.function`` keeps
    its traces): the compressions of the programs f ran, found once, and the program of the k
    products, an ``autodiff.function`` traced once and replayed (run eagerly when the tracer refuses
    f: ``untraced_reason`` says why). Pickled without them (they are made again), as
    ``autodiff.function`` is."""

    _hessian: bool

    def __init__(self, f: Callable, cache_size: int = CACHE_SIZE):
        self.f = f
        self._cache = LeastRecentlyUsed(cache_size)     # signature -> _Signature
        self.cache_size = cache_size

    def __reduce__(self):
        return (type(self), (self.f, self.cache_size))

    @property
    def untraced_reason(self) -> str | None:
        """Why the products run eagerly (the tracer refused f), or None."""
        reasons = [kept.program.fallback_reason for kept in self._cache.values()]
        return next((reason for reason in reasons[::-1] if reason), None)

    def __call__(self, x):
        signature, point, f = _prepared(self.f, x)
        compression = self.compression(point, signature, f)
        if not compression.k:
            return compression.matrix(np.zeros((0, compression.pattern.shape[0])))
        chunk = max(1, _SEED_ENTRIES // max(point.size, 1))
        program = self._cache.get(signature).program
        return compression.matrix(self._products(program, point, compression.seeds, chunk))

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
            kept = _Signature(self._program(f))
            self._cache.put(signature, kept)
        known = kept.compressions
        for compression in known:
            if compression.recording.same_program(x):
                return compression
        recording = _record(f, x, self._hessian)
        compression = _Compression(_pattern(recording, self._hessian), recording)
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
    def _program(f: Callable):
        return replayed(f, eager_fallback=True)

    @staticmethod
    def _products(program, x: np.ndarray, seeds: np.ndarray, chunk: int) -> np.ndarray:
        """H S (k x n) from the replayed gradient, ``chunk`` seeds per sweep."""
        return hessian_operator(program, x, chunk_size=chunk).matmat(seeds.T).T


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

    @staticmethod
    def _program(f: Callable):
        return replayed(lambda x, seeds: _jacobian_products(f, x, seeds), eager_fallback=True)

    @staticmethod
    def _products(program, x: np.ndarray, seeds: np.ndarray, chunk: int) -> np.ndarray:
        """(J S)^T (k x m), ``chunk`` seeds per replay."""
        k = seeds.shape[0]
        return np.concatenate([np.reshape(program(x, seeds[i:i + chunk].reshape((-1,) + x.shape)),
                                          (min(chunk, k - i), -1)) for i in range(0, k, chunk)])


def _jacobian_products(f: Callable, x, seeds):
    """(J S)^T for seeds (c,) + x.shape in one batched sweep: the VJP u -> J^T u is recorded
    once, linear in u, and its own reverse sweep with the seeds as cotangents gives the rows of
    (J S)^T."""
    source = x if isinstance(x, Tensor) else constant(x)
    with GradientTape(persistent=True) as outer:
        with GradientTape() as inner:
            inner.watch(source)
            y = _require_tensors(f(source), "sparse_jacobian")
        cotangent = constant(np.zeros(y.shape, y.dtype))
        outer.watch(cotangent)
        pulled = inner.gradient(y, source, output_gradients=cotangent, unconnected_gradients=ZERO)
    (products,) = outer.sweep([pulled], [seeds], [cotangent], (seeds.shape[0],))
    return np.zeros((seeds.shape[0],) + y.shape) if products is None else products


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


def sparse_jacobian(f: Callable, *, cache_size: int = CACHE_SIZE) -> SparseJacobian:
    """The Jacobian of f as a function returning ``scipy.sparse`` CSC matrices.

    At the first x of a signature the pattern is found in the recorded program and column-coloured
    with k colours (Curtis, Powell & Reid 1974); every call then takes one batched sweep of k
    Jacobian-vector products (traced and replayed, and at most ``cache_size`` signatures kept, as
    for ``sparse_hessian``) and reads each entry from them.

    Parameters
    ----------
    f : callable
        A function of one array (or pytree: columns over ``ad.ravel(x)``) returning an array.
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
    """
    return SparseJacobian(f, cache_size)
