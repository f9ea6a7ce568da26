"""Tests of hessopt.problems: definitions, starting points, minima, and traceability."""

import gc
import math
import sys
import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import Bounds, least_squares, minimize, root, rosen

import autodiff as ad
from hessopt.problems import BOUNDED, MGH, SCALABLE, Problem, bounded, get, scalable

IDS = [f"{p.number:02d}-{p.name}-{p.n}" for p in MGH]


# --------------------------------------------------------------------------------------------------
# Reference implementations: the residuals of Moré, Garbow & Hillstrom (1981) as scalar Python loops
# --------------------------------------------------------------------------------------------------

def ref_residuals(p: Problem, x) -> list:
    x = [float(v) for v in x]
    n, m = p.n, p.m
    k = p.number
    if k in (1, 21):
        r = []
        for i in range(n // 2):
            r += [10 * (x[2 * i + 1] - x[2 * i] ** 2), 1 - x[2 * i]]
        return r
    if k == 2:
        return [-13 + x[0] + ((5 - x[1]) * x[1] - 2) * x[1],
                -29 + x[0] + ((x[1] + 1) * x[1] - 14) * x[1]]
    if k == 3:
        return [1e4 * x[0] * x[1] - 1, math.exp(-x[0]) + math.exp(-x[1]) - 1.0001]
    if k == 4:
        return [x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2]
    if k == 5:
        return [y - x[0] * (1 - x[1] ** i) for i, y in zip((1, 2, 3), (1.5, 2.25, 2.625))]
    if k == 6:
        return [2 + 2 * i - (math.exp(i * x[0]) + math.exp(i * x[1])) for i in range(1, m + 1)]
    if k == 7:
        theta = math.atan(x[1] / x[0]) / (2 * math.pi) + (0.5 if x[0] < 0 else 0.0)
        return [10 * (x[2] - 10 * theta), 10 * (math.hypot(x[0], x[1]) - 1), x[2]]
    if k == 8:
        y = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39]
        return [y[i - 1] - (x[0] + i / ((16 - i) * x[1] + min(i, 16 - i) * x[2])) for i in range(1, 16)]
    if k == 9:
        y = [0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989]
        y = y + y[-2::-1]
        return [x[0] * math.exp(-x[1] * ((8 - i) / 2 - x[2]) ** 2 / 2) - y[i - 1] for i in range(1, 16)]
    if k == 10:
        y = [34780, 28610, 23650, 19630, 16370, 13720, 11540, 9744, 8261, 7030, 6005, 5147, 4427,
             3820, 3307, 2872]
        return [x[0] * math.exp(x[1] / (45 + 5 * i + x[2])) - y[i - 1] for i in range(1, 17)]
    if k == 11:
        r = []
        for i in range(1, m + 1):
            t = i / 100
            y = 25 + (-50 * math.log(t)) ** (2 / 3)
            r.append(math.exp(-abs(y - x[1]) ** x[2] / x[0]) - t)
        return r
    if k == 12:
        return [math.exp(-0.1 * i * x[0]) - math.exp(-0.1 * i * x[1])
                - x[2] * (math.exp(-0.1 * i) - math.exp(-i)) for i in range(1, m + 1)]
    if k in (13, 22):
        r = []
        for i in range(n // 4):
            a, b, c, d = x[4 * i:4 * i + 4]
            r += [a + 10 * b, math.sqrt(5) * (c - d), (b - 2 * c) ** 2, math.sqrt(10) * (a - d) ** 2]
        return r
    if k == 14:
        return [10 * (x[1] - x[0] ** 2), 1 - x[0], math.sqrt(90) * (x[3] - x[2] ** 2), 1 - x[2],
                math.sqrt(10) * (x[1] + x[3] - 2), (x[1] - x[3]) / math.sqrt(10)]
    if k == 15:
        y = [0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323, 0.0235, 0.0246]
        u = [4, 2, 1, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625]
        return [y[i] - x[0] * (u[i] ** 2 + u[i] * x[1]) / (u[i] ** 2 + u[i] * x[2] + x[3])
                for i in range(11)]
    if k == 16:
        r = []
        for i in range(1, m + 1):
            t = i / 5
            r.append((x[0] + t * x[1] - math.exp(t)) ** 2
                     + (x[2] + x[3] * math.sin(t) - math.cos(t)) ** 2)
        return r
    if k == 17:
        y = [0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751, 0.718, 0.685,
             0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490, 0.478, 0.467, 0.457, 0.448,
             0.438, 0.431, 0.424, 0.420, 0.414, 0.411, 0.406]
        return [y[i - 1] - (x[0] + x[1] * math.exp(-10 * (i - 1) * x[3])
                            + x[2] * math.exp(-10 * (i - 1) * x[4]))
                for i in range(1, 34)]
    if k == 18:
        r = []
        for i in range(1, m + 1):
            t = 0.1 * i
            y = math.exp(-t) - 5 * math.exp(-10 * t) + 3 * math.exp(-4 * t)
            r.append(x[2] * math.exp(-t * x[0]) - x[3] * math.exp(-t * x[1])
                     + x[5] * math.exp(-t * x[4]) - y)
        return r
    if k == 19:
        y = [1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725, 0.746, 0.679, 0.608,
             0.655, 0.616, 0.606, 0.602, 0.626, 0.651, 0.724, 0.649, 0.649, 0.694, 0.644, 0.624, 0.661,
             0.612, 0.558, 0.533, 0.495, 0.500, 0.423, 0.395, 0.375, 0.372, 0.391, 0.396, 0.405, 0.428,
             0.429, 0.523, 0.562, 0.607, 0.653, 0.672, 0.708, 0.633, 0.668, 0.645, 0.632, 0.591, 0.559,
             0.597, 0.625, 0.739, 0.710, 0.729, 0.720, 0.636, 0.581, 0.428, 0.292, 0.162, 0.098, 0.054]
        r = []
        for i in range(1, 66):
            t = (i - 1) / 10
            r.append(y[i - 1] - (x[0] * math.exp(-t * x[4]) + x[1] * math.exp(-(t - x[8]) ** 2 * x[5])
                                 + x[2] * math.exp(-(t - x[9]) ** 2 * x[6])
                                 + x[3] * math.exp(-(t - x[10]) ** 2 * x[7])))
        return r
    if k == 20:
        r = []
        for i in range(1, 30):
            t = i / 29
            s1 = sum((j - 1) * x[j - 1] * t ** (j - 2) for j in range(2, n + 1))
            s2 = sum(x[j - 1] * t ** (j - 1) for j in range(1, n + 1))
            r.append(s1 - s2 ** 2 - 1)
        return r + [x[0], x[1] - x[0] ** 2 - 1]
    if k == 23:
        return [math.sqrt(1e-5) * (v - 1) for v in x] + [sum(v * v for v in x) - 0.25]
    if k == 24:
        a = math.sqrt(1e-5)
        r = [x[0] - 0.2]
        for i in range(2, n + 1):
            y = math.exp(i / 10) + math.exp((i - 1) / 10)
            r.append(a * (math.exp(x[i - 1] / 10) + math.exp(x[i - 2] / 10) - y))
        for i in range(n + 1, 2 * n):
            r.append(a * (math.exp(x[i - n] / 10) - math.exp(-1 / 10)))
        return r + [sum((n - j + 1) * x[j - 1] ** 2 for j in range(1, n + 1)) - 1]
    if k == 25:
        s = sum(j * (x[j - 1] - 1) for j in range(1, n + 1))
        return [v - 1 for v in x] + [s, s * s]
    if k == 26:
        c = sum(math.cos(v) for v in x)
        return [n - c + i * (1 - math.cos(x[i - 1])) - math.sin(x[i - 1]) for i in range(1, n + 1)]
    if k == 27:
        return [x[i] + sum(x) - (n + 1) for i in range(n - 1)] + [math.prod(x) - 1]
    if k in (28, 29, 30):
        h = 1 / (n + 1)
        xx = [0.0] + x + [0.0]
        r = []
        for i in range(1, n + 1):
            t = i * h
            if k == 28:
                r.append(2 * xx[i] - xx[i - 1] - xx[i + 1] + h * h * (xx[i] + t + 1) ** 3 / 2)
            elif k == 29:
                lo = sum(j * h * (xx[j] + j * h + 1) ** 3 for j in range(1, i + 1))
                hi = sum((1 - j * h) * (xx[j] + j * h + 1) ** 3 for j in range(i + 1, n + 1))
                r.append(xx[i] + h * ((1 - t) * lo + t * hi) / 2)
            else:
                r.append((3 - 2 * xx[i]) * xx[i] - xx[i - 1] - 2 * xx[i + 1] + 1)
        return r
    if k == 31:
        r = []
        for i in range(1, n + 1):
            band = [j for j in range(max(1, i - 5), min(n, i + 1) + 1) if j != i]
            r.append(x[i - 1] * (2 + 5 * x[i - 1] ** 2) + 1
                     - sum(x[j - 1] * (1 + x[j - 1]) for j in band))
        return r
    if k == 32:
        s = sum(x)
        return [x[i] - 2 * s / m - 1 for i in range(n)] + [-2 * s / m - 1] * (m - n)
    if k == 33:
        s = sum(j * x[j - 1] for j in range(1, n + 1))
        return [i * s - 1 for i in range(1, m + 1)]
    if k == 34:
        s = sum(j * x[j - 1] for j in range(2, n))
        return [-1.0] + [(i - 1) * s - 1 for i in range(2, m)] + [-1.0]
    if k == 35:
        r = []
        for i in range(1, m + 1):
            total = 0.0
            for v in x:
                y = 2 * v - 1
                t_prev, t = 1.0, y
                for _ in range(i - 1):
                    t_prev, t = t, 2 * y * t - t_prev
                total += t
            integral = -1 / (i * i - 1) if i % 2 == 0 else 0.0
            r.append(total / n - integral)
        return r
    raise AssertionError(k)


def random_points(p: Problem, count: int = 3) -> list:
    rng = np.random.default_rng(p.number * 100 + p.n)
    return [p.x0 * (1 + 0.1 * rng.standard_normal(p.n)) + 0.05 * rng.standard_normal(p.n)
            for _ in range(count)]


def lm(residuals, x):
    result = least_squares(residuals, np.array(x, dtype=float), method="lm", xtol=1e-15, ftol=1e-15,
                           gtol=1e-15)
    return result.fun @ result.fun, result.x


def fd_gradient(fun, x, rel=1e-6):
    x = np.array(x, dtype=float)
    g = np.empty_like(x)
    for i in range(x.size):
        h = rel * max(abs(x[i]), 1.0)
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


def fd_hessian(fun, x, h=1e-5):
    hessian = np.array([(fd_gradient(fun, x + h * e) - fd_gradient(fun, x - h * e)) / (2 * h)
                        for e in np.eye(len(x))])
    return (hessian + hessian.T) / 2


# --------------------------------------------------------------------------------------------------
# The instance list
# --------------------------------------------------------------------------------------------------

def test_mgh_has_39_instances_of_the_35_problems():
    assert len(MGH) == 39
    assert sorted({p.number for p in MGH}) == list(range(1, 36))
    assert [p.number for p in MGH] == sorted(p.number for p in MGH)
    sizes = {}
    for p in MGH:
        sizes.setdefault(p.name, []).append(p.n)
    assert sizes["watson"] == [6, 9]
    assert sizes["penalty1"] == [4, 10] and sizes["penalty2"] == [4, 10]
    assert sizes["chebyquad"] == [8, 10]
    assert len(sizes) == 35


@pytest.mark.parametrize("p", MGH, ids=IDS)
def test_shapes_and_residual_form(p):
    assert p.x0.shape == (p.n,) and p.x0.dtype == np.float64
    assert not p.x0.flags.writeable
    assert p.m is not None and p.m >= p.n
    for x in [p.x0, *random_points(p)]:
        r = p.residuals(x)
        assert r.shape == (p.m,)
        assert np.isclose(p.fun(x), np.sum(r ** 2), rtol=1e-13, atol=0)


@pytest.mark.parametrize("p", MGH, ids=IDS)
def test_residuals_agree_with_the_papers_formulas(p):
    for x in [p.x0, *random_points(p)]:
        np.testing.assert_allclose(p.residuals(x), ref_residuals(p, x), rtol=1e-12, atol=1e-12)


def test_standard_sizes():
    expected = {"gulf": (3, 99), "box_3d": (3, 10), "jennrich_sampson": (2, 10), "brown_dennis": (4, 20),
                "biggs_exp6": (6, 13), "osborne1": (5, 33), "osborne2": (11, 65), "meyer": (3, 16),
                "extended_rosenbrock": (10, 10), "extended_powell": (12, 12), "trigonometric": (10, 10),
                "linear_full_rank": (10, 20), "linear_rank1": (10, 20), "linear_rank1_zero": (10, 20)}
    for name, (n, m) in expected.items():
        p = get(name)
        assert (p.n, p.m) == (n, m), name
    assert get("watson", 6).m == 31 and get("penalty1", 10).m == 11 and get("penalty2", 10).m == 20


# --------------------------------------------------------------------------------------------------
# Starting points and values there
# --------------------------------------------------------------------------------------------------

def test_standard_starting_points():
    assert get("rosenbrock").x0.tolist() == [-1.2, 1.0]
    assert get("freudenstein_roth").x0.tolist() == [0.5, -2.0]
    assert get("helical_valley").x0.tolist() == [-1.0, 0.0, 0.0]
    assert get("meyer").x0.tolist() == [0.02, 4000.0, 250.0]
    assert get("gulf").x0.tolist() == [5.0, 2.5, 0.15]
    assert get("box_3d").x0.tolist() == [0.0, 10.0, 20.0]
    assert get("wood").x0.tolist() == [-3.0, -1.0, -3.0, -1.0]
    assert get("kowalik_osborne").x0.tolist() == [0.25, 0.39, 0.415, 0.39]
    assert get("brown_dennis").x0.tolist() == [25.0, 5.0, -5.0, -1.0]
    assert get("osborne1").x0.tolist() == [0.5, 1.5, -1.0, 0.01, 0.02]
    assert get("biggs_exp6").x0.tolist() == [1.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    assert get("osborne2").x0.tolist() == [1.3, 0.65, 0.65, 0.7, 0.6, 3.0, 5.0, 7.0, 2.0, 4.5, 5.5]
    assert get("extended_powell").x0.tolist() == [3.0, -1.0, 0.0, 1.0] * 3
    assert get("penalty1", 4).x0.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert get("variably_dimensioned").x0.tolist() == pytest.approx([1 - j / 10 for j in range(1, 11)])
    assert get("discrete_boundary_value").x0.tolist() == pytest.approx(
        [j / 11 * (j / 11 - 1) for j in range(1, 11)])
    assert get("chebyquad", 8).x0.tolist() == pytest.approx([j / 9 for j in range(1, 9)])


# f(x0) worked out by hand from the definitions (see each comment)
F_X0 = {
    ("rosenbrock", 2): 24.2,  # 10^2 (1 - 1.44)^2 + 2.2^2
    ("freudenstein_roth", 2): 400.5,  # 19.5^2 + (-4.5)^2
    ("powell_badly_scaled", 2): 1 + (math.exp(-1) - 1e-4) ** 2,
    ("brown_badly_scaled", 2): (1 - 1e6) ** 2 + (1 - 2e-6) ** 2 + 1,
    ("beale", 2): 1.5 ** 2 + 2.25 ** 2 + 2.625 ** 2,  # x1 = 1 kills the model
    ("helical_valley", 3): 2500.0,  # theta = 1/2: f1 = -50
    ("powell_singular", 4): 215.0,  # 49 + 5 + 1 + 160
    ("wood", 4): 19192.0,  # 10000 + 16 + 9000 + 16 + 160 + 0
    ("watson", 6): 30.0,  # 29 residuals -1, x1 = 0, x2 - x1^2 - 1 = -1
    ("watson", 9): 30.0,
    ("extended_rosenbrock", 10): 5 * 24.2,
    ("extended_powell", 12): 3 * 215.0,
    ("penalty1", 4): 1e-5 * (0 + 1 + 4 + 9) + (30 - 0.25) ** 2,
    ("penalty1", 10): 1e-5 * 285 + (385 - 0.25) ** 2,
    ("variably_dimensioned", 10): 3.85 + 38.5 ** 2 + 38.5 ** 4,  # sum j (x_j - 1) = -385/10
    ("brown_almost_linear", 10): 9 * 5.5 ** 2 + (1 - 2.0 ** -10) ** 2,  # 0.5 + 5 - 11 = -5.5
    ("broyden_tridiagonal", 10): 8 * 1 + 2 ** 2 + 3 ** 2,  # interior -1, ends -2 and -3
    ("broyden_banded", 10): 10 * 36.0,  # -7 + 1 - 0 = -6
    ("linear_full_rank", 10): 10 * 1 + 10 * 4,  # sum x = 10, 2/m * 10 = 1
    ("linear_rank1", 10): sum((55 * i - 1) ** 2 for i in range(1, 21)),  # sum j x_j = 55
    ("linear_rank1_zero", 10): 2 + sum((44 * (i - 1) - 1) ** 2 for i in range(2, 20)),  # j = 2..9
    ("trigonometric", 10): sum((10 - 10 * math.cos(0.1) + i * (1 - math.cos(0.1)) - math.sin(0.1)) ** 2
                               for i in range(1, 11)),
}


@pytest.mark.parametrize("key", sorted(F_X0), ids=[f"{k[0]}-{k[1]}" for k in sorted(F_X0)])
def test_value_at_the_standard_starting_point(key):
    p = get(*key)
    assert p.fun(p.x0) == pytest.approx(F_X0[key], rel=1e-13)


# --------------------------------------------------------------------------------------------------
# Minima
# --------------------------------------------------------------------------------------------------

# Minimum values as printed by Moré, Garbow & Hillstrom (1981): 6 digits, mostly truncated (Biggs
# EXP6's printed 5.65565e-3 is a saddle point; it is checked with the infinity limits below)
PUBLISHED = {
    ("freudenstein_roth", 2): [48.9842], ("jennrich_sampson", 2): [124.362],
    ("bard", 3): [8.21487e-3, 17.4286], ("gaussian", 3): [1.12793e-8], ("meyer", 3): [87.9458],
    ("kowalik_osborne", 4): [3.07505e-4, 1.02734e-3],
    ("brown_dennis", 4): [85822.2], ("osborne1", 5): [5.46489e-5],
    ("osborne2", 11): [4.01377e-2], ("watson", 6): [2.28767e-3], ("watson", 9): [1.39976e-6],
    ("penalty1", 4): [2.24997e-5], ("penalty1", 10): [7.08765e-5], ("penalty2", 4): [9.37629e-6],
    ("penalty2", 10): [2.93660e-4], ("chebyquad", 8): [3.51687e-3], ("chebyquad", 10): [6.50395e-3],
    ("linear_full_rank", 10): [10.0], ("linear_rank1", 10): [20 * 19 / (2 * 41)],
    ("linear_rank1_zero", 10): [(400 + 60 - 6) / (2 * 37)],
}
# NIST StRD certified residual sums of squares of the same data (MGH10, MGH09, MGH17)
NIST = {"meyer": 8.7945855171e01, "kowalik_osborne": 3.0750560385e-04, "osborne1": 5.4648946975e-05}


@pytest.mark.parametrize("key", sorted(PUBLISHED), ids=[f"{k[0]}-{k[1]}" for k in sorted(PUBLISHED)])
def test_minima_agree_with_the_published_digits(key):
    p = get(*key)
    values = (p.fmin, *p.local_minima)
    for published in PUBLISHED[key]:
        unit = 10.0 ** (math.floor(math.log10(abs(published))) - 5)  # MGH mostly truncate
        assert any(abs(v - published) < unit for v in values), (published, values)


@pytest.mark.parametrize("name", sorted(NIST))
def test_minima_agree_with_nist_certified_values(name):
    assert get(name).fmin == pytest.approx(NIST[name], rel=1e-10)


@pytest.mark.parametrize("p", [p for p in MGH if p.xmin is not None],
                         ids=[i for i, p in zip(IDS, MGH) if p.xmin is not None])
def test_closed_form_minimizer(p):
    assert p.fun(p.xmin) == pytest.approx(p.fmin, rel=1e-12, abs=1e-20)
    g = fd_gradient(p.fun, p.xmin)
    scale = np.linalg.norm(fd_gradient(p.fun, p.x0))
    assert np.linalg.norm(g) <= 1e-7 * max(1.0, scale)


@pytest.mark.parametrize("p", MGH, ids=IDS)
def test_levenberg_marquardt_from_x0_reaches_a_stored_minimum(p):
    f, _ = lm(p.residuals, p.x0)
    assert p.solved(f)
    assert any(math.isclose(f, v, rel_tol=1e-8, abs_tol=1e-20) for v in (p.fmin, *p.local_minima))
    assert all(v > p.fmin for v in p.local_minima)


def test_chebyquad_10_has_a_minimum_below_the_papers_value():
    p = get("chebyquad", 10)
    start = [0.033, 0.155, 0.200, 0.383, 0.384, 0.529, 0.640, 0.714, 0.828, 0.925]
    f, x = lm(p.residuals, start)
    assert f == pytest.approx(p.fmin, rel=1e-10)
    assert np.linalg.norm(fd_gradient(p.fun, x)) < 1e-6
    assert np.linalg.eigvalsh(fd_hessian(p.fun, x))[0] > 0.1  # a strict local minimum
    assert p.fmin < 6.50395e-3


def test_local_minima_and_infima():
    # Freudenstein and Roth, trigonometric n = 10: reached from x0 (checked above); Brown almost-linear:
    p = get("brown_almost_linear")
    x = np.zeros(10)
    x[-1] = 11.0
    assert p.fun(x) == 1.0 and np.allclose(fd_gradient(p.fun, x), 0.0)
    # Bard as x2, x3 -> -inf: the model is the constant x1
    p = get("bard")
    at_infinity = p.fun(np.array([0.8406666666666667, -1e12, -1e12]))
    assert at_infinity == pytest.approx(p.local_minima[0], rel=1e-9)
    # Kowalik and Osborne as x1 = s, x3 = c3 s, x4 = c4 s, s -> inf
    p = get("kowalik_osborne")
    y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323, 0.0235,
                  0.0246])
    u = np.array([4, 2, 1, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625])
    f, z = lm(lambda z: y - (u ** 2 + u * z[0]) / (u * z[1] + z[2]), [-14.0, -45.0, -28.0])
    assert f == pytest.approx(p.local_minima[0], rel=1e-10)
    assert p.fun(np.array([1e8, z[0], z[1] * 1e8, z[2] * 1e8])) == pytest.approx(f, rel=1e-6)
    # Biggs EXP6: the paper's 5.65565e-3 at x1 = x5, x3 = x6, and the infimum as x2 -> inf
    p = get("biggs_exp6")
    t = 0.1 * np.arange(1, 14)
    y = np.exp(-t) - 5 * np.exp(-10 * t) + 3 * np.exp(-4 * t)
    f, (a, c, b, d) = lm(lambda z: z[1] * np.exp(-t * z[0]) - z[3] * np.exp(-t * z[2]) - y,
                         [1.7, 2.3, 17.7, 5.2])
    assert f == pytest.approx(5.655649925499e-3, rel=1e-10)
    assert not p.solved(f)  # a saddle is not a solution
    x = np.array([a, b, c / 2, d, a, c / 2])
    assert p.fun(x) == pytest.approx(f, rel=1e-12) and np.linalg.norm(fd_gradient(p.fun, x)) < 1e-8
    assert np.linalg.eigvalsh(fd_hessian(p.fun, x))[0] < -1e-3  # a saddle point, as the notes say
    f, (a, c) = lm(lambda z: z[1] * np.exp(-t * z[0]) - y, [1.2, 1.7])
    assert f == pytest.approx(p.local_minima[0], rel=1e-10)
    assert p.fun(np.array([a, 1e3, c / 2, 1.0, a, c / 2])) == pytest.approx(f, rel=1e-12)
    # Gulf: the first two residuals vanish, the other exponentials underflow
    p = get("gulf")
    f, x = lm(p.residuals, [99.89529935174151, 60.61453902799833, 9.161242695144592])
    assert f == pytest.approx(p.local_minima[0], rel=1e-12) and np.allclose(fd_gradient(p.fun, x), 0.0)


