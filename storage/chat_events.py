"""Chat events seen once: the first process to record an event's key handles it.

An event that asks for work (an ``@ghost`` in an investigation's thread) is recorded in the
same transaction as its key: the key alone, without the work, would make Slack's retry of a
request whose process died a "copy" to drop, and the request would be lost.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from storage.db import Database
from storage.models import ChatEvent, Investigation

#: an inbox entry to record with an event: (session id, entry key, entry)
InboxEntry = tuple[str, str, Mapping[str, Any]]


class ChatEventRepo:
    """Deduplicates Slack's retries across processes (bolt does not)."""

    db: Database
    clock: Callable[[], datetime]

    def remember_event(self, key: str, *, inbox: InboxEntry | None = None) -> bool:
        """True the first time ``key`` is seen, False for a retry or a copy.

        With ``inbox``, the first time also adds the entry to that investigation's inbox
        (``conversation_ref["inbox"]``, never replacing an entry of the same key), in the same
        transaction: both are recorded, or neither and Slack's retry records them.
        """
        self.db.ensure_ready()
        try:
            with self.db.session() as s, s.begin():
                s.add(ChatEvent(event_key=key[:255], received_at=self.clock()))
                s.flush()  # a copy fails here, before the inbox is touched
                if inbox is not None:
                    session_id, entry_key, entry = inbox
                    row = s.get(Investigation, session_id, with_for_update=True)
                    if row is not None:  # deleted since: the event stays remembered
                        ref = copy.deepcopy(dict(row.conversation_ref or {}))
                        ref.setdefault("inbox", {}).setdefault(entry_key, dict(entry))
                        row.conversation_ref = ref
        except IntegrityError:
            return False
        return True

    def forget_events_before(self, moment: datetime) -> int:
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(delete(ChatEvent).where(ChatEvent.received_at < moment))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]
