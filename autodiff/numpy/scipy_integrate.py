"""Differentiable ``scipy.integrate`` (``autodiff.numpy.scipy_integrate``): ``odeint``.

scipy.integrate's functions are Python code that turns its input into ndarrays, so no engine can
see through them: on a tracked Tensor, ``scipy.integrate.odeint(func, y0, t)`` raises a TypeError
naming the version here. ``odeint`` keeps scipy's signature and values: they are scipy's own
(LSODA, imported when first called), with ``func`` evaluated on plain arrays.

The derivatives in ``y0``, ``t`` and the arrays of ``args`` come from one of two integrations,
each a few solves' worth (not one recorded tape per step):

- the forward sensitivities (Hindmarsh et al. 2005, "SUNDIALS", section 5): the tangents of ``y``
  in every differentiated direction, whose rate is ``df/dy S + df/dargs P`` (one Jacobian-vector
  product batched over the directions), integrated with ``y`` in one call of ``odeint`` itself,
  LSODA's error test on ``y`` alone; the gradient contracts them with the output cotangents, and
  a Jacobian of many outputs takes them all from that one integration. Written with the engine's
  ops, they differentiate again: Hessians, forward mode (one direction, a JVP per step).
- the continuous adjoint (Pontryagin et al. 1962; Chen et al. 2018, "Neural ordinary differential
  equations"): ``a = dL/dy`` integrated backward between the output times, ``da/dt = -a df/dy``,
  with the arguments' cotangents ``a df/dargs``; y comes from checkpoints (``_ode_adjoint``), not
  from integrating it backward too, which is unstable for dissipative and stiff systems. First
  order only: a cotangent that is differentiated again takes the sensitivities.

``derivatives="auto"`` chooses by the work of their rates per evaluation (``ADJOINT_WORK_RATIO``,
a measure tuned when the sensitivities' rate formed the n x (n + p) Jacobian and multiplied it by
every direction; the adjoint's is one vector-Jacobian product per cotangent); "forward" and
"adjoint" choose by name. Either way the rates are ``func``'s Jacobian-vector or vector-Jacobian
products traced once and replayed as
NumPy programs (``_ode_replay``), with their Jacobians for LSODA's stiff method. A derivative's
integration that fails raises (a RuntimeError with LSODA's message) instead of giving wrong
numbers; it may take ten times ``mxstep`` steps per output interval.

The derivatives are those of the exact solution, computed to the tolerances ``rtol`` and ``atol``:
they agree with finite differences of the computed values only as far as those tolerances allow.
A Tensor that ``func`` reads from outside (a closure) must be passed through ``args`` to be
differentiated; a tracked one read from outside is refused rather than silently treated as constant.
``full_output=True`` returns scipy's ``(y, infodict)``: the report of the values' solve, which is
scipy's own (the derivatives' integrations are further solves).
Tolerances scipy would take silently or with only a warning (NaN, inf, negative, both zero) are
refused by name.

Examples
--------
>>> import numpy as np
>>> import autodiff as ad
>>> from autodiff.numpy import scipy_integrate
>>> decay = lambda y, t, k: -k * y
>>> t = np.array([0.0, 1.0])
>>> final = lambda k: scipy_integrate.odeint(decay, np.array([1.0]), t, args=(k,), rtol=1e-12, atol=1e-12)[-1, 0]
>>> round(float(ad.grad(final)(2.0)), 8), round(float(-np.exp(-2.0)), 8)    # d/dk exp(-k) = -exp(-k)
(-0.13533528, -0.13533528)
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as _np

from ..core import Primitive, Tensor, note_read, shape_of, tracked, value_of
from ..transforms import linearize, vjp  # not circular: autodiff.numpy does not import this module (autodiff does)
from . import ops
from ._ode_adjoint import adjoint_cotangents
from ._ode_replay import Dynamics, check_fresh, jacobian_rows, replayed_rate

if TYPE_CHECKING:
    from ..typing import Array, ArrayLike

__all__ = ["odeint"]

# scipy.integrate.odeint's keywords that change its meaning, which the adjoint does not follow
_UNSUPPORTED = ("Dfun", "col_deriv", "tfirst")
# how odeint's derivatives are computed (the ``derivatives`` option)
DERIVATIVES = ("auto", "forward", "adjoint")
# scipy's steps per output interval when mxstep is 0 (the default), and how many times that a
# derivative's integration may take
DEFAULT_MXSTEP, DERIVATIVE_STEPS = 500, 10
# scipy's rtol and atol when None is given (LSODA's default)
DEFAULT_TOLERANCE = 1.49012e-8
# the absolute tolerance of the forward sensitivities, with rtol 0: left out of LSODA's error test
UNTESTED = 1e300


def _scipy_odeint():
    """scipy.integrate.odeint, imported on first use."""
    try:
        return importlib.import_module("scipy.integrate").odeint
    except ImportError:
        raise ImportError("autodiff.numpy.scipy_integrate.odeint integrates with scipy.integrate.odeint: "
                          "install scipy") from None


def _rate(func: Callable, y, t, args: tuple):
    """``func(y, t, *args)`` as an ndarray of ``y``'s shape, or an error naming the problem."""
    rate = func(y, t, *args)
    if isinstance(rate, Tensor) and tracked(rate):
        raise TypeError("autodiff: odeint's func reads a tracked Tensor that is not among its arguments "
                        "(a closure): pass it through args= so that it is differentiated")
    rate = _np.asarray(value_of(rate))
    if rate.shape != _np.shape(y):
        raise ValueError(f"autodiff: odeint's func must return dy/dt of y0's shape {_np.shape(y)}, not of "
                         f"shape {rate.shape}")
    return rate


