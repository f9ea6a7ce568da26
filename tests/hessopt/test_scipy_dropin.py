"""hessopt.minimize in scipy.optimize.minimize's place (issue 19): each habit of scipy's that code
written for scipy relies on, checked against scipy on the same call where scipy has it, and the
deliberate differences of docs/coming-from/scipy.md. scipy's own test suite, run with hessopt in its
place, is benchmarks/scipy_suite.py."""
import inspect
import re
import warnings

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import BFGS, SR1, OptimizeWarning, rosen_der, rosen_hess

import hessopt
import optimizers
from hessopt._arguments import OPTION_RULES, SCIPY_ONLY_OPTIONS
from hessopt._hessians import GradientDerivative, LastGradient

SCIPY_METHODS = ["newton-cg", "trust-ncg", "trust-krylov", "trust-exact", "dogleg"]
METHODS = sorted(hessopt.METHODS)
X0 = np.array([-1.2, 1.0])


def rosen(x):
    """Rosenbrock in plain NumPy (traceable, unlike scipy.optimize.rosen)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_grad(x):
    """Its gradient in NumPy, n = 2 (traceable)."""
    return np.stack([-400.0 * x[0] * (x[1] - x[0] ** 2) - 2.0 * (1.0 - x[0]), 200.0 * (x[1] - x[0] ** 2)])


def opaque_rosen(x):
    """Rosenbrock through scipy's rosen, which calls np.asarray: autodiff cannot follow it."""
    return scipy.optimize.rosen(x)


SCIPY_DERIVATIVES = {"jac": rosen_der, "hess": rosen_hess}   # what scipy's methods need given


# --- the callback: once per iteration, never at x0 ------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_callback_runs_once_per_iteration_and_stop_at_call_k_ends_after_iteration_k(method):
    seen = []
    full = hessopt.minimize(rosen, X0, method=method, callback=seen.append)
    assert full.success and len(seen) == full.nit
    np.testing.assert_array_equal(seen[-1], full.x)
    k = 3

    def stop_at_k(calls):
        def callback(xk):
            calls.append(xk)
            if len(calls) == k:
                raise StopIteration
        return callback

    calls = []
    stopped = hessopt.minimize(rosen, X0, method=method, callback=stop_at_k(calls))
    capped = hessopt.minimize(rosen, X0, method=method, options={"maxiter": k})
    assert (stopped.status, capped.status) == (99, 1) and stopped.nit == capped.nit == len(calls) == k
    np.testing.assert_array_equal(stopped.x, capped.x)
    assert stopped.fun == capped.fun and stopped.message.startswith("`callback` raised `StopIteration`")
    if method in SCIPY_METHODS:   # scipy's count is the same
        theirs = scipy.optimize.minimize(scipy.optimize.rosen, X0, method=method, callback=stop_at_k([]),
                                         **SCIPY_DERIVATIVES)
        assert theirs.nit == k and theirs.status == 99


# --- user functions get copies of x (gh-13740) ------------------------------------------------------

def fquad(x):
    a = np.arange(np.size(x))
    x -= a
    x *= x
    return np.sum(x)


def fquad_jac(x):
    a = np.arange(np.size(x))
    x *= 2
    x -= 2 * a
    return x


def fquad_hess(x):
    x[:] = -1.0
    return np.eye(x.size) * 2.0


def fquad_hessp(x, p):
    x[:] = 0.0
    p *= 2.0
    return p


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("second", [{"hess": fquad_hess}, {"hessp": fquad_hessp}, {}],
                         ids=["hess", "hessp", "derivative of jac"])
def test_functions_that_change_x_in_place_do_not_corrupt_the_run(method, second):
    """scipy's test_x_overwritten_user_function, for every method and every Hessian source."""
    x0 = np.full(5, 1.5)
    result = hessopt.minimize(fquad, x0, method=method, jac=fquad_jac, **second)
    assert result.success, result.message
    np.testing.assert_allclose(result.x, np.arange(5.0), atol=1e-6)
    np.testing.assert_array_equal(x0, np.full(5, 1.5))                  # the caller's x0 too
    np.testing.assert_allclose(result.jac, 2 * (result.x - np.arange(5.0)), atol=1e-6)


