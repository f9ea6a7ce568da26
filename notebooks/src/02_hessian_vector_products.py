# %% [markdown]
# # 02 · Hessian-vector products
#
# Second-order methods rarely need the Hessian H itself: Newton-CG, trust-region CG and Lanczos
# ask for products H v, dozens per point. This notebook compares two ways of taking them on a small
# network's loss:
#
# - **nested tapes**, the textbook recipe: an outer tape records the inner tape's gradient g, and
#   differentiates g · v. Every product re-runs the loss and its gradient.
# - **the cached inner gradient** (`ad.hessian_operator`): the loss and its gradient are recorded
#   once on a persistent tape; each product is one backward sweep over that recording seeded with
#   v. Nothing new is recorded, so memory stays flat however many products are taken.
#
# Speed and memory are measured live below (on whatever machine runs the notebook, so the numbers
# change from run to run; the ratios are what to read). Then the operator goes to scipy's `cg`
# and `eigsh`.

# %%
import gc
import time
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse.linalg
from numpy.testing import assert_allclose

import autodiff as ad
import autodiff.numpy as anp
from hessopt import curvature

# %% [markdown]
# A two-layer tanh network, 20 inputs, 32 hidden units, 5 classes, softmax cross-entropy on 256
# random examples, with an L2 term: 837 parameters in a dict.

# %%
rng = np.random.default_rng(0)
X = rng.standard_normal((256, 20))
labels = rng.integers(0, 5, 256)
params = {"W1": 0.3 * rng.standard_normal((20, 32)), "b1": np.zeros(32),
          "W2": 0.3 * rng.standard_normal((32, 5)), "b2": np.zeros(5)}


def loss(p):
    logits = anp.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    cross_entropy = anp.mean(anp.logsumexp(logits, axis=1) - logits[np.arange(len(labels)), labels])
    return cross_entropy + 1e-3 * (anp.sum(p["W1"] ** 2) + anp.sum(p["W2"] ** 2))


flat, unravel = ad.ravel(params)
n = flat.size
print("parameters:", n)

# %% [markdown]
# ## Two ways to take H v
#
# The nested-tape product, as one writes it with TensorFlow:

# %%
def nested_hvp(v):
    sources = {k: ad.constant(value) for k, value in params.items()}
    with ad.GradientTape() as outer:
        outer.watch(sources)
        with ad.GradientTape() as inner:
            inner.watch(sources)
            y = loss(sources)
        g = inner.gradient(y, sources)
        g_dot_v = sum(anp.sum(g[k] * v[k]) for k in g)
    return ad.ravel(outer.gradient(g_dot_v, sources))[0]


op = ad.hessian_operator(loss, params)     # loss and gradient recorded once
print(op)
v_flat = rng.standard_normal(n)
v = unravel(v_flat)
assert_allclose(op.matvec(v_flat), nested_hvp(v), rtol=1e-10, atol=1e-12)
print("max |difference|:", np.abs(op.matvec(v_flat) - nested_hvp(v)).max())

# %% [markdown]
# The same pattern written by hand with tapes, for models whose parameters live in Variables: the
# inner gradient is recorded once on a persistent outer tape, and every product is
# `outer.gradient(g, variables, output_gradients=v)`.

# %%
variables = [ad.Variable(params[k], name=k) for k in ("W1", "b1", "W2", "b2")]


def model_loss():
    return loss(dict(zip(("W1", "b1", "W2", "b2"), variables)))


with ad.GradientTape(persistent=True) as outer:
    with ad.GradientTape() as inner:
        value = model_loss()
    g = inner.gradient(value, variables)
v_list = [v[k] for k in ("W1", "b1", "W2", "b2")]
hv = outer.gradient(g, variables, output_gradients=v_list)
assert_allclose(np.concatenate([h.numpy().ravel() for h in hv]), op.matvec(v_flat), rtol=1e-10, atol=1e-12)
print("hand-written cached product agrees with the operator")

# %% [markdown]
# ## Speed
#
# 40 products each way, median of 5 repeats (the first call of each warms caches up).

# %%
def median_seconds(run, repeats=5):
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


vectors = [unravel(rng.standard_normal(n)) for _ in range(40)]
flat_vectors = [ad.ravel(u)[0] for u in vectors]
t_nested = median_seconds(lambda: [nested_hvp(u) for u in vectors])
t_build = median_seconds(lambda: ad.hessian_operator(loss, params))
t_cached = median_seconds(lambda: [op.matvec(u) for u in flat_vectors])
t_batched = median_seconds(lambda: op.matmat(np.stack(flat_vectors, axis=1)))
print(f"nested tapes:          {1e3 * t_nested / 40:6.2f} ms per product")
print(f"cached, one at a time: {1e3 * t_cached / 40:6.2f} ms per product "
      f"(+ {1e3 * t_build:.2f} ms once, to record the gradient)")
print(f"cached, 40 in a batch: {1e3 * t_batched / 40:6.2f} ms per product")
print(f"nested / cached: {t_nested / t_cached:.1f}x;  nested / (record + cached): "
      f"{t_nested / (t_build + t_cached):.1f}x")

# %% [markdown]
# ## Memory
#
# `tracemalloc` follows NumPy's allocations. After 1, 10, 100 and 200 products we read the memory
# still held and, over the whole run, the peak. The cached operator keeps its recording (made
# once) and each product leaves nothing behind: the memory held stays flat (the few kB are
# NumPy's and Python's own caches). The nested recipe frees its recordings too, but makes a new
# one for every product, so its peak is higher and its time goes into recording.

