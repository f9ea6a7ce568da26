"""hessopt: second-order optimization with exact curvature.

``hessopt.minimize(f, x0, method="newton-cg")`` has scipy's interface; derivatives come from the
``autodiff`` engine, so ``f`` is plain NumPy code.
"""
from autodiff import grad, hessian, hessian_operator, hvp, jacobian

from . import nn, problems, regularizers
from ._minimize import METHODS, least_squares, minimize, minimize_many

__all__ = ["minimize", "minimize_many", "least_squares", "METHODS", "problems", "nn", "regularizers",
           "grad", "hessian", "hvp", "jacobian", "hessian_operator"]