# --- a start point that is not finite: a failed result ---------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_a_nan_start_is_a_failed_result_as_in_scipy(method):
    x0 = np.array([1.0])
    result = hessopt.minimize(lambda x: np.sum(x) * np.nan, x0, method=method, jac=lambda x: np.ones(1),
                              hess=lambda x: np.eye(1))
    assert result.status == 3 and not result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, x0)
    assert np.isnan(result.fun) and "f(x0) = nan" in result.message
    with np.errstate(invalid="ignore"):
        log = hessopt.minimize(lambda x: np.sum(np.log(x)), -np.ones(3), method=method)   # exact derivatives
    assert log.status == 3 and not log.success and "f(x0) = nan" in log.message
    if method in SCIPY_METHODS:   # scipy's test_nan_values: a failed result, no exception
        with np.errstate(invalid="ignore"):
            theirs = scipy.optimize.minimize(lambda x: np.nan, x0, method=method, jac=lambda x: np.ones(1),
                                             hess=lambda x: np.eye(1), options={"maxiter": 20})
        assert not theirs.success and theirs.nit == 20   # it iterates on NaN up to maxiter


@pytest.mark.parametrize("method", METHODS)
def test_values_turning_nan_after_two_calls_never_give_success(method):
    """scipy's test_nan_values' second function: finite values twice, then NaN."""
    rng, count = np.random.default_rng(123122), [0]

    def fun(x):
        count[0] += 1
        return rng.random() if count[0] <= 2 else np.nan

    with np.errstate(invalid="ignore"):
        result = hessopt.minimize(fun, np.array([1.0]), method=method, jac=lambda x: np.ones(1),
                                  hess=lambda x: np.eye(1), options={"maxiter": 20})
    assert not result.success and np.isfinite(result.fun)   # the best point seen, a finite one


def test_a_nan_start_is_one_failed_run_of_a_batch():
    starts = [np.array([2.0, 2.0]), np.array([-1.0, 2.0]), np.array([0.5, 3.0])]
    with np.errstate(invalid="ignore"):
        results = hessopt.minimize_many(lambda x: np.sum(np.log(x) ** 2), starts, method="trust-exact")
    assert [r.success for r in results] == [True, False, True]
    assert results[1].status == 3 and "f(x0) = nan" in results[1].message   # a run's own status
    assert results[1].status not in {s.value for s in hessopt.BatchStatus}
    for result in (results[0], results[2]):
        np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_a_gradient_that_is_not_finite_at_x0_is_a_failed_result(method):
    """scipy's trust-region methods raise on it (ValueError: array must not contain infs or NaNs),
    its Newton-CG returns status 3 blaming the Hessian; here status 3 at x0, saying what it is."""
    x0 = np.array([0.5, -1.0])
    result = hessopt.minimize(lambda x: np.sum(x ** 2), x0, method=method, jac=lambda x: np.array([np.nan, 1.0]))
    assert result.status == 3 and not result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, x0)
    assert result.message.startswith("The start point is not usable: the gradient at x0 is not finite")
    if method in SCIPY_METHODS[1:]:
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            scipy.optimize.minimize(lambda x: np.sum(x ** 2), x0, method=method,
                                    jac=lambda x: np.array([np.nan, 1.0]), hess=lambda x: 2 * np.eye(2))


