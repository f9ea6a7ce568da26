"""Ridge regression's weights w(lam) = (X^T X + lam I)^-1 X^T y and their derivatives in the strength,
in closed form: the reference of the implicit derivatives through a solver (tests/autodiff/test_implicit.py)
and through minimize's solution (tests/hessopt/test_solution_derivatives.py). A module the tests import
(pytest puts tests/ on sys.path, as the folder of its conftest.py)."""
from __future__ import annotations

import numpy as np


def ridge_derivative(X: np.ndarray, y: np.ndarray, lam: float, order: int) -> np.ndarray:
    """d^k w / d lam^k = (-1)^k k! M^-k w, M = X^T X + lam I (k = ``order``; 0: w itself)."""
    M = X.T @ X + lam * np.eye(X.shape[1])
    derivative = np.linalg.solve(M, X.T @ y)
    for k in range(1, order + 1):
        derivative = -k * np.linalg.solve(M, derivative)
    return derivative


def relative_error(computed, exact) -> float:
    """||computed - exact|| / ||exact|| (Frobenius for matrices)."""
    return float(np.linalg.norm(np.asarray(computed) - exact) / np.linalg.norm(exact))
