# %% [markdown]
# # 03 · Jacobians and Hessians
#
# `tape.jacobian` differentiates every element of a non-scalar target, in one batched backward
# sweep (not a Python loop over rows). This notebook follows TensorFlow's "Advanced automatic
# differentiation" guide: the Jacobian with respect to a layer's kernel, per-example Jacobians with
# `batch_jacobian` and the BatchNorm pitfall (drawn with `hessopt.plot.jacobian_patches`), and the
# Hessian of a loss with respect to a kernel as a heatmap, with a Newton step taken from it; then
# a sparse Hessian read from the recorded program, and Newton at 100,000 variables with it.

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse.linalg
from numpy.testing import assert_allclose

import autodiff as ad
import autodiff.numpy as anp
import hessopt
import hessopt.plot as hplot
from hessopt import nn
from hessopt.problems import bounded

from claims import claim, passing_gradient

rng = np.random.default_rng(0)

# %% [markdown]
# ## The Jacobian with respect to a kernel
#
# A Dense(10) layer's output y (7 × 10) with respect to its kernel (5 × 10): the Jacobian has the
# target's shape followed by the source's, (7, 10, 5, 10). Summed over the target's axes it is the
# gradient of Σ y.

# %%
x = rng.standard_normal((7, 5))
layer = nn.Dense(10, activation="elu", seed=0)
with ad.GradientTape(persistent=True) as tape:
    y = layer(x)
    total = anp.sum(y)
j = tape.jacobian(y, layer.kernel)
g = tape.gradient(total, layer.kernel)
print("y:", y.shape, "  kernel:", layer.kernel.shape, "  jacobian:", j.shape)
print("max |sum of the jacobian - gradient| =", np.abs(j.numpy().sum(axis=(0, 1)) - g.numpy()).max())
assert j.shape == (7, 10, 5, 10)
assert_allclose(j.numpy().sum(axis=(0, 1)), g.numpy(), atol=1e-12)

# %% [markdown]
# ## Per-example Jacobians: `batch_jacobian`
#
# For a batch, the full Jacobian of outputs (7, 6) with respect to inputs (7, 5) is
# (7, 6, 7, 5), but example i's outputs depend only on example i's inputs: only the 7 diagonal
# blocks are nonzero. `batch_jacobian` computes just those, (7, 6, 5), in one sweep.

# %%
x = ad.constant(rng.standard_normal((7, 5)))
layer1 = nn.Dense(8, activation="elu", seed=1)
layer2 = nn.Dense(6, activation="elu", seed=2)
with ad.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = layer2(layer1(x))
full = tape.jacobian(y, x).numpy()
per_example = tape.batch_jacobian(y, x).numpy()
print("jacobian:", full.shape, "  batch_jacobian:", per_example.shape)
assert full.shape == (7, 6, 7, 5) and per_example.shape == (7, 6, 5)
assert_allclose(per_example, np.einsum("bxby->bxy", full), atol=1e-14)   # the diagonal blocks
assert_allclose(per_example, full.sum(axis=2), atol=1e-14)               # off-diagonal blocks are 0
print("batch_jacobian == the diagonal blocks of jacobian")

# %% [markdown]
# ## The BatchNorm pitfall
#
# Batch normalization in training mode normalizes with the batch's own mean and variance, so every
# output depends on every example: the off-diagonal blocks fill in. `batch_jacobian` still returns
# a (7, 6, 5) array, but it is no per-example Jacobian: its block b is the sum over all output
# examples b′ of ∂y[b′]/∂x[b] (the sweep seeds every example at once). Use `tape.jacobian`, or
# `training=False` (the moving statistics, which do not couple examples).

# %%
batch_norm = nn.BatchNorm()
with ad.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_bn = layer2(batch_norm(layer1(x), training=True))
full_bn = tape.jacobian(y_bn, x).numpy()
batch_bn = tape.batch_jacobian(y_bn, x).numpy()
diagonal = np.einsum("bxby->bxy", full_bn)
off_diagonal = full_bn.copy()
for b in range(7):
    off_diagonal[b, :, b, :] = 0