def _solve(y0, t, *args, func: Callable, rtol, atol, options: dict, derivatives: str = "auto",
           report: dict | None = None):
    """The values: scipy.integrate.odeint with ``func`` on plain arrays; scipy's infodict of the solve
    goes into ``report`` when one is given (``full_output``); ``derivatives`` is for the backward
    pass. A derivative system (``Dynamics``) runs as its replayed program, with its Jacobian for
    LSODA's stiff method, and its failure raises (a RuntimeError with LSODA's message) rather than
    give wrong derivatives."""
    solve = _scipy_odeint()
    if isinstance(func, Dynamics):
        options = {**_derivative_options(options), **func.stiff_jacobian(y0, t[0], args)}
        values, infodict = solve(func.compiled(y0, t[0], args), y0, t, rtol=rtol, atol=atol, full_output=True,
                                 **options)
        if len(t) > 1 and infodict["message"] != "Integration successful.":
            raise RuntimeError(f"autodiff: odeint's derivatives: the integration of the forward sensitivities "
                               f"failed: {infodict['message']}")
        return values
    rate = lambda y, s: _rate(func, y, s, args)  # noqa: E731
    if report is None:
        return solve(rate, y0, t, rtol=rtol, atol=atol, **options)
    values, infodict = solve(rate, y0, t, rtol=rtol, atol=atol, full_output=True, **options)
    report.update(infodict)
    return values


def _derivative_options(options: dict) -> dict:
    """The values' options for a derivative's integration, with ``DERIVATIVE_STEPS`` times their
    steps per output interval (``mxstep``): its larger system may need more than the values'."""
    return {**options, "mxstep": DERIVATIVE_STEPS * (options.get("mxstep") or DEFAULT_MXSTEP)}


def _derivative_settings(kwargs: dict) -> dict:
    """The settings of the derivatives' integrations: the values' own, but for their report and
    the choice of method."""
    return {name: value for name, value in kwargs.items() if name not in ("report", "derivatives")}


class _Odeint(Primitive):
    """odeint as one record over (y0, t, *args), whose backward pass gives all their cotangents from one
    integration of the forward sensitivities or of the adjoint."""

    def __init__(self):
        super().__init__(_solve, "odeint")
        self.joint = True

    def backward(self, g, ans, args, kwargs, parents):
        settings = _derivative_settings(kwargs)
        if _uses_adjoint(kwargs.get("derivatives", "auto"), g, ans, args, parents):
            cotangents = _adjoint_cotangents(g, ans, *args, parents=parents, **settings)
        else:
            cotangents = _sensitivity_cotangents(g, ans, *args, parents=parents, **settings)
        return [cotangents[i] for i in parents]

    def forward(self, tangents, ans, args, kwargs):
        return _tangent(tangents, ans, *args, **_derivative_settings(kwargs))


_odeint = _Odeint()


def _with_chosen(args: tuple, chosen_places: tuple, chosen: tuple) -> list:
    """``args`` with the entries at ``chosen_places`` replaced by ``chosen``."""
    full = list(args)
    for k, value in zip(chosen_places, chosen):
        full[k] = value
    return full


