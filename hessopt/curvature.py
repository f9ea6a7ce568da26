"""Curvature analysis of a symmetric linear operator: eigenvalues, trace, diagonal, spectral density.

Everything here works on products only, so it runs on a Hessian too large to form: a
``HessianOperator`` (each product one sweep of a cached recording), a GGN operator, a scipy
``LinearOperator``, a dense or sparse matrix, or anything with ``matvec`` and ``shape`` (``matmat``,
when present, takes many products in one call). For an operator built at a pytree of parameters,
``block=`` (a key or index of that pytree, or a slice of the flat vector) analyses the diagonal block
of those parameters.

References
----------
- M. F. Hutchinson, A stochastic estimator of the trace of the influence matrix for Laplacian
  smoothing splines, Commun. Stat. Simul. Comput. 18 (1989).
- R. A. Meyer, C. Musco, C. Musco and D. P. Woodruff, Hutch++: optimal stochastic trace
  estimation, SOSA 2021.
- C. Bekas, E. Kokiopoulou and Y. Saad, An estimator for the diagonal of a matrix, Appl. Numer.
  Math. 57 (2007).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.sparse

# Relative asymmetry max|A - A^T| / max|A| above which a dense matrix is refused: far above the
# rounding of a Hessian formed by a sweep, far below any real asymmetry.
SYMMETRY_RTOL = 1e-8


class SymmetricOperator:
    """A square symmetric operator on flat vectors, counting the products it takes (``products``).

    ``block`` restricts it to the diagonal block of some coordinates: ``P^T A P`` for the selection
    ``P``, each of its products one product of the full operator.
    """

    def __init__(self, op: Any, block: Any = None):
        self._apply, size = _product_function(op)
        self.products = 0
        self._size = size
        self._index = None if block is None else _block_indices(op, block, size)
        self.n = size if self._index is None else self._index.size

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """A V for the columns of V (n, k)."""
        self.products += V.shape[1]
        if self._index is None:
            return self._apply(V)
        full = np.zeros((self._size, V.shape[1]))
        full[self._index] = V
        return self._apply(full)[self._index]

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """A v."""
        return self.matmat(v[:, None])[:, 0]


def _product_function(op: Any) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """``V -> A V`` for (n, k) arrays, and n; refuses what is not a square symmetric operator."""
    if hasattr(op, "matvec") and hasattr(op, "shape"):
        n = _square(tuple(op.shape))
        if callable(getattr(op, "matmat", None)):
            return lambda V: np.asarray(op.matmat(V), dtype=float).reshape(V.shape), n
        return lambda V: np.stack([np.asarray(op.matvec(v), dtype=float).reshape(-1)
                                   for v in V.T], axis=1), n
    if scipy.sparse.issparse(op):
        n = _square(op.shape)
        _check_symmetric(abs(op - op.T).max(), abs(op).max())
        return lambda V: np.asarray(op @ V, dtype=float), n
    A = np.asarray(op.numpy() if hasattr(op, "numpy") else op, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"expected a square matrix or a linear operator, got an array of shape "
                         f"{A.shape}")
    n = _square(A.shape)
    _check_symmetric(np.abs(A - A.T).max(initial=0.0), np.abs(A).max(initial=0.0))
    return lambda V: A @ V, n


def _square(shape: tuple) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"the operator must be square, got shape {shape}")
    return int(shape[0])


def _check_symmetric(asymmetry: float, scale: float) -> None:
    if asymmetry > SYMMETRY_RTOL * scale:
        raise ValueError(f"the matrix is not symmetric: max|A - A^T| = {asymmetry:.3g} "
                         f"(max|A| = {scale:.3g})")


def _block_indices(op: Any, block: Any, n: int) -> np.ndarray:
    """Flat positions of ``block``: a slice or integer array of them, or a key/index of the pytree
    the operator was built at (read from its ``unravel``)."""
    if isinstance(block, slice) or (isinstance(block, np.ndarray) and block.dtype.kind in "iu"):
        index = np.arange(n)[block]
    else:
        unravel = getattr(op, "unravel", None)
        tree = None if unravel is None else unravel(np.arange(n, dtype=float))
        if not isinstance(tree, (dict, list, tuple)):
            raise ValueError(f"block={block!r} names a part of a pytree, but this operator was not "
                             "built at one (no unravel); pass a slice of the flat vector instead")
        try:
            part = tree[block]
        except (KeyError, IndexError, TypeError):
            keys = list(tree) if isinstance(tree, dict) else list(range(len(tree)))
            raise ValueError(f"block={block!r} is not in the parameters; blocks are {keys}") from None
        from autodiff import ravel
        index = ravel(part)[0].astype(int)
    if index.size == 0:
        raise ValueError(f"block={block!r} selects no coordinates")
    return index


def _rademacher(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return rng.integers(0, 2, size=(n, k)) * 2.0 - 1.0


def trace(op: Any, num_products: int = 100, method: str = "hutch++", seed: int | None = None,
          block: Any = None) -> float:
    """Estimate tr(A) from ``num_products`` products with random sign vectors.

    ``"hutch++"`` (Meyer et al. 2021) spends a third of the products on a sketch of A's range, takes
    the trace there exactly and Hutchinson's estimate only on the rest, so a decaying spectrum costs
    O(1/eps) products instead of O(1/eps^2); ``"hutchinson"`` averages ``z^T A z``.
    """
    A = SymmetricOperator(op, block)
    rng = np.random.default_rng(seed)
    if method == "hutchinson":
        _check_products(num_products, 1)
        Z = _rademacher(rng, A.n, num_products)
        return float(np.einsum("ij,ij->", Z, A.matmat(Z)) / num_products)
    if method != "hutch++":
        raise ValueError(f"unknown trace method {method!r}; choose 'hutch++' or 'hutchinson'")
    _check_products(num_products, 3)
    sketch = min(num_products // 3, A.n)
    Q = np.linalg.qr(A.matmat(_rademacher(rng, A.n, sketch)))[0]
    exact = np.einsum("ij,ij->", Q, A.matmat(Q))
    G = _rademacher(rng, A.n, num_products - 2 * sketch)
    G -= Q @ (Q.T @ G)
    return float(exact + np.einsum("ij,ij->", G, A.matmat(G)) / G.shape[1])


def diagonal(op: Any, num_products: int = 100, seed: int | None = None,
             block: Any = None) -> np.ndarray:
    """Estimate diag(A) as the mean of ``z * (A z)`` over random sign vectors z (Bekas et al. 2007)."""
    _check_products(num_products, 1)
    A = SymmetricOperator(op, block)
    Z = _rademacher(np.random.default_rng(seed), A.n, num_products)
    return np.mean(Z * A.matmat(Z), axis=1)


class SpectralDensity:
    """A spectral density as Gaussian quadrature rules, one per probe (stochastic Lanczos quadrature).

    ``nodes`` and ``weights`` are (probes, m): row p holds Ritz values and the squared first
    components of their eigenvectors, which sum to 1; averaged over probes they estimate the
    eigenvalue distribution (1/n) sum_i delta(t - lambda_i) (Ghorbani, Krishnan & Xiao 2019).
    """

    def __init__(self, nodes: np.ndarray, weights: np.ndarray):
        self.nodes = np.atleast_2d(np.asarray(nodes, dtype=float))
        self.weights = np.atleast_2d(np.asarray(weights, dtype=float))
        if self.nodes.shape != self.weights.shape:
            raise ValueError(f"nodes {self.nodes.shape} and weights {self.weights.shape} differ")

    @classmethod
    def from_eigenvalues(cls, eigenvalues) -> "SpectralDensity":
        """The exact distribution of some eigenvalues (weight 1/n each)."""
        eigenvalues = np.asarray(eigenvalues, dtype=float).reshape(-1)
        if eigenvalues.size == 0:
            raise ValueError("no eigenvalues")
        return cls(eigenvalues, np.full(eigenvalues.size, 1.0 / eigenvalues.size))

    def default_sigma(self) -> float:
        """1% of the spread of the nodes: the smoothing width when none is given."""
        spread = float(np.ptp(self.nodes))
        return 0.01 * spread if spread > 0 else max(abs(float(self.nodes.flat[0])), 1.0) * 1e-2

    def density(self, grid, sigma: float | None = None) -> np.ndarray:
        """The quadrature averaged over probes, each node a Gaussian of width ``sigma``: a density
        that integrates to 1."""
        sigma = self.default_sigma() if sigma is None else float(sigma)
        if not sigma > 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        grid = np.asarray(grid, dtype=float)
        z = (grid[..., None] - self.nodes.reshape(-1)) / sigma
        kernel = np.exp(-0.5 * z * z) / (sigma * np.sqrt(2 * np.pi))
        return kernel @ self.weights.reshape(-1) / self.nodes.shape[0]

    def outliers(self, mass: float = 0.98) -> np.ndarray:
        """Eigenvalues detached from the bulk: farther from the interval that holds the central
        ``mass`` of the spectrum than that interval is wide (merged across probes)."""
        order = np.argsort(self.nodes, axis=None)
        nodes = self.nodes.reshape(-1)[order]
        cumulative = np.cumsum(self.weights.reshape(-1)[order]) / self.weights.sum()
        tail = (1 - mass) / 2
        low = nodes[min(np.searchsorted(cumulative, tail), nodes.size - 1)]
        high = nodes[min(np.searchsorted(cumulative, 1 - tail), nodes.size - 1)]
        width = high - low
        far = nodes[(nodes > high + width) | (nodes < low - width)]
        if far.size == 0:
            return far
        # one value per eigenvalue: converged Ritz values of different probes agree closely
        clusters = np.split(far, np.flatnonzero(np.diff(far) > 1e-3 * np.ptp(nodes)) + 1)
        return np.array([cluster.mean() for cluster in clusters])

    def __repr__(self):
        return (f"SpectralDensity(probes={self.nodes.shape[0]}, nodes per probe={self.nodes.shape[1]}, "
                f"range=[{self.nodes.min():.4g}, {self.nodes.max():.4g}])")


def _check_products(num_products: int, least: int) -> None:
    if int(num_products) != num_products or num_products < least:
        raise ValueError(f"num_products must be an integer >= {least}, got {num_products!r}")


__all__ = ["SymmetricOperator", "SpectralDensity", "trace", "diagonal"]
