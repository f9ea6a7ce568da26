"""Training models: time to a target loss on the two-class spiral, and the cost of input-gradient
penalties.

(a) The spiral (two interleaved arms, 2 turns, 200 points), a 2-16-16-2 tanh network, softmax
    cross-entropy, from one fixed initialization: wall time and iterations until the training loss
    is below TARGET for hessian-free on Gauss-Newton products, newton-cg (exact Hessian products)
    and adam (learning rate 0.01, the best of 0.003, 0.01, 0.03 here);
(b) one gradient with respect to the parameters of the exact input-gradient penalty (double
    backpropagation) and of the finite-difference one, relative to one plain gradient of the
    loss, on the spiral network and on a 784-128-10 tanh MLP with a batch of 256 (synthetic data).
Medians of repeats, ratios measured in this one run.
Run: python benchmarks/bench_models.py
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import hessopt  # noqa: E402
from common import median_time  # noqa: E402
from hessopt import nn  # noqa: E402
from hessopt.nn import losses  # noqa: E402
from hessopt.nn.datasets import spiral  # noqa: E402
from hessopt.regularizers import input_gradient_penalty  # noqa: E402

TARGET = 1e-3
REPEATS = 3


X, Y = spiral()


def spiral_model() -> nn.Sequential:
    model = nn.Sequential([nn.Dense(16, "tanh", seed=0), nn.Dense(16, "tanh", seed=1), nn.Dense(2, seed=2)])
    model(X)
    return model


def time_to_target(method: str) -> tuple[float, int]:
    """Seconds and iterations until the training loss is below TARGET (a callback stops the run)."""
    model = spiral_model()
    loss = lambda z: losses.softmax_cross_entropy(Y, z)  # noqa: E731
    options = {"maxiter": 20000, "gtol": 0.0}
    if method == "hessian-free":
        options["ggn"] = (lambda: model(X), loss)
    if method == "adam":
        options["learning_rate"] = 0.01

    def stop_at_target(intermediate_result):
        if intermediate_result.fun < TARGET:
            raise StopIteration

    start = time.perf_counter()
    result = hessopt.minimize(lambda: loss(model(X)), model.trainable_variables, method=method,
                              callback=stop_at_target, options=options)
    seconds = time.perf_counter() - start
    if result.fun >= TARGET:
        raise RuntimeError(f"{method} stopped at loss {result.fun:.3g}: {result.message}")
    return seconds, result.nit


def bench_training() -> None:
    print(f"(a) spiral, 2-16-16-2 tanh network: time to a training loss below {TARGET:g} "
          f"(median of {REPEATS})")
    rows = []
    for method in ("hessian-free", "newton-cg", "adam"):
        runs = [time_to_target(method) for _ in range(REPEATS)]
        rows.append((method, statistics.median(s for s, _ in runs), runs[0][1]))
    base = rows[0][1]
    for method, seconds, iterations in rows:
        label = f"{method} (Gauss-Newton)" if method == "hessian-free" else method
        print(f"  {label:<26} {seconds:8.2f} s  {iterations:6d} iterations   {seconds / base:6.2f}x "
              "hessian-free")


def penalty_costs(model, x, labels) -> tuple[float, float, float]:
    variables = model.trainable_variables
    data = lambda z: losses.softmax_cross_entropy(labels, model(z))  # noqa: E731

    def gradient_of(objective):
        def run():
            with ad.GradientTape() as tape:
                value = objective()
            return tape.gradient(value, variables)
        return run

    plain = median_time(gradient_of(lambda: data(x)))
    exact = median_time(gradient_of(lambda: input_gradient_penalty(data, x)))
    finite = median_time(gradient_of(lambda: input_gradient_penalty(data, x, method="finite-difference")))
    return plain, exact, finite


def bench_penalties() -> None:
    print("(b) one parameter gradient of the input-gradient penalty, relative to one plain gradient "
          "(targets: exact <= 4x, finite-difference <= 2.5x)")
    rng = np.random.default_rng(0)
    mlp = nn.Sequential([nn.Dense(128, "tanh", seed=0), nn.Dense(10, seed=1)])
    cases = [("spiral 2-16-16-2, batch 200", spiral_model(), X, Y),
             ("MLP 784-128-10, batch 256", mlp, rng.standard_normal((256, 784)), rng.integers(0, 10, 256))]
    for name, model, x, labels in cases:
        model(x)
        plain, exact, finite = penalty_costs(model, x, labels)
        print(f"  {name:<28} plain {plain * 1e3:8.3f} ms   exact {exact * 1e3:8.3f} ms "
              f"({exact / plain:4.2f}x)   finite-difference {finite * 1e3:8.3f} ms ({finite / plain:4.2f}x)")


if __name__ == "__main__":
    bench_training()
    bench_penalties()