def test_helical_valley_theta_is_the_papers():
    p = get("helical_valley")
    rng = np.random.default_rng(0)
    for x in rng.standard_normal((50, 3)):
        np.testing.assert_allclose(p.residuals(x), ref_residuals(p, x), rtol=1e-12, atol=1e-12)


def test_solved():
    p = get("bard")
    assert p.solved(p.fmin) and p.solved(p.fmin * (1 + 5e-7)) and not p.solved(p.fmin * 1.001)
    assert p.solved(p.fmin - 1e-3)  # below the minimum: not this function's business
    assert p.solved(17.42869333) and not p.solved(10.0) and not p.solved(17.5)
    q = get("rosenbrock")
    assert q.solved(5e-9) and not q.solved(1e-6)
    assert q.solved(1e-6, atol=1e-5)


# --------------------------------------------------------------------------------------------------
# Scalable problems
# --------------------------------------------------------------------------------------------------

def small_size(name):
    return {"extended_powell": 12}.get(name, 12 if name.startswith("dixmaan") else 10)


def test_chained_rosenbrock_is_scipys_rosen():
    rng = np.random.default_rng(1)
    for n in (2, 3, 10, 10_000):
        p = scalable("chained_rosenbrock", n)
        assert p.x0.tolist() == ([-1.2, 1.0] * n)[:n]
        for x in (p.x0, rng.standard_normal(n)):
            assert p.fun(x) == pytest.approx(rosen(x), rel=1e-13)
        assert p.fun(p.xmin) == 0.0


