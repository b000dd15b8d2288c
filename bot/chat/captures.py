"""Packet captures' progress: the thread line for a capture tool's result, and the
per-capture lines (state, polls) kept in ``conversation_ref`` for the status message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def task_line(name: str, result: Mapping[str, Any]) -> str:
    """A capture's progress (the orchestrator's tools); without a task, what failed and the
    orchestrator's message, which says what to fix (e.g. the Azure setting)."""
    task = result.get("task_id")
    state = result.get("state") or result.get("status")
    message = str(result.get("message") or result.get("error_detail") or "").strip()
    if not task:
        if result.get("status") == "error":
            return f"⚠️ `{name}` failed: {message or result.get('error') or 'no details'}"
        return f"`{name}`: {message or state}"
    edited = result.get("edited")
    if isinstance(edited, list) and edited:  # an engineer's Modify changed what ran
        message += f" (edited by an engineer: {'; '.join(str(e) for e in edited)})"
    return f"Capture {task}: {state}" + (f" — {message}" if message else "") + f" ({name})"


CAPTURE_DONE = ("COMPLETED", "FAILED", "TIMED_OUT", "CANCELLED", "DONE", "ABANDONED")


def record_capture(ref: dict[str, Any], name: str, result: Mapping[str, Any]) -> list[str]:
    """Fold a capture tool's result into ``ref["captures"]`` (edited in place); return the task
    ids that have just reached a final state (worth one line in the thread)."""
    captures: dict[str, Any] = ref.setdefault("captures", {})
    finished: list[str] = []
    nested = result.get("tasks")
    for item in nested if isinstance(nested, list) and nested else [result]:
        task_id = item.get("task_id") if isinstance(item, Mapping) else None
        if not task_id:
            continue
        entry = captures.setdefault(str(task_id), {"state": "", "checks": 0})
        previous = entry.get("state")
        entry["state"] = str(item.get("state") or item.get("status") or "?")
        if isinstance(item.get("waiting_for_approval"), Mapping):  # never ahead of approval
            entry["state"] = "AWAITING_APPROVAL"
        if name == "check_task":
            entry["checks"] = int(entry.get("checks") or 0) + 1
        if item.get("poll_count") is not None:
            entry["polls"] = int(item["poll_count"])
            entry["max_polls"] = item.get("max_polls")
        if entry["state"] in CAPTURE_DONE and previous not in CAPTURE_DONE:
            finished.append(str(task_id))
    return finished


def capture_lines(ref: Mapping[str, Any] | None, limit: int = 6) -> tuple[str, ...]:
    """One line per capture for the status message: task id, state, poll count."""
    captures = (ref or {}).get("captures") or {}
    lines = []
    for task_id, entry in list(captures.items())[-limit:]:
        polls, state = entry.get("polls"), entry.get("state")
        if polls is None:
            polled = f"checked {int(entry.get('checks') or 0)}×"
        elif state in CAPTURE_DONE or not entry.get("max_polls"):
            polled = f"{polls} poll(s)"
        else:
            polled = f"poll {polls}/{entry['max_polls']}"
        lines.append(f"`{task_id}` {entry.get('state') or '?'} · {polled}")
    return tuple(lines)
