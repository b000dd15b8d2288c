"""The Slack Web API client: the configured base URL (GovSlack, a test mock), retries on 429
that honour Retry-After, and a per-channel pace of about one post a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.http_retry import RetryHandler, RetryState
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse


class RateLimitRetry(RetryHandler):
    """Retry a 429 after the Retry-After Slack gives (sleep injectable for tests)."""

    def __init__(self, max_retry_count: int = 5,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep

    def _can_retry(self, *, state: RetryState, request: HttpRequest,
                   response: HttpResponse | None = None,
                   error: Exception | None = None) -> bool:
        return response is not None and response.status_code == 429

    def prepare_for_next_attempt(self, *, state: RetryState, request: HttpRequest,
                                 response: HttpResponse | None = None,
                                 error: Exception | None = None) -> None:
        wait = 1.0
        if response is not None:
            for key, values in response.headers.items():
                if key.lower() == "retry-after" and values:
                    try:
                        wait = float(values[0])
                    except ValueError:
                        pass
        self.sleep(min(max(wait, 0.0), 60.0))
        state.next_attempt_requested = True
        state.increment_current_attempt()


def make_client(token: str, base_url: str, *,
                sleep: Callable[[float], None] = time.sleep) -> WebClient:
    if not base_url.endswith("/"):
        base_url += "/"
    return WebClient(token=token, base_url=base_url, timeout=15,
                     retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=2),
                                     RateLimitRetry(sleep=sleep)])


class Pacer:
    """At most one post per ``interval_s`` per channel, across this process's threads."""

    def __init__(self, interval_s: float = 1.0, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, channel: str) -> float:
        """Reserve the next slot in ``channel`` and sleep until it; returns the wait."""
        with self._lock:
            now = self.clock()
            slot = max(now, self._next.get(channel, now))
            self._next[channel] = slot + self.interval_s
        delay = slot - now
        if delay > 0:
            self.sleep(delay)
        return delay


def call(client: WebClient, method: str, **kwargs: Any) -> dict[str, Any]:
    """One Web API call by name (the response's data)."""
    response = client.api_call(method, json=kwargs)
    return dict(response.data) if isinstance(response.data, dict) else {}
