"""Two investigations capture the same VM in the same second, from two processes (issue #23,
chaos drill F3): each gets its own task, Azure capture and blob, and both captures run.

Before, both processes checked the registry ("is the id free?") before either wrote its first
record, both wrote a CREATED record for the same id, and the second investigation's
check_task was refused as "another investigation's task" after its create had been approved.
The test forces that interleaving: neither writes its first record until both have their id.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from core.orchestrator import CloudOrchestrator
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import ScriptedApprover, approve

ID = "ghost_web-vm-01_20250115T143200"


class MeetBeforeWriting(Store):
    """A process's store whose first task record waits until the other process got its id
    too: the window in which both used to see the id free."""

    def __init__(self, url: str, meet: threading.Barrier) -> None:
        super().__init__(Store.from_url(url).db)
        self.meet = meet
        self.met = False

    def append_task_event(self, session_id: str, record: Mapping[str, Any]) -> None:
        if not self.met:
            self.met = True
            self.meet.wait(timeout=30)
        super().append_task_event(session_id, record)


@pytest.fixture
def processes(world: World, migrated_url: str) -> Iterator[list[MeetBeforeWriting]]:
    meet = threading.Barrier(2)
    stores = [MeetBeforeWriting(migrated_url, meet) for _ in range(2)]
    yield stores
    for s in stores:
        s.db.dispose()


def orchestrator(world: World, store: Store, sid: str) -> CloudOrchestrator:
    shell = SafeExecShell(sid, audit=store, approvals=store, approver=ScriptedApprover(
        *approve(2)), data_dir=world.data_dir, requested_by="U_REQ", clock=world.clock)
    return CloudOrchestrator(shell=shell, backend=world.cloud, tasks=store, session_id=sid,
                             config=world.config, clock=world.clock, sleep=world.clock.sleep,
                             monotonic=world.clock.monotonic)


def orchestrate_at_once(orchs: list[CloudOrchestrator], request: Mapping[str, Any],
                        timeout: float) -> dict[int, dict[str, Any]]:
    """Each orchestrator starts the same capture request in its own thread, at once; their
    answers by index."""
    started: dict[int, dict[str, Any]] = {}

    def start(i: int) -> None:
        started[i] = orchs[i].orchestrate(dict(request))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(orchs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    return started


def test_two_investigations_on_one_vm_in_one_second_both_get_their_capture(
        world: World, processes: list[MeetBeforeWriting]) -> None:
    other = world.store.create_investigation(symptom="api-vm timeouts", model="m",
                                             audit_dir="a", requested_by="U_TWO").session_id
    orchs = [orchestrator(world, store, sid)
             for store, sid in zip(processes, (world.sid, other), strict=True)]
    started = orchestrate_at_once(orchs, capture_request(), timeout=60)
    assert all(s.met for s in processes)  # both reached the first write, neither timed out
    ids = {started[i]["task_id"] for i in range(2)}
    assert ids == {ID, f"{ID}_2"}
    assert all(started[i]["state"] == "WAITING" for i in range(2)), started
    # the Azure capture name and the blob follow the id: two captures, two blobs
    assert set(world.cloud.captures) == ids
    blobs = {c["spec"].blob_name for c in world.cloud.captures.values()}  # type: ignore[attr-defined]
    assert blobs == {f"{i}.pcap" for i in ids}
    # one CREATED record per id, each in its own investigation
    for i, sid in enumerate((world.sid, other)):
        created = [r for r in world.store.task_events(sid) if r["state"] == "CREATED"]
        assert [r["task_id"] for r in created] == [started[i]["task_id"]]

    world.clock.tick(3)
    for i in range(2):
        done = orchs[i].orchestrate({"intent": "check_task", "task_id": started[i]["task_id"]})
        assert done["status"] == "task_completed", done
        assert done["result"]["local_pcap_path"].endswith(f"{started[i]['task_id']}.pcap")
