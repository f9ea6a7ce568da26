"""The one loop (optimizers.loop) and the iterate's operator (Objective.at): what the loop does
with a step's trials and stops, and that a Hessian operator factory gives the same runs as hessp
with the products counted."""
import numpy as np
import pytest

import optimizers
from optimizers.loop import Step, Stop, Trial, run
from optimizers.objective import Objective, Status

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
    with pytest.raises(ValueError, match="maxiter must be a non-negative integer"):
        run(Objective(SQUARE[0], np.array([4.0]), SQUARE[1]), Scripted([]), maxiter=-1)


def test_a_gradient_that_is_not_finite_at_x0_is_refused_by_every_method():
    for minimize in (optimizers.minimize_gd, optimizers.minimize_newton_cg):
        with pytest.raises(ValueError, match="gradient is not finite at x0"):
            minimize(lambda x: 1.0, np.zeros(2), lambda x: np.full(2, np.nan),
                     hessp=lambda x, p: p)


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
