"""Second-order optimization algorithms on plain arrays and callables (no autodiff here).

Each method is ``method(fun, x0, jac, hess=None, hessp=None, callback=None, *, operator=None,
**options)`` returning a ``scipy.optimize.OptimizeResult`` with a column-wise ``history``
(:class:`History`; the option ``keep_iterates=False`` leaves the iterates out of it) and a
:class:`Status`. Every method is a :class:`~optimizers.loop.Step` run by the one loop of
:mod:`optimizers.loop`.

Each method declares what it takes and gives where it is defined (:mod:`optimizers.methods`:
bounds, a sparse factorization, a preconditioner, first order, batches, scipy's ``hess``...), and
:data:`REGISTRY` lists them all by those declarations: adding a method is its module and one entry
there. The set x lives in (unconstrained, or a box) is a contract the loop talks to
(:mod:`optimizers.feasible`).

The parameters every method shares (read once, by :func:`optimizers.methods.declared`; the run's
own are one :class:`~optimizers.loop.RunOptions`):

- ``fun(x)``: the objective on a 1-D float array; ``x0``: the start point (1-D, finite).
- ``jac(x)``: the gradient, or ``True`` when ``fun`` returns ``(f, g)`` (scipy's convention).
- ``hess(x)``: the Hessian as a dense or ``scipy.sparse`` matrix, and/or ``hessp(x, p)``: the
  Hessian-vector product; either stands in for the other. Or ``operator(x)``: the Hessian at x as
  an object with ``matvec(v)`` and ``to_dense()`` (``autodiff.hessian_operator``'s interface), and
  optionally ``to_sparse()``, asked once per iterate, so that its products need not find out which
  x they are for. Newton, trust-exact and dogleg factor a sparse Hessian as a sparse matrix
  (:mod:`optimizers.sparse`; option ``sparse``).
- ``callback(intermediate_result)``: called after each iteration with an OptimizeResult; raising
  StopIteration stops the run (status 99).
- ``gtol``: stop when ``||g||_inf <= gtol``; ``maxiter``: the iteration cap (0 or less: none, as
  in scipy); ``disp``: print the iteration table, and warn when the run fails (scipy's
  categories); ``keep_iterates``: keep the iterates in ``history["x"]``.

The mini-batch methods of :mod:`optimizers.stochastic` (stochastic Hessian-free, subsampled
Newton-CG, and Adam and SGD on batches) take the same with a batch: ``fun(x, batch)``,
``jac(x, batch)``, ``hessp(x, p, batch)`` or ``operator(x, batch)``, and ``batches``.

Bad input (a non-callable fun, x0 with NaN, a method that needs second derivatives without them)
raises TypeError or ValueError naming the problem; a start point where f or the gradient is not
finite is a failed run (status 3), as in scipy. Derivatives here come from the caller: scipy's
``rosen``/``rosen_der``/``rosen_hess``/``rosen_hess_prod`` in the examples, autodiff through
``hessopt.minimize``.

Examples
--------
>>> import numpy as np
>>> from scipy.optimize import rosen, rosen_der, rosen_hess_prod
>>> import optimizers
>>> result = optimizers.minimize_trust_krylov(rosen, np.array([-1.2, 1.0]), rosen_der, hessp=rosen_hess_prod)
>>> result.success, result.x.round(4), round(float(result.history["f"][0]), 2)
(True, array([1., 1.]), 24.2)
"""
from .arc import minimize_arc
from .constraints import CanonicalConstraint
from .first_order import minimize_adam, minimize_gd
from .history import History
from .interior_point import minimize_ipm
from .least_squares import least_squares_lm
from .methods import Registry
from .newton import minimize_hessian_free, minimize_newton, minimize_newton_cg
from .objective import Status
from .stochastic import (
                         minimize_sgd,
                         minimize_stochastic_adam,
                         minimize_stochastic_hessian_free,
                         minimize_subsampled_newton_cg,
)
from .trust_region import minimize_dogleg, minimize_trust_exact, minimize_trust_krylov, minimize_trust_ncg

#: Every method, by its declaration, in the order the suite lists them.
REGISTRY = Registry([minimize_newton, minimize_newton_cg, minimize_trust_ncg, minimize_trust_krylov,
                     minimize_trust_exact, minimize_dogleg, minimize_arc, minimize_hessian_free, minimize_adam,
                     minimize_gd, minimize_stochastic_hessian_free, minimize_subsampled_newton_cg,
                     minimize_stochastic_adam, minimize_sgd, minimize_ipm])

__all__ = ["CanonicalConstraint", "History", "REGISTRY", "Status", "least_squares_lm", "minimize_adam",
           "minimize_arc", "minimize_dogleg", "minimize_gd", "minimize_hessian_free", "minimize_ipm",
           "minimize_newton", "minimize_newton_cg", "minimize_sgd", "minimize_stochastic_adam",
           "minimize_stochastic_hessian_free",
           "minimize_subsampled_newton_cg", "minimize_trust_exact", "minimize_trust_krylov",
           "minimize_trust_ncg"]
