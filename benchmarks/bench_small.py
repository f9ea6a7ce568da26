"""Small problems per call: a gradient, a Hessian-vector product and a Hessian of plain-NumPy code,
replayed (``autodiff.function``) and native (``native=True``, the compiled extra: numba), against
jax.jit with NumPy arrays in and out (as a scipy user calls it), hand-written NumPy where there is
some (scipy.optimize.rosen_der and friends, a hand-coded fit and backpropagation) and CasADi's
generated functions where the problem is written in it.

Problems: MGH instances (``hessopt.problems``; jax runs the same source with ``np`` bound to
``jax.numpy``), three small CUTEst-like least-squares fits (3-5 parameters, 20-40 points) and a
2,033-parameter perceptron's loss on a batch of 256. HVP is ``hessian_operator(f, x) @ v`` at a
new x (what jax's jitted HVP of (x, v) computes); ``hvp(f)`` the functional product a JAX user
writes, ``ad.hvp(f)(x, v)`` (one program of (x, v)), against the same jitted HVP; ``HVP@x`` the
product of an operator already made at x (an optimizer's further products at one iterate).

Whole solves from MGH's starting points: ``hessopt.minimize(f)`` called again with the same plain f
(the programs of its first call kept: f recorded once per call to check they still hold), of
``ad.function(f)`` made once (traced at its first solve, replayed after; native: ``native=True``),
per solve in a batch of 10 starts through ``minimize_many`` (one trace for the batch), and of a new
function at each solve (it is traced), against ``scipy.optimize.minimize`` given jax.jit's gradient
and Hessian (NumPy in and out) made once, and made for each new function (jax traces and
compiles), the same method (trust-exact); ``per eval`` is
a solve's time over its evaluations (nfev + njev + nhev). Batches: solves per second
through ``minimize_many`` (this process, one core) on a batch of starts around each small
problem's: a run per start, and the vectorized batch (``vectorize=True``: every start advanced
together, the derivatives replayed, or ``native=True``: one numba loop over a native program),
against a loop of scipy with jax.jit derivatives, in wall time and in this process's CPU time
(solves per second per core, whatever the other processes' load); and a last row of exp_decay fits
each to its own curve (``batch_args``; its first column a ``minimize`` per fit), and scipy's loop of
such fits, ``minimize(f, x0, args=(t, y))`` with a plain f, against scipy's with jax.jit's made once.

Every time is the median over interleaved rounds (``common.interleaved_ratios``), ratios to jax.jit
in the same rounds: load from other processes hits every contestant alike. ``compile s`` is numba's
time to make the problem's native programs (gradient, split HVP, hvp(f), Hessian).
Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_small.py [--all] [--quick]
[--calls | --solves] [--batch N] (--all: the 39 MGH instances, not a dozen; --quick: 5 rounds instead
of 15; --calls, --solves: that part alone; --batch: starts per problem in a batch, default 1,000)
"""
from __future__ import annotations

import functools
import math
import sys
import time
import types
import warnings
from collections.abc import Callable

import numpy as np
import scipy.optimize

import autodiff as ad
import hessopt
from hessopt import problems

from common import interleaved_ratios, optional

jax = optional("jax")
casadi = optional("casadi")
if jax is not None:
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

SUBSET = ["rosenbrock", "freudenstein_roth", "beale", "helical_valley", "box_3d", "wood", "biggs_exp6",
          "osborne2", "watson", "extended_rosenbrock", "trigonometric", "chebyquad"]
KINDS = ("gradient", "HVP", "hvp(f)", "HVP@x", "Hessian")


class Case:
    """One problem: f in plain NumPy, x, v, and each contestant's calls by kind (None: not there);
    ``start`` the whole solves' (MGH's x0; x where not given); ``kinds`` the calls measured."""

    def __init__(self, name: str, f: Callable, x: np.ndarray, jax_f: Callable | None = None,
                 hand: dict | None = None, casadi_f: Callable | None = None, start: np.ndarray | None = None,
                 kinds: tuple = KINDS):
        self.name, self.f, self.x, self.kinds = name, f, np.asarray(x, dtype=float), kinds
        self.start = self.x if start is None else np.asarray(start, dtype=float)
        self.v = np.random.default_rng(1).standard_normal(self.x.size)
        self.jax_f, self.hand, self.casadi_f = jax_f, hand or {}, casadi_f


# --- the problems ---------------------------------------------------------------------------------

