"""Curvature operators: the Hessian with its gradient recorded once, and the generalized Gauss-Newton
matrix, as linear operators on flat vectors.

Newton-CG and curvature analysis ask many Hessian-vector products at one point. The textbook
nested-tape HVP re-runs f and its gradient for every vector. Here f and its gradient are recorded
once; each product H v is then one backward sweep over that recording seeded with v
(``transforms.cached_hvp``). Nothing new is recorded per product, so memory stays flat however
many products are taken; H V for many vectors, and the dense Hessian, are one batched sweep.

One operator class serves every curvature: ``HessianOperator(value, gradient, product)``. For an
``autodiff.function``, the pair (value and gradient, product) is a replayed program split at the
vector (see ``transforms.partially_evaluated``).

References: B. A. Pearlmutter, "Fast exact multiplication by the Hessian", Neural Computation 6
(1994); N. N. Schraudolph, "Fast curvature matrix-vector products for second-order gradient
descent", Neural Computation 14 (2002); J. Martens, "Deep learning via Hessian-free optimization",
ICML 2010.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import numpy as anp
from .core import Tensor, Variable, paused, tracked, value_of
from .transforms import cached_hvp, flat_cotangent, partially_evaluated, recorded_vjp, zeros_like_tree
from .tree import flatten, ravel


class HessianOperator:
    """A symmetric curvature matrix at a point, as a linear operator on flat vectors of length n.

    Made of ``value`` (f at the point), ``gradient`` (flat) and ``product``, the function that
    maps vectors V of shape (n,) or (k, n) to their products with the matrix. Build it with
    :func:`hessian_operator` (the Hessian) or :func:`ggn_operator` (the Gauss-Newton matrix).

    Attributes
    ----------
    value : float
        f at the point.
    gradient : ndarray, shape (n,)
        The flat gradient of f there.
    shape : tuple
        ``(n, n)``.
    x : array_like, Variable, or pytree of them
        The point as given (Variables stay Variables, so their current values may have moved on),
        so that a block of the operator can be named by its Variable, its name or its key path.
    unravel : callable
        Flat vectors -> the structure of the point (blocks of the matrix).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> op = ad.HessianOperator(1.0, np.zeros(2), lambda V: V @ np.diag([2.0, 3.0]))
    >>> op @ np.array([1.0, 1.0]), op.to_dense()
    (array([2., 3.]), array([[2., 0.],
           [0., 3.]]))
    """

    def __init__(self, value: Any, gradient: Any, product: Callable | None = None,
                 chunk_size: int | None = None, point: Any = None) -> None:
        if callable(value) and not callable(product):  # the former HessianOperator(f, x[, chunk_size])
            warnings.warn("HessianOperator(f, x) is deprecated: use autodiff.hessian_operator(f, x)",
                          DeprecationWarning, stacklevel=2)
            built = hessian_operator(value, gradient, product if product is not None else chunk_size)
            value, gradient, product, chunk_size, point = (built.value, built.gradient, built.product,
                                                           built.chunk_size, built.x)
        if not callable(product):
            raise TypeError("HessianOperator(value, gradient, product): product must be a function of "
                            "vectors")
        if (isinstance(value, Tensor) or isinstance(gradient, Tensor)) and any(
                isinstance(v, Tensor) and tracked(v) for v in (value, gradient)):
            raise TypeError("autodiff: a curvature operator holds values (its products are arrays), but f "
                            "depends on a Tensor that an enclosing tape or accumulator tracks, whose "
                            "gradient would be lost. Inside a transform, use autodiff.hvp, which nests.")
        value, gradient = _value_and_flat(value, gradient)
        self._fill(product, chunk_size, point, gradient.size, gradient.dtype, (value, gradient))

    def _fill(self, product: Callable, chunk_size: int | None, point: Any, n: int, dtype: Any,
              value_and_gradient: tuple | None) -> None:
        """The fields, ``value_and_gradient`` a float and a flat array (or None: the product is a
        ``jit.traced.Pending``, whose ``start()`` gives them on first use, and whose first product
        at the point is one program, ``jit.program.joined``; its ``vector_product`` then takes a
        vector that ``matvec`` has checked)."""
        self.product, self.chunk_size, self.x, self._unravel = product, chunk_size, point, None
        self.shape, self._vector_shape, self.dtype, self._value_and_gradient = (n, n), (n,), dtype, value_and_gradient
        self._vector_product = None if value_and_gradient is not None else product.vector_product

    @classmethod
    def _of_arrays(cls, value: float, gradient: np.ndarray, product: Callable, chunk_size: int | None,
                   point: Any) -> HessianOperator:
        """The operator of a replayed pair, whose value is a float and gradient a flat array (no
        Tensor to check or unwrap): the constructor's checks and conversions skipped, a fixed cost
        of every Hessian-vector product at a new point."""
        operator = cls.__new__(cls)
        operator._fill(product, chunk_size, point, gradient.size, gradient.dtype, (value, gradient))
        return operator

    @property
    def value(self) -> float:
        """f at the point."""
        return (self._value_and_gradient or self._started())[0]

    @property
    def gradient(self) -> np.ndarray:
        """The flat gradient of f at the point."""
        return (self._value_and_gradient or self._started())[1]

    def _started(self) -> tuple:
        """A deferred operator's value and gradient: its ``Pending`` started, whose ``Late`` then
        takes the products."""
        (value, gradient), self.product = self.product.start()
        self._value_and_gradient, self._vector_product = _value_and_flat(value, gradient), None
        return self._value_and_gradient

    @property
    def unravel(self) -> Callable:
        """Flat vectors -> the structure of the point, made on first use (ravel copies the point:
        an optimizer taking one operator per iterate never asks)."""
        if self._unravel is None:
            self._unravel = ravel(self.x)[1] if self.x is not None else (lambda v: v)
        return self._unravel

    def matvec(self, v: Any) -> np.ndarray:
        """The product with one vector: one sweep (a replayed program for ``autodiff.function``)."""
        if type(v) is np.ndarray and v.shape == self._vector_shape and (v.dtype is self.dtype or v.dtype == self.dtype):
            vector_product = self._vector_product   # (the common call)
            return _array(self.product(v)) if vector_product is None else vector_product(v)
        v = np.asarray(v, dtype=self.dtype).reshape(-1)
        if v.size != self.shape[0]:
            raise ValueError(f"vector of length {v.size} for an operator of shape {self.shape}")
        return _array(self.product(v))

    def matmat(self, V: Any) -> np.ndarray:
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
        rows = [_array(self.product(np.ascontiguousarray(V[:, i:i + step].T)))
                for i in range(0, V.shape[1], step)]
        return np.concatenate(rows, axis=0).T if rows else np.zeros(V.shape)

    def to_dense(self) -> np.ndarray:
        """The full matrix, in one batched sweep (or chunks)."""
        return self.matmat(np.eye(self.shape[0], dtype=self.dtype))

    def __matmul__(self, other: Any) -> np.ndarray:
        if type(other) is not np.ndarray:
            other = np.asarray(other)
        return self.matvec(other) if other.ndim == 1 else self.matmat(other)

    def as_linear_operator(self) -> Any:
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, value={self.value:.6g})"


def _value_and_flat(value: Any, gradient: Any) -> tuple:
    """(a float, a flat array) of a value and a gradient (arrays or Tensors)."""
    if type(gradient) is np.ndarray and gradient.ndim == 1 and isinstance(value, (float, np.floating)):
        return float(value), gradient   # a replayed pair's: nothing to unwrap
    return float(value_of(value)), np.asarray(value_of(gradient)).reshape(-1)


def _array(product: Any) -> np.ndarray:
    """A product as an ndarray: vectors in are arrays, so products out are, whatever the point holds
    (a replayed product at a point of Variables or Tensors mirrors that point)."""
    return product if type(product) is np.ndarray else np.asarray(value_of(product))


class GGNOperator(HessianOperator):
    """The generalized Gauss-Newton matrix G = J^T H_L J of loss(predict(x)) at x, with
    HessianOperator's interface (``value`` and ``gradient`` are those of loss(predict(x))). Build it
    with :func:`ggn_operator`.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> W = np.array([[1.0, 1.0], [0.0, 1.0]])
    >>> G = ad.ggn_operator(lambda x: W @ x, lambda z: 0.5 * np.sum(z ** 2), np.array([1.0, 2.0]))
    >>> isinstance(G, ad.GGNOperator), G.to_dense()   # W^T W: the loss's Hessian is the identity
    (True, array([[1., 1.],
           [1., 2.]]))
    """


def hessian_operator(f: Callable, x: Any, chunk_size: int | None = None, args: tuple = ()) -> HessianOperator:
    """Record f and its gradient at x once; return the Hessian as an operator.

    Each product ``op @ v`` is then one backward sweep over the recorded gradient, with no new
    evaluation of f and no memory growth: the pattern Newton-CG, Lanczos and Hutchinson estimators
    need (Pearlmutter 1994). For an ``autodiff.function`` f, the products are a replayed program:
    f, its gradient and every part of the second sweep that does not involve v run once, at x;
    each product runs only the rest (unless a tape or accumulator is recording).

    Parameters
    ----------
    f : callable
        A scalar function of x (of no argument when x holds Variables).
    x : array_like, Variable, or pytree of them
        The point.
    chunk_size : int, optional
        How many vectors each batched sweep of ``matmat`` and ``to_dense`` takes (default: all).
    args : tuple, optional
        More arguments of f, held fixed: the Hessian of ``x -> f(x, *args)`` (``f(*args)`` when x
        holds Variables). For an ``autodiff.function`` f their floating-point arrays are inputs of
        the replayed program (a batch of data: one trace serves every batch of that shape), where
        a closure over them would be traced again for each one.

    Returns
    -------
    HessianOperator
        With ``value``, ``gradient``, ``matvec``, ``matmat``, ``@``, ``to_dense``, ``shape``,
        ``dtype`` and ``as_linear_operator()`` (for scipy's ``cg``, ``eigsh``).

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
    >>> ad.hessian_operator(lambda x, a: np.sum(a * x ** 3), np.array([1.0, 2.0]),
    ...                     args=(np.array([1.0, 3.0]),)).to_dense()   # 6 a x on the diagonal
    array([[ 6.,  0.],
           [ 0., 36.]])
    """
    deferred = None if args else getattr(type(f), "__autodiff_deferred__", None)  # (transforms' protocol)
    pending = None if deferred is None else deferred(f, cached_hvp, x)
    if pending is not None:   # a replayed f at an array: the value and gradient made on first use
        operator = HessianOperator.__new__(HessianOperator)
        operator._fill(pending, chunk_size, x, pending.shape[0], pending.dtype, None)
        return operator
    if args:
        (value, gradient), product = partially_evaluated(_cached_hvp_with, f, (x, tuple(args)),
                                                         _flat_vector_like_gradient)
    else:
        (value, gradient), product = partially_evaluated(cached_hvp, f, (x,), _flat_vector_like_gradient)
    if type(gradient) is np.ndarray and gradient.ndim == 1 and isinstance(value, (float, np.floating)):
        return HessianOperator._of_arrays(float(value), gradient, product, chunk_size, x)
    return HessianOperator(value, gradient, product, chunk_size, x)


def _cached_hvp_with(f: Callable, x: Any, args: tuple) -> tuple:
    """``cached_hvp`` of x -> f(x, *args) (of f(*args) when x holds Variables)."""
    leaves = flatten(x)[0]
    if leaves and all(isinstance(leaf, Variable) for leaf in leaves):
        return cached_hvp(lambda: f(*args), x)
    return cached_hvp(lambda point: f(point, *args), x)


def _flat_vector_like_gradient(out: tuple) -> tuple:
    """The late argument of a curvature product: one flat vector, shaped like the gradient."""
    gradient = value_of(out[1])
    return (np.zeros(np.shape(gradient), gradient.dtype),)


def ggn_operator(predict: Callable, loss: Callable, x: Any, chunk_size: int | None = None,
                 args: tuple = ()) -> GGNOperator:
    """The generalized Gauss-Newton matrix of loss(predict(x)) at x as an operator.

    G = J^T H_L J, with J the Jacobian of the predictions z = predict(x) and H_L the Hessian of
    the loss at z (Schraudolph 2002). It drops the term sum_k (dL/dz_k) Hess(z_k) of the Hessian,
    so it is positive semi-definite whenever the loss is convex in the predictions (squared error,
    cross-entropies), as damped-CG methods such as Hessian-free optimization need (Martens 2010).

    No Jacobian is formed. predict is recorded once, and so is its VJP u -> J^T u (linear in u);
    a product G v is J v (the transpose of that VJP: one sweep), H_L (J v) (the loss's cached
    Hessian product) and J^T (H_L J v) (one sweep over predict's recording), none re-running
    predict; k vectors are one batched sweep each. For an ``autodiff.function`` predict, the
    products are a replayed program, as in :func:`hessian_operator`.

    Parameters
    ----------
    predict : callable
        x -> predictions (a Tensor of any shape); with Variables in x, a function of no argument.
    loss : callable
        predictions -> scalar loss.
    x : array_like, Variable, or pytree of them
        The point.
    chunk_size : int, optional
        How many vectors each batched sweep takes (default: all).
    args : tuple, optional
        More arguments of both, held fixed: ``predict(x, *args)`` (``predict(*args)`` when x holds
        Variables) and ``loss(predictions, *args)``, a batch of inputs and targets, say (see
        :func:`hessian_operator`).

    Returns
    -------
    GGNOperator
        The interface of :class:`HessianOperator`.

    Raises
    ------
    TypeError
        If predict does not return a floating Tensor computed from x, or loss not a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> G = ad.ggn_operator(np.tanh, lambda z: 0.5 * np.sum(z ** 2), np.array([0.0, 1.0]))
    >>> G.to_dense().round(4)                  # diag(1 - tanh(x)^2)^2
    array([[1.    , 0.    ],
           [0.    , 0.1764]])
    """
    (value, gradient), product = partially_evaluated(gauss_newton, predict, (loss, x, tuple(args)),
                                                     _flat_vector_like_gradient)
    return GGNOperator(value, gradient, product, chunk_size, x)


def gauss_newton(predict: Callable, loss: Callable, x: Any, args: tuple = ()) -> tuple:
    """``((value, flat gradient), product)`` of the GGN of loss(predict(x, *args), *args) at x
    (see :func:`ggn_operator`); nothing is recorded on the caller's tapes."""
    leaves = flatten(x)[0]
    reads_variables = bool(leaves) and all(isinstance(leaf, Variable) for leaf in leaves)
    sizes = [int(np.size(value_of(leaf))) for leaf in leaves]
    shapes = [np.shape(value_of(leaf)) for leaf in leaves]
    rebuild = flatten(x)[1]

    def predictions(point: Any) -> Tensor:
        z = predict(*args) if reads_variables else predict(point, *args)
        if not isinstance(z, Tensor) or z.dtype.kind != "f":
            raise TypeError(f"ggn_operator: predict returned {type(z).__name__}, not a floating "
                            "Tensor computed from x with autodiff operations")
        return z

    with paused():
        z, pullback = recorded_vjp(predictions, x)
        try:
            (value, loss_gradient), loss_product = cached_hvp(
                (lambda predicted: loss(predicted, *args)) if args else loss, z)
        except TypeError as error:
            raise TypeError(f"ggn_operator: the loss of the predictions: {error}") from None
        _, push = recorded_vjp(pullback, zeros_like_tree(z))  # the VJP of u -> J^T u is v -> J v
        z_shape = np.shape(value_of(z))
        gradient = flat_cotangent(pullback(anp.reshape(loss_gradient, z_shape))[0], sizes, ())

    def product(seeds: Any) -> Any:
        batch_shape = np.shape(value_of(seeds))[:-1]
        with paused():
            offsets = np.cumsum([0] + sizes)
            tangent = rebuild([anp.reshape(seeds[..., offsets[k]:offsets[k + 1]], batch_shape + shape)
                               for k, shape in enumerate(shapes)])
            jv = push((tangent,))[0]
            hjv = loss_product(anp.reshape(jv, batch_shape + (-1,)))
            result = flat_cotangent(pullback(anp.reshape(hjv, batch_shape + z_shape))[0], sizes, batch_shape)
        return result if isinstance(seeds, Tensor) else value_of(result)
    return (value, gradient), product
