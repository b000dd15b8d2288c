"""The events of `ghost watch`: what was stored since the last look, in a stable shape.

Read from the database only (turns, audit records, approvals, task records, the row), so a
watcher in any process sees what every worker and every decider did. Command output is not
repeated here: the audit record has it (`ghost audit show AUDIT_ID`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.contract.views import when

TEXT_LIMIT = 2000


@dataclass
class Cursor:
    """How far a watcher has read."""

    turn_seq: int = 0
    audit_seq: int = 0
    task_event_id: int = 0
    approvals: dict[str, str] = field(default_factory=dict)
    state: tuple[str, str | None] | None = None


def _turn_event(turn: dict[str, Any]) -> dict[str, Any]:
    parts = (turn.get("content") or {}).get("parts") or []
    text = "\n".join(str(p["text"]) for p in parts if isinstance(p, dict) and p.get("text")
                     and not p.get("thought"))
    calls = [{"name": p["functionCall"].get("name"), "args": p["functionCall"].get("args")}
             for p in parts if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
    answered = [p["functionResponse"].get("name") for p in parts
                if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
    return {"event": "turn", "seq": turn["seq"], "role": turn["role"],
            "at": when(turn.get("created_at")),
            "text": text[:TEXT_LIMIT] or None, "truncated": len(text) > TEXT_LIMIT,
            "function_calls": calls, "function_responses": answered}


def _command_event(record: dict[str, Any]) -> dict[str, Any]:
    return {"event": "command", "audit_id": record["audit_id"], "at": record["timestamp"],
            "command": record["command"], "classification": record["classification"],
            "status": record["status"], "exit_code": record["exit_code"],
            "duration_ms": record["duration_ms"], "error": record["error"],
            "action": record["action"], "actor": record["actor"],
            "denial_reason": record.get("denial_reason")}


def collect(store: Any, inv: Any, cursor: Cursor) -> list[dict[str, Any]]:
    """Events stored since ``cursor`` (which is advanced), oldest kind first."""
    from bot.state import state_of
    from storage.contract_queries import audit_after, task_events_after, turns_after

    sid = inv.session_id
    events: list[dict[str, Any]] = []
    phase = (inv.engine_state or {}).get("phase")
    state = state_of(inv)
    if cursor.state != (state.name, phase):
        cursor.state = (state.name, phase)
        events.append({"event": "state", "state": state.name, "phase": phase,
                       "turn": int(inv.state.get("turn_count") or 0),
                       "waiting_for": state.waiting_for, "at": when(inv.updated_at),
                       "summary": state.words})
    for turn in turns_after(store, sid, cursor.turn_seq):
        cursor.turn_seq = turn["seq"]
        events.append(_turn_event(turn))
    for record in audit_after(store, sid, cursor.audit_seq):
        cursor.audit_seq = record["seq"]
        if record["kind"] == "command":
            events.append(_command_event(record))
    for approval in store.approvals(sid):
        if cursor.approvals.get(approval.approval_id) == approval.status:
            continue
        cursor.approvals[approval.approval_id] = approval.status
        events.append({"event": "approval", "approval_id": approval.approval_id,
                       "status": approval.status, "command": approval.command,
                       "classification": approval.classification,
                       "requested_at": when(approval.requested_at),
                       "expires_at": when(approval.expires_at),
                       "decided_by": approval.decided_by,
                       "denial_reason": approval.denial_reason,
                       # a denial is closed once its audit record is written: what it was
                       "closed_from": (approval.context or {}).get("closed_from"),
                       "decide_command": f"ghost approvals decide {approval.approval_id} "
                                         "approve --as USER"
                       if approval.status == "pending" else None})
    for task in task_events_after(store, sid, cursor.task_event_id):
        cursor.task_event_id = task["id"]
        record = task["record"]
        events.append({"event": "task", "task_id": task["task_id"], "state": task["state"],
                       "intent": record.get("intent"), "outcome": record.get("outcome"),
                       "target": record.get("target"), "at": when(task.get("created_at"))})
    return events


def end_event(inv: Any) -> dict[str, Any]:
    return {"event": "end", "state": inv.status, "rca_available": bool(inv.rca_markdown),
            "rca_path": inv.state.get("rca_report_path"),
            "turn": int(inv.state.get("turn_count") or 0)}


def waiting_event(inv: Any, pending: list[Any], now: Any) -> dict[str, Any]:
    from bot.state import state_of

    state = state_of(inv, now=now, pending=pending)
    return {"event": "waiting", "state": state.name, "waiting_for": state.waiting_for,
            "resume_command": state.resume_command, "summary": state.words}