def in_jax(f: Callable) -> Callable:
    """f with ``np`` bound to ``jax.numpy`` (in f and in the functions its closure holds)."""
    cells = None
    if f.__closure__:
        cells = tuple(types.CellType(in_jax(c.cell_contents) if isinstance(c.cell_contents, types.FunctionType)
                                     else c.cell_contents) for c in f.__closure__)
    return types.FunctionType(f.__code__, {**f.__globals__, "np": jnp}, f.__name__, f.__defaults__, cells)


def mgh_cases(every: bool) -> list:
    cases = []
    for problem in problems.MGH:
        if not every and (problem.name not in SUBSET or any(c.name.startswith(problem.name + " ") for c in cases)):
            continue
        x = np.asarray(problem.x0, dtype=float) + 0.1
        hand = {}
        if problem.name == "rosenbrock":  # MGH 1 is scipy's rosen at n = 2
            hand = {"gradient": scipy.optimize.rosen_der, "HVP": scipy.optimize.rosen_hess_prod,
                    "Hessian": scipy.optimize.rosen_hess}
        cases.append(Case(f"{problem.name} {problem.n}", problem.fun, x,
                          in_jax(problem.fun) if jax else None, hand,
                          casadi_rosenbrock if problem.name == "rosenbrock" else None, problem.x0))
    return cases


def casadi_rosenbrock(x):
    return 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2


T20 = np.linspace(0.0, 4.0, 20)
Y20 = 2.5 * np.exp(-1.3 * T20) + 0.4 + 0.01 * np.random.default_rng(2).standard_normal(20)
T40 = np.linspace(-3.0, 3.0, 40)
Y40 = 1.5 * np.exp(-((T40 - 0.3) / 0.8) ** 2) + 0.2 * T40 + 0.01 * np.random.default_rng(3).standard_normal(40)


def exp_decay(p, np=np):
    """Least squares of a * exp(-b t) + c on 20 points (3 parameters)."""
    r = p[0] * np.exp(-p[1] * T20) + p[2] - Y20
    return r @ r


def exp_decay_gradient(p):
    """Hand-written: 2 J^T r."""
    e = np.exp(-p[1] * T20)
    r = p[0] * e + p[2] - Y20
    return 2.0 * np.array([e @ r, -(p[0] * T20 * e) @ r, np.sum(r)])


def gauss_peak(p, np=np):
    """Least squares of a Gaussian peak on a line, a exp(-((t - m) / s)^2) + c t, 40 points (4 parameters)."""
    r = p[0] * np.exp(-((T40 - p[1]) / p[2]) ** 2) + p[3] * T40 - Y40
    return r @ r


def two_exponentials(p, np=np):
    """Least squares of a exp(-b t) + c exp(-d t) + e on 20 points (5 parameters)."""
    r = p[0] * np.exp(-p[1] * T20) + p[2] * np.exp(-p[3] * T20) + p[4] - Y20
    return r @ r


def two_exponentials_hvp(p, v):
    """Hand-written H v of ``two_exponentials``: 2 J^T (J v) plus the residuals' curvature, which
    only the rates' own pairs (a, b) and (c, d) have."""
    a, b, c, d, _ = p
    e1, e2 = np.exp(-b * T20), np.exp(-d * T20)
    r = a * e1 + c * e2 + p[4] - Y20
    te1, te2 = T20 * e1, T20 * e2
    jv = v[0] * e1 - (a * v[1]) * te1 + v[2] * e2 - (c * v[3]) * te2 + v[4]
    tr1, tr2 = te1 @ r, te2 @ r
    return 2.0 * np.array([e1 @ jv - v[1] * tr1, -a * (te1 @ jv) - v[0] * tr1 + a * v[1] * ((T20 * te1) @ r),
                           e2 @ jv - v[3] * tr2, -c * (te2 @ jv) - v[2] * tr2 + c * v[3] * ((T20 * te2) @ r),
                           jv.sum()])


def casadi_exp_decay(p):
    t, y = casadi.DM(T20), casadi.DM(Y20)
    return casadi.sumsqr(p[0] * casadi.exp(-p[1] * t) + p[2] - y)


def casadi_gauss_peak(p):
    t, y = casadi.DM(T40), casadi.DM(Y40)
    return casadi.sumsqr(p[0] * casadi.exp(-((t - p[1]) / p[2]) ** 2) + p[3] * t - y)


