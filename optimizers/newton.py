"""Line-search Newton methods: full-Hessian Newton, truncated Newton (Newton-CG) and Martens'
Hessian-free optimization.

All three share one loop (:func:`_descent_loop`): stop when ||g||_inf <= gtol, but only after a
check for negative curvature at that point; if some is found, step along it and carry on, so a
saddle point is left rather than reported as a minimum.

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

from .linesearch import LineSearchResult, backtracking, negative_curvature_search, strong_wolfe
from .objective import (CALLBACK_STOP, MAXITER, NONFINITE, NOT_A_MINIMUM, PRECISION_LOSS, SUCCESS,
                        Monitor, Objective, make_result)

# d^T H d <= NEGATIVE_CURVATURE_TOL * ||d||^2 * (curvature scale of H) counts as non-positive.
NEGATIVE_CURVATURE_TOL = np.sqrt(np.finfo(float).eps)
# In CG, where d^T H d is computed from one product, only curvature within rounding of zero counts
# as non-positive: sqrt(eps) treated the soft directions of badly scaled problems (Hessian
# condition 1e10 and more: Powell badly scaled, Meyer) as negative curvature and capped the steps.
CG_CURVATURE_TOL = 1e3 * np.finfo(float).eps
LANCZOS_PROBES = 10   # Lanczos steps used to look for negative curvature at a stationary point
# Newton-CG's nonmonotone memory: on the MGH set (gtol 1e-8, all 39 solved) memory 1 (monotone)
# costs ~8700 evaluations, 10 ~5600, 15 ~5700, 20 ~4700, 25 ~3900, 30 and 40 ~3800.
NONMONOTONE_MEMORY = 30

StepFunction = Callable[[np.ndarray, float, np.ndarray], "tuple[LineSearchResult, dict]"]
CurvatureProbe = Callable[[np.ndarray], "tuple[np.ndarray, float] | None"]


def minimize_newton(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                    hessp: Callable | None = None, callback: Callable | None = None, *,
                    gtol: float = 1e-5, maxiter: int | None = None, disp: bool = False,
                    shift: str = "cholesky", c1: float = 1e-4, c2: float = 0.9,
                    check_second_order: bool = True) -> OptimizeResult:
    """Newton's method with the full Hessian and a strong Wolfe line search (unit step first).

    An indefinite Hessian is made positive definite before solving (N&W §3.4): ``shift=
    "cholesky"`` adds tau*I until a Cholesky factorization succeeds (N&W Algorithm 3.3);
    ``shift="eigen"`` replaces each eigenvalue by its absolute value (N&W §3.4). With
    ``check_second_order`` the stopping point is checked with a dense eigendecomposition.
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
        if h is None:  # stop here: a failed search that found only non-finite values
            return LineSearchResult(0.0, x, f, False, True), {}
        return strong_wolfe(objective, x, newton_direction(h, g), f, g, c1=c1, c2=c2), {}

    def probe(x):
        h = finite_hessian(x)
        return None if h is None else _dense_curvature_probe(h)

    result = _descent_loop(objective, step, probe if check_second_order else None, callback, disp,
                           gtol, maxiter)
    if nonfinite:
        result.message = _NONFINITE_HESSIAN[result.status]
    return result


_NONFINITE_HESSIAN = {
    NONFINITE: "The Hessian is not finite at the last iterate: no Newton step can be computed; "
               "returning the best point found.",
    SUCCESS: "Optimization terminated successfully: gradient norm below gtol (the second-order "
             "check was skipped: the Hessian is not finite there).",
}


