"""Bound constraints ``lower <= x <= upper``: the box, and the steps of the bounded methods.

Everything here works on plain arrays and on the Hessian as products ``matvec(v)`` at the current
iterate, so it plugs into any step that has a gradient ``g``, a product and a radius.

- :class:`Box` is the feasible set (a :class:`~optimizers.feasible.FeasibleSet`: x0 clipped into
  it, the projected gradient as the first-order test, the free variables as the space of the
  second-order check (:class:`FreeVariables`), ``active`` and ``active_mask``), with projection,
  the free and binding variables and the breakpoints of projected paths. Every point it produces
  lies in the box, and a variable that reaches a bound lands on it exactly, so "at a bound" needs
  no tolerance anywhere.
- :class:`BoxTrustRegion` is the step of a bound-constrained trust-region Newton method (TRON;
  Lin & Moré 1999): a Cauchy point by a projected search along the projected gradient path
  (:func:`cauchy_point`), then Steihaug's conjugate gradients on the variables free at that
  point, each minor iterate followed by a projected search along its direction, which adds the
  bounds it meets to the active set.
- :func:`projected_newton_direction` and :func:`projected_armijo` are Bertsekas' projected Newton
  method (1982): a Newton step on the variables that are not binding, a gradient step on those
  that are, and an Armijo search along the projection arc ``P(x + alpha d)``.

References
----------
- C.-J. Lin and J. J. Moré, Newton's method for large bound-constrained optimization problems,
  SIAM J. Optim. 9 (1999) 1100-1127 (TRON).
- J. J. Moré and G. Toraldo, Algorithms for bound constrained quadratic programming problems,
  Numer. Math. 55 (1989) 377-400 (projected searches, the generalized Cauchy point).
- P. H. Calamai and J. J. Moré, Projected gradient methods for linearly constrained problems,
  Math. Programming 39 (1987) 93-116 (the projected gradient and its stationarity test).
- D. P. Bertsekas, Projected Newton methods for optimization problems with simple constraints,
  SIAM J. Control Optim. 20 (1982) 221-246.
- T. Steihaug, The conjugate gradient method and trust regions in large scale optimization,
  SIAM J. Numer. Anal. 20 (1983) 626-637.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse

from .feasible import CurvatureSpace, FeasibleSet
from .krylov import forcing_term, norm, steihaug_maxiter
from .linesearch import LineSearchResult
from .subproblems import SteihaugCG

# Sufficient decrease of a projected search on the model, q(s) <= MU0 * g^T s (Lin & Moré's mu_0,
# Moré & Toraldo's mu; TRON uses 0.01).
SUFFICIENT_DECREASE = 0.01
# The Cauchy search's factors: shrink alpha by 10 until the step is acceptable, or grow it by 10
# while it stays acceptable (TRON's interpolation and extrapolation factors).
CAUCHY_SHRINK, CAUCHY_GROW = 0.1, 10.0
# A projected search along a CG direction halves its step (TRON).
SEARCH_SHRINK = 0.5
# Searches give up after this many trials: from a descent direction the Cauchy search succeeds
# after about log10(alpha ||g|| / ||s*||) shrinks, and growing alpha stops at the radius.
MAX_SEARCH_TRIALS = 60
# Bertsekas' epsilon: variables within min(BINDING_EPSILON, ||x - P(x - g)||_inf) of a bound
# that the gradient pushes against are binding.
BINDING_EPSILON = 1e-3


class Box(FeasibleSet):
    """The box ``lower <= x <= upper`` over n variables; infinite entries mean no bound, and
    ``lower == upper`` fixes a variable. As a :class:`~optimizers.feasible.FeasibleSet`: x0 is
    clipped into it, the gradient test is on the projected gradient ``pg``, the second-order check
    looks at the free variables, the history gets the column ``active`` (the bounds x is on) and
    the result ``active_mask``; the bounded steps (TRON, projected Newton) are not preconditioned.

    Parameters
    ----------
    lower, upper : array_like
        1-D arrays of one length.

    Raises
    ------
    ValueError
        For NaN, a lower bound of +inf or an upper bound of -inf, ``lower > upper``, or shapes
        that do not match; the message names the first offending index.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.bounds import Box
    >>> box = Box([0.0, -np.inf, 1.0], [1.0, 2.0, 1.0])
    >>> box.project(np.array([-0.5, 3.0, 7.0]))
    array([0., 2., 1.])
    >>> x = np.array([0.0, 0.5, 1.0])
    >>> box.active_mask(x), box.free(x)
    (array([-1,  0, -1]), array([False,  True, False]))
    >>> box.projected_gradient(x, np.array([2.0, 3.0, -4.0]))
    array([0., 3., 0.])
    """

    gradient_name = "pg"
    test_name = "the projected gradient test"
    preconditioned = False

    def __init__(self, lower, upper):
        lower = np.asarray(lower, dtype=float)
        upper = np.asarray(upper, dtype=float)
        if lower.ndim != 1 or lower.shape != upper.shape:
            raise ValueError(f"the bounds must be two 1-D arrays of one length, got shapes "
                             f"{lower.shape} and {upper.shape}")
        _refuse(np.isnan(lower) | np.isnan(upper), "a bound is NaN", lower, upper)
        _refuse(lower == np.inf, "a lower bound is +inf (no x satisfies it)", lower, upper)
        _refuse(upper == -np.inf, "an upper bound is -inf (no x satisfies it)", lower, upper)
        _refuse(lower > upper, "the lower bound exceeds the upper bound", lower, upper)
        self.lower, self.upper = lower.copy(), upper.copy()
        self.lower.flags.writeable = self.upper.flags.writeable = False

    @property
    def n(self) -> int:
        return self.lower.size

    def __repr__(self) -> str:
        bounded = int(np.sum(np.isfinite(self.lower) | np.isfinite(self.upper)))
        return f"Box(n={self.n}, bounded={bounded}, fixed={int(np.sum(self.lower == self.upper))})"

    def contains(self, x: np.ndarray) -> bool:
        return bool(np.all((self.lower <= x) & (x <= self.upper)))

    def start(self, x0: np.ndarray) -> tuple[np.ndarray, str | None]:
        """x0 projected into the box, as L-BFGS-B does, so that f is never evaluated outside it,
        and a note saying how many entries moved (None if none did).

        Raises
        ------
        ValueError
            If x0 has another number of entries than the box.

        Examples
        --------
        >>> import numpy as np
        >>> from optimizers.bounds import Box
        >>> x, note = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]).start(np.array([0.5, -2.0, 3.0]))
        >>> x
        array([0.5, 0. , 1. ])
        >>> note
        'x0 lay outside the bounds in 2 of 3 entries (the first at flat index 1) and was clipped into the box'
        """
        if self.n != x0.size:
            raise ValueError(f"the bounds are over {self.n} variables, but x0 has {x0.size}")
        clipped = self.project(x0)
        moved = np.flatnonzero(clipped != x0)
        if not moved.size:
            return clipped, None
        return clipped, (f"x0 lay outside the bounds in {moved.size} of {x0.size} entries (the first "
                         f"at flat index {moved[0]}) and was clipped into the box")

    def stationarity(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.projected_gradient(x, g)

    def curvature_space(self, point: CurvatureSpace) -> FreeVariables | None:
        """The free variables of ``point``; None when none is free (nothing to check)."""
        free = self.free(point.x)
        return FreeVariables(point, free) if free.any() else None

    def lift(self, space: FreeVariables, direction: np.ndarray) -> np.ndarray:
        full = np.zeros(space.free.size)
        full[space.free] = direction
        return full

    def history(self, x: np.ndarray) -> dict:
        return {"active": int(np.count_nonzero(self.active_mask(x)))}

    def result_fields(self, x: np.ndarray) -> dict:
        return {"active_mask": self.active_mask(x)}

    def project(self, x: np.ndarray) -> np.ndarray:
        """The nearest point of the box: x clipped componentwise."""
        return np.minimum(np.maximum(x, self.lower), self.upper)

    def active_mask(self, x: np.ndarray) -> np.ndarray:
        """scipy ``least_squares``' convention: -1 where x is at its lower bound (fixed
        variables too), +1 at its upper bound, 0 elsewhere."""
        return np.where(x <= self.lower, -1, np.where(x >= self.upper, 1, 0))

    def free(self, x: np.ndarray) -> np.ndarray:
        """The variables strictly inside their bounds (boolean mask)."""
        return (self.lower < x) & (x < self.upper)

    def binding(self, x: np.ndarray, g: np.ndarray, epsilon: float = 0.0) -> np.ndarray:
        """The variables within ``epsilon`` of a bound that the gradient pushes against
        (``g > 0`` at a lower bound, ``g < 0`` at an upper one); fixed variables always."""
        return (((x <= self.lower + epsilon) & (g > 0)) | ((x >= self.upper - epsilon) & (g < 0))
                | (self.lower == self.upper))

    def projected_gradient(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The projected gradient (Calamai & Moré 1987): g on free variables, ``min(g, 0)`` at a
        lower bound, ``max(g, 0)`` at an upper one (0 for fixed variables). It is zero exactly at
        the first-order points of the bound-constrained problem, and its size is what the
        stopping test measures."""
        pg = np.where(x <= self.lower, np.minimum(g, 0.0), g)
        return np.where(x >= self.upper, np.maximum(pg, 0.0), pg)

    def breakpoints(self, x: np.ndarray, d: np.ndarray) -> np.ndarray:
        """For each variable, the t >= 0 at which ``x + t d`` meets its bound (inf if never)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(d > 0, (self.upper - x) / d, np.where(d < 0, (self.lower - x) / d, np.inf))
        return np.where(np.isnan(t), np.inf, np.maximum(t, 0.0))

    def path(self, x: np.ndarray, d: np.ndarray, t: float,
             breaks: np.ndarray | None = None) -> np.ndarray:
        """The projected path ``P(x + t d)``, with each variable whose breakpoint is at most t
        exactly on its bound (rounding in ``x + t d`` would leave it an ulp inside). ``breaks``:
        ``breakpoints(x, d)``, when the caller has them."""
        point = self.project(x + t * d)
        hit = (self.breakpoints(x, d) if breaks is None else breaks) <= t
        return np.where(hit & (d > 0), self.upper, np.where(hit & (d < 0), self.lower, point))


def _refuse(bad: np.ndarray, what: str, lower: np.ndarray, upper: np.ndarray) -> None:
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"bounds: {what} at index {i} (lower={lower[i]!r}, upper={upper[i]!r}; "
                         f"{int(np.sum(bad))} such entries)")


def restrict(matvec: Callable[[np.ndarray], np.ndarray],
             mask: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The product of the reduced Hessian ``H[mask][:, mask]`` with a vector over the masked
    variables: one full product per call.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.bounds import restrict
    >>> H = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    >>> restrict(H.__matmul__, np.array([True, False, True]))(np.array([1.0, 1.0]))
    array([2., 4.])
    """
    n = mask.size

    def product(v: np.ndarray) -> np.ndarray:
        full = np.zeros(n)
        full[mask] = v
        return matvec(full)[mask]
    return product


