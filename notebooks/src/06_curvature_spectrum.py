# %% [markdown]
# # 06 · The curvature spectrum of a network
#
# What does the loss surface of a trained network look like? `hessopt.curvature` answers from
# Hessian-vector products alone, so nothing here forms a matrix: the top eigenvalues (Lanczos),
# the trace (Hutch++), the whole eigenvalue density (stochastic Lanczos quadrature, Ghorbani,
# Krishnan & Xiao 2019) and pictures of the loss around the weights (`hessopt.plot.landscape`,
# Li et al. 2018). We compare the Hessian H with the generalized Gauss-Newton matrix
# G = JᵀH_L J (Schraudolph 2002; `autodiff.ggn_operator`), before and after training.
#
# The network is notebook 05's: 64 → 16 (tanh) → 10 on 500 of scikit-learn's digits, trained
# with Newton-CG on the cross-entropy plus a weight decay λ = 1e-4 (no penalty) until the
# gradient's largest entry is below 1e-5: a minimum, so what is measured there does not depend on
# how many steps training took. H and G are those of the data term, the cross-entropy.
#
# Each number the text relies on is checked by a `claim` cell (the value must lie within a
# stated tolerance of the number in the text). The tolerances hold for the initial weights of
# notebook 05's seeds 0–5 (seed 0 here), with OpenBLAS's SkylakeX, Sandybridge and Prescott
# kernels, at one and at two threads, and when the initial weights are perturbed by one part in
# 10¹² (36 minima in all): Newton-CG on this non-convex loss then ends at another minimum (the
# rounding of the machine decides which), and the claims are about what those minima share.

# %%
import matplotlib.pyplot as plt
import numpy as np
from numpy.testing import assert_allclose
from sklearn.datasets import load_digits

import autodiff as ad
import autodiff.numpy as anp
import hessopt
import hessopt.plot as hplot
from hessopt import curvature, nn
from hessopt.nn import losses

from claims import claim

digits = load_digits()
images, targets = digits.data / 16.0, digits.target
train = np.random.default_rng(0).permutation(len(targets))[:500]
x_train, y_train = images[train], targets[train]

model = nn.Sequential([nn.Dense(16, "tanh", seed=0), nn.Dense(10, seed=1)])
model(x_train[:1])
variables = model.trainable_variables


def predict():
    return model(x_train)


def cross_entropy(logits):
    return losses.softmax_cross_entropy(y_train, logits)


def loss():
    return cross_entropy(predict())


decay = 1e-4


def objective():
    return loss() + 0.5 * decay * sum(anp.sum(v ** 2) for v in variables)


n = sum(v.numpy().size for v in variables)
print("parameters:", n)

# %% [markdown]
# ## The operators, before and after training
#
# `hessian_operator(loss, variables)` records the loss and its gradient once; each product H v is
# then one backward sweep. `ggn_operator(predict, cross_entropy, variables)` records the
# predictions once; each product G v is three sweeps (J v, H_L J v, Jᵀ H_L J v), no Jacobian
# formed. Both take the model's Variables directly (the functions read them).

# %%
def operators():
    return {"Hessian": ad.hessian_operator(loss, variables),
            "Gauss-Newton": ad.ggn_operator(predict, cross_entropy, variables)}


initial_weights = [v.numpy() for v in variables]
before = operators()
result = hessopt.minimize(objective, variables, method="newton-cg", options={"gtol": 1e-5, "maxiter": 1000})
assert result.success
trained_weights = [v.numpy() for v in variables]
after = operators()
print(f"training: {result.nit} iterations, objective {result.fun:.5f}, cross-entropy "
      f"{before['Hessian'].value:.4f} -> {after['Hessian'].value:.5f}, its gradient norm "
      f"{np.linalg.norm(before['Hessian'].gradient):.2e} -> {np.linalg.norm(after['Hessian'].gradient):.2e}")

