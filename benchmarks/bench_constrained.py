"""Constrained problems: scipy's SLSQP and trust-constr, IPOPT and CasADi+IPOPT, with a slot for hessopt.

Problems: the 103 Hock-Schittkowski problems of ``hessopt.problems.HOCK_SCHITTKOWSKI`` and the
scalable sparse ones of ``hessopt.problems.constrained`` (COPS 3.0's hanging chain and Bryson-Denham optimal
control, Lukšan-Vlček 5.1 and 5.2, a factor-model portfolio) at n = 10^3, 10^4, 10^5.

Every solver gets the same exact derivatives from hessopt's autodiff, traced before the clock starts:
the objective's gradient, the constraint Jacobian and the Hessian of the Lagrangian. IPOPT (cyipopt,
MUMPS) gets them sparse, with their patterns found in the program: ``ad.sparse_jacobian`` (for a
handful of rows, such as a budget row that is dense, the reverse-mode ``ad.jacobian`` read at
``ad.jacobian_sparsity``'s pattern) and ``ad.sparse_hessian`` of the Lagrangian
``sigma f(x) + lambda^T c(x)``, written as a function of x and of the multipliers: the multipliers
are an ``ad.Variable`` read afresh at every call, so the traced program replays. trust-constr gets
the sparse matrices too, SLSQP dense ones (it is dense: it runs up to n = 3000 only). CasADi builds
its own derivatives from the same problems written in CasADi (the scalable ones only; checked
against the NumPy definitions at x0); its build time (graph and nlpsol) and solve time are shown
apart. hessopt runs as a user calls it, ``hessopt.minimize(fun, x0, bounds=..., constraints=...)``
(issue 31), its wall-clock budget kept by a callback.

Solved (Schittkowski's test, as in his reports on the collection): at the final x, clipped into the
bounds (IPOPT relaxes them by 1e-8 by design), f(x) - f* <= 1e-6 (1 + |f*|) and the largest scaled
violation of bounds and constraints (``Problem.violation``) <= 1e-6; as in ``hessopt.suite``, f
within that of a documented local minimum counts too (Lukšan-Vlček 5.1's, near 6.2325: its minimum
0 is at x = 1, but from x0 every solver here reaches the local one). f below f* beyond that
tolerance is flagged (``below``): a lower local minimum, or a transcription to check. A reported
success that is not solved goes to the independent check of ``local_minimum.py`` (feasibility, the
KKT residual with least-squares multipliers of the active set, the reduced Hessian of the
Lagrangian, a local SLSQP re-solve around x; none of it reads the solver's multipliers): where the
check fails it is a false success (NO*), where it passes a local minimum other than f* (``loc``,
its own column: a local method cannot tell it from the global one). Where f* is not known
(Bryson-Denham at n = 10^5, which no solver here has solved to 1e-12), solved means
that the check's first-order part passes (feasible, KKT residual at most 1e-5); a reported success
at a feasible point where it does not pass is shown as ``?`` (unverified), not as a false success:
at that size the least-squares multipliers of an ill-conditioned active set (Bryson-Denham's
discretized dynamics) are not accurate enough to refute a point. Counts: nfev = objective and constraint
values, njev = gradients and constraint Jacobians, nhev = Hessians (of the Lagrangian, or of f and
of lambda^T c for trust-constr); deriv. s = the time spent in autodiff's callbacks, part of time s.
One BLAS thread for every solver.

Run: python benchmarks/bench_constrained.py [--solvers SLSQP,trust-constr,ipopt,casadi,hessopt]
         [--problems hs,scalable | hs071,hanging_chain,...] [--sizes 1000,10000,100000]
         [--max-seconds 300] [--profile FILE.png] [--verbose] [--hessopt-options '{"mu_strategy": "adaptive"}']
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.sparse  # noqa: E402

import autodiff as ad  # noqa: E402
import hessopt  # noqa: E402
from hessopt import problems  # noqa: E402

from common import optional  # noqa: E402
from local_minimum import check  # noqa: E402

SOLVERS = ("SLSQP", "trust-constr", "ipopt", "casadi", "hessopt")
SLSQP_MAX_N = 3000  # SLSQP's dense least-squares subproblems: n^2 memory, n^3 work per iteration
DENSE_ROWS = 64  # constraint Jacobians with this many rows or fewer are taken in reverse mode
TOL = 1e-6


@dataclass
class ConstrainedRun:
    """One (problem, solver) run; ``nfev``/``njev``/``nhev`` are what the performance profile sums."""

    problem: str
    n: int
    method: str
    solved: bool
    success: bool
    f: float
    violation: float
    nit: int
    nfev: int
    njev: int
    nhev: int
    seconds: float
    build_seconds: float = 0.0
    message: str = ""
    derivative_seconds: float = np.nan
    local: bool = False        # a success short of f* at a point the independent check verifies as a local minimum
    check: str = ""            # why the independent check refuted a success short of f*
    unverified: bool = False   # f* unknown and the first-order check did not pass: neither solved nor refuted

    @property
    def false_success(self) -> bool:
        return self.success and not self.solved and not self.local and not self.unverified

    def below(self, problem: problems.Problem) -> bool:
        """f under f* beyond the tolerance at a feasible point: a lower minimum, or a transcription to check."""
        return self.solved and self.f < problem.fmin - TOL * (1.0 + abs(problem.fmin))


def judge(problem: problems.Problem, x) -> tuple[bool, float, float]:
    """(solved, f, violation) at x clipped into the bounds (see the module docstring); as in
    ``hessopt.suite``, a documented local minimum (``Problem.local_minima``) counts too."""
    x = np.clip(np.asarray(x, dtype=np.float64), problem.lower, problem.upper)
    f, violation = float(problem.fun(x)), float(problem.violation(x))
    values = np.isfinite(f) and (f - problem.fmin <= TOL * (1.0 + abs(problem.fmin))
                                 or any(abs(f - v) <= TOL * (1.0 + abs(v)) for v in problem.local_minima))
    return bool(values and violation <= TOL), f, violation


class Derivatives:
    """The objective, constraints and their exact derivatives from autodiff, traced once and
    counted: ``counts`` holds the calls of each (what the table reports)."""

    def __init__(self, problem: problems.Problem):
        self.problem, self.m = problem, problem.n_constraints
        self.counts = dict.fromkeys(("f", "c", "g", "J", "H"), 0)
        self.seconds = 0.0  # spent in the callbacks: autodiff's share of a run
        self._fun, self._grad = ad.function(problem.fun), ad.function(ad.grad(problem.fun))
        self._c = ad.function(problem.constraint) if self.m else None
        self.weights = ad.Variable(np.ones(1 + self.m))  # (sigma, lambda): read afresh by each replay
        self._lagrangian = ad.sparse_hessian(lambda x: self.lagrangian(x, self.weights))
        if self.m and self.m <= DENSE_ROWS:
            pattern = ad.jacobian_sparsity(problem.constraint, problem.x0)
            self.jacobian_structure = (pattern.rows, pattern.cols)
            dense = ad.function(ad.jacobian(problem.constraint))
            self._jacobian = lambda x: np.asarray(dense(x))[pattern.rows, pattern.cols]
        elif self.m:
            sparse = ad.sparse_jacobian(problem.constraint)
            J = sparse(problem.x0).tocoo()
            self.jacobian_structure = (J.row, J.col)
            self._jacobian = lambda x: sparse(x).tocoo().data
        H = self._lagrangian(problem.x0)
        columns = np.repeat(np.arange(problem.n), np.diff(H.indptr))
        self._lower = H.indices >= columns
        self.hessian_structure = (H.indices[self._lower], columns[self._lower])
        self.warm_up()

    def lagrangian(self, x, weights):
        """sigma f(x) + lambda^T c(x) for ``weights`` = (sigma, lambda)."""
        value = weights[0] * self.problem.fun(x)
        return value + weights[1:] @ self.problem.constraint(x) if self.m else value

    def warm_up(self) -> None:
        """Trace every program at x0 (outside the timed runs), then zero the counts."""
        x0 = self.problem.x0
        self.fun(x0), self.grad(x0), self.hessian_values(x0, np.ones(self.m), 1.0)
        if self.m:
            self.constraint(x0), self.jacobian_values(x0), self.jacobian(x0)
        self.counts, self.seconds = dict.fromkeys(self.counts, 0), 0.0

    def _timed(self, key: str, evaluate, x):
        start = time.perf_counter()
        value = evaluate(x)
        self.counts[key] += 1
        self.seconds += time.perf_counter() - start
        return value

    def fun(self, x):
        return float(self._timed("f", self._fun, x))

    def grad(self, x):
        return np.asarray(self._timed("g", self._grad, x), dtype=np.float64)

    def constraint(self, x):
        return np.asarray(self._timed("c", self._c, x), dtype=np.float64)

    def jacobian_values(self, x):
        """The Jacobian's entries in ``jacobian_structure``'s order."""
        return self._timed("J", self._jacobian, x)

    def jacobian(self, x):
        """The Jacobian as a CSR matrix."""
        rows, cols = self.jacobian_structure
        return scipy.sparse.csr_matrix((self.jacobian_values(x), (rows, cols)), shape=(self.m, self.problem.n))

    def hessian(self, x, multipliers, sigma: float):
        """The Hessian of sigma f + multipliers^T c, a symmetric CSC matrix."""
        self.weights.assign(np.concatenate([[sigma], multipliers]))
        return self._timed("H", self._lagrangian, x)

    def hessian_values(self, x, multipliers, sigma: float):
        """Its lower triangle in ``hessian_structure``'s order (the pattern never changes: a replay)."""
        return self.hessian(x, multipliers, sigma).data[self._lower]

    def record(self, method: str, x, success: bool, nit: int, seconds: float, message: str) -> ConstrainedRun:
        c = self.counts
        run = record(self.problem, method, x, success, nit, (c["f"] + c["c"], c["g"] + c["J"], c["H"]), seconds,
                     message)
        run.derivative_seconds = self.seconds
        return run


