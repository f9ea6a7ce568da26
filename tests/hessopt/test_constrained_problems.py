"""Tests of the constrained problems: the Hock-Schittkowski set against its published solutions,
the scalable problems against closed forms, and both forms of the constraints against each other."""

import math

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import minimize

import autodiff as ad
from hessopt.problems import (
    CONSTRAINED,
    HOCK_SCHITTKOWSKI,
    MGH,
    Problem,
    constrained,
    hock_schittkowski,
)

HS_IDS = [p.name for p in HOCK_SCHITTKOWSKI]
WITH_XMIN = [p for p in HOCK_SCHITTKOWSKI if p.xmin is not None]


def printed_half_unit(value: float) -> float:
    """Half a unit in the last digit of ``value`` as written (its shortest repr): 0.003323 -> 5e-7;
    0 for an exact zero. What rounding to the printed digits can have changed."""
    if value == 0.0:
        return 0.0
    text = repr(abs(float(value)))
    mantissa, _, exponent = text.partition("e")
    digits = len(mantissa.replace(".", "").lstrip("0")) if "." in mantissa else len(mantissa.rstrip("0"))
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - max(digits, 1) + 1)


def central_jacobian(fun, x, step=1e-6):
    columns = []
    for j in range(x.size):
        h = step * max(1.0, abs(x[j]))
        e = np.zeros_like(x)
        e[j] = h
        columns.append((np.atleast_1d(fun(x + e)) - np.atleast_1d(fun(x - e))) / (2.0 * h))
    return np.stack(columns, axis=-1)


# --------------------------------------------------------------------------------------------------
# The set and the two forms of its constraints
# --------------------------------------------------------------------------------------------------


def test_the_set_holds_103_distinct_problems_by_number():
    numbers = [p.number for p in HOCK_SCHITTKOWSKI]
    assert len(numbers) == 103 and numbers == sorted(set(numbers))
    assert {1, 13, 71, 100, 106, 119} <= set(numbers) and not {58, 67, 70, 82, 87, 105, 115} & set(numbers)
    assert hock_schittkowski(71).x0.tolist() == [1.0, 5.0, 5.0, 1.0]
    with pytest.raises(KeyError, match="HS105 is not in"):
        hock_schittkowski(105)


def test_the_set_covers_every_kind_of_constraint():
    kinds = {"equality": 0, "inequality": 0, "bounds only": 0, "bounds and constraints": 0}
    for p in HOCK_SCHITTKOWSKI:
        bounded = np.isfinite(p.lower).any() or np.isfinite(p.upper).any()
        if p.constraint is None:
            kinds["bounds only"] += bounded
            continue
        equal = p.constraint_lower == p.constraint_upper
        kinds["equality"] += bool(equal.any())
        kinds["inequality"] += bool((~equal).any())
        kinds["bounds and constraints"] += bounded
    assert min(kinds.values()) >= 8, kinds


@pytest.mark.parametrize("p", HOCK_SCHITTKOWSKI, ids=HS_IDS)
def test_scipy_form_is_the_canonical_form(p):
    """eq rows give c - lower where lower == upper; ineq rows c - lower and upper - c at the finite
    bounds; at a random point, row for row."""
    if p.constraint is None:
        assert p.constraints == [] and p.n_constraints == 0
        return
    x = p.x0 + np.random.default_rng(p.number).uniform(0.1, 0.2, p.n)
    c, lower, upper = p.constraint(x), p.constraint_lower, p.constraint_upper
    forms = {form["type"]: np.asarray(form["fun"](x)) for form in p.constraints}
    equal = lower == upper
    np.testing.assert_array_equal(forms.get("eq", np.zeros(0)), (c - lower)[equal])
    expected = np.concatenate([(c - lower)[~equal & np.isfinite(lower)], (upper - c)[~equal & np.isfinite(upper)]])
    np.testing.assert_array_equal(forms.get("ineq", np.zeros(0)), expected)
    assert c.shape == (p.n_constraints,) and set(forms) <= {"eq", "ineq"}


