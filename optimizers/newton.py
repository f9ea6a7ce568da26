"""Line-search Newton methods: full-Hessian Newton, truncated Newton (Newton-CG) and Martens'
Hessian-free optimization.

All three are line-search descents (:class:`LineSearchDescent`) in the loop of
:mod:`optimizers.loop`: stop when the gradient test of :mod:`optimizers.stopping` passes
(``gtol``), but only after a check for negative curvature at that point; if some is found, step
along it and carry on, so a saddle point is left rather than reported as a minimum.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006 (N&W);
R. S. Dembo, S. C. Eisenstat and T. Steihaug, "Inexact Newton methods", SIAM J. Numer. Anal. 19
(1982); J. Martens, "Deep learning via Hessian-free optimization", ICML 2010.
"""
from __future__ import annotations

import functools
from abc import abstractmethod
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.optimize import OptimizeResult, OptimizeWarning

from .bounds import Box, ProjectedNewtonDirection, projected_armijo, projected_newton_direction, reduced, restrict
from .feasible import FeasibleSet, Unconstrained
from .krylov import HESSIAN_FREE_CG_MAXITER, LINE_SEARCH_CG_MARGIN, ConjugateGradient, forcing_term, newton_cg_maxiter
from .linesearch import LineSearchResult, backtracking, negative_curvature_search, strong_wolfe
from .loop import RunOptions, Saddle, Step, Stop, Trial, curvature_check, hessian_matrix
from .methods import Problem, declared
from .objective import Iterate, Objective, Status
from .preconditioning import Preconditioning, krylov_preconditioning
from .sparse import LDLFactorization, report_sparse
from .subproblems import matrix_shifts

# Newton-CG's nonmonotone memory: on the MGH set (gtol 1e-8, all 39 solved) memory 1 (monotone)
# costs ~8700 evaluations, 10 ~5600, 15 ~5700, 20 ~4700, 25 ~3900, 30 and 40 ~3800.
NONMONOTONE_MEMORY = 30


def default_maxiter(n: int) -> int:
    """Iterations of the line-search methods: 200 n, scipy's default for Newton-CG."""
    return 200 * n


@declared("newton", bounds=True, sparse=True)
def minimize_newton(problem: Problem, options: RunOptions, *, shift: str = "cholesky", c1: float = 1e-4,
                    c2: float = 0.9, check_second_order: bool = True, sparse: bool | None = None,
                    factorization: str | None = None) -> OptimizeResult:
    """Newton's method with the full Hessian and a strong Wolfe line search (unit step first).

    An indefinite Hessian is made positive definite before solving (N&W §3.4): ``shift=
    "cholesky"`` adds tau*I until a Cholesky factorization succeeds (N&W Algorithm 3.3);
    ``shift="eigen"`` replaces each eigenvalue by its absolute value (N&W §3.4). With
    ``check_second_order`` the stopping point is checked with a dense eigendecomposition.

    A Hessian that comes as a ``scipy.sparse`` matrix (``hess``, or the operator's
    ``to_sparse()``) is factored as one (:mod:`optimizers.sparse`): the shifted Cholesky becomes
    a sparse LDL^T whose pivots say whether ``H + tau I`` is positive definite (a singular
    semidefinite H, a pivot zero but for rounding, is factored with a rounding-level shift, as
    the dense Cholesky is), its ordering and elimination tree found once and reused, and the
    second-order check an LDL^T too (an eigenpair, by shift-invert Lanczos on more of them, only
    where that shows clearly negative curvature).

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    shift : {"cholesky", "eigen"}
        How an indefinite Hessian is modified.
    c1, c2 : float
        The strong Wolfe constants.
    check_second_order : bool
        Check the stopping point for negative curvature (status 5 at a saddle).
    bounds : Box or (lower, upper), optional
        Bound constraints: Bertsekas' projected Newton method (:class:`ProjectedNewton`), the
        Newton step of the modified reduced Hessian (sparse too) on the variables not held at a
        bound.
    sparse : bool or None
        Use a sparse Hessian as one: None (default) from 1,000 variables on when it is under 5%
        dense (:func:`~optimizers.sparse.dense_reason`), True whenever it comes sparse, False
        never (it is made dense). ``shift="eigen"`` needs the dense matrix.
    factorization : {None, "cholmod", "qdldl"}
        The sparse factorization (:class:`~optimizers.sparse.LDLFactorization`): None (default)
        chosen from the pattern (CHOLMOD's supernodal Cholesky on grids and meshes, qdldl on
        bands, chains, arrowheads and small problems; :func:`optimizers.supernodal.choose`).

    Returns
    -------
    OptimizeResult
        ``x, fun, jac, nit, nfev, njev, nhev, status, success, message``, ``history`` and
        ``sparse`` (whether the Hessian was factored as a sparse matrix; ``dense_reason`` says
        why not when it came sparse); with bounds also ``active_mask``.

    Raises
    ------
    ValueError
        For an unknown ``shift``, ``shift="eigen"`` with ``sparse=True``, or no second
        derivatives.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der, rosen_hess
    >>> from optimizers import minimize_newton
    >>> result = minimize_newton(rosen, np.array([-1.2, 1.0]), rosen_der, hess=rosen_hess)
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    """
    if shift not in ("cholesky", "eigen"):
        raise ValueError(f"shift must be 'cholesky' or 'eigen', got {shift!r}")
    if shift == "eigen" and sparse:
        raise ValueError("shift='eigen' needs the dense eigendecomposition: it takes no sparse "
                         "Hessian (sparse=True); use shift='cholesky'")
    objective = problem.objective(sparse=False if shift == "eigen" else sparse)
    factorization = LDLFactorization(factorization)
    direction = CholeskyShift(factorization) if shift == "cholesky" else _eigen_shifted_step
    step = newton_step(problem.feasible, objective, direction, c1=c1, c2=c2)
    result = problem.run(objective, step, options, probe=curvature_check(check_second_order, True, factorization))
    if shift == "eigen" and objective.dense_reason is not None:
        objective.dense_reason = "shift='eigen' needs the dense eigendecomposition"
    return report_sparse(result, objective)


