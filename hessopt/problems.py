"""Standard test problems: unconstrained, bound-constrained and constrained.

``MGH`` holds the 35 problems of Moré, Garbow & Hillstrom, "Testing unconstrained optimization
software", ACM TOMS 7(1), 1981, 17-41, as 39 instances; ``scalable(name, n)`` builds large
problems (n up to 10^4 and beyond) from the MGH paper, CUTEst and Dixon & Maany (1988);
``bounded(name, n)`` builds bound-constrained ones: four MINPACK-2 problems (Averick, Carter, Moré
& Xue, "The MINPACK-2 test problem collection", Argonne MCS-P153-0692, 1992) on square grids of
finite elements, and chained Rosenbrock in a box. ``HOCK_SCHITTKOWSKI`` (103 problems of Hock &
Schittkowski 1981, ``hock_schittkowski(number)``) and ``constrained(name, n)`` (sparse problems at
any n) have general constraints; they are written in ``hessopt._constrained_problems``.
``nist_problem(name)`` (``NIST_STRD``, 27 names) gives NIST's nonlinear regression problems with their
certified parameters (``hessopt._nist``). Four ODE right-hand sides in
``scipy.integrate.odeint``'s signature ``f(y, t, *params)``, from non-stiff to stiff and from 2 to any
number of states (``lotka_volterra``, ``sir``, ``robertson``, ``saturating_chain``), serve fitting and
derivatives through an integrator.

Variable-dimension MGH problems are given at the customary sizes: n = 10 (n = 12 for the extended
Powell function, whose n must be a multiple of 4), m = 20 for the three linear functions (MGH 32-34)
and m = 99 for Gulf (MGH 11). Four problems for which the paper gives the minimum at two sizes appear
twice: Watson (n = 6, 9), penalty I and II (n = 4, 10) and Chebyquad (n = 8, 10): 35 + 4 = 39.

Every objective is plain NumPy on a 1-D array ``x``: arithmetic, indexing and slicing, and a small
set of functions (``np.sum``, ``np.exp``, ``np.stack``, ``np.concatenate``, ``np.cumsum``, ...), so
an autodiff engine that implements ``__array_ufunc__``/``__array_function__`` can trace it. Nothing
converts ``x`` to an ndarray or a float, branches on its values or writes into an array.
Least-squares problems also expose ``residuals(x)`` with ``fun(x) == residuals(x) @ residuals(x)``.

``fmin`` is the best known minimum. Where the paper prints six digits, the value here was recomputed
to about 13 digits and agrees with the paper's to the digits printed (the Meyer, Kowalik-Osborne and
Osborne 1 values also with the certified NIST StRD values of MGH10, MGH09 and MGH17). Two values
differ from the paper's table, which lists local minima there: Biggs EXP6 has f = 0 at
(1, 10, 1, 5, 4, 3), and Chebyquad n = 10 has a minimum 4.77271e-3 below the paper's 6.50395e-3; the
paper's values are kept as ``local_minima``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ._constrained_problems import CONSTRAINED, HOCK_SCHITTKOWSKI, constrained, hock_schittkowski
from ._nist import NIST_STRD, NistProblem, nist_problem
from ._problem import Problem

__all__ = ["Problem", "MGH", "SCALABLE", "BOUNDED", "HOCK_SCHITTKOWSKI", "CONSTRAINED", "scalable", "bounded",
           "constrained", "hock_schittkowski", "get", "enneper_edges", "NIST_STRD", "NistProblem", "nist_problem",
           "lotka_volterra", "sir", "robertson", "saturating_chain"]


def _sum_of_squares(residuals: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], float]:
    def fun(x):
        r = residuals(x)
        return r @ r

    return fun


def _least_squares(name, title, number, residuals, x0, m, fmin, **kwargs) -> Problem:
    x0 = np.asarray(x0, dtype=np.float64)
    return Problem(name, title, number, x0.size, m, _sum_of_squares(residuals), x0, fmin,
                   residuals=residuals, **kwargs)


def _interleave(k: int, length: int) -> np.ndarray:
    """Index array that reorders the concatenation of k blocks of equal length as block 0 item 0,
    block 1 item 0, ..., block k-1 item 0, block 0 item 1, ... (the MGH order of the residuals)."""
    return np.arange(k * length).reshape(k, length).T.ravel()


# --------------------------------------------------------------------------------------------------
# The 35 Moré-Garbow-Hillstrom problems (numbers and definitions as in the paper)
# --------------------------------------------------------------------------------------------------


def _rosenbrock() -> Problem:
    def residuals(x):
        return np.stack([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])

    return _least_squares("rosenbrock", "Rosenbrock", 1, residuals, [-1.2, 1.0], 2, 0.0,
                          xmin=[1.0, 1.0])


def _freudenstein_roth() -> Problem:
    def residuals(x):
        return np.stack([-13.0 + x[0] + ((5.0 - x[1]) * x[1] - 2.0) * x[1],
                         -29.0 + x[0] + ((x[1] + 1.0) * x[1] - 14.0) * x[1]])

    return _least_squares("freudenstein_roth", "Freudenstein and Roth", 2, residuals, [0.5, -2.0], 2,
                          0.0, xmin=[5.0, 4.0], local_minima=(48.98425367924,),
                          notes="local minimum 48.9842 at (11.41..., -0.8968...)")


def _powell_badly_scaled() -> Problem:
    def residuals(x):
        return np.stack([1e4 * x[0] * x[1] - 1.0, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001])

    return _least_squares("powell_badly_scaled", "Powell badly scaled", 3, residuals, [0.0, 1.0], 2,
                          0.0, notes="minimizer (1.098...e-5, 9.106...)")


def _brown_badly_scaled() -> Problem:
    def residuals(x):
        return np.stack([x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2.0])

    return _least_squares("brown_badly_scaled", "Brown badly scaled", 4, residuals, [1.0, 1.0], 3,
                          0.0, xmin=[1e6, 2e-6])


def _beale() -> Problem:
    y = np.array([1.5, 2.25, 2.625])
    i = np.arange(1.0, 4.0)

    def residuals(x):
        return y - x[0] * (1.0 - x[1] ** i)

    return _least_squares("beale", "Beale", 5, residuals, [1.0, 1.0], 3, 0.0, xmin=[3.0, 0.5])


def _jennrich_sampson() -> Problem:
    i = np.arange(1.0, 11.0)

    def residuals(x):
        return 2.0 + 2.0 * i - (np.exp(i * x[0]) + np.exp(i * x[1]))

    return _least_squares("jennrich_sampson", "Jennrich and Sampson", 6, residuals, [0.3, 0.4], 10,
                          124.3621823556, notes="MGH: 124.362 at x1 = x2 = 0.2578...")


def _helical_valley() -> Problem:
    def residuals(x):
        # MGH's theta: atan(x2/x1)/(2 pi), plus 1/2 if x1 < 0; this equals the branch of the polar
        # angle in (-pi/2, 3pi/2), written without a test on the sign of x1.
        theta = np.arctan2(-x[0], x[1]) / (2.0 * np.pi) + 0.25
        return np.stack([10.0 * (x[2] - 10.0 * theta),
                         10.0 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1.0),
                         x[2]])

    return _least_squares("helical_valley", "Helical valley", 7, residuals, [-1.0, 0.0, 0.0], 3, 0.0,
                          xmin=[1.0, 0.0, 0.0])


def _bard() -> Problem:
    y = np.array([0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34,
                  2.10, 4.39])
    u = np.arange(1.0, 16.0)
    v = 16.0 - u
    w = np.minimum(u, v)

    def residuals(x):
        return y - (x[0] + u / (v * x[1] + w * x[2]))

    # as x2, x3 -> -inf the model tends to the constant x1, best at mean(y) = 0.8406...
    at_infinity = float(np.sum((y - np.mean(y)) ** 2))
    return _least_squares("bard", "Bard", 8, residuals, [1.0, 1.0, 1.0], 15, 8.214877306579e-3,
                          local_minima=(at_infinity,),
                          notes="MGH: 8.21487e-3; 17.4286 approached at (0.8406..., -inf, -inf)")


def _gaussian() -> Problem:
    y = np.array([0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989, 0.3521, 0.2420,
                  0.1295, 0.0540, 0.0175, 0.0044, 0.0009])
    t = (8.0 - np.arange(1.0, 16.0)) / 2.0

    def residuals(x):
        return x[0] * np.exp(-x[1] * (t - x[2]) ** 2 / 2.0) - y

    return _least_squares("gaussian", "Gaussian", 9, residuals, [0.4, 1.0, 0.0], 15,
                          1.127932769618e-8, notes="MGH: 1.12793e-8")


def _meyer() -> Problem:
    y = np.array([34780.0, 28610.0, 23650.0, 19630.0, 16370.0, 13720.0, 11540.0, 9744.0, 8261.0,
                  7030.0, 6005.0, 5147.0, 4427.0, 3820.0, 3307.0, 2872.0])
    t = 45.0 + 5.0 * np.arange(1.0, 17.0)

    def residuals(x):
        return x[0] * np.exp(x[1] / (t + x[2])) - y

    return _least_squares("meyer", "Meyer", 10, residuals, [0.02, 4000.0, 250.0], 16,
                          87.9458551704, notes="MGH: 87.9458; NIST StRD MGH10: 87.945855171")


def _gulf() -> Problem:
    m = 99
    t = np.arange(1.0, m + 1.0) / 100.0
    y = 25.0 + (-50.0 * np.log(t)) ** (2.0 / 3.0)

    def residuals(x):
        return np.exp(-np.abs(y - x[1]) ** x[2] / x[0]) - t

    # local minimum (as in Gonum's test functions) near (99.89, 60.61, 9.16): the first two residuals
    # vanish and all other exponentials underflow, so f = sum of t_i^2 over i >= 3 = 32.8345
    plateau = float(np.sum(t[2:] ** 2))
    return _least_squares("gulf", "Gulf research and development", 11, residuals, [5.0, 2.5, 0.15],
                          m, 0.0, xmin=[50.0, 25.0, 1.5], local_minima=(plateau,),
                          notes="m = 99; local minimum 32.8345 near (99.89, 60.61, 9.16)")


def _box_3d() -> Problem:
    t = 0.1 * np.arange(1.0, 11.0)
    c = np.exp(-t) - np.exp(-10.0 * t)

    def residuals(x):
        return np.exp(-t * x[0]) - np.exp(-t * x[1]) - x[2] * c

    return _least_squares("box_3d", "Box three-dimensional", 12, residuals, [0.0, 10.0, 20.0], 10, 0.0,
                          xmin=[1.0, 10.0, 1.0],
                          notes="f = 0 also at (10, 1, -1) and on the line x1 = x2, x3 = 0")


def _powell_singular() -> Problem:
    def residuals(x):
        return np.stack([x[0] + 10.0 * x[1],
                         np.sqrt(5.0) * (x[2] - x[3]),
                         (x[1] - 2.0 * x[2]) ** 2,
                         np.sqrt(10.0) * (x[0] - x[3]) ** 2])

    return _least_squares("powell_singular", "Powell singular", 13, residuals, [3.0, -1.0, 0.0, 1.0],
                          4, 0.0, xmin=np.zeros(4))


def _wood() -> Problem:
    def residuals(x):
        return np.stack([10.0 * (x[1] - x[0] ** 2),
                         1.0 - x[0],
                         np.sqrt(90.0) * (x[3] - x[2] ** 2),
                         1.0 - x[2],
                         np.sqrt(10.0) * (x[1] + x[3] - 2.0),
                         (x[1] - x[3]) / np.sqrt(10.0)])

    return _least_squares("wood", "Wood", 14, residuals, [-3.0, -1.0, -3.0, -1.0], 6, 0.0,
                          xmin=np.ones(4))


def _kowalik_osborne() -> Problem:
    y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323, 0.0235,
                  0.0246])
    u = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625])

    def residuals(x):
        return y - x[0] * (u ** 2 + u * x[1]) / (u ** 2 + u * x[2] + x[3])

    return _least_squares("kowalik_osborne", "Kowalik and Osborne", 15, residuals,
                          [0.25, 0.39, 0.415, 0.39], 11, 3.075056038492e-4,
                          local_minima=(1.027343048695e-3,),
                          notes="MGH: 3.07505e-4; NIST StRD MGH09: 3.0750560385e-4; "
                                "1.02734e-3 approached at (+inf, -14.07..., -inf, -inf)")


def _brown_dennis() -> Problem:
    t = np.arange(1.0, 21.0) / 5.0

    def residuals(x):
        return ((x[0] + t * x[1] - np.exp(t)) ** 2
                + (x[2] + x[3] * np.sin(t) - np.cos(t)) ** 2)

    return _least_squares("brown_dennis", "Brown and Dennis", 16, residuals, [25.0, 5.0, -5.0, -1.0],
                          20, 85822.20162636, notes="MGH: 85822.2")


def _osborne1() -> Problem:
    y = np.array([0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751, 0.718,
                  0.685, 0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490, 0.478, 0.467,
                  0.457, 0.448, 0.438, 0.431, 0.424, 0.420, 0.414, 0.411, 0.406])
    t = 10.0 * np.arange(33.0)

    def residuals(x):
        return y - (x[0] + x[1] * np.exp(-t * x[3]) + x[2] * np.exp(-t * x[4]))

    return _least_squares("osborne1", "Osborne 1", 17, residuals, [0.5, 1.5, -1.0, 0.01, 0.02], 33,
                          5.464894697482e-5, notes="MGH: 5.46489e-5; NIST StRD MGH17: 5.4648946975e-5")


def _biggs_exp6() -> Problem:
    t = 0.1 * np.arange(1.0, 14.0)
    y = np.exp(-t) - 5.0 * np.exp(-10.0 * t) + 3.0 * np.exp(-4.0 * t)

    def residuals(x):
        return (x[2] * np.exp(-t * x[0]) - x[3] * np.exp(-t * x[1]) + x[5] * np.exp(-t * x[4])) - y

    return _least_squares("biggs_exp6", "Biggs EXP6", 18, residuals, [1.0, 2.0, 1.0, 1.0, 1.0, 1.0],
                          13, 0.0, xmin=[1.0, 10.0, 1.0, 5.0, 4.0, 3.0],
                          local_minima=(0.3063667726248,),
                          notes="MGH print 5.65565e-3, attained where x1 = x5 and x3 = x6: a saddle "
                                "point of f, so not accepted as solved; 0.306367 is approached as "
                                "x2 -> +inf with x1 = x5")


def _osborne2() -> Problem:
    y = np.array([1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725, 0.746, 0.679,
                  0.608, 0.655, 0.616, 0.606, 0.602, 0.626, 0.651, 0.724, 0.649, 0.649, 0.694, 0.644,
                  0.624, 0.661, 0.612, 0.558, 0.533, 0.495, 0.500, 0.423, 0.395, 0.375, 0.372, 0.391,
                  0.396, 0.405, 0.428, 0.429, 0.523, 0.562, 0.607, 0.653, 0.672, 0.708, 0.633, 0.668,
                  0.645, 0.632, 0.591, 0.559, 0.597, 0.625, 0.739, 0.710, 0.729, 0.720, 0.636, 0.581,
                  0.428, 0.292, 0.162, 0.098, 0.054])
    t = np.arange(65.0) / 10.0

    def residuals(x):
        return y - (x[0] * np.exp(-t * x[4])
                    + x[1] * np.exp(-(t - x[8]) ** 2 * x[5])
                    + x[2] * np.exp(-(t - x[9]) ** 2 * x[6])
                    + x[3] * np.exp(-(t - x[10]) ** 2 * x[7]))

    return _least_squares("osborne2", "Osborne 2", 19, residuals,
                          [1.3, 0.65, 0.65, 0.7, 0.6, 3.0, 5.0, 7.0, 2.0, 4.5, 5.5], 65,
                          4.013773629355e-2, notes="MGH: 4.01377e-2")


def _watson(n: int, fmin: float, published: str) -> Problem:
    t = np.arange(1.0, 30.0) / 29.0
    powers = t[:, None] ** np.arange(n)  # powers[i, j] = t_i ** j
    j = np.arange(1.0, n)

    def residuals(x):
        r = powers[:, :-1] @ (j * x[1:]) - (powers @ x) ** 2 - 1.0
        return np.concatenate([r, np.stack([x[0], x[1] - x[0] ** 2 - 1.0])])

    return _least_squares("watson", "Watson", 20, residuals, np.zeros(n), 31, fmin,
                          notes=f"MGH: {published}")


def _extended_rosenbrock(n: int) -> Problem:
    if n < 2 or n % 2:
        raise ValueError(f"extended_rosenbrock needs an even n >= 2, got {n}")
    order = _interleave(2, n // 2)

    def residuals(x):
        odd = x[::2]
        return np.concatenate([10.0 * (x[1::2] - odd ** 2), 1.0 - odd])[order]

    x0 = np.tile([-1.2, 1.0], n // 2)
    return _least_squares("extended_rosenbrock", "Extended Rosenbrock", 21, residuals, x0, n, 0.0,
                          xmin=np.ones(n))


def _extended_powell(n: int) -> Problem:
    if n < 4 or n % 4:
        raise ValueError(f"extended_powell needs n a multiple of 4, got {n}")
    order = _interleave(4, n // 4)

    def residuals(x):
        a, b, c, d = x[0::4], x[1::4], x[2::4], x[3::4]
        return np.concatenate([a + 10.0 * b,
                               np.sqrt(5.0) * (c - d),
                               (b - 2.0 * c) ** 2,
                               np.sqrt(10.0) * (a - d) ** 2])[order]

    x0 = np.tile([3.0, -1.0, 0.0, 1.0], n // 4)
    return _least_squares("extended_powell", "Extended Powell singular", 22, residuals, x0, n, 0.0,
                          xmin=np.zeros(n))


def _penalty1(n: int, fmin: float, published: str) -> Problem:
    sqrt_a = np.sqrt(1e-5)

    def residuals(x):
        return np.concatenate([sqrt_a * (x - 1.0), np.stack([np.sum(x ** 2) - 0.25])])

    return _least_squares("penalty1", "Penalty I", 23, residuals, np.arange(1.0, n + 1.0), n + 1, fmin,
                          notes=f"MGH: {published}")


def _penalty2(n: int, fmin: float, published: str) -> Problem:
    sqrt_a = np.sqrt(1e-5)
    i = np.arange(2.0, n + 1.0)
    y = np.exp(i / 10.0) + np.exp((i - 1.0) / 10.0)
    weights = np.arange(n, 0.0, -1.0)  # n - j + 1

    def residuals(x):
        return np.concatenate([np.stack([x[0] - 0.2]),
                               sqrt_a * (np.exp(x[1:] / 10.0) + np.exp(x[:-1] / 10.0) - y),
                               sqrt_a * (np.exp(x[1:] / 10.0) - np.exp(-0.1)),
                               np.stack([weights @ x ** 2 - 1.0])])

    return _least_squares("penalty2", "Penalty II", 24, residuals, np.full(n, 0.5), 2 * n, fmin,
                          notes=f"MGH: {published}")


def _variably_dimensioned(n: int) -> Problem:
    j = np.arange(1.0, n + 1.0)

    def residuals(x):
        s = j @ (x - 1.0)
        return np.concatenate([x - 1.0, np.stack([s, s ** 2])])

    return _least_squares("variably_dimensioned", "Variably dimensioned", 25, residuals, 1.0 - j / n,
                          n + 2, 0.0, xmin=np.ones(n))


def _trigonometric(n: int, local_minima: tuple[float, ...]) -> Problem:
    i = np.arange(1.0, n + 1.0)

    def residuals(x):
        c = np.cos(x)
        return n - np.sum(c) + i * (1.0 - c) - np.sin(x)

    return _least_squares("trigonometric", "Trigonometric", 26, residuals, np.full(n, 1.0 / n), n, 0.0,
                          local_minima=local_minima, notes="local minimum 2.79506e-5 for n = 10 (Gonum)")


def _brown_almost_linear(n: int) -> Problem:
    def residuals(x):
        return np.concatenate([x[:-1] + np.sum(x) - (n + 1.0), np.stack([np.prod(x) - 1.0])])

    return _least_squares("brown_almost_linear", "Brown almost-linear", 27, residuals,
                          np.full(n, 0.5), n, 0.0, xmin=np.ones(n), local_minima=(1.0,),
                          notes="local minimum f = 1 at (0, ..., 0, n + 1)")


def _discrete_boundary_value(n: int) -> Problem:
    h = 1.0 / (n + 1.0)
    t = h * np.arange(1.0, n + 1.0)
    zero = np.zeros(1)

    def residuals(x):
        left = np.concatenate([zero, x[:-1]])
        right = np.concatenate([x[1:], zero])
        return 2.0 * x - left - right + h ** 2 * (x + t + 1.0) ** 3 / 2.0

    return _least_squares("discrete_boundary_value", "Discrete boundary value", 28, residuals,
                          t * (t - 1.0), n, 0.0)


def _discrete_integral_equation(n: int) -> Problem:
    h = 1.0 / (n + 1.0)
    t = h * np.arange(1.0, n + 1.0)

    def residuals(x):
        c = (x + t + 1.0) ** 3
        lower = np.cumsum(t * c)  # sum over j <= i of t_j c_j
        upper_terms = (1.0 - t) * c
        upper = np.sum(upper_terms) - np.cumsum(upper_terms)  # sum over j > i of (1 - t_j) c_j
        return x + h * ((1.0 - t) * lower + t * upper) / 2.0

    return _least_squares("discrete_integral_equation", "Discrete integral equation", 29, residuals,
                          t * (t - 1.0), n, 0.0)


def _broyden_tridiagonal(n: int) -> Problem:
    zero = np.zeros(1)

    def residuals(x):
        left = np.concatenate([zero, x[:-1]])
        right = np.concatenate([x[1:], zero])
        return (3.0 - 2.0 * x) * x - left - 2.0 * right + 1.0

    return _least_squares("broyden_tridiagonal", "Broyden tridiagonal", 30, residuals, np.full(n, -1.0),
                          n, 0.0)


def _broyden_banded(n: int) -> Problem:
    lower, upper = 5, 1  # J_i = {j != i : i - 5 <= j <= i + 1}
    pad_lower, pad_upper = np.zeros(lower), np.zeros(upper)

    def residuals(x):
        g = np.concatenate([pad_lower, x * (1.0 + x), pad_upper])  # g[k + lower] = x_k (1 + x_k)
        band = g[lower + 1:lower + 1 + n]
        for k in range(1, lower + 1):
            band = band + g[lower - k:lower - k + n]
        return x * (2.0 + 5.0 * x ** 2) + 1.0 - band

    return _least_squares("broyden_banded", "Broyden banded", 31, residuals, np.full(n, -1.0), n, 0.0)


def _linear_full_rank(n: int, m: int) -> Problem:
    tail = np.ones(m - n)

    def residuals(x):
        s = 2.0 * np.sum(x) / m + 1.0
        return np.concatenate([x - s, -s * tail])

    return _least_squares("linear_full_rank", "Linear function - full rank", 32, residuals,
                          np.ones(n), m, float(m - n), xmin=-np.ones(n))


def _linear_rank1(n: int, m: int) -> Problem:
    i = np.arange(1.0, m + 1.0)
    j = np.arange(1.0, n + 1.0)

    def residuals(x):
        return i * (j @ x) - 1.0

    # minimizers: every x with sum_j j x_j = 3 / (2m + 1); xmin is the one of least norm
    xmin = 3.0 / (2.0 * m + 1.0) * j / (j @ j)
    return _least_squares("linear_rank1", "Linear function - rank 1", 33, residuals, np.ones(n), m,
                          m * (m - 1.0) / (2.0 * (2.0 * m + 1.0)), xmin=xmin)


def _linear_rank1_zero(n: int, m: int) -> Problem:
    i = np.arange(2.0, m)
    j = np.arange(2.0, n)
    minus_one = -np.ones(1)

    def residuals(x):
        return np.concatenate([minus_one, (i - 1.0) * (j @ x[1:-1]) - 1.0, minus_one])

    # minimizers: every x with sum_{j=2}^{n-1} j x_j = 3 / (2m - 3); xmin is the one of least norm
    xmin = np.concatenate([[0.0], 3.0 / (2.0 * m - 3.0) * j / (j @ j), [0.0]])
    return _least_squares("linear_rank1_zero", "Linear function - rank 1 with zero columns and rows",
                          34, residuals, np.ones(n), m,
                          (m ** 2 + 3.0 * m - 6.0) / (2.0 * (2.0 * m - 3.0)), xmin=xmin)


def _chebyquad(n: int, fmin: float, local_minima: tuple[float, ...], notes: str) -> Problem:
    m = n
    # integral over [0, 1] of the shifted Chebyshev polynomial T_k(2x - 1): 0 for odd k
    integrals = np.zeros(m)
    even = np.arange(2.0, m + 1.0, 2.0)
    integrals[1::2] = -1.0 / (even ** 2 - 1.0)

    def residuals(x):
        y = 2.0 * x - 1.0
        previous, current = 1.0, y
        means = [np.mean(current)]
        for _ in range(m - 1):
            previous, current = current, 2.0 * y * current - previous
            means.append(np.mean(current))
        return np.stack(means) - integrals

    return _least_squares("chebyquad", "Chebyquad", 35, residuals, np.arange(1.0, n + 1.0) / (n + 1.0),
                          m, fmin, local_minima=local_minima, notes=notes)


MGH: tuple[Problem, ...] = (
    _rosenbrock(),
    _freudenstein_roth(),
    _powell_badly_scaled(),
    _brown_badly_scaled(),
    _beale(),
    _jennrich_sampson(),
    _helical_valley(),
    _bard(),
    _gaussian(),
    _meyer(),
    _gulf(),
    _box_3d(),
    _powell_singular(),
    _wood(),
    _kowalik_osborne(),
    _brown_dennis(),
    _osborne1(),
    _biggs_exp6(),
    _osborne2(),
    _watson(6, 2.287670053552e-3, "2.28767e-3"),
    _watson(9, 1.399760138095e-6, "1.39976e-6"),
    _extended_rosenbrock(10),
    _extended_powell(12),
    _penalty1(4, 2.249977500900e-5, "2.24997e-5"),
    _penalty1(10, 7.087651467090e-5, "7.08765e-5"),
    _penalty2(4, 9.376293007355e-6, "9.37629e-6"),
    _penalty2(10, 2.936605374567e-4, "2.93660e-4"),
    _variably_dimensioned(10),
    _trigonometric(10, (2.795056121878e-5,)),
    _brown_almost_linear(10),
    _discrete_boundary_value(10),
    _discrete_integral_equation(10),
    _broyden_tridiagonal(10),
    _broyden_banded(10),
    _linear_full_rank(10, 20),
    _linear_rank1(10, 20),
    _linear_rank1_zero(10, 20),
    _chebyquad(8, 3.516873725678e-3, (), "MGH: 3.51687e-3"),
    _chebyquad(10, 4.772713696375e-3, (6.503954800883e-3,),
               "MGH list 6.50395e-3, a local minimum; a lower one, 4.77271e-3, has two equal "
               "coordinates (found here by multistart Levenberg-Marquardt; trust-exact reaches it "
               "from x0)"),
)
"""The 39 MGH instances, in the paper's order."""


