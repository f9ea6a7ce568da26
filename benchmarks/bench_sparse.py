"""Sparse Hessians: pattern detection, star colouring, the sparse Hessian from k products, and
whole Newton solves against CasADi + IPOPT and jax.hessian.

Four structured problems at n = 10^4, 10^5 and 10^6 (a dense Hessian at 10^6 would need 8 TB),
each plain NumPy: chained Rosenbrock (``scipy.optimize.rosen``'s sum; tridiagonal), ARWHEAD
(diagonal plus a dense last row and column), BDQRTIC (band of half-bandwidth 3 plus a dense last
row and column) and the minimal surface with Enneper's boundary values (MINPACK-2 DMSA, as
``hessopt.problems.bounded("minimal_surface", n).fun``, here without its bounds; an m x m grid,
n = 100^2, 316^2, 1000^2, 7-point coupling).

Table 1, per problem and n: the seconds to detect the pattern (``ad.hessian_sparsity``:
recording f and its gradient, propagating index sets, symmetrizing), to colour it, and to compute
the sparse Hessian at a point (``ad.sparse_hessian``, pattern and colouring cached: one replayed
program of the gradient and one batched sweep of k products); the colours k, the sparse Hessian
against k Hessian-vector products of an already recorded operator, and one NumPy evaluation of f.
Each step's growth from 10^4 and from 10^5 to 10^6 is printed as a ratio to linear growth (1.0:
linear; the target is within 1.5), next to f's own ratio: arrays that outgrow the caches make plain
NumPy grow faster than linearly too, and f measured in the same run normalizes for the load of a
shared machine ("/ f": the step's ratio divided by f's). Times are medians of repeats, interleaved.

Table 2, per problem and n: a whole Newton solve, ``hessopt.minimize(f, x0, method="newton")``
from the plain NumPy f (wall time of the call: tracing, pattern detection and colouring, the
sparse Hessian and its LDL^T factorization at every iterate, the line search), its iterations and
final ||g||_inf; CasADi + IPOPT on the same objective written in CasADi (MX, ``nlpsol`` with exact
Hessians and IPOPT's default MUMPS, tol 1e-8): the seconds to build the solver (CasADi derives
the Hessian's expression and pattern there) and to solve, its iterations, and ||g||_inf of the
NumPy f at its answer; the ratios of hessopt's time to IPOPT's solve and to CasADi's build +
solve; and Newton with dense ``jax.hessian`` (jit-compiled, float64) where a dense Hessian fits
(n = 10^4; compile time excluded), run by the same ``optimizers.minimize_newton`` without its
second-order check (a dense eigendecomposition at n = 10^4 would take minutes). Both stop on
comparable tests: hessopt's relative gradient test max_i |g_i| max(1, |x_i|) / max(1, |f|) <=
1e-8, IPOPT's scaled dual infeasibility <= 1e-8. A peer that is not installed leaves its columns
empty.

Table 3, the Krylov methods (newton-cg, trust-ncg, trust-krylov) on the minimal surface and on
chained Rosenbrock at n = 10^4 and 10^5, with their solves unpreconditioned (``precondition``
False) and under the automatic rule (None, the default: the incomplete Cholesky factorization of
the sparse Hessian from the iterate after the first whose solve took more than 100 products;
``optimizers.preconditioning``): iterations, Hessian-vector products, seconds, whether the run was
preconditioned, final ||g||_inf. Unpreconditioned newton-cg on the grid is run at 10^4 only
(58,976 products there; at 10^5 it did not finish in 10 minutes).

Table 4 (``--degenerate``), the sparse factorizations at degenerate points: trust-exact and
dogleg on chained Rosenbrock from x_i = 0.5 (indefinite Hessians, lambda_1 = -98 and lambda_2
within 1e-3 of it at n = 1,500) with
``options={"sparse": True}`` at n = 500, 2,000 and 20,000: iterations, seconds, and per
iteration the LDL^T factorizations and their solves (``optimizers.sparse.LDLFactorization``'s
counts); then Newton on ``sum((x[1:] - x[:-1])**2)`` (a singular semidefinite Hessian) at n =
2,000 from a standard normal x0: iterations and seconds.

Table 5 (``--dense-lines``), constraint Jacobians with dense rows (``ad.sparse_jacobian``) at n = 10^3, 10^4, 10^5: a
chain of rows x_{i+1}^2 - x_i with one dense row (a budget, sum(x) - 1) or three (also sum(x^2)
and sum_i i x_i). A column colouring alone needs one colour per column there; the automatic
partition reads the dense rows from reverse products and the chain from a column colouring. Per
case: the seconds to detect the pattern, to choose and colour the partition, and to compute the
sparse Jacobian (pattern and partition cached), the forward and reverse products, and the products
and seconds of forward products alone (``partition="columns"``, up to n = 10^4). Then the Hessian
side: a Lagrangian whose Hessian is an arrowhead (a chain plus a multiplier times x_n sum(x^2): a
dense last row and column) at the same sizes, and a rank-one term (sum x)^2, whose Hessian is
dense (its pattern has n^2 entries: n = 10^3 and 3 x 10^3 only), with the colours, the seconds of
each step and whether a ``DensePatternWarning`` was given.

CasADi is skipped where its growth between the two sizes before projects over 15 minutes
(``PEER_LIMIT``).

Start points (the same for every solver): ARWHEAD and BDQRTIC x_i = 1 (CUTEst's); the minimal
surface MINPACK-2's start (the boundary values blended across the square, clipped into DMSA_B's
box as ``hessopt.problems`` gives it); chained Rosenbrock x_i = 1.2, Nocedal & Wright's start
(1.2, 1.2) of their Exercise 3.1 extended. From the usual (-1.2, 1, -1.2, ...) (Lukšan & Vlček
1999), from CUTEst GENROSE's x_i = i/(n+1) and from x_i = -1, the iterations of both Newton and
IPOPT grow linearly with n (measured on a shared machine: Newton 445 / 3000+ at n = 100 / 1,000
from (-1.2, 1, ...), ending at the local minimum f = 3.99 at n = 100; 90 / 846 / 3000+ at n =
10^2 / 10^3 / 10^4 from GENROSE's start; IPOPT 159 / 1,479 / 3000+ and 76 / 747 / 3000+): the
chain carries the solution's information one variable per iteration. From x_i = 1.2 both need 8.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse.py [--quick] [--no-solves]
(--quick: n = 10^4 and 10^5 only; --no-solves: table 1 only; --preconditioning: table 3 only;
--degenerate: table 4 only; --dense-lines: table 5 only; --grids: table 6 only, with --only NAME,
--n N and --solver newton|newton-cg|ipopt|l-bfgs-b to run a part, --limit the CPU seconds, --small
at n = 10^4; --chains:
the chain and arrowhead rows of table 2 at 10^6, for comparing branches)
"""
from __future__ import annotations