def _root_and_key(func: Callable) -> tuple:
    """The user's function under ``func`` (whose programs it is) and ``func``'s key among them."""
    return (func.func, func.key) if isinstance(func, Dynamics) else (func, ())


def _sensitivity_dynamics(func: Callable, n: int, m: int, moved: tuple, count: int) -> Dynamics:
    """The forward sensitivity system of ``func`` for m directions: the state [y, S] (S of shape
    (m, n), a tangent of y per row), with ``args`` and the directions' tangents of each of
    ``args[moved]`` (P, each of shape (m,) + its shape) as arguments; d/dt of it is
    [f, [S, P] [J_y, J_args]^T], the products with all m directions as one Jacobian-vector product
    batched over them (``linearize``: replayed, the straight-line forward-mode program of ``func``
    on m-vectors, not n rows of its Jacobian assembled and multiplied)."""

    def rate(z, s, *all_args):
        args, along = all_args[:count], all_args[count:]
        f, push = linearize(lambda y, *chosen: func(y, s, *_with_chosen(args, moved, chosen)), z[:n],
                            *[args[k] for k in moved])
        return ops.concatenate([f, ops.reshape(push(ops.reshape(z[n:], (m, n)), *along), (-1,))])

    def block_jacobian(z, s, *all_args):
        return jacobian_rows(lambda y: func(y, s, *all_args[:count]), z[:n])

    root, key = _root_and_key(func)
    return Dynamics(rate, ("sensitivities", key, n, m, moved, count), root, block_jacobian)


def _jacobians(func: Callable, y, s, args: tuple, moved: tuple) -> tuple:
    """f and [J_y, J_args[moved]] at (y, s): the Jacobian in y and in the entries of ``args[moved]``
    (raveled, concatenated), n rows from one sweep batched over them."""
    n = shape_of(y)[0]
    f, pullback = vjp(lambda y, *chosen: func(y, s, *_with_chosen(args, moved, chosen)), y, *[args[k] for k in moved])
    rows = pullback(_np.eye(n))
    return f, ops.concatenate([rows[0]] + [ops.reshape(row, (n, -1)) for row in rows[1:]], axis=1)


def _error_test_on_y(tolerance, n: int, m: int, sensitivities: float) -> _np.ndarray:
    """One of LSODA's tolerances for the state [y, S] of the forward sensitivities (S: m blocks of
    n): y's own (None: scipy's default), and ``sensitivities`` for every entry of S."""
    own = DEFAULT_TOLERANCE if tolerance is None else _np.asarray(value_of(tolerance), dtype=_np.float64)
    return _np.concatenate([_np.broadcast_to(own, (n,)), _np.full(n * m, sensitivities)])


def _sensitivities(y0, t, *args, start, tangents, moved: tuple, func: Callable, rtol, atol, options: dict):
    """The tangents of y(t_i), shape (len(t), m, n), for m directions: ``start`` (m, n) the initial
    tangents of y, ``tangents`` (m, p) those of ``args[moved]`` (their entries raveled and
    concatenated). One integration of the forward sensitivities with y (Hindmarsh et al. 2005,
    "SUNDIALS", section 5), by odeint itself: it differentiates again.

    LSODA's error test is on y alone (the sensitivities' atol is ``UNTESTED``), as CVODES allows
    (``CVodeSetSensErrCon``): the integration then takes the values' own steps, and a Jacobian of
    m columns costs about one solve's evaluations of a rate m + 1 times wider, instead of the
    1.8 times as many steps the oscillating sensitivities of Lotka-Volterra asked for. Their
    error is that of the values, differentiated: the gradients of the four systems of
    ``bench_fitting`` are as close to their tight-tolerance values either way."""
    n, m = shape_of(y0)[0], shape_of(start)[0]
    dynamics = _sensitivity_dynamics(func, n, m, moved, len(args))
    chosen = [args[k] for k in moved]
    ends = _np.cumsum([0] + [math.prod(shape_of(c)) for c in chosen])
    along = [ops.reshape(tangents[:, a:b], (m,) + shape_of(c)) for a, b, c in zip(ends[:-1], ends[1:], chosen)]
    states = _odeint(ops.concatenate([y0, ops.reshape(start, (-1,))]), t, *args, *along, func=dynamics,
                     rtol=_error_test_on_y(rtol, n, m, 0.0), atol=_error_test_on_y(atol, n, m, UNTESTED),
                     options=options)
    return ops.reshape(states[:, n:], (shape_of(t)[0], m, n))


