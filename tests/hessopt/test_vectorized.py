"""minimize_many(vectorize=True): every start advanced together (optimizers.batched.minimize_batch),
its f, g and H from autodiff.hessian_rows; results agree with a loop of minimize(trust-exact) to the
stopping test; what the batch cannot do is refused by name.

The plumbing (which start gets which data, shapes, options) is tested with a stand-in for
``minimize_batch`` (a vectorized Newton iteration that drops converged rows, the interface's
contract), so that what it checks does not depend on the trust region's path; the comparisons with
looped minimize run the real one."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import autodiff as ad
import hessopt
from hessopt import problems

TOLERANCE = 1e-12   # the stand-in's gradient test: max |g_i| <= TOLERANCE


def newton_stand_in(calls: list):
    """``minimize_batch``'s interface (``indexed``: ``evaluate(X, rows)``), as a vectorized Newton
    iteration: each row stops once max |g| <= TOLERANCE (then it is no longer evaluated).
    ``calls`` gets the options (a dict, first), then (rows, X, f, g, H) of every evaluation."""
    def minimize_batch(evaluate, X0, indexed=False, **options):
        calls.append(options)
        X = np.array(X0, dtype=float)
        running, nit = np.arange(len(X)), np.zeros(len(X), dtype=int)
        F, G, H = np.empty(len(X)), np.empty_like(X), np.empty(X.shape + X.shape[1:])
        for _ in range(100):
            evaluated = evaluate(X[running], running) if indexed else evaluate(X[running])
            calls.append((running.copy(), X[running].copy(), *evaluated))
            F[running], G[running], H[running] = evaluated
            running = running[np.abs(G[running]).max(axis=1) > TOLERANCE]
            if not running.size:
                break
            X[running] -= np.linalg.solve(H[running], G[running][..., None])[..., 0]
            nit[running] += 1
        from scipy.optimize import OptimizeResult
        return [OptimizeResult(x=X[i].copy(), fun=F[i], jac=G[i].copy(), nit=nit[i], nfev=nit[i] + 1,
                               njev=nit[i] + 1, nhev=nit[i] + 1, status=0, success=True, message="stand-in")
                for i in range(len(X))]
    return minimize_batch


@pytest.fixture
def stand_in(monkeypatch):
    calls: list = []
    monkeypatch.setattr(hessopt._vectorized, "minimize_batch", newton_stand_in(calls))
    return calls


def centered_quartic(x, center, weight):
    """Strictly convex, minimum at ``center``: a start's own data."""
    d = x - center
    return np.sum(weight * d ** 4 + d ** 2) + 0.5 * np.sum(d[1:] * d[:-1])


CENTERS = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.0], [-1.0, 1.0, 2.0], [0.25, 0.5, -0.5]])
WEIGHTS = np.array([1.0, 0.1, 2.0, 0.5])
STARTS = np.array([[0.0, 0.0, 0.0], [10.0, -5.0, 3.0], [-1.0, 1.0, 2.5], [0.3, 0.5, -0.5]])


def test_each_start_gets_its_own_batch_args_rows_also_when_others_have_stopped(stand_in):
    results = hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                                    batch_args=(CENTERS, WEIGHTS))
    for result, center in zip(results, CENTERS):
        # max |g| <= 1e-12 and the Hessian's eigenvalues >= 1/2 there: |x - center| <= 2e-12 (+ rounding)
        np.testing.assert_allclose(result.x, center, rtol=0, atol=1e-11)
    assert len(stand_in[-1][0]) < len(STARTS)      # rows had stopped: the data followed the running ones
    traced = ad.function(centered_quartic)
    for rows, X, F, G, H in stand_in[1:]:
        for row, x, f, g, h in zip(rows, X, F, G, H):   # each row's own start's derivatives, bit for bit
            expected = ad.hessian_operator(traced, x, args=(CENTERS[row], WEIGHTS[row]))
            assert f == expected.value
            np.testing.assert_array_equal(g, expected.gradient)
            np.testing.assert_array_equal(h, expected.to_dense())


