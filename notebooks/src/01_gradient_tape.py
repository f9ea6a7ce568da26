# %% [markdown]
# # 01 · The gradient tape
#
# `autodiff.GradientTape` records the operations run inside its `with` block and replays them
# backwards to compute gradients, with TensorFlow's semantics: the same calls, the same defaults
# and the same answers. This notebook walks through every feature with the examples of
# TensorFlow's autodiff guides; each cell checks the value the guides print (`assert_allclose`),
# so a wrong value fails the notebook.
#
# Everything is float64 and plain NumPy underneath: `np.sin(x)` on a Tensor dispatches to the
# engine's `sin`, so NumPy code differentiates unmodified.

# %%
import numpy as np
from numpy.testing import assert_allclose

import autodiff as ad
import autodiff.numpy as anp
from hessopt import nn

# %% [markdown]
# ## Gradients of a Variable
#
# A trainable `Variable` that is read inside the tape is watched automatically.
# y = x² at x = 3 has dy/dx = 6.

# %%
x = ad.Variable(3.0)
with ad.GradientTape() as tape:
    y = x ** 2
dy_dx = tape.gradient(y, x)
print(dy_dx)
assert_allclose(dy_dx.numpy(), 6.0)

# %% [markdown]
# The sources can be any structure (list, tuple, dict): the gradient mirrors it. Here a Dense
# layer's kernel and bias, by name.

# %%
layer = nn.Dense(2, activation="relu", seed=0)
x_in = np.array([[1.0, 2.0, 3.0]])
with ad.GradientTape() as tape:
    y = layer(x_in)
    loss = anp.mean(y ** 2)
grads = tape.gradient(loss, {"kernel": layer.kernel, "bias": layer.bias})
for name, g in grads.items():
    print(f"{name:6s} shape {g.shape}")
assert grads["kernel"].shape == (3, 2) and grads["bias"].shape == (2,)

# %% [markdown]
# ## What the tape watches
#
# Only trainable Variables are watched by default. A non-trainable Variable, a Tensor computed
# from a Variable (`x2 = x0 + 1` is no longer a Variable) and a constant give `None`:

# %%
x0 = ad.Variable(3.0, name="x0")
x1 = ad.Variable(3.0, name="x1", trainable=False)
x2 = ad.Variable(2.0, name="x2") + 1.0     # a Tensor, not a Variable
x3 = ad.constant(3.0)

with ad.GradientTape() as tape:
    y = x0 ** 2 + x1 ** 2 + x2 ** 2 + x3 ** 2
grad = tape.gradient(y, [x0, x1, x2, x3])
print(grad)
assert_allclose(grad[0].numpy(), 6.0)
assert grad[1:] == [None, None, None]

# %% [markdown]
# `tape.watch` adds any Tensor; `watched_variables()` lists the Variables the tape saw.

# %%
with ad.GradientTape() as tape:
    tape.watch([x1, x2, x3])
    y = x0 ** 2 + x1 ** 2 + x2 ** 2 + x3 ** 2
grad = tape.gradient(y, [x0, x1, x2, x3])
print([g.numpy() for g in grad])
print([v.name for v in tape.watched_variables()])
assert_allclose([g.numpy() for g in grad], [6.0, 6.0, 6.0, 6.0])

# %% [markdown]
# `watch_accessed_variables=False` turns the automatic watching off: only what is watched by
# hand is differentiated.

# %%
a, b = ad.Variable(3.0), ad.Variable(3.0)
with ad.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(a)
    y = a ** 2 + b ** 3
da, db = tape.gradient(y, [a, b])
print("dy/da =", da, "  dy/db =", db)
assert_allclose(da.numpy(), 6.0)
assert db is None

# %% [markdown]
# ## Persistent tapes
#
# A tape releases its recording after the first `gradient` call. `persistent=True` keeps it, so
# several gradients come from one recording; a second call on a non-persistent tape raises.

# %%
x = ad.constant(3.0)
with ad.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = x * x
    z = y * y
print("dz/dx =", tape.gradient(z, x), "  dy/dx =", tape.gradient(y, x))
assert_allclose(tape.gradient(z, x).numpy(), 108.0)   # 4 x^3
assert_allclose(tape.gradient(y, x).numpy(), 6.0)
del tape

with ad.GradientTape() as tape:
    tape.watch(x)
    y = x * x
tape.gradient(y, x)
try:
    tape.gradient(y, x)
except RuntimeError as error:
    print("RuntimeError:", error)
else:
    raise AssertionError("a second gradient call on a non-persistent tape must raise")

