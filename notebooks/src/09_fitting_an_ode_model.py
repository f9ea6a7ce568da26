# %% [markdown]
# # 09 · Fitting an ODE model to data
#
# A predator–prey (Lotka–Volterra) model, `x' = a x − b x y`, `y' = −c y + d x y`, observed at 31
# times with 5% noise on both populations. `hessopt.curve_fit` is scipy's `curve_fit`; the model is
# `autodiff.numpy.scipy_integrate.odeint`, whose derivatives in the parameters come from forward
# sensitivities integrated with the solution (exact to the solver's tolerance), so the Jacobian a
# fit needs costs a few solves instead of one per parameter. This notebook fits the rates with
# bounds, reads standard errors and a confidence band off the covariance, checks one parameter's
# Wald interval against its profile likelihood, and refits with a robust loss after corrupting a
# few observations.

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.stats

import hessopt
from autodiff.numpy import scipy_integrate


def lotka_volterra(state, t, a, b, c, d):
    prey, predators = state[0], state[1]
    return np.stack([a * prey - b * prey * predators, -c * predators + d * prey * predators])


y0 = np.array([10.0, 5.0])
truth = np.array([1.0, 0.1, 1.5, 0.075])
t = np.linspace(0.0, 15.0, 31)


def populations(times, a, b, c, d):
    """Both populations at ``times``, raveled (prey and predators at each time): curve_fit's model."""
    return np.ravel(scipy_integrate.odeint(lotka_volterra, y0, times, args=(a, b, c, d)))


clean = populations(t, *truth)
rng = np.random.default_rng(1)
data = clean * (1.0 + 0.05 * rng.standard_normal(clean.shape))
sigma = 0.05 * np.abs(clean)   # the noise's standard deviations, known here

# %% [markdown]
# ## The fit, with bounds
#
# Rates are positive, so the fit is bounded below by 0; with bounds `curve_fit` runs the bounded
# Levenberg–Marquardt (TRON's step on the Gauss–Newton model). With `sigma` in absolute units,
# `pcov` is (JᵀJ)⁻¹ of the weighted residuals, and the standard errors are the square roots of its
# diagonal.

# %%
p0 = np.array([0.8, 0.2, 1.2, 0.1])
popt, pcov, info, message, status = hessopt.curve_fit(populations, t, data, p0=p0, sigma=sigma,
                                                      absolute_sigma=True, bounds=(0, np.inf),
                                                      full_output=True)
errors = np.sqrt(np.diag(pcov))
print(message)
print(f"residual evaluations {info['nfev']}, Jacobians {info['njev']}")
for name, value, error, true in zip("abcd", popt, errors, truth):
    print(f"{name} = {value:.4f} ± {error:.4f}   (true {true}, {abs(value - true) / error:.1f} standard errors off)")
chi_square = np.sum(info["fvec"] ** 2)
print(f"chi-square {chi_square:.1f} on {data.size - 4} degrees of freedom")
assert np.all(np.abs(popt - truth) < 2 * errors) and abs(chi_square - 58) < 2 * np.sqrt(2 * 58)

# %% [markdown]
# The fitted rates lie within two standard errors of the truth, and the chi-square lies within its
# own spread, sqrt(2 · 58) ≈ 11, of its 58 degrees of freedom, as it should with the noise's true
# sigma (`assert`ed below). The pointwise 95% band of the
# fitted curve comes from the same covariance (the delta method: var f(t) = gᵀ pcov g, with g the
# exact gradient of the model in the parameters at each t).

# %%
fine = np.linspace(0.0, 15.0, 151)
curve, half_width = hessopt.confidence_band(populations, fine, popt, pcov, level=0.95)
curve, half_width = curve.reshape(-1, 2), half_width.reshape(-1, 2)
observed = data.reshape(-1, 2)

fig, ax = plt.subplots(figsize=(9, 4))
for k, (label, colour) in enumerate([("prey", "tab:blue"), ("predators", "tab:red")]):
    ax.fill_between(fine, curve[:, k] - half_width[:, k], curve[:, k] + half_width[:, k], color=colour,
                    alpha=0.25, lw=0, label=f"{label}: 95% band")
    ax.plot(fine, curve[:, k], color=colour, lw=1.5, label=f"{label}: fit")
    ax.plot(t, observed[:, k], "o", color=colour, ms=4, label=f"{label}: data")
ax.set_xlabel("time")
ax.set_ylabel("population")
ax.legend(ncol=3, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15))
ax.set_title("Lotka–Volterra fit with its 95% confidence band")
plt.show()

