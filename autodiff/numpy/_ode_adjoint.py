"""The checkpointed adjoint of odeint: the first derivatives of every input from one backward
integration of the adjoint, for cotangents on plain arrays.

The adjoint ``a = dL/dy`` obeys ``da/dt = -a J_y`` between the output times and jumps by the output
cotangent at each; the parameters' cotangents are ``integral of a J_args dt`` (Pontryagin et al.
1962; Chen et al. 2018, "Neural ordinary differential equations"). Both need y(t) at the times the
backward integration asks for. Integrating y backward with them (as ``jax.experimental.ode`` does)
is unstable for a dissipative system: a stiff one's fast modes, damped forward, grow backward.
Here y comes from checkpoints instead (Hindmarsh et al. 2005, "SUNDIALS", section 5.2; Cao, Li,
Petzold and Serban 2003, "Adjoint sensitivity analysis for differential-algebraic equations"):
one forward solve by scipy's LSODA keeps each step's interpolating polynomial (its Nordsieck
history), the interpolant LSODA itself evaluates between its steps, and the backward integration
reads y from them. The rates ``a J_y`` and ``a J_args`` are one vector-Jacobian product of ``func``,
replayed (``_ode_replay``); LSODA's stiff method gets ``J_y^T`` for its Newton iteration.
"""
from __future__ import annotations

import bisect
import functools
import importlib
from collections.abc import Callable

import numpy as _np

from ._ode_replay import DENSE_JACOBIAN_LIMIT, banded

# the smallest rtol scipy.integrate.LSODA takes without a warning
_SMALLEST_RTOL = 100 * _np.finfo(float).eps


class ForwardSolution:
    """y(t) between ``t0`` and ``t_end``: LSODA (scipy.integrate.LSODA) stepped once over them, each
    step's Nordsieck history kept, to be evaluated as LSODA's own interpolation (its INTDY) does.

    ``rate(y, t)`` is dy/dt on plain arrays; ``options`` are odeint's (``hmax``, ``hmin``, ``h0``,
    ``ml`` and ``mu`` carry over; the others are for odeint's own loop over the output times).

    Raises
    ------
    RuntimeError
        When LSODA fails, with its message.
    """

    def __init__(self, rate: Callable, y0, t0: float, t_end: float, rtol, atol, options: dict):
        lsoda = importlib.import_module("scipy.integrate").LSODA
        rtol = 1.49012e-8 if rtol is None else _np.maximum(rtol, _SMALLEST_RTOL)
        atol = 1.49012e-8 if atol is None else atol
        solver = lsoda(lambda t, y: rate(y, t), t0, y0, t_end, rtol=rtol, atol=atol, **_lsoda_options(options))
        history = _history_reader(solver, getattr(getattr(solver, "_lsoda_solver", None), "_integrator", None))
        self.ends, self.pieces = [t0], []
        while solver.status == "running":
            message = solver.step()
            if solver.status == "failed":
                raise RuntimeError(f"autodiff: odeint's adjoint: the forward solve for its checkpoints failed "
                                   f"at t = {solver.t}: {message}")
            self.ends.append(solver.t)
            self.pieces.append(history())
        self._last_t, self._last_y, self._step = None, None, 0  # LSODA asks again for the time it has just asked for

    def __call__(self, t: float) -> _np.ndarray:
        if t == self._last_t:
            return self._last_y
        k, ends = self._step, self.ends
        if not ends[k] < t <= ends[k + 1]:  # not in the step of the last call: look it up (else the nearest)
            k = self._step = bisect.bisect_left(ends, t, 1, len(self.pieces)) - 1
        columns, step, powers = self.pieces[k]
        y = (((t - ends[k + 1]) / step) ** powers) @ columns
        self._last_t, self._last_y = t, y
        return y


def _history_reader(solver, integrator) -> Callable:
    """A function giving, after each step of the scipy.integrate.LSODA ``solver``, the step's
    interpolant as (columns, h, powers): y(t) = sum_j ((t - t_step_end) / h) ** j columns[j].

    Read from LSODA's work arrays (``integrator``'s, where scipy 1.x keeps them) as its INTDY reads
    them (Hindmarsh 1983, "ODEPACK"; lsoda.f's documented optional outputs): the Nordsieck history
    YH at RWORK(21), for the current order NQCUR = IWORK(15) and step HCUR = RWORK(12) -- one copy
    per step, where scipy's own ``dense_output()`` builds an object around the same numbers (with
    the last step's order). Through ``dense_output()`` when ``integrator`` has no work arrays."""
    if not (hasattr(integrator, "rwork") and hasattr(integrator, "iwork")):
        def from_dense_output():
            dense = solver.dense_output()
            return dense.yh.T.copy(), dense.h, _powers(dense.yh.shape[1])
        return from_dense_output
    rwork, iwork, n = integrator.rwork, integrator.iwork, solver.n

    def from_work_arrays():
        order = int(iwork[14])
        return rwork[20:20 + (order + 1) * n].reshape(order + 1, n).copy(), rwork[11], _powers(order + 1)
    return from_work_arrays


