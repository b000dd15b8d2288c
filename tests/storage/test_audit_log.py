"""The audit log: append-only in the database, hash-chained, verified against tampering."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.audit_chain import GENESIS, record_hash
from storage.models import AuditEvent
from storage.store import Store


def _new(store: Store, symptom: str = "web-vm-01 cannot reach redis:6379") -> str:
    return store.create_investigation(symptom=symptom, model="gemini-test",
                                      audit_dir="./audit/").session_id


def _command(n: int) -> dict[str, Any]:
    return {
        "kind": "command",
        "command": f"ping -c 1 10.0.0.{n}",
        "reasoning": "check reachability",
        "classification": "SAFE",
        "tier": 1,
        "rule": "T1.ping",
        "classifier_version": "test",
        "action": "auto_approved",
        "actor": "ghost",
        "status": "completed",
        "exit_code": 0,
        "output": f"64 bytes from 10.0.0.{n}: icmp_seq=1 ttl=64 time=0.{n} ms",
        "stderr": "",
        "environment": "local",
        "duration_ms": 12,
        "output_metadata": {"truncation_applied": False, "lines": 1},
    }


def test_audit_ids_follow_the_spec_and_chain(store: Store) -> None:
    sid = _new(store)
    first = store.append_audit(sid, _command(1))
    second = store.append_audit(sid, _command(2))
    assert first["audit_id"] == f"{sid}_001"
    assert second["audit_id"] == f"{sid}_002"
    assert first["prev_hash"] == GENESIS
    assert second["prev_hash"] == first["hash"]
    stored = store.audit_records(sid)
    assert [r["audit_id"] for r in stored] == [f"{sid}_001", f"{sid}_002"]
    # what was read back hashes to what was written: both engines round-trip exactly
    assert all(record_hash(r) == r["hash"] for r in stored)
    report = store.verify_audit(sid)
    assert report.ok and report.count == 2


def test_chains_are_per_investigation(store: Store) -> None:
    a, b = _new(store, "a"), _new(store, "b")
    store.append_audit(a, _command(1))
    rec_b = store.append_audit(b, _command(1))
    store.append_audit(a, _command(2))
    assert rec_b["audit_id"] == f"{b}_001" and rec_b["prev_hash"] == GENESIS
    assert store.verify_audit(a).count == 2 and store.verify_audit(b).count == 1


def test_nul_bytes_in_output_are_stored_and_still_verify(store: Store) -> None:
    sid = _new(store)
    entry = _command(1) | {"output": "binary\x00junk"}
    stored = store.append_audit(sid, entry)
    assert "\x00" not in stored["output"]
    assert store.verify_audit(sid).ok


def test_unknown_fields_are_refused(store: Store) -> None:
    sid = _new(store)
    with pytest.raises(ValueError, match="unknown audit fields"):
        store.append_audit(sid, _command(1) | {"raw_output": "x"})


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_events SET output = 'nothing to see' WHERE seq = 1",
        "DELETE FROM audit_events WHERE seq = 1",
        "UPDATE task_events SET state = 'COMPLETED'",
        "DELETE FROM task_events",
    ],
)
def test_database_refuses_update_and_delete(store: Store, statement: str) -> None:
    sid = _new(store)
    store.append_audit(sid, _command(1))
    store.append_task_event(sid, {"task_id": "t1", "state": "CREATED"})
    with pytest.raises(DBAPIError, match="append-only"):
        with store.db.engine.begin() as conn:
            conn.execute(text(statement))
    assert store.audit_records(sid)[0]["output"].startswith("64 bytes")
    assert store.verify_audit(sid).ok


def test_truncate_is_refused_on_postgresql(store: Store) -> None:
    if store.db.dialect != "postgresql":
        pytest.skip("TRUNCATE exists only on PostgreSQL")
    sid = _new(store)
    store.append_audit(sid, _command(1))
    with pytest.raises(DBAPIError, match="append-only"):
        with store.db.engine.begin() as conn:
            conn.execute(text("TRUNCATE audit_events"))


def drop_triggers(store: Store) -> None:
    """What an attacker with database access would do first."""
    with store.db.engine.begin() as conn:
        if store.db.dialect == "sqlite":
            conn.execute(text("DROP TRIGGER audit_events_no_update"))
            conn.execute(text("DROP TRIGGER audit_events_no_delete"))
        else:
            conn.execute(text("DROP TRIGGER audit_events_append_only ON audit_events"))


def _chain_of(store: Store, n: int) -> str:
    sid = _new(store)
    for i in range(1, n + 1):
        store.append_audit(sid, _command(i))
    drop_triggers(store)
    return sid


def test_verify_catches_an_altered_record(store: Store) -> None:
    sid = _chain_of(store, 5)
    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET exit_code = 1 WHERE audit_id = :a"),
                     {"a": f"{sid}_003"})
    report = store.verify_audit(sid)
    assert not report.ok and report.first_bad == f"{sid}_003"
    assert "altered" in (report.problem or "")


def test_verify_catches_a_removed_record(store: Store) -> None:
    sid = _chain_of(store, 5)
    with store.db.engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_events WHERE audit_id = :a"), {"a": f"{sid}_002"})
    report = store.verify_audit(sid)
    assert not report.ok and report.first_bad == f"{sid}_003"


def test_verify_catches_records_cut_from_the_end(store: Store) -> None:
    sid = _chain_of(store, 5)
    with store.db.engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_events WHERE seq >= 4 AND session_id = :s"),
                     {"s": sid})
    report = store.verify_audit(sid)
    assert not report.ok and report.first_bad == f"{sid}_004"


def _insert_raw(store: Store, record: dict[str, Any]) -> None:
    with store.db.session() as s, s.begin():
        s.add(AuditEvent(**record))


def test_verify_catches_a_record_appended_behind_the_applications_back(store: Store) -> None:
    sid = _chain_of(store, 3)
    last = store.audit_records(sid)[-1]
    forged = dict(last) | {"seq": 4, "audit_id": f"{sid}_004", "command": "az vm delete",
                           "prev_hash": last["hash"]}
    forged["hash"] = record_hash(forged)  # a well-formed link: only the head can tell
    _insert_raw(store, forged)
    report = store.verify_audit(sid)
    assert not report.ok and "written" in (report.problem or "")
    assert report.first_bad == f"{sid}_004"  # the forged record itself, not a missing one


def test_verify_catches_a_record_inserted_in_the_middle(store: Store) -> None:
    sid = _chain_of(store, 3)
    rows = store.audit_records(sid)
    with store.db.engine.begin() as conn:  # make room at seq 2, highest first
        for seq in (3, 2):
            conn.execute(text("UPDATE audit_events SET seq = :n WHERE session_id = :s AND "
                              "seq = :o"), {"n": seq + 1, "o": seq, "s": sid})
    forged = dict(rows[1]) | {"audit_id": f"{sid}_002", "command": "rm -rf /",
                              "prev_hash": rows[0]["hash"]}
    forged["audit_id"] = f"{sid}_002"
    forged["hash"] = record_hash(forged)
    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET audit_id = audit_id || 'old' "
                          "WHERE audit_id = :a"), {"a": f"{sid}_002"})
    _insert_raw(store, forged)
    report = store.verify_audit(sid)
    assert not report.ok and report.first_bad == f"{sid}_002old"


def _append_many(url: str, sids: list[str], n: int, writer: int,
                 start: Any) -> None:
    s = Store.from_url(url)
    s.db.ensure_ready()
    start.wait(60)  # every writer connected: the appends really race
    for i in range(n):
        s.append_audit(sids[i % len(sids)], {**_command(i % 250), "actor": f"writer-{writer}"})
    s.db.dispose()


def test_concurrent_writers_never_duplicate_or_fork(store: Store, migrated_url: str) -> None:
    sids = [_new(store, f"inv {i}") for i in range(3)]
    store.db.dispose()
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(8)
    procs = [ctx.Process(target=_append_many, args=(migrated_url, sids, 30, w, start))
             for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    total = 0
    switches = 0
    for sid in sids:
        records = store.audit_records(sid)
        ids = [r["audit_id"] for r in records]
        assert len(ids) == len(set(ids))
        report = store.verify_audit(sid)
        assert report.ok, report
        total += report.count
        actors = [r["actor"] for r in records]
        assert len(set(actors)) == 8  # every writer appended to every investigation
        switches += sum(a != b for a, b in zip(actors, actors[1:], strict=False))
    assert total == 8 * 30
    if store.db.dialect == "postgresql":  # row locks, not one file lock: writers interleave
        assert switches > len(sids) * 7, "the writers ran one after another, not concurrently"
