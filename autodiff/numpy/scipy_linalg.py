"""Differentiable ``scipy.linalg`` (``autodiff.numpy.scipy_linalg``): scipy's signatures, our rules.

scipy.linalg's functions are Python code that turns its input into ndarrays, so no engine can see
through them: on a tracked Tensor, ``scipy.linalg.expm(a)`` raises a TypeError naming the version
here. Which functions, and their arguments and defaults, follow ``jax.scipy.linalg``, which keeps
scipy's: ``cholesky`` and ``cho_factor`` give the upper factor by default (NumPy's
``autodiff.numpy.linalg.cholesky`` gives the lower one), and like scipy's they read one triangle of
``a``, as ``solve`` does with ``assume_a="sym"``, ``"her"`` or ``"pos"``: the derivatives in the
entries they do not read are 0. ``overwrite_*`` and ``check_finite`` are accepted and change
nothing (as in JAX): nothing is overwritten, and NaN in gives NaN out.

The values are computed with NumPy: ``expm`` by the scaling and squaring algorithm of Al-Mohy and
Higham (2009), ``solve_triangular`` by blocked substitution. Three are scipy's own, imported when
first called: ``sqrtm`` and ``solve_sylvester`` need a Schur decomposition (Deadman, Higham and
Ralha 2013; Bartels and Stewart 1972), which NumPy lacks (an eigendecomposition fails on defective
or singular matrices, such as the product of two covariance matrices whose root the Fréchet
distance between Gaussians takes), and ``solve_banded`` needs LAPACK's banded LU, whose
O(n (l + u)^2) cost is its point (a dense solve costs O(n^3) time and O(n^2) memory).

Each derivative rule is written with the differentiable ops here, so it differentiates again:
``expm``'s is its Fréchet derivative, the corner of ``expm`` of a block matrix; ``sqrtm``'s solves
a Sylvester equation; ``solve_sylvester``'s, ``solve_triangular``'s and ``solve_banded``'s solve
the transposed system. Complex matrices follow JAX's convention (docs/guides/differentiate.md); the
Cholesky factorization refuses them while it is differentiated (its complex rule is not verified).

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> from autodiff.numpy import scipy_linalg
>>> a = np.array([[1.0, 2.0], [0.0, 1.0]])
>>> slope = ad.grad(lambda t: np.trace(scipy_linalg.expm(t * a)))(1.0)   # d/dt tr exp(tA) = tr(A exp(tA))
>>> round(float(slope), 12), round(2 * np.e, 12)
(5.436563656918, 5.436563656918)
"""
from __future__ import annotations

import builtins
import importlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as _np

from ..core import dtype_of, ndim_of, shape_of, value_of
from ..extend import defjvp, defvjp, primitive, unbroadcast
from . import linalg, ops
from .linalg import _H, _c, _hermitian_from_triangle, _mT
from .ops import broadcast_to, concatenate, getitem, matmul, reshape, sum, tril, triu, where

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigvalsh", "expm", "expm_frechet",
           "inv", "solve", "solve_banded", "solve_continuous_lyapunov", "solve_sylvester", "solve_triangular", "sqrtm",
           "svd", "svdvals"]


def _scipy_linalg():
    """scipy.linalg, imported on first use."""
    try:
        return importlib.import_module("scipy.linalg")
    except ImportError:
        raise ImportError("autodiff.numpy.scipy_linalg computes sqrtm, solve_sylvester and solve_banded with "
                          "scipy.linalg: install scipy") from None


