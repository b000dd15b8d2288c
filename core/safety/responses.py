"""The Tool 1 responses the shell returns, built in one place (also rebuilt from audit rows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.ports import ApprovalRecord

PENDING = "pending_approval"


def environment_of(command: str) -> str:
    """``azure`` for Azure CLI calls (the cloud control plane), ``local`` otherwise."""
    first = command.strip().split(maxsplit=1)[:1]
    return "azure" if first == ["az"] else "local"


def response_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """Rebuild the Tool 1 response from a ``command`` audit record (also used on resume)."""
    response: dict[str, Any] = {
        "status": record.get("status"),
        "classification": record.get("classification"),
        "action": record.get("action"),
        "output": record.get("output") or "",
        "stderr": record.get("stderr") or "",
        "exit_code": record.get("exit_code"),
        "error": record.get("error"),
        "audit_id": record.get("audit_id"),
        "output_metadata": record.get("output_metadata")
        or {"truncation_applied": False},
        "environment": record.get("environment") or "local",
    }
    if record.get("denial_reason"):
        response["denial_reason"] = record["denial_reason"]
    if record.get("action") == "user_modified" and record.get("command"):
        # an edited command names what really ran: without it the output would be read as
        # the result of the command that was asked for
        response["command"] = record["command"]
    return response


def pending_response(approval: ApprovalRecord) -> dict[str, Any]:
    return {
        "status": PENDING,
        "classification": approval.classification,
        "action": None,
        "output": "",
        "stderr": "",
        "exit_code": None,
        "error": None,
        "audit_id": None,
        "approval_id": approval.approval_id,
        "output_metadata": {"truncation_applied": False},
        "environment": approval.environment,
    }


def outcome_unknown(approval: ApprovalRecord) -> dict[str, Any]:
    return {
        "status": "error",
        "classification": approval.classification,
        "action": "user_modified" if approval.modified_by else "user_approved",
        "output": "",
        "stderr": "This approved command started but its outcome was not recorded (Ghost "
                  "stopped or another process is running it). It will not be run again.",
        "exit_code": None,
        "error": "outcome_unknown",
        "audit_id": None,
        "output_metadata": {"truncation_applied": False},
        "environment": approval.environment,
    }
