"""The README's pictures: one per ``hessopt.plot`` function, drawn from real runs.

Run from the repository root: ``python docs/images/make_images.py`` (about a minute; the
performance profile runs four methods on the 39 Moré-Garbow-Hillstrom instances).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402
import hessopt  # noqa: E402
import hessopt.plot as hplot  # noqa: E402
from hessopt import curvature, nn, problems  # noqa: E402
from hessopt.suite import run_suite  # noqa: E402

HERE = Path(__file__).parent
rng = np.random.default_rng(0)


def save(ax, name: str) -> None:
    if ax.figure.get_layout_engine() is None:   # hessopt.plot's own figures are laid out already
        ax.figure.tight_layout()
    ax.figure.savefig(HERE / name, dpi=110)
    plt.close(ax.figure)


# a small classifier: 3 Gaussian clusters in 8 dimensions, an 8-12-3 tanh MLP, cross-entropy
CENTRES = 2.0 * rng.standard_normal((3, 8))
LABELS = np.repeat(np.arange(3), 60)
X = CENTRES[LABELS] + rng.standard_normal((180, 8))
SHAPES = {"W1": (8, 12), "b1": (12,), "W2": (12, 3), "b2": (3,)}


def classifier_loss(p):
    logits = anp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    return anp.mean(anp.logsumexp(logits, axis=1) - logits[np.arange(X.shape[0]), LABELS])


def trained_classifier():
    start = {k: 0.3 * rng.standard_normal(s) for k, s in SHAPES.items()}
    return hessopt.minimize(classifier_loss, start, method="trust-ncg",
                            options={"maxiter": 15}).x


def quickstart():
    """The README's quick start: chained Rosenbrock minimized by newton-cg, its Hessian there."""
    def f(x):
        return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    result = hessopt.minimize(f, np.zeros(8), method="newton-cg")
    ax = hplot.hessian_heatmap(ad.hessian_operator(f, result.x), plt.figure(figsize=(5.5, 4.2)).add_subplot())
    ax.set_title("Hessian of chained Rosenbrock (n = 8) at its minimum")
    save(ax, "quickstart.png")


def heatmap():
    model = nn.Sequential([nn.Dense(4, "tanh", seed=0), nn.Dense(2, seed=1)])
    inputs, targets = rng.standard_normal((16, 3)), rng.standard_normal((16, 2))
    model(inputs)

    def loss():
        return anp.mean((model(inputs) - targets) ** 2)

    ax = hplot.hessian_heatmap(hessopt.hessian_operator(loss, model.trainable_variables), norm="symlog")
    ax.set_title("Hessian of a 3-4-2 tanh MLP's squared error\n(blocks named by its Variables; norm='symlog')")
    save(ax, "hessian_heatmap.png")


def jacobian():
    x = ad.constant(rng.standard_normal((5, 3)))
    W = rng.standard_normal((3, 2))
    with ad.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x @ W
        independent = anp.tanh(h)
        centred = h - anp.mean(h, axis=0)
        normalized = anp.tanh(centred / anp.sqrt(anp.mean(centred ** 2, axis=0) + 1e-3))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    hplot.jacobian_patches(tape.jacobian(independent, x), ax=left)
    left.set_title("tanh(x W): examples independent\n(block diagonal; batch_jacobian is enough)")
    hplot.jacobian_patches(tape.jacobian(normalized, x), ax=right)
    right.set_title("tanh(BatchNorm(x W)), training mode:\nevery output depends on every example")
    save(left, "jacobian_patches.png")


def spectrum(params):
    op = hessopt.hessian_operator(classifier_loss, params)
    density = curvature.spectral_density(op, num_steps=60, num_probes=10, seed=0)
    ax = hplot.spectrum(density)
    exact = np.linalg.eigvalsh(op.to_dense())
    ax.plot(exact, np.full(exact.shape, ax.get_ylim()[0] * 3), "|", color="0.3", markersize=8,
            label=f"exact eigenvalues ({exact.size})")
    ax.legend(fontsize=8)
    ax.set_title(f"Hessian spectrum of an 8-12-3 classifier after 15 trust-ncg iterations\n"
                 f"(n = {op.shape[0]}; stochastic Lanczos quadrature, 60 steps x 10 probes)")
    save(ax, "spectrum.png")


def landscape(params):
    ax = hplot.landscape(classifier_loss, params, span=1.0, steps=41, seed=1)
    ax.set_title("Loss around the classifier after 15 trust-ncg iterations (Li et al. 2018)")
    save(ax, "landscape.png")


def rosenbrock_runs():
    f = problems.get("rosenbrock").fun
    runs = {method: hessopt.minimize(f, np.array([-1.2, 1.0]), method=method)
            for method in ("newton", "newton-cg", "trust-exact", "arc")}
    return f, runs


def trajectory(f, runs):
    ax = hplot.trajectory(f, runs, bounds=((-1.6, 1.4), (-0.6, 1.6)))
    ax.set_title("Rosenbrock from (-1.2, 1): iterates of four methods")
    save(ax, "trajectory.png")


def convergence(runs):
    ax = hplot.convergence(runs, fstar=0.0, x="evaluations")
    ax.set_title("Rosenbrock from (-1.2, 1)")
    save(ax, "convergence.png")


def performance_profile():
    runs = run_suite(problems.MGH, ["newton-cg", "trust-ncg", "trust-exact", "arc"],
                     options={"gtol": 1e-8})
    ax = hplot.performance_profile(runs, ax=plt.figure(figsize=(7, 4.5)).add_subplot())
    ax.set_title("Performance profile on the 39 Moré–Garbow–Hillstrom instances\n"
                 "(Dolan & Moré 2002)")
    save(ax, "performance_profile.png")


def main() -> None:
    quickstart()
    heatmap()
    jacobian()
    params = trained_classifier()
    spectrum(params)
    landscape(params)
    f, runs = rosenbrock_runs()
    trajectory(f, runs)
    convergence(runs)
    performance_profile()


if __name__ == "__main__":
    main()