print(f"largest off-diagonal entry: {np.abs(off_diagonal).max():.3f} (it was 0 without BatchNorm)")
print(f"batch_jacobian - diagonal blocks: max {np.abs(batch_bn - diagonal).max():.3f}")
column_sums = full_bn.sum(axis=0).transpose(1, 0, 2)
print(f"batch_jacobian - column sums of blocks: max {np.abs(batch_bn - column_sums).max():.1e}")
assert np.abs(off_diagonal).max() > 1e-2
assert_allclose(batch_bn, np.einsum("axby->bxy", full_bn), atol=1e-12)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
hplot.jacobian_patches(full, ax=left)
left.set_title("Dense → Dense: examples independent\n(block diagonal: batch_jacobian is exact)")
hplot.jacobian_patches(full_bn, ax=right)
right.set_title("Dense → BatchNorm (training) → Dense:\nevery output depends on every example")
fig.tight_layout()

# %% [markdown]
# `jacobian_patches` also draws a `batch_jacobian` result: the blocks it holds on the diagonal,
# the rest grey (not computed). With BatchNorm those diagonal patches are not the true diagonal
# blocks (left above), which is the pitfall in one picture:

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
hplot.jacobian_patches(diagonal, ax=left)
left.set_title("the true diagonal blocks ∂y[b]/∂x[b]")
hplot.jacobian_patches(batch_bn, ax=right)
right.set_title("what batch_jacobian returns with BatchNorm in training:\nsums over b′ of ∂y[b′]/∂x[b]")
fig.tight_layout()

# %% [markdown]
# In inference mode (`training=False`) BatchNorm uses its moving statistics, examples are
# independent again and `batch_jacobian` is exact:

# %%
with ad.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_inference = layer2(batch_norm(layer1(x), training=False))
full_inference = tape.jacobian(y_inference, x).numpy()
assert_allclose(tape.batch_jacobian(y_inference, x).numpy(), np.einsum("bxby->bxy", full_inference),
                atol=1e-14)
print("training=False: batch_jacobian == diagonal blocks")

# %% [markdown]
# ## The Hessian of a loss with respect to a kernel
#
# The Hessian is the Jacobian of the gradient: an outer tape records the inner tape's gradient and
# takes its Jacobian. For a two-layer network's mean squared output with respect to the first
# kernel (5 × 8), that is (5, 8, 5, 8), a 40 × 40 symmetric matrix once reshaped.

# %%
x = rng.standard_normal((7, 5))
layer1 = nn.Dense(8, activation="elu", seed=3)
layer2 = nn.Dense(6, activation="elu", seed=4)


def loss():
    return anp.mean(layer2(layer1(x)) ** 2)


with ad.GradientTape() as t2:
    with ad.GradientTape() as t1:
        value = loss()
    g = t1.gradient(value, layer1.kernel)
h = t2.jacobian(g, layer1.kernel)
n = int(np.prod(layer1.kernel.shape))
H = h.numpy().reshape(n, n)
print("hessian:", h.shape, "  as a matrix:", H.shape)
assert h.shape == (5, 8, 5, 8)
assert_allclose(H, H.T, atol=1e-12)

# the functional layer gives the same matrix, and the curvature operator its products
kernel0 = layer1.kernel.numpy()


def loss_of_kernel(kernel):
    return anp.mean(layer2(layer1.activation(x @ kernel + layer1.bias)) ** 2)


assert_allclose(ad.hessian(loss_of_kernel)(kernel0).reshape(n, n), H, atol=1e-12)
eigenvalues = np.linalg.eigvalsh(H)
print(f"eigenvalues from {eigenvalues[0]:.3g} to {eigenvalues[-1]:.3g}")

