"""hessopt: second-order optimization with exact curvature.

``hessopt.minimize(f, x0, method="newton-cg")`` has scipy's interface; derivatives come from the
``autodiff`` engine, so ``f`` is plain NumPy code. ``hessopt.minimize_stochastic`` trains on
mini-batches (stochastic Hessian-free, subsampled Newton-CG, Adam, SGD). ``hessopt.curvature``
analyses Hessians (and any symmetric operator); ``hessopt.plot`` draws them and optimization runs.
``hessopt.plot`` needs matplotlib and is imported on first use, so ``import hessopt`` stays light.
"""
import importlib

from autodiff import grad, hessian, hessian_operator, hvp, jacobian

from . import curvature, nn, problems, regularizers
from ._covariance import covariance, standard_errors
from ._curve_fit import confidence_band, curve_fit
from ._least_squares import least_squares
from ._many import BatchStatus, minimize_many
from ._minimize import METHODS, minimize
from ._stochastic import STOCHASTIC_METHODS, minimize_stochastic

__all__ = ["minimize", "minimize_many", "minimize_stochastic", "BatchStatus", "least_squares", "curve_fit",
           "confidence_band", "covariance", "standard_errors", "METHODS", "STOCHASTIC_METHODS", "problems",
           "curvature", "plot", "nn", "regularizers", "grad", "hessian", "hvp", "jacobian", "hessian_operator"]


def __getattr__(name: str):
    """``hessopt.plot`` on first use: matplotlib is loaded only by those who draw."""
    if name == "plot":
        return importlib.import_module(".plot", __name__)
    raise AttributeError(f"module 'hessopt' has no attribute {name!r}")
