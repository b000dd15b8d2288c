"""`ghost session show SID [--json]` and `ghost session list`."""

from __future__ import annotations

import argparse
import json

from bot.bootstrap import build_store
from core.session_state import ChecksumStatus, check_checksum


def show(args: argparse.Namespace) -> int:
    inv = build_store().get_investigation(args.session_id)
    doc = inv.document
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    integrity = check_checksum(doc)
    print(f"session:     {inv.session_id}")
    print(f"status:      {inv.status}")
    print(f"symptom:     {inv.symptom}")
    print(f"requested:   {inv.requested_by or '-'} via {inv.platform}")
    print(f"created:     {doc.get('created_at')}")
    print(f"turns:       {doc.get('turn_count')}")
    print(f"hypotheses:  {len(doc.get('hypothesis_log') or [])}"
          f" (active: {', '.join(doc.get('active_hypothesis_ids') or []) or '-'})")
    print(f"tasks:       {', '.join(doc.get('active_task_ids') or []) or '-'}")
    print(f"audit:       {inv.audit_count} records")
    print(f"rca:         {doc.get('rca_report_path') or '-'}")
    note = "" if integrity is ChecksumStatus.OK else "  <- state does not match its checksum"
    print(f"checksum:    {integrity.value}{note}")
    return 0


def list_sessions(args: argparse.Namespace) -> int:
    rows = build_store().list_investigations(limit=args.limit)
    if not rows:
        print("No investigations yet.")
        return 0
    for inv in rows:
        print(f"{inv.session_id:28} {inv.status:18} {inv.created_at:%Y-%m-%d %H:%M}  "
              f"{inv.symptom[:60]}")
    return 0