import math
import statistics
import sys
import time
import warnings

import numpy as np
from bench_factorizations import energy3d, energy13, peak_megabytes

import autodiff as ad
import hessopt
import optimizers
import optimizers.newton
import optimizers.sparse
import optimizers.trust_region
from hessopt.problems import bounded, enneper_edges

from common import optional

casadi = optional("casadi")
cyipopt = optional("cyipopt")
jax = optional("jax")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def arwhead(x):
    return np.sum(-4 * x[:-1] + 3) + np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2)


def bdqrtic(x):
    inner = x[:-4] ** 2 + 2 * x[1:-3] ** 2 + 3 * x[2:-2] ** 2 + 4 * x[3:-1] ** 2 + 5 * x[-1] ** 2
    return np.sum((-4 * x[:-4] + 3) ** 2) + np.sum(inner ** 2)


def minimal_surface(x):
    """MINPACK-2's minimal surface area (DMSA) with Enneper's boundary values, unbounded."""
    return _surface(x.size).fun(x)


_SURFACES: dict = {}


def _surface(n: int):
    if n not in _SURFACES:
        _SURFACES[n] = bounded("minimal_surface", n)
    return _SURFACES[n]


PROBLEMS = {"chained Rosenbrock": rosenbrock, "ARWHEAD": arwhead, "BDQRTIC": bdqrtic,
            "minimal surface": minimal_surface}
STARTS = {rosenbrock: lambda n: np.full(n, 1.2), arwhead: np.ones, bdqrtic: np.ones,
          minimal_surface: lambda n: _surface(n).x0}


def size_of(f, n: int) -> int:
    """n, or the nearest square for the grid."""
    return int(round(math.sqrt(n))) ** 2 if f is minimal_surface else n


# --- the same objectives in CasADi (MX: vector operations, like the NumPy code) ----------------

