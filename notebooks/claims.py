"""The numbers a notebook's prose relies on, checked where they are computed.

``claim(name, value, expected, rtol=..., atol=...)`` asserts that ``value`` is within
``atol + rtol * |expected|`` of the ``expected`` value the prose states, and shows it: as a line
of text and, in a notebook, as data (``MIME``) that ``tests/test_notebooks.py`` reads to check
that the saved outputs, like a fresh run, are within that tolerance of the text. A tolerance
follows the testing policy (docs/development.md): it comes from what the computation guarantees (for an
optimizer's answer, the bound its stopping test gives, computed in the notebook), and for a
measured number that no algorithm bounds (a count, a trained network's statistic) it held across
the initial seeds, BLAS kernels and thread counts the notebook names, never only on one machine's
rounding.
"""
from __future__ import annotations

import numpy as np

from optimizers.stopping import DEFAULT_GTOL

MIME = "application/vnd.hessopt.claim+json"


def passing_gradient(x, f: float) -> np.ndarray:
    """The largest |g_i| (|pg_i| with bounds) hessopt's default gradient test lets pass at x,
    DEFAULT_GTOL max(1, |f|) / max(1, |x_i|) (``optimizers.stopping``): what a claim about a run's
    distance to the minimizer is derived from.

    Examples
    --------
    >>> passing_gradient([0.5, -4.0], 20.0)
    array([2.e-07, 5.e-08])
    """
    return DEFAULT_GTOL * max(1.0, abs(float(f))) / np.maximum(1.0, np.abs(np.asarray(x, dtype=float)))


def claim(name: str, value: float, expected: float, *, rtol: float = 0.0, atol: float = 0.0) -> float:
    """Assert ``|value - expected| <= atol + rtol * |expected|``, show the claim and return value.

    Examples
    --------
    >>> claim("answer", 41.9, 42.0, atol=0.5)
    ✓ answer = 41.9 (the text says 42 ± 0.5)
    41.9
    """
    value, tolerance = float(value), atol + rtol * abs(expected)
    if not tolerance > 0:
        raise ValueError(f"claim {name!r}: give a positive rtol or atol")
    if not abs(value - expected) <= tolerance:
        raise AssertionError(f"{name} = {value:.6g}, not within {tolerance:.3g} of the "
                             f"{expected:.6g} the text says")
    text = f"✓ {name} = {value:.4g} (the text says {expected:.4g} ± {tolerance:.2g})"
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:   # run as a plain script
        get_ipython = display = None
    if get_ipython is None or get_ipython() is None:
        print(text)
    else:
        display({MIME: {"name": name, "value": value, "expected": expected, "tolerance": tolerance},
                 "text/plain": text}, raw=True)
    return value
