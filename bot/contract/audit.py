"""`ghost audit show AUDIT_ID [--json] [--fields F] [--verbose]`: one audit record.

Compact by default: the command, its verdict and outcome, and the (redacted, truncated) output;
``--verbose`` adds the chain fields (hash, previous hash) and everything else stored.
"""

from __future__ import annotations

import argparse
from typing import Any

from bot.contract.codes import Code, ContractError
from bot.contract.output import emit, parse_fields

COMPACT = ("audit_id", "seq", "timestamp", "kind", "command", "classification", "tier",
           "rule", "action", "actor", "status", "denial_reason", "exit_code", "output",
           "stderr", "error", "environment", "duration_ms", "ref_audit_id")


def show_record(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store

    fields = parse_fields(args.fields)
    record = build_store(read_only=True).audit_record(args.audit_id)
    if record is None:
        raise ContractError(Code.AUDIT_NOT_FOUND, f"No audit record '{args.audit_id}'.",
                            "Audit ids are in `ghost watch` command events and in "
                            "`ghost audit export`.")
    sid = str(record.get("session_id") or "") or None
    doc = {"record": dict(record) if args.verbose or fields else
           {k: record.get(k) for k in COMPACT}}
    if args.json:
        emit(doc, session_id=sid, fields=[f"record.{f}" for f in fields] if fields else None)
        return 0
    body = doc["record"]
    for key, value in body.items():
        if value not in (None, "") and key not in ("output", "stderr"):
            print(f"{key + ':':16} {value}")
    for key in ("output", "stderr"):
        if body.get(key):
            print(f"--- {key} ---\n{body[key]}")
    return 0


def emit_verdict(session_id: str, report: Any) -> int:
    """`ghost audit verify SID --json`: exit 0 when the chain holds, 3 when it does not."""
    from bot.contract.codes import Exit

    emit({"ok": bool(report.ok), "count": report.count, "first_bad": report.first_bad,
          "problem": report.problem}, session_id=session_id)
    return int(Exit.OK if report.ok else Exit.INTEGRITY)
