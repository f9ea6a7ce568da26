"""Derivatives of a solution: a hypergradient and influence scores through ``hessopt.minimize``,
against the same computed by hand in JAX and against unrolled differentiation.

The problem: L2-regularized logistic regression on synthetic data (``--train`` x ``--features``,
a validation set of half the size), ``w*(lam) = argmin mean(log(1 + exp(X w)) - y X w) + lam/2
|w|^2``. Two derivatives of the validation loss L_val(w*):

- the hypergradient dL_val/dlam: hessopt's ``ad.grad(lambda lam: L_val(hessopt.minimize(...).x))``
  (newton-cg, gtol 1e-10); JAX by hand as the issue describes (``jax.scipy.sparse.linalg.cg`` on a
  jitted Hessian-vector product at hessopt's w*, then the mixed derivative by ``jax.grad``);
  and unrolled: ``ad.grad`` through K steps of gradient descent (step 1/L) from zero;
- the influence of up-weighting each training point (Koh & Liang 2017), dL_val/d eps_i with the
  training loss sum_i (1 + eps_i) l_i / m: hessopt's one ``ad.grad`` in the m-vector eps at 0,
  JAX's -g_val^T H^-1 grad l_i for all i (one CG solve, one Jacobian-vector product).

Times are medians of ``--repeats`` runs (one BLAS thread). hessopt's derivative time is the
transform's time minus the solve's (``hessopt.minimize`` alone); the reference for it is one
gradient of the training loss plus one CG solve (``autodiff.linear_solve.solve_cg``, rtol 1e-10)
on the Hessian operator recorded once at w* (``autodiff.hessian_operator``), timed by hand.
JAX's compile time is reported apart from its run time. Agreement is the relative difference
(2-norm) to JAX and, for the hypergradient, to central differences of re-solved problems
(Richardson-extrapolated from steps 1e-4 and 5e-5: the third derivative in lam is large at small
lam, ~k! / lam^k, so plain central differences err by ~1e-5 here).

Run: python benchmarks/bench_implicit.py [--train 2000] [--features 500] [--repeats 5] [--no-jax]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import hessopt  # noqa: E402
from autodiff.linear_solve import solve_cg  # noqa: E402

LAM = 1e-2
GTOL = 1e-10


def make_data(m: int, n: int, seed: int = 0) -> dict:
    """Gaussian features with a decaying scale, labels from a noisy linear model."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(1.0 + np.arange(n) / 10)
    true_w = rng.normal(size=n) * scale
    data = {}
    for name, size in (("train", m), ("valid", m // 2)):
        X = rng.normal(size=(size, n)) * scale
        data[name] = (X, (X @ true_w + rng.normal(size=size) > 0).astype(float))
    return data


def logistic(w, X, y, weights=None):
    z = X @ w
    terms = np.logaddexp(0.0, z) - y * z
    return np.mean(terms if weights is None else weights * terms)


def median_time(run, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def hessopt_runs(data: dict, n: int, repeats: int) -> dict:
    """Solve, hypergradient, influence and the by-hand reference (gradient + CG on the cached operator)."""
    Xt, yt = data["train"]
    Xv, yv = data["valid"]
    w0 = np.zeros(n)

    def solve(lam, weights=None):
        return hessopt.minimize(lambda w: logistic(w, Xt, yt, weights) + 0.5 * lam * np.sum(w ** 2), w0,
                                method="newton-cg", options={"gtol": GTOL})

    def validation(lam):
        return logistic(solve(lam).x, Xv, yv)

    def influence(eps):
        return logistic(solve(LAM, 1.0 + eps).x, Xv, yv)

    out = {}
    out["solve"], result = median_time(lambda: solve(LAM), repeats)
    out["hyper"], out["hypergradient"] = median_time(lambda: ad.grad(validation)(LAM), repeats)
    out["influence time"], out["influence"] = median_time(lambda: ad.grad(influence)(np.zeros(yt.size)), repeats)
    w = result.x
    training = lambda v: logistic(v, Xt, yt) + 0.5 * LAM * np.sum(v ** 2)  # noqa: E731

    def by_hand():
        gradient = ad.grad(lambda v: logistic(v, Xv, yv))(w)
        operator = ad.hessian_operator(training, w)
        return solve_cg(lambda V: operator.matmat(V.T).T, gradient)
    out["reference"], _ = median_time(by_hand, repeats)
    out["gradient"], _ = median_time(lambda: ad.grad(training)(w), repeats)
    h = 1e-4   # Richardson's extrapolation of central differences (h, h/2): an error of O(h^4)
    central = [(validation(LAM + step) - validation(LAM - step)) / (2 * step) for step in (h, h / 2)]
    out["differences"] = (4 * central[1] - central[0]) / 3
    out["w"] = w
    return out


def unrolled_runs(data: dict, n: int, steps: list[int]) -> list[tuple[int, float, float]]:
    """ad.grad through K gradient-descent steps (step 1/L, L = |X|^2 / 4m + lam) from zero."""
    Xt, yt = data["train"]
    Xv, yv = data["valid"]
    step = 1.0 / (np.linalg.norm(Xt, 2) ** 2 / (4 * yt.size) + LAM)
    rows = []
    for k in steps:
        def validation(lam, k=k):
            w = np.zeros(n)
            for _ in range(k):
                w = w - step * ad.grad(lambda v: logistic(v, Xt, yt) + 0.5 * lam * np.sum(v ** 2))(w)
            return logistic(w, Xv, yv)
        seconds, value = median_time(lambda: ad.grad(validation)(LAM), 1)
        rows.append((k, seconds, float(value)))
    return rows


def jax_runs(data: dict, w: np.ndarray, repeats: int) -> dict:
    """The hypergradient and the influence scores by hand in JAX at hessopt's w*."""
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    Xt, yt = data["train"]
    Xv, yv = data["valid"]

    def train_loss(w, lam, weights):
        z = Xt @ w
        return jnp.mean(weights * (jnp.logaddexp(0.0, z) - yt * z)) + 0.5 * lam * jnp.sum(w ** 2)

    def valid_loss(w):
        z = Xv @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - yv * z)

    ones = jnp.ones(yt.size)
    hvp = jax.jit(lambda w, v: jax.jvp(jax.grad(lambda u: train_loss(u, LAM, ones)), (w,), (v,))[1])
    mixed_lam = jax.jit(jax.grad(lambda lam, w, u: jnp.vdot(jax.grad(train_loss)(w, lam, ones), u)))
    mixed_eps = jax.jit(jax.grad(lambda eps, w, u: jnp.vdot(jax.grad(train_loss)(w, LAM, eps), u)))
    valid_grad = jax.jit(jax.grad(valid_loss))

    @jax.jit
    def derivatives(w):
        u = jax.scipy.sparse.linalg.cg(lambda v: hvp(w, v), valid_grad(w), tol=1e-10, maxiter=10 * w.size)[0]
        return -mixed_lam(LAM, w, u), -mixed_eps(ones, w, u)

    def both():
        hyper, influence = derivatives(w)
        return float(hyper), np.asarray(influence)
    start = time.perf_counter()
    both()
    compile_seconds = time.perf_counter() - start
    seconds, (hyper, influence) = median_time(both, repeats)
    return {"compile": compile_seconds, "time": seconds, "hypergradient": hyper, "influence": influence}


def relative(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--features", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--unrolled", default="100,400")
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()
    data = make_data(args.train, args.features)
    ours = hessopt_runs(data, args.features, args.repeats)
    derivative = ours["hyper"] - ours["solve"]
    print(f"logistic regression: {args.train} x {args.features}, lam = {LAM}, newton-cg gtol {GTOL:g}")
    print(f"  hessopt.minimize alone           {ours['solve'] * 1e3:9.1f} ms")
    print(f"  grad through minimize            {ours['hyper'] * 1e3:9.1f} ms  (derivative: "
          f"{derivative * 1e3:.1f} ms)")
    print(f"  by hand: gradient + CG on op.    {ours['reference'] * 1e3:9.1f} ms  (one gradient alone: "
          f"{ours['gradient'] * 1e3:.1f} ms); derivative / by hand = {derivative / ours['reference']:.2f}")
    print(f"  influence, all {args.train} points     {ours['influence time'] * 1e3:9.1f} ms  (derivative: "
          f"{(ours['influence time'] - ours['solve']) * 1e3:.1f} ms)")
    print(f"  hypergradient {ours['hypergradient']:.12e}; central differences (h 1e-4) "
          f"{ours['differences']:.12e} (Richardson): relative "
          f"{relative(ours['hypergradient'], ours['differences']):.1e}")
    if not args.no_jax:
        theirs = jax_runs(data, ours["w"], args.repeats)
        print(f"  JAX by hand (cg on jitted HVP)   {theirs['time'] * 1e3:9.1f} ms  "
              f"(compile {theirs['compile']:.2f} s)")
        print(f"  agreement with JAX: hypergradient {relative(ours['hypergradient'], theirs['hypergradient']):.1e}, "
              f"influence {relative(ours['influence'], theirs['influence']):.1e}")
    for k, seconds, value in unrolled_runs(data, args.features, [int(s) for s in args.unrolled.split(",")]):
        print(f"  unrolled GD, {k:4d} steps          {seconds * 1e3:9.1f} ms  hypergradient {value:.6e} "
              f"(relative to implicit {relative(value, ours['hypergradient']):.1e})")


if __name__ == "__main__":
    main()
