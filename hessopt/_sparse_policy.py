"""The sparse and preconditioning policy of ``minimize``: where autodiff's (or the user's) sparse
Hessians stand for the run's Hessian.

A method that factors the Hessian's matrix (``sparse``) gets autodiff's sparse Hessians
(:class:`~hessopt._hessians.SparseAutodiff`) from ``SPARSE_MIN_SIZE`` variables on when the pattern
found in the recorded program is under ``SPARSE_MAX_DENSITY`` dense (:func:`sparse_source`); a
Krylov method whose solves may be preconditioned gets an operator whose points also give the sparse
matrix, on demand (:func:`preconditioning_source`). Where they cannot, the run goes on dense and the
result says why.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import scipy.sparse
from scipy.optimize import OptimizeResult, OptimizeWarning

import optimizers.sparse
from optimizers.feasible import FeasibleSet
from optimizers.methods import Declaration
from optimizers.sparse import SPARSE_MIN_SIZE

from ._arguments import Call, UserHessian
from ._derivatives import AutodiffDerivatives, Flat
from ._hessians import SparseAutodiff, user_sparse_operator


class Structure(NamedTuple):
    """The run's derivatives after the policy (:func:`structured`), and what it says of them:
    why a factored Hessian stayed dense (``dense_reason``), when a preconditioner started or why
    not (``precondition_reason``); None where the policy did not consider it."""
    flat: Flat
    dense_reason: str | None = None
    precondition_reason: str | None = None

    def report(self, result: OptimizeResult) -> None:
        """The reasons in ``result`` (``dense_reason`` only where the run did not go sparse), and
        ``untraced_reason`` when the sparse Hessian's products ran eagerly."""
        if self.dense_reason is not None and not result.sparse:
            result.dense_reason = self.dense_reason
        if self.precondition_reason is not None:
            result.precondition_reason = self.precondition_reason
        for made in (self.flat.source, self.flat.operator):
            if isinstance(made, SparseAutodiff) and made.untraced_reason is not None:
                result.setdefault("untraced_reason", made.untraced_reason)


def structured(flat: Flat, call: Call, derivatives: AutodiffDerivatives, declaration: Declaration,
               feasible: FeasibleSet) -> Structure:
    """The policy for a method (its :class:`~optimizers.methods.Declaration`) in ``feasible``:
    sparse Hessians for a method that factors the Hessian's matrix (:func:`sparse_source`, after
    the option ``sparse``), the sparse matrix on demand for one whose Krylov solves may be
    preconditioned in that set (:func:`preconditioning_source`, after ``precondition``)."""
    operator, source, dense_reason, precondition_reason = flat.operator, flat.source, None, None
    if declaration.sparse:
        operator, source, dense_reason = sparse_source(call, derivatives, operator, source,
                                                       call.options.get("sparse"))
    if declaration.preconditioned and feasible.preconditioned:
        operator, precondition_reason = preconditioning_source(call, derivatives, operator, source,
                                                               call.options.get("precondition"))
    return Structure(flat._replace(operator=operator, source=source), dense_reason, precondition_reason)


def considered(option: bool | None, n: int) -> bool:
    """Whether the sparse path an option (``sparse``, ``precondition``) turns on is considered for n
    variables: True, or None (automatic) from ``SPARSE_MIN_SIZE`` on."""
    return option is True or (option is None and n >= SPARSE_MIN_SIZE)


def sparse_source(call: Call, derivatives: AutodiffDerivatives, operator, source, sparse: bool | None):
    """(operator, source, dense_reason) of a method that factors the Hessian's matrix: autodiff's
    sparse Hessians (:class:`~hessopt._hessians.SparseAutodiff`) in place of its dense ones when
    ``sparse`` is True, or None (automatic) from ``SPARSE_MIN_SIZE`` variables on when the pattern
    found in the recorded program is under ``SPARSE_MAX_DENSITY`` dense; else the operator and
    source as they were, and why not (None when the sparse path was not considered). A user's
    ``hess`` returning a sparse matrix is the optimizers' to use (same rule). With ``sparse=True``
    a fallback to dense also warns."""
    n = call.x0.size
    if not considered(sparse, n) or isinstance(source, UserHessian):
        return operator, source, None
    sparse_source, reason = _sparse_autodiff(call, derivatives, operator, source)
    if sparse_source is not None:
        try:
            pattern = sparse_source.pattern(call.x0)
        except Exception as error:   # any failure to find it is reported, and the dense path taken
            reason = f"the Hessian's sparsity pattern could not be found: {type(error).__name__}: {error}"
        else:
            reason = optimizers.sparse.dense_reason(n, pattern.nnz, sparse)
            if reason is None:
                return sparse_source, sparse_source, None
    if sparse:
        warnings.warn(f"options['sparse'] is True, but the Hessian is dense: {reason}", OptimizeWarning,
                      stacklevel=3)
    return operator, source, reason


def preconditioning_source(call: Call, derivatives: AutodiffDerivatives, operator, source,
                            precondition: bool | None):
    """(operator, reason) of a Krylov method whose solves may be preconditioned (``precondition``
    True, or None from ``SPARSE_MIN_SIZE`` variables on): an operator whose points also give the
    Hessian as a sparse matrix, on demand only — autodiff's sparse Hessians, whose pattern is found
    the first time the method asks (:class:`~hessopt._hessians.SparseAutodiff`), or the user's
    ``hess`` when it returns a sparse matrix at x0; else the operator as it was and why not, and
    the method's ``precondition`` option turned False (None where it was not considered). With
    ``precondition=True`` a fallback also warns."""
    n = call.x0.size
    if not considered(precondition, n):
        return operator, None
    if isinstance(source, UserHessian):
        if scipy.sparse.issparse(source.at(call.x0)):
            return user_sparse_operator(source), None
        reason = "the user's hess does not return a sparse matrix"
    else:
        sparse_source, reason = _sparse_autodiff(call, derivatives, operator, source)
        if sparse_source is not None:
            return sparse_source, None
    if precondition:
        warnings.warn(f"options['precondition'] is True, but there is no preconditioner: {reason}",
                      OptimizeWarning, stacklevel=3)
    call.options["precondition"] = False
    return operator, reason



def _sparse_autodiff(call: Call, derivatives: AutodiffDerivatives, operator,
                     source) -> tuple[SparseAutodiff | None, str | None]:
    """autodiff's sparse Hessians of f (:class:`~hessopt._hessians.SparseAutodiff`, the pattern
    found when first asked), when they are the run's Hessian; else None and why not."""
    if operator != derivatives.at:   # the user's hessp or jac, or a quasi-Newton strategy
        return None, _NOT_AUTODIFF.get(source.name, f"the Hessian comes from {source.name}")
    if derivatives.name != "autodiff":
        return None, f"the derivatives are {derivatives.name}, not autodiff's"
    if derivatives.variables is not None:
        return None, "x0 is a list of Variables: the sparse Hessian needs f as a function of x"
    return SparseAutodiff(lambda flat: derivatives.f(call.unravel(flat)), derivatives.at), None


_NOT_AUTODIFF = {
    "autodiff of the gradient": "the Hessian is the derivative of the user's jac, whose sparsity is not detected",
    "finite differences of the gradient": "the Hessian is the derivative of the user's jac, whose sparsity is not "
                                          "detected",
    "hessp": "hessp gives Hessian-vector products only",
}
