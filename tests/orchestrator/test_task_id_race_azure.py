"""The same race through the real Azure SDK clients (fake ARM server, Azurite): two
investigations on one VM in one second get two Network Watcher packet captures with their own
names and blob paths, and both download their own capture."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.orchestrator import CloudOrchestrator, OrchestratorConfig
from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from tests.cloud.conftest import AZURITE_ACCOUNT, arm, azurite  # noqa: F401 - fixtures
from tests.cloud.fake_arm import FakeArm
from tests.cloud.test_azure_backend import blobs, capture, container, make_backend  # noqa: F401
from tests.orchestrator.fakes import FakeClock, ScriptedApprover
from tests.orchestrator.pcaps import tcp_conversation_pcap
from tests.orchestrator.test_task_id_race import ID, MeetBeforeWriting, orchestrate_at_once


@pytest.fixture
def processes(migrated_url: str) -> Iterator[list[MeetBeforeWriting]]:
    meet = threading.Barrier(2)
    stores = [MeetBeforeWriting(migrated_url, meet) for _ in range(2)]
    yield stores
    for s in stores:
        s.db.dispose()


def test_two_investigations_get_two_azure_captures_and_two_blobs(
        arm: FakeArm, azurite: str, container: str,  # noqa: F811 - imported fixtures
        processes: list[MeetBeforeWriting], tmp_path: Path) -> None:
    arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "NetworkWatcher_westus2"
    pcaps: dict[str, bytes] = {}

    def write(storage_path: str) -> None:  # "Azure" writes each capture where it was told
        box, blob = storage_path.split(f"/{AZURITE_ACCOUNT}/", 1)[1].split("/", 1)
        pcaps[blob] = tcp_conversation_pcap()
        blobs(azurite).get_blob_client(box, blob).upload_blob(pcaps[blob], overwrite=True)

    arm.state.on_stopped = write
    clock = FakeClock()
    orchs: list[CloudOrchestrator] = []
    for n, store in enumerate(processes):
        sid = store.create_investigation(symptom=f"api timeouts {n}", model="m", audit_dir="a",
                                         requested_by=f"U{n}").session_id
        data = tmp_path / f"data{n}"
        shell = SafeExecShell(sid, audit=store, approvals=store, approver=ScriptedApprover(
            *[Decision.approve("alice")] * 3), data_dir=data, requested_by=f"U{n}",
            clock=clock)
        orchs.append(CloudOrchestrator(
            shell=shell, backend=make_backend(arm, azurite), tasks=store, session_id=sid,
            config=OrchestratorConfig(local_capture_dir=data / "captures",
                                      storage_container=container, storage_auth_mode="key"),
            clock=clock, sleep=clock.sleep, monotonic=clock.monotonic))
    started = orchestrate_at_once(orchs, capture(), timeout=120)
    ids = {started[i]["task_id"] for i in range(2)}
    assert ids == {ID, f"{ID}_2"}, started
    assert set(arm.state.captures) == ids  # the packet capture name is the reserved id
    paths = {name: c["resource"]["properties"]["storageLocation"]["storagePath"]
             for name, c in arm.state.captures.items()}
    assert all(path.endswith(f"/{container}/{name}.pcap") for name, path in paths.items())

    for i in range(2):
        done = orchs[i].orchestrate({"intent": "check_task", "task_id": started[i]["task_id"]})
        assert done["status"] == "task_completed", done
        assert Path(done["result"]["local_pcap_path"]).name == f"{started[i]['task_id']}.pcap"
    assert set(pcaps) == {f"{i}.pcap" for i in ids}
