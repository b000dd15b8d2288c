"""The ports through which the domain reaches storage: small protocols, no SQL.

``storage.Store`` implements them on SQLAlchemy; tests may pass in-memory fakes. The domain
(safety shell, orchestrator, engine) depends only on these.
"""

from __future__ import annotations

from collections.abc import Mapping
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
