"""Training models: time to a target loss on the two-class spiral, and the cost of input-gradient
penalties.

(a) The spiral (two interleaved arms, 2 turns, 200 points), a 2-16-16-2 tanh network, softmax
    cross-entropy, from one fixed initialization: wall time and iterations until the training loss
    is below 1e-3 and 1e-5 for hessian-free on Gauss-Newton products, newton-cg (exact Hessian
    products) and adam at learning rates 0.03 and 0.1 (0.01 is slower, 0.3 does not reach 1e-5);
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
from hessopt import nn  # noqa: E402
from hessopt.nn import losses  # noqa: E402
from hessopt.nn.datasets import spiral  # noqa: E402
from hessopt.regularizers import input_gradient_penalty  # noqa: E402

from common import interleaved_ratios  # noqa: E402

TARGETS = (1e-3, 1e-5)
REPEATS = 3
METHODS = [("hessian-free", {}), ("newton-cg", {}), ("adam", {"learning_rate": 0.03}),
           ("adam", {"learning_rate": 0.1})]


X, Y = spiral()


def spiral_model() -> nn.Sequential:
    model = nn.Sequential([nn.Dense(16, "tanh", seed=0), nn.Dense(16, "tanh", seed=1), nn.Dense(2, seed=2)])
    model(X)
    return model


def times_to_targets(method: str, options: dict) -> list[tuple[float, int]]:
    """Seconds and iterations until the training loss is below each of TARGETS (one run, stopped
    by a callback at the last target)."""
    model = spiral_model()
    loss = lambda z: losses.softmax_cross_entropy(Y, z)  # noqa: E731
    options = {"maxiter": 20000, "gtol": 0.0, **options}
    if method == "hessian-free":
        options["ggn"] = (lambda: model(X), loss)
    reached = []

    def note_targets(intermediate_result):
        while len(reached) < len(TARGETS) and intermediate_result.fun < TARGETS[len(reached)]:
            reached.append((time.perf_counter() - start, intermediate_result.nit))
        if len(reached) == len(TARGETS):
            raise StopIteration

    start = time.perf_counter()
    result = hessopt.minimize(lambda: loss(model(X)), model.trainable_variables, method=method,
                              callback=note_targets, options=options)
    if len(reached) < len(TARGETS):
        raise RuntimeError(f"{method} stopped at loss {result.fun:.3g}: {result.message}")
    return reached


def bench_training() -> None:
    print(f"(a) spiral, 2-16-16-2 tanh network: time (median of {REPEATS}) and iterations to a "
          f"training loss below {' and '.join(f'{t:g}' for t in TARGETS)}")
    for method, options in METHODS:
        runs = [times_to_targets(method, options) for _ in range(REPEATS)]
        label = "hessian-free (Gauss-Newton)" if method == "hessian-free" else \
            " ".join([method] + [f"lr={v:g}" for v in options.values()])
        cells = [f"{statistics.median(run[k][0] for run in runs):7.2f} s {runs[0][k][1]:6d} it"
                 for k in range(len(TARGETS))]
        print(f"  {label:<28} " + "   ".join(cells))


def penalty_costs(model, x, labels) -> dict:
    """{name: (seconds, ratio to the plain gradient)}, timed in interleaved rounds."""
    variables = model.trainable_variables
    data = lambda z: losses.softmax_cross_entropy(labels, model(z))  # noqa: E731

    def gradient_of(objective):
        def run():
            with ad.GradientTape() as tape:
                value = objective()
            return tape.gradient(value, variables)
        return run

    return interleaved_ratios({
        "plain": gradient_of(lambda: data(x)),
        "exact": gradient_of(lambda: input_gradient_penalty(data, x)),
        "finite-difference": gradient_of(lambda: input_gradient_penalty(data, x, method="finite-difference")),
    }, baseline="plain")


def bench_penalties() -> None:
    print("(b) one parameter gradient of the input-gradient penalty, relative to one plain gradient "
          "(targets: exact <= 4x, finite-difference <= 2.5x; medians of per-round ratios)")
    rng = np.random.default_rng(0)
    mlp = nn.Sequential([nn.Dense(128, "tanh", seed=0), nn.Dense(10, seed=1)])
    cases = [("spiral 2-16-16-2, batch 200", spiral_model(), X, Y),
             ("MLP 784-128-10, batch 256", mlp, rng.standard_normal((256, 784)), rng.integers(0, 10, 256))]
    for name, model, x, labels in cases:
        model(x)
        costs = penalty_costs(model, x, labels)
        print(f"  {name:<28} " + "   ".join(f"{kind} {seconds * 1e3:8.3f} ms ({ratio:4.2f}x)"
                                              for kind, (seconds, ratio) in costs.items()))


if __name__ == "__main__":
    bench_training()
    bench_penalties()
