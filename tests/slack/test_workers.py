"""Several workers share investigations through leases (PostgreSQL: SKIP LOCKED; SQLite:
compare-and-set), a dead worker's investigation is picked up by another, and the periodic jobs
run once per period whatever the number of replicas."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.worker import Worker
from core.session_state import utc_now
from tests.fakes.gemini_server import Scripted, text_turn
from tests.slack.conftest import SlackHarness


def _worker(slack: SlackHarness, store: Any, owner: str) -> Worker:
    runtime = slack.services.runtime
    return Worker(store=store, engine=runtime.engine, shell_for=runtime.shell_for,
                  after=runtime.after_advance, failed=runtime.failed, owner=owner,
                  lease_seconds=30)


def test_two_workers_share_the_load_and_never_advance_the_same_step_twice(
        slack: SlackHarness, fake_gemini: Any, migrated_url: str) -> None:
    from storage.store import Store

    count = 6
    fake_gemini.enqueue(*[Scripted(200, text_turn("What next?").body, 0.15)
                          for _ in range(count)])
    for i in range(count):
        slack.slash(f"investigate symptom number {i}")
    stores = [Store.from_url(migrated_url) for _ in range(2)]
    workers = [_worker(slack, s, f"w{i}") for i, s in enumerate(stores)]
    done: dict[str, int] = {}

    def run(w: Worker) -> None:
        done[w.owner] = w.run_until_idle()

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sum(done.values()) == count and all(done.values()), done
    assert len(fake_gemini.requests) == count
    for inv in slack.store.list_investigations():
        assert inv.status == "awaiting_user" and inv.lease_owner is None
    for s in stores:
        s.db.dispose()


def test_a_dead_workers_investigation_is_picked_up_after_its_lease(
        slack: SlackHarness, fake_gemini: Any, migrated_url: str) -> None:
    from storage.store import Store

    fake_gemini.enqueue(text_turn("Which subnet?"))
    slack.slash("investigate vm-a cannot reach vm-b")
    dead = slack.store.claim_next("dead-worker", lease_seconds=30)
    assert dead is not None                                   # ...and it never comes back
    assert slack.worker.run_once() is None                    # still leased
    later = Store(Store.from_url(migrated_url).db, clock=lambda: utc_now() + timedelta(
        seconds=31))
    assert _worker(slack, later, "w2").run_once() == dead.session_id
    assert slack.store.get_investigation(dead.session_id).status == "awaiting_user"
    later.db.dispose()


def test_reconcile_requeues_a_decided_approval_whose_requeue_was_lost(
        slack: SlackHarness, fake_gemini: Any, tmp_path: Path) -> None:
    from bot.scheduler import PeriodicJobs
    from core.safety.approval import Decision
    from tests.fakes.gemini_server import function_call_turn
    from tests.slack.test_investigation_flow import shell

    fake_gemini.enqueue(function_call_turn(shell("echo risky")), text_turn("ok"))
    slack.slash("investigate x")
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    approval = slack.pending_approval(inv.session_id)
    runtime = slack.services.runtime
    # the web process recorded the click, then died before requeueing the investigation
    runtime.shell_for(inv.session_id).decide(approval.approval_id,
                                             Decision.approve("UAPPROVER"))
    jobs = PeriodicJobs(store=slack.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner="r1", audit_dir=tmp_path,
                        clock=utc_now)
    _expire, reconcile, sweep = jobs.specs()
    assert jobs.guarded(reconcile) == 1
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert jobs.guarded(sweep) == 0


def test_scheduler_runs_jobs_under_apscheduler(slack: SlackHarness, tmp_path: Path) -> None:
    from bot.scheduler import JobSpec, PeriodicJobs, start_scheduler

    ran = threading.Event()
    jobs = PeriodicJobs(store=slack.store, shell_for=lambda s: None,
                        close_card=lambda *_a: None, owner="r1", audit_dir=tmp_path,
                        clock=utc_now)
    jobs.specs = lambda: [JobSpec("probe", 60, lambda: ran.set() or 1)]  # type: ignore
    scheduler = start_scheduler(jobs)
    try:
        assert ran.wait(10)
    finally:
        scheduler.shutdown(wait=False)
    assert not slack.store.acquire_lease("job:probe", "r2", seconds=10)

