"""The contract's subcommands (`ghost status`, `ghost approvals`, `ghost watch`) and the
contract flags of existing ones, added to the `ghost` parser by ``bot.cli``."""

from __future__ import annotations

import argparse
from typing import Any

from bot.contract.flags import add_contract, add_json, add_verbose, positive_int

__all__ = ["HANDLERS", "add_commands", "add_json"]

HANDLERS: dict[tuple[str, ...], str] = {
    ("status",): "status:status",
    ("approvals", "list"): "approvals:list_approvals",
    ("approvals", "decide"): "approvals:decide",
    ("watch",): "watch:watch",
    ("audit", "show"): "audit:show",
}


def add_commands(groups: Any) -> None:
    """`ghost status`, `ghost approvals list|decide`, `ghost watch`."""
    status = groups.add_parser(
        "status", help="where an investigation stands: phase, approvals, tasks, resume",
        description="State, phase (turn, what it waits for), hypotheses, pending approvals "
        "(who may decide, expiry), tasks, and whether and how it can be resumed.")
    status.add_argument("session_id", metavar="SID")
    add_contract(status, limit=20)

    approvals = groups.add_parser("approvals", help="list or decide pending approvals")
    cmds = approvals.add_subparsers(dest="command", metavar="SUBCOMMAND")
    listing = cmds.add_parser("list", help="pending approval requests, oldest first")
    listing.add_argument("--session", metavar="SID", help="only this investigation's")
    add_contract(listing, limit=50)
    decide = cmds.add_parser(
        "decide", help="approve, deny or modify a request (the same rules as Slack and Teams)",
        description="Decide a pending request as USER under the approval policy of the "
        "investigation's platform: the approvers list, a second engineer, expiry, the "
        "command's hash; the first decision wins, from here or from a chat.")
    decide.add_argument("approval_id", metavar="APPROVAL_ID")
    decide.add_argument("decision", choices=("approve", "deny", "modify"))
    decide.add_argument("--reason", help="deny: why (the model is told)")
    decide.add_argument("--command", dest="new_command", metavar="C",
                        help="modify: the command to run instead")
    decide.add_argument("--as", dest="actor", required=True, metavar="USER",
                        help="who decides (a chat user id, or a name on GHOST_APPROVERS)")
    add_json(decide, "the decision")
    add_contract_fields_only(decide)

    watch = groups.add_parser(
        "watch", help="stream an investigation's events until it ends",
        description="Print turns, commands with their outcomes, approvals, tasks and state "
        "changes as they are stored, until the investigation completes, fails or is "
        "cancelled (exit 0 when completed, 1 otherwise).")
    watch.add_argument("session_id", metavar="SID")
    watch.add_argument("--jsonl", action="store_true", help="one JSON event per line")
    watch.add_argument("--until-waiting", action="store_true",
                       help="also stop (exit 1) when it waits for a person")
    watch.add_argument("--timeout", type=float, metavar="S",
                       help="stop after S seconds (exit 6); the investigation goes on")
    watch.add_argument("--interval", type=float, default=1.0, metavar="S",
                       help="poll every S seconds (default 1)")
    watch.add_argument("--limit", type=positive_int, metavar="N",
                       help="at most N events, then stop (exit 0)")


def add_contract_fields_only(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fields", metavar="A,B.C",
                        help="with --json: keep only these fields (dotted paths)")


def add_audit_show(audit_cmds: Any) -> None:
    show = audit_cmds.add_parser("show", help="one audit record by its id")
    show.add_argument("audit_id", metavar="AUDIT_ID")
    add_contract(show, what="the record", verbose=True)


def add_session_list_flags(listing: argparse.ArgumentParser) -> None:
    add_json(listing, "the list")
    add_contract_fields_only(listing)
    add_verbose(listing)
    listing.add_argument("--status", metavar="S[,S]",
                         help="only these states (queued, running, awaiting_approval, "
                         "awaiting_user, completed, cancelled, failed)")
    listing.add_argument("--since", metavar="WHEN",
                         help="created since: an ISO date or time (UTC), or an age like 30m, "
                         "2h, 7d")


def add_detach_flags(inv: argparse.ArgumentParser) -> None:
    inv.add_argument("--detach", action="store_true",
                     help="create the investigation and return at once; `ghost worker` runs "
                     "it (approvals: `ghost approvals`, progress: `ghost watch`)")
    add_json(inv, "with --detach: the new investigation's id")
    inv.add_argument("--as", dest="requested_by", metavar="USER",
                     help="with --detach: who asks (default: the local user); they cannot "
                     "approve its commands")
