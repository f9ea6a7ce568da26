# %% [markdown]
# # 05 · Input-gradient regularization
#
# A classifier whose loss changes fast with its input is easy to fool: a small change of the
# pixels, along the input gradient, flips its answer. **Input-gradient regularization** (double
# backpropagation, Drucker & LeCun 1992) adds the squared size of that gradient to the training
# loss,
#
# $$ L(\theta) = \frac1N \sum_i \ell_i(\theta) + \mu \, \frac1N \sum_i \|\nabla_{x_i} \ell_i(\theta)\|^2 , $$
#
# so training differentiates a derivative, and a second-order optimizer a derivative of that
# (third-order products, exact, from the tape engine).
#
# This notebook trains a small `hessopt.nn` network on scikit-learn's bundled handwritten digits
# (8 × 8 images, loaded from the installed package, nothing downloaded) with and without the
# penalty, with a second-order method (`newton-cg`) and with Adam, and shows what the penalty does
# to the input gradients, as images, and to the accuracy under small adversarial perturbations.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import autodiff as ad
import hessopt
from hessopt import nn
from hessopt.nn import losses
from hessopt.regularizers import input_gradient_penalty

# %% [markdown]
# ## Data and model
#
# 1,797 digits, pixel values scaled to [0, 1]; 500 for training and 600 held out, drawn at
# random with a fixed seed. The network is 64 → 16 (tanh) → 10 logits, trained on the softmax
# cross-entropy: 1,210 parameters, all `autodiff.Variable`s.

# %%
digits = load_digits()
images, targets = digits.data / 16.0, digits.target
order = np.random.default_rng(0).permutation(len(targets))
train, test = order[:500], order[500:1100]
x_train, y_train, x_test, y_test = images[train], targets[train], images[test], targets[test]
print("train:", x_train.shape, "test:", x_test.shape, "classes:", np.bincount(y_train))


def make_model():
    """The same initial weights every time (fixed seeds)."""
    model = nn.Sequential([nn.Dense(16, "tanh", seed=0), nn.Dense(10, seed=1)])
    model(x_train[:1])     # builds the Variables
    return model


print("parameters:", sum(v.numpy().size for v in make_model().trainable_variables))

# %% [markdown]
# ## The penalty
#
# `input_gradient_penalty(loss_fn, x)` is `sum((d loss_fn(x) / dx)**2)`, a Tensor that tapes
# differentiate with respect to every Variable `loss_fn` reads. With `loss_fn` the mean
# cross-entropy, `d loss / d x_i = (1/N) ∇ℓ_i`, so N times the penalty is the mean of the
# per-example squared gradient norms, the formula above. μ = 1 here.

# %%
mu = 1.0


def training_losses(model):
    """The data loss on the training set, and the data loss plus the penalty, as functions of no
    arguments (they read the model's Variables, as hessopt.minimize takes them)."""
    def data(z):
        return losses.softmax_cross_entropy(y_train, model(z))

    def penalized():
        return data(x_train) + mu * len(y_train) * input_gradient_penalty(data, x_train)

    return (lambda: data(x_train)), penalized


model = make_model()
plain_loss, penalized_loss = training_losses(model)
print(f"at the initial weights: data loss {plain_loss().numpy():.4f}, "
      f"with the penalty {penalized_loss().numpy():.4f}")

# %% [markdown]
# ## Training: four runs
#
# Newton-CG (40 iterations; each takes a gradient and a few Hessian-vector products, which for the
# penalized loss are third-order products) and Adam (learning rate 0.01, 500 iterations), each on
# the plain and on the penalized loss, from the same initial weights.

# %%
settings = {"newton-cg": {"maxiter": 40}, "adam": {"learning_rate": 1e-2, "maxiter": 500}}
models, results, seconds = {}, {}, {}
for method, options in settings.items():
    for penalized in (False, True):
        label = f"{method}{' + penalty' if penalized else ''}"
        model = make_model()
        plain_loss, penalized_loss = training_losses(model)
        start = time.perf_counter()
        results[label] = hessopt.minimize(penalized_loss if penalized else plain_loss,
                                          model.trainable_variables, method=method, options=options)
        seconds[label] = time.perf_counter() - start
        models[label] = model
        print(f"{label:<22} {results[label].nit:>4} iterations, {seconds[label]:5.1f} s, "
              f"training loss {results[label].fun:.4f} (data part {plain_loss().numpy():.4f})")

# %% [markdown]
# Training curves against the number of backward sweeps (gradients plus Hessian-vector products,
# each about the cost of one gradient). Newton-CG's line search is nonmonotone (Grippo,
# Lampariello & Lucidi 1986): it accepts a first trial step against the highest of the last few
# values, so the loss may rise for a step while the iterates follow a curved valley.

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for k, (label, result) in enumerate(results.items()):
    history = result.history
    sweeps = np.asarray(history["njev"]) + np.asarray(history["nhev"])
    ax.loglog(np.maximum(sweeps, 1), history["f"], color=f"C{k // 2}",
              linestyle="--" if "penalty" in label else "-", label=label)
ax.set_xlabel("backward sweeps (gradients + Hessian-vector products)")
ax.set_ylabel("training loss (with the penalty where used)")
ax.set_title("Training a 64-16-10 network on 500 digits")
ax.grid(alpha=0.3, which="both")
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## What the penalty does to the input gradients
#
# Per-example input gradients ∇ₓℓᵢ on the held-out digits: one batched gradient of the summed
# loss with respect to the inputs (examples are independent, so row i is example i's gradient).

