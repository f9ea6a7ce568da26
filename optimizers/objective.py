"""The objective wrapper and the result/reporting parts every method shares.

An :class:`Objective` wraps ``fun``/``jac``/``hess``/``hessp`` on plain arrays with evaluation
counters and a cache of the last point, so ``f`` and ``g`` at one ``x`` are never computed twice.
It also remembers the best finite point seen, so a run that fails still returns something useful.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Callable

import numpy as np
from scipy.optimize import OptimizeResult

from .history import History
from .krylov import CURVATURE_PROBE_STEPS, dense_leftmost_curvature, leftmost_curvature
from .stopping import GradientTest, gradient_norm


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
    CALLBACK_STOP = 99      # callback raised StopIteration (scipy's code)


MESSAGES = {
    Status.SUCCESS: "Optimization terminated successfully: the gradient test passed",
    Status.MAXITER: "Maximum number of iterations reached before the gradient test passed",
    Status.PRECISION_LOSS: "Desired accuracy not reached: no further progress at working "
                           "precision",
    Status.NONFINITE: "Objective, gradient or Hessian became non-finite and could not be "
                      "recovered; returning the best point found",
    Status.NOT_A_MINIMUM: "Stopped at a stationary point with negative curvature (saddle point or "
                          "maximum)",
    Status.CALLBACK_STOP: "`callback` raised `StopIteration`",
}
# A first-order point whose Hessian has NaN/inf entries: the gradient test passed, but whether it
# is a minimum cannot be checked, so it is not reported as one.
NONFINITE_HESSIAN_AT_STATIONARY_POINT = (
    "The gradient test passed, but the Hessian is not finite there: the second-order check is "
    "impossible, so the point is not reported as a minimum")


def with_gradient_norm(message: str, x: np.ndarray, f: float, g: np.ndarray,
                       test: GradientTest) -> str:
    """``message`` ended with the final gradient norm and the test it was held to, as in
    "... (||g||_inf = 3.2e-04; test: max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-08, here
    3.2e-04)."."""
    return (f"{message.rstrip('.')} (||g||_inf = {gradient_norm(g):.1e}; "
            f"test: {test.describe(x, f, g)}).")


class Objective:
    """Counted, cached access to f, its gradient and its Hessian at one point at a time.

    ``jac=True`` means ``fun`` returns ``(f, g)``, as in scipy. ``hess`` returns a dense matrix,
    ``hessp(x, p)`` a Hessian-vector product; either can stand in for the other.

    Raises
    ------
    TypeError
        If fun is not callable, or jac neither callable nor True.
    ValueError
        If x0 is not a finite 1-D array, or f(x0) is not finite.

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
                 hessp: Callable | None = None):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if jac is not True and not callable(jac):
            raise TypeError("jac must be a callable or True (fun returns (f, g)); "
                            "these methods need the gradient")
        x0 = np.asarray(x0, dtype=float)
        if x0.ndim != 1:
            raise ValueError(f"x0 must be a 1-D array, got shape {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 contains NaN or inf")
        self._fun, self._jac, self._hess, self._hessp = fun, jac, hess, hessp
        self.nfev = self.njev = self.nhev = 0
        self._fx = self._gx = self._hx = None
        self._f = self._g = self._h = None
        self.best_x, self.best_f = x0.copy(), np.inf
        self.x0 = x0
        f0 = self.fun(x0)
        if not np.isfinite(f0):
            raise ValueError(f"objective is not finite at x0 (f(x0) = {f0})")

    def counts(self) -> dict:
        """The evaluations so far."""
        return {"nfev": self.nfev, "njev": self.njev, "nhev": self.nhev}

    @property
    def has_hessian(self) -> bool:
        """Whether ``hess`` or ``hessp`` was given."""
        return self._hess is not None or self._hessp is not None

    def fun(self, x: np.ndarray) -> float:
        """f(x), computed (and counted) only when x is not the last point asked."""
        if self._fx is not None and np.array_equal(x, self._fx):
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
        if self._gx is not None and np.array_equal(x, self._gx):
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

    def hess(self, x: np.ndarray) -> np.ndarray:
        """Dense Hessian at x (from ``hess``, or column by column from ``hessp``)."""
        if self._hx is not None and np.array_equal(x, self._hx):
            return self._h
        if self._hess is not None:
            self.nhev += 1
            h = self._hess(x)
            h = h.toarray() if hasattr(h, "toarray") else np.asarray(h, dtype=float)
        elif self._hessp is not None:
            h = np.column_stack([self.hessp(x, e) for e in np.eye(x.size)])
        else:
            raise ValueError("this method needs second derivatives: pass hess or hessp")
        self._hx, self._h = x.copy(), 0.5 * (h + h.T)
        return self._h

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Hessian-vector product H(x) p (from ``hessp``, or from the dense ``hess``)."""
        if self._hessp is not None:
            self.nhev += 1
            return np.asarray(self._hessp(x, p), dtype=float).reshape(-1)
        return self.hess(x) @ p

    def curvature_probe(self, dense: bool) -> Callable:
        """The second-order check's estimate of the leftmost curvature of H(x), ``x -> (theta, u,
        scale)``: from the dense Hessian's eigendecomposition (``dense``), or from
        ``CURVATURE_PROBE_STEPS`` Lanczos steps with Hessian-vector products."""
        if dense:
            return lambda x: dense_leftmost_curvature(self.hess(x))
        return lambda x: leftmost_curvature(lambda v: self.hessp(x, v), x.size,
                                            CURVATURE_PROBE_STEPS)


