"""Bound-constrained problems: hessopt against scipy's bound-constrained methods.

The four MINPACK-2 problems TRON was measured on (Lin & Moré 1999; ``hessopt.problems.bounded``:
elastic-plastic torsion, the obstacle problem, pressure in a journal bearing, the minimal surface
over an obstacle), at n = 10,000 by default, non-negative least squares (2000 x 500, random data,
``||A x - b||^2`` over ``x >= 0``, its minimum from ``scipy.optimize.nnls``) and chained
Rosenbrock in a box at n = 10,000.

hessopt runs as a user calls it, ``hessopt.minimize(fun, x0, bounds=Bounds(lower, upper))`` with
its default method for bounds (trust-ncg: TRON) unless ``--hessopt`` names others (newton-cg is
projected Newton-CG); its time includes tracing the objective. scipy's L-BFGS-B and TNC get
hessopt's exact gradient (value and gradient from one traced sweep, ``jac=True``), trust-constr
also its exact Hessian-vector products (``hessp`` from the cached recording of the gradient),
traced before the clock starts; all run with their default options. The table has ``python -m
hessopt``'s columns: solved (the final f within 1e-6 relative of the minimum over the box,
``Problem.solved``, at a point in the box; NO* = success reported at a point that is not the
minimum), f, the projected gradient's inf-norm, iterations, evaluations of f alone, of the
gradient and of Hessian-vector products (TNC's finite-difference products are gradient
evaluations, counted there), and wall time (one BLAS thread for every method). A second table
sums gradients and Hessian products per problem and method; a third gives hessopt's wall time
over L-BFGS-B's.

Timing: hessopt and L-BFGS-B run ``--repeats`` times in interleaved rounds (hessopt, then
L-BFGS-B, on the same problem, round after round), and the tables show median times and the
median of the per-round ratios, so a machine under load slows both alike; TNC and trust-constr
(tens of seconds each at n = 10,000) run once.

Run: python benchmarks/bench_bounds.py [--n 10000] [--problems torsion,nnls,...]
         [--methods L-BFGS-B,TNC,trust-constr] [--hessopt trust-ncg,newton-cg] [--repeats 5]
"""
from __future__ import annotations

import os

# One BLAS thread: on a shared machine, L-BFGS-B's many small BLAS calls otherwise wait on thread
# synchronization (0.11 s instead of 0.002 s for torsion at n = 100 under load).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

import autodiff as ad  # noqa: E402
import hessopt  # noqa: E402
from hessopt import problems  # noqa: E402
from hessopt.suite import Run, format_table  # noqa: E402
from optimizers.bounds import Box  # noqa: E402

GRID_PROBLEMS = ("torsion", "obstacle", "journal_bearing", "minimal_surface")
SCIPY_METHODS = ("L-BFGS-B", "TNC", "trust-constr")
NNLS_SHAPE = (2000, 500)


