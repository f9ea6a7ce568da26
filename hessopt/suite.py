"""The problem suite behind ``python -m hessopt``: methods on test problems, side by side with scipy.

Runs are independent, so they are mapped over any ``concurrent.futures.Executor`` (``--workers N``
uses a process pool). Problems travel to workers by name and are rebuilt there.
"""
from __future__ import annotations

import functools
import time
import warnings
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import scipy.optimize
from scipy.optimize import OptimizeWarning

from . import problems
from ._derivatives import AutodiffDerivatives
from ._many import minimize_many
from ._minimize import METHODS, minimize

SCIPY_COUNTERPARTS = {"newton-cg": "Newton-CG", "trust-ncg": "trust-ncg",
                      "trust-krylov": "trust-krylov", "trust-exact": "trust-exact", "dogleg": "dogleg"}
_DENSE = {"trust-exact", "dogleg"}


@functools.cache
def _problem(name: str, n: int) -> problems.Problem:
    """Problems are built once per process (scalable ones compute index arrays when built)."""
    return problems.get(name, n)


@dataclass(frozen=True)
class ProblemFunction:
    """A problem's objective that pickles by name, so process and cluster executors can ship it."""

    name: str
    n: int

    def __call__(self, x):
        return _problem(self.name, self.n).fun(x)


@dataclass(frozen=True)
class OpaqueFunction(ProblemFunction):
    """The objective as code autodiff cannot follow (it turns x into an ndarray first), so that
    ``minimize`` takes finite differences of it (:mod:`hessopt._finite_differences`)."""

    def __call__(self, x):
        return _problem(self.name, self.n).fun(np.asarray(x))


@dataclass
class Run:
    """One (problem, method) run: what the table shows.

    ``solved`` is judged by the problem (its known minimum or a documented local one), not by the
    method's own ``success``; a success that is not solved is a false success.

    Examples
    --------
    >>> from hessopt.suite import Run
    >>> run = Run("rosenbrock", 2, "newton", False, True, 0.5, 0.0, 9, 10, 10, 9, 0.01, "converged")
    >>> run.evaluations, run.false_success
    (29, True)
    """

    problem: str
    n: int
    method: str
    solved: bool
    success: bool
    f: float
    gnorm: float
    nit: int
    nfev: int
    njev: int
    nhev: int
    seconds: float
    message: str

    @property
    def evaluations(self) -> int:
        """nfev + njev + nhev: what the performance profile compares."""
        return self.nfev + self.njev + self.nhev

    @property
    def false_success(self) -> bool:
        """Reported success at a point that is not a (documented) minimum."""
        return self.success and not self.solved


def _record(problem: problems.Problem, method: str, result, seconds: float) -> Run:
    f = float(result.fun)
    return Run(problem.name, problem.n, method, bool(np.isfinite(f) and problem.solved(f)),
               bool(result.success), f, float(np.linalg.norm(result.jac, np.inf)), int(result.nit),
               int(result.nfev), int(result.njev), int(getattr(result, "nhev", 0)), seconds,
               str(result.message))


def run_hessopt(problem: problems.Problem, method: str, options: dict | None = None,
                finite_differences: bool = False) -> Run:
    """``hessopt.minimize`` with the method's defaults unless ``options`` say otherwise; the
    iterates are not kept (a large problem's would fill memory for a table that never shows
    them). ``finite_differences``: the objective hidden from autodiff (:class:`OpaqueFunction`),
    so its derivatives are finite differences.

    Examples
    --------
    >>> from hessopt import problems, suite
    >>> run = suite.run_hessopt(problems.get("beale"), "newton-cg")
    >>> run.method, run.solved, run.success
    ('newton-cg', True, True)
    """
    start = time.perf_counter()
    function = (OpaqueFunction if finite_differences else ProblemFunction)(problem.name, problem.n)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "autodiff cannot follow fun", OptimizeWarning)
        result = minimize(function, problem.x0, method=method, options={"keep_iterates": False, **(options or {})})
    return _record(problem, method, result, time.perf_counter() - start)


def run_scipy(problem: problems.Problem, method: str, options: dict | None = None) -> Run:
    """scipy's counterpart of ``method`` with its default options and the same exact derivatives
    (cached the same way); ``options`` (maxiter only) are passed through.

    Examples
    --------
    >>> from hessopt import problems, suite
    >>> run = suite.run_scipy(problems.get("beale"), "trust-exact")
    >>> run.method, run.solved
    ('scipy trust-exact', True)
    """
    options = {"maxiter": options["maxiter"]} if options and "maxiter" in options else None
    derivatives = AutodiffDerivatives(problem.fun)
    second = {"hess": derivatives.hess} if method in _DENSE else {"hessp": derivatives.hessp}
    start = time.perf_counter()
    result = scipy.optimize.minimize(derivatives.fun, np.array(problem.x0), jac=derivatives.jac,
                                     method=SCIPY_COUNTERPARTS[method], options=options, **second)
    if "jac" not in result:
        result.jac = derivatives.jac(result.x)
    return _record(problem, "scipy " + method, result, time.perf_counter() - start)


def _run_task(task):
    """Module-level, so executors can pickle it."""
    kind, name, n, method, options = task
    if kind == "scipy":
        return run_scipy(_problem(name, n), method, options)
    return run_hessopt(_problem(name, n), method, options, finite_differences=kind == "differences")


