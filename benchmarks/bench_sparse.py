"""Sparse Hessians: pattern detection, star colouring and the sparse Hessian from k products.

Four structured problems at n = 10^4, 10^5 and 10^6 (a dense Hessian at 10^6 would need 8 TB):
chained Rosenbrock (tridiagonal), ARWHEAD (arrowhead: diagonal plus a dense last row and column),
BDQRTIC (banded plus a dense last row and column) and the minimal-surface functional on an m x m
grid (forward differences, 7-point coupling; n = 100^2, 316^2, 1000^2). For each: the seconds to
detect the pattern (``ad.hessian_sparsity``: recording f and its gradient, propagating index sets,
symmetrizing), to colour it, and to compute the sparse Hessian at a point (``ad.sparse_hessian``
of the plain NumPy f, pattern and colouring cached: one replayed program of the gradient and one
batched sweep of k products), the number of colours k, the sparse Hessian against k
Hessian-vector products of an already recorded operator, and one NumPy evaluation of f.

Each step's growth from 10^4 and from 10^5 to 10^6 is printed as a ratio to linear growth (1.0:
linear; the target is within 1.5), next to f's own ratio: arrays that outgrow the caches make plain
NumPy grow faster than linearly too, and f measured in the same run normalizes for the load of a
shared machine ("/ f": the step's ratio divided by f's). Times are medians of repeats, interleaved.
Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse.py [--quick]
(--quick: n = 10^4 and 10^5 only)
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import autodiff as ad


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def arwhead(x):
    return np.sum(-4 * x[:-1] + 3) + np.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2)


def bdqrtic(x):
    inner = x[:-4] ** 2 + 2 * x[1:-3] ** 2 + 3 * x[2:-2] ** 2 + 4 * x[3:-1] ** 2 + 5 * x[-1] ** 2
    return np.sum((-4 * x[:-4] + 3) ** 2) + np.sum(inner ** 2)


def minimal_surface(x):
    """The area of the surface over the unit square with heights x inside, 0 on the boundary."""
    m = int(round(np.sqrt(x.size)))
    h = 1.0 / (m + 1)
    u = np.pad(np.reshape(x, (m, m)), 1)
    dx = (u[1:, :-1] - u[:-1, :-1]) / h
    dy = (u[:-1, 1:] - u[:-1, :-1]) / h
    return h * h * np.sum(np.sqrt(1 + dx ** 2 + dy ** 2))


PROBLEMS = {"chained Rosenbrock": rosenbrock, "ARWHEAD": arwhead, "BDQRTIC": bdqrtic,
            "minimal surface": minimal_surface}

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


def main(quick: bool) -> None:
    sizes = [10 ** 4, 10 ** 5] if quick else [10 ** 4, 10 ** 5, 10 ** 6]
    print(f"{'problem':<20}{'n':>10}{'nnz':>11}{'k':>4}{'detect s':>10}{'colour s':>10}"
          f"{'sparse H s':>12}{'/ k HVPs':>10}{'f ms':>8}")
    for name, f in PROBLEMS.items():
        rows = {}
        for n in sizes:
            if f is minimal_surface:
                n = int(round(np.sqrt(n))) ** 2  # an m x m grid
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


if __name__ == "__main__":
    main("--quick" in sys.argv)
