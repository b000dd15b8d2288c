"""The Slack Web API client: the configured base URL (GovSlack, a test mock), retries on 429
that honour Retry-After and on 5xx with a bounded backoff, and the pace of Ghost's calls.

Slack limits methods differently (api.slack.com/apis/rate-limits): ``chat.postMessage`` about
one message a second per channel, with short bursts allowed; ``chat.update`` is Tier 3, about
50 a minute per workspace for the method. :class:`Pacer` keeps one budget per kind, so a burst
of status edits never delays a thread root, and edits of one message coalesce (latest wins).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.http_retry import RetryHandler, RetryState
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse

log = logging.getLogger(__name__)


def _retry_after(response: HttpResponse | None) -> float | None:
    if response is None:
        return None
    for key, values in response.headers.items():
        if key.lower() == "retry-after" and values:
            try:
                return float(values[0])
            except ValueError:
                return None
    return None


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
        wait = _retry_after(response)
        self.sleep(min(max(1.0 if wait is None else wait, 0.0), 60.0))
        state.next_attempt_requested = True
        state.increment_current_attempt()


#: Slack's transient server errors: the request may be sent again after a short wait.
SERVER_ERRORS = frozenset({500, 502, 503, 504})


class ServerErrorRetry(RetryHandler):
    """Retry a 500/502/503/504 ``max_retry_count`` times, waiting ``base_s``, 2×, 4×… (at most
    ``max_wait_s``; a Retry-After on a 503 is honoured up to that bound).

    Its count is its own (kept in the retry state), so earlier 429 retries of the same call do
    not use it up. After the last retry the error reaches the caller, whose durable outbox tries
    again later: a 5xx is never the reason an investigation fails (issue 23). A 502/504 from a
    gateway can, rarely, hide a post Slack did accept; the retry may then show it twice.
    """

    def __init__(self, max_retry_count: int = 2, *, base_s: float = 0.5,
                 max_wait_s: float = 4.0, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.base_s, self.max_wait_s, self.sleep = base_s, max_wait_s, sleep

    def can_retry(self, *, state: RetryState, request: HttpRequest,
                  response: HttpResponse | None = None,
                  error: Exception | None = None) -> bool:
        done = int((state.custom_values or {}).get("server_error_retries") or 0)
        return (done < self.max_retry_count
                and self._can_retry(state=state, request=request, response=response,
                                    error=error))

    def _can_retry(self, *, state: RetryState, request: HttpRequest,
                   response: HttpResponse | None = None,
                   error: Exception | None = None) -> bool:
        return response is not None and response.status_code in SERVER_ERRORS

    def prepare_for_next_attempt(self, *, state: RetryState, request: HttpRequest,
                                 response: HttpResponse | None = None,
                                 error: Exception | None = None) -> None:
        values = state.custom_values if state.custom_values is not None else {}
        done = int(values.get("server_error_retries") or 0)
        values["server_error_retries"] = done + 1
        state.custom_values = values
        wait = min(self.base_s * 2 ** done, self.max_wait_s)
        told = _retry_after(response)
        if told is not None:
            wait = min(max(told, 0.0), self.max_wait_s)
        status = response.status_code if response is not None else "?"
        log.warning("Slack answered %s to %s; retrying in %.1fs (retry %d of %d)", status,
                    request.url.rsplit("/", 1)[-1], wait, done + 1, self.max_retry_count)
        self.sleep(wait)
        state.next_attempt_requested = True
        state.increment_current_attempt()


def make_client(token: str, base_url: str, *,
                sleep: Callable[[float], None] = time.sleep) -> WebClient:
    if not base_url.endswith("/"):
        base_url += "/"
    return WebClient(token=token, base_url=base_url, timeout=15,
                     retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=2),
                                     RateLimitRetry(sleep=sleep),
                                     ServerErrorRetry(sleep=sleep)])


@dataclass
class _Lane:
    """A token bucket as a schedule (GCRA): ``burst`` calls at once, then one per
    ``interval_s``. ``due`` is when the bucket would be full again."""

    interval_s: float
    burst: int
    due: float = 0.0

    def reserve(self, now: float) -> float:
        """Take a slot; return the time it is at (``now`` or later)."""
        self.due = max(self.due, now) + self.interval_s
        slot = self.due - self.burst * self.interval_s
        return slot if slot - now > 1e-6 else now  # no float dust (1.2 × 10 ≠ 12.0)

    def push(self, now: float) -> None:
        """Count a call made through another lane against this one (its average rate)."""
        self.due = max(self.due, now) + self.interval_s


@dataclass
class _Edit:
    send: Callable[[], Any]
    seq: int


#: edits sent, per message (bounded: an old message's entry is forgotten)
_SENT_KEPT = 4096


class Pacer:
    """Ghost's pace per kind of Slack call, across this process's threads.

    ``post`` (a reply in a thread): at most one per ``interval_s`` per channel, as Slack asks.
    ``root`` (the message that starts an investigation's thread): up to ``root_burst`` at once
    per channel — Slack allows short bursts — so 20 investigations started together all show
    within a second or two; each root still counts against the channel's replies, so the
    average stays about one a second. ``update`` (``chat.update``): its own budget for the
    process, ``updates_per_minute`` with a burst of ``update_burst``, and :meth:`update`
    coalesces edits of one message. ``interval_s`` 0 turns all pacing off (tests, benchmarks).
    """

    def __init__(self, interval_s: float = 1.0, *, root_burst: int = 20,
                 updates_per_minute: float = 50.0, update_burst: int = 10,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = interval_s
        self.root_burst = max(1, root_burst)
        self.update_interval_s = 60.0 / updates_per_minute if interval_s > 0 else 0.0
        self.clock = clock
        self.sleep = sleep
        self._posts: dict[str, _Lane] = {}
        self._roots: dict[str, _Lane] = {}
        self._updates = _Lane(self.update_interval_s, max(1, update_burst))
        self._edits: dict[tuple[str, str], _Edit] = {}
        self._sent: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._seq = itertools.count(1)
        self._sending = [threading.Lock() for _ in range(64)]  # striped by message
        self._lock = threading.Lock()
        self._due = threading.Condition(self._lock)
        self._later: list[tuple[float, int, tuple[str, str]]] = []  # (slot, seq, message)
        self._editor: threading.Thread | None = None

    def _post_lane(self, channel: str) -> _Lane:
        return self._posts.setdefault(channel, _Lane(self.interval_s, 1))

    def _reserve(self, channel: str, kind: str) -> tuple[float, float]:
        """(now, slot) for one call of ``kind``; the caller sleeps outside the lock."""
        with self._lock:
            now = self.clock()
            if kind == "update":
                return now, self._updates.reserve(now)
            if kind == "root":
                lane = self._roots.setdefault(channel, _Lane(self.interval_s, self.root_burst))
                slot = lane.reserve(now)
                self._post_lane(channel).push(now)
                return now, slot
            if kind != "post":
                raise ValueError(f"unknown kind of Slack call {kind!r}: post, root or update")
            return now, self._post_lane(channel).reserve(now)

    def wait(self, channel: str, kind: str = "post") -> float:
        """Reserve the next slot of ``kind`` in ``channel`` and sleep until it; returns the
        wait. ``wait(channel)`` alone paces a reply, as before kinds existed."""
        now, slot = self._reserve(channel, kind)
        delay = slot - now
        if delay > 0:
            self.sleep(delay)
        return delay

    def update(self, channel: str, key: str, send: Callable[[], Any], *,
               wait: bool = True) -> bool:
        """Edit message ``key`` with ``send`` in an ``update`` slot, latest wins: while an
        edit of the same message waits for its slot, a newer one replaces it and this call
        returns False at once (the edit waiting sends the newest). True when it sent.

        ``wait=False`` (status edits): when no slot is free now, the edit is handed to a
        background editor that sends it when one is, and the caller goes on — an
        investigation never waits for its status message; an error there is logged."""
        message = (channel, key)
        with self._lock:
            seq = next(self._seq)
            waiting = self._edits.get(message)
            if waiting is not None:
                waiting.send, waiting.seq = send, seq
                return False
            now = self.clock()
            slot = self._updates.reserve(now)
            edit = self._edits[message] = _Edit(send, seq)
            if slot > now and not wait:
                heapq.heappush(self._later, (slot, seq, message))
                if self._editor is None:
                    self._editor = threading.Thread(target=self._edit_later, daemon=True,
                                                    name="slack-status-edits")
                    self._editor.start()
                self._due.notify()
                return False
        try:
            if slot > now:
                self.sleep(slot - now)
        finally:
            with self._lock:
                self._edits.pop(message, None)
        return self._send(message, edit)

    def _send(self, message: tuple[str, str], edit: _Edit) -> bool:
        with self._sending[hash(message) % len(self._sending)]:
            with self._lock:  # a newer edit that overtook this one was sent: nothing to do
                if self._sent.get(message, 0) > edit.seq:
                    return False
            edit.send()
            with self._lock:
                self._sent[message] = edit.seq
                self._sent.move_to_end(message)
                while len(self._sent) > _SENT_KEPT:
                    self._sent.popitem(last=False)
        return True

    def _edit_later(self) -> None:
        """The background editor: sends each handed-over edit at its slot, then exits when
        none is left (started again by the next one)."""
        while True:
            with self._lock:
                while True:
                    if not self._later:
                        self._editor = None
                        return
                    slot, _seq, message = self._later[0]
                    delay = slot - self.clock()
                    if delay <= 0:
                        break
                    self._due.wait(delay)
                heapq.heappop(self._later)
                edit = self._edits.pop(message, None)
            if edit is None:
                continue
            try:
                self._send(message, edit)
            except Exception as exc:  # noqa: BLE001 - a status edit: redrawn on the next change
                log.warning("Slack status edit of %s in %s failed: %s: %s", message[1],
                            message[0], type(exc).__name__, exc)


def call(client: WebClient, method: str, **kwargs: Any) -> dict[str, Any]:
    """One Web API call by name (the response's data)."""
    response = client.api_call(method, json=kwargs)
    return dict(response.data) if isinstance(response.data, dict) else {}
