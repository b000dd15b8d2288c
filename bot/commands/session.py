"""`ghost session show SID [--json]` and `ghost session list`."""

from __future__ import annotations

import argparse
import json
import sys

from bot.bootstrap import build_store
from bot.settings import load_settings
from core.engine.usage import usage_line
from core.session_state import ChecksumStatus, check_checksum


def show(args: argparse.Namespace) -> int:
    inv = build_store(read_only=True).get_investigation(args.session_id)
    if inv.corrupted and getattr(args, "json", False):  # the contract's error document
        from bot.contract.codes import Code, ContractError

        raise ContractError(Code.INTEGRITY_FAILED, f"The saved state of {inv.session_id} is "
                            f"corrupted: {inv.corrupted}.",
                            f"Start afresh with `ghost investigate --resume {inv.session_id}` "
                            f"or read its audit log with `ghost audit export {inv.session_id}`.")
    if inv.corrupted:
        # one line, no traceback: what is wrong and what to do (ghost-design §9)
        print(f"Investigation {inv.session_id} ({inv.status}, {inv.symptom[:60]!r}): its "
              f"saved state is corrupted: {inv.corrupted}. Resume it with `ghost investigate "
              f"--resume {inv.session_id}` to start a fresh one, or read its audit log with "
              f"`ghost audit export {inv.session_id}`.", file=sys.stderr)
        return 1
    doc = inv.document
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    from bot.state import state_of

    integrity = check_checksum(doc)
    store = build_store()
    story = state_of(inv, pending=store.approvals(inv.session_id, statuses=("pending",)))
    print(f"session:     {inv.session_id}")
    print(f"status:      {story.name} — {story.words}")
    print(f"symptom:     {inv.symptom}")
    print(f"requested:   {inv.requested_by or '-'} via {inv.platform}")
    if inv.lab:
        print(f"lab:         {inv.lab} (a simulated estate; nothing ran against Azure)")
    print(f"created:     {doc.get('created_at')}")
    print(f"turns:       {doc.get('turn_count')}")
    print(f"usage:       {usage_line(inv.engine_state, load_settings().prices)}")
    print(f"hypotheses:  {len(doc.get('hypothesis_log') or [])}"
          f" (active: {', '.join(doc.get('active_hypothesis_ids') or []) or '-'})")
    print(f"tasks:       {', '.join(doc.get('active_task_ids') or []) or '-'}")
    print(f"audit:       {inv.audit_count} records")
    print(f"rca:         {doc.get('rca_report_path') or '-'}")
    note = "" if integrity is ChecksumStatus.OK else "  <- state does not match its checksum"
    print(f"checksum:    {integrity.value}{note}")
    return 0


def list_sessions(args: argparse.Namespace) -> int:
    if getattr(args, "json", False) or getattr(args, "status", None) or \
            getattr(args, "since", None):  # the contract's list (docs/agent-contract.md)
        from bot.contract.sessions import list_sessions as contract_list

        return contract_list(args)
    from bot.terminal.tables import print_sessions
    from core.session_state import utc_now

    if args.limit < 0:
        print(f"ghost: --limit {args.limit} is negative: give how many investigations to list.",
              file=sys.stderr)
        return 2
    from bot.bootstrap import build_store_if_any
    from bot.read_only import nothing_yet

    settings = load_settings()
    store = build_store_if_any(settings)  # a read: never creates the database
    if store is None:
        print(nothing_yet(settings))
        return 0
    rows = store.list_investigations(limit=args.limit) if args.limit else []
    if not rows:
        any_at_all = bool(rows) or bool(store.list_investigations(limit=1))
        print(f"No investigations listed (--limit {args.limit})." if any_at_all else
              "No investigations yet.")
        return 0
    from core.engine.usage import PriceTableError, parse_prices

    try:
        prices = parse_prices(settings.prices)
    except PriceTableError:  # `ghost doctor` says what is wrong with it; no cost shown
        prices = {}
    # a table that fits the terminal: id, status and age first (bot/terminal/tables.py)
    print_sessions(rows, sys.stdout, utc_now(), prices)
    return 0