def casadi_objective(f, x, n: int):
    ca = casadi
    if f is rosenbrock:
        return ca.sum1(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    if f is arwhead:
        head = x[:-1]
        return ca.sum1(-4 * head + 3) + ca.sum1((head ** 2 + x[-1] ** 2) ** 2)
    if f is bdqrtic:
        inner = x[:-4] ** 2 + 2 * x[1:-3] ** 2 + 3 * x[2:-2] ** 2 + 4 * x[3:-1] ** 2 + 5 * x[-1] ** 2
        return ca.sum1((-4 * x[:-4] + 3) ** 2) + ca.sum1(inner ** 2)
    # MINPACK-2 DMSA: two triangles a cell, x row by row (x index fastest), as hessopt.problems
    side = int(round(math.sqrt(n)))
    h = 1.0 / (side + 1.0)
    bottom, top, left, right = (ca.DM(edge) for edge in enneper_edges(side))
    inner = ca.reshape(x, side, side).T                       # row j: the points (., j + 1)
    middle = ca.horzcat(left[1:-1], inner, right[1:-1])
    grid = ca.vertcat(bottom.T, middle, top.T)
    dx = grid[:, 1:] - grid[:, :-1]
    dy = grid[1:, :] - grid[:-1, :]
    lower = ca.sqrt(1 + (dx[:-1, :] / h) ** 2 + (dy[:, :-1] / h) ** 2)
    upper = ca.sqrt(1 + (dx[1:, :] / h) ** 2 + (dy[:, 1:] / h) ** 2)
    return 0.5 * h * h * (ca.sum1(ca.sum2(lower)) + ca.sum1(ca.sum2(upper)))


def solve_ipopt(f, x0: np.ndarray) -> dict:
    """CasADi + IPOPT from x0: build seconds, solve seconds, iterations, the answer."""
    n = x0.size
    start = time.perf_counter()
    x = casadi.MX.sym("x", n)
    solver = casadi.nlpsol("ipopt", "ipopt", {"x": x, "f": casadi_objective(f, x, n)},
                           {"ipopt.print_level": 0, "ipopt.sb": "yes", "print_time": 0,
                            "ipopt.tol": 1e-8, "ipopt.max_iter": 3000})
    built = time.perf_counter()
    answer = solver(x0=x0)
    solved = time.perf_counter()
    return {"build": built - start, "solve": solved - built, "nit": solver.stats()["iter_count"],
            "x": np.asarray(answer["x"]).ravel(), "status": solver.stats()["return_status"]}


def solve_jax(f, x0: np.ndarray) -> dict:
    """Newton (``optimizers.minimize_newton``) with dense jax.hessian, compile time excluded."""
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    jax_f = {rosenbrock: lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
             arwhead: lambda x: jnp.sum(-4 * x[:-1] + 3) + jnp.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2),
             bdqrtic: lambda x: (jnp.sum((-4 * x[:-4] + 3) ** 2) + jnp.sum(
                 (x[:-4] ** 2 + 2 * x[1:-3] ** 2 + 3 * x[2:-2] ** 2 + 4 * x[3:-1] ** 2
                  + 5 * x[-1] ** 2) ** 2))}.get(f)
    if jax_f is None:   # the grid's finite elements are not written for JAX here
        return {}
    value, gradient, hessian = jax.jit(jax_f), jax.jit(jax.grad(jax_f)), jax.jit(jax.hessian(jax_f))
    for compile_once in (value, gradient, hessian):
        compile_once(x0).block_until_ready()
    start = time.perf_counter()
    result = optimizers.minimize_newton(lambda x: float(value(x)), x0, lambda x: np.asarray(gradient(x)),
                                        hess=lambda x: np.asarray(hessian(x)), keep_iterates=False,
                                        check_second_order=False)
    return {"solve": time.perf_counter() - start, "nit": result.nit}


def gradient_norm(f, x: np.ndarray) -> float:
    return float(np.abs(ad.grad(f)(x)).max())


# --- table 1: detection, colouring, the sparse Hessian -----------------------------------------

STEPS = ("detect", "colour", "sparse", "f")


