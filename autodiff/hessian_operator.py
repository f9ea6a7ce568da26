"""The cached inner gradient: a Hessian operator that records the gradient once.

Newton-CG and curvature analysis ask many Hessian-vector products at one point. The textbook
nested-tape HVP re-runs f and its gradient for every vector. Here f and its gradient are recorded
once on a persistent tape; each product H v is then one backward sweep over that recording seeded
with v (``output_gradients=v``). Nothing new is recorded per product, so memory stays flat however
many products are taken; H V for many vectors, and the dense Hessian, are one batched sweep.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import numpy as anp
from .core import Variable, constant, paused, state, value_of
from .function import Function
from .tree import flatten, ravel
from .tape import GradientTape, UnconnectedGradients, _require_scalar


class SymmetricOperator:
    """The parts the curvature operators share: the sources taken from x, and the products on flat
    vectors (matvec, matmat, to_dense, @, as_linear_operator) built on one batched ``_sweep``.

    When x is a Variable or a structure of Variables, the function is called with no arguments (it
    reads the Variables itself); otherwise with a structure like x of watched constants. ``x`` is
    kept as given (the Variables themselves, not their values), so that a block of the operator
    can be named by its Variable, the Variable's name or its key path.
    """

    shape: tuple
    dtype: np.dtype

    def _trace_sources(self, f: Callable, x, chunk_size: int | None) -> Callable:
        """Set up ``_sources`` from x; returns f as a function of no arguments reading them."""
        leaves, rebuild = flatten(x)
        self.x, self.chunk_size = x, chunk_size
        self.unravel = ravel(x)[1]  # flat vectors -> the structure of x (blocks of the Hessian)
        if leaves and all(isinstance(leaf, Variable) for leaf in leaves):
            self._sources = leaves
            return f
        # one source per leaf: no slicing of a flat vector (whose gradient is a scatter)
        self._sources = [constant(value_of(leaf)) for leaf in leaves]
        return lambda: f(rebuild(self._sources))

    def _flat(self, parts: list, batch_shape: tuple) -> np.ndarray:
        """Per-source cotangents (None: zero) as flat vectors, concatenated: ``batch_shape + (n,)``."""
        return np.concatenate([
            np.zeros(batch_shape + (s.size,)) if p is None
            else np.reshape(np.asarray(value_of(p)), batch_shape + (-1,))
            for p, s in zip(parts, self._sources)], axis=-1)

    def _sweep(self, seeds: np.ndarray) -> np.ndarray:
        """The operator applied to ``seeds`` of shape (n,) or (k, n), along the last axis."""
        raise NotImplementedError

    def matvec(self, v) -> np.ndarray:
        """The product with one vector: one sweep, nothing recorded."""
        v = np.asarray(v, dtype=self.dtype).reshape(-1)
        if v.size != self.shape[0]:
            raise ValueError(f"vector of length {v.size} for an operator of shape {self.shape}")
        return self._sweep(v)

    def matmat(self, V) -> np.ndarray:
        """The product with the columns of V (n, k), in batched sweeps of ``chunk_size`` columns.

        Examples
        --------
        >>> import numpy as np
        >>> import autodiff as ad
        >>> op = ad.hessian_operator(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
        >>> op.matmat(np.array([[1.0, 0.0], [0.0, 1.0]]))
        array([[4., 2.],
               [2., 0.]])
        """
        V = np.asarray(V, dtype=self.dtype)
        if V.ndim != 2 or V.shape[0] != self.shape[0]:
            raise ValueError(f"matrix of shape {V.shape} for an operator of shape {self.shape}")
        step = self.chunk_size or max(V.shape[1], 1)
        rows = [self._sweep(np.ascontiguousarray(V[:, i:i + step].T)) for i in range(0, V.shape[1], step)]
        return np.concatenate(rows, axis=0).T if rows else np.zeros(V.shape)

    def to_dense(self) -> np.ndarray:
        """The full matrix, in one batched sweep (or chunks)."""
        return self.matmat(np.eye(self.shape[0], dtype=self.dtype))

    def __matmul__(self, other):
        other = np.asarray(other)
        return self.matvec(other) if other.ndim == 1 else self.matmat(other)

    def as_linear_operator(self):
        """A symmetric ``scipy.sparse.linalg.LinearOperator`` (for cg, minres, eigsh, ...).

        Examples
        --------
        A Newton step by conjugate gradients, from Hessian-vector products only:

        >>> import numpy as np
        >>> from scipy.sparse.linalg import cg
        >>> import autodiff as ad
        >>> op = ad.hessian_operator(lambda x: x[0] ** 2 * x[1] + np.sum(x ** 4), np.array([1.0, 2.0]))
        >>> step, info = cg(op.as_linear_operator(), -op.gradient)
        >>> np.allclose(op @ step, -op.gradient), info
        (True, 0)
        """
        from scipy.sparse.linalg import LinearOperator
        return LinearOperator(self.shape, matvec=self.matvec, rmatvec=self.matvec,
                              matmat=self.matmat, dtype=self.dtype)

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape}, value={self.value:.6g})"


class HessianOperator(SymmetricOperator):
    """H = Hessian of f at x, as a linear operator on flat vectors of length n.

    ``value`` and ``gradient`` (flat) are f(x) and its gradient, computed once. When x is a Variable
    or a structure of Variables, f is called with no arguments (it reads the Variables itself).
    ``unravel`` turns a flat vector back into the structure of x. Build it with
    :func:`hessian_operator`.

    Attributes
    ----------
    x : array_like, Variable, or pytree of them
        The point as given (Variables stay Variables, so their current values may have moved on).
    value : float
        f(x).
    gradient : ndarray, shape (n,)
        The flat gradient of f at x.
    shape : tuple
        ``(n, n)``.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> op = ad.HessianOperator(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
    >>> op.value, op.gradient, op @ np.array([1.0, 0.0])
    (2.0, array([4., 1.]), array([4., 2.]))
    """

    def __init__(self, f: Callable, x, chunk_size: int | None = None):
        call = self._trace_sources(f, x, chunk_size)
        self._tape = GradientTape(persistent=True)
        with self._tape:
            self._tape.watch(self._sources)
            with GradientTape() as inner:
                inner.watch(self._sources)
                y = call()
            _require_scalar(y, "hessian_operator")
            grads = inner.gradient(y, self._sources, unconnected_gradients=UnconnectedGradients.ZERO)
            flat = [anp.ravel(g) for g in grads]
            self._g = flat[0] if len(flat) == 1 else anp.concatenate(flat)
        self.value = float(value_of(y))
        self.gradient = self._g.numpy()
        n = self.gradient.size
        self.shape = (n, n)
        self.dtype = self.gradient.dtype

    def _sweep(self, seeds: np.ndarray) -> np.ndarray:
        """One backward sweep over the recorded gradient, seeded with ``seeds``: (n,) or (k, n).

        The result is NumPy, so the sweep runs on raw arrays even inside a user's tape or
        accumulator: nothing is recorded there (a tape would otherwise record every rule that reads
        a trainable Variable, and grow with each product).
        """
        with paused():
            parts = self._tape.sweep([self._g], [seeds], self._sources, seeds.shape[:-1])
        return self._flat(parts, seeds.shape[:-1])


class ReplayedHessianOperator(SymmetricOperator):
    """The HessianOperator of an ``autodiff.function``: f, its gradient and the parts of the second
    sweep that do not involve v run once at x (a replayed program); each product H v runs the rest
    (another one). Seeds of a new batch shape (``matmat`` chunks) trace their own pair once."""

    def __init__(self, function: Function, x, at: tuple, snapshot: dict, chunk_size: int | None = None):
        self.chunk_size = chunk_size
        self._function, self.x, self._snapshot = function, x, snapshot
        self._unravel = None
        value, gradient, product = at
        self._products = {(): product}
        self.value = float(value)
        self.gradient = np.asarray(gradient)
        n = self.gradient.size
        self.shape = (n, n)
        self.dtype = self.gradient.dtype

    @property
    def unravel(self):
        """Flat vectors -> the structure of x, made on first use (ravel copies x: an optimizer
        taking one operator per iterate never asks)."""
        if self._unravel is None:
            self._unravel = ravel(self.x)[1]
        return self._unravel

    def _sweep(self, seeds: np.ndarray) -> np.ndarray:
        batch_shape = seeds.shape[:-1]
        product = self._products.get(batch_shape)
        if product is None:
            product = self._products[batch_shape] = \
                self._function._curvature_at(self.x, batch_shape, self._snapshot)[2]
        return product(seeds)


def hessian_operator(f: Callable, x, chunk_size: int | None = None) -> SymmetricOperator:
    """Record f and its gradient at x once; return the Hessian as an operator (see HessianOperator).

    Each product ``op @ v`` is then one backward sweep over the recorded gradient, with no new
    evaluation of f and no memory growth: the pattern Newton-CG, Lanczos and Hutchinson estimators
    need (Pearlmutter 1994, "Fast exact multiplication by the Hessian").

    Parameters
    ----------
    f : callable
        A scalar function of x (of no argument when x holds Variables).
    x : array_like, Variable, or pytree of them
        The point.
    chunk_size : int, optional
        How many vectors each batched sweep of ``matmat`` and ``to_dense`` takes (default: all).

    Returns
    -------
    HessianOperator
        With ``value``, ``gradient``, ``matvec``, ``matmat``, ``@``, ``to_dense``, ``shape``,
        ``dtype`` and ``as_linear_operator()`` (for scipy's ``cg``, ``eigsh``). For an
        ``autodiff.function`` f, a ReplayedHessianOperator: its recordings are replayed programs
        (unless its trace was refused with ``eager_fallback``, or a tape is active).

    Raises
    ------
    TypeError
        If f does not return a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> op = ad.hessian_operator(lambda x: x[0] ** 2 * x[1] + np.sum(x ** 4), np.array([1.0, 2.0]))
    >>> op
    HessianOperator(shape=(2, 2), value=19)
    >>> op.matvec([1.0, 0.0]), op.to_dense()
    (array([16.,  2.]), array([[16.,  2.],
           [ 2., 48.]]))
    """
    if isinstance(f, Function):
        if not (state.tapes or state.accumulators):
            # the Variables' values now: products of later batch shapes are taken at the same x
            snapshot = {leaf._id: leaf._value for leaf in flatten(x)[0] if isinstance(leaf, Variable)}
            at = f._curvature_at(x, (), snapshot)
            if at is not None:
                return ReplayedHessianOperator(f, x, at, snapshot, chunk_size)
        return HessianOperator(f.f, x, chunk_size)
    return HessianOperator(f, x, chunk_size)
