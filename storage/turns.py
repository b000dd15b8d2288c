"""Conversation turns, stored verbatim so that a suspended investigation resumes exactly."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from core.errors import UnknownInvestigation
from storage.db import Database
from storage.models import ConversationTurn, Investigation


class TurnRepo:
    """Append and read conversation turns (model turns with thought signatures intact)."""

    db: Database
    clock: Callable[[], datetime]

    def append_turn(self, session_id: str, role: str, content: Mapping[str, Any]) -> int:
        """Append a turn and return its position (1-based)."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            if s.get(Investigation, session_id, with_for_update=True) is None:
                raise UnknownInvestigation(session_id)
            return add_turn(s, session_id, role, content, self.clock())

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """``[{"seq", "role", "content"}]`` in order."""
        self.db.ensure_ready()
        with self.db.reading() as s:
            rows = s.scalars(
                select(ConversationTurn)
                .where(ConversationTurn.session_id == session_id)
                .order_by(ConversationTurn.seq)
            )
            return [{"seq": r.seq, "role": r.role, "content": r.content} for r in rows]


def add_turn(s: Session, session_id: str, role: str, content: Mapping[str, Any],
             now: datetime) -> int:
    """Add one turn inside the caller's transaction (the investigation row is locked)."""
    last = s.scalar(
        select(func.max(ConversationTurn.seq)).where(ConversationTurn.session_id == session_id)
    )
    seq = (last or 0) + 1
    s.add(ConversationTurn(session_id=session_id, seq=seq, role=role, content=dict(content),
                           created_at=now))
    return seq