@pytest.mark.parametrize("p", HOCK_SCHITTKOWSKI, ids=HS_IDS)
def test_functions_trace_and_differentiate_exactly(p):
    """A traced replay equals the eager value (nothing reads floats or writes into arrays), and
    autodiff's gradient and constraint Jacobian equal central differences at x0."""
    x = np.array(p.x0)
    traced = ad.function(p.fun)
    assert traced(x) == pytest.approx(p.fun(x), rel=1e-14, abs=1e-300)
    assert traced(x + 0.01) == pytest.approx(p.fun(x + 0.01), rel=1e-14, abs=1e-300)
    np.testing.assert_allclose(ad.grad(p.fun)(x), central_jacobian(p.fun, x)[0], rtol=1e-5,
                               atol=1e-6 * max(1.0, abs(p.fun(x))))
    if p.constraint is not None:
        np.testing.assert_allclose(ad.function(p.constraint)(x), p.constraint(x), rtol=1e-14)
        J = ad.jacobian(p.constraint)(x)
        np.testing.assert_allclose(J, central_jacobian(p.constraint, x), rtol=1e-5,
                                   atol=1e-6 * max(1.0, np.max(np.abs(p.constraint(x)))))
        np.testing.assert_allclose(ad.sparse_jacobian(p.constraint)(x).toarray(), J, rtol=1e-13, atol=1e-13)


# --------------------------------------------------------------------------------------------------
# Published solutions
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", WITH_XMIN, ids=[p.name for p in WITH_XMIN])
def test_published_solution_is_feasible_and_optimal_to_its_digits(p):
    """x* rounded as printed: each constraint holds up to what rounding each x_j by half a unit in
    its last printed digit can change (first order, twice over) plus 1e-6 of the row's scale; f(x*)
    equals f* up to the same change of f plus a unit in f*'s last printed digit."""
    x = p.xmin
    rounding = np.array([printed_half_unit(v) for v in x])
    slack = rounding + 1e-6 * np.maximum(1.0, np.abs(np.nan_to_num(p.lower, neginf=0.0)))
    assert np.all(x >= p.lower - slack) and np.all(x <= p.upper + rounding + 1e-6 * np.maximum(1.0, np.abs(x)))
    gradient = ad.grad(p.fun)(x)
    f_tolerance = 2.0 * np.abs(gradient) @ rounding + 2.0 * printed_half_unit(p.fmin) + 1e-12 * max(1.0, abs(p.fmin))
    assert abs(p.fun(x) - p.fmin) <= f_tolerance
    if p.constraint is not None:
        J, c = ad.jacobian(p.constraint)(x), p.constraint(x)
        scale = np.maximum(1.0, np.abs(J) @ np.abs(x))
        excess = np.maximum(p.constraint_lower - c, c - p.constraint_upper)
        assert np.all(excess <= 2.0 * np.abs(J) @ rounding + 1e-6 * scale)


def test_printed_half_unit_reads_the_printed_digits():
    assert printed_half_unit(0.003323) == pytest.approx(5e-7)
    assert printed_half_unit(17.0140173) == pytest.approx(5e-8)
    assert printed_half_unit(-831079891.5) == pytest.approx(0.05)
    assert printed_half_unit(2.5) == pytest.approx(0.05) and printed_half_unit(0.0) == 0.0
    assert printed_half_unit(-0.26e-10) == pytest.approx(5e-13)


def test_published_closed_forms():
    """Solutions the book gives in closed form, checked in closed form."""
    assert hock_schittkowski(14).fun(hock_schittkowski(14).xmin) == pytest.approx(9.0 - 2.875 * math.sqrt(7.0))
    p = hock_schittkowski(40)  # x* = 2^-(1/3, 1/2, 11/12, 1/4): every equality holds exactly
    np.testing.assert_allclose(p.constraint(p.xmin), 0.0, atol=1e-15)
    assert p.fun(p.xmin) == pytest.approx(-0.25, rel=1e-15)
    p = hock_schittkowski(52)
    np.testing.assert_allclose(p.constraint(p.xmin), 0.0, atol=1e-15)
    assert p.fun(p.xmin) == pytest.approx(1859.0 / 349.0, rel=1e-14)


def test_x0_feasibility_as_the_book_states_it():
    assert hock_schittkowski(36).x0_feasible and hock_schittkowski(35).x0_feasible
    assert not hock_schittkowski(71).x0_feasible  # |x0|^2 = 52, not 40
    assert not hock_schittkowski(21).x0_feasible  # 10 x1 - x2 - 10 = -19 and x1 = -1 < 2
    assert not hock_schittkowski(65).x0_feasible  # x1 = -5 below its bound -4.5


def test_violation_is_relative_to_the_scale_of_each_row_and_bound():
    p = hock_schittkowski(71)
    # x0: |x0|^2 - 40 = 12 over sum_j |2 x_j| |x_j| = 104; the product 25 holds
    assert p.violation(p.x0) == pytest.approx(12.0 / 104.0, rel=1e-15)
    x = np.array([0.5, 5.0, 5.0, 1.0])  # x1 below its bound 1 by 0.5: relative to max(1, 1)
    assert p.violation(x) == pytest.approx(max(0.5, (40.0 - x @ x) / (2.0 * x @ x)), rel=1e-15)
    assert p.violation(p.xmin) < 1e-7


