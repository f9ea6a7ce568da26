"""Differentiable ``numpy.linalg``: solve, inv, det, slogdet, cholesky, eigh, svd, pinv, norm, and more.

Rules follow the standard matrix-calculus results (Giles 2008, "Extended collection of matrix
derivative results"; Murray 2016 for the Cholesky factor; the eigh rule assumes distinct
eigenvalues). They are written with the engine's ops, so they are differentiable again.
"""
from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as _np

from ..core import Tensor, concrete, list_operand, ndim_of, shape_of, trackers, value_of
from ..extend import defjvp, defvjp, nondiff, primitive, unbroadcast
from .ops import (
    _is_complex,
    as_array,
    astype,
    concatenate,
    conj,
    defreduction,
    float_type,
    matmul,
    moveaxis,
    real,
    reshape,
    sum,
    swapaxes,
    tril,
    triu,
    where,
)
from .ops import abs as _abs
from .ops import max as _max
from .ops import min as _min

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike, Axes

SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
SVDResult = namedtuple("SVDResult", "U S Vh")
QRResult = namedtuple("QRResult", "Q R")


def _mT(a):
    return swapaxes(a, -1, -2)


def _column(v):
    return reshape(v, v.shape + (1,))


def _row(v):
    return reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def _solve_vjp_a(g, ans, a, b):
    if b.ndim == 1:  # numpy >= 2: a 1-D b is one vector for every matrix in a's batch
        grad = -matmul(solve(_mT(a), _column(g)), _row(ans))
    else:
        grad = -matmul(solve(_mT(a), g), _mT(ans))
    return unbroadcast(grad, a.shape, g.ndim - ans.ndim)


def _solve_vjp_b(g, ans, a, b):
    grad = solve(_mT(a), _column(g))[..., 0] if b.ndim == 1 else solve(_mT(a), g)
    return unbroadcast(grad, b.shape, g.ndim - ans.ndim)


def _solve_jvp_a(t, ans, a, b):
    if b.ndim == 1:
        return -solve(a, matmul(t, _column(ans)))[..., 0]
    return -solve(a, matmul(t, ans))


solve = primitive(_np.linalg.solve, "solve")
defvjp(solve, _solve_vjp_a, _solve_vjp_b)
defjvp(solve, _solve_jvp_a, lambda t, ans, a, b: solve(a, t))

inv = primitive(_np.linalg.inv, "inv")
defvjp(inv, lambda g, ans, a: -matmul(matmul(_mT(ans), g), _mT(ans)))
defjvp(inv, lambda t, ans, a: -matmul(matmul(ans, t), ans))


def _scalar_times_matrix(s, m):
    return reshape(s, s.shape + (1, 1)) * m


def _cofactor_svd(a):
    """conj(U), conj(V^H) (U and V^H for real a), the singular values and det(U) det(V^H)."""
    u, s, vh = _np.linalg.svd(a)
    return u.conj(), vh.conj(), s, _np.linalg.det(u) * _np.linalg.det(vh)


