"""The types autodiff's annotations name (``from autodiff.typing import ArrayLike``).

autodiff's functions take what NumPy's take, Tensors included, and return a Tensor when an input is a
Tensor, else what NumPy returns (an ndarray, or a NumPy scalar from a full reduction):

- ``ArrayLike``: an argument NumPy reads as an array (``numpy.typing.ArrayLike``), or a Tensor;
- ``Array``: such a result: a Tensor, an ndarray or a NumPy scalar;
- ``Axes``: an ``axis`` argument that may name several axes: an int, a sequence of ints, or None (all);
- ``Shape``: a shape: an int (one axis) or a sequence of ints;
- ``DTypeLike``: a dtype or anything NumPy reads as one (``numpy.typing.DTypeLike``, which leaves out
  None: a ``dtype=None`` parameter is ``DTypeLike | None``);
- ``Order``: a memory layout argument: "C" (row-major), "F" (column-major), "A" or "K" (as the
  array's own);
- ``Index``: what indexes an array: an int, a slice, ``...``, None, an index array or mask, or a tuple
  of these.

Loading this module loads ``numpy.typing``, which ``import numpy`` does not: autodiff's modules
import these names only for type checkers (``if TYPE_CHECKING:``), so ``import autodiff`` never
loads it, and with ``from __future__ import annotations`` their annotations cost nothing at run
time. ``typing.get_type_hints`` resolves them given this module's names.

Examples
--------
>>> import numpy as np
>>> from autodiff.typing import Array, ArrayLike
>>> def squared_norm(x: ArrayLike) -> Array:
...     return np.sum(np.square(x))
>>> squared_norm([3.0, 4.0])
np.float64(25.0)
"""
from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .core import Tensor

__all__ = ["Array", "ArrayLike", "Axes", "DTypeLike", "Index", "Order", "Shape"]

ArrayLike = Tensor | npt.ArrayLike
Array = Tensor | np.ndarray | np.generic
Axes = int | Sequence[int] | None
Shape = int | Sequence[int]
DTypeLike = npt.DTypeLike
Order = Literal["C", "F", "A", "K"]
Index = ArrayLike | slice | EllipsisType | None | tuple[Any, ...]
