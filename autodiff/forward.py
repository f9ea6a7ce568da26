"""Forward mode: ForwardAccumulator pushes tangents through each op's JVP rule as the op runs.

Rules are written with the engine's ops, so an accumulator nests with tapes (forward-over-reverse
and reverse-over-forward Hessian-vector products) and with other accumulators.
"""
from __future__ import annotations

import numpy as np

from .core import Tensor, paused, shape_of, state, value_of
from .tree import flatten
from .numpy import broadcast_to
from .tape import UnconnectedGradients, _unconnected


class ForwardAccumulator:
    """Computes Jacobian-vector products J @ tangents for everything computed from ``primals``.

    >>> with ForwardAccumulator(x, v) as acc:
    ...     y = f(x)
    >>> acc.jvp(y)        # J_f(x) @ v
    """

    def __init__(self, primals, tangents):
        primal_list, _ = flatten(primals)
        tangent_list, _ = flatten(tangents)
        if len(primal_list) != len(tangent_list):
            raise ValueError(f"{len(primal_list)} primals but {len(tangent_list)} tangents")
        self._tangents = {}
        self._keep = []  # holds the primals so their ids stay theirs
        for primal, tangent in zip(primal_list, tangent_list):
            if not isinstance(primal, Tensor):
                raise ValueError(f"primals must be Tensors or Variables, got {type(primal).__name__}")
            if np.shape(value_of(tangent)) != primal.shape:
                raise ValueError(f"tangent of shape {np.shape(value_of(tangent))} for a primal of "
                                 f"shape {primal.shape}")
            self._tangents[primal._id] = tangent
            self._keep.append(primal)

    def __enter__(self) -> "ForwardAccumulator":
        if self in state.accumulators:
            raise ValueError("this ForwardAccumulator is already active")
        state.accumulators.append(self)
        self._paused = paused(tapes=False, accumulators=(self,))  # made once: push runs for every op
        return self

    def __exit__(self, *exc):
        state.accumulators.remove(self)
        del self._paused  # it refers to self: no reference cycle outlives the context
        return False

    def push(self, prim, args, kwargs, out, parents):
        """Called by every op while active: compute the output's tangent from the inputs' ones."""
        known, tangents = self._tangents, {}
        for i in parents:
            t = known.get(args[i]._id)
            if t is not None:
                tangents[i] = t
        if not tangents:
            return
        with self._paused:  # the rule's ops are for the other accumulators only
            tangent = prim.forward(tangents, out, args, kwargs)
        if shape_of(tangent) != out.shape:
            tangent = broadcast_to(tangent, out.shape)
        self._tangents[out._id] = tangent
        self._keep.append(out)

    def watches(self, tensors) -> bool:
        """Whether any of ``tensors`` carries a tangent here."""
        return any(isinstance(t, Tensor) and t._id in self._tangents for t in tensors)

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangent of each of ``primals`` (None, or zeros, where none reached it)."""
        unconnected = _unconnected(unconnected_gradients)
        leaves, rebuild = flatten(primals)
        results = []
        for y in leaves:
            tangent = self._tangents.get(y._id) if isinstance(y, Tensor) else None
            if tangent is None and unconnected is UnconnectedGradients.ZERO:
                tangent = np.zeros(np.shape(value_of(y)))
            results.append(tangent if tangent is None or isinstance(tangent, Tensor)
                           else Tensor(np.asarray(tangent)))
        return rebuild(results)
