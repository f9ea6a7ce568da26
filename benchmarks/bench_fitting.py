"""Fitting models to data: odeint's derivatives, and least-squares fits, against scipy and JAX.

(a) ODE derivatives. Per system -- Lotka-Volterra (2 states, 4 parameters, 31 times: 62 outputs),
    SIR (3 states, 2 parameters), Robertson (3 states, 3 rate constants, stiff, 22 times from 0 to
    1e5) and a chain of 50 saturating transfers (``chain``: 2 parameters, 21 times) -- the seconds
    of one ``autodiff.numpy.scipy_integrate.odeint`` solve on plain arrays, of one gradient of a
    sum of squares of the solution minus data in the parameters and y0, and of one Hessian-vector
    product of it, in interleaved rounds (median seconds, and the median per round of the ratio
    to the solve of the same round, so that a machine under load slows them alike). Peers: JAX's
    ``jax.experimental.ode.odeint`` (Dormand-Prince with its adjoint; float64; each function
    jitted and compiled before the clock starts; not run on Robertson, which its explicit method
    would take hundreds of millions of steps for), and scipy's odeint with the gradient by
    forward differences of the loss (``scipy.optimize.approx_fprime``, as scipy's minimizers do).
    The gradients' agreement is the largest difference to autodiff's, relative to its largest
    entry; the scipy and JAX solutions differ from autodiff's by their own tolerance.
(b) Fits. The Lotka-Volterra fit of the issue: its 4 parameters from 62 noisy observations
    (5% noise, seeded), ``hessopt.least_squares(residuals, x0=..., bounds=(0, np.inf))`` against
    scipy's ``least_squares`` with its default finite-difference Jacobian ("2-point", "trf"): time
    (median of interleaved runs), residual evaluations, the cost, and the largest relative
    difference of the fitted parameters.

A fitting problem is a ``Fit`` (residuals on plain arrays or Tensors, a start and bounds) in
``FITS``; more suites (NIST StRD with certified values, ``curve_fit`` examples) go there and in
``main``'s sections the same way.

Run: python benchmarks/bench_fitting.py [--systems lotka_volterra,sir,...] [--repeats 7]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import autodiff as ad
import hessopt
from autodiff.numpy import scipy_integrate
from hessopt.problems import lotka_volterra, robertson, saturating_chain, sir

from common import calls_per_batch, optional

jax = optional("jax")


# --- the systems ------------------------------------------------------------------------------------

@dataclass
class System:
    """An ODE, its parameters and observation times, and the tolerances of its solves."""
    func: Callable
    y0: np.ndarray
    t: np.ndarray
    params: tuple
    tolerances: dict = field(default_factory=dict)
    jax_func: Callable | None = None  # the same right-hand side in jax.numpy, when JAX can run it

    def data(self) -> np.ndarray:
        """Observations: the solution, 1% off, so that the residuals are not zero."""
        return 1.01 * scipy_integrate.odeint(self.func, self.y0, self.t, args=self.params, **self.tolerances)

    def loss(self, x, data, np=np, odeint=None):
        """The sum of squares of the solution at (y0, params) = x minus ``data``."""
        n = self.y0.size
        params = tuple(x[n + k] for k in range(len(self.params)))
        if odeint is None:
            ys = scipy_integrate.odeint(self.func, x[:n], self.t, args=params, **self.tolerances)
        else:
            ys = odeint(x[:n], params)
        return np.sum((ys - data) ** 2)


def _jax_functions():
    """The systems' right-hand sides in jax.numpy."""
    jnp = jax.numpy

    def jax_lotka_volterra(y, t, a, b, c, d):
        return jnp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])

    def jax_sir(y, t, beta, gamma):
        infections = beta * y[0] * y[1]
        return jnp.stack([-infections, infections - gamma * y[1], gamma * y[1]])

    def jax_chain(y, t, vmax, km):
        flux = vmax * y / (km + y)
        return jnp.concatenate([-flux[:1], flux[:-1] - flux[1:]])
    return {"lotka_volterra": jax_lotka_volterra, "sir": jax_sir, "chain": jax_chain}