# %% [markdown]
# ## Controlling what is recorded
#
# With x = 2 and y = 3, z = x² + y², the three ways to keep `y * y` off the tape all give
# dz/dx = 4 and dz/dy = None: `stop_recording()` (a pause), `reset()` (throw away what was
# recorded so far) and `stop_gradient` (a value the tape treats as a constant).

# %%
def gradients_of(body):
    x, y = ad.Variable(2.0), ad.Variable(3.0)
    with ad.GradientTape() as tape:
        z = body(tape, x, y)
    return tape.gradient(z, {"x": x, "y": y})


def with_stop_recording(tape, x, y):
    x_sq = x * x
    with tape.stop_recording():
        y_sq = y * y
    return x_sq + y_sq


def with_reset(tape, x, y):
    y_sq = y * y
    tape.reset()
    return x * x + y_sq


def with_stop_gradient(tape, x, y):
    return x * x + ad.stop_gradient(y * y)


for body in (with_stop_recording, with_reset, with_stop_gradient):
    grad = gradients_of(body)
    print(f"{body.__name__:20s} dz/dx = {grad['x']}, dz/dy = {grad['y']}")
    assert_allclose(grad["x"].numpy(), 4.0)
    assert grad["y"] is None

# %% [markdown]
# ## Custom gradients
#
# `custom_gradient` replaces an operation's backward rule. TensorFlow's guide clips the norm of the
# upstream gradient to 0.5: for v·v at v = 2 the gradient is 0.5 · 2v = 2 instead of 4.

# %%
@ad.custom_gradient
def clip_gradient_norm(y):
    def backward(upstream):
        return upstream * anp.minimum(1.0, 0.5 / anp.sqrt(anp.sum(upstream * upstream)))
    return y, backward


v = ad.Variable(2.0)
with ad.GradientTape() as tape:
    output = clip_gradient_norm(v * v)
dv = tape.gradient(output, v)
print(dv)
assert_allclose(dv.numpy(), 2.0)

# %% [markdown]
# ## Several tapes at once
#
# Two tapes in one `with` statement record the same operations; each differentiates with respect
# to what it watches. d/dx0 of sin(x0) + sigmoid(x1) at 0 is cos 0 = 1; d/dx1 is σ'(0) = 0.25.

# %%
x0, x1 = ad.constant(0.0), ad.constant(0.0)
with ad.GradientTape() as tape0, ad.GradientTape() as tape1:
    tape0.watch(x0)
    tape1.watch(x1)
    y = anp.sin(x0) + anp.sigmoid(x1)
g0, g1 = tape0.gradient(y, x0), tape1.gradient(y, x1)
print("tape0:", g0, "  tape1:", g1)
assert_allclose([g0.numpy(), g1.numpy()], [1.0, 0.25])

# %% [markdown]
# ## Higher order: nested tapes
#
# An outer tape records the inner tape's gradient computation, so it can differentiate the
# gradient. For y = x² at 3: 6 and 2; for y = x³ at 1: 3 and 6. Nesting goes to any order.

# %%
for power, at, expected in ((2, 3.0, (6.0, 2.0)), (3, 1.0, (3.0, 6.0))):
    x = ad.Variable(at)
    with ad.GradientTape() as t2:
        with ad.GradientTape() as t1:
            y = x ** power
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    print(f"y = x^{power} at {at}: dy/dx = {dy_dx.numpy()}, d2y/dx2 = {d2y_dx2.numpy()}")
    assert_allclose([dy_dx.numpy(), d2y_dx2.numpy()], expected)

# %% [markdown]
# The functional layer nests the same way: `ad.grad(ad.grad(f))`. The fourth derivative of sin is
# sin itself.

# %%
d4 = ad.grad(ad.grad(ad.grad(ad.grad(np.sin))))
print(d4(0.7), np.sin(0.7))
assert_allclose(d4(0.7), np.sin(0.7))

# %% [markdown]
# ## Input-gradient regularization, by hand
#
# The guide's example of a gradient inside the loss: the inner tape watches only the input x
# (7 × 5) of a Dense(10, relu) layer and gives g = d Σ layer(x)² / dx; the outer tape
# differentiates ‖g‖ with respect to the layer's kernel and bias (double backpropagation;
# `hessopt.regularizers.input_gradient_penalty` packages it, see notebook 05).

# %%
x = ad.constant(np.random.default_rng(0).standard_normal((7, 5)))
layer = nn.Dense(10, activation="relu", seed=1)
with ad.GradientTape() as outer:
    with ad.GradientTape(watch_accessed_variables=False) as inner:
        inner.watch(x)
        result = anp.sum(layer(x) ** 2)
    g = inner.gradient(result, x)
    g_norm = anp.sqrt(anp.sum(g ** 2))
