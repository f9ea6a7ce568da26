"""Uncertainty from the exact curvature at a solution: ``result.hess_inv`` and ``hessopt.covariance``.

A second-order ``minimize`` result carries ``hess_inv``, the inverse of the exact Hessian of ``fun``
at ``x`` as a ``scipy.sparse.linalg.LinearOperator``. scipy's BFGS gives a dense array there (its
quasi-Newton matrix) and L-BFGS-B a LinearOperator (``LbfgsInvHessProduct``); a LinearOperator is
chosen here because forming the inverse costs a Hessian and a factorization that most runs never
need: nothing is computed until the first product, then the Hessian is recorded once at x and
factored (Cholesky, formed in one batched sweep, up to ``DENSE_UP_TO`` variables) or solved with
by CG on its products (beyond). ``hess_inv.todense()`` gives the array on request (as
``LbfgsInvHessProduct.todense``), ``hess_inv.diagonal()`` its diagonal, from the sparse
factorization of ``autodiff.sparse_hessian`` for large problems (one LU, solves with blocks of unit
vectors: never a dense inverse). At bounds the inverse is that of the Hessian of the free
variables, the active ones' rows and columns zero (they are held fixed).

``covariance(result, kind)`` turns it into the covariance of an estimate: for a maximum-likelihood
fit (``fun`` the negative log-likelihood) the inverse Hessian (the observed information's
inverse), or the sandwich H^-1 (sum_i g_i g_i^T) H^-1 with the per-observation gradients g_i
(Huber 1967, White 1982: robust to a misspecified likelihood); for a ``least_squares`` fit the
Gauss-Newton (J^T J)^-1 scaled by the residual variance ``2 cost / (m - n)`` unless
``absolute_sigma`` (scipy ``curve_fit``'s meaning: the residuals are already divided by the
observations' standard deviations), or the sandwich (J^T J)^-1 J^T diag(r^2) J (J^T J)^-1 (White's
heteroskedasticity-consistent HC0).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.optimize import OptimizeResult
from scipy.sparse.linalg import LinearOperator

import autodiff as ad
from autodiff.linear_solve import solve_cg

#: Up to this many variables the Hessian is formed (one batched sweep) and factored densely.
DENSE_UP_TO = 2000
_DIAGONAL_BLOCK = 256   # unit vectors solved at once for the diagonal of a large inverse


class InverseHessian(LinearOperator):
    """The inverse of the Hessian at a solution, on its free variables, made on first use.

    Parameters
    ----------
    hessian_at : callable
        ``() -> HessianOperator`` (``to_dense``, ``matmat``): the Hessian recorded at x.
    free : ndarray of bool
        The free variables (False for those on a bound, whose rows and columns are zero).
    sparse_at : callable, optional
        ``() -> scipy.sparse`` Hessian at x, for the diagonal of a large inverse.
    """

    def __init__(self, hessian_at: Callable, free: np.ndarray, sparse_at: Callable | None = None):
        n = free.size
        super().__init__(dtype=np.float64, shape=(n, n))
        self._hessian_at, self._sparse_at = hessian_at, sparse_at
        self._mask = free.astype(np.float64)
        self._solve: Callable | None = None

    def _solver(self) -> Callable:
        """B (n, k) -> P A^{-1} P B with A = P H P + (I - P): the free block's inverse."""
        if self._solve is None:
            operator, mask = self._hessian_at(), self._mask
            if self.shape[0] <= DENSE_UP_TO:
                A = mask[:, None] * operator.to_dense() * mask + np.diag(1 - mask)
                try:
                    factor = scipy.linalg.cho_factor(A)
                except np.linalg.LinAlgError as error:
                    raise _not_positive_definite(error) from error
                self._solve = lambda B: mask[:, None] * scipy.linalg.cho_solve(factor, mask[:, None] * B)
            else:
                def matvec(V):
                    return mask * operator.matmat((mask * V).T).T + (1 - mask) * V
                self._solve = lambda B: mask[:, None] * _cg(matvec, (mask[:, None] * B).T).T
        return self._solve

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self._solver()(np.reshape(v, (-1, 1))).reshape(-1)

    def _matmat(self, V: np.ndarray) -> np.ndarray:
        return self._solver()(np.asarray(V, dtype=np.float64))

    def _adjoint(self) -> InverseHessian:
        return self

    def todense(self) -> np.ndarray:
        """The inverse as an (n, n) array (scipy's ``LbfgsInvHessProduct.todense``)."""
        return self._matmat(np.eye(self.shape[0]))

    def diagonal(self) -> np.ndarray:
        """The inverse's diagonal (the variances): from the dense factorization, or for a large
        problem from one sparse LU of the Hessian, solved with blocks of unit vectors."""
        n = self.shape[0]
        if n <= DENSE_UP_TO or self._sparse_at is None:
            return np.concatenate([np.diagonal(self._matmat(np.eye(n)[:, j:j + _DIAGONAL_BLOCK]), offset=-j)
                                   for j in range(0, n, _DIAGONAL_BLOCK)])
        mask = self._mask
        H = scipy.sparse.csc_matrix(self._sparse_at())
        A = scipy.sparse.diags(mask) @ H @ scipy.sparse.diags(mask) + scipy.sparse.diags(1 - mask)
        try:
            lu = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(A))
        except RuntimeError as error:
            raise _not_positive_definite(error) from error
        blocks = []
        for j in range(0, n, _DIAGONAL_BLOCK):
            E = np.eye(n, min(_DIAGONAL_BLOCK, n - j), k=-j)
            blocks.append(np.diagonal(lu.solve(E), offset=-j))
        diagonal = np.concatenate(blocks) * mask
        if np.any(diagonal[mask > 0] <= 0):
            raise _not_positive_definite("a variance is not positive")
        return diagonal


def _cg(matvec: Callable, B: np.ndarray) -> np.ndarray:
    try:
        return solve_cg(matvec, B)
    except RuntimeError as error:
        raise _not_positive_definite(error) from error


def _not_positive_definite(error) -> ValueError:
    return ValueError(f"hess_inv: the Hessian at x is not positive definite on the free variables ({error}), so it "
                      "has no inverse to serve as a covariance: x is not a strict minimum (a flat or saddle "
                      "direction, or parameters that the data do not identify)")


def attach_hess_inv(result: OptimizeResult, hessian_at: Callable, objective: Callable | None) -> None:
    """``result.hess_inv`` for a run whose flat ``result.x`` it describes: ``hessian_at(x)`` the
    Hessian operator at x, ``objective`` (flat x -> f, or None) for the sparse Hessian's diagonal."""
    x = np.array(result.x, dtype=np.float64, copy=True)
    active = result.get("active_mask")
    free = np.ones(x.size, bool) if active is None else np.asarray(active).reshape(-1) == 0
    sparse_at = None if objective is None else (lambda: ad.sparse_hessian(objective)(x))
    result.hess_inv = InverseHessian(lambda: hessian_at(x), free, sparse_at)
