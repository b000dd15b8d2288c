"""A capture from request to report: the real gate, store and forensic engine; a fake cloud."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from core.safety.approval import Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve

ALL_STATES = ["CREATED", "DETECTING", "APPROVED", "PROVISIONING", "WAITING", "DOWNLOADING",
              "ANALYZING", "COMPLETED"]


def test_happy_path_creates_polls_downloads_and_analyses(world: World) -> None:
    orch = world.orchestrator(*approve(2))
    started = orch.orchestrate(capture_request())
    task_id = started["task_id"]
    assert task_id == "ghost_web-vm-01_20250115T143200"
    assert started["status"] == "task_pending" and started["state"] == "WAITING"
    assert started["investigation_context"] == "Intermittent 502s from web-vm-01 to redis."
    assert world.cloud.count("create") == 1

    world.clock.tick(3)
    done = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert done["status"] == "task_completed" and done["state"] == "COMPLETED"
    assert done["cleanup_status"] == "pending" and done["error_detail"] is None
    result = done["result"]
    assert result["local_pcap_path"] == str(world.config.local_capture_dir / f"{task_id}.pcap")
    semantic = json.loads(Path(result["semantic_json_path"]).read_text())
    assert "retransmi" in semantic["findings"][0]["title"]  # the one resent segment
    assert Path(result["report_path"]).read_text().startswith("# Forensic Report")
    assert done["duration_seconds"] == 8.0  # 3 s idle + one 5 s backoff between two polls
    assert world.clock.sleeps == [5.0]
    # every transition was appended; the last record is the current state
    states = [r["state"] for r in world.records(task_id)]
    assert [s for i, s in enumerate(states) if s not in states[:i]] == ALL_STATES
    assert states[-1] == "COMPLETED"
    record = world.records(task_id)[-1]
    assert record["poll_count"] == 2 and record["max_polls"] == 20
    assert all(record["timestamps"][k] for k in ("created", "approved", "provisioned",
                                                 "first_poll", "last_poll", "completed"))
    assert record["timestamps"]["cleanup_started"] is None
    assert [e["kind"] for e in record["cleanup_plan"]] == ["capture", "blob", "local"]


def test_gated_calls_are_audited_as_az_equivalents(world: World) -> None:
    orch = world.orchestrator(*approve(2))
    task_id = orch.orchestrate(capture_request(filters=[{"protocol": "TCP",
                                                          "remotePort": "6379"}]))["task_id"]
    orch.orchestrate({"intent": "check_task", "task_id": task_id})
    commands = [(r["command"].split(" --")[0], r["classification"], r["action"],
                 r["environment"]) for r in world.store.audit_records(world.sid)
                if r["kind"] == "command"]
    assert commands == [
        ("az resource list", "SAFE", "auto_approved", "azure"),
        ("az storage container exists", "SAFE", "auto_approved", "azure"),
        ("az network watcher packet-capture create", "RISKY", "user_approved", "azure"),
        ("az network watcher packet-capture show-status", "SAFE", "auto_approved", "azure"),
        ("az network watcher packet-capture show-status", "SAFE", "auto_approved", "azure"),
        ("az storage blob download", "RISKY", "user_approved", "azure"),
        (f"ghost-forensics {world.config.local_capture_dir}/{task_id}.pcap", "SAFE",
         "auto_approved", "local"),
    ]
    create = world.seen(orch)[0]
    assert f"--name {task_id}" in create and "--time-limit 60" in create
    assert """--filters '[{"protocol":"TCP","remotePort":"6379"}]'""" in create
    task = world.records(task_id)[-1]
    audit_ids = {r["audit_id"] for r in world.store.audit_records(world.sid)
                 if r["kind"] == "command"}
    assert set(task["shell_audit_ids"]) == audit_ids
    approver = orch.lifecycle.shell.approver  # type: ignore[attr-defined]
    assert "Intermittent 502s from web-vm-01 to redis." in approver.seen[0].reasoning


def test_with_login_auth_the_download_into_the_data_dir_is_a_safe_read(world: World) -> None:
    """issue 28: `az storage blob download --auth-mode login` into Ghost's data directory reads
    no key and writes only there, so the gate runs it without a second approval."""
    config = replace(world.config, storage_auth_mode="login")
    orch = world.orchestrator(*approve(1), config=config)
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_completed", res
    download = [r for r in world.store.audit_records(world.sid) if r["kind"] == "command"
                and r["command"].startswith("az storage blob download")]
    assert [(r["classification"], r["action"]) for r in download] == [("SAFE",
                                                                        "auto_approved")]
    assert "--auth-mode login" in download[0]["command"]


def test_denied_create_cancels_without_resources(world: World) -> None:
    orch = world.orchestrator(Decision.deny("bob", "wrong VM"))
    res = orch.orchestrate(capture_request())
    assert res["status"] == "task_cancelled" and res["state"] == "CANCELLED"
    assert "wrong VM" in res["error_detail"] and res["cleanup_status"] == "skipped"
    assert world.cloud.count("create") == 0 and not world.cloud.captures


def test_denied_download_cancels_and_cleans_the_capture(world: World) -> None:
    orch = world.orchestrator(Decision.approve("alice"), Decision.deny("bob", "too big"),
                              *approve(2))
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_cancelled" and res["state"] == "DONE"
    assert "too big" in res["error_detail"] and res["cleanup_status"] == "completed"
    assert not world.cloud.captures and not world.cloud.blobs
    seen = world.seen(orch)
    assert seen[2].startswith("az network watcher packet-capture delete")
    assert seen[3].startswith("az storage blob delete")


def test_network_watcher_not_enabled_fails_at_provisioning(world: World) -> None:
    from core.orchestrator.backend import CaptureBackendError

    world.cloud.fail("create", CaptureBackendError(
        "NetworkWatcherNotEnabled", "Network Watcher is not enabled in region westus2"))
    orch = world.orchestrator(*approve(1))
    res = orch.orchestrate(capture_request())
    assert res["status"] == "task_failed" and res["state"] == "DONE"
    assert "NetworkWatcherNotEnabled" in res["error_detail"]
    assert res["cleanup_status"] == "skipped"  # nothing was created, nothing asked
    assert "PROVISIONING" not in [r["state"] for r in world.records(res["task_id"])]


def test_unknown_vm_fails_during_detection(world: World) -> None:
    orch = world.orchestrator()
    res = orch.orchestrate(capture_request("ghost-town-vm"))
    assert res["status"] == "task_failed"
    assert res["error_detail"].startswith("Resource not found")
    assert world.cloud.count("create") == 0 and world.cloud.count("verify_storage") == 0


def test_aks_is_detected_but_not_captured(world: World) -> None:
    world.cloud.add_vm("prod-aks", kind="aks")
    res = world.orchestrator().orchestrate(capture_request("prod-aks"))
    assert res["status"] == "task_failed" and res["target_type"] == "aks"
    assert "AKS capture pipeline is not yet available" in res["error_detail"]


def test_inaccessible_storage_fails_before_anything_is_created(world: World) -> None:
    world.cloud.containers.clear()
    res = world.orchestrator().orchestrate(capture_request())
    assert res["status"] == "task_failed" and "not accessible" in res["error_detail"]
    assert world.cloud.count("create") == 0


def test_azure_reported_failure_fails_and_deletes_the_capture(world: World) -> None:
    world.cloud.default_statuses = ("Running", "Failed")
    orch = world.orchestrator(*approve(3))
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_failed" and "Azure capture failed" in res["error_detail"]
    assert res["state"] == "DONE" and res["cleanup_status"] == "completed"
    assert not world.cloud.captures


def test_download_retries_once_then_succeeds(world: World) -> None:
    from core.orchestrator.backend import CaptureBackendError

    world.cloud.fail("download", CaptureBackendError("BlobNotFound", "not yet"))
    orch = world.orchestrator(*approve(2))
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_completed"
    assert world.cloud.count("download") == 2 and world.clock.sleeps == [5.0, 5.0]


def test_download_failing_twice_fails_with_both_errors_and_no_partial_file(
        world: World) -> None:
    world.cloud.fail("download", OSError(28, "No space left on device"),
                     OSError(28, "No space left on device"))
    orch = world.orchestrator(*approve(4))
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_failed"
    assert "attempt 1" in res["error_detail"] and "attempt 2" in res["error_detail"]
    assert not (world.config.local_capture_dir / f"{task_id}.pcap").exists()
    assert res["cleanup_status"] == "completed" and not world.cloud.captures


def test_engine_failure_fails_and_removes_the_local_pcap(world: World) -> None:
    world.cloud.pcap = b"this is not a capture file at all"
    orch = world.orchestrator(*approve(5))
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_failed" and "PCAP engine failed" in res["error_detail"]
    assert world.seen(orch)[-1].startswith("rm ")
    assert not (world.config.local_capture_dir / f"{task_id}.pcap").exists()
    assert res["cleanup_status"] == "completed"


def test_empty_captures_complete(world: World) -> None:
    from tests.orchestrator.pcaps import header_only_pcap

    for data, has_report in ((b"", False), (header_only_pcap(), True)):
        world.cloud.pcap = data
        orch = world.orchestrator(*approve(2))
        task_id = orch.orchestrate(capture_request())["task_id"]
        res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
        assert res["status"] == "task_completed", res
        assert res["result"]["pcap_bytes"] == len(data)
        assert (res["result"]["report_path"] is not None) is has_report
        world.clock.tick(1)
