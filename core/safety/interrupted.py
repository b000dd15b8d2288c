"""What a dead process left behind in the shell's records, closed by the next holder.

A ``command_started`` record with no outcome is a command that was running when Ghost died: it
gets an ``error: "interrupted"`` outcome record (its effect is unknown; it is never run again).
An approved request still ``executing`` whose command's outcome is recorded (Ghost died between
the record and the request's update) is settled from that record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.ports import ApprovalRecord, ApprovalStore, AuditLog

EXECUTING, EXECUTED, INTERRUPTED = "executing", "executed", "interrupted"

STDERR = ("Ghost stopped while this command was running; its outcome is unknown and it was not "
          "run again.")


def close_interrupted(session_id: str, audit: AuditLog, approvals: ApprovalStore) -> list[str]:
    """Close every started command without an outcome; settle requests left ``executing``.

    Returns the audit ids of the interruption records.
    """
    records = audit.audit_records(session_id)
    finished = {r.get("ref_audit_id") for r in records if r.get("kind") == "command"}
    closed = []
    for rec in list(records):
        if rec.get("kind") != "command_started" or rec.get("audit_id") in finished:
            continue
        final = audit.append_audit(session_id, {
            **{k: rec.get(k) for k in ("command", "reasoning", "classification", "tier", "rule",
                                       "classifier_version", "action", "environment",
                                       "started_at", "details")},
            "kind": "command", "actor": "ghost", "status": "error", "error": "interrupted",
            "stderr": STDERR, "ref_audit_id": rec.get("audit_id"),
        })
        closed.append(str(final["audit_id"]))
        records.append(final)
    outcomes = {str((r.get("details") or {}).get("approval_id")): r for r in records
                if r.get("kind") == "command" and r.get("ref_audit_id")
                and (r.get("details") or {}).get("approval_id")}
    for approval_id, outcome in outcomes.items():
        current = approvals.get_approval(approval_id)
        if current is not None and current.status == EXECUTING:
            settle(approvals, current, outcome)
    return closed


def settle(approvals: ApprovalStore, approval: ApprovalRecord,
           outcome: Mapping[str, Any]) -> None:
    """Mark an ``executing`` request with the recorded outcome of its command."""
    status = INTERRUPTED if outcome.get("error") == "interrupted" else EXECUTED
    approvals.transition_approval(
        approval.approval_id, approval.version,
        {"status": status, "context": {**(approval.context or {}),
                                       "audit_id": outcome["audit_id"]}})


def outcome_of(records: list[dict[str, Any]], approval_id: str) -> dict[str, Any] | None:
    """The outcome record of the command run for this approval, if one was written."""
    for record in reversed(records):
        if record.get("kind") == "command" and record.get("ref_audit_id") and \
                (record.get("details") or {}).get("approval_id") == approval_id:
            return dict(record)
    return None
