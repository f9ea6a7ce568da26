"""An independent check of a claimed constrained minimum, for the benchmark's classification.

A solver that reports success at x is believed only as far as this check goes, computed from the
problem alone (none of the solver's multipliers, scaling or tolerances):

1. feasibility: the problem's scaled violation (``Problem.violation``) at most ``TOL``;
2. first order: the multipliers of the active constraints and bounds (within ``ACTIVE`` of their
   bound, relative to ``max(1, |bound|)``) by a sign-constrained least-squares fit of
   ``grad f + A^T lambda = 0`` (``scipy.optimize.lsq_linear``; ``lambda`` free on equalities,
   of the sign that makes the Lagrangian ``f + lambda^T c`` stationary on the active side of an
   inequality), and the KKT residual ``||grad f + A^T lambda||_inf / max(1, ||grad f||_inf)``
   at most ``KKT_TOL``;
3. second order (Nocedal & Wright, Numerical Optimization, 2nd ed., Theorems 12.5 and 12.6): the
   Hessian of the Lagrangian reduced to the null space of the active constraints' gradients. A
   negative eigenvalue there is a direction of negative curvature in the critical cone: not a
   local minimum. Positive definite on the null space of the strongly active ones alone (those
   with a multiplier above ``STRONG``): a strict local minimum (the sufficient condition).
   Between the two (weakly active constraints), the test says nothing;
4. a local re-solve: SLSQP (finite-difference derivatives: independent of autodiff) from x and
   from seeded perturbations of it, in the box of radius ``RADIUS (1 + |x_j|)`` around x; a
   feasible point (check 1) below ``f(x) - TOL (1 + |f(x)|)`` there means x is not a local
   minimum.

A success that passes 1, 2 and 4 and is not refuted by 3 is a *local minimum*; if its value is
above the published f*, the benchmark counts it apart from false successes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

import autodiff as ad
from hessopt import problems

TOL = 1e-6          # the benchmark's feasibility and value tolerance
ACTIVE = 1e-6       # a constraint or bound this close to its bound (scaled) is active
KKT_TOL = 1e-5      # the scaled stationarity residual a KKT point must reach
STRONG = 1e-6       # a multiplier above this (relative to max(1, ||lambda||_inf)) is strongly active
CURVATURE_TOL = 1e-6  # eigenvalues of the reduced Hessian above -this (relative to max(1, ||H||)) count as >= 0
RADIUS = 1e-2       # the re-solve's box, relative to 1 + |x_j|
PERTURBATIONS = 2   # seeded starts besides x itself


@dataclass
class LocalCheck:
    """The check's measurements at x, and its verdict (``local_minimum``) with the reason it failed."""

    violation: float
    kkt_residual: float
    min_curvature: float    # smallest eigenvalue of the reduced Hessian (all active constraints); inf at a vertex
    strict: bool            # the second-order sufficient condition holds
    better_nearby: float    # the lowest feasible f the re-solve found (nan: none below f(x))
    reason: str = ""

    @property
    def local_minimum(self) -> bool:
        return not self.reason


def _active_rows(problem: problems.Problem, x: np.ndarray, c: np.ndarray, jacobian: np.ndarray):
    """The active constraints' and bounds' gradients as rows, with the bounds of their multipliers."""
    rows, lower, upper, constraint_index = [], [], [], []
    for i in range(c.size):
        lo, hi = problem.constraint_lower[i], problem.constraint_upper[i]
        near_lo = np.isfinite(lo) and abs(c[i] - lo) <= ACTIVE * max(1.0, abs(lo))
        near_hi = np.isfinite(hi) and abs(c[i] - hi) <= ACTIVE * max(1.0, abs(hi))
        if near_lo or near_hi:     # lambda <= 0 on a lower bound, >= 0 on an upper one, free on an equality
            rows.append(jacobian[i])
            lower.append(-np.inf if near_lo else 0.0)
            upper.append(np.inf if near_hi else 0.0)
            constraint_index.append(i)
    for bound, sign in ((problem.lower, -1.0), (problem.upper, 1.0)):
        if bound is None:
            continue
        for j in np.flatnonzero(np.isfinite(bound) & (np.abs(x - bound) <= ACTIVE * np.maximum(1.0, np.abs(bound)))):
            rows.append(np.eye(x.size)[j])
            lower.append(-np.inf if sign < 0 else 0.0)
            upper.append(0.0 if sign < 0 else np.inf)
            constraint_index.append(-1)
    if not rows:
        return np.zeros((0, x.size)), np.zeros(0), np.zeros(0), np.zeros(0, dtype=int)
    return np.array(rows), np.array(lower), np.array(upper), np.array(constraint_index)