def _initial_rate(func: Callable, y0, t, args: tuple):
    """f(y0, t[0]), after checking that the programs kept for a user's ``func`` are still its own."""
    if not isinstance(func, Dynamics):
        check_fresh(func, value_of(y0), value_of(t)[0], tuple(value_of(a) for a in args))
    return func(y0, t[0], *args)


def _tangent(tangents: dict, ans, y0, t, *args, func: Callable, rtol, atol, options: dict):
    """The output tangent for the input tangents ``{argnum: tangent}`` of (y0, t, *args): the forward
    sensitivities in that one direction, from the initial tangent moved by t[0]'s, plus f dt at
    each output time."""
    steps, n = shape_of(ans)
    moved = tuple(i - 2 for i in sorted(tangents) if i >= 2)
    start = tangents.get(0, _np.zeros(n))
    f0 = _initial_rate(func, y0, t, args)
    if 1 in tangents:
        start = start - f0 * tangents[1][0]
    directions = ops.concatenate([_np.zeros((1, 0))] + [ops.reshape(tangents[k + 2], (1, -1)) for k in moved], axis=1)
    tangent = _sensitivities(y0, t, *args, start=ops.reshape(start, (1, n)), tangents=directions, moved=moved,
                             func=func, rtol=rtol, atol=atol, options=options)[:, 0]
    if 1 in tangents:
        rates = ops.stack([func(ans[i], t[i], *args) for i in range(steps)])
        tangent = tangent + rates * tangents[1][:, None]
    return tangent


def _sensitivity_cotangents(g, ans, y0, t, *args, parents: tuple, func: Callable, rtol, atol,
                            options: dict) -> dict:
    """The cotangents of (y0, t, *args) for the output cotangent ``g`` (shape (..., len(t), n)) from
    the forward sensitivities in the directions of every differentiated input (y0's entries, the
    arguments' entries, and t[0] when y0 is not differentiated): dy(t_i)/dt_i is f(y_i, t_i), and
    dy(t_i)/dt_0 the sensitivity to y0 times -f(y0, t_0)."""
    steps, n = shape_of(ans)
    batch_shape = shape_of(g)[:-2]
    g = ops.reshape(g, (math.prod(batch_shape), steps, n))
    moved = tuple(i - 2 for i in sorted(parents) if i >= 2)
    sizes = [math.prod(shape_of(args[k])) for k in moved]
    along_t0 = 1 in parents and 0 not in parents
    m = (n if 0 in parents else 0) + sum(sizes) + along_t0
    f0 = _initial_rate(func, y0, t, args)
    rows = [_np.eye(n)] if 0 in parents else []
    start = ops.concatenate(rows + [_np.zeros((sum(sizes), n))] + ([-f0[None]] if along_t0 else []))
    offset = n if 0 in parents else 0
    tangents = _np.eye(m)[:, offset:offset + sum(sizes)]
    sensitivities = _sensitivities(y0, t, *args, start=start, tangents=tangents, moved=moved, func=func,
                                   rtol=rtol, atol=atol, options=options)
    along = ops.einsum("bsn,smn->bm", g, sensitivities)
    cotangents, offset = {}, 0
    if 0 in parents:
        cotangents[0], offset = along[:, :n], n
    for k, size in zip(moved, sizes):
        cotangents[k + 2], offset = along[:, offset:offset + size], offset + size
    if 1 in parents:
        rates = ops.stack([func(ans[i], t[i], *args) for i in range(steps)])
        t_bar = ops.sum(g * rates, axis=-1)
        moved_t0 = along[:, offset] if along_t0 else -ops.sum(along[:, :n] * f0, axis=-1)
        cotangents[1] = ops.concatenate([t_bar[:, :1] + moved_t0[:, None], t_bar[:, 1:]], axis=1)
    return {i: ops.reshape(c, batch_shape + shape_of(([y0, t] + list(args))[i])) for i, c in cotangents.items()}