def _each_matrix(function, *arrays):
    """``function`` of each matrix of the broadcast batch of ``arrays`` (shapes (..., m, n)), stacked:
    scipy before 1.15 takes one matrix at a time."""
    batch = _np.broadcast_shapes(*(a.shape[:-2] for a in arrays))
    if not batch:
        return function(*arrays)
    if 0 in batch:
        raise ValueError(f"an empty batch of matrices (batch shape {batch}) is not supported")
    arrays = [_np.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
    results = [function(*(a[index] for a in arrays)) for index in _np.ndindex(batch)]
    return _np.stack(results).reshape(batch + results[0].shape)


def _square(name: str, *matrices) -> int:
    """The order n of the square matrices ``matrices`` (shapes (..., n, n)), or a ValueError."""
    shapes = [shape_of(m) for m in matrices]
    if any(len(shape) < 2 or shape[-1] != shape[-2] for shape in shapes) or len({s[-1] for s in shapes}) > 1:
        raise ValueError(f"{name} takes square matrices of one order (shapes (..., n, n)), got shapes "
                         f"{', '.join(map(str, shapes))}")
    return shapes[0][-1]


# --- the matrix exponential --------------------------------------------------------------------------

# theta_m bounds ||2^-s A|| for which the [m/m] Pade approximant of exp is exact to the unit roundoff:
# in double precision from Al-Mohy and Higham (2009), "A new scaling and squaring algorithm for the
# matrix exponential", SIAM J. Matrix Anal. Appl. 31(3), Table 3.1 (4.25 for m = 13, their Algorithm
# 5.1); in single precision from Higham (2005), "The scaling and squaring method for the matrix
# exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), Table 2.3. The last degree is the one
# scaled and squared.
_THETA = {"double": {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1,
                     9: 2.097847961257068, 13: 4.25},
          "single": {3: 4.258730016922831e-1, 5: 1.880152677804762, 7: 3.925724783138660}}
_PADE = {m: [float(math.factorial(2 * m - j) // (math.factorial(j) * math.factorial(m - j))) for j in range(m + 1)]
         for m in _THETA["double"]}
_ERROR_SERIES = {m: math.factorial(2 * m) * math.factorial(2 * m + 1) / math.factorial(m) ** 2 for m in _PADE}


def _one_norm(a) -> float:
    return float(_np.max(_np.sum(_np.abs(a), axis=-2)))


def _extra_squarings(a, m: int) -> int:
    """Al-Mohy and Higham's ell(A, m): the squarings to add so that the rounding errors of the [m/m]
    approximant stay below the unit roundoff where A is far from normal. ||abs(A)^(2m+1)||_1 is exact:
    abs(A) is nonnegative, so it is the largest entry of the row of column sums e^T abs(A)^(2m+1)."""
    norm = _one_norm(a)
    column_sums = _np.ones(a.shape[-1])
    for _ in range(2 * m + 1):
        column_sums = column_sums @ _np.abs(a)
    alpha = float(_np.max(column_sums)) / (_ERROR_SERIES[m] * norm) if norm else 0.0
    unit_roundoff = _np.finfo(a.dtype).eps / 2
    return max(math.ceil(math.log2(alpha / unit_roundoff) / (2 * m)), 0) if alpha else 0


def _pade(a, even_powers, m: int):
    """The [m/m] Pade approximant (V - U)^-1 (V + U) of exp(A), U odd and V even in A, from even_powers
    A^2, A^4, ... (Higham 2005, "The scaling and squaring method for the matrix exponential revisited":
    degree 13 takes no power beyond A^6)."""
    b = _PADE[m]
    eye = _np.eye(a.shape[-1], dtype=a.dtype)
    if m == 13:
        a2, a4, a6 = even_powers
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    else:
        powers = [eye] + list(even_powers)
        u = a @ builtins.sum(b[2 * k + 1] * powers[k] for k in range(m // 2 + 1))
        v = builtins.sum(b[2 * k] * powers[k] for k in range(m // 2 + 1))
    return _np.linalg.solve(v - u, v + u)


def _expm_of_one(a):
    """exp(A) for one matrix: Al-Mohy and Higham (2009), Algorithm 5.1 (in single precision with
    Higham's 2005 degrees), with ||A^4|| and ||A^6|| exact and the bounds ||A^8|| <= ||A^4||^2,
    ||A^10|| <= ||A^4|| ||A^6|| for the higher powers."""
    if not _np.any(a - _np.diag(_np.diagonal(a))):  # diagonal: exact
        return _np.diag(_np.exp(_np.diagonal(a)))
    theta = _THETA["single" if _np.finfo(a.dtype).bits <= 32 else "double"]
    *unscaled, scaled = theta
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a2 @ a4
    d4, d6 = _one_norm(a4) ** 0.25, _one_norm(a6) ** (1 / 6)
    eta = max(d4, d6)
    for m in unscaled:
        if eta <= theta[m] and _extra_squarings(a, m) == 0:
            return _pade(a, ([a2, a4, a6] + ([a4 @ a4] if m == 9 else []))[:m // 2], m)
    eta = min(eta, max(d4, (_one_norm(a4) * _one_norm(a6)) ** 0.1))
    s = max(math.ceil(math.log2(eta / theta[scaled])), 0)
    s += _extra_squarings(a * 2.0 ** -s, scaled)
    scale = 2.0 ** -s
    x = _pade(a * scale, [a2 * scale ** 2, a4 * scale ** 4, a6 * scale ** 6][:scaled // 2], scaled)
    for _ in range(s):
        x = x @ x
    return x


def _expm_raw(a):
    a = _np.asarray(a)
    return _each_matrix(_expm_of_one, a.astype(_np.float64) if a.dtype.kind in "biu" else a)


_expm = primitive(_expm_raw, "expm")


def _exponential_of_block(a, e):
    """expm([[A, E], [0, A]]) = [[expm(A), L(A, E)], [0, expm(A)]], L the Frechet derivative of expm at A
    in the direction E (Higham 2008, "Functions of Matrices", Theorem 3.6, after Mathias 1996). A and E
    broadcast (E may be a cotangent with batch axes)."""
    shape = _np.broadcast_shapes(shape_of(a), shape_of(e))
    a, e = broadcast_to(a, shape), broadcast_to(e, shape)
    zeros = _np.zeros(shape, _np.result_type(value_of(a), value_of(e)))
    return _expm(concatenate([concatenate([a, e], axis=-1), concatenate([zeros, a], axis=-1)], axis=-2))


def _frechet(a, e):
    """L(A, E), the derivative of expm at A in the direction E."""
    n = shape_of(a)[-1]
    return _exponential_of_block(a, e)[..., :n, n:]


# L(A, .) is linear, and its transpose for the pairing sum(a * b) is L(A^T, .) (A's power series has
# scalar coefficients): the VJP.
defvjp(_expm, lambda g, ans, a: _frechet(_mT(a), g))
defjvp(_expm, lambda t, ans, a: _frechet(a, t))


def expm(A: ArrayLike) -> Array:
    """The matrix exponential of (each matrix of) A, differentiable to any order (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> expm(np.array([[0.0, 1.0], [0.0, 0.0]]))   # I + N for a nilpotent N
    array([[1., 1.],
           [0., 1.]])
    """
    _square("expm", A)
    return _expm(A)


def expm_frechet(A: ArrayLike, E: ArrayLike, method: str | None = None, compute_expm: bool = True,
                 check_finite: bool = True) -> tuple[Array, Array] | Array:
    """(expm(A), L(A, E)), L the Frechet derivative of expm at A in the direction E, or L alone without
    ``compute_expm``: the blocks of expm([[A, E], [0, A]]) (scipy's method "blockEnlarge"; its default,
    Al-Mohy and Higham's, agrees to rounding)."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method}")
    n = _square("expm_frechet", A, E)
    block = _exponential_of_block(A, E)
    frechet = block[..., :n, n:]
    return (block[..., :n, :n], frechet) if compute_expm else frechet


# --- triangular systems ------------------------------------------------------------------------------

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}
_LEAF = 64  # blocks at most this large are solved directly


def _substitution(t, b, lower: bool):
    """T^-1 B for triangular T (..., n, n), B (..., n, k): blocked substitution, the off-diagonal blocks
    applied by matrix products and the diagonal blocks of order <= 64 solved directly."""
    n = t.shape[-1]
    if n <= _LEAF:
        return _np.linalg.solve(t, b)
    h = n // 2
    if lower:
        first = _substitution(t[..., :h, :h], b[..., :h, :], lower)
        second = _substitution(t[..., h:, h:], b[..., h:, :] - t[..., h:, :h] @ first, lower)
    else:
        second = _substitution(t[..., h:, h:], b[..., h:, :], lower)
        first = _substitution(t[..., :h, :h], b[..., :h, :] - t[..., :h, h:] @ second, lower)
    return _np.concatenate([first, second], axis=-2)


def _triangular_solve_raw(a, b, lower, unit_diagonal, trans):
    """op(T)^-1 B, T the triangle of a (its diagonal replaced by ones for ``unit_diagonal``), op(T) T,
    T^T or T^H for trans 0, 1, 2; B of shape (..., n, k)."""
    t = _np.tril(a) if lower else _np.triu(a)
    eye = _np.eye(a.shape[-1], dtype=bool)
    if unit_diagonal:
        t = _np.where(eye, _np.ones((), t.dtype), t)
    elif not _np.all(_np.diagonal(t, 0, -2, -1)):
        zero = int(_np.nonzero(_np.diagonal(t, 0, -2, -1) == 0)[-1][0])
        raise _np.linalg.LinAlgError(f"singular matrix: resolution failed at diagonal {zero}")
    if trans:
        t = _np.swapaxes(t, -1, -2).conj() if trans == 2 else _np.swapaxes(t, -1, -2)
    return _substitution(t, b, lower != bool(trans))


_triangular_solve = primitive(_triangular_solve_raw, "solve_triangular")


def _op(m, trans):
    """op(M) for trans 0, 1, 2: M, M^T, M^H."""
    return m if trans == 0 else _mT(m) if trans == 1 else _H(m)


def _read_triangle(m, lower, unit_diagonal):
    """The entries of m that solve_triangular reads (zeros elsewhere)."""
    k = 0 if not unit_diagonal else -1 if lower else 1
    return tril(m, k) if lower else triu(m, k)


def _transposed_triangular_solve(g, a, lower, unit_diagonal, trans):
    """op(T)^-T G: the transpose of B -> op(T)^-1 B for the pairing sum(a * b) ((T^H)^-T = conj(T)^-1)."""
    if trans == 2:
        return _triangular_solve(_c(a), g, lower, unit_diagonal, 0)
    return _triangular_solve(a, g, lower, unit_diagonal, 1 - trans)


def _triangular_solve_vjp_a(g, ans, a, b, lower, unit_diagonal, trans):
    """d x = -op(T)^-1 op(dT) x, so the cotangent of T is -op(gB x^T), gB the cotangent of B; in the
    triangle read."""
    gb = _transposed_triangular_solve(g, a, lower, unit_diagonal, trans)
    return unbroadcast(-_read_triangle(_op(matmul(gb, _mT(ans)), trans), lower, unit_diagonal), a.shape,
                       g.ndim - ans.ndim)


defvjp(_triangular_solve, _triangular_solve_vjp_a,
       lambda g, ans, a, b, lower, unit_diagonal, trans: unbroadcast(
           _transposed_triangular_solve(g, a, lower, unit_diagonal, trans), b.shape, g.ndim - ans.ndim))
defjvp(_triangular_solve,
       lambda t, ans, a, b, lower, unit_diagonal, trans: -_triangular_solve(
           a, matmul(_op(_read_triangle(t, lower, unit_diagonal), trans), ans), lower, unit_diagonal, trans),
       lambda t, ans, a, b, lower, unit_diagonal, trans: _triangular_solve(a, t, lower, unit_diagonal, trans))


def _as_columns(name: str, a, b):
    """b as a matrix of columns (a vector b as one column) and whether it was a vector, checked against
    the order of the square matrix a."""
    n = _square(name, a)
    vector = ndim_of(b) == 1
    if ndim_of(b) == 0 or shape_of(b)[-1 if vector else -2] != n:
        raise ValueError(f"shapes of a {shape_of(a)} and b {shape_of(b)} are incompatible")
    return (reshape(b, (n, 1)) if vector else b), vector


def _as_given(x, vector: bool):
    """A solution in the shape b was given in."""
    return x[..., 0] if vector else x


def solve_triangular(a: ArrayLike, b: ArrayLike, trans: int | str = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """x with op(a) x = b, op(a) = a, a^T or a^H for trans 0 ("N"), 1 ("T"), 2 ("C"), reading the lower or
    upper triangle of a (not its diagonal with ``unit_diagonal``).

    Examples
    --------
    >>> import numpy as np
    >>> solve_triangular(np.array([[2.0, 1.0], [0.0, 4.0]]), np.array([3.0, 4.0]))
    array([1., 1.])
    """
    if trans not in _TRANS:
        raise ValueError(f"invalid trans {trans!r}: 0, 1, 2, 'N', 'T' or 'C'")
    a, b = ops.as_array(a), ops.as_array(b)
    columns, vector = _as_columns("solve_triangular", a, b)
    return _as_given(_triangular_solve(a, columns, bool(lower), bool(unit_diagonal), _TRANS[trans]), vector)


# --- Cholesky ----------------------------------------------------------------------------------------

def cholesky(a: ArrayLike, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The Cholesky factor of the Hermitian positive definite matrix of which ``a`` holds the upper
    triangle (the lower one with ``lower``): U with a = U^H U, or L with a = L L^H.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cholesky(a)
    array([[2., 1.],
           [0., 2.]])
    >>> ad.grad(lambda a: np.sum(cholesky(a)))(a)   # the lower triangle is not read
    array([[0.1875, 0.25  ],
           [0.    , 0.25  ]])
    """
    a = ops.as_array(a)
    _square("cholesky", a)
    factor = linalg.cholesky(_hermitian_from_triangle(a, "L" if lower else "U"))
    return factor if lower else _H(factor)


def cho_factor(a: ArrayLike, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True
               ) -> tuple[Array, bool]:
    """(c, lower) for ``cho_solve``: c holds the Cholesky factor in one triangle and, as scipy's, a's own
    entries in the other (which cho_solve does not read)."""
    rest = triu(a, 1) if lower else tril(a, -1)
    return cholesky(a, lower) + rest, lower


def cho_solve(c_and_lower: tuple[ArrayLike, bool], b: ArrayLike, overwrite_b: bool = False, check_finite: bool = True
              ) -> Array:
    """x with A x = b, given (c, lower) from ``cho_factor`` (A = L L^H or U^H U): two triangular solves.

    Examples
    --------
    >>> import numpy as np
    >>> cho_solve(cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]])), np.array([6.0, 7.0]))
    array([1., 1.])
    """
    c, lower = c_and_lower
    if lower:
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans=2, lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans=2))


# --- general systems, inverses, determinants, decompositions -------------------------------------

_STRUCTURES = {None: "general", "gen": "general", "general": "general", "sym": "symmetric", "symmetric": "symmetric",
               "her": "hermitian", "hermitian": "hermitian", "pos": "positive definite",
               "positive definite": "positive definite", "diagonal": "diagonal", "tridiagonal": "tridiagonal",
               "upper triangular": "upper triangular", "lower triangular": "lower triangular"}


def _symmetric_from_triangle(a, lower):
    """The symmetric matrix of which a holds one triangle (complex ones are not conjugated)."""
    part = tril(a, -1) if lower else triu(a, 1)
    return part + _mT(part) + a * _np.eye(shape_of(a)[-1], dtype=bool)


def solve(a: ArrayLike, b: ArrayLike, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          check_finite: bool = True, assume_a: str | None = None, transposed: bool = False) -> Array:
    """x with a x = b (a^T x = b when ``transposed``, for real a as in scipy). ``assume_a`` says what a
    is, and so which entries are read: "sym", "her" and "pos" read the triangle ``lower`` chooses,
    "diagonal", "tridiagonal" and the triangular kinds their part, "gen" (and None) all of a."""
    if assume_a == "banded":
        raise NotImplementedError("autodiff: solve with assume_a='banded' detects the bandwidth from the values; "
                                  "use solve_banded")
    if assume_a not in _STRUCTURES:
        raise ValueError(f"{assume_a} is not a recognized matrix structure")
    if transposed and _np.iscomplexobj(value_of(a)):
        raise NotImplementedError("scipy.linalg.solve can currently not solve a^T x = b or a^H x = b for complex "
                                  "matrices (neither can this one, which keeps scipy's meaning)")
    structure = _STRUCTURES[assume_a]
    n = _square("solve", a)
    if structure.endswith("triangular"):
        return solve_triangular(a, b, trans=int(transposed), lower=structure == "lower triangular")
    if structure == "positive definite":  # symmetric: transposed changes nothing (nor below)
        return cho_solve((cholesky(a, lower), lower), b)
    if structure == "diagonal":
        return solve_triangular(a * _np.eye(n, dtype=bool), b, lower=True)
    if structure == "symmetric":
        return linalg.solve(_symmetric_from_triangle(a, lower), b)
    if structure == "hermitian":
        return linalg.solve(_hermitian_from_triangle(a, "L" if lower else "U"), b)
    if structure == "tridiagonal":
        a = a * (abs(_np.subtract.outer(_np.arange(n), _np.arange(n))) <= 1)
    return linalg.solve(_mT(a) if transposed else a, b)


def inv(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True, *, assume_a: str | None = None,
        lower: bool = False) -> Array:
    """The inverse of a (read as ``solve`` reads it for ``assume_a``)."""
    if assume_a in (None, "gen", "general"):
        return linalg.inv(a)
    n = _square("inv", a)
    return solve(a, _np.broadcast_to(_np.eye(n, dtype=dtype_of(a)), shape_of(a)), lower=lower, assume_a=assume_a)


def det(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    return linalg.det(a)


def eigh(a: ArrayLike, b: None = None, *, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, type: int = 1, check_finite: bool = True,
         subset_by_index: Sequence[int] | None = None, subset_by_value: None = None, driver: str | None = None
         ) -> tuple[Array, Array] | Array:
    """Eigenvalues (ascending) and eigenvectors of the Hermitian matrix of which a holds the lower (or
    upper) triangle; ``subset_by_index=(lo, hi)`` keeps eigenvalues lo to hi. The derivatives are
    ``autodiff.numpy.linalg.eigh``'s (distinct eigenvalues)."""
    if b is not None or subset_by_value is not None:
        raise NotImplementedError("autodiff: eigh of a generalized problem (b) or with subset_by_value (its "
                                  "size depends on the values) is not supported")
    w, v = linalg.eigh(a, "L" if lower else "U")
    if subset_by_index is not None:
        kept = slice(int(subset_by_index[0]), int(subset_by_index[1]) + 1)
        w, v = w[..., kept], v[..., kept]
    return w if eigvals_only else (w, v)


def eigvalsh(a: ArrayLike, b: None = None, *, lower: bool = True, overwrite_a: bool = False, overwrite_b: bool = False,
             type: int = 1, check_finite: bool = True, subset_by_index: Sequence[int] | None = None,
             subset_by_value: None = None, driver: str | None = None) -> Array:
    return eigh(a, b, lower=lower, eigvals_only=True, subset_by_index=subset_by_index,
                subset_by_value=subset_by_value)


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> tuple[Array, Array, Array] | Array:
    """(U, s, Vh), or s alone without ``compute_uv``: ``autodiff.numpy.linalg.svd``."""
    result = linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(result) if compute_uv else result


def svdvals(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    return linalg.svdvals(a)


def block_diag(*arrs: ArrayLike) -> Array:
    """The block diagonal matrix of ``arrs`` (a 1-d array is a row, a scalar a 1 x 1 block)."""
    blocks = [ops.atleast_2d(a) for a in arrs] or [_np.zeros((1, 0))]
    if any(ndim_of(block) > 2 for block in blocks):
        raise ValueError("block_diag takes arrays of at most 2 dimensions, got shapes "
                         f"{', '.join(str(shape_of(block)) for block in blocks)}")
    widths = [shape_of(block)[1] for block in blocks]
    rows, start = [], 0
    for block, width in zip(blocks, widths):
        rows.append(ops.pad(block, ((0, 0), (start, builtins.sum(widths) - start - width))))
        start += width
    return concatenate(rows, axis=0)


# --- matrix square root and Sylvester equations -----------------------------------------------------

_sylvester = primitive(lambda a, b, q: _each_matrix(_scipy_linalg().solve_sylvester, a, b, q), "solve_sylvester")


def _transposed_sylvester(g, a, b):
    """Y with A^T Y + Y B^T = G: the transpose of Q -> X, X the solution of A X + X B = Q, for the
    pairing sum(a * b)."""
    return _sylvester(_mT(a), _mT(b), g)


# d(A X + X B) = dQ: dX solves A dX + dX B = dQ - dA X - X dB.
defvjp(_sylvester,
       lambda g, ans, a, b, q: unbroadcast(-matmul(_transposed_sylvester(g, a, b), _mT(ans)), a.shape,
                                           g.ndim - ans.ndim),
       lambda g, ans, a, b, q: unbroadcast(-matmul(_mT(ans), _transposed_sylvester(g, a, b)), b.shape,
                                           g.ndim - ans.ndim),
       lambda g, ans, a, b, q: unbroadcast(_transposed_sylvester(g, a, b), q.shape, g.ndim - ans.ndim))
defjvp(_sylvester,
       lambda t, ans, a, b, q: _sylvester(a, b, -matmul(t, ans)),
       lambda t, ans, a, b, q: _sylvester(a, b, -matmul(ans, t)),
       lambda t, ans, a, b, q: _sylvester(a, b, t))


def solve_sylvester(a: ArrayLike, b: ArrayLike, q: ArrayLike) -> Array:
    """X with a X + X b = q (Bartels-Stewart, scipy's value): unique where no eigenvalue of a is the
    negative of one of b.

    Examples
    --------
    >>> import numpy as np
    >>> solve_sylvester(np.diag([1.0, 2.0]), np.diag([3.0, 5.0]), np.ones((2, 2)))   # 1 / (a_i + b_j)
    array([[0.25      , 0.16666667],
           [0.2       , 0.14285714]])
    """
    return _sylvester(ops.as_array(a), ops.as_array(b), ops.as_array(q))


def solve_continuous_lyapunov(a: ArrayLike, q: ArrayLike) -> Array:
    """X with a X + X a^H = q."""
    a = ops.as_array(a)
    return _sylvester(a, _H(a), ops.as_array(q))


_sqrtm = primitive(lambda a: _each_matrix(_scipy_linalg().sqrtm, a), "sqrtm")
# S^2 = A, so dS solves S dS + dS S = dA (Higham 2008, "Functions of Matrices", Section 6.1).
defvjp(_sqrtm, lambda g, ans, a: _transposed_sylvester(g, ans, ans))
defjvp(_sqrtm, lambda t, ans, a: _sylvester(ans, ans, t))


def sqrtm(A: ArrayLike, disp: bool = True, blocksize: int = 64) -> Array | tuple[Array, Array]:
    """The principal square root of (each matrix of) A, scipy's value (Schur method), complex where A has
    eigenvalues on the negative real axis. Its derivative exists where A is nonsingular (no two
    eigenvalues of the root sum to 0). With ``disp=False``, also scipy's error estimate
    ||X X - A||_F^2 / ||A||_F; ``blocksize`` changes nothing (scipy >= 1.16 ignores it too).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[2., 0.],
           [0., 3.]])
    >>> ad.grad(lambda a: np.trace(sqrtm(a)))(np.diag([4.0, 9.0]))   # A^(-1/2) / 2
    array([[0.25      , 0.        ],
           [0.        , 0.16666667]])
    """
    A = ops.as_array(A)
    _square("sqrtm", A)
    root = _sqrtm(A)
    if disp:
        return root
    return root, linalg.norm(matmul(root, root) - A) ** 2 / linalg.norm(A)


# --- banded systems ----------------------------------------------------------------------------------
# A band matrix of order n with l subdiagonals and u superdiagonals is stored as ab, (l + u + 1, n):
# A[i, j] = ab[u + i - j, j]. The rules below gather along the stored diagonals, never forming A.

def _banded_solve_raw(ab, b, l, u):
    """scipy's solve_banded for b of shape (..., n, k): the batch becomes more columns of one solve."""
    n, k = b.shape[-2:]
    columns = _np.moveaxis(b, -2, 0).reshape(n, -1)
    x = _scipy_linalg().solve_banded((l, u), ab, columns)
    return _np.moveaxis(x.reshape((n,) + b.shape[:-2] + (k,)), 0, -2)


_banded_solve = primitive(_banded_solve_raw, "solve_banded")


def _along_diagonals(l, u, n, sign, offset):
    """For stored row k and column j of a band (l, u) of order n: k, the position j + sign k + offset
    clipped to [0, n), and whether it is inside."""
    k = _np.arange(l + u + 1)[:, None]
    positions = _np.arange(n)[None, :] + sign * k + offset
    return k, _np.clip(positions, 0, n - 1), (positions >= 0) & (positions < n)


def _transposed_band(ab, l, u):
    """The stored form of A^T (u subdiagonals, l superdiagonals): abT[k, j] = ab[l + u - k, j + k - l]."""
    k, columns, inside = _along_diagonals(l, u, shape_of(ab)[-1], 1, -l)
    return where(inside, getitem(ab, (Ellipsis, l + u - k, columns)), 0.0)


def _band_times(ab, x, l, u):
    """A @ x for x (..., n, k): (A x)[i] = sum over stored rows k of ab[k, j] x[j], j = i + u - k."""
    k, columns, inside = _along_diagonals(l, u, shape_of(ab)[-1], -1, u)
    entries = where(inside, getitem(ab, (Ellipsis, k, columns)), 0.0)
    return sum(reshape(entries, shape_of(entries) + (1,)) * getitem(x, (Ellipsis, columns, slice(None))), axis=-3)


def _band_of_product(y, x, l, u):
    """The stored band of y @ x^T for y and x of shape (..., n, k): [k, j] = sum_c y[k + j - u, c] x[j, c]."""
    _, rows, inside = _along_diagonals(l, u, shape_of(x)[-2], 1, -u)
    x_per_diagonal = reshape(x, shape_of(x)[:-2] + (1,) + shape_of(x)[-2:])
    return where(inside, sum(getitem(y, (Ellipsis, rows, slice(None))) * x_per_diagonal, axis=-1), 0.0)


def _transposed_banded_solve(g, ab, l, u):
    """A^-T G: the transpose of B -> A^-1 B for the pairing sum(a * b)."""
    return _banded_solve(_transposed_band(ab, l, u), g, u, l)


# d x = A^-1 (dB - dA x): the cotangent of A is -gB x^T, of which ab holds the band.
defvjp(_banded_solve,
       lambda g, ans, ab, b, l, u: unbroadcast(-_band_of_product(_transposed_banded_solve(g, ab, l, u), ans, l, u),
                                               ab.shape, g.ndim - ans.ndim),
       lambda g, ans, ab, b, l, u: unbroadcast(_transposed_banded_solve(g, ab, l, u), b.shape, g.ndim - ans.ndim))
defjvp(_banded_solve,
       lambda t, ans, ab, b, l, u: -_banded_solve(ab, _band_times(t, ans, l, u), l, u),
       lambda t, ans, ab, b, l, u: _banded_solve(ab, t, l, u))


def solve_banded(l_and_u: tuple[int, int], ab: ArrayLike, b: ArrayLike, overwrite_ab: bool = False,
                 overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """x with A x = b for the band matrix A with (l, u) = ``l_and_u`` sub- and superdiagonals stored in
    ab (l + u + 1, n) as A[i, j] = ab[u + i - j, j] (scipy's layout and value; entries of ab outside
    the matrix are not read).

    Examples
    --------
    >>> import numpy as np
    >>> ab = np.array([[0.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.0, 1.0, 0.0]])   # tridiagonal: 1, 2, 1
    >>> solve_banded((1, 1), ab, np.array([3.0, 4.0, 3.0]))
    array([1., 1., 1.])
    """
    l, u = (int(w) for w in l_and_u)
    if ndim_of(ab) != 2 or shape_of(ab)[0] != l + u + 1:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: l+u+1 ({l + u + 1}) "
                         f"does not equal ab.shape[0] (ab has shape {shape_of(ab)})")
    n = shape_of(ab)[1]
    if ndim_of(b) not in (1, 2) or shape_of(b)[0] != n:
        raise ValueError(f"shapes of ab {shape_of(ab)} and b {shape_of(b)} are incompatible: b must be (n,) or "
                         f"(n, k) with n = {n}")
    vector = ndim_of(b) == 1
    return _as_given(_banded_solve(ab, reshape(b, (n, 1)) if vector else b, l, u), vector)


for _prim in (_expm, _triangular_solve, _sylvester, _sqrtm, _banded_solve):
    _prim.complex_ok = True  # verified in JAX's convention (tests/autodiff/test_ops.py)
