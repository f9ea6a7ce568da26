"""Shared test fixtures."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest


class CallCounter:
    """Wraps functions so that each call adds one to ``calls[key]``."""

    def __init__(self):
        self.calls = Counter()

    def __call__(self, key: str, function: Callable) -> Callable:
        def counted(*args):
            self.calls[key] += 1
            return function(*args)
        return counted


@pytest.fixture
def counted() -> CallCounter:
    return CallCounter()
