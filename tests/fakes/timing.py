"""A guard against super-linear blow-ups that holds on a loaded machine.

Speed targets live in ``benchmarks/``; a test only needs to catch the catastrophic case (a
regex or a scan that is quadratic on hostile input), so it compares the full input with a
quarter of it instead of trusting a wall-clock limit: linear work grows about 4×, quadratic
about 16×.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _elapsed(fn: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def assert_linear(fn: Callable[[str], Any], text: str, *, floor_s: float = 1.0) -> None:
    """``fn(text)`` takes at most 10× ``fn(quarter of text)``, or ``floor_s`` at most."""
    quarter = _elapsed(fn, text[: len(text) // 4])
    full = _elapsed(fn, text)
    assert full <= max(floor_s, 10 * quarter), (
        f"{full:.2f} s on {len(text):,} chars vs {quarter:.2f} s on a quarter: super-linear")
