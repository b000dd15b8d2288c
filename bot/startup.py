"""The terminal's start-up orphan check (ghost-design §3 steps 5–8 and the §10 console)."""

from __future__ import annotations

from typing import Any, TextIO

from bot.terminal import Prompter
from core.engine.startup import classify_orphans, clean_up, held_elsewhere, orphan_detail


def orphan_check(store: Any, orchestrator: Any, session_id: str, prompter: Prompter,
                 out: TextIO) -> list[str]:
    """Report orphans, offer [C]lean up now / [S]kip / [R]eview each; return manual leftovers."""
    out.write("Checking for orphaned resources from previous sessions...\n")
    report = orchestrator.orchestrate({"intent": "list_tasks"})
    if report.get("status") == "error":
        out.write(f"  [WARN] Could not list tasks: {report.get('message')}\n")
        return []
    buckets = classify_orphans(report, session_id)
    errors = (report.get("orphans") or {}).get("errors") or []
    for error in errors:
        out.write(f"  [WARN] Orphan scan incomplete: {error}\n")
    for task in buckets.maybe_running:  # another host's run: shown, never cleaned from here
        out.write(f"  [RUNNING?] {held_elsewhere(task)}\n")
    if buckets.total == 0:
        # a scan that could not look everywhere cannot say there is nothing: say what it saw
        out.write("  [WARN] No orphans found in what could be checked; the rest is unknown.\n"
                  if errors else "  [OK] No orphaned resources found.\n")
        return []
    rows = [("abandoned task", t.get("task_id")) for t in buckets.abandoned_tasks]
    rows += [("cleanup pending", t.get("task_id")) for t in buckets.needs_cleanup]
    rows += [("partially cleaned", t.get("task_id")) for t in buckets.partially_cleaned]
    rows += [("untracked Azure capture", c.get("name")) for c in buckets.untracked_azure]
    rows += [("stale local file", f.get("path")) for f in buckets.stale_local_files]
    details = {str(t.get("task_id")): orphan_detail(t) for t in buckets.abandoned_tasks}
    for kind, name in rows:
        out.write(f"  [ORPHAN] {kind:<24} {name}\n")
        if details.get(str(name)):  # which session and process left it
            out.write(f"           {'':<24} {details[str(name)]}\n")
    choice = prompter.choose("[C]lean up now  [S]kip  [R]eview each one > ",
                             {"c": "clean", "s": "skip", "r": "review"})
    if choice not in ("clean", "review"):
        out.write("  Skipped; they will be offered again next time.\n")
        return []
    only: set[str] | None = None
    if choice == "review":
        only = set()
        for kind, name in rows:
            answer = prompter.choose(f"  Clean up {kind} {name}? [Y]es / [N]o > ",
                                     {"y": "yes", "n": "no"})
            if answer == "yes":
                only.add(str(name))
    summary = clean_up(orchestrator, buckets, only)
    for name in summary.cleaned:
        out.write(f"  [OK] Cleaned up {name}.\n")
    for name in summary.skipped:
        out.write(f"  [SKIP] {name} was not cleaned up (denied or failed).\n")
    for name in summary.manual_cleanup_pending:
        out.write(f"  [WARN] Task {name}: partial cleanup — some resources require manual "
                  "deletion.\n")
    if summary.manual_cleanup_pending:
        inv = store.get_investigation(session_id)
        state = dict(inv.state)
        state["manual_cleanup_pending"] = sorted(
            set(state.get("manual_cleanup_pending") or []) | set(summary.manual_cleanup_pending))
        store.save_state(session_id, state)
    return summary.manual_cleanup_pending
