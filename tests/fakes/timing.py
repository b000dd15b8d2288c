"""A guard against super-linear blow-ups that holds on a loaded machine.

Speed targets live in ``benchmarks/``; a test only needs to catch the catastrophic case (a
regex or a scan that is quadratic on hostile input), so it compares the full input with a
quarter of it instead of trusting a wall-clock limit: linear work grows about 4×, quadratic
about 16×. Both are measured in this thread's CPU time, so other processes competing for the
cores (xdist workers, a busy CI machine) do not make a linear scan look quadratic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _elapsed(fn: Callable[[str], Any], text: str) -> float:
    start = time.thread_time()
    fn(text)
    return time.thread_time() - start


def assert_linear(fn: Callable[[str], Any], text: str, *, floor_s: float = 1.0) -> None:
    """``fn(text)`` takes at most 10× ``fn(quarter of text)``, or ``floor_s`` at most."""
    quarter = _elapsed(fn, text[: len(text) // 4])
    full = _elapsed(fn, text)
    if full > max(floor_s, 10 * quarter):  # one retry: a cache miss or a GC pass on a busy host
        full = min(full, _elapsed(fn, text))
    assert full <= max(floor_s, 10 * quarter), (
        f"{full:.2f} s on {len(text):,} chars vs {quarter:.2f} s on a quarter: super-linear")