def record(problem: problems.Problem, method: str, x, success: bool, nit: int, counts: tuple, seconds: float,
           message: str, build_seconds: float = 0.0) -> ConstrainedRun:
    """The run, judged at x; ``counts`` = (values, first derivatives, Hessians)."""
    solved, f, violation = judge(problem, x)
    run = ConstrainedRun(problem.name, problem.n, method, solved, bool(success), f, violation, int(nit), *counts,
                         seconds, build_seconds, " ".join(str(message).split())[:90])
    if not np.isfinite(problem.fmin):   # f* unknown at this size: solved when the first-order check passes
        verdict = check(problem, x)
        run.solved, run.check = verdict.local_minimum, verdict.reason
        run.unverified = run.success and not run.solved and verdict.violation <= TOL
    elif run.success and not solved:
        verdict = check(problem, x)
        run.local, run.check = verdict.local_minimum, verdict.reason
    return run


class Budget:
    """A wall-clock budget for scipy's callbacks: StopIteration once it is spent."""

    def __init__(self, seconds: float):
        self.deadline, self.iterations = time.perf_counter() + seconds, 0

    def __call__(self, *args):
        self.iterations += 1
        if time.perf_counter() > self.deadline:
            raise StopIteration


def run_slsqp(problem: problems.Problem, seconds: float) -> ConstrainedRun | str:
    if problem.n > SLSQP_MAX_N:
        return f"SLSQP skipped at n = {problem.n} (dense: n^2 memory, n^3 work per iteration)"
    d = Derivatives(problem)
    m = problem.n_constraints
    lower, upper = (problem.constraint_lower, problem.constraint_upper) if m else (np.zeros(0), np.zeros(0))
    equal = lower == upper
    below, above = (~equal) & np.isfinite(lower), (~equal) & np.isfinite(upper)
    constraints = []
    if equal.any():
        constraints.append({"type": "eq", "fun": lambda x: d.constraint(x)[equal] - lower[equal],
                            "jac": lambda x: d.jacobian(x)[equal].toarray()})
    if below.any() or above.any():
        constraints.append({"type": "ineq",
                            "fun": lambda x: np.concatenate([(c := d.constraint(x))[below] - lower[below],
                                                             upper[above] - c[above]]),
                            "jac": lambda x: np.vstack([(J := d.jacobian(x).toarray())[below], -J[above]])})
    budget = Budget(seconds)
    start = time.perf_counter()
    result = scipy.optimize.minimize(d.fun, np.array(problem.x0), jac=d.grad, method="SLSQP",
                                     bounds=scipy.optimize.Bounds(problem.lower, problem.upper),
                                     constraints=constraints, callback=budget, options={"maxiter": 3000})
    return d.record("SLSQP", result.x, result.success, result.nit, time.perf_counter() - start, result.message)