def casadi_two_exponentials(p):
    t, y = casadi.DM(T20), casadi.DM(Y20)
    return casadi.sumsqr(p[0] * casadi.exp(-p[1] * t) + p[2] * casadi.exp(-p[3] * t) + p[4] - y)


def fit_cases() -> list:
    fits = [("exp_decay 3", exp_decay, [2.0, 1.0, 0.5], {"gradient": exp_decay_gradient}, casadi_exp_decay),
            ("gauss_peak 4", gauss_peak, [1.0, 0.0, 1.0, 0.1], {}, casadi_gauss_peak),
            ("two_exponentials 5", two_exponentials, [2.0, 1.0, 0.5, 3.0, 0.3], {"HVP": two_exponentials_hvp},
             casadi_two_exponentials)]
    return [Case(name, f, x, (lambda p, f=f: f(p, np=jnp)) if jax else None, hand, peer)
            for name, f, x, hand, peer in fits]


rng = np.random.default_rng(0)
INPUTS, TARGETS = rng.standard_normal((256, 8)), rng.standard_normal((256, 1))


def mlp_layers(vector):
    """The perceptron's (w1, b1, w2, b2, w3, b3) in a vector of its 2,033 parameters (or a tangent)."""
    return (vector[:384].reshape(8, 48), vector[384:432], vector[432:1968].reshape(48, 32), vector[1968:2000],
            vector[2000:2032].reshape(32, 1), vector[2032:])


def mlp_loss(parameters, np=np):
    """A 2,033-parameter perceptron (8 -> 48 -> 32 -> 1, tanh), squared error on a batch of 256."""
    w1, b1, w2, b2, w3, b3 = mlp_layers(parameters)
    hidden = np.tanh(np.tanh(INPUTS @ w1 + b1) @ w2 + b2)
    return np.mean((hidden @ w3 + b3 - TARGETS) ** 2)


