"""Background delivery: a worker or a listener records what a thread is owed and goes on; a few
threads of this process send it.

Before, a worker thread posted each message itself and slept in the Slack pacer (about one
message a second per channel): with twenty investigations in one channel, threads meant for
model turns and approved commands spent seconds asleep behind other investigations' posts, and
approvals waited for a free thread. The outbox already makes every post durable before it is
sent and keeps each thread's order (``bot.chat.outbox``); the pump only moves the sending off
the caller's thread. One key (an investigation) is sent by one pump thread at a time; a request
for a key being sent is remembered and run again right after, so nothing owed is left behind.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)


class Pump:
    """Runs ``run(key)`` in background threads, one at a time per key, again when asked again
    while it ran."""

    def __init__(self, run: Callable[[str], Any], *, threads: int = 8,
                 name: str = "ghost-pump") -> None:
        self.run = run
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix=name)
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._again: set[str] = set()
        self._idle = threading.Condition(self._lock)

    def __call__(self, key: str) -> None:
        with self._lock:
            if key in self._running:
                self._again.add(key)
                return
            self._running.add(key)
        try:
            self._pool.submit(self._loop, key)
        except RuntimeError:  # shut down: the periodic jobs deliver what is owed
            with self._lock:
                self._running.discard(key)

    def _loop(self, key: str) -> None:
        while True:
            try:
                self.run(key)
            except Exception:  # noqa: BLE001 - owed posts stay owed; the jobs retry them
                log.exception("background delivery for %s failed", key)
            with self._lock:
                if key in self._again:
                    self._again.discard(key)
                    continue
                self._running.discard(key)
                self._idle.notify_all()
                return

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is being sent (tests, shutdown), False if ``timeout`` passed."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