# %% [markdown]
# The operators keep what they recorded: `before` still answers for the initial weights although
# the Variables have moved. A quick check of the identities behind them on random vectors:
# both symmetric, G positive semi-definite, and the same gradient from both.

# %%
rng = np.random.default_rng(1)
u, v = rng.standard_normal(n), rng.standard_normal(n)
for ops in (before, after):
    H, G = ops["Hessian"], ops["Gauss-Newton"]
    assert_allclose(u @ (H @ v), v @ (H @ u), rtol=1e-9)
    assert_allclose(u @ (G @ v), v @ (G @ u), rtol=1e-9)
    assert v @ (G @ v) >= 0
    assert_allclose(G.gradient, H.gradient, rtol=1e-10, atol=1e-14)
print("symmetric, G ⪰ 0 along v, equal gradients: ok")

# %% [markdown]
# ## Top eigenvalues
#
# `curvature.top_eigenvalues(op, k)` is Lanczos with full reorthogonalization, stopping when each
# wanted Ritz pair has a relative residual below 1e-8. `which="SA"` asks for the most negative
# ones: negative curvature, which the Hessian may have and the Gauss-Newton matrix cannot have.

# %%
top = {}
for when, ops in (("before", before), ("after", after)):
    for name, op in ops.items():
        top[when, name], _ = curvature.top_eigenvalues(op, k=5, seed=0)
        print(f"{when:<7}{name:<13} top 5: {np.array2string(top[when, name], precision=4)}")
(smallest_before,), _ = curvature.top_eigenvalues(before["Hessian"], k=1, which="SA", seed=0)
print(f"smallest eigenvalue of H before training: {smallest_before:.3g}")

# %% [markdown]
# A check against the dense matrices (1,210 × 1,210, one batched sweep each; fine at this size,
# which is why the rest of the notebook never needs them). After training, the smallest
# eigenvalues sit in a bulk of tiny ones, which a relative residual test cannot certify; the
# dense matrices give them.

# %%
dense = {(when, name): op.to_dense() for when, ops in (("before", before), ("after", after))
         for name, op in ops.items()}
exact = {key: np.linalg.eigvalsh(matrix) for key, matrix in dense.items()}
for key, values in exact.items():
    assert_allclose(top[key], values[::-1][:5], rtol=1e-7)
    print(f"{key[0]:<7}{key[1]:<13} dense top 5: {np.array2string(values[::-1][:5], precision=4)}  "
          f"smallest {values[0]:.3g}  trace {np.trace(dense[key]):.4f}")
assert_allclose(smallest_before, exact["before", "Hessian"][0], rtol=1e-7)
assert exact["before", "Gauss-Newton"][0] >= -1e-12 * exact["before", "Gauss-Newton"][-1]
assert exact["after", "Gauss-Newton"][0] >= -1e-12 * exact["after", "Gauss-Newton"][-1]

# %% [markdown]
# At the initial weights the Hessian has clearly negative eigenvalues (about −0.5, and −1 for
# some initializations), which G lacks by construction. Training shrinks the top of the spectrum
# about fifteenfold (13 to 19 times; the cross-entropy near a fit is flat) and leaves almost no
# negative curvature: at a minimum of the cross-entropy plus (λ/2)‖θ‖², the Hessian of the
# whole, H + λI, is positive semi-definite, so no eigenvalue of H can lie below −λ (up to how
# near the run came to the minimum); the smallest lies near that bound (between −0.8λ and
# −1.2λ), where the weight decay just balances the data's negative curvature. And H and G draw
# closer, their difference from two thirds of ‖H‖ to a fifth: the term G leaves out,
# Σₖ (∂L/∂zₖ) ∇²zₖ, is weighted by the residuals softmax(z) − y, which training shrinks.

# %%
difference = {when: np.linalg.norm(dense[when, "Hessian"] - dense[when, "Gauss-Newton"])
              / np.linalg.norm(dense[when, "Hessian"]) for when in ("before", "after")}
