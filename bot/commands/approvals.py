"""`ghost approvals list` and `ghost approvals decide APPROVAL_ID approve|deny|modify --as USER`:
approvals from a script or a terminal, under the same rules as the Slack and Teams buttons."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.contract.output import emit, parse_fields
from bot.contract.views import approval_doc, policy_for, when


def list_approvals(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store, build_store_if_any
    from bot.settings import load_settings
    from storage.contract_queries import pending_approvals

    fields = parse_fields(args.fields)
    settings = load_settings()
    # none yet on a fresh machine: nothing is pending (with --session: there is no such one)
    store = build_store(settings, read_only=True) if args.session else \
        build_store_if_any(settings)
    if store is not None and args.session:
        store.get_investigation(args.session)  # SESSION_NOT_FOUND, not an empty list
    rows = [] if store is None else \
        pending_approvals(store, session_id=args.session, limit=args.limit)
    docs, platforms = [], {}
    for approval in rows:
        inv = store.get_investigation(approval.session_id)  # type: ignore[union-attr]
        platforms[approval.approval_id] = inv.platform
        docs.append(approval_doc(approval, inv, policy_for(settings, inv.platform),
                                 verbose=args.verbose or bool(fields)))
    if args.json:
        emit({"count": len(docs), "approvals": docs}, session_id=args.session, fields=fields,
             items_key="approvals")
        return 0
    if not docs:
        print("No pending approvals.")
    for doc in docs:
        print_request(doc, platforms[doc["approval_id"]])
    return 0


def _next(store: object, session_id: str | None) -> str:
    """What continues the investigation after a decision, in words true for it."""
    from core.errors import UnknownInvestigation

    try:
        inv = store.get_investigation(session_id) if session_id else None  # type: ignore[attr-defined]
    except UnknownInvestigation:
        inv = None
    if inv is not None and inv.platform == "terminal":
        return (f"`ghost investigate --resume {inv.session_id}` runs it (a terminal "
                "investigation is not run by workers)")
    return "a `ghost worker` continues the investigation"


def print_request(doc: dict[str, Any], platform: str, out: TextIO | None = None) -> None:
    """One pending request for a person: what would run, until when, who may decide and the
    command that does; wrapped at spaces to the terminal (ids and commands never split)."""
    from bot.terminal.style import say, say_command

    out = out or sys.stdout
    rows = [("session", f"{doc['session_id']} ({platform})"),
            ("command", str(doc["command"])),
            ("expires", _expiry(doc)),
            ("may decide", str(doc["may_decide"]["rule"]))]
    say(out, f"\n{doc['approval_id']}  {doc['classification']}", indent="  ")
    for label, text in rows:
        say(out, f"  {label + ':':<12}{text}", indent=" " * 12)
    say_command(out, f"{'decide:':<11}", str(doc["decide_command"]))  # whole, to copy


def _expiry(doc: dict[str, Any]) -> str:
    at = doc.get("expires_at")
    if not at:
        return "never"
    if doc.get("expired"):
        return f"{at} (expired: it can no longer be approved)"
    left = datetime.fromisoformat(str(at).replace("Z", "+00:00")) - datetime.now(UTC)
    minutes = max(0, int(left.total_seconds() // 60))
    return f"{at} (in {minutes} min)"


def decide(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store
    from bot.contract.deciding import decide as apply_decision
    from bot.settings import load_settings

    fields = parse_fields(getattr(args, "fields", None))
    settings = load_settings()
    store = build_store(settings, read_only=True)
    result = apply_decision(settings, store, approval_id=args.approval_id, actor=args.actor,
                            kind=args.decision, reason=args.reason,
                            new_command=args.new_command)
    approval = store.get_approval(args.approval_id)
    successor = None
    if args.decision == "modify" and approval is not None:
        successor = next((a.approval_id for a in store.approvals(approval.session_id)
                          if a.replaces_approval_id == args.approval_id), None)
    outcome = result.outcome
    doc = {"approval_id": args.approval_id,
           "result": outcome.result if outcome else args.decision,
           "decided_by": args.actor,
           "decided_at": when(approval.decided_at) if approval else None,
           "status": approval.status if approval else None,
           "new_approval_id": successor,
           "summary": result.message,
           "next": _next(store, result.session_id)}
    if args.json:
        emit(doc, session_id=result.session_id, fields=fields)
        return 0
    print(f"{result.message}" + (f" New request: {successor}." if successor else ""))
    return 0
