"""CHOLMOD's supernodal Cholesky factorization for the positive definite sparse factorizations,
and the rule that chooses it or qdldl for a pattern.

Newton's shifted Cholesky search, Moré–Sorensen's secular iteration and the shift-invert eigenpair
search ask one question of a sparse factorization: is ``H + shift I`` positive definite, and if so,
solve with it. qdldl (:class:`~optimizers.sparse.LDLFactorization`'s other backend) answers it
column by column; CHOLMOD's supernodal Cholesky (Chen, Davis, Hager & Rajamanickam 2008) groups
columns of equal structure into dense blocks factored with BLAS 3, which on grids and meshes, whose
factors fill in, is 14-25 times faster per factorization (the 13-point stencil on 300^2 nodes:
0.78 s against qdldl's 11.7 s; the minimal surface on 1000^2: 5.6 s against 126 s; loaded
machine, ``benchmarks/bench_factorizations.py``). On bands, chains and arrowheads, which do not
fill in, qdldl is 1.6-5 times faster (chained Rosenbrock at 10^6: 1.04 s against 1.79 s), and it
stays the factorization that reveals the inertia of an indefinite (quasi-definite) matrix, which
a Cholesky factorization does not.

CHOLMOD comes from ``kvxopt`` (a fork of CVXOPT with wheels for Linux x86-64 and aarch64, macOS
and Windows, NumPy its only dependency), whose ``cholmod`` module keeps the symbolic analysis
(``symbolic``, once per pattern) apart from the numeric factorization (``numeric``, per matrix).
Its ``numeric`` does not report a matrix that is not positive definite (it reads CHOLMOD's status
before factoring), so the outcome and the column where it failed are read from CHOLMOD's factor
itself, ``cholmod_factor``'s leading fields ``n, minor, Perm, ColCount`` (CHOLMOD's user guide; the
same in CHOLMOD 3 to 5), through the capsule kvxopt hands out; the layout is checked (``n`` the
matrix's, ``Perm`` a permutation) and a factor that fails the check is refused with a message
(the automatic rule then takes qdldl). ``ColCount``, the column counts of L after the symbolic
analysis, gives the factor's nonzeros and flops before any numeric work, which the rule reads.

The rule (:func:`choose`), once per pattern:

1. a pattern that is a band of half-width b once its dense rows and columns (AMD's, more than
   ``max(16, 10 sqrt(n))`` entries) are set aside, whose factor therefore has at most
   ``n (b + 1 + dense)`` nonzeros, at most :data:`BAND_FILL` times the matrix's: qdldl, with no
   analysis (chains, bands, arrowheads);
2. under :data:`CHOLMOD_MIN_SIZE` variables: qdldl (small factorizations, where CHOLMOD's fixed
   costs are as large as the work);
3. else CHOLMOD's symbolic analysis with AMD: qdldl when the factor it predicts has at most
   :data:`FILL_RATIO` times the matrix's nonzeros (little fill: no dense blocks to gain from),
   else CHOLMOD; and where AMD's factorization takes more than :data:`DISSECTION_FLOPS`, the
   nested-dissection ordering (:mod:`optimizers.ordering`) is analysed too and taken when its
   factorization takes at most :data:`DISSECTION_GAIN` of AMD's flops (3-D grids: 3.6 times
   fewer at 50^3).

References: Y. Chen, T. A. Davis, W. W. Hager and S. Rajamanickam, Algorithm 887: CHOLMOD,
supernodal sparse Cholesky factorization and update/downdate, ACM Trans. Math. Softw. 35 (2008);
P. R. Amestoy, T. A. Davis and I. S. Duff, An approximate minimum degree ordering algorithm, SIAM
J. Matrix Anal. Appl. 17 (1996); J. W. H. Liu, The role of elimination trees in sparse
factorization, SIAM J. Matrix Anal. Appl. 11 (1990) (column counts, flops sum_j c_j^2).
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import NamedTuple

import numpy as np
import scipy.sparse

from .ordering import nested_dissection

FACTORIZATIONS = ("cholmod", "qdldl")
# (1) A band's factor within this many times the matrix's nonzeros goes to qdldl.
BAND_FILL = 2.0
# (2) Below this many variables qdldl factors as fast (measured: see docs/guides/sparse.md).
CHOLMOD_MIN_SIZE = 5000
# (3) AMD's predicted factor within this many times the matrix's nonzeros goes to qdldl.
FILL_RATIO = 2.0
# Nested dissection is analysed where AMD's factorization takes more flops than this (about 0.2 s
# of CHOLMOD's), and taken where it takes at most this fraction of them.
DISSECTION_FLOPS = 1e9
DISSECTION_GAIN = 0.8


class _FactorHead(ctypes.Structure):
    """The leading fields of CHOLMOD's ``cholmod_factor`` (CHOLMOD 3-5, ``cholmod_core.h``)."""
    _fields_ = [("n", ctypes.c_size_t), ("minor", ctypes.c_size_t), ("Perm", ctypes.c_void_p),
                ("ColCount", ctypes.c_void_p), ("IPerm", ctypes.c_void_p), ("nzmax", ctypes.c_size_t),
                ("p", ctypes.c_void_p), ("i", ctypes.c_void_p), ("x", ctypes.c_void_p), ("z", ctypes.c_void_p),
                ("nz", ctypes.c_void_p), ("next", ctypes.c_void_p), ("prev", ctypes.c_void_p),
                ("nsuper", ctypes.c_size_t), ("ssize", ctypes.c_size_t), ("xsize", ctypes.c_size_t),
                ("maxcsize", ctypes.c_size_t), ("maxesize", ctypes.c_size_t), ("super", ctypes.c_void_p),
                ("pi", ctypes.c_void_p), ("px", ctypes.c_void_p), ("s", ctypes.c_void_p),
                ("ordering", ctypes.c_int), ("is_ll", ctypes.c_int), ("is_super", ctypes.c_int),
                ("is_monotonic", ctypes.c_int), ("itype", ctypes.c_int), ("xtype", ctypes.c_int),
                ("dtype", ctypes.c_int)]


