"""x0's floating-point precision at the interface of ``minimize`` and ``least_squares``.

A float32 (or float16) x0 is run in float64 and its result's ``x`` (and ``jac`` or ``grad``) come
back in x0's dtype, leaf by leaf for a pytree, with a sentence in the message saying so: never a
silent promotion. The objective is evaluated in float64 because the optimizers' stopping tests
assume its precision: run end to end in float32, 12 of 16 runs (the 8 second-order methods on a
20-feature logistic regression and on the 4-variable Rosenbrock function, default gtol 1e-5)
stopped with status 2 (no progress at working precision) before the gradient test could pass.
A model's Variables keep their own dtype (``Variable.assign`` casts), and ``hessopt.nn`` layers
built from float32 inputs have float32 Variables.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad

LOW_PRECISION = (np.dtype(np.float16), np.dtype(np.float32))


def in_x0_precision(result: OptimizeResult, x0, fields: tuple[str, ...]) -> OptimizeResult:
    """``result`` with ``fields`` (in x0's form) cast leaf by leaf to x0's float16 or float32 dtypes,
    and the message saying so; unchanged for float64 (or integer, or Variable) x0."""
    leaves = ad.tree.flatten(x0)[0]
    if any(isinstance(leaf, ad.Variable) for leaf in leaves):
        return result
    dtypes = [np.asarray(ad.core.value_of(leaf)).dtype for leaf in leaves]
    low = sorted({str(dtype) for dtype in dtypes if dtype in LOW_PRECISION})
    if not low:
        return result
    for field in fields:
        values, rebuild = ad.tree.flatten(result[field])
        if len(values) == len(dtypes):
            result[field] = rebuild([np.asarray(value).astype(dtype) if dtype in LOW_PRECISION else value
                                     for value, dtype in zip(values, dtypes)])
    result.message += (f" x0 is {' and '.join(low)}: the run computed in float64 (the stopping tests assume its "
                       f"precision); {' and '.join(fields)} are returned in x0's dtype.")
    return result
