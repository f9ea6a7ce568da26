"""``autodiff.jit``: trace a function once per signature and replay it as a NumPy program.

- ``tracing``: ``trace(f, *args)`` records what f computes (a ``Recording``: records in order,
  inputs, outputs), by observing the engine (``core.state.observers``);
- ``program``: ``Program`` turns records into a straight-line Python function of arrays, through
  passes that keep every floating-point operation and its order (dead code, simplification), and
  ``split`` is partial evaluation at late inputs;
- ``lowering``: how a program writes its ops (operators as operators, sums of slices unrolled, a
  value read once fused into its reader), with the same floating-point operations;
- ``scalar``: a program whose values are all small written on Python floats (elements unpacked
  once, ops unrolled, sums in NumPy's order), run where it is faster, with the same results bit
  for bit;
- ``native``: a program compiled by numba to one native function (the optional ``compiled``
  extra; ``autodiff.function(f, native=True)``), equal within rounding;
- ``traced``: ``Traced``, the cache of programs by signature (``signature``) that
  ``autodiff.function`` returns, and the transform protocol through which transforms of it replay;
- ``content``: ``content_key``, when two recordings are the same program (the same ops on
  constants of the same bytes), for keeping programs across functions that compute the same;
- ``cache``: ``LeastRecentlyUsed``, the bounded cache ``Traced`` (and ``autodiff.sparse_hessian``,
  and ``native``'s programs by content) keeps.

This package knows no transform and no operator: a derivative is recorded like any computation.
"""
from .cache import LeastRecentlyUsed
from .content import content_key, unchanged
from .program import Program, split
from .traced import CACHE_SIZE, MAX_TRACES_PER_SIGNATURE, Late, Traced
from .tracing import Recording, UntraceableError, trace

__all__ = ["trace", "Recording", "Program", "split", "Traced", "Late", "UntraceableError",
           "MAX_TRACES_PER_SIGNATURE", "CACHE_SIZE", "LeastRecentlyUsed", "content_key", "unchanged"]