def final_point(objective: Objective, x: np.ndarray, f: float, g: np.ndarray,
                status: Status) -> tuple[np.ndarray, float, np.ndarray]:
    """``(x, f, g)`` to report: the last iterate, or the best point seen when the run failed and
    that is better (and finite, with a finite gradient, which is then evaluated)."""
    if status != Status.SUCCESS and objective.best_f < f:
        best_g = objective.grad(objective.best_x)
        if np.all(np.isfinite(best_g)):
            return objective.best_x, objective.best_f, best_g
    return x, f, g


def make_result(objective: Objective, x: np.ndarray, f: float, g: np.ndarray, status: Status,
                nit: int, history: History, test: GradientTest,
                message: str | None = None) -> OptimizeResult:
    """The OptimizeResult of a minimization stopped at ``x`` (see :func:`final_point`), with the
    status's message (or ``message``, when it says more) ended by the final gradient norm and the
    gradient ``test`` of the run."""
    x, f, g = final_point(objective, x, f, g, status)
    return OptimizeResult(x=x, fun=f, jac=g, nit=nit, nfev=objective.nfev, njev=objective.njev,
                          nhev=objective.nhev, status=status, success=status == Status.SUCCESS,
                          message=with_gradient_norm(message or MESSAGES[status], x, f, g, test),
                          history=history)


class Monitor:
    """Per-iteration bookkeeping: the history (with the evaluation ``counts()`` so far at each
    record, and the iterates unless ``keep_iterates`` is False), the optional iteration table and
    the user callback."""

    def __init__(self, counts: Callable[[], dict], callback: Callable | None = None,
                 disp: bool = False, keep_iterates: bool = True):
        self.counts, self.callback, self.disp = counts, callback, disp
        self.history = History(keep_iterates)

    def record(self, nit: int, x: np.ndarray, f: float, g: np.ndarray, **extra) -> bool:
        """Log one iteration; returns True when the callback asks the run to stop."""
        entry = {"nit": nit, "f": f, "gnorm": gradient_norm(g), **extra}
        self.history.append(entry, self.counts(), x)
        if self.disp:
            if nit == 0:
                print(" ".join(f"{k:>12}" for k in entry))
            print(" ".join(f"{v:>12.5g}" if isinstance(v, float) else f"{v:>12}"
                           for v in entry.values()))
        if self.callback is None:
            return False
        try:
            self.callback(OptimizeResult(x=x.copy(), fun=f, jac=g.copy(), nit=nit))
        except StopIteration:
            return True
        return False
