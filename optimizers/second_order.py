"""The interior point's second-order check at a KKT point, and its escape from a saddle point.

The KKT test is first order: a saddle point of the Lagrangian on the feasible set passes it
(Hock-Schittkowski 55 with the adaptive barrier update ends at one, as IPOPT's adaptive run does).
At a point that passed it, :func:`reduced_curvature` measures the Hessian of the Lagrangian on the
null space of the active constraints' Jacobian: the equalities ``C(w) = 0`` of the slack form
(:mod:`optimizers.equality_form`: every inequality is an equality with a bounded slack) and the
active bounds of w. A direction of negative curvature there is one along which the point is not a
minimum (the second-order necessary condition, J. Nocedal and S. J. Wright, Numerical
Optimization, 2nd ed., 2006, Theorem 12.5), which the method leaves as the unconstrained methods
leave a saddle (:func:`escape_step`), or reports as *not a minimum* (status 5) when it cannot.
The method also checks where its line search fails at a feasible point (the filter can hold the
iterates next to a saddle point before the KKT test passes), and escapes the same way.

Two choices make the check hold where the constraint qualification fails:

- the multipliers are the least-squares ones of ``grad f + A^T lambda = 0`` over the active rows
  A (the Jacobian and the active bounds), of minimum norm, not the solver's own: where LICQ fails
  (Hock-Schittkowski 13, whose minimum is a cusp) the solver's multipliers grow without bound and
  their curvature terms with them, so a true minimum would show false negative curvature;
- the null space and the least-squares solution come from one SVD of A with a rank tolerance of
  ``max(A.shape) eps sigma_max`` (numpy's ``matrix_rank``), so redundant equalities (HS 55's six of
  rank 5) leave a null space of the right dimension, where the KKT matrix's inertia cannot be read
  (its rounded singular pivots show any inertia).

A bound is active where its multiplier exceeds its slack (Tapia's indicator, as for
``active_mask``) or the slack is within ``sqrt(tol)`` of it (relative to ``max(1, |bound|)``): a
point whose KKT error is tol lies within ``O(sqrt(tol))`` of a (degenerate) KKT point, and counting
a weakly active bound as active only shrinks the space checked. Curvature counts as clearly
negative below ``-sqrt(tol) ||W||_max`` for the same reason: the reduced Hessian at the iterate is
that of the KKT point to about that. The check is dense (an SVD and an eigendecomposition), for
at most :data:`SECOND_ORDER_MAX_N` variables of w; the result says when it was skipped.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse

from .barrier import BoundTerms, norm_inf
from .krylov import EPS

# the largest w (variables and slacks) the dense check runs on
SECOND_ORDER_MAX_N = 300
# escapes from saddle points in one run before the run ends at the next one, not a minimum
ESCAPE_LIMIT = 5
# the escape's backtracking: halvings of the step, and the fraction of the distance to the
# nearest bound it may go (W&B's tau_min)
ESCAPE_HALVINGS = 40
ESCAPE_TAU = 0.99
# the escape's sufficient decrease: the Lagrangian falls by this fraction of the quadratic model's
# ``curvature alpha^2 / 2``
ESCAPE_DECREASE = 1e-4


class ReducedCurvature(NamedTuple):
    """The leftmost curvature of the Lagrangian's Hessian on the active constraints' null space:
    its unit ``direction`` in w (zero on the active bounds), the ``curvature``, the ``scale``
    ``||W||_max`` of the Hessian, and the least-squares multipliers ``y`` of C it was taken with."""
    direction: np.ndarray
    curvature: float
    scale: float
    y: np.ndarray

    def clearly_negative(self, tol: float) -> bool:
        """Whether the curvature is below ``-sqrt(tol) ||W||_max`` (see the module docstring)."""
        return bool(self.curvature < -np.sqrt(tol) * self.scale)


def _dense(matrix) -> np.ndarray:
    return matrix.toarray() if scipy.sparse.issparse(matrix) else np.asarray(matrix, dtype=float)


def active_bounds(terms: BoundTerms, w: np.ndarray, zl: np.ndarray, zu: np.ndarray, tol: float) -> np.ndarray:
    """The entries of w at an active bound: the multiplier above the slack (Tapia's indicator) or
    the slack within ``sqrt(tol) max(1, |bound|)``."""
    sl, su = terms.slacks(w)
    near = np.sqrt(tol)
    lower = (zl > sl) | (sl <= near * np.maximum(1.0, np.abs(terms.lower)))
    upper = (zu > su) | (su <= near * np.maximum(1.0, np.abs(terms.upper)))
    return np.unique(np.concatenate([terms.lower_index[lower], terms.upper_index[upper]]))


def reduced_curvature(problem, w: np.ndarray, gradient: np.ndarray, jacobian, active: np.ndarray
                      ) -> ReducedCurvature | None:
    """The leftmost curvature of the Hessian of ``f + y^T C`` (``problem.hessian(w, 1, y)``) on the
    null space of the rows of ``jacobian`` and of the ``active`` bounds, y the least-squares
    multipliers (see the module docstring); None when that space is {0} or the Hessian is not
    finite."""
    n, m = problem.n, problem.m
    rows = np.vstack([_dense(jacobian).reshape(m, n), np.eye(n)[active]])
    if rows.shape[0]:
        u, sigma, vt = np.linalg.svd(rows)
        rank = int(np.sum(sigma > max(rows.shape) * EPS * sigma[0])) if sigma.size else 0
        null = vt[rank:].T
        multipliers = -u[:, :rank] @ ((vt[:rank] @ gradient) / sigma[:rank])
        y = multipliers[:m]
    else:
        null, y = np.eye(n), np.zeros(0)
    if not null.shape[1]:
        return None
    hessian = _dense(problem.hessian(w, 1.0, y))
    if not np.all(np.isfinite(hessian)):
        return None
    values, vectors = np.linalg.eigh(null.T @ hessian @ null)
    direction = null @ vectors[:, 0]
    return ReducedCurvature(direction / np.linalg.norm(direction), float(values[0]),
                            float(np.max(np.abs(hessian))), y)


def _longest_step(terms: BoundTerms, w: np.ndarray, direction: np.ndarray) -> float:
    """The largest alpha keeping ``w + alpha direction`` within ``ESCAPE_TAU`` of the way to each
    bound (inf where the direction moves toward none)."""
    sl, su = terms.slacks(w)
    values = np.concatenate([sl, su])
    steps = np.concatenate([direction[terms.lower_index], -direction[terms.upper_index]])
    shrinking = steps < 0
    return float(np.min(-ESCAPE_TAU * values[shrinking] / steps[shrinking])) if np.any(shrinking) else np.inf


def escape_step(problem, terms: BoundTerms, w: np.ndarray, saddle: ReducedCurvature) -> np.ndarray | None:
    """A point strictly inside the bounds along ``+-saddle.direction`` where the Lagrangian ``f + y^T
    C`` (the check's multipliers) has fallen by at least :data:`ESCAPE_DECREASE` of the quadratic
    model's decrease: from a step of ``max(1, ||w||_inf)`` (cut to the bounds), halved until one
    sign gives it, the better sign taken; None when no step does. On the null space of linear
    equalities the step keeps them; nonlinear ones the next iterations restore (the filter, or the
    restoration phase)."""
    def lagrangian(v: np.ndarray) -> float:
        return problem.objective(v) + float(saddle.y @ problem.constraints(v)) if saddle.y.size else \
            problem.objective(v)
    base = lagrangian(w)
    limits = [_longest_step(terms, w, sign * saddle.direction) for sign in (1.0, -1.0)]
    alpha = max(1.0, norm_inf(w))
    for _ in range(ESCAPE_HALVINGS):
        trials = []
        for sign, limit in zip((1.0, -1.0), limits):
            step = min(alpha, limit)
            trial = w + sign * step * saddle.direction
            value = lagrangian(trial)
            if np.isfinite(value) and value - base <= ESCAPE_DECREASE * 0.5 * saddle.curvature * step ** 2:
                trials.append((value, trial))
        if trials:
            return min(trials, key=lambda pair: pair[0])[1]
        alpha /= 2.0
    return None
