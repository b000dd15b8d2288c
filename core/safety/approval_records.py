"""What the shell stores about an approval request: its statuses, the store, the approver's view.

Split out of ``core.safety.shell`` so the gate, the approval flow, the closing of dangling requests
and the front ends that show a pending request (``bot.commands.investigate``) read the same status
names and the same redacted view from one small module named for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from core.ports import ApprovalRecord, ApprovalStore
from core.safety.approval import ApprovalRequest, is_modifiable
from core.safety.redact import redact

# Approval statuses (the approvals table); the shell is the only writer.
ST_PENDING = "pending"
ST_APPROVED = "approved"
ST_EXECUTING = "executing"
ST_EXECUTED = "executed"
ST_DENIED = "denied"
ST_ABANDONED = "abandoned"
ST_EXPIRED = "expired"
ST_MODIFIED = "modified"
ST_CLOSED = "closed"
ST_INTERRUPTED = "interrupted"


class ShellApprovals(ApprovalStore, Protocol):
    """The approval store, plus the writes that must be atomic with an audit record.

    ``create_approval(..., requested=entry)`` stores the request and its ``approval
    requested`` record in one transaction (both or neither)."""

    def approvals(self, session_id: str, *,
                  statuses: tuple[str, ...] | None = None) -> Sequence[ApprovalRecord]:
        """The investigation's requests (with those statuses), oldest first."""
        ...

    def start_approved_command(
        self, approval_id: str, expected_version: int, started: Mapping[str, Any]
    ) -> tuple[ApprovalRecord, dict[str, Any]] | None:
        """``approved → executing`` and the ``command_started`` record in one transaction;
        None (nothing written) when the request changed first."""
        ...


def request_view(approval: ApprovalRecord) -> ApprovalRequest:
    """A stored approval request as an approver is shown it (the command redacted)."""
    return ApprovalRequest(
        approval_id=approval.approval_id,
        session_id=approval.session_id,
        command=redact(approval.command),
        classification=approval.classification,
        tier=approval.tier,
        rule=approval.rule,
        reason=str((approval.context or {}).get("reason") or ""),
        reasoning=approval.reasoning,
        environment=approval.environment,
        requested_by=approval.requested_by,
        expires_at=approval.expires_at,
        modified_by=approval.modified_by,
        replaces_approval_id=approval.replaces_approval_id,
        modifiable=is_modifiable(approval.context),
    )
