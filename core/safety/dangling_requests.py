"""Requests and commands a dead process or a finished investigation left open.

A request for the very command being asked again, left unanswered by a process that died between
asking and saving that it asked, is adopted instead of asked twice; at the end of an investigation
the requests nothing will run any more are closed; after a crash the started commands without an
outcome are closed as interrupted. Split out of ``core.safety.shell`` so recovery reads apart
from the normal path; :class:`DanglingRequests` is a base of
:class:`~core.safety.shell.SafeExecShell`, not used on its own.
"""

from __future__ import annotations

from typing import Any

from core.ports import ApprovalRecord
from core.safety.approval import command_hash
from core.safety.approval_flow import ApprovalFlow
from core.safety.approval_records import ST_APPROVED, ST_CLOSED, ST_PENDING
from core.safety.command_run import CallFn
from core.safety.interrupted import close_interrupted
from core.safety.verdict import Verdict


class DanglingRequests(ApprovalFlow):
    """Adoption and closing of left-over requests, as part of ``SafeExecShell``."""

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