# --- hess=BFGS(), SR1(): scipy's HessianUpdateStrategy --------------------------------------------

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("strategy", [BFGS, SR1])
def test_hessian_update_strategies_are_updated_at_each_iterate(method, strategy):
    hess = strategy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # scipy's "delta_grad == 0.0" at a repeated point
        result = hessopt.minimize(rosen, X0, method=method, jac=rosen_grad, hess=hess,
                                  options={"return_all": True})
    assert result.success, result.message
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)
    assert result.hessian_source == f"quasi-Newton ({strategy.__name__} updates)" and result.nhev == 0
    # the matrix is the strategy's own updates with the steps and gradient changes of the iterates
    replay = strategy()
    replay.initialize(2, "hess")
    points = [x for k, x in enumerate(result.allvecs) if k == 0 or not np.array_equal(x, result.allvecs[k - 1])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for a, b in zip(points, points[1:]):
            replay.update(b - a, rosen_grad(b) - rosen_grad(a))
    np.testing.assert_array_equal(hess.get_matrix(), replay.get_matrix())


def saddle(x):
    """A saddle point at 0 that the iterates from (1, 0) reach (the y-gradient stays 0); minima at
    y = +-1/sqrt(2)."""
    return x[0] ** 2 - x[1] ** 2 + x[1] ** 4


def saddle_grad(x):
    return np.stack([2 * x[0], -2 * x[1] + 4 * x[1] ** 3])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("strategy", [BFGS, SR1])
@pytest.mark.parametrize("jac", [saddle_grad, None], ids=["jac", "autodiff"])
def test_a_quasi_newton_run_ending_at_a_saddle_is_not_a_success(method, strategy, jac):
    """The strategy's matrix cannot tell a saddle from a minimum (scipy reports success there); the
    final check with the true Hessian can: status 5 (no false success)."""
    result = hessopt.minimize(saddle, [1.0, 0.0], method=method, jac=jac, hess=strategy())
    assert result.status == 5 and not result.success
    np.testing.assert_allclose(result.x, [0.0, 0.0], atol=1e-8)
    assert "the true Hessian has curvature -2.0e+00" in result.message
    unchecked = hessopt.minimize(saddle, [1.0, 0.0], method=method, jac=jac, hess=strategy(),
                                 options={"check_second_order": False})
    assert unchecked.success
    if method in ("newton-cg", "trust-ncg", "trust-krylov"):
        theirs = scipy.optimize.minimize(saddle, [1.0, 0.0], method=method, jac=saddle_grad, hess=strategy())
        assert theirs.success and np.allclose(theirs.x, 0.0)


def test_bfgs_with_newton_cg_matches_scipys_test():
    """scipy's TestNewtonCg.test_hessian_update_strategy, compared with scipy's own run."""
    ours = hessopt.minimize(scipy.optimize.rosen, X0, jac=rosen_der, hess=BFGS(), tol=1e-5, method="Newton-CG")
    theirs = scipy.optimize.minimize(scipy.optimize.rosen, X0, jac=rosen_der, hess=BFGS(), tol=1e-5,
                                     method="Newton-CG")
    assert ours.success and theirs.success
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-4)


# --- with a user jac, the Hessian is the derivative of that gradient -------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_a_numpy_jac_is_differentiated_exactly_even_when_fun_cannot_be(method):
    result = hessopt.minimize(opaque_rosen, X0, method=method, jac=rosen_grad)
    assert result.success and result.hessian_source == "autodiff of the gradient"
    exact = hessopt.minimize(opaque_rosen, X0, method=method, jac=rosen_grad,
                             hess=lambda x: hessopt.hessian(rosen)(x))
    assert result.nit == exact.nit                      # the same Hessians: the same run
    np.testing.assert_allclose(result.x, exact.x, rtol=1e-12)
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)
    if method in SCIPY_METHODS[1:]:   # a deliberate difference: scipy refuses to run without hess
        with pytest.raises(ValueError, match="(Hessian|Hessian matrix|Hessian-vector product) is .*required"):
            scipy.optimize.minimize(opaque_rosen, X0, method=method, jac=rosen_grad)


@pytest.mark.parametrize("jac, source", [(lambda x: x - 1.0, "autodiff of the gradient"),
                                         (lambda x: np.array([float(x[0]) - 1.0]),
                                          "finite differences of the gradient")])
def test_the_hessian_is_the_derivative_of_the_gradient_the_run_uses(jac, source):
    """scipy's test_initial_step_scaling: jac is half of f's gradient. The Hessian of f would make
    every Newton step half as long as the gradient asks (linear convergence); the derivative of
    jac makes the first step land on the minimum, as scipy's finite differences of jac do."""
    steps = []
    result = hessopt.minimize(lambda x: np.sum((x - 1.0) ** 2), [-1.0], jac=jac, method="newton-cg",
                              callback=lambda xk: steps.append(xk.copy()))
    assert result.success and result.hessian_source == source and result.nit <= 2
    np.testing.assert_allclose(steps[0], [1.0], atol=1e-6)


