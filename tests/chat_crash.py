"""A process that dies right after it acknowledged a chat request, before it acted on it.

``DiesAfterRecord`` is the real store with one armed point: once a request's record (an inbox
entry, or an investigation with its dedup key) is committed, the next read the dying process
makes raises :class:`Killed` — a ``BaseException``, so nothing on the way out catches it and
no later line of that "process" runs, exactly what a kill -9 right after the ack does. The
Slack ack has gone out by then (bolt acks before the listener's next read); a Teams request
gets no answer (the connector would redeliver it). Another process, on the same database, then
does what the next one would: the ``reconcile`` job (or the redelivery) applies the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.store import Store


class Killed(BaseException):
    """The process died here."""


class DiesAfterRecord(Store):
    """The store of a process that dies at its first read after a request was recorded."""

    armed: bool = False
    dying: bool = False
    deaths: int = 0

    def _maybe_die(self) -> None:
        if self.dying:
            self.dying = False
            self.deaths += 1
            raise Killed("the process died after recording the request")

    def _recorded(self) -> None:
        if self.armed:
            self.armed, self.dying = False, True

    def change_conversation_ref(self, session_id: str,
                                change: Callable[[dict[str, Any]], Any]) -> Any:
        self._maybe_die()
        added: list[str] = []

        def watching(ref: dict[str, Any]) -> Any:
            before = set(ref.get("inbox") or {})
            out = change(ref)
            added.extend(set(ref.get("inbox") or {}) - before)
            return out

        result = super().change_conversation_ref(session_id, watching)
        if added:
            self._recorded()
        return result

    def remember_event(self, key: str, *, inbox: Any = None) -> bool:
        self._maybe_die()
        first = super().remember_event(key, inbox=inbox)
        if first and inbox is not None:
            self._recorded()
        return first

    def create_investigation(self, **kwargs: Any) -> Any:
        self._maybe_die()
        created = super().create_investigation(**kwargs)
        if kwargs.get("event_key"):
            self._recorded()
        return created

    def get_investigation(self, session_id: str) -> Any:
        self._maybe_die()
        return super().get_investigation(session_id)

    def get_approval(self, approval_id: str) -> Any:
        self._maybe_die()
        return super().get_approval(approval_id)

    def find_by_thread(self, platform: str, channel_ref: str, thread_ref: str) -> Any:
        self._maybe_die()
        return super().find_by_thread(platform, channel_ref, thread_ref)
