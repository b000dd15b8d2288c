"""The database drops Ghost's connections (a server restart, a failover, an operator's
``pg_terminate_backend``): the next unit of work gets a live connection, and a unit cut short
is retried, never the reason an investigation fails (issue 23: one termination of the
connections left most investigations failed or stuck).

On PostgreSQL the test terminates only its own connections, found by an
``application_name`` unique to the test. On SQLite, the transient error is a write lock held
past the busy timeout.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from core.engine.loop import Outcome


@pytest.fixture
def pg_store(migrated_url: str) -> Iterator[tuple[Any, str]]:
    """A Store whose connections carry a name unique to this test, and that name."""
    from storage.store import Store

    if not migrated_url.startswith("postgresql"):
        pytest.skip("terminating backends needs PostgreSQL (GHOST_TEST_DATABASE_URL)")
    name = f"ghost-reconnect-{uuid.uuid4().hex[:10]}"
    sep = "&" if "?" in migrated_url else "?"
    store = Store.from_url(f"{migrated_url}{sep}application_name={name}")
    yield store, name
    store.db.dispose()


def terminate_mine(store: Any, name: str) -> int:
    """``pg_terminate_backend`` on every connection named ``name`` (ours only), from a
    separate connection; how many were terminated."""
    from storage.db import make_engine

    admin = make_engine(str(store.db.engine.url.set(query={})))
    try:
        with admin.begin() as conn:
            killed = conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = :name"), {"name": name}).scalar_one()
        return int(killed)
    finally:
        admin.dispose()


def test_postgres_connections_are_named_ghost_by_default(migrated_url: str) -> None:
    from storage.db import make_engine

    if not migrated_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    engine = make_engine(migrated_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SHOW application_name")).scalar_one() == "ghost"
    finally:
        engine.dispose()


def test_the_pool_replaces_connections_the_server_terminated(
        pg_store: tuple[Any, str]) -> None:
    store, name = pg_store
    inv = store.create_investigation(symptom="redis down", model="m", audit_dir="/tmp",
                                     platform="slack")
    assert terminate_mine(store, name) >= 1  # the pooled, idle connection
    # the next unit of work: a claim, a save, a read, all on a fresh connection
    claimed = store.claim_next("w1", lease_seconds=30)
    assert claimed is not None and claimed.session_id == inv.session_id
    store.release_lease(inv.session_id, "w1")
    assert store.get_investigation(inv.session_id).lease_owner is None


def test_a_connection_dropped_mid_transaction_is_recognised_as_transient(
        pg_store: tuple[Any, str]) -> None:
    from storage.db import is_transient

    store, name = pg_store
    with pytest.raises(OperationalError) as raised:
        with store.db.session() as s, s.begin():
            s.execute(text("SELECT 1"))
            assert terminate_mine(store, name) == 1
            s.execute(text("SELECT 1"))
    assert is_transient(raised.value)
    assert store.list_investigations() == []  # and the next unit of work just works


def test_sqlite_lock_timeout_is_transient_and_a_missing_table_is_not(tmp_path: Any) -> None:
    from sqlalchemy import create_engine

    from storage.db import is_transient

    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.1})
    try:
        with pytest.raises(OperationalError) as locked:
            with engine.begin() as conn:
                conn.execute(text("INSERT INTO t VALUES (1)"))
        assert is_transient(locked.value)
        with pytest.raises(OperationalError) as missing:
            with engine.connect() as conn:
                conn.execute(text("SELECT * FROM no_such_table"))
        assert not is_transient(missing.value)
    finally:
        holder.close()
        engine.dispose()


class DropsTheConnectionOnce:
    """An engine stand-in whose first step meets a connection the server terminated (the
    query in flight fails), as the real engine's save would; its second step succeeds."""

    def __init__(self, store: Any, name: str) -> None:
        self.store, self.name, self.steps = store, name, 0

    def advance(self, session_id: str) -> Outcome:
        self.steps += 1
        if self.steps == 1:
            with self.store.db.session() as s, s.begin():
                s.execute(text("SELECT 1"))
                terminate_mine(self.store, self.name)
                s.execute(text("SELECT 1"))
        state = self.store.get_investigation(session_id).state
        self.store.save_state(session_id, state, status="awaiting_user")
        return Outcome("awaiting_user")


class _Shell:
    def recover_interrupted(self) -> None:
        return None


def test_a_dropped_connection_mid_step_hands_the_investigation_back_not_failed(
        pg_store: tuple[Any, str]) -> None:
    from bot.worker import Worker

    store, name = pg_store
    inv = store.create_investigation(symptom="redis down", model="m", audit_dir="/tmp",
                                     platform="slack", status="queued")
    engine = DropsTheConnectionOnce(store, name)
    failures: list[BaseException] = []
    outcomes: list[Outcome] = []
    worker = Worker(store=store, engine=cast(Any, engine), shell_for=lambda _s: _Shell(),
                    after=lambda _s, o: outcomes.append(o),
                    failed=lambda _s, e: failures.append(e), owner="w1", lease_seconds=30)
    assert worker.run_once() == inv.session_id
    after_drop = store.get_investigation(inv.session_id)
    assert failures == [] and outcomes == []
    assert after_drop.status in ("queued", "running") and after_drop.lease_owner is None
    assert worker.run_once() == inv.session_id  # retried at once, on a fresh connection
    assert outcomes == [Outcome("awaiting_user")] and failures == []
    assert store.get_investigation(inv.session_id).status == "awaiting_user"