# scipy's SLSQP from the published x0: a check of the definitions on problems of every kind, each of
# which SLSQP solves in the benchmark (benchmarks/bench_constrained.py runs all of them)
SLSQP_SET = [6, 14, 21, 28, 35, 43, 48, 63, 71, 76, 83, 100, 106, 113, 118, 119]


@pytest.mark.parametrize("number", SLSQP_SET)
def test_slsqp_reaches_the_published_minimum(number):
    p = hock_schittkowski(number)
    constraints = [dict(form, jac=ad.function(ad.jacobian(form["fun"]))) for form in p.constraints]
    result = minimize(p.fun, np.array(p.x0), jac=ad.function(ad.grad(p.fun)), method="SLSQP",
                      constraints=constraints, bounds=scipy.optimize.Bounds(p.lower, p.upper), options={"maxiter": 500})
    assert result.success, result.message
    assert abs(p.fun(result.x) - p.fmin) <= 1e-6 * (1.0 + abs(p.fmin))
    assert p.violation(result.x) <= 1e-6


# --------------------------------------------------------------------------------------------------
# The Problem fields and their validation
# --------------------------------------------------------------------------------------------------


def test_problem_rejects_inconsistent_constraint_bounds():
    base = dict(name="toy", title="toy", number=None, n=2, m=None, fun=lambda x: x @ x, x0=np.zeros(2), fmin=0.0,
                constraint=lambda x: x[:1])
    with pytest.raises(ValueError, match="lower <= upper"):
        Problem(**base, constraint_lower=np.ones(1), constraint_upper=np.zeros(1))
    with pytest.raises(ValueError, match="one length"):
        Problem(**base, constraint_lower=np.zeros(1), constraint_upper=np.zeros(2))


def test_unconstrained_problems_are_unchanged():
    p = MGH[0]
    assert p.constraint is None and p.constraints == [] and p.n_constraints == 0
    assert repr(p) == "Problem('rosenbrock', MGH 1, n=2, m=2, fmin=0)"
    assert repr(hock_schittkowski(71)) == "Problem('hs071', HS 71, n=4, m=None, constraints=2, fmin=17.014)"


# --------------------------------------------------------------------------------------------------
# Scalable problems
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONSTRAINED))
def test_scalable_problems_are_sparse_and_traceable(name):
    """The constraint Jacobian and the Lagrangian Hessian have a bounded number of entries per row
    (a few dense rows aside): doubling n doubles their entries."""
    counts = []
    for n in (300, 600):
        p = constrained(name, n)
        assert p.x0.shape == (n,) and p.constraint(p.x0).shape == (p.n_constraints,)
        np.testing.assert_allclose(ad.function(p.constraint)(p.x0), p.constraint(p.x0), rtol=1e-14)
        lagrangian = lambda x, p=p: p.fun(x) + np.sum(p.constraint(x))  # noqa: E731
        counts.append((ad.jacobian_sparsity(p.constraint, p.x0).nnz, ad.hessian_sparsity(lagrangian, p.x0).nnz))
    assert counts[1][0] <= 2.05 * counts[0][0] and counts[1][1] <= 2.05 * counts[0][1]


def test_scalable_sizes_and_names_are_checked():
    with pytest.raises(ValueError, match="multiple of 4"):
        constrained("hanging_chain", 999)
    with pytest.raises(ValueError, match="multiple of 3"):
        constrained("bryson_denham", 1000)
    with pytest.raises(ValueError, match="even n"):
        constrained("wood_broyden", 999)
    with pytest.raises(KeyError, match="choose from"):
        constrained("nope", 100)


def test_rosenbrock_trigexp_minimum_is_at_ones():
    """Lukšan-Vlček 5.1: x = 1 satisfies every constraint (3 + 2 - 5 + 0 + 4 - 1 - 3 = 0) with
    f = 0, the least a sum of squares can be."""
    p = constrained("rosenbrock_trigexp", 1000)
    np.testing.assert_array_equal(p.constraint(np.ones(1000)), 0.0)
    assert p.fun(np.ones(1000)) == 0.0 and p.fmin == 0.0


