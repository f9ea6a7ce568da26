"""How the interior-point method's barrier parameter mu moves: monotone or adaptive.

:class:`~optimizers.barrier_method.BarrierSolver` asks its update twice an iteration: ``prepare``
before the KKT matrix is factored, ``direction`` for the search direction from the factored
matrix (which does not depend on mu: only the right-hand side does, affinely).

- :class:`~optimizers.barrier_method.MonotoneUpdate` (the solver's default, defined with it; the
  restoration phase's; ``mu_strategy="monotone"`` of :func:`~optimizers.interior_point.minimize_ipm`) is
  the Fiacco-McCormick rule of A. Wächter and L. T. Biegler, Math. Program. 106 (2006) 25-57, §2.1
  (IPOPT's ``mu_strategy monotone``): mu stays until the barrier problem is solved to ``kappa_eps
  mu``, then falls by ``min(kappa_mu mu, mu^theta_mu)``.
- :class:`AdaptiveUpdate` (:func:`~optimizers.interior_point.minimize_ipm`'s default) is the
  adaptive rule of J. Nocedal, A. Wächter and R. A. Waltz,
  "Adaptive barrier update strategies for nonlinear interior methods", SIAM J. Optim. 19 (2009)
  1674-1693 (IPOPT's ``mu_strategy adaptive`` with its defaults): in *free mode* every iteration
  chooses mu afresh as ``sigma`` times the average complementarity, sigma minimizing a quality
  function of the step (§4: the linearized KKT residual after the fraction-to-the-boundary steps,
  dual, primal and complementarity parts; the affine and centering directions are two solves with
  one factorization, the step for any sigma their combination); the iterates must make progress
  on a filter of (f, ||C||) pairs (§5, IPOPT's ``obj-constr-filter`` globalization), and where
  one does not, the method falls back to *fixed mode*: the monotone rule from ``0.8`` times the
  average complementarity, until an iterate makes progress again.

On problems whose active set changes along a long arc (optimal control with a state constraint:
Bryson-Denham at n = 10^5), the monotone rule's superlinear decrease leaves the iterates far from
the central path of the new mu, and the fraction to the boundary then cuts every step short for
hundreds of iterations; the adaptive rule keeps mu near the complementarity the iterates have.
IPOPT's monotone rule does the same (at n = 10^4 its mu sequence is this one's, 0.1 to 2.5e-9 in
ten iterations; its fewer iterations after that come from relaxing the bounds by 1e-8, which
this method does not: f is never evaluated outside them).

The adaptive rule is the interior point's default, for three measurements
(``benchmarks/bench_constrained.py``, hessopt alone): on the 103 Hock-Schittkowski problems it
reaches f* on 97 with 0 false successes against the monotone rule's 94 (HS 44 and 57, where the
monotone rule ends at local minima, and HS 55); at n = 10^4 it solves the five scalable problems
in as many or fewer iterations (Bryson-Denham 45 against 76, the portfolio 13 against 20, the
same on the three without bounds, where the rules coincide; CPU time the same on the portfolio,
0.49 s against 0.60 on Bryson-Denham), and at n = 10^5 Bryson-Denham takes 58 iterations against
710. Before :mod:`optimizers.second_order`'s check it stopped at a saddle point
of HS 55 (f = 6.8058, as IPOPT's adaptive run does) and reported success there; the check now
leaves it along its negative curvature, to f* = 6.3333.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .barrier import norm_inf
from .barrier_method import BarrierSolver, Direction
from .kkt import Factored

# Nocedal, Wächter & Waltz (2009) with IPOPT's defaults
SIGMA_MIN, SIGMA_MAX = 1e-6, 1e2    # the quality function's search interval for sigma
SECTION_STEPS = 8                   # golden-section steps on log sigma
MONOTONE_FACTOR = 0.8               # fixed mode starts from 0.8 x the average complementarity
MU_MAX_FACTOR = 1e3                 # mu <= 1e3 x the first average complementarity
FILTER_MARGIN = 1e-5                # the progress filter's margin, times min(1, E_0)
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def average_complementarity(solver: BarrierSolver) -> float:
    """The average of ``slack * z`` over every bound (0 without bounds)."""
    sl, su = solver.terms.slacks(solver.w)
    count = sl.size + su.size
    return float(sl @ solver.zl + su @ solver.zu) / count if count else 0.0


class AdaptiveUpdate:
    """Nocedal, Wächter & Waltz's adaptive rule (see the module docstring). Without bounds there
    is no complementarity to follow, and the rule is the monotone one.

    Examples
    --------
    >>> from optimizers.barrier_update import AdaptiveUpdate
    >>> update = AdaptiveUpdate()
    >>> update.name, update.free
    ('adaptive', True)
    """

    name = "adaptive"

    def __init__(self):
        self.free = True
        self.mu_max: float | None = None
        self.entries: list[tuple[float, float]] = []    # the progress filter's (f, ||C||) pairs

    def prepare(self, solver: BarrierSolver) -> None:
        """Free mode goes on while the iterate makes progress on the filter; fixed mode follows
        the monotone rule until it does again."""
        if not solver.terms.count:
            solver.monotone_update()
            return
        if self.mu_max is None:
            self.mu_max = MU_MAX_FACTOR * max(average_complementarity(solver), solver.mu)
        progress = self._progress(solver)
        if self.free and not progress:
            self.free = False
            solver.set_mu(float(np.clip(MONOTONE_FACTOR * average_complementarity(solver), solver.mu_min,
                                        self.mu_max)))
        elif not self.free and progress:
            self.free = True
        if self.free:
            self._remember(solver)
        else:
            solver.monotone_update()

    def _progress(self, solver: BarrierSolver) -> bool:
        """Whether (f, ||C||_inf) at the iterate is acceptable to the progress filter."""
        violation = norm_inf(solver.c)
        return all(solver.f < f or violation < theta for f, theta in self.entries)

    def _remember(self, solver: BarrierSolver) -> None:
        margin = FILTER_MARGIN * min(1.0, solver.optimality_error())
        self.entries.append((solver.f - margin, norm_inf(solver.c) - margin))

    def direction(self, solver: BarrierSolver, factored: Factored) -> Direction | None:
        """In free mode: the affine and the centering directions, mu from the quality function,
        the step their combination; in fixed mode the direction for the current mu."""
        if not self.free or not solver.terms.count:
            return solver.direction(factored, solver.mu)
        base, part = solver.residual(0.0), solver.terms.gradient(solver.w, 1.0)
        affine, factored = solver.solve(factored, -base, -solver.c)
        if affine is None:
            return None
        per_mu, factored = solver.solve(factored, -part, np.zeros(solver.problem.m))
        if per_mu is None:
            return None
        average = average_complementarity(solver)
        sigma = self._oracle(solver, affine, per_mu, average)
        mu = float(np.clip(sigma * average, solver.mu_min, self.mu_max))
        solver.set_mu(mu)
        return solver.combine(affine + mu * per_mu, base + mu * part, factored, mu)

    def _oracle(self, solver: BarrierSolver, affine: np.ndarray, per_mu: np.ndarray, average: float) -> float:
        """The sigma in ``[max(1e-6, mu_min / average), min(100, mu_max / average)]`` that
        minimizes :meth:`quality`, by golden sections on log sigma (NWW §4)."""
        low = math.log(max(SIGMA_MIN, solver.mu_min / average))
        high = math.log(max(min(SIGMA_MAX, self.mu_max / average), math.exp(low)))

        fixed = quality_terms(solver)

        def quality(log_sigma: float) -> float:
            return self.quality(solver, affine, per_mu, math.exp(log_sigma) * average, fixed)

        a, b = high - GOLDEN * (high - low), low + GOLDEN * (high - low)
        qa, qb = quality(a), quality(b)
        for _ in range(SECTION_STEPS):
            if qa <= qb:
                high, b, qb = b, a, qa
                a = high - GOLDEN * (high - low)
                qa = quality(a)
            else:
                low, a, qa = a, b, qb
                b = low + GOLDEN * (high - low)
                qb = quality(b)
        candidates = [(quality(low), low), (qa, a), (qb, b), (quality(high), high)]
        return math.exp(min(candidates)[1])

    @staticmethod
    def quality(solver: BarrierSolver, affine: np.ndarray, per_mu: np.ndarray, mu: float,
                fixed: QualityTerms | None = None) -> float:
        """NWW's quality function of the step for mu: ``(1 - alpha_d)^2 ||dual residual||^2 / n +
        (1 - alpha_p)^2 ||C||^2 / m + ||(s + alpha_p ds) (z + alpha_d dz)||^2 / bounds``, the
        step sizes by the fraction to the boundary; ``fixed``: its terms that do not depend on mu
        (:func:`quality_terms`), computed once for the golden-section search."""
        n, terms = solver.problem.n, solver.terms
        (dual, violation), (sl, su) = fixed or quality_terms(solver)
        dw = affine[:n] + mu * per_mu[:n]
        dzl, dzu = terms.multiplier_steps(solver.w, solver.zl, solver.zu, mu, dw)
        alpha_p = terms.primal_fraction(solver.w, dw, solver.tau)
        alpha_d = terms.dual_fraction(solver.zl, solver.zu, dzl, dzu, solver.tau)
        step_l, step_u = alpha_p * dw[terms.lower_index], -alpha_p * dw[terms.upper_index]
        products = np.concatenate([(sl + step_l) * (solver.zl + alpha_d * dzl),
                                   (su + step_u) * (solver.zu + alpha_d * dzu)])
        return ((1.0 - alpha_d) ** 2 * dual + float(products @ products) / products.size
                + (1.0 - alpha_p) ** 2 * violation)


class QualityTerms(NamedTuple):
    """The parts of the quality function that do not depend on mu: ``(||dual residual||^2 / n,
    ||C||^2 / m)`` (0 without constraints) and the slacks of the bounds."""
    squares: tuple[float, float]
    slacks: tuple[np.ndarray, np.ndarray]


def quality_terms(solver: BarrierSolver) -> QualityTerms:
    """:class:`QualityTerms` at the solver's iterate."""
    dual, m = solver.dual_residual(), solver.problem.m
    violation = float(solver.c @ solver.c) / m if m else 0.0
    return QualityTerms((float(dual @ dual) / max(solver.problem.n, 1), violation), solver.terms.slacks(solver.w))