def run_trust_constr(problem: problems.Problem, seconds: float) -> ConstrainedRun:
    d = Derivatives(problem)
    constraints = []
    if problem.n_constraints:
        constraints.append(scipy.optimize.NonlinearConstraint(
            d.constraint, problem.constraint_lower, problem.constraint_upper, jac=d.jacobian,
            hess=lambda x, v: d.hessian(x, v, 0.0)))
    bounded = np.isfinite(problem.lower).any() or np.isfinite(problem.upper).any()
    budget = Budget(seconds)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "delta_grad == 0.0", "singular Jacobian" chatter
        result = scipy.optimize.minimize(d.fun, np.array(problem.x0), jac=d.grad, hess=lambda x: d.hessian(
            x, np.zeros(problem.n_constraints), 1.0), method="trust-constr", constraints=constraints,
            bounds=scipy.optimize.Bounds(problem.lower, problem.upper) if bounded else None,
            callback=lambda x, state: budget(), options={"maxiter": 3000})
    return d.record("trust-constr", result.x, result.success, result.nit, time.perf_counter() - start,
                    result.message)


class _IpoptModel:
    """cyipopt's problem interface over ``Derivatives``; ``intermediate`` keeps the iteration count
    and stops at the deadline."""

    def __init__(self, derivatives: Derivatives, seconds: float):
        self.d, self.deadline, self.iterations = derivatives, time.perf_counter() + seconds, 0
        self.objective, self.gradient = derivatives.fun, derivatives.grad
        self.constraints, self.jacobian = derivatives.constraint, derivatives.jacobian_values

    def jacobianstructure(self):
        return self.d.jacobian_structure

    def hessianstructure(self):
        return self.d.hessian_structure

    def hessian(self, x, multipliers, sigma):
        return self.d.hessian_values(x, multipliers, sigma)

    def intermediate(self, alg_mod, iter_count, *args):
        self.iterations = iter_count
        return time.perf_counter() < self.deadline


