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
# TNC. The numbers the text states are checked in the cells (`claim`): the distances to the
# solutions within what the stopping test promises, the counts within what held with one and two
# BLAS threads and every OpenBLAS kernel.

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize
import scipy.sparse.linalg
from scipy.optimize import Bounds

import autodiff as ad
import hessopt
from hessopt import problems

from claims import claim, passing_gradient

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
assert np.array_equal(result.active_mask != 0, x_nnls == 0)   # the same bounds bind as in nnls
print(f"{np.count_nonzero(x_nnls == 0)} of the 50 variables are 0 at the solution, as in nnls")

# %% [markdown]
# How close to `nnls`' x is x promised to be? The run stops when the projected gradient pg passes
# the relative test, |pg_i| ≤ t_i = 10⁻⁸ max(1, |f|) / max(1, |x_i|). For a convex f over a box,
# f(x) − f* ≤ pgᵀ(x − x*) (where a bound binds, the gradient points out of the box), and if f's
# Hessian is at least μ I (here 2AᵀA, μ its smallest eigenvalue), f(x) − f* ≥ μ ‖x − x*‖² / 2.
# Together
#
#     ‖x − x*‖ ≤ 2 ‖pg‖ / μ ≤ 2 ‖t‖ / μ,     f(x) − f* ≤ 2 ‖t‖² / μ,
#
# whichever bounds are active. That bound is the claim's tolerance, plus the rounding of `nnls`'
# own least-squares solve, n ε κ(A) (‖x‖ + κ(A) ‖r‖ / ‖A‖) (Higham 2002, §20.1). Newton's quadratic
# convergence usually leaves x far inside the bound, but how far depends on the rounding in the
# last iterations, which differs from one BLAS kernel to another: nothing tighter is claimed.

# %%
eps = np.finfo(float).eps


def distance_bound(x, f, mu):
    """The bound on ||x - x*|| of a strongly convex f (Hessian >= mu I) over a box where the stopping
    test passed: 2 ||t|| / mu, t the largest |pg_i| the test lets pass (``claims.passing_gradient``)."""
    return 2 * np.linalg.norm(passing_gradient(x, f)) / mu


mu = 2 * np.linalg.eigvalsh(A.T @ A)[0]
kappa = np.linalg.cond(A)
nnls_rounding = A.shape[1] * eps * kappa * (np.linalg.norm(x_nnls)
                                            + kappa * np.linalg.norm(A @ x_nnls - b) / np.linalg.norm(A, 2))
claim("max |x - x_nnls|", np.max(np.abs(result.x - x_nnls)), 0.0,
      atol=distance_bound(result.x, result.fun, mu) + nnls_rounding)
print(f"mu = {mu:.4g}; nnls' rounding {nnls_rounding:.1g}")

# %% [markdown]
# `hessopt.least_squares` takes `least_squares`' `bounds=(lb, ub)`; its Levenberg-Marquardt is
# then the trust-region method with TRON's step on the Gauss-Newton model. It stops on the same
# relative test, with its cost ‖Ax − b‖² / 2 as f, whose Hessian is AᵀA: the same bound holds with
# half the μ.

# %%
fit = hessopt.least_squares(lambda x: A @ x - b, np.ones(50), bounds=(0, np.inf))
claim("least_squares: max |x - x_nnls|", np.max(np.abs(fit.x - x_nnls)), 0.0,
      atol=distance_bound(fit.x, fit.cost, mu / 2) + nnls_rounding)
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

# %% [markdown]
# The start, 20 for every rate, lies outside the box; it was clipped into it (as L-BFGS-B does),
# and the message says so. The history counts the active bounds at each iteration:

# %%
print(rates.history["active"], rates.history["gnorm"].round(10), sep="\n")

# %% [markdown]
# Each rate's gradient is `sizes − sums / rate`, so where a rate is free and its gradient passed
# the stopping test (|g_i| ≤ t_i), rate / rate* − 1 = g_i / (sizes_i − g_i) exactly; where a bound
# binds with the gradient pointing out of the box, that bound is the minimizer of the group's own
# convex term. The claim's tolerance is the largest t_i / (sizes_i − t_i), plus the rounding of
# the two divisions:

# %%
expected = np.clip(sums / sizes, lower, upper)
t = passing_gradient(rates.x, rates.fun)
claim("max relative error of the rates", np.max(np.abs(rates.x / expected - 1)), 0.0,
      atol=np.max(t / (sizes - t)) + 2 * eps)
print("expected   ", expected.round(4))

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
print(f"f = {tron.fun:.12g}, stored minimum {obstacle.fmin:.12g}")

# %% [markdown]
# The energy is a quadratic, f(x) = xᵀHx / 2 − cᵀx, whose Hessian H (found in the program by
# `ad.sparse_hessian`) is positive definite: the bound f − f* ≤ 2‖t‖² / μ above applies. The
# stored f* has 12 digits (5 × 10⁻¹² in its last), and evaluating f rounds by at most
# γ_N Σ|terms| (N terms summed in any order, γ_N = N ε / 2; Σ|terms| ≤ xᵀHx / 2 + |c|ᵀ|x|) here
# and where f* was computed:

# %%
H = ad.sparse_hessian(obstacle.fun)(tron.x)
mu_obstacle = scipy.sparse.linalg.eigsh(H, k=1, sigma=0, which="LM", return_eigenvectors=False)[0]
c = -ad.grad(obstacle.fun)(np.zeros(obstacle.n))
terms = 4 * (int(np.sqrt(obstacle.n)) + 1) ** 2 + obstacle.n   # a squared slope per triangle, and sum(x)
# each term rounds by 3 ε / 2 itself (a difference, its square), then N sums add N ε / 2
rounding = (terms + 3) * eps / 2 * (tron.x @ (H @ tron.x) / 2 + np.abs(c) @ np.abs(tron.x))
gap_bound = 2 * np.sum(passing_gradient(tron.x, tron.fun) ** 2) / mu_obstacle
claim("obstacle: f - f*", tron.fun - obstacle.fmin, 0.0, atol=gap_bound + 5e-12 + 2 * rounding)
print(f"mu = {mu_obstacle:.3g}; 2 ||t||^2 / mu = {gap_bound:.2g}, rounding of f {rounding:.1g}")

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
# interleaved rounds; its table is on the documentation's Benchmarks page (`docs/benchmarks.md`,
# "Bound constraints").
