"""Sparse Hessians: pattern detection, star colouring and the sparse Hessian from k products.

Four structured problems at n = 10^4, 10^5 and 10^6 (a dense Hessian at 10^6 would need 8 TB):
chained Rosenbrock (tridiagonal), ARWHEAD (arrowhead: diagonal plus a dense last row and column),
BDQRTIC (banded plus a dense last row and column) and the minimal-surface functional on an m x m
grid (finite differences, 7-point stencil; n = 100^2, 316^2, 1000^2). For each: the seconds to detect the pattern in the
recorded program, to colour it, and to compute the sparse Hessian at a point (``ad.sparse_hessian``
of an ``ad.function``, pattern and colouring cached: one recording of the gradient and one batched
sweep of k products), the number of colours k, and the sparse Hessian against k Hessian-vector
products of an already recorded operator. Each step's growth from 10^4 and from 10^5 to 10^6 is printed as a
ratio to linear growth (1.0: linear; the target is within 1.5), with that of evaluating f in NumPy
("f") for reference: arrays that outgrow the caches make plain NumPy grow faster than linearly too.
Times are medians of repeats.
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


def seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(f, n: int, repeats: int) -> dict:
    x = np.random.default_rng(0).uniform(0.5, 1.5, n)
    pattern = ad.hessian_sparsity(f, x)
    detect = seconds(lambda: ad.hessian_sparsity(f, x), repeats)
    colour = seconds(lambda: ad.hessian_sparsity(f, x).coloring(), repeats) - detect
    k = int(pattern.coloring().max()) + 1
    hessian = ad.sparse_hessian(ad.function(f))
    hessian(x)  # the pattern, the colouring and the traces, once
    sparse = seconds(lambda: hessian(x), repeats)
    operator = ad.hessian_operator(ad.function(f), x)
    v = np.ones(n)
    operator.matvec(v)
    hvp = seconds(lambda: operator.matvec(v), max(repeats, 5))
    value = seconds(lambda: f(x), max(repeats, 5))
    return {"detect": detect, "colour": colour, "k": k, "nnz": pattern.nnz, "sparse": sparse, "hvp": hvp,
            "f": value}


def main(quick: bool) -> None:
    sizes = [10 ** 4, 10 ** 5] if quick else [10 ** 4, 10 ** 5, 10 ** 6]
    print(f"{'problem':<20}{'n':>10}{'nnz':>11}{'k':>4}{'detect s':>10}{'colour s':>10}"
          f"{'sparse H s':>12}{'/ k HVPs':>10}")
    for name, f in PROBLEMS.items():
        rows = {}
        for n in sizes:
            if f is minimal_surface:
                n = int(round(np.sqrt(n))) ** 2  # an m x m grid
            rows[n] = r = measure(f, n, 3 if n >= 10 ** 6 else 5)
            print(f"{name:<20}{n:>10,}{r['nnz']:>11,}{r['k']:>4}{r['detect']:>10.3f}{r['colour']:>10.3f}"
                  f"{r['sparse']:>12.3f}{r['sparse'] / (r['k'] * r['hvp']):>10.2f}")
        sizes_run = sorted(rows)
        for small in sizes_run[:-1]:
            large = sizes_run[-1]
            growth = {step: (rows[large][step] / rows[small][step]) / (large / small)
                      for step in ("detect", "colour", "sparse", "f")}
            print(f"{'':<20}growth {small:,} -> {large:,}, as a ratio to linear: "
                  + ", ".join(f"{step} {ratio:.2f}" for step, ratio in growth.items()))


if __name__ == "__main__":
    main("--quick" in sys.argv)