# %%
def input_gradients(model, x, y):
    x = ad.constant(x)
    with ad.GradientTape() as tape:
        tape.watch(x)
        total = len(y) * losses.softmax_cross_entropy(y, model(x))
    return tape.gradient(total, x).numpy()


def accuracy(model, x, y):
    return float(np.mean(np.argmax(model(x).numpy(), axis=1) == y))


gradients = {label: input_gradients(m, x_test, y_test) for label, m in models.items()}
print(f"{'model':<22}{'test accuracy':>14}{'mean |∇x ℓ|':>14}{'median |∇x ℓ|':>15}")
for label, m in models.items():
    norms = np.linalg.norm(gradients[label], axis=1)
    print(f"{label:<22}{accuracy(m, x_test, y_test):>14.3f}{norms.mean():>14.3f}{np.median(norms):>15.2g}")

# %% [markdown]
# The mean and the median differ by orders of magnitude: on a digit the network classifies with
# confidence the loss is nearly flat (ℓ ≈ 0 whatever the pixels do nearby), and the mean comes from
# the uncertain and misclassified ones. To see what the network's function does, look instead at
# the gradient of the true class's logit, ∇ₓ z_y (a saliency map), which does not saturate:

# %%
def logit_gradients(model, x, y):
    x = ad.constant(x)
    with ad.GradientTape() as tape:
        tape.watch(x)
        true_logits = np.take_along_axis(model(x), y[:, None], axis=1)
        total = np.sum(true_logits)
    return tape.gradient(total, x).numpy()


saliency = {label: logit_gradients(m, x_test, y_test) for label, m in models.items()}
for label in models:
    print(f"{label:<22} mean |∇x z_y| = {np.linalg.norm(saliency[label], axis=1).mean():.2f}")

# %% [markdown]
# As 8 × 8 images, for six held-out digits (Newton-CG runs; red: brightening that pixel raises
# the true class's logit, blue: lowers it; each column shares one colour scale, white is zero).
# With the penalty the map is weaker on most digits (not on every one: compare the norms above
# each image), and the network's function flatter on average, as the means printed above say.

# %%
shown = [int(np.flatnonzero(y_test == digit)[0]) for digit in (0, 1, 3, 4, 7, 9)]
rows = ["newton-cg", "newton-cg + penalty"]
fig, axes = plt.subplots(3, len(shown), figsize=(1.9 * len(shown), 6.6))
for col, i in enumerate(shown):
    axes[0, col].imshow(x_test[i].reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
    axes[0, col].set_title(f"digit {y_test[i]}", fontsize=9)
    limit = max(np.abs(saliency[label][i]).max() for label in rows)
    for row, label in enumerate(rows, start=1):
        g = saliency[label][i]
        axes[row, col].imshow(g.reshape(8, 8), cmap="RdBu_r", vmin=-limit, vmax=limit)
        axes[row, col].set_title(f"|∇x z_y| = {np.linalg.norm(g):.3g}\n(scale ±{limit:.2g})", fontsize=8)
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
for row, name in enumerate(["input", "no penalty", "with penalty"]):
    axes[row, 0].set_ylabel(name, fontsize=10)
fig.suptitle("Gradient of the true class's logit on held-out digits (Newton-CG runs)")
fig.tight_layout()

# %% [markdown]
# ## Small adversarial changes
#
# The fast gradient sign perturbation moves every pixel by ε in the direction that increases the
# loss, x + ε sign(∇ₓℓ). A model with smaller input gradients loses less accuracy. (The accuracy
# at ε = 0 is the test accuracy above; pixels are in [0, 1].)

# %%
epsilons = np.linspace(0.0, 0.25, 11)
fig, ax = plt.subplots(figsize=(7, 4))
for k, (label, m) in enumerate(models.items()):
    direction = np.sign(gradients[label])
    curve = [accuracy(m, x_test + eps * direction, y_test) for eps in epsilons]
    ax.plot(epsilons, curve, marker=".", color=f"C{k // 2}",
            linestyle="--" if "penalty" in label else "-", label=label)
    print(f"{label:<22} accuracy at ε = 0.1: {curve[4]:.3f}")
ax.set_xlabel("ε (perturbation of every pixel, pixel values in [0, 1])")
ax.set_ylabel("held-out accuracy")
ax.set_ylim(0, 1)
ax.set_title("Accuracy under the fast gradient sign perturbation")
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## Exact or finite differences
#
# `method="finite-difference"` (Finlay & Oberman 2019) replaces the directional derivative along
# d = g/‖g‖ by a difference quotient: training then needs first derivatives only, and the penalty
# agrees with the exact one to O(h).

# %%
model = models["newton-cg + penalty"]
data = lambda z: losses.softmax_cross_entropy(y_train, model(z))   # noqa: E731
for h in (1e-1, 1e-2, 1e-3):
    approximate = input_gradient_penalty(data, x_train, method="finite-difference", h=h).numpy()
    exact = input_gradient_penalty(data, x_train).numpy()
    print(f"h = {h:g}: finite-difference {approximate:.6e}, exact {exact:.6e}, "
          f"relative difference {abs(approximate - exact) / exact:.1e}")