# %%
def memory_trace(product, counts=(1, 10, 100, 200)):
    """Memory still held (kB) after each number of products, and the peak (MB) over the run."""
    held = []
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    done = 0
    for count in counts:
        for _ in range(count - done):
            product()
        done = count
        gc.collect()
        held.append((tracemalloc.get_traced_memory()[0] - base) / 1e3)
    peak = (tracemalloc.get_traced_memory()[1] - base) / 1e6
    tracemalloc.stop()
    return held, peak


counts = (1, 10, 100, 200)
cached_held, cached_peak = memory_trace(lambda: op.matvec(v_flat), counts)
nested_held, nested_peak = memory_trace(lambda: nested_hvp(v), counts)
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
kept = ad.hessian_operator(loss, params)
recording = (tracemalloc.get_traced_memory()[0] - before) / 1e6
tracemalloc.stop()
del kept
print(f"the cached operator's recording: {recording:.2f} MB, made once")
print(f"{'products':>9} {'cached: held kB':>16} {'nested: held kB':>16}")
for count, c, m in zip(counts, cached_held, nested_held):
    print(f"{count:>9} {c:>16.1f} {m:>16.1f}")
print(f"peak during the products: cached {cached_peak:.2f} MB, nested {nested_peak:.2f} MB")
assert cached_held[-1] - cached_held[0] < 50, "the cached products must not accumulate memory"

# %% [markdown]
# ## A HessianOperator in scipy
#
# `op.as_linear_operator()` is a `scipy.sparse.linalg.LinearOperator`, so scipy's Krylov solvers
# take it directly. At this random point the loss is not convex: `curvature.top_eigenvalues(op,
# which="SA")` finds the most negative eigenvalue from products alone. A damped Newton step
# (Levenberg–Marquardt style) shifts the spectrum past it and solves (H + λI) p = −g with
# conjugate gradients; the residual history shows CG converging on products alone.

# %%
(lowest,), _ = curvature.top_eigenvalues(op, k=1, which="SA", seed=0)
damping = max(0.0, -lowest) + 0.05
print(f"smallest eigenvalue {lowest:.4f}: damping λ = {damping:.4f}")
H = op.as_linear_operator()
A = scipy.sparse.linalg.LinearOperator(H.shape, matvec=lambda u: H @ u + damping * u, dtype=float)
residuals = []
step, info = scipy.sparse.linalg.cg(A, -op.gradient, rtol=1e-10, maxiter=1000,
                                    callback=lambda p: residuals.append(
                                        np.linalg.norm(A @ p + op.gradient)))
print(f"cg: info = {info}, {len(residuals)} iterations "
      f"(each one Hessian-vector product), relative residual {residuals[-1] / np.linalg.norm(op.gradient):.1e}")
assert info == 0
dense = op.to_dense()                         # 837 x 837 in one batched sweep
assert_allclose(dense, dense.T, atol=1e-12)
assert_allclose(step, np.linalg.solve(dense + damping * np.eye(n), -op.gradient), rtol=1e-6, atol=1e-8)
print("cg's step matches the dense solve")

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogy(np.arange(1, len(residuals) + 1), np.array(residuals) / np.linalg.norm(op.gradient))
ax.set_xlabel("CG iteration (one Hessian-vector product each)")
ax.set_ylabel("‖(H + λI) p + g‖ / ‖g‖")
ax.set_title(f"scipy.sparse.linalg.cg on the cached Hessian operator\n(n = {n}, damping λ = {damping:.3g})")
ax.grid(alpha=0.3)
fig.tight_layout()

# %% [markdown]
# `eigsh` finds extreme eigenvalues from products too. The top 5 by ARPACK, by hessopt's own
# Lanczos (`curvature.top_eigenvalues`) and from the dense matrix agree; the smallest ones show
# the negative curvature of this loss at a random point.

# %%
top_arpack = np.sort(scipy.sparse.linalg.eigsh(H, k=5, which="LA", return_eigenvectors=False))[::-1]
top_lanczos, _ = curvature.top_eigenvalues(op, k=5, seed=0)
exact = np.linalg.eigvalsh(dense)
print("eigsh (ARPACK):         ", np.round(top_arpack, 6))
print("curvature.top_eigenvalues:", np.round(top_lanczos, 6))
print("dense eigvalsh:         ", np.round(exact[::-1][:5], 6))
print("smallest eigenvalues:   ", np.round(exact[:3], 6))
assert_allclose(top_arpack, exact[::-1][:5], rtol=1e-8)
assert_allclose(top_lanczos, exact[::-1][:5], rtol=1e-8)

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(exact, bins=80, color="0.6", log=True, label=f"all {n} eigenvalues (dense)")
for k, value in enumerate(top_arpack):
    ax.axvline(value, color="C3", linestyle=":", linewidth=1, label="top 5 from eigsh" if k == 0 else None)
ax.set_xlabel("eigenvalue of H")
ax.set_ylabel("count")
ax.set_title("Hessian spectrum at the starting point")
ax.legend(loc="upper right", fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## Forward over reverse
#
# Inside a tape (when the result must itself be differentiated) `ad.hvp` runs forward mode over
# the gradient instead, with `ForwardAccumulator`: same values, a Tensor the enclosing tape records.

# %%
x_t = ad.constant(flat)
with ad.GradientTape() as tape:
    tape.watch(x_t)
    hv_forward = ad.hvp(lambda z: loss(unravel(z)), x_t, v_flat)
assert_allclose(hv_forward.numpy(), op.matvec(v_flat), rtol=1e-10, atol=1e-12)
print(type(hv_forward).__name__, "agrees with the cached product")