def measure(f, n: int, repeats: int) -> dict:
    """Medians of ``repeats`` rounds, each timing every step once."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, n)
    pattern = ad.hessian_sparsity(f, x)
    k = int(pattern.coloring().max()) + 1
    hessian = ad.sparse_hessian(f)
    hessian(x)  # the pattern, the colouring and the trace of the products, once
    operator = ad.hessian_operator(ad.function(f), x)
    v = np.ones(n)
    operator.matvec(v)

    def colour():
        pattern._coloring = None  # computed afresh
        start = time.perf_counter()
        pattern.coloring()
        return time.perf_counter() - start
    steps = {"detect": lambda: ad.hessian_sparsity(f, x), "colour": colour, "sparse": lambda: hessian(x),
             "hvp": lambda: operator.matvec(v), "f": lambda: f(x)}
    times = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            taken = step()
            times[name].append(taken if name == "colour" else time.perf_counter() - start)
    found = {name: statistics.median(values) for name, values in times.items()}
    return dict(found, k=k, nnz=pattern.nnz)


def sparse_table(sizes: list) -> None:
    print(f"{'problem':<20}{'n':>10}{'nnz':>11}{'k':>4}{'detect s':>10}{'colour s':>10}"
          f"{'sparse H s':>12}{'/ k HVPs':>10}{'f ms':>8}")
    for name, f in PROBLEMS.items():
        rows = {}
        for n in sizes:
            n = size_of(f, n)
            rows[n] = r = measure(f, n, 3 if n >= 10 ** 6 else 7)
            print(f"{name:<20}{n:>10,}{r['nnz']:>11,}{r['k']:>4}{r['detect']:>10.3f}{r['colour']:>10.3f}"
                  f"{r['sparse']:>12.3f}{r['sparse'] / (r['k'] * r['hvp']):>10.2f}{1e3 * r['f']:>8.2f}")
        sizes_run = sorted(rows)
        for small in sizes_run[:-1]:
            large = sizes_run[-1]
            growth = {step: (rows[large][step] / rows[small][step]) / (large / small) for step in STEPS}
            print(f"{'':<20}growth {small:,} -> {large:,} as a ratio to linear: "
                  + ", ".join(f"{step} {growth[step]:.2f}" for step in STEPS)
                  + "; / f: " + ", ".join(f"{step} {growth[step] / growth['f']:.2f}" for step in STEPS[:-1]))


# --- table 2: whole Newton solves ----------------------------------------------------------------

# CasADi's build and IPOPT's solve are skipped at a size where the growth seen between the two
# sizes before projects more than this many seconds: ARWHEAD's and BDQRTIC's dense last row makes
# CasADi grow about quadratically there (ARWHEAD, MX, build + solve: 0.8 s at n = 10^4, 33 s at
# 10^5, so about an hour at 10^6).
PEER_LIMIT = 900.0


def projected_seconds(times: dict, n: int) -> float:
    """The seconds at n by the power law through the last two (size, seconds) measured."""
    if len(times) < 2:
        return 0.0
    (small, t_small), (large, t_large) = sorted(times.items())[-2:]
    power = math.log(t_large / t_small) / math.log(large / small)
    return t_large * (n / large) ** power


def solve_table(sizes: list) -> None:
    print(f"\n{'problem':<20}{'n':>10} | {'hessopt newton':^26} | {'CasADi + IPOPT':^37} |"
          f" {'hessopt /':^15} | {'jax.hessian':^13}")
    print(f"{'':<20}{'':>10} | {'nit':>4}{'s':>9}{'||g||inf':>13} | {'build s':>8}{'solve s':>9}{'nit':>5}"
          f"{'||g||inf':>13}  | {'solve':>7}{'all':>7} | {'nit':>4}{'s':>8}")
    for name, f in PROBLEMS.items():
        peer_times: dict = {}
        for n in sizes:
            n = size_of(f, n)
            x0 = STARTS[f](n)
            start = time.perf_counter()
            ours = hessopt.minimize(f, x0, method="newton", options={"keep_iterates": False})
            seconds = time.perf_counter() - start
            line = f"{name:<20}{n:>10,} | {ours.nit:>4}{seconds:>9.2f}{gradient_norm(f, ours.x):>13.1e} | "
            if casadi is not None and projected_seconds(peer_times, n) <= PEER_LIMIT:
                peer = solve_ipopt(f, x0)
                peer_seconds = peer_times[n] = peer["build"] + peer["solve"]
                line += (f"{peer['build']:>8.2f}{peer['solve']:>9.2f}{peer['nit']:>5}"
                         f"{gradient_norm(f, peer['x']):>13.1e}  | {seconds / peer['solve']:>7.2f}"
                         f"{seconds / peer_seconds:>7.2f} | ")
            else:
                skipped = (f"skipped: projected {projected_seconds(peer_times, n):,.0f} s"
                           if casadi is not None else "")
                line += f"{skipped:>37}  | {'':>14} | "
            dense = solve_jax(f, x0) if jax is not None and n <= 10 ** 4 else {}
            if dense:
                line += f"{dense['nit']:>4}{dense['solve']:>8.2f}"
            print(line, flush=True)
    print("hessopt / solve: hessopt's seconds over IPOPT's solve; / all: over CasADi's build + solve. "
          + ("" if casadi else "(casadi not installed) ") + ("" if jax else "(jax not installed)"))


KRYLOV_METHODS = ("newton-cg", "trust-ncg", "trust-krylov")


def preconditioning_table(sizes: list) -> None:
    print(f"\n{'problem':<20}{'n':>10}  {'method':<13}{'precondition':>13} |{'nit':>6}{'products':>10}"
          f"{'s':>9}  {'preconditioned':>14}{'||g||inf':>11}")
    for name, f in (("minimal surface", minimal_surface), ("chained Rosenbrock", rosenbrock)):
        for n in sizes:
            n = size_of(f, n)
            x0 = STARTS[f](n)
            for method in KRYLOV_METHODS:
                for precondition in (False, None):
                    if f is minimal_surface and method == "newton-cg" and precondition is False and n > 10 ** 4:
                        continue   # 58,976 products at 10^4; not done in 10 minutes at 10^5
                    start = time.perf_counter()
                    result = hessopt.minimize(f, x0, method=method, options={"precondition": precondition,
                                                                              "keep_iterates": False})
                    seconds = time.perf_counter() - start
                    print(f"{name:<20}{n:>10,}  {method:<13}{precondition!s:>13} |{result.nit:>6}"
                          f"{result.nhev:>10,}{seconds:>9.2f}  {result.preconditioned!s:>14}"
                          f"{gradient_norm(f, result.x):>11.1e}", flush=True)


class _CountedFactorization(optimizers.sparse.LDLFactorization):
    """The methods' LDL^T, each instance registered so that a run's counts can be summed."""
    made: list = []

    def __init__(self, method: str | None = None):
        super().__init__(method)
        _CountedFactorization.made.append(self)


def _counted_run(f, x0: np.ndarray, method: str) -> tuple:
    """``hessopt.minimize(f, x0, method=method)`` on the sparse path: the result, its seconds,
    and its factorizations and solves per iteration."""
    _CountedFactorization.made = []
    start = time.perf_counter()
    result = hessopt.minimize(f, x0, method=method, options={"sparse": True, "keep_iterates": False})
    seconds = time.perf_counter() - start
    nit = max(result.nit, 1)
    return (result, seconds, sum(ldl.factorizations for ldl in _CountedFactorization.made) / nit,
            sum(ldl.solves for ldl in _CountedFactorization.made) / nit)


def chain_differences(x):
    return np.sum((x[1:] - x[:-1]) ** 2)


def degenerate_table(sizes: list) -> None:
    for module in (optimizers.trust_region, optimizers.newton):
        module.LDLFactorization = _CountedFactorization
    print(f"\n{'problem':<20}{'n':>8}  {'method':<12}|{'nit':>6}{'s':>9}{'s / it':>9}{'fact / it':>11}"
          f"{'solves / it':>13}{'||g||inf':>11}")
    cases = [("chained Rosenbrock", rosenbrock, method, n, np.full(n, 0.5))
             for method in ("trust-exact", "dogleg") for n in sizes]
    cases.append(("singular chain", chain_differences, "newton", 2000, np.random.default_rng(0).standard_normal(2000)))
    for name, f, method, n, x0 in cases:
        result, seconds, factorizations, solves = _counted_run(f, x0, method)
        print(f"{name:<20}{n:>8,}  {method:<12}|{result.nit:>6}{seconds:>9.2f}{seconds / max(result.nit, 1):>9.3f}"
              f"{factorizations:>11.1f}{solves:>13.1f}{gradient_norm(f, result.x):>11.1e}", flush=True)


# --- table 5: Jacobians with dense rows, Hessians with a dense row and column or a rank-one term ---

def budget(x):
    return np.append(x[1:] ** 2 - x[:-1], np.sum(x) - 1.0)


def three_dense_rows(x):
    return np.concatenate([x[1:] ** 2 - x[:-1], [np.sum(x) - 1.0, np.sum(x ** 2), x @ np.arange(x.size)]])


def arrowhead_lagrangian(x):
    return np.sum(x[1:] * x[:-1] ** 2) + 0.7 * x[-1] * np.sum(x ** 2)


def rank_one(x):
    return np.sum(x[1:] * x[:-1] ** 2) + np.sum(x) ** 2


def timed(step, *args) -> tuple:
    """(seconds, result) of one call ``step(*args)``."""
    start = time.perf_counter()
    result = step(*args)
    return time.perf_counter() - start, result


def dense_lines_table(sizes: list, repeats: int = 5) -> None:
    print(f"\n{'Jacobian':<18}{'n':>9}{'detect s':>10}{'colour s':>10}{'sparse J s':>12}{'fwd':>5}{'rev':>5}"
          f" | {'columns only':>12}{'s':>9}")
    for name, f in (("chain + 1 dense", budget), ("chain + 3 dense", three_dense_rows)):
        for n in sizes:
            x = np.random.default_rng(0).uniform(0.5, 1.5, n)
            detect, pattern = timed(ad.jacobian_sparsity, f, x)
            colour, (columns, rows) = timed(pattern.bicoloring)
            jacobian = ad.sparse_jacobian(f)
            jacobian(x)   # its own pattern, partition and traces, once
            sparse = statistics.median(timed(jacobian, x)[0] for _ in range(repeats))
            line = (f"{name:<18}{n:>9,}{detect:>10.3f}{colour:>10.3f}{sparse:>12.4f}{columns.max() + 1:>5}"
                    f"{rows.max() + 1:>5} | {pattern.bicoloring('columns')[0].max() + 1:>12,}")
            if n <= 10 ** 4:
                forward_only = ad.sparse_jacobian(f, partition="columns")
                forward_only(x)
                line += f"{timed(forward_only, x)[0]:>9.3f}"
            print(line, flush=True)
    print(f"\n{'Hessian':<18}{'n':>9}{'detect s':>10}{'colour s':>10}{'sparse H s':>12}{'k':>7}  dense warning")
    for name, f, sizes_run in (("arrowhead", arrowhead_lagrangian, sizes), ("rank one", rank_one, [1000, 3000])):
        for n in sizes_run:
            x = np.random.default_rng(0).uniform(0.5, 1.5, n)
            detect, pattern = timed(ad.hessian_sparsity, f, x)
            colour, colours = timed(pattern.coloring)
            hessian = ad.sparse_hessian(f)
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                hessian(x)
            sparse = statistics.median(timed(hessian, x)[0] for _ in range(repeats))
            print(f"{name:<18}{n:>9,}{detect:>10.3f}{colour:>10.3f}{sparse:>12.4f}{colours.max() + 1:>7,}  "
                  f"{any(issubclass(w.category, ad.DensePatternWarning) for w in said)}", flush=True)


# --- table 6: grids and meshes at 10^5 and 10^6 against IPOPT and L-BFGS-B ---------------------

# Every solver is stopped after this many CPU seconds of its process (IPOPT's max_cpu_time, a
# callback's StopIteration); its row then says "time limit".
GRID_LIMIT = 600.0


def energy13_nodes(x):
    """:func:`bench_factorizations.energy13` per node (over h^2): the same minimizer, gradients of
    order one, so that the relative stopping tests ask for as many digits at every size."""
    return energy13(x) * (math.isqrt(x.size) + 1) ** 2


def energy3d_nodes(x):
    """:func:`bench_factorizations.energy3d` per node (over h^3): a 7-point Laplacian plus a
    quartic, on the m^3 interior grid of the unit cube."""
    return energy3d(x) * (round(x.size ** (1 / 3)) + 1) ** 3


def hessopt_converged(x: np.ndarray, value: float, gradient: np.ndarray) -> bool:
    """hessopt's default stopping test: max_i |g_i| max(1, |x_i|) / max(1, |f|) <= 1e-8."""
    return float(np.max(np.abs(gradient) * np.maximum(1.0, np.abs(x)))) <= 1e-8 * max(1.0, abs(value))