def run_ipopt(problem: problems.Problem, seconds: float) -> ConstrainedRun | str:
    cyipopt = optional("cyipopt")
    if cyipopt is None:
        return "ipopt skipped: cyipopt is not installed (pip install cyipopt-wheels: the bench extra)"
    d = Derivatives(problem)
    model = _IpoptModel(d, seconds)
    m = problem.n_constraints
    lower_c = problem.constraint_lower if m else np.zeros(0)
    upper_c = problem.constraint_upper if m else np.zeros(0)
    if not m:  # cyipopt wants the callbacks even without constraints
        model.constraints, model.jacobian = (lambda x: np.zeros(0)), (lambda x: np.zeros(0))
        d.jacobian_structure = (np.zeros(0, int), np.zeros(0, int))
    nlp = cyipopt.Problem(n=problem.n, m=m, problem_obj=model, lb=problem.lower, ub=problem.upper, cl=lower_c,
                          cu=upper_c)
    nlp.add_option("print_level", 0)
    nlp.add_option("sb", "yes")
    start = time.perf_counter()
    x, info = nlp.solve(np.array(problem.x0))
    return d.record("ipopt", x, info["status"] in (0, 1), model.iterations, time.perf_counter() - start,
                    info["status_msg"].decode() if isinstance(info["status_msg"], bytes) else info["status_msg"])