def test_an_opaque_jac_is_differenced_and_the_message_says_so(counted):
    jac = counted("jac", lambda x: rosen_der(x))     # np.asarray inside: autodiff refuses it
    result = hessopt.minimize(opaque_rosen, X0, method="trust-exact", jac=jac)
    assert result.success and result.hessian_source == "finite differences of the gradient"
    assert re.search(r"\. Second derivatives came from finite differences of the gradient \(jac\), which "
                     r"autodiff could not follow: autodiff: np\.asarray\(\) would turn a Tensor", result.message)
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)
    assert result.njev == counted.calls["jac"]           # the differences' calls are counted
    assert 0 < result.nhev <= result.nit + 1             # one differenced Hessian per point
    assert counted.calls["jac"] >= 2 * result.nhev       # n = 2 gradients for each of them


def test_hess_3_point_differences_an_opaque_jac_centrally():
    """scipy's hess="3-point": central differences of the gradient, 2n calls of jac per Hessian
    where the default (forward) makes n; each is more accurate by orders of magnitude."""
    calls = {}
    results = {}
    for scheme in ("2-point", "3-point"):
        jac = CountedJac()
        results[scheme] = hessopt.minimize(opaque_rosen, X0, method="trust-exact", jac=jac, hess=scheme)
        calls[scheme] = jac.calls
    forward, central = results["2-point"], results["3-point"]
    assert forward.success and central.success and forward.nit == central.nit
    assert forward.hessian_source == central.hessian_source == "finite differences of the gradient"
    assert central.nhev == forward.nhev > 0
    assert calls["3-point"] - calls["2-point"] == X0.size * central.nhev   # 2n against n per Hessian
    x = np.array([0.3, -0.7])
    errors = {scheme: np.abs(GradientDerivative(rosen_der, LastGradient(rosen_der), scheme)(x).to_dense()
                             - rosen_hess(x)).max() for scheme in ("2-point", "3-point")}
    assert errors["3-point"] < 1e-7 < errors["2-point"] < 1e-4


class CountedJac:
    """scipy's rosen_der (opaque to autodiff), counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return rosen_der(x)


def test_jac_true_differentiates_funs_gradient():
    fun = lambda x: (rosen(x), rosen_grad(x))  # noqa: E731
    result = hessopt.minimize(fun, X0, jac=True, method="trust-exact")
    assert result.success and result.hessian_source == "autodiff of the gradient"
    opaque = hessopt.minimize(lambda x: (opaque_rosen(x), rosen_der(x)), X0, jac=True, method="trust-exact")
    assert opaque.success and opaque.hessian_source == "finite differences of the gradient"
    assert opaque.nfev == opaque.njev                    # each gradient is a call of fun


# --- tol: gtol for every method ---------------------------------------------------------------------

def valley(z):
    """scipy's test_minimize_tol_parameter: minimum 1 on the line x = 0."""
    return z[0] ** 2 * z[1] ** 2 + z[0] ** 4 + 1


def valley_grad(z):
    return np.stack([2 * z[0] * z[1] ** 2 + 4 * z[0] ** 3, 2 * z[0] ** 2 * z[1]])


def test_tol_is_gtol_for_newton_cg_and_negative_curvature_is_not_a_stop():
    """One of the five scipy tests hessopt fails (benchmarks/scipy_suite.py): it wants tol=1.0 to
    end higher than tol=1e-10. scipy's Newton-CG reads tol as xtol and stops after one iteration;
    here tol is gtol for every method, and where ||g||_inf <= 1 first holds the Hessian
    [[2y^2 + 12x^2, 4xy], [4xy, 2x^2]] has a negative eigenvalue (det = 24x^4 - 12x^2 y^2 < 0), so
    that point is no minimum and the run goes on to the valley x = 0, where f = 1."""
    loose = hessopt.minimize(valley, [2.0, 2.0], jac=valley_grad, tol=1.0, method="newton-cg")
    tight = hessopt.minimize(valley, [2.0, 2.0], jac=valley_grad, tol=1e-10, method="newton-cg")
    assert loose.success and tight.success and loose.nit < tight.nit
    # tight: |g| <= 1e-10 puts |x| below 1e-10, so f - 1 = x^2 y^2 + x^4 is below f's rounding;
    # loose: stopping needs the lowest eigenvalue, about -6 x^2, above -sqrt(eps) ||H|| (||H|| about
    # 2 y^2 = 20 at y = 3.1), so x^2 < 5e-8 and f - 1 < 5e-7 (Newton's last step went further)
    assert tight.fun == pytest.approx(1.0, abs=1e-15) and 1.0 <= loose.fun < 1.0 + 1e-6
    iterates = loose.history["x"]
    first = next(k for k, x in enumerate(iterates) if np.abs(valley_grad(x)).max() <= 1.0)
    x, y = iterates[first]
    lowest = np.linalg.eigvalsh([[2 * y ** 2 + 12 * x ** 2, 4 * x * y], [4 * x * y, 2 * x ** 2]])[0]
    assert first < loose.nit and lowest < -0.01 and valley(iterates[first]) > 1.005
    theirs = scipy.optimize.minimize(valley, [2.0, 2.0], jac=valley_grad, tol=1.0, method="newton-cg")
    assert theirs.nit == 1 and theirs.fun > 7.0


