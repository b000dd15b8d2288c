"""Burst polling with backoff, timeouts, and approvals that are answered later or elsewhere."""

from __future__ import annotations

from dataclasses import replace

from core.orchestrator import OrchestratorConfig, backoff_seconds
from core.orchestrator.backend import CaptureBackendError
from core.safety.approval import Decision
from storage.store import Store
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve


def check(orch, task_id):  # type: ignore[no-untyped-def]
    return orch.orchestrate({"intent": "check_task", "task_id": task_id})


def test_backoff_schedule_matches_the_spec() -> None:
    config = OrchestratorConfig()
    assert [backoff_seconds(n, config) for n in (1, 2, 3, 4, 5, 10, 20)] == [
        5, 10, 20, 30, 30, 30, 30]
    fast = OrchestratorConfig(initial_poll_interval=1, max_poll_interval=4)
    assert [backoff_seconds(n, fast) for n in (1, 2, 3, 4)] == [1, 2, 4, 4]


def test_burst_polls_within_the_limit_then_times_out_after_max_polls(world: World) -> None:
    world.cloud.default_statuses = ("Running",)
    orch = world.orchestrator(*approve(3))
    task_id = orch.orchestrate(capture_request())["task_id"]
    first = check(orch, task_id)
    # polls at 0, 5, 15, 35 s; the next sleep (30 s) would pass the 45 s burst limit
    assert first["status"] == "task_pending" and first["state"] == "WAITING"
    assert first["poll_count"] == 4 and first["max_polls"] == 20
    assert world.clock.sleeps == [5, 10, 20]
    assert "Azure state: Running" in first["message"]
    polls = [4]
    while True:
        res = check(orch, task_id)
        if res["status"] != "task_pending":
            break
        polls.append(res["poll_count"])
    assert polls == [4, 6, 8, 10, 12, 14, 16, 18]  # later bursts: poll, 30 s, poll
    assert res["status"] == "task_timed_out" and res["state"] == "DONE"
    assert world.cloud.count("status") == 20
    assert res["cleanup_status"] == "completed" and not world.cloud.captures
    assert "after 20 polls" in res["error_detail"]


def test_polling_knobs_are_configurable(world: World) -> None:
    world.cloud.default_statuses = ("Running",)
    config = replace(world.config, max_polls=3, poll_burst_limit=1.5, initial_poll_interval=1,
                     max_poll_interval=1)
    orch = world.orchestrator(*approve(3), config=config)
    task_id = orch.orchestrate(capture_request())["task_id"]
    assert check(orch, task_id)["poll_count"] == 2  # at 0 s and 1 s; one more sleep passes 1.5 s
    assert check(orch, task_id)["status"] == "task_timed_out"
    assert world.cloud.count("status") == 3


def test_a_poll_error_does_not_advance_and_rapid_checks_poll_each_time(world: World) -> None:
    world.cloud.default_statuses = ("Running",)
    orch = world.orchestrator(*approve(1), config=replace(world.config, poll_burst_limit=0))
    task_id = orch.orchestrate(capture_request())["task_id"]
    world.cloud.fail("status", CaptureBackendError("Throttled", "429 Too Many Requests"))
    res = check(orch, task_id)
    assert res["state"] == "WAITING" and res["poll_count"] == 1
    assert "Throttled" in res["warnings"][0]
    check(orch, task_id)
    check(orch, task_id)
    assert world.cloud.count("status") == 3 and world.clock.sleeps == []


