"""Pytrees (an array, or a list, tuple or dict of arrays) as one flat vector."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import numpy as anp
from .core import value_of
from .nest import flatten


def ravel(tree) -> tuple[Any, Callable]:
    """Flatten a pytree (array, list, tuple or dict of arrays) to one vector, and the way back.

    ``unravel`` is differentiable: given a Tensor it returns Tensors (slices and reshapes).
    """
    leaves, rebuild = flatten(tree)
    shapes = [np.shape(value_of(leaf)) for leaf in leaves]
    sizes = [int(np.prod(shape)) for shape in shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    flat = np.concatenate([np.ravel(value_of(leaf)).astype(float) for leaf in leaves]) \
        if leaves else np.zeros(0)

    def unravel(vector):
        if len(leaves) == 1 and not isinstance(tree, (list, tuple, dict)):
            return anp.reshape(vector, shapes[0])
        return rebuild([anp.reshape(vector[offsets[k]:offsets[k + 1]], shape)
                        for k, shape in enumerate(shapes)])

    return flat, unravel
