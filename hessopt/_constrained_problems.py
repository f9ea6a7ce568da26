"""Constrained test problems: the Hock-Schittkowski collection and scalable sparse problems.

``HOCK_SCHITTKOWSKI`` holds 103 problems of W. Hock and K. Schittkowski, *Test Examples for
Nonlinear Programming Codes*, Lecture Notes in Economics and Mathematical Systems 187, Springer
1981 (HS1-HS57, HS59-HS66, HS71-HS81, HS83, HS84, HS86, HS93, HS95-HS104, HS106-HS114 and
HS116-HS119), written here from the published problems: objective, constraints, bounds, the
start x0, the optimal value f* and the solution x*. Left out are the problems that are not smooth
or not closed-form: HS58 and HS67 (an inner iteration), HS68 and HS69 (the normal distribution
function), HS70 (a misprint in the published data), HS85 (an inner table lookup), HS87-HS92
(piecewise, or defined through the roots of a transcendental equation); and HS105, whose 235
observations as transcribed here give f(x*) = 1136.67 instead of the published 1138.416 (not
resolved). HS82, HS94 and HS115 do not exist. ``constrained(name, n)`` builds the scalable sparse
problems (see ``CONSTRAINED``).

Each problem has two forms built from one function (no formula is written twice): the canonical
``constraint(x)`` with ``constraint_lower <= constraint(x) <= constraint_upper`` (an equality where
the two are equal), and scipy's list of dicts ``constraints`` (``"eq"``: ``fun(x) == 0``,
``"ineq"``: ``fun(x) >= 0``) derived from it. In the book the first ``meq`` constraints are
equalities h(x) = 0 and the others inequalities g(x) >= 0; that is the canonical order here too.
Bounds are arrays ``lower``/``upper``, infinite where the book has none.

``fmin`` is the published f*; ``xmin`` the published x*, as rounded in print. Each pair was checked
here: x* is feasible and f(x*) = f* to the digits x* is printed with, and IPOPT with exact
derivatives reaches f* (from x0, or from x* where x0 leads to another local minimum). Where that
check failed the notes say so: for HS59, HS65, HS99, HS102, HS103 and HS111 the digits of x* were
not recalled reliably and ``xmin`` is None (the minimizer computed here is in the notes); for
HS106, HS112 and HS116 the printed solution is feasible but not minimal, and ``fmin`` is the
lower minimum (CEC 2006's g10 for HS106; computed here for HS116), the printed values in the notes.

All functions are plain NumPy in the sense of ``hessopt.problems`` (arithmetic, indexing, slicing,
``np.stack``, ``np.sum``, ``np.exp``, ...), so that autodiff traces them and finds the sparsity of
their Jacobians and Hessians.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._problem import Problem

__all__ = ["HOCK_SCHITTKOWSKI", "CONSTRAINED", "constrained", "hock_schittkowski"]

SQRT2, SQRT3 = np.sqrt(2.0), np.sqrt(3.0)


def _hs(number: int, fun: Callable, x0, fmin: float, xmin=None, constraint: Callable | None = None,
        meq: int = 0, lower=-np.inf, upper=np.inf, notes: str = "") -> Problem:
    """Problem HS``number``: the first ``meq`` rows of ``constraint(x)`` are equalities h(x) = 0,
    the others inequalities g(x) >= 0 (the book's convention); ``lower``/``upper`` broadcast."""
    x0 = np.asarray(x0, dtype=np.float64)
    n = x0.size
    lower_c = upper_c = None
    if constraint is not None:
        m = np.size(constraint(x0))
        lower_c, upper_c = np.zeros(m), np.concatenate([np.zeros(meq), np.full(m - meq, np.inf)])
    return Problem(f"hs{number:03d}", f"Hock-Schittkowski {number}", number, n, None, fun, x0,
                   float(fmin), xmin=xmin, notes=notes,
                   lower=np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,)),
                   upper=np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,)),
                   constraint=constraint, constraint_lower=lower_c, constraint_upper=upper_c, collection="HS")


def _rosenbrock(x):
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


# --------------------------------------------------------------------------------------------------
# HS1-HS24: two variables
# --------------------------------------------------------------------------------------------------


def _hs001():
    return _hs(1, _rosenbrock, [-2.0, 1.0], 0.0, [1.0, 1.0], lower=[-np.inf, -1.5])


def _hs002():
    return _hs(2, _rosenbrock, [-2.0, 1.0], 0.0504261879, [1.224370749, 1.5], lower=[-np.inf, 1.5])


def _hs003():
    return _hs(3, lambda x: x[1] + 1e-5 * (x[1] - x[0]) ** 2, [10.0, 1.0], 0.0, [0.0, 0.0],
               lower=[-np.inf, 0.0])


def _hs004():
    return _hs(4, lambda x: (x[0] + 1.0) ** 3 / 3.0 + x[1], [1.125, 0.125], 8.0 / 3.0, [1.0, 0.0],
               lower=[1.0, 0.0])


def _hs005():
    def fun(x):
        return np.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1] + 1.0

    return _hs(5, fun, [0.0, 0.0], -0.5 * SQRT3 - np.pi / 3.0, [0.5 - np.pi / 3.0, -0.5 - np.pi / 3.0],
               lower=[-1.5, -3.0], upper=[4.0, 3.0])


def _hs006():
    return _hs(6, lambda x: (1.0 - x[0]) ** 2, [-1.2, 1.0], 0.0, [1.0, 1.0],
               lambda x: np.stack([10.0 * (x[1] - x[0] ** 2)]), meq=1)


def _hs007():
    return _hs(7, lambda x: np.log(1.0 + x[0] ** 2) - x[1], [2.0, 2.0], -SQRT3, [0.0, SQRT3],
               lambda x: np.stack([(1.0 + x[0] ** 2) ** 2 + x[1] ** 2 - 4.0]), meq=1)


def _hs008():
    def constraint(x):
        return np.stack([x[0] ** 2 + x[1] ** 2 - 25.0, x[0] * x[1] - 9.0])

    x1 = np.sqrt((25.0 + np.sqrt(301.0)) / 2.0)
    return _hs(8, lambda x: 0.0 * x[0] - 1.0, [2.0, 1.0], -1.0, [x1, 9.0 / x1], constraint, meq=2,
               notes="f = -1 is constant: every feasible point is a solution")


def _hs009():
    return _hs(9, lambda x: np.sin(np.pi * x[0] / 12.0) * np.cos(np.pi * x[1] / 16.0), [0.0, 0.0],
               -0.5, [-3.0, -4.0], lambda x: np.stack([4.0 * x[0] - 3.0 * x[1]]), meq=1,
               notes="x* = (12k - 3, 16k - 4) for every integer k")


def _hs010():
    return _hs(10, lambda x: x[0] - x[1], [-10.0, 10.0], -1.0, [0.0, 1.0],
               lambda x: np.stack([-3.0 * x[0] ** 2 + 2.0 * x[0] * x[1] - x[1] ** 2 + 1.0]))


def _hs011():
    return _hs(11, lambda x: (x[0] - 5.0) ** 2 + x[1] ** 2 - 25.0, [4.9, 0.1], -8.498464223,
               [1.234679, 1.524431], lambda x: np.stack([-x[0] ** 2 + x[1]]))


def _hs012():
    def fun(x):
        return 0.5 * x[0] ** 2 + x[1] ** 2 - x[0] * x[1] - 7.0 * x[0] - 7.0 * x[1]

    return _hs(12, fun, [0.0, 0.0], -30.0, [2.0, 3.0],
               lambda x: np.stack([25.0 - 4.0 * x[0] ** 2 - x[1] ** 2]))


def _hs013():
    return _hs(13, lambda x: (x[0] - 2.0) ** 2 + x[1] ** 2, [-2.0, -2.0], 1.0, [1.0, 0.0],
               lambda x: np.stack([(1.0 - x[0]) ** 3 - x[1]]), lower=0.0,
               notes="the constraint qualification fails at x*: no KKT multipliers exist there")


def _hs014():
    def constraint(x):
        return np.stack([x[0] - 2.0 * x[1] + 1.0, -0.25 * x[0] ** 2 - x[1] ** 2 + 1.0])

    sqrt7 = np.sqrt(7.0)
    return _hs(14, lambda x: (x[0] - 2.0) ** 2 + (x[1] - 1.0) ** 2, [2.0, 2.0], 9.0 - 2.875 * sqrt7,
               [0.5 * (sqrt7 - 1.0), 0.25 * (sqrt7 + 1.0)], constraint, meq=1)


def _hs015():
    return _hs(15, _rosenbrock, [-2.0, 1.0], 306.5, [0.5, 2.0],
               lambda x: np.stack([x[0] * x[1] - 1.0, x[0] + x[1] ** 2]), upper=[0.5, np.inf])


def _hs016():
    return _hs(16, _rosenbrock, [-2.0, 1.0], 0.25, [0.5, 0.25],
               lambda x: np.stack([x[0] + x[1] ** 2, x[0] ** 2 + x[1]]), lower=[-0.5, -np.inf],
               upper=[0.5, 1.0])


def _hs017():
    return _hs(17, _rosenbrock, [-2.0, 1.0], 1.0, [0.0, 0.0],
               lambda x: np.stack([x[1] ** 2 - x[0], x[0] ** 2 - x[1]]), lower=[-0.5, -np.inf],
               upper=[0.5, 1.0])


def _hs018():
    return _hs(18, lambda x: 0.01 * x[0] ** 2 + x[1] ** 2, [2.0, 2.0], 5.0, [np.sqrt(250.0), np.sqrt(2.5)],
               lambda x: np.stack([x[0] * x[1] - 25.0, x[0] ** 2 + x[1] ** 2 - 25.0]),
               lower=[2.0, 0.0], upper=50.0)


def _hs019():
    def constraint(x):
        return np.stack([(x[0] - 5.0) ** 2 + (x[1] - 5.0) ** 2 - 100.0,
                         -(x[1] - 5.0) ** 2 - (x[0] - 6.0) ** 2 + 82.81])

    return _hs(19, lambda x: (x[0] - 10.0) ** 3 + (x[1] - 20.0) ** 3, [20.1, 5.84], -6961.81381,
               [14.095, 0.84296079], constraint, lower=[13.0, 0.0], upper=100.0)


def _hs020():
    def constraint(x):
        return np.stack([x[0] + x[1] ** 2, x[0] ** 2 + x[1], x[0] ** 2 + x[1] ** 2 - 1.0])

    return _hs(20, _rosenbrock, [-2.0, 1.0], 81.5 - 25.0 * SQRT3, [0.5, 0.5 * SQRT3], constraint,
               lower=[-0.5, -np.inf], upper=[0.5, np.inf])


def _hs021():
    return _hs(21, lambda x: 0.01 * x[0] ** 2 + x[1] ** 2 - 100.0, [-1.0, -1.0], -99.96, [2.0, 0.0],
               lambda x: np.stack([10.0 * x[0] - x[1] - 10.0]), lower=[2.0, -50.0], upper=50.0)


def _hs022():
    return _hs(22, lambda x: (x[0] - 2.0) ** 2 + (x[1] - 1.0) ** 2, [2.0, 2.0], 1.0, [1.0, 1.0],
               lambda x: np.stack([-x[0] - x[1] + 2.0, -x[0] ** 2 + x[1]]))


