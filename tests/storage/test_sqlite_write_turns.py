"""SQLite under a burst (issue 34): a read does not queue behind a writer, and the write a chat
request's ack waits for gets the process's next write turn ahead of the workers' writes."""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from pathlib import Path

from sqlalchemy import text

from storage.db import Database, WriteTurns, acking


def test_a_read_does_not_wait_for_a_write_transaction_in_progress(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'ghost.db'}")
    with db.session() as s, s.begin():
        s.execute(text("CREATE TABLE t (x INTEGER)"))
        s.execute(text("INSERT INTO t VALUES (1)"))
    writing, done = threading.Event(), threading.Event()

    def writer() -> None:
        with db.session() as s, s.begin():
            s.execute(text("INSERT INTO t VALUES (2)"))
            writing.set()
            done.wait(10)  # holds the write lock until the reader is through

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert writing.wait(10)
        began = time.monotonic()
        with db.reading() as s:
            seen = s.execute(text("SELECT count(*) FROM t")).scalar_one()
        took = time.monotonic() - began
        assert seen == 1 and took < 2.0, took  # its snapshot, at once (it waited 10 s before)
    finally:
        done.set()
        thread.join()
    with db.reading() as s:
        assert s.execute(text("SELECT count(*) FROM t")).scalar_one() == 2
    db.engine.dispose()


def test_the_write_an_ack_waits_for_goes_before_the_workers_writes() -> None:
    turns = WriteTurns()
    assert turns.acquire(1.0)  # a worker's write holds the turn
    order: list[str] = []

    def write(name: str, first: bool) -> None:
        assert turns.acquire(10.0, first=first)
        order.append(name)
        turns.release()

    workers = [threading.Thread(target=write, args=(f"worker-{i}", False)) for i in range(3)]
    for thread in workers:
        thread.start()
    time.sleep(0.2)  # the workers wait first
    ack = threading.Thread(target=write, args=("ack", True))
    ack.start()
    time.sleep(0.2)
    turns.release()
    for thread in [*workers, ack]:
        thread.join(10)
    assert order[0] == "ack" and sorted(order[1:]) == ["worker-0", "worker-1", "worker-2"]
    assert turns.acquire(0.5)  # free again
    turns.release()


def test_writes_in_a_burst_all_land_and_a_write_turn_is_never_kept(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'ghost.db'}")
    with db.session() as s, s.begin():
        s.execute(text("CREATE TABLE t (x INTEGER PRIMARY KEY)"))

    def insert(x: int) -> None:
        with acking() if x % 2 else nullcontext(), db.session() as s, s.begin():
            s.execute(text("INSERT INTO t VALUES (:x)"), {"x": x})

    threads = [threading.Thread(target=insert, args=(x,)) for x in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:  # a failed write (duplicate key) gives its turn back too
        insert(3)
    except Exception:  # noqa: BLE001 - the IntegrityError is the point
        pass
    with db.session() as s, s.begin():
        s.execute(text("INSERT INTO t VALUES (100)"))
    with db.reading() as s:
        assert s.execute(text("SELECT count(*) FROM t")).scalar_one() == 21
    db.engine.dispose()