def test_starts_of_any_one_shape_shared_args_and_options_reach_the_batch(stand_in):
    def shifted(x, center):          # x is a (2, 2) array, as the starts are
        return np.sum((x - center) ** 4 + (x - center) ** 2)
    center = np.array([[1.0, 2.0], [3.0, 4.0]])
    starts = [np.zeros((2, 2)), np.full((2, 2), 5.0)]
    results = hessopt.minimize_many(shifted, starts, method="trust-exact", vectorize=True, args=(center,),
                                    options={"gtol": 1e-9, "maxiter": 40.0, "initial_trust_radius": 2.0})
    assert stand_in[0] == {"gtol": 1e-9, "maxiter": 40, "initial_trust_radius": 2.0}   # maxiter as an int
    for result in results:
        assert result.x.shape == (2, 2) and result.jac.shape == (2, 2)
        np.testing.assert_allclose(result.x, center, rtol=0, atol=1e-11)
    assert stand_in[1][1].shape == (2, 4)            # the batch sees flat rows
    assert hessopt.minimize_many(shifted, [], method="trust-exact", vectorize=True, args=(center,)) == []


@pytest.mark.parametrize("keywords, named", [
    ({"method": "newton"}, "it runs method='trust-exact' only, not 'newton'"),
    ({"executor": ThreadPoolExecutor(1)}, "executor and timeout are for runs of their own"),
    ({"timeout": 5.0}, "executor and timeout are for runs of their own"),
    ({"progress": True}, "progress reports runs finishing one by one"),
    ({"callback": print}, "callback= is not taken"),
    ({"bounds": [(0, 1)] * 3}, "bounds= is not taken"),
    ({"constraints": {"type": "eq", "fun": np.sum}}, "constraints= is not taken"),
    ({"jac": np.zeros_like}, "jac= is not taken"),
    ({"hess": "2-point"}, "hess= is not taken"),
    ({"options": {"check_second_order": False}}, "the option 'check_second_order' is not taken"),
])
def test_what_the_vectorized_batch_cannot_do_is_refused_by_name(keywords, named):
    keywords = {"method": "trust-exact", **keywords}
    with pytest.raises(ValueError, match=f"minimize_many\\(vectorize=True\\): .*{named}"):
        hessopt.minimize_many(centered_quartic, STARTS, vectorize=True, args=(CENTERS[0], 1.0), **keywords)


@pytest.mark.parametrize("starts, error, named", [
    ([{"a": np.zeros(2)}], TypeError, "start 0 is a dict"),
    ([np.zeros(3), [np.zeros(2), np.zeros(1)]], TypeError, "start 1 is a list"),
    ([np.zeros(3), np.zeros(2)], ValueError, r"start 1 has shape \(2,\), start 0 \(3,\)"),
    ([np.zeros(3), ["a", "b", "c"]], TypeError, "start 1: expected real numbers"),
])
def test_starts_the_vectorized_batch_cannot_stack_are_refused_by_name(starts, error, named):
    with pytest.raises(error, match=named):
        hessopt.minimize_many(centered_quartic, starts, method="trust-exact", vectorize=True, args=(CENTERS[0], 1.0))


def test_batch_args_of_another_length_and_native_or_batch_args_without_vectorize_are_refused():
    with pytest.raises(ValueError, match=r"batch_args\[1\] has shape \(3,\); its leading axis must be the starts'"):
        hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                              batch_args=(CENTERS, WEIGHTS[:3]))
    with pytest.raises(TypeError, match=r"batch_args\[0\]: expected real numbers"):
        hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                              batch_args=(np.array(["a"] * 4), WEIGHTS))
    for keywords in ({"native": True}, {"batch_args": (CENTERS, WEIGHTS)}):
        name = next(iter(keywords))
        with pytest.raises(ValueError, match=f"{name}= is for the vectorized batch"):
            hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", **keywords)


