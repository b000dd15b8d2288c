"""Dual-end captures (comparison and single-end fallback) and three-layer orphan detection."""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.orchestrator.backend import CaptureBackendError, CaptureSpec
from core.safety.approval import Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve


def check(orch, task_id):  # type: ignore[no-untyped-def]
    return orch.orchestrate({"intent": "check_task", "task_id": task_id})


def test_both_ends_complete_and_are_compared(world: World) -> None:
    orch = world.orchestrator(*approve(4))
    res = orch.orchestrate(capture_request("web-vm-01 to redis-vm"))
    a, b = (t["task_id"] for t in res["tasks"])
    assert a == "ghost_web-vm-01_20250115T143200" and b == "ghost_redis-vm_20250115T143200"
    assert res["paired_task"]["task_id"] == b
    first = check(orch, a)
    assert first["status"] == "task_pending" and first["state"] == "ANALYZING"
    assert "Waiting for the partner capture (redis-vm)" in first["message"]
    assert first["paired_task"] == {"task_id": b, "state": "WAITING", "poll_count": 0}
    second = check(orch, b)
    assert second["status"] == "task_completed" and second["result"]["mode"] == "comparison"
    compare = [c for c in world.store.audit_records(world.sid)
               if c["kind"] == "command" and c["command"].startswith("ghost-forensics")]
    assert len(compare) == 1 and f"{a}.pcap --compare " in compare[0]["command"]
    first_again = check(orch, a)
    assert first_again["status"] == "task_completed"
    assert first_again["result"]["report_path"] == second["result"]["report_path"]
    semantic = json.loads(Path(second["result"]["semantic_json_path"]).read_text())
    assert "comparison" in semantic


def test_partner_failure_falls_back_to_single_end(world: World) -> None:
    def fail_redis(spec: CaptureSpec) -> None:
        if spec.name.startswith("ghost_redis"):
            raise CaptureBackendError("NetworkWatcherNotEnabled", "not in eastus")

    real_create = world.cloud.create_capture
    world.cloud.create_capture = lambda spec: (fail_redis(spec), real_create(spec))[1]  # type: ignore[method-assign]
    orch = world.orchestrator(*approve(3))
    res = orch.orchestrate(capture_request("web-vm-01 to redis-vm"))
    a, b = (t["task_id"] for t in res["tasks"])
    assert res["tasks"][1]["status"] == "task_failed"
    done = check(orch, a)
    assert done["status"] == "task_completed"
    assert done["result"]["mode"] == "single_end_fallback"
    assert done["paired_task"]["state"] == "DONE"
    assert "NetworkWatcherNotEnabled" in done["paired_task"]["error_detail"]
    assert "Single-end analysis completed" in done["message"]


def test_denied_partner_also_falls_back(world: World) -> None:
    orch = world.orchestrator(Decision.approve("alice"), Decision.deny("bob", "not redis"),
                              *approve(1))
    res = orch.orchestrate(capture_request("web-vm-01 to redis-vm"))
    assert res["tasks"][1]["status"] == "task_cancelled"
    done = check(orch, res["task_id"])
    assert done["result"]["mode"] == "single_end_fallback"


