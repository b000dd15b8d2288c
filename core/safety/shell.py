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
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from core.engine.outcomes import meaning, sdk_meaning
from core.ports import ApprovalRecord, ApprovalStore, AuditLog
from core.safety.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    Approver,
    Decision,
    DecisionKind,
    command_hash,
)
from core.safety.classify import classify
from core.safety.executor import ExecError, ExecResult, Runner, run_argv
from core.safety.files import DataFileError, read_data_file
from core.safety.interrupted import close_interrupted, outcome_of, settle
from core.safety.outcome import Outcome, child_environ, without_rc_files
from core.safety.redact import redact
from core.safety.responses import (
    environment_of,
    outcome_unknown,
    pending_response,
    response_from_record,
)
from core.safety.truncate import truncate
from core.safety.verdict import Verdict
from core.session_state import utc_now

#: An SDK call gated like a command: returns (exit_code, output, stderr).
CallFn = Callable[[], tuple[int, str, str]]

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


@dataclass(frozen=True)
class ShellLimits:
    """Bounds on one command: wall time and how much output is kept in memory."""

    timeout_s: float = 60.0
    max_output_bytes: int = 2_000_000
    max_lines: int = 200
    max_tokens: int = 4000


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
    )


class SafeExecShell:
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
        approval = self._request_approval(command, reasoning, verdict, environment=environment)
        return self._ask(approval, call=call)

    # ------------------------------------------------------------ decisions and resume
    def decide(self, approval_id: str, decision: Decision) -> ApprovalRecord | None:
        """Record a human decision on a pending request; the first decision wins.

        Returns the updated request, or None when it was no longer pending (someone else
        decided first, or it expired). Eligibility (who may decide) is the front end's check
        through ``core.safety.approval.may_decide`` before it calls this.
        """
        current = self.approvals.get_approval(approval_id)
        if current is None or current.status != ST_PENDING:
            return None
        if self._expired(current):
            self._expire(current)
            return None
        now = self.clock()
        if decision.kind is DecisionKind.APPROVE:
            changes: dict[str, Any] = {"status": ST_APPROVED}
        elif decision.kind is DecisionKind.DENY:
            changes = {"status": ST_DENIED, "denial_reason": decision.reason}
        elif decision.kind is DecisionKind.ABANDON:
            changes = {"status": ST_ABANDONED, "denial_reason": decision.reason}
        else:
            changes = {"status": ST_MODIFIED}
        changes |= {"decided_by": decision.actor, "decided_at": now}
        updated = self.approvals.transition_approval(approval_id, current.version, changes)
        if updated is None:
            return None
        self._audit_approval(updated, str(changes["status"]), decision.actor,
                             reason=decision.reason)
        if decision.kind is DecisionKind.MODIFY:
            self._modified(updated, decision)
        return updated

    def resume(self, approval_id: str, *, call: CallFn | None = None) -> dict[str, Any]:
        """Complete the ``execute`` call that returned ``pending_approval`` for this request.

        Safe to call any number of times from any process: the command runs at most once and
        later calls return the recorded outcome.
        """
        approval = self.approvals.get_approval(approval_id)
        if approval is None:
            raise KeyError(f"no approval request {approval_id}")
        if approval.status == ST_PENDING and self._expired(approval):
            approval = self._expire(approval) or approval
        status = approval.status
        if status == ST_PENDING:
            return pending_response(approval)
        if status == ST_MODIFIED:
            successor = (approval.context or {}).get("successor")
            if successor:
                return self.resume(str(successor), call=call)
            return pending_response(approval)
        if status == ST_APPROVED:
            return self._run_approved(approval, call=call)
        if status in (ST_DENIED, ST_ABANDONED, ST_EXPIRED):
            return self._close_denied(approval)
        recorded = (approval.context or {}).get("audit_id")
        if recorded:
            return self._recorded(str(recorded))
        if status == ST_EXECUTING:
            finished = outcome_of(self.audit.audit_records(self.session_id),
                                  approval.approval_id)
            if finished is not None:  # it ran; the process died before marking it executed
                settle(self.approvals, approval, finished)
                return response_from_record(finished)
        # executing with no recorded outcome: another process runs it now, or died doing so
        return outcome_unknown(approval)

    def recover_interrupted(self) -> list[str]:
        """Close every command that started but never finished (the process died).

        Returns the audit ids of the interruption records. The commands are not re-run: their
        effect is unknown, and the model is told so.
        """
        return close_interrupted(self.session_id, self.audit, self.approvals)

    def close_dangling(self, reason: str, *, keep: frozenset[str] = frozenset()) -> list[str]:
        """Close every request of this investigation still ``pending`` or ``approved`` that
        nothing will run any more (the investigation is over), each with an audit record.

        ``keep``: approval ids still waited on (a capture task's step). A request claimed at
        the same moment by another process is left to it (compare-and-set). Returns the ids.
        """
        closed = []
        for approval in self.approvals.approvals(self.session_id,
                                                 statuses=(ST_PENDING, ST_APPROVED)):
            if approval.approval_id in keep:
                continue
            done = self.approvals.transition_approval(
                approval.approval_id, approval.version,
                {"status": ST_CLOSED, "denial_reason": reason,
                 "context": {**(approval.context or {}), "closed_from": approval.status}})
            if done is not None:
                self._audit_approval(done, ST_CLOSED, "ghost", reason=reason)
                closed.append(done.approval_id)
        return closed

    # ------------------------------------------------------------------- internals
    def _adoptable(self, command: str, verdict: Verdict) -> ApprovalRecord | None:
        """A request for this very command that nothing answered yet, left by a process that
        died between asking and saving that it asked (issue #23, F1): it is this call's.

        Same investigation, same command and hash (the same rules), still ``pending`` or
        ``approved``, not an engineer's edit of another command. The oldest one wins.
        """
        bound = command_hash(command, verdict.classifier_version)
        for approval in self.approvals.approvals(self.session_id,
                                                 statuses=(ST_PENDING, ST_APPROVED)):
            if approval.command == command and approval.command_hash == bound and \
                    not approval.replaces_approval_id:
                return approval
        return None

    def _adopt(self, approval: ApprovalRecord, *, call: CallFn | None = None) -> dict[str, Any]:
        """Carry on with an adopted request instead of asking again: an approved one runs
        (once, by the claim), a pending one keeps waiting (its card was posted, or the chat
        outbox owes it); only an approver at a keyboard is asked, having seen nothing yet."""
        if approval.status == ST_PENDING and self.approver.decides_immediately and \
                not self._expired(approval):
            return self._ask(approval, call=call)
        return self.resume(approval.approval_id, call=call)

    def _request_approval(
        self, command: str, reasoning: str, verdict: Verdict, *,
        modified_by: str | None = None, replaces: str | None = None,
        environment: str | None = None,
    ) -> ApprovalRecord:
        now = self.clock()
        approval = self.approvals.create_approval(
            self.session_id,
            approval_id=uuid.uuid4().hex,
            command=command,
            command_hash=command_hash(command, verdict.classifier_version),
            classifier_version=verdict.classifier_version,
            classification=verdict.classification,
            tier=verdict.tier,
            rule=verdict.rule,
            reasoning=reasoning,
            environment=environment or environment_of(command),
            requested_by=self.requested_by,
            requested_at=now,
            expires_at=now + timedelta(seconds=self.policy.expiry_seconds),
            modified_by=modified_by,
            replaces_approval_id=replaces,
            context={"reason": verdict.reason},
            # the row and its `requested` record: one transaction (issue #23, F1)
            requested=self._approval_entry(command, reasoning, verdict, "requested",
                                           modified_by or "ghost",
                                           environment=environment or environment_of(command),
                                           hash_=command_hash(command,
                                                              verdict.classifier_version),
                                           replaces=replaces),
        )
        return approval

    def _ask(self, approval: ApprovalRecord, *, call: CallFn | None = None) -> dict[str, Any]:
        try:
            decision = self.approver.request(request_view(approval))
        except Exception as exc:  # noqa: BLE001 - an approver failure must fail closed
            decision = Decision.abandon("ghost", f"approver failed: {exc}")
        if decision is None:
            return pending_response(approval)
        self.decide(approval.approval_id, decision)
        return self.resume(approval.approval_id, call=call)

    def _modified(self, old: ApprovalRecord, decision: Decision) -> None:
        new_command = (decision.new_command or "").strip()
        verdict = classify(new_command, data_dir=self.data_dir)
        if not new_command or verdict.classification == "FORBIDDEN" or \
                redact(new_command) != new_command:
            why = ("the edited command is empty" if not new_command else
                   f"the edited command is FORBIDDEN ({verdict.rule}: {verdict.reason})"
                   if verdict.classification == "FORBIDDEN" else
                   "the edited command carries a secret")
            self.approvals.transition_approval(
                old.approval_id, old.version,
                {"status": ST_DENIED,
                 "denial_reason": f"Modification blocked: {why}. Original command not run.",
                 "context": {**(old.context or {}), "blocked_command": redact(new_command)}},
            )
            return
        successor = self._request_approval(
            new_command, old.reasoning, verdict,
            modified_by=decision.actor, replaces=old.approval_id,
            environment=old.environment,
        )
        self.approvals.transition_approval(
            old.approval_id, old.version,
            {"context": {**(old.context or {}), "successor": successor.approval_id}},
        )
        if self.approver.decides_immediately:
            # one person at a keyboard typed the new command: that is their approval
            self.decide(successor.approval_id, Decision.approve(decision.actor))
        else:
            try:
                answer = self.approver.request(request_view(successor))
            except Exception as exc:  # noqa: BLE001 - fail closed
                answer = Decision.abandon("ghost", f"approver failed: {exc}")
            if answer is not None:
                self.decide(successor.approval_id, answer)

    def _run_approved(
        self, approval: ApprovalRecord, *, call: CallFn | None = None
    ) -> dict[str, Any]:
        verdict = classify(approval.command, data_dir=self.data_dir)
        bound = command_hash(approval.command, verdict.classifier_version)
        if bound != approval.command_hash:
            # the rules changed since the human looked: their approval does not carry over
            return self._deny_instead(approval, "The safety rules changed after this approval; "
                                      "the command must be approved again.", call)
        if approval.replaces_approval_id and call is not None:
            # an SDK call cannot take an edited command line: run nothing, tell the model
            return self._deny_instead(approval, "Ghost cannot run an edited Azure call. Deny it "
                                      "with a reason instead, and Ghost will re-plan.", call)
        if verdict.classification == "FORBIDDEN":  # cannot happen: a FORBIDDEN edit is blocked
            return self._deny_instead(approval, f"Blocked by {verdict.rule}: {verdict.reason}",
                                      call)
        action = "user_modified" if approval.modified_by else "user_approved"
        base = self._fields(approval.command, approval.reasoning, verdict, action=action,
                            actor=approval.decided_by or "unknown",
                            approval_id=approval.approval_id, call=call,
                            environment=approval.environment)
        # the claim (approved → executing) and the started record: one transaction
        started = self.approvals.start_approved_command(
            approval.approval_id, approval.version, self._started_entry(base))
        if started is None:
            return self.resume(approval.approval_id, call=call)
        claimed, started_record = started
        response = self._execute_started(approval.command, verdict, base, started_record, call)
        self.approvals.transition_approval(
            claimed.approval_id, claimed.version,
            {"status": ST_EXECUTED,
             "context": {**(claimed.context or {}), "audit_id": response["audit_id"]}},
        )
        return response

    def _deny_instead(
        self, approval: ApprovalRecord, reason: str, call: CallFn | None
    ) -> dict[str, Any]:
        """Turn an approved request into a denial the model is told about (nothing runs)."""
        denied = self.approvals.transition_approval(
            approval.approval_id, approval.version,
            {"status": ST_DENIED, "denial_reason": reason},
        )
        if denied is None:  # changed under us: follow whatever happened
            return self.resume(approval.approval_id, call=call)
        return self._close_denied(denied)

    def _close_denied(self, approval: ApprovalRecord) -> dict[str, Any]:
        recorded = (approval.context or {}).get("audit_id")
        if recorded:
            return self._recorded(str(recorded))
        error = {ST_ABANDONED: "user_abandoned", ST_EXPIRED: "approval_expired"}.get(
            approval.status, "user_denied")
        record = self.audit.append_audit(self.session_id, {
            "kind": "command",
            **_approval_fields(approval),
            "action": "user_denied",
            "actor": approval.decided_by or "ghost",
            "status": "denied",
            "denial_reason": approval.denial_reason,
            "error": error,
            "environment": approval.environment,
            "details": {"approval_id": approval.approval_id},
        })
        closed = self.approvals.transition_approval(
            approval.approval_id, approval.version,
            {"status": ST_CLOSED,
             "context": {**(approval.context or {}), "audit_id": record["audit_id"],
                         "closed_from": approval.status}},
        )
        if closed is None:  # another process closed it at the same moment: theirs counts
            return self.resume(approval.approval_id)
        return response_from_record(record)

    def _run(
        self, command: str, reasoning: str, verdict: Verdict, *, action: str, actor: str,
        approval_id: str | None = None, call: CallFn | None = None,
        environment: str | None = None,
    ) -> dict[str, Any]:
        base = self._fields(command, reasoning, verdict, action=action, actor=actor,
                            approval_id=approval_id, call=call, environment=environment)
        started = self.audit.append_audit(self.session_id, self._started_entry(base))
        return self._execute_started(command, verdict, base, started, call)

    def _fields(
        self, command: str, reasoning: str, verdict: Verdict, *, action: str, actor: str,
        approval_id: str | None, call: CallFn | None, environment: str | None,
    ) -> dict[str, Any]:
        """What the started and the finished record of one command both say."""
        environment = environment or environment_of(command)
        base: dict[str, Any] = {
            "command": redact(command),
            "reasoning": reasoning,
            "classification": verdict.classification,
            "tier": verdict.tier,
            "rule": verdict.rule,
            "classifier_version": verdict.classifier_version,
            "action": action,
            "actor": actor,
            "environment": environment,
            "details": {"approval_id": approval_id} if approval_id else None,
        }
        if call is not None:  # no process runs: the command is the call's shell equivalent
            via = "sdk" if environment == "azure" else "ghost"  # Azure SDK, or Ghost itself
            base["details"] = {**(base["details"] or {}), "via": via}
        return base

    def _started_entry(self, base: Mapping[str, Any]) -> dict[str, Any]:
        return {**base, "kind": "command_started", "status": "executing",
                "started_at": self.clock().isoformat()}

    def _execute_started(self, command: str, verdict: Verdict, base: Mapping[str, Any],
                         started: Mapping[str, Any], call: CallFn | None) -> dict[str, Any]:
        """Run a command whose started record is stored, and record its outcome."""
        result = self._execute_call(call) if call else self._execute_argv(command, verdict)
        out = truncate(redact(result.stdout), max_lines=self.limits.max_lines,
                       max_tokens=self.limits.max_tokens)
        err = truncate(redact(result.stderr), max_lines=self.limits.max_lines,
                       max_tokens=self.limits.max_tokens)
        status, error = "completed", None
        if result.error:
            status, error = "error", result.error
        elif result.timed_out:
            status, error = "error", "timeout"
        metadata = {
            "truncation_applied": out.truncation_applied or err.truncation_applied,
            "output_lines": out.original_lines,
            "output_bytes": out.original_bytes,
            "bytes_dropped": result.output_bytes_dropped,
        }
        record = self.audit.append_audit(self.session_id, {
            **base, "kind": "command", "status": status, "error": error,
            "exit_code": result.exit_code, "output": out.text, "stderr": err.text,
            "started_at": started["started_at"], "finished_at": self.clock().isoformat(),
            "duration_ms": int(result.duration_s * 1000), "output_metadata": metadata,
            "ref_audit_id": started["audit_id"],
            "details": _with_meaning(base["details"], command, result, err.text),
        })
        return response_from_record(record)

    def _execute_call(self, call: CallFn) -> Outcome:
        start = self.clock()
        try:
            exit_code, output, stderr = call()
        except Exception as exc:  # noqa: BLE001 - an SDK failure is an outcome, not a crash
            return Outcome(None, "", f"{type(exc).__name__}: {exc}", False, "call_failed",
                            (self.clock() - start).total_seconds(), 0)
        return Outcome(exit_code, output, stderr, False, None,
                        (self.clock() - start).total_seconds(), 0)

    def _execute_argv(self, command: str, verdict: Verdict) -> Outcome:
        argv = verdict.argv
        if argv is None:
            return Outcome.failed(
                "unsupported_syntax",
                "Ghost runs one program without a shell: pipes, redirections, substitutions "
                "and chaining are not executed. Split it into single commands.",
            )
        if argv[0] == "cat":
            return self._cat(argv)
        try:
            result = self.runner(without_rc_files(argv), self.limits.timeout_s,
                                 self.limits.max_output_bytes)
        except ExecError as exc:
            return Outcome.failed("command_not_found", str(exc))
        return Outcome.of(result)

    def _run_argv(self, argv: Sequence[str], timeout_s: float,
                  max_output_bytes: int) -> ExecResult:
        """The production runner: the program itself, scrubbed environment, no shell."""
        return run_argv(argv, timeout_s=timeout_s, max_output_bytes=max_output_bytes,
                        env_allowlist=self.env_allowlist, environ=child_environ())

    def _cat(self, argv: tuple[str, ...]) -> Outcome:
        paths = [a for a in argv[1:] if a != "--"]
        if len(paths) != 1 or paths[0].startswith("-"):
            return Outcome.failed("unsupported_syntax", "cat reads exactly one file.")
        try:
            text = read_data_file(paths[0], self.data_dir,
                                  max_bytes=self.limits.max_output_bytes)
        except DataFileError as exc:
            return Outcome.failed("file_not_permitted", str(exc))
        return Outcome(exit_code=0, stdout=text, stderr="", timed_out=False, error=None,
                        duration_s=0.0, output_bytes_dropped=0)

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

    def _recorded(self, audit_id: str) -> dict[str, Any]:
        for record in self.audit.audit_records(self.session_id):
            if record.get("audit_id") == audit_id:
                return response_from_record(record)
        raise KeyError(f"audit record {audit_id} is missing")

    def _expired(self, approval: ApprovalRecord) -> bool:
        return approval.expires_at is not None and self.clock() >= approval.expires_at

    def _expire(self, approval: ApprovalRecord) -> ApprovalRecord | None:
        updated = self.approvals.transition_approval(
            approval.approval_id, approval.version,
            {"status": ST_EXPIRED, "decided_by": "ghost", "decided_at": self.clock(),
             "denial_reason": "No decision before the approval expired."},
        )
        if updated is not None:
            self._audit_approval(updated, ST_EXPIRED, "ghost", reason=updated.denial_reason)
        return updated

    @staticmethod
    def _approval_entry(command: str, reasoning: str, verdict: Verdict, transition: str,
                        actor: str, *, environment: str, hash_: str,
                        replaces: str | None) -> dict[str, Any]:
        """The audit entry of a request not stored yet (its id is added by the store)."""
        return {"kind": "approval", **_approval_entry_fields(command, reasoning, verdict),
                "actor": actor, "status": transition, "denial_reason": None,
                "environment": environment,
                "details": {"command_hash": hash_, "replaces_approval_id": replaces}}

    def _audit_approval(self, approval: ApprovalRecord, transition: str, actor: str, *,
                        reason: str | None = None) -> None:
        self.audit.append_audit(self.session_id, {
            "kind": "approval",
            **_approval_fields(approval),
            "actor": actor,
            "status": transition,
            "denial_reason": reason,
            "environment": approval.environment,
            "details": {"approval_id": approval.approval_id,
                        "command_hash": approval.command_hash,
                        "replaces_approval_id": approval.replaces_approval_id},
        })


def _approval_entry_fields(command: str, reasoning: str, verdict: Verdict) -> dict[str, Any]:
    return {"command": redact(command), "reasoning": reasoning,
            "classification": verdict.classification, "tier": verdict.tier,
            "rule": verdict.rule, "classifier_version": verdict.classifier_version}


def _approval_fields(approval: ApprovalRecord) -> dict[str, Any]:
    """What every audit record about an approval request repeats (command redacted)."""
    return {
        "command": redact(approval.command),
        "reasoning": approval.reasoning,
        "classification": approval.classification,
        "tier": approval.tier,
        "rule": approval.rule,
        "classifier_version": approval.classifier_version,
    }


def _with_meaning(details: dict[str, Any] | None, command: str, result: Outcome,
                  err: str) -> dict[str, Any] | None:
    """What the answer meant (DNS rcode, packet loss, HTTP status…), beside the exit code."""
    via = (details or {}).get("via")
    said = (sdk_meaning(result.exit_code, err) if via == "sdk"
            else None if via else meaning(command, result.exit_code, result.stdout,
                                          result.stderr))
    return {**(details or {}), "meaning": redact(said)} if said else details
