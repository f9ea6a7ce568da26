"""One test problem instance (:class:`Problem`), the type of ``hessopt.problems`` and of the
constrained collections of ``hessopt._constrained_problems``, which both import it from here."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

_DENSE_JACOBIAN_ROWS = 64  # up to this many constraint rows, violation() takes the Jacobian in reverse mode


@dataclass(frozen=True, eq=False)
class Problem:
    """One test problem instance.

    ``name`` is the identifier used by ``get``, ``title`` the name in print and ``number`` the MGH
    number (None outside the MGH set). ``fun(x)`` is the objective; ``residuals(x)`` (least-squares
    problems only) the ``m`` residuals with ``fun(x) == sum(residuals(x) ** 2)``. ``x0`` is the
    standard starting point, ``fmin`` the known minimum value and ``xmin`` a minimizer where one is
    known in closed form. ``local_minima`` lists documented values of other local minima (or of
    infima approached as some variables go to infinity) that a local method may legitimately
    converge to. ``notes`` gives the published values and where the minima are. Bound-constrained
    problems (:func:`bounded`) have ``lower`` and ``upper`` (entries may be infinite), ``x0`` in
    that box and ``fmin`` the minimum over it. Arrays are read-only: copy ``x0`` before changing
    it.

    Constrained problems (``HOCK_SCHITTKOWSKI``, :func:`constrained`) also have ``constraint``,
    one vector function with ``constraint_lower <= constraint(x) <= constraint_upper``
    (equalities where the two agree), and ``constraints``, the same rows in scipy's form (a list
    of dicts: ``"eq"`` means ``fun(x) == 0``, ``"ineq"`` means ``fun(x) >= 0``) built from it;
    ``fmin`` is then the constrained minimum, ``x0`` need not be feasible (``x0_feasible``) and
    ``violation(x)`` measures how far x is from the feasible set.

    Raises
    ------
    ValueError
        If ``x0``, ``xmin``, ``lower`` or ``upper`` does not have shape (n,), or the constraint
        bounds do not have one shape with ``constraint_lower <= constraint_upper``.

    Examples
    --------
    >>> from hessopt import problems
    >>> p = problems.get("rosenbrock")
    >>> p, p.x0, p.xmin
    (Problem('rosenbrock', MGH 1, n=2, m=2, fmin=0), array([-1.2,  1. ]), array([1., 1.]))
    >>> p.residuals(p.x0), round(float(p.fun(p.x0)), 6), p.solved(1e-12)
    (array([-4.4,  2.2]), 24.2, True)
    """

    name: str
    title: str
    number: int | None
    n: int
    m: int | None
    fun: Callable[[np.ndarray], float]
    x0: np.ndarray
    fmin: float
    xmin: np.ndarray | None = None
    residuals: Callable[[np.ndarray], np.ndarray] | None = None
    local_minima: tuple[float, ...] = ()
    notes: str = ""
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    constraint: Callable[[np.ndarray], np.ndarray] | None = None
    constraint_lower: np.ndarray | None = None
    constraint_upper: np.ndarray | None = None
    collection: str = "MGH"

    def __post_init__(self) -> None:
        for attr in ("x0", "xmin", "lower", "upper"):
            value = getattr(self, attr)
            if value is not None:
                value = np.array(value, dtype=np.float64)
                if value.shape != (self.n,):
                    raise ValueError(f"{self.name}: {attr} has shape {value.shape}, not ({self.n},)")
                value.flags.writeable = False
                object.__setattr__(self, attr, value)
        if self.constraint is not None:
            lower, upper = (np.array(getattr(self, attr), dtype=np.float64)
                            for attr in ("constraint_lower", "constraint_upper"))
            if lower.ndim != 1 or lower.shape != upper.shape or np.any(lower > upper):
                raise ValueError(f"{self.name}: constraint_lower {lower.shape} and constraint_upper {upper.shape} "
                                 "must be vectors of one length with lower <= upper")
            for attr, value in (("constraint_lower", lower), ("constraint_upper", upper)):
                value.flags.writeable = False
                object.__setattr__(self, attr, value)

    def solved(self, f: float, rtol: float = 1e-6, atol: float = 1e-8) -> bool:
        """Whether the final value ``f`` counts as solving the problem.

        True if ``f - fmin <= rtol * |fmin| + atol``, or if ``|f - v| <= rtol * |v| + atol`` for a
        documented local minimum value ``v``. The defaults accept what a trust-region Newton method
        reaches with a gradient tolerance of 1e-5 (f of a few 1e-9 on the singular Powell problems)
        and reject a run stopped 0.1% above a nonzero minimum.
        """
        if f - self.fmin <= rtol * abs(self.fmin) + atol:
            return True
        return any(abs(f - v) <= rtol * abs(v) + atol for v in self.local_minima)

    @cached_property
    def constraints(self) -> list[dict]:
        """The constraints in scipy's form: ``{"type": "eq", "fun": ...}`` for the rows with equal
        bounds (``c(x) - lower``), ``{"type": "ineq", "fun": ...}`` for the finite bounds of the
        others (``c(x) - lower`` and ``upper - c(x)``); empty without constraints."""
        if self.constraint is None:
            return []
        c, lower, upper = self.constraint, self.constraint_lower, self.constraint_upper
        equal = np.flatnonzero(lower == upper)
        below = np.flatnonzero((lower != upper) & np.isfinite(lower))
        above = np.flatnonzero((lower != upper) & np.isfinite(upper))
        forms = []
        if equal.size:
            forms.append({"type": "eq", "fun": lambda x: c(x)[equal] - lower[equal]})
        if below.size or above.size:
            forms.append({"type": "ineq",
                          "fun": lambda x: np.concatenate([c(x)[below] - lower[below], upper[above] - c(x)[above]])})
        return forms

    @property
    def n_constraints(self) -> int:
        """The number of rows of ``constraint`` (0 without constraints)."""
        return 0 if self.constraint is None else self.constraint_lower.size

    def violation(self, x) -> float:
        """The largest violation at x of the bounds and the constraints, each relative to its scale.

        A bound counts relative to ``max(1, |bound|)``; a constraint row relative to
        ``max(1, sum_j |dc_i/dx_j (x)| |x_j|)``, the change of c_i when every x_j moves by its
        own magnitude, so that a point printed to k significant digits is feasible to about
        ``10^-k``. The Jacobian comes from autodiff (sparse: cheap at any n). 0 at a feasible x.

        Examples
        --------
        >>> from hessopt.problems import hock_schittkowski
        >>> p = hock_schittkowski(71)
        >>> float(p.violation(p.x0)) > 0.1, float(p.violation(p.xmin)) < 1e-6
        (True, True)
        """
        x = np.asarray(x, dtype=np.float64)
        worst = 0.0
        for bound, excess in ((self.lower, self.lower - x if self.lower is not None else None),
                              (self.upper, x - self.upper if self.upper is not None else None)):
            if bound is not None:
                finite = np.isfinite(bound)
                worst = max(worst, np.max(excess[finite] / np.maximum(1.0, np.abs(bound[finite])), initial=0.0))
        if self.constraint is None:
            return worst
        c = np.asarray(self.constraint(x), dtype=np.float64)
        scale = np.maximum(1.0, np.asarray(abs(self._constraint_jacobian(x)) @ np.abs(x)).ravel())
        excess = np.maximum(np.nan_to_num(self.constraint_lower - c, nan=0.0, neginf=0.0),
                            np.nan_to_num(c - self.constraint_upper, nan=0.0, neginf=0.0))
        return max(worst, np.max(excess / scale, initial=0.0))

    @cached_property
    def _constraint_jacobian(self) -> Callable:
        """x -> the constraint Jacobian: reverse mode, one sweep per row, for a few rows (a dense
        row, such as a budget, would cost a column colouring n products); else ``sparse_jacobian``."""
        import autodiff as ad

        if self.n_constraints <= _DENSE_JACOBIAN_ROWS:
            return ad.jacobian(self.constraint)
        return ad.sparse_jacobian(self.constraint)

    @cached_property
    def x0_feasible(self) -> bool:
        """Whether x0 satisfies the bounds and constraints (``violation(x0) <= 1e-12``)."""
        return bool(self.violation(self.x0) <= 1e-12)

    def __repr__(self) -> str:
        number = f"{self.collection} {self.number}, " if self.number is not None else ""
        constraints = f", constraints={self.n_constraints}" if self.constraint is not None else ""
        return f"Problem({self.name!r}, {number}n={self.n}, m={self.m}{constraints}, fmin={self.fmin:.6g})"
