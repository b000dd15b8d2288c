"""The ports through which the domain reaches storage: small protocols, no SQL.

``storage.Store`` implements them on SQLAlchemy; tests may pass in-memory fakes. The domain
(safety shell, orchestrator, engine) depends only on these.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol


class AuditLog(Protocol):
    """Append-only, hash-chained audit events of one investigation."""

    def append_audit(self, session_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Append one entry (see ``core.audit_record``); return the stored record."""
        ...

    def audit_records(self, session_id: str) -> list[dict[str, Any]]:
        """All records of the investigation in order."""
        ...


class TaskLog(Protocol):
    """Append-only orchestrator task records; current state = last record per task_id."""

    def append_task_event(self, session_id: str, record: Mapping[str, Any]) -> None:
        """Append the full task record after a transition."""
        ...

    def latest_tasks(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The newest record of every task (of one investigation, or of all)."""
        ...


class ApprovalRecord(Protocol):
    """What the domain reads of a stored approval request."""

    @property
    def approval_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def command(self) -> str: ...
    @property
    def command_hash(self) -> str: ...
    @property
    def classifier_version(self) -> str: ...
    @property
    def classification(self) -> str: ...
    @property
    def tier(self) -> int | None: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def reasoning(self) -> str: ...
    @property
    def environment(self) -> str: ...
    @property
    def requested_by(self) -> str | None: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def decided_by(self) -> str | None: ...
    @property
    def denial_reason(self) -> str | None: ...
    @property
    def replaces_approval_id(self) -> str | None: ...
    @property
    def modified_by(self) -> str | None: ...
    @property
    def context(self) -> dict[str, Any] | None: ...


class ApprovalStore(Protocol):
    """Approval requests, changed only by compare-and-set (the first decision wins)."""

    def create_approval(self, session_id: str, **values: Any) -> ApprovalRecord: ...

    def get_approval(self, approval_id: str) -> ApprovalRecord | None: ...

    def transition_approval(
        self, approval_id: str, expected_version: int, changes: Mapping[str, Any]
    ) -> ApprovalRecord | None: ...
