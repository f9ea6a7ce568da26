"""The one loop (optimizers.loop) and the iterate's operator (Objective.at): what the loop does
with a step's trials and stops, and that a Hessian operator factory gives the same runs as hessp
with the products counted."""
import re
import warnings

import numpy as np
import pytest
from scipy.optimize import OptimizeWarning, rosen, rosen_der, rosen_hess

import optimizers
from optimizers.loop import RunOptions, Step, Stop, Trial, run
from optimizers.objective import BUFFER_COMPARISON_SIZE, Objective, Status, same_point

SQUARE = (lambda x: x @ x, lambda x: 2 * x)


class Scripted(Step):
    """Trials from a script: each entry is a Trial factory of the current point, or a Stop."""

    def __init__(self, script):
        self.script, self.seen = list(script), []

    def default_maxiter(self, n):
        return 7

    def start(self, point):
        return {"step": 0.0}

    def __call__(self, point, saddle):
        self.seen.append(point.x.copy())
        entry = self.script.pop(0)
        return entry if isinstance(entry, Stop) else entry(point)


def halve(point):
    return Trial(point.x / 2, point.f / 4, {"step": float(np.linalg.norm(point.x)) / 2})


def reject(point):
    return Trial(None, point.f, {"step": 0.0})


def test_accepted_trials_move_rejected_ones_count_and_a_stop_ends_the_run_uncounted():
    step = Scripted([halve, reject, halve, Stop(Status.PRECISION_LOSS, "Nothing left to try.")])
    result = run(Objective(SQUARE[0], np.array([4.0, 0.0]), SQUARE[1]), step)
    assert result.status == Status.PRECISION_LOSS and result.nit == 3
    np.testing.assert_array_equal(result.x, [1.0, 0.0])
    np.testing.assert_array_equal(result.history["x"][:, 0], [4.0, 2.0, 2.0, 1.0])
    np.testing.assert_array_equal(result.history["step"], [0.0, 2.0, 0.0, 1.0])
    assert result.message.startswith("Nothing left to try (||g||_inf = 2.0e+00")
    np.testing.assert_array_equal([x[0] for x in step.seen], [4.0, 2.0, 2.0, 1.0])


def test_a_trial_that_stops_the_run_is_recorded_first():
    done = lambda point: halve(point)._replace(stop=Stop(Status.SUCCESS, "Small change."))  # noqa: E731
    result = run(Objective(SQUARE[0], np.array([4.0]), SQUARE[1]), Scripted([done]))
    assert result.success and result.nit == 1 and len(result.history) == 2
    assert result.message.startswith("Small change")


def test_maxiter_none_is_the_step_default_and_bad_values_are_refused():
    result = run(Objective(SQUARE[0], np.array([4.0]), SQUARE[1]), Scripted([halve] * 7))
    assert result.status == Status.MAXITER and result.nit == 7
    for bad in (2.5, "3", True, 1j):
        with pytest.raises(ValueError, match=r"maxiter must be an integer \(0 or less: no iteration\) or None"):
            run(Objective(SQUARE[0], np.array([4.0]), SQUARE[1]), Scripted([]), RunOptions(maxiter=bad))


@pytest.mark.parametrize("maxiter", [0, -1, -7, 0.0])
def test_maxiter_of_0_or_less_makes_no_iteration_as_in_scipy(maxiter):
    """scipy's reading (gh-8241: Newton-CG with maxiter=-1 is status 1): x0 is tested, no step."""
    step = Scripted([halve])
    result = run(Objective(SQUARE[0], np.array([4.0]), SQUARE[1]), step, RunOptions(maxiter=maxiter))
    assert result.status == Status.MAXITER and result.nit == 0 and step.seen == []
    np.testing.assert_array_equal(result.x, [4.0])
    at_minimum = run(Objective(SQUARE[0], np.array([0.0]), SQUARE[1]), Scripted([]), RunOptions(maxiter=maxiter))
    assert at_minimum.success and at_minimum.nit == 0     # x0 passes the test: no false failure


@pytest.mark.parametrize("method", [optimizers.minimize_newton, optimizers.minimize_trust_ncg,
                                    optimizers.minimize_trust_exact])
@pytest.mark.parametrize("bounds", [None, ([-1.0, -1.0], [1.0, 1.0])])
def test_maxiter_at_a_saddle_says_the_gradient_test_passed_there(method, bounds):
    """At the saddle of x^2 - y^2 the gradient test passes and the second-order check sends the
    run on; meeting the cap there is status 1, but not "before the gradient test passed"."""
    def hess(x):
        return np.diag([2.0, -2.0])
    result = method(lambda x: x[0] ** 2 - x[1] ** 2, np.zeros(2), lambda x: np.array([2.0, -2.0]) * x,
                    hess=hess, maxiter=0, bounds=bounds)
    test = "the projected gradient test" if bounds else "the gradient test"
    assert result.status == Status.MAXITER and result.nit == 0
    assert result.message.startswith(f"Maximum number of iterations has been exceeded at a point where {test} "
                                     "passed but the Hessian has clearly negative curvature"), result.message


@pytest.mark.parametrize("method", [optimizers.minimize_gd, optimizers.minimize_newton_cg,
                                    optimizers.minimize_trust_ncg, optimizers.minimize_arc])
@pytest.mark.parametrize("f0, g0, match", [(np.nan, 1.0, r"f\(x0\) = nan"), (np.inf, 1.0, r"f\(x0\) = inf"),
                                           (1.0, np.nan, "the gradient at x0 is not finite")])