def mlp_gradient(parameters):
    """Hand-written backpropagation of ``mlp_loss``."""
    w1, b1, w2, b2, w3, b3 = mlp_layers(parameters)
    h1 = np.tanh(INPUTS @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    d3 = 2.0 * (h2 @ w3 + b3 - TARGETS) / TARGETS.size
    d2 = (d3 @ w3.T) * (1.0 - h2 ** 2)
    d1 = (d2 @ w2.T) * (1.0 - h1 ** 2)
    return np.concatenate([(INPUTS.T @ d1).ravel(), d1.sum(0), (h1.T @ d2).ravel(), d2.sum(0),
                           (h2.T @ d3).ravel(), d3.sum(0)])


def mlp_hvp(parameters, v):
    """Hand-written H v of ``mlp_loss``: backpropagation with tangents (Pearlmutter's R-operator)."""
    w1, b1, w2, b2, w3, b3 = mlp_layers(parameters)
    v1, c1, v2, c2, v3, c3 = mlp_layers(v)
    h1 = np.tanh(INPUTS @ w1 + b1)
    s1 = 1.0 - h1 * h1
    dh1 = (INPUTS @ v1 + c1) * s1
    h2 = np.tanh(h1 @ w2 + b2)
    s2 = 1.0 - h2 * h2
    dh2 = (h1 @ v2 + dh1 @ w2 + c2) * s2
    g3 = 2.0 * (h2 @ w3 + b3 - TARGETS) / TARGETS.size
    dg3 = 2.0 * (h2 @ v3 + dh2 @ w3 + c3) / TARGETS.size
    gh2 = g3 @ w3.T
    gz2 = gh2 * s2
    dgz2 = (dg3 @ w3.T + g3 @ v3.T) * s2 - 2.0 * gh2 * h2 * dh2
    gh1 = gz2 @ w2.T
    dgz1 = (dgz2 @ w2.T + gz2 @ v2.T) * s1 - 2.0 * gh1 * h1 * dh1
    return np.concatenate([(INPUTS.T @ dgz1).ravel(), dgz1.sum(0), (dh1.T @ gz2 + h1.T @ dgz2).ravel(),
                           dgz2.sum(0), (dh2.T @ g3 + h2.T @ dg3).ravel(), dg3.sum(0)])


def mlp_case() -> Case:
    x = 0.3 * np.random.default_rng(4).standard_normal(2033)
    return Case("mlp 2033 (batch 256)", mlp_loss, x, (lambda p: mlp_loss(p, np=jnp)) if jax else None,
                {"gradient": mlp_gradient, "HVP": mlp_hvp},
                kinds=KINDS[:4])   # its Hessian: 20 s a call, not a small problem


# --- the contestants --------------------------------------------------------------------------------

def autodiff_calls(f: Callable, x: np.ndarray, v: np.ndarray, native: bool, hessian_too: bool = True) -> tuple:
    """({kind: call}, seconds to make the programs, why not native)."""
    start = time.perf_counter()
    traced = ad.function(f, native=native)
    grad, hessian, hvp = traced.grad(), ad.hessian(traced), ad.hvp(traced)
    operator = ad.hessian_operator(traced, x)
    reasons = [traced.native_reason]
    grad(x)
    reasons.append(traced.native_reason)
    operator.matvec(v)
    ad.hessian_operator(traced, x + 0.0).matvec(v)
    hvp(x, v)
    reasons.append(traced.native_reason)
    if hessian_too:
        hessian(x)
        reasons.append(traced.native_reason)
    calls = {"gradient": lambda: grad(x), "HVP": lambda: ad.hessian_operator(traced, x).matvec(v),
             "hvp(f)": lambda: hvp(x, v), "HVP@x": lambda: operator.matvec(v), "Hessian": lambda: hessian(x)}
    return calls, time.perf_counter() - start, next((r for r in reasons if r), None)


def jax_calls(f: Callable, x: np.ndarray, v: np.ndarray) -> dict:
    grad = jax.jit(jax.grad(f))
    hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    hessian = jax.jit(jax.hessian(f))
    calls = {"gradient": lambda: np.asarray(grad(x)), "HVP": lambda: np.asarray(hvp(x, v)),
             "Hessian": lambda: np.asarray(hessian(x))}
    calls["hvp(f)"] = calls["HVP"]    # jax's functional product of (x, v)
    calls["HVP@x"] = calls["HVP"]     # jax has no product at a made point: the same call
    for call in calls.values():
        call()
    return calls


def casadi_calls(f: Callable, x: np.ndarray, v: np.ndarray) -> dict:
    """CasADi's generated functions (SX), NumPy in and out."""
    xs, vs = casadi.SX.sym("x", x.size), casadi.SX.sym("v", x.size)
    y = f(xs)
    gradient = casadi.gradient(y, xs)
    hessian, _ = casadi.hessian(y, xs)
    grad_f = casadi.Function("g", [xs], [gradient])
    hvp_f = casadi.Function("hv", [xs, vs], [casadi.jtimes(gradient, xs, vs)])
    hess_f = casadi.Function("h", [xs], [hessian])
    return {"gradient": lambda: np.asarray(grad_f(x)).ravel(), "HVP": lambda: np.asarray(hvp_f(x, v)).ravel(),
            "hvp(f)": lambda: np.asarray(hvp_f(x, v)).ravel(), "HVP@x": lambda: np.asarray(hvp_f(x, v)).ravel(),
            "Hessian": lambda: np.asarray(hess_f(x))}


def check(calls: dict, reference: dict, name: str, contestant: str) -> None:
    """Every contestant's results agree with the NumPy replay's (to rounding)."""
    for kind, call in calls.items():
        got, expected = np.asarray(call(), dtype=float), np.asarray(reference[kind](), dtype=float)
        scale = max(1.0, float(np.max(np.abs(expected))))
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-7, atol=1e-7 * scale):
            raise AssertionError(f"{name}: {contestant}'s {kind} differs from the replay's")


# --- the run ------------------------------------------------------------------------------------------

def measure(case: Case, rounds: int) -> dict:
    """{kind: {contestant: (median seconds, median ratio to jax.jit)}}, compile seconds, reason."""
    hessian_too = "Hessian" in case.kinds
    replay, _, _ = autodiff_calls(case.f, case.x, case.v, False, hessian_too)
    native, compile_seconds, reason = autodiff_calls(case.f, case.x, case.v, True, hessian_too)
    contestants = {"replay": replay, "native": native}
    if case.jax_f is not None:
        try:
            contestants["jax.jit"] = jax_calls(case.jax_f, case.x, case.v)
        except Exception as error:  # the source does something jax.numpy does not
            print(f"  {case.name}: jax.jit failed: {type(error).__name__}")
    if case.hand:
        contestants["hand"] = {kind: (lambda call=call, kind=kind: call(case.x, case.v) if kind == "HVP"
                                      else call(case.x)) for kind, call in case.hand.items()}
        if "HVP" in case.hand:   # one product at a new point: both rows
            contestants["hand"]["hvp(f)"] = contestants["hand"]["HVP"]
    if casadi is not None and case.casadi_f is not None:
        contestants["casadi"] = casadi_calls(case.casadi_f, case.x, case.v)
    contestants = {name: {kind: call for kind, call in calls.items() if kind in case.kinds}
                   for name, calls in contestants.items()}
    for contestant, calls in contestants.items():
        check(calls, replay, case.name, contestant)
    results = {kind: {} for kind in KINDS}
    for kind in case.kinds:
        fns = {name: calls[kind] for name, calls in contestants.items() if kind in calls}
        baseline = "jax.jit" if "jax.jit" in fns else "replay"
        results[kind] = interleaved_ratios(fns, baseline, repeats=rounds)
    return results, compile_seconds, reason


