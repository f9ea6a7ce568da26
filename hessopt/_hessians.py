"""Second derivatives that ``minimize`` makes from what the user gave, as Hessian operators.

Each source is a factory ``source(x) -> operator`` with the ``matvec``/``to_dense`` interface of
``autodiff.hessian_operator`` (what :class:`optimizers.objective.Objective` takes as ``operator``),
and says what it is in ``name`` (the run's ``result.hessian_source``):

- :class:`GradientDerivative`: with a user gradient (``jac`` callable or ``jac=True``) and no
  ``hess``/``hessp``, the Hessian is the derivative of that gradient, the one the run uses:
  autodiff of it when it is NumPy code the engine can follow (products are vector-Jacobian
  products of one recording per point), else, as scipy does, finite differences of it
  (``scipy.optimize._numdiff.approx_derivative``), with the reason kept in ``note``.
- :class:`QuasiNewton`: ``hess`` a ``scipy.optimize.HessianUpdateStrategy`` (``BFGS()``,
  ``SR1()``), updated with the step and gradient change between the points where the Hessian is
  asked for (the iterates), as scipy's ScalarFunction drives it: ``initialize``, ``update``,
  ``dot``, ``get_matrix``.

Both need the gradient at x, which the run has just computed there: :class:`LastGradient` keeps
it, so asking again costs nothing, and counts the evaluations made when it was not at hand.

- :class:`SparseAutodiff`: autodiff's operator of each point with, in addition, the Hessian as a
  ``scipy.sparse`` matrix (``to_sparse``, from ``autodiff.sparse_hessian``: the pattern found
  in the recorded program once, then k products a point), which Newton and trust-exact factor
  as a sparse matrix, and whose incomplete factorization preconditions the Krylov methods
  (the pattern is then found only when a method first asks for the matrix);
  :func:`user_sparse_operator` does the same for the user's ``hess`` returning sparse matrices.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
from scipy.optimize import HessianUpdateStrategy
from scipy.optimize._numdiff import approx_derivative

import autodiff as ad
from optimizers.objective import same_point


class LastGradient:
    """The run's gradient function (``pair``: one returning ``(f, g)``, as with ``jac=True``),
    keeping its last point and gradient; :meth:`at` serves the Hessian sources from them, and
    ``extra`` counts the evaluations it made at other points."""

    def __init__(self, function: Callable, pair: bool = False):
        self._function, self._pair = function, pair
        self._x = self._g = None
        self.extra = 0

    def __call__(self, x: np.ndarray):
        out = self._function(x)
        self._x, self._g = np.array(x, copy=True), np.asarray(out[1] if self._pair else out, dtype=float)
        return out

    def at(self, x: np.ndarray) -> np.ndarray:
        """The gradient at x (evaluated, and counted in ``extra``, only when x is not the last point)."""
        if not same_point(x, self._x):
            self.extra += 1
            self(x)
        return self._g


class QuasiNewton:
    """The Hessian from a ``HessianUpdateStrategy``: one update per new point, with the step
    ``x - x_prev`` and the gradient change ``g - g_prev`` from the point before.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import BFGS
    >>> from hessopt._hessians import LastGradient, QuasiNewton
    >>> A = np.diag([1.0, 4.0])
    >>> gradient = LastGradient(lambda x: A @ x)
    >>> source = QuasiNewton(BFGS(), gradient, 2)
    >>> source(np.array([1.0, 0.0])).to_dense()        # before any update: the identity
    array([[1., 0.],
           [0., 1.]])
    >>> H = source(np.array([0.0, 1.0])).to_dense()    # one update: the secant H s = y holds
    >>> np.allclose(H @ np.array([-1.0, 1.0]), A @ np.array([-1.0, 1.0]))
    True
    """

    def __init__(self, strategy: HessianUpdateStrategy, gradient: LastGradient, n: int):
        strategy.initialize(n, "hess")
        self._strategy, self._gradient = strategy, gradient
        self._x = self._g = None
        self.name = f"quasi-Newton ({type(strategy).__name__} updates)"
        self.evaluations = 0      # no second derivative is evaluated
        self.note = None

    def __call__(self, x: np.ndarray) -> QuasiNewton:
        if not same_point(x, self._x):
            g = self._gradient.at(x)
            if self._x is not None:
                self._strategy.update(x - self._x, g - self._g)
            self._x, self._g = np.array(x, copy=True), g.copy()
        return self

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self._strategy.dot(v), dtype=float)

    def to_dense(self) -> np.ndarray:
        return np.asarray(self._strategy.get_matrix(), dtype=float)


class GradientDerivative:
    """The Hessian as the derivative of the run's gradient ``gradient(x)`` (flat x to flat g, also
    for Tensors): autodiff of it, else finite differences of it (``scheme``, scipy's
    ``approx_derivative``) once autodiff was refused, at any point; ``note`` then says why.

    Parameters
    ----------
    gradient : callable
        The user's gradient on flat vectors; ``trace``: replayed with ``autodiff.function``.
    last : LastGradient
        The run's gradient with its last value (finite differences start from it).
    scheme : {"2-point", "3-point"}
        The finite-difference scheme.
    trace : bool
        Replay the recordings (``autodiff.function``, eager where it cannot trace).

    Examples
    --------
    A gradient in NumPy is differentiated exactly; one that leaves the engine by finite differences:

    >>> import numpy as np
    >>> from hessopt._hessians import GradientDerivative, LastGradient
    >>> numpy_code = lambda x: np.stack([2 * x[0] * x[1], x[0] ** 2])
    >>> source = GradientDerivative(numpy_code, LastGradient(numpy_code))
    >>> source(np.array([1.0, 2.0])).to_dense(), source.name
    (array([[4., 2.],
           [2., 0.]]), 'autodiff of the gradient')
    >>> opaque = lambda x: np.array([2 * float(x[0]) * float(x[1]), float(x[0]) ** 2])
    >>> source = GradientDerivative(opaque, LastGradient(opaque))
    >>> np.round(source(np.array([1.0, 2.0])).matvec(np.array([1.0, 0.0])), 6), source.name
    (array([4., 2.]), 'finite differences of the gradient')
    """

    def __init__(self, gradient: Callable, last: LastGradient, scheme: str = "2-point",
                 trace: bool = True):
        self._gradient = ad.function(gradient, eager_fallback=True) if trace else gradient
        self._plain, self._last, self._scheme = gradient, last, scheme
        self._x = self._operator = None
        self.name = "autodiff of the gradient"
        self.note: str | None = None     # why finite differences, once they are used
        self._differenced = 0            # Hessians made by finite differences

    @property
    def evaluations(self) -> int | None:
        """The Hessians made by finite differences (None while autodiff makes them: each product
        is then counted as an evaluation)."""
        return None if self.note is None else self._differenced

    def __call__(self, x: np.ndarray):
        if not same_point(x, self._x):
            self._x, self._operator = np.array(x, copy=True), None
        if self._operator is None:
            self._operator = self._autodiff(self._x) if self.note is None else None
            if self._operator is None:
                self._operator = self._finite_differences(self._x)
        return self._operator

    def _autodiff(self, x: np.ndarray):
        """The operator of x from one recording of the gradient, or None when autodiff refuses it."""
        try:
            _, vjp = ad.vjp(self._gradient, x)
        except TypeError as refusal:   # the engine's word for code it cannot differentiate
            self.name, self.note = "finite differences of the gradient", str(refusal).split("\n")[0]
            return None
        return _VectorJacobian(vjp, lambda: ad.jacobian(self._gradient)(x))

    def _finite_differences(self, x: np.ndarray):
        self._differenced += 1
        h = np.atleast_2d(approx_derivative(self._plain, x, method=self._scheme, f0=self._last.at(x)))
        return _Dense(0.5 * (h + h.T))


class _VectorJacobian:
    """Products as vector-Jacobian products of one recording (for a gradient, J is the symmetric
    Hessian); the dense matrix from one batched sweep, made on first use."""

    def __init__(self, vjp: Callable, dense: Callable[[], np.ndarray]):
        self._vjp, self._dense = vjp, dense

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(self._vjp(v)[0], dtype=float)

    def to_dense(self) -> np.ndarray:
        return np.asarray(self._dense(), dtype=float)


class SparseAutodiff:
    """Autodiff's Hessians of the flat objective ``flat_f`` as sparse matrices, next to the
    products of the run's operator of each point (``operator_at(x)``, which also gives f and g).
    ``pattern(x)`` is the structure (found once; the matrices reuse it) and ``untraced_reason``
    says why the products of the sparse Hessian run eagerly, if they do.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt._hessians import SparseAutodiff
    >>> f = lambda x: np.sum(x[1:] * x[:-1] ** 2)
    >>> source = SparseAutodiff(f, lambda x: ad.hessian_operator(f, x))
    >>> source.pattern(np.ones(5)).nnz, source(np.ones(5)).to_sparse().toarray()[0]
    (12, array([2., 2., 0., 0., 0.]))
    """

    name, note, evaluations = "autodiff (sparse)", None, None

    def __init__(self, flat_f: Callable, operator_at: Callable):
        self._hessian, self._operator_at = ad.sparse_hessian(flat_f), operator_at

    def pattern(self, x: np.ndarray):
        return self._hessian.pattern(x)

    @property
    def untraced_reason(self) -> str | None:
        return self._hessian.untraced_reason

    def __call__(self, x: np.ndarray) -> _SparseOperator:
        return _SparseOperator(self._operator_at(x), lambda: self._hessian(x))


class _SparseOperator:
    """A point's operator, with the sparse matrix made on demand."""

    def __init__(self, operator, sparse: Callable):
        self._operator, self._sparse = operator, sparse
        self.matvec, self.to_dense = operator.matvec, operator.to_dense

    def to_sparse(self):
        return self._sparse()


def user_sparse_operator(user) -> Callable:
    """The user's ``hess`` (a :class:`~hessopt._arguments.UserHessian` that returns sparse
    matrices) as an operator factory: its products and dense matrices, and the sparse matrix
    itself (``to_sparse``), for a preconditioner."""
    def at(x: np.ndarray) -> _SparseOperator:
        products = SimpleNamespace(matvec=functools.partial(user.product, x),
                                   to_dense=functools.partial(user.matrix, x))
        return _SparseOperator(products, functools.partial(user.at, x))
    return at


class _Dense:
    """A dense matrix as an operator."""

    def __init__(self, h: np.ndarray):
        self._h = h

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return self._h @ v

    def to_dense(self) -> np.ndarray:
        return self._h
