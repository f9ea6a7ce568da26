"""The objective wrapper every method evaluates through, and the statuses of a run.

An :class:`Objective` wraps ``fun``/``jac``/``hess``/``hessp`` on plain arrays with evaluation
counters and a cache of the last point, so ``f`` and ``g`` at one ``x`` are never computed twice.
It also remembers the best finite point seen, so a run that fails still returns something useful.
At an iterate it gives an :class:`Iterate`: x, f, g and the Hessian of x as an operator, a dense
matrix, or a sparse one (:mod:`optimizers.sparse`).
"""
from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Protocol

import numpy as np
import scipy.sparse

from .sparse import dense_reason, symmetric_csc

#: Up to this many entries :func:`same_point` compares buffers (a loop in C over the values, which
#: takes about as long as ``(x == y).all()`` at 1,000 entries and six times longer at 100,000).
BUFFER_COMPARISON_SIZE = 1000
_FLOAT = np.dtype(np.float64)   # (the buffers of other types, complex ones say, do not compare by value)


class cached:  # noqa: N801 (a decorator, named as functools.cached_property)
    """``functools.cached_property`` without its lock: on Python 3.10 and 3.11 every first read
    takes one lock shared by all instances of the class, which costs more than the small values
    read here (a few a trust-region iteration; Python 3.12 dropped the lock). The value is
    computed on first read and kept in the instance's ``__dict__``, where deleting it lets the
    next read compute it again."""

    def __init__(self, function: Callable):
        self.function, self.name, self.__doc__ = function, function.__name__, function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner: type | None = None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value


class Status(IntEnum):
    """Why a run stopped; the integers keep scipy's meaning where scipy has one (an IntEnum, so
    ``result.status == 99`` holds as in scipy).

    Examples
    --------
    >>> from optimizers import Status
    >>> Status(5).name, Status.CALLBACK_STOP == 99
    ('NOT_A_MINIMUM', True)
    """
    SUCCESS = 0
    MAXITER = 1
    PRECISION_LOSS = 2      # no further progress possible at working precision
    NONFINITE = 3           # f or g became NaN/inf and recovery failed
    NOT_A_MINIMUM = 5       # stationary point with negative curvature (saddle or maximum)
    INFEASIBLE = 6          # converged to a stationary point of the constraint violation, not feasible
    UNBOUNDED = 7           # iterates diverging: f below -1e20 or ||x|| above 1e20
    CALLBACK_STOP = 99      # callback raised StopIteration (scipy's code)


MESSAGES = {
    Status.SUCCESS: "Optimization terminated successfully: the gradient test passed",
    Status.MAXITER: "Maximum number of iterations has been exceeded before the gradient test passed",
    Status.PRECISION_LOSS: "Desired accuracy not reached: no further progress at working "
                           "precision",
    Status.NONFINITE: "Objective, gradient or Hessian became non-finite and could not be "
                      "recovered; returning the best point found",
    Status.NOT_A_MINIMUM: "Stopped at a stationary point with negative curvature (saddle point or "
                          "maximum)",
    Status.INFEASIBLE: "Converged to a point of local infeasibility: the problem may be infeasible",
    Status.UNBOUNDED: "Iterates diverging: the problem may be unbounded below",
    Status.CALLBACK_STOP: "`callback` raised `StopIteration`",
}


class HessianOperator(Protocol):
    """What an ``operator(x)`` factory returns: the Hessian at x as products and a dense
    matrix (``autodiff.hessian_operator``'s interface)."""

    def matvec(self, v: np.ndarray) -> np.ndarray: ...

    def to_dense(self) -> np.ndarray: ...


class SparseHessianOperator(HessianOperator, Protocol):
    """An operator that also gives the Hessian as a ``scipy.sparse`` matrix."""

    def to_sparse(self) -> scipy.sparse.spmatrix: ...


