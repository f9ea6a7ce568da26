"""Tracing: watch a function run on Tensors and keep what it did, as a straight list of records.

A ``Trace`` is an observer of the engine (see ``core._State``): it is shown every op on Tensors,
paused or not, and keeps those that read its inputs or a Variable; it is told when a value is read
to compute with outside the engine, and when a reverse sweep runs that eager code would run on raw
arrays. Nothing here knows a transform: a gradient, a Jacobian or a Hessian-vector product is
recorded like any other computation, because every derivative rule is written with the engine's
own ops.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import Primitive, Tensor, Variable, state, value_of
from ..residuals import stand_in
from ..tape import CustomNode
from ..tree import flatten


class UntraceableError(TypeError):
    """f does something a replay could not reproduce (a float value leaving the engine).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> scaled = ad.function(lambda x: x * x.numpy().max())
    >>> try:
    ...     scaled(np.array([1.0, 2.0]))
    ... except ad.UntraceableError as error:
    ...     print(str(error)[:60])
    autodiff.function: the traced function reads the value of a
    >>> ad.function(scaled.f, eager_fallback=True)(np.array([1.0, 2.0]))
    array([2., 4.])
    """


_READS = {"numpy": "t.numpy()", "item": "t.item()", "value": "a value-dependent op such as sort, "
          "interp, slogdet's sign or a float exponent", "float": "float(t)", "complex": "complex(t)"}


class Trace:
    """An observer that keeps the ops computed from its inputs while it is active (``with``).

    Attributes
    ----------
    records : list
        ``(prim, args, raw, kwargs, out, parents)`` per op, in execution order (see ``Recording``).
    variables : dict
        ``{id: Variable}`` of the Variables read: inputs of the recording, in the order first read.
    guards : list
        ``(tensor, kind, value)``: a branch ("bool") or an integer read ("equal") a replay must check.
    raw : set
        Ids of the outputs of records made during a sweep that eager code runs on raw arrays.
    """

    def __init__(self, inputs: list):
        self.records: list = []
        self.variables: dict = {}
        self.guards: list = []
        self.raw: set = set()
        self._watched = {t._id for t in inputs}
        self._raw_depth = 0
        self._stand_ins: dict = {}    # id of a computed Tensor -> its stand-in in the records

    def __enter__(self) -> Trace:
        state.observers.append(self)
        return self

    def __exit__(self, *exc) -> bool:
        state.observers.remove(self)
        return False

    def watch(self, tensors: list) -> None:
        """Make ``tensors`` inputs too (the late inputs of a program split in two)."""
        self._watched.update(t._id for t in tensors)

    def _is_input(self, t: Tensor) -> bool:
        """Whether ``t`` is computed from the inputs; a Variable becomes an input when first read."""
        if t._id in self._watched:
            return True
        if isinstance(t, Variable):
            self._watched.add(t._id)
            self.variables[t._id] = t
            return True
        return False

    # --- the observer interface (core._State) ---------------------------------------------------
    def record(self, prim: Primitive, args: tuple, raw: list, kwargs: dict, out: Any, parents: tuple) -> None:
        """Keep an op that reads an input (a Variable read becomes one). The floating-point arrays
        it computes are kept as stand-ins (:func:`autodiff.residuals.stand_in`): a program is made from
        the operations, shapes and dtypes of its records and the values of its constants, never
        from values computed from its inputs, and keeping those would make a trace hold every
        intermediate array at once, many times what the eager run it watches holds."""
        watched = self._watched
        for i in parents:   # (this runs for every op: the common cases without generators)
            if args[i]._id not in watched:
                tracked = tuple(i for i in parents if self._is_input(args[i]))
                if not tracked:
                    return  # an op on constants: its value is a constant of the program
                break
        else:
            tracked = tuple(parents)
        stand_ins = self._stand_ins
        if stand_ins and any(args[i]._id in stand_ins for i in tracked):
            args, raw = list(args), list(raw)
            for i in tracked:
                shadow = stand_ins.get(args[i]._id)
                if shadow is not None:
                    args[i], raw[i] = shadow, shadow._value
            args = tuple(args)
        self.records.append((prim, args, raw, kwargs, tuple(map(self._kept, out)) if type(out) is tuple
                             else self._kept(out), tracked))

    def _kept(self, out: Tensor) -> Tensor:
        """An op's output as its record keeps it (its stand-in, or itself), an input from now on."""
        self._watched.add(out._id)
        if self._raw_depth:
            self.raw.add(out._id)
        shadow = stand_in(out)
        if shadow is not out:
            self._stand_ins[out._id] = shadow
        return shadow

    def read(self, t: Tensor, how: str) -> None:
        """Guard a branch or an integer read of an input; refuse a float read (UntraceableError)."""
        if not self._is_input(t):
            return  # a constant: nothing to check
        value = np.asarray(value_of(t))
        if how == "bool":
            self.guards.append((t, "bool", bool(value)))
        elif value.dtype.kind in "biu" and how not in ("numpy", "item", "float", "complex"):
            self.guards.append((t, "equal", value.copy()))
        else:
            raise UntraceableError(
                f"autodiff.function: the traced function reads the value of a {value.dtype} Tensor "
                f"that depends on its inputs ({_READS.get(how, how)}); a replay could not reproduce "
                "what it computes from it. Keep the computation in NumPy operations on Tensors, or "
                "call the function without autodiff.function.")

    def raw_sweep(self, active: bool) -> None:
        """Mark the records of a sweep that eager code runs on raw arrays (``Recording.raw``)."""
        self._raw_depth += 1 if active else -1


