"""Keep large freed buffers inside the process (glibc only), so sweeps stop page-faulting.

Batched sweeps allocate many temporaries of the same few sizes (megabytes each). With glibc's
defaults such buffers are mmap-ed and returned to the system on free, so every new one pays page
faults and zeroing, which measured as 40-50% of a batched Hessian or Jacobian sweep here. Raising the
mmap and trim thresholds (to 32 MB and 128 MB) lets freed buffers be reused from the heap instead;
this is what caching allocators in other array libraries do. The price: up to 128 MB of freed
memory may stay with the process. Set AUTODIFF_MALLOC_TUNING=0 to keep the system defaults.
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_malloc(mmap_threshold: int = 32 << 20, trim_threshold: int = 128 << 20) -> bool:
    """Apply the thresholds with glibc's mallopt; returns whether they were applied."""
    if os.environ.get("AUTODIFF_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))


tune_malloc()   # on import (autodiff imports this module first)
