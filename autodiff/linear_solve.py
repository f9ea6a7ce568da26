"""Linear solves on products: ``solve_cg``, ``solve_gmres``, ``solve_lu`` (as ``jaxopt.linear_solve``).

Each is ``solve(matvec, b)``: ``matvec`` maps vectors to their products with a square matrix A that is
never formed (``solve_lu`` forms it from n products in one batched call), and the result is x with
A x = b. ``b`` may carry leading batch axes, shape ``(..., n)``: every row is its own system with the
same A, and ``matvec`` is called on a whole batch at once, shape ``(k, n)``, as the engine's batched
sweeps answer it (``autodiff.vjp``'s pullback, ``linearize``'s push-forward). Their use here is the
implicit derivatives of ``autodiff.implicit``.

A solve that does not reach its tolerance raises: an answer that is not a solution is never returned
as one. The iterative solves stop when each row's residual ``||b - A x||`` is at most
``max(rtol ||b||, atol)`` (2-norms), checked on the true residual, not only on the recurrence.

References: M. R. Hestenes and E. Stiefel, "Methods of conjugate gradients for solving linear
systems", J. Res. NBS 49 (1952); Y. Saad and M. H. Schultz, "GMRES: a generalized minimal residual
algorithm for solving nonsymmetric linear systems", SIAM J. Sci. Stat. Comput. 7 (1986);
L. Giraud, J. Langou and M. Rozloznik, "The loss of orthogonality in the Gram-Schmidt
orthogonalization process", Comput. Math. Appl. 50 (2005) (classical Gram-Schmidt, twice).

Examples
--------
>>> import numpy as np
>>> from autodiff.linear_solve import solve_cg, solve_gmres
>>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> solve_cg(lambda V: V @ A.T, np.array([1.0, 2.0])).round(12)
array([0.09090909, 0.63636364])
>>> solve_gmres(lambda V: V @ A.T, np.eye(2)).round(12)     # two right-hand sides: the inverse's rows
array([[ 0.27272727, -0.09090909],
       [-0.09090909,  0.36363636]])
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["solve_cg", "solve_gmres", "solve_lu"]

DEFAULT_RTOL = 1e-10   # the derivatives' solves: a relative error of about cond(A) * 1e-10
STAGNATION = 0.999     # a GMRES cycle that leaves every residual above 0.999 of the last one stagnates
SINGULAR = 1e-13       # p^T A p (CG) or GMRES's new pivot within 1e-13 of ||p|| ||A p||: A singular there


def _rows(b) -> tuple[np.ndarray, tuple]:
    """``b`` as a (k, n) float array of its rows, and its shape."""
    b = np.asarray(b)
    if b.ndim == 0:
        raise ValueError("a linear solve needs a right-hand side with at least one axis (n,)")
    if b.dtype.kind == "c":
        raise TypeError("the linear solves here are for real systems; solve the real and imaginary parts "
                        "as one real system of twice the size")
    if b.dtype.kind != "f":
        b = b.astype(np.float64)
    return b.reshape(-1, b.shape[-1]), b.shape


def _product(matvec: Callable, V: np.ndarray) -> np.ndarray:
    """``matvec(V)`` as an array of V's shape, or an error naming the mismatch."""
    AV = np.asarray(matvec(V))
    if AV.shape != V.shape:
        raise ValueError(f"matvec maps an array of shape {V.shape} to one of shape {AV.shape}: a square "
                         "matrix's products keep the shape")
    return AV


def _norms(V: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(np.abs(V) ** 2, axis=-1))


def _not_converged(name: str, residual: np.ndarray, b_norm: np.ndarray, target: np.ndarray, products: int,
                   reason: str = "") -> RuntimeError:
    worst = int(np.argmax(residual / np.maximum(target, np.finfo(float).tiny)))
    relative = residual[worst] / b_norm[worst] if b_norm[worst] > 0 else residual[worst]
    return RuntimeError(f"{name}: the residual ||b - A x|| / ||b|| is {relative:.3g} after {products} products, "
                        f"above the tolerance {target[worst] / max(b_norm[worst], np.finfo(float).tiny):.3g}"
                        f"{reason}; the matrix may be singular or too ill-conditioned for this tolerance")