def systems() -> dict:
    jax_funcs = _jax_functions() if jax is not None else {}
    return {
        "lotka_volterra": System(lotka_volterra, np.array([10.0, 5.0]), np.linspace(0.0, 15.0, 31),
                                 (1.0, 0.1, 1.5, 0.075), jax_func=jax_funcs.get("lotka_volterra")),
        "sir": System(sir, np.array([0.99, 0.01, 0.0]), np.linspace(0.0, 100.0, 51), (0.3, 0.1),
                      jax_func=jax_funcs.get("sir")),
        "robertson": System(robertson, np.array([1.0, 0.0, 0.0]), np.concatenate([[0.0], np.logspace(-5, 5, 21)]),
                            (0.04, 3e7, 1e4), {"rtol": 1e-6, "atol": 1e-10}),
        "chain": System(saturating_chain, np.r_[1.0, np.linspace(0.5, 0.1, 49)], np.linspace(0.0, 20.0, 21), (1.0, 0.5),
                        jax_func=jax_funcs.get("chain")),
    }


# --- timing --------------------------------------------------------------------------------------------

def interleaved(calls: dict, baseline: str, repeats: int) -> dict:
    """{name: {"cpu"/"wall": (median seconds per call, median ratio to ``baseline``)}}, timed in
    round-robin rounds of one batch per function, each batch with the garbage collector off and
    after a collection (as ``timeit`` does), so that no call pays for another's garbage.

    CPU time is this process's (``time.process_time``): on a loaded machine it is what a call
    costs, while its wall time also counts the time other processes held the cores (a long call
    is interrupted more often than a short one, which inflates ratios to a short solve). For the
    single-threaded NumPy code here they agree on an idle machine; JAX's CPU time also counts its
    worker threads."""
    numbers = {name: calls_per_batch(call, 0.02) for name, call in calls.items()}
    rounds = {name: {"cpu": [], "wall": []} for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            gc.collect()
            gc.disable()
            try:
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(numbers[name]):
                    call()
                rounds[name]["wall"].append((time.perf_counter() - wall) / numbers[name])
                rounds[name]["cpu"].append((time.process_time() - cpu) / numbers[name])
            finally:
                gc.enable()
    return {name: {clock: (statistics.median(times), statistics.median(
        t / b for t, b in zip(times, rounds[baseline][clock]))) for clock, times in clocks.items()}
        for name, clocks in rounds.items()}


# --- (a) derivatives ------------------------------------------------------------------------------------

def derivative_timings(system: System, repeats: int) -> dict:
    """{name: (seconds, ratio to the solve)} for autodiff's solve, gradient and HVP and the peers'."""
    data = system.data()
    x = np.concatenate([system.y0, system.params])
    v = np.random.default_rng(0).standard_normal(x.size)
    plain_args = tuple(np.float64(p) for p in system.params)
    loss = lambda z: system.loss(z, data)  # noqa: E731
    gradient = ad.grad(loss)
    calls = {
        "solve": lambda: scipy_integrate.odeint(system.func, system.y0, system.t, args=plain_args, **system.tolerances),
        "gradient": lambda: gradient(x),
        "hvp": lambda: ad.hvp(loss, x, v),
        "scipy FD gradient": lambda: _scipy_fd_gradient(system, data, x),
    }
    calls.update(_jax_calls(system, data, x, v))
    timings = interleaved(calls, "solve", repeats)
    agreement = {name: _relative_difference(value(), gradient(x)) for name, value in
                 (("scipy FD gradient", lambda: _scipy_fd_gradient(system, data, x)),
                  ("jax gradient", calls.get("jax gradient"))) if value is not None}
    return {"timings": timings, "agreement": agreement}


def _scipy_fd_gradient(system: System, data, x):
    """The gradient by forward differences of scipy's odeint (scipy's default step)."""
    optimize, integrate = optional("scipy.optimize"), optional("scipy.integrate")
    n = system.y0.size

    def loss(z):
        ys = integrate.odeint(system.func, z[:n], system.t, args=tuple(z[n:]), **system.tolerances)
        return np.sum((ys - data) ** 2)
    return optimize.approx_fprime(x, loss)


def _jax_calls(system: System, data, x, v) -> dict:
    """JAX's jitted solve, gradient and HVP (compiled here), when JAX is installed and can run it."""
    if jax is None or system.jax_func is None:
        return {}
    jax.config.update("jax_enable_x64", True)
    from jax.experimental.ode import odeint
    jnp = jax.numpy
    tolerances = {"rtol": system.tolerances.get("rtol", 1.49012e-8), "atol": system.tolerances.get("atol", 1.49012e-8)}
    solve = lambda y0, params: odeint(system.jax_func, y0, jnp.asarray(system.t), *params, **tolerances)  # noqa: E731
    loss = lambda z: system.loss(z, jnp.asarray(data), np=jnp, odeint=solve)  # noqa: E731
    jitted = {"solve": jax.jit(solve), "gradient": jax.jit(jax.grad(loss)),
              # reverse over reverse: JAX's odeint is a custom_vjp, which forward mode refuses
              "hvp": jax.jit(jax.grad(lambda z, w: jnp.vdot(jax.grad(loss)(z), w)))}
    y0, params, point, direction = (jnp.asarray(system.y0), tuple(jnp.asarray(p) for p in system.params),
                                    jnp.asarray(x), jnp.asarray(v))
    calls = {"jax solve": lambda: jitted["solve"](y0, params).block_until_ready(),
             "jax gradient": lambda: np.asarray(jitted["gradient"](point)),
             "jax hvp": lambda: jitted["hvp"](point, direction).block_until_ready()}
    for call in calls.values():
        call()  # compiled before the clock starts
    return calls


def _relative_difference(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


def report_derivatives(name: str, result: dict) -> None:
    timings = result["timings"]
    print(f"\n{name}")
    print(f"  {'':<20} {'CPU ms':>9} {'x solve':>8} {'x jax':>7}   {'wall ms':>9} {'x solve':>8} {'x jax':>7}")
    for label, clocks in timings.items():
        peer = timings.get("jax " + label) if not label.startswith(("jax", "scipy")) else None
        columns = []
        for clock in ("cpu", "wall"):
            seconds, ratio = clocks[clock]
            versus = f"{seconds / peer[clock][0]:7.1f}" if peer is not None else ""
            columns.append(f"{seconds * 1e3:9.2f} {ratio:8.2f} {versus:>7}")
        print(f"  {label:<20} {'   '.join(columns)}")
    for label, difference in result["agreement"].items():
        print(f"  {label} vs autodiff's: {difference:.1e} (relative to its largest entry)")


# --- (b) fits ---------------------------------------------------------------------------------------------

@dataclass
class Fit:
    """A least-squares problem: ``residuals(p)`` (NumPy functions: plain arrays or Tensors), a start
    and scipy ``least_squares``' bounds."""
    residuals: Callable
    x0: np.ndarray
    bounds: tuple = (-np.inf, np.inf)


def lotka_volterra_fit() -> Fit:
    """The issue's fit: 4 parameters from 62 observations of both populations, 5% noise."""
    t, y0, truth = np.linspace(0.0, 15.0, 31), np.array([10.0, 5.0]), (1.0, 0.1, 1.5, 0.075)
    clean = scipy_integrate.odeint(lotka_volterra, y0, t, args=truth)
    data = clean * (1.0 + 0.05 * np.random.default_rng(1).standard_normal(clean.shape))

    def residuals(p):
        return np.ravel(scipy_integrate.odeint(lotka_volterra, y0, t, args=tuple(p[k] for k in range(4))) - data)
    return Fit(residuals, np.array([0.8, 0.2, 1.2, 0.1]), (0.0, np.inf))


FITS = {"lotka_volterra": lotka_volterra_fit}


def fit_timings(fit: Fit, repeats: int) -> dict:
    """hessopt.least_squares against scipy's with its finite-difference Jacobian, interleaved."""
    optimize = optional("scipy.optimize")
    runs = {"hessopt": lambda: hessopt.least_squares(fit.residuals, x0=fit.x0, bounds=fit.bounds),
            "scipy 2-point": lambda: optimize.least_squares(fit.residuals, fit.x0, bounds=fit.bounds)}
    seconds, results = {name: [] for name in runs}, {}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            results[name] = run()
            seconds[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times), results[name]) for name, times in seconds.items()}