# --- disp: scipy's warnings -------------------------------------------------------------------------

@pytest.mark.parametrize("method", SCIPY_METHODS)
def test_disp_warns_at_maxiter_with_scipys_category(method, capsys):
    category = OptimizeWarning if method == "newton-cg" else RuntimeWarning
    options = {"disp": True, "maxiter": 2}
    with pytest.warns(category, match="Maximum number of iterations has been exceeded") as ours:
        result = hessopt.minimize(rosen, X0, method=method, options=options)
    with pytest.warns(category, match="Maximum number of iterations has been exceeded") as theirs:
        scipy.optimize.minimize(scipy.optimize.rosen, X0, method=method, options=options, **SCIPY_DERIVATIVES)
    assert {w.category for w in ours} == {w.category for w in theirs} == {category}
    prefix = "Warning: " if method == "newton-cg" else ""    # scipy's Newton-CG words it so
    assert [str(w.message) for w in theirs] == [prefix + "Maximum number of iterations has been exceeded."]
    assert [str(w.message) for w in ours] == [result.message] and result.status == 1
    assert result.message.startswith("Maximum number of iterations has been exceeded before the gradient test passed")
    capsys.readouterr()


# --- what scipy's calls return ------------------------------------------------------------------------

def shifted_quartic(x, a):
    return np.sum(a * (x - 1.0) ** 4 + (x - 2.0) ** 2)


def shifted_quartic_and_gradient(x, a):
    return shifted_quartic(x, a), 4 * a * (x - 1.0) ** 3 + 2 * (x - 2.0)


def test_args_with_jac_true_as_scipys_newton_cg():
    ours = hessopt.minimize(shifted_quartic_and_gradient, np.zeros(3), args=(2.0,), method="Newton-CG", jac=True)
    theirs = scipy.optimize.minimize(shifted_quartic_and_gradient, np.zeros(3), args=(2.0,), method="Newton-CG",
                                     jac=True)
    assert ours.success and theirs.success and ours.hessian_source == "autodiff of the gradient"
    np.testing.assert_allclose(ours.x, 1.5, atol=1e-8)        # 8 (x - 1)^3 + 2 (x - 2) = 0 at x = 1.5
    np.testing.assert_allclose(theirs.x, ours.x, rtol=1e-5)
    assert ours.nfev == ours.njev                                # each gradient is a call of fun


HESSIAN_KINDS = {"hess": dict(hess=rosen_hess), "hessp": dict(hessp=scipy.optimize.rosen_hess_prod),
                 "BFGS": dict(hess=BFGS)}


@pytest.mark.parametrize("method", SCIPY_METHODS)
@pytest.mark.parametrize("kind", sorted(HESSIAN_KINDS))
@pytest.mark.parametrize("options", [{}, {"return_all": True}, {"maxiter": 2}],
                         ids=["default", "return_all", "maxiter"])
