"""Start-up orphan report (ghost-design §3 steps 5–8), as pure functions over list_tasks.

The five buckets: tasks left running by earlier sessions, finished tasks whose cleanup is still
pending, tasks whose cleanup was partial, ``ghost_*`` captures on Azure the registry does not
know, and stale local capture files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.engine.ports import Orchestrator, OrphanCleanup

TERMINAL_STATES = ("COMPLETED", "FAILED", "TIMED_OUT", "CANCELLED", "DONE")


@dataclass
class OrphanBuckets:
    abandoned_tasks: list[dict[str, Any]] = field(default_factory=list)
    needs_cleanup: list[dict[str, Any]] = field(default_factory=list)
    partially_cleaned: list[dict[str, Any]] = field(default_factory=list)
    untracked_azure: list[dict[str, Any]] = field(default_factory=list)
    stale_local_files: list[dict[str, Any]] = field(default_factory=list)
    #: captures of sessions held by a process on another host: listed, never cleaned from here
    maybe_running: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """What may be cleaned up (``maybe_running`` is only reported)."""
        return sum(len(b) for b in (self.abandoned_tasks, self.needs_cleanup,
                                    self.partially_cleaned, self.untracked_azure,
                                    self.stale_local_files))


def classify_orphans(report: Mapping[str, Any], session_id: str) -> OrphanBuckets:
    """Sort a ``list_tasks`` response into the five buckets."""
    buckets = OrphanBuckets()
    orphans = report.get("orphans") or {}
    for task in report.get("tasks") or []:
        if task.get("session_id") == session_id:
            continue
        state = str(task.get("state") or "")
        cleanup = task.get("cleanup_status")
        if cleanup == "partial":
            buckets.partially_cleaned.append(dict(task))
        elif state not in TERMINAL_STATES:
            buckets.abandoned_tasks.append(dict(task))
        elif cleanup == "pending":
            buckets.needs_cleanup.append(dict(task))
    known = {t["task_id"] for t in buckets.abandoned_tasks + buckets.needs_cleanup
             + buckets.partially_cleaned}
    for item in orphans.get("abandoned") or []:
        if item.get("task_id") not in known and item.get("session_id") != session_id:
            buckets.abandoned_tasks.append(dict(item))
            known.add(item.get("task_id"))
    for item in orphans.get("needs_cleanup") or []:
        if item.get("task_id") not in known and item.get("session_id") != session_id:
            buckets.needs_cleanup.append(dict(item))
            known.add(item.get("task_id"))
    buckets.untracked_azure = [dict(c) for c in orphans.get("untracked_captures") or []]
    buckets.stale_local_files = [dict(f) for f in orphans.get("stale_files") or []]
    buckets.maybe_running = [dict(t) for t in orphans.get("maybe_running") or []
                             if t.get("task_id") not in known]
    return buckets


def held_elsewhere(task: Mapping[str, Any]) -> str:
    """One line about a capture that another host's run may still be making."""
    return (f"{task.get('task_id')} of session {task.get('session_id')} may still be running: "
            f"{task.get('holder') or 'held by a process on another host'}")


def orphan_detail(task: Mapping[str, Any]) -> str:
    """What is known of an abandoned task's session and process, for its report line."""
    holder = task.get("holder")
    session = task.get("session_id")
    if not session:
        return ""
    return f"session {session}" + (f": {holder}" if holder else "")


@dataclass
class CleanupSummary:
    cleaned: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    manual_cleanup_pending: list[str] = field(default_factory=list)


def orphan_path(orchestrator: Any) -> OrphanCleanup:
    """The orchestrator's orphan-cleanup path when it has one (``orphan_cleaner``): a person
    chose Clean up, so it may act on ended investigations' tasks, which the model may not."""
    cleaner = getattr(orchestrator, "orphan_cleaner", None)
    return cleaner() if callable(cleaner) else orchestrator  # type: ignore[no-any-return]


def clean_up(orchestrator: Orchestrator, buckets: OrphanBuckets,
             only: set[str] | None = None) -> CleanupSummary:
    """Step 8: cleanup_task per registry orphan; untracked captures and files in one batch.

    A denied or failed deletion is skipped and the rest go on; a partial cleanup of a task that
    was already partially cleaned goes on the manual list.
    """
    summary = CleanupSummary()
    orchestrator = orphan_path(orchestrator)
    for task in buckets.abandoned_tasks + buckets.needs_cleanup + buckets.partially_cleaned:
        task_id = str(task.get("task_id"))
        if only is not None and task_id not in only:
            continue
        result = orchestrator.orchestrate({"intent": "cleanup_task", "task_id": task_id})
        status = result.get("cleanup_status")
        if status == "completed" or status == "skipped":
            summary.cleaned.append(task_id)
        elif status == "partial" and task in buckets.partially_cleaned:
            summary.manual_cleanup_pending.append(task_id)
        else:
            summary.skipped.append(task_id)
    extra = [c for c in buckets.untracked_azure
             if only is None or str(c.get("name")) in only]
    files = [f for f in buckets.stale_local_files if only is None or str(f.get("path")) in only]
    batch_cleanup = getattr(orchestrator, "cleanup_orphans", None)
    if (extra or files) and batch_cleanup is not None:
        result = batch_cleanup({"untracked_captures": extra, "stale_files": files})
        names = [str(c.get("name")) for c in extra] + [str(f.get("path")) for f in files]
        if result.get("cleanup_status") in ("completed", "skipped"):
            summary.cleaned += names
        else:
            summary.skipped += names
    return summary
