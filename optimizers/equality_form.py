"""The problems the interior-point method solves, in one form: ``min f(w) s.t. C(w) = 0, lower <= w
<= upper``.

Every problem handed to the barrier method of :mod:`optimizers.interior_point` has this form (W&B
below: A. Wächter and L. T. Biegler, Math. Program. 106 (2006) 25-57, problem (1) with the bounds
of §3.4): n variables w with bounds (infinite where there is none, never equal), m equality
constraints, and the callables ``objective(w)``, ``gradient(w)``, ``constraints(w)`` (C),
``jacobian(w)`` (dense or ``scipy.sparse``, m x n) and ``hessian(w, obj_factor, y)``, the Hessian
of ``obj_factor f(w) + y^T C(w)``. Two problems take it:

- :class:`SlackForm`, a user's problem ``min f(x) s.t. c_l <= c(x) <= c_u, x_l <= x <= x_u``:
  ``w = (x, s)`` with a slack s for each inequality, ``C(w) = c(x) - b - S s`` (b the right-hand
  side of the equalities, S selecting the inequalities) and the slacks bounded by ``c_l`` and
  ``c_u`` (W&B eq. (26) and §3.4; IPOPT's ``d(x) - s = 0``), the objective ``s_f f`` with W&B
  §3.8's gradient-based scaling ``s_f = min(1, 100 / ||grad f(x_0)||_inf)`` (:meth:`SlackForm.scale`).
  The constraints are not scaled: §3.8 scales them the same way, but at the start point pushed
  inside the bounds their gradients can be unrepresentative (HS109: 7e4 there, 50 at the
  published start point, which lies outside the bounds and is where IPOPT measures them), and on
  the Hock-Schittkowski set constraint scaling changed no other result. Variables fixed by their
  bounds (``x_l == x_u``) are not among w: they keep their values (IPOPT's ``make_parameter``). The
  multipliers y of C give those of c in scipy's sign, ``v = y / s_f`` (``grad f + J^T v`` is the
  Lagrangian's gradient).
- :class:`RestorationForm`, the restoration problem of W&B §3.3 for a problem P and a reference
  point w_R: ``min rho sum(p + n) + zeta/2 ||D_R (w - w_R)||^2 s.t. C(w) - p + n = 0``, p, n >= 0,
  w within P's bounds, with ``rho = 1000``, ``zeta = sqrt(mu)`` and ``D_R = diag(min(1, 1/|w_R|))``
  (eq. (31)-(32)). mu is the barrier parameter of the method solving it, so the proximity term
  fades as that converges (:meth:`RestorationForm.barrier_changed`, as IPOPT does): the point it
  converges to is then a stationary point of the l1 violation itself, which is what a verdict of
  local infeasibility rests on.

A problem may define ``barrier_changed(mu)``: the barrier method calls it whenever mu changes
(and evaluates f and its gradient again).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse

from .barrier import push_inside
from .constraints import CanonicalConstraint, add_matrices
from .objective import Objective

# W&B §3.3 (IPOPT's resto_penalty_parameter)
RESTORATION_PENALTY = 1000.0
# W&B §3.8 (IPOPT's nlp_scaling_max_gradient, nlp_scaling_min_value)
SCALED_GRADIENT = 100.0
MIN_SCALE = 1e-8


class SlackForm:
    """A constrained problem ``min f(x) s.t. lower <= c(x) <= upper, x_l <= x <= x_u`` with a slack
    for each inequality (see the module docstring).

    Parameters
    ----------
    objective : Objective
        f and its gradient (counted).
    constraint : CanonicalConstraint
        c with its bounds.
    x_lower, x_upper : ndarray
        The bounds of x (``x_lower == x_upper`` fixes a variable).
    lagrangian_hessian : callable
        ``lagrangian_hessian(x, obj_factor, v)``: the Hessian in x of ``obj_factor f(x) + v^T c(x)``.
    x_start : ndarray
        A point of the full x whose fixed entries give the fixed variables' values.
    dense : bool
        Give the Jacobian and the Hessian as dense arrays (for the dense KKT path: small problems
        spend their time in sparse matrices' constructors otherwise).

    Examples
    --------
    min x_0 + x_1 s.t. x_0 x_1 >= 1 and x_0 + x_1 = 3, x_1 fixed at 2:

    >>> import numpy as np
    >>> from optimizers.constraints import CanonicalConstraint
    >>> from optimizers.equality_form import SlackForm
    >>> from optimizers.objective import Objective
    >>> c = CanonicalConstraint(lambda x: np.array([x[0] * x[1], x[0] + x[1]]),
    ...                         lambda x: np.array([[x[1], x[0]], [1.0, 1.0]]), [1.0, 3.0], [np.inf, 3.0])
    >>> x = np.array([0.5, 2.0])
    >>> form = SlackForm(Objective(lambda x: x.sum(), x, lambda x: np.ones(2)), c,
    ...                  np.array([0.0, 2.0]), np.array([np.inf, 2.0]), None, x)
    >>> form.n, form.m, form.lower, form.upper       # w = (x_0, s)
    (2, 2, array([0., 1.]), array([inf, inf]))
    >>> w = np.array([0.5, 1.5])
    >>> form.constraints(w)                           # (x_0 x_1 - s, x_0 + x_1 - 3)
    array([-0.5, -0.5])
    >>> form.jacobian(w)
    array([[ 2., -1.],
           [ 1.,  0.]])
    """

    def __init__(self, objective: Objective, constraint: CanonicalConstraint, x_lower: np.ndarray,
                 x_upper: np.ndarray, lagrangian_hessian: Callable | None, x_start: np.ndarray, dense: bool = False):
        self._objective, self._constraint, self.dense = objective, constraint, dense
        self._hessian = lagrangian_hessian
        self.free = np.flatnonzero(x_lower < x_upper)
        self.inequality = np.flatnonzero(~constraint.equality)
        self.rhs = np.where(constraint.equality, constraint.lower, 0.0)
        self._template = np.array(x_start, dtype=float)
        self._template[x_lower == x_upper] = x_lower[x_lower == x_upper]
        self.n_x, self.m = self.free.size, constraint.m
        self.n = self.n_x + self.inequality.size
        k = self.inequality.size
        # the slacks' columns of the Jacobian, -S
        self._slack_jacobian = scipy.sparse.csr_matrix((np.full(k, -1.0), (self.inequality, np.arange(k))),
                                                       shape=(self.m, k))
        self._all_free = self.free.size == x_lower.size
        self.lower = np.concatenate([x_lower[self.free], constraint.lower[self.inequality]])
        self.upper = np.concatenate([x_upper[self.free], constraint.upper[self.inequality]])
        self.objective_scale = 1.0

    def scale(self, x: np.ndarray) -> None:
        """W&B §3.8's gradient-based scaling of f from its gradient at x (the start point, inside
        the bounds): ``s_f = min(1, 100 / ||grad f(x)||_inf)``, not below 1e-8."""
        size = float(np.max(np.abs(self._objective.grad(x)))) if x.size else 0.0
        self.objective_scale = float(np.clip(SCALED_GRADIENT / max(size, 1e-300), MIN_SCALE, 1.0))

    def start(self, x: np.ndarray) -> np.ndarray:
        """The w of x with each slack pushed strictly inside its bounds (W&B §3.6)."""
        values = self.values_of(x)[self.inequality]
        lower, upper = self.lower[self.n_x:], self.upper[self.n_x:]
        return np.concatenate([x[self.free], push_inside(values, lower, upper)])

    def multipliers(self, y: np.ndarray) -> np.ndarray:
        """The user's constraint multipliers (scipy's sign) of C's multipliers y."""
        return y / self.objective_scale

    def x(self, w: np.ndarray) -> np.ndarray:
        """The full x of w (the fixed variables at their values)."""
        if self._all_free:
            return w[:self.n_x].copy()
        x = self._template.copy()
        x[self.free] = w[:self.n_x]
        return x

    def slacks(self, w: np.ndarray) -> np.ndarray:
        """The inequalities' slacks in w."""
        return w[self.n_x:]

    def values_of(self, x: np.ndarray) -> np.ndarray:
        """c(x), the user's constraints."""
        return self._constraint.fun(x)

    def objective(self, w: np.ndarray) -> float:
        return self.objective_scale * self._objective.fun(self.x(w))

    def gradient(self, w: np.ndarray) -> np.ndarray:
        g = self._objective.grad(self.x(w))
        return np.concatenate([self.objective_scale * g[self.free], np.zeros(self.n - self.n_x)])

    def constraints(self, w: np.ndarray) -> np.ndarray:
        c = self.values_of(self.x(w)) - self.rhs
        c[self.inequality] -= self.slacks(w)
        return c

    def jacobian(self, w: np.ndarray):
        j = self._constraint.jac(self.x(w))
        if self.dense and scipy.sparse.issparse(j):
            j = j.toarray()
        if not self._all_free:
            j = j[:, self.free]
        if scipy.sparse.issparse(j):
            return scipy.sparse.hstack([j, self._slack_jacobian], format="csr")
        return np.hstack([j, self._slack_jacobian.toarray()])

    def hessian(self, w: np.ndarray, obj_factor: float, y: np.ndarray):
        h = self._hessian(self.x(w), obj_factor * self.objective_scale, y)
        if self.dense and scipy.sparse.issparse(h):
            h = h.toarray()
        if not self._all_free:
            h = h[self.free][:, self.free] if scipy.sparse.issparse(h) else h[np.ix_(self.free, self.free)]
        return _padded(h, self.n)