class IpoptProblem:
    """An unconstrained problem for cyipopt with hessopt's exact derivatives: f and its gradient
    from one replayed program (``ad.function(ad.value_and_grad(f))``, cached per x), and the
    lower triangle of ``ad.sparse_hessian(f)`` (pattern fixed at x0); ``iterations`` IPOPT's count."""

    def __init__(self, f, x0: np.ndarray):
        self._value_and_grad = ad.function(ad.value_and_grad(f))
        self._hessian = ad.sparse_hessian(f)
        self._x, self._value, self._gradient = None, None, None
        self.iterations = 0
        h = self._hessian(x0)
        columns = np.repeat(np.arange(x0.size), np.diff(h.indptr))
        self._lower = h.indices >= columns
        self._pattern = (h.indptr.copy(), h.indices.copy())
        self._structure = (h.indices[self._lower].astype(np.int64), columns[self._lower].astype(np.int64))

    def _evaluate(self, x: np.ndarray) -> None:
        if self._x is None or not np.array_equal(x, self._x):
            value, gradient = self._value_and_grad(x)
            self._x, self._value, self._gradient = x.copy(), float(value), np.asarray(gradient, dtype=float)

    def objective(self, x):
        self._evaluate(x)
        return self._value

    def gradient(self, x):
        self._evaluate(x)
        return self._gradient

    def intermediate(self, alg_mod, iter_count, *rest):
        self.iterations = iter_count
        return True

    def hessianstructure(self):
        return self._structure

    def hessian(self, x, lagrange, obj_factor):
        h = self._hessian(x)
        if not (np.array_equal(h.indptr, self._pattern[0]) and np.array_equal(h.indices, self._pattern[1])):
            raise RuntimeError("the sparse Hessian's pattern changed")
        return obj_factor * h.data[self._lower]