class FreeVariables:
    """An iterate seen on its free variables only (those strictly inside their bounds): ``x``,
    the products of the reduced Hessian and, on demand, the reduced dense or sparse Hessian; what
    the second-order check at a bounded first-order point probes."""

    def __init__(self, point: CurvatureSpace, free: np.ndarray):
        self.x, self.free = point.x[free], free
        self._point = point
        self.matvec = restrict(point.matvec, free)

    @cached_property
    def sparse_hessian(self) -> scipy.sparse.csc_matrix | None:
        return reduced(self._point.sparse_hessian, self.free)

    @cached_property
    def hessian(self) -> np.ndarray:
        return self._point.hessian[np.ix_(self.free, self.free)]


def reduced(sparse: scipy.sparse.csc_matrix | None, free: np.ndarray) -> scipy.sparse.csc_matrix | None:
    """The rows and columns ``free`` of a sparse Hessian (None stays None)."""
    if sparse is None:
        return None
    index = np.flatnonzero(free)
    return sparse[index][:, index].tocsc()


# --- TRON: the Cauchy point, the subspace steps, the projected searches ---------------------

class CauchyPoint(NamedTuple):
    """The result of :func:`cauchy_point`: the point ``x`` = P(x_k - alpha g), the step ``s`` from
    x_k, its model value ``q = g^T s + s^T H s / 2``, the product ``Hs`` and ``alpha``."""
    x: np.ndarray
    s: np.ndarray
    q: float
    Hs: np.ndarray
    alpha: float


