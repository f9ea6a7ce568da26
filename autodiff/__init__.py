"""autodiff: a tape-based automatic differentiation engine over NumPy.

TensorFlow ``GradientTape`` semantics (persistent tapes, watch, stop_recording, reset, nested tapes
to any order, jacobian, batch_jacobian, custom_gradient, recompute_grad) on NumPy arrays. Imports
only NumPy.
"""
from . import dispatch as _dispatch  # noqa: F401  (installs Tensor operators and NumPy dispatch)
from . import numpy
from .check import check_grad
from .core import Tensor, Variable, constant
from .numpy.ops import stop_gradient
from .tape import GradientTape, UnconnectedGradients, custom_gradient, recompute_grad

__all__ = ["Tensor", "Variable", "constant", "GradientTape", "UnconnectedGradients",
           "stop_gradient", "custom_gradient", "recompute_grad", "check_grad", "numpy"]
