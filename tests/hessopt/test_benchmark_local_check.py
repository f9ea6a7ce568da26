"""The benchmark's independent check of a claimed constrained minimum (benchmarks/local_minimum.py):
it must verify known minima, refute a saddle, an infeasible point and a non-stationary one, each
from the problem alone."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hessopt import problems
from hessopt._problem import Problem

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "local_minimum.py"
_SPEC = importlib.util.spec_from_file_location("local_minimum", _PATH)
local_minimum = sys.modules.setdefault("local_minimum", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(local_minimum)


def _disk_problem(fun) -> Problem:
    """min fun(x) on the unit disk x0^2 + x1^2 <= 1 (an inequality), no bounds."""
    return Problem("disk", "test", None, 2, None, fun, np.array([0.1, 0.1]), np.nan,
                   lower=np.full(2, -np.inf), upper=np.full(2, np.inf),
                   constraint=lambda x: np.stack([x[0] ** 2 + x[1] ** 2]),
                   constraint_lower=np.array([-np.inf]), constraint_upper=np.array([1.0]), collection="test")


def test_published_minimum_of_hs071_is_a_strict_local_minimum():
    p = problems.hock_schittkowski(71)
    verdict = local_minimum.check(p, p.xmin)
    assert verdict.local_minimum and verdict.strict
    assert verdict.kkt_residual <= local_minimum.KKT_TOL


def test_hs016_vertex_is_a_local_minimum_above_fstar():
    """HS16's vertex (-1/2, 1/sqrt 2), f = 23.1447, where both interior-point solvers stop: two
    active constraints with multipliers of the right sign, a 0-dimensional null space."""
    p = problems.hock_schittkowski(16)
    x = np.array([-0.5, np.sqrt(0.5)])
    verdict = local_minimum.check(p, x)
    assert verdict.local_minimum and verdict.strict
    assert float(p.fun(x)) > p.fmin + 1.0


def test_saddle_on_the_boundary_is_refuted_by_curvature():
    """min x0 - 2 x1^2 on the disk: at (-1, 0) the gradient (1, 0) is balanced by the active
    constraint (multiplier 1/2), but the Lagrangian's Hessian diag(1, -3) is negative along the
    tangent (0, 1): a KKT point that is not a minimum."""
    p = _disk_problem(lambda x: x[0] - 2.0 * x[1] ** 2)
    verdict = local_minimum.check(p, np.array([-1.0, 0.0]))
    assert verdict.kkt_residual <= local_minimum.KKT_TOL
    # H_L = diag(1, -3) on the tangent (0, 1): -3, relative to max(1, ||H_L||_max) = 3
    assert verdict.min_curvature == pytest.approx(-1.0, rel=1e-9)
    assert not verdict.local_minimum and "negative curvature" in verdict.reason


def test_infeasible_and_nonstationary_points_are_refuted():
    p = _disk_problem(lambda x: x[0] + x[1])
    assert "infeasible" in local_minimum.check(p, np.array([1.0, 1.0])).reason
    assert "not a KKT point" in local_minimum.check(p, np.array([0.0, 0.0])).reason
    s = np.sqrt(0.5)
    assert local_minimum.check(p, np.array([-s, -s])).local_minimum


def test_sparse_first_order_check_confirms_bryson_denham_and_refutes_a_tilted_objective():
    """Beyond CHECK_DENSE_N variables the check is first order, on the augmented system: it must
    confirm Bryson-Denham's discrete minimum (f* tabulated from IPOPT at tol 1e-12) despite the
    dynamics' ill-conditioning, and refute the same point for an objective tilted by 0.01 u_0
    (twice f plus a linear term in the first control: no multipliers of the active set cancel it)."""
    import scipy.optimize

    import hessopt

    p = problems.constrained("bryson_denham", 999)
    result = hessopt.minimize(p.fun, np.array(p.x0), bounds=scipy.optimize.Bounds(p.lower, p.upper),
                              constraints=p.constraints)
    assert result.fun == pytest.approx(p.fmin, abs=1e-6 * (1 + abs(p.fmin)))
    verdict = local_minimum.check(p, result.x)
    assert verdict.local_minimum, verdict.reason
    tilted = Problem("tilted", "test", None, p.n, None, lambda x: 2.0 * p.fun(x) + x[2] * 1e-2, p.x0, np.nan,
                     lower=p.lower, upper=p.upper, constraint=p.constraint, constraint_lower=p.constraint_lower,
                     constraint_upper=p.constraint_upper, collection="test")
    assert "not a KKT point" in local_minimum.check(tilted, result.x).reason