def cauchy_point(x: np.ndarray, g: np.ndarray, matvec: Callable, box: Box, radius: float,
                 alpha: float = 1.0) -> CauchyPoint:
    """A generalized Cauchy point on the projected gradient path ``P(x - alpha g)`` by a
    projected search (Moré & Toraldo 1989; Lin & Moré 1999, §4).

    ``alpha`` is acceptable when its step ``s`` satisfies the sufficient decrease condition
    ``q(s) <= mu0 g^T s`` and ``||s|| <= radius``. From the given ``alpha`` (the previous
    iteration's, as in TRON) the search shrinks alpha by 10 until it is acceptable, or, if it is
    acceptable at once, grows it by 10 while it stays acceptable and the path still moves. Each
    trial costs one product. A zero projected gradient (no descent along the path) gives s = 0
    with no product; a product that is not finite ends the search with that trial (q is NaN).

    Examples
    --------
    On ``q(s) = g^T s + ||s||^2 / 2`` with g = (1, -2) over x >= 0 from x = 0, the path moves
    only the second variable; the exact minimizer along it is at alpha = 1:

    >>> import numpy as np
    >>> from optimizers.bounds import Box, cauchy_point
    >>> box = Box([0.0, 0.0], [np.inf, np.inf])
    >>> c = cauchy_point(np.zeros(2), np.array([1.0, -2.0]), lambda v: v, box, radius=10.0)
    >>> c.x, c.q, c.alpha
    (array([0., 2.]), -2.0, 1.0)
    """
    d = -g
    breaks = box.breakpoints(x, d)
    moving = (breaks > 0) & (d != 0)
    zero = CauchyPoint(x, np.zeros_like(x), 0.0, np.zeros_like(x), alpha)
    if not np.any(moving):
        return zero

    def trial(a: float) -> CauchyPoint | None:
        """The point of alpha = a when acceptable or when its model value is not finite (H is
        not: the search cannot go on), else None."""
        point = box.path(x, d, a, breaks)
        s = point - x
        if not norm(s) <= radius:
            return None
        Hs = matvec(s)
        gs = float(g @ s)
        q = gs + 0.5 * float(s @ Hs)
        return CauchyPoint(point, s, q, Hs, a) if not q > SUFFICIENT_DECREASE * gs else None

    best = trial(alpha)
    if best is None:
        for _ in range(MAX_SEARCH_TRIALS):
            alpha *= CAUCHY_SHRINK
            best = trial(alpha)
            if best is not None:
                return best
        return zero
    last_break = float(np.max(breaks[moving]))
    while np.isfinite(best.q) and best.alpha < last_break:   # beyond it the path stops
        grown = trial(best.alpha * CAUCHY_GROW)
        if grown is None or not np.isfinite(grown.q):
            break
        best = grown
    return best