def _products_of_other_values(s):
    """p_i = prod_{k != i} s_k and q_ij = prod_{k != i, j} s_k (0 on the diagonal), without a
    division, so exact where singular values are 0: prefix and suffix products, and for i < j the
    products strictly between i and j from a cumulative product along the rows of a triangle."""
    n = s.shape[-1]
    ones = _np.ones(s.shape[:-1] + (1,), s.dtype)
    before = _np.cumprod(_np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = _np.cumprod(_np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    upper = _np.triu(_np.ones((n, n), bool), 1)
    between = _np.cumprod(_np.where(upper, s[..., None, :], 1.0), axis=-1)  # prod_{i < k <= j} s_k
    between = _np.concatenate([_np.ones(between.shape[:-1] + (1,), s.dtype), between[..., :-1]], axis=-1)
    q = _np.where(upper, before[..., :, None] * between * after[..., None, :], 0.0)
    return before * after, q + _np.swapaxes(q, -1, -2)


def _cofactor_raw(a):
    """The cofactor matrix of ``a`` (adj(a)^T, d det / da) from its SVD a = U S V^H:
    cof(U) cof(S) cof(V^H) = det(U) det(V^H) conj(U) diag(p) conj(V^H), p_i the product of the
    other singular values. It needs no inverse, so it is exact at singular matrices."""
    u, vh, s, sign = _cofactor_svd(a)
    p = _products_of_other_values(s)[0]
    return (sign[..., None, None] * u * p[..., None, :]) @ vh


def _cofactor_derivative_raw(t, a):
    """d cof(a)[t], the second derivative of det. With a + t = U (S + E) V^H, E = U^H t V^H, and
    cof(S + E) = cof(S) + F + O(E^2) with F_ii = sum_{k != i} E_kk q_ik, F_ij = -E_ji q_ij (q: the
    products of the other singular values). This symmetric bilinear form is its own transpose, so
    it is both the JVP and the VJP of the cofactor (t may carry batch axes)."""
    u, vh, s, sign = _cofactor_svd(a)
    q = _products_of_other_values(s)[1]
    e = sign[..., None, None] * (_np.swapaxes(u, -1, -2) @ t @ _np.swapaxes(vh, -1, -2))
    diagonal = (q @ _np.diagonal(e, 0, -2, -1)[..., None])[..., 0]
    f = _np.eye(s.shape[-1], dtype=s.dtype) * diagonal[..., None, :] - _np.swapaxes(e, -1, -2) * q
    return u @ f @ vh


# Exact at singular matrices to second order; a third sweep (through cofactor_derivative) is not
# supported.
_cofactor = primitive(_cofactor_raw, "cofactor")
_cofactor_derivative = primitive(_cofactor_derivative_raw, "cofactor_derivative")
defvjp(_cofactor, lambda g, ans, a: _cofactor_derivative(g, a))
defjvp(_cofactor, lambda t, ans, a: _cofactor_derivative(t, a))

det = primitive(_np.linalg.det, "det")
defvjp(det, lambda g, ans, a: _scalar_times_matrix(g, _cofactor(a)))
defjvp(det, lambda t, ans, a: sum(_cofactor(a) * t, axis=(-2, -1)))

_logabsdet = primitive(lambda a: _np.linalg.slogdet(a)[1], "logabsdet")
defvjp(_logabsdet, lambda g, ans, a: _scalar_times_matrix(g, _mT(inv(a))))
defjvp(_logabsdet, lambda t, ans, a: real(sum(_mT(inv(a)) * t, axis=(-2, -1))))  # log|det| = Re log det


def slogdet(a: ArrayLike) -> SlogdetResult:
    """(sign, log|det a|); the sign carries no gradient (for a complex matrix it is a phase that has
    one: refused; use det)."""
    if isinstance(a, Tensor) and _is_complex(a):
        raise TypeError("autodiff: slogdet of a complex matrix does not differentiate (its sign, a "
                        "phase, has a derivative); use det, or log(abs(det))")
    return SlogdetResult(_np.linalg.slogdet(concrete(a))[0], _logabsdet(a))


def _phi(x):
    """Lower triangle with the diagonal halved."""
    return tril(x) - 0.5 * x * _np.eye(x.shape[-1], dtype=x.dtype)


def _cholesky_vjp(g, ans, a):
    """Murray (2016), "Differentiation of the Cholesky decomposition", symmetric form."""
    p = _phi(matmul(_mT(ans), g))
    l_inv = inv(ans)
    s = matmul(matmul(_mT(l_inv), p), l_inv)
    return 0.5 * (s + _mT(s))


def _cholesky_jvp(t, ans, a):
    l_inv = inv(ans)
    return matmul(ans, _phi(matmul(matmul(l_inv, t), _mT(l_inv))))


cholesky = primitive(_np.linalg.cholesky, "cholesky")
defvjp(cholesky, _cholesky_vjp)
defjvp(cholesky, _cholesky_jvp)


def _c(x):
    """conj(x) for complex x, x itself otherwise (no recorded no-op)."""
    return conj(x) if _is_complex(x) else x


def _H(x):
    """The conjugate transpose."""
    return _c(_mT(x))


def _re(x):
    return real(x) if _is_complex(x) else x


def _eigh_packed(a, UPLO):
    """Eigenvalues stacked above the eigenvectors: one array, so one record serves both."""
    w, v = _np.linalg.eigh(a, UPLO)
    return _np.concatenate([w[..., None, :], v], axis=-2)


def _gaps(w):
    """1 / (w_j - w_i) off the diagonal, 0 on it."""
    gaps = reshape(w, w.shape[:-1] + (1, -1)) - reshape(w, w.shape + (1,))
    n = w.shape[-1]
    safe = where(_np.eye(n, dtype=bool), 1.0, gaps)
    return (1 - _np.eye(n, dtype=_re(w).dtype)) / safe


def _hermitian_from_triangle(t, UPLO):
    """The Hermitian matrix that a routine reading one triangle of ``t`` (and the real part of its
    diagonal) sees, as NumPy's eigh and LAPACK's Cholesky routines do. Linear, so it also maps a
    change of ``a`` to the change such a routine sees: eigh's derivative is that of a function of
    one triangle, in any direction."""
    part = tril(t, -1) if UPLO == "L" else triu(t, 1)
    return part + _H(part) + _re(t) * _np.eye(t.shape[-1], dtype=_re(t).dtype)


def _fold(g, UPLO):
    """The transpose of ``_hermitian_from_triangle`` (for the pairing Re(sum(a * b))): a gradient
    of the Hermitian matrix folded onto the triangle eigh reads."""
    both = g + _H(g)
    return (tril(both, -1) if UPLO == "L" else triu(both, 1)) + _re(g) * _np.eye(g.shape[-1], dtype=_re(g).dtype)


def _eigh_vjp(g, ans, a, UPLO):
    """With dw = Re diag(V^H dH V) and dV = V (F * V^H dH V), F = 1 / (w_j - w_i) (distinct
    eigenvalues; V^H dV has a zero diagonal, JAX's gauge): gH = conj(V) C V^T, C = F * V^T gV +
    diag(Re gw), folded onto the triangle."""
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0, :], g[..., 1:, :]
    inner = _gaps(w) * matmul(_mT(v), gv)
    inner = inner + _np.eye(w.shape[-1], dtype=_re(w).dtype) * reshape(_re(gw), gw.shape[:-1] + (1, -1))
    return _fold(matmul(matmul(_c(v), inner), _mT(v)), UPLO)


def _eigh_jvp(t, ans, a, UPLO):
    w, v = ans[..., 0, :], ans[..., 1:, :]
    vh_t_v = matmul(matmul(_H(v), _hermitian_from_triangle(t, UPLO)), v)
    tw = _re(sum(vh_t_v * _np.eye(w.shape[-1], dtype=_re(w).dtype), axis=-1))
    tv = matmul(v, _gaps(w) * vh_t_v)
    return concatenate([reshape(astype(tw, tv.dtype), tw.shape[:-1] + (1, -1)), tv], axis=-2)


_eigh = primitive(_eigh_packed, "eigh")
defvjp(_eigh, _eigh_vjp)
defjvp(_eigh, _eigh_jvp)


def eigh(a: ArrayLike, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a symmetric (Hermitian) matrix, of which NumPy
    reads one triangle; the eigenvectors' derivative needs distinct eigenvalues (and, complex,
    is in JAX's gauge: V^H dV has a zero diagonal)."""
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    packed = _eigh(a, UPLO)
    return EighResult(_re(packed[..., 0, :]), packed[..., 1:, :])


def eigvalsh(a: ArrayLike, UPLO: str = "L") -> Array:
    return eigh(a, UPLO).eigenvalues


def _eig_packed(a):
    w, v = _np.linalg.eig(a)
    return _np.concatenate([w[..., None, :], v], axis=-2)


def _eig_jvp(t, ans, a):
    """Giles (2008): with K = V^-1 dA V, dw = diag K and dV = V (F * K), F = 1 / (w_j - w_i), less
    the part along each v_i that would change its unit norm (NumPy normalizes them)."""
    w, v = ans[..., 0, :], ans[..., 1:, :]
    k = matmul(matmul(inv(v), t), v)
    dw = sum(k * _np.eye(w.shape[-1], dtype=_re(w).dtype), axis=-2, keepdims=True)
    dv = matmul(v, _gaps(w) * k)
    dv = dv - v * real(sum(_c(v) * dv, axis=-2, keepdims=True))
    return concatenate([dw, dv], axis=-2)


def _eig_vjp(g, ans, a):
    """The transpose of ``_eig_jvp``: gV0 = gV - conj(V) Re(sum(gV * V)) (the normalization), then
    V^-T (F * V^T gV0 + diag gw) V^T."""
    w, v = ans[..., 0, :], ans[..., 1:, :]
    gw, gv = g[..., 0:1, :], g[..., 1:, :]
    gv = gv - _c(v) * real(sum(gv * v, axis=-2, keepdims=True))
    inner = _gaps(w) * matmul(_mT(v), gv) + _np.eye(w.shape[-1], dtype=_re(w).dtype) * gw
    return matmul(matmul(_mT(inv(v)), inner), _mT(v))


_eig = primitive(_eig_packed, "eig")
defvjp(_eig, _eig_vjp)
defjvp(_eig, _eig_jvp)


def eig(a: ArrayLike) -> EigResult:
    """Eigenvalues and unit eigenvectors of a square matrix (complex in general, as NumPy's);
    derivatives need distinct eigenvalues, and the eigenvectors' phase is a gauge: differentiate
    quantities that do not depend on it (|v|, v v^H, ...)."""
    packed = _eig(a)
    return EigResult(packed[..., 0, :], packed[..., 1:, :])


def eigvals(a: ArrayLike) -> Array:
    return eig(a).eigenvalues


def _svd_packed(a):
    """U (m rows), the singular values (one row) and W = (V^H)^T (n rows; V itself for real a),
    stacked: one record serves all."""
    u, s, vh = _np.linalg.svd(a, full_matrices=False)
    return _np.concatenate([u, s[..., None, :], _np.swapaxes(vh, -1, -2)], axis=-2)


def _svd_parts(packed, m):
    """U, the singular values as a row (shape (..., 1, k)) and W = conj(V) of a packed SVD."""
    return packed[..., :m, :], packed[..., m:m + 1, :], packed[..., m + 1:, :]


def _svd_vjp(g, ans, a):
    """Townsend (2016), "Differentiating the singular value decomposition", for complex matrices in
    JAX's convention and gauge (distinct, nonzero singular values). With W = conj(V), Y = U^T gU,
    Q = W^T gW: conj(U) C W^H + (I - conj(U) U^T) gU S^-1 W^H + conj(U) S^-1 gW^T (I - W W^H),
    C = F (Y - Y^H) S + S F (conj(Q) - Q^T) + diag(Re gs + (Y - Y^H)_ii / (2 s_i))."""
    m = a.shape[-2]
    u, s, w = _svd_parts(ans, m)
    gu, gs, gw = _svd_parts(g, m)
    s, gs = _re(s), _re(gs)
    f = _gaps((s * s)[..., 0, :])  # 1 / (s_j^2 - s_i^2) off the diagonal
    y, q = matmul(_mT(u), gu), matmul(_mT(w), gw)
    y_skew, q_skew = y - _H(y), _c(q) - _mT(q)
    eye = _np.eye(s.shape[-1], dtype=s.dtype)
    inner = f * y_skew * s + eye * gs + _mT(s) * (f * q_skew)
    if _is_complex(a):  # the phase of each (u_i, v_i) pair: JAX's gauge puts it in u_i
        inner = inner + eye * y_skew / (2 * s)
    grad = matmul(matmul(_c(u), inner), _H(w))
    grad = grad + matmul((gu - matmul(_c(u), y)) / s, _H(w))  # (I - conj(U) U^T) gU S^-1 W^H
    return grad + matmul(_c(u), _mT((gw - matmul(_c(w), q)) / s))  # conj(U) S^-1 gW^T (I - W W^H)


def _svd_jvp(t, ans, a):
    m = a.shape[-2]
    u, s, w = _svd_parts(ans, m)
    s = _re(s)
    f = _gaps((s * s)[..., 0, :])
    v = _c(w)
    p = matmul(matmul(_H(u), t), v)
    eye = _np.eye(s.shape[-1], dtype=s.dtype)
    ds = _re(sum(p * eye, axis=-2, keepdims=True))
    omega_u = f * (p * s + _mT(s) * _H(p))
    if _is_complex(a):
        omega_u = omega_u + eye * (p - _H(p)) / (2 * s)
    du = matmul(u, omega_u) + (matmul(t, v) - matmul(u, p)) / s
    dv = matmul(v, f * (_mT(s) * p + _H(p) * s)) + (matmul(_H(t), u) - matmul(v, _H(p))) / s
    return concatenate([du, astype(ds, du.dtype), _c(dv)], axis=-2)


_svd = primitive(_svd_packed, "svd")
defvjp(_svd, _svd_vjp)
defjvp(_svd, _svd_jvp)


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
        ) -> SVDResult | Array:
    """Singular value decomposition; derivatives assume distinct, nonzero singular values (for a
    complex matrix the phase of each pair of singular vectors is a gauge, JAX's).

    The singular vectors of the full (not thin) decomposition of a non-square matrix are not
    unique, so only ``full_matrices=False`` differentiates there (as in JAX).
    """
    if hermitian:
        raise NotImplementedError("autodiff: svd with hermitian=True is not supported (use eigh)")
    m, n = shape_of(a)[-2:]
    if not compute_uv:
        return svdvals(a)
    if full_matrices and m != n:
        raise NotImplementedError("autodiff: svd of a non-square matrix differentiates only with "
                                  "full_matrices=False (the extra singular vectors are not unique)")
    u, s, w = _svd_parts(_svd(a), m)
    return SVDResult(u, _re(s[..., 0, :]), _mT(w))


def svdvals(x: ArrayLike) -> Array:
    m = shape_of(x)[-2]
    return _re(_svd(x)[..., m, :])


def pinv(a: ArrayLike, rcond: ArrayLike | None = None, hermitian: bool = False, *, rtol: ArrayLike | None = None
         ) -> Array:
    """Moore-Penrose pseudo-inverse V S^+ U^H; singular values below the cutoff count as zero.

    The value matches NumPy at any rank; the derivative is that of ``svd``, so it needs distinct,
    nonzero singular values (full rank).
    """
    if hermitian:
        raise NotImplementedError("autodiff: pinv with hermitian=True is not supported")
    a = as_array(a)
    u, s, w = _svd_parts(_svd(a), shape_of(a)[-2])
    s = _re(s)
    kept = _nonzero_singular_values(s, a, rcond if rcond is not None else rtol)
    inverse = where(kept, 1.0 / where(kept, s, 1.0), 0.0)
    return _c(matmul(w * inverse, _mT(u)))  # conj(W S^+ U^T) = V S^+ U^H


def _qr_packed(a):
    """Q (m rows) above R^T (n rows): one record serves both factors."""
    q, r = _np.linalg.qr(a)
    return _np.concatenate([q, _np.swapaxes(r, -1, -2)], axis=-2)


def _qr_parts(packed, m):
    """Q and R of a packed QR."""
    return packed[..., :m, :], _mT(packed[..., m:, :])


def _qr_vjp(g, ans, a):
    """The reduced QR's cotangents pulled back (m >= n, full rank): with M = triu(gR R^T - Q^T gQ),
    gA = (gQ + Q (M + M^T - diag M)) R^-T (as in PyTorch's linalg_qr_backward)."""
    q, r = _qr_parts(ans, a.shape[-2])
    gq, gr = _qr_parts(g, a.shape[-2])
    upper = triu(matmul(gr, _mT(r)) - matmul(_mT(q), gq))
    symmetric = upper + _mT(upper) - upper * _np.eye(r.shape[-1], dtype=r.dtype)
    return _mT(solve(r, _mT(gq + matmul(q, symmetric))))


def _qr_jvp(t, ans, a):
    q, r = _qr_parts(ans, a.shape[-2])
    r_inv = inv(r)
    t_r_inv = matmul(t, r_inv)
    c = matmul(_mT(q), t_r_inv)  # Q^T dA R^-1 = Omega (skew) + dR R^-1 (upper)
    omega = tril(c, -1) - _mT(tril(c, -1))
    dr = matmul(c - omega, r)
    dq = t_r_inv - matmul(q, c - omega)
    return concatenate([dq, _mT(dr)], axis=-2)


_qr = primitive(_qr_packed, "qr")
defvjp(_qr, _qr_vjp)
defjvp(_qr, _qr_jvp)


def qr(a: ArrayLike, mode: str = "reduced") -> QRResult | Array:
    """QR factorization (mode='reduced' or 'r'); derivatives for m >= n at full rank."""
    m, n = shape_of(a)[-2:]
    if mode not in ("reduced", "r") or m < n:
        raise NotImplementedError("autodiff: qr differentiates mode='reduced' (or 'r') of a matrix "
                                  f"with at least as many rows as columns (got mode={mode!r}, {m}x{n})")
    q, r = _qr_parts(_qr(a), m)
    return r if mode == "r" else QRResult(q, r)


def _nonzero_singular_values(s, a, rcond):
    """Which singular values count as nonzero: those above rcond (by default max(m, n) times the
    machine epsilon) times the largest, as in NumPy's pinv and lstsq."""
    if rcond is None:
        rcond = max(shape_of(a)[-2:]) * _np.finfo(float_type(value_of(a))).eps
    return concrete(s) > rcond * _np.max(concrete(s), axis=-1, keepdims=True)


def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None) -> tuple[Array, Array, int, Array]:
    """Least squares ``pinv(a) @ b``, with NumPy's (solution, residuals, rank, singular values).

    The solution and residuals differentiate where a has full rank (through ``pinv``); the rank is
    an integer and the singular values come from ``svdvals``.
    """
    a, b = as_array(a), as_array(b)
    m, n = shape_of(a)[-2:]
    x = matmul(pinv(a, rcond), b)
    s = svdvals(a)
    rank = int(_np.sum(_nonzero_singular_values(s, a, rcond)))
    if rank < n or m <= n:  # NumPy returns no residuals then
        residuals = _np.empty((0,), dtype=_np.result_type(value_of(a), value_of(b)))
    else:
        residual = b - matmul(a, x)
        residuals = sum(_re(residual * _c(residual)), axis=0)
        residuals = reshape(residuals, (1,)) if ndim_of(b) == 1 else residuals
    return x, residuals, rank, s