def table(rows: list, kind: str) -> None:
    print(f"\n{kind} per call: median us (ratio to jax.jit, NumPy in and out)")
    head = ["replay", "native", "jax.jit", "hand", "casadi"]
    print(f"  {'problem':<24}" + "".join(f"{h:>18}" for h in head) + f"{'compile s':>11}  native?")
    ratios: dict = {"replay": [], "native": []}
    for name, results, compile_seconds, reason in rows:
        cells = []
        for h in head:
            found = results[kind].get(h)
            cells.append(f"{found[0] * 1e6:9.1f} ({found[1]:5.2f})" if found else "")
            if found and h in ratios and "jax.jit" in results[kind]:
                ratios[h].append(found[1])
        print(f"  {name:<24}" + "".join(f"{c:>18}" for c in cells) + f"{compile_seconds:11.1f}  {reason or 'yes'}")
    for h, values in ratios.items():
        if values:
            print(f"  {h} / jax.jit: geometric mean {geometric_mean(values):.2f}, worst {max(values):.2f}, "
                  f"at most 1 on {sum(r <= 1 for r in values)} of {len(values)}, "
                  f"at most 1/5 on {sum(r <= 0.2 for r in values)}")


# --- whole solves and batches ----------------------------------------------------------------------------

SOLVE_METHOD = "trust-exact"
BATCHED = 10    # starts in the batch whose time per solve is "hessopt batched"
BATCH_PROBLEMS = ("rosenbrock", "beale", "box_3d", "exp_decay", "gauss_peak", "two_exponentials")


def jax_derivatives(case: Case) -> tuple:
    """jax.jit's f, gradient and Hessian of the case, NumPy in and out (a scipy user's calls)."""
    f, grad, hessian = jax.jit(case.jax_f), jax.jit(jax.grad(case.jax_f)), jax.jit(jax.hessian(case.jax_f))
    return (lambda x: float(f(x))), (lambda x: np.asarray(grad(x))), (lambda x: np.asarray(hessian(x)))


def scipy_jax_solve(case: Case, f: Callable, grad: Callable, hessian: Callable):
    return scipy.optimize.minimize(f, case.start, jac=grad, hess=hessian, method=SOLVE_METHOD)


def solve_calls(case: Case) -> tuple:
    """({contestant: one solve from the case's start}, {contestant: evaluations per solve}). "made
    once": the objective made ``ad.function(f)`` once (traced at the first solve, replayed after), as
    jax.jit's derivatives are made once; "plain f": ``minimize(f)`` called again with the same f (its
    programs kept, f recorded once per call to check them); "new f": each solve a new function (hessopt
    traces it; jax.jit traces and compiles)."""
    traced, native = ad.function(case.f), ad.function(case.f, native=True)
    calls = {"hessopt plain f": lambda: hessopt.minimize(case.f, case.start, method=SOLVE_METHOD),
             "hessopt new f": lambda: hessopt.minimize(lambda x: case.f(x), case.start, method=SOLVE_METHOD),
             "hessopt batched": lambda: hessopt.minimize_many(case.f, [case.start] * BATCHED, method=SOLVE_METHOD),
             "hessopt made once": lambda: hessopt.minimize(traced, case.start, method=SOLVE_METHOD),
             "native made once": lambda: hessopt.minimize(native, case.start, method=SOLVE_METHOD)}
    if case.jax_f is not None:
        f, grad, hessian = jax_derivatives(case)
        calls["scipy+jax made once"] = lambda: scipy_jax_solve(case, f, grad, hessian)
        calls["scipy+jax new f"] = lambda: scipy_jax_solve(case, *jax_derivatives(case))
    evaluations = {}
    for name, call in calls.items():
        result = call()
        result = result[0] if isinstance(result, list) else result
        evaluations[name] = result.nfev + result.njev + result.get("nhev", 0)
    return calls, evaluations


