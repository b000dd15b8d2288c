"""Gated cloud calls: every backend call goes through the safety shell as its ``az`` equivalent.

A backend call is wrapped into the shell's ``CallFn`` shape (exit code, JSON output, stderr with
``Code: message``), so its outcome is audited like a command and can be read back from the audit
by another process when an approval is decided later (the record is the only shared memory).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.orchestrator.backend import CaptureBackendError
from core.safety.approval import Decision

#: What the shell runs in place of a process: (exit_code, output, stderr).
CallFn = Callable[[], tuple[int, str, str]]


class GateShell(Protocol):
    """The part of ``core.safety.shell.SafeExecShell`` the orchestrator uses."""

    def execute(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def execute_call(self, command: str, reasoning: str, call: CallFn, *,
                     environment: str = "azure") -> dict[str, Any]: ...

    def resume(self, approval_id: str, *, call: CallFn | None = None) -> dict[str, Any]: ...

    def decide(self, approval_id: str, decision: Decision) -> object: ...


@dataclass(frozen=True)
class EditableCall:
    """A backend call whose approval may be edited (Modify): ``edit`` reads the edited ``az``
    equivalent back and returns the call to run instead, or why that edit cannot run. The
    shell offers Modify only for calls that have it (a delete has nothing to edit)."""

    run: CallFn
    edit: Callable[[str], CallFn | str]

    def __call__(self) -> tuple[int, str, str]:
        return self.run()


def backend_call(fn: Callable[[], Mapping[str, Any] | None]) -> CallFn:
    """Wrap one backend operation: JSON output on success, ``Code: message`` on failure."""

    def call() -> tuple[int, str, str]:
        try:
            data = fn()
        except CaptureBackendError as exc:
            return 1, "", f"{exc.code}: {exc.message}"
        return 0, json.dumps(dict(data or {}), separators=(",", ":"), sort_keys=True), ""

    return call


@dataclass(frozen=True)
class Outcome:
    """A shell response, read for what the orchestrator must do next."""

    kind: str  # ok | pending | denied | failed | unknown
    data: dict[str, Any] = field(default_factory=dict)
    code: str = ""
    message: str = ""
    approval_id: str | None = None
    audit_id: str | None = None

    @property
    def not_found(self) -> bool:
        return self.kind == "failed" and self.code == "ResourceNotFound"


def read_outcome(response: Mapping[str, Any]) -> Outcome:
    """Classify a shell response; never raises on odd output."""
    status = response.get("status")
    audit_id = response.get("audit_id")
    stderr = str(response.get("stderr") or "").strip()
    if status == "pending_approval":
        return Outcome("pending", approval_id=str(response.get("approval_id")))
    if status == "denied":
        reason = response.get("denial_reason") or response.get("error") or "denied"
        return Outcome("denied", code=str(response.get("error") or "user_denied"),
                       message=str(reason), audit_id=audit_id)
    error = response.get("error")
    if error in ("interrupted", "outcome_unknown"):
        return Outcome("unknown", code=str(error), message=stderr, audit_id=audit_id)
    if status == "completed" and response.get("exit_code") == 0:
        return Outcome("ok", data=_json(str(response.get("output") or "")), audit_id=audit_id)
    code, _, message = stderr.partition(": ")
    if not message or " " in code:
        code, message = str(error or "failed"), stderr or f"exit code {response.get('exit_code')}"
    return Outcome("failed", code=code, message=message, audit_id=audit_id)


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"value": value}