def test_tol_is_the_gradient_tests_gtol_unless_the_options_give_one(stand_in):
    """As minimize takes scipy's tol: gtol from tol, the options' own gtol winning."""
    for keywords, gtol in (({"tol": 1e-9}, 1e-9), ({"tol": 1e-9, "options": {"gtol": 1e-6}}, 1e-6)):
        stand_in.clear()
        hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                              args=(CENTERS[0], 1.0), **keywords)
        assert stand_in[0] == {"gtol": gtol}
    with pytest.raises(ValueError, match="tol must be"):
        hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                              args=(CENTERS[0], 1.0), tol=-1.0)


def test_the_native_batch_is_the_replayed_batch_within_rounding(stand_in):
    pytest.importorskip("numba")
    runs = {native: hessopt.minimize_many(centered_quartic, STARTS, method="trust-exact", vectorize=True,
                                          native=native, batch_args=(CENTERS, WEIGHTS)) for native in (False, True)}
    assert all(result.get("native_reason") is None for result in runs[True])
    for native, replayed in zip(runs[True], runs[False]):
        np.testing.assert_allclose(native.x, replayed.x, rtol=0, atol=1e-11)  # both within 2e-12 of the center


# --- against a loop of minimize(trust-exact): the real batch (optimizers.batched) -------------------------

def newton_distance(fun, x, args=()) -> float:
    """||H^-1 g|| at x: how far x is from the minimizer it stopped near (Newton's step), what the
    stopping test leaves."""
    traced = ad.function(fun)
    operator = ad.hessian_operator(traced, np.ravel(x), args=args)
    return float(np.linalg.norm(np.linalg.solve(operator.to_dense(), operator.gradient)))


def assert_same_minimizers(batched, looped, fun, args_of=lambda k: ()):
    for k, (b, loop) in enumerate(zip(batched, looped)):
        assert b.success == loop.success and int(b.status) == int(loop.status), (k, b.message, loop.message)
        if not loop.success:
            continue
        reach = newton_distance(fun, b.x, args_of(k)) + newton_distance(fun, loop.x, args_of(k))
        # both stopped by the gradient test near one minimizer: within the two Newton steps (and rounding)
        assert np.linalg.norm(b.x - loop.x) <= 2 * reach + 1e-12 * max(1.0, np.linalg.norm(loop.x)), k
        assert b.x.shape == loop.x.shape and b.jac.shape == loop.jac.shape


def mgh_starts(name: str, m: int = 12) -> np.ndarray:
    x0 = np.asarray(problems.get(name).x0, dtype=float)
    return x0 * (1.0 + 0.1 * np.random.default_rng(6).standard_normal((m, x0.size)))


