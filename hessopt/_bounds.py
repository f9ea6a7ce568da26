"""Bounds as scipy users write them, turned into one box over the flat vector the optimizers see.

``minimize`` takes a ``scipy.optimize.Bounds`` or a sequence of ``(lo, hi)`` pairs, one per
entry of x0 (``None`` or an infinity for no bound), as ``scipy.optimize.minimize`` does;
``least_squares`` takes a ``Bounds`` or a pair ``(lb, ub)`` of scalars or arrays, as
``scipy.optimize.least_squares`` does. An array x0 of any shape is bounded entry by entry in its
raveled (C) order, or by arrays of its shape; a pytree x0 (dict, list, namedtuple of arrays) by
the same over the flat vector of ``autodiff.ravel`` order, or by a pytree of x0's structure that
holds a pair (or, for ``least_squares``, a bound) for each of its arrays. The result is an
:class:`optimizers.bounds.Box`, which refuses NaN, ``lo > hi`` and empty bounds by index; ``lo ==
hi`` fixes a variable; bounds with no finite entry are no bounds (:func:`feasible_set`). x0 outside
the box is clipped into it by the box (:meth:`optimizers.bounds.Box.start`, as L-BFGS-B does), with
a note that the message ends with. ``Bounds.keep_feasible`` is accepted and has no effect: every
point at which hessopt evaluates the objective lies in the box.
"""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import Bounds

import autodiff as ad
from optimizers.bounds import Box
from optimizers.feasible import UNCONSTRAINED, FeasibleSet
from optimizers.loop import with_note

from ._arguments import is_tree


def box_from_bounds(bounds: Any, x0: Any, *, pairs: bool = True) -> Box | None:
    """The box over flat x0 that ``bounds`` describes; None when ``bounds`` is None.

    Parameters
    ----------
    bounds : Bounds, sequence of pairs, pair of bounds, pytree, or None
        With ``pairs=True`` (``minimize``): a ``Bounds``, one ``(lo, hi)`` pair per entry of x0,
        or, for a pytree x0, a pytree of x0's structure with a pair per array (each side a
        scalar, None, or an array of that array's shape). With ``pairs=False``
        (``least_squares``): a ``Bounds`` or ``(lb, ub)``, each side a scalar, an array of x0's
        shape or of its flat size, or (pytree x0) a pytree of x0's structure.
    x0 : array_like or pytree
        The start point as the user gave it (only its shape and structure are used).

    Returns
    -------
    Box or None

    Raises
    ------
    ValueError
        For a wrong number of pairs, sides that do not fit x0, NaN, ``lo > hi`` or an empty bound.
    TypeError
        For entries that are not numbers (or None).

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt._bounds import box_from_bounds
    >>> box = box_from_bounds([(0, None), (-1, 1)], np.zeros(2))
    >>> box.lower, box.upper
    (array([ 0., -1.]), array([inf,  1.]))
    >>> box = box_from_bounds({"w": (0, 1), "b": (None, 5.0)}, {"w": np.ones(2), "b": 0.0})
    >>> box.lower, box.upper
    (array([  0.,   0., -inf]), array([1., 1., 5.]))
    >>> box_from_bounds((0, [1, 2]), np.zeros(2), pairs=False).upper
    array([1., 2.])
    """
    if bounds is None:
        return None
    layout = _Layout.of(x0)
    if isinstance(bounds, Bounds):
        lower, upper = bounds.lb, bounds.ub
    elif pairs:
        return _box_from_pairs(bounds, layout)
    else:
        if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
            raise ValueError("bounds must be a scipy.optimize.Bounds or a pair (lb, ub) of "
                             f"scalars or arrays, got {_describe(bounds)}")
        lower, upper = bounds
    return Box(_side(lower, layout, -np.inf, "lb"), _side(upper, layout, np.inf, "ub"))


def feasible_set(bounds: Any, x0: Any, *, pairs: bool = True) -> FeasibleSet:
    """The set a run over flat x0 lives in: the box of ``bounds`` (:func:`box_from_bounds`), or
    unconstrained when there are none or none is finite (scipy's ``Bounds(-inf, inf)``: every
    method takes those, and nothing is active).

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt._bounds import feasible_set
    >>> feasible_set([(0, 1), (None, None)], np.zeros(2)), feasible_set([(None, None)], np.zeros(1))
    (Box(n=2, bounded=1, fixed=0), Unconstrained())
    """
    box = box_from_bounds(bounds, x0, pairs=pairs)
    finite = bounds is not None and bool(np.isfinite(box.lower).any() or np.isfinite(box.upper).any())
    return box if finite else UNCONSTRAINED


def report_bounds(result, mask: np.ndarray, note: str | None, unravel) -> None:
    """Add ``active_mask`` (integers in the form of x0: an array of its shape, or a pytree of its
    structure) to ``result``, and end its message with the clipping ``note``."""
    leaves, treedef = ad.tree.flatten(unravel(mask.astype(float)))
    result.active_mask = ad.tree.unflatten(treedef, [np.asarray(leaf).astype(int) for leaf in leaves])
    result.message = with_note(result.message, note)


