"""The request contract (errors, idempotency, list_tasks) and cleanup plans."""

from __future__ import annotations

from typing import Any

import pytest

from core.orchestrator.backend import CaptureBackendError
from core.orchestrator.lifecycle import describe
from core.safety.approval import Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve


def finished(world: World, *answers: Decision) -> tuple[Any, str]:
    orch = world.orchestrator(*approve(2), *answers)
    task_id = orch.orchestrate(capture_request())["task_id"]
    assert orch.orchestrate({"intent": "check_task", "task_id": task_id})["state"] == \
        "COMPLETED"
    return orch, task_id


@pytest.mark.parametrize(("request_", "code", "text"), [
    ({"intent": "reboot_vm"}, "unknown_intent", "Unsupported intent: 'reboot_vm'"),
    ({}, "unknown_intent", "Unsupported intent: None"),
    ("capture please", "invalid_request", "object with an intent"),
    ({"intent": "check_task", "task_id": "ghost_nope_20250101T000000"}, "unknown_task",
     "No task found with ID: ghost_nope_20250101T000000"),
    ({"intent": "cancel_task"}, "missing_parameter", "task_id is required"),
    ({**capture_request(), "target": ""}, "missing_parameter", "target is required"),
    ({**capture_request(), "parameters": {"duration_seconds": 60, "resource_group": "rg"}},
     "missing_parameter", "storage_account is required"),
    (capture_request(duration_seconds=301), "invalid_parameter", "capture limit of 300 s"),
    (capture_request(duration_seconds=18000), "invalid_parameter", "at most 300 s"),
    (capture_request(duration_seconds=0), "invalid_parameter", "1 to 300"),
    (capture_request(duration_seconds="60"), "invalid_parameter", "duration_seconds"),
    ({**capture_request(), "target": "vm1; rm -rf /"}, "invalid_parameter", "not a VM name"),
    ({**capture_request(), "target": "a to b to c"}, "invalid_parameter", "two joined"),
    ({**capture_request(), "target": "vm1/../../etc"}, "invalid_parameter", "not a VM name"),
    ({**capture_request(), "target": "/subscriptions/x/resourceGroups/rg/providers/$(id)/a/b"},
     "invalid_parameter", "not a VM name"),
    (capture_request(filters=[{"remoteIPAddress": "$(id)"}]), "invalid_parameter", "filter"),
    (capture_request(filters=[{"shell": "x"}]), "invalid_parameter", "allowed keys"),
])
def test_bad_requests_are_errors_and_create_nothing(world: World, request_: Any, code: str,
                                                    text: str) -> None:
    res = world.orchestrator().orchestrate(request_)
    assert res["status"] == "error" and res["error"] == code
    assert text in res["message"]
    assert world.store.task_events(world.sid) == [] and world.cloud.calls == []


def test_an_unexpected_failure_is_an_error_response_not_an_exception(world: World) -> None:
    world.cloud.fail("detect", CaptureBackendError("Throttled", "x"))
    orch = world.orchestrator()
    orch.lifecycle.steps.detect = None  # type: ignore[assignment, method-assign]
    res = orch.orchestrate(capture_request())
    assert res["status"] == "error" and res["error"] == "internal_error"
    assert "TypeError" in res["message"]


def test_check_on_a_finished_task_changes_nothing(world: World) -> None:
    orch, task_id = finished(world)
    before = len(world.records(task_id))
    again = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert again["state"] == "COMPLETED" and again["result"]["report_path"]
    assert orch.orchestrate({"intent": "cancel_task", "task_id": task_id})["state"] == \
        "COMPLETED"
    assert len(world.records(task_id)) == before


def test_list_tasks_returns_the_current_state_of_this_sessions_tasks(world: World) -> None:
    orch = world.orchestrator(*approve(1), Decision.deny("bob"))
    first = orch.orchestrate(capture_request())["task_id"]
    world.clock.tick(1)
    second = orch.orchestrate(capture_request("redis-vm"))["task_id"]
    listed = orch.orchestrate({"intent": "list_tasks"})
    assert listed["status"] == "ok" and listed["count"] == 2
    assert [(t["task_id"], t["state"]) for t in listed["tasks"]] == [
        (first, "WAITING"), (second, "CANCELLED")]


