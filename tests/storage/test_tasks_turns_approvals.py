"""Task events (last record wins), verbatim turns, and first-decision-wins approvals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.store import Store


def _sid(store: Store) -> str:
    return store.create_investigation(symptom="s", model="m", audit_dir="a").session_id


def test_current_task_state_is_the_last_record_per_task(store: Store) -> None:
    sid = _sid(store)
    for state in ("CREATED", "PROVISIONING", "WAITING"):
        store.append_task_event(sid, {"task_id": "ghost_vm1_20250115T143200", "state": state})
    store.append_task_event(sid, {"task_id": "ghost_vm2_20250115T143201", "state": "CREATED"})
    store.append_task_event(sid, {"task_id": "ghost_vm1_20250115T143200", "state": "COMPLETED"})
    latest = {t["task_id"]: t["state"] for t in store.latest_tasks(sid)}
    assert latest == {"ghost_vm1_20250115T143200": "COMPLETED",
                      "ghost_vm2_20250115T143201": "CREATED"}
    assert len(store.task_events(sid)) == 5
    assert store.latest_task("ghost_vm1_20250115T143200") == {
        "task_id": "ghost_vm1_20250115T143200", "state": "COMPLETED"}
    other = _sid(store)
    assert store.latest_tasks(other) == []
    assert len(store.latest_tasks()) == 2


def test_model_turns_round_trip_verbatim(store: Store) -> None:
    sid = _sid(store)
    turn = {"parts": [{"functionCall": {"name": "run_shell_cmd", "args": {"command": "dig x"}},
                       "thoughtSignature": "c2lnbmF0dXJlLWJ5dGVz"}]}
    assert store.append_turn(sid, "user", {"parts": [{"text": "dns fails"}]}) == 1
    assert store.append_turn(sid, "model", turn) == 2
    assert store.turns(sid)[1] == {"seq": 2, "role": "model", "content": turn}


def test_first_decision_wins(store: Store) -> None:
    sid = _sid(store)
    req = store.create_approval(
        sid, command="az network nsg rule update", command_hash="ab" * 32,
        classifier_version="1", classification="RISKY", reasoning="open 6379",
        requested_by="U1",
    )
    won = store.transition_approval(req.approval_id, req.version,
                                    {"status": "approved", "decided_by": "U2"})
    lost = store.transition_approval(req.approval_id, req.version,
                                     {"status": "denied", "decided_by": "U3"})
    assert won is not None and won.status == "approved" and won.version == req.version + 1
    assert lost is None
    final = store.get_approval(req.approval_id)
    assert final is not None and final.decided_by == "U2"
    assert [a.approval_id for a in store.approvals(sid, statuses=("approved",))] == [
        req.approval_id]


def test_named_lease_is_held_by_one_owner_until_it_expires(store: Store) -> None:
    now = [datetime(2025, 1, 15, tzinfo=UTC)]
    store.clock = lambda: now[0]
    assert store.acquire_lease("orphan-sweep", "a", seconds=60)
    assert not store.acquire_lease("orphan-sweep", "b", seconds=60)
    now[0] += timedelta(seconds=30)
    assert store.acquire_lease("orphan-sweep", "a", seconds=60)  # renewal, until +90 s
    now[0] += timedelta(seconds=59)
    assert not store.acquire_lease("orphan-sweep", "b", seconds=60)
    now[0] += timedelta(seconds=2)  # a stopped renewing: the lease has expired
    assert store.acquire_lease("orphan-sweep", "b", seconds=60)
    assert not store.acquire_lease("orphan-sweep", "a", seconds=60)