# %% [markdown]
# `hessopt.plot.hessian_heatmap` draws it with zero white and colour limits ±max|H|; it takes the
# (5, 8, 5, 8) array as the tape gives it (the kernel flattened row by row). Here the blocks are
# the kernel's 5 rows (one per input feature, 8 weights each). The block of inputs (i, j) carries
# the products x_i x_j of the examples (weighted by the activations' slopes), so the weights of
# large inputs tend to carry the most curvature, here those of input 4, the largest feature:

# %%
feature_sizes = np.linalg.norm(x, axis=0)
block_traces = np.einsum("iaia->i", h.numpy())      # the trace of each input's diagonal block
print("size of each input feature over the 7 examples:", np.round(feature_sizes, 2))
print("trace of each input's diagonal block:          ", np.round(block_traces, 2))
assert np.argmax(feature_sizes) == np.argmax(block_traces) == 4
ax = hplot.hessian_heatmap(h, blocks=[8] * 5, labels=[f"input {i}" for i in range(5)])
ax.set_title("Hessian of mean(y²) w.r.t. the first Dense kernel (5 × 8)")
ax.figure.set_size_inches(6.5, 5.5)

# %% [markdown]
# ## A Newton step from it
#
# Newton's method solves (H + εI) u = g and steps to kernel − u, here with respect to the first
# kernel only, the way the guide does it. The guide's ε = 1e-3 only keeps the solve defined; but
# this H is indefinite (its smallest eigenvalue is negative), and a Newton step on an indefinite
# matrix heads for a saddle or a maximum as readily as for a minimum. Shifting ε past the most
# negative eigenvalue (a Levenberg–Marquardt-style damping) makes every step a descent direction.
# Both, from the same kernel:

# %%
start_kernel = layer1.kernel.numpy()


def newton_steps(shift, steps=6):
    """Loss after each step of kernel -= (H + eps I)^-1 g, eps from shift(H)."""
    layer1.kernel.assign(start_kernel)
    history = [float(loss().numpy())]
    for _ in range(steps):
        with ad.GradientTape() as t2:
            with ad.GradientTape() as t1:
                value = loss()
            g = t1.gradient(value, layer1.kernel)
        H = t2.jacobian(g, layer1.kernel).numpy().reshape(n, n)
        update = np.linalg.solve(H + shift(H) * np.eye(n), g.numpy().reshape(n))
        layer1.kernel.assign_sub(update.reshape(layer1.kernel.shape))
        history.append(float(loss().numpy()))
    return history


plain = newton_steps(lambda H: 1e-3)
shifted = newton_steps(lambda H: max(1e-3, 0.1 - np.linalg.eigvalsh(H)[0]))
print(f"{'step':>4} {'ε = 1e-3':>12} {'ε = 0.1 − λmin':>16}")
for k, (a, b) in enumerate(zip(plain, shifted)):
    print(f"{k:>4} {a:>12.5g} {b:>16.5g}")
assert all(b1 < b0 for b0, b1 in zip(shifted, shifted[1:])), "the shifted steps descend"

# %%
fig, ax = plt.subplots(figsize=(6, 4.3))
ax.semilogy(plain, "o-", label="ε = 1e-3 (the guide's): H indefinite, steps may climb")
ax.semilogy(shifted, "s-", label="ε = 0.1 − λmin(H): every step descends")
ax.set_xlabel("Newton step on the first kernel")
ax.set_ylabel("mean(y²)")
ax.set_title("Newton steps from the kernel's Hessian")
ax.grid(alpha=0.3)
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1)
fig.tight_layout()

# %% [markdown]
# The optimizers in `hessopt.minimize` make this choice properly (modified Cholesky or eigenvalue
# modification for `"newton"`, trust regions, cubic regularization): notebook 04.

