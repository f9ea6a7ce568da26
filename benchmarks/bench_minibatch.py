"""Mini-batch training to a held-out accuracy: stochastic Hessian-free and subsampled Newton-CG
against Adam, on 50,000 rows.

The data: scikit-learn's digits, 500 images held out as the test set, the other 1,297 augmented to
50,000 training rows by shifts of up to one pixel and Gaussian pixel noise (``nn.datasets.digits``);
one-hot targets. The model: a 64-64-10 tanh network, softmax cross-entropy. Each epoch visits the
rows in a new random order, in batches. Each configuration runs from three initializations (seeds
0-2, which also set the shuffles and the curvature subsamples), interleaved (seed 0 of every
configuration, then seed 1, ...), for at most ``--epochs`` epochs, and is measured after each epoch:
the accuracy on the 500 test images and the loss on the first 10,000 training rows.

- ``hessian-free``: stochastic Hessian-free (Martens 2010), batches of 2,000 rows, Gauss-Newton
  products on a random 10% (the default) or 50% of each batch, the damping carried from batch to
  batch, CG from the previous step;
- ``subsampled-newton-cg`` (Byrd, Chin, Neveitt & Nocedal 2011): batches of 2,000, Hessian
  products on 10% or 50% of each, at most 10 CG steps, Armijo backtracking on the batch;
- ``adam`` on batches of 128 (the usual size) at learning rates 1e-3, 3e-3 and 1e-2, and on the
  second-order methods' batches of 2,000 at 1e-2 and 3e-2.

Reported, as medians over the seeds: the epochs and the seconds (wall time from the call, the
evaluations included) until the test accuracy first reaches ``--target`` and until the training
loss first falls below ``--loss``, with how many seeds got there ("-": not all did), and the test
accuracy after the last epoch run. Run with one BLAS thread:
OMP_NUM_THREADS=1 python benchmarks/bench_minibatch.py [--target 0.97] [--loss 0.05] [--epochs 10]
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import hessopt  # noqa: E402
from hessopt import nn  # noqa: E402
from hessopt.nn import datasets, losses  # noqa: E402

ROWS, HIDDEN, SEEDS, EPOCHS, TRAIN_ROWS = 50_000, 64, (0, 1, 2), 10, 10_000
RUNS = [("hessian-free", 2000, {}), ("hessian-free", 2000, {"curvature_fraction": 0.5}),
        ("subsampled-newton-cg", 2000, {}), ("subsampled-newton-cg", 2000, {"curvature_fraction": 0.5}),
        ("adam", 128, {"learning_rate": 1e-3}), ("adam", 128, {"learning_rate": 3e-3}),
        ("adam", 128, {"learning_rate": 1e-2}), ("adam", 2000, {"learning_rate": 1e-2}),
        ("adam", 2000, {"learning_rate": 3e-2})]

X, LABELS, X_TEST, LABELS_TEST = datasets.digits(n=ROWS, seed=0)
TARGETS = losses.one_hot(LABELS, 10)


def train(method: str, batch_size: int, options: dict, seed: int, targets: dict, epochs: int) -> dict:
    """One run: for each of ``targets`` ({"accuracy": at least, "loss": at most}), the epochs and
    seconds until it is first met (None if it is not), and the test accuracy after the last epoch."""
    model = nn.Sequential([nn.Dense(HIDDEN, "tanh", seed=2 * seed), nn.Dense(10, seed=2 * seed + 1)])
    model(X[:1])

    def batches(epoch):
        order = np.random.default_rng([seed, epoch]).permutation(ROWS)
        for start in range(0, ROWS, batch_size):
            rows = order[start:start + batch_size]
            yield X[rows], TARGETS[rows]

    def loss(batch):
        return losses.categorical_cross_entropy(batch[1], model(batch[0]))

    met: dict = {}

    def evaluate():
        values = {"accuracy": float(np.mean(np.argmax(model(X_TEST).numpy(), axis=1) == LABELS_TEST)),
                  "loss": float(loss((X[:TRAIN_ROWS], TARGETS[:TRAIN_ROWS])).numpy())}
        epoch = len(last)
        last.append(values["accuracy"])
        for name, value in values.items():
            if name not in met and (value >= targets[name] if name == "accuracy" else value <= targets[name]):
                met[name] = (epoch, time.perf_counter() - start)
        if len(met) == len(targets):
            raise StopIteration
        return values

    options = dict(options, seed=seed)
    if method == "hessian-free":
        options["ggn"] = (lambda batch: model(batch[0]),
                          lambda z, batch: losses.categorical_cross_entropy(batch[1], z))
    last: list = []
    start = time.perf_counter()
    hessopt.minimize_stochastic(loss, model.trainable_variables, batches, method, epochs=epochs,
                                evaluate=evaluate, options=options)
    return {name: met.get(name) for name in targets} | {"final": last[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.97, help="test accuracy to reach")
    parser.add_argument("--loss", type=float, default=0.05, help="training loss to reach")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()
    targets = {"accuracy": args.target, "loss": args.loss}
    print(f"digits augmented to {ROWS:,} rows, 64-{HIDDEN}-10 tanh; epochs and seconds (medians over "
          f"seeds {SEEDS}) to a test accuracy of {args.target:.1%} ({len(LABELS_TEST)} held-out images) "
          f"and to a training loss of {args.loss:g} (first {TRAIN_ROWS:,} rows), at most {args.epochs} epochs")
    found: dict = {k: [] for k in range(len(RUNS))}
    for seed in SEEDS:
        for k, (method, batch_size, options) in enumerate(RUNS):
            found[k].append(train(method, batch_size, options, seed, targets, args.epochs))
    print(f"  {'method':<21} {'batch':>5} {'options':<24} {'accuracy: epochs':>16} {'s':>6} "
          f"{'loss: epochs':>12} {'s':>6} {'final accuracy':>14}")
    for k, (method, batch_size, options) in enumerate(RUNS):
        runs = found[k]
        cells = []
        for name in targets:
            done = [run[name] for run in runs if run[name] is not None]
            if len(done) == len(runs):
                cells.append(f"{statistics.median(e for e, _ in done):g} ({len(done)}/{len(runs)})")
                cells.append(f"{statistics.median(t for _, t in done):.2f}")
            else:
                cells += [f"- ({len(done)}/{len(runs)})", "-"]
        label = ", ".join(f"{name}={value:g}" for name, value in options.items()) or "defaults"
        print(f"  {method:<21} {batch_size:>5} {label:<24} {cells[0]:>16} {cells[1]:>6} {cells[2]:>12} "
              f"{cells[3]:>6} {statistics.median(run['final'] for run in runs):14.3f}", flush=True)


if __name__ == "__main__":
    main()
