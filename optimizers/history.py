"""The per-iteration history of a run, kept column-wise: one array per quantity, ready to plot.

A :class:`History` holds one record per iteration, record 0 being the start point x0:

- ``history["f"]``, ``history["gnorm"]`` (||g||_inf), ``history["nit"]`` and the method's own
  columns (``step``, ``radius`` or ``sigma``, ``rho``, ``lambda``, ``cg``, ...): 1-D arrays, one
  entry per record. A record without a value for a column (a Hessian-free ``rho`` at x0, say)
  reads NaN there.
- ``history["nfev"]``, ``history["njev"]``, ``history["nhev"]``: the evaluations spent when the
  record was made (cumulative, so nondecreasing; least squares has no ``nhev``).
- ``history["x"]``: the iterates as the rows of a 2-D array (flat vectors); absent when the run
  was asked not to keep them (``keep_iterates=False``: ``"x" in history`` is then False).

It reads like a dict of columns (``keys()``, ``columns``, ``items()``, ``get``, ``in``), while
``len(history)`` counts records. For code written against a list of per-iteration dicts, an
integer index gives one record as a dict of its scalar fields (``history[-1]["f"]``; the iterate
and the counters are columns only), a slice gives the History of those records, and iterating
yields the records as dicts.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class History:
    """Per-iteration records of a run, column by column (see the module docstring).

    Every method's result carries one as ``result.history``; the methods fill it with ``append``.

    Parameters
    ----------
    keep_iterates : bool, default True
        Keep the iterates (the ``"x"`` column).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers import History
    >>> history = History()
    >>> history.append({"f": 4.0, "gnorm": 2.0}, {"nfev": 1, "njev": 1}, np.array([1.0, 1.0]))
    >>> history.append({"f": 1.0, "gnorm": 0.5, "step": 0.7}, {"nfev": 2, "njev": 2}, np.array([0.5, 0.5]))
    >>> history
    History(2 records; columns: f, gnorm, step, nfev, njev, x)
    >>> history["f"], history["step"], history[-1]["f"]     # a record without a step reads NaN
    (array([4., 1.]), array([nan, 0.7]), 1.0)
    """

    def __init__(self, keep_iterates: bool = True):
        self._fields: dict[str, list] = {}     # scalar fields; None where a record has no value
        self._counters: dict[str, list] = {}
        self._iterates: list[np.ndarray] | None = [] if keep_iterates else None
        self._length = 0
        self._arrays: dict[str, np.ndarray] = {}   # columns read since the last append

    def append(self, fields: dict, counts: dict, x: np.ndarray, copy: bool = True) -> None:
        """Add one record: its scalar ``fields``, the cumulative evaluation ``counts`` so far and
        the iterate ``x``, if iterates are kept: copied, or, with ``copy=False`` (a caller that
        never changes x afterwards, as the optimizers' loop), kept as it is."""
        for name in fields:
            if name not in self._fields:   # a new column: None for the records before it
                self._fields[name] = [None] * self._length
        for name, values in self._fields.items():
            values.append(fields.get(name))
        for name, count in counts.items():
            self._counters.setdefault(name, []).append(int(count))
        if self._iterates is not None:
            self._iterates.append(np.array(x, dtype=float, copy=copy or None).reshape(-1))
        self._length += 1
        self._arrays.clear()

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names: the scalar fields, then the counters, then ``"x"`` if iterates are kept."""
        iterates = ("x",) if self._iterates is not None else ()
        return (*self._fields, *self._counters, *iterates)

    def keys(self) -> tuple[str, ...]:
        return self.columns

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        return ((name, self[name]) for name in self.columns)

    def get(self, name: str, default=None):
        return self[name] if name in self else default

    def __contains__(self, name) -> bool:
        return name in self.columns

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[dict]:
        return (self._row(k) for k in range(self._length))

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._column(key)
        if isinstance(key, (int, np.integer)):
            if not -self._length <= key < self._length:
                raise IndexError(f"record {key} out of range for a history of {self._length}")
            return self._row(int(key) % self._length)
        if isinstance(key, slice):
            return self._select(range(self._length)[key])
        raise TypeError(f"index a History with a column name, an integer or a slice, not "
                        f"{type(key).__name__}")

    def __repr__(self) -> str:
        return f"History({self._length} records; columns: {', '.join(self.columns)})"

    def _column(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            if name in self._fields:
                array = _field_array(self._fields[name])
            elif name in self._counters:
                array = np.array(self._counters[name], dtype=np.int64)
            elif name == "x" and self._iterates is not None:
                array = np.array(self._iterates, dtype=float)
            else:
                raise KeyError(f"no column {name!r} in this history; it has {list(self.columns)}")
            array.flags.writeable = False
            self._arrays[name] = array
        return self._arrays[name]

    def _row(self, k: int) -> dict:
        return {name: self._column(name)[k].item() for name in self._fields}

    def _select(self, rows: range) -> History:
        selected = History(self._iterates is not None)
        selected._fields = {name: [values[k] for k in rows]
                            for name, values in self._fields.items()}
        selected._counters = {name: [values[k] for k in rows]
                              for name, values in self._counters.items()}
        if self._iterates is not None:
            selected._iterates = [self._iterates[k] for k in rows]
        selected._length = len(rows)
        return selected


def _field_array(values: list) -> np.ndarray:
    """A field's values as an array: their own dtype when every record has one, else float with
    NaN where a record has none."""
    if None not in values:
        return np.array(values)
    return np.array([np.nan if value is None else value for value in values], dtype=float)