def test_the_result_has_every_field_scipy_sets(method, kind, options):
    """result.keys() holds scipy's (hessopt adds history, hessian_source, sparse where the method
    factors the Hessian and preconditioned where it solves with Krylov methods), with scipy's types;
    the trust-region methods' result.hess is the user's Hessian at x, as scipy's."""
    derivatives = {name: value() if value is BFGS else value for name, value in HESSIAN_KINDS[kind].items()}
    x0 = np.array([-1.2, 1.0, 0.5])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # "does not use Hessian-vector product information"
            theirs = scipy.optimize.minimize(scipy.optimize.rosen, x0, method=method, jac=rosen_der,
                                             options=options, **derivatives)
    except ValueError:   # scipy's trust-exact and dogleg need hess (hessopt's take the others too)
        assert kind in ("hessp", "BFGS") and method in ("trust-exact", "dogleg")
        theirs = None
    derivatives = {name: value() if value is BFGS else value for name, value in HESSIAN_KINDS[kind].items()}
    ours = hessopt.minimize(scipy.optimize.rosen, x0, method=method, jac=rosen_der, options=options, **derivatives)
    if theirs is not None:
        assert set(theirs.keys()) <= set(ours.keys())
        factored = {"sparse"} if method in ("trust-exact", "dogleg") else set()   # whether H was sparse
        krylov = {"preconditioned"} if method in ("newton-cg", "trust-ncg", "trust-krylov") else set()
        assert set(ours.keys()) - set(theirs.keys()) == {"history", "hessian_source", "derivatives"} | factored | krylov
        for name in theirs.keys():
            assert isinstance(ours[name], type(theirs[name]) if name != "fun" else float), name
    if "hess" in ours:
        np.testing.assert_array_equal(ours.hess, rosen_hess(ours.x))
    assert ("hess" in ours) == (kind == "hess" and method != "newton-cg")


# --- bounds and constraints: scipy's defaults accepted, anything else refused by name ---------------

def test_scipys_positional_order_with_bounds_and_constraints():
    args = (X0, (), "trust-exact")
    ours = hessopt.minimize(rosen, *args, None, None, None, None, (), 1e-10, None, {"maxiter": 200})
    theirs = scipy.optimize.minimize(scipy.optimize.rosen, *args, rosen_der, rosen_hess, None, None, (), 1e-10,
                                     None, {"maxiter": 200})
    assert ours.success and theirs.success
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-8)
    for constraints in ([], None):
        assert hessopt.minimize(rosen, X0, bounds=None, constraints=constraints).success
    assert hessopt.minimize(rosen, X0, method=None).hessian_source == "autodiff"   # None: newton-cg


@pytest.mark.parametrize("bounds", [[(0, 2), (0, 2)], scipy.optimize.Bounds(0, 2)])
def test_bounds_are_honoured_where_scipy_newton_cg_warns_and_drops_them(bounds):
    result = hessopt.minimize(rosen, X0, method="newton-cg", bounds=bounds)   # scipy: ignored
    assert result.success and np.all((result.x >= 0) & (result.x <= 2))
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)
    with pytest.raises(ValueError, match="method 'arc' does not take bounds; the methods that do: newton, "
                                         "newton-cg, trust-ncg"):
        hessopt.minimize(rosen, X0, method="arc", bounds=bounds)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg", "trust-exact"])
def test_keep_feasible_is_accepted_and_changes_nothing(method):
    """No method evaluates f outside the box, so Bounds.keep_feasible has nothing to add."""
    outside = []

    def fun(x):
        if np.any(np.abs(x) > 1.5):
            outside.append(x.copy())
        return rosen(x)

    plain = hessopt.minimize(fun, X0, method=method, bounds=scipy.optimize.Bounds(-1.5, 1.5))
    kept = hessopt.minimize(fun, X0, method=method, bounds=scipy.optimize.Bounds(-1.5, 1.5, keep_feasible=True))
    assert plain.success and outside == []
    np.testing.assert_array_equal(kept.x, plain.x)
    assert (kept.nit, kept.nfev) == (plain.nit, plain.nfev)


@pytest.mark.parametrize("constraints", [{"type": "eq", "fun": lambda x: x[0]},
                                         [scipy.optimize.LinearConstraint(np.eye(2), 0, 1)]])