def hessopt_refusal() -> str | None:
    """Why hessopt.minimize cannot run constrained problems yet, or None once it can."""
    p = problems.hock_schittkowski(71)
    try:
        hessopt.minimize(p.fun, p.x0, bounds=scipy.optimize.Bounds(p.lower, p.upper), constraints=p.constraints,
                         options={"maxiter": 1})
    except (ValueError, TypeError, NotImplementedError) as error:
        if "constraint" in str(error):
            return f"hessopt skipped: hessopt.minimize does not take constraints yet (issue 31): {error}"[:160]
        raise
    return None


#: options passed to hessopt.minimize on constrained problems (``--hessopt-options``: e.g. the interior
#: point's mu_strategy; bound-constrained problems run another method, which would refuse them)
HESSOPT_OPTIONS: dict = {}


def run_hessopt(problem: problems.Problem, seconds: float) -> ConstrainedRun:
    """As a user calls it: scipy's forms, derivatives from autodiff, its tracing in the time; the
    wall-clock budget by a callback, as for scipy's methods."""
    start = time.perf_counter()
    result = hessopt.minimize(problem.fun, np.array(problem.x0),
                              bounds=scipy.optimize.Bounds(problem.lower, problem.upper),
                              constraints=problem.constraints, callback=Budget(seconds),
                              options=dict(HESSOPT_OPTIONS) if problem.n_constraints else {})
    seconds = time.perf_counter() - start
    # as IPOPT's: values of f and of c, gradients and Jacobians, Hessians of the Lagrangian (hessopt's
    # constr_nhev counts the same Hessians as its nhev)
    counts = tuple(int(np.sum(result.get(key, 0))) + int(np.sum(result.get(f"constr_{key}", 0)))
                   for key in ("nfev", "njev")) + (int(result.get("nhev", 0)),)
    return record(problem, "hessopt", result.x, result.success, result.get("nit", 0), counts, seconds,
                  result.message)


# --- CasADi: the scalable problems in CasADi's own language -------------------------------------------


