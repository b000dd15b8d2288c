"""What Ghost shows and audits about storage is what really happens (issue 13): the auth mode
in the az equivalents is the one the backend uses, the blob downloaded is the one the created
capture reports in ``storageLocation``, and a DELETE answered 204 is ``already_deleted``.
The real SDK clients against the fake ARM endpoint and Azurite."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.cloud.conftest import AZURITE_ACCOUNT, AZURITE_KEY
from tests.cloud.fake_arm import SUB, TOKEN, FakeArm
from tests.cloud.test_azure_backend import blobs, capture, make_backend, orchestrator
from tests.orchestrator.fakes import ScriptedApprover
from tests.orchestrator.pcaps import tcp_conversation_pcap


@pytest.fixture
def container(azurite: str) -> str:
    name = f"captures{uuid.uuid4().hex[:10]}"
    blobs(azurite).create_container(name)
    return name


def _vm_and_watcher(arm: FakeArm) -> None:
    arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "NetworkWatcher_westus2"
    arm.state.running_polls = 1


def _upload_where_azure_writes(arm: FakeArm, azurite: str) -> None:
    def write(storage_path: str) -> None:
        where, blob = storage_path.split(f"/{AZURITE_ACCOUNT}/", 1)[1].split("/", 1)
        blobs(azurite).get_blob_client(where, blob).upload_blob(tcp_conversation_pcap(),
                                                                    overwrite=True)

    arm.state.on_stopped = write


def test_a_delete_answered_204_is_recorded_already_deleted(arm: FakeArm, azurite: str,
                                                           container: str, store: Store,
                                                           tmp_path: Path) -> None:
    """Regression: ARM answers 204 No Content to a DELETE of a capture that is already gone;
    Ghost recorded `deleted`."""
    backend = make_backend(arm, azurite)
    _vm_and_watcher(arm)
    arm.state.delete_missing_status = 204
    assert backend.delete_capture("westus2", "ghost_never_created") is False

    _upload_where_azure_writes(arm, azurite)
    orch, _ = orchestrator(arm, azurite, container, store, tmp_path)
    started = orch.orchestrate(capture())
    done = orch.orchestrate({"intent": "check_task", "task_id": started["task_id"]})
    assert done["status"] == "task_completed", done
    arm.state.captures.clear()  # someone deleted it in the portal meanwhile
    cleaned = orch.orchestrate({"intent": "cleanup_task", "task_id": started["task_id"]})
    assert cleaned["cleanup_status"] == "completed"
    task = store.task_events(orch.session_id)[-1]
    outcomes = {e["kind"]: e["outcome"] for e in task["cleanup_plan"]}
    assert outcomes["capture"] == "already_deleted" and outcomes["blob"] == "deleted"
    assert ("DELETE", 204) in {(m, s) for m, _, s in arm.state.requests}


def test_the_blob_is_the_one_the_created_capture_reports(arm: FakeArm, azurite: str,
                                                         container: str, store: Store,
                                                         tmp_path: Path) -> None:
    """Regression: the blob path was assumed, never read back from storageLocation."""
    _vm_and_watcher(arm)
    if not blobs(azurite).get_container_client("network-watcher-logs").exists():
        blobs(azurite).create_container("network-watcher-logs")  # Azurite is shared per worker

    def azure_chooses(asked: str) -> str:
        name = asked.rsplit("/", 1)[-1].replace(".pcap", ".cap")
        return asked.replace(f"/{container}/", "/network-watcher-logs/westus2/")[
            : -len(asked.rsplit("/", 1)[-1])] + name

    arm.state.write_to = azure_chooses
    _upload_where_azure_writes(arm, azurite)
    orch, _ = orchestrator(arm, azurite, container, store, tmp_path)
    started = orch.orchestrate(capture())
    done = orch.orchestrate({"intent": "check_task", "task_id": started["task_id"]})
    assert done["status"] == "task_completed", done
    assert done["result"]["pcap_bytes"] == len(tcp_conversation_pcap())
    task = store.task_events(orch.session_id)[-1]
    blob = f"westus2/{started['task_id']}.cap"
    assert (task["storage_container"], task["storage_blob_name"]) == (
        "network-watcher-logs", blob)
    downloads = [r["command"] for r in store.audit_records(orch.session_id)
                 if r["kind"] == "command" and "blob download" in str(r["command"])]
    assert downloads and f"--name {blob}" in downloads[0]
    orch.orchestrate({"intent": "cleanup_task", "task_id": started["task_id"]})
    assert not list(blobs(azurite).get_container_client("network-watcher-logs").list_blobs())


def test_the_auth_mode_shown_and_audited_is_the_one_used(
        arm: FakeArm, azurite: str, store: Store, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: approvals and audit said `--auth-mode login` while the backend used the
    account key (the bootstrap never passed the configured mode); the model's argument was
    silently ignored."""
    from bot.bootstrap import build_orchestrator
    from bot.settings import Settings

    _vm_and_watcher(arm)
    _upload_where_azure_writes(arm, azurite)
    monkeypatch.chdir(tmp_path)
    for name, value in {
            "GHOST_DATA_DIR": str(tmp_path / "data"), "GHOST_AZURE_SUBSCRIPTION_ID": SUB,
            "GHOST_AZURE_ARM_ENDPOINT": arm.url,
            "GHOST_AZURE_BLOB_ENDPOINT_TEMPLATE": azurite.replace(AZURITE_ACCOUNT,
                                                                  "{account}"),
            "GHOST_AZURE_STORAGE_AUTH_MODE": "key", "GHOST_AZURE_STORAGE_KEY": AZURITE_KEY,
            "GHOST_AZURE_STATIC_TOKEN": TOKEN, "GHOST_AZURE_LRO_POLLING_INTERVAL": "0"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a",
                                     requested_by="U").session_id
    shell = SafeExecShell(sid, audit=store, approvals=store,
                          approver=ScriptedApprover(*[Decision.approve("alice")] * 5),
                          data_dir=settings.data_dir, requested_by="U")
    if not blobs(azurite).get_container_client("captures").exists():
        blobs(azurite).create_container("captures")  # the configured default container
    orch = build_orchestrator(settings, store, shell, sid)
    request: dict[str, Any] = capture()
    request["parameters"] |= {"storage_auth_mode": "login"}
    started = orch.orchestrate(request)
    assert any("'login' was asked for" in w and "'key'" in w
               for w in started.get("warnings") or []), started
    records = [r for r in store.audit_records(sid) if r["kind"] == "command"]
    storage = [r["command"] for r in records if r["command"].startswith("az storage")]
    assert storage and all("--auth-mode key" in c for c in storage), storage
    # and each says what it is: an SDK call shown as its az equivalent
    assert all(r["details"]["via"] == "sdk" and "through the Azure SDK" in r["reasoning"]
               for r in records if r["command"].startswith("az "))
