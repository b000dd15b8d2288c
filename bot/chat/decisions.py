"""What a decision is and who may make it, for every chat platform.

A click (Approve, or the Deny/Modify modal's submit) becomes a :class:`DecisionRequest`. The
:class:`Decider` applies DESIGN.md's rules through ``core.safety.approval.may_decide``, records the
decision through the shell (the first decision wins), and makes the investigation runnable so a
worker continues it. Nothing here is held in memory: a card clicked after a restart works.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bot.chat.approval_cards import DecisionOutcome, outcome_of
from bot.chat.ports import Directory
from core.errors import UnknownInvestigation
from core.safety.approval import (
    NOT_MODIFIABLE,
    ApprovalPolicy,
    Decision,
    DecisionKind,
    is_modifiable,
    may_decide,
)
from storage.investigations import PRIORITY_HUMAN


class DecisionShell(Protocol):
    def decide(self, approval_id: str, decision: Decision) -> Any: ...


KINDS = {"approve": DecisionKind.APPROVE, "deny": DecisionKind.DENY,
         "modify": DecisionKind.MODIFY}


@dataclass(frozen=True)
class DecisionRequest:
    approval_id: str
    actor: str
    kind: str  # approve | deny | modify
    reason: str | None = None
    new_command: str | None = None


@dataclass(frozen=True)
class DecisionResult:
    """``decided``, ``refused`` (not allowed), ``closed`` (already decided or expired),
    ``unknown`` (no such request)."""

    status: str
    message: str
    session_id: str | None = None
    outcome: DecisionOutcome | None = None
    message_ref: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "decided"


class Decider:
    """Checks eligibility, records the decision, requeues the investigation."""

    def __init__(self, store: Any, shell_for: Callable[[str], DecisionShell],
                 policy: ApprovalPolicy, directory: Directory) -> None:
        self.store = store
        self.shell_for = shell_for
        self.policy = policy
        self.directory = directory

    def check(self, approval_id: str, actor: str) -> DecisionResult | None:
        """A refusal to show the clicker, or None when they may decide (before a modal)."""
        approval = self.store.get_approval(approval_id)
        if approval is None:
            return DecisionResult("unknown", "This approval request no longer exists.")
        if approval.status != "pending":
            return self._closed(approval)
        try:
            inv = self.store.get_investigation(approval.session_id)
        except UnknownInvestigation:
            return DecisionResult("unknown", "This approval's investigation no longer exists.")
        groups = frozenset(g for g in self.policy.approvers
                           if g != actor and self.directory.in_group(actor, g))
        member = True
        if not self.policy.approvers:  # (a terminal run has no channel: its directory says)
            member = self.directory.is_member(actor, inv.channel_ref or "")
        verdict = may_decide(self.policy, actor=actor, actor_groups=groups,
                             investigation_requester=inv.requested_by,
                             modified_by=approval.modified_by, is_channel_member=member)
        if not verdict.allowed:
            return DecisionResult("refused", verdict.why, session_id=approval.session_id)
        return None

    def decide(self, request: DecisionRequest) -> DecisionResult:
        refusal = self.check(request.approval_id, request.actor)
        if refusal is not None:
            return refusal
        kind = KINDS[request.kind]
        if kind is DecisionKind.MODIFY and not (request.new_command or "").strip():
            return DecisionResult("refused", "The edited command is empty; nothing changed.")
        approval = self.store.get_approval(request.approval_id)
        if kind is DecisionKind.MODIFY and not is_modifiable(approval.context):
            return DecisionResult("refused", NOT_MODIFIABLE, session_id=approval.session_id)
        decision = Decision(kind, request.actor, reason=(request.reason or "").strip() or None,
                            new_command=(request.new_command or "").strip() or None)
        updated = self.shell_for(approval.session_id).decide(request.approval_id, decision)
        current = self.store.get_approval(request.approval_id)
        if updated is None:
            return self._closed(current)
        # a person decided: the command goes ahead of the other investigations' model turns
        self.store.requeue(approval.session_id, from_statuses=("awaiting_approval",),
                           priority=PRIORITY_HUMAN)
        outcome = outcome_of(current)
        if kind is DecisionKind.MODIFY and outcome.result == "modified":
            outcome = DecisionOutcome("modified", request.actor, current.decided_at,
                                      new_command=decision.new_command)
        return DecisionResult("decided", outcome.summary(), session_id=approval.session_id,
                              outcome=outcome, message_ref=current.message_ref)

    def _closed(self, approval: Any) -> DecisionResult:
        outcome = outcome_of(approval)
        if outcome.result == "expired":
            text = "This approval expired before anyone decided; the command did not run."
        else:
            who = outcome.actor or "someone"
            when = f" at {outcome.at:%H:%M} UTC" if outcome.at else ""
            text = f"Already decided: {outcome.result} by {{user:{who}}}{when}."
        return DecisionResult("closed", text, session_id=approval.session_id, outcome=outcome,
                              message_ref=approval.message_ref)
