"""Periodic jobs (APScheduler 3), each guarded by a named database lease.

APScheduler cannot share a job store between processes, so every replica schedules every job,
and a job body runs only in the process holding its lease (``acquire_lease``): several replicas
never run the same job in the same period, and when the holder dies another takes over once the
lease lapses.

Jobs:
- ``expire_approvals``: pending approvals past their expiry are closed (the model is told the
  command did not run), their cards updated, their investigations requeued;
- ``reconcile``: an investigation waiting on an approval that is no longer pending (the process
  that recorded the click died before requeueing it) is requeued; posts owed to threads and
  cards of pending approvals that have none are delivered; an RCA whose upload never started
  or failed before anything was sent is uploaded, one cut short is checked (and reported in
  its thread when the platform cannot tell); an orphan cleanup whose approval was decided is
  continued (``ChatRuntime.reconcile_chat``);
- ``deliver`` (when given ``deliver_chat``): every 5 s, the posts owed to threads (cards,
  notices, prompts) and the RCA uploads due for a retry (``ChatRuntime.deliver_due``), so a
  transient chat error costs seconds, not a reconcile period (which delivers them too);
- ``sweep``: old retry-dedup keys and half-written RCA files are removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bot.chat.approval_cards import DecisionOutcome
from storage.investigations import PRIORITY_HUMAN

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSpec:
    name: str
    every_s: float
    run: Callable[[], int]


class PeriodicJobs:
    """The job bodies and their lease guard; APScheduler only supplies the timing."""

    def __init__(self, *, store: Any, shell_for: Callable[[str], Any],
                 close_card: Callable[[str, DecisionOutcome | None], None], owner: str,
                 audit_dir: Path, clock: Callable[[], datetime],
                 event_retention: timedelta = timedelta(days=1),
                 reconcile_chat: Callable[[datetime], int] | None = None,
                 deliver_chat: Callable[[datetime], int] | None = None) -> None:
        self.store = store
        self.shell_for = shell_for
        self.close_card = close_card
        self.owner = owner
        self.audit_dir = audit_dir
        self.clock = clock
        self.event_retention = event_retention
        self.reconcile_chat = reconcile_chat
        self.deliver_chat = deliver_chat

    def specs(self) -> list[JobSpec]:
        specs = [JobSpec("expire_approvals", 30, self.expire_approvals),
                 JobSpec("reconcile", 30, self.reconcile),
                 JobSpec("sweep", 3600, self.sweep)]
        if self.deliver_chat is not None:
            specs.append(JobSpec("deliver", 5, self.deliver))
        return specs

    def deliver(self) -> int:
        return self.deliver_chat(self.clock()) if self.deliver_chat is not None else 0

    def guarded(self, spec: JobSpec) -> int | None:
        """Run ``spec`` if this process holds (or takes) its lease; None when another does."""
        if not self.store.acquire_lease(f"job:{spec.name}", self.owner,
                                        seconds=spec.every_s * 0.9):
            return None
        try:
            return spec.run()
        except Exception:  # noqa: BLE001 - a failing job must not stop the scheduler
            log.exception("periodic job %s failed", spec.name)
            return None

    def expire_approvals(self) -> int:
        count = 0
        for approval in self.store.due_approvals(self.clock()):
            self.shell_for(approval.session_id).resume(approval.approval_id)
            current = self.store.get_approval(approval.approval_id)
            if current is None or current.status == "pending":
                continue
            count += 1
            self.close_card(approval.approval_id, None)
            self.store.requeue(approval.session_id, from_statuses=("awaiting_approval",),
                               priority=PRIORITY_HUMAN)
        return count

    def reconcile(self) -> int:
        count = 0
        for inv in self.store.list_investigations(statuses=("awaiting_approval",), limit=500):
            waiting = ((inv.engine_state or {}).get("pending") or {}).get("waiting") or {}
            approval_id = waiting.get("approval_id")
            approval = self.store.get_approval(approval_id) if approval_id else None
            if approval is not None and approval.status != "pending":
                if self.store.requeue(inv.session_id, from_statuses=("awaiting_approval",),
                                      priority=PRIORITY_HUMAN):
                    count += 1
        if self.reconcile_chat is not None:
            count += self.reconcile_chat(self.clock())
        return count

    def sweep(self) -> int:
        removed = int(self.store.forget_events_before(self.clock() - self.event_retention))
        cutoff = time.time() - 86400
        if self.audit_dir.is_dir():
            for tmp in self.audit_dir.glob(".ghost_rca_*.tmp"):
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink(missing_ok=True)
                    removed += 1
        return removed


def start_scheduler(jobs: PeriodicJobs) -> Any:
    """A background APScheduler running every job at its interval (lease-guarded)."""
    from apscheduler.schedulers.background import BackgroundScheduler

    scheduler = BackgroundScheduler(timezone="UTC")
    for spec in jobs.specs():
        scheduler.add_job(jobs.guarded, "interval", seconds=spec.every_s, args=[spec],
                          id=spec.name, max_instances=1, coalesce=True,
                          next_run_time=datetime.now().astimezone())
    scheduler.start()
    return scheduler
