"""Task ids are reserved atomically across processes (issue #23, chaos drill F3).

Two workers capturing the same VM in the same second built the same id, both found it free,
and both wrote a CREATED record: one investigation's capture was then refused as "another
investigation's task". Each Store here is its own engine and connection pool, as in two
processes; the tests run on SQLite and, with GHOST_TEST_DATABASE_URL, on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, insert, select

from storage import migrate
from storage.db import make_engine
from storage.models import TaskEvent, TaskId
from storage.store import Store

BASE = "ghost_api-vm-01_20261125T153141"


@pytest.fixture
def stores(migrated_url: str) -> Iterator[list[Store]]:
    opened = [Store.from_url(migrated_url) for _ in range(6)]
    yield opened
    for s in opened:
        s.db.dispose()


def test_processes_reserving_the_same_id_at_once_each_get_their_own(stores: list[Store]) -> None:
    start = threading.Barrier(len(stores))
    got: dict[int, str] = {}
    errors: list[BaseException] = []

    def reserve(i: int, store: Store) -> None:
        try:
            store.db.ensure_ready()  # migration check first, so the threads meet at the insert
            start.wait(timeout=30)
            got[i] = store.reserve_task_id(f"sess-{i}", BASE)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reserve, args=(i, s)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sorted(got.values()) == sorted([BASE] + [f"{BASE}_{n}" for n in range(2, 7)])
    with stores[0].db.session() as s:
        owners = {row.task_id: row.session_id for row in s.scalars(select(TaskId))}
    assert owners == {task_id: f"sess-{i}" for i, task_id in got.items()}


def test_a_reserved_id_is_taken_before_its_first_record_is_written(stores: list[Store]) -> None:
    """The old check read the task records; between the reservation and the first record
    there are none, and that was the window both processes went through."""
    a, b = stores[:2]
    assert a.reserve_task_id("sess-a", BASE) == BASE
    assert b.latest_task(BASE) is None
    assert b.reserve_task_id("sess-b", BASE) == f"{BASE}_2"
    assert a.reserve_task_id("sess-a", BASE, avoid={f"{BASE}_3"}) == f"{BASE}_4"


def test_an_id_written_without_a_reservation_counts_as_taken(store: Store) -> None:
    """Records written by an older Ghost (before migration 0005) still keep their id."""
    store.append_task_event("old", {"task_id": BASE, "state": "CREATED"})
    assert store.reserve_task_id("new", BASE) == f"{BASE}_2"


def test_another_process_inserting_between_the_check_and_the_insert_loses_nothing(
        stores: list[Store]) -> None:
    """Forces the interleaving: B reserves the id after A found it free, before A's insert.

    On SQLite a transaction starts with BEGIN IMMEDIATE, so A's check and insert hold the one
    write lock and B cannot get in between (B would wait for A); only PostgreSQL has the window.
    """
    a, b = stores[:2]
    if a.db.dialect == "sqlite":
        pytest.skip("SQLite serialises the check and the insert (BEGIN IMMEDIATE)")
    a.db.ensure_ready()
    b.db.ensure_ready()
    seen: list[str] = []

    def between(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO TASK_IDS") and not seen:
            seen.append(b.reserve_task_id("sess-b", BASE))

    event.listen(a.db.engine, "before_cursor_execute", between)
    try:
        assert a.reserve_task_id("sess-a", BASE) == f"{BASE}_2"
    finally:
        event.remove(a.db.engine, "before_cursor_execute", between)
    assert seen == [BASE]


def test_the_migration_reserves_the_ids_already_in_the_registry(database_url: str) -> None:
    """0005 copies existing ids, the owner being the first record's session (the drill's
    duplicate CREATED pair included), so no new task reuses an old id."""
    engine = make_engine(database_url)
    try:
        migrate.upgrade(engine, "0004")
        at = datetime(2026, 11, 25, 15, 31, 41, tzinfo=UTC)
        rows = [("first", BASE), ("second", BASE), ("second", f"{BASE}_2"),
                ("other", "ghost_web-vm-01_20261125T150000")]
        with engine.begin() as conn:
            for sid, task_id in rows:
                conn.execute(insert(TaskEvent.__table__).values(
                    session_id=sid, task_id=task_id, state="CREATED",
                    record={"task_id": task_id}, created_at=at))
        migrate.upgrade(engine)
        with engine.connect() as conn:
            owners = dict(conn.execute(select(TaskId.task_id, TaskId.session_id)).all())
    finally:
        engine.dispose()
    assert owners == {BASE: "first", f"{BASE}_2": "second",
                      "ghost_web-vm-01_20261125T150000": "other"}
    store = Store.from_url(database_url)
    try:
        assert store.reserve_task_id("new", BASE) == f"{BASE}_3"
    finally:
        store.db.dispose()