def test_cleanup_runs_cloud_first_local_last(world: World) -> None:
    orch, task_id = finished(world, *approve(3))
    pcap = world.config.local_capture_dir / f"{task_id}.pcap"
    assert pcap.exists()
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["state"] == "DONE" and res["cleanup_status"] == "completed"
    assert res["status"] == "task_completed" and res["result"]["report_path"]
    assert [c.split(" --")[0].split(" /")[0] for c in world.seen(orch)[2:]] == [
        "az network watcher packet-capture delete", "az storage blob delete", "rm"]
    assert not world.cloud.captures and not world.cloud.blobs and not pcap.exists()
    record = world.records(task_id)[-1]
    assert all(e["executed"] for e in record["cleanup_plan"])
    assert record["timestamps"]["cleanup_started"] and record["timestamps"]["cleanup_completed"]
    # the deliverables stay unless asked for explicitly
    assert res["result"]["report_path"] and \
        (world.config.local_capture_dir / f"{task_id}_forensic_report.md").exists()


def test_denied_cleanup_is_partial_and_a_second_request_retries(world: World) -> None:
    orch, task_id = finished(world, Decision.deny("bob", "keep it for now"), *approve(2))
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["cleanup_status"] == "partial"
    assert any("not deleted" in w and "may incur charges" in w for w in res["warnings"])
    assert task_id in world.cloud.captures and not world.cloud.blobs
    status = describe(world.records(task_id)[-1])  # what the Brain and the console show
    assert status.startswith("Cleanup partial: Resource ") and ".;" not in status
    assert status.endswith("Run cleanup_task again to retry.")
    retry = world.orchestrator(*approve(1))
    res2 = retry.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res2["cleanup_status"] == "completed" and not world.cloud.captures
    assert [c.split(" --")[0] for c in world.seen(retry)] == [
        "az network watcher packet-capture delete"]


def test_already_deleted_resources_count_as_cleaned(world: World) -> None:
    orch, task_id = finished(world, *approve(3))
    world.cloud.captures.clear()
    world.cloud.fail("delete_blob", CaptureBackendError("ResourceNotFound", "BlobNotFound"))
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["cleanup_status"] == "completed"
    outcomes = [e["outcome"] for e in world.records(task_id)[-1]["cleanup_plan"]]
    assert outcomes == ["already_deleted", "already_deleted", "deleted"]


def test_a_failing_delete_leaves_cleanup_partial(world: World) -> None:
    orch, task_id = finished(world, *approve(3))
    world.cloud.fail("delete_capture", CaptureBackendError("AuthorizationFailed", "no rights"))
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["cleanup_status"] == "partial"
    assert "AuthorizationFailed" in world.records(task_id)[-1]["cleanup_plan"][0]["detail"]


def test_artifacts_are_deleted_only_when_asked(world: World) -> None:
    orch, task_id = finished(world, *approve(6))
    orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id,
                            "parameters": {"include_artifacts": True}})
    assert res["cleanup_status"] == "completed"
    assert sorted(p.name for p in world.config.local_capture_dir.iterdir()) == []


def test_cleanup_of_a_running_task_is_refused(world: World) -> None:
    orch = world.orchestrator(None)
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["error"] == "invalid_state" and "cancel it first" in res["message"]


def test_a_registry_write_failure_is_not_fatal(world: World) -> None:
    class Flaky:
        def __init__(self) -> None:
            self.inner = world.store

        def append_task_event(self, session_id: str, record: Any) -> None:
            raise OSError("disk full")

        def latest_tasks(self, session_id: str | None = None) -> list[dict[str, Any]]:
            return self.inner.latest_tasks(session_id)

    orch = world.orchestrator(*approve(2))
    orch.registry.tasks = Flaky()
    task_id = orch.orchestrate(capture_request())["task_id"]
    res = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert res["status"] == "task_completed"  # carried on in memory
    assert world.store.task_events(world.sid) == []


def test_records_that_are_not_tasks_are_skipped(world: World) -> None:
    world.store.append_task_event(world.sid, {"task_id": "ghost_broken", "garbage": True})
    orch = world.orchestrator()
    assert orch.orchestrate({"intent": "list_tasks"})["count"] == 0
    assert orch.orchestrate({"intent": "check_task",
                             "task_id": "ghost_broken"})["error"] == "unknown_task"


def test_a_full_resource_id_is_a_valid_target() -> None:
    """The tool says full ids are unambiguous when VMs share a name: the orchestrator takes them."""
    from core.orchestrator.validation import split_targets

    vm = ("/subscriptions/6a1f0c2e-0000-4000-8000-00000000a001/resourceGroups/rg-prod-app"
          "/providers/Microsoft.Compute/virtualMachines/web-vm-01")
    other = vm.replace("web-vm-01", "redis-vm-01").replace("rg-prod-app", "rg-prod-data")
    assert split_targets(vm) == [vm]
    assert split_targets(f"{vm} to {other}") == [vm, other]