def report_fit(name: str, timings: dict) -> None:
    print(f"\nfit: {name}")
    scipy_x = timings["scipy 2-point"][1].x
    base = timings["scipy 2-point"][0]
    for label, (seconds, result) in timings.items():
        difference = np.max(np.abs(result.x - scipy_x) / np.abs(scipy_x))
        print(f"  {label:<14} {seconds:8.3f} s {seconds / base:7.2f}x scipy   nfev {result.nfev:4d}   "
              f"cost {result.cost:.10g}   x differs from scipy's by {difference:.1e}   {result.message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default=",".join(systems()), help="comma-separated systems of (a)")
    parser.add_argument("--fits", default=",".join(FITS), help="comma-separated fits of (b)")
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()
    print(f"(a) odeint's derivatives: median of {arguments.repeats} interleaved rounds"
          + ("" if jax is not None else " (JAX not installed)"))
    chosen = systems()
    for name in filter(None, arguments.systems.split(",")):
        report_derivatives(name, derivative_timings(chosen[name], arguments.repeats))
    print(f"\n(b) fits: median of {arguments.repeats} interleaved runs")
    for name in filter(None, arguments.fits.split(",")):
        report_fit(name, fit_timings(FITS[name](), arguments.repeats))


if __name__ == "__main__":
    main()