def test_a_start_point_that_is_not_finite_is_status_3_at_x0(method, f0, g0, match):
    """scipy returns a failed result for f(x0) = NaN (its test_nan_values); so does every method
    here, at once (scipy's methods iterate to maxiter on NaN), with x0 and a message saying why."""
    x0 = np.array([0.5, -1.0])
    result = method(lambda x: f0, x0, lambda x: np.full(2, g0), hessp=lambda x, p: p)
    assert result.status == Status.NONFINITE and not result.success and result.nit == 0
    np.testing.assert_array_equal(result.x, x0)
    assert result.message.startswith("The start point is not usable") and re.search(match, result.message)
    assert len(result.history) == 1


class Quadratic:
    """The Hessian at x of sum(x^4)/4 + x^T A x / 2 as an operator object, counting its uses."""

    A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
    calls = {"at": 0, "matvec": 0, "to_dense": 0}

    def __init__(self, x):
        Quadratic.calls["at"] += 1
        self.H = self.A + np.diag(3 * x ** 2)

    def matvec(self, v):
        Quadratic.calls["matvec"] += 1
        return self.H @ v

    def to_dense(self):
        Quadratic.calls["to_dense"] += 1
        return self.H


def quartic(x):
    return np.sum(x ** 4) / 4 + 0.5 * x @ Quadratic.A @ x - x.sum()


def quartic_grad(x):
    return x ** 3 + Quadratic.A @ x - 1


@pytest.mark.parametrize("method", ["newton-cg", "trust-krylov", "trust-exact", "arc"])
def test_an_operator_factory_gives_the_runs_of_hessp_with_its_products_counted(method):
    minimize = getattr(optimizers, "minimize_" + method.replace("-", "_"))
    x0 = np.array([2.0, -1.0, 1.5])
    reference = minimize(quartic, x0, quartic_grad,
                         hessp=lambda x, p: (Quadratic.A + np.diag(3 * x ** 2)) @ p,
                         hess=lambda x: Quadratic.A + np.diag(3 * x ** 2))
    Quadratic.calls.update(at=0, matvec=0, to_dense=0)
    result = minimize(quartic, x0, quartic_grad, operator=Quadratic)
    assert result.success
    np.testing.assert_array_equal(result.x, reference.x)
    assert result.nit == reference.nit and result.nhev == reference.nhev
    assert result.nhev == Quadratic.calls["matvec"] + Quadratic.calls["to_dense"]
    # one operator per iterate that asked for curvature, never one per product
    assert Quadratic.calls["at"] <= len(result.history)


@pytest.mark.parametrize("method, category", [
    (optimizers.minimize_newton_cg, OptimizeWarning), (optimizers.minimize_newton, OptimizeWarning),
    (optimizers.minimize_hessian_free, OptimizeWarning), (optimizers.minimize_trust_ncg, RuntimeWarning),
    (optimizers.minimize_dogleg, RuntimeWarning), (optimizers.minimize_arc, RuntimeWarning)])
def test_disp_warns_when_a_run_fails_with_scipys_category(method, category, capsys):
    """scipy's disp: a RuntimeWarning from the trust-region methods, an OptimizeWarning from
    Newton-CG (its line-search kin here too), the outcome printed when the run succeeds."""
    x0 = np.array([-1.2, 1.0])
    with pytest.warns(category, match="^Maximum number of iterations") as record:
        result = method(rosen, x0, rosen_der, hess=rosen_hess, maxiter=2, disp=True)
    assert result.status == Status.MAXITER and [str(w.message) for w in record] == [result.message]
    assert not any(issubclass(w.category, RuntimeWarning if category is OptimizeWarning else OptimizeWarning)
                   for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert method(rosen, x0, rosen_der, hess=rosen_hess, maxiter=2).status == Status.MAXITER
        solved = method(rosen, x0, rosen_der, hess=rosen_hess, disp=True)
    assert solved.success and capsys.readouterr().out.splitlines()[-1] == solved.message


@pytest.mark.parametrize("n", [3, BUFFER_COMPARISON_SIZE, BUFFER_COMPARISON_SIZE + 1])
def test_same_point_compares_values_on_both_sides_of_the_buffer_comparison(n):
    """Below and above the size where same_point stops comparing buffers, "the same point" means
    equal values: NaN is never the same point (an objective recomputes there), -0.0 is 0.0 (no
    recomputation), a strided view is the point of its values, and another shape is another point."""
    x = np.linspace(-1.0, 1.0, n)
    assert same_point(x, x.copy()) and not same_point(x, None)
    changed = x.copy()
    changed[-1] = np.nextafter(changed[-1], 2.0)
    assert not same_point(x, changed)
    with_nan = x.copy()
    with_nan[0] = np.nan
    assert not same_point(with_nan, with_nan.copy())
    signed = np.zeros(n)
    assert same_point(-signed, signed)
    assert same_point(np.repeat(x, 2)[::2], x) and not same_point(x, x.reshape(1, -1))
    single = x.astype(np.float32)   # other types compare by value too: complex, big-endian, single precision
    assert same_point(x + 0j, x + 0j) and same_point(x.astype(">f8"), x) and same_point(single, single.astype(float))


def test_an_iterates_hessian_is_evaluated_once_and_again_after_release():
    """The Iterate's matrix, dense Hessian and products are computed on first read and kept
    (one evaluation of hess for all reads), and computed again after ``release``."""
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    objective = Objective(lambda x: 0.5 * x @ A @ x, np.array([1.0, 0.0]), lambda x: A @ x, hess=lambda x: A)
    point = objective.at(np.array([1.0, 0.0]))
    assert np.array_equal(point.hessian, A) and point.hessian is point.hessian
    assert np.array_equal(point.matvec(np.array([0.0, 1.0])), A[:, 1]) and objective.nhev == 1
    point.release()
    assert np.array_equal(point.hessian, A) and objective.nhev == 2
