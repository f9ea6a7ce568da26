"""``autodiff.extend``: the vocabulary for new differentiable primitives (as ``autograd.extend``).

A primitive wraps a NumPy function; ``defvjp`` gives its reverse-mode rules and ``defjvp`` its
forward-mode ones, one per argument. A VJP rule ``vjp(g, ans, *args, **kwargs)`` maps the output
cotangent ``g`` to an argument's cotangent; ``g`` may carry leading batch axes (one sweep pushes a
whole batch of cotangents), so rules index axes from the end. A JVP rule ``jvp(t, ans, *args,
**kwargs)`` maps an argument's tangent ``t`` to the output's. Written with differentiable ops
(``autodiff.numpy``), rules are differentiable themselves, which gives every higher order.

>>> import numpy as np
>>> import autodiff as ad
>>> cube = primitive(lambda x: x ** 3, "cube")
>>> defvjp(cube, lambda g, ans, x: g * 3 * x ** 2)
>>> defjvp(cube, lambda t, ans, x: t * 3 * x ** 2)
>>> ad.hessian(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0]))   # the rules differentiate too
array([[ 6.,  0.],
       [ 0., 12.]])
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .core import Primitive, Tensor, concrete, record_constant, state, value_of

__all__ = ["primitive", "defvjp", "defjvp", "defderiv", "deflinear", "unbroadcast"]


def primitive(fun: Callable, name: str | None = None, tensor_fun: Callable | None = None,
              variadic: bool = False) -> Primitive:
    """A differentiable version of ``fun`` (rules to be added with defvjp and defjvp).

    ``tensor_fun``, used when a Tensor is among the arguments, may be a faster spelling of ``fun``
    for NumPy-typed values (``operator.mul`` for ``np.multiply``). A ``variadic`` primitive takes any
    number of array arguments and has one VJP and one JVP rule for all of them, called with the
    keyword ``argnum``.

    Parameters
    ----------
    fun : callable
        The NumPy function computing the value.
    name : str, optional
        The name shown in errors and on the tape (default: ``fun.__name__``).
    tensor_fun : callable, optional
        A faster spelling of ``fun`` for the raw values when Tensors are involved.
    variadic : bool, default False
        Whether it takes any number of array arguments (as ``np.stack``'s list).

    Returns
    -------
    Primitive
        Callable like ``fun``; on Tensors it returns Tensors and is recorded.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> cube = primitive(lambda x: x ** 3, "cube")
    >>> defvjp(cube, lambda g, ans, x: g * 3 * x ** 2)
    >>> ad.grad(lambda x: np.sum(cube(x)))(np.array([1.0, 2.0]))
    array([ 3., 12.])
    """
    prim = Primitive(fun, name, tensor_fun)
    prim.variadic = prim.joint = variadic  # the sweep calls a variadic rule through backward()
    prim.engine = sys._getframe(1).f_globals.get("__name__", "").startswith("autodiff.")
    return prim


def defvjp(prim: Primitive, *rules: Callable | None, broadcasting: bool = False) -> None:
    """Register one VJP rule per argument (None for a non-differentiable argument).

    A rule ``vjp(g, ans, *args, **kwargs)`` maps the output's cotangent ``g`` (possibly with
    leading batch axes) to the argument's. With ``broadcasting``, each rule's result is summed back
    to its argument's shape, as for an elementwise op whose arguments NumPy broadcasts.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> scaled = primitive(lambda x, a: a * x, "scaled")
    >>> defvjp(scaled, lambda g, ans, x, a: g * a, lambda g, ans, x, a: g * x, broadcasting=True)
    >>> float(ad.grad(lambda a: np.sum(scaled(np.array([1.0, 2.0]), a)))(3.0))   # summed to a's shape
    3.0
    """
    for i, rule in enumerate(rules):
        if rule is not None:
            prim.vjps[i] = _summed_to_argument(rule, i) if broadcasting else rule


def defjvp(prim: Primitive, *rules: Callable | None) -> None:
    """Register one JVP rule per argument (None for a non-differentiable argument).

    A rule ``jvp(t, ans, *args, **kwargs)`` maps the argument's tangent ``t`` to the output's.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> cube = primitive(lambda x: x ** 3, "cube")
    >>> defjvp(cube, lambda t, ans, x: t * 3 * x ** 2)
    >>> ad.jvp(cube, (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
    (array([1., 8.]), array([ 3., 12.]))
    """
    for i, rule in enumerate(rules):
        if rule is not None:
            prim.jvps[i] = rule


def defderiv(prim: Primitive, *derivatives: Callable | None) -> None:
    """An elementwise op: ``derivatives[i](ans, *args)`` is d ans / d args[i], elementwise.

    Registers the VJPs ``g * d`` (summed to each argument's shape when there are several) and the
    JVPs ``t * d``: one line per argument gives both modes.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> hyp = primitive(np.hypot, "hyp")
    >>> defderiv(hyp, lambda ans, x, y: x / ans, lambda ans, x, y: y / ans)
    >>> float(ad.grad(lambda x: hyp(x, 4.0))(3.0))
    0.6
    """
    broadcasting = len(derivatives) > 1
    for i, d in enumerate(derivatives):
        if d is not None:
            prim.vjps[i] = _times_summed(d, i) if broadcasting else _times(d)
            prim.jvps[i] = _times(d)


def deflinear(prim: Primitive) -> None:
    """An op linear in its first argument: its JVP is the op applied to the tangent.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> double = primitive(lambda x: 2 * x, "double")
    >>> deflinear(double)
    >>> ad.jvp(double, (np.array([1.0]),), (np.array([3.0]),))
    (array([2.]), array([6.]))
    """
    prim.jvps[0] = lambda t, ans, x, *args, **kwargs: prim(t, *args, **kwargs)


# The wrappers below read only shapes themselves: ``reads_of`` names the function whose reads count
# (``autodiff.residuals.values_read``), so that a tape keeps only the values that function reads.

def _times(d):
    def vjp(g, ans, *args):
        return g * d(ans, *args)
    vjp.reads_of = (d, 0)
    return vjp


def _times_summed(d, i):
    def vjp(g, ans, *args):
        gi = g * d(ans, *args)
        shape = args[i].shape
        return gi if gi.shape == shape else unbroadcast(gi, shape, g.ndim - ans.ndim)
    vjp.reads_of = (d, 0)
    return vjp


def _summed_to_argument(rule, i):
    def rule_then_unbroadcast(g, ans, *args, **kwargs):
        gi = rule(g, ans, *args, **kwargs)
        shape = args[i].shape
        return gi if gi.shape == shape else unbroadcast(gi, shape, g.ndim - ans.ndim)
    rule_then_unbroadcast.reads_of = (rule, 1)
    return rule_then_unbroadcast


def unbroadcast(g: Any, shape: tuple, nb: int) -> Any:
    """Sum ``g`` (``nb`` batch axes, then a broadcast of ``shape``) back to ``batch + shape``.

    The batch axes are never summed. ``g`` is an array, or a Tensor when an outer tape records the
    sweep: both have the ``sum`` and ``reshape`` methods this uses. VJP rules of broadcasting ops
    call it to return a cotangent of their argument's shape.

    Examples
    --------
    >>> import numpy as np
    >>> unbroadcast(np.ones((2, 3)), (3,), 0)
    array([2., 2., 2.])
    >>> unbroadcast(np.ones((4, 2, 3)), (1, 3), 1).shape    # 4 batch rows kept
    (4, 1, 3)
    """
    gshape = g.shape
    shape = tuple(shape)
    if gshape[nb:] == shape:
        return g
    extra = len(gshape) - nb - len(shape)
    axes = tuple(range(nb, nb + extra)) + tuple(
        nb + extra + k for k, d in enumerate(shape) if d == 1 and gshape[nb + extra + k] != 1)
    return g.sum(axis=axes).reshape(gshape[:nb] + shape)


def nondiff(fun: Callable, wrap: bool = True) -> Callable:
    """``fun`` with no derivative (comparisons, argmax, floor, ...): no gradient flows, no error.

    Tensors in the arguments are read as arrays; with ``wrap``, an array result of a call on Tensors
    is a Tensor again (that no tape watches).
    """
    def call(*args: Any, **kwargs: Any) -> Any:
        if not state.observers:
            result = fun(*[value_of(a) for a in args], **{k: value_of(v) for k, v in kwargs.items()})
            if wrap and any(isinstance(a, Tensor) for a in args) and isinstance(result, (np.ndarray, np.generic)):
                return Tensor(result)
            return result
        return _traced_nondiff(fun, wrap, args, kwargs)
    call.__name__ = call.__qualname__ = getattr(fun, "__name__", "nondiff")
    call.__doc__ = f"{call.__name__} (not differentiable: no gradient flows through it)."
    return call


# Functions that read only shapes and dtypes: nothing for a trace to check.
_METADATA = {np.shape, np.ndim, np.size, np.result_type, np.zeros_like, np.ones_like, np.empty_like}


def _traced_nondiff(fun: Callable, wrap: bool, args: tuple, kwargs: dict):
    """``nondiff``'s call while a trace observes (autodiff.jit): a wrapped result is recorded on the
    trace's tape, so that a replay recomputes it; a plain result (an index array, a Python value)
    leaves the engine, a read the trace checks."""
    kwargs = {k: concrete(v) for k, v in kwargs.items()}
    if not wrap:
        read = value_of if fun in _METADATA else concrete
        return fun(*[read(a) for a in args], **kwargs)
    result = fun(*[value_of(a) for a in args], **kwargs)
    if not (any(isinstance(a, Tensor) for a in args) and isinstance(result, (np.ndarray, np.generic))):
        return result
    out = Tensor(result)
    record_constant(lambda *values: fun(*values, **kwargs), args, {}, out)
    return out


def reject_out(out) -> None:
    """NumPy's ``out=`` writes in place, which a tape cannot record: an error, never ignored."""
    if out is not None:
        raise TypeError("autodiff: in-place NumPy operations (out=...) cannot be differentiated")


def reject_keywords(name: str, kwargs: dict) -> None:
    """NumPy keywords an op does not implement are an error naming them, never silently ignored."""
    if kwargs:
        raise TypeError(f"autodiff: {name} with {sorted(kwargs)} is not supported")
