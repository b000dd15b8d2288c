"""Who gets a worker thread first (issue 34): an investigation a person just unblocked is
claimed ahead of model turns, the decision lane claims only such work, a claim resets the
priority; and migration 0006 adds the column to a database that has investigations already.
Both engines (PostgreSQL when GHOST_TEST_DATABASE_URL is set)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import column, insert, select, table

from storage import migrate
from storage.db import make_engine
from storage.investigations import PRIORITY_HUMAN
from storage.models import Investigation
from storage.store import Store


def _runnable(store: Store, symptom: str) -> str:
    return store.create_investigation(symptom=symptom, model="m", audit_dir="a",
                                      platform="slack", status="queued").session_id


def test_a_person_unblocked_investigation_is_claimed_first(store: Store) -> None:
    busy = [_runnable(store, f"busy {i}") for i in range(3)]
    decided = store.create_investigation(symptom="decided", model="m", audit_dir="a",
                                         platform="slack",
                                         status="awaiting_approval").session_id
    assert store.waiting_count(platforms=("slack",)) == 3
    assert store.claim_next("lane", platforms=("slack",), min_priority=1) is None  # none yet
    assert store.requeue(decided, from_statuses=("awaiting_approval",),
                         priority=PRIORITY_HUMAN)
    assert store.waiting_count(platforms=("slack",), min_priority=1) == 1
    first = store.claim_next("w1", platforms=("slack",))
    assert first is not None and first.session_id == decided  # ahead of older work
    assert store.waiting_count(platforms=("slack",), min_priority=1) == 0  # the claim reset it
    store.release_lease(decided, "w1")
    assert store.claim_next("lane", platforms=("slack",), min_priority=1) is None
    order = [store.claim_next(f"w{i}", platforms=("slack",)) for i in range(3)]
    assert [o.session_id for o in order if o] == busy  # then the oldest first


def test_the_queue_position_counts_the_investigations_not_started_before_it(
        store: Store) -> None:
    ids = [_runnable(store, f"queued {i}") for i in range(4)]
    assert [store.queue_position(sid) for sid in ids] == [0, 1, 2, 3]


def test_the_migration_adds_the_priority_to_existing_investigations(database_url: str) -> None:
    engine = make_engine(database_url)
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    try:
        migrate.upgrade(engine, "0005")
        with engine.begin() as conn:
            old = table("investigations", *(column(c) for c in (
                "session_id", "created_at", "updated_at", "status", "symptom", "platform",
                "state", "checksum", "version", "audit_count")))  # the 0005 columns only
            conn.execute(insert(old).values(
                session_id="old", created_at=at, updated_at=at, status="queued",
                symptom="s", platform="slack", state='{"session_id": "old"}', checksum="c",
                version=1, audit_count=0))
        migrate.upgrade(engine)
        with engine.connect() as conn:
            assert conn.execute(select(Investigation.priority)).scalar_one() == 0
    finally:
        engine.dispose()


def test_the_decision_lane_starts_an_approved_step_while_every_other_thread_is_busy(
        store: Store) -> None:
    """A pool of two: one normal thread stuck in a long step, the lane thread free; a
    decided investigation is claimed by the lane at once."""
    from bot.worker import Worker

    class Engine:
        notifier = None

        def __init__(self) -> None:
            self.advanced: list[str] = []
            self.long_done = threading.Event()

        def advance(self, sid: str) -> Any:
            from core.engine.loop import Outcome

            self.advanced.append(sid)
            if "long" in store.get_investigation(sid).symptom:
                time.sleep(1.5)
                self.long_done.set()
            store.set_status(sid, "awaiting_user")
            return Outcome("awaiting_user")

    class Shell:
        def recover_interrupted(self) -> None:
            return None

    engine = Engine()
    worker = Worker(store=store, engine=engine, shell_for=lambda _s: Shell(),  # type: ignore[arg-type]
                    after=lambda *_a: None, failed=lambda *_a: None, owner="pool",
                    lease_seconds=30)
    long = _runnable(store, "long investigation")
    stop = threading.Event()
    pool = threading.Thread(target=worker.run_forever, args=(stop,),
                            kwargs={"threads": 2, "idle_s": 0.05})
    pool.start()
    try:
        deadline = time.monotonic() + 10
        while long not in engine.advanced and time.monotonic() < deadline:
            time.sleep(0.01)
        decided = store.create_investigation(symptom="decided", model="m", audit_dir="a",
                                             platform="slack",
                                             status="awaiting_approval").session_id
        store.requeue(decided, from_statuses=("awaiting_approval",), priority=PRIORITY_HUMAN)
        clicked = time.monotonic()
        worker.wake()
        while decided not in engine.advanced and time.monotonic() < deadline:
            time.sleep(0.01)
        assert decided in engine.advanced
        # it did not wait for the long step to end: the lane took it meanwhile
        assert not engine.long_done.is_set(), f"{time.monotonic() - clicked:.2f}s"
    finally:
        stop.set()
        pool.join(10)
