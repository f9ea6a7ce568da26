"""Line-search Newton methods: full-Hessian Newton, truncated Newton (Newton-CG) and Martens'
Hessian-free optimization.

All three share one loop (:func:`_descent_loop`): stop when the gradient test of
:mod:`optimizers.stopping` passes (``gtol``), but only after a check for negative curvature at that
point; if some is found, step along it and carry on, so a saddle point is left rather than reported
as a minimum.

References: J. Nocedal and S. J. Wright, *Numerical Optimization*, 2nd ed., Springer 2006 (N&W);
R. S. Dembo, S. C. Eisenstat and T. Steihaug, "Inexact Newton methods", SIAM J. Numer. Anal. 19
(1982); J. Martens, "Deep learning via Hessian-free optimization", ICML 2010.
"""
from __future__ import annotations

import functools
from collections import deque
from typing import Callable, NamedTuple

import numpy as np
import scipy.linalg
from scipy.optimize import OptimizeResult

from .krylov import (HESSIAN_FREE_CG_MAXITER, LINE_SEARCH_CG_MARGIN, ConjugateGradient,
                     clearly_negative, dense_leftmost_curvature, forcing_term, newton_cg_maxiter)
from .linesearch import LineSearchResult, backtracking, negative_curvature_search, strong_wolfe
from .objective import (NONFINITE_HESSIAN_AT_STATIONARY_POINT, Monitor, Objective, Status,
                        make_result)
from .stopping import GradientTest

# Newton-CG's nonmonotone memory: on the MGH set (gtol 1e-8, all 39 solved) memory 1 (monotone)
# costs ~8700 evaluations, 10 ~5600, 15 ~5700, 20 ~4700, 25 ~3900, 30 and 40 ~3800.
NONMONOTONE_MEMORY = 30

StepFunction = Callable[[np.ndarray, float, np.ndarray], "tuple[LineSearchResult, dict]"]


def default_maxiter(n: int) -> int:
    """Iterations of the line-search methods: 200 n, scipy's default for Newton-CG."""
    return 200 * n