# --------------------------------------------------------------------------------------------------
# Scalable problems
# --------------------------------------------------------------------------------------------------


# Value of the local minimum of the chained Rosenbrock function near (-1, 1, ..., 1) for n = 4, ..., 20
# (computed here; n = 4..7 agree with Gonum's test functions); beyond n = 20 it changes by < 1e-10.
_CHAINED_ROSENBROCK_LOCAL = (
    3.70142861043, 3.93083943413, 3.97394050093, 3.98360053642, 3.98588776960, 3.98644282325,
    3.98657911235, 3.98661276945, 3.98662110472, 3.98662317186, 3.98662368487, 3.98662381223,
    3.98662384385, 3.98662385171, 3.98662385366, 3.98662385414, 3.98662385426, 3.98662385430,
)


def _chained_rosenbrock(n: int) -> Problem:
    """Rosenbrock's function chained over consecutive variables, as scipy.optimize.rosen."""
    if n < 2:
        raise ValueError(f"chained_rosenbrock needs n >= 2, got {n}")
    order = _interleave(2, n - 1)

    def residuals(x):
        head = x[:-1]
        return np.concatenate([10.0 * (x[1:] - head ** 2), 1.0 - head])[order]

    x0 = np.tile([-1.2, 1.0], (n + 1) // 2)[:n]
    local_minima = ()
    if n >= 4:
        local_minima = (_CHAINED_ROSENBROCK_LOCAL[min(n, 21) - 4],)
    return _least_squares("chained_rosenbrock", "Chained Rosenbrock", None, residuals, x0, 2 * (n - 1),
                          0.0, xmin=np.ones(n), local_minima=local_minima,
                          notes="for n >= 4 also a local minimum near (-1, 1, ..., 1), "
                                "Kok & Sandrock 2009")


def _arwhead(n: int) -> Problem:
    """ARWHEAD (CUTEst); Conn, Gould, Lescrenier & Toint 1994, problem 55."""
    if n < 2:
        raise ValueError(f"arwhead needs n >= 2, got {n}")

    def fun(x):
        head = x[:-1]
        return np.sum((head ** 2 + x[-1] ** 2) ** 2 - 4.0 * head + 3.0)

    xmin = np.ones(n)
    xmin[-1] = 0.0
    return Problem("arwhead", "ARWHEAD", None, n, None, fun, np.ones(n), 0.0, xmin=xmin)


# DIXMAAN (Dixon & Maany 1988, CUTEst): (beta, gamma, delta) and exponents (k1, k2, k3, k4); alpha = 1
_DIXMAAN_COEFFICIENTS = ((0.0, 0.125, 0.125), (0.0625, 0.0625, 0.0625), (0.125, 0.125, 0.125),
                         (0.26, 0.26, 0.26))
_DIXMAAN_EXPONENTS = ((0, 0, 0, 0), (1, 0, 0, 1), (2, 0, 0, 2))
_DIXMAAN = {f"dixmaan{letter}": (_DIXMAAN_COEFFICIENTS[index % 4], _DIXMAAN_EXPONENTS[index // 4])
            for index, letter in enumerate("abcdefghijkl")}


def _dixmaan(name: str, n: int) -> Problem:
    """DIXMAANA-L: f = 1 + sum_i a_i x_i^2 + sum_{i<n} b_i x_i^2 (x_{i+1} + x_{i+1}^2)^2
    + sum_{i<=2m} c_i x_i^2 x_{i+m}^4 + sum_{i<=m} d_i x_i x_{i+2m}, n = 3m, weights
    (alpha, beta, gamma, delta) * (i/n)^k."""
    if n < 3 or n % 3:
        raise ValueError(f"{name} needs n a positive multiple of 3, got {n}")
    (beta, gamma, delta), (k1, k2, k3, k4) = _DIXMAAN[name]
    m = n // 3
    ratio = np.arange(1.0, n + 1.0) / n
    a = ratio ** k1
    b = beta * ratio[:-1] ** k2
    c = gamma * ratio[:2 * m] ** k3
    d = delta * ratio[:m] ** k4

    def fun(x):
        x2 = x ** 2
        y = x[1:]
        return (1.0 + a @ x2
                + b @ (x2[:-1] * (y + y ** 2) ** 2)
                + c @ (x2[:2 * m] * x2[m:] ** 2)
                + d @ (x[:m] * x[2 * m:]))

    return Problem(name, name.upper(), None, n, None, fun, np.full(n, 2.0), 1.0, xmin=np.zeros(n))


SCALABLE: dict[str, Callable[[int], Problem]] = {
    "chained_rosenbrock": _chained_rosenbrock,
    "extended_rosenbrock": _extended_rosenbrock,
    "extended_powell": _extended_powell,
    "arwhead": _arwhead,
    **{name: (lambda n, name=name: _dixmaan(name, n)) for name in _DIXMAAN},
    "broyden_tridiagonal": _broyden_tridiagonal,
    "broyden_banded": _broyden_banded,
    "discrete_boundary_value": _discrete_boundary_value,
}
"""Factories of the scalable problems by name: ``SCALABLE[name](n)``."""


def scalable(name: str, n: int) -> Problem:
    """A scalable problem at size ``n``; ``name`` is one of ``SCALABLE``.

    All have f* known for every n and vectorized objectives (no Python loop over n):
    chained Rosenbrock (``scipy.optimize.rosen``, x0 = (-1.2, 1, -1.2, 1, ...)), MGH 21 extended
    Rosenbrock (n even), MGH 22 extended Powell (n a multiple of 4), ARWHEAD (CUTEst; Conn, Gould,
    Lescrenier & Toint 1994), DIXMAANA-DIXMAANL (Dixon & Maany 1988 as in CUTEst; n a multiple of 3),
    MGH 30 Broyden tridiagonal, MGH 31 Broyden banded and MGH 28 discrete boundary value.

    Raises
    ------
    KeyError
        For an unknown name (the message lists the known ones).

    Examples
    --------
    >>> from hessopt import problems
    >>> p = problems.scalable("arwhead", 1000)
    >>> p, float(p.fun(p.x0))
    (Problem('arwhead', n=1000, m=None, fmin=0), 2997.0)
    """
    try:
        factory = SCALABLE[name]
    except KeyError:
        raise KeyError(f"unknown scalable problem {name!r}; choose from {sorted(SCALABLE)}") from None
    return factory(int(n))


# --------------------------------------------------------------------------------------------------
# Bound-constrained problems
# --------------------------------------------------------------------------------------------------


def _square_grid(name: str, n: int) -> int:
    """The side of the square grid of ``n`` interior points."""
    side = math.isqrt(n) if n > 0 else 0
    if side < 2 or side * side != n:
        raise ValueError(f"{name} lives on a square grid: n must be a perfect square >= 4, got {n}")
    return side


def _grid_slopes(x, side: int, edges: tuple | None = None) -> tuple:
    """The differences of a piecewise-linear finite element on the uniformly triangulated square.

    ``x`` holds the interior grid values in MINPACK-2's order (x index fastest: ``x[side * j +
    i]`` is the point (i + 1, j + 1)); ``edges`` gives the boundary values ``(bottom, top, left,
    right)``, each of length side + 2 from the lower (or left) corner, or zeros when None. Each
    cell is cut into a lower triangle (its lower-left corner and the points right of and above
    it) and an upper one (its upper-right corner and the points left of and below it). Returns
    the differences across each triangle, ``(lower_x, lower_y, upper_x, upper_y)``, each an
    array (side + 1, side + 1) over the cells (row: y, column: x).
    """
    bottom, top, left, right = edges if edges is not None else (np.zeros(side + 2),) * 4
    inner = np.reshape(x, (side, side))
    middle = np.concatenate([left[1:-1, None], inner, right[1:-1, None]], axis=1)
    grid = np.concatenate([bottom[None, :], middle, top[None, :]], axis=0)
    dx = grid[:, 1:] - grid[:, :-1]
    dy = grid[1:, :] - grid[:-1, :]
    return dx[:-1], dy[:, :-1], dx[1:], dy[:, 1:]


def _grid_points(side: int, width: float = 1.0, height: float = 1.0) -> tuple:
    """The coordinates of the interior points of (0, width) x (0, height), in x's order."""
    xi = np.tile(np.arange(1.0, side + 1.0) * width / (side + 1.0), side)
    eta = np.repeat(np.arange(1.0, side + 1.0) * height / (side + 1.0), side)
    return xi, eta


def _membrane(name: str, title: str, n: int, force: float, lower, upper, x0, fmin: dict,
              notes: str) -> Problem:
    """``q(v) = integral of ||grad v||^2 / 2 - force v`` over the unit square, v = 0 on its
    boundary, in MINPACK-2's finite elements (DEPTFG): with h = 1 / (side + 1) it is the sum of
    the squared differences over all triangles / 4 minus force h^2 sum(v)."""
    side = _square_grid(name, n)
    h2 = 1.0 / (side + 1.0) ** 2

    def fun(x):
        lower_x, lower_y, upper_x, upper_y = _grid_slopes(x, side)
        quadratic = (np.sum(lower_x ** 2) + np.sum(lower_y ** 2) + np.sum(upper_x ** 2)
                     + np.sum(upper_y ** 2))
        return 0.25 * quadratic - force * h2 * np.sum(x)

    return Problem(name, title, None, n, None, fun, x0, fmin.get(n, np.nan), notes=notes,
                   lower=lower, upper=upper)


# f* over the box for n = 100, 2500, 10000, computed here: L-BFGS-B to a projected gradient of
# 1e-11, then Newton steps on the free variables (exact Hessian products, CG to 1e-13) until the
# projected gradient is at rounding level (below 2e-15 on every problem); 12 digits.
_TORSION_FMIN = {100: -0.409945172905, 2500: -0.418087632020, 10000: -0.418391026664}
_OBSTACLE_FMIN = {100: 4.28304628808, 2500: 5.83085231842, 10000: 5.89018926635}
_JOURNAL_BEARING_FMIN = {100: -0.178823632082, 2500: -0.180487995008, 10000: -0.180574369663}
_MINIMAL_SURFACE_FMIN = {100: 2.01207659184, 2500: 2.23997260536, 10000: 2.26569870544}
_BOUNDED_ROSENBROCK_FMIN = {100: 61.8024457071, 2500: 1606.71122222, 10000: 6434.55114882}


def _torsion(n: int) -> Problem:
    """Elastic-plastic torsion, MINPACK-2 DEPT (c = 5): |v| <= distance to the boundary."""
    side = _square_grid("torsion", n)
    k = np.arange(1, side + 1)
    to_edge = np.minimum(k, side + 1 - k) / (side + 1.0)
    distance = np.minimum(to_edge[:, None], to_edge[None, :]).ravel()
    return _membrane("torsion", "Elastic-plastic torsion (MINPACK-2 DEPT, c = 5)", n, 5.0,
                     -distance, distance, distance, _TORSION_FMIN,
                     "Glowinski 1984; Averick, Carter, More & Xue 1992, DEPTFG; x0 = the upper "
                     "bound (the distance to the boundary), as MINPACK-2's standard start")


def _obstacle(n: int) -> Problem:
    """The obstacle problem: a membrane (force 1) between two obstacles."""
    side = _square_grid("obstacle", n)
    xi, eta = _grid_points(side)
    wave = np.sin(9.2 * xi) * np.sin(9.3 * eta)
    lower, upper = wave ** 3, wave ** 2 + 0.2
    return _membrane("obstacle", "Obstacle problem (membrane between two obstacles)", n, 1.0,
                     lower, upper, np.maximum(lower, 0.0), _OBSTACLE_FMIN,
                     "Ciarlet 1978; More & Toraldo 1991; MCPLIB 'obstacle' (Dirkse & Ferris "
                     "1995): lower (sin(9.2 x) sin(9.3 y))^3, upper (sin(9.2 x) sin(9.3 y))^2 + "
                     "0.2, x0 = max(lower, 0); the membrane energy of DEPT with force 1")


def _journal_bearing(n: int, eccentricity: float = 0.1, b: float = 10.0) -> Problem:
    """Pressure distribution in a journal bearing, MINPACK-2 DPJB (eccentricity 0.1, b = 10)."""
    side = _square_grid("journal_bearing", n)
    hx, hy = 2.0 * np.pi / (side + 1.0), 2.0 * b / (side + 1.0)
    xi = np.arange(side + 2.0) * hx
    wq = (1.0 + eccentricity * np.cos(xi)) ** 3
    # each triangle's weight: the mean of wq over its vertices, times its area (hx hy / 2)
    lower_weight = hx * hy * (2.0 * wq[:-1] + wq[1:]) / 6.0
    upper_weight = hx * hy * (2.0 * wq[1:] + wq[:-1]) / 6.0
    point_xi, _ = _grid_points(side, 2.0 * np.pi, 2.0 * b)
    linear = eccentricity * hx * hy * np.sin(point_xi)

    def fun(x):
        lower_x, lower_y, upper_x, upper_y = _grid_slopes(x, side)
        quadratic = (np.sum(lower_weight * ((lower_x / hx) ** 2 + (lower_y / hy) ** 2))
                     + np.sum(upper_weight * ((upper_x / hx) ** 2 + (upper_y / hy) ** 2)))
        return 0.5 * quadratic - linear @ x

    x0 = np.maximum(np.sin(point_xi), 0.0)
    return Problem("journal_bearing", "Pressure in a journal bearing (MINPACK-2 DPJB)", None, n,
                   None, fun, x0, _JOURNAL_BEARING_FMIN.get(n, np.nan), lower=np.zeros(n),
                   upper=np.full(n, np.inf),
                   notes="Cimatti 1977; Averick, Carter, More & Xue 1992, DPJBFG: v >= 0 (DMINXB "
                         "adds v <= 100, never active); x0 = max(sin(x), 0), MINPACK-2's start")


def enneper_edges(side: int) -> tuple:
    """Enneper's surface on the boundary of the square (-1/2, 1/2)^2 (MINPACK-2 DMSABC): the
    height u^2 - v^2 where x = u + u v^2 - u^3/3, y = -v - u^2 v + v^3/3, by Newton's method.

    Returns ``(bottom, top, left, right)``, each the side + 2 boundary heights of a square grid
    of side x side interior points, from the lower (or left) corner.

    Examples
    --------
    >>> from hessopt.problems import enneper_edges
    >>> bottom, top, left, right = enneper_edges(3)
    >>> bottom.round(4), left.round(4)          # u^2 - v^2 changes sign with the side
    (array([ 0.    , -0.2405, -0.3112, -0.2405,  0.    ]), array([0.    , 0.2405, 0.3112, 0.2405, 0.    ]))
    """
    t = -0.5 + np.arange(side + 2.0) / (side + 1.0)
    half = np.full(side + 2, 0.5)
    x = np.concatenate([t, t, -half, half])      # bottom, top, left, right
    y = np.concatenate([-half, half, t, t])
    u, v = x.copy(), -y
    for _ in range(50):
        fx = u + u * v * v - u ** 3 / 3.0 - x
        fy = -v - u * u * v + v ** 3 / 3.0 - y
        if np.max(np.abs(fx) + np.abs(fy)) <= 1e-15:
            break
        a, b, c, d = 1.0 + v * v - u * u, 2.0 * u * v, -2.0 * u * v, -1.0 - u * u + v * v
        det = a * d - b * c
        u, v = u - (d * fx - b * fy) / det, v - (a * fy - c * fx) / det
    return tuple(np.split(u * u - v * v, 4))


def _minimal_surface(n: int, height: float = 2.0) -> Problem:
    """Minimal surface over an obstacle, MINPACK-2 DMSA with DMINXB's bounds (DMSA_B)."""
    side = _square_grid("minimal_surface", n)
    h = 1.0 / (side + 1.0)
    edges = enneper_edges(side)
    bottom, top, left, right = edges

    def fun(x):
        lower_x, lower_y, upper_x, upper_y = _grid_slopes(x, side, edges)
        return 0.5 * h * h * (np.sum(np.sqrt(1.0 + (lower_x / h) ** 2 + (lower_y / h) ** 2))
                              + np.sum(np.sqrt(1.0 + (upper_x / h) ** 2 + (upper_y / h) ** 2)))

    xi, eta = _grid_points(side)
    lower = height - 10.0 * (np.abs(xi - 0.5) + np.abs(eta - 0.5))
    upper = np.full(n, max(2.0 * height, 1.0))
    columns = np.tile(np.arange(1, side + 1), side)
    rows = np.repeat(np.arange(1, side + 1), side)
    across = eta * top[columns] + (1.0 - eta) * bottom[columns]
    along = xi * right[rows] + (1.0 - xi) * left[rows]
    x0 = np.clip((across + along) / 2.0, lower, upper)
    return Problem("minimal_surface", "Minimal surface over an obstacle (MINPACK-2 DMSA_B)", None,
                   n, None, fun, x0, _MINIMAL_SURFACE_FMIN.get(n, np.nan), lower=lower,
                   upper=upper,
                   notes="Averick, Carter, More & Xue 1992, DMSAFG with Enneper's boundary "
                         "values (DMSABC) and DMINXB's bounds for DMSA_B: a pyramid of height 2 "
                         "below (slope 10), 4 above; x0 = MINPACK-2's start, clipped into the box")


def _bounded_rosenbrock(n: int) -> Problem:
    """Chained Rosenbrock in a box whose bounds bind at every fifth variable."""
    base = _chained_rosenbrock(n)
    k = np.arange(n)
    lower = np.where(k % 10 == 5, 1.1, 0.0)
    upper = np.where(k % 10 == 0, 0.9, np.inf)
    return Problem("bounded_rosenbrock", "Chained Rosenbrock in a box", None, n, base.m, base.fun,
                   np.clip(base.x0, lower, upper), _BOUNDED_ROSENBROCK_FMIN.get(n, np.nan),
                   residuals=base.residuals, lower=lower, upper=upper,
                   notes="scipy.optimize.rosen over x >= 0 with x_i <= 0.9 for i = 0 mod 10 and "
                         "x_i >= 1.1 for i = 5 mod 10 (0-based), all of which bind at the "
                         "minimizer; x >= 0 keeps the square roots of the chain on one branch, so "
                         "the minimizer is unique (the same from six starts); x0 = (-1.2, 1, "
                         "-1.2, ...) clipped into the box")


BOUNDED: dict[str, Callable[[int], Problem]] = {
    "torsion": _torsion,
    "obstacle": _obstacle,
    "journal_bearing": _journal_bearing,
    "minimal_surface": _minimal_surface,
    "bounded_rosenbrock": _bounded_rosenbrock,
}
"""Factories of the bound-constrained problems by name: ``BOUNDED[name](n)``."""


def bounded(name: str, n: int) -> Problem:
    """A bound-constrained problem at size ``n``; ``name`` is one of ``BOUNDED``.

    The four MINPACK-2 problems TRON was measured on (Lin & Moré 1999), on a square grid of n
    interior points (n a perfect square) as plain NumPy over the grid: elastic-plastic torsion
    (DEPT), the obstacle problem, pressure in a journal bearing (DPJB) and the minimal surface
    over an obstacle (DMSA_B); and chained Rosenbrock in a box. ``lower``/``upper`` hold the
    bounds, ``x0`` lies in the box; ``fmin`` is the minimum over the box, computed here for
    n = 100, 2500 and 10000 (NaN at other sizes).

    Raises
    ------
    KeyError
        For an unknown name (the message lists the known ones).
    ValueError
        For a grid problem whose n is not a perfect square.

    Examples
    --------
    >>> from hessopt import problems
    >>> p = problems.bounded("torsion", 100)
    >>> p
    Problem('torsion', n=100, m=None, fmin=-0.409945)
    >>> p.lower[:3], p.upper[:3]     # |v| <= the distance to the boundary (h = 1/11 here)
    (array([-0.0909..., -0.0909..., -0.0909...]), array([0.0909..., 0.0909..., 0.0909...]))
    """
    try:
        factory = BOUNDED[name]
    except KeyError:
        raise KeyError(f"unknown bounded problem {name!r}; choose from {sorted(BOUNDED)}") from None
    return factory(int(n))


def get(name: str | int, n: int | None = None) -> Problem:
    """An MGH instance by name or MGH number (``n`` picks among sizes), else ``scalable(name, n)``.

    Raises
    ------
    KeyError
        For an unknown problem.
    ValueError
        When a size is needed and missing, or not one the MGH set has.

    Examples
    --------
    >>> from hessopt import problems
    >>> problems.get(1)
    Problem('rosenbrock', MGH 1, n=2, m=2, fmin=0)
    >>> problems.get("watson", n=6)
    Problem('watson', MGH 20, n=6, m=31, fmin=0.00228767)
    """
    matches = [p for p in MGH if name in (p.name, p.number)]
    if n is not None:
        sized = [p for p in matches if p.n == n]
        if sized:
            return sized[0]
        if isinstance(name, str) and name in SCALABLE:
            return scalable(name, n)
        if matches:
            raise ValueError(f"{name!r} is in the MGH set only with n in {[p.n for p in matches]}")
    elif len(matches) == 1:
        return matches[0]
    elif matches:
        raise ValueError(f"{name!r} has MGH instances with n in {[p.n for p in matches]}: pass n")
    elif isinstance(name, str) and name in SCALABLE:
        raise ValueError(f"{name!r} is scalable: pass n")
    raise KeyError(f"unknown problem {name!r}")


# --- ODE right-hand sides (odeint's signature f(y, t, *params)) ------------------------------------

def lotka_volterra(y, t, a, b, c, d):
    """Lotka-Volterra predator-prey: prey y[0] grows at a and is eaten at b y[0] y[1]; predators
    y[1] die at c and grow at d y[0] y[1].

    Examples
    --------
    >>> import numpy as np
    >>> lotka_volterra(np.array([10.0, 5.0]), 0.0, 1.0, 0.1, 1.5, 0.075)    # 10 - 5, -7.5 + 3.75
    array([ 5.  , -3.75])
    """
    return np.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def sir(y, t, beta, gamma):
    """The SIR epidemic (Kermack & McKendrick 1927): susceptible, infected, recovered fractions.

    Examples
    --------
    >>> import numpy as np
    >>> sir(np.array([0.99, 0.01, 0.0]), 0.0, 0.3, 0.1).round(5)          # infections 0.3 * 0.0099
    array([-0.00297,  0.00197,  0.001  ])
    """
    infections = beta * y[0] * y[1]
    return np.stack([-infections, infections - gamma * y[1], gamma * y[1]])


def robertson(y, t, k1, k2, k3):
    """Robertson's chemical kinetics (1966): stiff (rates from 0.04 to 3e7).

    Examples
    --------
    >>> import numpy as np
    >>> robertson(np.array([1.0, 0.0, 0.0]), 0.0, 0.04, 3e7, 1e4)           # only k1 acts at the start
    array([-0.04,  0.04,  0.  ])
    """
    return np.stack([-k1 * y[0] + k3 * y[1] * y[2], k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
                     k2 * y[1] ** 2])


def saturating_chain(y, t, vmax, km):
    """Compartments in a row (as many as y has), each passing to the next at the saturating
    (Michaelis-Menten) rate vmax y / (km + y).

    Examples
    --------
    >>> import numpy as np
    >>> saturating_chain(np.array([1.0, 1.0, 0.0]), 0.0, 1.0, 1.0)          # fluxes 0.5, 0.5, 0
    array([-0.5,  0. ,  0.5])
    """
    flux = vmax * y / (km + y)
    return np.concatenate([-flux[:1], flux[:-1] - flux[1:]])

