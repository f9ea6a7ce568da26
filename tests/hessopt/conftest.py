"""Central-difference checks for losses over Variables (the models' tests share them)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import autodiff as ad
from autodiff.check import central_differences


def flat_values(variables) -> np.ndarray:
    return np.concatenate([v.numpy().ravel() for v in variables])


def assign_flat(variables, flat) -> None:
    start = 0
    for v in variables:
        v.assign(np.reshape(flat[start:start + v.numpy().size], v.shape))
        start += v.numpy().size


def tape_gradient(loss: Callable, variables) -> np.ndarray:
    with ad.GradientTape() as tape:
        value = loss()
    return np.concatenate([g.numpy().ravel() for g in tape.gradient(value, variables)])


class VariableDifferences:
    """Derivatives of a zero-argument loss over Variables by central differences, and checks."""

    @staticmethod
    def at(variables, flat, what: Callable):
        """``what()`` with the Variables set to ``flat``; they are restored afterwards."""
        x0 = flat_values(variables)
        assign_flat(variables, flat)
        try:
            return what()
        finally:
            assign_flat(variables, x0)

    def gradient(self, loss: Callable, variables, eps: float = 1e-6) -> np.ndarray:
        return central_differences(lambda z: self.at(variables, z, lambda: loss().numpy()),
                                   flat_values(variables), eps)

    def check(self, loss: Callable, variables, rtol: float = 1e-5, atol: float = 1e-7) -> np.ndarray:
        """Tape gradient and HessianOperator Hessian against differences; returns the Hessian."""
        x0 = flat_values(variables)
        h_fd = central_differences(lambda z: self.at(variables, z, lambda: tape_gradient(loss, variables)),
                                   x0)
        np.testing.assert_allclose(tape_gradient(loss, variables), self.gradient(loss, variables),
                                   rtol=rtol, atol=atol)
        hessian = ad.hessian_operator(loss, variables).to_dense()
        np.testing.assert_allclose(hessian, h_fd, rtol=rtol, atol=atol)
        return hessian


@pytest.fixture
def differences() -> VariableDifferences:
    return VariableDifferences()