def run_suite(instances, methods, compare_scipy: bool = False, executor: Executor | None = None,
              options: dict | None = None, finite_differences: bool = False) -> list[Run]:
    """Every method (and, if asked, its scipy counterpart) on every problem instance.

    Parameters
    ----------
    instances : iterable of Problem
    methods : iterable of str
        ``hessopt.minimize`` methods.
    compare_scipy : bool, default False
        Also run scipy's counterpart of each method that has one.
    executor : concurrent.futures.Executor, optional
        Where to map the runs (default: sequentially here).
    options : dict, optional
        Passed to every run.
    finite_differences : bool, default False
        hessopt's runs on the objectives hidden from autodiff: derivatives by finite differences.

    Returns
    -------
    list of Run
        Problem by problem, methods in order (each followed by its scipy counterpart).

    Examples
    --------
    >>> from hessopt import problems, suite
    >>> runs = suite.run_suite([problems.get("beale")], ["newton", "trust-ncg"], compare_scipy=True)
    >>> [(run.method, run.solved) for run in runs]
    [('newton', True), ('trust-ncg', True), ('scipy trust-ncg', True)]
    """
    tasks = []
    for problem in instances:
        for method in methods:
            tasks.append(("differences" if finite_differences else "hessopt", problem.name, problem.n, method,
                          options))
            if compare_scipy and method in SCIPY_COUNTERPARTS:
                tasks.append(("scipy", problem.name, problem.n, method, options))
    mapped = executor.map(_run_task, tasks) if executor is not None else map(_run_task, tasks)
    return list(mapped)


def format_table(runs: list[Run]) -> str:
    """One line per run: problem, n, method, solved, f, ||g||inf, counts and time.

    Examples
    --------
    >>> from hessopt.suite import Run, format_table
    >>> print(format_table([Run("beale", 2, "newton", True, True, 0.0, 1e-9, 6, 9, 7, 7, 0.01, "")]))
    problem          n  method   solved   f   ||g||inf   nit   nfev   njev   nhev   time s
    ---...
    beale            2  newton   yes      0   1.00e-09     6      9      7      7    0.010
    NO* = reported success at a point that is not a (documented) minimum
    """
    header = (f"{'problem':<28}{'n':>6}  {'method':<20}{'solved':>7}{'f':>13}{'||g||inf':>11}"
              f"{'nit':>7}{'nfev':>7}{'njev':>7}{'nhev':>8}{'time s':>9}")
    lines = [header, "-" * len(header)]
    for r in runs:
        flag = "yes" if r.solved else ("NO*" if r.false_success else "no")
        lines.append(f"{r.problem:<28}{r.n:>6}  {r.method:<20}{flag:>7}{r.f:>13.5g}{r.gnorm:>11.2e}"
                     f"{r.nit:>7}{r.nfev:>7}{r.njev:>7}{r.nhev:>8}{r.seconds:>9.3f}")
    lines.append("NO* = reported success at a point that is not a (documented) minimum")
    return "\n".join(lines)


def format_summary(runs: list[Run]) -> str:
    """Per method: solved, false successes and evaluations (nfev + njev + nhev, summed over the
    instances) for hessopt and, where they were run, for scipy's counterpart, side by side.

    Examples
    --------
    >>> from hessopt import problems, suite
    >>> beale = problems.get("beale")
    >>> print(suite.format_summary([suite.run_hessopt(beale, "newton-cg"),
    ...                             suite.run_scipy(beale, "newton-cg")]))  # doctest: +ELLIPSIS
                   hessopt                                          scipy
    method            solved  false success  evaluations   time s      solved  false success  evaluations   time s
    ---...
    newton-cg          1 / 1              0           39     ...       1 / 1              0           53     ...
    solved: ...
    """
    methods = list(dict.fromkeys(r.method for r in runs if not r.method.startswith("scipy ")))
    with_scipy = any(r.method.startswith("scipy ") for r in runs)
    columns = f"{'solved':>9}{'false success':>15}{'evaluations':>13}{'time s':>9}"
    lines = [f"{'':<15}{'hessopt':<49}{'scipy' if with_scipy else ''}".rstrip(),
             f"{'method':<15}{columns}" + (f"   {columns}" if with_scipy else ""),
             "-" * (15 + len(columns) + (len(columns) + 3 if with_scipy else 0))]
    for method in methods:
        row = f"{method:<15}{_totals([r for r in runs if r.method == method])}"
        if with_scipy:
            row += "   " + (_totals([r for r in runs if r.method == "scipy " + method])
                           or f"{'-':>9}")
        lines.append(row)
    lines.append("solved: final f at the known minimum or a documented local minimum (the same "
                 "criterion for both);\nfalse success: success reported anywhere else")
    return "\n".join(lines)


def _totals(runs: list[Run]) -> str:
    if not runs:
        return ""
    solved = f"{sum(r.solved for r in runs)} / {len(runs)}"
    return (f"{solved:>9}{sum(r.false_success for r in runs):>15}"
            f"{sum(r.evaluations for r in runs):>13,}{sum(r.seconds for r in runs):>9.2f}")


def rosenbrock_race(n: int, methods=("newton-cg", "trust-krylov"),
                    gtol: float | None = None) -> list[Run]:
    """Chained Rosenbrock (scipy's ``rosen``) at size n, both libraries with their defaults
    (hessopt to ``gtol`` if given).

    Examples
    --------
    >>> from hessopt import suite
    >>> [(run.method, run.solved) for run in suite.rosenbrock_race(10, methods=("trust-krylov",))]
    [('trust-krylov', True), ('scipy trust-krylov', True)]
    """
    problem = problems.scalable("chained_rosenbrock", n)
    options = None if gtol is None else {"gtol": gtol}
    runs = []
    for method in methods:
        runs.append(run_hessopt(problem, method, options))
        runs.append(run_scipy(problem, method))
    return runs


__all__ = ["Run", "run_suite", "run_hessopt", "run_scipy", "format_table", "format_summary",
           "rosenbrock_race", "METHODS", "minimize_many"]