class BoxSolution(NamedTuple):
    """A bounded trust-region step: the trial point ``x`` (in the box, bounds hit exactly), the
    step ``p = x - x_k``, the model decrease ``-q(p) >= 0``, whether a CG run stopped on the
    trust-region boundary, and the products it took."""
    x: np.ndarray
    p: np.ndarray
    decrease: float
    on_boundary: bool
    products: int


class BoxTrustRegion:
    """The trust-region step of TRON (Lin & Moré 1999) for ``min q(s) = g^T s + s^T H s / 2``
    over ``x + s`` in the box, H given by products.

    ``solve(radius)``: first the Cauchy point (:func:`cauchy_point`), within the radius; then,
    while variables are free at the current minor iterate x_j and the reduced gradient of q there
    exceeds the tolerance, Steihaug-CG on the free variables
    (:class:`~optimizers.subproblems.SteihaugCG` on the reduced Hessian, :func:`restrict`) gives
    a step w with ``||w|| <= radius``. If ``x_j + w`` lies in the box it is the trial point.
    Otherwise a projected search along ``P(x_j + beta w)`` (beta = 1, halved until q decreases
    sufficiently; once beta falls below the first breakpoint, the breakpoint itself, where q
    still decreases) gives the next minor iterate, with the bounds it met now active, and CG runs
    again on the variables still free, unless it had stopped on the trust-region boundary or on
    negative curvature. The CG tolerance is ``eta ||P_grad f(x_k)||`` with the forcing term eta
    (``rtol`` replaces it).

    As in TRON, each CG step is within the radius from its own minor iterate, so a step whose
    interior CG steps were cut by bounds may be longer than the radius (CG from the Cauchy point
    is not squeezed into what the Cauchy step left of the radius; on the minimal surface problem
    that halves the iterations); the outer loop's radius update uses the step's actual length.

    ``alpha`` starts the Cauchy search (pass the previous iterate's ``self.alpha``). ``escape``,
    a direction of negative curvature over the free variables (zero elsewhere), is followed to
    the region's boundary (either sign) and replaces the Cauchy point when its model value is
    lower (as it is where the projected gradient is about zero), so a saddle point of the
    bounded problem is left.

    Examples
    --------
    q(s) = -s_1 - s_2 + ||s||^2 over x_1 <= 0.25 from x = 0: the Cauchy point (0.25, 1) puts
    the first variable on its bound, and CG on the second finds the minimizer (0.25, 0.5).

    >>> import numpy as np
    >>> from optimizers.bounds import Box, BoxTrustRegion
    >>> box = Box([-np.inf, -np.inf], [0.25, np.inf])
    >>> step = BoxTrustRegion(np.zeros(2), np.array([-1.0, -1.0]), lambda v: 2.0 * v, box)
    >>> solution = step.solve(radius=10.0)
    >>> solution.x, solution.decrease, solution.on_boundary
    (array([0.25, 0.5 ]), 0.4375, False)
    """

    def __init__(self, x: np.ndarray, g: np.ndarray, matvec: Callable, box: Box, *,
                 alpha: float = 1.0, rtol: float | None = None, maxiter: int | None = None,
                 escape: np.ndarray | None = None):
        self.x, self.g, self.box, self.alpha, self.escape = x, g, box, alpha, escape
        self.products = 0

        def counted(v: np.ndarray) -> np.ndarray:
            self.products += 1
            return matvec(v)
        self.matvec = counted
        pgnorm = norm(box.projected_gradient(x, g))
        self.tol = (forcing_term(pgnorm) if rtol is None else rtol) * pgnorm
        self.maxiter = steihaug_maxiter(x.size) if maxiter is None else maxiter

    def solve(self, radius: float) -> BoxSolution:
        start = self.products
        cauchy = cauchy_point(self.x, self.g, self.matvec, self.box, radius, self.alpha)
        self.alpha = cauchy.alpha
        if self.escape is not None:
            along = self._along_curvature(radius)
            if along.q < cauchy.q:
                cauchy = along
        x_j, Hs, q = cauchy.x, cauchy.Hs, cauchy.q
        on_boundary = False
        while np.isfinite(q) and self.products - start < self.maxiter:
            free = self.box.free(x_j)
            grad_q = self.g + Hs
            r0 = grad_q[free]
            r0_norm = norm(r0)
            if not free.any() or not r0_norm > self.tol:
                break
            cg = SteihaugCG(r0, restrict(self.matvec, free), rtol=self.tol / r0_norm,
                            maxiter=self.maxiter - (self.products - start)).solve(radius)
            on_boundary = cg.on_boundary
            w = np.zeros_like(x_j)
            w[free] = cg.p
            breaks = self.box.breakpoints(x_j, w)
            first_break = float(np.min(breaks[free], initial=np.inf))
            if first_break >= 1.0:   # x_j + w lies in the box: the trial point
                x_j, q = self.box.path(x_j, w, 1.0, breaks), q - cg.decrease
                break
            x_j, H_step, q = self._projected_search(x_j, w, breaks, first_break, grad_q, q)
            Hs = Hs + H_step
            if on_boundary:
                break
        if not np.isfinite(q):
            nan = np.full_like(self.x, np.nan)
            return BoxSolution(nan, nan, np.nan, False, self.products - start)
        return BoxSolution(x_j, x_j - self.x, -q, on_boundary, self.products - start)

    def _projected_search(self, x_j, w, breaks, first_break: float, grad_q, q):
        """The next minor iterate on ``P(x_j + beta w)`` (TRON's projected search) when the full
        step leaves the box: its point, the product of H with the step from x_j, and the model
        value there."""
        beta = 1.0
        while True:
            if beta < first_break:
                # the ray up to the first breakpoint lies in the box and q decreases along it
                # (w is a CG descent direction): stop there, one more bound active
                beta = first_break
            point = self.box.path(x_j, w, beta, breaks)
            step = point - x_j
            H_step = self.matvec(step)
            slope = float(grad_q @ step)
            q_new = q + slope + 0.5 * float(step @ H_step)
            if not np.isfinite(q_new):
                return point, H_step, np.nan
            if q_new <= q + SUFFICIENT_DECREASE * slope or beta <= first_break:
                return point, H_step, q_new
            beta *= SEARCH_SHRINK

    def _along_curvature(self, radius: float) -> CauchyPoint:
        """``P(x +- radius u)``, the sign with the lower model value (two products); the zero
        step when neither lowers q."""
        best = CauchyPoint(self.x, np.zeros_like(self.x), 0.0, np.zeros_like(self.x), self.alpha)
        u = self.escape / norm(self.escape)
        for sign in (1.0, -1.0):
            point = self.box.path(self.x, sign * u, radius)
            s = point - self.x
            Hs = self.matvec(s)
            q = float(self.g @ s) + 0.5 * float(s @ Hs)
            if q < best.q:
                best = CauchyPoint(point, s, q, Hs, self.alpha)
        return best