def nnls_problem(m: int, n: int, seed: int = 0) -> problems.Problem:
    """``||A x - b||^2`` over x >= 0, A m x n Gaussian, b from a sparse non-negative x plus
    noise, so that about half the bounds bind; the minimum from scipy's ``nnls`` (Lawson &
    Hanson's active-set method)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    truth = np.maximum(rng.standard_normal(n), 0.0)
    b = A @ truth + rng.standard_normal(m)

    def residuals(x):
        return A @ x - b

    def fun(x):
        r = residuals(x)
        return r @ r

    _, rnorm = scipy.optimize.nnls(A, b, maxiter=50 * n)
    return problems.Problem("nnls", f"NNLS {m} x {n}", None, n, m, fun, np.zeros(n), rnorm ** 2,
                            residuals=residuals, lower=np.zeros(n), upper=np.full(n, np.inf))


def bounded_problem(name: str, n: int) -> problems.Problem:
    if name == "nnls":
        return nnls_problem(*NNLS_SHAPE)
    problem = problems.bounded(name, n)
    if not np.isfinite(problem.fmin):
        raise SystemExit(f"{name}: no stored minimum at n = {n}; use n = 100, 2500 or 10000")
    return problem


class Counted:
    """The problem's objective with exact derivatives from a traced program, and counters of the
    evaluations of f alone, of gradients (with or without f) and of Hessian-vector products."""

    def __init__(self, problem: problems.Problem):
        traced = ad.function(problem.fun)
        self._value_and_grad = ad.value_and_grad(traced)
        self._traced = traced
        self._x = self._operator = None
        self.f = self.g = self.hv = 0
        x = problem.x0   # trace f, the gradient and the product programs before any clock starts
        self.value_and_grad(x), self.hessp(x, x), self.fun(x)
        self.f = self.g = self.hv = 0

    def fun(self, x: np.ndarray) -> float:
        self.f += 1
        return float(self._traced(x))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.g += 1
        value, gradient = self._value_and_grad(x)
        return float(value), np.asarray(gradient, dtype=float)

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self._operator_at(x, count=True).gradient

    def hessp(self, x: np.ndarray, p: np.ndarray) -> np.ndarray:
        self.hv += 1
        return self._operator_at(x, count=False).matvec(p)

    def _operator_at(self, x: np.ndarray, count: bool):
        """The Hessian operator of x (its gradient recorded once); building it is a gradient
        evaluation, counted when the gradient is asked for."""
        if self._x is None or not np.array_equal(x, self._x):
            self._operator, self._x = ad.hessian_operator(self._traced, x), np.array(x)
        if count:
            self.g += 1
        return self._operator


def run_scipy(problem: problems.Problem, method: str) -> Run:
    """scipy's ``method`` with its defaults and hessopt's exact derivatives; ``gnorm`` is the
    final projected gradient's inf-norm, ``njev`` counts gradients, ``nfev`` values alone."""
    counted = Counted(problem)
    box = Box(problem.lower, problem.upper)
    if method == "trust-constr":
        arguments = dict(fun=counted.fun, jac=counted.jac, hessp=counted.hessp)
    else:
        arguments = dict(fun=counted.value_and_grad, jac=True)
    start = time.perf_counter()
    result = scipy.optimize.minimize(x0=np.array(problem.x0), method=method,
                                     bounds=scipy.optimize.Bounds(problem.lower, problem.upper),
                                     **arguments)
    seconds = time.perf_counter() - start
    x = box.project(result.x)
    f, g = counted.value_and_grad(x)
    solved = problem.solved(f) and box.contains(result.x)
    return Run(problem.name, problem.n, method, solved, bool(result.success), f,
               float(np.max(np.abs(box.projected_gradient(x, g)))), int(result.nit), counted.f,
               counted.g - 1, counted.hv, seconds, str(result.message))


def run_hessopt(problem: problems.Problem, method: str) -> Run:
    """``hessopt.minimize`` with the problem's bounds and ``method`` (its defaults otherwise);
    ``gnorm`` is the final projected gradient's inf-norm."""
    box = Box(problem.lower, problem.upper)
    start = time.perf_counter()
    result = hessopt.minimize(problem.fun, np.array(problem.x0), method=method,
                              bounds=scipy.optimize.Bounds(problem.lower, problem.upper),
                              options={"keep_iterates": False})
    seconds = time.perf_counter() - start
    solved = problem.solved(result.fun) and box.contains(result.x)
    return Run(problem.name, problem.n, f"hessopt {method}", solved, bool(result.success),
               result.fun, float(np.max(np.abs(box.projected_gradient(result.x, result.jac)))),
               int(result.nit), result.nfev, result.njev, result.nhev, seconds,
               str(result.message))