class _Layout(NamedTuple):
    """x0 as the bounds see it: the shapes of its arrays (one for an array-like), whether it is
    a pytree, and its flat size."""
    x0: Any
    shapes: list
    tree: bool
    n: int

    @classmethod
    def of(cls, x0) -> _Layout:
        if is_tree(x0):
            shapes = [np.shape(leaf.numpy() if isinstance(leaf, ad.Tensor) else leaf)
                      for leaf in ad.tree.flatten(x0)[0]]
        else:
            shapes = [np.shape(np.atleast_1d(np.asarray(x0)))]
        return cls(x0, shapes, is_tree(x0), int(sum(np.prod(shape, dtype=int) for shape in shapes)))

    def per_array(self, tree, what: str) -> list:
        """The entries of a pytree of x0's structure, one per array of x0."""
        try:
            return ad.tree.flatten_like(tree, self.x0)
        except ValueError as error:
            raise ValueError(f"bounds: {what} must have the structure of x0 ({error})") from None


def _box_from_pairs(bounds, layout: _Layout) -> Box:
    if isinstance(bounds, np.ndarray) and bounds.ndim == 2 and bounds.shape[1] == 2:
        bounds = list(bounds)
    n = layout.n
    if layout.tree and not _flat_pairs(bounds, n):
        pairs = layout.per_array(bounds, f"a pytree of (lo, hi) pairs (or {n} flat pairs)")
        sides = [_pair(pair, f"the bounds of array {k}", shape)
                 for k, (pair, shape) in enumerate(zip(pairs, layout.shapes))]
    elif not isinstance(bounds, (list, tuple)):
        raise ValueError("bounds must be a scipy.optimize.Bounds or a sequence of (lo, hi) pairs, "
                         f"got {_describe(bounds)}")
    elif len(bounds) != n:
        raise ValueError(f"bounds has {len(bounds)} (lo, hi) pairs, but x0 has {n} entries "
                         "(one pair per entry, in the raveled order of x0)")
    else:
        sides = [_pair(pair, f"bounds[{i}]", ()) for i, pair in enumerate(bounds)]
    return Box(np.concatenate([lo for lo, _ in sides]), np.concatenate([hi for _, hi in sides]))


def _flat_pairs(bounds, n: int) -> bool:
    """Whether ``bounds`` reads as n pairs of scalars (the flat form for a pytree x0)."""
    return (isinstance(bounds, (list, tuple)) and len(bounds) == n and not hasattr(bounds, "_fields")
            and all(isinstance(pair, (list, tuple)) and len(pair) == 2
                    and all(side is None or isinstance(side, numbers.Real) for side in pair)
                    for pair in bounds))


def _pair(pair, name: str, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` as two flat arrays over an array of ``shape``."""
    if isinstance(pair, Bounds):
        pair = (pair.lb, pair.ub)
    if not (isinstance(pair, (list, tuple, np.ndarray)) and len(pair) == 2):
        raise ValueError(f"{name} must be a pair (lo, hi), got {_describe(pair)}")
    lo, hi = pair
    return (_broadcast(lo, shape, -np.inf, f"{name}: lo"),
            _broadcast(hi, shape, np.inf, f"{name}: hi"))


def _side(value, layout: _Layout, default: float, name: str) -> np.ndarray:
    """One side (lb or ub) over the flat x0: a scalar or None, a flat array of n entries, an
    array of x0's shape (array x0) or a pytree of x0's structure (pytree x0)."""
    n, shape = layout.n, layout.shapes[0]
    if layout.tree and is_tree(value):
        return np.concatenate([_broadcast(side, leaf_shape, default, f"{name} of array {k}")
                               for k, (side, leaf_shape)
                               in enumerate(zip(layout.per_array(value, name), layout.shapes))])
    array = _numbers(value, default, name)
    if array.ndim == 0:
        return np.full(n, float(array))
    if array.size == n and (array.ndim == 1 or (not layout.tree and array.shape == shape)):
        return array.ravel()
    if not layout.tree:
        try:
            return np.broadcast_to(array, shape).ravel()
        except ValueError:
            pass
    raise ValueError(f"bounds: {name} has shape {array.shape}; it must be a scalar or an array of "
                     f"{n} entries" + (" (or a pytree of x0's structure)" if layout.tree
                                       else f" (or of x0's shape {shape})"))


def _broadcast(value, shape: tuple, default: float, name: str) -> np.ndarray:
    array = _numbers(value, default, name)
    try:
        return np.broadcast_to(array, shape).ravel()
    except ValueError:
        raise ValueError(f"bounds: {name} has shape {array.shape}, which does not fit the array of "
                         f"shape {shape}") from None


def _numbers(value, default: float, name: str) -> np.ndarray:
    """A side as a float array: None means no bound (``default``)."""
    if value is None:
        return np.asarray(default)
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"bounds: {name} must be numbers or None, got {_describe(value)}") from None


def _describe(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
