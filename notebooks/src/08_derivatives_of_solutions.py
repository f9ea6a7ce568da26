# %% [markdown]
# # 08 · Derivatives of a solution: hypergradients, influence functions, standard errors
#
# hessopt computes the exact Hessian at a solution; this notebook uses it three ways, on the
# breast-cancer data set that scikit-learn ships (569 tumours, 30 features, offline):
#
# 1. a **hypergradient**: the derivative of a validation loss in a regularization strength, taken
#    with `ad.grad` straight through `hessopt.minimize` (the implicit function theorem at the
#    returned point: `dw*/dλ = -H⁻¹ ∂(∇_w f)/∂λ`), then a search for the strength by Newton-CG
#    on the strength itself, whose Hessian-vector products go through the solution too;
# 2. **influence functions** (Koh & Liang 2017): the effect of each training point on the
#    validation loss, all 300 in one reverse pass, against leave-one-out retraining;
# 3. **standard errors** of a logistic regression (a GLM) from `hessopt.standard_errors`, against
#    the closed form `(XᵀWX)⁻¹` (what statsmodels' `cov_params()` computes), and the sandwich.
#
# The numbers the text states are checked in the cells (`claim`).

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer

import autodiff as ad
import hessopt

from claims import claim

data = load_breast_cancer()
features = (data.data - data.data.mean(axis=0)) / data.data.std(axis=0)
X = np.column_stack([np.ones(len(features)), features])       # an intercept, then 30 standardized features
y = data.target.astype(float)
order = np.random.default_rng(0).permutation(len(y))
X_train, y_train, X_valid, y_valid = X[order[:300]], y[order[:300]], X[order[300:]], y[order[300:]]
GTOL = 1e-12


def mean_log_loss(w, X, y, weights=1.0):
    z = X @ w
    return np.mean(weights * (np.logaddexp(0.0, z) - y * z))


def trained(strength, weights=1.0):
    """The L2-regularized logistic regression's weights (the intercept is not penalized)."""
    objective = lambda w: mean_log_loss(w, X_train, y_train, weights) + 0.5 * strength * np.sum(w[1:] ** 2)  # noqa: E731
    return hessopt.minimize(objective, np.zeros(X.shape[1]), options={"gtol": GTOL}).x


def validation(log_strength):
    return mean_log_loss(trained(np.exp(log_strength)), X_valid, y_valid)


# %% [markdown]
# ## A hypergradient
#
# `validation` calls `hessopt.minimize` with the strength in a closure. Inside `ad.grad` the
# minimizer comes back as a Tensor whose derivative solves one system with the Hessian at the
# solution (31 variables: formed and factored by Cholesky). A central difference of re-solved
# problems checks it: with step h its error is h²/6 |L'''| plus the inner solutions' errors over h
# (each solution is within ‖H⁻¹‖ √n gtol of the exact one, gtol = 10⁻¹²).

# %%
log_strength = np.log(1e-2)
hypergradient = ad.grad(validation)(log_strength)
h = 1e-4
difference = (validation(log_strength + h) - validation(log_strength - h)) / (2 * h)
print(f"dL_valid/dlog(lam) = {hypergradient:.10f}; central difference {difference:.10f}")
claim("|hypergradient - central difference|", abs(hypergradient - difference), 0.0, atol=1e-7)

# %% [markdown]
# ## Searching for the strength
#
# The validation loss is a smooth function of log λ, so `hessopt.minimize` can minimize it with
# Newton-CG: its gradient and Hessian-vector products are derivatives of the inner solution of
# first and second order. The outer objective cannot be traced (a replay could not solve the inner
# problem again), so it runs eagerly, and `untraced_reason` says why.

# %%
outer = hessopt.minimize(validation, np.array([log_strength]), method="newton-cg", options={"gtol": 1e-9})
print(outer.message)
print(f"best strength {np.exp(outer.x[0]):.4g} after {outer.nit} Newton iterations ({outer.nhev} Hessian-vector "
      "products through the inner solution)")
print("why not traced:", outer.untraced_reason.split(";")[0])
grid = np.linspace(np.log(1e-4), np.log(1.0), 40)
curve = [validation(g) for g in grid]
assert validation(outer.x[0]) <= min(curve) + 1e-12     # no grid point does better

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(np.exp(grid), curve, color="0.4", label="validation loss")
ax.plot(np.exp(outer.x), [outer.fun], "o", color="C3", label="Newton-CG on log λ")
slope_x = np.exp(log_strength + np.array([-1.0, 1.0]))
ax.plot(slope_x, validation(log_strength) + hypergradient * np.array([-1.0, 1.0]), color="C0",
        label="the hypergradient at λ = 0.01")
