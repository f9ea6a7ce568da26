"""Adaptive regularization with cubics (ARC).

C. Cartis, N. I. M. Gould and Ph. L. Toint, Adaptive cubic regularisation methods for unconstrained
optimization. Part I: motivation, convergence and numerical results, Math. Program. 127 (2011).

Each step approximately minimizes the cubic model
``m(p) = f + g^T p + 1/2 p^T H p + sigma/3 ||p||^3`` in a Lanczos Krylov space
(:class:`~optimizers.subproblems.LanczosCubic`); sigma plays the part of an inverse trust radius
and is updated from the reduction ratio. It is the trust-region step
(:class:`~optimizers.trust_region.TrustRegion`) with that model and sigma for the radius.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult

from .loop import RunOptions, curvature_check
from .methods import Problem, declared
from .subproblems import LanczosCubic, SubproblemSolution
from .trust_region import Control, TrustRegion


class SigmaControl(Control):
    """The regularization weight sigma (ARC Part I, (2.5)-(2.7)): lowered (to the floor ``limit``
    at least) after a very successful step, kept after a successful one, and raised by the
    interpolated backtracking factor after a failure."""

    name = "sigma"

    def update(self, rho: float, step: SubproblemSolution, step_norm: float, backtrack: float) -> None:
        if not rho >= 0.1:  # also NaN
            self.value /= backtrack
        elif rho >= 0.9:
            self.value = max(0.5 * self.value, self.limit)


@declared("arc")
def minimize_arc(problem: Problem, options: RunOptions, *, initial_sigma: float | None = None,
                 min_sigma: float = 1e-8, eta: float = 0.1, check_second_order: bool = True) -> OptimizeResult:
    """Minimize with adaptive cubic regularization (Cartis, Gould & Toint 2011), Hessian-vector
    products only.

    Parameters
    ----------
    fun, x0, jac, hess, hessp
        Objective ``fun(x)``, start point, gradient ``jac(x)`` (or ``True`` when ``fun`` returns
        ``(f, g)``), Hessian-vector product ``hessp(x, p)`` (or a dense ``hess(x)``).
    callback
        ``callback(intermediate_result)`` after each iteration; raise StopIteration to stop.
    operator
        ``operator(x)``: the Hessian at x as an object with ``matvec`` and ``to_dense`` (as
        ``autodiff.hessian_operator``); replaces ``hess`` and ``hessp``.
    gtol
        Stop when ``||g||_inf <= gtol`` and no clearly negative curvature is found there; default
        None: the relative gradient ``max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-8``
        (:mod:`optimizers.stopping`).
    maxiter
        Iterations (trial steps); default ``max(1000, 200 * n)``.
    disp
        Print the iteration table.
    initial_sigma
        Default ``||g0|| / r^2`` with ``r = min(||g0||, max(1, ||x0||))``: the cubic term then
        limits a gradient step to about the length the trust-region methods start with.
    min_sigma
        Lower bound for sigma after very successful steps.
    eta
        Accept a step when the reduction ratio exceeds ``eta``.
    check_second_order
        At a first-order point, look for negative curvature with a few Lanczos steps; if found,
        keep iterating along it and report status 5 only if that fails.
    keep_iterates
        Keep the iterates in ``history["x"]``.

    Returns
    -------
    OptimizeResult as the trust-region methods, with ``sigma`` in place of ``radius`` in
    ``history``.

    Raises
    ------
    ValueError
        Without ``hessp`` or ``hess``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der, rosen_hess_prod
    >>> from optimizers import minimize_arc
    >>> result = minimize_arc(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod)
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    """
    objective = problem.objective()
    if not objective.has_hessian:
        raise ValueError("ARC needs second derivatives: pass hessp or hess")
    x0 = objective.x0
    gnorm = float(np.linalg.norm(objective.grad(x0)))
    length = min(gnorm, max(1.0, float(np.linalg.norm(x0)))) or 1.0
    control = SigmaControl(initial_sigma or max(gnorm / length ** 2, min_sigma), min_sigma)
    step = TrustRegion(objective, LanczosCubic, control, dense=False, eta=eta)
    return problem.run(objective, step, options, probe=curvature_check(check_second_order, dense=False))
