"""The Azure capture backend: the real SDK clients against the fake ARM server and Azurite."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from cloud.azure_backend import AzureCaptureBackend
from cloud.azure_settings import AzureSettings
from core.orchestrator import CloudOrchestrator, OrchestratorConfig
from core.orchestrator.backend import CaptureBackendError, CaptureSpec
from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.cloud.conftest import AZURITE_ACCOUNT, AZURITE_KEY, StaticToken
from tests.cloud.fake_arm import SUB, FakeArm
from tests.orchestrator.fakes import FakeClock, ScriptedApprover
from tests.orchestrator.pcaps import tcp_conversation_pcap


@pytest.fixture
def container(azurite: str) -> str:
    name = f"captures{uuid.uuid4().hex[:10]}"
    blobs(azurite).create_container(name)
    return name


def blobs(azurite: str) -> BlobServiceClient:
    return BlobServiceClient(azurite, credential={"account_name": AZURITE_ACCOUNT,
                                                  "account_key": AZURITE_KEY})


def make_backend(arm: FakeArm, azurite: str) -> AzureCaptureBackend:
    settings = AzureSettings(
        subscription_id=SUB, arm_endpoint=arm.url,
        blob_endpoint_template=azurite.replace(AZURITE_ACCOUNT, "{account}"),
        storage_auth_mode="key", account_key=lambda account: AZURITE_KEY,
        lro_polling_interval=0, retry_total=3)
    return AzureCaptureBackend(settings, StaticToken(), retry_backoff_factor=0)


def upload_on_stop(arm: FakeArm, azurite: str, data: bytes) -> None:
    def write(storage_path: str) -> None:
        container, blob = storage_path.split(f"/{AZURITE_ACCOUNT}/", 1)[1].split("/", 1)
        blobs(azurite).get_blob_client(container, blob).upload_blob(data, overwrite=True)

    arm.state.on_stopped = write


def spec(vm_id: str, container: str, name: str = "ghost_web-vm-01_20250115T143200") -> Any:
    return CaptureSpec(name=name, target_resource_id=vm_id, location="westus2",
                       storage_account=AZURITE_ACCOUNT, storage_resource_group="prod-rg",
                       container=container, blob_name=f"{name}.pcap", time_limit_seconds=60)


def orchestrator(arm: FakeArm, azurite: str, container: str, store: Store,
                 tmp_path: Path) -> tuple[CloudOrchestrator, FakeClock]:
    """The real SDK clients behind the orchestrator, a human who approves everything."""
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a",
                                     requested_by="U").session_id
    clock = FakeClock()
    data = tmp_path / "data"
    shell = SafeExecShell(sid, audit=store, approvals=store,
                          approver=ScriptedApprover(*[Decision.approve("alice")] * 5),
                          data_dir=data, requested_by="U", clock=clock)
    orch = CloudOrchestrator(
        shell=shell, backend=make_backend(arm, azurite), tasks=store, session_id=sid,
        config=OrchestratorConfig(local_capture_dir=data / "captures",
                                  storage_container=container, storage_auth_mode="key"),
        clock=clock, sleep=clock.sleep, monotonic=clock.monotonic)
    return orch, clock


def capture(target: str = "web-vm-01", resource_group: str = "prod-rg") -> dict[str, Any]:
    return {"intent": "capture_traffic", "target": target,
            "parameters": {"duration_seconds": 60, "storage_account": AZURITE_ACCOUNT,
                           "resource_group": resource_group},
            "investigation_context": "502s"}


def test_full_capture_through_the_orchestrator(arm: FakeArm, azurite: str, container: str,
                                               store: Store, tmp_path: Path) -> None:
    arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "NetworkWatcher_westus2"
    arm.state.running_polls = 2
    upload_on_stop(arm, azurite, tcp_conversation_pcap())
    orch, clock = orchestrator(arm, azurite, container, store, tmp_path)
    sid = orch.session_id
    res = orch.orchestrate(capture())
    assert res["state"] == "WAITING", res
    done = orch.orchestrate({"intent": "check_task", "task_id": res["task_id"]})
    assert done["status"] == "task_completed", done
    assert done["result"]["pcap_bytes"] == len(tcp_conversation_pcap())
    report = Path(done["result"]["report_path"]).read_text()
    assert re.search(r"\b1 (TCP retransmission|data segment (lost and )?retransmitted)", report)
    assert done["poll_count"] is None and clock.sleeps == [5.0, 10.0]
    cleaned = orch.orchestrate({"intent": "cleanup_task", "task_id": res["task_id"]})
    assert cleaned["cleanup_status"] == "completed"
    assert not arm.state.captures
    assert not list(blobs(azurite).get_container_client(container).list_blobs())
    audited = [r for r in store.audit_records(sid) if r["kind"] == "command"]
    assert {r["environment"] for r in audited if r["command"].startswith("az ")} == {"azure"}


def test_detection_of_vm_aks_and_missing_things(arm: FakeArm, azurite: str) -> None:
    backend = make_backend(arm, azurite)
    vm_id = arm.state.add_vm("web-vm-01")
    info = backend.detect_target("web-vm-01", "prod-rg")
    assert (info.target_type, info.resource_id, info.location) == ("vm", vm_id, "westus2")
    assert backend.detect_target(vm_id, "ignored").name == "web-vm-01"
    aks = f"/subscriptions/{SUB}/resourcegroups/prod-rg/providers/" \
          "microsoft.containerservice/managedclusters/prod-aks"
    arm.state.clusters[aks] = {"id": aks, "name": "prod-aks", "location": "West US 2"}
    assert backend.detect_target("prod-aks", "prod-rg").target_type == "aks"
    with pytest.raises(CaptureBackendError) as missing:
        backend.detect_target("nope", "prod-rg")
    assert missing.value.code == "ResourceNotFound"
    with pytest.raises(CaptureBackendError) as no_group:
        backend.detect_target("web-vm-01", "prod-rgx")
    assert no_group.value.code == "ResourceNotFound"
    assert "Resource group 'prod-rgx' does not exist" in no_group.value.message
    arm.state.add_vm("bare-vm", extension=False)
    with pytest.raises(CaptureBackendError) as bare:
        backend.detect_target("bare-vm", "prod-rg")
    assert bare.value.code == "NetworkWatcherExtensionMissing"
    assert "az vm extension set" in bare.value.message


def test_network_watcher_not_enabled(arm: FakeArm, azurite: str, container: str) -> None:
    backend = make_backend(arm, azurite)
    vm_id = arm.state.add_vm("web-vm-01")
    with pytest.raises(CaptureBackendError) as no_watcher:
        backend.create_capture(spec(vm_id, container))
    assert no_watcher.value.code == "NetworkWatcherNotEnabled"
    arm.state.watchers["westus2"] = "NetworkWatcher_westus2"
    arm.state.create_error = (400, "NetworkWatcherNotEnabled", "not enabled in westus2")
    with pytest.raises(CaptureBackendError) as from_arm:
        backend.create_capture(spec(vm_id, container))
    assert from_arm.value.code == "NetworkWatcherNotEnabled"
    assert "not enabled in westus2" in from_arm.value.message


def test_provisioning_that_ends_failed_is_an_error(arm: FakeArm, azurite: str,
                                                   container: str) -> None:
    backend = make_backend(arm, azurite)
    vm_id = arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "nw"
    arm.state.provisioning_fails = True
    with pytest.raises(CaptureBackendError) as failed:
        backend.create_capture(spec(vm_id, container))
    assert failed.value.code == "InternalServerError"  # the code in the failed LRO body
    assert "capture agent failed to start" in failed.value.message


def test_lro_status_delete_and_404_after_delete(arm: FakeArm, azurite: str,
                                               container: str) -> None:
    backend = make_backend(arm, azurite)
    vm_id = arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "nw"
    arm.state.running_polls = 1
    upload_on_stop(arm, azurite, tcp_conversation_pcap())
    backend.create_capture(spec(vm_id, container))
    put = [r for r in arm.state.requests if r[0] == "PUT"]
    assert put and put[0][2] == 201
    assert backend.capture_status("westus2", "ghost_web-vm-01_20250115T143200").state == \
        "Running"
    stopped = backend.capture_status("westus2", "ghost_web-vm-01_20250115T143200")
    assert (stopped.state, stopped.detail) == ("Stopped", "TimeExceeded")
    assert [c.name for c in backend.list_captures("ghost_")] == [
        "ghost_web-vm-01_20250115T143200"]
    assert backend.list_captures("other_") == []
    assert backend.delete_capture("westus2", "ghost_web-vm-01_20250115T143200") is True
    assert backend.delete_capture("westus2", "ghost_web-vm-01_20250115T143200") is False
    with pytest.raises(CaptureBackendError) as gone:
        backend.capture_status("westus2", "ghost_web-vm-01_20250115T143200")
    assert gone.value.code == "ResourceNotFound"


def test_throttling_is_retried(arm: FakeArm, azurite: str) -> None:
    backend = make_backend(arm, azurite)
    arm.state.add_vm("web-vm-01")
    arm.state.throttle_next = 2
    assert backend.detect_target("web-vm-01", "prod-rg").target_type == "vm"
    assert [r[2] for r in arm.state.requests][:3] == [429, 429, 200]


def test_blob_download_delete_and_storage_check(arm: FakeArm, azurite: str, container: str,
                                                tmp_path: Path) -> None:
    backend = make_backend(arm, azurite)
    backend.verify_storage(AZURITE_ACCOUNT, container)
    with pytest.raises(CaptureBackendError) as missing:
        backend.verify_storage(AZURITE_ACCOUNT, "no-such-container")
    assert missing.value.code == "StorageInaccessible"
    blobs(azurite).get_blob_client(container, "x.pcap").upload_blob(b"abc")
    assert backend.download_blob(AZURITE_ACCOUNT, container, "x.pcap", tmp_path / "x") == 3
    assert (tmp_path / "x").read_bytes() == b"abc"
    with pytest.raises(CaptureBackendError) as absent:
        backend.download_blob(AZURITE_ACCOUNT, container, "y.pcap", tmp_path / "y")
    assert absent.value.code == "ResourceNotFound"
    assert backend.delete_blob(AZURITE_ACCOUNT, container, "x.pcap") is True
    assert backend.delete_blob(AZURITE_ACCOUNT, container, "x.pcap") is False


def test_plain_http_is_refused_off_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        AzureSettings(subscription_id=SUB, arm_endpoint="http://management.example.com")
    with pytest.raises(ValueError, match="account_key"):
        AzureSettings(subscription_id=SUB, storage_auth_mode="key")


def test_missing_resource_group_fails_in_detection(arm: FakeArm, azurite: str, container: str,
                                                   store: Store, tmp_path: Path) -> None:
    arm.state.add_vm("web-vm-01")
    orch, _ = orchestrator(arm, azurite, container, store, tmp_path)
    res = orch.orchestrate(capture(resource_group="prod-rgx"))
    assert res["status"] == "task_failed" and res["cleanup_status"] == "skipped"
    assert res["error_detail"].startswith("Resource not found: Resource group 'prod-rgx' does "
                                          "not exist")
    assert not arm.state.captures and not [r for r in arm.state.requests if r[0] == "PUT"]


def test_network_lost_during_polling_does_not_advance(arm: FakeArm, azurite: str,
                                                      container: str, store: Store,
                                                      tmp_path: Path) -> None:
    arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "nw"
    arm.state.running_polls = 0
    upload_on_stop(arm, azurite, tcp_conversation_pcap())
    orch, _ = orchestrator(arm, azurite, container, store, tmp_path)
    task_id = orch.orchestrate(capture())["task_id"]
    arm.state.drop_next = 1000  # every request hangs up: the SDK retries, then gives up
    lost = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert lost["status"] == "task_pending" and lost["state"] == "WAITING", lost
    assert lost["poll_count"] > 0 and any("Service" in w for w in lost["warnings"])
    assert [r for r in arm.state.requests if r[2] == 0]  # the connections really dropped
    arm.state.drop_next = 0  # the network is back
    done = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert done["status"] == "task_completed", done
