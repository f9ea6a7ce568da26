"""hessopt.minimize_stochastic: mini-batch training with exact derivatives from autodiff, for
arrays, pytrees and a model's Variables; replayed runs equal eager ones bit for bit; batches with
integer labels run eagerly; the curvature subsample; bad input."""
import re

import numpy as np
import pytest

import hessopt
from hessopt import nn
from hessopt.nn import losses

RNG = np.random.default_rng(1)
A = RNG.standard_normal((600, 3))
W_TRUE = np.array([0.5, -1.0, 2.0])
B = A @ W_TRUE + 0.05 * RNG.standard_normal(600)
BATCHES = [(A[k:k + 100], B[k:k + 100]) for k in range(0, 600, 100)]
W_STAR = np.linalg.lstsq(np.c_[A, np.ones(600)], B, rcond=None)[0]   # weights and bias


def squared_error(params, batch):
    a, b = batch
    return np.mean((a @ params["w"] + params["b"] - b) ** 2)


@pytest.mark.parametrize("method", ["hessian-free", "subsampled-newton-cg"])
def test_a_pytree_reaches_the_full_batch_minimum(method):
    result = hessopt.minimize_stochastic(squared_error, {"w": np.zeros(3), "b": 0.0}, BATCHES, method,
                                         epochs=3, options={"curvature_fraction": 0.3})
    assert set(result.x) == {"w", "b"} and result.nit == 18 and result.epochs == 3
    np.testing.assert_allclose(np.r_[result.x["w"], result.x["b"]], W_STAR, atol=0.02)
    assert "untraced_reason" not in result


def classification_batches(targets):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((400, 4))
    labels = (x[:, 0] * x[:, 1] > 0).astype(int) + (x[:, 2] > 1)
    y = losses.one_hot(labels, 3) if targets == "one-hot" else labels
    return [(x[k:k + 100], y[k:k + 100]) for k in range(0, 400, 100)]


def model_run(method, targets="one-hot", trace=True, **options):
    model = nn.Sequential([nn.Dense(8, "tanh", seed=0), nn.Dense(3, seed=1)])
    model(np.zeros((1, 4)))
    cross_entropy = losses.categorical_cross_entropy if targets == "one-hot" else \
        (lambda y, z: losses.softmax_cross_entropy(y, z))
    loss = lambda batch: cross_entropy(batch[1], model(batch[0]))  # noqa: E731
    if method == "hessian-free":
        options["ggn"] = (lambda batch: model(batch[0]), lambda z, batch: cross_entropy(batch[1], z))
    result = hessopt.minimize_stochastic(loss, model.trainable_variables, classification_batches(targets),
                                         method, epochs=2, options={"trace": trace, **options})
    return result, model


@pytest.mark.parametrize("method", ["hessian-free", "subsampled-newton-cg", "adam", "sgd"])
def test_replayed_runs_are_the_eager_ones_bit_for_bit(method):
    traced, model = model_run(method)
    eager, _ = model_run(method, trace=False)
    np.testing.assert_array_equal(traced.history["f"], eager.history["f"])
    np.testing.assert_array_equal(traced.x[0], eager.x[0])
    assert traced.nit == 8 and traced.history["f"][-1] < traced.history["f"][0]
    np.testing.assert_array_equal(model.trainable_variables[0].numpy(), traced.x[0])   # Variables hold x
    assert "untraced_reason" not in traced


def test_integer_labels_run_eagerly_and_say_why():
    result, _ = model_run("subsampled-newton-cg", targets="labels")
    eager, _ = model_run("subsampled-newton-cg", targets="labels", trace=False)
    assert "integer labels" in result.untraced_reason and "one_hot" in result.untraced_reason
    np.testing.assert_array_equal(result.history["f"], eager.history["f"])


def test_the_curvature_is_taken_on_a_subsample_of_each_batch():
    sizes = []

    def recording(params, batch):
        sizes.append(len(batch[1]))
        return squared_error(params, batch)

    for options, k in (({"curvature_size": 7}, 7), ({"curvature_fraction": 0.25}, 25), ({}, 10)):
        sizes.clear()
        hessopt.minimize_stochastic(recording, {"w": np.zeros(3), "b": 0.0}, BATCHES[:2],
                                    "subsampled-newton-cg", options={"trace": False, **options})
        assert set(sizes) == {100, k}


def test_evaluate_and_callback_see_the_parameters_in_their_form():
    seen, steps = [], []
    result = hessopt.minimize_stochastic(
        squared_error, {"w": np.zeros(3), "b": 0.0}, lambda epoch: BATCHES[epoch::2], "adam", epochs=2,
        evaluate=lambda params: seen.append(params["b"]) or {"error": squared_error(params, (A, B))},
        callback=lambda params: steps.append(params["w"].copy()), options={"learning_rate": 0.1})
    assert len(seen) == 3 and result.nit == 6 and len(steps) >= 6   # (and x0, where the loop shows it)
    np.testing.assert_array_equal(steps[-1], result.x["w"])
    np.testing.assert_array_equal(result.evaluations["epoch"], [0, 1, 2])
    assert result.evaluations["error"][-1] < result.evaluations["error"][0]
    model_result, model = model_run("adam")
    assert model_result.history["f"][-1] < model_result.history["f"][0]