_INDEX_TYPES = {0: ctypes.c_int32, 2: ctypes.c_int64}     # CHOLMOD_INT, CHOLMOD_LONG


def _capsule_pointer(capsule) -> int:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def _factor_head(capsule, n: int) -> _FactorHead:
    """CHOLMOD's factor behind kvxopt's capsule, its layout checked against an n x n matrix.

    Raises
    ------
    RuntimeError
        When the fields read are not those of a supernodal Cholesky factor of n columns.
    """
    head = _FactorHead.from_address(_capsule_pointer(capsule))
    if not (head.n == n and head.minor <= n and head.is_ll == 1 and head.is_super == 1
            and head.itype in _INDEX_TYPES and head.Perm and head.ColCount):
        raise RuntimeError("kvxopt's CHOLMOD factor is not laid out as CHOLMOD 3-5's cholmod_factor "
                           f"(n = {head.n} for {n} columns); use options['factorization'] = 'qdldl'")
    return head


def _read_indices(address: int, itype: int, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((_INDEX_TYPES[itype] * n).from_address(address)).astype(np.int64)


@contextlib.contextmanager
def _options(cholmod, **values):
    """kvxopt's module-wide ``cholmod.options`` set for one call and restored after it (another
    user of kvxopt in the process keeps its own)."""
    saved = dict(cholmod.options)
    cholmod.options.clear()
    cholmod.options.update(values)
    try:
        yield
    finally:
        cholmod.options.clear()
        cholmod.options.update(saved)


def _kvxopt_matrix(upper: scipy.sparse.csc_matrix):
    """The upper triangle as kvxopt's sparse matrix. kvxopt builds one from triplets checking each
    entry against its column's, quadratic in a column's length, so the entries of long columns (a
    dense last column: 12 s at n = 10^5) are built as rows of a transposed matrix and added."""
    from kvxopt import spmatrix
    n = upper.shape[0]
    counts = np.diff(upper.indptr)
    columns = np.repeat(np.arange(n, dtype=np.int64), counts)
    rows = upper.indices.astype(np.int64)
    long = counts[columns] > 64
    matrix = spmatrix(upper.data[~long], rows[~long], columns[~long], (n, n))
    if long.any():
        matrix = matrix + spmatrix(upper.data[long], columns[long], rows[long], (n, n)).T
    return matrix


class CholmodCholesky:
    """CHOLMOD's supernodal Cholesky factorizations of the matrices of one pattern: the symbolic
    analysis once (in the elimination ``order`` given, or AMD's), a numeric factorization per
    matrix (:meth:`factor`), and solves with the latest.

    ``upper`` is the pattern's upper triangle with its whole diagonal stored, a CSC matrix with
    sorted indices; the values of later matrices come in its entry order. ``nonzeros`` and
    ``flops`` are those of the factor L the analysis predicts (the column counts c_j of L:
    ``sum c_j`` and ``sum c_j^2``), ``order`` the elimination order CHOLMOD settled on (its
    postordering of the one given), ``ordering`` its name.

    Raises
    ------
    ImportError
        When kvxopt is not installed.
    RuntimeError
        When kvxopt's factor is not laid out as expected (:func:`_factor_head`).
    """

    def __init__(self, upper: scipy.sparse.csc_matrix, order: np.ndarray | None = None,
                 ordering: str = "AMD"):
        from kvxopt import cholmod, matrix
        self._cholmod, self._matrix_type, self.n = cholmod, matrix, upper.shape[0]
        self._a = _kvxopt_matrix(upper)
        given = {} if order is None else {"p": matrix(order.astype(np.int64))}
        with self._options(order):
            self._factor = cholmod.symbolic(self._a, uplo="U", **given)
        head = _factor_head(self._factor, self.n)
        counts = _read_indices(head.ColCount, head.itype, self.n).astype(float)
        self.order = _read_indices(head.Perm, head.itype, self.n)
        if not np.array_equal(np.sort(self.order), np.arange(self.n)):
            raise RuntimeError("kvxopt's CHOLMOD factor's Perm is not a permutation; "
                               "use options['factorization'] = 'qdldl'")
        self.nonzeros, self.flops, self.ordering = int(counts.sum()), float(counts @ counts), ordering

    def _options(self, order: np.ndarray | None = None):
        """The supernodal Cholesky, postordered, with the order given (``nmethods`` 1) or AMD's."""
        values = {"supernodal": 2, "postorder": True}
        if order is not None:
            values["nmethods"] = 1
        return _options(self._cholmod, **values)

    def factor(self, values: np.ndarray) -> int | None:
        """Factor the matrix of the pattern with ``values`` (finite, in the entry order of the
        pattern's upper triangle): None when it is positive definite, else the elimination step
        (0 to n - 1) at which the Cholesky factorization met a pivot that is not positive."""
        self._a.V = self._matrix_type(np.ascontiguousarray(values, dtype=float))
        with self._options():
            self._cholmod.numeric(self._a, self._factor)
        minor = _factor_head(self._factor, self.n).minor
        return None if minor == self.n else int(minor)

    def pivots(self) -> np.ndarray:
        """The pivots of the latest (positive definite) factorization in elimination order: the
        squares of L's diagonal, D of the equivalent L D L^T."""
        with self._options():
            diagonal = np.asarray(self._cholmod.diag(self._factor)).ravel()
        return diagonal * diagonal

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``A^{-1} b`` with the latest (positive definite) factorization."""
        x = self._matrix_type(np.ascontiguousarray(b, dtype=float))
        with self._options():
            self._cholmod.solve(self._factor, x)
        return np.asarray(x).ravel()


class Choice(NamedTuple):
    """The rule's answer for a pattern: the factorization (``"cholmod"`` or ``"qdldl"``), why, and
    CHOLMOD's analysis when it is CHOLMOD's."""
    method: str
    reason: str
    cholmod: CholmodCholesky | None = None


def choose(upper: scipy.sparse.csc_matrix, option: str | None) -> Choice:
    """The factorization of a pattern (its upper triangle with the whole diagonal, CSC, sorted
    indices): ``option`` ``"cholmod"`` or ``"qdldl"``, or None for the rule of the module docstring.

    Raises
    ------
    ValueError
        For an unknown ``option``.
    ImportError, RuntimeError
        With ``option="cholmod"``, when kvxopt is missing or its factor is not as expected.
    """
    if option not in (None, *FACTORIZATIONS):
        raise ValueError(f"options['factorization'] must be 'cholmod', 'qdldl' or None, got {option!r}")
    if option == "qdldl":
        return Choice("qdldl", "options['factorization'] is 'qdldl'")
    if option == "cholmod":
        return Choice("cholmod", "options['factorization'] is 'cholmod'", _analysed(upper, dissect=True))
    n = upper.shape[0]
    band = band_bound(upper)
    if band <= BAND_FILL * upper.nnz:
        return Choice("qdldl", f"a band: its factor has at most {band / upper.nnz:.2g} times the "
                               "Hessian's nonzeros (no fill for a supernodal factorization to gain from)")
    if n < CHOLMOD_MIN_SIZE:
        return Choice("qdldl", f"n = {n:,} is below {CHOLMOD_MIN_SIZE:,}, where qdldl factors as fast")
    try:
        cholesky = _analysed(upper, dissect=True)
    except (ImportError, RuntimeError) as error:
        return Choice("qdldl", f"CHOLMOD is not available: {error}")
    fill = cholesky.nonzeros / upper.nnz
    if fill <= FILL_RATIO:
        return Choice("qdldl", f"AMD predicts a factor of {fill:.2g} times the Hessian's nonzeros "
                               "(little fill for a supernodal factorization to gain from)")
    return Choice("cholmod", f"{cholesky.ordering} predicts a factor of {fill:.3g} times the Hessian's "
                             f"nonzeros ({cholesky.flops:.2g} flops)", cholesky)


def _analysed(upper: scipy.sparse.csc_matrix, dissect: bool) -> CholmodCholesky:
    """CHOLMOD's analysis with AMD, or with nested dissection where that saves enough flops
    (:data:`DISSECTION_FLOPS`, :data:`DISSECTION_GAIN`)."""
    cholesky = CholmodCholesky(upper)
    if dissect and cholesky.flops > DISSECTION_FLOPS:
        dissected = CholmodCholesky(upper, nested_dissection(upper), "nested dissection")
        if dissected.flops <= DISSECTION_GAIN * cholesky.flops:
            return dissected
    return cholesky


def band_bound(upper: scipy.sparse.csc_matrix) -> int:
    """An upper bound on the nonzeros of a Cholesky factor of the symmetric matrix whose upper
    triangle (with the diagonal) is ``upper``: ``n (b + 1 + d)``, d its dense rows (more than
    ``max(16, 10 sqrt(n))`` entries, AMD's threshold), b the half-bandwidth of the rest. Ordered
    with the dense ones last, each column of L lies within the band but for one entry a dense row."""
    n = upper.shape[0]
    columns = np.repeat(np.arange(n), np.diff(upper.indptr))
    rows = upper.indices
    degree = np.bincount(rows, minlength=n) + np.bincount(columns, minlength=n)
    dense = degree > max(16.0, 10.0 * np.sqrt(n))
    sparse_entries = ~(dense[rows] | dense[columns])
    half_bandwidth = int(np.max(columns[sparse_entries] - rows[sparse_entries], initial=0))
    return n * (half_bandwidth + 1 + int(dense.sum()))
