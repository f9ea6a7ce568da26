"""Bounds as scipy users write them, turned into one box over the flat vector the optimizers see.

``minimize`` takes a ``scipy.optimize.Bounds`` or a sequence of ``(lo, hi)`` pairs, one per
entry of x0 (``None`` or an infinity for no bound), as ``scipy.optimize.minimize`` does;
``least_squares`` takes a ``Bounds`` or a pair ``(lb, ub)`` of scalars or arrays, as
``scipy.optimize.least_squares`` does. An array x0 of any shape is bounded entry by entry in its
raveled (C) order, or by arrays of its shape; a pytree x0 (dict, list, namedtuple of arrays) by
the same over the flat vector of ``autodiff.ravel`` order, or by a pytree of x0's structure that
holds a pair (or, for ``least_squares``, a bound) for each of its arrays. Two pairs of two over
two entries read two ways, as a pair of sides or as a pair per entry: a pytree's 2-entry array
given such a pair is refused with both readings shown (``Bounds(lo, hi)`` says which), and
``least_squares`` reads them as ``(lb, ub)``, as scipy does, but refuses them where scipy refuses
that reading (some ``lb >= ub``: minimize's pairs, by all appearances). The result is an
:class:`optimizers.bounds.Box`, which refuses NaN, ``lo > hi`` and empty bounds by index; ``lo ==
hi`` fixes a variable; bounds with no finite entry are no bounds (:func:`feasible_set`). For
``minimize``, bounds that do not fit x0 or cross begin their error with scipy's sentence (its
tests and its users match it), then say which entry and why. x0 outside the box is clipped into
it by the box (:meth:`optimizers.bounds.Box.start`, as L-BFGS-B does), with a note that the
message ends with (``least_squares`` refuses it first, as scipy's does). ``Bounds.keep_feasible``
is accepted and has no effect: every point at which hessopt evaluates the objective lies in the box.
"""
from __future__ import annotations

import math
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
        For a wrong number of pairs, sides that do not fit x0, NaN, ``lo > hi``, an empty bound, or
        two pairs of two over two entries that read two ways (see the module docstring).
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
    try:
        return _box(bounds, _Layout.of(x0), pairs)
    except ValueError as error:   # minimize: scipy's words first (its tests and users match them), then ours
        words = next((w for key, w in _SCIPY_WORDS.items() if key in str(error)), None) if pairs else None
        if words is None:
            raise
        raise ValueError(f"{words} ({error})") from None


# minimize's errors that scipy.optimize.minimize words its own way: a part of ours -> scipy's sentence
_SCIPY_WORDS = {"(lo, hi) pairs, but x0 has": "The number of bounds is not compatible with the length of `x0`.",
                "it must be a scalar or an array of": "The number of bounds is not compatible with the length of `x0`.",
                "exceeds the upper bound": "An upper bound is less than the corresponding lower bound."}


def _box(bounds: Any, layout: _Layout, pairs: bool) -> Box:
    """:func:`box_from_bounds` once bounds is not None."""
    if isinstance(bounds, Bounds):
        lower, upper = bounds.lb, bounds.ub
    elif pairs:
        return _box_from_pairs(bounds, layout)
    else:
        if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
            raise ValueError("bounds must be a scipy.optimize.Bounds or a pair (lb, ub) of "
                             f"scalars or arrays, got {_describe(bounds)}")
        _refuse_minimize_pairs(bounds, layout.n)
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
    """``(lo, hi)`` as two flat arrays over an array of ``shape``; two pairs of two over two
    entries only where both readings are one box (:meth:`_Readings.one_box`)."""
    if isinstance(pair, Bounds):
        lo, hi = pair.lb, pair.ub
    elif not (isinstance(pair, (list, tuple, np.ndarray)) and len(pair) == 2):
        raise ValueError(f"{name} must be a pair (lo, hi), got {_describe(pair)}")
    elif math.prod(shape) == 2 and (readings := _Readings.of(pair)) is not None:
        return readings.one_box(f"{name} (2 entries), {_describe(pair, full=True)},")
    else:
        lo, hi = pair
    return (_broadcast(lo, shape, -np.inf, f"{name}: lo"),
            _broadcast(hi, shape, np.inf, f"{name}: hi"))