# --- Bertsekas' projected Newton method ------------------------------------------------------

class ProjectedNewtonDirection(NamedTuple):
    """A projected Newton direction ``d`` and the binding set it treats by a gradient step."""
    d: np.ndarray
    binding: np.ndarray


def projected_newton_direction(x: np.ndarray, g: np.ndarray, box: Box,
                               solve: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                               epsilon: float = BINDING_EPSILON) -> ProjectedNewtonDirection:
    """Bertsekas' (1982) projected Newton direction.

    The binding set holds the variables within ``eps = min(epsilon, ||x - P(x - g)||_inf)`` of
    a bound that the gradient pushes against (shrinking eps with the projected step lets the
    set settle on the active bounds as x converges); there ``d = -g``, a gradient step the arc
    projects back onto the bound. On the other variables, the mask ``free``, d is the Newton
    step of the reduced Hessian, ``solve(free, g[free])`` (a truncated-CG solve of ``H_FF d_F =
    -g_F`` with the products of :func:`restrict`, or a dense solve with ``H[free][:, free]``);
    with no binding variable it is the unconstrained Newton step.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.bounds import Box, projected_newton_direction
    >>> H = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> exact = lambda free, g: -np.linalg.solve(H[np.ix_(free, free)], g)
    >>> box = Box([0.0, 0.0], [np.inf, np.inf])
    >>> direction = projected_newton_direction(np.array([0.0, 1.0]), np.array([1.0, -1.0]), box,
    ...                                        exact)
    >>> direction.d, direction.binding
    (array([-1. ,  0.5]), array([ True, False]))
    """
    epsilon = min(epsilon, float(np.max(np.abs(x - box.project(x - g)), initial=0.0)))
    binding = box.binding(x, g, epsilon)
    d = -g.copy()
    free = ~binding
    if free.any():
        d[free] = solve(free, g[free])
    return ProjectedNewtonDirection(d, binding)


