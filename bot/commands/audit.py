"""`ghost audit verify SID` and `ghost audit export SID --dir DIR`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bot.bootstrap import build_store
from core.errors import AuditIntegrityError


def verify(args: argparse.Namespace) -> int:
    store = build_store(read_only=True)
    report = store.verify_audit(args.session_id)
    if getattr(args, "json", False):  # the agent contract (docs/agent-contract.md)
        from bot.contract.audit import emit_verdict

        return emit_verdict(args.session_id, report)
    if report.ok:
        print(f"OK: the audit chain of {args.session_id} holds ({report.count} records).")
        return 0
    raise AuditIntegrityError(
        f"TAMPERED: the audit chain of {args.session_id} breaks at {report.first_bad}: "
        f"{report.problem}.",
        "Treat this investigation's evidence as untrusted; keep the database for review.",
    )


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Write atomically: a crash leaves the old file or none, never half a file."""
    count = 0
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
                count += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def export(args: argparse.Namespace) -> int:
    store = build_store(read_only=True)
    sid = args.session_id
    store.get_investigation(sid)  # unknown SID: one-line error before touching the disk
    out_dir = Path(args.dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    audit_path = out_dir / f"shell_audit_{sid}.jsonl"
    tasks_path = out_dir / f"orchestrator_tasks_{sid}.jsonl"
    n_audit = _write_jsonl(audit_path, store.audit_records(sid))
    n_tasks = _write_jsonl(tasks_path, store.task_events(sid))
    print(f"{audit_path}  ({n_audit} records)")
    print(f"{tasks_path}  ({n_tasks} records)")
    report = store.verify_audit(sid)
    if not report.ok:
        print(
            f"ghost: warning: the exported audit chain breaks at {report.first_bad}: "
            f"{report.problem}.",
            file=sys.stderr,
        )
        return AuditIntegrityError.exit_code
    return 0


def show(args: argparse.Namespace) -> int:
    """`ghost audit show AUDIT_ID [--json]`: one record (output included) by its id."""
    from bot.contract.audit import show_record

    return show_record(args)
