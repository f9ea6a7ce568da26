"""Timing helpers shared by the benchmarks: median of repeats, peers imported when installed."""
from __future__ import annotations

import importlib
import statistics
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


def interleaved_ratios(fns: dict[str, Callable], baseline: str, repeats: int = 15) -> dict:
    """Median seconds per call of each function and its median ratio to ``baseline``, timed in
    round-robin rounds so that load from other processes hits every function alike.

    Returns ``{name: (seconds, ratio)}``; each round times ``number`` calls of every function.
    """
    numbers = {}
    for name, fn in fns.items():
        fn()
        start = time.perf_counter()
        fn()
        numbers[name] = max(1, int(0.02 / max(time.perf_counter() - start, 1e-9)))
    rounds = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            rounds[name].append((time.perf_counter() - start) / numbers[name])
    base = rounds[baseline]
    return {name: (statistics.median(times), statistics.median(t / b for t, b in zip(times, base)))
            for name, times in rounds.items()}


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