class _Readings(NamedTuple):
    """Two pairs of two (numbers or None: no bound) over two entries, ``rows``, read both ways: as
    a pair of sides (``rows[0]`` the lower bounds, ``rows[1]`` the upper) and as a (lo, hi) pair
    per entry (``rows[k]`` entry k's). ``per_entry`` is the second reading as (lower, upper)
    arrays."""
    rows: list
    per_entry: tuple[np.ndarray, np.ndarray]

    @classmethod
    def of(cls, value) -> _Readings | None:
        """The readings of ``value``, or None when it is not two pairs of two."""
        rows = [list(row) for row in value if isinstance(row, (list, tuple, np.ndarray)) and len(row) == 2]
        if len(rows) != 2 or not all(entry is None or isinstance(entry, numbers.Real)
                                     for row in rows for entry in row):
            return None
        columns = [[row[k] for row in rows] for k in range(2)]
        per_entry = (_numbers_or(columns[0], -np.inf), _numbers_or(columns[1], np.inf))
        return cls(rows, per_entry)

    def as_sides(self) -> tuple[np.ndarray, np.ndarray]:
        """The first reading as (lower, upper) arrays (None: no bound, as for the second)."""
        return _numbers_or(self.rows[0], -np.inf), _numbers_or(self.rows[1], np.inf)

    def agree(self) -> bool:
        return all(np.array_equal(a, b) for a, b in zip(self.as_sides(), self.per_entry))

    def one_box(self, what: str) -> tuple[np.ndarray, np.ndarray]:
        """The box both readings give, or a ValueError showing both (``what``: the bounds)."""
        if not self.agree():
            raise ValueError(f"bounds: {what} can be read two ways: as (lo, hi) for the array, "
                             f"{self.sides('lo', 'hi')}; or as a (lo, hi) pair per entry, as minimize "
                             f"takes them, {self.pairs('lo', 'hi')}. Pass scipy.optimize.Bounds(lo, hi) "
                             "for the array to say which")
        return self.per_entry

    def sides(self, lower: str, upper: str) -> str:
        return f"{lower} = {_show(self.rows[0])} and {upper} = {_show(self.rows[1])}"

    def pairs(self, lower: str, upper: str) -> str:
        return (f"{lower} = {_show([row[0] for row in self.rows])} and "
                f"{upper} = {_show([row[1] for row in self.rows])}")


def _refuse_minimize_pairs(bounds, n: int) -> None:
    """least_squares' ``(lb, ub)`` that is two pairs of two over two variables, where scipy refuses
    it as (lb, ub) and it reads otherwise as minimize's pair per entry: a ValueError showing both."""
    readings = _Readings.of(bounds) if n == 2 else None
    if readings is None or readings.agree():
        return
    lower, upper = readings.as_sides()
    if any(entry is None for row in readings.rows for entry in row):
        refusal = "with a None inside lb or ub, which scipy.optimize.least_squares reads as NaN"
    elif np.any(lower >= upper):
        refusal = ("which scipy.optimize.least_squares refuses: Each lower bound must be strictly less "
                   "than each upper bound")
    else:
        return
    raise ValueError(f"bounds {_describe(bounds, full=True)} can be read two ways over x0's 2 entries: as "
                     f"least_squares' (lb, ub), {readings.sides('lb', 'ub')}, {refusal}; or as minimize's "
                     f"(lo, hi) pair per entry, {readings.pairs('lb', 'ub')}. Pass "
                     "scipy.optimize.Bounds(lb, ub) to say which")


def _numbers_or(values: list, none: float) -> np.ndarray:
    """Numbers or None as floats, None read as ``none``."""
    return np.array([none if value is None else value for value in values], dtype=float)


def _show(values: list) -> str:
    """Numbers or None as the user would write them: ``[0, 1.5, None]``."""
    return "[" + ", ".join("None" if value is None else f"{float(value):g}" for value in values) + "]"


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


def _describe(value, full: bool = False) -> str:
    """``value`` for a message: its type and its repr, cut at 60 characters unless ``full``."""
    text = " ".join(repr(value).split())
    return f"{type(value).__name__} {text if full or len(text) <= 60 else text[:57] + '...'}"