def _multipliers(A: np.ndarray, g: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, float]:
    """Sign-constrained least-squares multipliers of ``g + A^T lambda = 0`` and the scaled residual."""
    if not A.shape[0]:
        return np.zeros(0), float(np.max(np.abs(g), initial=0.0) / max(1.0, np.max(np.abs(g), initial=0.0)))
    fit = scipy.optimize.lsq_linear(A.T, -g, bounds=(lower, upper), method="bvls", tol=1e-14)
    residual = g + A.T @ fit.x
    return fit.x, float(np.max(np.abs(residual)) / max(1.0, np.max(np.abs(g))))


def _reduced_min_eigenvalue(H: np.ndarray, A: np.ndarray) -> float:
    """The smallest eigenvalue of H on the null space of A's rows, relative to max(1, ||H||); inf if it is {0}."""
    Z = scipy.linalg.null_space(A) if A.shape[0] else np.eye(H.shape[0])
    if not Z.shape[1]:
        return np.inf
    return float(np.linalg.eigvalsh(Z.T @ H @ Z)[0] / max(1.0, np.max(np.abs(H))))


def _better_nearby(problem: problems.Problem, x: np.ndarray, f: float) -> float:
    """The lowest feasible f below ``f - TOL (1 + |f|)`` that SLSQP finds near x (nan if none)."""
    radius = RADIUS * (1.0 + np.abs(x))
    lo, hi = np.maximum(x - radius, problem.lower), np.minimum(x + radius, problem.upper)
    rng = np.random.default_rng(0)
    starts = [x] + [np.clip(x + 0.5 * radius * rng.uniform(-1, 1, x.size), lo, hi) for _ in range(PERTURBATIONS)]
    best = np.nan
    for start in starts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result = scipy.optimize.minimize(problem.fun, start, method="SLSQP", bounds=list(zip(lo, hi)),
                                                 constraints=problem.constraints, options={"maxiter": 200})
            except (ValueError, FloatingPointError):
                continue
        value = float(problem.fun(result.x))
        if (problem.violation(result.x) <= TOL and value < f - TOL * (1.0 + abs(f))
                and not value >= best):
            best = value
    return best


def check(problem: problems.Problem, x) -> LocalCheck:
    """The independent check of the module docstring at x (clipped into the bounds)."""
    x = np.clip(np.asarray(x, dtype=np.float64), problem.lower, problem.upper)
    f, violation = float(problem.fun(x)), float(problem.violation(x))
    g = np.asarray(ad.grad(problem.fun)(x), dtype=np.float64)
    m = problem.n_constraints
    c = np.asarray(problem.constraint(x), dtype=np.float64) if m else np.zeros(0)
    jacobian = np.asarray(ad.jacobian(problem.constraint)(x), dtype=np.float64).reshape(m, x.size) if m \
        else np.zeros((0, x.size))
    A, lower, upper, index = _active_rows(problem, x, c, jacobian)
    lam, residual = _multipliers(A, g, lower, upper)
    weights = np.zeros(m)
    on_c = index >= 0
    weights[index[on_c]] += lam[on_c]
    if m:
        H = np.asarray(ad.hessian(lambda z: problem.fun(z) + weights @ problem.constraint(z))(x), dtype=np.float64)
    else:
        H = np.asarray(ad.hessian(problem.fun)(x), dtype=np.float64)
    H = H.reshape(x.size, x.size)
    strong = np.abs(lam) > STRONG * max(1.0, np.max(np.abs(lam), initial=0.0))
    strong |= np.isinf(lower) & np.isinf(upper)        # equalities
    min_curvature = _reduced_min_eigenvalue(H, A)
    strict = _reduced_min_eigenvalue(H, A[strong]) > CURVATURE_TOL
    reason = ""
    if not np.isfinite(f) or violation > TOL:
        reason = f"infeasible (violation {violation:.1e})"
    elif residual > KKT_TOL:
        reason = f"not a KKT point (residual {residual:.1e} with least-squares multipliers)"
    elif min_curvature < -CURVATURE_TOL:
        reason = f"negative curvature {min_curvature:.1e} on the active constraints' null space"
    better = np.nan if reason else _better_nearby(problem, x, f)
    if np.isfinite(better):
        reason = f"a feasible point nearby has f = {better:.9g} < {f:.9g}"
    return LocalCheck(violation, residual, min_curvature, bool(strict), better, reason)
