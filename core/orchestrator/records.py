"""The task record (orchestrator-design.md "Task Registry Schema") and the responses built from it.

A record is a plain JSON-able dict, because it is appended verbatim to the task-events table and
exported as the spec's JSONL. Every transition goes through :func:`enter` so the state, its
timestamp and the history never disagree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.orchestrator.model import (
    ACTIVE,
    STATUS_OF_OUTCOME,
    OrchestratorConfig,
    TaskState,
)
from core.session_state import iso_utc

Task = dict[str, Any]

#: The spec's timestamp keys, plus one per state that has no spec key.
TIMESTAMP_KEYS = (
    "created", "detecting", "approved", "provisioned", "first_poll", "last_poll", "downloading",
    "analyzing", "completed", "failed", "timed_out", "cancelled", "abandoned",
    "cleanup_started", "cleanup_completed", "done",
)
_STATE_STAMP = {
    TaskState.CREATED: "created", TaskState.DETECTING: "detecting",
    TaskState.APPROVED: "approved", TaskState.PROVISIONING: "provisioned",
    TaskState.DOWNLOADING: "downloading", TaskState.ANALYZING: "analyzing",
    TaskState.COMPLETED: "completed", TaskState.FAILED: "failed",
    TaskState.TIMED_OUT: "timed_out", TaskState.CANCELLED: "cancelled",
    TaskState.ABANDONED: "abandoned", TaskState.CLEANING_UP: "cleanup_started",
    TaskState.DONE: "done",
}
_OUTCOME_OF_STATE = {
    TaskState.COMPLETED: "completed", TaskState.FAILED: "failed",
    TaskState.TIMED_OUT: "timed_out", TaskState.CANCELLED: "cancelled",
    TaskState.ABANDONED: "abandoned",
}


def new_task(
    *, task_id: str, session_id: str, target: str, parameters: dict[str, Any],
    context: str, config: OrchestratorConfig, now: datetime,
) -> Task:
    """A CREATED record; cloud fields fill in as the task advances."""
    local = config.local_capture_dir / f"{task_id}.pcap"
    return {
        "task_id": task_id,
        "session_id": session_id,
        "intent": "capture_traffic",
        "target": target,
        "target_type": None,
        "state": TaskState.CREATED.value,
        "outcome": None,
        "investigation_context": context,
        "parameters": parameters,
        "resource_group": parameters["resource_group"],
        "resource_id": None,
        "location": None,
        "azure_operation_id": task_id,
        "storage_account": parameters["storage_account"],
        "storage_resource_group": parameters.get("storage_resource_group")
        or parameters["resource_group"],
        "storage_container": config.storage_container,
        "storage_blob_name": f"{task_id}.pcap",
        "local_pcap_path": None,
        "planned_pcap_path": str(local),
        "pcap_bytes": None,
        "semantic_json_path": None,
        "report_path": None,
        "summary_path": None,
        "mode": None,
        "paired_task_id": None,
        "pair_role": None,
        "awaiting_partner": False,
        "capture_created": False,
        "cleanup_plan": [],
        "cleanup_status": None,
        "poll_count": 0,
        "max_polls": config.max_polls,
        "last_status": None,
        "pending_step": None,
        "shell_audit_ids": [],
        "timestamps": {key: (iso_utc(now) if key == "created" else None)
                       for key in TIMESTAMP_KEYS},
        "history": [{"state": TaskState.CREATED.value, "at": iso_utc(now)}],
        "error_detail": None,
        "warnings": [],
        "duration_seconds": None,
    }


def enter(task: Task, state: TaskState, now: datetime, *, error: str | None = None) -> None:
    """Move ``task`` to ``state``: stamp it, record the history, settle the outcome."""
    task["state"] = state.value
    stamp = _STATE_STAMP.get(state)
    if stamp and task["timestamps"].get(stamp) is None:
        task["timestamps"][stamp] = iso_utc(now)
    task["history"].append({"state": state.value, "at": iso_utc(now)})
    if error is not None:
        task["error_detail"] = error
    outcome = _OUTCOME_OF_STATE.get(state)
    if outcome is not None and task.get("outcome") is None:
        task["outcome"] = outcome
        task["duration_seconds"] = seconds_since(task, now)


def seconds_since(task: Task, now: datetime) -> float:
    created = datetime.fromisoformat(str(task["timestamps"]["created"]).replace("Z", "+00:00"))
    return round((now - created).total_seconds(), 3)


def state_of(task: Task) -> TaskState:
    return TaskState(str(task["state"]))


def note_audit(task: Task, response: dict[str, Any]) -> None:
    """Keep the audit id of every gated call this task made (task → shell trace)."""
    audit_id = response.get("audit_id")
    if audit_id and audit_id not in task["shell_audit_ids"]:
        task["shell_audit_ids"].append(audit_id)


def build_response(task: Task, now: datetime, *, message: str,
                   partner: Task | None = None) -> dict[str, Any]:
    """The Brain-facing response: orchestration status only, never raw shell fields."""
    state = state_of(task)
    outcome = task.get("outcome")
    polling = state in (TaskState.PROVISIONING, TaskState.WAITING)
    status = STATUS_OF_OUTCOME.get(outcome, "task_pending")
    if outcome == "completed" and state is TaskState.ANALYZING:
        status = "task_pending"
    response: dict[str, Any] = {
        "task_id": task["task_id"],
        "status": status,
        "state": state.value,
        "target": task["target"],
        "target_type": task.get("target_type"),
        "investigation_context": task.get("investigation_context") or "",
        "result": _result(task) if outcome == "completed" else None,
        "cleanup_status": task.get("cleanup_status"),
        "error_detail": task.get("error_detail"),
        "poll_count": task["poll_count"] if polling else None,
        "max_polls": task["max_polls"] if polling else None,
        "elapsed_seconds": seconds_since(task, now),
        "duration_seconds": task.get("duration_seconds"),
        "message": message,
    }
    pending = task.get("pending_step")
    if pending:
        response["waiting_for_approval"] = {
            "step": pending["step"], "approval_id": pending["approval_id"],
            "command": pending["command"],
        }
    if task.get("paired_task_id"):
        response["paired_task"] = partner_summary(task, partner)
    if task.get("warnings"):
        response["warnings"] = list(task["warnings"])
    if task.get("edited"):
        response["edited"] = list(task["edited"])  # an engineer changed it before approving
    return response


def partner_summary(task: Task, partner: Task | None) -> dict[str, Any]:
    if partner is None:
        return {"task_id": task["paired_task_id"], "state": None,
                "error_detail": "partner task not found in the registry"}
    summary: dict[str, Any] = {"task_id": partner["task_id"], "state": partner["state"]}
    if state_of(partner) in ACTIVE:
        summary["poll_count"] = partner["poll_count"]
    if partner.get("error_detail"):
        summary["error_detail"] = partner["error_detail"]
    return summary


def _result(task: Task) -> dict[str, Any]:
    result: dict[str, Any] = {
        "local_pcap_path": task.get("local_pcap_path"),
        "semantic_json_path": task.get("semantic_json_path"),
        "report_path": task.get("report_path"),
        "executive_summary_path": task.get("summary_path"),
        "pcap_bytes": task.get("pcap_bytes"),
    }
    if task.get("mode"):
        result["mode"] = task["mode"]
    return result