def _safe_divide(x, norm):
    return x / where(_is_zero(norm), 1.0, norm)


def _norm2_raw(x, axis, keepdims):
    """sqrt(sum(x**2)); where the squares would overflow or underflow, x is first scaled by a power
    of two (as LAPACK's nrm2 scales), which is exact: in range the value is the plain formula's."""
    with _np.errstate(over="ignore", under="ignore"):
        result = _np.sqrt(_np.sum(x * x, axis=axis, keepdims=keepdims))
    small, big = _SQUARES_IN_RANGE.get(_np.dtype(result.dtype).char, (_np.inf, 0))
    if _np.all((result > small) & (result < big)):
        return result
    largest = _np.max(_np.abs(x), axis=axis, keepdims=True) if x.size else _np.zeros(result.shape)
    exponent = _np.frexp(_np.where(_np.isfinite(largest), largest, 0.0))[1]
    scaled = x * _np.ldexp(_np.ones((), x.dtype), -exponent)
    total = _np.sum(scaled * scaled, axis=axis, keepdims=True)
    result = _np.ldexp(_np.sqrt(total), exponent).astype(result.dtype)
    return result if keepdims else _np.reshape(result, _np.shape(_np.sum(x, axis=axis)))


# Norms between these are computed by the plain formula exactly: no square overflowed or lost
# precision to underflow (float32, float64; other types take the scaled path).
_SQUARES_IN_RANGE = {_np.dtype(t).char: (_np.sqrt(_np.finfo(t).tiny) / _np.finfo(t).eps,
                                         _np.sqrt(_np.finfo(t).max) / 4) for t in (_np.float32, _np.float64)}


