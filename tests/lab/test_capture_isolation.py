"""Lab sessions share the database with real ones and never mix with them: a worker claims its
own kind, and cross-session task reads (orphan scans, cleanup by task id) see only their kind."""

from __future__ import annotations

from typing import Any

from storage.store import Store


def _task(store: Store, sid: str, task_id: str) -> None:
    store.append_task_event(sid, {"task_id": task_id, "session_id": sid, "state": "COMPLETED",
                                  "intent": "capture_traffic", "timestamps": {},
                                  "cleanup_status": "pending"})


def test_claims_and_task_reads_stay_within_their_kind(store: Store) -> None:
    lab = Store(store.db, lab="nsg-deny-redis")
    real_sid = store.create_investigation(symptom="real", model="m", audit_dir="a",
                                          platform="slack").session_id
    lab_sid = lab.create_investigation(symptom="lab", model="replay:x", audit_dir="a",
                                       platform="slack").session_id
    assert store.get_investigation(real_sid).lab is None
    assert store.get_investigation(lab_sid).lab == "nsg-deny-redis"
    _task(store, real_sid, "ghost_real_1")
    _task(lab, lab_sid, "ghost_lab_1")

    assert [t["task_id"] for t in store.latest_tasks()] == ["ghost_real_1"]
    assert [t["task_id"] for t in lab.latest_tasks()] == ["ghost_lab_1"]
    assert store.latest_task("ghost_lab_1") is None
    assert lab.latest_task("ghost_real_1") is None
    assert [t["task_id"] for t in store.latest_tasks(lab_sid)] == ["ghost_lab_1"], \
        "a session's own tasks are always its own"

    first = lab.claim_next("lab-worker", platforms=("slack",))
    assert first is not None and first.session_id == lab_sid
    assert lab.claim_next("lab-worker", platforms=("slack",)) is None
    real = store.claim_next("worker", platforms=("slack",))
    assert real is not None and real.session_id == real_sid
    other = Store(store.db, lab="mtu-blackhole")
    other.create_investigation(symptom="x", model="m", audit_dir="a", platform="slack")
    assert lab.claim_next("lab-worker", platforms=("slack",)) is None, \
        "another scenario's session needs another scenario's replay"


def test_a_lab_session_gets_the_labs_runner_and_backend_in_any_process(
        store: Store, tmp_path: Any) -> None:
    """`ghost investigate --resume` of a lab session, or a real worker touching one: the
    session's marker decides, so its commands and captures never reach Azure."""
    from bot.bootstrap import build_orchestrator, build_shell
    from bot.settings import Settings
    from lab.capture import LabCaptureBackend
    from lab.executor import LabExecutor

    from .wiring_fixtures import write_scenario

    path = write_scenario(tmp_path / "scn")
    settings = Settings(_env_file=None, data_dir=tmp_path / "data",  # type: ignore[call-arg]
                        azure_subscription_id="00000000-0000-4000-8000-000000000009")
    lab_sid = store.create_investigation(symptom="s", model="m", audit_dir="a",
                                         lab=str(path)).session_id
    real_sid = store.create_investigation(symptom="s", model="m", audit_dir="a").session_id
    approver = object()
    lab_shell = build_shell(settings, store, lab_sid, approver)  # type: ignore[arg-type]
    real_shell = build_shell(settings, store, real_sid, approver)  # type: ignore[arg-type]
    assert isinstance(lab_shell.runner, LabExecutor)
    assert not isinstance(real_shell.runner, LabExecutor)
    lab_orch = build_orchestrator(settings, store, lab_shell, lab_sid)
    real_orch = build_orchestrator(settings, store, real_shell, real_sid)
    assert isinstance(lab_orch.lifecycle.steps.backend, LabCaptureBackend)
    assert not isinstance(real_orch.lifecycle.steps.backend, LabCaptureBackend)
    assert lab_orch.registry.tasks.lab, "its orphan scans read lab tasks only"