def catenary_energy(a=1.0, b=3.0, length=4.0):
    """min int y ds over chains of this length from (0, a) to (1, b): y = C cosh((t - t0) / C) + D."""
    def conditions(v):
        C, t0 = v
        return [C * (np.cosh((1 - t0) / C) - np.cosh(-t0 / C)) - (b - a),
                C * (np.sinh((1 - t0) / C) - np.sinh(-t0 / C)) - length]

    C, t0 = scipy.optimize.fsolve(conditions, [0.3, 0.5], xtol=1e-14)
    D = a - C * np.cosh(-t0 / C)
    s0, s1 = -t0 / C, (1 - t0) / C
    return C * C / 2.0 * ((s1 + np.sinh(s1) * np.cosh(s1)) - (s0 + np.sinh(s0) * np.cosh(s0))) + D * length


def _stored_sizes(name, sizes=(999, 9999, 99999)):
    return [n for n in sizes if np.isfinite(constrained(name, n).fmin)]


def test_hanging_chain_is_cops_as_published():
    """COPS 3.0's model and start (Dolan, Moré & Munson 2004, problem 'chain'): nh = n / 4 - 1
    intervals, (u, x1, x2, x3) at each node, f = x2(1); the start u = x3 = 8 (t - 1/4), x1 = 8 t (t / 2
    - 1/4) + 1 (a parabola from 1 to 3 with slope u, so the trapezoidal rule integrates x1' = u exactly
    there), x2 = x1 u."""
    p = constrained("hanging_chain", 1000)
    nh = 249
    u, x1, x2, x3 = p.x0.reshape(nh + 1, 4).T
    t = np.arange(nh + 1) / nh
    np.testing.assert_allclose(u, 8.0 * (t - 0.25), rtol=0, atol=1e-15)
    np.testing.assert_allclose(x1, 4.0 * t ** 2 - 2.0 * t + 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(x2, x1 * u)
    np.testing.assert_array_equal(x3, u)
    c = p.constraint(p.x0)
    rounding = 10 * np.finfo(float).eps * np.max(np.abs(p.x0))
    assert p.fun(p.x0) == x2[-1] == pytest.approx(18.0, rel=0, abs=rounding)     # x1(1) u(1) = 3 * 6
    assert c.shape == (3 * nh + 5,)
    np.testing.assert_allclose(c[:nh], 0.0, atol=rounding)                       # x1' = u exactly
    # x1(0) = 1, x1(1) = 3 hold; x2(0) = x3(0) = -2 and x3(1) = 6 are COPS's start, not its constraints
    np.testing.assert_allclose(c[-5:], [0.0, 0.0, -2.0, -2.0, 2.0], atol=rounding)


def test_hanging_chain_energy_is_the_trapezoidal_integral():
    """Along feasible dynamics, f = x2(1) is the trapezoidal rule of int x1 sqrt(1 + u^2) dt."""
    p = constrained("hanging_chain", 40)
    nh = 9
    rng = np.random.default_rng(0)
    u, x1 = rng.standard_normal(nh + 1), rng.standard_normal(nh + 1)
    integrand, ds = x1 * np.sqrt(1 + u ** 2), np.sqrt(1 + u ** 2)
    x2 = np.concatenate([[0.0], np.cumsum(0.5 / nh * (integrand[1:] + integrand[:-1]))])
    x3 = np.concatenate([[0.0], np.cumsum(0.5 / nh * (ds[1:] + ds[:-1]))])
    x = np.stack([u, x1, x2, x3], axis=1).ravel()
    np.testing.assert_allclose(p.constraint(x)[nh:3 * nh], 0.0, atol=1e-14)
    assert p.fun(x) == pytest.approx(np.trapezoid(integrand, dx=1.0 / nh), rel=1e-14)


def test_hanging_chain_minima_converge_to_the_catenary():
    """The minima stored for n = 1000, 10000, 100000 (IPOPT, tol 1e-12) approach the catenary's
    energy, each tenfold refinement of n cutting the error by more than 30 (second order: 100)."""
    exact = catenary_energy()
    errors = [constrained("hanging_chain", n).fmin - exact
              for n in _stored_sizes("hanging_chain", (1000, 10000, 100000))]
    assert len(errors) >= 2 and 0.0 < errors[0] < 1e-3
    assert all(coarse / fine > 30.0 for coarse, fine in zip(errors, errors[1:]))


def test_bryson_denham_minima_converge_to_the_closed_form():
    """4 / (9 l) = 4 for the ceiling l = 1/9 (Bryson & Ho); the stored minima approach it at second order."""
    errors = [constrained("bryson_denham", n).fmin - 4.0 for n in _stored_sizes("bryson_denham")]
    assert len(errors) >= 2 and 0.0 < errors[0] < 1e-3
    assert all(coarse / fine > 30.0 for coarse, fine in zip(errors, errors[1:]))
