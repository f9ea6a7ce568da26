"""Losses over a batch, each returning a scalar (the mean over the batch), as Keras' losses with
their default ``"sum_over_batch_size"`` reduction.

Targets and labels carry no gradient; predictions and logits may be Tensors that tapes record.
Cross-entropies are computed from logits with the log-sum-exp shift, so they stay finite and exact
for logits in the thousands.
"""
from __future__ import annotations

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def _shape(x) -> tuple:
    return x.shape if isinstance(x, ad.Tensor) else np.shape(x)


def _constant_values(x, what: str) -> np.ndarray:
    """Targets as an ndarray (a Tensor's value, explicitly: targets are constants)."""
    values = x.numpy() if isinstance(x, ad.Tensor) else np.asarray(x)
    if values.dtype == object:
        raise TypeError(f"{what} must be numeric, got an object array")
    return values


def mean_squared_error(y_true, y_pred):
    """mean((y_true - y_pred)**2) over every element; the shapes must be equal.

    Unlike Keras, differing shapes are an error rather than a broadcast (a (n,) target against
    (n, 1) predictions would silently average an n-by-n table).

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> float(nn.losses.mean_squared_error(np.array([1.0, 2.0]), np.array([1.0, 4.0])))
    2.0
    """
    if _shape(y_true) != _shape(y_pred):
        raise ValueError(f"mean_squared_error: y_true has shape {_shape(y_true)} but y_pred has shape "
                         f"{_shape(y_pred)}; they must be equal (reshape one, e.g. y[:, None])")
    return anp.mean((_constant_values(y_true, "y_true") - y_pred) ** 2)


def softmax_cross_entropy(labels, logits):
    """mean over the batch of -log softmax(logits)[label], for integer class labels.

    ``logits`` has shape (..., classes) and ``labels`` the leading shape (...), each label in
    0 .. classes - 1 (as Keras' sparse categorical cross-entropy from logits).

    Raises
    ------
    ValueError
        For labels of the wrong shape, non-integer labels, or labels out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> logits = np.array([[0.0, 0.0], [0.0, np.log(3.0)]])    # probabilities (1/2, 1/2), (1/4, 3/4)
    >>> round(float(nn.losses.softmax_cross_entropy(np.array([0, 1]), logits)), 6)   # (log 2 + log 4/3) / 2
    0.490415
    """
    labels = _integer_labels(labels, _shape(logits))
    log_probabilities = anp.log_softmax(logits, axis=-1)
    picked = anp.take_along_axis(log_probabilities, labels[..., None], axis=-1)
    return -anp.mean(picked)


def categorical_cross_entropy(targets, logits):
    """mean over the batch of -sum(targets * log softmax(logits)), for target distributions over
    the classes (one-hot rows, or soft labels), as Keras' categorical cross-entropy from logits.

    ``targets`` has the shape of ``logits``. They may be Tensors: floating targets in a batch are
    inputs of a replayed ``autodiff.function`` program (one trace serves every batch), where
    integer labels, compared by value, would be traced again for each batch (``one_hot`` turns
    labels into targets). Array targets are checked: in [0, 1], each row summing to 1.

    Raises
    ------
    ValueError
        For targets of another shape, or array targets that are not distributions.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> logits = np.array([[0.0, 0.0], [0.0, np.log(3.0)]])
    >>> targets = nn.losses.one_hot(np.array([0, 1]), 2)
    >>> round(float(nn.losses.categorical_cross_entropy(targets, logits)), 6)   # as softmax_cross_entropy
    0.490415
    """
    if _shape(targets) != _shape(logits):
        raise ValueError(f"categorical_cross_entropy: targets of shape {_shape(targets)} for logits of "
                         f"shape {_shape(logits)}; they must be equal (one_hot(labels, classes) makes "
                         "targets from integer labels)")
    if not isinstance(targets, ad.Tensor):
        values = _constant_values(targets, "targets")
        if not (np.all((values >= 0) & (values <= 1)) and np.allclose(values.sum(axis=-1), 1.0)):
            raise ValueError("categorical_cross_entropy: targets must be distributions over the last "
                             "axis (entries in [0, 1], each row summing to 1)")
    return -anp.mean(anp.sum(targets * anp.log_softmax(logits, axis=-1), axis=-1))


def one_hot(labels, classes: int) -> np.ndarray:
    """Integer labels (any shape) as one-hot float rows: shape ``labels.shape + (classes,)``.

    Raises
    ------
    ValueError
        For non-integer labels or labels outside 0 .. classes - 1.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.losses.one_hot(np.array([2, 0]), 3)
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    values = _integer_labels(labels, np.shape(labels) + (int(classes),), "one_hot")
    return np.eye(int(classes))[values]


def _integer_labels(labels, logits_shape: tuple, who: str = "softmax_cross_entropy") -> np.ndarray:
    values = _constant_values(labels, "labels")
    if len(logits_shape) < 1 or values.shape != logits_shape[:-1]:
        raise ValueError(f"{who}: labels of shape {values.shape} for logits of shape "
                         f"{logits_shape}; labels need the shape of logits without its last (class) axis")
    if values.dtype.kind == "f" and np.all(values == np.round(values)):
        values = values.astype(np.int64)
    if values.dtype.kind not in "iub":
        raise ValueError(f"{who}: labels must be integer class indices, got dtype "
                         f"{values.dtype} with non-integer values")
    classes = logits_shape[-1]
    bad = (values < 0) | (values >= classes)
    if np.any(bad):
        raise ValueError(f"{who}: labels out of range: {np.unique(values[bad]).tolist()}"
                         f" (with {classes} classes, labels must lie in 0 .. {classes - 1})")
    return values.astype(np.intp)


def binary_cross_entropy(labels, logits):
    """mean of -[y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))], from logits z.

    Computed as softplus(z) - y z, exact and finite for any z. Labels lie in [0, 1] (soft labels
    are allowed) and have the shape of the logits.

    Raises
    ------
    ValueError
        For labels of another shape or outside [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> round(float(nn.losses.binary_cross_entropy(np.array([1.0, 0.0]), np.array([0.0, 0.0]))), 6)  # log 2
    0.693147
    """
    values = _constant_values(labels, "labels")
    if values.shape != _shape(logits):
        raise ValueError(f"binary_cross_entropy: labels of shape {values.shape} for logits of shape "
                         f"{_shape(logits)}; they must be equal")
    if values.dtype.kind == "b":
        values = values.astype(np.float64)
    if not np.all((values >= 0) & (values <= 1)):
        bad = values[~((values >= 0) & (values <= 1))]
        raise ValueError(f"binary_cross_entropy: labels out of range: {np.unique(bad)[:5].tolist()} "
                         "(labels must lie in [0, 1])")
    return anp.mean(anp.softplus(logits) - values * logits)