def minimize_newton(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                    hessp: Callable | None = None, callback: Callable | None = None, *,
                    gtol: float | None = None, maxiter: int | None = None, disp: bool = False,
                    shift: str = "cholesky", c1: float = 1e-4, c2: float = 0.9,
                    check_second_order: bool = True, keep_iterates: bool = True) -> OptimizeResult:
    """Newton's method with the full Hessian and a strong Wolfe line search (unit step first).

    An indefinite Hessian is made positive definite before solving (N&W §3.4): ``shift=
    "cholesky"`` adds tau*I until a Cholesky factorization succeeds (N&W Algorithm 3.3);
    ``shift="eigen"`` replaces each eigenvalue by its absolute value (N&W §3.4). With
    ``check_second_order`` the stopping point is checked with a dense eigendecomposition.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    shift : {"cholesky", "eigen"}
        How an indefinite Hessian is modified.
    c1, c2 : float
        The strong Wolfe constants.
    check_second_order : bool
        Check the stopping point for negative curvature (status 5 at a saddle).

    Returns
    -------
    OptimizeResult
        ``x, fun, jac, nit, nfev, njev, nhev, status, success, message`` and ``history``.

    Raises
    ------
    ValueError
        For an unknown ``shift``, or no second derivatives.

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
    objective = Objective(fun, x0, jac, hess, hessp)
    newton_direction = _cholesky_shifted_step if shift == "cholesky" else _eigen_shifted_step
    nonfinite = []   # points where the Hessian had NaN/inf entries

    def finite_hessian(x):
        """H(x), or None where it is not finite (no factorization can use it)."""
        h = objective.hess(x)
        if np.all(np.isfinite(h)):
            return h
        nonfinite.append(x)
        return None

    def step(x, f, g):
        h = finite_hessian(x)
        if h is None:
            return _no_step(x, f), {}
        return strong_wolfe(objective, x, newton_direction(h, g), f, g, c1=c1, c2=c2), {}

    def probe(x):
        h = finite_hessian(x)
        return None if h is None else dense_leftmost_curvature(h)

    def message(status: Status) -> str | None:
        return _NONFINITE_HESSIAN.get(status) if nonfinite else None

    return _descent_loop(objective, step, probe if check_second_order else None, callback, disp,
                         gtol, maxiter, keep_iterates, message)


_NONFINITE_HESSIAN = {
    Status.NONFINITE: "The Hessian is not finite at the last iterate: no Newton step (or "
                      "second-order check) can be computed; returning the best point found",
}


def minimize_newton_cg(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                       hessp: Callable | None = None, callback: Callable | None = None, *,
                       gtol: float | None = None, maxiter: int | None = None, disp: bool = False,
                       cg_maxiter: int | None = None, c1: float = 1e-4, c2: float = 0.5,
                       nonmonotone: int = NONMONOTONE_MEMORY, check_second_order: bool = True,
                       keep_iterates: bool = True) -> OptimizeResult:
    """Truncated Newton: CG on H p = -g from Hessian-vector products only (N&W §7.1).

    The inner CG stops once ||H p + g|| <= eta ||g|| with the forcing term eta = min(0.25,
    sqrt(||g||)), which gives superlinear convergence (Dembo, Eisenstat & Steihaug 1982), after
    ``cg_maxiter`` steps (default 20 n, as scipy's Newton-CG), or when it meets a direction of
    non-positive curvature relative to the curvature it has seen so far; that direction is then
    added to the step (see :func:`_truncated_cg`).

    The line search is strong Wolfe (``c2 = 0.5``: a more exact search than the usual 0.9 keeps
    the iterates near curved valleys, where Newton steps then succeed). Two safeguards let the
    iterates follow narrow curved valleys (Meyer, penalty II, Biggs EXP6) instead of zigzagging
    across them with a long tangent step cut back by the search and a short step back to the
    floor: the first trial step is capped like a trust radius (:class:`_StepBound`), and that
    first trial is accepted nonmonotonically, against the highest of the last ``nonmonotone``
    values of f (Grippo, Lampariello & Lucidi 1986); ``nonmonotone=1`` is the monotone method.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    cg_maxiter : int, optional
        CG steps per iteration.
    c1, c2 : float
        The strong Wolfe constants.
    nonmonotone : int
        How many past values of f the first trial step is judged against.
    check_second_order : bool
        At a first-order point, look for negative curvature (status 5 at a saddle).

    Returns
    -------
    OptimizeResult
        As :func:`minimize_newton`; ``history`` also has ``cg`` (CG steps) and
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
    objective = Objective(fun, x0, jac, hess, hessp)
    cg_maxiter = cg_maxiter or newton_cg_maxiter(objective.x0.size)
    bound, recent = _StepBound(), deque(maxlen=nonmonotone)

    def step(x, f, g):
        cg = _truncated_cg(lambda v: objective.hessp(x, v), g, maxiter=cg_maxiter)
        info = {"cg": cg.iterations, "negative_curvature": cg.negative_curvature}
        if not np.all(np.isfinite(cg.p)):   # a Hessian-vector product was not finite
            return _no_step(x, f), info
        recent.append(f)
        step0 = bound.first_step(cg.p)
        search = strong_wolfe(objective, x, cg.p, f, g, step0=step0, c1=c1, c2=c2,
                              reference=max(recent))
        bound.update(search.step, step0, cg.p)
        return search, info

    probe = objective.curvature_probe(dense=False) if check_second_order else None
    return _descent_loop(objective, step, probe, callback, disp, gtol, maxiter, keep_iterates)


def minimize_hessian_free(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                          hessp: Callable | None = None, callback: Callable | None = None, *,
                          gtol: float | None = None, maxiter: int | None = None, disp: bool = False,
                          damping: float = 1.0, cg_maxiter: int = HESSIAN_FREE_CG_MAXITER,
                          warm_start: float = 0.95, c1: float = 1e-4,
                          check_second_order: bool = True,
                          keep_iterates: bool = True) -> OptimizeResult:
    """Hessian-free optimization (Martens 2010): CG on (B + lambda I) p = -g with B given by
    ``hessp`` (the Hessian, or a Gauss-Newton product the caller supplies).

    lambda (initially ``damping``) follows the Levenberg-Marquardt rule of :class:`MartensDamping`.
    CG starts from ``warm_start`` times the previous step, stops on negative curvature, on
    Martens' relative-progress test or after ``cg_maxiter`` steps (Martens' 250), and the step is
    then backtracked to sufficient decrease.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, gtol, maxiter, disp, keep_iterates
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
    objective = Objective(fun, x0, jac, hess, hessp)
    step = _HessianFreeStep(objective, MartensDamping(damping), cg_maxiter, warm_start, c1)
    probe = objective.curvature_probe(dense=False) if check_second_order else None
    return _descent_loop(objective, step, probe, callback, disp, gtol, maxiter, keep_iterates)


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


class _HessianFreeStep:
    """One Hessian-free step: damped CG warm-started from the previous step, a backtracking
    search, and the damping update."""

    def __init__(self, objective: Objective, damping: MartensDamping, cg_maxiter: int,
                 warm_start: float, c1: float):
        self.objective, self.damping = objective, damping
        self.cg_maxiter, self.warm_start, self.c1 = cg_maxiter, warm_start, c1
        self.previous = np.zeros_like(objective.x0)

    def __call__(self, x: np.ndarray, f: float, g: np.ndarray) -> tuple[LineSearchResult, dict]:
        lam = self.damping.value
        solve = functools.partial(_truncated_cg, lambda v: self.objective.hessp(x, v), g,
                                  shift=lam, maxiter=self.cg_maxiter, relative_progress=True)
        cg = solve(p0=self.warm_start * self.previous)
        if not g @ cg.p < 0:   # a warm start can, rarely, lead uphill: start from 0 instead
            cg = solve()
        if not np.all(np.isfinite(cg.p)):   # a curvature product was not finite
            return _no_step(x, f), {self.damping.name: lam, "rho": np.nan, "cg": cg.iterations}
        predicted = g @ cg.p + 0.5 * cg.pBp
        search = backtracking(self.objective, x, cg.p, f, g, c1=self.c1)
        rho = (search.f - f) / predicted if search.step == 1.0 and predicted < 0 else 0.0
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


def _descent_loop(objective: Objective, step: StepFunction, probe: Callable | None,
                  callback: Callable | None, disp: bool, gtol: float, maxiter: int | None,
                  keep_iterates: bool, message: Callable | None = None) -> OptimizeResult:
    """The loop the three methods share: gradient test, second-order check and escape, step,
    history and callback, honest status. ``probe(x)`` estimates the leftmost curvature
    ``(theta, u, scale)`` at a first-order point, or None when it cannot (a ``probe`` of None:
    no second-order check); ``message(status)``, if given, may replace the status's message."""
    maxiter = default_maxiter(objective.x0.size) if maxiter is None else maxiter
    monitor = Monitor(objective.counts, callback, disp, keep_iterates)
    converged = GradientTest(gtol)
    x = objective.x0
    f, g = objective.fun(x), objective.grad(x)
    if not np.all(np.isfinite(g)):
        raise ValueError("gradient is not finite at x0")
    nit, status = 0, Status.CALLBACK_STOP if monitor.record(0, x, f, g, step=0.0) else None
    special = None
    while status is None:
        stationary = converged(x, f, g)
        estimate = probe(x) if stationary and probe is not None else ()
        if estimate is None:   # the Hessian is not finite: no second-order check is possible
            status, special = Status.NONFINITE, NONFINITE_HESSIAN_AT_STATIONARY_POINT
            break
        saddle = _saddle(estimate)
        if stationary and not saddle:
            status = Status.SUCCESS
            break
        if nit >= maxiter:
            status = Status.MAXITER
            break
        if stationary:
            search, info = _escape(objective, x, f, g, *saddle), {}
        else:
            search, info = step(x, f, g)
        if not search.success or np.array_equal(search.x, x):
            status = (Status.NONFINITE if search.nonfinite else Status.NOT_A_MINIMUM if stationary
                      else Status.PRECISION_LOSS)
            break
        nit += 1
        step_length = float(np.linalg.norm(search.x - x))
        x, f, g = search.x, search.f, objective.grad(search.x)
        if monitor.record(nit, x, f, g, step=step_length, **info):
            status = Status.CALLBACK_STOP
    special = special or (message(status) if message is not None else None)
    return make_result(objective, x, f, g, status, nit, monitor.history, converged,
                       special or _LINE_SEARCH_MESSAGES.get(status))


_LINE_SEARCH_MESSAGES = {
    Status.PRECISION_LOSS: "Desired accuracy not reached: the line search found no lower value "
                           "along the step (no progress at working precision)",
}


def _no_step(x: np.ndarray, f: float) -> LineSearchResult:
    """The failed search that stops a run whose curvature at x is not finite (status NONFINITE)."""
    return LineSearchResult(0.0, x, f, False, True)


def _saddle(estimate: tuple) -> tuple[np.ndarray, float] | None:
    """The direction and curvature to leave a first-order point along, if the leftmost-curvature
    estimate ``(theta, u, scale)`` says it is a saddle (no estimate, ``()``: no check)."""
    if not estimate:
        return None
    theta, u, scale = estimate
    return (u, theta) if clearly_negative(theta, scale) else None


def _escape(objective: Objective, x: np.ndarray, f: float, g: np.ndarray, direction: np.ndarray,
            curvature: float) -> LineSearchResult:
    """Step from a stationary point along a unit direction of negative curvature (its sign chosen
    to go downhill), trying a step of the size of x first."""
    direction = -direction if g @ direction > 0 else direction
    step0 = max(1.0, float(np.linalg.norm(x)))
    return negative_curvature_search(objective, x, direction, f, g, curvature, step0=step0)


def _cholesky_shifted_step(hess: np.ndarray, g: np.ndarray) -> np.ndarray:
    """-(H + tau I)^{-1} g with the smallest tau in 0, beta, 2 beta, ... (from -min(diag) + beta
    when the diagonal is not positive) for which Cholesky succeeds (N&W Algorithm 3.3); beta is
    1e-3 times ||H||_F so the shift follows the scale of H."""
    size = np.linalg.norm(hess)
    beta = 1e-3 * size if size > 0 else 1.0
    min_diagonal = hess.diagonal().min()
    tau = 0.0 if min_diagonal > 0 else beta - min_diagonal
    identity = np.eye(hess.shape[0])
    while True:
        try:
            factor = scipy.linalg.cho_factor(hess + tau * identity)
            return scipy.linalg.cho_solve(factor, -g)
        except scipy.linalg.LinAlgError:
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


def _truncated_cg(hessp: Callable, g: np.ndarray, *, maxiter: int, shift: float = 0.0,
                  p0: np.ndarray | None = None, relative_progress: bool = False) -> _CGResult:
    """Truncated CG on A p = -g with A = B + shift I, B given by products ``hessp(v)`` (N&W
    Algorithm 7.1; :class:`~optimizers.krylov.ConjugateGradient`, from ``p0`` when that is a
    better start than 0).

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
    cg = ConjugateGradient(hessp, g, shift=shift, p0=p0)
    model_values = [cg.value]
    while cg.iterations < maxiter and np.sqrt(cg.rr) > tol:
        segment = cg.step()
        if cg.negative_curvature:
            d, dd = segment.direction, float(segment.direction @ segment.direction)
            floor = LINE_SEARCH_CG_MARGIN * dd * cg.kappa
            tau = cg.rr / max(abs(segment.curvature), floor) if cg.kappa > 0 else 1.0
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
