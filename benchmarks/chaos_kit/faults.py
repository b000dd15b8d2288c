"""Fault windows shared by the drill's fakes and its driver: "Slack answers 429 for 6 s from
now". Every window opened is logged, so the drill can say when the last fault ended and
which requests were made while one was open."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Window:
    kind: str
    start: float
    end: float


@dataclass
class Faults:
    """Open windows by kind (monotonic clock). Thread-safe; read by the fakes per request."""

    windows: list[Window] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self, kind: str, seconds: float) -> Window:
        now = time.monotonic()
        window = Window(kind, now, now + seconds)
        with self._lock:
            self.windows.append(window)
        return window

    def mark(self, kind: str) -> Window:
        """A point fault (a kill, a database restart): a window of no length."""
        return self.open(kind, 0.0)

    def active(self, kind: str, at: float | None = None) -> bool:
        now = time.monotonic() if at is None else at
        with self._lock:
            return any(w.kind == kind and w.start <= now < w.end for w in self.windows)

    def any_active(self, at: float, slack: float = 0.0) -> bool:
        """Whether ``at`` falls in any window (widened by ``slack`` s after it ends)."""
        with self._lock:
            return any(w.start <= at < w.end + slack for w in self.windows)

    def last_end(self) -> float | None:
        with self._lock:
            return max((w.end for w in self.windows), default=None)

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for w in self.windows if w.kind == kind)
