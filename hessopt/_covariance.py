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

import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.optimize import OptimizeResult, OptimizeWarning
from scipy.sparse.linalg import LinearOperator

import autodiff as ad
from autodiff.linear_solve import solve_cg

#: Up to this many variables the Hessian is formed (one batched sweep) and factored densely.
DENSE_UP_TO = 2000
PICKLED_DENSE_UP_TO = 200   # a pickled hess_inv is its dense inverse up to this many variables
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
        """B (n, k) -> P A^{-1} P B: the free block's inverse (:func:`masked_inverse`)."""
        if self._solve is None:
            try:
                rows = masked_inverse(self._hessian_at(), self._mask, DENSE_UP_TO)
            except np.linalg.LinAlgError as error:
                raise _not_positive_definite(error) from error
            self._solve = lambda B: _cg_errors_named(rows, np.asarray(B).T).T
        return self._solve

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self._solver()(np.reshape(v, (-1, 1))).reshape(-1)

    def _matmat(self, V: np.ndarray) -> np.ndarray:
        return self._solver()(np.asarray(V, dtype=np.float64))

    def _adjoint(self) -> InverseHessian:
        return self

    def __reduce__(self):
        """Pickled as its values (the recording it is made from does not pickle): the dense inverse up
        to ``PICKLED_DENSE_UP_TO`` variables, beyond that an operator that says why it has none."""
        n = self.shape[0]
        if n <= PICKLED_DENSE_UP_TO:
            try:
                return DenseInverse, (self.todense(),)
            except ValueError as error:
                return UnpickledInverse, (n, str(error))
        return UnpickledInverse, (n, f"hess_inv of {n} > {PICKLED_DENSE_UP_TO} variables is not pickled (its "
                                     "inverse would be dense): use it, or hessopt.covariance, where minimize ran")

    def todense(self) -> np.ndarray:
        """The inverse as an (n, n) array (scipy's ``LbfgsInvHessProduct.todense``), symmetric."""
        inverse = self._matmat(np.eye(self.shape[0]))
        return 0.5 * (inverse + inverse.T)

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


class DenseInverse(LinearOperator):
    """An inverse Hessian held as an array (what an :class:`InverseHessian` pickles to)."""

    def __init__(self, matrix: np.ndarray):
        super().__init__(dtype=np.float64, shape=matrix.shape)
        self.matrix = matrix

    def _matmat(self, V: np.ndarray) -> np.ndarray:
        return self.matrix @ V

    def _adjoint(self) -> DenseInverse:
        return self

    def todense(self) -> np.ndarray:
        return self.matrix.copy()

    def diagonal(self) -> np.ndarray:
        return np.diagonal(self.matrix).copy()


class UnpickledInverse(LinearOperator):
    """What a large (or not positive definite) :class:`InverseHessian` pickles to: any use raises,
    saying why."""

    def __init__(self, n: int, reason: str):
        super().__init__(dtype=np.float64, shape=(n, n))
        self.reason = reason

    def _matmat(self, V: np.ndarray) -> np.ndarray:
        raise ValueError(self.reason)

    def _adjoint(self) -> UnpickledInverse:
        return self

    def todense(self) -> np.ndarray:
        raise ValueError(self.reason)

    def diagonal(self) -> np.ndarray:
        raise ValueError(self.reason)


def masked_inverse(operator, free: np.ndarray, dense_up_to: int) -> Callable:
    """B (k, n) -> the rows of P A^{-1} P B, A = P H P + (I - P), H the Hessian ``operator``
    (``to_dense``, ``matmat``) and P the diagonal 0/1 mask ``free``: the inverse of the free
    variables' block, zero on the others. Up to ``dense_up_to`` variables A is formed (one batched
    sweep) and factored by Cholesky (an error of about cond(A) eps; ``LinAlgError`` here if A is not
    positive definite), beyond that each call solves by CG on the products (to 1e-10 relative
    residual: an error of at most cond(A) 1e-10; ``RuntimeError`` when it meets non-positive
    curvature)."""
    fixed = 1 - free
    if free.size <= dense_up_to:
        factor = scipy.linalg.cho_factor(free[:, None] * operator.to_dense() * free + np.diag(fixed))
        return lambda B: free * scipy.linalg.cho_solve(factor, (free * B).T).T
    return lambda B: free * solve_cg(lambda V: free * operator.matmat((free * V).T).T + fixed * V, free * B)


def _cg_errors_named(rows: Callable, B: np.ndarray) -> np.ndarray:
    try:
        return rows(B)
    except RuntimeError as error:
        raise _not_positive_definite(error) from error