SOLVE_HEAD = ("hessopt plain f", "hessopt made once", "native made once", "hessopt batched", "scipy+jax made once",
              "hessopt new f", "scipy+jax new f")


def solves_table(cases: list, rounds: int) -> None:
    print(f"\nwhole solves ({SOLVE_METHOD}): ms per solve (ratio to scipy+jax made once), evaluations, us per "
          "evaluation; 'plain f': minimize(f) called again with the same f (the programs of its first call "
          "kept; f recorded once per call to check them); 'made once': hessopt given ad.function(f) (native: "
          "native=True) made before the timing, as scipy is given jax.jit's derivatives made before it; 'new f': "
          "each solve a new function (hessopt traces it; jax.jit traces and compiles); batched: per solve in "
          "minimize_many of 10 starts")
    print(f"  {'problem':<24}" + "".join(f"{h:>27}" for h in SOLVE_HEAD))
    ratios: dict = {h: [] for h in SOLVE_HEAD[:4]}
    for case in cases:
        calls, evaluations = solve_calls(case)
        baseline = "scipy+jax made once" if "scipy+jax made once" in calls else "hessopt made once"
        results = interleaved_ratios(calls, baseline, repeats=rounds)
        results["hessopt batched"] = tuple(value / BATCHED for value in results["hessopt batched"])
        cells = []
        for h in SOLVE_HEAD:
            if h not in results:
                cells.append("")
                continue
            (seconds, ratio), count = results[h], evaluations[h]
            cells.append(f"{seconds * 1e3:7.2f} ({ratio:5.2f}) {count:4d} {seconds / count * 1e6:5.0f}")
            if h in ratios and baseline == "scipy+jax made once":
                ratios[h].append(ratio)
        print(f"  {case.name:<24}" + "".join(f"{c:>27}" for c in cells), flush=True)
    for h, values in ratios.items():
        if values:
            print(f"  {h} / scipy+jax made once: geometric mean {geometric_mean(values):.2f}, worst "
                  f"{max(values):.2f}, at most 1 on {sum(r <= 1 for r in values)} of {len(values)}")
    print("  (new f against new f: the ratio of the last two columns)")


def batch_table(cases: list, size: int) -> None:
    print(f"\nbatches of {size:,} starts per problem ({SOLVE_METHOD}; starts x (1 + 0.2 z), z normal): "
          "solves per second of wall time / of this process's CPU time (per core: other processes' load "
          "left out), share solved; vectorized: minimize_many(vectorize=True), replayed or native (numba's "
          "compile, once per problem, not counted: 'compile s')")
    head = ["minimize_many", "vectorized", "vectorized native", "scipy+jax loop"]
    print(f"  {'problem':<24}" + "".join(f"{h:>28}" for h in head) + f"{'compile s':>11}")
    for case in cases:
        starts = case.start * (1.0 + 0.2 * np.random.default_rng(5).standard_normal((size, case.x.size)))
        calls = {"minimize_many": lambda: hessopt.minimize_many(case.f, starts, method=SOLVE_METHOD),  # noqa: B023
                 "vectorized": lambda: hessopt.minimize_many(case.f, starts, method=SOLVE_METHOD,  # noqa: B023
                                                             vectorize=True),
                 "vectorized native": lambda: hessopt.minimize_many(case.f, starts, method=SOLVE_METHOD,  # noqa: B023
                                                                    vectorize=True, native=True)}
        compile_seconds = seconds_of(lambda: hessopt.minimize_many(  # noqa: B023  (numba's compile, kept by content)
            case.f, starts[:2], method=SOLVE_METHOD, vectorize=True, native=True))  # noqa: B023
        if case.jax_f is not None:
            f, grad, hessian = jax_derivatives(case)
            calls["scipy+jax loop"] = lambda: [scipy.optimize.minimize(f, x, jac=grad, hess=hessian,  # noqa: B023
                                                                       method=SOLVE_METHOD) for x in starts]  # noqa: B023
        cells = [rate_cell(calls[name], size) if name in calls else "" for name in head]
        print(f"  {case.name:<24}" + "".join(f"{c:>28}" for c in cells) + f"{compile_seconds:11.1f}", flush=True)
    own_data_row(size)


