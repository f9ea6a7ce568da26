"""Curvature analysis of a symmetric linear operator: eigenvalues, trace, diagonal, spectral density.

Everything here works on products only, so it runs on a Hessian too large to form: a
``HessianOperator`` (each product one sweep of a cached recording), a GGN operator, a scipy
``LinearOperator``, a dense or sparse matrix, or anything with ``matvec`` and ``shape`` (``matmat``,
when present, takes many products in one call). For an operator built at a pytree of parameters,
``block=`` (one of its Variables, a name, key, index or key path of that pytree, or a slice of the
flat vector) analyses the diagonal block of those parameters.

References
----------
- M. F. Hutchinson, A stochastic estimator of the trace of the influence matrix for Laplacian
  smoothing splines, Commun. Stat. Simul. Comput. 18 (1989).
- R. A. Meyer, C. Musco, C. Musco and D. P. Woodruff, Hutch++: optimal stochastic trace
  estimation, SOSA 2021.
- C. Bekas, E. Kokiopoulou and Y. Saad, An estimator for the diagonal of a matrix, Appl. Numer.
  Math. 57 (2007).
- C. Lanczos (1950); G. H. Golub and C. F. Van Loan, *Matrix Computations*, 4th ed., 2013, §10.1-10.3
  (Lanczos with full reorthogonalization, Ritz residuals).
- B. Ghorbani, S. Krishnan and Y. Xiao, An investigation into neural net optimization via Hessian
  eigenvalue density, ICML 2019; S. Ubaru, J. Chen and Y. Saad, Fast estimation of tr(f(A)) via
  stochastic Lanczos quadrature, SIAM J. Matrix Anal. Appl. 38 (2017); T. Chen, T. Trogdon and
  S. Ubaru, Analysis of stochastic Lanczos quadrature for spectrum approximation, ICML 2021.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse

import autodiff as ad
from autodiff.tree import flatten
from optimizers.krylov import ROUNDING, Lanczos

# Relative asymmetry max|A - A^T| / max|A| above which a dense matrix is refused: far above the
# rounding of a Hessian formed by a sweep, far below any real asymmetry.
SYMMETRY_RTOL = 1e-8


class Operator:
    """A square symmetric operator on flat vectors, counting the products it takes (``products``).

    ``block`` restricts it to the diagonal block of some coordinates: ``P^T A P`` for the selection
    ``P``, each of its products one product of the full operator. The functions here wrap what they
    are given in one; use it directly to count products or take a block.

    Parameters
    ----------
    op : HessianOperator, LinearOperator, ndarray, sparse matrix, or anything with matvec and shape
        The symmetric operator (a dense matrix is checked for symmetry).
    block : Variable, name, key, key path, index or slice, optional
        For an operator built at a pytree, the parameters whose block to take: one of its
        Variables, a Variable's name, a top-level key or index, or a key path (a tuple of keys,
        outermost first, or the keys joined by "/" as ``hessopt.plot`` names the blocks:
        "hidden/W"); or a slice (or index array) of the flat vector.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt.curvature import Operator
    >>> A = Operator(np.diag([1.0, 2.0, 3.0, 10.0]), block=slice(2, 4))
    >>> A.n, A.matvec(np.array([1.0, 1.0])), A.products
    (2, array([ 3., 10.]), 1)
    """

    def __init__(self, op: Any, block: Any = None):
        self._apply, size = _product_function(op)
        self.products = 0
        self._size = size
        self._index = None if block is None else _block_indices(op, block, size)
        self.n = size if self._index is None else self._index.size

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """A V for the columns of V (n, k)."""
        return self._product(V, V.shape[1])

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """A v."""
        return self._product(v, 1)

    def _product(self, V: np.ndarray, count: int) -> np.ndarray:
        self.products += count
        if self._index is None:
            return self._apply(V)
        full = np.zeros((self._size,) + V.shape[1:])
        full[self._index] = V
        return self._apply(full)[self._index]


def _product_function(op: Any) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """``V -> A V`` for a vector (n,) or the columns of an (n, k) array, and n; refuses what is not
    a square symmetric operator."""
    if hasattr(op, "matvec") and hasattr(op, "shape"):
        n = _square(tuple(op.shape))
        matmat = getattr(op, "matmat", None)

        def apply(V):
            if V.ndim == 1:
                return np.asarray(op.matvec(V), dtype=float).reshape(-1)
            if callable(matmat):
                return np.asarray(matmat(V), dtype=float).reshape(V.shape)
            return np.stack([np.asarray(op.matvec(v), dtype=float).reshape(-1) for v in V.T], axis=1)
        return apply, n
    if scipy.sparse.issparse(op):
        n = _square(op.shape)
        _check_symmetric(abs(op - op.T).max(), abs(op).max())
        return lambda V: np.asarray(op @ V, dtype=float), n
    A = np.asarray(op.numpy() if isinstance(op, ad.Tensor) else op, dtype=float)
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
    """Flat positions of ``block``: a slice or integer array of them, or a part of the pytree the
    operator was built at (read from its ``unravel``), named as :func:`_find_part` does."""
    if isinstance(block, slice) or (isinstance(block, np.ndarray) and block.dtype.kind in "iu"):
        index = np.arange(n)[block]
    else:
        unravel = getattr(op, "unravel", None)
        positions = None if unravel is None else unravel(np.arange(n, dtype=float))
        if not isinstance(positions, (dict, list, tuple)):
            raise ValueError(f"block={block!r} names a part of a pytree, but this operator was not "
                             "built at one (no unravel); pass a slice of the flat vector instead")
        index = ad.ravel(_find_part(getattr(op, "x", positions), positions, block))[0].astype(int)
    if index.size == 0:
        raise ValueError(f"block={block!r} selects no coordinates")
    return index


def _find_part(tree: Any, like: Any, block: Any) -> Any:
    """The part of ``like`` (a tree of ``tree``'s structure) where ``block`` is in ``tree``: block is
    one of tree's Variables, a Variable's name, a key or index of the top level, or a key path (a
    tuple of keys, outermost first, or the keys joined by "/")."""
    if len(flatten(tree)[0]) != len(flatten(like)[0]):
        tree = like     # ``x`` is not the structure unravel restores: go by keys alone
    found = [part for (key_path, node), (_, part) in zip(_parts(tree), _parts(like))
             if _names(block, key_path, node)]
    if len(found) != 1:
        problem = "is not in" if not found else f"names {len(found)} parts of"
        raise ValueError(f"block={block!r} {problem} the parameters; blocks are "
                         f"{[label for label, _ in _labelled_parts(tree)]} (or key paths, tuples)")
    return found[0]


def _names(block: Any, key_path: tuple, node: Any) -> bool:
    if isinstance(block, ad.Variable):
        return node is block
    if isinstance(block, str) and _label(key_path, node) == block:
        return True
    return key_path == (block if isinstance(block, tuple) else (block,))


def _parts(tree: Any, prefix: tuple = ()):
    """(key path, node) for every node of a pytree below the root, each parent before its children."""
    if isinstance(tree, (dict, list, tuple)):
        for key, node in (tree.items() if isinstance(tree, dict) else enumerate(tree)):
            yield prefix + (key,), node
            yield from _parts(node, prefix + (key,))


def _label(key_path: tuple, node: Any) -> str:
    """A part's name: a Variable's name, else its key path joined by "/" ("hidden/W")."""
    return node.name if isinstance(node, ad.Variable) else "/".join(map(str, key_path))


def _labelled_parts(tree: Any) -> list[tuple[str, Any]]:
    """The leaves of a pytree of parameters, each with its label (see ``_label``; ``hessopt.plot``
    names a Hessian's blocks with them)."""
    return [(_label(key_path, node), node) for key_path, node in _parts(tree)
            if not isinstance(node, (dict, list, tuple))]


def _rademacher(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return rng.integers(0, 2, size=(n, k)) * 2.0 - 1.0


def trace(op: Any, num_products: int = 100, method: str = "hutch++", seed: int | None = None,
          block: Any = None) -> float:
    """Estimate tr(A) from ``num_products`` products with random sign vectors.

    ``"hutch++"`` (Meyer et al. 2021) spends a third of the products on a sketch of A's range, takes
    the trace there exactly and Hutchinson's estimate only on the rest, so a decaying spectrum costs
    O(1/eps) products instead of O(1/eps^2); ``"hutchinson"`` averages ``z^T A z``.

    Parameters
    ----------
    op : operator or matrix
        Symmetric (see :class:`Operator`).
    num_products : int, default 100
        The budget of products (at least 3 for hutch++).
    method : {"hutch++", "hutchinson"}, default "hutch++"
    seed : int, optional
        Seed of the random sign vectors.
    block : optional
        Take the trace of a diagonal block (see :class:`Operator`).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For an unknown method or too small a budget.

    Examples
    --------
    With as many sketch vectors as dimensions, hutch++ is exact:

    >>> import numpy as np
    >>> from hessopt import curvature
    >>> round(curvature.trace(np.diag([1.0, 2.0, 3.0, 10.0]), num_products=12, seed=0), 6)
    16.0
    """
    A = Operator(op, block)
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
    """Estimate diag(A) as the mean of ``z * (A z)`` over random sign vectors z (Bekas et al. 2007).

    The error of each entry falls like the off-diagonal mass of its row over sqrt(num_products); a
    diagonal matrix is recovered exactly from one product. Parameters as :func:`trace`.

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import curvature
    >>> curvature.diagonal(np.diag([1.0, 2.0, 3.0]), num_products=1, seed=0)
    array([1., 2., 3.])
    """
    _check_products(num_products, 1)
    A = Operator(op, block)
    Z = _rademacher(np.random.default_rng(seed), A.n, num_products)
    return np.mean(Z * A.matmat(Z), axis=1)


_ORDER = {"LA": lambda theta: -theta, "SA": lambda theta: theta, "LM": lambda theta: -np.abs(theta)}

# Default cap on Lanczos steps: the basis kept is (steps x n) floats. Well-separated extreme
# eigenvalues, the usual case for the top of a Hessian, converge in tens of steps.
DEFAULT_MAXITER = 500


def top_eigenvalues(op: Any, k: int = 1, which: str = "LA", tol: float = 1e-8,
                    maxiter: int | None = None, seed: int | None = None,
                    block: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The k extreme eigenpairs of a symmetric operator, by Lanczos with full reorthogonalization.

    ``which``: ``"LA"`` largest algebraic, ``"SA"`` smallest algebraic (negative curvature),
    ``"LM"`` largest magnitude; the eigenvalues come sorted that way, the unit eigenvectors as
    the columns of an (n, k) array. A Ritz pair is accepted when its residual ``||A u - theta u||``
    (read off the tridiagonal matrix, no product) is at most ``tol * |theta|``, as in ARPACK; the
    eigenvalue is then accurate to about ``tol**2 |theta|^2 / gap``. At most ``maxiter`` products
    (default ``min(n, 500)``); a RuntimeWarning says when that was not enough.
    When the Krylov space closes before k pairs are found (repeated eigenvalues), Lanczos restarts
    in its orthogonal complement, so every copy of a repeated eigenvalue is found.

    Parameters
    ----------
    op : operator or matrix
        Symmetric (see :class:`Operator`).
    k : int, default 1
        How many eigenpairs.
    which : {"LA", "SA", "LM"}, default "LA"
    tol : float, default 1e-8
        Relative residual at which a Ritz pair is accepted.
    maxiter : int, optional
        The budget of products.
    seed : int, optional
        Seed of the starting vector.
    block : optional
        Eigenpairs of a diagonal block (see :class:`Operator`).

    Returns
    -------
    eigenvalues : ndarray, shape (k,)
    eigenvectors : ndarray, shape (n, k)

    Raises
    ------
    ValueError
        For an unknown ``which``, k outside 1..n, or maxiter < k.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt import curvature
    >>> values, vectors = curvature.top_eigenvalues(np.diag([1.0, 2.0, 3.0, 10.0]), k=2, seed=0)
    >>> values, vectors.shape
    (array([10.,  3.]), (4, 2))
    >>> f = lambda p: np.sum(p["w"] ** 4) + p["b"] ** 2
    >>> H = ad.hessian_operator(f, {"w": np.array([1.0, 2.0]), "b": 1.0})
    >>> curvature.top_eigenvalues(H, block="w", seed=0)[0]          # the block of w: diag(12 w^2)
    array([48.])
    """
    if which not in _ORDER:
        raise ValueError(f"which must be 'LA', 'SA' or 'LM', got {which!r}")
    A = Operator(op, block)
    if int(k) != k or not 1 <= k <= A.n:
        raise ValueError(f"k must be an integer with 1 <= k <= n = {A.n}, got {k!r}")
    maxiter = min(A.n, DEFAULT_MAXITER) if maxiter is None else int(maxiter)
    if maxiter < k:
        raise ValueError(f"maxiter = {maxiter} products cannot give k = {k} eigenpairs")
    rng = np.random.default_rng(seed)
    rank = _ORDER[which]
    values, vectors = np.zeros(0), np.zeros((A.n, 0))  # eigenpairs of closed Krylov spaces so far
    while True:
        lanczos = _deflated_lanczos(A, vectors, rng)
        while True:
            lanczos.extend()
            theta, Y = lanczos.ritz()
            wanted = np.argsort(rank(theta), kind="stable")[:k]
            residual = lanczos.residuals(Y[:, wanted])
            floor = ROUNDING * np.abs(theta).max()
            converged = np.all(residual <= np.maximum(tol * np.abs(theta[wanted]), floor))
            if converged or lanczos.exhausted or A.products >= maxiter:
                break
        keep = np.arange(theta.size) if lanczos.exhausted else wanted
        # a closed space holds one copy of each eigenvalue its start saw: copies of a repeated
        # eigenvalue lie in the complement, and matter while they would still enter the top k
        improves = values.size < k or np.any(rank(theta) < np.sort(rank(values))[k - 1])
        values = np.concatenate([values, theta[keep]])
        vectors = np.hstack([vectors, lanczos.combine(Y[:, keep])])
        if not lanczos.exhausted or not improves or values.size == A.n or A.products >= maxiter:
            break
    if not converged and A.products >= maxiter:
        warnings.warn(f"top_eigenvalues: {maxiter} products were not enough for residuals below "
                      f"tol = {tol:g} (largest {residual.max():.2e}); raise maxiter",
                      RuntimeWarning, stacklevel=2)
    order = np.argsort(rank(values), kind="stable")[:k]
    vectors = vectors[:, order]
    return values[order], vectors / np.linalg.norm(vectors, axis=0)


def _deflated_lanczos(A: Operator, closed: np.ndarray, rng: np.random.Generator) -> Lanczos:
    """Lanczos from a random start, on A restricted to the complement of the columns of ``closed``
    (orthonormal): the projection keeps rounding from bringing those directions back."""
    start = rng.standard_normal(A.n)
    if closed.shape[1] == 0:
        return Lanczos(A.matvec, start)

    def project(v):
        return v - closed @ (closed.T @ v)

    return Lanczos(lambda v: project(A.matvec(project(v))), project(start))


def spectral_density(op: Any, num_steps: int = 80, num_probes: int = 10,
                     seed: int | None = None, block: Any = None,
                     reorthogonalize: bool | None = None) -> SpectralDensity:
    """The eigenvalue density of a symmetric operator by stochastic Lanczos quadrature (Ghorbani
    et al. 2019; Ubaru, Chen & Saad 2017): from each random unit probe v, ``num_steps`` Lanczos
    steps give the Gauss quadrature of v^T delta(t - A) v, whose nodes are the Ritz values and whose
    weights are the squared first components of the Ritz vectors in the Krylov basis. Averaged over
    probes it estimates (1/n) sum_i delta(t - lambda_i). ``num_steps * num_probes`` products.
    The plain three-term recurrence is enough here: in floating point it gains spurious copies of
    converged nodes, but their weights add up to the right one, and the quadrature stays accurate
    (Chen, Trogdon & Ubaru 2021). ``reorthogonalize=True`` removes the copies at O(num_steps^2 n)
    more work (three times the time on a 100k-parameter network). By default it is on when the
    steps reach half the dimension n: there the Krylov space can close, and only an orthogonal
    basis closes it at the eigenvalues (the plain recurrence runs on past n and its nodes drift
    from them), while reorthogonalizing costs no more than the products would on a dense matrix.
    An invariant subspace (a next Lanczos coefficient at rounding level) ends a probe early.

    Parameters
    ----------
    op : operator or matrix
        Symmetric (see :class:`Operator`).
    num_steps : int, default 80
        Lanczos steps per probe (quadrature nodes per probe).
    num_probes : int, default 10
        Random probes averaged.
    seed : int, optional
    block : optional
        The density of a diagonal block (see :class:`Operator`).
    reorthogonalize : bool, optional
        Full reorthogonalization of the Lanczos basis (default: when ``2 num_steps >= n``).

    Returns
    -------
    SpectralDensity

    Raises
    ------
    ValueError
        For a non-positive number of steps or probes.

    Examples
    --------
    With as many steps as dimensions, the nodes are the eigenvalues:

    >>> import numpy as np
    >>> from hessopt import curvature
    >>> A = np.diag([1.0, 2.0, 3.0, 10.0])
    >>> density = curvature.spectral_density(A, num_steps=4, num_probes=2, seed=0)
    >>> density
    SpectralDensity(probes=2, nodes per probe=4, range=[1, 10])
    >>> density.density(np.array([1.0, 5.0]), sigma=0.1).round(4)   # a quarter of the mass at 1
    array([0.9974, 0.    ])
    """
    if int(num_steps) != num_steps or num_steps < 1:
        raise ValueError(f"num_steps must be a positive integer, got {num_steps!r}")
    if int(num_probes) != num_probes or num_probes < 1:
        raise ValueError(f"num_probes must be a positive integer, got {num_probes!r}")
    A = Operator(op, block)
    rng = np.random.default_rng(seed)
    steps = min(int(num_steps), A.n)
    if reorthogonalize is None:
        reorthogonalize = 2 * steps >= A.n
    nodes, weights = np.zeros((num_probes, steps)), np.zeros((num_probes, steps))
    for p in range(num_probes):
        start = _rademacher(rng, A.n, 1)[:, 0]
        lanczos = Lanczos(A.matvec, start, reorthogonalize=reorthogonalize).run(steps)
        theta, Y = lanczos.ritz()
        # a Krylov space that closes early (repeated eigenvalues) gives fewer nodes: pad with
        # copies of the last one at weight 0
        nodes[p] = theta[-1]
        nodes[p, :theta.size], weights[p, :theta.size] = theta, Y[0] ** 2
    return SpectralDensity(nodes, weights)


class SpectralDensity:
    """A spectral density as Gaussian quadrature rules, one per probe (stochastic Lanczos quadrature).

    ``nodes`` and ``weights`` are (probes, m): row p holds Ritz values and the squared first
    components of their eigenvectors, which sum to 1; averaged over probes they estimate the
    eigenvalue distribution (1/n) sum_i delta(t - lambda_i) (Ghorbani, Krishnan & Xiao 2019).
    :func:`spectral_density` makes one; ``hessopt.plot.spectrum`` draws it.

    Parameters
    ----------
    nodes, weights : array_like, shape (probes, m)

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> from hessopt.curvature import SpectralDensity
    >>> exact = SpectralDensity.from_eigenvalues([1.0, 2.0])
    >>> exact.nodes, exact.weights
    (array([[1., 2.]]), array([[0.5, 0.5]]))
    """

    def __init__(self, nodes: np.ndarray, weights: np.ndarray):
        self.nodes = np.atleast_2d(np.asarray(nodes, dtype=float))
        self.weights = np.atleast_2d(np.asarray(weights, dtype=float))
        if self.nodes.shape != self.weights.shape:
            raise ValueError(f"nodes {self.nodes.shape} and weights {self.weights.shape} differ")

    @classmethod
    def from_eigenvalues(cls, eigenvalues) -> SpectralDensity:
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

    def outliers(self, gap: float = 0.05) -> np.ndarray:
        """Eigenvalues detached from the bulk (Ghorbani et al. 2019): the bulk is the run of nodes
        around the median of the spectrum in which no two neighbours are more than ``gap`` times
        the spread of the nodes apart; the nodes beyond it, one value per eigenvalue (converged
        Ritz values of different probes agree), are the outliers."""
        weights = self.weights.reshape(-1)
        order = np.argsort(self.nodes.reshape(-1)[weights > 0])
        nodes = self.nodes.reshape(-1)[weights > 0][order]
        cumulative = np.cumsum(weights[weights > 0][order])
        median = min(int(np.searchsorted(cumulative, 0.5 * cumulative[-1])), nodes.size - 1)
        wide = np.flatnonzero(np.diff(nodes) > gap * np.ptp(nodes))   # gap after nodes[i]
        low = wide[wide < median].max(initial=-1) + 1
        high = wide[wide >= median].min(initial=nodes.size - 1)
        far = np.concatenate([nodes[:low], nodes[high + 1:]])
        if far.size == 0:
            return far
        clusters = np.split(far, np.flatnonzero(np.diff(far) > 1e-3 * np.ptp(nodes)) + 1)
        return np.array([cluster.mean() for cluster in clusters])

    def __repr__(self):
        return (f"SpectralDensity(probes={self.nodes.shape[0]}, nodes per probe={self.nodes.shape[1]}, "
                f"range=[{self.nodes.min():.4g}, {self.nodes.max():.4g}])")


def _check_products(num_products: int, least: int) -> None:
    if int(num_products) != num_products or num_products < least:
        raise ValueError(f"num_products must be an integer >= {least}, got {num_products!r}")


__all__ = ["top_eigenvalues", "spectral_density", "SpectralDensity", "trace", "diagonal",
           "Operator"]
