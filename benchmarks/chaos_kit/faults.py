"""Fault windows shared by the drill's fakes and its driver: "Slack answers 429 for 6 s from
now". Every window opened is logged, so the drill can say when the last fault ended and
which requests were made while one was open."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any


def quiet_errors(server: Any) -> None:
    """A killed Ghost leaves half-open connections to the fakes: not worth a traceback."""
    default = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        default(request, client_address)

    server.handle_error = handle_error


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

    def open_at(self, at: float, slack: float = 0.0) -> list[str]:
        """The kinds of the windows ``at`` falls in (widened by ``slack`` s after they end)."""
        with self._lock:
            return sorted({w.kind for w in self.windows if w.start <= at < w.end + slack})

    def overlaps(self, start: float, end: float) -> bool:
        """Whether any window was open at some moment of [start, end]."""
        with self._lock:
            return any(w.start <= end and w.end >= start for w in self.windows)

    def last_end(self) -> float | None:
        with self._lock:
            return max((w.end for w in self.windows), default=None)

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for w in self.windows if w.kind == kind)