def seconds_of(call: Callable) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def rate_cell(call: Callable, size: int) -> str:
    """Solves per second of wall time / of this process's CPU time, and the share solved."""
    wall, cpu = time.perf_counter(), time.process_time()
    results = call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"{size / wall:7.0f} / {size / cpu:6.0f} ({np.mean([r.success for r in results]):4.2f})"


def decay_fit(p, t, y, np=np):
    """exp_decay with its data as arguments: a * exp(-b t) + c against y."""
    r = p[0] * np.exp(-p[1] * t) + p[2] - y
    return r @ r


def own_data_row(size: int) -> None:
    """exp_decay fits, each start with its own curve: a minimize per fit of ``ad.function(decay_fit)``
    made once (each curve an argument: one trace for all), and the vectorized batch (``batch_args``)
    replayed and native (compile not counted), in the batch table's columns."""
    rng = np.random.default_rng(6)
    truth = np.array([2.5, 1.3, 0.4]) * (1.0 + 0.3 * rng.random((size, 3)))
    curves = truth[:, :1] * np.exp(-truth[:, 1:2] * T20) + truth[:, 2:] + 0.01 * rng.standard_normal((size, 20))
    starts = np.tile([2.0, 1.0, 0.5], (size, 1))
    fit = ad.function(decay_fit)

    def vectorized(native: bool, count: int = size) -> list:
        return hessopt.minimize_many(fit, starts[:count], method=SOLVE_METHOD, vectorize=True,
                                     native=native, args=(T20,), batch_args=(curves[:count],))
    compile_seconds = seconds_of(lambda: vectorized(True, 2))
    calls = [lambda: [hessopt.minimize(fit, x, args=(T20, y), method=SOLVE_METHOD) for x, y in zip(starts, curves)],
             lambda: vectorized(False), lambda: vectorized(True)]
    cells = [rate_cell(call, size) for call in calls]
    print(f"  {'exp_decay 3, own data':<24}" + "".join(f"{c:>28}" for c in cells + [""]) + f"{compile_seconds:11.1f}"
          "  (a minimize per fit of ad.function(f) made once; batch_args)", flush=True)
    plain = [rate_cell(lambda: [hessopt.minimize(decay_fit, x, args=(T20, y), method=SOLVE_METHOD)
                                for x, y in zip(starts, curves)], size), "", ""]
    if jax:
        in_jax = functools.partial(decay_fit, np=jnp)
        f, grad, hessian = (jax.jit(g) for g in (in_jax, jax.grad(in_jax), jax.hessian(in_jax)))
        def scipy_fit(x, y):
            return scipy.optimize.minimize(lambda p, t, y: float(f(p, t, y)), x, args=(T20, y),
                                           jac=lambda p, t, y: np.asarray(grad(p, t, y)),
                                           hess=lambda p, t, y: np.asarray(hessian(p, t, y)), method=SOLVE_METHOD)
        plain.append(rate_cell(lambda: [scipy_fit(x, y) for x, y in zip(starts, curves)], size))
    print(f"  {'exp_decay 3, args loop':<24}" + "".join(f"{c:>28}" for c in plain + [""] * (4 - len(plain)))
          + "  (scipy's loop: minimize(f, x0, args=(t, y)) per fit, a plain f; jax.jit's made once)", flush=True)


def geometric_mean(values: list) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def option(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
    every, rounds = "--all" in sys.argv, 5 if "--quick" in sys.argv else 15
    warnings.simplefilter("ignore", RuntimeWarning)   # MGH starting points overflow in places
    print(f"jax {'missing' if jax is None else jax.__version__}, casadi {getattr(casadi, '__version__', 'missing')}, "
          f"numba {getattr(optional('numba'), '__version__', 'missing (native runs as the replay)')}")
    small = mgh_cases(every) + fit_cases()
    if "--solves" not in sys.argv:
        rows = []
        for case in small + [mlp_case()]:
            results, compile_seconds, reason = measure(case, rounds)
            rows.append((case.name, results, compile_seconds, reason))
            print(f"  measured {case.name}", flush=True)
        for kind in KINDS:
            table(rows, kind)
    if "--calls" not in sys.argv:
        solves_table(small, max(3, rounds // 3))
        batch_table([case for case in small if case.name.split()[0] in BATCH_PROBLEMS], option("--batch", 1000))


if __name__ == "__main__":
    main()
