"""The model's intents act on its own investigation's tasks only; the orphan cleanup (after a
person chose Clean up) may clean up and continue ended investigations' tasks."""

from __future__ import annotations

import io

import pytest

from bot.startup import orphan_check
from bot.terminal import Prompter
from core.safety.approval import Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve


def _other_waiting(world: World) -> tuple[str, str, str]:
    """Investigation B's capture whose create waits for a human's approval."""
    other = world.store.create_investigation(symptom="b", model="m", audit_dir="a",
                                             requested_by="U").session_id
    res = world.orchestrator(None, sid=other).orchestrate(capture_request())
    return other, str(res["task_id"]), str(res["waiting_for_approval"]["approval_id"])


@pytest.mark.parametrize("intent", ["check_task", "cancel_task", "cleanup_task"])
def test_another_investigations_task_is_unknown_to_the_model(world: World,
                                                             intent: str) -> None:
    other, task_id, approval_id = _other_waiting(world)
    before = world.store.task_events(other)
    res = world.orchestrator().orchestrate({"intent": intent, "task_id": task_id})
    assert res["status"] == "error" and res["error"] == "unknown_task"
    assert f"Task {task_id} belongs to another investigation" in res["message"]
    assert world.store.task_events(other) == before  # nothing written, nothing polled
    # B's approval is still a human's to decide: it was not withdrawn
    (pending,) = world.store.approvals(other, statuses=("pending",))
    assert pending.approval_id == approval_id
    assert world.shell(sid=other).decide(approval_id, Decision.approve("alice")) is not None
    assert world.cloud.count("create") == 0


def test_the_orphan_path_cannot_cancel_or_touch_a_running_investigation(world: World) -> None:
    other, task_id, _ = _other_waiting(world)
    cleaner = world.orchestrator(is_session_live=lambda s: s in (world.sid, other)
                                 ).orphan_cleaner()
    cancel = cleaner.orchestrate({"intent": "cancel_task", "task_id": task_id})
    assert cancel["error"] == "unknown_task" and "another investigation" in cancel["message"]
    live = cleaner.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert live["error"] == "unknown_task" and "still running" in live["message"]
    assert world.store.approvals(other, statuses=("pending",))


def test_the_orphan_path_continues_an_ended_investigations_cleanup(world: World) -> None:
    old = world.store.create_investigation(symptom="old", model="m", audit_dir="a",
                                           requested_by="U").session_id
    task_id = world.orchestrator(*approve(1), sid=old).orchestrate(
        capture_request())["task_id"]
    orch = world.orchestrator(None, *approve(3))  # the first deletion waits (a chat card)
    orch.detect_orphans()  # start-up: the ended investigation's WAITING task is abandoned
    cleaner = orch.orphan_cleaner()
    waiting = cleaner.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert "waiting_for_approval" in waiting, waiting
    approval_id = waiting["waiting_for_approval"]["approval_id"]
    world.shell(sid=world.sid).decide(approval_id, Decision.approve("alice"))
    refused = orch.orchestrate({"intent": "check_task", "task_id": task_id})
    assert refused["error"] == "unknown_task"
    done = cleaner.orchestrate({"intent": "check_task", "task_id": task_id})
    assert done["cleanup_status"] == "completed" and not world.cloud.captures


def test_own_tasks_are_unaffected(world: World) -> None:
    orch = world.orchestrator(None)
    res = orch.orchestrate(capture_request())
    cancelled = orch.orchestrate({"intent": "cancel_task", "task_id": res["task_id"]})
    assert cancelled["state"] == "CANCELLED"


def test_the_terminal_orphan_check_cleans_up_an_ended_investigations_task(
        world: World) -> None:
    """[C]lean up at `ghost investigate` start-up goes through the orphan path: before it did,
    every task of an earlier investigation came back `unknown_task` and was skipped."""
    old = world.store.create_investigation(symptom="old", model="m", audit_dir="a",
                                           requested_by="U").session_id
    task_id = world.orchestrator(*approve(1), sid=old).orchestrate(
        capture_request())["task_id"]
    orch = world.orchestrator(*approve(3), scan_orphans=True)  # as `ghost investigate` builds it
    out = io.StringIO()
    manual = orphan_check(world.store, orch, world.sid, Prompter(io.StringIO("c\n"), out), out)
    assert "[ORPHAN] abandoned task" in out.getvalue() and task_id in out.getvalue()
    assert f"[OK] Cleaned up {task_id}." in out.getvalue(), out.getvalue()
    assert manual == [] and not world.cloud.captures
