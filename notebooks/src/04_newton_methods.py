# %% [markdown]
# # 04 · Newton methods
#
# `hessopt.minimize` has scipy's interface and eight second-order methods, all fed exact
# derivatives by the tape engine: `"newton"` (line search on a modified Newton direction),
# `"newton-cg"` (truncated Newton, Steihaug-style CG that follows negative curvature),
# `"trust-ncg"`, `"trust-krylov"` (GLTR), `"trust-exact"` (Moré–Sorensen), `"dogleg"`, `"arc"`
# (adaptive cubic regularization, Cartis–Gould–Toint) and `"hessian-free"` (Martens' damped CG).
# This notebook runs them on Rosenbrock's function, draws their paths and convergence, and then
# compares them with scipy's counterparts on the Moré–Garbow–Hillstrom test set, ending with a
# performance profile. All counts below are printed by the runs themselves.

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.optimize

import hessopt
import hessopt.plot as hplot
from hessopt import problems
from hessopt.suite import format_summary, format_table, run_suite

from claims import claim

# %% [markdown]
# ## Rosenbrock's function
#
# f(x, y) = 100 (y − x²)² + (1 − x)², from the classic start (−1.2, 1). The function is plain
# NumPy; `jac`, `hess` and `hessp` default to exact derivatives from autodiff.

# %%
def rosenbrock(x):
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


x0 = np.array([-1.2, 1.0])
runs = {method: hessopt.minimize(rosenbrock, x0, method=method) for method in hessopt.METHODS}
print(f"{'method':<14}{'success':>8}{'nit':>6}{'nfev':>6}{'njev':>6}{'nhev':>6}{'f':>12}  x")
for method, r in runs.items():
    print(f"{method:<14}{str(r.success):>8}{r.nit:>6}{r.nfev:>6}{r.njev:>6}{r.nhev:>6}{r.fun:>12.3g}  "
          f"{np.round(r.x, 8)}")
    assert r.success and np.allclose(r.x, [1.0, 1.0], atol=1e-5), method

# %% [markdown]
# The result is scipy's `OptimizeResult` plus a column-wise `history`: one entry per iteration
# from x0 on (f, gradient norm, cumulative evaluation counts, the method's own columns such as the
# trust radius, and the iterates `history["x"]`).

# %%
history = runs["trust-exact"].history
print(sorted(history.keys()) if hasattr(history, "keys") else history)
print("first iterations of trust-exact:")
for k in range(4):
    print({name: (np.round(value, 4) if np.ndim(value) else round(float(value), 6))
           for name, value in history[k].items()})

# %% [markdown]
# ## Paths
#
# `hessopt.plot.trajectory` draws each run's iterates over the contours (start `o`, end `*`). The
# line-search methods (left) first follow the valley's floor; the trust-region and cubic methods
# (right) take steps bounded by their model's region of trust.

# %%
bounds = ((-1.6, 1.4), (-0.6, 1.6))
line_search = ("newton", "newton-cg", "hessian-free")
regions = ("trust-ncg", "trust-krylov", "trust-exact", "dogleg", "arc")
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
hplot.trajectory(rosenbrock, {m: runs[m] for m in line_search}, ax=left, bounds=bounds)
left.set_title("line search: newton, newton-cg, hessian-free")
hplot.trajectory(rosenbrock, {m: runs[m] for m in regions}, ax=right, bounds=bounds)
right.set_title("trust regions and cubic regularization")
fig.tight_layout()

# %% [markdown]
# ## Convergence
#
# f(x_k) − f* against cumulative function evaluations (left) and the gradient norm against
# iterations (right): the last few iterations of each method show Newton's quadratic convergence,
# the number of correct digits roughly doubling per step.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
hplot.convergence(runs, fstar=0.0, x="evaluations", ax=left)
left.set_title("Rosenbrock from (−1.2, 1): f − f*")
hplot.convergence(runs, y="gnorm", ax=right)
right.set_title("gradient norm")
fig.tight_layout()

# %% [markdown]
# ## Against scipy, on the same function
#
# scipy's Newton-CG and trust-exact with the same exact derivatives (`hessopt.hessian_operator`
# gives the Hessian-vector products; it records f and its gradient once per point).

# %%
def hessp(x, p):
    return hessopt.hessian_operator(rosenbrock, x).matvec(p)