@declared("newton-cg", bounds=True, preconditioned=True, default_in=(Unconstrained,))
def minimize_newton_cg(problem: Problem, options: RunOptions, *, cg_maxiter: int | None = None, c1: float = 1e-4,
                       c2: float = 0.5, nonmonotone: int = NONMONOTONE_MEMORY, check_second_order: bool = True,
                       precondition: bool | None = None, preconditioner: str | None = None) -> OptimizeResult:
    """Truncated Newton: CG on H p = -g from Hessian-vector products only (N&W §7.1).

    The inner CG stops once ||H p + g|| <= eta ||g|| with the forcing term eta = min(0.25,
    sqrt(||g||)), which gives superlinear convergence (Dembo, Eisenstat & Steihaug 1982), after
    ``cg_maxiter`` steps (default 20 n, as scipy's Newton-CG), or when it meets a direction of
    non-positive curvature relative to the curvature it has seen so far; that direction is then
    added to the step (see :func:`truncated_cg`).

    The line search is strong Wolfe (``c2 = 0.5``: a more exact search than the usual 0.9 keeps
    the iterates near curved valleys, where Newton steps then succeed). Two safeguards let the
    iterates follow narrow curved valleys (Meyer, penalty II, Biggs EXP6) instead of zigzagging
    across them with a long tangent step cut back by the search and a short step back to the
    floor: the first trial step is capped like a trust radius (:class:`_StepBound`), and that
    first trial is accepted nonmonotonically, against the highest of the last ``nonmonotone``
    values of f (Grippo, Lampariello & Lucidi 1986); ``nonmonotone=1`` is the monotone method.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    cg_maxiter : int, optional
        CG steps per iteration.
    c1, c2 : float
        The strong Wolfe constants.
    nonmonotone : int
        How many past values of f the first trial step is judged against.
    check_second_order : bool
        At a first-order point, look for negative curvature (status 5 at a saddle).
    bounds : Box or (lower, upper), optional
        Bound constraints: projected Newton-CG (Bertsekas 1982; :class:`ProjectedNewton`), the
        truncated-CG step of the reduced Hessian on the variables not held at a bound and an
        Armijo search along the projection arc; ``c2`` and ``nonmonotone`` then play no part.
    precondition : bool or None
        Preconditioned CG (N&W Algorithm 5.3) with the incomplete Cholesky factorization of the
        sparse Hessian (:mod:`optimizers.preconditioning`; the Hessian must come as a sparse
        matrix, from an operator's ``to_sparse`` or from ``hess`` without ``hessp``). None
        (default): automatic, from the iterate after the first whose CG took more than 100
        products, on 1,000 variables or more; True: from the first iterate; False: never. Not
        with bounds. The forcing test stays on the true residual ``||H p + g||``.
    preconditioner : {None, "amg", "incomplete-cholesky"}
        Which preconditioner: algebraic multigrid (``pyamg``'s smoothed aggregation, its
        hierarchy kept while it works), the incomplete Cholesky factorization, or None (default):
        multigrid from 50,000 variables on, the incomplete Cholesky below and where multigrid is
        refused (:class:`~optimizers.preconditioning.Preconditioning`).

    Returns
    -------
    OptimizeResult
        As :func:`minimize_newton` but with ``preconditioned`` (and ``precondition_reason``, where
        the rule considered it) for ``sparse``; ``history`` also has ``cg`` (CG steps) and
        ``negative_curvature``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der, rosen_hess_prod
    >>> from optimizers import minimize_newton_cg
    >>> result = minimize_newton_cg(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod)
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    """
    preconditioning = krylov_preconditioning(precondition, problem.x0.size, problem.feasible, preconditioner)
    objective = problem.objective()
    cg_maxiter = cg_maxiter or newton_cg_maxiter(objective.x0.size)
    step = newton_cg_step(problem.feasible, objective, cg_maxiter, c1=c1, c2=c2, nonmonotone=nonmonotone,
                          preconditioning=preconditioning)
    result = problem.run(objective, step, options, probe=curvature_check(check_second_order, dense=False))
    return result if preconditioning is None else preconditioning.report(result)


