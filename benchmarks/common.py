"""Timing helpers shared by the benchmarks: median of repeats, peers imported when installed."""
from __future__ import annotations

import importlib
import time
from typing import Callable


def median_time(fn: Callable, repeats: int = 7, number: int | None = None) -> float:
    """Median seconds per call over ``repeats`` batches of ``number`` calls (auto-sized)."""
    fn()
    if number is None:
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, int(0.05 / max(once, 1e-9)))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    times.sort()
    return times[len(times) // 2]


def optional(name: str):
    """The module if it is installed, else None (peers live in the optional `bench` extra)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def report(rows: list[tuple[str, float]], baseline: str) -> None:
    """Print times and ratios to the baseline row, measured in this one run."""
    base = dict(rows)[baseline]
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"  {name:<{width}}  {seconds * 1e3:10.3f} ms   {seconds / base:7.2f}x {baseline}")
