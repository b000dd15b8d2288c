"""Investigations: the §8 document and checksum, compare-and-set saves, and claiming work."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.errors import ConcurrentUpdate, UnknownInvestigation
from core.session_state import SESSION_FIELDS, ChecksumStatus, check_checksum
from storage.store import Store


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 15, 14, 30, 22, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_new_investigation_has_the_spec_document(store: Store) -> None:
    store.clock = FakeClock()
    inv = store.create_investigation(symptom="dns fails", model="gemini-x", audit_dir="./audit/")
    doc = inv.document
    assert inv.session_id == "ghost_20250115_143022"
    assert list(doc) == [*SESSION_FIELDS, "_checksum"]
    assert doc["created_at"] == "2025-01-15T14:30:22Z"
    body = {k: v for k, v in doc.items() if k != "_checksum"}
    assert doc["_checksum"] == hashlib.sha256(
        json.dumps(body, sort_keys=True).encode()).hexdigest()


def test_ids_in_the_same_second_do_not_collide(store: Store) -> None:
    store.clock = FakeClock()
    ids = {store.create_investigation(symptom=str(i), model="m", audit_dir="a").session_id
           for i in range(3)}
    assert ids == {"ghost_20250115_143022", "ghost_20250115_143022-2", "ghost_20250115_143022-3"}


def test_save_state_recomputes_the_checksum_and_refuses_stale_versions(store: Store) -> None:
    inv = store.create_investigation(symptom="s", model="m", audit_dir="a")
    state = inv.state | {"turn_count": 3, "active_hypothesis_ids": ["h1"]}
    saved = store.save_state(inv.session_id, state, expected_version=inv.version)
    assert saved.version == inv.version + 1
    again = store.get_investigation(inv.session_id)
    assert again.state["turn_count"] == 3
    assert check_checksum(again.document) is ChecksumStatus.OK
    with pytest.raises(ConcurrentUpdate):
        store.save_state(inv.session_id, state, expected_version=inv.version)


def test_unknown_investigation_is_a_typed_error(store: Store) -> None:
    with pytest.raises(UnknownInvestigation, match="ghost_nope"):
        store.get_investigation("ghost_nope")


def test_claim_leases_one_runnable_investigation_at_a_time(store: Store) -> None:
    clock = FakeClock()
    store.clock = clock
    a = store.create_investigation(symptom="a", model="m", audit_dir="a").session_id
    clock.now += timedelta(seconds=1)
    store.create_investigation(symptom="b", model="m", audit_dir="a", status="awaiting_approval")
    first = store.claim_next("worker-1", lease_seconds=30)
    assert first is not None and first.session_id == a and first.lease_owner == "worker-1"
    assert store.claim_next("worker-2", lease_seconds=30) is None  # b waits for a person
    clock.now += timedelta(seconds=31)  # worker-1 died: its lease expires
    taken = store.claim_next("worker-2", lease_seconds=30)
    assert taken is not None and taken.session_id == a and taken.lease_owner == "worker-2"
    assert not store.renew_lease(a, "worker-1")
    assert store.renew_lease(a, "worker-2")
    store.release_lease(a, "worker-2")
    assert store.claim_next("worker-3") is not None


def test_a_chat_worker_never_claims_a_terminal_investigation(store: Store) -> None:
    terminal = store.create_investigation(symptom="t", model="m", audit_dir="a")
    chat = store.create_investigation(symptom="c", model="m", audit_dir="a", platform="slack",
                                      channel_ref="C1", thread_ref="1.1")
    got = store.claim_next("worker-1", platforms=("slack", "teams"))
    assert got is not None and got.session_id == chat.session_id
    assert store.claim_next("worker-2", platforms=("slack", "teams")) is None
    assert store.get_investigation(terminal.session_id).lease_owner is None


def _claim_all(url: str, owner: str, out: multiprocessing.Queue[list[str]],
               start: Any) -> None:
    s = Store.from_url(url)
    s.db.ensure_ready()
    start.wait(60)  # all claimers connected: they really compete for the same rows
    got: list[str] = []
    while (inv := s.claim_next(owner, lease_seconds=600)) is not None:
        got.append(inv.session_id)
    s.db.dispose()
    out.put(got)


def test_concurrent_claimers_never_get_the_same_investigation(
    store: Store, migrated_url: str
) -> None:
    sids = {store.create_investigation(symptom=str(i), model="m", audit_dir="a").session_id
            for i in range(40)}
    store.db.dispose()
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[list[str]] = ctx.Queue()
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_claim_all, args=(migrated_url, f"w{i}", out, start))
             for i in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    claimed = [sid for got in results for sid in got]
    assert len(claimed) == len(set(claimed))  # nobody got the same investigation twice
    assert set(claimed) == sids  # and every one was taken
    if store.db.dialect == "postgresql":  # SKIP LOCKED: nobody waits, so several take work
        assert sum(1 for got in results if got) >= 2, results