@declared("hessian-free", gauss_newton=True)
def minimize_hessian_free(problem: Problem, options: RunOptions, *, damping: float = 1.0,
                          cg_maxiter: int = HESSIAN_FREE_CG_MAXITER, warm_start: float = 0.95, c1: float = 1e-4,
                          check_second_order: bool = True) -> OptimizeResult:
    """Hessian-free optimization (Martens 2010): CG on (B + lambda I) p = -g with B given by
    ``hessp`` (the Hessian, or a Gauss-Newton product the caller supplies).

    lambda (initially ``damping``) follows the Levenberg-Marquardt rule of :class:`MartensDamping`.
    CG starts from ``warm_start`` times the previous step, stops on negative curvature, on
    Martens' relative-progress test or after ``cg_maxiter`` steps (Martens' 250), and the step is
    then backtracked to sufficient decrease.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    damping : float
        The initial lambda.
    cg_maxiter : int
        CG steps per iteration.
    warm_start : float
        The fraction of the previous step CG starts from (0: from zero).
    c1 : float
        The sufficient-decrease constant of the backtracking.
    check_second_order : bool
        At a first-order point, look for negative curvature (status 5 at a saddle).

    Returns
    -------
    OptimizeResult
        As :func:`minimize_newton`; ``history`` also has ``lambda``, ``rho`` and ``cg``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der, rosen_hess_prod
    >>> from optimizers import minimize_hessian_free
    >>> result = minimize_hessian_free(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod)
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    """
    objective = problem.objective()
    step = HessianFreeStep(objective, MartensDamping(damping), cg_maxiter=cg_maxiter, warm_start=warm_start, c1=c1)
    return problem.run(objective, step, options, probe=curvature_check(check_second_order, dense=False))


class MartensDamping:
    """The damping lambda of Hessian-free optimization, moved by the Levenberg-Marquardt rule on
    the reduction ratio rho = (f(x+p) - f(x)) / (g^T p + p^T B p / 2) (Martens 2010, §4.1): x3/2
    when rho < 1/4, x2/3 when rho > 3/4."""

    name = "lambda"

    def __init__(self, value: float):
        if not value >= 0:
            raise ValueError(f"damping must be nonnegative, got {value}")
        self.value = float(value)

    def update(self, rho: float) -> None:
        if rho < 0.25:
            self.value *= 1.5
        elif rho > 0.75:
            self.value *= 2.0 / 3.0


