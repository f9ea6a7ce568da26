"""Curvature analysis of a ~100k-parameter Hessian: top eigenvalues, spectral density, trace.

The Hessian is the 784-128-10 tanh MLP cross-entropy loss of ``bench_derivatives.py`` (batch 256,
101,770 parameters), as a ``HessianOperator``: each product one sweep of the cached recording.
Reported: wall time and the number of Hessian-vector products, for
(a) the top-5 eigenpairs (``hessopt.curvature.top_eigenvalues``, tol 1e-8), checked by their true
    residuals, next to scipy's ARPACK ``eigsh`` on the same operator at the same tolerance;
(b) the spectral density by stochastic Lanczos quadrature (80 steps x 10 probes), without (the
    default) and with reorthogonalization;
(c) the Hutch++ trace estimate with 100 products, against Hutchinson's with the same budget.
Target on the 2-core development machine: top-5 under 10 s and under 300 products.
Run: python benchmarks/bench_curvature.py
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_derivatives import PARAMS, mlp_loss  # noqa: E402
from scipy.sparse.linalg import LinearOperator, eigsh  # noqa: E402

import autodiff as ad  # noqa: E402
from hessopt import curvature  # noqa: E402


class Counted:
    """The Hessian operator, counting the vectors it is applied to."""

    def __init__(self, op):
        self.op, self.shape, self.products = op, op.shape, 0

    def matvec(self, v):
        self.products += 1
        return self.op.matvec(v)

    def matmat(self, V):
        self.products += V.shape[1]
        return self.op.matmat(V)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    op, seconds = timed(lambda: ad.hessian_operator(mlp_loss, PARAMS))
    n = op.shape[0]
    print(f"Hessian of a 784-128-10 tanh MLP cross-entropy loss, batch 256: n = {n:,} "
          f"(recorded in {seconds:.2f} s)")

    counted = Counted(op)
    (values, vectors), seconds = timed(lambda: curvature.top_eigenvalues(counted, k=5, seed=0))
    residuals = np.linalg.norm(op.matmat(vectors) - vectors * values, axis=0) / np.abs(values)
    print(f"\n(a) top-5 eigenvalues: {seconds:.2f} s, {counted.products} products")
    print("    eigenvalues   " + "  ".join(f"{v:.10g}" for v in values))
    print(f"    max relative residual ||H u - lambda u|| / |lambda| = {residuals.max():.1e}")
    arpack = Counted(op)
    linear = LinearOperator(op.shape, matvec=arpack.matvec, dtype=float)
    reference, seconds = timed(lambda: np.sort(eigsh(linear, k=5, which="LA", tol=1e-8,
                                                     v0=np.ones(n))[0])[::-1])
    print(f"    scipy eigsh (ARPACK), same tol: {seconds:.2f} s, {arpack.products} products; "
          f"max relative difference {np.max(np.abs(values / reference - 1)):.1e}")

    for reorthogonalize in (False, True):
        counted = Counted(op)
        density, seconds = timed(lambda counted=counted, reorthogonalize=reorthogonalize: curvature.spectral_density(
            counted, num_steps=80, num_probes=10, seed=0, reorthogonalize=reorthogonalize))
        outliers = density.outliers()
        print(f"\n(b) spectral density, 80 Lanczos steps x 10 probes, reorthogonalize="
              f"{reorthogonalize}: {seconds:.2f} s, {counted.products} products")
        print(f"    nodes in [{density.nodes.min():.4g}, {density.nodes.max():.4g}]; "
              f"{outliers.size} outliers" + "".join(f", {v:.4g}" for v in outliers))

    counted = Counted(op)
    estimate, seconds = timed(lambda: curvature.trace(counted, 100, seed=0))
    exact = values.sum()  # only a scale for the printout; the exact trace needs n products
    print(f"\n(c) trace, Hutch++ with 100 products: {estimate:.6g} ({seconds:.2f} s, "
          f"{counted.products} products; top-5 eigenvalues sum to {exact:.6g})")
    spread = [curvature.trace(op, 100, "hutchinson", seed=s) for s in range(5)]
    hutchpp = [curvature.trace(op, 100, seed=s) for s in range(5)]
    print(f"    spread over 5 seeds: Hutch++ {np.std(hutchpp):.3g}, Hutchinson {np.std(spread):.3g}")


if __name__ == "__main__":
    main()
