# %% [markdown]
# # 07 · Bound constraints
#
# `hessopt.minimize(fun, x0, bounds=...)` takes bounds as scipy does: a `scipy.optimize.Bounds`
# or one `(lo, hi)` pair per entry of x0 (`None` or an infinity for no bound; `lo == hi` fixes
# a variable). With bounds, `trust-ncg` and `trust-krylov` (the default) are TRON, Lin & Moré's
# (1999) trust-region Newton method: a Cauchy step by a projected search along the projected
# gradient path, conjugate gradients on the variables left free, and a projected search along the
# CG path; `newton-cg` and `newton` are Bertsekas' (1982) projected Newton method. `fun` is never
# evaluated outside the box, success means the projected gradient passes the gradient test (and
# the free variables show no negative curvature), and the result says which bounds are active.
#
# This notebook checks the answers against closed forms and scipy's `nnls`, solves one of the
# MINPACK-2 problems TRON was designed on, and compares evaluations with scipy's L-BFGS-B and
# TNC. The numbers the text states are checked in the cells (`claim`), with tolerances that held
# with one and with two BLAS threads.

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize
from scipy.optimize import Bounds

import autodiff as ad
import hessopt
from hessopt import problems

from claims import claim

# %% [markdown]
# ## Non-negative least squares
#
# `min ||A x - b||²` over `x ≥ 0` is a quadratic over a box; scipy's `nnls` solves it by Lawson
# & Hanson's active-set method. About half of the bounds bind here.

# %%
rng = np.random.default_rng(0)
A = rng.standard_normal((200, 50))
b = A @ np.maximum(rng.standard_normal(50), 0.0) + rng.standard_normal(200)
x_nnls, _ = scipy.optimize.nnls(A, b)

result = hessopt.minimize(lambda x: np.sum((A @ x - b) ** 2), np.ones(50), bounds=[(0, None)] * 50)
print(result.message)
print(f"iterations {result.nit}, gradients {result.njev}, Hessian-vector products {result.nhev}")
claim("max |x - x_nnls|", np.max(np.abs(result.x - x_nnls)), 0.0, atol=1e-9)
claim("bounds active (nnls: zeros)", np.count_nonzero(result.active_mask),
      np.count_nonzero(x_nnls == 0), atol=0.5)
print(f"{np.count_nonzero(x_nnls == 0)} of the 50 variables are 0 at the solution")

# %% [markdown]
# `hessopt.least_squares` takes `least_squares`' `bounds=(lb, ub)`; its Levenberg-Marquardt is
# then the trust-region method with TRON's step on the Gauss-Newton model. It stops on the same
# relative test, here on a cost of about 100, so its x agrees with `nnls`' to about 10⁻⁹:

# %%
fit = hessopt.least_squares(lambda x: A @ x - b, np.ones(50), bounds=(0, np.inf))
claim("least_squares: max |x - x_nnls|", np.max(np.abs(fit.x - x_nnls)), 0.0, atol=1e-8)
print(fit.message)

# %% [markdown]
# ## Rates that must stay positive
#
# Poisson counts in six groups, one rate each, with bounds on the rates. The negative
# log-likelihood has `log(rate)`, which has no value below zero, so the objective below refuses to
# be evaluated outside the box (it raises). The maximum-likelihood rate of each group is its mean
# count clipped into its bounds; the sixth group has no counts at all, so its rate goes to its
# lower bound.

# %%
groups = np.repeat(np.arange(6), 40)
counts = rng.poisson(np.array([0.5, 2.0, 4.0, 7.0, 1.0, 0.0])[groups]).astype(float)
sums, sizes = np.bincount(groups, counts), np.bincount(groups).astype(float)
lower = np.array([0.1, 0.1, 0.1, 0.1, 1.5, 1e-3])
upper = np.array([10.0, 10.0, 3.0, 10.0, 10.0, 10.0])


def negative_log_likelihood(rates):
    if np.any(rates < lower) or np.any(rates > upper):
        raise ValueError("evaluated outside the box")
    return np.sum(sizes * rates - sums * np.log(rates))


rates = hessopt.minimize(negative_log_likelihood, np.full(6, 20.0), bounds=Bounds(lower, upper))
print(rates.message)
print("rates      ", rates.x.round(4))
print("active_mask", rates.active_mask)
expected = np.clip(sums / sizes, lower, upper)
claim("max relative error of the rates", np.max(np.abs(rates.x / expected - 1)), 0.0, atol=1e-9)
print("expected   ", expected.round(4))

# %% [markdown]
# The start, 20 for every rate, lies outside the box; it was clipped into it (as L-BFGS-B does),
# and the message says so. The history counts the active bounds at each iteration:

# %%
print(rates.history["active"], rates.history["gnorm"].round(10), sep="\n")

# %% [markdown]
# ## The obstacle problem
#
# A membrane over the unit square, fixed at its edge, pushed up by a uniform force and held
# between two obstacles (Ciarlet 1978; MCPLIB's `obstacle`): minimize its energy on a 50 × 50
# grid of interior points (n = 2,500) over `lower ≤ v ≤ upper`. `hessopt.problems.bounded` holds
# it with the three other MINPACK-2 problems of Lin & Moré's paper and their minima.

# %%
obstacle = problems.bounded("obstacle", 2500)
box = Bounds(obstacle.lower, obstacle.upper)
tron = hessopt.minimize(obstacle.fun, obstacle.x0, bounds=box)
print(tron.message)
print(f"iterations {tron.nit}, gradients {tron.njev}, Hessian-vector products {tron.nhev}, "
      f"active bounds {np.count_nonzero(tron.active_mask)} of {obstacle.n}")