print(f"‖H − G‖ / ‖H‖ (Frobenius): before {difference['before']:.3f}, after {difference['after']:.3f}")
largest = {when: exact[when, "Hessian"][-1] for when in ("before", "after")}
claim("largest eigenvalue of H before training", largest["before"], 2.65, atol=0.45)
claim("smallest eigenvalue of H before training", exact["before", "Hessian"][0], -0.7, atol=0.3)
claim("largest eigenvalue of H after training", largest["after"], 0.167, atol=0.021)
claim("largest eigenvalue of H, before / after training", largest["before"] / largest["after"], 16.1, atol=3.1)
claim("smallest eigenvalue of H after training, in units of λ", exact["after", "Hessian"][0] / decay,
      -0.99, atol=0.2)
claim("‖H − G‖ / ‖H‖ before training", difference["before"], 0.66, atol=0.1)
claim("‖H − G‖ / ‖H‖ after training", difference["after"], 0.21, atol=0.02)

# %% [markdown]
# ## Trace
#
# Hutch++ (Meyer, Musco, Musco & Woodruff 2021) spends a third of its products on a sketch of the
# top of the spectrum, takes the trace there exactly and Hutchinson's estimate only on the rest;
# it gains most on a spectrum whose top carries most of the trace. Here (after training) the
# top 20 eigenvalues carry three quarters of it, and with 60 products each, over ten seeds of the
# random probes, Hutch++'s worst relative error is under 3%, Hutchinson's 6 to 14%:

# %%
traces = {name: np.trace(dense["after", name]) for name in ("Hessian", "Gauss-Newton")}
values = exact["after", "Hessian"][::-1]
print(f"exact traces after training: H {traces['Hessian']:.4f}, G {traces['Gauss-Newton']:.4f}; "
      f"the top 20 eigenvalues of H carry {values[:20].sum() / values.sum():.0%} of its trace")
errors = {method: np.array([abs(curvature.trace(after["Hessian"], num_products=60, method=method, seed=s)
                                / traces["Hessian"] - 1) for s in range(10)])
          for method in ("hutch++", "hutchinson")}
for method, e in errors.items():
    print(f"{method:<11} relative error over 10 seeds: median {np.median(e):.2%}, largest {e.max():.2%}")
claim("trace of H after training", traces["Hessian"], 1.20, atol=0.06)
claim("trace of G after training", traces["Gauss-Newton"], 0.89, atol=0.055)
claim("share of H's trace in its top 20 eigenvalues", values[:20].sum() / values.sum(), 0.77, atol=0.02)
claim("hutch++: largest relative error of 10, 60 products", errors["hutch++"].max(), 0.017, atol=0.011)
claim("hutchinson: largest relative error of 10, 60 products", errors["hutchinson"].max(), 0.1, atol=0.047)

# %% [markdown]
# ## Spectral density
#
# Each random probe gives, through 60 Lanczos steps, a Gauss quadrature of the eigenvalue
# distribution; 8 probes averaged and smoothed give its density (each panel has its own
# eigenvalue axis). On a log scale the picture is the one Ghorbani et al. describe: a bulk near
# zero and a few outliers (marked) that carry the large curvature; before training the
# Hessian's bulk reaches well below zero, after training hardly at all.

# %%
densities = {}
fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
for row, (when, ops) in enumerate((("before", before), ("after", after))):
    for col, name in enumerate(("Hessian", "Gauss-Newton")):
        densities[when, name] = curvature.spectral_density(ops[name], num_steps=60, num_probes=8, seed=3)
        ax = hplot.spectrum(densities[when, name], ax=axes[row, col])
        ax.set_title(f"{name}, {when} training")
fig.suptitle(f"Eigenvalue density of the {n}-parameter network's curvature "
             "(stochastic Lanczos quadrature, 60 steps × 8 probes)")
