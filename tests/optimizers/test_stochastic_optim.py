"""Mini-batch methods (optimizers.stochastic): the full-batch minimum of a least-squares problem
reached over batches, the damping carried from batch to batch, every comparison on one batch,
batches re-iterated per epoch, evaluations, statuses and bad input."""
import numpy as np
import pytest

from optimizers.newton import MartensDamping
from optimizers.objective import Status
from optimizers.stochastic import (
    BatchObjective,
    Epochs,
    minimize_sgd,
    minimize_stochastic_adam,
    minimize_stochastic_hessian_free,
    minimize_subsampled_newton_cg,
)

RNG = np.random.default_rng(0)
A = RNG.standard_normal((1000, 4)) * np.array([1.0, 3.0, 0.3, 1.0])   # condition number ~100
X_TRUE = np.array([1.0, -2.0, 0.5, 3.0])
B = A @ X_TRUE + 0.1 * RNG.standard_normal(1000)
X_STAR = np.linalg.lstsq(A, B, rcond=None)[0]          # the full-batch minimum
BATCHES = [(A[k::10], B[k::10]) for k in range(10)]    # ten batches of 100 rows


def loss(x, batch):
    a, b = batch
    return 0.5 * np.mean((a @ x - b) ** 2)


def gradient(x, batch):
    a, b = batch
    return a.T @ (a @ x - b) / len(b)


def hessp(x, p, batch):
    a, b = batch
    return a.T @ (a @ p) / len(b)


def full_loss(x):
    return loss(x, (A, B))


def first_rows(batch, k=40):
    return batch[0][:k], batch[1][:k]


SECOND_ORDER = [minimize_stochastic_hessian_free, minimize_subsampled_newton_cg]


@pytest.mark.parametrize("method", SECOND_ORDER, ids=["hessian-free", "subsampled-newton-cg"])
def test_second_order_steps_reach_the_full_batch_minimum_over_batches(method):
    result = method(loss, np.zeros(4), gradient, hessp=hessp, batches=BATCHES, epochs=4,
                    curvature=first_rows)
    assert result.status == Status.MAXITER and not result.success and result.nit == 40
    assert result.epochs == 4
    # each batch pulls toward its own minimum: the iterate stays within the batches' spread of x*
    spread = max(np.linalg.norm(np.linalg.lstsq(a, b, rcond=None)[0] - X_STAR) for a, b in BATCHES)
    assert np.linalg.norm(result.x - X_STAR) <= spread
    assert full_loss(result.x) - full_loss(X_STAR) <= 0.05 * full_loss(X_STAR)
    epoch_ends = result.history["f"][10::10]   # each batch's loss at the start of epochs 2, 3, 4
    assert full_loss(np.zeros(4)) > 100 * epoch_ends.max()


@pytest.mark.parametrize("method, options", [(minimize_stochastic_adam, {"learning_rate": 0.05}),
                                             (minimize_sgd, {"learning_rate": 0.02, "momentum": 0.5})],
                         ids=["adam", "sgd"])
def test_first_order_baselines_approach_the_minimum(method, options):
    result = method(loss, np.zeros(4), gradient, batches=BATCHES, epochs=100, **options)
    assert result.nit == 1000
    assert full_loss(result.x) - full_loss(X_STAR) <= 0.2 * full_loss(X_STAR)


def test_the_damping_is_carried_from_batch_to_batch():
    """lambda at each step is the Levenberg-Marquardt update of the previous step's lambda by that
    step's reduction ratio, whichever batch either came from (Martens 2010, §4.1)."""
    result = minimize_stochastic_hessian_free(loss, np.zeros(4), gradient, hessp=hessp, batches=BATCHES,
                                              epochs=3, damping=5.0, curvature=lambda batch: first_rows(batch, 8))
    lam, rho, epoch = result.history["lambda"], result.history["rho"], result.history["epoch"]
    assert lam[1] == 5.0
    expected = []
    for k in range(1, len(lam) - 1):
        damping = MartensDamping(lam[k])
        damping.update(rho[k])
        expected.append(damping.value)
    np.testing.assert_allclose(lam[2:], expected, rtol=1e-15)
    assert len(set(np.round(lam[1:], 12))) > 3 and set(epoch) == {0, 1, 2}   # it moved, over epochs


def test_every_value_a_step_compares_is_of_its_own_batch():
    """The batches' losses differ by offsets far larger than anything a step can gain: a line
    search that compared one batch's value with another's (a stale f) would fail at once."""
    offset_batches = [(a, b, 1000.0 * k) for k, (a, b) in enumerate(BATCHES[:5])]
    values = []

    def offset_loss(x, batch):
        values.append(batch[2])
        return loss(x, batch[:2]) + batch[2]

    result = minimize_subsampled_newton_cg(offset_loss, np.zeros(4), lambda x, batch: gradient(x, batch[:2]),
                                           hessp=lambda x, p, batch: hessp(x, p, batch[:2]),
                                           batches=offset_batches, epochs=2)
    assert result.nit == 10 and np.all(result.history["step"][1:] > 0)   # every step moved
    history_offsets = np.floor(result.history["f"] / 1000.0)
    np.testing.assert_array_equal(history_offsets, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 4])
    assert full_loss(result.x) < 1.2 * full_loss(X_STAR)


def test_a_batch_without_a_lower_value_leaves_x_and_the_run_goes_on():
    """At a batch's own minimum no step lowers its f: x stays, the run takes the next batch."""
    batches = [(A[:4], A[:4] @ X_TRUE)] + BATCHES[:2]   # x0 = X_TRUE is the first batch's minimum
    result = minimize_stochastic_hessian_free(loss, X_TRUE.copy(), gradient, hessp=hessp, batches=batches)
    assert result.nit == 3 and result.status == Status.MAXITER
    assert result.history["step"][1] == 0.0 and result.history["step"][2] > 0