@pytest.mark.parametrize("name", ["rosenbrock", "beale", "box_3d", "helical_valley", "wood"])
def test_the_vectorized_batch_finds_what_looped_trust_exact_finds(name):
    fun, starts = problems.get(name).fun, mgh_starts(name)
    batched = hessopt.minimize_many(fun, starts, method="trust-exact", vectorize=True)
    looped = [hessopt.minimize(fun, x0, method="trust-exact") for x0 in starts]
    assert_same_minimizers(batched, looped, fun)
    fields = {"x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "success", "message"}
    assert all(fields <= set(result) for result in batched)



def test_the_method_name_is_taken_in_any_case_as_minimize_takes_it():
    fun, starts = problems.get("beale").fun, mgh_starts("beale", 3)
    upper = hessopt.minimize_many(fun, starts, method="Trust-Exact", vectorize=True)
    lower = hessopt.minimize_many(fun, starts, method="trust-exact", vectorize=True)
    assert [r.x.tolist() for r in upper] == [r.x.tolist() for r in lower] and all(r.success for r in upper)


T12 = np.linspace(0.0, 3.0, 12)


def decay_fit(p, t, y):
    r = p[0] * np.exp(-p[1] * t) + p[2] - y
    return r @ r


def test_each_starts_own_data_gives_what_looped_minimize_with_that_data_gives():
    rng = np.random.default_rng(7)
    truth = np.array([2.0, 1.0, 0.5]) * (1.0 + 0.3 * rng.random((20, 3)))
    data = truth[:, :1] * np.exp(-truth[:, 1:2] * T12) + truth[:, 2:] + 0.01 * rng.standard_normal((20, 12))
    starts = np.tile([1.0, 0.5, 0.0], (20, 1))
    batched = hessopt.minimize_many(decay_fit, starts, method="trust-exact", vectorize=True, args=(T12,),
                                    batch_args=(data,))
    looped = [hessopt.minimize(decay_fit, x0, args=(T12, y), method="trust-exact") for x0, y in zip(starts, data)]
    assert_same_minimizers(batched, looped, decay_fit, lambda k: (T12, data[k]))


def test_without_numba_native_batches_are_the_replayed_ones_and_say_why(stand_in, monkeypatch):
    def quartic(x, center, weight):     # a fun of its own: no native program kept from another test
        return centered_quartic(x, center, weight)
    replayed = hessopt.minimize_many(quartic, STARTS, method="trust-exact", vectorize=True,
                                     batch_args=(CENTERS, WEIGHTS))
    monkeypatch.setitem(sys.modules, "numba", None)     # import numba raises ImportError
    native = hessopt.minimize_many(quartic, STARTS, method="trust-exact", vectorize=True, native=True,
                                   batch_args=(CENTERS, WEIGHTS))
    for with_native, without in zip(native, replayed):
        np.testing.assert_array_equal(with_native.x, without.x)
        assert with_native.native_reason == "numba is not installed (the compiled extra)"
        assert "native_reason" not in without


SHIFT = np.array([1.0, -2.0, 0.5])


def shifted_quartic(x):
    """Minimum at the global SHIFT (rebound by the test below)."""
    d = x - SHIFT
    return np.sum(d ** 4 + d ** 2)


@pytest.mark.parametrize("native", [False, True])
def test_a_plain_fun_is_traced_at_each_batch_and_reads_its_globals_again(monkeypatch, native):
    """As minimize does: a global array rebound between two batches is seen by the second; with
    native, numba's compile is reused where the program is the same (same operations, same
    constants) and made anew where a constant changed."""
    if native:
        pytest.importorskip("numba")
    from autodiff.jit import native as jit_native
    starts = STARTS[:2]
    for step, shift in enumerate(([1.0, -2.0, 0.5], [1.0, -2.0, 0.5], [-3.0, 0.0, 4.0])):
        monkeypatch.setattr(sys.modules[__name__], "SHIFT", np.array(shift))
        kept = set(jit_native._COMPILED.values())
        results = hessopt.minimize_many(shifted_quartic, starts, method="trust-exact", vectorize=True,
                                        native=native, options={"gtol": 1e-10})
        for result in results:
            assert result.success
            np.testing.assert_allclose(result.x, shift, rtol=0, atol=1e-10)   # |4d^3 + 2d| <= gtol: |d| <= gtol / 2
        if native:
            assert all(result.get("native_reason") is None for result in results)
            assert (set(jit_native._COMPILED.values()) == kept) == (step == 1), step   # the same program reused


def test_an_autodiff_function_keeps_its_batch_programs(monkeypatch):
    """An autodiff.function's batch is traced once across calls (as minimize keeps its programs)."""
    traces = []
    record = ad.jit.traced.record
    monkeypatch.setattr(ad.jit.traced, "record", lambda *a: traces.append(1) or record(*a))
    fun = ad.function(centered_quartic)
    for step in range(2):
        results = hessopt.minimize_many(fun, STARTS, method="trust-exact", vectorize=True,
                                        batch_args=(CENTERS, WEIGHTS))
        for result, center in zip(results, CENTERS):
            np.testing.assert_allclose(result.x, center, atol=1e-5)
        if step == 0:
            first = len(traces)
    assert first > 0 and len(traces) == first
