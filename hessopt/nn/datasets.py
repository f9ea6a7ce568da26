"""Small data sets for trying models (made here or bundled with scikit-learn; nothing is downloaded)."""
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


def digits(n: int | None = None, test: int = 500, shift: int = 1, noise: float = 0.05,
           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 handwritten digits (8 x 8 images, pixels scaled to [0, 1]), split into
    training and held-out images, the training set augmented to ``n`` rows.

    ``test`` images, drawn at random, are held out as they are. Without ``n`` the training set is
    the other images; with ``n`` it is n rows, each a random training image moved by up to
    ``shift`` pixels along each axis (the vacated border is 0) with Gaussian pixel ``noise``,
    clipped to [0, 1]: a set larger than one batch, whose test images no training row comes from.
    scikit-learn (the ``notebooks`` extra) holds the images; it is imported here only.

    Returns
    -------
    x_train (n or 1,797 - test, 64), y_train, x_test (test, 64), y_test
        Images as rows of 64 floats, labels as integers 0-9.

    Raises
    ------
    ValueError
        For ``test`` outside [0, 1,797), a negative ``shift`` or ``noise``, or ``n`` < 1.
    ImportError
        Without scikit-learn.

    Examples
    --------
    >>> from hessopt.nn import datasets
    >>> x, y, x_test, y_test = datasets.digits(n=10_000, seed=0)
    >>> x.shape, x_test.shape, float(x.min()), float(x.max()), y[:5]
    ((10000, 64), (500, 64), 0.0, 1.0, array([2, 0, 3, 9, 2]))
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError("datasets.digits needs scikit-learn (pip install 'hessopt[notebooks]')") from None
    bundled = load_digits()
    images, labels = bundled.images / 16.0, bundled.target
    if not 0 <= test < len(labels):
        raise ValueError(f"test must lie in [0, {len(labels)}), got {test}")
    if shift < 0 or not noise >= 0:
        raise ValueError(f"shift and noise must be non-negative, got {shift} and {noise}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(labels))
    held, kept = order[:test], order[test:]
    x_test, y_test = images[held].reshape(test, 64), labels[held]
    if n is None:
        return images[kept].reshape(-1, 64), labels[kept], x_test, y_test
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    rows = kept[rng.integers(0, len(kept), n)]
    moves = rng.integers(-shift, shift + 1, (n, 2))
    padded = np.pad(images[rows], ((0, 0), (shift, shift), (shift, shift)))
    window = np.arange(8)
    r = (shift + window[None, :] - moves[:, :1])[:, :, None]   # row index into the padded image
    c = (shift + window[None, :] - moves[:, 1:])[:, None, :]
    moved = padded[np.arange(n)[:, None, None], r, c]
    x = np.clip(moved + noise * rng.standard_normal(moved.shape), 0.0, 1.0)
    return x.reshape(n, 64), labels[rows], x_test, y_test