# %% [markdown]
# ## Profile likelihood of b
#
# The Wald interval popt ± 1.96 se assumes the cost is quadratic in the parameters. The profile
# likelihood does not: fix b on a grid, refit the other three (a variable with equal lower and upper
# bounds is fixed), and keep the b where the chi-square rises by at most 3.84 (the 95% quantile of
# χ² with one degree of freedom). Each refit starts from the previous one.

# %%
def weighted(p):
    return (populations(t, *p) - data) / sigma


grid = popt[1] + errors[1] * np.linspace(-2.5, 2.5, 9)
profile, start = [], popt.copy()
for b in grid:
    start[1] = b
    lower, upper = np.zeros(4), np.full(4, np.inf)
    lower[1] = upper[1] = b
    refit = hessopt.least_squares(weighted, start, bounds=(lower, upper))
    profile.append(2 * refit.cost)   # chi-square at the best a, c, d for this b
    start = refit.x.copy()
profile = np.array(profile) - chi_square
threshold = scipy.stats.chi2.ppf(0.95, 1)
inside = grid[profile <= threshold]
print(f"Wald 95% interval of b:    [{popt[1] - 1.96 * errors[1]:.5f}, {popt[1] + 1.96 * errors[1]:.5f}]")
print(f"profile: the grid points within it run from {inside.min():.5f} to {inside.max():.5f}")
# the profile is at least 0 and, near the optimum, the Wald parabola ((b - b*) / se)^2
assert np.all(profile >= -1e-6 * chi_square)

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(grid, profile, "o-", label="profile: Δχ² after refitting a, c, d")
ax.plot(grid, ((grid - popt[1]) / errors[1]) ** 2, "--", label="Wald: ((b − b̂) / se)²")
ax.axhline(threshold, color="grey", lw=0.8)
ax.text(grid[0], threshold * 1.05, "95%", fontsize=8, color="grey")
ax.set_xlabel("b")
ax.set_ylabel("Δχ²")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The profile follows the parabola closely over ±2.5 standard errors: with 5% noise and 62
# observations the model is nearly linear in b over its uncertainty, so the Wald interval is a fair
# summary here. (Far from the optimum, or with less data, the two part ways; the profile is the one
# to trust then.)
#
# ## A robust loss against outliers
#
# Now four observations are corrupted (a recording error: ten times the value). A plain least-squares
# fit chases them; `loss="soft_l1"` with `f_scale=1` (the weighted residuals of good points are about
# 1) grows only linearly beyond that scale, so the outliers pull far less. With a robust loss the
# residuals are rewritten so that their half sum of squares is scipy's robust cost, and the fit is
# the same Levenberg–Marquardt.

# %%
corrupted = data.copy()
bad = [9, 22, 40, 51]
corrupted[bad] *= 10.0


def weighted_corrupted(p):
    return (populations(t, *p) - corrupted) / sigma


plain = hessopt.least_squares(weighted_corrupted, p0, bounds=(0, np.inf))
robust = hessopt.least_squares(weighted_corrupted, p0, bounds=(0, np.inf), loss="soft_l1", f_scale=1.0)
for label, fit in [("clean data, least squares", popt), ("corrupted, least squares", plain.x),
                   ("corrupted, soft_l1", robust.x)]:
    off = np.abs(fit - truth) / errors
    print(f"{label:<28} {np.array2string(fit, precision=4)}   largest |error| / se {off.max():6.1f}")
assert np.max(np.abs(robust.x - truth) / errors) < np.max(np.abs(plain.x - truth) / errors)

fig, ax = plt.subplots(figsize=(9, 4))
for fit, style, label in [(plain.x, "--", "least squares"), (robust.x, "-", "soft_l1")]:
    ax.plot(fine, populations(fine, *fit).reshape(-1, 2)[:, 0], style, color="tab:blue", label=f"prey, {label}")
top = 1.3 * observed[:, 0].max()
ax.plot(t, corrupted.reshape(-1, 2)[:, 0], "o", color="tab:blue", ms=4, label="prey data")
prey_bad = [k // 2 for k in bad if k % 2 == 0]   # even entries are prey (odd: predators, not drawn)
ax.plot(t[prey_bad], np.full(len(prey_bad), 0.97 * top), "^", color="k", ms=8,
        label="corrupted prey (×10, off the axis)")
ax.set_ylim(0, top)
ax.set_xlabel("time")
ax.set_ylabel("prey")
ax.legend(fontsize=8, loc="upper left")
ax.set_title("Four observations ×10: least squares against the soft_l1 loss")
plt.show()
