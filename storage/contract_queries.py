"""Read-only queries behind the agent contract (`ghost session list --since`, `ghost approvals
list`, `ghost watch`). Nothing here writes; the repositories keep every transition."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select

from storage.approvals import ApprovalView
from storage.approvals import _view as approval_view
from storage.investigations import InvestigationView
from storage.investigations import _view as investigation_view
from storage.models import Approval, AuditEvent, ConversationTurn, Investigation, TaskEvent
from storage.store import Store


def investigations(store: Store, *, statuses: Sequence[str] | None = None,
                   since: datetime | None = None, limit: int = 20) -> list[InvestigationView]:
    """Newest first, optionally only some states and those created since a moment."""
    store.db.ensure_ready()
    query = select(Investigation).order_by(Investigation.created_at.desc()).limit(limit)
    if statuses:
        query = query.where(Investigation.status.in_(list(statuses)))
    if since is not None:
        query = query.where(Investigation.created_at >= since)
    with store.db.session() as s:
        return [investigation_view(r) for r in s.scalars(query)]


def pending_approvals(store: Store, *, session_id: str | None = None,
                      limit: int = 50) -> list[ApprovalView]:
    """Pending requests of every investigation (or one), oldest first."""
    store.db.ensure_ready()
    query = (select(Approval).where(Approval.status == "pending")
             .order_by(Approval.requested_at).limit(limit))
    if session_id is not None:
        query = query.where(Approval.session_id == session_id)
    with store.db.session() as s:
        return [approval_view(r) for r in s.scalars(query)]


def turns_after(store: Store, session_id: str, seq: int) -> list[dict[str, Any]]:
    """Conversation turns stored after position ``seq``."""
    store.db.ensure_ready()
    query = (select(ConversationTurn)
             .where(ConversationTurn.session_id == session_id, ConversationTurn.seq > seq)
             .order_by(ConversationTurn.seq))
    with store.db.session() as s:
        return [{"seq": r.seq, "role": r.role, "content": r.content,
                 "created_at": r.created_at} for r in s.scalars(query)]


def audit_after(store: Store, session_id: str, seq: int) -> list[dict[str, Any]]:
    """Audit records written after position ``seq`` of the chain."""
    store.db.ensure_ready()
    query = (select(AuditEvent)
             .where(AuditEvent.session_id == session_id, AuditEvent.seq > seq)
             .order_by(AuditEvent.seq))
    with store.db.session() as s:
        return [{"audit_id": r.audit_id, "seq": r.seq, "timestamp": r.timestamp,
                 "kind": r.kind, "command": r.command, "classification": r.classification,
                 "action": r.action, "actor": r.actor, "status": r.status,
                 "exit_code": r.exit_code, "denial_reason": r.denial_reason, "error": r.error,
                 "duration_ms": r.duration_ms, "ref_audit_id": r.ref_audit_id}
                for r in s.scalars(query)]


def task_events_after(store: Store, session_id: str, event_id: int) -> list[dict[str, Any]]:
    """Task records appended after row ``event_id``, with that row id."""
    store.db.ensure_ready()
    query = (select(TaskEvent)
             .where(TaskEvent.session_id == session_id, TaskEvent.id > event_id)
             .order_by(TaskEvent.id))
    with store.db.session() as s:
        return [{"id": r.id, "task_id": r.task_id, "state": r.state, "record": dict(r.record)}
                for r in s.scalars(query)]
