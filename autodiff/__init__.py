"""autodiff: a tape-based automatic differentiation engine over NumPy.

TensorFlow ``GradientTape`` semantics (persistent tapes, watch, stop_recording, reset, nested tapes
to any order, jacobian, batch_jacobian, custom_gradient, recompute_grad) on NumPy arrays. Imports
only NumPy.
"""
from . import (
                       _memory,  # noqa: F401  (glibc: keep large freed buffers for reuse; see _memory)
                       extend,
                       numpy,
                       tree,
)
from . import dispatch as _dispatch  # noqa: F401  (installs Tensor operators and NumPy dispatch)
from .check import check_grad
from .core import Tensor, Variable, constant
from .forward import ForwardAccumulator
from .function import Function, UntraceableError, function
from .implicit import custom_fixed_point, custom_root, fixed_point
from .numpy import scipy_integrate as _scipy_integrate  # noqa: F401  (not by autodiff.numpy: it uses transforms)
from .numpy import stop_gradient
from .operators import GGNOperator, HessianOperator, ggn_operator, hessian_operator
from .sparsity import (
                       DensePatternWarning,
                       SparseHessian,
                       SparseJacobian,
                       SparsityPattern,
                       hessian_sparsity,
                       jacobian_sparsity,
                       sparse_hessian,
                       sparse_jacobian,
)
from .tape import GradientTape, UnconnectedGradients, custom_gradient, recompute_grad
from .transforms import grad, hessian, hvp, jacobian, jvp, linearize, value_and_grad, vjp
from .tree import ravel

__all__ = ["Tensor", "Variable", "constant", "GradientTape", "UnconnectedGradients",
           "stop_gradient", "custom_gradient", "recompute_grad", "ForwardAccumulator", "grad",
           "value_and_grad", "jacobian", "hessian", "hvp", "jvp", "vjp", "linearize", "hessian_operator",
           "HessianOperator", "ggn_operator", "GGNOperator", "ravel", "tree", "check_grad", "numpy", "extend",
           "function", "Function", "UntraceableError", "hessian_sparsity", "jacobian_sparsity",
           "SparsityPattern", "sparse_hessian", "sparse_jacobian", "SparseHessian", "SparseJacobian",
           "DensePatternWarning", "custom_root", "custom_fixed_point", "fixed_point"]