def projected_armijo(fun: Callable, x: np.ndarray, f: float, g: np.ndarray,
                     direction: ProjectedNewtonDirection, box: Box, *, curvature: float = 0.0,
                     sigma: float = 1e-4, beta: float = 0.5,
                     maxiter: int = MAX_SEARCH_TRIALS) -> LineSearchResult:
    """Bertsekas' Armijo rule along the projection arc ``x(alpha) = P(x + alpha d)``.

    ``alpha = beta^m``, m = 0, 1, ..., is accepted once ``f(x) - f(x(alpha)) >= sigma (-alpha
    g_F^T d_F + g_B^T (x - x(alpha))_B)``, F the free and B the binding variables (Bertsekas
    1982, §3). Along a direction of negative ``curvature`` (``d^T H d / d^T d < 0``, at a saddle
    of the bounded problem, where the slope is about zero) the wanted decrease also has the
    second-order term ``-curvature ||s||^2 / 2`` of the step s = x(alpha) - x (Moré & Sorensen
    1979). f is only evaluated on the arc, so never outside the box; a NaN or infinite value
    counts as no decrease.

    Returns
    -------
    LineSearchResult
        ``step`` alpha, the point and its value; on failure ``step = 0`` and x itself, with
        ``nonfinite`` set when every trial value was NaN or infinite.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.bounds import Box, ProjectedNewtonDirection, projected_armijo
    >>> fun = lambda x: float((x[0] - 2.0) ** 2 + (x[1] + 1.0) ** 2)
    >>> box = Box([0.0, 0.0], [1.0, 1.0])
    >>> x = np.array([0.5, 0.5]); g = np.array([-3.0, 3.0])
    >>> direction = ProjectedNewtonDirection(np.array([1.5, -1.5]), np.array([False, False]))
    >>> search = projected_armijo(fun, x, fun(x), g, direction, box)
    >>> search.step, search.x, search.f
    (1.0, array([1., 0.]), 2.0)
    """
    d, binding = direction
    free = ~binding
    slope = float(g[free] @ d[free])
    alpha, nonfinite = 1.0, True
    for _ in range(maxiter):
        point = box.path(x, d, alpha)
        value = fun(point)
        s = point - x
        wanted = sigma * (-alpha * slope + float(g[binding] @ -s[binding])
                          - 0.5 * min(curvature, 0.0) * float(s @ s))
        if np.isfinite(value) and f - value >= wanted and s.any():
            return LineSearchResult(alpha, point, float(value), True, False)
        nonfinite = nonfinite and not np.isfinite(value)
        alpha *= beta
    return LineSearchResult(0.0, x, f, False, nonfinite)
