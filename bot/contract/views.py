"""The contract's documents built from the store: an investigation's status, a session row,
an approval request with who may decide it. Compact by default; ``verbose`` adds the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.contract.envelope import timestamp
from core.safety.approval import ApprovalPolicy, is_modifiable

#: platforms whose investigations were opened from the command line (`--detach`)
CLI_PLATFORM = "cli"
CLI_CHANNEL = "cli"
TERMINAL_PLATFORM = "terminal"
FINISHED = ("completed", "cancelled", "failed")
TASK_FIELDS = ("task_id", "intent", "state", "outcome", "target", "mode", "paired_task_id",
               "error_detail")


def when(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return timestamp(value if value.tzinfo else value.replace(tzinfo=UTC))


def policy_for(settings: Any, platform: str) -> ApprovalPolicy:
    """The approval policy of an investigation's platform (Teams has its own approvers)."""
    approvers = settings.teams_approvers if platform == "teams" else settings.approvers
    return ApprovalPolicy(approvers=approvers, two_person=settings.two_person,
                          expiry_seconds=settings.approval_expiry_seconds)


def deciders(inv: Any, approval: Any, policy: ApprovalPolicy) -> dict[str, Any]:
    """Who may decide a request, as the policy will judge it."""
    excluded = sorted({x for x in (inv.requested_by, approval.modified_by) if x}) \
        if policy.two_person else []
    if inv.platform == TERMINAL_PLATFORM:  # one person at a keyboard decides (DESIGN.md):
        # the two-person rule and the channel are chat features
        owner = inv.requested_by or "the engineer who started it"
        return {"approvers": None, "channel": None, "excluded": [], "two_person": False,
                "rule": f"{owner}, who started it: at the terminal (`ghost investigate "
                        f"--resume {inv.session_id}`) or with `ghost approvals decide`"}
    if policy.approvers:
        who = "anyone on the approvers list"
    elif inv.platform == CLI_PLATFORM:
        who = "anyone who runs ghost against this database"
    elif inv.channel_ref:
        who = f"any member of the {inv.platform.title()} channel {inv.channel_ref}"
    else:
        who = f"any member of the investigation's {inv.platform.title()} channel"
    rule = who + (f" except {', '.join(excluded)}" if excluded else "")
    return {"approvers": sorted(policy.approvers) or None,
            "channel": None if policy.approvers else inv.channel_ref,
            "excluded": excluded, "two_person": policy.two_person, "rule": rule}