class RestorationForm:
    """The restoration problem of W&B §3.3 for ``problem`` from the reference point ``w_ref``
    (see the module docstring): variables ``(w, p, n)``.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.equality_form import RestorationForm
    >>> class Circle:      # x_0^2 + x_1^2 - 1 = 0, no bounds
    ...     n, m, lower, upper = 2, 1, np.full(2, -np.inf), np.full(2, np.inf)
    ...     def constraints(self, w): return np.array([w @ w - 1.0])
    ...     def jacobian(self, w): return 2 * w[None, :]
    ...     def hessian(self, w, obj_factor, y): return 2 * y[0] * np.eye(2)
    >>> resto = RestorationForm(Circle(), np.array([2.0, 0.5]), mu=0.01)      # zeta = 0.1
    >>> v = np.array([2.0, 0.5, 3.25, 0.0])            # w = w_ref, p = 3.25, n = 0
    >>> resto.constraints(v), resto.objective(v)
    (array([0.]), 3250.0)
    """

    def __init__(self, problem, w_ref: np.ndarray, mu: float, rho: float = RESTORATION_PENALTY):
        self.problem, self.w_ref, self.rho = problem, w_ref.copy(), rho
        self.zeta = float(np.sqrt(mu))
        self.n_w, self.m = problem.n, problem.m
        self.n = self.n_w + 2 * self.m
        self.weights = np.minimum(1.0, 1.0 / np.maximum(np.abs(w_ref), 1e-300)) ** 2   # D_R^2
        self.lower = np.concatenate([problem.lower, np.zeros(2 * self.m)])
        self.upper = np.concatenate([problem.upper, np.full(2 * self.m, np.inf)])

    def barrier_changed(self, mu: float) -> None:
        """The proximity weight follows the barrier parameter: ``zeta = sqrt(mu)``."""
        self.zeta = float(np.sqrt(mu))

    def split(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(w, p, n)`` of v."""
        return v[:self.n_w], v[self.n_w:self.n_w + self.m], v[self.n_w + self.m:]

    def objective(self, v: np.ndarray) -> float:
        w, p, n = self.split(v)
        d = w - self.w_ref
        return float(self.rho * (np.sum(p) + np.sum(n)) + 0.5 * self.zeta * np.sum(self.weights * d * d))

    def gradient(self, v: np.ndarray) -> np.ndarray:
        w = self.split(v)[0]
        return np.concatenate([self.zeta * self.weights * (w - self.w_ref), np.full(2 * self.m, self.rho)])

    def constraints(self, v: np.ndarray) -> np.ndarray:
        w, p, n = self.split(v)
        return self.problem.constraints(w) - p + n

    def jacobian(self, v: np.ndarray):
        j = self.problem.jacobian(self.split(v)[0])
        identity = scipy.sparse.identity(self.m, format="csr")
        if scipy.sparse.issparse(j):
            return scipy.sparse.hstack([j, -identity, identity], format="csr")
        return np.hstack([j, -np.eye(self.m), np.eye(self.m)])

    def hessian(self, v: np.ndarray, obj_factor: float, y: np.ndarray):
        w = self.split(v)[0]
        proximity = scipy.sparse.diags(obj_factor * self.zeta * self.weights)
        h = self.problem.hessian(w, 0.0, y)
        h = add_matrices([h, proximity], self.n_w) if scipy.sparse.issparse(h) else h + proximity.toarray()
        return _padded(h, self.n)


def _padded(h, n: int):
    """An k x k Hessian as the n x n one of more variables (zero rows and columns appended)."""
    k = h.shape[0]
    if k == n:
        return h
    if scipy.sparse.issparse(h):
        return scipy.sparse.block_diag([h, scipy.sparse.csc_matrix((n - k, n - k))], format="csc")
    padded = np.zeros((n, n))
    padded[:k, :k] = h
    return padded