class Objective:
    """Counted, cached access to f, its gradient and its Hessian at one point at a time.

    ``jac=True`` means ``fun`` returns ``(f, g)``, as in scipy. ``hess`` returns a dense or a
    ``scipy.sparse`` matrix, ``hessp(x, p)`` a Hessian-vector product; either can stand in for the
    other. ``operator(x)`` (a :class:`HessianOperator` for the point x, e.g. a recorded gradient
    whose products are cheap) replaces both: every product and matrix at x then comes from it, a
    sparse one from its ``to_sparse()`` when it has one (:class:`SparseHessianOperator`).

    A sparse Hessian is used as one (:attr:`Iterate.sparse_hessian`) after ``sparse`` and the
    rule of :func:`~optimizers.sparse.dense_reason`; ``sparse_used`` then turns True, and
    ``dense_reason`` keeps why one was not.

    Raises
    ------
    TypeError
        If fun is not callable, or jac neither callable nor True.
    ValueError
        If x0 is not a finite 1-D array (a non-finite f(x0) is the loop's to report: status 3).

    Examples
    --------
    f(x0) is evaluated once on construction; asking again at the same point is free:

    >>> import numpy as np
    >>> from optimizers.objective import Objective
    >>> objective = Objective(lambda x: x @ x, np.array([1.0, 2.0]), lambda x: 2 * x)
    >>> objective.fun(np.array([1.0, 2.0])), objective.grad(np.array([1.0, 2.0])), objective.counts()
    (5.0, array([2., 4.]), {'nfev': 1, 'njev': 1, 'nhev': 0})
    """

    def __init__(self, fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                 hessp: Callable | None = None,
                 operator: Callable[[np.ndarray], HessianOperator] | None = None,
                 sparse: bool | None = None):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if jac is not True and not callable(jac):
            raise TypeError("jac must be a callable or True (fun returns (f, g)); "
                            "these methods need the gradient")
        x0 = np.array(x0, dtype=float)   # the run's own copy: iterates are never changed in place
        if x0.ndim != 1:
            raise ValueError(f"x0 must be a 1-D array, got shape {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 contains NaN or inf")
        if operator is not None and not callable(operator):
            raise TypeError(f"operator must be callable, got {type(operator).__name__}")
        self._fun, self._jac, self._hess, self._hessp = fun, jac, hess, hessp
        self._operator = operator
        self.sparse, self.sparse_used, self.dense_reason = sparse, False, None
        self.nfev = self.njev = self.nhev = 0
        self._fx = self._gx = None
        self._f = self._g = None
        self.best_x, self.best_f = x0.copy(), np.inf
        self.x0 = x0
        self.fun(x0)

    def counts(self) -> dict:
        """The evaluations so far."""
        return {"nfev": self.nfev, "njev": self.njev, "nhev": self.nhev}

    @property
    def has_hessian(self) -> bool:
        """Whether ``hess``, ``hessp`` or ``operator`` was given."""
        return any(h is not None for h in (self._hess, self._hessp, self._operator))

    def fun(self, x: np.ndarray) -> float:
        """f(x), computed (and counted) only when x is not the last point asked."""
        if same_point(x, self._fx):
            return self._f
        if self._jac is True:
            f, g = self._fun(x)
            self.njev += 1
            self._store_grad(x, g)
        else:
            f = self._fun(x)
        self.nfev += 1
        f = np.asarray(f)
        if f.size != 1:
            raise ValueError(f"objective must return a scalar, got an array of shape {f.shape}")
        self._fx, self._f = x.copy(), float(f.reshape(()))
        if self._f < self.best_f:  # NaN never compares less, so only finite points are kept
            self.best_x, self.best_f = self._fx, self._f
        return self._f

    def grad(self, x: np.ndarray) -> np.ndarray:
        """The gradient at x, computed (and counted) only when x is not the last point asked."""
        if same_point(x, self._gx):
            return self._g
        if self._jac is True:
            self.fun(x)
            return self._g
        self.njev += 1
        self._store_grad(x, self._jac(x))
        return self._g

    def _store_grad(self, x, g):
        g = np.asarray(g, dtype=float).reshape(-1)
        if g.shape != x.shape:
            raise ValueError(f"gradient has shape {g.shape}, expected {x.shape}")
        self._gx, self._g = x.copy(), g

    def at(self, x: np.ndarray) -> Iterate:
        """The iterate at x: f and g (counted unless already computed there) and the Hessian of x
        as products and, on demand, a dense matrix."""
        return Iterate(self, x, self.fun(x), self.grad(x))

    def _products(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray] | None:
        """``v -> H(x) v``, each product counted, from the operator of x or from ``hessp``;
        None when only the dense Hessian is at hand."""
        if self._operator is not None:
            product = self._operator(x).matvec
        elif self._hessp is not None:
            hessp = self._hessp
            product = lambda v: np.asarray(hessp(x, v), dtype=float).reshape(-1)  # noqa: E731
        else:
            return None

        def counted(v: np.ndarray) -> np.ndarray:
            self.nhev += 1
            return product(v)
        return counted

    def _matrix(self, x: np.ndarray):
        """The Hessian at x as a matrix, symmetrized: one evaluation of ``hess`` or of the
        operator's ``to_sparse`` (unless ``sparse`` is False) or ``to_dense``, or n products.
        Sparse matrices stay sparse (CSC)."""
        if self._hess is not None or self._operator is not None:
            self.nhev += 1
            if self._hess is not None:
                h = self._hess(x)
            else:
                operator = self._operator(x)
                sparse = self.sparse is not False and hasattr(operator, "to_sparse")
                h = operator.to_sparse() if sparse else operator.to_dense()
            if scipy.sparse.issparse(h):
                return symmetric_csc(h)
            h = np.asarray(h, dtype=float)
        elif self._hessp is not None:
            product = self._products(x)
            h = np.column_stack([product(e) for e in np.eye(x.size)])
        else:
            raise ValueError("this method needs second derivatives: pass hess or hessp")
        return 0.5 * (h + h.T)

    def gives_sparse(self, x: np.ndarray) -> bool:
        """Whether the Hessian at x may come as a sparse matrix at no extra cost: from an operator
        with ``to_sparse``, or from ``hess`` when it also gives the products (no ``hessp``), its
        matrix then at hand anyway; never with ``sparse`` False."""
        if self.sparse is False:
            return False
        if self._operator is not None:
            return hasattr(self._operator(x), "to_sparse")
        return self._hess is not None and self._hessp is None

    def _as_sparse(self, h) -> scipy.sparse.csc_matrix | None:
        """h when it is sparse and to be used as such (:func:`~optimizers.sparse.dense_reason`);
        else None, with the reason kept in ``dense_reason``."""
        if not scipy.sparse.issparse(h):
            return None
        reason = dense_reason(h.shape[0], h.nnz, self.sparse)
        if reason is not None:
            self.dense_reason = reason
            return None
        self.sparse_used = True
        return h


