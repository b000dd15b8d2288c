"""The wording of approval cards: a RISKY command waiting for a human, who may approve it,
and what replaces the buttons once it is decided (approved and ran, denied, edited, refused,
expired, closed). Slack and Teams render the same words; user ids stay raw here (each
platform has its own mention syntax) and text may contain `code spans`, which both display."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.chat.records import ApprovalLike, InvestigationLike
from core.safety.approval import ApprovalPolicy, is_modifiable


@dataclass(frozen=True)
class ApprovalCard:
    """A RISKY command waiting for a human."""

    approval_id: str
    session_id: str
    command: str
    classification: str
    tier: int | None
    rule: str | None
    risk: str
    reasoning: str
    environment: str
    investigation_requester: str | None
    modified_by: str | None
    needed: str
    expires_at: datetime | None
    #: False for a step with nothing to edit (an SDK delete or download): no Modify button
    modifiable: bool = True


def approvals_needed(policy: ApprovalPolicy, requester: str | None,
                     modified_by: str | None) -> str:
    """Who can approve this, in one sentence."""
    who = ("one of the configured Ghost approvers" if policy.approvers
           else "any member of this channel")
    if not policy.two_person:
        return f"1 approval from {who}."
    excluded = [name for name, user in (("the requester", requester),
                                        ("the editor", modified_by)) if user]
    if requester and modified_by == requester:
        excluded = ["the requester (who also edited it)"]
    return f"1 approval from {who}, other than {' and '.join(excluded)}." if excluded else \
        f"1 approval from {who}."


def approval_card(approval: ApprovalLike, inv: InvestigationLike,
                  policy: ApprovalPolicy) -> ApprovalCard:
    return ApprovalCard(
        approval_id=approval.approval_id, session_id=approval.session_id,
        command=approval.command, classification=approval.classification, tier=approval.tier,
        rule=approval.rule, risk=str((approval.context or {}).get("reason") or ""),
        reasoning=approval.reasoning, environment=approval.environment,
        investigation_requester=inv.requested_by, modified_by=approval.modified_by,
        needed=approvals_needed(policy, inv.requested_by, approval.modified_by),
        expires_at=approval.expires_at, modifiable=is_modifiable(approval.context),
    )


@dataclass(frozen=True)
class DecisionOutcome:
    """What replaces a card's buttons once it is decided, for everyone."""

    result: str  # approved | denied | modified | expired | abandoned | blocked
    actor: str | None
    at: datetime | None
    reason: str | None = None
    new_command: str | None = None
    #: the approval's own status where it says more than ``result`` (executed: it ran)
    stage: str | None = None
    #: a refused edit: the command the editor typed (redacted), shown on the card
    blocked_command: str | None = None
    #: once the approved command ran: its exit code, or what stopped it (``ran_outcome``)
    exit_code: int | None = None
    run_failure: str | None = None

    def _ran(self) -> str:
        """How far an approved command got, for the title."""
        if self.run_failure:
            return f"failed ({self.run_failure})"
        if self.stage == "executed":
            return "ran" if self.exit_code is None else f"ran (exit {self.exit_code})"
        if self.stage == "interrupted":
            return "interrupted while it ran"
        return "running"

    def icon(self) -> str:
        """The mark before the title: a ✅ never stands next to a command that failed."""
        if self.result == "approved" and self.run_failure:
            return "❗"
        return {"approved": "✅", "denied": "🚫", "modified": "✏️", "expired": "⌛",
                "blocked": "⛔"}.get(self.result, "•")

    def headline(self, who: str = "") -> str:
        """The decided card's title and notification: what happened, and by whom."""
        by = f" by {who}" if who else ""
        if self.result == "approved":
            return f"Approved{by} — {self._ran()}"
        if self.result == "denied":
            return f'Denied{by}: "{self.reason}"' if self.reason else \
                f"Denied{by} — no reason given"
        if self.result == "modified":
            return f"Modified{by} — the edit needs its own approval"
        if self.result == "blocked":
            return "Edit refused — nothing ran"
        if self.result == "expired":
            return "Expired — nobody decided in time"
        return f"Closed{by} — nothing ran"

    def summary(self, who: str = "") -> str:
        """One line for the card; ``who`` is the decider as the platform renders a mention
        (empty: not named), so it reads: Approved by @ana at 09:12 UTC — running it now."""
        when = (f" by {who}" if who else "") + (f" at {self.at:%H:%M} UTC" if self.at else "")
        if self.result == "approved":
            if self.run_failure:
                return (f"Approved{when} — it did not run to the end: {self.run_failure}. "
                        "The details are in the thread.")
            if self.stage == "executed":
                code = "" if self.exit_code is None else f" (exit {self.exit_code})"
                return f"Approved{when} — it ran{code}; its output is in the thread."
            if self.stage == "interrupted":
                return (f"Approved{when} — Ghost stopped while it ran; it was not run again. "
                        "The thread says what is known.")
            return f"Approved{when} — running it now."
        if self.result == "denied":
            why = f' Reason: "{self.reason}"' if self.reason else " No reason given."
            return f"Denied{when}. Ghost was told and will re-plan.{why}"
        if self.result == "modified":
            return (f"Modified{when} to `{self.new_command}`. The edited command needs its own "
                    "approval (new card below).")
        if self.result == "blocked":
            edited = f" `{self.blocked_command}`" if self.blocked_command else ""
            return (f"Edit{edited}{when} refused: {refusal_reason(self.reason)}. Neither it nor "
                    "the original command ran; Ghost was told.")
        if self.result == "expired":
            return "Expired — nobody decided in time. The command did not run; Ghost was told."
        return f"Closed{when}: {self.reason or 'the investigation was stopped'}. Nothing ran."


