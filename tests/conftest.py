"""Shared test fixtures, and tolerances from rounding-error analysis (the README's testing section)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

EPS = np.finfo(np.float64).eps


class CallCounter:
    """Wraps functions so that each call adds one to ``calls[key]``."""

    def __init__(self):
        self.calls = Counter()

    def __call__(self, key: str, function: Callable) -> Callable:
        def counted(*args):
            self.calls[key] += 1
            return function(*args)
        return counted


@pytest.fixture
def counted() -> CallCounter:
    return CallCounter()


class Rounding:
    """Tolerances for comparing two computations that round differently (two algorithms, or one under
    two BLAS kernels, blockings or thread counts), from the bounds of Higham, *Accuracy and Stability
    of Numerical Algorithms* (2nd ed., SIAM 2002). Each bound holds for any order of the sums, so it
    holds under every BLAS; none depends on what one machine printed.
    """

    eps = EPS

    @staticmethod
    def gamma(n: int) -> float:
        """gamma_n = n u / (1 - n u), u = eps / 2: a sum or dot product of n terms computed in any
        order is within gamma_n sum |terms| of the exact one (Higham §3.1)."""
        nu = n * EPS / 2
        assert nu < 0.5, "n too large for a rounding bound"
        return nu / (1 - nu)

    def assert_close_to_product(self, actual, desired, a, b) -> None:
        """``actual`` and ``desired`` both compute ``a @ b`` (by any order or blocking of the sums):
        each entry within 2 gamma_k (|a| @ |b|), k the inner dimension (Higham Thm 3.5). An entry
        near zero carries the rounding of its terms, not a relative error of itself."""
        a, b = np.asarray(a), np.asarray(b)
        bound = 2 * self.gamma(a.shape[-1]) * (np.abs(a) @ np.abs(b))
        excess = np.abs(np.asarray(actual) - np.asarray(desired)) / np.where(bound > 0, bound, np.inf)
        assert np.all((excess <= 1) | (np.asarray(actual) == np.asarray(desired))), \
            f"{np.count_nonzero(excess > 1)} entries beyond 2 gamma_k (|a| @ |b|), up to {np.max(excess):.3g} times"

    def assert_close_to_solve(self, actual, desired, matrix) -> None:
        """``actual`` and ``desired`` solve one system with ``matrix`` by two backward-stable methods
        (substitution, Cholesky, LU with a small growth factor: each exact for a matrix within
        gamma_3n of ``matrix``, normwise): ||actual - desired||_inf <= 2 kappa gamma_3n / (1 - kappa
        gamma_3n) ||desired||_inf, kappa the condition number in the inf-norm (Higham Thm 7.2)."""
        matrix = np.asarray(matrix)
        kappa_gamma = np.linalg.cond(matrix, np.inf) * self.gamma(3 * matrix.shape[0])
        assert kappa_gamma < 0.5, "too ill-conditioned for a forward error bound"
        self.assert_close_normwise(actual, desired, 2 * kappa_gamma / (1 - kappa_gamma))

    @staticmethod
    def assert_close_normwise(actual, desired, rtol: float, atol: float = 0.0) -> None:
        """max |actual - desired| <= atol + rtol max |desired|: for results whose error an algorithm
        bounds in norm, where an entry near zero carries the rounding of the largest ones."""
        actual, desired = np.asarray(actual), np.asarray(desired)
        assert actual.shape == desired.shape, (actual.shape, desired.shape)
        error, scale = np.max(np.abs(actual - desired), initial=0.0), np.max(np.abs(desired), initial=0.0)
        assert error <= atol + rtol * scale, \
            f"max |difference| {error:.3g} > {atol:.3g} + {rtol:.3g} x max |desired| {scale:.3g}"


@pytest.fixture(scope="session")
def rounding() -> Rounding:
    """Rounding-error bounds and the comparisons built on them (session-scoped, so property tests
    can take it)."""
    return Rounding()
