"""Every method on the 39 Moré–Garbow–Hillstrom instances with its defaults (no tol, no
options: the call users make), against the known minima.

A run counts as solved when its final f is the known minimum or a documented local minimum
(``Problem.solved``). The product promises at least 38 of 39 per method, and never a reported
success at a point that is not a minimum. The suite runs once per test session (module fixtures):
about 30 s for hessopt's methods and 25 s for scipy's three Hessian-vector counterparts.
"""
import pytest

import hessopt
from hessopt import problems
from hessopt.suite import run_hessopt, run_scipy

HESSIAN_VECTOR_METHODS = ["newton-cg", "trust-ncg", "trust-krylov"]


@pytest.fixture(scope="module")
def default_runs():
    return {method: [run_hessopt(problem, method) for problem in problems.MGH]
            for method in sorted(hessopt.METHODS)}


@pytest.fixture(scope="module")
def scipy_default_runs():
    return {method: [run_scipy(problem, method) for problem in problems.MGH]
            for method in HESSIAN_VECTOR_METHODS}


@pytest.mark.parametrize("method", sorted(hessopt.METHODS))
def test_each_method_solves_the_mgh_set_with_its_defaults(method, default_runs):
    runs = default_runs[method]
    unsolved = [f"{r.problem} (n={r.n}): f={r.f:.6g}, {r.message}" for r in runs if not r.solved]
    false_successes = [f"{r.problem} (n={r.n}): f={r.f:.6g}" for r in runs if r.false_success]
    assert len(runs) == 39
    assert len(unsolved) <= 1, unsolved
    assert not false_successes, false_successes
    # a run that is not a success says why, with its final gradient norm
    for r in runs:
        assert r.success or f"||g||_inf = {r.gnorm:.1e}" in r.message, r.message


@pytest.mark.parametrize("method", HESSIAN_VECTOR_METHODS)
def test_hessian_vector_methods_use_at_most_two_thirds_of_scipys_evaluations(
        method, default_runs, scipy_default_runs):
    """Summed over the set, both libraries with their defaults, without each library's costliest
    instance: a measured number, and the full sums hang on single runs whose path the rounding
    decides (newton-cg on Meyer's function takes 296 to 1,767 evaluations under OpenBLAS's Haswell,
    SkylakeX and Prescott kernels; the full ratio went from 0.41 to 0.58). The trimmed ratio held at
    0.55 to 0.60 for the three methods over the kernels and thread counts checked (SkylakeX and
    Prescott at two threads, Haswell and Sandybridge at one, each with NumPy's SIMD loops of its
    generation)."""
    ours = sorted(r.evaluations for r in default_runs[method])[:-1]
    theirs = sorted(r.evaluations for r in scipy_default_runs[method])[:-1]
    assert sum(ours) <= 2 / 3 * sum(theirs), (sum(ours), sum(theirs))