@dataclass
class Recording:
    """What ``trace`` saw: a straight-line program over Tensors.

    Attributes
    ----------
    records : list
        One tuple ``(prim, args, raw, kwargs, out, parents)`` per op computed from the inputs, in
        execution order: ``prim`` is the ``autodiff.core.Primitive`` applied (``prim.name``; the NumPy
        function ``prim.tensor_fun`` computes ``out``'s value from ``raw``), ``args`` its
        arguments (Tensors at the positions ``parents``, which depend on the inputs; anything else
        is a constant), ``raw`` the arguments' values, ``kwargs`` its keyword arguments, ``out``
        the result (a Tensor, or a tuple of them). A floating-point array computed from the inputs
        is kept as a stand-in of its shape and dtype (:func:`autodiff.residuals.stand_in`), except f's outputs.
        Ops on constants only are not records: their values are constants of the program.
        Derivative computations (backward sweeps) are records like any other op.
    inputs : list
        Tensors: one per floating-point array leaf of the arguments (in ``autodiff.tree.flatten``
        order), then the Variables f reads (their values are read afresh by a replay).
    outputs : list
        The leaves of f's result: Tensors of the records (or inputs), or constants.
    structure : callable
        ``structure(leaves)`` rebuilds f's result from its leaves.
    guards : list
        ``(tensor, kind, value)``: branches (kind "bool") and integer reads ("equal") that a replay
        must check to be valid.
    raw : set
        Ids of records' outputs computed during a sweep that eager code runs on raw arrays.

    Examples
    --------
    The gradient of sin(x) . x as a straight-line program: grad's alias of its argument, the
    forward ops, then the sweep's.

    >>> import numpy as np
    >>> import autodiff as ad
    >>> from autodiff.jit import trace
    >>> recording = trace(ad.grad(lambda x: np.sum(np.sin(x) * x)), np.ones(2))
    >>> [prim.name for prim, args, raw, kwargs, out, parents in recording.records]
    ['alias', 'sin', 'multiply', 'sum', 'multiply', 'multiply', 'cos', 'multiply', 'add']
    >>> len(recording.inputs), recording.outputs[0] is recording.records[-1][4]
    (1, True)
    """

    records: list
    inputs: list
    outputs: list
    structure: Callable
    guards: list
    raw: set


def record(build: Callable, inputs: list) -> Recording:
    """Run ``build()`` under a Trace whose inputs are ``inputs`` (Tensors); ``build`` may make more
    inputs with ``Trace.watch`` (the Trace is ``state.observers[-1]``). Refuses what a replay could
    not reproduce (UntraceableError)."""
    trace = Trace(inputs)
    with trace:
        out = build()
    reads_variables = bool(trace.variables) or any(type(t) is Variable for t in inputs)
    for prim, args, values, _kwargs, _result, parents in trace.records:
        if isinstance(prim, CustomNode):
            raise UntraceableError(f"autodiff.function: {prim.name} (custom_gradient or "
                                   "recompute_grad) cannot be traced yet")
        if reads_variables and any(type(args[i]) is Variable and value_of(args[i]) is not values[i]
                                   for i in parents):
            raise UntraceableError("autodiff.function: the traced function assigns a Variable it "
                                   "reads; a replay reads each Variable once, at the start")
    outputs, structure = flatten(out)
    return Recording(_with_outputs(trace.records, outputs, trace._stand_ins), inputs + list(trace.variables.values()),
                     outputs, structure, trace.guards, trace.raw)


def _with_outputs(records: list, outputs: list, stand_ins: dict) -> list:
    """``records`` with each output's stand-in (``stand_ins``: by id) replaced by the output itself."""
    real = {o._id: o for o in outputs if isinstance(o, Tensor) and o._id in stand_ins}
    if not real:
        return records
    for k, (prim, args, raw, kwargs, out, parents) in enumerate(records):
        outs = out if type(out) is tuple else (out,)
        if any(o._id in real and real[o._id] is not o for o in outs):
            outs = tuple(real.get(o._id, o) for o in outs)
            records[k] = (prim, args, raw, kwargs, outs if type(out) is tuple else outs[0], parents)
    return records


def trace(f: Callable, *args: Any, **kwargs: Any) -> Recording:
    """The recording of ``f(*args, **kwargs)``: its ops in order, its inputs and its outputs.

    Every floating-point array (or Tensor) among the arguments (pytrees included) is an input;
    every other argument is a constant. This is the program ``autodiff.function`` replays, before
    its passes (dead code, simplification); a pass of your own (a sparsity pattern, a cost count)
    can walk ``records`` instead. Transforms trace too: ``trace(ad.grad(f), x)`` records f and
    its backward sweep.

    Raises
    ------
    UntraceableError
        If f reads a float value of its inputs (``t.numpy()``, ``float(t)``), as ``function`` does.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from autodiff.jit import trace
    >>> recording = trace(lambda x: np.sum(np.sin(x) * 2.0), np.ones(3))
    >>> [record[0].name for record in recording.records]
    ['sin', 'multiply', 'sum']
    >>> recording.records[1][5]                # the positions of the arguments computed from x
    (0,)
    >>> recording.outputs[0] is recording.records[-1][4]
    True
    """
    leaves, structure = flatten((args, kwargs))
    inputs, call = [], []
    for leaf in leaves:
        if is_traced_leaf(leaf):
            leaf = Tensor(np.asarray(value_of(leaf)))
            inputs.append(leaf)
        call.append(leaf)
    call_args, call_kwargs = structure(call)
    return record(lambda: f(*call_args, **call_kwargs), inputs)


def is_traced_leaf(leaf: Any) -> bool:
    """Floating-point arrays and Tensors are program inputs; everything else is a constant (part of
    the signature). Variables are inputs of another kind: read afresh at each replay."""
    if isinstance(leaf, Variable):
        return False
    if isinstance(leaf, (Tensor, np.ndarray, np.generic)):
        return leaf.dtype.kind in "fc"
    return False
