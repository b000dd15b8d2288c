"""Approval decisions and the rules for who may make them (DESIGN.md "Safety gate and approvals").

The gate asks an :class:`Approver` for every RISKY command. A terminal approver answers at once
(one person at a keyboard decides, and is recorded as the approver); a chat approver posts a card
and answers later, from any process, through :meth:`SafeExecShell.decide`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

#: The actor name the AI acts under; it can never approve anything.
AI_ACTOR = "ghost"


class DecisionKind(StrEnum):
    APPROVE = "approve"
    DENY = "deny"
    MODIFY = "modify"
    #: The approver could not ask or answer (closed stdin, chat outage): fail closed.
    ABANDON = "abandon"


@dataclass(frozen=True)
class Decision:
    """A human's answer to an approval request."""

    kind: DecisionKind
    actor: str
    reason: str | None = None
    new_command: str | None = None

    @classmethod
    def approve(cls, actor: str) -> Decision:
        return cls(DecisionKind.APPROVE, actor)

    @classmethod
    def deny(cls, actor: str, reason: str | None = None) -> Decision:
        return cls(DecisionKind.DENY, actor, reason=reason or None)

    @classmethod
    def modify(cls, actor: str, new_command: str) -> Decision:
        return cls(DecisionKind.MODIFY, actor, new_command=new_command)

    @classmethod
    def abandon(cls, actor: str, reason: str) -> Decision:
        return cls(DecisionKind.ABANDON, actor, reason=reason)


@dataclass(frozen=True)
class ApprovalRequest:
    """What an approver shows a human: the exact command and why it is gated."""

    approval_id: str
    session_id: str
    command: str  # redacted for display; the hash binds the exact command
    classification: str
    tier: int | None
    rule: str | None
    reason: str
    reasoning: str
    environment: str
    requested_by: str | None
    expires_at: datetime | None
    modified_by: str | None = None
    replaces_approval_id: str | None = None
    #: False for a step with nothing to edit (an SDK delete, a download): approve or deny only
    modifiable: bool = True


#: why Modify is not offered for a step with nothing to edit (shown by every front end)
NOT_MODIFIABLE = ("Modify is not offered for this step: Ghost makes it through the Azure SDK "
                  "and there is nothing in it to edit. Approve it, or deny it with a reason.")


def is_modifiable(context: Mapping[str, Any] | None) -> bool:
    """Whether a stored request may be edited (its ``context`` says so when it may not)."""
    return (context or {}).get("modifiable", True) is not False


class Approver(Protocol):
    """Asks a human. Return a decision now, or None when it will arrive later."""

    #: True for one person at a keyboard: their Modify runs their own command at once.
    decides_immediately: bool

    def request(self, request: ApprovalRequest) -> Decision | None: ...


def command_hash(command: str, classifier_version: str) -> str:
    """An approval is bound to the SHA-256 of the exact command and the classifier version."""
    return hashlib.sha256(f"{classifier_version}\x00{command}".encode()).hexdigest()


@dataclass(frozen=True)
class ApprovalPolicy:
    """Who may decide. Empty ``approvers``: any channel member except the requester."""

    approvers: frozenset[str] = field(default_factory=frozenset)
    two_person: bool = True
    expiry_seconds: int = 1800


@dataclass(frozen=True)
class Eligibility:
    allowed: bool
    why: str = ""


def may_decide(
    policy: ApprovalPolicy,
    *,
    actor: str,
    actor_groups: frozenset[str] = frozenset(),
    investigation_requester: str | None,
    modified_by: str | None,
    is_channel_member: bool,
) -> Eligibility:
    """Whether ``actor`` may approve, deny or modify a request (chat front ends)."""
    if actor == AI_ACTOR:
        return Eligibility(False, "Ghost never approves its own commands.")
    if policy.approvers:
        if actor not in policy.approvers and not (actor_groups & policy.approvers):
            return Eligibility(False, "You are not on this workspace's list of Ghost approvers.")
    elif not is_channel_member:
        return Eligibility(False, "Only members of this incident channel can decide.")
    if policy.two_person:
        if investigation_requester is not None and actor == investigation_requester:
            return Eligibility(
                False, "You started this investigation; a second engineer has to decide."
            )
        if modified_by is not None and actor == modified_by:
            return Eligibility(
                False, "You modified this command; a second engineer has to approve it."
            )
    return Eligibility(True)