def _casadi_model(ca, problem: problems.Problem):
    """(x, f, g) as CasADi SX expressions, or None for a problem not written here."""
    n, x = problem.n, ca.SX.sym("x", problem.n)
    trapezoid = (lambda v, h: 0.5 * h * (v[1:] + v[:-1]))
    if problem.name == "hanging_chain":
        nh = n // 4 - 1
        h, slope, height, energy, arc = 1.0 / nh, x[0::4], x[1::4], x[2::4], x[3::4]
        ds = ca.sqrt(1 + slope ** 2)
        return x, energy[nh], ca.vertcat(
            height[1:] - height[:-1] - trapezoid(slope, h), energy[1:] - energy[:-1] - trapezoid(height * ds, h),
            arc[1:] - arc[:-1] - trapezoid(ds, h), height[0] - 1.0, height[nh] - 3.0, energy[0], arc[0], arc[nh] - 4.0)
    if problem.name == "bryson_denham":
        N = n // 3 - 1
        h, first, second, third = 1.0 / N, x[0::3], x[1::3], x[2::3]
        return x, 0.5 * ca.sum1(trapezoid(third ** 2, h)), ca.vertcat(
            first[1:] - first[:-1] - trapezoid(second, h), second[1:] - second[:-1] - trapezoid(third, h),
            first[0], second[0] - 1.0, first[N], second[N] + 1.0)
    if problem.name == "rosenbrock_trigexp":
        head, a, b, c = x[:-1], x[:-2], x[1:-1], x[2:]
        return x, ca.sum1(100 * (head ** 2 - x[1:]) ** 2 + (head - 1) ** 2), (
            3 * b ** 3 + 2 * c - 5 + ca.sin(b - c) * ca.sin(b + c) + 4 * b - a * ca.exp(a - b) - 3)
    if problem.name == "wood_broyden":
        a, b, c, d = x[0:n - 2:2], x[1:n - 2:2], x[2::2], x[3::2]
        objective = ca.sum1(100 * (a ** 2 - b) ** 2 + (a - 1) ** 2 + 90 * (c ** 2 - d) ** 2 + (c - 1) ** 2
                            + 10 * (b + d - 2) ** 2 + 0.1 * (b - d) ** 2)
        centre = x[5:n - 2]
        neighbours = sum(x[k:n - 7 + k] * (1 + x[k:n - 7 + k]) for k in (0, 1, 2, 3, 4, 6))
        return x, objective, (2 + 5 * centre ** 2) * centre + 1 + neighbours
    if problem.name == "portfolio":  # a QP: its data read off its own exact derivatives
        hessian = ad.sparse_hessian(problem.fun)(problem.x0).diagonal()
        jacobian = ad.jacobian(problem.constraint)(problem.x0)
        offset = problem.constraint(np.zeros(n))
        return x, 0.5 * ca.dot(ca.DM(hessian), x ** 2), ca.mtimes(ca.DM(jacobian), x) + ca.DM(offset)
    return None


