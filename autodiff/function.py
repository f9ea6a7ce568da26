"""``autodiff.function``: trace once per input signature, replay without the tape machinery.

Like ``tf.function`` and ``jax.jit``. The first call with a given signature (the structure of the
arguments, the shape and dtype of each floating-point array, the value of everything else) runs f
while a trace observes the engine and records every op, including the backward sweeps that compute
derivatives: every rule is written with the engine's own ops, so a gradient, a Hessian-vector
product or a Jacobian is itself a flat list of primitive applications. That list becomes a
straight-line Python function of NumPy arrays (dead ops dropped, repeated ones computed once, ops
that read no input folded into constants); later calls run it, with no Tensor, record or rule
lookup. The machinery is ``autodiff.jit``; this module adds the derivative methods.

Transforms of a function replay too: ``ad.grad(f)``, ``ad.hessian(f)``, ``ad.jacobian(f)``,
``ad.hvp(f, x, v)``, ``ad.vjp(f, x)``, ``ad.linearize(f, x)``, ``ad.hessian_operator(f, x)`` and
``ad.ggn_operator(f, loss, x)`` of an ``ad.function`` f are programs (a pair such as a VJP or an
operator is one program split at the late argument). So does ``ad.function`` of any transform.

What a trace cannot see it checks or refuses, never silently bakes in:

- a branch on a traced value (``if t > 0``, ``bool(t)``) is *guarded*: the replay checks that the
  same branch is taken and traces again when it is not (both branches are then kept);
- an integer or boolean value read to compute with (an index, a mask) is guarded the same way;
- a floating-point value leaving the engine (``t.numpy()``, ``t.item()``, ``float(t)``) is refused
  with ``UntraceableError`` (with ``eager_fallback=True``, f then runs eagerly for that signature);
- Variables that f reads are inputs of the program, read afresh at each call.

Python values (floats, ints, strings) and non-float arrays among the arguments are part of the
signature, as in ``tf.function``: a new value traces again; they must be hashable. A global NumPy
array f reads, or a random draw inside f, is fixed at its trace-time value, as in JAX. At most
``cache_size`` signatures are kept (least recently used go first).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jit import CACHE_SIZE, MAX_TRACES_PER_SIGNATURE, Traced, UntraceableError
from .operators import HessianOperator, hessian_operator
from .transforms import grad, jacobian, value_and_grad

__all__ = ["function", "Function", "UntraceableError", "MAX_TRACES_PER_SIGNATURE", "CACHE_SIZE"]


class Function(Traced):
    """f, traced once per signature and replayed (see the module docstring and ``function``).

    ``traces`` counts the traces taken for f and its transforms (a retrace after a failed guard
    included); ``fallback_reason`` says why the last refused trace was refused
    (``eager_fallback``).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> w = ad.Variable(2.0)
    >>> f = ad.function(lambda x: np.sum(w * x ** 2))
    >>> f.grad()(np.array([1.0, 3.0]))
    array([ 4., 12.])
    >>> _ = w.assign(0.5)              # Variables are read afresh at every call
    >>> f.grad()(np.array([1.0, 3.0])), f.traces
    (array([1., 3.]), 1)
    """

    def value_and_grad(self, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
        """``ad.value_and_grad(f, argnums, has_aux)``: the value and gradient replayed together."""
        return value_and_grad(self, argnums, has_aux)

    def grad(self, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
        """``ad.grad(f, argnums, has_aux)``, replayed."""
        return grad(self, argnums, has_aux)

    def jacobian(self, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
        """``ad.jacobian(f, argnums, has_aux=has_aux)``: the batched sweep, replayed."""
        return jacobian(self, argnums, has_aux=has_aux)

    def hessian_operator(self, x: Any, chunk_size: int | None = None) -> HessianOperator:
        """``ad.hessian_operator(f, x)``: the gradient and every product are replayed programs."""
        return hessian_operator(self, x, chunk_size)


def function(f: Callable | None = None, *, eager_fallback: bool = False, cache_size: int = CACHE_SIZE,
             native: bool = False) -> Function | Callable[[Callable], Function]:
    """Trace ``f`` once per input signature and replay it as plain NumPy calls (``tf.function``).

    ``ad.function(f)`` (or ``@ad.function``) returns a callable with f's results. Its
    ``value_and_grad(argnums)``, ``grad(argnums)``, ``jacobian(argnums)`` and
    ``hessian_operator(x)`` replay recorded derivative programs, and so do the transforms applied
    to it (``ad.grad``, ``ad.hessian``, ``ad.hvp``, ``ad.vjp``, ``ad.linearize``, ...). Called
    inside a GradientTape or ForwardAccumulator that tracks something, it runs f eagerly
    (recorded as usual). A module-level ``@ad.function`` pickles by reference (process pools,
    Dask); the traces are made again where it is unpickled.

    A branch on a traced value is checked at each replay (a different branch traces again); a
    float value leaving the engine (``t.numpy()``, ``t.item()``, a sort) raises
    ``UntraceableError``, or with ``eager_fallback=True`` runs f eagerly for that signature
    (``fallback_reason`` says why).

    Parameters
    ----------
    f : callable
        The function (of arrays, pytrees of arrays and static values).
    eager_fallback : bool, default False
        Run f eagerly for a signature whose trace is refused, instead of raising.
    cache_size : int, default 64
        How many signatures (with their programs) are kept; the least recently used go first.
    native : bool, default False
        Compile each program by numba to one native function (the optional ``compiled`` extra:
        ``pip install hessopt[compiled]``) where numba is installed and can take it; the others
        replay as NumPy calls. Results agree with the NumPy replay within rounding, not bit for
        bit (``autodiff.jit.native``); a program compiles once per signature (about a second).

    Raises
    ------
    TypeError
        When called with an unhashable static argument (a set, say), naming it.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> @ad.function
    ... def rosen(x):
    ...     return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    >>> x = np.array([-1.2, 1.0, 1.0])
    >>> round(float(rosen(x)), 12)
    24.2
    >>> rosen.grad()(x)
    array([-215.6,  -88. ,    0. ])
    >>> rosen.hessian_operator(x).matvec(np.array([1.0, 0.0, 0.0]))
    array([1330.,  480.,    0.])
    >>> ad.hessian(rosen)(x)[0]
    array([1330.,  480.,    0.])
    >>> rosen.traces  # the call, the gradient, the Hessian operator and the Hessian: one trace each
    4
    """
    if f is None:
        return lambda g: Function(g, eager_fallback, cache_size, native=native)
    return Function(f, eager_fallback, cache_size, native=native)