def test_approval_answered_later_in_another_process_runs_once(
        world: World, migrated_url: str) -> None:
    chat = world.orchestrator(None)  # a chat approver: the answer comes later
    res = chat.orchestrate(capture_request())
    task_id = res["task_id"]
    assert res["status"] == "task_pending" and res["state"] == "APPROVED"
    waiting = res["waiting_for_approval"]
    assert waiting["step"] == "create" and world.cloud.count("create") == 0
    assert world.records(task_id)[-1]["pending_step"]["approval_id"] == waiting["approval_id"]
    # still waiting: check_task does not create anything
    assert check(chat, task_id)["waiting_for_approval"] == waiting

    # another process: its own Store, shell and orchestrator; a human clicks Approve
    store2 = Store.from_url(migrated_url)
    try:
        shell2 = world.shell(None)
        shell2.approvals = shell2.audit = store2
        shell2.decide(waiting["approval_id"], Decision.approve("alice"))
        other = world.orchestrator(shell=shell2)
        other.registry.tasks = store2
        res2 = check(other, task_id)
        assert res2["status"] == "task_pending" and "waiting_for_approval" in res2
        assert res2["waiting_for_approval"]["step"] == "download"
        assert world.cloud.count("create") == 1
        # the first process checks too: the create does not run again
        res3 = check(chat, task_id)
        assert world.cloud.count("create") == 1 and res3["state"] == "DOWNLOADING"
    finally:
        store2.db.dispose()


def test_crash_while_the_approved_create_runs_is_not_retried(world: World) -> None:
    class Crash(BaseException):
        """Stands for the process dying mid-call (not an Exception: nothing catches it)."""

    world.cloud.fail("create", Crash())  # type: ignore[arg-type]
    orch = world.orchestrator(None)
    task_id = orch.orchestrate(capture_request())["task_id"]
    approval_id = world.records(task_id)[-1]["pending_step"]["approval_id"]
    shell = world.shell()
    shell.decide(approval_id, Decision.approve("alice"))
    try:
        world.orchestrator(shell=shell).orchestrate({"intent": "check_task",
                                                     "task_id": task_id})
    except Crash:
        pass
    # restart: the shell closes the interrupted call; the task learns its outcome is unknown
    restarted = world.shell(*approve(2))
    assert restarted.recover_interrupted()
    res = check(world.orchestrator(shell=restarted), task_id)
    assert res["status"] == "task_failed" and "outcome is unknown" in res["error_detail"]
    assert world.cloud.count("create") == 1
    # it may exist, so cleanup tries; Azure says it is gone: counted as done
    plan = world.records(task_id)[-1]["cleanup_plan"]
    assert plan[0]["outcome"] == "already_deleted" and res["cleanup_status"] == "completed"


def test_restart_in_the_middle_of_polling_continues_the_count(world: World) -> None:
    world.cloud.default_statuses = ("Running",) * 5 + ("Stopped",)
    orch = world.orchestrator(*approve(1))
    task_id = orch.orchestrate(capture_request())["task_id"]
    assert check(orch, task_id)["poll_count"] == 4
    del orch  # the process goes away
    fresh = world.orchestrator(*approve(1))
    res = check(fresh, task_id)
    assert res["status"] == "task_completed"
    assert world.records(task_id)[-1]["poll_count"] == 6  # 4 before the restart, 2 after


def test_cancel_while_create_waits_withdraws_the_approval(world: World) -> None:
    orch = world.orchestrator(None)
    res = orch.orchestrate(capture_request())
    approval_id = res["waiting_for_approval"]["approval_id"]
    cancelled = orch.orchestrate({"intent": "cancel_task", "task_id": res["task_id"]})
    assert cancelled["status"] == "task_cancelled" and cancelled["state"] == "CANCELLED"
    assert cancelled["cleanup_status"] == "skipped"
    late = world.shell()
    assert late.decide(approval_id, Decision.approve("alice")) is None  # nothing to approve
    assert world.cloud.count("create") == 0


def test_cancel_while_waiting_cleans_the_running_capture(world: World) -> None:
    world.cloud.default_statuses = ("Running",)
    orch = world.orchestrator(*approve(3), config=replace(world.config, poll_burst_limit=0))
    task_id = orch.orchestrate(capture_request())["task_id"]
    check(orch, task_id)
    res = orch.orchestrate({"intent": "cancel_task", "task_id": task_id})
    assert res["status"] == "task_cancelled" and res["state"] == "DONE"
    assert res["cleanup_status"] == "completed" and not world.cloud.captures
    again = orch.orchestrate({"intent": "cancel_task", "task_id": task_id})
    assert again["state"] == "DONE" and "nothing to cancel" in again["message"]