# The adjoint is chosen when the forward sensitivities' work per evaluation (a Jacobian of n (n + p)
# entries and its product with m tangents: n (n + p + m)) is more than this many times the adjoint's
# (batch (n + p)): the sensitivities integrate once, the adjoint restarts at every output time and
# reads y from checkpoints of a further forward solve. Measured again with the sensitivities' rate
# one batched JVP, on the saturating chain (2 parameters, 21 times, a scalar loss): the forward
# sensitivities are cheaper up to 35 states (ratio 70), the adjoint from 40 (ratio 80; 50 states:
# 12-15 solves against 9-11). 48 is kept: a stiff system's sensitivities beyond DENSE_JACOBIAN_LIMIT
# entries get only the block-diagonal Jacobian for LSODA's Newton iteration (many more steps), the
# adjoint of one cotangent its exact one.
ADJOINT_WORK_RATIO = 48


def _uses_adjoint(choice: str, g, ans, args: tuple, parents: tuple) -> bool:
    """Whether the backward pass integrates the adjoint (else the forward sensitivities): as
    ``choice`` says, or when "auto" by the work of their rates (``ADJOINT_WORK_RATIO``); never when
    the cotangents are differentiated again (the checkpointed adjoint is first order: it reads y's
    values)."""
    if any(isinstance(x, Tensor) and tracked(x) for x in (g, ans, *args)):
        return False
    if choice != "auto":
        return choice == "adjoint"
    steps, n = shape_of(ans)
    batch = math.prod(shape_of(g)[:-2])
    p = sum(math.prod(shape_of(args[i])) for i in parents if i >= 2)
    m = (n if 0 in parents else 0) + p + (1 in parents and 0 not in parents)
    return n * (n + p + m) > ADJOINT_WORK_RATIO * batch * (n + p)


def _adjoint_dynamics(func: Callable, n: int, batch: int, moved: tuple, count: int) -> Dynamics:
    """The adjoint's rates for a batch of adjoints: ``rate(y, s, a, *args)`` (a of shape (batch, n))
    is [a J_y, a J_args], each raveled (the cotangents of y, then those of each of ``args[moved]``
    for the whole batch), one vector-Jacobian product of ``func`` batched over the adjoints (even
    one: the sweep of a batch adds its slice cotangents simply)."""

    def rate(y, s, adjoints, *args):
        _, pullback = vjp(lambda y, *chosen: func(y, s, *_with_chosen(args, moved, chosen)), y,
                          *[args[k] for k in moved])
        return ops.concatenate([ops.reshape(p, (-1,)) for p in pullback(adjoints)])

    root, key = _root_and_key(func)
    return Dynamics(rate, ("adjoint", key, n, batch, moved, count), root)


def _adjoint_raw(g, ans, y0, t, *args, func: Callable, parents: tuple, rtol, atol, options: dict):
    """The cotangents of the differentiated (y0, t, *args) for the cotangents ``g`` (batch, len(t),
    n), each raveled, side by side: (batch, their total size). See ``_ode_adjoint``."""
    steps, n = ans.shape
    batch = g.shape[0]
    moved = tuple(i - 2 for i in sorted(parents) if i >= 2)
    if not isinstance(func, Dynamics):
        check_fresh(func, y0, t[0], args)
    root, key = _root_and_key(func)
    jacobians = Dynamics(lambda y, s, *args: _jacobians(func, y, s, args, moved)[1],
                         ("jacobians", key, n, moved, len(args)), root)
    # func's program, unchecked: the values' solve has checked its rate (a checked rate costs as much again)
    rate = func.compiled(y0, t[0], args) if isinstance(func, Dynamics) else replayed_rate(func, y0, t[0], args)
    products = _adjoint_dynamics(func, n, batch, moved, len(args)).compiled(y0, t[0], args, (_np.zeros((batch, n)),))
    adjoint, in_args = adjoint_cotangents(g, y0, t, rate, products, jacobians.compiled(y0, t[0], args),
                                          [_np.size(args[k]) for k in moved], rtol, atol, _derivative_options(options))
    pieces = [adjoint + g[:, 0]] if 0 in parents else []
    if 1 in parents:
        rates = _np.stack([rate(ans[i], t[i]) for i in range(steps)])
        t_bar = _np.sum(g * rates, axis=-1)
        t_bar[:, 0] = -(adjoint @ rates[0])  # dy_0/dt_0 = 0: y(t_0) is y0
        pieces.append(t_bar)
    return _np.concatenate(pieces + in_args, axis=1)


_odeint_adjoint = Primitive(_adjoint_raw, "odeint's adjoint")  # first order: no derivative rules


