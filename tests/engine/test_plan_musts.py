"""Test-plan MUST items that had no test through the loop (issue 13): D4, D5, D6, E6, M10, a
denied capture counted as a denial, and S1/T5 checked against the spec itself, not against the
implementation's own constants."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from core.orchestrator import CloudOrchestrator, OrchestratorConfig
from core.safety.approval import Decision
from core.safety.command_run import ShellLimits
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.engine.fakes import FakeBrain, RecordingOrchestrator, call, reply
from tests.engine.test_loop import Approver, Rig
from tests.orchestrator.fakes import FakeCloud

TASK = "ghost_vm1_20250115T143200"
H = [{"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE"},
     {"id": "h2", "description": "UDR to a dead NVA", "state": "ACTIVE"}]


def test_d4_d5_cancel_and_cleanup_route_to_the_orchestrator(store: Store,
                                                            tmp_path: Path) -> None:
    orch = RecordingOrchestrator(
        {"status": "task_cancelled", "task_id": TASK, "state": "CANCELLED"},
        {"status": "task_cancelled", "task_id": TASK, "state": "DONE",
         "cleanup_status": "completed"})
    brain = FakeBrain(
        reply(call("cancel_task", task_id=TASK, reason="wrong VM")),
        reply(call("cleanup_task", task_id=TASK)),
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")),
    )
    rig = Rig(store, tmp_path, brain, orchestrator=orch)
    sid = rig.start()
    rig.engine.advance(sid)
    assert orch.requests == [{"intent": "cancel_task", "task_id": TASK, "reason": "wrong VM"},
                             {"intent": "cleanup_task", "task_id": TASK}]
    assert brain.function_responses(1)[0]["response"]["state"] == "CANCELLED"
    assert brain.function_responses(2)[0]["response"]["cleanup_status"] == "completed"
    # a cancel the model asked for is not a human denial
    assert store.get_investigation(sid).state["denial_tracker"] == {}


def test_d6_complete_investigation_runs_nothing_and_drops_the_rest_of_the_turn(
        store: Store, tmp_path: Path) -> None:
    orch = RecordingOrchestrator()
    brain = FakeBrain(reply(
        call("complete_investigation", confidence="high", root_cause_summary="done"),
        call("capture_traffic", target="vm1", resource_group="rg", storage_account="sa"),
        call("run_shell_cmd", command="ss -tln", reasoning="late")))
    rig = Rig(store, tmp_path, brain, orchestrator=orch)
    sid = rig.start()
    outcome = rig.engine.advance(sid)
    assert outcome.kind == "completed" and len(brain.requests) == 1
    assert orch.requests == []
    assert [r for r in store.audit_records(sid) if r["kind"] == "command"] == []
    engine = store.get_investigation(sid).engine_state or {}
    assert engine["dropped_calls"] == ["capture_traffic", "run_shell_cmd"]
    assert [t["role"] for t in store.turns(sid)] == ["user", "model"]


class QuickTimeoutRig(Rig):
    def shell(self, sid: str) -> SafeExecShell:
        return SafeExecShell(sid, audit=self.store, approvals=self.store,
                             approver=self.approver, data_dir=self.tmp_path,
                             requested_by="U_REQ", limits=ShellLimits(timeout_s=0.5))


def test_e6_a_timeout_injects_meta_timeout(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="sleep 5", reasoning="slow", hypotheses=H)),
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")),
    )
    rig = QuickTimeoutRig(store, tmp_path, brain, approver=Approver(Decision.approve("al")))
    sid = rig.start()
    rig.engine.advance(sid)
    [resp] = brain.function_responses(1)
    assert resp["response"]["error"] == "timeout"
    assert resp["response"]["_meta"]["timeout"] is True
    assert store.get_investigation(sid).state["denial_tracker"] == {"h1": 0, "h2": 0}


def test_m10_the_denial_event_names_its_turn_command_reason_and_audit_id(
        store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="a", hypotheses=H)),
        reply(call("run_shell_cmd", command="echo reroute", reasoning="b",
                   hypotheses=[{"id": "h1", "state": "REFUTED"}])),
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")),
    )
    rig = Rig(store, tmp_path, brain,
              approver=Approver(Decision.deny("bob", "use cache-rg, not prod-rg")))
    sid = rig.start()
    rig.engine.advance(sid)
    denied = next(r for r in store.audit_records(sid)
                  if r["kind"] == "command" and r["status"] == "denied")
    log = {h["id"]: h for h in store.get_investigation(sid).state["hypothesis_log"]}
    assert log["h1"]["denial_events"] == []  # resolved in that same turn: not attributed
    assert log["h2"]["denial_events"] == [{
        "turn": 2, "command": "echo reroute", "denial_reason": "use cache-rg, not prod-rg",
        "audit_id": denied["audit_id"]}]


def test_a_denied_capture_counts_as_a_denial_with_meta(store: Store, tmp_path: Path) -> None:
    """Regression (issue 13): `is_denial` looked for a `denied` key no orchestrator result
    set, so denied captures never counted and no hypothesis reached UNVERIFIABLE."""
    cloud = FakeCloud()
    cloud.add_vm("vm1", rg="rg")
    cloud.containers.add(("capsa", "captures"))
    brain = FakeBrain(*[
        reply(call("capture_traffic", target="vm1", resource_group="rg",
                   storage_account="capsa", duration_seconds=30,
                   hypotheses=H[:1] if i == 0 else None))
        for i in range(3)],
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")))
    approver = Approver(*[Decision.deny("bob", "not during the sale")] * 3)
    rig = Rig(store, tmp_path, brain, approver=approver)
    (tmp_path / "captures").mkdir()
    rig.engine.orchestrator_for = lambda sid, shell: CloudOrchestrator(
        shell=shell, backend=cloud, tasks=store, session_id=sid,
        config=OrchestratorConfig(local_capture_dir=tmp_path / "captures"),
        sleep=lambda s: None)
    sid = rig.start()
    rig.engine.advance(sid)
    answers = [brain.function_responses(i)[0]["response"] for i in (1, 2, 3)]
    assert answers[0]["status"] == "task_cancelled" and answers[0]["denied"] is True, answers[0]
    metas = [a["_meta"] for a in answers]
    assert [m["denial_count"] for m in metas] == [1, 2, 3]
    assert metas[0]["denial_reason"] == "not during the sale"
    assert metas[2]["denial_threshold_reached"] is True
    entry = store.get_investigation(sid).state["hypothesis_log"][0]
    assert entry["state"] == "UNVERIFIABLE"
    event = entry["denial_events"][0]
    assert event["command"].startswith("az network watcher packet-capture create")
    assert event["audit_id"] and event["turn"] == 1
    assert not any(op == "create" for op, _ in cloud.calls)  # nothing was created


#: ghost-design §8, written out here rather than imported from the implementation
SPEC_FIELDS = ["session_id", "created_at", "resumed_from", "model", "audit_dir", "turn_count",
               "rca_report_path", "hypothesis_log", "denial_tracker",
               "consecutive_denial_counter", "active_hypothesis_ids", "active_task_ids",
               "evidence_conflicts", "is_resume"]
HYPOTHESIS_FIELDS = {"id", "description", "state", "denial_count", "created_at",
                     "resolved_at", "resolving_audit_id", "denial_events"}


def test_s1_t5_every_save_writes_the_spec_document_with_a_fresh_checksum(
        store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="a", hypotheses=H)),
        reply(text="Thinking."))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    before = store.get_investigation(sid).document
    rig.engine.advance(sid)
    doc = store.get_investigation(sid).document
    for saved in (before, doc):
        assert set(saved) == {*SPEC_FIELDS, "_checksum"}
        assert re.fullmatch(r"[0-9a-f]{64}", saved["_checksum"])
    assert doc["_checksum"] != before["_checksum"]  # recomputed when the state changed
    assert doc["turn_count"] == 2 and isinstance(doc["created_at"], str)
    for entry in doc["hypothesis_log"]:
        assert set(entry) == HYPOTHESIS_FIELDS
    assert doc["_checksum"] == hashlib.sha256(json.dumps(
        {k: v for k, v in doc.items() if k != "_checksum"}, sort_keys=True).encode()).hexdigest()