def minimize_newton_cg(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                       hessp: Callable | None = None, callback: Callable | None = None, *,
                       gtol: float = 1e-5, maxiter: int | None = None, disp: bool = False,
                       cg_maxiter: int | None = None, c1: float = 1e-4, c2: float = 0.5,
                       nonmonotone: int = NONMONOTONE_MEMORY,
                       check_second_order: bool = True) -> OptimizeResult:
    """Truncated Newton: CG on H p = -g from Hessian-vector products only (N&W §7.1).

    The inner CG stops once ||H p + g|| <= eta ||g|| with the forcing term eta = min(0.25,
    sqrt(||g||)), which gives superlinear convergence (Dembo, Eisenstat & Steihaug 1982), or when
    it meets a direction of non-positive curvature relative to the curvature it has seen so far;
    that direction is then added to the step (see :func:`_conjugate_gradient`).

    The line search is strong Wolfe (``c2 = 0.5``: a more exact search than the usual 0.9 keeps
    the iterates near curved valleys, where Newton steps then succeed). Two safeguards let the
    iterates follow narrow curved valleys (Meyer, penalty II, Biggs EXP6) instead of zigzagging
    across them with a long tangent step cut back by the search and a short step back to the
    floor: the first trial step is capped like a trust radius (:class:`_StepBound`), and that
    first trial is accepted nonmonotonically, against the highest of the last ``nonmonotone``
    values of f (Grippo, Lampariello & Lucidi 1986); ``nonmonotone=1`` is the monotone method.
    """
    objective = Objective(fun, x0, jac, hess, hessp)
    cg_maxiter = cg_maxiter or 20 * objective.x0.size
    bound, recent = _StepBound(), deque(maxlen=nonmonotone)

    def step(x, f, g):
        gnorm = np.linalg.norm(g)
        cg = _conjugate_gradient(lambda v: objective.hessp(x, v), g,
                                 tol=_forcing(gnorm) * gnorm, maxiter=cg_maxiter)
        recent.append(f)
        step0 = bound.first_step(cg.p)
        search = strong_wolfe(objective, x, cg.p, f, g, step0=step0, c1=c1, c2=c2,
                              reference=max(recent))
        bound.update(search.step, step0, cg.p)
        return search, {"cg": cg.iterations, "negative_curvature": cg.negative_curvature}

    probe = _lanczos_probe(objective) if check_second_order else None
    return _descent_loop(objective, step, probe, callback, disp, gtol, maxiter)


def minimize_hessian_free(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                          hessp: Callable | None = None, callback: Callable | None = None, *,
                          gtol: float = 1e-5, maxiter: int | None = None, disp: bool = False,
                          damping: float = 1.0, cg_maxiter: int = 250, warm_start: float = 0.95,
                          c1: float = 1e-4, check_second_order: bool = True) -> OptimizeResult:
    """Hessian-free optimization (Martens 2010): CG on (B + lambda I) p = -g with B given by
    ``hessp`` (the Hessian, or a Gauss-Newton product the caller supplies).

    lambda (initially ``damping``) follows the Levenberg-Marquardt rule on the reduction ratio
    rho = (f(x+p) - f(x)) / (g^T p + p^T B p / 2): x1.5 when rho < 1/4, x2/3 when rho > 3/4. CG
    starts from ``warm_start`` times the previous step, stops on negative curvature or Martens'
    relative-progress test, and the step is then backtracked to sufficient decrease.
    """
    objective = Objective(fun, x0, jac, hess, hessp)
    state = {"damping": float(damping), "p": np.zeros_like(objective.x0)}

    def step(x, f, g):
        lam = state["damping"]
        gnorm = np.linalg.norm(g)
        solve = functools.partial(_conjugate_gradient, lambda v: objective.hessp(x, v), g,
                                  shift=lam, tol=_forcing(gnorm) * gnorm, maxiter=cg_maxiter,
                                  relative_progress=True)
        cg = solve(p0=warm_start * state["p"])
        if not g @ cg.p < 0:   # a warm start can, rarely, lead uphill: start from 0 instead
            cg = solve()
        predicted = g @ cg.p + 0.5 * cg.pBp
        search = backtracking(objective, x, cg.p, f, g, c1=c1)
        rho = (search.f - f) / predicted if search.step == 1.0 and predicted < 0 else 0.0
        if rho < 0.25:
            state["damping"] = lam * 1.5
        elif rho > 0.75:
            state["damping"] = lam * (2.0 / 3.0)
        state["p"] = cg.p
        return search, {"lambda": lam, "rho": rho, "cg": cg.iterations}

    probe = _lanczos_probe(objective) if check_second_order else None
    return _descent_loop(objective, step, probe, callback, disp, gtol, maxiter)


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