def _adjoint_cotangents(g, ans, y0, t, *args, parents: tuple, func: Callable, rtol, atol, options: dict) -> dict:
    """The cotangents of (y0, t, *args) for the output cotangent ``g`` (shape (..., len(t), n)) from
    the checkpointed adjoint (one primitive: traces record it)."""
    steps, n = shape_of(ans)
    batch_shape = shape_of(g)[:-2]
    g = ops.reshape(g, (math.prod(batch_shape), steps, n))
    flat = _odeint_adjoint(g, ans, y0, t, *args, func=func, parents=parents, rtol=rtol, atol=atol, options=options)
    sizes = {0: n, 1: steps, **{i: math.prod(shape_of(args[i - 2])) for i in parents if i >= 2}}
    cotangents, offset = {}, 0
    for i in sorted(parents):
        cotangents[i], offset = flat[:, offset:offset + sizes[i]], offset + sizes[i]
    return {i: ops.reshape(c, batch_shape + shape_of(([y0, t] + list(args))[i])) for i, c in cotangents.items()}


def odeint(func: Callable, y0: ArrayLike, t: ArrayLike, args: tuple = (), rtol: ArrayLike | None = None,
           atol: ArrayLike | None = None, full_output: bool = False, derivatives: str = "auto",
           **kwargs: Any) -> Array | tuple[Array, dict]:
    """Integrate dy/dt = func(y, t, *args) from y(t[0]) = y0, as ``scipy.integrate.odeint``.

    Differentiable in ``y0``, ``t`` and each array of ``args`` by the forward sensitivities or the
    adjoint method (Pontryagin et al. 1962; Chen et al. 2018, "Neural ordinary differential
    equations"), their rates traced once per ``func`` and replayed: see the module docstring.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)``, dy/dt as an array of ``y0``'s shape, written with NumPy functions (it is
        evaluated on plain arrays for the values and on Tensors for the derivatives).
    y0 : array_like
        The initial state, 1-d and not empty.
    t : array_like
        The times at which to return the state, 1-d and increasing; ``t[0]`` is the initial time.
    args : tuple
        Further arguments of ``func``; the Tensors among them are differentiated.
    rtol, atol : float or array_like, optional
        scipy's tolerances (a number, or one per equation; None: 1.49012e-8), for the values and for
        the backward (adjoint) integration: finite, non-negative and not both 0 for an equation.
    full_output : bool, default False
        Also return scipy's infodict of the values' solve (``"message"``, the counts ``nst``,
        ``nfe``, ``nje``, the step sizes and orders, ...): see ``scipy.integrate.odeint``.
    derivatives : {"auto", "forward", "adjoint"}, default "auto"
        How the first derivatives are computed: the forward sensitivities, the checkpointed
        adjoint, or the cheaper of the two for the inputs differentiated (see the module
        docstring). A derivative that is differentiated again always takes the sensitivities.
    **kwargs
        scipy.integrate.odeint's other options (``mxstep``, ``hmax``, ...); ``Dfun``, ``col_deriv``
        and ``tfirst`` are refused.

    Returns
    -------
    Array, or (Array, dict) with ``full_output``
        Shape ``(len(t), len(y0))``: the state at each time, the first row ``y0``. A solve that
        fails warns (scipy's ``ODEintWarning``) and its report's ``"message"`` says why.

    Raises
    ------
    ValueError
        When ``y0`` is empty or not 1-d, ``t`` is not 1-d or not increasing, a tolerance is NaN,
        infinite, negative, 0 together with the other or of another length than ``y0``,
        ``derivatives`` is none of its values, or ``func`` returns another shape.
    RuntimeError
        When a derivative's integration fails (its message is LSODA's).
    TypeError
        For a tolerance that is not numbers.
    NotImplementedError
        For the options the adjoint does not follow.
    autodiff.UntraceableError
        For ``full_output`` under ``autodiff.function`` with ``y0``, ``t`` or ``args`` from the
        inputs: a replay could not report its own solve.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from autodiff.numpy import scipy_integrate
    >>> rotation = lambda y, t: np.stack([-y[1], y[0]])     # y = (cos t, sin t) from (1, 0)
    >>> ys = scipy_integrate.odeint(rotation, np.array([1.0, 0.0]), np.array([0.0, np.pi / 2]), rtol=1e-12, atol=1e-12)
    >>> np.round(ys, 8) + 0.0
    array([[1., 0.],
           [0., 1.]])
    >>> # the second coordinate at t = pi/2 moves with y0 as the rotation turns it: d/dy0 = (1, 0)
    >>> end = lambda y0: scipy_integrate.odeint(rotation, y0, np.array([0.0, np.pi / 2]), rtol=1e-12, atol=1e-12)[1, 1]
    >>> np.round(ad.grad(end)(np.array([1.0, 0.0])), 8) + 0.0
    array([1., 0.])
    >>> ys, report = scipy_integrate.odeint(rotation, np.array([1.0, 0.0]), np.array([0.0, 1.0]), full_output=True)
    >>> report["message"], report["nst"].shape          # and the steps taken up to each time after t[0]
    ('Integration successful.', (1,))
    """
    refused = [name for name in _UNSUPPORTED if kwargs.get(name)]
    if refused:
        raise NotImplementedError(f"autodiff: odeint does not support {', '.join(refused)} (the adjoint "
                                  "method differentiates the plain solution)")
    options = {name: value for name, value in kwargs.items() if name not in _UNSUPPORTED}
    y0, t = ops.as_array(y0), ops.as_array(t)
    if len(shape_of(y0)) != 1:
        raise ValueError(f"autodiff: odeint's y0 must be 1-d, not of shape {shape_of(y0)}")
    if shape_of(y0)[0] == 0:
        raise ValueError("autodiff: odeint's y0 is empty: there is no equation to integrate (scipy's "
                         "LSODA calls it 'Illegal input')")
    if len(shape_of(t)) != 1 or shape_of(t)[0] == 0:
        raise ValueError(f"autodiff: odeint's t must be a non-empty 1-d array of times, not of shape {shape_of(t)}")
    if _np.any(_np.diff(value_of(t)) <= 0):
        raise ValueError("autodiff: odeint's t must be increasing (for backward time, integrate "
                         "-func(y, -s) over s = -t)")
    _check_tolerances(rtol, atol, shape_of(y0)[0])
    if derivatives not in DERIVATIVES:
        raise ValueError(f"autodiff: odeint's derivatives must be one of {', '.join(map(repr, DERIVATIVES))}; "
                         f"got {derivatives!r}")
    y0 = y0 if isinstance(y0, Tensor) else _np.asarray(y0, dtype=_np.float64)
    t = t if isinstance(t, Tensor) else _np.asarray(t, dtype=_np.float64)
    report = {} if full_output else None
    values = _odeint(y0, t, *args, func=func, rtol=rtol, atol=atol, options=options, derivatives=derivatives,
                     report=report)
    if not full_output:
        return values
    if isinstance(values, Tensor):
        note_read(values, "odeint's full_output")   # a trace refuses: its replay would not report
    return values, report