claim("obstacle: f - f*", tron.fun - obstacle.fmin, 0.0, atol=1e-9)
print(f"f = {tron.fun:.12g}, stored minimum {obstacle.fmin:.12g}")

# %%
side = 50
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
for ax, image, title, cmap in (
        (axes[0], obstacle.lower, "lower obstacle", "viridis"),
        (axes[1], tron.x, "membrane at the minimum", "viridis"),
        (axes[2], tron.active_mask, "active_mask: −1 on the lower, +1 on the upper", "coolwarm")):
    shown = ax.imshow(np.reshape(image, (side, side)), origin="lower", extent=(0, 1, 0, 1),
                      cmap=cmap, vmin=-1 if cmap == "coolwarm" else None,
                      vmax=1 if cmap == "coolwarm" else None)
    ax.set_title(title)
    fig.colorbar(shown, ax=ax, shrink=0.85)
fig.tight_layout()

# %% [markdown]
# TRON's projected searches add and drop hundreds of bounds in one iteration (about a thousand in
# the first), where an active-set method changes one bound per iteration; once the active set has
# settled, CG on the free variables is Newton's method there, and the projected gradient (what
# the stopping test measures) falls quadratically:

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
left.semilogy(tron.history["gnorm"], "o-")
left.set(xlabel="iteration", ylabel="||projected gradient||∞", title="TRON on the obstacle problem")
right.plot(tron.history["active"], "o-")
right.set(xlabel="iteration", ylabel="active bounds")
fig.tight_layout()
changes = np.abs(np.diff(tron.history["active"]))
claim("largest change of the number of active bounds", changes.max(), 1000, rtol=0.3)
print(f"active bounds by iteration: {tron.history['active']}")

# %% [markdown]
# ## Against L-BFGS-B and TNC
#
# scipy's bound-constrained quasi-Newton (L-BFGS-B) and truncated-Newton (TNC) methods, with the
# same exact gradient (one traced program for the value and the gradient) and their default
# options. "Solved" is the problem's own test: f within 10⁻⁶ relative of the stored minimum.

# %%
value_and_grad = ad.value_and_grad(ad.function(obstacle.fun))
torsion = problems.bounded("torsion", 2500)
torsion_value_and_grad = ad.value_and_grad(ad.function(torsion.fun))


def scipy_run(problem, pair, method):
    calls = [0]

    def fun(x):
        calls[0] += 1
        value, gradient = pair(x)
        return float(value), np.asarray(gradient)
    r = scipy.optimize.minimize(fun, problem.x0, jac=True, method=method,
                                bounds=Bounds(problem.lower, problem.upper))
    return r, calls[0]


print(f"{'problem':<10}{'method':<12}{'success':>8}{'solved':>8}{'gradients':>11}{'products':>10}"
      f"{'f - f*':>11}")
table = {}
for problem, pair in ((obstacle, value_and_grad), (torsion, torsion_value_and_grad)):
    ours = tron if problem is obstacle else hessopt.minimize(problem.fun, problem.x0,
                                                             bounds=Bounds(problem.lower, problem.upper))
    table[problem.name, "hessopt"] = ours
    print(f"{problem.name:<10}{'hessopt':<12}{str(ours.success):>8}{str(problem.solved(ours.fun)):>8}"
          f"{ours.njev:>11}{ours.nhev:>10}{ours.fun - problem.fmin:>11.1e}")
    for method in ("L-BFGS-B", "TNC"):
        r, gradients = scipy_run(problem, pair, method)
        table[problem.name, method] = (r, gradients)
        print(f"{problem.name:<10}{method:<12}{str(r.success):>8}{str(problem.solved(r.fun)):>8}"
              f"{gradients:>11}{0:>10}{r.fun - problem.fmin:>11.1e}")

# %% [markdown]
# On both problems TRON needs about 11 and 19 gradients and a few hundred Hessian-vector
# products (each about the cost of a gradient); L-BFGS-B about 62 and 61 gradients, stopping at
# its default projected-gradient tolerance of 10⁻⁵ (hessopt's relative test asks for a projected
# gradient 170 to 1000 times smaller on these two). TNC takes thousands of gradients (its Hessian
# products are finite differences of gradients) and, on the torsion problem, reports success at a
# point whose value is still about 8 × 10⁻⁶ relative above the minimum: a false success by the
# problem's test.

# %%
claim("obstacle: hessopt gradients", table["obstacle", "hessopt"].njev, 11, atol=3)
claim("torsion: hessopt gradients", table["torsion", "hessopt"].njev, 19, atol=4)
claim("obstacle: L-BFGS-B gradients", table["obstacle", "L-BFGS-B"][1], 62, atol=6)
claim("torsion: L-BFGS-B gradients", table["torsion", "L-BFGS-B"][1], 61, atol=6)
tnc, tnc_gradients = table["torsion", "TNC"]
claim("torsion: TNC reports success", tnc.success, 1, atol=0.5)
claim("torsion: TNC solved", torsion.solved(tnc.fun), 0, atol=0.5)
claim("torsion: TNC's relative gap (f - f*) / |f*|", (tnc.fun - torsion.fmin) / abs(torsion.fmin), 8e-6,
      rtol=0.5)
claim("torsion: TNC gradients", tnc_gradients, 9000, rtol=0.2)
print(tnc.message)

# %% [markdown]
# `benchmarks/bench_bounds.py` runs the four MINPACK-2 problems at n = 10,000, NNLS at 2000 × 500
# and chained Rosenbrock in a box against L-BFGS-B, TNC and trust-constr, with wall times from
# interleaved rounds; its table is in the README.