def solve_cyipopt(f, x0: np.ndarray) -> dict:
    """IPOPT (cyipopt, MUMPS) with hessopt's exact sparse derivatives, tol 1e-8 as table 2,
    stopped after :data:`GRID_LIMIT` CPU seconds; the CPU seconds include the first sparse
    Hessian (its pattern and colouring)."""
    start = time.process_time()
    problem = IpoptProblem(f, x0)
    nlp = cyipopt.Problem(n=x0.size, m=0, problem_obj=problem, lb=None, ub=None, cl=[], cu=[])
    for name, value in (("print_level", 0), ("sb", "yes"), ("tol", 1e-8), ("max_iter", 3000),
                        ("max_cpu_time", GRID_LIMIT)):
        nlp.add_option(name, value)
    x, info = nlp.solve(x0)
    return {"seconds": time.process_time() - start, "nit": problem.iterations, "x": x, "status": info["status"],
            "note": ""}


def solve_lbfgsb(f, x0: np.ndarray) -> dict:
    """scipy's L-BFGS-B fed hessopt's gradient (one replayed program for f and its gradient),
    stopped by hessopt's own test (:func:`hessopt_converged`, checked after each iteration; its
    gtol and ftol set to 0) or after :data:`GRID_LIMIT` CPU seconds."""
    from scipy.optimize import minimize
    value_and_grad = ad.function(ad.value_and_grad(f))
    start = time.process_time()
    last = {}

    def fun(x):
        value, gradient = value_and_grad(x)
        last.update(x=x.copy(), value=float(value), gradient=np.asarray(gradient, dtype=float))
        return last["value"], last["gradient"]

    def stop(intermediate_result):
        x = intermediate_result.x
        if not np.array_equal(x, last["x"]):
            fun(x)
        if hessopt_converged(x, last["value"], last["gradient"]) or time.process_time() - start > GRID_LIMIT:
            raise StopIteration
    result = minimize(fun, x0, jac=True, method="L-BFGS-B", callback=stop,
                      options={"gtol": 0.0, "ftol": 0.0, "maxiter": 10 ** 6, "maxfun": 10 ** 7})
    gradient = ad.grad(f)(result.x)
    converged = hessopt_converged(result.x, result.fun, gradient)
    return {"seconds": time.process_time() - start, "nit": result.nit, "x": result.x,
            "status": 0 if converged else result.status, "note": ""}


