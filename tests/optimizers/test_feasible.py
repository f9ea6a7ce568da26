"""The feasible-set contract (optimizers.feasible): what the loop asks of a set, answered by
Unconstrained and Box, and by a set written here against the contract alone (as a constrained
method's will be); and a step that owns its convergence test."""
import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess_prod

import optimizers
from optimizers.bounds import Box, FreeVariables
from optimizers.feasible import UNCONSTRAINED, FeasibleSet, Unconstrained
from optimizers.loop import RunOptions, Step, Trial, krylov_curvature, run
from optimizers.objective import Objective, Status

INF = np.inf


def test_unconstrained_leaves_everything_as_it_is():
    x, g = np.array([1.0, -2.0]), np.array([3.0, 4.0])
    start, note = UNCONSTRAINED.start(x)
    assert start is x and note is None and UNCONSTRAINED.contains(x)
    assert UNCONSTRAINED.stationarity(x, g) is g
    point = Objective(lambda x: x @ x, x, lambda x: 2 * x, hessp=lambda x, p: 2 * p).at(x)
    assert UNCONSTRAINED.curvature_space(point) is point
    assert UNCONSTRAINED.lift(point, g) is g
    assert UNCONSTRAINED.history(x) == {} and UNCONSTRAINED.result_fields(x) == {}
    assert (UNCONSTRAINED.gradient_name, UNCONSTRAINED.test_name, UNCONSTRAINED.preconditioned) == \
        ("g", "the gradient test", True)


def test_a_box_clips_x0_with_a_note_and_refuses_another_size():
    box = Box([0.0, -1.0, 2.0], [1.0, 1.0, 2.0])
    x, note = box.start(np.array([0.5, -3.0, 5.0]))
    np.testing.assert_array_equal(x, [0.5, -1.0, 2.0])
    assert note == ("x0 lay outside the bounds in 2 of 3 entries (the first at flat index 1) and was "
                    "clipped into the box")
    inside = np.array([0.5, 0.0, 2.0])
    assert box.start(inside)[1] is None and box.contains(inside) and not box.contains(np.array([2.0, 0, 2]))
    with pytest.raises(ValueError, match="the bounds are over 3 variables, but x0 has 2"):
        box.start(np.zeros(2))


def test_a_box_measures_the_projected_gradient_and_checks_the_free_variables():
    """x on the lower bound of variable 0 and the upper bound of variable 2, variable 1 free: the
    projected gradient drops the components that push against a bound, the curvature space is the
    free variable's, and a direction found there is zero on the bound variables."""
    box = Box([0.0, -INF, -INF], [INF, INF, 1.0])
    x = np.array([0.0, 0.3, 1.0])
    g = np.array([2.0, -0.5, -3.0])
    np.testing.assert_array_equal(box.stationarity(x, g), [0.0, -0.5, 0.0])
    H = np.array([[1.0, 2.0, 3.0], [2.0, -4.0, 5.0], [3.0, 5.0, 6.0]])
    point = Objective(lambda x: 0.5 * x @ H @ x, x, lambda x: H @ x, hess=lambda x: H).at(x)
    space = box.curvature_space(point)
    assert isinstance(space, FreeVariables)
    np.testing.assert_array_equal(space.x, [0.3])
    np.testing.assert_array_equal(space.hessian, [[-4.0]])
    np.testing.assert_array_equal(space.matvec(np.array([2.0])), [-8.0])
    np.testing.assert_array_equal(box.lift(space, np.array([1.0])), [0.0, 1.0, 0.0])
    assert box.history(x) == {"active": 2}
    np.testing.assert_array_equal(box.result_fields(x)["active_mask"], [-1, 0, 1])
    assert Box(x, x).curvature_space(point) is None   # nothing free: nothing to check
    assert (box.gradient_name, box.test_name, box.preconditioned) == ("pg", "the projected gradient test", False)


class HalfLine(FeasibleSet):
    """x_0 >= 0 written against the contract alone, the way a constrained method's set will be:
    its own measure (the gradient with g_0 dropped on the bound), curvature space (the second
    variable only), column ("violation") and field ("v", a multiplier estimate)."""

    gradient_name, test_name = "kkt", "the KKT test"

    def start(self, x0):
        return np.maximum(x0, [0.0, -INF]), None

    def contains(self, x):
        return x[0] >= 0

    def stationarity(self, x, g):
        return np.array([0.0 if x[0] == 0 and g[0] > 0 else g[0], g[1]])

    def curvature_space(self, point):
        return _Second(point)

    def lift(self, space, direction):
        return np.array([0.0, direction[0]])

    def history(self, x):
        return {"violation": max(-x[0], 0.0)}

    def result_fields(self, x):
        return {"v": np.array([1.0])}