def test_chained_rosenbrock_local_minima():
    for n in (4, 7, 10, 15, 21, 40):
        p = scalable("chained_rosenbrock", n)
        start = np.ones(n)
        start[0] = -1.0
        f, _ = lm(p.residuals, start)
        assert f == pytest.approx(p.local_minima[0], rel=1e-10)


def test_scalable_values_at_x0_and_xmin():
    for n in (6, 300):
        assert scalable("arwhead", n).fun(np.ones(n)) == 3.0 * (n - 1)
        assert scalable("broyden_tridiagonal", n).fun(np.full(n, -1.0)) == pytest.approx(n + 11)
        assert scalable("broyden_banded", n).fun(np.full(n, -1.0)) == pytest.approx(36.0 * n)
    for name in SCALABLE:
        p = scalable(name, small_size(name))
        if p.xmin is not None:
            assert p.fun(p.xmin) == pytest.approx(p.fmin, abs=1e-14)
            assert np.allclose(fd_gradient(p.fun, p.xmin), 0.0, atol=1e-7)


def dixmaan_reference(name, x):
    # CUTEst's DIXMAANA-L: (beta, gamma, delta) cycle through 4 sets, the exponents through 3
    index = "abcdefghijkl".index(name[-1])
    beta, gamma, delta = [(0, 0.125, 0.125), (0.0625,) * 3, (0.125,) * 3, (0.26,) * 3][index % 4]
    k1, k2, k3, k4 = [(0, 0, 0, 0), (1, 0, 0, 1), (2, 0, 0, 2)][index // 4]
    n = len(x)
    m = n // 3
    f = 1.0
    for i in range(1, n + 1):
        f += (i / n) ** k1 * x[i - 1] ** 2
    for i in range(1, n):
        f += beta * (i / n) ** k2 * x[i - 1] ** 2 * (x[i] + x[i] ** 2) ** 2
    for i in range(1, 2 * m + 1):
        f += gamma * (i / n) ** k3 * x[i - 1] ** 2 * x[i + m - 1] ** 4
    for i in range(1, m + 1):
        f += delta * (i / n) ** k4 * x[i - 1] * x[i + 2 * m - 1]
    return f


@pytest.mark.parametrize("name", [k for k in SCALABLE if k.startswith("dixmaan")])
def test_dixmaan(name):
    rng = np.random.default_rng(2)
    p = scalable(name, 15)
    assert p.fmin == 1.0 and p.x0.tolist() == [2.0] * 15
    for x in (p.x0, rng.standard_normal(15)):
        assert p.fun(x) == pytest.approx(dixmaan_reference(name, x), rel=1e-13)


@pytest.mark.parametrize("name", ["extended_rosenbrock", "extended_powell", "broyden_tridiagonal",
                                  "broyden_banded", "discrete_boundary_value"])
def test_scalable_mgh_problems_match_the_mgh_instances(name, rounding):
    p, q = scalable(name, small_size(name)), get(name)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(p.n)
    assert p.number == q.number and p.fun(x) == q.fun(x)
    big = scalable(name, 1000)
    # NumPy's vectorized sums against Python's scalar ones: a residual near zero (a difference of terms
    # of the size of the others) carries their rounding, so the comparison is normwise
    rounding.assert_close_normwise(big.residuals(big.x0 + 0.1), ref_residuals(big, big.x0 + 0.1), rtol=1e-12)


def python_lines_and_peak_memory(problem: Problem) -> tuple[int, int]:
    """The Python lines one evaluation of f (and of the residuals) executes, in every frame it calls,
    and the peak of the memory NumPy allocates meanwhile (tracemalloc). Both are counts, not times,
    so they hold on a loaded machine. The evaluation runs once before, so first-call work (imports,
    caches) is not counted."""
    def evaluate():
        assert np.isfinite(problem.fun(problem.x0))
        if problem.residuals is not None:
            assert problem.residuals(problem.x0).shape == (problem.m,)

    def count(frame, event, arg):
        nonlocal lines
        lines += event == "line"
        return count

    evaluate()
    lines = 0
    collecting = gc.isenabled()
    gc.disable()   # a collection would run other libraries' Python callbacks (gc.callbacks) in between
    tracemalloc.start()
    sys.settrace(count)
    try:
        evaluate()
    finally:
        sys.settrace(None)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if collecting:
            gc.enable()
    return lines, peak


def assert_vectorized(make: Callable[[int], Problem], sizes: tuple[int, int]) -> None:
    """No Python loop over n and linear memory: from the smaller size to the larger, one evaluation
    executes the same Python lines, and its peak memory per variable does not grow (a Python loop adds
    lines per entry, an n x n temporary multiplies the memory per variable by n)."""
    (lines_small, peak_small), (lines_big, peak_big) = (python_lines_and_peak_memory(make(n)) for n in sizes)
    assert lines_big == lines_small
    assert peak_big / sizes[1] <= peak_small / sizes[0]


@pytest.mark.parametrize("name", SCALABLE)
def test_scalable_problems_are_vectorized(name):
    """The docstring's promise, "vectorized objectives (no Python loop over n)", at n = 1,000 and
    10,000 (999 and 9,999 for DIXMAAN, whose n is a multiple of 3)."""
    sizes = (999, 9999) if name.startswith("dixmaan") else (1000, 10_000)
    assert_vectorized(lambda n: scalable(name, n), sizes)


def test_scalable_rejects_bad_sizes():
    with pytest.raises(ValueError):
        scalable("extended_rosenbrock", 9)
    with pytest.raises(ValueError):
        scalable("extended_powell", 10)
    with pytest.raises(ValueError):
        scalable("dixmaana", 10)
    with pytest.raises(KeyError):
        scalable("nope", 10)


def test_get():
    assert get("rosenbrock").number == 1 and get(1).name == "rosenbrock"
    assert get("watson", 9).n == 9 and get(20, 6).n == 6
    assert get("extended_rosenbrock", 1000).n == 1000
    assert get("dixmaane", 3000).n == 3000
    with pytest.raises(ValueError):
        get("watson")
    with pytest.raises(ValueError):
        get("watson", 7)
    with pytest.raises(ValueError):
        get("arwhead")
    with pytest.raises(KeyError):
        get("nope")


# --------------------------------------------------------------------------------------------------
# Traceability: the objectives use only what an autodiff engine on NumPy's dispatch protocols sees
# --------------------------------------------------------------------------------------------------

ALLOWED_UFUNCS = {np.add, np.subtract, np.multiply, np.true_divide, np.power, np.negative, np.positive,
                  np.exp, np.log, np.sqrt, np.sin, np.cos, np.tan, np.arctan, np.arctan2, np.absolute,
                  np.square, np.matmul, np.maximum, np.minimum}
ALLOWED_FUNCTIONS = {np.sum, np.prod, np.dot, np.outer, np.stack, np.concatenate, np.where, np.cumsum,
                     np.mean, np.reshape}


class Traced(np.lib.mixins.NDArrayOperatorsMixin):
    """A stand-in for an autodiff Tensor: allows only the operations the engine differentiates and
    refuses any conversion to an ndarray or a Python number. Comparisons are refused too (stricter
    than the engine): no objective here needs them, so none can branch on the values of x."""

    def __init__(self, value):
        self.value = value

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)

    def __getitem__(self, index):
        assert not isinstance(index, Traced), "indexing with a traced value"
        return Traced(self.value[index])

    def __setitem__(self, index, value):
        raise TypeError("item assignment into a traced array")

    def _refuse(self, *args, **kwargs):
        raise TypeError("conversion of a traced value")

    __array__ = __float__ = __int__ = __index__ = __bool__ = __len__ = __iter__ = __complex__ = _refuse

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or "out" in kwargs:
            raise TypeError(f"{ufunc.__name__}.{method} (out={kwargs.get('out')})")
        if ufunc not in ALLOWED_UFUNCS:
            raise TypeError(f"ufunc {ufunc.__name__} is not differentiable by the engine")
        return Traced(ufunc(*unwrap(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        if func not in ALLOWED_FUNCTIONS:
            raise TypeError(f"function np.{func.__name__} is not differentiable by the engine")
        if func is np.where and isinstance(args[0], Traced):
            raise TypeError("np.where on a traced condition")
        return Traced(func(*unwrap(args), **unwrap(kwargs)))


def unwrap(value):
    if isinstance(value, Traced):
        return value.value
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    return value


def test_tracer_refuses_forbidden_operations():
    x = Traced(np.arange(3.0))
    for forbidden in (lambda: np.asarray(x), lambda: float(x[0]), lambda: np.linalg.norm(x),
                      lambda: np.zeros(3).__setitem__(0, x[0]), lambda: [v for v in x],
                      lambda: x.__iadd__(1.0), lambda: np.floor(x), lambda: 1.0 if x[0] > 0 else 0.0,
                      lambda: np.array([x[0], x[1]])):
        with pytest.raises((TypeError, ValueError)):
            forbidden()
    assert isinstance(np.stack([x[0] * 2.0, np.exp(x[1])]) @ x[:2], Traced)


ALL = (list(MGH) + [scalable(name, small_size(name)) for name in SCALABLE]
       + [bounded(name, 16) for name in BOUNDED])


@pytest.mark.parametrize("p", ALL, ids=[f"{p.name}-{p.n}" for p in ALL])
def test_objectives_are_traceable(p):
    x = random_points(p, 1)[0] if p.number else p.x0 + 0.1
    value = p.fun(Traced(x))
    assert isinstance(value, Traced) and value.shape == ()
    assert value.value == pytest.approx(p.fun(x), rel=1e-14)
    if p.residuals is not None:
        r = p.residuals(Traced(x))
        assert isinstance(r, Traced) and r.shape == (p.m,)


# --------------------------------------------------------------------------------------------------
# Bound-constrained problems: MINPACK-2's Fortran loops, the bounds, the minima over the box
# --------------------------------------------------------------------------------------------------

def minpack_grid_value(x, side, triangle, edges=None):
    """The loops of MINPACK-2's DEPTFG, DPJBFG and DMSAFG as scalar Python: the sum of
    ``triangle(i, upper, dv_x, dv_y, vertices)`` (differences of v across the triangle, not yet
    divided by the spacing) over the lower triangles (i, j = 0..side) and the upper ones (i, j =
    1..side + 1), with v = 0 (or the ``edges`` values) on the boundary."""
    bottom, top, left, right = edges if edges is not None else [[0.0] * (side + 2)] * 4

    def v(i, j):   # the grid value at column i, row j (0 and side + 1: the boundary)
        if j == 0:
            return bottom[i]
        if j == side + 1:
            return top[i]
        if i == 0:
            return left[j]
        if i == side + 1:
            return right[j]
        return float(x[side * (j - 1) + (i - 1)])

    total = 0.0
    for j in range(side + 1):
        for i in range(side + 1):
            c, r, t = v(i, j), v(i + 1, j), v(i, j + 1)
            total += triangle(i, False, r - c, t - c, (c, r, t))
    for j in range(1, side + 2):
        for i in range(1, side + 2):
            c, l, b = v(i, j), v(i - 1, j), v(i, j - 1)
            total += triangle(i, True, c - l, c - b, (b, l, c))
    return total


def minpack_torsion(x, side, c):
    h = 1.0 / (side + 1)
    return 0.5 * h * h * minpack_grid_value(
        x, side, lambda i, upper, dx, dy, vs: 0.5 * ((dx / h) ** 2 + (dy / h) ** 2) - c / 3 * sum(vs))


def minpack_journal_bearing(x, side, ecc=0.1, b=10.0):
    hx, hy = 2 * math.pi / (side + 1), 2 * b / (side + 1)
    p = lambda xi: (1 + ecc * math.cos(xi)) ** 3

    def triangle(i, upper, dx, dy, vs):
        xi = i * hx
        trule = hx * hy * (p(xi) + p(xi - hx if upper else xi + hx) + p(xi)) / 6
        return 0.5 * trule * ((dx / hx) ** 2 + (dy / hy) ** 2)

    linear = sum(math.sin((i + 1) * hx) * float(x[side * j + i]) for j in range(side)
                 for i in range(side))
    return minpack_grid_value(x, side, triangle) - ecc * hx * hy * linear


def minpack_minimal_surface(x, side, edges):
    h = 1.0 / (side + 1)
    return 0.5 * h * h * minpack_grid_value(
        x, side, lambda i, upper, dx, dy, vs: math.sqrt(1 + (dx / h) ** 2 + (dy / h) ** 2), edges)


BOUNDED_IDS = list(BOUNDED)


def interior_point(p, seed=0):
    """A random point strictly inside the box (near x0 where a bound is infinite)."""
    rng = np.random.default_rng(seed)
    lower = np.where(np.isfinite(p.lower), p.lower, p.x0 - 1.0)
    upper = np.where(np.isfinite(p.upper), p.upper, p.x0 + 1.0)
    return lower + (upper - lower) * rng.uniform(0.1, 0.9, p.n)


@pytest.mark.parametrize("side", [3, 4])
def test_grid_problems_agree_with_minpack_2s_fortran_loops(side):
    n = side * side
    from hessopt.problems import enneper_edges
    for seed in range(3):
        x = interior_point(bounded("torsion", n), seed) * 3.0
        assert bounded("torsion", n).fun(x) == pytest.approx(minpack_torsion(x, side, 5.0), rel=1e-13)
        assert bounded("obstacle", n).fun(x) == pytest.approx(minpack_torsion(x, side, 1.0), rel=1e-13)
        assert bounded("journal_bearing", n).fun(x) == pytest.approx(
            minpack_journal_bearing(x, side), rel=1e-13)
        edges = [list(e) for e in enneper_edges(side)]
        assert bounded("minimal_surface", n).fun(x) == pytest.approx(
            minpack_minimal_surface(x, side, edges), rel=1e-13)


def test_enneper_boundary_values_solve_enneper_s_parametrization():
    from hessopt.problems import enneper_edges
    side = 7
    t = -0.5 + np.arange(side + 2) / (side + 1)
    for values, xs, ys in zip(enneper_edges(side), (t, t, -0.5 + 0 * t, 0.5 + 0 * t),
                              (-0.5 + 0 * t, 0.5 + 0 * t, t, t)):
        for value, x, y in zip(values, xs, ys):
            # recover (u, v) independently with scipy's MINPACK hybrid method: u^2 - v^2 agrees
            solution = root(lambda w, x=x, y=y: [w[0] + w[0] * w[1] ** 2 - w[0] ** 3 / 3 - x,
                                                 -w[1] - w[0] ** 2 * w[1] + w[1] ** 3 / 3 - y], [x, -y],
                            tol=1e-14)
            u, v = solution.x
            assert np.max(np.abs(solution.fun)) < 1e-15
            assert value == pytest.approx(u * u - v * v, abs=1e-14)
    # Enneper's surface is antisymmetric under x <-> y: the corners (-1/2, 1/2), (1/2, -1/2)
    bottom, top, left, right = enneper_edges(side)
    assert bottom[0] == left[0] and top[-1] == right[-1]
    np.testing.assert_allclose(bottom, -left, atol=1e-14)


def test_bounds_and_starting_points_are_minpack_2s():
    n, h = 9, 0.25  # a 3 x 3 interior grid
    torsion = bounded("torsion", n)
    distance = np.array([[1, 1, 1], [1, 2, 1], [1, 1, 1]]).ravel() * h
    np.testing.assert_array_equal(torsion.upper, distance)
    np.testing.assert_array_equal(torsion.lower, -distance)
    np.testing.assert_array_equal(torsion.x0, distance)
    bearing = bounded("journal_bearing", n)
    hx = 2 * np.pi / 4
    np.testing.assert_array_equal(bearing.lower, np.zeros(n))
    assert np.all(bearing.upper == np.inf)
    np.testing.assert_allclose(bearing.x0, np.tile(np.maximum(np.sin(hx * np.arange(1, 4)), 0), 3),
                               atol=1e-15)
    surface = bounded("minimal_surface", n)
    # the pyramid: height 2 at the centre (0.5, 0.5), slope 10 in the L1 distance; 4 above
    assert surface.lower[4] == 2.0 and surface.lower[0] == 2.0 - 10 * 0.5
    assert np.all(surface.upper == 4.0)
    obstacle = bounded("obstacle", n)
    xi, eta = np.tile([h, 2 * h, 3 * h], 3), np.repeat([h, 2 * h, 3 * h], 3)
    wave = np.sin(9.2 * xi) * np.sin(9.3 * eta)
    np.testing.assert_allclose(obstacle.lower, wave ** 3, rtol=1e-15)
    np.testing.assert_allclose(obstacle.upper, wave ** 2 + 0.2, rtol=1e-15)
    rosen_box = bounded("bounded_rosenbrock", 20)
    assert rosen_box.lower[5] == 1.1 and rosen_box.upper[10] == 0.9 and rosen_box.lower[1] == 0
    np.testing.assert_array_equal(rosen_box.x0[:6], [0.0, 1.0, 0.0, 1.0, 0.0, 1.1])
    assert rosen_box.fun(np.ones(20)) == 0.0 and rosen_box.fun(rosen_box.x0) == rosen(rosen_box.x0)
    for name in BOUNDED:
        p = bounded(name, 16)
        assert np.all(p.lower <= p.x0) and np.all(p.x0 <= p.upper), name


def test_membrane_hessians_are_the_five_point_laplacian():
    """The torsion and obstacle energies are 1/2 v^T L v - force h^2 sum(v), L the 5-point
    Laplacian stencil (4 on the diagonal, -1 for each grid neighbour)."""
    side = 4
    n = side * side
    laplacian = 4 * np.eye(n)
    for k in range(n):
        i, j = k % side, k // side
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= i + di < side and 0 <= j + dj < side:
                laplacian[k, k + di + side * dj] = -1
    for name, force in (("torsion", 5.0), ("obstacle", 1.0)):
        p = bounded(name, n)
        x = interior_point(p)
        np.testing.assert_allclose(ad.hessian(p.fun)(x), laplacian, atol=1e-12)
        assert p.fun(x) == pytest.approx(0.5 * x @ laplacian @ x - force / 25 * x.sum(), rel=1e-13)


@pytest.mark.parametrize("name", BOUNDED_IDS)
def test_bounded_gradients_and_hessians_match_central_differences(name):
    p = bounded(name, 16)
    x = interior_point(p, 1)
    np.testing.assert_allclose(ad.grad(p.fun)(x), fd_gradient(p.fun, x), rtol=1e-6, atol=1e-8)
    ad.check_grad(p.fun, x, order=2)


@pytest.mark.parametrize("name", BOUNDED_IDS)
def test_bounded_minima_are_reached_by_an_independent_solver(name):
    """scipy's L-BFGS-B with the exact gradient, from x0, asked for a tight projected gradient,
    reaches the stored f* at n = 100 (it stops once f no longer changes at working precision,
    where the projected gradient is still about 1e-7)."""
    p = bounded(name, 100)
    value_and_grad = ad.value_and_grad(p.fun)
    result = minimize(lambda x: tuple(map(np.asarray, value_and_grad(x))), p.x0, jac=True,
                      method="L-BFGS-B", bounds=Bounds(p.lower, p.upper),
                      options=dict(maxiter=20000, ftol=0.0, gtol=1e-11))
    assert result.fun == pytest.approx(p.fmin, rel=1e-10, abs=1e-11)
    assert p.solved(result.fun) and not p.solved(result.fun + 1e-3 * max(1.0, abs(p.fmin)))
    g = ad.grad(p.fun)(result.x)
    projected = np.where(result.x <= p.lower, np.minimum(g, 0), g)
    projected = np.where(result.x >= p.upper, np.maximum(projected, 0), projected)
    assert np.max(np.abs(projected)) < 1e-5
    # bounds bind at the minimizer, and others do not
    at_bound = (result.x <= p.lower) | (result.x >= p.upper)
    assert 0 < at_bound.sum() < p.n


@pytest.mark.parametrize("name", BOUNDED)
def test_bounded_problems_are_vectorized_over_the_grid(name):
    """Plain NumPy over the grid: the same Python lines and memory per variable at n = 900 and 10,000."""
    assert_vectorized(lambda n: bounded(name, n), (900, 10_000))
    assert np.isfinite(bounded(name, 10_000).fmin)


def test_bounded_problems_refuse_bad_sizes():
    assert np.isnan(bounded("torsion", 16).fmin)
    with pytest.raises(ValueError, match="perfect square"):
        bounded("torsion", 99)
    with pytest.raises(KeyError, match="unknown bounded problem"):
        bounded("nope", 100)