def _not_positive_definite(error) -> ValueError:
    return ValueError(f"hess_inv: the Hessian at x is not positive definite on the free variables ({error}), so it "
                      "has no inverse to serve as a covariance: x is not a strict minimum (a flat or saddle "
                      "direction, or parameters that the data do not identify)")


def attach_hess_inv(result: OptimizeResult, derivatives) -> None:
    """``result.hess_inv`` for a run whose flat ``result.x`` it describes, from ``derivatives``
    (``hessopt._derivatives.AutodiffDerivatives``: ``at(x)`` the Hessian operator at x, kept from
    the run's last iterate when it is x; its objective for the sparse Hessian's diagonal)."""
    x = np.array(result.x, dtype=np.float64, copy=True)
    active = result.get("active_mask")
    free = np.ones(x.size, bool) if active is None else np.asarray(active).reshape(-1) == 0
    sparse_at = None
    if derivatives.variables is None:
        sparse_at = lambda: ad.sparse_hessian(lambda z: derivatives.f(derivatives.unravel(z)))(x)  # noqa: E731
    result.hess_inv = InverseHessian(lambda: derivatives.at(x), free, sparse_at)


KINDS = ("hessian", "gauss-newton", "sandwich")


def covariance(result: OptimizeResult, kind: str | None = None, *, absolute_sigma: bool = False,
               observations: Callable | None = None) -> np.ndarray:
    """The covariance of a fit's parameters from the exact curvature at its solution.

    For a ``minimize`` result, ``fun`` is taken as a negative log-likelihood: ``"hessian"`` (the
    default) is ``result.hess_inv`` (the inverse observed information), ``"sandwich"`` is H^-1 B
    H^-1 with B = sum_i g_i g_i^T over the per-observation gradients (Huber 1967, White 1982),
    which needs ``observations``. For a ``least_squares`` result: ``"gauss-newton"`` (the default)
    is (J^T J)^-1 times ``2 cost / (m - n)`` (the residuals' variance) unless ``absolute_sigma``,
    exactly ``scipy.optimize.curve_fit``'s ``pcov`` (absolute_sigma: the residuals are already
    divided by the observations' known standard deviations); ``"sandwich"`` is White's HC0,
    (J^T J)^-1 J^T diag(r^2) J (J^T J)^-1, with no scale. Variables on a bound are held fixed: their
    rows and columns are zero.

    Parameters
    ----------
    result : OptimizeResult
        Of ``hessopt.minimize`` (a second-order method: it has ``hess_inv``) or
        ``hessopt.least_squares``; it must have succeeded.
    kind : {"hessian", "gauss-newton", "sandwich"}, optional
        Default "hessian" for minimize, "gauss-newton" for least_squares.
    absolute_sigma : bool, default False
        least_squares' Gauss-Newton only: curve_fit's meaning (False: scale by the residual variance).
    observations : callable, optional
        For a minimize sandwich: ``observations(x) -> array`` of the per-observation terms whose sum
        is ``fun(x)``, x in the form of ``result.x``.

    Returns
    -------
    ndarray, shape (n, n)
        Over the parameters in ``autodiff.ravel(result.x)``'s order.

    Raises
    ------
    ValueError
        For an unknown kind, a kind the result cannot give, a run that did not succeed, a
        curvature that is not positive definite (parameters the data do not identify), or
        observations that do not add up to fun.

    Examples
    --------
    Fit y = a exp(-b t): the covariance is curve_fit's pcov.

    >>> import numpy as np
    >>> import hessopt
    >>> t = np.linspace(0, 2, 8)
    >>> y = 2 * np.exp(-0.7 * t) + 0.01 * np.cos(9 * t)
    >>> fit = hessopt.least_squares(lambda p: p[0] * np.exp(-p[1] * t) - y, [1.0, 1.0])
    >>> hessopt.standard_errors(fit).round(5)
    array([0.00684, 0.00481])
    """
    least_squares = "cost" in result and np.ndim(result.get("jac")) == 2
    kind = kind or ("gauss-newton" if least_squares else "hessian")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not result.success:
        raise ValueError(f"covariance: the run did not converge ({result.message}); its x is not an estimate whose "
                         "curvature means anything")
    if least_squares:
        return _least_squares_covariance(result, kind, absolute_sigma)
    if kind == "gauss-newton":
        raise ValueError("covariance: kind='gauss-newton' needs the residuals' Jacobian: fit with "
                         "hessopt.least_squares, or use kind='hessian' for a minimize result")
    if "hess_inv" not in result:
        raise ValueError("covariance: the result has no hess_inv (it comes with the second-order methods when the "
                         "curvature is autodiff's Hessian of fun, not a user's hess, hessp or jac)")
    inverse = result.hess_inv.todense()
    if kind == "hessian":
        return inverse
    return inverse @ _outer_gradients(result, observations) @ inverse


