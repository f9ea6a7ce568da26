"""Activation functions, as functions and by name (``get("tanh")``), written with autodiff ops so
that every derivative order is exact.

At a kink the derivative follows TensorFlow: ``relu'(0) = 0`` and ``elu'(0) = 1`` (the value on the
side of the negative branch is taken only for x < 0).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp

_GELU_SCALE = np.sqrt(2.0 / np.pi)


def relu(x):
    """max(x, 0), with derivative 0 at 0.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.relu(np.array([-1.0, 0.0, 2.0]))
    array([0., 0., 2.])
    """
    return anp.where(x > 0, x, 0.0)


def elu(x, alpha: float = 1.0):
    """x for x > 0, alpha (exp(x) - 1) otherwise (Clevert, Unterthiner & Hochreiter 2016).

    The exponential sees min(x, 0), so large positive inputs never overflow the unused branch.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.elu(np.array([-1.0, 2.0]))
    array([-0.63212056,  2.        ])
    """
    return anp.where(x > 0, x, alpha * anp.expm1(anp.minimum(x, 0.0)))


def tanh(x):
    """The hyperbolic tangent.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.tanh(np.array([0.0, 1.0]))
    array([0.        , 0.76159416])
    """
    return anp.tanh(x)


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow for large ``|x|``.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.sigmoid(np.array([-1000.0, 0.0, 1000.0]))
    array([0. , 0.5, 1. ])
    """
    return anp.sigmoid(x)


def softplus(x):
    """log(1 + exp(x)), computed without overflow for large x.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.softplus(np.array([0.0, 1000.0]))
    array([6.93147181e-01, 1.00000000e+03])
    """
    return anp.softplus(x)


def gelu(x):
    """The Gaussian error linear unit x Phi(x) (Hendrycks & Gimpel 2016) in its tanh form,
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as ``tf.nn.gelu(approximate=True)``
    (it differs from the erf form by less than 1e-3).

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt import nn
    >>> nn.gelu(np.array([-1.0, 0.0, 1.0]))
    array([-0.15880801,  0.        ,  0.84119199])
    """
    return 0.5 * x * (1.0 + anp.tanh(_GELU_SCALE * (x + 0.044715 * x ** 3)))


def linear(x):
    """The identity (a Dense layer with no activation).

    Examples
    --------
    >>> from hessopt.nn import activations
    >>> activations.linear(3.0)
    3.0
    """
    return x


ACTIVATIONS: dict[str, Callable] = {f.__name__: f for f in (relu, elu, tanh, sigmoid, softplus, gelu,
                                                            linear)}


def get(activation: str | Callable | None) -> Callable:
    """The activation function for a name, a callable, or None (the identity).

    Names are case-insensitive: relu, elu, tanh, sigmoid, softplus, gelu, linear.

    Raises
    ------
    ValueError
        For an unknown name.

    Examples
    --------
    >>> from hessopt.nn import activations
    >>> activations.get("TanH").__name__, activations.get(None).__name__
    ('tanh', 'linear')
    """
    if activation is None:
        return linear
    if callable(activation):
        return activation
    if isinstance(activation, str) and activation.lower() in ACTIVATIONS:
        return ACTIVATIONS[activation.lower()]
    raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)} or pass a "
                     "function")