def _check_tolerances(rtol, atol, n: int) -> None:
    """scipy's rtol and atol, each None, a number or n of them: finite, non-negative, and not both 0
    for an equation (LSODA's error test would divide by 0); a ValueError or TypeError naming them."""
    tolerances = [_tolerance(rtol, "rtol", n), _tolerance(atol, "atol", n)]
    both_zero = _np.flatnonzero(_np.broadcast_to((tolerances[0] == 0) & (tolerances[1] == 0), (n,)))
    if both_zero.size:
        raise ValueError(f"autodiff: odeint's rtol and atol are both 0 (for y[{both_zero[0]}]): LSODA's error "
                         "test needs one of them positive for every equation (scipy warns 'Illegal input' "
                         "and returns y0)")


def _tolerance(value, name: str, n: int) -> _np.ndarray:
    """One tolerance as a float array (None: scipy's default), or an error naming it."""
    if value is None:
        return _np.asarray(DEFAULT_TOLERANCE)
    try:
        tolerance = _np.asarray(value_of(value), dtype=_np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"autodiff: odeint's {name} must be a number or an array of numbers; got {value!r}") from None
    if tolerance.ndim > 1 or (tolerance.ndim == 1 and tolerance.size != n):
        raise ValueError(f"autodiff: odeint's {name} must be a number or an array of len(y0) = {n} numbers, "
                         f"not of shape {tolerance.shape}")
    if not _np.all(_np.isfinite(tolerance) & (tolerance >= 0)):
        raise ValueError(f"autodiff: odeint's {name} must be finite and non-negative; got {value!r}")
    return tolerance