# %% [markdown]
# ## Sparse Hessians, found in the recorded program
#
# Discretized problems have Hessians with a few nonzeros a row. The minimal surface over a
# 12 × 12 grid (MINPACK-2's finite elements with Enneper's boundary values, as
# `hessopt.problems` gives it) couples each height with its neighbours across the triangles of
# the grid: a 7-point stencil, 144 + 2 × 385 = 914 nonzeros (4.4% of the matrix; 0.0007% at
# 1,000 × 1,000). `ad.hessian_sparsity` reads that pattern from the recorded gradient program
# (shapes and indices, never values), a star colouring groups the 144 columns into 7 seeds, and
# `ad.sparse_hessian` gets the whole matrix from 7 Hessian-vector products, equal to the dense
# Hessian:

# %%
surface = bounded("minimal_surface", 144)
pattern = ad.hessian_sparsity(surface.fun, surface.x0)
colours = pattern.coloring().max() + 1
H_sparse = ad.sparse_hessian(surface.fun)(surface.x0)
H_dense = ad.hessian(surface.fun)(surface.x0)
print(f"n = {pattern.shape[0]}, nonzeros = {pattern.nnz} ({pattern.nnz / 144 ** 2:.1%} of the matrix),"
      f" colours = {colours}")
claim("nonzeros of the 12 x 12 grid's Hessian", pattern.nnz, 914, atol=0.5)
claim("colours", colours, 7, atol=0.5)
claim("max |sparse - dense| / max |H|", np.abs(H_sparse.toarray() - H_dense).max() / np.abs(H_dense).max(),
      0.0, atol=1e-13)

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5), layout="tight")
hplot.hessian_heatmap(H_sparse.toarray(), ax=left)
left.set_title("Minimal surface, 12 × 12 grid: the sparse Hessian")
right.spy(H_sparse[:36, :36], markersize=5)
right.set_title("its first 36 rows and columns (3 grid rows): the stencil")
right.set_xlabel("column (grid point, row by row)")
right.set_ylabel("row")

# %% [markdown]
# `hessopt.minimize` with `"newton"` or `"trust-exact"` takes this path by itself once the Hessian
# is sparse (from 1,000 variables on, under 5% dense): it factors each sparse Hessian as L D Lᵀ
# (qdldl, its ordering found once) instead of forming a dense one. Chained Rosenbrock at
# n = 100,000, plain NumPy, from Nocedal & Wright's start 1.2 (a dense Hessian would need 80 GB):

# %%
rosen = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
result = hessopt.minimize(rosen, np.full(100_000, 1.2), method="newton", options={"keep_iterates": False})
print(result.message)
print("sparse:", result.sparse, " Hessian:", result.hessian_source, " iterations:", result.nit)
assert result.success and result.sparse
claim("Newton iterations at n = 100,000", result.nit, 8, atol=0.5)

# %% [markdown]
# How close to the minimizer x* = 1 is the answer promised to be? The run stopped when
# |g_i| ≤ t_i = 10⁻⁸ max(1, |f|) / max(1, |x_i|). Where the Hessian is at least μ I between x and
# x*, ‖x − x*‖ ≤ ‖g‖ / μ ≤ ‖t‖ / μ. At x the smallest eigenvalue of the sparse Hessian is about
# 0.5 (shift-invert Lanczos on its factorization); within the 10⁻⁵ the bound allows, the Hessian
# changes by about 2400 × 10⁻⁵ (Rosenbrock's third derivatives), so it stays above μ = half that
# eigenvalue. The claim's tolerance is ‖t‖ / μ; Newton's last, quadratically convergent step
# usually lands much closer, by an amount the rounding decides, which is not claimed.

# %%
lowest = scipy.sparse.linalg.eigsh(ad.sparse_hessian(rosen)(result.x), k=1, sigma=0, which="LM",
                                   return_eigenvectors=False)[0]
bound = np.linalg.norm(passing_gradient(result.x, result.fun)) / (lowest / 2)
claim("max |x - 1|", np.abs(result.x - 1).max(), 0.0, atol=bound)
print(f"smallest eigenvalue of the Hessian at x: {lowest:.4f}; ||t|| / mu = {bound:.2g}")
