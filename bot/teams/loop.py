"""One asyncio loop in a daemon thread: botbuilder is async, the engine and workers are not.

Workers (threads) post into Teams by handing coroutines to this loop; the bot's handlers run on
it and do their blocking work (database, engine) with ``asyncio.to_thread``. Calling ``run``
from the loop's own thread would deadlock, so it refuses.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Owns an event loop running in a daemon thread."""

    def __init__(self, name: str = "ghost-teams-loop") -> None:
        self.loop = asyncio.new_event_loop()
        # the handlers' blocking work (``asyncio.to_thread``) and msrest's HTTP calls share the
        # default executor: a burst of requests must not leave the calls without a thread
        self.loop.set_default_executor(ThreadPoolExecutor(max_workers=32,
                                                          thread_name_prefix="teams-io"))
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` on the loop and wait for its result (from any other thread)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop; use asyncio.to_thread "
                               "for the blocking caller")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