ax.set(xscale="log", xlabel="strength λ", ylabel="mean log loss (validation)")
ax.legend()
plt.show()

# %% [markdown]
# ## Influence functions
#
# Weighting each training term by 1 + εᵢ, the derivative of the validation loss in the vector ε
# at 0 is the influence of every training point (Koh & Liang 2017): one `ad.grad`, one solve with
# the Hessian, whatever the number of points. Removing point i is εᵢ = −1, so the first-order
# prediction of its leave-one-out change is −∂L/∂εᵢ. First, the derivative itself against a
# central difference for the most influential point (the same error budget as above).

# %%
strength = float(np.exp(outer.x[0]))


def validation_weighted(eps):
    return mean_log_loss(trained(strength, 1.0 + eps), X_valid, y_valid)


m = len(y_train)
influence = ad.grad(validation_weighted)(np.zeros(m))
most = int(np.argmax(np.abs(influence)))
unit = np.eye(m)[most]
difference = (validation_weighted(h * unit) - validation_weighted(-h * unit)) / (2 * h)
claim("|influence - central difference| (most influential point)", abs(influence[most] - difference), 0.0,
      atol=1e-7)

# %% [markdown]
# Then against retraining without each of the 40 most influential points. The influence is a
# first-order prediction, so it is not exact for points whose removal moves the solution far; the
# correlation over these 40 points was about 0.95 (a measured number: it depends on the data
# only, not on the rounding).

# %%
base = validation_weighted(np.zeros(m))
top = np.argsort(-np.abs(influence))[:40]
actual = np.array([validation_weighted(-np.eye(m)[i]) - base for i in top])
predicted = -influence[top]
correlation = np.corrcoef(predicted, actual)[0, 1]
claim("correlation of predicted and actual leave-one-out changes", correlation, 0.95, atol=0.02)

fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.scatter(predicted, actual, s=14, color="C0")
limit = 1.1 * np.max(np.abs(np.concatenate([predicted, actual])))
ax.plot([-limit, limit], [-limit, limit], color="0.6", lw=1)
ax.set(xlabel="predicted by the influence function", ylabel="leave-one-out retraining",
       title="change of the validation loss", xlim=(-limit, limit), ylim=(-limit, limit))
plt.show()

# %% [markdown]
# ## Standard errors of a GLM
#
# An unregularized logistic regression on three features (mean radius, texture, smoothness) over
# all 569 tumours. `fun` is the negative log-likelihood, so `hessopt.standard_errors(result)` are
# the square roots of the inverse Hessian's diagonal (`result.hess_inv`, the observed information's
# inverse), which for the logistic link is `(XᵀWX)⁻¹` with W = diag(p(1 − p)): statsmodels'
# `cov_params()`. Both are computed at one x, so they agree to the rounding of a 4 × 4 factorization.

# %%
names = list(data.feature_names)
chosen = [names.index(c) for c in ("mean radius", "mean texture", "mean smoothness")]
Z = data.data[:, chosen]
design = np.column_stack([np.ones(len(Z)), (Z - Z.mean(axis=0)) / Z.std(axis=0)])


def negative_log_likelihoods(beta):
    z = design @ beta
    return np.logaddexp(0.0, z) - y * z


glm = hessopt.minimize(lambda beta: np.sum(negative_log_likelihoods(beta)), np.zeros(4), method="trust-exact")
errors = hessopt.standard_errors(glm)
p = 1 / (1 + np.exp(-design @ glm.x))
closed_form = np.sqrt(np.diag(np.linalg.inv(design.T @ ((p * (1 - p))[:, None] * design))))
np.testing.assert_allclose(errors, closed_form, rtol=1e-10)
robust = hessopt.standard_errors(glm, "sandwich", observations=negative_log_likelihoods)
print(f"{'':18s}{'estimate':>10s}{'std. error':>12s}{'z':>8s}{'robust s.e.':>13s}")
for name, estimate, error, sandwich in zip(["intercept", "mean radius", "mean texture", "mean smoothness"],
                                           glm.x, errors, robust):
    print(f"{name:18s}{estimate:10.4f}{error:12.4f}{estimate / error:8.2f}{sandwich:13.4f}")