def test_bad_input_is_refused_by_name():
    start = {"w": np.zeros(3), "b": 0.0}
    with pytest.raises(ValueError, match="unknown method 'newton'"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, "newton")
    with pytest.raises(ValueError, match="curvature options"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, "adam", options={"curvature_size": 5})
    with pytest.raises(ValueError, match="curvature_fraction"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, options={"curvature_fraction": 0.0})
    with pytest.raises(ValueError, match="curvature_size"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, options={"curvature_size": 2.5})
    with pytest.raises(TypeError, match="ggn"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, options={"ggn": squared_error})
    with pytest.raises(ValueError, match="first .example. axis"):
        hessopt.minimize_stochastic(squared_error, start, [(A[:10], B[:9])])
    with pytest.raises(TypeError, match="fun must be callable"):
        hessopt.minimize_stochastic(None, start, BATCHES)
    with pytest.raises(TypeError, match="evaluate must be callable"):
        hessopt.minimize_stochastic(squared_error, start, BATCHES, evaluate=3)
    with pytest.raises(ValueError, match="one-pass iterator"):
        hessopt.minimize_stochastic(squared_error, start, iter(BATCHES), epochs=2)


@pytest.mark.parametrize("seed, error", [(1.5, ValueError), (-1, ValueError), (np.nan, ValueError),
                                         ("abc", TypeError), (True, TypeError), ([1, 2], TypeError)])
def test_a_seed_that_is_not_an_integer_is_named(seed, error):
    """numpy's words were 'SeedSequence expects int or sequence of ints for entropy not 1.5' (or
    'expected non-negative integer'), naming no option."""
    with pytest.raises(error, match=r"^options\['seed'\] must be a non-negative integer, a numpy.random.Generator "
                                    rf"or None \(fresh entropy\); got {re.escape(repr(seed))}$"):
        hessopt.minimize_stochastic(squared_error, {"w": np.zeros(3), "b": 0.0}, BATCHES, options={"seed": seed})


def test_a_seed_draws_the_same_subsamples_as_an_integer_a_whole_float_or_its_generator():
    runs = [hessopt.minimize_stochastic(squared_error, {"w": np.zeros(3), "b": 0.0}, BATCHES[:3],
                                        options={"seed": seed, "curvature_size": 5})
            for seed in (3, 3.0, np.random.default_rng(3), 4)]
    for same in runs[1:3]:
        np.testing.assert_array_equal(same.x["w"], runs[0].x["w"])
    assert not np.array_equal(runs[3].x["w"], runs[0].x["w"])   # the seed is used: another draws otherwise


def test_a_batches_callable_that_returns_no_iterable_is_named():
    with pytest.raises(TypeError, match=r"^batches\(0\) returned NoneType None, not an iterable of batches"):
        hessopt.minimize_stochastic(squared_error, {"w": np.zeros(3), "b": 0.0}, lambda epoch: None)
    with pytest.raises(TypeError, match=r"^batches\(1\) returned int 7, not an iterable of batches"):
        hessopt.minimize_stochastic(squared_error, {"w": np.zeros(3), "b": 0.0},
                                    lambda epoch: BATCHES if epoch == 0 else 7, "adam", epochs=2)


def test_digits_are_held_out_and_augmented_by_shifts():
    x, y, x_test, y_test = nn.datasets.digits(seed=3)
    assert x.shape == (1297, 64) and x_test.shape == (500, 64) and set(np.unique(y)) == set(range(10))
    plain, labels, _, _ = nn.datasets.digits(n=200, shift=0, noise=0.0, seed=3)
    originals = {row.tobytes(): label for row, label in zip(x, y)}
    assert all(originals[row.tobytes()] == label for row, label in zip(plain, labels))
    assert not {row.tobytes() for row in x_test} & set(originals)
    moved, _, _, _ = nn.datasets.digits(n=200, shift=1, noise=0.0, seed=3)
    images, shifted = plain.reshape(-1, 8, 8), moved.reshape(-1, 8, 8)
    for image, candidate in zip(images, shifted):   # the same draw of rows, moved by at most one pixel
        padded = np.pad(image, 1)
        assert any(np.array_equal(padded[1 - dy:9 - dy, 1 - dx:9 - dx], candidate)
                   for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    noisy, _, _, _ = nn.datasets.digits(n=50, noise=0.1, seed=3)
    assert noisy.min() == 0.0 and noisy.max() == 1.0
    for bad in ({"test": 1797}, {"shift": -1}, {"noise": -0.1}, {"n": 0}):
        with pytest.raises(ValueError):
            nn.datasets.digits(**bad)