@pytest.mark.parametrize("method", ["newton-cg", "trust-exact", "arc"])
def test_constraints_are_refused_by_the_methods_without_them(constraints, method):
    """scipy's Newton-CG and trust-region methods warn and drop constraints; here they are refused,
    naming the method that takes them (method=None picks it)."""
    with pytest.raises(ValueError, match=f"method '{method}' takes no general constraints.*use method=None or "
                                         "'interior-point'"):
        hessopt.minimize(rosen, X0, method=method, constraints=constraints)


# --- options: scipy's readings, every one checked before anything runs -----------------------------

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("maxiter", [0, -1])
def test_maxiter_0_or_less_makes_no_iteration(method, maxiter):
    calls = []
    result = hessopt.minimize(lambda x: calls.append(1) or rosen(x), X0, method=method,
                              options={"maxiter": maxiter})
    assert result.status == 1 and not result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, X0)
    at_minimum = hessopt.minimize(rosen, np.ones(2), method=method, options={"maxiter": maxiter})
    assert at_minimum.success and at_minimum.nit == 0
    if method in SCIPY_METHODS:   # scipy's Newton-CG makes none too; its trust-region methods one
        theirs = scipy.optimize.minimize(scipy.optimize.rosen, X0, method=method, options={"maxiter": maxiter},
                                         **SCIPY_DERIVATIVES)
        assert theirs.status == 1 and theirs.nit == (0 if method == "newton-cg" else 1)


def solver_options():
    """(method, option) for every option of every method (the optimizers' keyword parameters), and
    scipy's options that are accepted without effect (SCIPY_ONLY_OPTIONS)."""
    pairs = []
    for method, solver in {**hessopt.METHODS, "adam": optimizers.minimize_adam, "gd": optimizers.minimize_gd,
                           "least_squares": optimizers.least_squares_lm}.items():
        for name, parameter in inspect.signature(solver).parameters.items():
            if parameter.kind is parameter.KEYWORD_ONLY and name not in ("operator", "method", "bounds"):
                pairs.append((method, name))
    return pairs + [(method, name) for method, names in SCIPY_ONLY_OPTIONS.items() for name in sorted(names)]


def test_every_option_of_every_method_has_a_rule():
    assert [pair for pair in solver_options() if pair[1] not in OPTION_RULES and pair not in OPTION_RULES] == []


@pytest.mark.parametrize("method, name", solver_options())
def test_every_option_is_checked_before_anything_runs(method, name):
    calls = []

    def fun(x):
        calls.append(1)
        return rosen(x)

    run = (lambda options: hessopt.least_squares(lambda x: x - 1.0, X0, options=options)) \
        if method == "least_squares" else (lambda options: hessopt.minimize(fun, X0, method=method, options=options))
    rule = OPTION_RULES.get((method, name)) or OPTION_RULES[name]
    wrong_kind = next(value for value in ("a", 7) if not rule.kind(value))
    out_of_range = next(value for value in (-7.5, "a", 2, -3, np.inf) if rule.kind(value) and not rule.within(value))
    bad = [(wrong_kind, TypeError), (out_of_range, ValueError)]
    if rule.kind(1.5):          # a number: NaN is out of range
        bad.append((np.nan, ValueError))
    if not rule.kind(True) or not rule.within(True):   # anything but a flag: a bool is refused too
        bad.append((True, TypeError if not rule.kind(True) else ValueError))
    for value, error in bad:
        with pytest.raises(error, match=rf"^options\['{name}'\] must be {re.escape(rule.accepted)}; got "
                                        rf"{re.escape(repr(value))}$"):
            run({name: value})
    assert calls == []


