"""The contract's documents built from the store: an investigation's status, a session row,
an approval request with who may decide it. Compact by default; ``verbose`` adds the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.contract.envelope import timestamp
from core.safety.approval import ApprovalPolicy

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
        return {"approvers": None, "channel": None, "excluded": [], "two_person": False,
                "rule": f"the engineer at the terminal that resumes it (`ghost investigate "
                        f"--resume {inv.session_id}`)"}
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
        "decide_command": f"ghost approvals decide {approval.approval_id} approve --as USER",
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
    """One row of `ghost session list --json`: ``interrupted`` is a terminal run nobody holds
    any more (its process died); ``cost_usd`` is null when no call reported usage or a model
    has no price (GHOST_PRICES)."""
    from bot.chat.status import shown_status
    from core.engine.usage import priced, recorded

    calls = recorded(inv.engine_state)
    dollars = priced(calls, prices or {})[1] if calls else None
    doc: dict[str, Any] = {
        "session_id": inv.session_id, "state": inv.status, "symptom": inv.symptom,
        "platform": inv.platform, "requested_by": inv.requested_by,
        "created_at": when(inv.created_at), "updated_at": when(inv.updated_at),
        "lab": inv.lab,
        "interrupted": shown_status(inv, now or datetime.now(UTC)) == "interrupted",
        "cost_usd": None if dollars is None else round(float(dollars), 6),
    }
    if verbose:
        doc |= {"turn": int(inv.state.get("turn_count") or 0), "audit_records": inv.audit_count,
                "rca_available": bool(inv.rca_markdown), "corrupted": inv.corrupted,
                "channel_ref": inv.channel_ref, "thread_ref": inv.thread_ref}
    return doc


def waiting_for(inv: Any) -> str | None:
    phase = (inv.engine_state or {}).get("phase")
    if inv.status == "awaiting_approval":
        return "approval"
    if inv.status == "awaiting_user":
        return "turn_limit_decision" if phase == "turn_limit" else "instruction"
    return None


def worker_active(inv: Any, now: datetime) -> bool:
    return bool(inv.lease_owner and inv.lease_expires_at and inv.lease_expires_at > now)


def resume_of(inv: Any, pending: Sequence[Any], now: datetime) -> tuple[bool, str | None]:
    """Whether a person or a script must act for it to go on, and the command that does."""
    sid, status = inv.session_id, inv.status
    chat = inv.platform in ("slack", "teams")
    if status == "completed":
        return False, None
    if status == "awaiting_approval" and pending:
        return True, f"ghost approvals decide {pending[0].approval_id} approve --as USER"
    interrupted = status in ("queued", "running") and inv.platform == "terminal" \
        and not worker_active(inv, now)
    if status in ("awaiting_user", "failed", "cancelled") or interrupted:
        return True, (f"/ghost resume {sid}" if chat else f"ghost investigate --resume {sid}")
    return False, None


def _hypothesis(entry: Mapping[str, Any], verbose: bool) -> dict[str, Any]:
    if verbose:
        return dict(entry)
    return {k: entry.get(k) for k in ("id", "description", "state")}


def _task(record: Mapping[str, Any], verbose: bool) -> dict[str, Any]:
    return dict(record) if verbose else {k: record.get(k) for k in TASK_FIELDS}


def status_doc(inv: Any, *, approvals: Sequence[Any], tasks: Sequence[Mapping[str, Any]],
               policy: ApprovalPolicy, limit: int, verbose: bool,
               now: datetime | None = None) -> dict[str, Any]:
    """`ghost status SID --json`: where it stands and what would move it on."""
    now = now or datetime.now(UTC)
    state, engine = inv.state, inv.engine_state or {}
    pending = [a for a in approvals if a.status == "pending"]
    hypotheses = list(state.get("hypothesis_log") or [])
    resumable, command = resume_of(inv, pending, now)
    doc: dict[str, Any] = {
        "state": inv.status,
        "symptom": inv.symptom,
        "platform": inv.platform,
        "requested_by": inv.requested_by,
        "lab": inv.lab,
        "created_at": when(inv.created_at),
        "updated_at": when(inv.updated_at),
        "phase": {"name": engine.get("phase"), "turn": int(state.get("turn_count") or 0),
                  "max_turns": engine.get("max_turns"), "waiting_for": waiting_for(inv),
                  "worker_active": worker_active(inv, now)},
        "hypotheses": [_hypothesis(h, verbose) for h in hypotheses[:limit]],
        "active_hypothesis_ids": list(state.get("active_hypothesis_ids") or []),
        "pending_approvals": [approval_doc(a, inv, policy, verbose=verbose, now=now)
                              for a in pending[:limit]],
        "tasks": [_task(t, verbose) for t in tasks[:limit]],
        "counts": {"hypotheses": len(hypotheses), "pending_approvals": len(pending),
                   "tasks": len(tasks), "audit_records": inv.audit_count},
        "rca": {"available": bool(inv.rca_markdown), "path": state.get("rca_report_path")},
        "corrupted": inv.corrupted,
        "resumable": resumable,
        "resume_command": command,
    }
    if verbose:
        doc["rca"]["markdown"] = inv.rca_markdown
        doc["document"] = inv.document
        doc["last_text"] = engine.get("last_text") or None
    return doc
