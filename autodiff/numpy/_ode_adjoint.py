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
import importlib
from collections.abc import Callable

import numpy as _np

from ._ode_replay import Dynamics, banded

# the smallest rtol scipy.integrate.LSODA takes without a warning
_SMALLEST_RTOL = 100 * _np.finfo(float).eps


class ForwardSolution:
    """y(t) between ``t0`` and ``t_end``: scipy.integrate.LSODA stepped once over them, each step's
    polynomial kept (the interpolant of LSODA's own dense output).

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
        self.ends, self.steps, self.histories, self.powers = [t0], [], [], []
        while solver.status == "running":
            message = solver.step()
            if solver.status == "failed":
                raise RuntimeError(f"autodiff: odeint's adjoint: the forward solve for its checkpoints failed "
                                   f"at t = {solver.t}: {message}")
            dense = solver.dense_output()
            self.ends.append(dense.t)
            self.steps.append(dense.h)
            self.histories.append(dense.yh)
            self.powers.append(dense.p.astype(float))

    def __call__(self, t: float) -> _np.ndarray:
        k = min(max(bisect.bisect_left(self.ends, t), 1), len(self.steps)) - 1
        return self.histories[k] @ (((t - self.ends[k + 1]) / self.steps[k]) ** self.powers[k])


def _lsoda_options(options: dict) -> dict:
    """odeint's options as scipy.integrate.LSODA's."""
    names = {"hmax": "max_step", "hmin": "min_step", "h0": "first_step", "ml": "lband", "mu": "uband"}
    chosen = {names[name]: value for name, value in options.items() if name in names and value}
    if chosen.get("max_step") is None:
        chosen.pop("max_step", None)
    return chosen


def adjoint_cotangents(g, ans, y0, t, args: tuple, vjp_dynamics: Dynamics, state_jacobian: Callable,
                       cotangent_sizes: int, rtol, atol, options: dict, rate: Callable):
    """The adjoint at t[0] (before ``g[:, 0]``), shape (batch, n), and the cotangents of the
    differentiated arguments (as ``vjp_dynamics`` lays them out) for the output cotangents ``g``
    (batch, len(t), n).

    ``vjp_dynamics(z, t, *args)`` is [a J_y, a J_args] raveled for z = [y, a raveled], ``batch *
    cotangent_sizes`` entries after a J_y's; ``state_jacobian(y, t)`` is J_y on plain arrays. Between
    consecutive output times, one integration of [a, the arguments' cotangents] in the reversed
    time s = -t.
    """
    batch, steps, n = g.shape
    solution = ForwardSolution(rate, y0, t[0], t[-1], rtol, atol, options)
    example = _np.concatenate([y0, _np.zeros(batch * n)])
    products = vjp_dynamics.compiled(example, t[0], args)

    def backward_rate(state, s):
        return products(_np.concatenate([solution(-s), state[:batch * n]]), -s)

    def backward_jacobian(state, s):
        return banded(state_jacobian(solution(-s), -s).T, batch, state.size)

    solve = importlib.import_module("scipy.integrate").odeint
    a, parameters = _np.zeros((batch, n)), _np.zeros(batch * cotangent_sizes)
    tolerances = {"rtol": _adjoint_tolerance(rtol, batch, cotangent_sizes),
                  "atol": _adjoint_tolerance(atol, batch, cotangent_sizes)}
    settings = {name: value for name, value in options.items() if name not in ("ml", "mu", "Dfun")}
    for i in range(steps - 1, 0, -1):
        a = a + g[:, i]
        state = solve(backward_rate, _np.concatenate([a.ravel(), parameters]), [-t[i], -t[i - 1]],
                      Dfun=backward_jacobian, ml=n - 1, mu=n - 1, tcrit=[-t[i - 1]], **tolerances, **settings)[1]
        a, parameters = state[:batch * n].reshape(batch, n), state[batch * n:]
    return a, parameters


def _adjoint_tolerance(tolerance, batch: int, cotangent_sizes: int):
    """A tolerance per equation, for the adjoint state: the adjoint's as y's, the parameter
    cotangents' the smallest of them."""
    if tolerance is None or _np.ndim(tolerance) == 0:
        return tolerance
    tolerance = _np.asarray(tolerance, dtype=float)
    return _np.concatenate([_np.tile(tolerance, batch), _np.full(batch * cotangent_sizes, tolerance.min())])