@pytest.mark.parametrize("method, options, error, match", [
    ("newton-cg", {"maxiter": True}, TypeError, r"options\['maxiter'\] must be a number"),
    ("trust-ncg", {"maxiter": np.nan}, ValueError, r"options\['maxiter'\] must be a number"),
    ("trust-exact", {"gtol": np.nan}, ValueError, r"options\['gtol'\] must be a non-negative number"),
    ("newton-cg", {"cg_maxiter": True}, TypeError, r"options\['cg_maxiter'\] must be a positive integer"),
    ("newton-cg", {"nonmonotone": 10 ** 30}, ValueError, r"options\['nonmonotone'\] must be an integer from 1 "),
    ("newton-cg", {"xtol": "a"}, TypeError, r"options\['xtol'\] must be a non-negative number; got 'a'"),
    ("newton-cg", {"eps": [1e-8, -1.0]}, ValueError, r"options\['eps'\] must be a positive number or an array"),
    ("trust-ncg", {"workers": "a"}, TypeError, r"options\['workers'\] must be an integer \(-1: all processors\)"),
    ("trust-krylov", {"inexact": 2}, ValueError, r"options\['inexact'\] must be True or False; got 2"),
    ("trust-exact", {"subproblem_maxiter": 0}, ValueError, r"options\['subproblem_maxiter'\] must be a positive"),
])
def test_bad_option_values_are_named(method, options, error, match):
    """Bool where an integer goes, NaN, beyond any integer the method can hold, and scipy's options
    that have no effect here: each refused by name before anything runs."""
    with pytest.raises(error, match=match):
        hessopt.minimize(rosen, X0, method=method, options=options)


@pytest.mark.parametrize("method, name", [("newton-cg", "maxiter"), ("newton-cg", "nonmonotone"),
                                          ("trust-ncg", "nonmonotone"), ("newton-cg", "cg_maxiter"),
                                          ("hessian-free", "cg_maxiter")])
def test_integer_options_may_be_whole_floats(method, name):
    """scipy takes maxiter=3.0; every integer option here does too, as the integer."""
    as_int = hessopt.minimize(rosen, X0, method=method, options={name: 3})
    as_float = hessopt.minimize(rosen, X0, method=method, options={name: 3.0})
    np.testing.assert_array_equal(as_float.x, as_int.x)
    assert (as_float.nit, as_float.nfev) == (as_int.nit, as_int.nfev)


@pytest.mark.parametrize("method", ["newton-cg", "trust-ncg"])
def test_a_fractional_maxiter_counts_as_the_next_integer_as_in_scipy(method):
    """scipy iterates while nit < maxiter, so maxiter=2.5 makes 3 iterations (gh-23430)."""
    theirs = scipy.optimize.minimize(scipy.optimize.rosen, X0, method=method, jac=rosen_der,
                                     hess=rosen_hess, options={"maxiter": 2.5})
    ours = hessopt.minimize(rosen, X0, method=method, options={"maxiter": 2.5})
    assert ours.nit == theirs.nit == 3 and ours.status == 1


def test_disp_takes_a_level_as_scipy_reads_it(capsys):
    """scipy's methods read disp as true or false, so code passing disp=2 runs."""
    with pytest.warns(OptimizeWarning, match="Maximum number of iterations has been exceeded"):
        hessopt.minimize(rosen, X0, method="newton-cg", options={"disp": 2, "maxiter": 2})
    table = capsys.readouterr().out
    with pytest.warns(OptimizeWarning):
        hessopt.minimize(rosen, X0, method="newton-cg", options={"disp": True, "maxiter": 2})
    assert capsys.readouterr().out == table and table.count("\n") == 4   # header and iterations 0-2


@pytest.mark.parametrize("call, error, match", [
    (dict(options={"gtol": "a"}), TypeError, r"options\['gtol'\] must be a non-negative number"),
    (dict(tol=-1.0), ValueError, r"^tol must be a non-negative number"),
    (dict(options={"cg_maxiter": -3}), ValueError, r"options\['cg_maxiter'\] must be a positive integer"),
    (dict(options=5), TypeError, "options must be a dict"),
    (dict(jac=lambda x: None), TypeError, r"jac returned None where x0's 2 numbers were expected"),
    (dict(jac=lambda x: np.ones(3)), ValueError, r"jac returned 3 numbers of shape \(3,\), expected 2"),
    (dict(jac=True), TypeError, "must return a pair"),
    (dict(method="trust-ncg", hessp=lambda x, p: np.ones(3)), ValueError,
     r"hessp returned 3 numbers of shape \(3,\), expected 2"),
    (dict(method="trust-ncg", hessp=lambda x, p: None), TypeError, "hessp returned None"),
    (dict(hess=BFGS(), hessp=lambda x, p: p), ValueError, r"hess=BFGS\(\) approximates .* pass one of them"),
])
def test_bad_input_from_the_issue_is_named(call, error, match):
    with pytest.raises(error, match=match):
        hessopt.minimize(rosen, X0, **call)