def test_epochs_reiterate_sequences_call_factories_and_refuse_spent_generators():
    assert [e for e, _ in Epochs(BATCHES[:3], epochs=2)] == [0, 0, 0, 1, 1, 1]
    asked = []
    pairs = list(Epochs(lambda epoch: asked.append(epoch) or [epoch, -epoch], epochs=3))
    assert asked == [0, 1, 2] and pairs == [(0, 0), (0, 0), (1, 1), (1, -1), (2, 2), (2, -2)]
    assert [b for _, b in Epochs(k for k in range(3))] == [0, 1, 2]   # one pass: one epoch
    with pytest.raises(ValueError, match="one-pass iterator"):
        Epochs((k for k in range(3)), epochs=2)
    with pytest.raises(ValueError, match="epoch 1 has no batches"):
        list(Epochs(lambda epoch: [1] if epoch == 0 else [], epochs=2))
    with pytest.raises(TypeError, match="iterable of batches or a callable"):
        Epochs(3.0)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="epochs"):
            Epochs([1], epochs=bad)


def test_the_objective_is_of_the_current_batch_and_forgets_the_last():
    objective = BatchObjective(loss, np.zeros(4), gradient, Epochs(BATCHES[:2]), hessp=hessp,
                               curvature=first_rows)
    x = np.ones(4)
    f0, g0 = objective.fun(x), objective.grad(x).copy()
    assert f0 == loss(x, BATCHES[0]) and objective.curvature_batch[0].shape == (40, 4)
    np.testing.assert_array_equal(g0, gradient(x, BATCHES[0]))
    assert objective.advance() and objective.fun(x) == loss(x, BATCHES[1]) != f0
    np.testing.assert_array_equal(objective.grad(x), gradient(x, BATCHES[1]))
    assert not objective.advance() and objective.counts() == {"nfev": 3, "njev": 2, "nhev": 0}   # f(x0) too


def test_evaluations_at_x0_and_each_epoch_and_stopping_by_them():
    seen = []

    def evaluate(x):
        seen.append(x.copy())
        return {"loss": full_loss(x)}

    result = minimize_subsampled_newton_cg(loss, np.zeros(4), gradient, hessp=hessp, batches=BATCHES,
                                           epochs=3, evaluate=evaluate)
    evaluations = result.evaluations
    np.testing.assert_array_equal(evaluations["epoch"], [0, 1, 2, 3])
    np.testing.assert_array_equal(evaluations["nit"], [0, 10, 20, 30])
    assert np.all(np.diff(evaluations["time"]) >= 0) and evaluations["loss"][0] == full_loss(np.zeros(4))
    np.testing.assert_array_equal(seen[-1], result.history["x"][-1] if "x" in result.history else result.x)

    def stop_below(x):
        if full_loss(x) < 1.05 * full_loss(X_STAR):
            raise StopIteration
        return {}

    stopped = minimize_subsampled_newton_cg(loss, np.zeros(4), gradient, hessp=hessp, batches=BATCHES,
                                            epochs=10, evaluate=stop_below)
    assert stopped.status == Status.CALLBACK_STOP and stopped.nit % 10 == 0 and stopped.nit < 100
    with pytest.raises(TypeError, match="dict"):
        minimize_stochastic_adam(loss, np.zeros(4), gradient, batches=BATCHES, evaluate=lambda x: 1.0)


def test_callback_stop_nan_and_bad_input():
    def stop_at_three(intermediate_result):
        if intermediate_result.nit == 3:
            raise StopIteration

    result = minimize_stochastic_adam(loss, np.zeros(4), gradient, batches=BATCHES, callback=stop_at_three)
    assert result.status == Status.CALLBACK_STOP and result.nit == 3

    def blows_up(x, batch):
        return np.inf if x[0] > 0 else loss(x, batch)

    result = minimize_sgd(blows_up, np.zeros(4), gradient, batches=BATCHES, learning_rate=0.1)
    assert result.status == Status.NONFINITE and result.nit == 1
    with pytest.raises(ValueError, match="curvature products"):
        minimize_stochastic_hessian_free(loss, np.zeros(4), gradient, batches=BATCHES)
    with pytest.raises(ValueError, match="not a dense hess"):
        minimize_subsampled_newton_cg(loss, np.zeros(4), gradient, hess=np.eye(4), hessp=hessp,
                                      batches=BATCHES)
    with pytest.raises(TypeError, match="curvature must be callable"):
        minimize_subsampled_newton_cg(loss, np.zeros(4), gradient, hessp=hessp, batches=BATCHES, curvature=3)
    with pytest.raises(ValueError, match="no batches"):
        minimize_sgd(loss, np.zeros(4), gradient, batches=[])


def test_a_zero_batch_gradient_does_not_end_the_run_and_the_last_iterate_is_returned():
    """At x0 the first batch's gradient is 0: a gradient test would stop there. The run takes all
    its steps and returns the last iterate, even where an earlier one had a lower batch value."""
    batches = [(A[:4], A[:4] @ X_TRUE)] + BATCHES[:3]      # x0 = X_TRUE: the first batch's minimum
    result = minimize_sgd(loss, X_TRUE.copy(), gradient, batches=batches, learning_rate=0.5, keep_iterates=True)
    assert result.nit == 4 and result.status == Status.MAXITER and result.history["gnorm"][0] == 0.0
    np.testing.assert_array_equal(result.x, result.history["x"][-1])
    assert result.fun == result.history["f"][-1] > result.history["f"][0]
    assert result.message.endswith("test: none, the gradient of one batch is not the gradient).")
