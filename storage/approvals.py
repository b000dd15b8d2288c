"""Approval requests, changed only by compare-and-set on their version.

The first decision wins: a transition names the version it saw, and loses (returns None) when
someone else changed the request first. The approval policy (who may decide) lives in ``core``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from storage.audit import append_in
from storage.clock import as_utc
from storage.db import Database
from storage.models import Approval, Investigation


@dataclass(frozen=True)
class ApprovalView:
    """A snapshot of one approval request."""

    approval_id: str
    session_id: str
    status: str
    version: int
    command: str
    command_hash: str
    classifier_version: str
    classification: str
    tier: int | None
    rule: str | None
    reasoning: str
    environment: str
    requested_by: str | None
    requested_at: datetime
    expires_at: datetime | None
    decided_by: str | None
    decided_at: datetime | None
    denial_reason: str | None
    replaces_approval_id: str | None
    modified_by: str | None
    message_ref: dict[str, Any] | None
    context: dict[str, Any] | None


_DATETIMES = {"requested_at", "expires_at", "decided_at"}


def _view(row: Approval) -> ApprovalView:
    values: dict[str, Any] = {
        f.name: (as_utc(getattr(row, f.name)) if f.name in _DATETIMES else getattr(row, f.name))
        for f in fields(ApprovalView)
    }
    return ApprovalView(**values)


class ApprovalRepo:
    """Create, read and transition approval requests."""

    db: Database
    clock: Callable[[], datetime]

    def create_approval(self, session_id: str, *, requested: Mapping[str, Any] | None = None,
                        **values: Any) -> ApprovalView:
        """Store a request; with ``requested``, its ``approval requested`` audit record too.

        The row and the record are one transaction: a process killed in between used to leave
        a request (and its chat card) that no audit record named, which the next holder did not
        recognise as its call's, so it asked again (issue #23, F1). The investigation row is
        locked first, as every audit append does.
        """
        self.db.ensure_ready()
        row = Approval(
            approval_id=values.pop("approval_id", None) or uuid.uuid4().hex,
            session_id=session_id,
            status=values.pop("status", "pending"),
            version=1,
            requested_at=values.pop("requested_at", None) or self.clock(),
            **values,
        )
        with self.db.session() as s, s.begin():
            if requested is not None:
                s.get(Investigation, session_id, with_for_update=True)  # lock order: inv first
            s.add(row)
            if requested is not None:
                s.flush()
                details = {"approval_id": row.approval_id, **(requested.get("details") or {})}
                append_in(s, session_id, {**requested, "details": details}, self.clock())
        return _view(row)

    def get_approval(self, approval_id: str) -> ApprovalView | None:
        self.db.ensure_ready()
        with self.db.reading() as s:
            row = s.get(Approval, approval_id)
            return None if row is None else _view(row)

    def approvals(
        self, session_id: str, *, statuses: tuple[str, ...] | None = None
    ) -> list[ApprovalView]:
        self.db.ensure_ready()
        query = select(Approval).where(Approval.session_id == session_id)
        if statuses:
            query = query.where(Approval.status.in_(statuses))
        with self.db.reading() as s:
            return [_view(r) for r in s.scalars(query.order_by(Approval.requested_at))]

    def transition_approval(
        self, approval_id: str, expected_version: int, changes: Mapping[str, Any]
    ) -> ApprovalView | None:
        """Apply ``changes`` only if the request is still at ``expected_version``."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Approval)
                .where(Approval.approval_id == approval_id,
                       Approval.version == expected_version)
                .values(**dict(changes), version=expected_version + 1)
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                return None
            row = s.get(Approval, approval_id, populate_existing=True)
            assert row is not None
            return _view(row)

    def start_approved_command(
        self, approval_id: str, expected_version: int, started: Mapping[str, Any]
    ) -> tuple[ApprovalView, dict[str, Any]] | None:
        """``approved → executing`` and the ``command_started`` audit record, one transaction.

        Either both are stored or neither: a process killed in between leaves the request
        ``approved`` with no started record (it may run), never ``executing`` with nothing to
        say whether the command began. None (nothing written) when the request changed first.
        The investigation row is locked before the request, as every audit append does.
        """
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            row = s.get(Approval, approval_id)
            if row is None:
                return None
            session_id = row.session_id
            s.get(Investigation, session_id, with_for_update=True)  # lock order: inv, then req
            result = s.execute(
                update(Approval)
                .where(Approval.approval_id == approval_id,
                       Approval.version == expected_version,
                       Approval.status == "approved")
                .values(status="executing", version=expected_version + 1)
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                return None  # nothing was written; the lock goes with the transaction
            record = append_in(s, session_id, started, self.clock())
            row = s.get(Approval, approval_id, populate_existing=True)
            assert row is not None
            return _view(row), record

    def set_approval_message_ref(self, approval_id: str, ref: Mapping[str, Any]) -> None:
        """Where the request's card was posted. Not a decision: the version is left alone, so
        a click racing with this write is not mistaken for a second decision."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            s.execute(update(Approval).where(Approval.approval_id == approval_id)
                      .values(message_ref=dict(ref)))

    def due_approvals(self, now: datetime, *, limit: int = 100) -> list[ApprovalView]:
        """Pending requests whose expiry has passed (the expiry job closes them)."""
        self.db.ensure_ready()
        query = (select(Approval)
                 .where(Approval.status == "pending", Approval.expires_at.is_not(None),
                        Approval.expires_at <= now)
                 .order_by(Approval.expires_at).limit(limit))
        with self.db.reading() as s:
            return [_view(r) for r in s.scalars(query)]