scipy_runs = {
    "Newton-CG": scipy.optimize.minimize(rosenbrock, x0, jac=hessopt.grad(rosenbrock), hessp=hessp,
                                         method="Newton-CG"),
    "trust-exact": scipy.optimize.minimize(rosenbrock, x0, jac=hessopt.grad(rosenbrock),
                                           hess=hessopt.hessian(rosenbrock), method="trust-exact"),
}
for name, r in scipy_runs.items():
    print(f"scipy {name:<12} success={r.success}  nit={r.nit}  nfev={r.nfev}  f={r.fun:.3g}  "
          f"||g||inf={np.abs(r.jac).max():.1e}")
for name in ("newton-cg", "trust-exact"):
    r = runs[name]
    print(f"hessopt {name:<10} success={r.success}  nit={r.nit}  nfev={r.nfev}  f={r.fun:.3g}  "
          f"||g||inf={np.abs(r.jac).max():.1e}")

# %% [markdown]
# ## Many starts: `minimize_many`
#
# Independent runs (multistart, parameter sweeps) go through `hessopt.minimize_many`, which maps
# them over any `concurrent.futures.Executor` (a process pool, a Dask cluster's executor) or runs
# them in turn when none is given. `keep_iterates=False` leaves the iterates out of the history.

# %%
starts = np.random.default_rng(0).uniform(-2, 2, (12, 2))
many = hessopt.minimize_many(rosenbrock, starts, method="trust-exact",
                             options={"keep_iterates": False})
print(f"{sum(r.success for r in many)} of {len(many)} runs converged; iterations: "
      f"{[r.nit for r in many]}")
assert all(np.allclose(r.x, 1.0, atol=1e-5) for r in many)

# %% [markdown]
# ## The Moré–Garbow–Hillstrom test set
#
# `hessopt.problems.MGH` holds the 39 instances of Moré, Garbow & Hillstrom (1981) with their
# standard starting points and documented minima. `hessopt.suite.run_suite` runs methods on them,
# with scipy's counterparts side by side (same exact derivatives, scipy's default options). A run
# counts as solved when it ends at the documented minimum value (or a documented local minimum);
# `NO*` marks a **false success**: the method reported success at a point that is not a minimum.
#
# Two methods here, to keep the notebook short; `python -m hessopt --compare-scipy` runs them all.
# NumPy's overflow warnings below come from trial points far out on Osborne 1, where both
# trust-exact runs evaluate f on the way; the methods reject those points and still solve it.

# %%
suite = run_suite(problems.MGH, ["newton-cg", "trust-exact"], compare_scipy=True,
                  options={"keep_iterates": False})
print(format_summary(suite))

# %% [markdown]
# Both of hessopt's methods solve every instance and never report success anywhere else;
# scipy's Newton-CG reports success at about ten points that are not minima, its trust-exact at
# about six (the `NO*` rows below):

# %%
for method, scipy_false in (("newton-cg", 10), ("trust-exact", 6)):
    ours = [r for r in suite if r.method == method]
    theirs = [r for r in suite if r.method == f"scipy {method}"]
    claim(f"{method}: instances solved", sum(r.solved for r in ours), 39, atol=0.5)
    claim(f"{method}: false successes", sum(r.false_success for r in ours), 0, atol=0.5)
    claim(f"scipy {method}: false successes", sum(r.false_success for r in theirs), scipy_false, atol=2)
assert all(r.solved for r in suite if r.problem == "osborne1" and r.method.endswith("trust-exact"))

# %% [markdown]
# The runs that did not solve their instance, in the table format of `python -m hessopt`:

# %%
print(format_table([r for r in suite if not r.solved]))

# %% [markdown]
# ## Performance profile
#
# Dolan & Moré (2002): for each method, the fraction of problems it solves within a factor τ of
# the fewest evaluations (nfev + njev + nhev) any method needed. The height at τ = 1 is how often a
# method was cheapest; the height at the right is the fraction it solved at all.

# %%
ax = hplot.performance_profile(suite, ax=plt.figure(figsize=(7.5, 4.5)).add_subplot())
ax.set_title(f"Performance profile on the {len(problems.MGH)} Moré–Garbow–Hillstrom instances")
ax.figure.tight_layout()
