"""Chat events seen once: the first process to record an event's key handles it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from storage.db import Database
from storage.models import ChatEvent


class ChatEventRepo:
    """Deduplicates Slack's retries across processes (bolt does not)."""

    db: Database
    clock: Callable[[], datetime]

    def remember_event(self, key: str) -> bool:
        """True the first time ``key`` is seen, False for a retry or a copy."""
        self.db.ensure_ready()
        try:
            with self.db.session() as s, s.begin():
                s.add(ChatEvent(event_key=key[:255], received_at=self.clock()))
        except IntegrityError:
            return False
        return True

    def forget_events_before(self, moment: datetime) -> int:
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(delete(ChatEvent).where(ChatEvent.received_at < moment))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]
