"""The feasible set: the contract between the one loop and the set x lives in.

The loop of :mod:`optimizers.loop` never asks which set it runs in; it asks the set. A
:class:`FeasibleSet` decides, each in one place:

- the start point (:meth:`~FeasibleSet.start`): x0 placed in the set before f is evaluated anywhere,
  and the note the result's message then carries (None when x0 was already in it);
- the stationarity measure the gradient test holds to (:meth:`~FeasibleSet.stationarity`), and how
  messages name it (:attr:`~FeasibleSet.gradient_name`, :attr:`~FeasibleSet.test_name`);
- the space in which the second-order check looks for negative curvature at a first-order point
  (:meth:`~FeasibleSet.curvature_space`, a :class:`CurvatureSpace`), and how a direction found there
  becomes one of the full space (:meth:`~FeasibleSet.lift`);
- the history columns it adds to every record (:meth:`~FeasibleSet.history`) and the result fields
  it reports (:meth:`~FeasibleSet.result_fields`);
- whether the methods' Krylov solves in it may be preconditioned (:attr:`~FeasibleSet.preconditioned`).

Two sets implement it. :class:`Unconstrained`: x0 as given, g, all variables, no column, no field.
:class:`~optimizers.bounds.Box`: x0 clipped into the box (as L-BFGS-B does), the projected gradient
``pg`` (zero exactly at the first-order points of the bound-constrained problem; Calamai & Moré
1987), the free variables (Lin & Moré 1999), the column ``active`` and the field ``active_mask``.
A step whose algorithm differs in a set (TRON's step in a box, Bertsekas' projected Newton) is a
different :class:`~optimizers.loop.Step` subclass, chosen once per run by the set's type
(:func:`functools.singledispatch`, as :func:`optimizers.trust_region.trust_region_step`); a step may
also own its convergence test (:meth:`optimizers.loop.Step.test`), as optimistix's solvers own
``terminate``. The idea is scipy's ``CanonicalConstraint`` (every constraint, bounds included,
normalized to one object before a method sees it).

What a constrained method implements (a primal-dual interior point with a filter line search,
A. Wächter and L. T. Biegler, "On the implementation of an interior-point filter line-search
algorithm for large-scale nonlinear programming", Math. Program. 106 (2006) 25-57):

- ``start``: x0 pushed strictly inside the bounds of the slacks and variables (Wächter & Biegler's
  kappa_1, kappa_2 perturbation), the multipliers' first estimates kept by the set, and a note when
  x0 moved;
- ``stationarity``: the scaled KKT residual (their (5)), of the Lagrangian's gradient with the
  multipliers the step keeps in the set; ``gradient_name`` and ``test_name`` name it;
- ``curvature_space``: None, no second-order check by the loop (the inertia correction of every
  KKT matrix makes each step one of descent for the barrier problem; a check at the solution would
  probe the reduced Hessian of the Lagrangian ``Z^T H Z`` on the null space Z of the active
  constraints' Jacobian); ``lift``: the direction itself;
- ``history``: the columns ``violation`` and ``mu``; ``result_fields``: ``v`` (the multipliers,
  one array per constraint), ``constr``, ``constr_violation``, as scipy's trust-constr;
- ``preconditioned``: False (the KKT system is factored, not solved by Krylov);
  ``best_point_fallback``: False (a failed run reports its last iterate, not the lowest f);
- its step overrides :meth:`~optimizers.loop.Step.test`: converged when the barrier parameter and
  the KKT residual are below the tolerance, not on the gradient test alone; and
  :meth:`~optimizers.loop.Step.describe`, which ends the result's message with that test.

:class:`optimizers.interior_point.Constrained` is that third set.

References: P. H. Calamai and J. J. Moré, Projected gradient methods for linearly constrained
problems, Math. Programming 39 (1987) 93-116; C.-J. Lin and J. J. Moré, Newton's method for large
bound-constrained optimization problems, SIAM J. Optim. 9 (1999) 1100-1127.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

import numpy as np
import scipy.sparse


class CurvatureSpace(Protocol):
    """What the second-order check probes (:func:`optimizers.loop.krylov_curvature`,
    :func:`~optimizers.loop.matrix_curvature`): the Hessian over some space of ``x.size``
    directions, as products and, on demand, a dense or sparse matrix. An
    :class:`~optimizers.objective.Iterate` is one (all variables)."""

    x: np.ndarray
    hessian: np.ndarray
    sparse_hessian: scipy.sparse.csc_matrix | None

    def matvec(self, v: np.ndarray) -> np.ndarray: ...


class FeasibleSet(ABC):
    """The set a run's iterates live in (see the module docstring for the contract)."""

    #: the tested gradient's name in messages ("||g||_inf = ...")
    gradient_name: str = "g"
    #: the wording of the gradient test in messages
    test_name: str = "the gradient test"
    #: whether the Krylov solves of the methods' steps in this set may be preconditioned
    preconditioned: bool = True
    #: whether a failed run may report the best f it saw instead of its last iterate
    #: (:func:`~optimizers.loop.final_point`): every point of the set is admissible there, but
    #: not where constraints hold only at a solution (a lower f at an infeasible point)
    best_point_fallback: bool = True

    @abstractmethod
    def start(self, x0: np.ndarray) -> tuple[np.ndarray, str | None]:
        """x0 (a 1-D float array) placed in the set, and a note saying how it moved (None if it
        did not)."""

    @abstractmethod
    def contains(self, x: np.ndarray) -> bool:
        """Whether x lies in the set (a start point must)."""

    @abstractmethod
    def stationarity(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """What the gradient test measures at x with gradient g (zero at a first-order point)."""

    @abstractmethod
    def curvature_space(self, point: CurvatureSpace) -> CurvatureSpace | None:
        """The iterate ``point`` as the second-order check sees it; None when there is no
        direction to check."""

    @abstractmethod
    def lift(self, space: CurvatureSpace, direction: np.ndarray) -> np.ndarray:
        """A direction of ``space`` (from :meth:`curvature_space`) as a direction of all variables."""

    @abstractmethod
    def history(self, x: np.ndarray) -> dict:
        """The columns this set adds to the history record at x (in column order)."""

    @abstractmethod
    def result_fields(self, x: np.ndarray) -> dict:
        """The fields this set adds to the result of a run that ends at x."""


class Unconstrained(FeasibleSet):
    """All of R^n: x0 as given, the gradient itself, every variable, nothing added.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.feasible import Unconstrained
    >>> space = Unconstrained()
    >>> space.start(np.array([2.0])), space.stationarity(np.zeros(1), np.array([3.0]))
    ((array([2.]), None), array([3.]))
    """

    def __repr__(self) -> str:
        return "Unconstrained()"

    def start(self, x0: np.ndarray) -> tuple[np.ndarray, None]:
        return x0, None

    def contains(self, x: np.ndarray) -> bool:
        return True

    def stationarity(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return g

    def curvature_space(self, point: CurvatureSpace) -> CurvatureSpace:
        return point

    def lift(self, space: CurvatureSpace, direction: np.ndarray) -> np.ndarray:
        return direction

    def history(self, x: np.ndarray) -> dict:
        return {}

    def result_fields(self, x: np.ndarray) -> dict:
        return {}


#: the set of every run that is given none
UNCONSTRAINED = Unconstrained()
