"""Three-layer orphan detection (orchestrator-design.md "Orphan Detection").

1. the task registry across every session: tasks left active by a session that is gone become
   ABANDONED; finished tasks whose cleanup never ran are listed;
2. ``ghost_*`` packet captures on Azure that no task in the registry knows;
3. stale ``ghost_*`` files in the capture directory older than ``local_artifact_max_age_days``.

Ghost runs many investigations at once, so "a previous session" means a session that is not
live: the caller says which sessions are live (by default: only this one), and may say more
(:class:`Liveness`): which process held a dead session (named in the report), or that a session
is held by a process on another host that cannot be asked, whose tasks are then listed as
``maybe_running`` with the holder's lease expiry: not cleaned up, but not hidden either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from core.orchestrator.gate import backend_call, read_outcome
from core.orchestrator.lifecycle import Lifecycle
from core.orchestrator.model import ACTIVE, TaskState
from core.orchestrator.records import Task, enter, state_of

ARTIFACT_SUFFIXES = (".pcap", "_semantic.json", "_forensic_report.md", "_executive_summary.md")


@dataclass(frozen=True)
class Liveness:
    """Whether a session still runs, and what is known about its holder."""

    live: bool
    #: who held it and what became of it, for the report ("`ghost investigate` (pid 4242 on
    #: host-a) is no longer running")
    note: str | None = None
    #: held by a process on another host: it may still be running until the lease expires
    remote: bool = False
    lease_expires_at: str | None = None


def liveness(answer: bool | Liveness) -> Liveness:
    """A caller's answer (a plain bool, or a :class:`Liveness`) as a :class:`Liveness`."""
    return answer if isinstance(answer, Liveness) else Liveness(bool(answer))


@dataclass
class OrphanReport:
    abandoned: list[dict[str, Any]] = field(default_factory=list)
    needs_cleanup: list[dict[str, Any]] = field(default_factory=list)
    untracked_captures: list[dict[str, Any]] = field(default_factory=list)
    stale_files: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: active tasks of sessions held from another host: listed, never cleaned up from here
    maybe_running: list[dict[str, Any]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return (len(self.abandoned) + len(self.needs_cleanup) + len(self.untracked_captures)
                + len(self.stale_files))

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "abandoned": self.abandoned,
            "needs_cleanup": self.needs_cleanup,
            "untracked_captures": self.untracked_captures,
            "stale_files": self.stale_files,
            "maybe_running": self.maybe_running,
            "errors": self.errors,
            "message": (f"Startup cleanup: {self.count} orphaned resources from previous "
                        "sessions. Clean registry tasks with cleanup_task; untracked captures "
                        "and stale files with cleanup_orphans." if self.count
                        else "No orphaned resources found."),
        }


def _summary(task: Task) -> dict[str, Any]:
    return {"task_id": task["task_id"], "session_id": task.get("session_id"),
            "state": task["state"], "target": task.get("target"),
            "cleanup_status": task.get("cleanup_status")}


def detect(lifecycle: Lifecycle, *, session_id: str, prefix: str, max_age_days: int,
           capture_dir: Path, is_live: Callable[[str], bool | Liveness]) -> OrphanReport:
    """Run all three layers; a failing layer is reported in ``errors``, never raised."""
    report = OrphanReport()
    tasks = lifecycle.registry.all_tasks()
    _registry_layer(lifecycle, tasks, report, session_id, is_live)
    _azure_layer(lifecycle, tasks, report, prefix)
    _local_layer(lifecycle.clock(), report, prefix, max_age_days, capture_dir)
    return report


def _registry_layer(lifecycle: Lifecycle, tasks: list[Task], report: OrphanReport,
                    session_id: str, is_live: Callable[[str], bool | Liveness]) -> None:
    known: dict[str, Liveness] = {}
    for task in tasks:
        if task.get("intent") != "capture_traffic":
            continue
        state = state_of(task)
        owner = str(task.get("session_id"))
        running = state in ACTIVE or state is TaskState.CLEANING_UP
        life = Liveness(True)
        if owner != session_id and running:
            if owner not in known:
                known[owner] = liveness(is_live(owner))
            life = known[owner]
        if not life.live:
            was = state.value
            why = f"session {owner} ended while the task was {was}"
            enter(task, TaskState.ABANDONED, lifecycle.clock(),
                  error=why + (f": {life.note}" if life.note else ""))
            task["pending_step"] = None
            lifecycle.save(task)
            report.abandoned.append({**_summary(task), "was": was,
                                     **({"holder": life.note} if life.note else {})})
        elif running and life.remote:
            report.maybe_running.append({**_summary(task), "holder": life.note,
                                         "lease_expires_at": life.lease_expires_at})
        elif (state is TaskState.COMPLETED and task.get("cleanup_status") == "pending") or (
                state in (TaskState.FAILED, TaskState.TIMED_OUT)
                and task.get("cleanup_status") is None) or (
                task.get("cleanup_status") == "partial"):
            report.needs_cleanup.append(_summary(task))


def _azure_layer(lifecycle: Lifecycle, tasks: list[Task], report: OrphanReport,
                 prefix: str) -> None:
    known = {str(t.get("azure_operation_id")) for t in tasks}
    backend = lifecycle.steps.backend
    if getattr(backend, "configured", True) is False:
        return  # captures are not set up here: there is nothing on Azure to scan, or to audit
    query = f"[?starts_with(name, '{prefix}_')]"
    command = f'az network watcher packet-capture list --query "{query}" -o json'

    def run() -> dict[str, Any]:
        found = backend.list_captures(f"{prefix}_")
        return {"captures": [{"name": c.name, "location": c.location,
                              "target": c.target_resource_id} for c in found]}

    response = lifecycle.shell.execute_call(
        command, f"Startup orphan detection: scanning for {prefix}_* packet captures that may "
        "have been left by a previous session.", backend_call(run))
    outcome = read_outcome(response)
    if outcome.kind != "ok":
        report.errors.append(f"Azure scan failed: {outcome.code}: {outcome.message}")
        return
    for capture in outcome.data.get("captures") or []:
        if capture.get("name") not in known:
            report.untracked_captures.append(capture)


def _local_layer(now: datetime, report: OrphanReport, prefix: str, max_age_days: int,
                 capture_dir: Path) -> None:
    if not capture_dir.is_dir():
        return
    cutoff = now - timedelta(days=max_age_days)
    for path in sorted(capture_dir.iterdir()):
        if not path.name.startswith(f"{prefix}_") or not path.is_file():
            continue
        if not path.name.endswith(ARTIFACT_SUFFIXES):
            continue
        modified = datetime.fromtimestamp(path.stat().st_mtime, tz=now.tzinfo)
        if modified < cutoff:
            kind = "capture" if path.suffix == ".pcap" else "analysis"
            report.stale_files.append({"path": str(path), "kind": kind,
                                       "age_days": round((now - modified).days, 1)})