def hessopt_run(f, x0: np.ndarray, method: str) -> dict:
    """``hessopt.minimize(f, x0, method=method)`` with its default options, stopped after
    :data:`GRID_LIMIT` CPU seconds (a callback's StopIteration: status 99): CPU seconds, the
    factorization chosen and its factor's nonzeros (Newton), the preconditioner (newton-cg), the
    growth of the peak resident set (MB)."""
    optimizers.newton.LDLFactorization = _CountedFactorization
    _CountedFactorization.made = []
    start = time.process_time()

    def stop_at_limit(intermediate_result):
        if time.process_time() - start > GRID_LIMIT:
            raise StopIteration
    result, megabytes = peak_megabytes(lambda: hessopt.minimize(f, x0, method=method, callback=stop_at_limit,
                                                                options={"keep_iterates": False}))
    seconds = time.process_time() - start
    used = [ldl for ldl in _CountedFactorization.made if ldl.method is not None]
    builds = f", {result.multigrid_builds} AMG builds" if result.get("preconditioner") == "amg" else ""
    note = (f"{used[0].method}, nnz(L) {used[0].factor_nonzeros / 1e6:.1f}M" if used else
            f"{result.nhev} HVPs, preconditioner {result.get('preconditioner') or 'none'}{builds}")
    return {"seconds": seconds, "nit": result.nit, "x": result.x, "status": result.status,
            "note": f"{note}, peak +{megabytes:.0f} MB"}


GRIDS = {"minimal surface": (minimal_surface, [10 ** 6]),
         "13-point energy": (energy13_nodes, [316 ** 2, 10 ** 6]),
         "3-D 7-point energy": (energy3d_nodes, [10 ** 6])}