def solve_cg(matvec: Callable, b: np.ndarray, rtol: float = DEFAULT_RTOL, atol: float = 0.0,
             maxiter: int | None = None) -> np.ndarray:
    """x with A x = b for a symmetric positive definite A, by conjugate gradients (Hestenes & Stiefel).

    Parameters
    ----------
    matvec : callable
        ``V -> V @ A.T`` for V of shape (k, n) (A's products with each row).
    b : array_like, shape (..., n)
        One right-hand side per row.
    rtol, atol : float
        Stop when ``||b - A x|| <= max(rtol ||b||, atol)`` for every row.
    maxiter : int, optional
        At most this many products (default ``10 n``, at least 100).

    Returns
    -------
    ndarray of b's shape

    Raises
    ------
    RuntimeError
        When the tolerance is not reached, or A shows a direction of non-positive curvature
        ``p^T A p <= 0`` (not positive definite: use ``solve_gmres``).

    Examples
    --------
    >>> import numpy as np
    >>> solve_cg(lambda V: V * [1.0, 4.0], np.array([2.0, 2.0]))
    array([2. , 0.5])
    """
    B, shape = _rows(b)
    n = B.shape[1]
    maxiter = max(10 * n, 100) if maxiter is None else maxiter
    b_norm = _norms(B)
    target = np.maximum(rtol * b_norm, atol)
    X = np.zeros_like(B)
    R, products = B.copy(), 0
    while products < maxiter:
        X, products = _cg_run(matvec, X, R, target, products, maxiter)
        R = B - _product(matvec, X)     # the true residual: the recurrence's drifts
        products += 1
        if np.all(_norms(R) <= target):
            return X.reshape(shape)
    raise _not_converged("solve_cg", _norms(R), b_norm, target, products)


def _cg_run(matvec: Callable, X: np.ndarray, R: np.ndarray, target: np.ndarray, products: int,
            maxiter: int) -> tuple[np.ndarray, int]:
    """Conjugate-gradient steps from X with residual R until the recurrence's residuals are below
    ``target`` (rows that are stop moving) or ``maxiter`` products are spent."""
    X, P = X.copy(), R.copy()
    rs = np.sum(R * R, axis=-1)
    active = np.sqrt(rs) > target
    while active.any() and products < maxiter:
        AP = _product(matvec, P)
        products += 1
        curvature = np.sum(P * AP, axis=-1)
        flat = active & ~(curvature > SINGULAR * _norms(P) * _norms(AP))
        if flat.any():
            raise RuntimeError("solve_cg: the matrix has a direction of non-positive (or, relative to its "
                               f"image, zero) curvature p^T A p = {curvature[flat][0]:.3g}: it is not positive "
                               "definite (use solve_gmres for an indefinite one)")
        alpha = np.where(active, rs / np.where(active, curvature, 1.0), 0.0)[:, None]
        X += alpha * P
        R = R - alpha * AP
        rs_next = np.sum(R * R, axis=-1)
        beta = np.where(active, rs_next / np.where(rs > 0, rs, 1.0), 0.0)[:, None]
        P = R + beta * P
        rs = rs_next
        active = np.sqrt(rs) > target
    return X, products


def solve_gmres(matvec: Callable, b: np.ndarray, rtol: float = DEFAULT_RTOL, atol: float = 0.0,
                restart: int | None = None, maxiter: int | None = None) -> np.ndarray:
    """x with A x = b for any nonsingular A, by restarted GMRES (Saad & Schultz 1986).

    The Krylov basis is orthogonalized by classical Gram-Schmidt applied twice (as accurate as the
    modified one, in two matrix products per step over the whole batch); Givens rotations keep the
    least-squares residual of each row as it grows. Each cycle starts from the true residual.

    Parameters
    ----------
    matvec : callable
        ``V -> V @ A.T`` for V of shape (k, n).
    b : array_like, shape (..., n)
        One right-hand side per row.
    rtol, atol : float
        Stop when ``||b - A x|| <= max(rtol ||b||, atol)`` for every row.
    restart : int, optional
        Basis vectors kept per cycle (default ``min(n, 50)``).
    maxiter : int, optional
        At most this many products (default ``10 n``, at least 100).

    Returns
    -------
    ndarray of b's shape

    Raises
    ------
    RuntimeError
        When the tolerance is not reached within ``maxiter`` products, or a cycle stagnates (leaves
        every residual above 0.999 of the cycle before's: restarted GMRES can stall for good).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[1.0, 2.0], [-3.0, 1.0]])         # not symmetric
    >>> solve_gmres(lambda V: V @ A.T, np.array([5.0, -1.0])).round(12)
    array([1., 2.])
    """
    B, shape = _rows(b)
    n = B.shape[1]
    restart = min(n, 50) if restart is None else max(1, min(restart, n))
    maxiter = max(10 * n, 100) if maxiter is None else maxiter
    b_norm = _norms(B)
    target = np.maximum(rtol * b_norm, atol)
    X = np.zeros_like(B)
    R, products, previous = B, 0, np.full(len(B), np.inf)
    while True:
        residual = _norms(R)
        active = residual > target
        if not active.any():
            return X.reshape(shape)
        if products >= maxiter or np.all(residual[active] >= STAGNATION * previous[active]):
            raise _not_converged("solve_gmres", residual, b_norm, target, products,
                                 f" (restarted every {restart} products: a larger restart may help)")
        previous = residual
        steps = min(restart, maxiter - products)
        X = X + _gmres_cycle(matvec, R, residual, target, steps)
        products += steps
        R = B - _product(matvec, X)
        products += 1


