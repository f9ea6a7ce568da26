"""hessopt.nn: a small layer kit whose parameters are Variables (``autodiff.Variable``).

``Dense``, ``BatchNorm`` and ``Sequential`` run inside tapes like Keras layers do in TensorFlow's
autodiff guides; ``model.trainable_variables`` goes straight to ``hessopt.minimize`` with a loss
that takes no argument. Activations are functions (``nn.tanh``) or names (``"tanh"``); losses are
in ``hessopt.nn.losses``.
"""
from . import activations, datasets, losses
from .activations import elu, gelu, relu, sigmoid, softplus, tanh
from .layers import BatchNorm, Dense, Layer, Sequential

__all__ = ["Dense", "BatchNorm", "Sequential", "Layer", "activations", "datasets", "losses", "relu", "elu", "tanh",
           "sigmoid", "softplus", "gelu"]