def _forcing(gnorm: float) -> float:
    """Inexact-Newton forcing term eta_k = min(0.25, sqrt(||g_k||)): loose far from a solution,
    tending to 0 near one for superlinear convergence (Dembo, Eisenstat & Steihaug 1982)."""
    return min(0.25, np.sqrt(gnorm))


def _descent_loop(objective: Objective, step: StepFunction, probe: CurvatureProbe | None,
                  callback: Callable | None, disp: bool, gtol: float,
                  maxiter: int | None) -> OptimizeResult:
    """The loop the three methods share: gradient test, second-order check and escape, step,
    history and callback, honest status."""
    maxiter = 200 * objective.x0.size if maxiter is None else maxiter
    monitor = Monitor(callback, disp)
    x = objective.x0
    f, g = objective.fun(x), objective.grad(x)
    if not np.all(np.isfinite(g)):
        raise ValueError("gradient is not finite at x0")
    nit, status = 0, CALLBACK_STOP if monitor.record(0, x, f, g, step=0.0) else None
    while status is None:
        stationary = np.linalg.norm(g, np.inf) <= gtol
        curvature = probe(x) if stationary and probe is not None else None
        if stationary and curvature is None:
            status = SUCCESS
            break
        if nit >= maxiter:
            status = MAXITER
            break
        if stationary:
            search, info = _escape(objective, x, f, g, *curvature), {}
        else:
            search, info = step(x, f, g)
        if not search.success or search.f == f:   # a nonmonotone step may raise f, never keep it
            status = (NONFINITE if search.nonfinite else NOT_A_MINIMUM if stationary
                      else PRECISION_LOSS)
            break
        nit += 1
        step_length = float(np.linalg.norm(search.x - x))
        x, f, g = search.x, search.f, objective.grad(search.x)
        if monitor.record(nit, x, f, g, step=step_length, **info):
            status = CALLBACK_STOP
    return make_result(objective, x, status, nit, monitor.history)


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
    return -vectors @ ((vectors.T @ g) / np.maximum(np.abs(eigenvalues), floor))


