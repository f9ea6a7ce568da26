"""Curvature products: cached HVPs, full Hessians, Jacobians, memory; against peers when installed.

(a) HVP of a 784-128-10 tanh MLP softmax cross-entropy loss, batch 256 (~100k parameters):
    cached matvec vs a recomputing nested-tape HVP vs torch's cached double-backward;
(b) full Hessian of an L2 logistic-regression loss, 1,000 samples x 300 features;
(c) Jacobian of tanh(W x) + x**2, W 500 x 500;
(d) memory retained after 1,000 cached HVPs (tracemalloc);
(e) recompute_grad peak memory on a 64-layer chain (8 checkpointed segments) vs the plain tape.
Synthetic data of the stated shapes (no downloads). Peers: `pip install ".[bench]"`.
Every library uses both cores. OpenBLAS's idle workers are told to sleep at once
(OPENBLAS_THREAD_TIMEOUT=4): by default they spin after each call and starved torch's threads
(~40x slower here).
Run: python benchmarks/bench_derivatives.py
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import gc  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402

from common import median_time, optional, report  # noqa: E402

rng = np.random.default_rng(0)


# --- (a) MLP Hessian-vector products -------------------------------------------------------------
X = rng.standard_normal((256, 784))
LABELS = rng.integers(0, 10, 256)
SHAPES = {"W1": (784, 128), "b1": (128,), "W2": (128, 10), "b2": (10,)}
PARAMS = {k: 0.05 * rng.standard_normal(s) for k, s in SHAPES.items()}


def mlp_loss(p, np=anp):
    hidden = np.tanh(X @ p["W1"] + p["b1"])
    logits = hidden @ p["W2"] + p["b2"]
    return np.mean(np.logsumexp(logits, axis=1) - logits[np.arange(256), LABELS]) if np is anp else \
        np.mean(np.log(np.sum(np.exp(logits), axis=1)) - logits[np.arange(256), LABELS])


def bench_hvp(autograd, torch, jax):
    flat, unravel = ad.ravel(PARAMS)
    v = rng.standard_normal(flat.size)
    operator = ad.hessian_operator(mlp_loss, PARAMS)

    v_tree = unravel(v)

    def nested_hvp():
        """The textbook HVP, same pytree form: re-record f and its gradient for every vector."""
        params = {k: ad.constant(p) for k, p in PARAMS.items()}
        with ad.GradientTape() as outer:
            outer.watch(params)
            with ad.GradientTape() as inner:
                inner.watch(params)
                loss = mlp_loss(params)
            g = inner.gradient(loss, params)
        return outer.gradient(g, params, output_gradients=v_tree)

    assert np.allclose(ad.ravel(nested_hvp())[0], operator.matvec(v), atol=1e-10)
    print(f"(a) HVP of a 784-128-10 tanh MLP cross-entropy loss, batch 256, n = {flat.size:,}")
    rows = [("autodiff cached matvec", median_time(lambda: operator.matvec(v))),
            ("autodiff recomputing nested HVP", median_time(nested_hvp))]
    if torch:
        tparams = [torch.tensor(PARAMS[k], requires_grad=True) for k in SHAPES]
        tx, ty = torch.tensor(X), torch.tensor(LABELS)
        hidden = torch.tanh(tx @ tparams[0] + tparams[1])
        loss = torch.nn.functional.cross_entropy(hidden @ tparams[2] + tparams[3], ty)
        grads = torch.autograd.grad(loss, tparams, create_graph=True)
        tv = [torch.tensor(t) for t in _split(v, unravel)]
        rows.append(("torch cached double-backward",
                     median_time(lambda: torch.autograd.grad(grads, tparams, tv, retain_graph=True))))
    report(rows, "autodiff cached matvec")
    table = dict(rows)
    print(f"  nested / cached: {table['autodiff recomputing nested HVP'] / table['autodiff cached matvec']:.2f}x")
    if torch:
        print(f"  cached / torch:  {table['autodiff cached matvec'] / table['torch cached double-backward']:.2f}x")
    return operator, v


def _split(v, unravel):
    tree = unravel(v)
    return [np.ascontiguousarray(tree[k]) for k in SHAPES]


# --- (b) logistic-regression Hessian ---------------------------------------------------------------
A = rng.standard_normal((1000, 300))
Y = rng.integers(0, 2, 1000) * 2.0 - 1.0


def logistic_loss(w, np=anp):
    return np.mean(np.logaddexp(0.0, -Y * (A @ w))) + 0.5e-2 * np.sum(w * w)


def bench_hessian(autograd, torch, jax):
    w = 0.01 * rng.standard_normal(300)
    hessian = ad.hessian(logistic_loss)
    H = hessian(w)
    s = 1 / (1 + np.exp(Y * (A @ w)))
    exact = (A.T * (s * (1 - s))) @ A / 1000 + 1e-2 * np.eye(300)
    assert np.allclose(H, exact, atol=1e-10)
    print("\n(b) full Hessian of an L2 logistic-regression loss, 1,000 x 300")
    rows = [("autodiff hessian (one batched sweep)", median_time(lambda: hessian(w), repeats=5))]
    if jax:
        import jax.numpy as jnp
        jax_hessian = jax.jit(jax.hessian(lambda w: logistic_loss(w, jnp)))
        jax_hessian(w).block_until_ready()
        rows.append(("jax.jit(jax.hessian)", median_time(lambda: jax_hessian(w).block_until_ready(), repeats=5)))
    if autograd:
        import autograd.numpy as agnp
        ag_hessian = autograd.hessian(lambda w: logistic_loss(w, agnp))
        rows.append(("autograd.hessian", median_time(lambda: ag_hessian(w), repeats=3)))
    report(rows, "autodiff hessian (one batched sweep)")
    _peer_ratio(rows, "autodiff hessian (one batched sweep)", "jax.jit(jax.hessian)")


# --- (c) Jacobian -----------------------------------------------------------------------------------
W = rng.standard_normal((500, 500)) / np.sqrt(500)


def layer(x, np=anp):
    return np.tanh(W @ x) + x ** 2


def bench_jacobian(autograd, torch, jax):
    x = rng.standard_normal(500)
    jacobian = ad.jacobian(layer)
    J = jacobian(x)
    assert np.allclose(J, (1 - np.tanh(W @ x) ** 2)[:, None] * W + np.diag(2 * x), atol=1e-12)
    print("\n(c) Jacobian of tanh(W x) + x**2, W 500 x 500")
    rows = [("autodiff jacobian (one batched sweep)", median_time(lambda: jacobian(x)))]
    if jax:
        import jax.numpy as jnp
        jax_jacobian = jax.jit(jax.jacrev(lambda x: layer(x, jnp)))
        jax_jacobian(x).block_until_ready()
        rows.append(("jax.jit(jax.jacrev)", median_time(lambda: jax_jacobian(x).block_until_ready())))
    if autograd:
        import autograd.numpy as agnp
        ag_jacobian = autograd.jacobian(lambda x: layer(x, agnp))
        rows.append(("autograd.jacobian", median_time(lambda: ag_jacobian(x), repeats=3)))
    report(rows, "autodiff jacobian (one batched sweep)")
    _peer_ratio(rows, "autodiff jacobian (one batched sweep)", "jax.jit(jax.jacrev)")


# --- (d) memory over many cached HVPs ---------------------------------------------------------------
def bench_memory(operator, v):
    print("\n(d) memory retained across 1,000 cached HVPs (tracemalloc)")
    for _ in range(10):
        operator.matvec(v)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        operator.matvec(v)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"  growth after 1,000 products: {(after - before) / 1e6:.3f} MB")


# --- (e) recompute_grad ----------------------------------------------------------------------------
def bench_recompute():
    """sqrt(depth) checkpointing: 8 segments of 8 layers, each segment under recompute_grad."""
    depth, width, segment = 64, 256, 8
    weights = [rng.standard_normal((width, width)) / np.sqrt(width) for _ in range(depth)]

    def layers(h, ws):
        for w in ws:
            h = anp.tanh(h @ w)
        return h

    segments = [ad.recompute_grad(lambda h, ws=weights[i:i + segment]: layers(h, ws))
                for i in range(0, depth, segment)]
    x0 = rng.standard_normal((64, width))

    def peak(use_recompute):
        x = ad.constant(x0)
        gc.collect()
        tracemalloc.start()
        with ad.GradientTape() as tape:
            tape.watch(x)
            h = x
            if use_recompute:
                for block in segments:
                    h = block(h)
            else:
                h = layers(h, weights)
            loss = anp.sum(h * h)
        retained = tracemalloc.get_traced_memory()[0]
        g = tape.gradient(loss, x)
        peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return retained, peak_bytes, g.numpy()

    plain_retained, plain_peak, g_plain = peak(False)
    ckpt_retained, ckpt_peak, g_ckpt = peak(True)
    assert np.allclose(g_plain, g_ckpt)
    print(f"\n(e) recompute_grad on a {depth}-layer tanh chain (batch 64, width {width}), "
          f"{depth // segment} checkpointed segments of {segment} layers")
    print(f"  tape memory after the forward pass: plain {plain_retained / 1e6:.2f} MB, "
          f"recompute_grad {ckpt_retained / 1e6:.2f} MB ({ckpt_retained / plain_retained:.2f}x)")
    print(f"  peak through the gradient: plain {plain_peak / 1e6:.2f} MB, "
          f"recompute_grad {ckpt_peak / 1e6:.2f} MB ({ckpt_peak / plain_peak:.2f}x)")


def _peer_ratio(rows, ours, peer):
    table = dict(rows)
    if peer in table:
        print(f"  autodiff / {peer}: {table[ours] / table[peer]:.2f}x")


def main() -> None:
    autograd, torch, jax = optional("autograd"), optional("torch"), optional("jax")
    if torch:
        torch.set_num_threads(2)
        torch.set_default_dtype(torch.float64)
    if jax:
        jax.config.update("jax_enable_x64", True)
    operator, v = bench_hvp(autograd, torch, jax)
    bench_hessian(autograd, torch, jax)
    bench_jacobian(autograd, torch, jax)
    bench_memory(operator, v)
    bench_recompute()


if __name__ == "__main__":
    main()