_norm2 = primitive(_norm2_raw, "norm")
defreduction(_norm2, lambda x, kept, axis: _safe_divide(x, kept))


class _Norm(Tensor):
    """A tracked 2-norm. Squared (``n ** 2``, ``np.square(n)``, ``np.power(n, 2)``, ``n * n``) it is
    the sum of squares of the normed Tensor, recorded afresh, so ``norm(x)**2`` has exact derivatives
    of every order at x = 0. Through the norm the product rule loses them there: the norm's gradient
    at 0 is a convention (0) and its curvature is infinite, so 2 n grad(n) differentiates to 0, not 2I.
    """

    __slots__ = ()

    def __pow__(self, other):
        squared = _squared(self) if _is_two(other) else None
        return super().__pow__(other) if squared is None else squared

    def __mul__(self, other):
        squared = _squared(self) if other is self else None
        return super().__mul__(other) if squared is None else squared

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs and (
                (ufunc is _np.square and len(inputs) == 1)
                or (ufunc is _np.power and inputs[0] is self and _is_two(inputs[1]))
                or (ufunc is _np.multiply and inputs[0] is inputs[1] is self)):
            squared = _squared(self)
            if squared is not None:
                return squared
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)


_NORMED: dict = {}  # norm id -> (x, its value then, axis, keepdims, weakref to the norm)