def _dense_curvature_probe(hess: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The eigenvector of the most negative eigenvalue, if that is clearly negative."""
    eigenvalues, vectors = scipy.linalg.eigh(hess)
    if eigenvalues[0] < -NEGATIVE_CURVATURE_TOL * np.abs(eigenvalues).max():
        return vectors[:, 0], float(eigenvalues[0])
    return None


def _lanczos_probe(objective: Objective) -> CurvatureProbe:
    """A probe for negative curvature at x from a few Lanczos steps on H(x) (Hessian-vector
    products only, full reorthogonalization, fixed random start): the lowest Ritz pair, if its
    Ritz value is clearly negative. A Ritz vector's Rayleigh quotient is its Ritz value, so a
    negative one is a genuine direction of negative curvature."""
    def probe(x: np.ndarray) -> tuple[np.ndarray, float] | None:
        n = x.size
        start = np.random.default_rng(0).standard_normal(n)
        basis = [start / np.linalg.norm(start)]
        diagonal, offdiagonal = [], []
        steps = min(LANCZOS_PROBES, n)
        for j in range(steps):
            w = objective.hessp(x, basis[j])
            q = np.array(basis)
            coefficients = q @ w
            w = w - q.T @ coefficients
            w -= q.T @ (q @ w)          # second pass: full reorthogonalization, twice is enough
            diagonal.append(coefficients[j])
            beta = np.linalg.norm(w)
            if j == steps - 1 or beta <= NEGATIVE_CURVATURE_TOL * np.abs(diagonal).max():
                break
            offdiagonal.append(beta)
            basis.append(w / beta)
        ritz_values, ritz_vectors = scipy.linalg.eigh_tridiagonal(np.array(diagonal),
                                                                  np.array(offdiagonal))
        if ritz_values[0] < -NEGATIVE_CURVATURE_TOL * np.abs(ritz_values).max():
            direction = np.array(basis[:len(diagonal)]).T @ ritz_vectors[:, 0]
            return direction / np.linalg.norm(direction), float(ritz_values[0])
        return None
    return probe


class _CGResult(NamedTuple):
    p: np.ndarray           # the step
    pBp: float              # p^T B p for the unshifted curvature B
    iterations: int
    negative_curvature: bool  # CG stopped on a direction of non-positive curvature


def _conjugate_gradient(hessp: Callable, g: np.ndarray, *, tol: float, maxiter: int,
                        shift: float = 0.0, p0: np.ndarray | None = None,
                        relative_progress: bool = False) -> _CGResult:
    """Truncated CG on A p = -g with A = B + shift I, B given by products ``hessp(v)`` (N&W
    Algorithm 7.1), from ``p0`` when that is a better start than 0 (phi(p0) < 0, p0^T A p0 > 0).

    Stops when ||r|| <= tol, after ``maxiter`` iterations, on Martens' relative-progress test
    (``relative_progress``), or on a direction d with d^T A d <= eps ||d||^2 * kappa, where kappa
    is the largest |d^T A d| / ||d||^2 seen in this run: non-positive curvature relative to the
    operator's own scale, so the test does not depend on how f is scaled (unlike an absolute
    threshold). Then tau d, tau = ||r||^2 / |d^T A d|, is added to the CG iterate: the Newton step
    along d on the absolute curvature. It goes downhill on the model, since r.d = -||r||^2 in CG,
    and with p = 0 it is a scaled steepest-descent step (d = -g). p^T B p follows from the residual
    r = A p + g, at no extra product.
    """
    p, r = np.zeros_like(g), g.copy()
    if p0 is not None and p0.any():
        a_p0 = hessp(p0) + shift * p0
        if p0 @ a_p0 > 0 and g @ p0 + 0.5 * p0 @ a_p0 < 0:
            p, r = p0.copy(), a_p0 + g
    d, rr = -r, r @ r
    kappa, model_values = 0.0, [0.5 * p @ (r + g)]
    iterations = 0
    while iterations < maxiter and np.sqrt(rr) > tol:
        ad = hessp(d) + shift * d
        dad, dd = d @ ad, d @ d
        kappa = max(kappa, abs(dad) / dd)
        if dad <= CG_CURVATURE_TOL * dd * kappa:
            # Newton step along d on the absolute curvature: the model's slope along d is r.d = -rr
            tau = rr / max(abs(dad), CG_CURVATURE_TOL * dd * kappa) if kappa > 0 else 1.0
            p_a_p = p @ (r - g) + 2.0 * tau * (d @ (r - g)) + tau * tau * dad
            p = p + tau * d
            return _CGResult(p, p_a_p - shift * (p @ p), iterations, True)
        alpha = rr / dad
        p = p + alpha * d
        r = r + alpha * ad
        rr, rr_old = r @ r, rr
        d = -r + (rr / rr_old) * d
        iterations += 1
        if relative_progress and _stalled(model_values, 0.5 * p @ (r + g), iterations):
            break
    return _CGResult(p, p @ (r - g) - shift * (p @ p), iterations, False)


def _stalled(model_values: list, value: float, i: int, epsilon: float = 5e-4) -> bool:
    """Martens' (2010, §4.4) CG stopping rule on the model values phi_i: stop once phi_i < 0 and
    (phi_i - phi_{i-k}) / phi_i < k * epsilon with k = max(10, i / 10)."""
    model_values.append(value)
    k = max(10, i // 10)
    return i > k and value < 0 and (value - model_values[i - k]) / value < k * epsilon