class LineSearchDescent(Step):
    """A line-search descent step: a direction from the iterate, a line search along it
    (:meth:`search`), the point found accepted. A search that finds no lower point ends the run
    (status 2, or 3 when every trial was NaN/inf). At a saddle the search runs along the direction
    of negative curvature instead, turned downhill, trying a step of the size of x first (Moré &
    Sorensen 1979); when that finds nothing lower the run ends with status 5."""

    warning = OptimizeWarning   # scipy's category for Newton-CG's failures

    def __init__(self, objective: Objective):
        self.objective = objective

    def default_maxiter(self, n: int) -> int:
        return default_maxiter(n)

    def start(self, point: Iterate) -> dict:
        return {"step": 0.0}

    @abstractmethod
    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        """The line search from ``point`` and the method's history fields, or the Stop of a
        direction that cannot be computed."""

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        if saddle is None:
            found = self.search(point)
            if isinstance(found, Stop):
                return found
            search, fields = found
        else:
            search, fields = self._escape(point, saddle), {}
        if not search.success or np.array_equal(search.x, point.x):
            if search.nonfinite:
                return Stop(Status.NONFINITE)
            return Stop(Status.NOT_A_MINIMUM) if saddle else Stop(Status.PRECISION_LOSS,
                                                                  _LINE_SEARCH_FAILED)
        return Trial(search.x, search.f, {"step": float(np.linalg.norm(search.x - point.x)),
                                          **fields})

    def _escape(self, point: Iterate, saddle: Saddle) -> LineSearchResult:
        direction = -saddle.direction if point.g @ saddle.direction > 0 else saddle.direction
        step0 = max(1.0, float(np.linalg.norm(point.x)))
        return negative_curvature_search(self.objective, point.x, direction, point.f, point.g,
                                         saddle.curvature, step0=step0)


_LINE_SEARCH_FAILED = ("Desired accuracy not reached: the line search found no lower value "
                       "along the step (no progress at working precision)")


class _NewtonStep(LineSearchDescent):
    """Newton's direction on the Hessian (sparse or dense) made positive definite by
    ``direction(H, g)``, and a strong Wolfe search from the unit step."""

    def __init__(self, objective: Objective, direction: Callable, *, c1: float, c2: float):
        super().__init__(objective)
        self.direction, self.c1, self.c2 = direction, c1, c2

    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        h = hessian_matrix(point)
        if not np.all(np.isfinite(h.data if scipy.sparse.issparse(h) else h)):
            return Stop(Status.NONFINITE, _NONFINITE_HESSIAN)
        direction = self.direction(h, point.g)
        point.release()
        return strong_wolfe(self.objective, point.x, direction, point.f, point.g, c1=self.c1,
                            c2=self.c2), {}


_NONFINITE_HESSIAN = ("The Hessian is not finite at the last iterate: no Newton step (or "
                      "second-order check) can be computed; returning the best point found")


class _NewtonCGStep(LineSearchDescent):
    """Truncated CG on H p = -g (:func:`truncated_cg`), preconditioned after ``preconditioning``
    (:class:`~optimizers.preconditioning.Preconditioning`), the first trial capped by
    :class:`_StepBound` and accepted nonmonotonically, then a strong Wolfe search."""

    def __init__(self, objective: Objective, cg_maxiter: int, *, c1: float, c2: float,
                 nonmonotone: int, preconditioning: Preconditioning):
        super().__init__(objective)
        self.cg_maxiter, self.c1, self.c2 = cg_maxiter, c1, c2
        self.bound, self.recent = _StepBound(), deque(maxlen=nonmonotone)
        self.preconditioning = preconditioning

    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        preconditioner = self.preconditioning.at(point)
        cg = truncated_cg(point.matvec, point.g, maxiter=self.cg_maxiter, preconditioner=preconditioner)
        self.preconditioning.observe(cg.iterations)
        point.release()
        if not np.all(np.isfinite(cg.p)):   # a Hessian-vector product was not finite
            return Stop(Status.NONFINITE)
        self.recent.append(point.f)
        step0 = self.bound.first_step(cg.p)
        search = strong_wolfe(self.objective, point.x, cg.p, point.f, point.g, step0=step0,
                              c1=self.c1, c2=self.c2, reference=max(self.recent))
        self.bound.update(search.step, step0, cg.p)
        return search, {"cg": cg.iterations, "negative_curvature": cg.negative_curvature}


