"""Shared test fixtures, and tolerances from rounding-error analysis (docs/development.md, Testing)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from optimizers.stopping import DEFAULT_GTOL

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

    def assert_close_to_product(self, actual, desired, a, b, roundings: int = 0) -> None:
        """``actual`` and ``desired`` both compute ``a @ b``, by any order or blocking of the sums and with
        up to ``roundings`` roundings in each term before it is summed (a chain rule's products, a
        Jacobian computed by the engine): each entry within 2 gamma_(k + roundings) (|a| @ |b|), k the
        inner dimension (Higham §3.5). An entry near zero carries the rounding of its terms, not a
        relative error of itself."""
        a, b = np.asarray(a), np.asarray(b)
        bound = 2 * self.gamma(a.shape[-1] + roundings) * (np.abs(a) @ np.abs(b))
        error = np.abs(np.asarray(actual) - np.asarray(desired))
        assert np.all(error <= bound), \
            f"{np.count_nonzero(error > bound)} entries beyond 2 gamma_k (|a| @ |b|), " \
            f"up to {np.max(error / np.where(bound > 0, bound, np.inf)):.3g} times"

    def assert_close_to_solve(self, actual, desired, matrix) -> None:
        """``actual`` and ``desired`` solve one system with ``matrix`` by two backward-stable methods
        (substitution, Cholesky, LU with a small growth factor; Higham Thms 8.5, 10.3, 9.4: each exact
        for a matrix within gamma_3n of ``matrix``, normwise): ||actual - desired||_inf <= 2 kappa
        gamma_3n / (1 - kappa gamma_3n) ||desired||_inf, kappa the condition number in the inf-norm
        (Higham Thm 7.2)."""
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


class Stopping:
    """How far from the minimizer a run that passed its gradient test can be (optimizers.stopping):
    the bound an assertion on an optimizer's answer takes, instead of a number the answer happened to
    meet on one machine (Newton's quadratic convergence often lands much closer, by an amount that
    rounding decides)."""

    @staticmethod
    def passing_gradient(x, f: float, gtol: float | None = None) -> np.ndarray:
        """The largest |g_i| (|pg_i| with bounds) the gradient test lets pass at x: ``gtol``, or the
        default relative test's 1e-8 max(1, |f|) / max(1, |x_i|)."""
        x = np.asarray(x, dtype=float)
        if gtol is not None:
            return np.full(x.shape, gtol)
        return DEFAULT_GTOL * max(1.0, abs(float(f))) / np.maximum(1.0, np.abs(x))

    def distance_bound(self, x, f: float, mu: float, *, bounded: bool = False, gtol: float | None = None) -> float:
        """The bound on ||x - x*||_2 for an f whose Hessian is >= mu I: mu ||x - x*|| <= ||g(x)|| without
        bounds; with bounds f(x) - f* <= pg^T (x - x*) (where a bound binds, g points out of the box)
        and f(x) - f* >= mu ||x - x*||^2 / 2 give twice that. Plus the rounding of x itself."""
        t = np.linalg.norm(self.passing_gradient(x, f, gtol))
        return (2 if bounded else 1) * t / mu + np.size(x) * EPS * max(1.0, float(np.linalg.norm(x)))

    def assert_near_minimizer(self, x, x_star, f: float, mu: float, **kwargs) -> None:
        """x is within ``distance_bound`` of the minimizer x_star (keywords: ``bounded``, ``gtol``)."""
        distance = float(np.linalg.norm(np.asarray(x) - np.asarray(x_star)))
        bound = self.distance_bound(x, f, mu, **kwargs)
        assert distance <= bound, f"||x - x*|| = {distance:.3g} > {bound:.3g}, what the gradient test promises"


@pytest.fixture(scope="session")
def stopping() -> Stopping:
    """Bounds from the gradient test on an optimizer's answer."""
    return Stopping()