fig.tight_layout()

# %% [markdown]
# The smoothed density against the exact eigenvalues (the dense matrix after training), as a
# histogram on the same log scale: the quadrature finds the outliers exactly (the top three
# eigenvalues are among them to 1e-6) and the bulk's shape.

# %%
outliers = densities["after", "Hessian"].outliers()
for eigenvalue in exact["after", "Hessian"][::-1][:3]:
    assert np.min(np.abs(outliers - eigenvalue)) <= 1e-6 * eigenvalue, (eigenvalue, outliers)
ax = hplot.spectrum(densities["after", "Hessian"], ax=plt.figure(figsize=(7, 4)).add_subplot())
values = exact["after", "Hessian"]
counts, edges = np.histogram(values, bins=120, range=ax.get_xlim())
widths = np.diff(edges)
ax.bar(edges[:-1], np.where(counts > 0, counts / (values.size * widths), np.nan), width=widths,
       align="edge", color="0.75", alpha=0.7, label="exact eigenvalues (histogram)")
ax.legend(fontsize=8)
ax.set_title("Hessian after training: quadrature against the exact spectrum")
ax.figure.tight_layout()

# %% [markdown]
# ## Loss landscape
#
# `hessopt.plot.landscape(f, params)` draws f(θ + α d₁ + β d₂) over two random directions, each
# filter-normalized (Li et al. 2018: each output unit's direction scaled to the norm of its
# weights, so that the picture does not depend on the weights' scale). It takes a function of a
# parameter pytree, so the training objective is written here once more as a plain function,
# checked against the model.

# %%
def loss_of(params):
    kernel1, bias1, kernel2, bias2 = params
    return (cross_entropy(anp.tanh(x_train @ kernel1 + bias1) @ kernel2 + bias2)
            + 0.5 * decay * sum(anp.sum(p ** 2) for p in params))


assert_allclose(float(loss_of(trained_weights)), result.fun, rtol=1e-12)

fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
hplot.landscape(loss_of, initial_weights, ax=left, steps=21, span=1.0, seed=4)
left.set_title("around the initial weights")
hplot.landscape(loss_of, trained_weights, ax=right, steps=21, span=1.0, seed=4)
right.set_title("around the trained weights")
fig.tight_layout()

# %% [markdown]
# Along a single direction the curvature reads off directly: the objective along the top
# eigenvector d of the Hessian of the whole objective (the sharpest direction) at the trained
# weights, against the quadratic model f + (gᵀd) α + λ_max α²/2 that Newton's method trusts.
# Here it holds only within a few hundredths (right), on one side further than on the other: near
# a fit the cross-entropy grows exponentially with the logits, so the small curvature at the
# minimum says little about the walls a short way off. That is why the second-order methods bound
# their steps (line searches, trust regions, cubic regularization).

# %%
H = ad.hessian_operator(objective, variables)      # the data term's Hessian plus λ I
(lam,), vectors = curvature.top_eigenvalues(H, k=1, seed=0)
assert_allclose(lam, exact["after", "Hessian"][-1] + decay, rtol=1e-7)
direction = vectors[:, 0]
slope = H.gradient @ direction
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
for ax, span in zip(axes, (2.0, 0.15)):
    hplot.landscape(loss_of, trained_weights, directions=[direction], ax=ax, steps=41, span=span)
    alphas = np.linspace(-span, span, 41)
    ax.plot(alphas, H.value + slope * alphas + 0.5 * lam * alphas ** 2, "--", color="C3",
            label=f"quadratic model (λ_max = {lam:.3g})")
    ax.lines[0].set_label("objective")
    ax.set_xlabel("α along the Hessian's top eigenvector (unit length)")
    ax.set_title(f"|α| ≤ {span:g}")
    ax.legend(fontsize=8)
fig.suptitle("The objective along the sharpest direction at the trained weights")
fig.tight_layout()