def test_orphans_in_all_three_layers(world: World) -> None:
    # a previous session left a task WAITING and a completed task never cleaned up
    old_sid = world.store.create_investigation(symptom="old", model="m", audit_dir="a",
                                               requested_by="U").session_id
    old = world.orchestrator(*approve(1), sid=old_sid)
    waiting_id = old.orchestrate(capture_request())["task_id"]
    world.clock.tick(60)
    old2 = world.orchestrator(*approve(3), sid=old_sid)
    done_id = old2.orchestrate(capture_request("redis-vm"))["task_id"]
    check(old2, done_id)
    # Azure holds a ghost_* capture nobody registered, and an unrelated one
    world.cloud.captures["ghost_lost-vm_20240101T000000"] = {"location": "westus2"}
    world.cloud.captures["someone-elses-capture"] = {"location": "westus2"}
    # the capture directory holds one stale and one fresh ghost_* file, and a foreign file
    capture_dir = world.config.local_capture_dir
    stale = capture_dir / "ghost_old-vm_20240101T000000.pcap"
    stale.write_bytes(b"x")
    eight_days = world.clock().timestamp() - 8 * 86400
    os.utime(stale, (eight_days, eight_days))
    (capture_dir / "notes.pcap").write_bytes(b"x")
    os.utime(capture_dir / "notes.pcap", (eight_days, eight_days))

    now = world.orchestrator(scan_orphans=True)
    first = now.orchestrate({"intent": "list_tasks"})
    report = first["orphans"]
    assert [t["task_id"] for t in report["abandoned"]] == [waiting_id]
    assert [t["task_id"] for t in report["needs_cleanup"]] == [done_id]
    assert [c["name"] for c in report["untracked_captures"]] == [
        "ghost_lost-vm_20240101T000000"]
    assert [f["path"] for f in report["stale_files"]] == [str(stale)]
    assert report["count"] == 4 and "Startup cleanup: 4 orphaned" in report["message"]
    assert "orphans" not in now.orchestrate({"intent": "list_tasks"})  # once per start
    abandoned = check(now.orphan_cleaner(), waiting_id)  # the orphan path, not the model
    assert abandoned["state"] == "ABANDONED" and "ended while the task was WAITING" in \
        abandoned["error_detail"]


def test_live_sessions_are_not_abandoned(world: World) -> None:
    other = world.store.create_investigation(symptom="o", model="m", audit_dir="a",
                                             requested_by="U").session_id
    task_id = world.orchestrator(*approve(1), sid=other).orchestrate(
        capture_request())["task_id"]
    orch = world.orchestrator(is_session_live=lambda s: s in (world.sid, other))
    assert orch.detect_orphans()["abandoned"] == []
    assert world.orchestrator(sid=other).orchestrate(
        {"intent": "list_tasks"})["tasks"][0]["state"] == "WAITING"
    assert task_id


def test_the_registry_layer_lists_another_hosts_capture_without_cleaning_it(world: World) -> None:
    """A capture of a session held on another host: ``maybe_running`` with the holder and its
    lease expiry, never ``abandoned``."""
    from core.orchestrator.orphans import Liveness

    other = world.store.create_investigation(symptom="o", model="m", audit_dir="a",
                                             requested_by="U").session_id
    task_id = world.orchestrator(*approve(1), sid=other).orchestrate(
        capture_request())["task_id"]
    remote = Liveness(True, "held by `ghost investigate` (pid 9 on h2)", remote=True,
                      lease_expires_at="2026-11-28 16:32:00 UTC")
    orch = world.orchestrator(is_session_live=lambda s: remote if s == other else True)
    report = orch.detect_orphans()
    assert report["abandoned"] == []
    [listed] = report["maybe_running"]
    assert listed["task_id"] == task_id and listed["session_id"] == other
    assert listed["holder"] == remote.note and listed["lease_expires_at"] == \
        "2026-11-28 16:32:00 UTC"


def test_abandoned_and_untracked_orphans_can_be_cleaned(world: World) -> None:
    old_sid = world.store.create_investigation(symptom="old", model="m", audit_dir="a",
                                               requested_by="U").session_id
    task_id = world.orchestrator(*approve(1), sid=old_sid).orchestrate(
        capture_request())["task_id"]
    world.cloud.captures["ghost_lost-vm_20240101T000000"] = {"location": "westus2"}
    orch = world.orchestrator(*approve(4))
    report = orch.detect_orphans()
    # the model's path refuses another investigation's task; the orphan cleanup takes it
    refused = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert refused["error"] == "unknown_task" and "another investigation" in refused["message"]
    res = orch.orphan_cleaner().orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["state"] == "DONE" and res["cleanup_status"] == "completed"
    batch = orch.cleanup_orphans(report)
    assert batch["cleanup_status"] == "completed" and not world.cloud.captures
    approver = orch.lifecycle.shell.approver  # type: ignore[attr-defined]
    assert approver.seen[-1].reasoning.startswith("Startup cleanup: 1 orphaned resources")