class ProjectedNewton(LineSearchDescent):
    """Bertsekas' (1982) projected Newton method as a line-search descent: the direction of
    :func:`~optimizers.bounds.projected_newton_direction` (a gradient step on the variables held
    at a bound, the step :meth:`reduced_step` of the reduced Hessian on the others) and the
    Armijo search along the projection arc ``P(x + alpha d)``
    (:func:`~optimizers.bounds.projected_armijo`), so f is never evaluated outside the box. At a
    saddle of the bounded problem the arc follows the direction of negative curvature on the free
    variables (downhill), the decrease asked for including its curvature term."""

    def __init__(self, objective: Objective, box: Box, *, c1: float = 1e-4):
        super().__init__(objective)
        self.box, self.c1, self.fields = box, c1, {}

    @abstractmethod
    def reduced_step(self, point: Iterate, free: np.ndarray, g_free: np.ndarray) -> np.ndarray:
        """The Newton step on the variables ``free`` (may set ``self.fields``)."""

    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        direction = projected_newton_direction(
            point.x, point.g, self.box, lambda free, g_free: self.reduced_step(point, free, g_free))
        if not np.all(np.isfinite(direction.d)):   # a product or the Hessian was not finite
            return Stop(Status.NONFINITE, _NONFINITE_HESSIAN)
        search = projected_armijo(self.objective.fun, point.x, point.f, point.g, direction,
                                  self.box, sigma=self.c1)
        return search, self.fields

    def _escape(self, point: Iterate, saddle: Saddle) -> LineSearchResult:
        u = -saddle.direction if point.g @ saddle.direction > 0 else saddle.direction
        step0 = max(1.0, float(np.linalg.norm(point.x)))
        along = ProjectedNewtonDirection(step0 * u, np.zeros(u.size, dtype=bool))
        return projected_armijo(self.objective.fun, point.x, point.f, point.g, along, self.box,
                                curvature=saddle.curvature, sigma=self.c1)


class _ProjectedNewtonCG(ProjectedNewton):
    """Projected Newton-CG: truncated CG (:func:`truncated_cg`) on the reduced Hessian's
    products."""

    def __init__(self, objective: Objective, box: Box, cg_maxiter: int, *, c1: float):
        super().__init__(objective, box, c1=c1)
        self.cg_maxiter = cg_maxiter

    def reduced_step(self, point: Iterate, free: np.ndarray, g_free: np.ndarray) -> np.ndarray:
        cg = truncated_cg(restrict(point.matvec, free), g_free, maxiter=self.cg_maxiter)
        self.fields = {"cg": cg.iterations, "negative_curvature": cg.negative_curvature}
        return cg.p


class _ProjectedMatrixNewton(ProjectedNewton):
    """Projected Newton on the reduced Hessian's matrix (sparse or dense), made positive definite
    by ``direction(H, g)`` as in :func:`minimize_newton`."""

    def __init__(self, objective: Objective, box: Box, direction: Callable):
        super().__init__(objective, box)
        self.direction = direction

    def reduced_step(self, point: Iterate, free: np.ndarray, g_free: np.ndarray) -> np.ndarray:
        sparse = reduced(point.sparse_hessian, free)
        h = point.hessian[np.ix_(free, free)] if sparse is None else sparse
        if not np.all(np.isfinite(h.data if sparse is not None else h)):
            return np.full(g_free.size, np.nan)
        return self.direction(h, g_free)


@functools.singledispatch
def newton_step(feasible: FeasibleSet, objective: Objective, direction: Callable, *, c1: float,
                c2: float) -> Step:
    """Newton's step in ``feasible``: unconstrained, :class:`_NewtonStep`; in a box, Bertsekas'
    projected Newton on the reduced Hessian's matrix (its own Armijo constant; ``c1`` and ``c2``
    play no part)."""
    raise TypeError(f"Newton's method takes no {type(feasible).__name__}")


@newton_step.register
def _(feasible: Unconstrained, objective: Objective, direction: Callable, *, c1: float, c2: float) -> Step:
    return _NewtonStep(objective, direction, c1=c1, c2=c2)


@newton_step.register
def _(feasible: Box, objective: Objective, direction: Callable, *, c1: float, c2: float) -> Step:
    return _ProjectedMatrixNewton(objective, feasible, direction)


@functools.singledispatch
def newton_cg_step(feasible: FeasibleSet, objective: Objective, cg_maxiter: int, *, c1: float, c2: float,
                   nonmonotone: int, preconditioning: Preconditioning | None) -> Step:
    """Newton-CG's step in ``feasible``: unconstrained, :class:`_NewtonCGStep`; in a box, projected
    Newton-CG (``c2``, ``nonmonotone`` and the preconditioning play no part)."""
    raise TypeError(f"Newton-CG takes no {type(feasible).__name__}")


