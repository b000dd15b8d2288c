"""Read-only queries behind the agent contract (`ghost session list --since`, `ghost approvals
list`, `ghost watch`). Nothing here writes; the repositories keep every transition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, select

from storage.approvals import ApprovalView
from storage.approvals import _view as approval_view
from storage.investigations import InvestigationView
from storage.investigations import _view as investigation_view
from storage.models import Approval, AuditEvent, ConversationTurn, Investigation, TaskEvent
from storage.store import Store

T = TypeVar("T")


def _rows(store: Store, query: Select[Any], row: Callable[[Any], T]) -> list[T]:
    store.db.ensure_ready()
    with store.db.session() as s:
        return [row(r) for r in s.scalars(query)]


def _after(store: Store, model: Any, session_id: str, position: Any, after: int,
           row: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """One investigation's rows past ``after`` on an ever-growing column, in its order: what
    ``ghost watch`` polls for."""
    query = (select(model).where(model.session_id == session_id, position > after)
             .order_by(position))
    return _rows(store, query, row)


def investigations(store: Store, *, statuses: Sequence[str] | None = None,
                   since: datetime | None = None, limit: int = 20) -> list[InvestigationView]:
    """Newest first, optionally only some states and those created since a moment."""
    query = select(Investigation).order_by(Investigation.created_at.desc()).limit(limit)
    if statuses:
        query = query.where(Investigation.status.in_(list(statuses)))
    if since is not None:
        query = query.where(Investigation.created_at >= since)
    return _rows(store, query, investigation_view)


def pending_approvals(store: Store, *, session_id: str | None = None,
                      limit: int = 50) -> list[ApprovalView]:
    """Pending requests of every investigation (or one), oldest first."""
    query = (select(Approval).where(Approval.status == "pending")
             .order_by(Approval.requested_at).limit(limit))
    if session_id is not None:
        query = query.where(Approval.session_id == session_id)
    return _rows(store, query, approval_view)


def turns_after(store: Store, session_id: str, seq: int) -> list[dict[str, Any]]:
    """Conversation turns stored after position ``seq``."""
    return _after(store, ConversationTurn, session_id, ConversationTurn.seq, seq,
                  lambda r: {"seq": r.seq, "role": r.role, "content": r.content,
                             "created_at": r.created_at})


def audit_after(store: Store, session_id: str, seq: int) -> list[dict[str, Any]]:
    """Audit records written after position ``seq`` of the chain."""
    return _after(store, AuditEvent, session_id, AuditEvent.seq, seq, lambda r: {
        "audit_id": r.audit_id, "seq": r.seq, "timestamp": r.timestamp,
        "kind": r.kind, "command": r.command, "classification": r.classification,
        "action": r.action, "actor": r.actor, "status": r.status,
        "exit_code": r.exit_code, "denial_reason": r.denial_reason, "error": r.error,
        "duration_ms": r.duration_ms, "ref_audit_id": r.ref_audit_id})


def task_events_after(store: Store, session_id: str, event_id: int) -> list[dict[str, Any]]:
    """Task records appended after row ``event_id``, with that row id."""
    return _after(store, TaskEvent, session_id, TaskEvent.id, event_id,
                  lambda r: {"id": r.id, "task_id": r.task_id, "state": r.state,
                             "record": dict(r.record), "created_at": r.created_at})
