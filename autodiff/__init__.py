"""autodiff: a tape-based automatic differentiation engine over NumPy.

TensorFlow ``GradientTape`` semantics (persistent tapes, watch, stop_recording, reset, nested tapes
to any order, jacobian, batch_jacobian, custom_gradient, recompute_grad) on NumPy arrays. Imports
only NumPy.

The engine in one screen, in reading order (as micrograd's ``engine.py``):

1. ``core.apply``: a :class:`~autodiff.core.Primitive` (a NumPy function and its rules) run on
   Tensors is the NumPy call on their values, wrapped in a Tensor;
2. ``core.record`` (``GradientTape.record``): the op is appended to every active tape that watches
   an input, as ``(primitive, args, values, kwargs, output, tracked argument positions)``, keeping
   only the values its rules read (:mod:`autodiff.residuals`);
3. ``core.sweep``: the backward pass is a plain loop over the records, reversed (a topological
   order), each rule mapping the output's cotangent to its inputs', cotangents freed as the sweep
   passes them; rules are written with the engine's ops, so a sweep that an outer tape records is
   differentiated again (higher order for free);
4. the tracer (:mod:`autodiff.jit`): a ``Trace`` records the same ops as one more observer, and the
   recording becomes a NumPy ``Program`` that ``autodiff.function`` replays;
5. the transforms (:mod:`autodiff.transforms`: ``grad``, ``hvp``, ``linearize``...), written once
   on plain callables, and the curvature operators (:mod:`autodiff.operators`).

The optimizers run in one loop (:func:`optimizers.loop.run`) with two contracts: what a method's
step does each iteration (:class:`optimizers.loop.Step`) and the set x lives in
(:class:`optimizers.feasible.FeasibleSet`); each method declares what it takes
(:mod:`optimizers.methods`), and ``hessopt.minimize`` reads those declarations.
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
from .rows import HessianRows, hessian_rows
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
           "DensePatternWarning", "custom_root", "custom_fixed_point", "fixed_point", "hessian_rows", "HessianRows"]