def interleaved(problem: problems.Problem, hessopt_methods: list[str], scipy_methods: list[str],
                repeats: int) -> tuple[list[Run], dict]:
    """Every method on one problem: hessopt's and L-BFGS-B ``repeats`` times in interleaved
    rounds, the others once. Returns one Run per method (the median time; counts are the same in
    every round) and, per hessopt method, the median of its per-round time ratios to L-BFGS-B."""
    fast = [("hessopt", m) for m in hessopt_methods] + [("scipy", m) for m in scipy_methods
                                                         if m == "L-BFGS-B"]
    rounds = {key: [] for key in fast}
    for _ in range(repeats):
        for key in fast:
            rounds[key].append(run_hessopt(problem, key[1]) if key[0] == "hessopt"
                               else run_scipy(problem, key[1]))
    runs = [replace(r[0], seconds=float(np.median([run.seconds for run in r])))
            for r in rounds.values()]
    runs += [run_scipy(problem, m) for m in scipy_methods if m != "L-BFGS-B"]
    ratios = {}
    if ("scipy", "L-BFGS-B") in rounds:
        reference = [run.seconds for run in rounds[("scipy", "L-BFGS-B")]]
        ratios = {m: float(np.median([run.seconds / ref for run, ref
                                      in zip(rounds[("hessopt", m)], reference)]))
                  for m in hessopt_methods}
    return runs, ratios


def format_ratios(ratios: dict) -> str:
    """hessopt's wall time over L-BFGS-B's per problem (medians of the per-round ratios)."""
    methods = list(dict.fromkeys(m for per_method in ratios.values() for m in per_method))
    lines = [f"{'time / L-BFGS-B time':<32}" + "".join(f"{'hessopt ' + m:>20}" for m in methods)]
    for (problem, n), per_method in ratios.items():
        lines.append(f"{problem + f' (n = {n})':<32}" + "".join(
            f"{per_method[m]:>19.2f}x" if m in per_method else f"{'-':>20}" for m in methods))
    return "\n".join(lines)


def format_evaluations(runs: list[Run]) -> str:
    """Gradients plus Hessian-vector products per problem (rows) and method (columns)."""
    methods = list(dict.fromkeys(r.method for r in runs))
    problems_run = list(dict.fromkeys((r.problem, r.n) for r in runs))
    lines = [f"{'gradients + Hessian products':<32}" + "".join(f"{m:>20}" for m in methods)]
    for problem, n in problems_run:
        cells = {r.method: r for r in runs if (r.problem, r.n) == (problem, n)}
        lines.append(f"{problem + f' (n = {n})':<32}" + "".join(
            f"{cells[m].njev + cells[m].nhev:>19,}{'' if cells[m].solved else '*':<1}"
            if m in cells else f"{'-':>20}" for m in methods))
    lines.append("* not solved")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="grid problems' size (a square)")
    parser.add_argument("--problems", default=",".join(GRID_PROBLEMS + ("nnls", "bounded_rosenbrock")))
    parser.add_argument("--methods", default=",".join(SCIPY_METHODS), help="scipy's methods")
    parser.add_argument("--hessopt", default="trust-ncg", help="hessopt's methods")
    parser.add_argument("--repeats", type=int, default=5,
                        help="interleaved rounds of hessopt and L-BFGS-B")
    args = parser.parse_args(argv)
    hessopt_methods = [m for m in args.hessopt.split(",") if m]
    scipy_methods = [m for m in args.methods.split(",") if m]
    runs, ratios = [], {}
    for name in args.problems.split(","):
        problem = bounded_problem(name, args.n)
        problem_runs, ratios[(problem.name, problem.n)] = interleaved(
            problem, hessopt_methods, scipy_methods, args.repeats)
        runs += problem_runs
        print("\n".join(format_table(problem_runs).splitlines()[2:-1]), flush=True)
    print()
    print(format_table(runs).replace("||g||inf", "||pg||inf"))
    print("||pg||inf: the projected gradient; nfev: values of f alone; njev: gradients; nhev: "
          "Hessian-vector products; time: the median of the interleaved rounds (hessopt and "
          "L-BFGS-B), one run (TNC, trust-constr)")
    print()
    print(format_evaluations(runs))
    if any(ratios.values()):
        print()
        print(format_ratios({key: value for key, value in ratios.items() if value}))


if __name__ == "__main__":
    main()
