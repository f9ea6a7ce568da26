"""Small synthetic data sets for trying models (made here, nothing is downloaded)."""
from __future__ import annotations

import numpy as np


def spiral(n: int = 200, turns: float = 2.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The two-class spiral: two interleaved arms, class 1 rotated by pi from class 0.

    n points (n // 2 per class) at radii 2 t and angles 2 pi turns t + class pi, t uniform in
    [0.05, 1]. Returns the points (n, 2) and the integer labels (n,). Not linearly separable: a
    small test for a network and its optimizer.

    Raises
    ------
    ValueError
        For an odd n or n < 2.

    Examples
    --------
    >>> from hessopt.nn import datasets
    >>> points, labels = datasets.spiral(6)
    >>> points.shape, labels
    ((6, 2), array([0, 0, 0, 1, 1, 1]))
    """
    if n < 2 or n % 2:
        raise ValueError(f"spiral needs an even number of points >= 2, got {n}")
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.05, 1.0, (2, n // 2))
    angle = 2 * np.pi * turns * t + np.pi * np.arange(2)[:, None]
    points = 2 * t[..., None] * np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    return points.reshape(n, 2), np.repeat([0, 1], n // 2)
