"""Second-order optimization algorithms on plain arrays and callables (no autodiff here).

Each method is ``method(fun, x0, jac, hess=None, hessp=None, callback=None, **options)`` returning a
``scipy.optimize.OptimizeResult`` with a column-wise ``history`` (:class:`History`; the option
``keep_iterates=False`` leaves the iterates out of it) and a :class:`Status`.
"""
from .arc import minimize_arc
from .history import History
from .least_squares import least_squares_lm
from .newton import minimize_hessian_free, minimize_newton, minimize_newton_cg
from .objective import Status
from .trust_region import minimize_dogleg, minimize_trust_exact, minimize_trust_krylov, minimize_trust_ncg

__all__ = ["History", "Status", "least_squares_lm", "minimize_arc", "minimize_dogleg",
           "minimize_hessian_free", "minimize_newton", "minimize_newton_cg", "minimize_trust_exact",
           "minimize_trust_krylov", "minimize_trust_ncg"]
