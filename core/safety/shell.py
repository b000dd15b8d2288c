"""SafeExecShell: classify → gate → execute → redact → truncate → audit.

``execute({"command", "reasoning"})`` returns the response of ghost-design Tool 1. SAFE commands
run at once; FORBIDDEN ones never run; RISKY ones go to an approver. A terminal approver answers
at once; a chat approver answers later, so ``execute`` returns ``status: "pending_approval"`` with
an ``approval_id``, and :meth:`SafeExecShell.resume` completes the same call once the decision is
recorded (:meth:`SafeExecShell.decide`), in any process, exactly once: an approved request moves
``approved → executing → executed`` by compare-and-set, so only one process runs it.

No command runs without a durable trace: a ``command_started`` audit record is written before the
process starts; for an approved command it is committed in the same transaction as the request's
``approved → executing`` move, so after a crash an ``executing`` request always has its started
record (outcome unknown: never re-run) and one without a started record is still ``approved`` (it
may run). After a crash, :meth:`SafeExecShell.recover_interrupted` closes every started command
that has no outcome with ``error: "interrupted"``; it is never run again.

Its parts live in modules named for them, as bases of :class:`SafeExecShell`:
``core.safety.command_run`` (running and recording one command), ``core.safety.approval_flow``
(the life of an approval request), ``core.safety.dangling_requests`` (adopting and closing what
a dead process or a finished investigation left) and ``core.safety.approval_records`` (statuses,
the store, the approver's view).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from core.ports import AuditLog
from core.safety.approval import ApprovalPolicy, Approver
from core.safety.approval_records import ShellApprovals
from core.safety.classify import classify
from core.safety.command_run import CallFn, ShellLimits
from core.safety.dangling_requests import DanglingRequests
from core.safety.executor import Runner
from core.safety.redact import redact
from core.safety.responses import environment_of, response_from_record
from core.safety.verdict import Verdict
from core.session_state import utc_now


class SafeExecShell(DanglingRequests):
    """The only way the domain runs a command. One instance per investigation."""

    def __init__(
        self,
        session_id: str,
        *,
        audit: AuditLog,
        approvals: ShellApprovals,
        approver: Approver,
        data_dir: Path,
        policy: ApprovalPolicy | None = None,
        limits: ShellLimits | None = None,
        requested_by: str | None = None,
        clock: Callable[[], datetime] = utc_now,
        env_allowlist: tuple[str, ...] = (),
        runner: Runner | None = None,
    ) -> None:
        self.session_id = session_id
        self.audit = audit
        self.approvals = approvals
        self.approver = approver
        self.data_dir = data_dir
        self.policy = policy or ApprovalPolicy()
        self.limits = limits or ShellLimits()
        self.requested_by = requested_by
        self.clock = clock
        self.env_allowlist = env_allowlist
        #: runs the argv once the gate has let it through (the lab substitutes its own)
        self.runner: Runner = runner or self._run_argv

    # ----------------------------------------------------------------- the tool call
    def execute(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Run one command through the gate; see the module docstring."""
        command = str(request.get("command") or "")
        reasoning = str(request.get("reasoning") or "")
        if not command.strip():
            return self._refuse(command, reasoning, None, "empty_command",
                                "No command was given.")
        verdict = classify(command, data_dir=self.data_dir)
        if verdict.classification == "FORBIDDEN":
            return self._refuse(command, reasoning, verdict, "forbidden_command",
                                f"Blocked by {verdict.rule}: {verdict.reason}")
        if verdict.classification == "SAFE":
            return self._run(command, reasoning, verdict, action="auto_approved", actor="ghost")
        if redact(command) != command:
            return self._refuse(
                command, reasoning, verdict, "secret_in_command",
                "The command line carries a secret; it will not be stored for approval. "
                "Reference the secret indirectly (e.g. a Key Vault reference) instead.",
            )
        adopted = self._adoptable(command, verdict)
        if adopted is not None:
            return self._adopt(adopted)
        approval = self._request_approval(command, reasoning, verdict)
        return self._ask(approval)

    def execute_call(
        self, command: str, reasoning: str, call: CallFn, *, environment: str = "azure"
    ) -> dict[str, Any]:
        """Gate an SDK call exactly like a shell command, shown as its ``az`` equivalent.

        ``call`` runs only if the gate allows it (SAFE, or RISKY and approved); it returns
        ``(exit_code, output, stderr)`` and its exceptions become ``error: "call_failed"``. When
        the approval is pending, finish with ``resume(approval_id, call=call)``.
        """
        if not command.strip():
            return self._refuse(command, reasoning, None, "empty_command", "No command given.")
        verdict = classify(command, data_dir=self.data_dir)
        if verdict.classification == "FORBIDDEN":
            return self._refuse(command, reasoning, verdict, "forbidden_command",
                                f"Blocked by {verdict.rule}: {verdict.reason}")
        if verdict.classification == "SAFE":
            return self._run(command, reasoning, verdict, action="auto_approved",
                             actor="ghost", call=call, environment=environment)
        adopted = self._adoptable(command, verdict)
        if adopted is not None:
            return self._adopt(adopted, call=call)
        # an SDK call with nothing to edit (a delete, a download) is approved or denied only
        approval = self._request_approval(command, reasoning, verdict, environment=environment,
                                          modifiable=callable(getattr(call, "edit", None)))
        return self._ask(approval, call=call)

    def _refuse(self, command: str, reasoning: str, verdict: Verdict | None, error: str,
                message: str) -> dict[str, Any]:
        record = self.audit.append_audit(self.session_id, {
            "kind": "command",
            "command": redact(command),
            "reasoning": reasoning,
            "classification": verdict.classification if verdict else None,
            "tier": verdict.tier if verdict else None,
            "rule": verdict.rule if verdict else None,
            "classifier_version": verdict.classifier_version if verdict else None,
            "action": "blocked",
            "actor": "ghost",
            "status": "error",
            "error": error,
            "stderr": message,
            "environment": environment_of(command),
        })
        return response_from_record(record)
