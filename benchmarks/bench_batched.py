"""Solves per second of a batch of small problems through ``optimizers.batched.minimize_batch``
(trust-exact on all starts at once), against a loop of ``optimizers.minimize_trust_exact`` on the
same starts, derivatives hand-written in vectorized NumPy in both, so that what is measured is the
algorithm's own cost.

Problems: (a) Rosenbrock, n = 2, starts uniform in [-2, 2]^2; (b) a 3-parameter exponential decay
fit ``y = a exp(-b t) + c``, 20 points, each row its own data (``indexed``: noisy samples of its
own true parameters), starts at the true parameters scaled by factors in [0.5, 1.5]; (c) the
extended Rosenbrock function, n = 10 (MGH 21), starts the standard one scaled by factors in
[0.5, 1.5].

For each: solves per second of the batch in CPU time of this process (per core, whatever the
other processes' load), of the batch without the time spent in ``evaluate`` (the algorithm alone),
and of the loop (on ``--loop`` starts, default 300); the batch's rows agree with the loop's
(same success, x within 1e-6 relative) and the median iteration counts are printed.
Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_batched.py [--batch B] [--loop L]
[--profile]
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from optimizers import minimize_trust_exact
from optimizers.batched import minimize_batch

RNG_SEED = 0
T = np.linspace(0.0, 4.0, 20)


def rosenbrock(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rosenbrock's f, g, H row by row (n = 2)."""
    a, b = X[:, 0], X[:, 1]
    f = 100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2
    g = np.stack([-400.0 * a * (b - a * a) - 2.0 * (1.0 - a), 200.0 * (b - a * a)], axis=1)
    H = np.empty((len(X), 2, 2))
    H[:, 0, 0] = 1200.0 * a * a - 400.0 * b + 2.0
    H[:, 0, 1] = H[:, 1, 0] = -400.0 * a
    H[:, 1, 1] = 200.0
    return f, g, H