# Runs not made at 10^6: the sparse factorizations (Newton, IPOPT) of the 3-D grid, where one takes
# minutes (bench_factorizations: nested dissection's n^2 work, projected from 50^3: CHOLMOD 150 s
# idle, MUMPS 757 s loaded); newton-cg on the minimal surface, which took 4,226 products at 316^2
# preconditioned (table 3) and 209-324 iterations at 100^2 with multigrid.
GRID_SKIPPED = {("newton", energy3d_nodes, 10 ** 6): "a factorization takes minutes (3-D fill)",
                ("ipopt", energy3d_nodes, 10 ** 6): "a factorization takes minutes (3-D fill)",
                ("newton-cg", minimal_surface, 10 ** 6): "thousands of products (table 3)"}
GRID_SOLVERS = {"newton": lambda f, x0: hessopt_run(f, x0, "newton"),
                "newton-cg": lambda f, x0: hessopt_run(f, x0, "newton-cg"),
                "ipopt": solve_cyipopt, "l-bfgs-b": solve_lbfgsb}


def grid_x0(f, n: int) -> np.ndarray:
    return _surface(n).x0 if f is minimal_surface else np.zeros(n)


def grid_size(f, n: int) -> int:
    return size_of(f, n) if f is minimal_surface else round(n ** (1 / 3)) ** 3 if f is energy3d_nodes else n


def grid_table(only: str | None, solvers: list, small: bool, size: int | None = None) -> None:
    """Table 6: per grid and solver, one line: iterations, CPU seconds, final ||g||_inf, status and
    what the solver chose. Each solver may run in its own process (``--solver``): the rows'
    ratios are formed from the lines."""
    print(f"\n{'problem':<20}{'n':>11}  {'solver':<10}{'nit':>6}{'CPU s':>9}{'||g||inf':>10}  status, chosen")
    for name, (f, sizes) in GRIDS.items():
        if only is not None and only not in name:
            continue
        for n in ([10 ** 4] if small else sizes):
            n = grid_size(f, n)
            if size is not None and n != size:
                continue
            x0 = grid_x0(f, n)
            for solver in solvers:
                skipped = GRID_SKIPPED.get((solver, f, n))
                if skipped is not None or (solver == "ipopt" and cyipopt is None):
                    print(f"{name:<20}{n:>11,}  {solver:<10}  skipped: {skipped or 'cyipopt not installed'}")
                    continue
                run = GRID_SOLVERS[solver](f, x0)
                status = "time limit" if run["seconds"] >= GRID_LIMIT else f"status {run['status']}"
                print(f"{name:<20}{n:>11,}  {solver:<10}{run['nit']:>6}{run['seconds']:>9.1f}"
                      f"{gradient_norm(f, run['x']):>10.1e}  {status}, {run['note']}", flush=True)


def chain_table() -> None:
    """The chain and arrowhead rows of table 2 (hessopt's Newton at n = 10^6, CPU seconds), for a
    comparison of branches: run with each branch first on PYTHONPATH."""
    for name in ("chained Rosenbrock", "ARWHEAD"):
        f = PROBLEMS[name]
        x0 = STARTS[f](10 ** 6)
        start = time.process_time()
        result = hessopt.minimize(f, x0, method="newton", options={"keep_iterates": False})
        print(f"{name:<20}{10 ** 6:>10,}  newton nit {result.nit}  {time.process_time() - start:.2f} CPU s  "
              f"||g||inf {gradient_norm(f, result.x):.1e}  ({optimizers.__file__})", flush=True)


def main(argv: list) -> None:
    quick, solves = "--quick" in argv, "--no-solves" not in argv
    sizes = [10 ** 4, 10 ** 5] if quick else [10 ** 4, 10 ** 5, 10 ** 6]
    if "--grids" in argv:
        only = argv[argv.index("--only") + 1] if "--only" in argv else None
        solvers = [argv[argv.index("--solver") + 1]] if "--solver" in argv else list(GRID_SOLVERS)
        size = int(argv[argv.index("--n") + 1]) if "--n" in argv else None
        if "--limit" in argv:
            global GRID_LIMIT
            GRID_LIMIT = float(argv[argv.index("--limit") + 1])
        grid_table(only, solvers, small="--small" in argv, size=size)
        return
    if "--chains" in argv:
        chain_table()
        return
    if "--degenerate" in argv:
        degenerate_table([500, 2000, 20000])
        return
    if "--dense-lines" in argv:
        dense_lines_table([10 ** 3, 10 ** 4, 10 ** 5])
        return
    preconditioning_only = "--preconditioning" in argv
    if not preconditioning_only:
        sparse_table(sizes)
    if solves and not preconditioning_only:
        solve_table(sizes)
    if solves:
        preconditioning_table(sizes[:2])
        degenerate_table([500, 2000, 20000])


if __name__ == "__main__":
    main(sys.argv[1:])