def standard_errors(result: OptimizeResult, kind: str | None = None, **options) -> np.ndarray:
    """The square roots of the covariance's diagonal (see :func:`covariance`, which takes the same
    arguments); a minimize result's Hessian kind reads only ``hess_inv.diagonal()``, from the sparse
    factorization for large problems (no dense inverse).

    Examples
    --------
    A Poisson regression's standard errors, sqrt(diag((X^T W X)^-1)) with W = diag(exp(X beta)):

    >>> import numpy as np
    >>> import hessopt
    >>> X = np.column_stack([np.ones(6), np.arange(6.0)])
    >>> counts = np.array([1.0, 2.0, 2.0, 4.0, 6.0, 9.0])
    >>> fit = hessopt.minimize(lambda b: np.sum(np.exp(X @ b) - counts * (X @ b)), np.zeros(2))
    >>> errors = hessopt.standard_errors(fit)
    >>> W = np.exp(X @ fit.x)
    >>> bool(np.allclose(errors, np.sqrt(np.diag(np.linalg.inv(X.T @ (W[:, None] * X)))), rtol=1e-8))
    True
    """
    if kind in (None, "hessian") and "hess_inv" in result and result.success and not options:
        return np.sqrt(result.hess_inv.diagonal())
    return np.sqrt(np.diagonal(covariance(result, kind, **options)))


def _outer_gradients(result: OptimizeResult, observations: Callable | None) -> np.ndarray:
    """B = sum_i g_i g_i^T, g_i the gradients of the per-observation terms at x (one Jacobian)."""
    if not callable(observations):
        raise ValueError("covariance: kind='sandwich' of a minimize result needs observations=f, f(x) the "
                         "per-observation terms whose sum is fun(x)")
    x, unravel = ad.ravel(result.x)
    terms = lambda z: ad.numpy.ravel(observations(unravel(z)))  # noqa: E731
    total = float(np.sum(terms(x)))
    if not np.isclose(total, float(result.fun), rtol=1e-8, atol=1e-12 * max(1.0, abs(total))):
        raise ValueError(f"covariance: the observations add up to {total:.10g}, but fun(x) = {float(result.fun):.10g}; "
                         "pass the terms whose sum is the objective")
    J = np.asarray(ad.jacobian(terms)(x)).reshape(-1, x.size)
    free = _free(result, x.size)
    return (J * free).T @ (J * free)


def _free(result: OptimizeResult, n: int) -> np.ndarray:
    """1.0 for the free variables, 0.0 for those on a bound."""
    active = result.get("active_mask")
    return np.ones(n) if active is None else (ad.ravel(active)[0] == 0).astype(float)


def _least_squares_covariance(result: OptimizeResult, kind: str, absolute_sigma: bool) -> np.ndarray:
    """Gauss-Newton (curve_fit's pcov) or HC0 from the residuals and their Jacobian at x."""
    if kind == "hessian":
        raise ValueError("covariance: kind='hessian' of a least_squares result needs the residuals' second "
                         "derivatives: minimize 0.5 * sum(r**2) with hessopt.minimize and use its result")
    J, r = np.asarray(result.jac, dtype=float), np.asarray(result.fun, dtype=float).reshape(-1)
    m, n = J.shape
    free = _free(result, n).astype(bool)
    _, s, VT = np.linalg.svd(J[:, free], full_matrices=False)
    if s.size < free.sum() or s[-1] <= np.finfo(float).eps * max(m, n) * s[0]:
        raise ValueError("covariance: J^T J is singular at x: the data do not identify every parameter "
                         f"(singular values {s[-1]:.3g} to {s[0]:.3g})")
    bread = (VT.T / s ** 2) @ VT                          # (J^T J)^-1, as curve_fit computes it
    if kind == "sandwich":
        Jf = J[:, free]
        inner = bread @ (Jf.T * r ** 2) @ Jf @ bread
    elif absolute_sigma:
        inner = bread
    elif m > free.sum():
        inner = bread * (2 * float(result.cost) / (m - free.sum()))
    else:                                                  # curve_fit: no degrees of freedom left
        warnings.warn("covariance: as many parameters as residuals, so the residual variance (and the "
                      "covariance) cannot be estimated; pass absolute_sigma=True if the sigmas are known",
                      OptimizeWarning, stacklevel=3)
        inner = np.full_like(bread, np.inf)
    out = np.zeros((n, n))
    out[np.ix_(free, free)] = inner
    return out
