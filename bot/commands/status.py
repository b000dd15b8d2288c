"""`ghost status SID [--json] [--fields F] [--limit N] [--verbose]`: where an investigation
stands and what would move it on (docs/agent-contract.md)."""

from __future__ import annotations

import argparse

from bot.contract.output import emit, parse_fields
from bot.contract.views import policy_for, status_doc


def status(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store
    from bot.settings import load_settings

    fields = parse_fields(args.fields)
    settings = load_settings()
    store = build_store(settings, read_only=True)
    inv = store.get_investigation(args.session_id)
    doc = status_doc(inv, approvals=store.approvals(inv.session_id),
                     tasks=store.latest_tasks(inv.session_id),
                     policy=policy_for(settings, inv.platform), limit=args.limit,
                     verbose=args.verbose or bool(fields))  # --fields may name any field
    if args.json:
        emit(doc, session_id=inv.session_id, fields=fields)
        return 0
    _print(inv.session_id, doc)
    return 0


def _print(sid: str, doc: dict[str, object]) -> None:
    phase = doc["phase"]
    assert isinstance(phase, dict)
    waiting = phase["waiting_for"] or "-"
    print(f"session:    {sid}")
    print(f"state:      {doc['state']} (phase {phase['name'] or '-'}, turn {phase['turn']}, "
          f"waiting for {waiting})")
    print(f"symptom:    {doc['symptom']}")
    for h in doc["hypotheses"]:  # type: ignore[attr-defined]
        print(f"hypothesis: {h['id']} [{h.get('state')}] {h.get('description') or ''}")
    for a in doc["pending_approvals"]:  # type: ignore[attr-defined]
        print(f"approval:   {a['approval_id']}  {a['command']}")
        print(f"            expires {a['expires_at'] or 'never'}; may decide: "
              f"{a['may_decide']['rule']}")
    for t in doc["tasks"]:  # type: ignore[attr-defined]
        print(f"task:       {t['task_id']} {t.get('state')}")
    rca = doc["rca"]
    assert isinstance(rca, dict)
    print(f"rca:        {rca['path'] or ('stored' if rca['available'] else '-')}")
    print(f"where:      {doc['summary']}")
    if doc["resumable"] and doc["resume_command"]:
        print(f"next:       {doc['resume_command']}")