def same_point(x: np.ndarray, y: np.ndarray | None) -> bool:
    """Whether x is the point y (None: no point yet): "has the point changed", for every cache of
    a point's values. Elementwise (NaN is no point, -0.0 is 0.0), without ``np.array_equal``'s
    overhead, which showed in the profile of every Hessian-vector product; float64 points of up to
    :data:`BUFFER_COMPARISON_SIZE` entries have their buffers compared value by value, a fifth of
    the cost of ``==`` and a reduction, which a small solve pays about ten times an iteration.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.objective import same_point
    >>> same_point(np.array([1.0, 2.0]), np.array([1.0, 2.0])), same_point(np.ones(2), None)
    (True, False)
    """
    if y is None or x.shape != y.shape:
        return False
    if x.size <= BUFFER_COMPARISON_SIZE and x.dtype is _FLOAT and y.dtype is _FLOAT:
        return x.data == y.data
    return bool((x == y).all())


class Iterate:
    """A point of a run as the methods see it: ``x``, ``f``, the gradient ``g``, and the Hessian
    of x as products ``matvec(v)``, as a dense matrix ``hessian`` and, when it comes sparse and
    is to be used so, as a CSC matrix ``sparse_hessian`` (else None), all built on first use and
    counted (the matrix once for both). A product goes straight to the operator of x: it never
    asks which x it is for.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.objective import Objective
    >>> A = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> objective = Objective(lambda x: 0.5 * x @ A @ x, np.array([1.0, 0.0]), lambda x: A @ x,
    ...                       hessp=lambda x, p: A @ p)
    >>> point = objective.at(np.array([1.0, 0.0]))
    >>> point.f, point.g, point.matvec(np.array([0.0, 1.0])), objective.counts()
    (1.0, array([2., 1.]), array([1., 3.]), {'nfev': 1, 'njev': 1, 'nhev': 1})
    """

    def __init__(self, objective: Objective, x: np.ndarray, f: float, g: np.ndarray):
        self._objective = objective
        self.x, self.f, self.g = x, f, g

    @cached
    def matvec(self) -> Callable[[np.ndarray], np.ndarray]:
        # products with the Hessian's matrix are not evaluations: not counted
        return self._objective._products(self.x) or self.matrix.__matmul__

    @cached
    def matrix(self) -> np.ndarray | scipy.sparse.csc_matrix:
        """The Hessian as its source gives it, dense or sparse (symmetric)."""
        return self._objective._matrix(self.x)

    @cached
    def sparse_hessian(self) -> scipy.sparse.csc_matrix | None:
        return self._objective._as_sparse(self.matrix)

    @cached
    def sparse_matrix(self) -> scipy.sparse.csc_matrix | None:
        """The Hessian as a CSC matrix whenever its source gives one sparse at no extra cost
        (:meth:`Objective.gives_sparse`), whatever its size and density (for a preconditioner);
        None otherwise."""
        if not self._objective.gives_sparse(self.x):
            return None
        matrix = self.matrix
        return matrix if scipy.sparse.issparse(matrix) else None

    @cached
    def hessian(self) -> np.ndarray:
        matrix = self.matrix
        return matrix.toarray() if scipy.sparse.issparse(matrix) else matrix

    def release(self) -> None:
        """Let go of the Hessian products and dense Hessian built here (asked again, they are
        built again): a step done with them (a line search, once it has its direction) then does
        not hold the iterate's recording while trial points get theirs."""
        for name in ("matvec", "matrix", "sparse_hessian", "sparse_matrix", "hessian"):
            self.__dict__.pop(name, None)