def _hs023():
    def constraint(x):
        return np.stack([x[0] + x[1] - 1.0, x[0] ** 2 + x[1] ** 2 - 1.0, 9.0 * x[0] ** 2 + x[1] ** 2 - 9.0,
                         x[0] ** 2 - x[1], x[1] ** 2 - x[0]])

    return _hs(23, lambda x: x[0] ** 2 + x[1] ** 2, [3.0, 1.0], 2.0, [1.0, 1.0], constraint, lower=-50.0,
               upper=50.0)


def _hs024():
    def constraint(x):
        return np.stack([x[0] / SQRT3 - x[1], x[0] + SQRT3 * x[1], 6.0 - x[0] - SQRT3 * x[1]])

    return _hs(24, lambda x: ((x[0] - 3.0) ** 2 - 9.0) * x[1] ** 3 / (27.0 * SQRT3), [1.0, 0.5], -1.0,
               [3.0, SQRT3], constraint, lower=0.0)


# --------------------------------------------------------------------------------------------------
# HS25-HS57
# --------------------------------------------------------------------------------------------------


def _hs025():
    i = np.arange(1.0, 100.0)
    u = 25.0 + (-50.0 * np.log(0.01 * i)) ** (2.0 / 3.0)

    def fun(x):
        r = -0.01 * i + np.exp(-((u - x[1]) ** x[2]) / x[0])
        return r @ r

    return _hs(25, fun, [100.0, 12.5, 3.0], 0.0, [50.0, 25.0, 1.5], lower=[0.1, 0.0, 0.0],
               upper=[100.0, 25.6, 5.0])