dg_kernel, dg_bias = outer.gradient(g_norm, [layer.kernel, layer.bias])
print("dg/dkernel", dg_kernel.shape, "  dg/dbias", dg_bias.shape)
assert dg_kernel.shape == (5, 10) and dg_bias.shape == (10,)

# %% [markdown]
# ## Unconnected gradients
#
# A source the target does not depend on has gradient `None` by default (TensorFlow's choice,
# which tells "no path" apart from "zero slope"); `unconnected_gradients="zero"` (or
# `ad.UnconnectedGradients.ZERO`) asks for zeros of the source's shape.

# %%
x, unused = ad.Variable([2.0, 3.0]), ad.Variable([1.0, 1.0, 1.0])
with ad.GradientTape(persistent=True) as tape:
    y = anp.sum(x ** 2)
print(tape.gradient(y, unused))
print(tape.gradient(y, unused, unconnected_gradients=ad.UnconnectedGradients.ZERO))
assert tape.gradient(y, unused) is None
assert_allclose(tape.gradient(y, unused, unconnected_gradients="zero").numpy(), np.zeros(3))

# %% [markdown]
# ## Jacobians
#
# `tape.jacobian` differentiates every element of a non-scalar target in one batched backward
# sweep. The Jacobian of sigmoid(x + δ) with respect to the scalar δ over 201 points is the
# derivative σ(1 − σ), shape (201,). Notebook 03 takes Jacobians further.

# %%
x = np.linspace(-10.0, 10.0, 201)
delta = ad.Variable(0.0)
with ad.GradientTape() as tape:
    y = anp.sigmoid(x + delta)
dy_ddelta = tape.jacobian(y, delta)
print(dy_ddelta.shape)
sigma = 1 / (1 + np.exp(-x))
assert dy_ddelta.shape == (201,)
assert_allclose(dy_ddelta.numpy(), sigma * (1 - sigma), rtol=1e-12)

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(x, y.numpy(), label="σ(x)")
ax.plot(x, dy_ddelta.numpy(), label="dσ/dδ from tape.jacobian")
ax.set_xlabel("x")
ax.set_title("sigmoid and its derivative, one jacobian call")
ax.legend()
fig.tight_layout()

# %% [markdown]
# ## Plain NumPy code
#
# Nothing above needed a special namespace: NumPy functions dispatch on Tensors. The Rosenbrock
# function written in plain NumPy, differentiated at (−1.2, 1, −1.2, 1):

# %%
x = ad.constant(np.array([-1.2, 1.0, -1.2, 1.0]))
with ad.GradientTape() as tape:
    tape.watch(x)
    f = np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
g = tape.gradient(f, x)
print(g)

from scipy.optimize import rosen_der

assert_allclose(g.numpy(), rosen_der(np.array([-1.2, 1.0, -1.2, 1.0])))

# %% [markdown]
# ## Checkpointing: `recompute_grad`
#
# `recompute_grad(f)` keeps only f's inputs on the tape and runs f again in the backward pass, to
# trade compute for memory. With f printing "running", four calls in the forward pass print four
# times, and the gradient call four more; the gradient equals the plain one.

# %%
def block(x):
    print("running")
    return anp.sin(x) * x


checkpointed = ad.recompute_grad(block)
x = ad.Variable([0.5, 1.0])
with ad.GradientTape() as tape:
    y = x
    for _ in range(4):
        y = checkpointed(y)
    total = anp.sum(y)
print("-- gradient --")
g_checkpointed = tape.gradient(total, x)

with ad.GradientTape() as tape:
    y = x
    for _ in range(4):
        y = block(y)
    total = anp.sum(y)
g_plain = tape.gradient(total, x)
print(g_checkpointed, g_plain)
assert_allclose(g_checkpointed.numpy(), g_plain.numpy(), rtol=1e-14)

# %% [markdown]
# ## Forward mode: `ForwardAccumulator`
#
# A forward-mode accumulator carries a tangent alongside each value: one pass gives the
# Jacobian-vector product J t. For sin(x)·x with tangent (1, 0) it is the first column of the
# (diagonal) Jacobian, sin(x₀) + x₀ cos(x₀) and 0. Notebook 02 uses forward over reverse for
# Hessian-vector products.

# %%
with ad.ForwardAccumulator(x, np.array([1.0, 0.0])) as accumulator:
    y = anp.sin(x) * x
jvp = accumulator.jvp(y)
print(jvp)
x0 = x.numpy()[0]
assert_allclose(jvp.numpy(), [np.sin(x0) + x0 * np.cos(x0), 0.0])
