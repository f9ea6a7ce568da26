"""x0's float32 at minimize's and least_squares' interface (hessopt._precision), and hessopt.nn
layers that keep float32 inputs' precision. References: the same runs from a float64 x0 (the
computation is float64 in both, so the float32 results are the float64 ones rounded, exactly)."""
from __future__ import annotations

import numpy as np

import hessopt
from hessopt import nn


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def test_a_float32_start_gets_float32_results_and_a_word_about_it():
    start = np.array([-1.2, 1.0], dtype=np.float32)
    ours, reference = hessopt.minimize(rosenbrock, start), hessopt.minimize(rosenbrock, start.astype(np.float64))
    assert ours.x.dtype == np.float32 and ours.jac.dtype == np.float32
    np.testing.assert_array_equal(ours.x, reference.x.astype(np.float32))
    assert "x0 is float32: the run computed in float64" in ours.message
    assert "float32" not in reference.message and reference.x.dtype == np.float64


def test_pytree_leaves_keep_their_own_dtypes():
    start = {"a": np.float32(-1.2), "b": np.array([1.0])}
    result = hessopt.minimize(lambda p: rosenbrock([p["a"], p["b"][0]]), start)
    assert result.x["a"].dtype == np.float32 and result.x["b"].dtype == np.float64
    np.testing.assert_allclose(result.x["a"], 1.0, rtol=1e-6)


def test_least_squares_keeps_float32():
    fit = hessopt.least_squares(lambda x: np.array([1.0, 10.0]) * (x - 1), np.zeros(2, dtype=np.float32))
    assert fit.x.dtype == np.float32 and fit.grad.dtype == np.float32 and "x0 is float32" in fit.message
    np.testing.assert_array_equal(fit.x, np.ones(2, dtype=np.float32))


def test_layers_built_from_float32_inputs_are_float32_end_to_end():
    X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = np.sin(X[:, :1])
    model = nn.Sequential([nn.Dense(4, "tanh", seed=0), nn.BatchNorm(), nn.Dense(1, seed=1)])
    assert model(X).dtype == np.float32
    assert {v.dtype for v in model.variables} == {np.dtype(np.float32)}
    hessopt.minimize(lambda: np.mean((model(X) - y) ** 2), model.trainable_variables, method="trust-ncg",
                     options={"maxiter": 5})
    assert {v.dtype for v in model.variables} == {np.dtype(np.float32)}
    assert nn.Dense(2, seed=0)(np.ones((2, 3), dtype=int)).dtype == np.float64   # integers become float64