class _Second:
    def __init__(self, point):
        self.x = point.x[1:]
        self.matvec = lambda v: point.matvec(np.array([0.0, v[0]]))[1:]


def fun(x):
    return float((x[0] + 1) ** 2 + x[1] ** 2)


class Projected(Step):
    """Gradient steps of length 1/2 on ``fun``, projected onto x_0 >= 0."""

    def default_maxiter(self, n):
        return 50

    def start(self, point):
        return {}

    def __call__(self, point, saddle):
        x = np.maximum(point.x - 0.5 * point.g, [0.0, -INF])
        return Trial(x, fun(x), {})


def test_a_set_written_against_the_contract_decides_the_test_columns_fields_and_message():
    """min (x0 + 1)^2 + x1^2 over x0 >= 0: the minimum (0, 0) is on the bound with g = (2, 0),
    where only the set's own measure is zero; one projected step of 1/2 reaches it."""
    objective = Objective(fun, np.array([3.0, 4.0]), lambda x: np.array([2 * (x[0] + 1), 2 * x[1]]),
                          hessp=lambda x, p: 2 * p)
    result = run(objective, Projected(), RunOptions(), feasible=HalfLine(), probe=krylov_curvature)
    assert result.success and result.nit == 1
    np.testing.assert_array_equal(result.x, [0.0, 0.0])
    np.testing.assert_array_equal(result.jac, [2.0, 0.0])
    assert result.history.columns[:4] == ("nit", "f", "gnorm", "violation")
    np.testing.assert_array_equal(result.history["gnorm"], [8.0, 0.0])
    np.testing.assert_array_equal(result.v, [1.0])
    assert result.message.startswith("Optimization terminated successfully: the KKT test passed (||kkt||_inf = 0.0e+00")


def test_the_probe_looks_in_the_sets_curvature_space_and_the_saddle_is_lifted_from_it():
    """f = x0^2 - x1^2 at the origin: a first-order point of every set; in the half-line's space
    (the second variable) the curvature is -2, and the direction handed to the step is (0, +-1)."""
    seen = []

    class Record(Step):
        def default_maxiter(self, n):
            return 1

        def start(self, point):
            return {}

        def __call__(self, point, saddle):
            seen.append(saddle)
            return Trial(None, point.f, {})
    objective = Objective(lambda x: float(x[0] ** 2 - x[1] ** 2), np.zeros(2),
                          lambda x: np.array([2 * x[0], -2 * x[1]]), hessp=lambda x, p: np.array([2 * p[0], -2 * p[1]]))
    result = run(objective, Record(), RunOptions(), feasible=HalfLine(), probe=krylov_curvature)
    assert result.status == Status.MAXITER
    (saddle,) = seen
    assert saddle.direction[0] == 0.0 and abs(saddle.direction[1]) == 1.0
    assert saddle.curvature == pytest.approx(-2.0, rel=1e-12)


def test_a_step_owns_its_convergence_test_when_it_overrides_it():
    """The loop asks the step: a step that declares success once f < 1 ends the run there, though
    the gradient test has not passed; the default (the loop's test) goes on to the minimum."""
    class Halve(Step):
        def default_maxiter(self, n):
            return 100

        def start(self, point):
            return {}

        def __call__(self, point, saddle):
            return Trial(point.x / 2, point.f / 4, {})

    class HalveUntilSmall(Halve):
        def test(self, point, loop_test):
            return (Status.SUCCESS, None) if point.f < 1.0 else (None, None)
    own = run(Objective(lambda x: float(x @ x), np.array([4.0]), lambda x: 2 * x), HalveUntilSmall())
    assert own.success and own.nit == 3 and own.fun == 0.25
    default = run(Objective(lambda x: float(x @ x), np.array([4.0]), lambda x: 2 * x), Halve())
    assert default.success and default.nit > 20


@pytest.mark.parametrize("method", ["minimize_trust_ncg", "minimize_newton_cg", "minimize_gd"])
def test_the_placement_note_ends_the_message_of_a_run_whose_x0_was_clipped(method):
    result = getattr(optimizers, method)(rosen, np.array([3.0, 3.0]), rosen_der, hessp=rosen_hess_prod,
                                         bounds=([-INF, -INF], [2.0, INF]), maxiter=3)
    assert result.history["x"][0][0] == 2.0
    assert result.message.endswith(" Note: x0 lay outside the bounds in 1 of 2 entries (the first at flat "
                                   "index 0) and was clipped into the box.")


def test_only_the_contracts_two_implementations_exist_and_both_fulfil_it():
    assert {cls.__name__ for cls in FeasibleSet.__subclasses__()} >= {"Unconstrained", "Box"}
    assert isinstance(UNCONSTRAINED, Unconstrained)
    with pytest.raises(TypeError, match="abstract"):
        FeasibleSet()
