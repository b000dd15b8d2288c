"""The life of an approval request, from asking to the one run of the approved command.

Asked (stored with its ``requested`` record), decided (approve, deny, abandon, or an edit that
becomes a new request), expired, resumed from any process, run exactly once when approved (the
``approved → executing`` claim), or closed as denied — each step with its audit record. Split out
of ``core.safety.shell`` so the state machine of a request reads in one place;
:class:`ApprovalFlow` is a base of :class:`~core.safety.shell.SafeExecShell`, not used on its own.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from core.ports import ApprovalRecord
from core.safety.approval import (
    NOT_MODIFIABLE,
    ApprovalPolicy,
    Approver,
    Decision,
    DecisionKind,
    command_hash,
    is_modifiable,
)
from core.safety.approval_records import (
    ST_ABANDONED,
    ST_APPROVED,
    ST_CLOSED,
    ST_DENIED,
    ST_EXECUTED,
    ST_EXECUTING,
    ST_EXPIRED,
    ST_MODIFIED,
    ST_PENDING,
    ShellApprovals,
    request_view,
)
from core.safety.classify import classify
from core.safety.command_run import CallFn, CommandRun
from core.safety.interrupted import outcome_of, settle
from core.safety.redact import redact
from core.safety.responses import (
    environment_of,
    outcome_unknown,
    pending_response,
    response_from_record,
)
from core.safety.verdict import Verdict


class ApprovalFlow(CommandRun):
    """The approval part of the shell: what it needs is set by ``SafeExecShell``."""

    approvals: ShellApprovals
    approver: Approver
    policy: ApprovalPolicy
    requested_by: str | None

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
        if decision.kind is DecisionKind.MODIFY and not is_modifiable(current.context):
            # front ends do not offer it; an approver that sends it anyway fails closed
            decision = Decision.abandon(decision.actor, NOT_MODIFIABLE)
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

    def _request_approval(
        self, command: str, reasoning: str, verdict: Verdict, *,
        modified_by: str | None = None, replaces: str | None = None,
        environment: str | None = None, modifiable: bool = True,
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
            context={"reason": verdict.reason,
                     **({} if modifiable else {"modifiable": False})},
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
            # an SDK call runs an edited command line only when it can read its parameters
            # back from it (``call.edit``: the new call, or why this edit cannot run)
            edit = getattr(call, "edit", None)
            rebuilt = edit(approval.command) if callable(edit) else (
                "Ghost cannot run an edited Azure call. Deny it with a reason instead, and "
                "Ghost will re-plan.")
            if isinstance(rebuilt, str):
                return self._deny_instead(approval, rebuilt, call)
            call = rebuilt
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