@newton_cg_step.register
def _(feasible: Unconstrained, objective: Objective, cg_maxiter: int, *, c1: float, c2: float,
      nonmonotone: int, preconditioning: Preconditioning | None) -> Step:
    return _NewtonCGStep(objective, cg_maxiter, c1=c1, c2=c2, nonmonotone=nonmonotone,
                         preconditioning=preconditioning)


@newton_cg_step.register
def _(feasible: Box, objective: Objective, cg_maxiter: int, *, c1: float, c2: float,
      nonmonotone: int, preconditioning: Preconditioning | None) -> Step:
    return _ProjectedNewtonCG(objective, feasible, cg_maxiter, c1=c1)


class HessianFreeStep(LineSearchDescent):
    """One Hessian-free step: damped CG warm-started from the previous step, a backtracking
    search, and the damping update."""

    def __init__(self, objective: Objective, damping: MartensDamping, *, cg_maxiter: int,
                 warm_start: float, c1: float):
        super().__init__(objective)
        self.damping, self.cg_maxiter, self.warm_start, self.c1 = damping, cg_maxiter, warm_start, c1
        self.previous = np.zeros_like(objective.x0)

    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        lam, g = self.damping.value, point.g
        solve = functools.partial(truncated_cg, point.matvec, g, shift=lam,
                                  maxiter=self.cg_maxiter, relative_progress=True)
        cg = solve(p0=self.warm_start * self.previous)
        if not g @ cg.p < 0:   # a warm start can, rarely, lead uphill: start from 0 instead
            cg = solve()
        del solve
        point.release()
        if not np.all(np.isfinite(cg.p)):   # a curvature product was not finite
            return Stop(Status.NONFINITE)
        predicted = g @ cg.p + 0.5 * cg.pBp
        search = backtracking(self.objective, point.x, cg.p, point.f, g, c1=self.c1)
        rho = (search.f - point.f) / predicted if search.step == 1.0 and predicted < 0 else 0.0
        self.damping.update(rho)
        self.previous = cg.p
        return search, {self.damping.name: lam, "rho": rho, "cg": cg.iterations}


class _StepBound:
    """A cap Delta on the length of the first trial step, kept like a trust radius (the maximum
    step of truncated-Newton codes, Nash 2000, "A survey of truncated-Newton methods", J. Comput.
    Appl. Math. 124; a line search inside a trust region as in Nocedal & Yuan 1998, "Combining
    trust region and line search techniques"): after a search that had to shorten the step, Delta
    becomes the accepted length; after one that accepted its first trial (or lengthened it),
    Delta = max(Delta, 2 x accepted length), so a cap that was hit and held doubles.

    In a curved valley the Newton step from the floor runs far along the tangent; the cap makes
    the first trial the length that worked before, which costs one evaluation instead of a
    bracketing search.
    """

    def __init__(self):
        self.value = np.inf

    def first_step(self, p: np.ndarray) -> float:
        norm = float(np.linalg.norm(p))
        return min(1.0, self.value / norm) if norm > 0 else 1.0

    def update(self, step: float, step0: float, p: np.ndarray) -> None:
        length = step * float(np.linalg.norm(p))
        if 0 < step < step0:
            self.value = length
        elif step > 0:
            self.value = max(self.value, 2.0 * length)


class CholeskyShift:
    """``-(H + tau I)^{-1} g`` with the smallest tau in 0, beta, 2 beta, ... (from -min(diag) +
    beta when the diagonal is not positive) for which Cholesky succeeds (N&W Algorithm 3.3);
    beta is 1e-3 times ||H||_F so the shift follows the scale of H. A sparse H is factored as
    LDL^T (positive definite: every pivot positive), the symbolic analysis of ``factorization``
    reused from one tau and one iterate to the next. A pivot zero but for rounding, dense or
    sparse, is not negative curvature: tau = 0 then succeeds with a rounding-level shift
    (:func:`~optimizers.sparse.rounding_shift`) and a singular semidefinite H gets the Newton
    step on its range, not a shift of beta."""

    def __init__(self, factorization: LDLFactorization):
        self.factorization = factorization

    def __call__(self, hess, g: np.ndarray) -> np.ndarray:
        shifts = matrix_shifts(hess, self.factorization)
        size = shifts.frobenius
        beta = 1e-3 * size if size > 0 else 1.0
        tau = 0.0 if shifts.min_diagonal > 0 else beta - shifts.min_diagonal
        while True:
            solve = shifts.factor(tau)
            if solve is not None:
                return solve(-g)
            tau = max(2.0 * tau, beta)