def _hs026():
    return _hs(26, lambda x: (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 4, [-2.6, 2.0, 2.0], 0.0, [1.0, 1.0, 1.0],
               lambda x: np.stack([(1.0 + x[1] ** 2) * x[0] + x[2] ** 4 - 3.0]), meq=1)


def _hs027():
    return _hs(27, lambda x: 0.01 * (x[0] - 1.0) ** 2 + (x[1] - x[0] ** 2) ** 2, [2.0, 2.0, 2.0], 0.04,
               [-1.0, 1.0, 0.0], lambda x: np.stack([x[0] + x[2] ** 2 + 1.0]), meq=1)


def _hs028():
    return _hs(28, lambda x: (x[0] + x[1]) ** 2 + (x[1] + x[2]) ** 2, [-4.0, 1.0, 1.0], 0.0, [0.5, -0.5, 0.5],
               lambda x: np.stack([x[0] + 2.0 * x[1] + 3.0 * x[2] - 1.0]), meq=1)


def _hs029():
    return _hs(29, lambda x: -x[0] * x[1] * x[2], [1.0, 1.0, 1.0], -16.0 * SQRT2, [4.0, 2.0 * SQRT2, 2.0],
               lambda x: np.stack([-x[0] ** 2 - 2.0 * x[1] ** 2 - 4.0 * x[2] ** 2 + 48.0]),
               notes="x* also with any two signs flipped")


def _hs030():
    return _hs(30, lambda x: x @ x, [1.0, 1.0, 1.0], 1.0, [1.0, 0.0, 0.0],
               lambda x: np.stack([x[0] ** 2 + x[1] ** 2 - 1.0]), lower=[1.0, -10.0, -10.0], upper=10.0)


def _hs031():
    return _hs(31, lambda x: 9.0 * x[0] ** 2 + x[1] ** 2 + 9.0 * x[2] ** 2, [1.0, 1.0, 1.0], 6.0,
               [1.0 / SQRT3, SQRT3, 0.0], lambda x: np.stack([x[0] * x[1] - 1.0]), lower=[-10.0, 1.0, -10.0],
               upper=[10.0, 10.0, 1.0])


def _hs032():
    def constraint(x):
        return np.stack([1.0 - x[0] - x[1] - x[2], 6.0 * x[1] + 4.0 * x[2] - x[0] ** 3 - 3.0])

    return _hs(32, lambda x: (x[0] + 3.0 * x[1] + x[2]) ** 2 + 4.0 * (x[0] - x[1]) ** 2, [0.1, 0.7, 0.2],
               1.0, [0.0, 0.0, 1.0], constraint, meq=1, lower=0.0)


def _hs033():
    def constraint(x):
        return np.stack([x[2] ** 2 - x[0] ** 2 - x[1] ** 2, x @ x - 4.0])

    return _hs(33, lambda x: (x[0] - 1.0) * (x[0] - 2.0) * (x[0] - 3.0) + x[2], [0.0, 0.0, 3.0],
               SQRT2 - 6.0, [0.0, SQRT2, SQRT2], constraint, lower=0.0, upper=[np.inf, np.inf, 5.0])


def _exponential_chain(x):
    """HS34 and HS66: x2 >= exp(x1), x3 >= exp(x2)."""
    return np.stack([x[1] - np.exp(x[0]), x[2] - np.exp(x[1])])


def _hs034():
    ln10 = np.log(10.0)
    return _hs(34, lambda x: -x[0], [0.0, 1.05, 2.9], -np.log(ln10), [np.log(ln10), ln10, 10.0],
               _exponential_chain, lower=0.0, upper=[100.0, 100.0, 10.0])


def _hs035():
    def fun(x):
        return (9.0 - 8.0 * x[0] - 6.0 * x[1] - 4.0 * x[2] + 2.0 * x[0] ** 2 + 2.0 * x[1] ** 2 + x[2] ** 2
                + 2.0 * x[0] * x[1] + 2.0 * x[0] * x[2])

    return _hs(35, fun, [0.5, 0.5, 0.5], 1.0 / 9.0, [4.0 / 3.0, 7.0 / 9.0, 4.0 / 9.0],
               lambda x: np.stack([3.0 - x[0] - x[1] - 2.0 * x[2]]), lower=0.0)


def _hs036():
    return _hs(36, lambda x: -x[0] * x[1] * x[2], [10.0, 10.0, 10.0], -3300.0, [20.0, 11.0, 15.0],
               lambda x: np.stack([72.0 - x[0] - 2.0 * x[1] - 2.0 * x[2]]), lower=0.0,
               upper=[20.0, 11.0, 42.0])


def _hs037():
    def constraint(x):
        s = x[0] + 2.0 * x[1] + 2.0 * x[2]
        return np.stack([72.0 - s, s])

    return _hs(37, lambda x: -x[0] * x[1] * x[2], [10.0, 10.0, 10.0], -3456.0, [24.0, 12.0, 12.0],
               constraint, lower=0.0, upper=42.0)


def _wood(x):
    return (100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2 + 90.0 * (x[3] - x[2] ** 2) ** 2
            + (1.0 - x[2]) ** 2 + 10.1 * ((x[1] - 1.0) ** 2 + (x[3] - 1.0) ** 2)
            + 19.8 * (x[1] - 1.0) * (x[3] - 1.0))


def _hs038():
    return _hs(38, _wood, [-3.0, -1.0, -3.0, -1.0], 0.0, np.ones(4), lower=-10.0, upper=10.0)


def _hs039():
    def constraint(x):
        return np.stack([x[1] - x[0] ** 3 - x[2] ** 2, x[0] ** 2 - x[1] - x[3] ** 2])

    return _hs(39, lambda x: -x[0], [2.0] * 4, -1.0, [1.0, 1.0, 0.0, 0.0], constraint, meq=2)


def _hs040():
    def constraint(x):
        return np.stack([x[0] ** 3 + x[1] ** 2 - 1.0, x[0] ** 2 * x[3] - x[2], x[3] ** 2 - x[1]])

    xmin = 2.0 ** -np.array([1.0 / 3.0, 0.5, 11.0 / 12.0, 0.25])
    return _hs(40, lambda x: -np.prod(x), [0.8] * 4, -0.25, xmin, constraint, meq=3)


def _hs041():
    return _hs(41, lambda x: 2.0 - x[0] * x[1] * x[2], [2.0] * 4, 52.0 / 27.0, [2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 2.0],
               lambda x: np.stack([x[0] + 2.0 * x[1] + 2.0 * x[2] - x[3]]), meq=1, lower=0.0,
               upper=[1.0, 1.0, 1.0, 2.0])


def _hs042():
    target = np.arange(1.0, 5.0)
    return _hs(42, lambda x: np.sum((x - target) ** 2), [1.0] * 4, 28.0 - 10.0 * SQRT2,
               [2.0, 2.0, 0.6 * SQRT2, 0.8 * SQRT2],
               lambda x: np.stack([x[0] - 2.0, x[2] ** 2 + x[3] ** 2 - 2.0]), meq=2)


def _hs043():
    def fun(x):
        return x[0] ** 2 + x[1] ** 2 + 2.0 * x[2] ** 2 + x[3] ** 2 - 5.0 * x[0] - 5.0 * x[1] - 21.0 * x[2] + 7.0 * x[3]

    def constraint(x):
        x1, x2, x3, x4 = x
        return np.stack([8.0 - x1 ** 2 - x2 ** 2 - x3 ** 2 - x4 ** 2 - x1 + x2 - x3 + x4,
                         10.0 - x1 ** 2 - 2.0 * x2 ** 2 - x3 ** 2 - 2.0 * x4 ** 2 + x1 + x4,
                         5.0 - 2.0 * x1 ** 2 - x2 ** 2 - x3 ** 2 - 2.0 * x1 + x2 + x4])

    return _hs(43, fun, [0.0] * 4, -44.0, [0.0, 1.0, 2.0, -1.0], constraint)


def _linear_inequalities(A, b):
    """``b - A x >= 0`` (HS44, HS76, HS86, ...: the book's linear rows)."""
    A, b = np.asarray(A, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return lambda x: b - A @ x


def _hs044():
    def fun(x):
        return x[0] - x[1] - x[2] - x[0] * x[2] + x[0] * x[3] + x[1] * x[2] - x[1] * x[3]

    A = [[1, 2, 0, 0], [4, 1, 0, 0], [3, 4, 0, 0], [0, 0, 2, 1], [0, 0, 1, 2], [0, 0, 1, 1]]
    return _hs(44, fun, [0.0] * 4, -15.0, [0.0, 3.0, 0.0, 4.0], _linear_inequalities(A, [8, 12, 12, 8, 8, 5]),
               lower=0.0)


def _hs045():
    return _hs(45, lambda x: 2.0 - np.prod(x) / 120.0, [2.0] * 5, 1.0, np.arange(1.0, 6.0), lower=0.0,
               upper=np.arange(1.0, 6.0))


def _hs046():
    def constraint(x):
        return np.stack([x[0] ** 2 * x[3] + np.sin(x[3] - x[4]) - 1.0, x[1] + x[2] ** 4 * x[3] ** 2 - 2.0])

    def fun(x):
        return (x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2 + (x[3] - 1.0) ** 4 + (x[4] - 1.0) ** 6

    return _hs(46, fun, [0.5 * SQRT2, 1.75, 0.5, 2.0, 2.0], 0.0, np.ones(5), constraint, meq=2)


def _hs047():
    def constraint(x):
        return np.stack([x[0] + x[1] ** 2 + x[2] ** 3 - 3.0, x[1] - x[2] ** 2 + x[3] - 1.0, x[0] * x[4] - 1.0])

    def fun(x):
        return (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 3 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 4

    return _hs(47, fun, [2.0, SQRT2, -1.0, 2.0 - SQRT2, 0.5], 0.0, np.ones(5), constraint, meq=3)


def _linear_equalities(A, b):
    """``A x - b = 0`` (HS48-HS53, HS55, HS119: the book's linear rows)."""
    A, b = np.asarray(A, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return lambda x: A @ x - b


def _hs048():
    return _hs(48, lambda x: (x[0] - 1.0) ** 2 + (x[1] - x[2]) ** 2 + (x[3] - x[4]) ** 2, [3.0, 5.0, -3.0, 2.0, -2.0],
               0.0, np.ones(5), _linear_equalities([[1, 1, 1, 1, 1], [0, 0, 1, -2, -2]], [5, -3]), meq=2)


def _hs049():
    def fun(x):
        return (x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2 + (x[3] - 1.0) ** 4 + (x[4] - 1.0) ** 6

    return _hs(49, fun, [10.0, 7.0, 2.0, -3.0, 0.8], 0.0, np.ones(5),
               _linear_equalities([[1, 1, 1, 4, 0], [0, 0, 1, 0, 5]], [7, 6]), meq=2)


def _hs050():
    def fun(x):
        return (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 2

    A = [[1, 2, 3, 0, 0], [0, 1, 2, 3, 0], [0, 0, 1, 2, 3]]
    return _hs(50, fun, [35.0, -31.0, 11.0, 5.0, -5.0], 0.0, np.ones(5), _linear_equalities(A, [6, 6, 6]), meq=3)


def _hs051_objective(x):
    return (x[0] - x[1]) ** 2 + (x[1] + x[2] - 2.0) ** 2 + (x[3] - 1.0) ** 2 + (x[4] - 1.0) ** 2


_HS051_ROWS = [[1, 3, 0, 0, 0], [0, 0, 1, 1, -2], [0, 1, 0, 0, -1]]


def _hs051():
    return _hs(51, _hs051_objective, [2.5, 0.5, 2.0, -1.0, 0.5], 0.0, np.ones(5),
               _linear_equalities(_HS051_ROWS, [4, 0, 0]), meq=3)


def _hs052():
    def fun(x):
        return (4.0 * x[0] - x[1]) ** 2 + (x[1] + x[2] - 2.0) ** 2 + (x[3] - 1.0) ** 2 + (x[4] - 1.0) ** 2

    return _hs(52, fun, [2.0] * 5, 1859.0 / 349.0, np.array([-33.0, 11.0, 180.0, -158.0, 11.0]) / 349.0,
               _linear_equalities(_HS051_ROWS, [0, 0, 0]), meq=3)


def _hs053():
    return _hs(53, _hs051_objective, [2.0] * 5, 176.0 / 43.0, np.array([-33.0, 11.0, 27.0, -5.0, 11.0]) / 43.0,
               _linear_equalities(_HS051_ROWS, [0, 0, 0]), meq=3, lower=-10.0, upper=10.0)


def _hs054():
    def fun(x):
        a, b = x[0] - 1e4, x[1] - 1.0
        h = ((a ** 2 / 6.4e7 + a * b / 2e4 + b ** 2) / 0.96 + (x[2] - 2e6) ** 2 / 4.9e13
             + (x[3] - 10.0) ** 2 / 2500.0 + (x[4] - 1e-3) ** 2 / 2.5e-3 + (x[5] - 1e8) ** 2 / 2.5e17)
        return -np.exp(-0.5 * h)

    return _hs(54, fun, [6e3, 1.5, 4e6, 2.0, 3e-3, 5e7], -0.9080748,
               [91600.0 / 7.0, 79.0 / 70.0, 2e6, 10.0, 1e-3, 1e8],
               lambda x: np.stack([x[0] + 4e3 * x[1] - 1.76e4]), meq=1, lower=[0.0, -10.0, 0.0, 0.0, -1.0, 0.0],
               upper=[2e4, 10.0, 1e7, 20.0, 1.0, 2e8])


def _hs055():
    A = [[1, 2, 0, 0, 5, 0], [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1], [1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0],
         [0, 0, 1, 0, 0, 1]]
    return _hs(55, lambda x: x[0] + 2.0 * x[1] + 4.0 * x[4] + np.exp(x[0] * x[3]), [1.0, 2.0, 0.0, 0.0, 0.0, 2.0],
               19.0 / 3.0, [0.0, 4.0 / 3.0, 5.0 / 3.0, 1.0, 2.0 / 3.0, 1.0 / 3.0],
               _linear_equalities(A, [6, 3, 2, 1, 2, 2]), meq=6, lower=0.0,
               upper=[1.0, np.inf, np.inf, 1.0, np.inf, np.inf])


def _hs056():
    def constraint(x):
        s = np.sin(x[3:]) ** 2
        return np.stack([x[0] - 4.2 * s[0], x[1] - 4.2 * s[1], x[2] - 4.2 * s[2],
                         x[0] + 2.0 * x[1] + 2.0 * x[2] - 7.2 * s[3]])

    a, b = np.arcsin(np.sqrt(1.0 / 4.2)), np.arcsin(np.sqrt(5.0 / 7.2))
    c, d = np.arcsin(np.sqrt(4.0 / 7.0)), np.arcsin(np.sqrt(2.0 / 7.0))
    return _hs(56, lambda x: -x[0] * x[1] * x[2], [1.0, 1.0, 1.0, a, a, a, b], -3.456,
               [2.4, 1.2, 1.2, c, d, d, 0.5 * np.pi], constraint, meq=4)


_HS057_A = np.repeat(np.arange(8.0, 44.0, 2.0), [2, 4, 4, 3, 3, 2, 3, 3, 3, 3, 2, 3, 2, 1, 2, 2, 1, 1])
_HS057_B = np.array([0.49, 0.49, 0.48, 0.47, 0.48, 0.47, 0.46, 0.46, 0.45, 0.43, 0.45, 0.43, 0.43, 0.44, 0.43,
                     0.43, 0.46, 0.45, 0.42, 0.42, 0.43, 0.41, 0.41, 0.40, 0.42, 0.40, 0.40, 0.41, 0.40, 0.41,
                     0.41, 0.40, 0.40, 0.40, 0.38, 0.41, 0.40, 0.40, 0.41, 0.38, 0.40, 0.40, 0.39, 0.39])


def _hs057():
    def fun(x):
        r = _HS057_B - x[0] - (0.49 - x[0]) * np.exp(-x[1] * (_HS057_A - 8.0))
        return r @ r

    return _hs(57, fun, [0.42, 5.0], 0.02845966972, [0.419952675, 1.284845629],
               lambda x: np.stack([0.49 * x[1] - x[0] * x[1] - 0.09]), lower=[0.4, -4.0])


# --------------------------------------------------------------------------------------------------
# HS59-HS86
# --------------------------------------------------------------------------------------------------


def _hs059():
    def fun(x):
        x1, x2 = x
        return (-75.196 + 3.8112 * x1 + 0.0020567 * x1 ** 3 - 1.0345e-5 * x1 ** 4 + 6.8306 * x2
                - 0.030234 * x1 * x2 + 1.28134e-3 * x2 * x1 ** 2 + 2.266e-7 * x1 ** 4 * x2 - 0.25645 * x2 ** 2
                + 0.0034604 * x2 ** 3 - 1.3514e-5 * x2 ** 4 + 28.106 / (x2 + 1.0)
                + 5.2375e-6 * x1 ** 2 * x2 ** 2 + 6.3e-8 * x1 ** 3 * x2 ** 2 - 7e-10 * x1 ** 3 * x2 ** 3
                - 3.405e-4 * x1 * x2 ** 2 + 1.6638e-6 * x1 * x2 ** 3 + 2.8673 * np.exp(0.0005 * x1 * x2)
                - 3.5256e-5 * x1 ** 3 * x2 - 0.12694 * x1 ** 2)

    def constraint(x):
        return np.stack([x[0] * x[1] - 700.0, x[1] - x[0] ** 2 / 125.0, (x[1] - 50.0) ** 2 - 5.0 * (x[0] - 55.0)])

    return _hs(59, fun, [90.0, 10.0], -7.802789, None, constraint, lower=0.0, upper=[75.0, 65.0],
               notes="the x* recalled here, (13.55010424, 51.66018129), gives f = -7.8027799, above f* in "
                     "the sixth digit; the minimum is at (13.55014, 51.65997), computed here")


def _hs060():
    def fun(x):
        return (x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 4

    return _hs(60, fun, [2.0] * 3, 0.03256820025, [1.104859024, 1.196674194, 1.535262257],
               lambda x: np.stack([x[0] * (1.0 + x[1] ** 2) + x[2] ** 4 - 4.0 - 3.0 * SQRT2]), meq=1,
               lower=-10.0, upper=10.0)


def _hs061():
    def fun(x):
        return 4.0 * x[0] ** 2 + 2.0 * x[1] ** 2 + 2.0 * x[2] ** 2 - 33.0 * x[0] + 16.0 * x[1] - 24.0 * x[2]

    return _hs(61, fun, [0.0] * 3, -143.6461422, [5.326770157, -2.118998639, 3.210464239],
               lambda x: np.stack([3.0 * x[0] - 2.0 * x[1] ** 2 - 7.0, 4.0 * x[0] - x[2] ** 2 - 11.0]), meq=2)


def _hs062():
    def fun(x):
        s3 = x[2] + 0.03
        s2 = x[1] + s3
        return -32.174 * (255.0 * np.log((x[0] + s2) / (0.09 * x[0] + s2))
                          + 280.0 * np.log(s2 / (0.07 * x[1] + s3)) + 290.0 * np.log(s3 / (0.13 * x[2] + 0.03)))

    return _hs(62, fun, [0.7, 0.2, 0.1], -26272.51448, [0.6178126908, 0.328202223, 0.05398508606],
               lambda x: np.stack([x[0] + x[1] + x[2] - 1.0]), meq=1, lower=0.0, upper=1.0)


def _hs063():
    def fun(x):
        return 1000.0 - x[0] ** 2 - 2.0 * x[1] ** 2 - x[2] ** 2 - x[0] * x[1] - x[0] * x[2]

    return _hs(63, fun, [2.0] * 3, 961.7151721, [3.512118414, 0.2169881741, 3.552174034],
               lambda x: np.stack([8.0 * x[0] + 14.0 * x[1] + 7.0 * x[2] - 56.0, x @ x - 25.0]), meq=2, lower=0.0)


def _hs064():
    def fun(x):
        return 5.0 * x[0] + 50000.0 / x[0] + 20.0 * x[1] + 72000.0 / x[1] + 10.0 * x[2] + 144000.0 / x[2]

    return _hs(64, fun, [1.0] * 3, 6299.842428, [108.7347175, 85.12613942, 204.3247078],
               lambda x: np.stack([1.0 - 4.0 / x[0] - 32.0 / x[1] - 120.0 / x[2]]), lower=1e-5)


def _hs065():
    def fun(x):
        return (x[0] - x[1]) ** 2 + (x[0] + x[1] - 10.0) ** 2 / 9.0 + (x[2] - 5.0) ** 2

    return _hs(65, fun, [-5.0, 5.0, 0.0], 0.9535288567, None, lambda x: np.stack([48.0 - x @ x]),
               lower=[-4.5, -4.5, -5.0], upper=[4.5, 4.5, 5.0],
               notes="x* not recalled to its printed digits: (3.6504617, 3.6504617, 4.6204176), computed here")


def _hs066():
    return _hs(66, lambda x: 0.2 * x[2] - 0.8 * x[0], [0.0, 1.05, 2.9], 0.5181632741,
               [0.1841264879, 1.202167873, 3.327322322], _exponential_chain, lower=0.0,
               upper=[100.0, 100.0, 10.0])


def _hs071():
    def constraint(x):
        return np.stack([x @ x - 40.0, np.prod(x) - 25.0])

    return _hs(71, lambda x: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2], [1.0, 5.0, 5.0, 1.0], 17.0140173,
               [1.0, 4.7429994, 3.8211503, 1.3794082], constraint, meq=1, lower=1.0, upper=5.0,
               notes="the IPOPT tutorial problem (hs071)")


def _hs072():
    def constraint(x):
        return np.stack([0.0401 - 4.0 / x[0] - 2.25 / x[1] - 1.0 / x[2] - 0.25 / x[3],
                         0.010085 - 0.16 / x[0] - 0.36 / x[1] - 0.64 / x[2] - 0.64 / x[3]])

    return _hs(72, lambda x: 1.0 + np.sum(x), [1.0] * 4, 727.67937, [193.4071, 179.5475, 185.0186, 168.7062],
               constraint, lower=0.001, upper=(5.0 - np.arange(1.0, 5.0)) * 1e5)


def _hs073():
    def constraint(x):
        spread = np.sqrt(0.28 * x[0] ** 2 + 0.19 * x[1] ** 2 + 20.5 * x[2] ** 2 + 0.62 * x[3] ** 2)
        return np.stack([np.sum(x) - 1.0, 2.3 * x[0] + 5.6 * x[1] + 11.1 * x[2] + 1.3 * x[3] - 5.0,
                         12.0 * x[0] + 11.9 * x[1] + 41.8 * x[2] + 52.1 * x[3] - 21.0 - 1.645 * spread])

    return _hs(73, lambda x: 24.55 * x[0] + 26.75 * x[1] + 39.0 * x[2] + 40.50 * x[3], [1.0] * 4, 29.894378,
               [0.6355216, -0.12e-11, 0.3127019, 0.05177655], constraint, meq=1, lower=0.0)


def _power_dispatch(a: float):
    """HS74 and HS75 (a = 0.55, 0.48): two generators and three buses (Beuneu 1970)."""
    def constraint(x):
        return np.stack([1000.0 * np.sin(-x[2] - 0.25) + 1000.0 * np.sin(-x[3] - 0.25) + 894.8 - x[0],
                         1000.0 * np.sin(x[2] - 0.25) + 1000.0 * np.sin(x[2] - x[3] - 0.25) + 894.8 - x[1],
                         1000.0 * np.sin(x[3] - 0.25) + 1000.0 * np.sin(x[3] - x[2] - 0.25) + 1294.8,
                         x[3] - x[2] + a, x[2] - x[3] + a])

    def fun(x):
        return 3.0 * x[0] + 1e-6 * x[0] ** 3 + 2.0 * x[1] + 2e-6 / 3.0 * x[1] ** 3

    return fun, constraint, [0.0, 0.0, -a, -a], [1200.0, 1200.0, a, a]


def _hs074():
    fun, constraint, lower, upper = _power_dispatch(0.55)
    return _hs(74, fun, [0.0] * 4, 5126.4981, [679.9453, 1026.067, 0.1188764, -0.3962336], constraint, meq=3,
               lower=lower, upper=upper)


def _hs075():
    fun, constraint, lower, upper = _power_dispatch(0.48)
    return _hs(75, fun, [0.0] * 4, 5174.4129, [776.1592, 925.1949, 0.05110879, -0.4288911], constraint, meq=3,
               lower=lower, upper=upper)


def _hs076():
    def fun(x):
        return (x[0] ** 2 + 0.5 * x[1] ** 2 + x[2] ** 2 + 0.5 * x[3] ** 2 - x[0] * x[2] + x[2] * x[3] - x[0]
                - 3.0 * x[1] + x[2] - x[3])

    A = [[1, 2, 1, 1], [3, 1, 2, -1], [0, -1, -4, 0]]
    return _hs(76, fun, [0.5] * 4, -4.681818181, [0.2727273, 2.090909, -0.26e-10, 0.5454545],
               _linear_inequalities(A, [5.0, 4.0, -1.5]), lower=0.0)


def _hs077():
    def constraint(x):
        return np.stack([x[0] ** 2 * x[3] + np.sin(x[3] - x[4]) - 2.0 * SQRT2,
                         x[1] + x[2] ** 4 * x[3] ** 2 - 8.0 - SQRT2])

    def fun(x):
        return (x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[2] - 1.0) ** 2 + (x[3] - 1.0) ** 4 + (x[4] - 1.0) ** 6

    return _hs(77, fun, [2.0] * 5, 0.24150513, [1.166172, 1.182111, 1.380257, 1.506036, 0.6109203], constraint,
               meq=2)


def _sphere_products(x):
    """HS78, HS80, HS81: |x|^2 = 10, x2 x3 = 5 x4 x5, x1^3 + x2^3 = -1."""
    return np.stack([x @ x - 10.0, x[1] * x[2] - 5.0 * x[3] * x[4], x[0] ** 3 + x[1] ** 3 + 1.0])


_HS078_XMIN = [-1.717143, 1.595709, 1.827247, -0.7636413, -0.7636450]


def _hs078():
    return _hs(78, np.prod, [-2.0, 1.5, 2.0, -1.0, -1.0], -2.91970041, _HS078_XMIN, _sphere_products, meq=3)


def _hs079():
    def constraint(x):
        return np.stack([x[0] + x[1] ** 2 + x[2] ** 3 - 2.0 - 3.0 * SQRT2, x[1] - x[2] ** 2 + x[3] + 2.0 - 2.0 * SQRT2,
                         x[0] * x[4] - 2.0])

    def fun(x):
        return (x[0] - 1.0) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 4

    return _hs(79, fun, [2.0] * 5, 0.0787768209, [1.191127, 1.362603, 1.472818, 1.635017, 1.679081], constraint,
               meq=3)


def _hs080():
    return _hs(80, lambda x: np.exp(np.prod(x)), [-2.0, 2.0, 2.0, -1.0, -1.0], 0.0539498478, _HS078_XMIN,
               _sphere_products, meq=3, lower=[-2.3, -2.3, -3.2, -3.2, -3.2], upper=[2.3, 2.3, 3.2, 3.2, 3.2])


def _hs081():
    def fun(x):
        return np.exp(np.prod(x)) - 0.5 * (x[0] ** 3 + x[1] ** 3 + 1.0) ** 2

    return _hs(81, fun, [-2.0, 2.0, 2.0, -1.0, -1.0], 0.0539498478, _HS078_XMIN, _sphere_products, meq=3,
               lower=[-2.3, -2.3, -3.2, -3.2, -3.2], upper=[2.3, 2.3, 3.2, 3.2, 3.2])


def _hs083():
    def constraint(x):
        x1, x2, x3, x4, x5 = x
        u = 85.334407 + 0.0056858 * x2 * x5 + 0.0006262 * x1 * x4 - 0.0022053 * x3 * x5
        v = 80.51249 + 0.0071317 * x2 * x5 + 0.0029955 * x1 * x2 + 0.0021813 * x3 ** 2
        w = 9.300961 + 0.0047026 * x3 * x5 + 0.0012547 * x1 * x3 + 0.0019085 * x3 * x4
        return np.stack([u, 92.0 - u, v - 90.0, 110.0 - v, w - 20.0, 25.0 - w])

    def fun(x):
        return 5.3578547 * x[2] ** 2 + 0.8356891 * x[0] * x[4] + 37.293239 * x[0] - 40792.141

    return _hs(83, fun, [78.0, 33.0, 27.0, 27.0, 27.0], -30665.53867, [78.0, 33.0, 29.99526, 45.0, 36.77581],
               constraint, lower=[78.0, 33.0, 27.0, 27.0, 27.0], upper=[102.0, 45.0, 45.0, 45.0, 45.0],
               notes="Colville's problem 3 (Himmelblau's problem 11)")


_HS084_A = np.array([-24345.0, -8720288.849, 150512.5253, -156.6950325, 476470.3222, 729482.8271,
                     -145421.402, 2931.1506, -40.427932, 5106.192, 15711.36,
                     -155011.1084, 4360.53352, 12.9492344, 10236.884, 13176.786,
                     -326669.5104, 7390.68412, -27.8986976, 16643.076, 30988.146])


def _hs084():
    a = _HS084_A
    products = a[6:].reshape(3, 5)

    def terms(x):
        return x[0] * np.stack([1.0, x[1], x[2], x[3], x[4]])

    def constraint(x):
        c = products @ terms(x)
        return np.concatenate([c, np.array([294000.0, 294000.0, 277200.0]) - c])

    return _hs(84, lambda x: -a[0] - a[1:6] @ terms(x), [2.52, 2.0, 37.5, 9.25, 6.8], -5280335.133,
               [4.53743097, 2.4, 60.0, 9.3, 7.0], constraint, lower=[0.0, 1.2, 20.0, 9.0, 6.5],
               upper=[1000.0, 2.4, 60.0, 9.3, 7.0])


# Colville's problem 2 (HS86) and its dual (HS117)
_COLVILLE_A = np.array([[-16, 2, 0, 1, 0], [0, -2, 0, 4, 2], [-3.5, 0, 2, 0, 0], [0, -2, 0, -4, -1],
                        [0, -9, -2, 1, -2.8], [2, 0, -4, 0, 0], [-1, -1, -1, -1, -1], [-1, -2, -3, -2, -1],
                        [1, 2, 3, 4, 5], [1, 1, 1, 1, 1]])
_COLVILLE_B = np.array([-40, -2, -0.25, -4, -4, -1, -40, -60, 5, 1])
_COLVILLE_C = np.array([[30, -20, -10, 32, -10], [-20, 39, -6, -31, 32], [-10, -6, 10, -6, -10],
                        [32, -31, -6, 39, -20], [-10, 32, -10, -20, 30]], dtype=np.float64)
_COLVILLE_D = np.array([4.0, 8.0, 10.0, 6.0, 2.0])
_COLVILLE_E = np.array([-15.0, -27.0, -36.0, -18.0, -12.0])


def _hs086():
    def fun(x):
        return _COLVILLE_E @ x + x @ (_COLVILLE_C @ x) + _COLVILLE_D @ x ** 3

    return _hs(86, fun, [0.0, 0.0, 0.0, 0.0, 1.0], -32.34867897, [0.3, 0.33346761, 0.4, 0.42831010, 0.22396487],
               _linear_inequalities(-_COLVILLE_A, -_COLVILLE_B), lower=0.0)


# --------------------------------------------------------------------------------------------------
# HS93-HS119
# --------------------------------------------------------------------------------------------------


def _transformer(x):
    """HS93's two cost terms: x1 x4 (x1 + x2 + x3) and x2 x3 (x1 + 1.57 x2 + x4)."""
    return x[0] * x[3] * (x[0] + x[1] + x[2]), x[1] * x[2] * (x[0] + 1.57 * x[1] + x[3])


def _hs093():
    def fun(x):
        a, b = _transformer(x)
        return 0.0204 * a + 0.0187 * b + 0.0607 * a * x[4] ** 2 + 0.0437 * b * x[5] ** 2

    def constraint(x):
        a, b = _transformer(x)
        return np.stack([0.001 * np.prod(x) - 2.07, 1.0 - 0.00062 * a * x[4] ** 2 - 0.00058 * b * x[5] ** 2])

    return _hs(93, fun, [5.54, 4.4, 12.02, 11.82, 0.702, 0.852], 135.075961,
               [5.332666, 4.656744, 10.43299, 12.08230, 0.7526074, 0.87865084], constraint, lower=0.0,
               notes="transformer design (Bartholomew-Biggs 1976)")


def _refinery(number: int, b, fmin: float, xmin) -> Problem:
    """HS95-HS98: one linear objective and four bilinear rows, differing in the right-hand side b."""
    def constraint(x):
        x1, x2, x3, x4, x5, x6 = x
        return np.stack([17.1 * x1 + 38.2 * x2 + 204.2 * x3 + 212.3 * x4 + 623.4 * x5 + 1495.5 * x6
                         - 169.0 * x1 * x3 - 3580.0 * x3 * x5 - 3810.0 * x4 * x5 - 18500.0 * x4 * x6
                         - 24300.0 * x5 * x6 - b[0],
                         17.9 * x1 + 36.8 * x2 + 113.9 * x3 + 169.7 * x4 + 337.8 * x5 + 1385.2 * x6
                         - 139.0 * x1 * x3 - 2450.0 * x4 * x5 - 16600.0 * x4 * x6 - 17200.0 * x5 * x6 - b[1],
                         -273.0 * x2 - 70.0 * x4 - 819.0 * x5 + 26000.0 * x4 * x5 - b[2],
                         159.9 * x1 - 311.0 * x2 + 587.0 * x4 + 391.0 * x5 + 2198.0 * x6 - 14000.0 * x1 * x6 - b[3]])

    cost = np.array([4.3, 31.8, 63.3, 15.8, 68.5, 4.7])
    return _hs(number, lambda x: cost @ x, [0.0] * 6, fmin, xmin, constraint, lower=0.0,
               upper=[0.31, 0.046, 0.068, 0.042, 0.028, 0.0134])


def _hs095():
    return _refinery(95, [4.97, -1.88, -29.08, -78.02], 0.015619514, [0.0, 0.0, 0.0, 0.0, 0.0, 0.003323])


def _hs096():
    return _refinery(96, [4.97, -1.88, -69.08, -118.02], 0.015619514, [0.0, 0.0, 0.0, 0.0, 0.0, 0.003323])


def _hs097():
    return _refinery(97, [32.97, 25.12, -29.08, -78.02], 3.1358091, [0.2685649, 0.0, 0.0, 0.0, 0.028, 0.0134])


def _hs098():
    return _refinery(98, [32.97, 25.12, -124.08, -173.02], 3.1358091, [0.2685649, 0.0, 0.0, 0.0, 0.028, 0.0134])


def _hs099():
    t = np.array([0.0, 25.0, 50.0, 100.0, 150.0, 200.0, 290.0, 380.0])
    a = np.array([50.0, 50.0, 75.0, 75.0, 75.0, 100.0, 100.0])
    dt = np.diff(t)

    def constraint(x):
        w = a * np.sin(x) - 32.0
        s = np.cumsum(dt * w)
        q = np.sum(0.5 * dt ** 2 * w) + dt[1:] @ s[:-1]
        return np.stack([q - 1e5, s[-1] - 1e3])

    return _hs(99, lambda x: -(np.sum(a * dt * np.cos(x))) ** 2, [0.5] * 7, -831079891.5, None, constraint,
               meq=2, lower=0.0, upper=1.58,
               notes="x* not recalled to its printed digits: (0.5424678, 0.5290214, 0.5084492, 0.4802689, "
                     "0.4512363, 0.4091831, 0.3527879), computed here")


def _hs100():
    def fun(x):
        return ((x[0] - 10.0) ** 2 + 5.0 * (x[1] - 12.0) ** 2 + x[2] ** 4 + 3.0 * (x[3] - 11.0) ** 2
                + 10.0 * x[4] ** 6 + 7.0 * x[5] ** 2 + x[6] ** 4 - 4.0 * x[5] * x[6] - 10.0 * x[5] - 8.0 * x[6])

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7 = x
        return np.stack([127.0 - 2.0 * x1 ** 2 - 3.0 * x2 ** 4 - x3 - 4.0 * x4 ** 2 - 5.0 * x5,
                         282.0 - 7.0 * x1 - 3.0 * x2 - 10.0 * x3 ** 2 - x4 + x5,
                         196.0 - 23.0 * x1 - x2 ** 2 - 6.0 * x6 ** 2 + 8.0 * x7,
                         -4.0 * x1 ** 2 - x2 ** 2 + 3.0 * x1 * x2 - 2.0 * x3 ** 2 - 5.0 * x6 + 11.0 * x7])

    return _hs(100, fun, [1.0, 2.0, 0.0, 4.0, 0.0, 1.0, 1.0], 680.6300573,
               [2.330499, 1.951372, -0.4775414, 4.365726, -0.6244870, 1.038131, 1.594227], constraint)


def _posynomial(coefficients, exponents):
    """x -> sum_k c_k prod_i x_i^(E_ki), for x > 0 (HS101-HS103)."""
    coefficients, exponents = np.asarray(coefficients, dtype=np.float64), np.asarray(exponents, dtype=np.float64)
    return lambda x: coefficients @ np.exp(exponents @ np.log(x))


# exponents of x1..x7 in each term (rows), as printed for HS101-HS103
_HS101_G1 = [[0.5, 0, -1, 0, 0, -2, 1], [3, 1, -2, 0, 0, 1, 0.5], [0, -1, 1, -0.5, 0, 2.0 / 3.0, 0.25]]
_HS101_G2 = [[-0.5, 1, -1, 0, -1, 1, 0], [0, 0, 1, -1, -1, 2, 0], [-1, 0.5, 0, -2, -1, 1.0 / 3.0, 0]]
_HS101_G3 = [[1, 0, -1.5, 0, 1, -1, 1.0 / 3.0], [0, 1, -0.5, 0, 1, -1, -0.5], [-1, 1, 0.5, 0, 1, 0, 0],
             [0, -2, 1, 0, 1, -1, 1]]
_HS101_G4 = [[-2, 1, 0, -1, 0.5, 0, 1.0 / 3.0], [0.5, 2, 1, 1.0 / 3.0, -2.0 / 3.0, 0, 0.25], [-3, -2, 1, 0, 1, 0, 0.75],
             [0, 0, -2, 1, 0, 0, 0.5]]


def _hs101_family(number: int, a: float, fmin: float, xmin, notes: str = "") -> Problem:
    """HS101-HS103: a posynomial objective (the exponent a of x7 in its first term differs) and four
    posynomial constraints, with 100 <= f(x) <= 3000 as two more (Beck & Ecker 1975)."""
    fun = _posynomial([10.0, 15.0, 20.0, 25.0], [[1, -1, 0, 2, 0, -3, a], [-1, -2, 1, 1, -1, 0, -0.5],
                                                [-2, 1, 0, -1, -2, 1, 0], [2, 2, -1, 0, 0.5, -2, 1]])
    parts = [_posynomial([0.5, 0.7, 0.2], _HS101_G1), _posynomial([1.3, 0.8, 3.1], _HS101_G2),
             _posynomial([2.0, 0.1, 1.0, 0.65], _HS101_G3), _posynomial([0.2, 0.3, 0.4, 0.5], _HS101_G4)]

    def constraint(x):
        value = fun(x)
        return np.stack([1.0 - part(x) for part in parts] + [value - 100.0, 3000.0 - value])

    return _hs(number, fun, [6.0] * 7, fmin, xmin, constraint, lower=[0.1] * 6 + [0.01], upper=10.0, notes=notes)


def _hs101():
    return _hs101_family(101, -0.25, 1809.76476,
                         [2.856159, 0.6108230, 2.150813, 4.712874, 0.9994875, 1.347508, 0.03165277])


def _hs102():
    return _hs101_family(102, 0.125, 911.880571, None,
                         "x* not recalled to its printed digits: (3.896253, 0.8093588, 2.664386, 4.300913, "
                         "0.8535549, 1.095287, 0.02731046), computed here")


def _hs103():
    return _hs101_family(103, 0.5, 543.667958, None,
                         "x* not recalled to its printed digits: (4.394105, 0.8544687, 2.843230, 3.399979, "
                         "0.7229261, 0.8704064, 0.02463883), computed here")


def _hs104():
    def fun(x):
        return 0.4 * (x[0] / x[6]) ** 0.67 + 0.4 * (x[1] / x[7]) ** 0.67 + 10.0 - x[0] - x[1]

    def constraint(x):
        value = fun(x)
        return np.stack([1.0 - 0.0588 * x[4] * x[6] - 0.1 * x[0],
                         1.0 - 0.0588 * x[5] * x[7] - 0.1 * x[0] - 0.1 * x[1],
                         1.0 - 4.0 * x[2] / x[4] - 2.0 / (x[2] ** 0.71 * x[4]) - 0.0588 * x[6] / x[2] ** 1.3,
                         1.0 - 4.0 * x[3] / x[5] - 2.0 / (x[3] ** 0.71 * x[5]) - 0.0588 * x[7] / x[3] ** 1.3,
                         value - 0.1, 4.2 - value])

    return _hs(104, fun, [6.0, 3.0, 0.4, 0.2, 6.0, 6.0, 1.0, 0.5], 3.9511634396,
               [6.465114, 2.232709, 0.6673975, 0.5957564, 5.932676, 5.527235, 1.013322, 0.4006682], constraint,
               lower=0.1, upper=10.0)


def _hs106():
    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8 = x
        return np.stack([1.0 - 0.0025 * (x4 + x6), 1.0 - 0.0025 * (x5 + x7 - x4), 1.0 - 0.01 * (x8 - x5),
                         x1 * x6 - 833.33252 * x4 - 100.0 * x1 + 83333.333,
                         x2 * x7 - 1250.0 * x5 - x2 * x4 + 1250.0 * x4,
                         x3 * x8 - 1250000.0 - x3 * x5 + 2500.0 * x5])

    return _hs(106, lambda x: x[0] + x[1] + x[2], [5000.0, 5000.0, 5000.0, 200.0, 350.0, 150.0, 225.0, 425.0],
               7049.24802052867,
               [579.306685, 1359.97068, 5109.97066, 182.017700, 295.601174, 217.982300, 286.416526, 395.601174],
               constraint, lower=[100.0, 1000.0, 1000.0] + [10.0] * 5, upper=[10000.0] * 3 + [1000.0] * 5,
               notes="heat exchanger design (Avriel & Williams 1971). The book prints f* = 7049.330923 at "
                     "(579.3167, 1359.943, 5110.071, 182.0174, 295.5985, 217.9799, 286.4162, 395.5979), "
                     "feasible but not minimal; f* and x* here are problem g10 of the CEC 2006 set "
                     "(Liang et al. 2006), which IPOPT reaches from x0")


def _hs107():
    c, d = 48.4 / 50.176 * np.sin(0.25), 48.4 / 50.176 * np.cos(0.25)

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
        y1, y2, y3, y4 = np.sin(x8), np.cos(x8), np.sin(x9), np.cos(x9)
        y5, y6 = np.sin(x8 - x9), np.cos(x8 - x9)
        return np.stack([0.4 - x1 + 2.0 * c * x5 ** 2 - x5 * x6 * (d * y1 + c * y2) - x5 * x7 * (d * y3 + c * y4),
                         0.4 - x2 + 2.0 * c * x6 ** 2 + x5 * x6 * (d * y1 - c * y2) + x6 * x7 * (d * y5 - c * y6),
                         0.8 + 2.0 * c * x7 ** 2 + x5 * x7 * (d * y3 - c * y4) - x6 * x7 * (d * y5 + c * y6),
                         0.2 - x3 + 2.0 * d * x5 ** 2 + x5 * x6 * (c * y1 - d * y2) + x5 * x7 * (c * y3 - d * y4),
                         0.2 - x4 + 2.0 * d * x6 ** 2 - x5 * x6 * (c * y1 + d * y2) - x6 * x7 * (c * y5 + d * y6),
                         -0.337 + 2.0 * d * x7 ** 2 - x5 * x7 * (c * y3 + d * y4) + x6 * x7 * (c * y5 - d * y6)])

    def fun(x):
        return 3000.0 * x[0] + 1000.0 * x[0] ** 3 + 2000.0 * x[1] + 666.667 * x[1] ** 3

    return _hs(107, fun, [0.8, 0.8, 0.2, 0.2, 1.0454, 1.0454, 1.0454, 0.0, 0.0], 5055.011803,
               [0.6670095, 1.022388, 0.2282879, 0.1848217, 1.090900, 1.090900, 1.069036, 0.1066126, -0.3387867],
               constraint, meq=6, lower=[0.0, 0.0, -np.inf, -np.inf, 0.90909, 0.90909, 0.90909, -np.inf, -np.inf],
               upper=[np.inf] * 4 + [1.0909] * 3 + [np.inf] * 2, notes="static power scheduling (Bartholomew-Biggs)")


def _hs108():
    def fun(x):
        return -0.5 * (x[0] * x[3] - x[1] * x[2] + x[2] * x[8] - x[4] * x[8] + x[4] * x[7] - x[5] * x[6])

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
        return np.stack([1.0 - x3 ** 2 - x4 ** 2, 1.0 - x9 ** 2, 1.0 - x5 ** 2 - x6 ** 2,
                         1.0 - x1 ** 2 - (x2 - x9) ** 2, 1.0 - (x1 - x5) ** 2 - (x2 - x6) ** 2,
                         1.0 - (x1 - x7) ** 2 - (x2 - x8) ** 2, 1.0 - (x3 - x5) ** 2 - (x4 - x6) ** 2,
                         1.0 - (x3 - x7) ** 2 - (x4 - x8) ** 2, 1.0 - x7 ** 2 - (x8 - x9) ** 2,
                         x1 * x4 - x2 * x3, x3 * x9, -x5 * x9, x5 * x8 - x6 * x7])

    return _hs(108, fun, [1.0] * 9, -0.8660254038,
               [0.8841292, 0.4672425, 0.03742076, 0.9992996, 0.8841292, 0.4672424, 0.03742076, 0.9992996, 0.0],
               constraint, lower=[-np.inf] * 8 + [0.0], notes="the largest hexagon of diameter 1 (Pearson 1969)")


def _hs109():
    a, b, c = 50.176, np.sin(0.25), np.cos(0.25)

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
        return np.stack([
            x5 * x6 * np.sin(-x3 - 0.25) + x5 * x7 * np.sin(-x4 - 0.25) + 2.0 * b * x5 ** 2 - a * x1 + 400.0 * a,
            x5 * x6 * np.sin(x3 - 0.25) + x6 * x7 * np.sin(x3 - x4 - 0.25) + 2.0 * b * x6 ** 2 - a * x2 + 400.0 * a,
            x5 * x7 * np.sin(x4 - 0.25) + x6 * x7 * np.sin(x4 - x3 - 0.25) + 2.0 * b * x7 ** 2 + 881.779 * a,
            a * x8 + x5 * x6 * np.cos(-x3 - 0.25) + x5 * x7 * np.cos(-x4 - 0.25) - 200.0 * a - 2.0 * c * x5 ** 2
            + 0.7533e-3 * a * x5 ** 2,
            a * x9 + x5 * x6 * np.cos(x3 - 0.25) + x6 * x7 * np.cos(x3 - x4 - 0.25) - 2.0 * c * x6 ** 2
            + 0.7533e-3 * a * x6 ** 2 - 200.0 * a,
            x5 * x7 * np.cos(x4 - 0.25) + x6 * x7 * np.cos(x4 - x3 - 0.25) - 2.0 * c * x7 ** 2 - 22.938 * a
            + 0.7533e-3 * a * x7 ** 2,
            x4 - x3 + 0.55, x3 - x4 + 0.55, 2250000.0 - x1 ** 2 - x8 ** 2, 2250000.0 - x2 ** 2 - x9 ** 2])

    def fun(x):
        return 3.0 * x[0] + 1e-6 * x[0] ** 3 + 2.0 * x[1] + 0.522074e-6 * x[1] ** 3

    return _hs(109, fun, [0.0] * 9, 5362.06928,
               [674.8882, 1134.170, 0.1335691, -0.3711526, 252.0, 252.0, 201.4651, 426.6209, 368.4801],
               constraint, meq=6, lower=[0.0, 0.0, -0.55, -0.55, 196.0, 196.0, 196.0, -400.0, -400.0],
               upper=[np.inf, np.inf, 0.55, 0.55, 252.0, 252.0, 252.0, 800.0, 800.0])


def _hs110():
    def fun(x):
        return np.sum(np.log(x - 2.0) ** 2 + np.log(10.0 - x) ** 2) - np.prod(x) ** 0.2

    return _hs(110, fun, [9.0] * 10, -45.77846971, [9.35025655] * 10, lower=2.001, upper=9.999)


_CHEMICAL_C = np.array([-6.089, -17.164, -34.054, -5.914, -24.721, -14.986, -24.100, -10.708, -26.662, -22.179])
_CHEMICAL_A = np.array([[1, 2, 2, 0, 0, 1, 0, 0, 0, 1], [0, 0, 0, 1, 2, 1, 1, 0, 0, 0], [0, 0, 1, 0, 0, 0, 1, 1, 2, 1]],
                       dtype=np.float64)
_CHEMICAL_B = np.array([2.0, 1.0, 1.0])


def _hs111():
    def fun(x):
        e = np.exp(x)
        return e @ (_CHEMICAL_C + x - np.log(np.sum(e)))

    return _hs(111, fun, [-2.3] * 10, -47.76109026, None, lambda x: _CHEMICAL_A @ np.exp(x) - _CHEMICAL_B,
               meq=3, lower=-100.0, upper=100.0,
               notes="HS112 in the variables log(x); x* not recalled to its printed digits")


def _hs112():
    def fun(x):
        return x @ (_CHEMICAL_C + np.log(x / np.sum(x)))

    return _hs(112, fun, [0.1] * 10, -47.76109026, None, _linear_equalities(_CHEMICAL_A, _CHEMICAL_B), meq=3,
               lower=1e-6,
               notes="chemical equilibrium (White, Johnson & Dantzig 1958). The book prints f* = -47.707579 at "
                     "x* = (0.01773548, 0.08200180, 0.8825646, 0.7233256e-3, 0.4907851, 0.4335469e-3, 0.01727298, "
                     "0.007765639, 0.01984929, 0.05269826), feasible but not minimal; the problem is convex and "
                     "its minimum is HS111's, -47.76109026 (IPOPT: -47.76109086)")


def _hs113():
    def fun(x):
        return (x[0] ** 2 + x[1] ** 2 + x[0] * x[1] - 14.0 * x[0] - 16.0 * x[1] + (x[2] - 10.0) ** 2
                + 4.0 * (x[3] - 5.0) ** 2 + (x[4] - 3.0) ** 2 + 2.0 * (x[5] - 1.0) ** 2 + 5.0 * x[6] ** 2
                + 7.0 * (x[7] - 11.0) ** 2 + 2.0 * (x[8] - 10.0) ** 2 + (x[9] - 7.0) ** 2 + 45.0)

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = x
        return np.stack([105.0 - 4.0 * x1 - 5.0 * x2 + 3.0 * x7 - 9.0 * x8,
                         -10.0 * x1 + 8.0 * x2 + 17.0 * x7 - 2.0 * x8,
                         8.0 * x1 - 2.0 * x2 - 5.0 * x9 + 2.0 * x10 + 12.0,
                         -3.0 * (x1 - 2.0) ** 2 - 4.0 * (x2 - 3.0) ** 2 - 2.0 * x3 ** 2 + 7.0 * x4 + 120.0,
                         -5.0 * x1 ** 2 - 8.0 * x2 - (x3 - 6.0) ** 2 + 2.0 * x4 + 40.0,
                         -0.5 * (x1 - 8.0) ** 2 - 2.0 * (x2 - 4.0) ** 2 - 3.0 * x5 ** 2 + x6 + 30.0,
                         -x1 ** 2 - 2.0 * (x2 - 2.0) ** 2 + 2.0 * x1 * x2 - 14.0 * x5 + 6.0 * x6,
                         3.0 * x1 - 6.0 * x2 - 12.0 * (x9 - 8.0) ** 2 + 7.0 * x10])

    return _hs(113, fun, [2.0, 3.0, 5.0, 5.0, 1.0, 2.0, 7.0, 3.0, 6.0, 10.0], 24.3062091,
               [2.171996, 2.363683, 8.773926, 5.095984, 0.9906548, 1.430574, 1.321644, 9.828726, 8.280092, 8.375927],
               constraint)


def _hs114():
    a, b = 0.99, 0.9

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = x
        g1 = 35.82 - 0.222 * x10 - b * x9
        g2 = -133.0 + 3.0 * x7 - a * x10
        g5 = 1.12 * x1 + 0.13167 * x1 * x8 - 0.00667 * x1 * x8 ** 2 - a * x4
        g6 = 57.425 + 1.098 * x8 - 0.038 * x8 ** 2 + 0.325 * x6 - a * x7
        return np.stack([1.22 * x4 - x1 - x5, 98000.0 * x3 / (x4 * x9 + 1000.0 * x3) - x6, (x2 + x5) / x1 - x8,
                         g1, g2, -g1 + x9 * (1.0 / b - b), -g2 + (1.0 / a - a) * x10, g5, g6,
                         -g5 + (1.0 / a - a) * x4, -g6 + (1.0 / a - a) * x7])

    def fun(x):
        return 5.04 * x[0] + 0.035 * x[1] + 10.0 * x[2] + 3.36 * x[4] - 0.063 * x[3] * x[6]

    return _hs(114, fun, [1745.0, 12000.0, 110.0, 3048.0, 1974.0, 89.2, 92.8, 8.0, 3.6, 145.0], -1768.80696,
               [1698.096, 15818.73, 54.10228, 3031.226, 2000.0, 90.11537, 95.0, 10.49336, 1.561636, 153.5353],
               constraint, meq=3, lower=[1e-5] * 5 + [85.0, 90.0, 3.0, 1.2, 145.0],
               upper=[2000.0, 16000.0, 120.0, 5000.0, 2000.0, 93.0, 95.0, 12.0, 4.0, 162.0],
               notes="alkylation process (Bracken & McCormick 1968)")


def _hs116():
    a, b, c, d, e, f = 0.002, 1.262626, 1.231059, 0.03475, 0.975, 0.00975

    def constraint(x):
        x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13 = x
        return np.stack([x3 - x2, x2 - x1, 1.0 - a * x7 + a * x8, x11 + x12 + x13 - 50.0, 250.0 - x11 - x12 - x13,
                         x13 - b * x10 + c * x3 * x10, x5 - d * x2 - e * x2 * x5 + f * x2 ** 2,
                         x6 - d * x3 - e * x3 * x6 + f * x3 ** 2, x4 - d * x1 - e * x1 * x4 + f * x1 ** 2,
                         x12 - b * x9 + c * x2 * x9, x11 - b * x8 + c * x1 * x8,
                         x5 * x7 - x1 * x8 - x4 * x7 + x4 * x8,
                         1.0 - a * (x2 * x9 + x5 * x8 - x1 * x8 - x6 * x9) - x5 - x6,
                         x2 * x9 - x3 * x10 - x6 * x9 - 500.0 * x2 + 500.0 * x6 + x2 * x10,
                         x2 - 0.9 - a * (x2 * x10 - x3 * x10)])

    return _hs(116, lambda x: x[10] + x[11] + x[12], [0.5, 0.8, 0.9, 0.1, 0.14, 0.5, 489.0, 80.0, 650.0, 450.0,
                                                      150.0, 150.0, 150.0], 97.5875096, None, constraint,
               lower=[0.1, 0.1, 0.1, 1e-4, 0.1, 0.1, 0.1, 0.1, 500.0, 0.1, 1.0, 1e-4, 1e-4],
               upper=[1.0, 1.0, 1.0, 0.1, 0.9, 0.9, 1000.0, 1000.0, 1000.0, 500.0, 150.0, 150.0, 150.0],
               notes="three-stage membrane separation (Dembo 1976). The book prints f* = 97.588409 at x* = "
                     "(0.8037703, 0.8999860, 0.9709724, 0.09999952, 0.1908154, 0.4605717, 574.0803, 74.08043, "
                     "500.0162, 0.1, 20.23413, 77.34755, 0.00673039), feasible but not minimal; f* here is "
                     "the minimum computed here (IPOPT, tol 1e-12, no bound relaxation: 97.58750956)")


def _hs117():
    def fun(x):
        y, z = x[:10], x[10:]
        return -_COLVILLE_B @ y + z @ (_COLVILLE_C @ z) + 2.0 * _COLVILLE_D @ z ** 3

    def constraint(x):
        y, z = x[:10], x[10:]
        return 2.0 * _COLVILLE_C @ z + 3.0 * _COLVILLE_D * z ** 2 + _COLVILLE_E - _COLVILLE_A.T @ y

    x0 = np.full(15, 0.001)
    x0[6] = 60.0
    return _hs(117, fun, x0, 32.34867897,
               [0.0, 0.0, 5.174136, 0.0, 3.061093, 11.83968, 0.0, 0.0, 0.1039071, 0.0, 0.2999929, 0.3334709,
                0.3999910, 0.4283145, 0.2239607], constraint, lower=0.0, notes="the dual of HS86 (Colville 1968)")


def _hs118():
    cost1 = np.tile([2.3, 1.7, 2.2], 5)
    cost2 = np.tile([1e-4, 1e-4, 1.5e-4], 5)
    demand = np.array([60.0, 50.0, 70.0, 85.0, 100.0])

    def constraint(x):
        ramp = x[3:] - x[:-3] + 7.0
        return np.concatenate([ramp, np.tile([13.0, 14.0, 13.0], 4) - ramp,
                               np.sum(np.reshape(x, (5, 3)), axis=1) - demand])

    x0 = [20.0, 55.0, 15.0] + [20.0, 60.0, 20.0] * 4
    return _hs(118, lambda x: cost1 @ x + cost2 @ x ** 2, x0, 664.8204500,
               [8.0, 49.0, 3.0, 1.0, 56.0, 0.0, 1.0, 63.0, 6.0, 3.0, 70.0, 12.0, 5.0, 77.0, 18.0], constraint,
               lower=[8.0, 43.0, 3.0] + [0.0] * 12, upper=[21.0, 57.0, 16.0] + [90.0, 120.0, 60.0] * 4)


def _hs119():
    pairs = np.array([(1, 1), (1, 4), (1, 7), (1, 8), (1, 16), (2, 2), (2, 3), (2, 7), (2, 10), (3, 3), (3, 7),
                      (3, 9), (3, 10), (3, 14), (4, 4), (4, 7), (4, 11), (4, 15), (5, 5), (5, 6), (5, 10),
                      (5, 12), (5, 16), (6, 6), (6, 8), (6, 15), (7, 7), (7, 11), (7, 13), (8, 8), (8, 10),
                      (8, 15), (9, 9), (9, 12), (9, 16), (10, 10), (10, 14), (11, 11), (11, 13), (12, 12),
                      (12, 14), (13, 13), (13, 14), (14, 14), (15, 15), (16, 16)]) - 1
    B = np.zeros((8, 16))
    B[:, 8:] = np.eye(8)
    for column, entries in enumerate([
            {0: 0.22, 1: -1.46, 2: 1.29, 3: -1.10, 6: 1.12}, {0: 0.20, 2: -0.89, 3: -1.06, 5: -1.72, 7: 0.45},
            {0: 0.19, 1: -1.30, 3: 0.95, 5: -0.33, 7: 0.26}, {0: 0.25, 1: 1.82, 3: -0.54, 4: -1.43, 6: 0.31, 7: -1.10},
            {0: 0.15, 1: -1.15, 2: -1.16, 4: 1.51, 5: 1.62, 7: 0.58}, {0: 0.11, 2: -0.96, 3: -1.78, 4: 0.59, 5: 1.24},
            {0: 0.12, 1: 0.80, 3: -0.41, 4: -0.33, 5: 0.21, 6: 1.12, 7: -1.03},
            {0: 0.13, 2: -0.49, 4: -0.43, 5: -0.26, 7: 0.10}, {6: -0.36}]):
        for row, value in entries.items():
            B[row, column] = value
    rhs = [2.5, 1.1, -3.1, -3.5, 1.3, 2.1, 2.3, -1.5]
    left, right = pairs[:, 0], pairs[:, 1]

    def fun(x):
        q = x ** 2 + x + 1.0
        return np.sum(q[left] * q[right])

    return _hs(119, fun, [10.0] * 16, 244.899698,
               [0.03984735, 0.7919832, 0.2028703, 0.8443579, 1.269906, 0.9347387, 1.681962, 0.1553009, 1.567870,
                0.0, 0.0, 0.0, 0.6602041, 0.0, 0.6742559, 0.0], _linear_equalities(B, rhs), meq=8, lower=0.0,
               upper=5.0, notes="Colville's problem 7")


_FACTORIES = [value for key, value in sorted(globals().items()) if key.startswith("_hs") and key[3:].isdigit()]

HOCK_SCHITTKOWSKI: list[Problem] = [factory() for factory in _FACTORIES]
"""The 103 Hock-Schittkowski problems, by number."""


def hock_schittkowski(number: int) -> Problem:
    """Problem HS``number`` of ``HOCK_SCHITTKOWSKI``.

    Raises
    ------
    KeyError
        For a number that is not in the set (the message says which are left out and why).

    Examples
    --------
    >>> from hessopt.problems import hock_schittkowski
    >>> p = hock_schittkowski(71)
    >>> p, p.constraint_lower, p.constraint_upper
    (Problem('hs071', HS 71, n=4, m=None, constraints=2, fmin=17.014), array([0., 0.]), array([ 0., inf]))
    """
    for problem in HOCK_SCHITTKOWSKI:
        if problem.number == number:
            return problem
    raise KeyError(f"HS{number} is not in HOCK_SCHITTKOWSKI (see the module docstring of "
                   "hessopt._constrained_problems for the problems left out)")


# --------------------------------------------------------------------------------------------------
# Scalable sparse problems
# --------------------------------------------------------------------------------------------------


def _scalable(name: str, title: str, fun: Callable, x0, fmin: dict | float, constraint: Callable, lower_c,
              upper_c, lower=-np.inf, upper=np.inf, notes: str = "", **kwargs) -> Problem:
    """A scalable problem; ``fmin`` a value, or a table by n (NaN at sizes it lacks)."""
    x0 = np.asarray(x0, dtype=np.float64)
    n = x0.size
    fmin = fmin.get(n, np.nan) if isinstance(fmin, dict) else fmin
    return Problem(name, title, None, n, None, fun, x0, fmin, notes=notes, **kwargs,
                   lower=np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,)),
                   upper=np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,)),
                   constraint=constraint, constraint_lower=np.asarray(lower_c, dtype=np.float64),
                   constraint_upper=np.asarray(upper_c, dtype=np.float64))


def _intervals(name: str, n: int, unknowns: int = 3) -> int:
    """The number of time steps N of a control problem with ``unknowns`` unknowns at each of N + 1 nodes."""
    words = {3: "three", 4: "four"}[unknowns]
    if n < 3 * unknowns or n % unknowns:
        raise ValueError(f"{name} has {words} unknowns at each node: n must be a multiple of {unknowns} >= "
                         f"{3 * unknowns}, got {n}")
    return n // unknowns - 1


def _trapezoid(values, h: float):
    """The trapezoidal rule's increments h (v_i + v_{i+1}) / 2 between consecutive nodes."""
    return 0.5 * h * (values[1:] + values[:-1])


# f* at the sizes the benchmark runs, computed here: IPOPT (MUMPS) from x0 with tol 1e-12 and no bound
# relaxation; at n ~ 1000 CasADi+IPOPT agrees to 1e-9 and trust-constr to 1e-6. The control problems'
# minima converge to their closed forms at second order (tests); Wood-Broyden's is the minimum IPOPT
# reaches from x0, not known to be global; the portfolio's is global (a convex problem). The chain's,
# COPS 3.0's model and start, by CasADi+IPOPT (MUMPS), tol 1e-12: 8, 7 and 8 iterations.
_CHAIN_FMIN = {1000: 5.068787454561, 10000: 5.068485990460, 100000: 5.068480183759}
_BRYSON_DENHAM_FMIN = {999: 4.000324170336, 9999: 4.000003240525}
_ROSENBROCK_TRIGEXP_LOCAL = {1000: 6.232458632438, 10000: 6.232458632438, 100000: 6.232458632438}
_WOOD_BROYDEN_FMIN = {1000: 29365.90048453, 10000: 294881.0590019, 100000: 2950032.644176}
_PORTFOLIO_FMIN = {1000: 0.3199462414234, 10000: 0.3184621044824, 100000: 0.3211369832682}


def _hanging_chain(n: int, a: float = 1.0, b: float = 3.0, length: float = 4.0) -> Problem:
    """The hanging chain as COPS 3.0 publishes it (problem 'chain'): unknowns (u_k, x1_k, x2_k, x3_k)
    at nh + 1 nodes on [0, 1] (slope, height, energy, length), its start included."""
    nh = _intervals("hanging_chain", n, unknowns=4)
    h = 1.0 / nh

    def nodes(x):
        nodes = np.reshape(x, (nh + 1, 4))
        return nodes[:, 0], nodes[:, 1], nodes[:, 2], nodes[:, 3]

    def fun(x):
        return x[-2]                                    # the energy x2 at t = 1

    def constraint(x):
        u, height, energy, arc = nodes(x)
        ds = np.sqrt(1.0 + u ** 2)
        return np.concatenate([height[1:] - height[:-1] - _trapezoid(u, h),
                               energy[1:] - energy[:-1] - _trapezoid(height * ds, h),
                               arc[1:] - arc[:-1] - _trapezoid(ds, h),
                               np.stack([height[0] - a, height[-1] - b, energy[0], arc[0], arc[-1] - length])])

    t = np.arange(nh + 1) * h
    t_min = 0.25 if b > a else 0.75
    slope = 4.0 * abs(b - a) * (t - t_min)
    height = 4.0 * abs(b - a) * t * (0.5 * t - t_min) + a
    x0 = np.stack([slope, height, height * slope, slope], axis=1).ravel()
    m = 3 * nh + 5
    return _scalable("hanging_chain", "Hanging chain (COPS 3.0)", fun, x0, _CHAIN_FMIN, constraint, np.zeros(m),
                     np.zeros(m),
                     notes="Dolan, More & Munson, 'Benchmarking optimization software with COPS 3.0', ANL/MCS-"
                           "TM-273, 2004, problem 'chain' (Cesari 1983), as published (model and start): min "
                           "x2(1) with x1' = u, x2' = x1 sqrt(1 + u^2), x3' = sqrt(1 + u^2), x1(0) = 1, x1(1) = 3, "
                           "x2(0) = x3(0) = 0, x3(1) = 4 (the length), trapezoidal rule, nh = n / 4 - 1 "
                           "intervals; the continuous minimum is the catenary's")


def _bryson_denham(n: int, ceiling: float = 1.0 / 9.0) -> Problem:
    """Bryson-Denham: min int u^2 / 2 with x'' = u and x(t) <= ceiling, unknowns (x_i, v_i, u_i)."""
    N = _intervals("bryson_denham", n)
    h = 1.0 / N

    def nodes(x):
        nodes = np.reshape(x, (N + 1, 3))
        return nodes[:, 0], nodes[:, 1], nodes[:, 2]

    def fun(x):
        return 0.5 * np.sum(_trapezoid(x[2::3] ** 2, h))

    def constraint(x):
        position, velocity, u = nodes(x)
        return np.concatenate([position[1:] - position[:-1] - _trapezoid(velocity, h),
                               velocity[1:] - velocity[:-1] - _trapezoid(u, h),
                               np.stack([position[0], velocity[0] - 1.0, position[-1], velocity[-1] + 1.0])])

    t = np.linspace(0.0, 1.0, N + 1)
    x0 = np.stack([np.zeros(N + 1), 1.0 - 2.0 * t, np.full(N + 1, -2.0)], axis=1).ravel()
    upper = np.tile([ceiling, np.inf, np.inf], N + 1)
    m = 2 * N + 4
    return _scalable("bryson_denham", "Bryson-Denham (state-constrained double integrator)", fun, x0,
                     _BRYSON_DENHAM_FMIN, constraint, np.zeros(m), np.zeros(m), upper=upper,
                     notes="Bryson, Denham & Dreyfus, AIAA J. 1 (1963) 2544; Bryson & Ho, Applied Optimal "
                           "Control, 1975, sec. 3.11: x(0) = x(1) = 0, x'(0) = 1 = -x'(1), x <= l = 1/9 as bounds "
                           "on the positions; continuous minimum 4 / (9 l) = 4 for l <= 1/6")


def _rosenbrock_trigexp(n: int) -> Problem:
    """Lukšan & Vlček (1999) problem 5.1: chained Rosenbrock with trigonometric-exponential constraints."""
    if n < 3:
        raise ValueError(f"rosenbrock_trigexp needs n >= 3, got {n}")

    def fun(x):
        head = x[:-1]
        return np.sum(100.0 * (head ** 2 - x[1:]) ** 2 + (head - 1.0) ** 2)

    def constraint(x):
        a, b, c = x[:-2], x[1:-1], x[2:]
        return (3.0 * b ** 3 + 2.0 * c - 5.0 + np.sin(b - c) * np.sin(b + c) + 4.0 * b - a * np.exp(a - b)
                - 3.0)

    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    local = (_ROSENBROCK_TRIGEXP_LOCAL[n],) if n in _ROSENBROCK_TRIGEXP_LOCAL else ()
    return _scalable("rosenbrock_trigexp", "Chained Rosenbrock, trigonometric-exponential constraints (LV 5.1)",
                     fun, x0, 0.0, constraint, np.zeros(n - 2), np.zeros(n - 2), xmin=np.ones(n), local_minima=local,
                     notes="L. Luksan & J. Vlcek, 'Sparse and partially separable test problems for unconstrained "
                           "and equality constrained optimization', Tech. Rep. 767, ICS AS CR, 1999, problem 5.1 "
                           "(CUTEst LUKVLE1); x0 = (-1.2, 1, -1.2, ...). x = 1 is feasible with f = 0, the "
                           "minimum; from x0 Newton-type methods reach a local minimum near 6.2325 (computed "
                           "here at n = 10^3, 10^4, 10^5: local_minima)")


def _wood_broyden(n: int) -> Problem:
    """Lukšan & Vlček (1999) problem 5.2: chained Wood with Broyden banded constraints."""
    if n < 8 or n % 2:
        raise ValueError(f"wood_broyden needs an even n >= 8, got {n}")

    def fun(x):
        a, b, c, d = x[0:-2:2], x[1:-2:2], x[2::2], x[3::2]
        return np.sum(100.0 * (a ** 2 - b) ** 2 + (a - 1.0) ** 2 + 90.0 * (c ** 2 - d) ** 2 + (c - 1.0) ** 2
                      + 10.0 * (b + d - 2.0) ** 2 + 0.1 * (b - d) ** 2)

    def constraint(x):
        centre = x[5:n - 2]
        neighbours = sum(x[k:n - 7 + k] * (1.0 + x[k:n - 7 + k]) for k in (0, 1, 2, 3, 4, 6))
        return (2.0 + 5.0 * centre ** 2) * centre + 1.0 + neighbours

    x0 = np.where(np.arange(n) % 2 == 0, -2.0, 1.0)
    return _scalable("wood_broyden", "Chained Wood, Broyden banded constraints (LV 5.2)", fun, x0,
                     _WOOD_BROYDEN_FMIN, constraint, np.zeros(n - 7), np.zeros(n - 7),
                     notes="Luksan & Vlcek, Tech. Rep. 767, 1999, problem 5.2: the Wood function chained over "
                           "pairs, and c_k = (2 + 5 x_{k+5}^2) x_{k+5} + 1 + sum_{i=k..k+6, i != k+5} x_i (1 + x_i) "
                           "= 0, k = 1..n-7; x0 = (-2, 1, -2, 1, ...)")


def _portfolio(n: int, factors: int = 10, seed: int = 0) -> Problem:
    """A long-only mean-variance portfolio with a factor model: bounds, a return floor, a budget."""
    assets = n - factors
    if assets < 20:
        raise ValueError(f"portfolio needs n >= {factors + 20} (n - {factors} assets), got {n}")
    rng = np.random.default_rng(seed)
    loadings = rng.standard_normal((factors, assets)) / np.sqrt(factors) * 0.2
    specific = rng.uniform(0.01, 0.04, assets)
    expected = rng.uniform(0.0, 0.1, assets)
    cap = 5.0 / assets
    best = np.mean(np.sort(expected)[-assets // 5:])
    target = 0.5 * (np.mean(expected) + best)

    def fun(x):  # 10 x assets x the variance: f* about 1/3 at every n
        w, y = x[:assets], x[assets:]
        return 10.0 * assets * (y @ y + specific @ w ** 2)

    def constraint(x):
        w, y = x[:assets], x[assets:]
        return np.concatenate([y - loadings @ w, np.stack([np.sum(w), expected @ w])])

    lower_c = np.concatenate([np.zeros(factors), [1.0, target]])
    upper_c = np.concatenate([np.zeros(factors), [1.0, np.inf]])
    x0 = np.concatenate([np.full(assets, 1.0 / assets), np.zeros(factors)])
    return _scalable("portfolio", "Long-only mean-variance portfolio (factor model)", fun, x0, _PORTFOLIO_FMIN,
                     constraint, lower_c, upper_c, lower=np.r_[np.zeros(assets), np.full(factors, -np.inf)],
                     upper=np.r_[np.full(assets, cap), np.full(factors, np.inf)],
                     notes="Markowitz (1952) with a factor model of the covariance, F F^T + diag(d), written "
                           "sparse with the factor exposures y = F w as unknowns, scaled by 10 x assets (the "
                           "variance falls as 1 / assets: f* stays near 1/3); seeded random data: 10 factors, "
                           "w <= 5 / assets, expected return >= the mean of the average and the best-quintile "
                           "return, sum w = 1; convex, so f* is the global minimum")


CONSTRAINED: dict[str, Callable[[int], Problem]] = {
    "hanging_chain": _hanging_chain,
    "bryson_denham": _bryson_denham,
    "rosenbrock_trigexp": _rosenbrock_trigexp,
    "wood_broyden": _wood_broyden,
    "portfolio": _portfolio,
}
"""Factories of the scalable constrained problems by name: ``CONSTRAINED[name](n)``."""


def constrained(name: str, n: int) -> Problem:
    """A scalable sparse constrained problem with ``n`` unknowns; ``name`` is one of ``CONSTRAINED``.

    Two discretized optimal control problems with the dynamics as equality constraints (trapezoidal
    rule): the hanging chain of COPS 3.0 as published (n a multiple of 4; nonlinear dynamics) and
    Bryson-Denham's state-constrained double integrator (n a multiple of 3; the state bound as
    bounds, a closed-form continuous minimum of 4); Lukšan & Vlček's problems 5.1 (chained
    Rosenbrock with trigonometric-exponential constraints) and 5.2 (chained Wood with Broyden
    banded constraints, n even); and a long-only factor-model portfolio with bounds, an inequality
    and equalities. ``fmin`` is known at n = 999, 9999 (Bryson-Denham) and 1000, 10000, 100000 (the
    others), computed here (NaN at other sizes; n = 99999 of Bryson-Denham is not computed yet).

    Raises
    ------
    KeyError
        For an unknown name (the message lists the known ones).
    ValueError
        For an n the problem cannot take.

    Examples
    --------
    >>> from hessopt.problems import constrained
    >>> p = constrained("rosenbrock_trigexp", 1000)
    >>> p.n, p.constraint(p.x0).shape, p.x0[:4]
    (1000, (998,), array([-1.2,  1. , -1.2,  1. ]))
    """
    try:
        factory = CONSTRAINED[name]
    except KeyError:
        raise KeyError(f"unknown constrained problem {name!r}; choose from {sorted(CONSTRAINED)}") from None
    return factory(int(n))