def _is_two(value) -> bool:
    return isinstance(value, (int, float, _np.integer, _np.floating)) and value == 2


def _mark_norm(n, x, axis, keepdims):
    """Make a tracked 2-norm ``n`` of ``x`` a _Norm, remembering what it is the norm of."""
    if isinstance(n, Tensor) and trackers(n):
        key = n._id
        n.__class__ = _Norm
        _NORMED[key] = (x, x._value, axis, keepdims, weakref.ref(n, lambda _: _NORMED.pop(key, None)))
    return n


def _squared(n):
    """``sum(x * x)`` for the norm ``n`` of x, or None when that would not be the same value to the
    same tapes and accumulators (x changed since, or n is tracked where x is not, or vice versa)."""
    x, value, axis, keepdims, _ = _NORMED[n._id]
    if x._value is not value or trackers(n) != trackers(x):
        return None
    return sum(x * x, axis=axis, keepdims=keepdims)


_is_zero = nondiff(lambda x: x == 0)
_count_nonzero = nondiff(lambda x, axis, keepdims: _np.linalg.norm(x, 0, axis, keepdims))


def norm(x: ArrayLike, ord: float | str | None = None, axis: Axes = None, keepdims: bool = False) -> Array:
    """Vector and matrix norms, as NumPy's; the spectral and nuclear norms differentiate through
    ``svd`` (distinct singular values).

    At x = 0, where vector norms have a kink, their gradient is 0 (the minimum-norm subgradient);
    the 2-norm's (and Frobenius norm's) curvature there, infinite in truth, comes out finite, and its
    square (``norm(x)**2``, see ``_Norm``) is exact: Hessian 2I.
    """
    x = list_operand(x) if isinstance(x, (list, tuple)) else x
    ndim = ndim_of(x)
    if axis is None and ord is not None and ndim > 2:
        raise ValueError("Improper number of dimensions to norm.")
    axis = tuple(range(ndim)) if axis is None else axis
    if isinstance(axis, int):
        axis = (axis,)
    if _is_complex(x) and not (len(axis) == 2 and ord in (2, -2, "nuc")):
        x = _abs(x)  # these norms depend on |x| only (the spectral and nuclear ones refuse complex)
    if ord in (None, 2, "fro") and (ord != 2 or len(axis) == 1) and (ord != "fro" or len(axis) == 2):
        return _mark_norm(_norm2(x, axis, keepdims), x, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    if ord == 0:  # the number of nonzeros: no derivative
        return _count_nonzero(x, axis=axis, keepdims=keepdims)
    if ord == _np.inf:
        return _max(_abs(x), axis=axis, keepdims=keepdims)
    if ord == -_np.inf:
        return _min(_abs(x), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum(_abs(x), axis=axis, keepdims=keepdims)
    total = sum(_abs(x) ** ord, axis=axis, keepdims=keepdims)
    zero = _is_zero(total)  # at x = 0 the gradient is 0, as the 2-norm's, not inf * 0 = NaN
    return where(zero, 0.0, where(zero, 1.0, total) ** (1.0 / ord))


def _matrix_norm(x, ord, axis, keepdims):
    """Induced 1, inf and 2 norms (and their negative-order minima) and the nuclear norm."""
    ndim = ndim_of(x)
    rows, columns = (a % ndim for a in axis)
    if ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (rows, columns), (-2, -1)))
        result = sum(s, axis=-1) if ord == "nuc" else (_max if ord == 2 else _min)(s, axis=-1)
    elif ord in (1, -1):
        result = (_max if ord == 1 else _min)(sum(_abs(x), axis=rows), axis=columns - (columns > rows))
    elif ord in (_np.inf, -_np.inf):
        result = (_max if ord == _np.inf else _min)(sum(_abs(x), axis=columns), axis=rows - (rows > columns))
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices.")
    if keepdims:
        shape = list(shape_of(x))
        shape[rows] = shape[columns] = 1
        result = reshape(result, tuple(shape))
    return result


def matrix_power(a: ArrayLike, n: int) -> Array:
    """``a`` to an integer power by repeated squaring (the inverse first for n < 0)."""
    a = as_array(a)
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    if result is None:  # n == 0: the identity, which no gradient reaches
        return nondiff(lambda v: _np.broadcast_to(_np.eye(v.shape[-1], dtype=v.dtype), v.shape).copy())(a)
    return result


def multi_dot(arrays: Sequence[ArrayLike], *, out: None = None) -> Array:
    """``a @ b @ c ...`` left to right (a first 1-D array is a row, a last one a column)."""
    if out is not None:
        raise TypeError("autodiff: multi_dot with out= (in place) cannot be differentiated")
    result = arrays[0]
    for a in arrays[1:]:
        result = matmul(result, a)
    return result


# numpy.linalg's names implemented here (dispatch.py sends NumPy's own of each name here on Tensors).
__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals",
           "pinv", "qr", "lstsq", "norm", "matrix_power", "multi_dot", "matmul"]

for _prim in (solve, inv, det, _cofactor, _cofactor_derivative, _logabsdet,  # holomorphic (log|det|: Re)
              _eigh, _eig, _svd):  # complex rules in JAX's convention and gauge
    _prim.complex_ok = True