_FORBIDDEN_EDIT = re.compile(
    r"^the edited command is FORBIDDEN \((?P<rule>[^:()]+): (?:Refused \((?P=rule)\): )?"
    r"(?P<why>.*)\)$", re.S)


def refusal_reason(reason: str | None) -> str:
    """Why an edit was refused, said once: the gate's "Modification blocked: … (T0.x: Refused
    (T0.x): …). Original command not run." becomes "it is FORBIDDEN (T0.x): …"."""
    text = (reason or "the safety gate refused it").strip()
    text = text.removeprefix("Modification blocked: ").removesuffix(
        ". Original command not run.").strip()
    found = _FORBIDDEN_EDIT.match(text)
    if found:
        return f"it is FORBIDDEN ({found['rule']}): {found['why'].strip().rstrip('.')}"
    if text.startswith("the edited command "):
        return "it " + text.removeprefix("the edited command ").rstrip(".")
    return text.rstrip(".")


def outcome_of(approval: ApprovalLike) -> DecisionOutcome:
    """The outcome line for a request that is no longer pending."""
    status = approval.status
    closed_from = str((approval.context or {}).get("closed_from") or "")
    if status in ("closed",) and closed_from:
        status = closed_from
    if status in ("approved", "executing", "executed", "interrupted"):
        result = "approved"
    elif status == "modified":
        result = "modified"
    elif status == "denied" and (approval.context or {}).get("blocked_command") is not None:
        result = "blocked"
    elif status in ("denied", "expired", "abandoned"):
        result = status
    else:
        result = status
    successor_cmd = (approval.context or {}).get("new_command")
    blocked = (approval.context or {}).get("blocked_command") if result == "blocked" else None
    return DecisionOutcome(result=result, actor=approval.decided_by, at=approval.decided_at,
                           reason=approval.denial_reason,
                           new_command=str(successor_cmd) if successor_cmd else None,
                           stage=str(approval.status),
                           blocked_command=str(blocked) if blocked else None)


def ran_outcome(outcome: DecisionOutcome, result: Mapping[str, Any]) -> DecisionOutcome:
    """An approved card's outcome once its command's result is known: ran (exit N), or
    failed with the reason in a few words (not installed, stopped, outcome unknown)."""
    from dataclasses import replace

    if outcome.result != "approved":
        return outcome
    if result.get("status") == "error":
        error = str(result.get("error") or "unknown")
        if error in ("interrupted", "outcome_unknown"):
            return replace(outcome, stage="interrupted")
        failure = {"command_not_found": "not installed",
                   "timeout": "stopped at the time limit"}.get(error, error.replace("_", " "))
        return replace(outcome, stage="executed", run_failure=failure)
    code = result.get("exit_code")
    return replace(outcome, stage="executed",
                   exit_code=int(code) if isinstance(code, int) else None)