def extended_rosenbrock(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MGH 21 row by row: sum over pairs of 100 (x_2i - x_2i-1^2)^2 + (1 - x_2i-1)^2."""
    m, n = X.shape
    a, b = X[:, 0::2], X[:, 1::2]
    f = (100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2).sum(axis=1)
    g = np.empty_like(X)
    g[:, 0::2] = -400.0 * a * (b - a * a) - 2.0 * (1.0 - a)
    g[:, 1::2] = 200.0 * (b - a * a)
    H = np.zeros((m, n, n))
    odd, even = np.arange(0, n, 2), np.arange(1, n, 2)
    H[:, odd, odd] = 1200.0 * a * a - 400.0 * b + 2.0
    H[:, odd, even] = H[:, even, odd] = -400.0 * a
    H[:, even, even] = 200.0
    return f, g, H


def decay_fit(Y: np.ndarray) -> Callable:
    """``evaluate(X, rows)`` of the fits ``0.5 sum_k (a exp(-b t_k) + c - y_k)^2``, row i with
    data ``Y[i]``: residual r, Jacobian J, Hessian ``J^T J + sum_k r_k H_k``."""
    def evaluate(X: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = X[:, :1], X[:, 1:2]
        decay = np.exp(-b * T)
        r = a * decay + X[:, 2:3] - Y[rows]
        J = np.stack([decay, -a * T * decay, np.ones_like(decay)], axis=2)
        H = np.einsum("mki,mkj->mij", J, J)
        weighted = (r * T * decay).sum(axis=1)
        H[:, 0, 1] -= weighted
        H[:, 1, 0] -= weighted
        H[:, 1, 1] += (r * a * T * T * decay).sum(axis=1)
        return 0.5 * (r * r).sum(axis=1), np.einsum("mki,mk->mi", J, r), H
    return evaluate


def problems(batch: int) -> dict[str, tuple[Callable, np.ndarray, bool]]:
    """name: (evaluate, X0, indexed)."""
    rng = np.random.default_rng(RNG_SEED)
    truth = np.column_stack([rng.uniform(1, 3, batch), rng.uniform(0.5, 2, batch), rng.uniform(-1, 1, batch)])
    Y = truth[:, :1] * np.exp(-truth[:, 1:2] * T) + truth[:, 2:] + 0.01 * rng.standard_normal((batch, T.size))
    standard = np.tile([-1.2, 1.0], 5)
    return {
        "rosenbrock n=2": (rosenbrock, rng.uniform(-2, 2, (batch, 2)), False),
        "decay fit n=3": (decay_fit(Y), truth * rng.uniform(0.5, 1.5, (batch, 3)), True),
        "ext. rosenbrock n=10": (extended_rosenbrock, standard * rng.uniform(0.5, 1.5, (batch, 10)), False),
    }


class Timed:
    """``evaluate`` with the CPU time spent in it added up."""

    def __init__(self, evaluate: Callable, indexed: bool):
        self.evaluate, self.indexed, self.seconds = evaluate, indexed, 0.0

    def __call__(self, X: np.ndarray, rows: np.ndarray | None = None):
        start = time.process_time()
        values = self.evaluate(X, rows) if self.indexed else self.evaluate(X)
        self.seconds += time.process_time() - start
        return values


def batch_rates(evaluate: Callable, X0: np.ndarray, *, indexed: bool = False, **options) -> tuple[float, float, list]:
    """Solves per second of ``minimize_batch(evaluate, X0, indexed=indexed, **options)`` in CPU time
    of this process, the same without the time spent in ``evaluate`` (the algorithm alone), and
    the results (for other benchmarks to call)."""
    timed = Timed(evaluate, indexed)
    start = time.process_time()
    results = minimize_batch(timed, X0, indexed=True, **options)
    seconds = time.process_time() - start
    return len(X0) / seconds, len(X0) / (seconds - timed.seconds), results


def loop(evaluate: Callable, X0: np.ndarray, indexed: bool) -> list:
    """trust-exact start by start, on the same derivatives (one row at a time)."""
    results = []
    for i, x0 in enumerate(X0):
        row = np.array([i])

        def values(x, row=row):
            X = x[None]
            return evaluate(X, row) if indexed else evaluate(X)

        def fun(x, values=values):
            f, g, _ = values(x)
            return f[0], g[0]
        results.append(minimize_trust_exact(fun, x0, True, hess=lambda x, values=values: values(x)[2][0]))
    return results


def agree(batch: list, looped: list) -> int:
    """How many of the looped rows the batch's rows agree with (success, and x to 1e-6)."""
    return sum(b.success == s.success and np.allclose(b.x, s.x, rtol=1e-6, atol=1e-6) for b, s in zip(batch, looped))


def measure(batch_size: int, loop_size: int) -> None:
    print(f"{'problem':<22}{'batch/s':>10}{'alg. only/s':>13}{'loop/s':>9}{'speed-up':>10}{'nit':>5}"
          f"{'success':>9}{'agree':>10}")
    for name, (evaluate, X0, indexed) in problems(batch_size).items():
        rate, algorithm_rate, results = batch_rates(evaluate, X0, indexed=indexed)
        start = time.process_time()
        looped = loop(evaluate, X0[:loop_size], indexed)
        loop_seconds = (time.process_time() - start) / loop_size
        print(f"{name:<22}{rate:>10,.0f}{algorithm_rate:>13,.0f}{1 / loop_seconds:>9,.0f}{loop_seconds * rate:>9.1f}x"
              f"{int(np.median([r.nit for r in results])):>5}"
              f"{np.mean([r.success for r in results]):>9.1%}"
              f"{agree(results[:loop_size], looped):>6}/{loop_size}")


def main(argv: list[str]) -> None:
    batch_size = int(argv[argv.index("--batch") + 1]) if "--batch" in argv else 10_000
    loop_size = int(argv[argv.index("--loop") + 1]) if "--loop" in argv else 300
    if "--profile" in argv:
        import cProfile
        cProfile.runctx("measure(batch_size, 1)", globals(), locals(), sort="tottime")
        return
    measure(batch_size, loop_size)


if __name__ == "__main__":
    main(sys.argv[1:])