def run_casadi(problem: problems.Problem, seconds: float) -> ConstrainedRun | str:
    ca = optional("casadi")
    if ca is None:
        return "casadi skipped: not installed (pip install casadi: the bench extra)"
    start = time.perf_counter()
    model = _casadi_model(ca, problem)
    if model is None:
        return f"casadi skipped on {problem.name}: not written in CasADi here"
    x, f, g = model
    solver = ca.nlpsol("solver", "ipopt", {"x": x, "f": f, "g": g},
                       {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes", "ipopt.max_wall_time": seconds})
    build = time.perf_counter() - start
    check = ca.Function("check", [x], [f, g])
    f0, g0 = (np.asarray(value, dtype=np.float64).ravel() for value in check(problem.x0))
    # to rounding: a sum over 10^5 terms in another order differs by ~1e-12 (a misprint: by far more)
    if not (np.allclose(f0, problem.fun(problem.x0), rtol=1e-10) and
            np.allclose(g0, problem.constraint(problem.x0), rtol=1e-10, atol=1e-9)):
        raise AssertionError(f"the CasADi model of {problem.name} differs from its NumPy definition at x0")
    start = time.perf_counter()
    result = solver(x0=problem.x0, lbx=problem.lower, ubx=problem.upper, lbg=problem.constraint_lower,
                    ubg=problem.constraint_upper)
    solve = time.perf_counter() - start
    stats = solver.stats()
    calls = {key: stats.get("n_call_" + key, 0) for key in ("nlp_f", "nlp_g", "nlp_grad_f", "nlp_jac_g", "nlp_hess_l")}
    counts = (calls["nlp_f"] + calls["nlp_g"], calls["nlp_grad_f"] + calls["nlp_jac_g"], calls["nlp_hess_l"])
    return record(problem, "casadi+ipopt", np.asarray(result["x"]).ravel(), stats["success"], stats["iter_count"],
                  counts, solve, stats["return_status"], build)


# --- the race ---------------------------------------------------------------------------------------

RUNNERS = {"SLSQP": run_slsqp, "trust-constr": run_trust_constr, "ipopt": run_ipopt, "casadi": run_casadi,
           "hessopt": run_hessopt}


def instances(names: list[str], sizes: list[int]) -> list[problems.Problem]:
    """The Hock-Schittkowski problems and the scalable ones at each size (rounded down to one the
    problem takes: a multiple of its unknowns per node for the control problems)."""
    chosen = []
    for name in names:
        if name == "hs":
            chosen += problems.HOCK_SCHITTKOWSKI
        elif name == "scalable":
            chosen += [instance for key in problems.CONSTRAINED for instance in instances([key], sizes)]
        elif name in problems.CONSTRAINED:
            multiple = {"hanging_chain": 4, "bryson_denham": 3}.get(name, 1)
            chosen += [problems.constrained(name, size // multiple * multiple) for size in sizes]
        else:
            chosen.append(problems.hock_schittkowski(int(name.lower().removeprefix("hs"))))
    return chosen


def race(chosen: list[problems.Problem], solvers: list[str], seconds: float, verbose: bool) -> list[ConstrainedRun]:
    runs = []
    if "hessopt" in solvers and (reason := hessopt_refusal()):
        print(reason)
        solvers = [s for s in solvers if s != "hessopt"]
    for problem in chosen:
        for solver in solvers:
            if solver == "casadi" and problem.collection == "HS":
                continue
            try:
                run = RUNNERS[solver](problem, seconds)
            except Exception as error:  # a solver that raises has not solved the problem: say why
                label = "casadi+ipopt" if solver == "casadi" else solver
                run = ConstrainedRun(problem.name, problem.n, label, False, False, np.nan, np.nan, 0, 0, 0, 0,
                                     0.0, message=f"raised {type(error).__name__}: {error}"[:90])
            if isinstance(run, str):
                if verbose or problem.collection != "HS":
                    print(run)
                continue
            runs.append(run)
            if verbose:
                print(row(run, problem), flush=True)
    return runs


def row(run: ConstrainedRun, problem: problems.Problem) -> str:
    flag = ("yes" + ("<" if run.below(problem) else "")) if run.solved else (
        "NO*" if run.false_success else "loc" if run.local else "?" if run.unverified else "no")
    build = f"{run.build_seconds:8.2f}" if run.build_seconds else " " * 8
    derivatives = f"{run.derivative_seconds:9.3f}" if np.isfinite(run.derivative_seconds) else " " * 9
    return (f"{run.problem:<20}{run.n:>7}  {run.method:<14}{flag:>5}{run.f:>16.9g}{run.violation:>10.1e}"
            f"{run.nit:>6}{run.nfev:>7}{run.njev:>7}{run.nhev:>7}{run.seconds:>9.3f}{derivatives}{build}"
            f"  {run.message[:40]}" + (f" [check: {run.check}]" if (run.false_success or run.unverified) and run.check
                                       else ""))


ROW_HEADER = (f"{'problem':<20}{'n':>7}  {'solver':<14}{'solved':>5}{'f':>16}{'violation':>10}{'nit':>6}"
              f"{'nfev':>7}{'njev':>7}{'nhev':>7}{'time s':>9}{'deriv. s':>9}{'build s':>8}  message")


def summary(runs: list[ConstrainedRun], label: str) -> str:
    """Per solver: problems, solved, false successes, evaluations and time (sums over all runs)."""
    lines = [f"{label}:", f"  {'solver':<14}{'problems':>9}{'solved':>8}{'false succ.':>12}{'local min.':>11}"
                          f"{'below f*':>9}{'evaluations':>13}{'time s':>10}{'build s':>9}"]
    for method in dict.fromkeys(r.method for r in runs):
        mine = [r for r in runs if r.method == method]
        below = sum(r.below(problem_of(r)) for r in mine)
        lines.append(f"  {method:<14}{len(mine):>9}{sum(r.solved for r in mine):>8}"
                     f"{sum(r.false_success for r in mine):>12}{sum(r.local for r in mine):>11}{below:>9}"
                     f"{sum(r.nfev + r.njev + r.nhev for r in mine):>13}{sum(r.seconds for r in mine):>10.2f}"
                     f"{sum(r.build_seconds for r in mine):>9.2f}")
    return "\n".join(lines)


_PROBLEMS: dict = {}


def problem_of(run: ConstrainedRun) -> problems.Problem:
    return _PROBLEMS[(run.problem, run.n)]


def profile(runs: list[ConstrainedRun], path: str) -> None:
    """Dolan-Moré profiles (evaluations) of the Hock-Schittkowski set and of the scalable problems."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hessopt import plot

    groups = [("Hock-Schittkowski", [r for r in runs if problem_of(r).collection == "HS"]),
              ("scalable sparse problems", [r for r in runs if problem_of(r).collection != "HS"])]
    groups = [(title, group) for title, group in groups if group]
    fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 4.8), squeeze=False)
    for ax, (title, group) in zip(axes[0], groups):
        plot.performance_profile(group, ax=ax)
        count = len({(r.problem, r.n) for r in group})
        for line, style in zip(ax.lines, ("-", "--", "-.", ":", (0, (5, 1, 1, 1)))):   # told apart in grey too
            line.set_linestyle(style)
            solved = sum(r.solved for r in group if r.method == line.get_label())
            line.set_label(f"{line.get_label()} ({solved} of {count} solved)")
        ax.set_title(f"{title}: {count} problems (Dolan & Moré 2002)", fontsize=11)
        ax.set_xlabel("τ (log scale): within a factor τ of the fewest evaluations of any solver\n"
                      "(values of f and c + gradients and Jacobians + Hessians of the Lagrangian)")
        ax.set_ylabel(f"fraction of the {count} problems solved (f* reached, feasible)")
        ax.legend(loc="lower right", fontsize=9, title="solver", title_fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"profile written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default="SLSQP,trust-constr,ipopt,casadi,hessopt")
    parser.add_argument("--problems", default="hs,scalable")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="wall-clock budget per run")
    parser.add_argument("--profile", help="write the performance profile figure (PNG) here")
    parser.add_argument("--verbose", action="store_true", help="one row per run")
    parser.add_argument("--hessopt-options", type=json.loads, default={},
                        help='hessopt.minimize\'s options as JSON, e.g. \'{"mu_strategy": "adaptive"}\'')
    args = parser.parse_args()
    HESSOPT_OPTIONS.update(args.hessopt_options)
    solvers = args.solvers.split(",")
    unknown = set(solvers) - set(SOLVERS)
    if unknown:
        parser.error(f"unknown solvers {sorted(unknown)}; choose from {SOLVERS}")
    chosen = instances(args.problems.split(","), [int(s) for s in args.sizes.split(",")])
    _PROBLEMS.update({(p.name, p.n): p for p in chosen})
    if args.verbose:
        print(ROW_HEADER)
    runs = race(chosen, solvers, args.max_seconds, args.verbose)
    print()
    for label, group in (("Hock-Schittkowski", [r for r in runs if problem_of(r).collection == "HS"]),
                         ("scalable", [r for r in runs if problem_of(r).collection != "HS"])):
        if group:
            print(summary(group, label))
    print("solved: f - f* <= 1e-6 (1 + |f*|) and scaled violation <= 1e-6 at x clipped into the bounds; "
          "NO* = false success: success reported where the independent check (local_minimum.py: feasibility, KKT "
          "with least-squares multipliers, reduced Hessian, a local re-solve) fails; local min. (loc) = success at "
          "a verified local minimum above f*; below f* = solved with f under f* - tol")
    if args.profile:
        profile(runs, args.profile)


if __name__ == "__main__":
    main()