def _eigen_shifted_step(hess: np.ndarray, g: np.ndarray) -> np.ndarray:
    """-|H|^{-1} g: each eigenvalue replaced by its absolute value, floored at n * eps * max|lambda|
    (the eigenvalue modification of N&W §3.4). Negative curvature is thus followed downhill with
    the length its own curvature suggests, and a positive definite H gives the plain Newton step."""
    eigenvalues, vectors = scipy.linalg.eigh(hess)
    size = np.abs(eigenvalues).max()
    floor = hess.shape[0] * np.finfo(float).eps * size if size > 0 else 1.0
    return -vectors @ (vectors.T @ g / np.maximum(np.abs(eigenvalues), floor))


class _CGResult(NamedTuple):
    p: np.ndarray           # the step
    pBp: float              # p^T B p for the unshifted curvature B
    iterations: int
    negative_curvature: bool  # CG stopped on a direction of non-positive curvature


def truncated_cg(hessp: Callable, g: np.ndarray, *, maxiter: int, shift: float = 0.0,
                  p0: np.ndarray | None = None, relative_progress: bool = False,
                  preconditioner=None) -> _CGResult:
    """Truncated CG on A p = -g with A = B + shift I, B given by products ``hessp(v)`` (N&W
    Algorithm 7.1; :class:`~optimizers.krylov.ConjugateGradient`, from ``p0`` when that is a
    better start than 0; preconditioned by M when ``preconditioner.solve`` is ``M^{-1}``, N&W
    Algorithm 5.3, the tests below unchanged but for ``||r||^2`` read as ``r^T M^{-1} r`` and
    curvature relative to ``d^T M d``).

    Stops when ||r|| <= eta ||g|| (the forcing term, :func:`~optimizers.krylov.forcing_term`), after
    ``maxiter`` iterations, on Martens' relative-progress test (``relative_progress``), or on a
    direction d of non-positive curvature relative to the largest curvature seen (so the test
    does not depend on how f is scaled). Then tau d, tau = ||r||^2 / |d^T A d|, is added to the CG
    iterate: the Newton step along d on the absolute curvature. It goes downhill on the model,
    since r.d = -||r||^2 in CG, and with p = 0 it is a scaled steepest-descent step (d = -g).
    p^T B p follows from the residual r = A p + g, at no extra product.
    """
    gnorm = np.linalg.norm(g)
    tol = forcing_term(gnorm) * gnorm
    cg = ConjugateGradient(hessp, g, shift=shift, p0=p0, keep_segments=False, preconditioner=preconditioner)
    model_values = [cg.value]
    while cg.iterations < maxiter and cg.rr > tol * tol:
        segment = cg.step()
        if cg.negative_curvature:
            d = segment.direction
            dd = float(d @ d) if segment.metric is None else segment.metric[2]
            floor = LINE_SEARCH_CG_MARGIN * dd * cg.kappa
            tau = cg.rz / max(abs(segment.curvature), floor) if cg.kappa > 0 else 1.0
            p = cg.p + tau * d
            p_a_p = cg.pAp + 2.0 * tau * (d @ (cg.r - g)) + tau * tau * segment.curvature
            return _CGResult(p, p_a_p - shift * (p @ p), cg.iterations, True)
        if relative_progress and _stalled(model_values, cg.value, cg.iterations):
            break
    return _CGResult(cg.p, cg.pAp - shift * (cg.p @ cg.p), cg.iterations, False)


def _stalled(model_values: list, value: float, i: int, epsilon: float = 5e-4) -> bool:
    """Martens' (2010, §4.4) CG stopping rule on the model values phi_i: stop once phi_i < 0 and
    (phi_i - phi_{i-k}) / phi_i < k * epsilon with k = max(10, i / 10)."""
    model_values.append(value)
    k = max(10, i // 10)
    return i > k and value < 0 and (value - model_values[i - k]) / value < k * epsilon
