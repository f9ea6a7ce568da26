"""Forward mode: ForwardAccumulator pushes tangents through each op's JVP rule as the op runs.

Rules are written with the engine's ops, so an accumulator nests with tapes (forward-over-reverse
and reverse-over-forward Hessian-vector products) and with other accumulators.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .core import Primitive, Tensor, paused, shape_of, state, value_of
from .numpy import broadcast_to
from .tape import UnconnectedGradients, as_unconnected
from .tree import flatten


class _Tangents(dict):
    """{tensor id: (tangent, weak reference to the tensor)}; an entry leaves when its tensor dies."""

    __slots__ = ("__weakref__",)

    def put(self, tensor: Tensor, tangent) -> None:
        key, owner = tensor._id, weakref.ref(self)
        self[key] = (tangent, weakref.ref(tensor, lambda _: _forget(owner, key)))


def _forget(owner, key) -> None:
    tangents = owner()
    if tangents is not None:
        tangents.pop(key, None)


class ForwardAccumulator:
    """Computes Jacobian-vector products J @ tangents for everything computed from ``primals``.

    Forward mode, as ``tf.autodiff.ForwardAccumulator``: each op computes its output's tangent as it
    runs, so one pass gives J @ v at the cost of about one more evaluation, with no tape kept.
    Inside a recording tape the tangents are recorded too (forward-over-reverse Hessian-vector
    products).

    Parameters
    ----------
    primals : Tensor or structure of Tensors
        The inputs to carry tangents for.
    tangents : ndarray, Tensor or structure
        One tangent per primal, each of its primal's shape, in the primals' structure (a list is a
        structure, not an array).

    Raises
    ------
    ValueError
        If a primal is not a Tensor, or the tangents do not match the primals in number or shape.

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> x = ad.constant([1.0, 2.0])
    >>> with ad.ForwardAccumulator(x, np.array([1.0, 0.0])) as acc:
    ...     y = x ** 3
    >>> acc.jvp(y)        # J_f(x) @ v: 3 x^2 * v
    Tensor(array([3., 0.]))
    """

    def __init__(self, primals: Any, tangents: Any) -> None:
        primal_list, _ = flatten(primals)
        tangent_list, _ = flatten(tangents)
        if len(primal_list) != len(tangent_list):
            raise ValueError(f"{len(primal_list)} primals but {len(tangent_list)} tangents")
        # Tangents by tensor id. Each entry holds a weak reference to its tensor whose callback
        # removes the entry, so a tangent dies with its tensor: intermediates do not pile up over
        # many evaluations inside one accumulator. The callback reaches this dict only through a
        # weak reference, so the dict and the callbacks do not keep each other alive.
        self._tangents = _Tangents()
        for primal, tangent in zip(primal_list, tangent_list):
            if not isinstance(primal, Tensor):
                raise ValueError(f"primals must be Tensors or Variables, got {type(primal).__name__}")
            if np.shape(value_of(tangent)) != primal.shape:
                raise ValueError(f"tangent of shape {np.shape(value_of(tangent))} for a primal of "
                                 f"shape {primal.shape}")
            self._tangents.put(primal, tangent)

    def __enter__(self) -> ForwardAccumulator:
        if self in state.accumulators:
            raise ValueError("this ForwardAccumulator is already active")
        state.accumulators.append(self)
        self._paused = paused(tapes=False, accumulators=(self,))  # made once: push runs for every op
        return self

    def __exit__(self, *exc):
        state.accumulators.remove(self)
        del self._paused  # it refers to self: no reference cycle outlives the context
        return False

    def push(self, prim: Primitive, args: tuple, kwargs: dict, out: Tensor, parents: tuple) -> None:
        """Called by every op while active: compute the output's tangent from the inputs' ones."""
        known, tangents = self._tangents, {}
        for i in parents:
            entry = known.get(args[i]._id)
            if entry is not None:
                tangents[i] = entry[0]
        if not tangents:
            return
        with self._paused:  # the rule's ops are for the other accumulators only
            tangent = prim.forward(tangents, out, args, kwargs)
        if shape_of(tangent) != out.shape:
            tangent = broadcast_to(tangent, out.shape)
        self._tangents.put(out, tangent)

    def watches(self, tensors: Any) -> bool:
        """Whether any of ``tensors`` carries a tangent here."""
        return any(isinstance(t, Tensor) and t._id in self._tangents for t in tensors)

    def jvp(self, primals: Any, unconnected_gradients: UnconnectedGradients | str = UnconnectedGradients.NONE) -> Any:
        """The tangent of each of ``primals`` (None, or zeros, where none reached it).

        Examples
        --------
        >>> import autodiff as ad
        >>> x, c = ad.constant(2.0), ad.constant(5.0)
        >>> with ad.ForwardAccumulator(x, 1.0) as acc:
        ...     y = x * x
        >>> acc.jvp([y, c], unconnected_gradients="zero")
        [Tensor(array(4.)), Tensor(array(0.))]
        """
        unconnected = as_unconnected(unconnected_gradients)
        leaves, rebuild = flatten(primals)
        results = []
        for y in leaves:
            tangent = self._tangents.get(y._id, (None,))[0] if isinstance(y, Tensor) else None
            if tangent is None and unconnected is UnconnectedGradients.ZERO:
                tangent = np.zeros(np.shape(value_of(y)))
            results.append(tangent if tangent is None or isinstance(tangent, Tensor)
                           else Tensor(np.asarray(tangent)))
        return rebuild(results)
