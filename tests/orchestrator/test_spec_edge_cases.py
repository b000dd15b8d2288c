"""Rows of the spec's error-handling and edge-case tables that the other files do not cover:
several captures of one VM, a task id collision, a VM paired with an AKS cluster, idempotent
checks on DONE, and an empty registry."""

from __future__ import annotations

from core.safety.approval import Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve


def check(orch, task_id):  # type: ignore[no-untyped-def]
    return orch.orchestrate({"intent": "check_task", "task_id": task_id})


def test_concurrent_captures_on_the_same_vm_are_tracked_independently(world: World) -> None:
    world.cloud.default_statuses = ("Running",)
    orch = world.orchestrator(*approve(4))  # two creates, then the first one's cleanup
    first = orch.orchestrate(capture_request())
    world.clock.tick(7)
    second = orch.orchestrate(capture_request())
    assert first["task_id"] == "ghost_web-vm-01_20250115T143200"
    assert second["task_id"] == "ghost_web-vm-01_20250115T143207"
    assert set(world.cloud.captures) == {first["task_id"], second["task_id"]}
    cancelled = orch.orchestrate({"intent": "cancel_task", "task_id": first["task_id"]})
    assert cancelled["status"] == "task_cancelled" and cancelled["cleanup_status"] == "completed"
    assert set(world.cloud.captures) == {second["task_id"]}  # only its own capture went
    tasks = orch.orchestrate({"intent": "list_tasks"})["tasks"]
    assert {t["task_id"]: t["state"] for t in tasks} == {first["task_id"]: "DONE",
                                                        second["task_id"]: "WAITING"}


def test_same_target_in_the_same_second_gets_its_own_id(world: World) -> None:
    """The spec accepts last-record-wins; Ghost keeps both (an Azure name must be unique too)."""
    orch = world.orchestrator(*approve(2))
    first = orch.orchestrate(capture_request())["task_id"]
    second = orch.orchestrate(capture_request())["task_id"]
    assert (first, second) == ("ghost_web-vm-01_20250115T143200",
                               "ghost_web-vm-01_20250115T143200_2")
    assert set(world.cloud.captures) == {first, second}
    assert {r["task_id"] for r in world.store.task_events(world.sid)} == {first, second}


def test_a_vm_paired_with_an_aks_cluster_goes_on_single_ended(world: World) -> None:
    world.cloud.add_vm("prod-aks", kind="aks")
    orch = world.orchestrator(*approve(2))
    res = orch.orchestrate(capture_request("web-vm-01 to prod-aks"))
    vm, aks = res["tasks"]
    assert aks["status"] == "task_failed" and aks["target_type"] == "aks"
    assert "AKS capture pipeline is not yet available" in aks["error_detail"]
    assert vm["state"] == "WAITING" and world.cloud.count("create") == 1
    done = check(orch, vm["task_id"])
    assert done["status"] == "task_completed"
    assert done["result"]["mode"] == "single_end_fallback"
    assert done["paired_task"]["task_id"] == aks["task_id"]


def test_check_and_cancel_on_done_change_nothing(world: World) -> None:
    orch = world.orchestrator(Decision.approve("alice"), Decision.deny("bob", "too big"),
                              *approve(2))
    task_id = orch.orchestrate(capture_request())["task_id"]
    first = check(orch, task_id)
    assert first["state"] == "DONE" and first["status"] == "task_cancelled"
    before, calls = world.store.task_events(world.sid), list(world.cloud.calls)
    again = check(orch, task_id)
    cancel = orch.orchestrate({"intent": "cancel_task", "task_id": task_id})
    for res in (again, cancel):
        assert (res["state"], res["status"], res["cleanup_status"], res["error_detail"]) == (
            "DONE", "task_cancelled", "completed", first["error_detail"])
    assert world.store.task_events(world.sid) == before  # no record appended
    assert world.cloud.calls == calls  # nothing polled or deleted again


def test_an_empty_registry_is_normal(world: World) -> None:
    orch = world.orchestrator()
    listed = orch.orchestrate({"intent": "list_tasks"})
    assert (listed["status"], listed["count"], listed["tasks"]) == ("ok", 0, [])
    assert check(orch, "ghost_web-vm-01_20250115T143200")["error"] == "unknown_task"