def _gmres_cycle(matvec: Callable, R: np.ndarray, residual: np.ndarray, target: np.ndarray,
                 steps: int) -> np.ndarray:
    """The correction of one GMRES cycle from residuals R (at most ``steps`` products): each row's
    minimizer of ||R - A c|| over its Krylov space, rows that have converged (or broken down: their
    space is invariant, so their minimizer is exact) left as they are."""
    k, n = R.shape
    basis = np.zeros((k, steps + 1, n), R.dtype)
    hessenberg = np.zeros((k, steps + 1, steps), R.dtype)
    rotations = np.zeros((2, k, steps), R.dtype)
    g = np.zeros((k, steps + 1), R.dtype)
    g[:, 0] = residual
    done = residual <= target
    basis[:, 0] = R / np.where(done, 1.0, residual)[:, None]
    used = 0
    for j in range(steps):
        w = _product(matvec, basis[:, j])
        for _ in range(2):   # classical Gram-Schmidt, twice
            h = np.einsum("kin,kn->ki", basis[:, :j + 1], w)
            w = w - np.einsum("ki,kin->kn", h, basis[:, :j + 1])
            hessenberg[:, :j + 1, j] += h
        norm = _norms(w)
        broke = norm <= SINGULAR * _norms(hessenberg[:, :j + 1, j])   # an invariant space: lucky breakdown
        hessenberg[:, j + 1, j] = np.where(broke, 0.0, norm)
        basis[:, j + 1] = np.where(broke[:, None], 0.0, w / np.where(broke, 1.0, norm)[:, None])
        _rotate(hessenberg, rotations, g, j, done)
        used = j + 1
        done = done | broke | (np.abs(g[:, j + 1]) <= target)
        if done.all():
            break
    y = np.linalg.solve(hessenberg[:, :used, :used], g[:, :used, None])[..., 0]
    return np.einsum("ki,kin->kn", y, basis[:, :used])


def _rotate(hessenberg: np.ndarray, rotations: np.ndarray, g: np.ndarray, j: int, frozen: np.ndarray) -> None:
    """Apply the earlier Givens rotations to column j, then the one zeroing its subdiagonal; rows
    already ``frozen``, and rows whose column j is 0 after the rotations to rounding (within
    ``SINGULAR`` of ||A v_j||: A is singular on the space), get column j = e_j instead: their
    coefficient j is 0, their residual kept."""
    cos, sin = rotations
    kept = g[:, j].copy()
    column = hessenberg[:, :, j]
    image = _norms(column)         # ||A v_j||, before the rotations
    for i in range(j):
        upper, lower = column[:, i].copy(), column[:, i + 1].copy()
        column[:, i] = cos[:, i] * upper + sin[:, i] * lower
        column[:, i + 1] = -sin[:, i] * upper + cos[:, i] * lower
    diagonal, below = column[:, j], column[:, j + 1]
    radius = np.hypot(diagonal, below)
    safe = np.where(radius > 0, radius, 1.0)
    cos[:, j] = np.where(radius > 0, diagonal / safe, 1.0)
    sin[:, j] = np.where(radius > 0, below / safe, 0.0)
    column[:, j], column[:, j + 1] = radius, 0.0
    g[:, j + 1] = -sin[:, j] * g[:, j]
    g[:, j] = cos[:, j] * g[:, j]
    frozen = frozen | (radius <= SINGULAR * image)
    if frozen.any():
        column[frozen] = 0.0
        column[frozen, j] = 1.0
        g[frozen, j + 1] = kept[frozen]
        g[frozen, j] = 0.0


def solve_lu(matvec: Callable, b: np.ndarray) -> np.ndarray:
    """x with A x = b, A formed from its products with the n unit vectors (one batched call) and
    factored by LU (``numpy.linalg.solve``): exact to rounding, for small n.

    Raises
    ------
    RuntimeError
        When A is singular.

    Examples
    --------
    >>> import numpy as np
    >>> solve_lu(lambda V: V @ np.array([[2.0, 1.0], [0.0, 4.0]]).T, np.array([3.0, 4.0]))
    array([1., 1.])
    """
    B, shape = _rows(b)
    n = B.shape[1]
    transposed = _product(matvec, np.eye(n, dtype=B.dtype))   # row i: A e_i
    try:
        return np.linalg.solve(transposed.T, B.T).T.reshape(shape)
    except np.linalg.LinAlgError:
        raise RuntimeError(f"solve_lu: the {n} x {n} matrix is singular") from None


# The solves here take a batch of right-hand sides (..., n) and call matvec on batches; another
# solve(matvec, b) is called with one right-hand side (n,) at a time, as jaxopt's are.
BATCHED = (solve_cg, solve_gmres, solve_lu)