def approval_doc(approval: Any, inv: Any, policy: ApprovalPolicy, *,
                 verbose: bool = False, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    expires = approval.expires_at
    doc: dict[str, Any] = {
        "approval_id": approval.approval_id,
        "session_id": approval.session_id,
        "status": approval.status,
        "command": approval.command,
        "classification": approval.classification,
        "rule": approval.rule,
        "requested_at": when(approval.requested_at),
        "expires_at": when(expires),
        "expired": bool(expires is not None and approval.status == "pending" and expires <= now),
        "may_decide": deciders(inv, approval, policy),
        "decided_by": approval.decided_by,
        "decide_command": f"ghost approvals decide {approval.approval_id} approve --as "
                          + (inv.requested_by or "USER" if inv.platform == TERMINAL_PLATFORM
                             else "USER"),
        # Modify only where there is something to edit (a capture's create, a command)
        "decisions": ["approve", "deny", *(["modify"] if is_modifiable(approval.context)
                                           else [])],
    }
    if verbose:
        doc |= {"tier": approval.tier, "reasoning": approval.reasoning,
                "environment": approval.environment, "command_hash": approval.command_hash,
                "classifier_version": approval.classifier_version,
                "decided_at": when(approval.decided_at), "denial_reason": approval.denial_reason,
                "modified_by": approval.modified_by,
                "replaces_approval_id": approval.replaces_approval_id}
    return doc


def session_doc(inv: Any, *, verbose: bool = False, now: datetime | None = None,
                prices: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One row of `ghost session list --json`: ``state`` is the one state story's
    (``bot.state``; ``interrupted``: a terminal run whose process is gone, with
    ``resume_command`` saying what continues it); ``cost_usd`` is null when no call reported
    usage or a model has no price (GHOST_PRICES)."""
    from bot.state import state_of
    from core.engine.usage import priced, recorded

    calls = recorded(inv.engine_state)
    dollars = priced(calls, prices or {})[1] if calls else None
    state = state_of(inv, now=now or datetime.now(UTC))
    doc: dict[str, Any] = {
        "session_id": inv.session_id, "state": state.name, "symptom": inv.symptom,
        "platform": inv.platform, "requested_by": inv.requested_by,
        "created_at": when(inv.created_at), "updated_at": when(inv.updated_at),
        "lab": inv.lab,
        "interrupted": state.interrupted,
        "resume_command": state.resume_command,
        "cost_usd": None if dollars is None else round(float(dollars), 6),
    }
    if verbose:
        doc |= {"turn": int(inv.state.get("turn_count") or 0), "audit_records": inv.audit_count,
                "rca_available": bool(inv.rca_markdown), "corrupted": inv.corrupted,
                "channel_ref": inv.channel_ref, "thread_ref": inv.thread_ref}
    return doc


def waiting_for(inv: Any, now: datetime | None = None) -> str | None:
    from bot.state import state_of

    return state_of(inv, now=now).waiting_for


def worker_active(inv: Any, now: datetime) -> bool:
    from bot.state import held

    return held(inv, now)


def resume_of(inv: Any, pending: Sequence[Any], now: datetime) -> tuple[bool, str | None]:
    """Whether a person or a script must act for it to go on, and the command that does."""
    from bot.state import state_of

    state = state_of(inv, now=now, pending=pending)
    return state.resumable, state.resume_command


def _hypothesis(entry: Mapping[str, Any], verbose: bool) -> dict[str, Any]:
    if verbose:
        return dict(entry)
    return {k: entry.get(k) for k in ("id", "description", "state")}


def _task(record: Mapping[str, Any], verbose: bool,
          approvals: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A task as the views show it: a step waiting for its approval shows the task as
    ``AWAITING_APPROVAL`` (the orchestrator's own state, e.g. APPROVED for "pre-checks
    passed", never runs ahead of the approval), with the request it waits on."""
    doc = dict(record) if verbose else {k: record.get(k) for k in TASK_FIELDS}
    return doc | task_wait(record, approvals or {})


def task_wait(record: Mapping[str, Any], approvals: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` AWAITING_APPROVAL and the step's request while its approval is pending."""
    step = record.get("pending_step")
    if not isinstance(step, Mapping) or not step.get("approval_id"):
        return {}
    approval = approvals.get(str(step["approval_id"]))
    if approval is not None and approval.status != "pending":
        return {}
    return {"state": "AWAITING_APPROVAL", "orchestrator_state": record.get("state"),
            "waiting_for_approval": {"approval_id": step["approval_id"],
                                     "step": step.get("step"), "command": step.get("command")}}


def status_doc(inv: Any, *, approvals: Sequence[Any], tasks: Sequence[Mapping[str, Any]],
               policy: ApprovalPolicy, limit: int, verbose: bool,
               now: datetime | None = None) -> dict[str, Any]:
    """`ghost status SID --json`: where it stands and what would move it on."""
    from bot.state import state_of

    now = now or datetime.now(UTC)
    state, engine = inv.state, inv.engine_state or {}
    pending = [a for a in approvals if a.status == "pending"]
    hypotheses = list(state.get("hypothesis_log") or [])
    story = state_of(inv, now=now, pending=pending)
    by_id = {a.approval_id: a for a in approvals}
    doc: dict[str, Any] = {
        "state": story.name,
        "symptom": inv.symptom,
        "platform": inv.platform,
        "requested_by": inv.requested_by,
        "lab": inv.lab,
        "created_at": when(inv.created_at),
        "updated_at": when(inv.updated_at),
        "phase": {"name": engine.get("phase"), "turn": int(state.get("turn_count") or 0),
                  "max_turns": engine.get("max_turns"), "waiting_for": story.waiting_for,
                  "worker_active": story.worker_active},
        "hypotheses": [_hypothesis(h, verbose) for h in hypotheses[:limit]],
        "active_hypothesis_ids": list(state.get("active_hypothesis_ids") or []),
        "pending_approvals": [approval_doc(a, inv, policy, verbose=verbose, now=now)
                              for a in pending[:limit]],
        "tasks": [_task(t, verbose, by_id) for t in tasks[:limit]],
        "counts": {"hypotheses": len(hypotheses), "pending_approvals": len(pending),
                   "tasks": len(tasks), "audit_records": inv.audit_count},
        "rca": {"available": bool(inv.rca_markdown), "path": state.get("rca_report_path")},
        "corrupted": inv.corrupted,
        "resumable": story.resumable,
        "resume_command": story.resume_command,
        "summary": story.words,
    }
    if verbose:
        doc["rca"]["markdown"] = inv.rca_markdown
        doc["document"] = inv.document
        doc["last_text"] = engine.get("last_text") or None
    return doc
