"""Timing helpers shared by the benchmarks: median of repeats, peers imported when installed."""
from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable


def calls_per_batch(fn: Callable, seconds: float) -> int:
    """How many calls of ``fn`` fill about ``seconds`` (after one warm-up call)."""
    fn()
    start = time.perf_counter()
    fn()
    return max(1, int(seconds / max(time.perf_counter() - start, 1e-9)))


def seconds_per_call(fn: Callable, number: int) -> float:
    """Mean seconds per call over one batch of ``number`` calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def median_time(fn: Callable, repeats: int = 7, number: int | None = None) -> float:
    """Median seconds per call over ``repeats`` batches of ``number`` calls (auto-sized)."""
    if number is None:
        number = calls_per_batch(fn, 0.05)
    else:
        fn()
    return statistics.median_low(seconds_per_call(fn, number) for _ in range(repeats))


def interleaved_ratios(fns: dict[str, Callable], baseline: str, repeats: int = 15) -> dict:
    """Median seconds per call of each function and its median ratio to ``baseline``, timed in
    round-robin rounds so that load from other processes hits every function alike.

    Returns ``{name: (seconds, ratio)}``; each round times one batch of calls of every function.
    """
    numbers = {name: calls_per_batch(fn, 0.02) for name, fn in fns.items()}
    rounds = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            rounds[name].append(seconds_per_call(fn, numbers[name]))
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
