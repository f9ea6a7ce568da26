"""Replayed programs (autodiff.function) against eager autodiff, hand-written derivatives and torch.

(a) chained Rosenbrock (scipy's formula in plain NumPy), n = 1,000 and 10,000, from (-1.2, 1, ...):
    hessopt trust-krylov and newton-cg to ||g||_inf < 1e-6, traced (the default) and eager
    (options={"trace": False}), against scipy's counterparts with the hand-written rosen_der and
    rosen_hess_prod; runs interleaved, median of repeats;
(b) gradient of extended Rosenbrock, n = 10,000 (bench_overhead.py's setup): replayed, eager, the
    hand-coded NumPy gradient, and scipy's hand-written rosen_der (of the chained function);
(c) gradient of the 1,200-op scalar chain (bench_overhead.py): replayed, eager, torch eager;
(d) the MGH suite (every second-order method on every instance), traced and eager.
Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_replay.py [--quick] (--quick:
n = 1,000 only, one repeat; the full run takes about 15 minutes, most of it at n = 10,000)
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import scipy.optimize

import autodiff as ad
import hessopt
from hessopt import problems, suite

from bench_overhead import CHAIN, N, chain, rosenbrock, rosenbrock_gradient, tape_gradient, torch_chain_gradient
from common import median_time, optional, report

SCIPY_NAMES = {"trust-krylov": "trust-krylov", "newton-cg": "Newton-CG"}


def chained_rosenbrock(x):
    """scipy.optimize.rosen, written in plain NumPy."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)


def race(n: int, method: str, repeats: int) -> None:
    x0 = np.tile([-1.2, 1.0], n // 2)
    runs = {
        "hessopt traced": lambda: hessopt.minimize(chained_rosenbrock, x0, method=method,
                                                   options={"gtol": 1e-6}),
        "hessopt eager": lambda: hessopt.minimize(chained_rosenbrock, x0, method=method,
                                                  options={"gtol": 1e-6, "trace": False}),
        "scipy, hand-written derivatives": lambda: scipy.optimize.minimize(
            scipy.optimize.rosen, x0, method=SCIPY_NAMES[method], jac=scipy.optimize.rosen_der,
            hessp=scipy.optimize.rosen_hess_prod,
            options={"gtol": 1e-6} if method == "trust-krylov" else {"xtol": 1e-10}),
    }
    times = {name: [] for name in runs}
    results = {}
    for _ in range(repeats):  # interleaved: the machine's load hits every contestant alike
        for name, run in runs.items():
            start = time.perf_counter()
            results[name] = run()
            times[name].append(time.perf_counter() - start)
    print(f"  {method}, n = {n:,}")
    base = statistics.median(times["scipy, hand-written derivatives"])
    for name, result in results.items():
        seconds = statistics.median(times[name])
        gnorm = np.max(np.abs(scipy.optimize.rosen_der(result.x)))
        print(f"    {name:<33} {result.nit:>6} it  {seconds:7.3f} s  {seconds / base:5.2f}x scipy"
              f"   ||g||inf {gnorm:.1e}  {1e3 * seconds / result.nit:.3f} ms/it")


def gradients() -> None:
    x0 = np.tile([-1.2, 1.0], N // 2)
    traced = ad.function(rosenbrock).grad()
    assert np.allclose(traced(x0), rosenbrock_gradient(x0))
    print(f"\n(b) gradient of extended Rosenbrock, n = {N:,}")
    rows = [("scipy.optimize.rosen_der", median_time(lambda: scipy.optimize.rosen_der(x0))),
            ("numpy hand-coded gradient", median_time(lambda: rosenbrock_gradient(x0))),
            ("autodiff.function replay", median_time(lambda: traced(x0))),
            ("autodiff eager tape", median_time(tape_gradient(rosenbrock, x0)))]
    report(rows, "scipy.optimize.rosen_der")

    s0 = np.float64(0.3)
    traced_chain = ad.function(chain).grad()
    print(f"\n(c) gradient of the scalar chain, {4 * CHAIN} ops")
    rows = [("autodiff.function replay", median_time(lambda: traced_chain(s0))),
            ("autodiff eager tape", median_time(tape_gradient(chain, s0)))]
    torch = optional("torch")
    if torch:
        torch.set_num_threads(1)
        torch_chain = torch_chain_gradient(torch, s0)
        rows.append(("torch eager", median_time(torch_chain)))
        assert np.isclose(float(torch_chain()), traced_chain(s0))
    report(rows, "torch eager" if torch else "autodiff eager tape")


def mgh_suite(repeats: int) -> None:
    print("\n(d) the MGH suite, every second-order method (wall time, median of repeats)")
    instances = list(problems.MGH)
    times = {"traced": [], "eager": []}
    for _ in range(repeats):
        for mode, options in (("traced", None), ("eager", {"trace": False})):
            start = time.perf_counter()
            suite.run_suite(instances, suite.METHODS, options=options)
            times[mode].append(time.perf_counter() - start)
    traced, eager = (statistics.median(times[m]) for m in ("traced", "eager"))
    print(f"  traced {traced:.2f} s, eager {eager:.2f} s: {traced / eager:.2f}x")


def main() -> None:
    quick = "--quick" in sys.argv  # n = 1,000 only, one repeat of everything
    print("(a) chained Rosenbrock to ||g||_inf < 1e-6 (scipy Newton-CG: xtol 1e-10, its own rule)")
    for n, repeats in ((1_000, 1),) if quick else ((1_000, 3), (10_000, 1)):
        for method in ("trust-krylov", "newton-cg"):
            race(n, method, repeats)
    gradients()
    mgh_suite(repeats=1 if quick else 2)


if __name__ == "__main__":
    main()