@functools.cache
def _powers(count: int) -> _np.ndarray:
    """0, 1, ..., count - 1 as floats: the powers of a Nordsieck history's columns."""
    return _np.arange(float(count))


def _lsoda_options(options: dict) -> dict:
    """odeint's options as scipy.integrate.LSODA's."""
    names = {"hmax": "max_step", "hmin": "min_step", "h0": "first_step", "ml": "lband", "mu": "uband"}
    chosen = {names[name]: value for name, value in options.items() if name in names and value}
    if chosen.get("max_step") is None:
        chosen.pop("max_step", None)
    return chosen


def adjoint_cotangents(g, y0, t, rate: Callable, products: Callable, jacobians: Callable, sizes: list, rtol, atol,
                       options: dict) -> tuple:
    """The adjoint at t[0] (before ``g[:, 0]``), shape (batch, n), and the cotangents of the
    differentiated arguments (of ``sizes`` entries each), each (batch, size), for the output
    cotangents ``g`` (batch, len(t), n).

    On plain arrays: ``rate(y, t)`` is dy/dt; ``products(y, t, a)`` is [a J_y, a J_args], each
    raveled, for a of shape (batch, n); ``jacobians(y, t)`` is [J_y, J_args] (n rows). Between consecutive output
    times, one integration of [a, the arguments' cotangents] in the reversed time s = -t, LSODA
    restarted at each (at order 1): a jumps there, which a multistep method's history cannot carry.
    Measured on the 50-state chain of ``bench_fitting`` (770 evaluations in 20 intervals, the
    forward solve 447): integrating the continuous a - (the jumps to come) through the output
    times instead took 1,469 and failed on Robertson's kinetics (its rate jumps there), and
    DOP853, which restarts without a history, 760.

    Raises
    ------
    RuntimeError
        When an integration fails (LSODA's message says why).
    """
    batch, steps, n = g.shape
    solution = ForwardSolution(rate, y0, t[0], t[-1], rtol, atol, options)
    size = batch * (n + sum(sizes))

    def backward_rate(state, s):
        return products(solution(-s), -s, state[:batch * n].reshape(batch, n))

    settings = {**{name: value for name, value in options.items() if name not in ("ml", "mu", "Dfun")},
                **_backward_jacobian(lambda s: jacobians(solution(-s), -s), batch, n, sizes, size)}
    tolerances = {"rtol": _adjoint_tolerance(rtol, batch, size), "atol": _adjoint_tolerance(atol, batch, size)}
    solve = importlib.import_module("scipy.integrate").odeint
    a, parameters = _np.zeros((batch, n)), _np.zeros(size - batch * n)
    for i in range(steps - 1, 0, -1):
        a = a + g[:, i]
        states, report = solve(backward_rate, _np.concatenate([a.ravel(), parameters]), [-t[i], -t[i - 1]],
                               tcrit=[-t[i - 1]], full_output=True, **tolerances, **settings)
        if report["message"] != "Integration successful.":
            raise RuntimeError(f"autodiff: odeint's adjoint: the backward integration from t = {t[i]} to "
                               f"{t[i - 1]} failed: {report['message']}")
        a, parameters = states[1, :batch * n].reshape(batch, n), states[1, batch * n:]
    ends = _np.cumsum([0] + [batch * k for k in sizes])
    return a, [parameters[start:end].reshape(batch, -1) for start, end in zip(ends[:-1], ends[1:])]


def _backward_jacobian(jacobians: Callable, batch: int, n: int, sizes: list, size: int) -> dict:
    """odeint's options giving LSODA's stiff method the Jacobian of the adjoint's rate: exact for
    a state of at most ``DENSE_JACOBIAN_LIMIT`` entries (d(a J_y)/da and d(a J_args)/da, each the
    transposed Jacobian once per adjoint), else its adjoints' blocks J_y^T in banded storage."""
    if size > DENSE_JACOBIAN_LIMIT:
        return {"Dfun": lambda state, s: banded(jacobians(s)[:, :n].T, batch, size), "ml": n - 1, "mu": n - 1}
    ends = _np.cumsum([0, n] + list(sizes))
    identity = _np.eye(batch)

    def exact(state, s):
        full = jacobians(s)
        matrix = _np.zeros((size, size))
        matrix[:, :batch * n] = _np.concatenate([_np.kron(identity, full[:, start:end].T)
                                                 for start, end in zip(ends[:-1], ends[1:])])
        return matrix
    return {"Dfun": exact}


def _adjoint_tolerance(tolerance, batch: int, size: int):
    """A tolerance per equation for the adjoint state (``size`` entries): the adjoints' as y's, the
    arguments' cotangents' the smallest of them."""
    if tolerance is None or _np.ndim(tolerance) == 0:
        return tolerance
    tolerance = _np.asarray(tolerance, dtype=float)
    return _np.concatenate([_np.tile(tolerance, batch), _np.full(size - batch * tolerance.size, tolerance.min())])
