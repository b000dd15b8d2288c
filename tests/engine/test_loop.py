"""The tool-use loop with the real store, shell and classifier, and a scripted brain."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import pytest

from core.engine.brain import BrainError
from core.engine.loop import BrainUnavailable, Engine
from core.safety.approval import ApprovalRequest, Decision
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.engine.fakes import FakeBrain, RecordingOrchestrator, call, reply


class Approver:
    def __init__(self, *answers: Decision | None, immediate: bool = True) -> None:
        self.answers: deque[Decision | None] = deque(answers)
        self.decides_immediately = immediate

    def request(self, request: ApprovalRequest) -> Decision | None:
        return self.answers.popleft()


class Rig:
    """An engine wired to the test database; tools built per investigation."""

    def __init__(self, store: Store, tmp_path: Path, brain: FakeBrain,
                 approver: Approver | None = None,
                 orchestrator: RecordingOrchestrator | None = None) -> None:
        self.store, self.tmp_path, self.brain = store, tmp_path, brain
        self.approver = approver or Approver()
        self.orchestrator = orchestrator or RecordingOrchestrator()
        self.written: dict[str, str] = {}
        self.engine = self.make_engine()

    def shell(self, sid: str) -> SafeExecShell:
        return SafeExecShell(sid, audit=self.store, approvals=self.store,
                             approver=self.approver, data_dir=self.tmp_path,
                             requested_by="U_REQ")

    def make_engine(self) -> Engine:
        def write(name: str, text: str) -> str:
            path = self.tmp_path / name
            path.write_text(text)
            self.written[name] = text
            return str(path)

        return Engine(store=self.store, brain=self.brain, shell_for=self.shell,
                      orchestrator_for=lambda sid, shell: self.orchestrator,
                      rca_writer=write)

    def start(self, symptom: str = "web-01 cannot reach redis on 6379") -> str:
        sid = self.store.create_investigation(symptom=symptom, model="fake",
                                              audit_dir="./audit/").session_id
        self.engine.begin(sid, symptom)
        return sid


H1 = [{"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE"}]
DONE = call("complete_investigation", confidence="high",
            root_cause_summary="NSG rule deny-6379 blocks redis.",
            confirmed_hypotheses=["h1"], recommended_actions=["Remove deny-6379"])


def test_happy_path_safe_command_then_rca(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="listening sockets",
                   hypotheses=H1), text="Hypothesis H1: NSG blocks 6379"),
        reply(DONE),
    )
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    outcome = rig.engine.advance(sid)
    assert outcome.kind == "completed" and outcome.rca_path
    inv = store.get_investigation(sid)
    assert inv.status == "completed" and inv.state["turn_count"] == 2
    assert inv.state["rca_report_path"] == outcome.rca_path
    assert inv.rca_markdown and "NSG rule deny-6379" in inv.rca_markdown
    # the second request carried the command's result, rebuilt from the audit row
    [resp] = brain.function_responses(1)
    assert resp["name"] == "run_shell_cmd"
    assert resp["response"]["status"] == "completed"
    assert resp["response"]["audit_id"] == f"{sid}_002"
    # model turn stored before the responses, signature intact (L3, L4)
    history = brain.requests[1]["history"]
    assert [h["role"] for h in history] == ["user", "model", "user"]
    assert history[1]["parts"][1]["thoughtSignature"] == "c2lnLW9mLXR1cm4="
    assert inv.state["hypothesis_log"][0]["id"] == "h1"


def test_all_calls_of_a_turn_are_dispatched_before_the_responses(store: Store,
                                                                  tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="a"),
              call("run_shell_cmd", command="ip route show", reasoning="b"),
              call("no_such_tool")),
        reply(DONE),
    )
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    rig.engine.advance(sid)
    responses = brain.function_responses(1)
    assert [r["name"] for r in responses] == ["run_shell_cmd", "run_shell_cmd", "no_such_tool"]
    unknown = responses[2]["response"]
    assert (unknown["status"], unknown["error"], unknown["tool"]) == \
        ("error", "unknown_tool", "no_such_tool")
    assert "run_shell_cmd" in unknown["message"]  # the model is told what exists
    turns = store.turns(sid)
    assert [t["role"] for t in turns] == ["user", "model", "user", "model"]


def test_three_denials_make_the_hypothesis_unverifiable(store: Store, tmp_path: Path) -> None:
    risky = [call("run_shell_cmd", command=f"echo try{i}", reasoning="x",
                  hypotheses=H1 if i == 0 else None) for i in range(3)]
    brain = FakeBrain(reply(risky[0]), reply(risky[1]), reply(risky[2]), reply(DONE))
    approver = Approver(Decision.deny("bob", "wrong rg"), Decision.deny("bob"),
                        Decision.deny("bob", "no"))
    rig = Rig(store, tmp_path, brain, approver)
    sid = rig.start()
    rig.engine.advance(sid)
    metas = [brain.function_responses(i)[0]["response"]["_meta"] for i in (1, 2, 3)]
    assert metas[0]["denial_count"] == 1 and "pivot_instruction" in metas[0]
    assert metas[0]["denial_reason"] == "wrong rg"
    assert metas[1]["denial_count"] == 2 and metas[1]["approaching_threshold"] is True
    assert "denial_reason" not in metas[1]  # empty reason: absent (M11)
    assert metas[2]["denial_threshold_reached"] is True and "instruction" in metas[2]
    state = store.get_investigation(sid).state
    h1 = state["hypothesis_log"][0]
    assert h1["state"] == "UNVERIFIABLE" and state["active_hypothesis_ids"] == []
    assert state["denial_tracker"]["h1"] == 3
    assert [e["denial_reason"] for e in h1["denial_events"]] == ["wrong rg", "", "no"]
    assert all(e["audit_id"] for e in h1["denial_events"])


def test_success_resets_consecutive_counter_only(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(reply(call("run_shell_cmd", command="echo a", reasoning="x",
                                 hypotheses=H1)),
                      reply(call("run_shell_cmd", command="ss -tln", reasoning="x")),
                      reply(DONE))
    rig = Rig(store, tmp_path, brain, Approver(Decision.deny("bob")))
    sid = rig.start()
    rig.engine.advance(sid)
    state = store.get_investigation(sid).state
    assert state["denial_tracker"]["h1"] == 1
    assert state["consecutive_denial_counter"]["h1"] == 0


def test_text_only_answer_waits_for_the_engineer(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(reply(text="I need the resource group name."), reply(DONE))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    first = rig.engine.advance(sid)
    assert first.kind == "awaiting_user" and "resource group" in first.text
    assert store.get_investigation(sid).status == "awaiting_user"
    rig.engine.instruct(sid, "It is prod-rg.")
    assert rig.engine.advance(sid).kind == "completed"
    last_user = brain.requests[1]["history"][-1]
    assert last_user == {"role": "user", "parts": [{"text": "It is prod-rg."}]}


def test_turn_limit_offers_extend_or_rca(store: Store, tmp_path: Path) -> None:
    loop = [reply(call("run_shell_cmd", command="ss -tln", reasoning="x")) for _ in range(3)]
    brain = FakeBrain(*loop, reply(DONE))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    inv = store.get_investigation(sid)
    engine_state = dict(inv.engine_state or {}) | {"max_turns": 2}
    store.save_state(sid, inv.state, engine_state=engine_state)
    assert rig.engine.advance(sid).kind == "turn_limit"
    rig.engine.extend(sid, turns=10)
    assert rig.engine.advance(sid).kind == "completed"
    assert store.get_investigation(sid).state["turn_count"] == 4


def test_chat_approval_suspends_and_resumes_in_another_engine(store: Store, tmp_path: Path,
                                                               migrated_url: str,
                                                               tool: str) -> None:
    marker = tmp_path / "ran"
    command = f"{tool} append {marker} x"
    brain = FakeBrain(reply(call("run_shell_cmd", command=command, reasoning="x")),
                      reply(DONE))
    rig = Rig(store, tmp_path, brain, Approver(None, immediate=False))
    sid = rig.start()
    waiting = rig.engine.advance(sid)
    assert waiting.kind == "awaiting_approval" and waiting.approval_id
    assert store.get_investigation(sid).status == "awaiting_approval"
    assert rig.engine.advance(sid).kind == "awaiting_approval"  # still undecided
    assert not marker.exists()

    # another process: a new store, engine and shell; the click arrives there
    other = Store.from_url(migrated_url)
    rig2 = Rig(other, tmp_path, brain, Approver(immediate=False))
    rig2.shell(sid).decide(waiting.approval_id, Decision.approve("carol"))
    assert rig2.engine.advance(sid).kind == "completed"
    assert marker.read_text() == "x"
    [resp] = brain.function_responses(1)
    assert resp["response"]["action"] == "user_approved"


def test_crash_during_a_command_is_not_rerun_on_resume(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(reply(call("run_shell_cmd", command="ss -tln", reasoning="x")),
                      reply(DONE))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    # Ghost stopped after marking the call in flight and the shell's started trace
    inv = store.get_investigation(sid)
    rig_engine_state: dict[str, Any] = dict(inv.engine_state or {})
    store.append_turn(sid, "model", brain.replies[0].content)
    before = len(store.audit_records(sid))
    store.append_audit(sid, {"kind": "command_started", "command": "ss -tln",
                             "status": "executing", "classification": "SAFE",
                             "environment": "local"})
    rig_engine_state |= {"phase": "dispatch", "pending": {
        "calls": [{"name": "run_shell_cmd", "args": {"command": "ss -tln", "reasoning": "x"},
                   "id": None}],
        "responses": [], "waiting": None,
        "in_flight": {"index": 0, "audit_count": before}}}
    store.save_state(sid, inv.state | {"turn_count": 1}, engine_state=rig_engine_state)
    brain.replies.popleft()

    fresh = rig.make_engine()
    fresh.mark_resumed(sid)
    assert fresh.advance(sid).kind == "completed"
    [resp] = brain.function_responses(0)
    assert resp["response"]["error"] == "interrupted"
    kinds = [r["kind"] for r in store.audit_records(sid)]
    assert kinds.count("command_started") == 1  # never run again
    assert store.get_investigation(sid).state["is_resume"] is True


def test_timeout_and_transient_errors(store: Store, tmp_path: Path) -> None:
    brain = FakeBrain(BrainError("429", transient=True), reply(DONE))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    assert rig.engine.advance(sid).kind == "completed"
    assert len(brain.requests) == 2

    refused = FakeBrain(BrainError("400 API key not valid", transient=False))
    rig2 = Rig(store, tmp_path, refused)
    sid2 = rig2.start()
    with pytest.raises(BrainUnavailable):  # waiting does not fix a refusal: at once
        rig2.engine.advance(sid2)
    assert store.get_investigation(sid2).state["turn_count"] == 0  # nothing half-done


class OutageClock:
    """The engine's clock and sleep: a wait moves the clock, so a long outage is instant."""

    def __init__(self) -> None:
        from core.session_state import utc_now

        self.now = utc_now()
        self.waits: list[float] = []

    def __call__(self) -> Any:
        return self.now

    def sleep(self, seconds: float) -> None:
        from datetime import timedelta

        self.waits.append(seconds)
        self.now += timedelta(seconds=seconds)


class Told:
    """A notifier that records the outage notices."""

    def __init__(self) -> None:
        self.outages: list[tuple[str, str, Any]] = []

    def model_outage(self, session_id: str, error: str, until: Any) -> None:
        self.outages.append((session_id, error, until))

    def __getattr__(self, name: str) -> Any:
        return lambda *_a, **_k: None


def outage_rig(store: Store, tmp_path: Path, brain: FakeBrain, limit_s: float) -> Any:
    from core.engine.loop import OutagePolicy

    rig = Rig(store, tmp_path, brain)
    clock, told = OutageClock(), Told()
    rig.engine.clock, rig.engine.sleep, rig.engine.notifier = clock, clock.sleep, told
    rig.engine.outage = OutagePolicy(limit_s=limit_s)
    return rig, clock, told


def test_a_three_minute_outage_is_waited_out_told_once_and_nothing_runs_twice(
        store: Store, tmp_path: Path) -> None:
    """429/5xx for three minutes mid-investigation: the engine keeps asking with a backoff
    (2, 4, 8 … at most 30 s), tells the front end once, and goes on where it was."""
    down = [BrainError("503 UNAVAILABLE", transient=True)] * 12  # 2+4+8+16+30*7 = 240 s
    brain = FakeBrain(reply(call("run_shell_cmd", command="echo one", reasoning="r")),
                      *down, reply(DONE))
    rig, clock, told = outage_rig(store, tmp_path, brain, limit_s=600)
    sid = rig.start()
    assert rig.engine.advance(sid).kind == "completed"
    assert clock.waits == [2, 4, 8, 16, 30, 30, 30, 30, 30, 30, 30, 30]
    [(who, error, until)] = told.outages  # one notice for the whole outage
    assert who == sid and "503" in error
    assert (until - clock.now).total_seconds() == pytest.approx(600 - sum(clock.waits), abs=1)
    commands = [r for r in store.audit_records(sid) if r["kind"] == "command"]
    assert [r["command"] for r in commands] == ["echo one"]  # no duplicate tool call
    assert "outage" not in (store.get_investigation(sid).engine_state or {})
    # the request after the outage is the one the outage interrupted, nothing added
    assert brain.requests[-1]["history"] == brain.requests[1]["history"]


def test_an_outage_past_the_limit_parks_it_and_a_resume_goes_on(store: Store,
                                                                 tmp_path: Path) -> None:
    brain = FakeBrain(*[BrainError("429 RESOURCE_EXHAUSTED", transient=True)] * 30)
    rig, clock, told = outage_rig(store, tmp_path, brain, limit_s=120)
    sid = rig.start()
    outcome = rig.engine.advance(sid)
    assert outcome.kind == "parked" and "429" in outcome.text
    inv = store.get_investigation(sid)
    assert inv.status == "parked" and inv.state["turn_count"] == 0  # never failed
    assert inv.engine_state["outage"]["parked_at"] and len(told.outages) == 1
    assert sum(clock.waits) == pytest.approx(120, abs=1)  # waited up to the limit
    brain.replies.clear()
    brain.replies.append(reply(DONE))
    rig.engine.mark_resumed(sid)  # one click, or `ghost investigate --resume`
    assert "outage" not in store.get_investigation(sid).engine_state
    assert rig.engine.advance(sid).kind == "completed"


def test_a_chat_worker_hands_a_long_wait_back_with_the_deadline_kept(
        store: Store, tmp_path: Path) -> None:
    from core.engine.loop import ModelUnavailable, OutagePolicy

    brain = FakeBrain(*[BrainError("503", transient=True)] * 3, reply(DONE))
    rig, clock, told = outage_rig(store, tmp_path, brain, limit_s=600)
    rig.engine.outage = OutagePolicy(limit_s=600, inline_s=5)
    sid = rig.start()
    with pytest.raises(ModelUnavailable) as handed:  # 2 and 4 s slept, 8 s handed back
        rig.engine.advance(sid)
    assert handed.value.retry_in == 8 and clock.waits == [2, 4]
    outage = store.get_investigation(sid).engine_state["outage"]
    assert outage["attempts"] == 3  # the next holder goes on counting, same deadline
    clock.sleep(8)
    assert rig.engine.advance(sid).kind == "completed" and len(told.outages) == 1


def test_capture_tools_route_to_the_orchestrator(store: Store, tmp_path: Path) -> None:
    orch = RecordingOrchestrator(
        {"status": "task_pending", "task_id": "ghost_vm1_20250115T143200", "state": "WAITING"},
        {"status": "task_completed", "task_id": "ghost_vm1_20250115T143200",
         "state": "COMPLETED", "result": {"report_path": "/x/r.md"}},
    )
    brain = FakeBrain(
        reply(call("capture_traffic", target="vm1", resource_group="rg", storage_account="sa",
                   investigation_context="why")),
        reply(call("check_task", task_id="ghost_vm1_20250115T143200")),
        reply(DONE),
    )
    rig = Rig(store, tmp_path, brain, orchestrator=orch)
    sid = rig.start()
    rig.engine.advance(sid)
    assert orch.requests[0] == {
        "intent": "capture_traffic", "target": "vm1", "investigation_context": "why",
        "parameters": {"resource_group": "rg", "storage_account": "sa",
                       "duration_seconds": 60}}  # no storage_auth_mode: the model gave none
    assert orch.requests[1] == {"intent": "check_task", "task_id": "ghost_vm1_20250115T143200"}
    assert brain.function_responses(2)[0]["response"]["status"] == "task_completed"


def test_rca_write_failure_keeps_the_report(store: Store, tmp_path: Path) -> None:
    """R15: a write failure leaves rca_report_path null and hands the report to the front end."""
    brain = FakeBrain(reply(DONE))
    rig = Rig(store, tmp_path, brain)

    def refuse(name: str, text: str) -> str:
        raise PermissionError(13, "Permission denied", f"/audit/{name}")

    rig.engine.rca_writer = refuse
    sid = rig.start()
    outcome = rig.engine.advance(sid)
    assert outcome.kind == "completed" and outcome.rca_path is None
    assert outcome.rca_error and "Permission denied" in outcome.rca_error
    assert outcome.rca_markdown and "NSG rule deny-6379" in outcome.rca_markdown
    inv = store.get_investigation(sid)
    assert inv.state["rca_report_path"] is None and inv.rca_markdown == outcome.rca_markdown


def test_storage_auth_mode_is_forwarded_and_the_shell_is_shared(store: Store,
                                                                tmp_path: Path) -> None:
    """D11 and H2: the mode reaches the orchestrator, built with the investigation's shell."""
    seen: list[Any] = []
    orch = RecordingOrchestrator({"status": "task_pending", "task_id": "t1", "state": "WAITING"})
    brain = FakeBrain(reply(call("capture_traffic", target="vm1", resource_group="rg",
                                 storage_account="sa", storage_auth_mode="key")), reply(DONE))
    rig = Rig(store, tmp_path, brain, orchestrator=orch)
    shells: dict[str, SafeExecShell] = {}

    def shell_for(sid: str) -> SafeExecShell:
        return shells.setdefault(sid, rig.shell(sid))

    def orchestrator_for(sid: str, shell: Any) -> RecordingOrchestrator:
        seen.append(shell)
        return orch

    rig.engine.shell_for = shell_for
    rig.engine.orchestrator_for = orchestrator_for
    sid = rig.start()
    rig.engine.advance(sid)
    assert orch.requests[0]["parameters"]["storage_auth_mode"] == "key"
    assert seen and all(s is shells[sid] for s in seen)


def test_crash_recovery_ignores_other_writers_records(store: Store, tmp_path: Path) -> None:
    """A cleanup's `rm` record in the same log is not taken as the in-flight call's outcome."""
    brain = FakeBrain(reply(call("run_shell_cmd", command="ss -tln", reasoning="x")),
                      reply(DONE))
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    inv = store.get_investigation(sid)
    store.append_turn(sid, "model", brain.replies.popleft().content)
    before = len(store.audit_records(sid))
    store.append_audit(sid, {"kind": "command", "command": "rm /tmp/captures/ghost_old.pcap",
                             "status": "completed", "exit_code": 0, "action": "user_approved",
                             "classification": "RISKY", "environment": "local"})
    engine_state = dict(inv.engine_state or {}) | {"phase": "dispatch", "pending": {
        "calls": [{"name": "run_shell_cmd", "args": {"command": "ss -tln", "reasoning": "x"},
                   "id": None}],
        "responses": [], "waiting": None, "in_flight": {"index": 0, "audit_count": before}}}
    store.save_state(sid, inv.state | {"turn_count": 1}, engine_state=engine_state)
    fresh = rig.make_engine()
    fresh.mark_resumed(sid)
    assert fresh.advance(sid).kind == "completed"
    [resp] = brain.function_responses(0)
    assert resp["response"]["status"] == "completed" and "rm " not in str(resp["response"])
    ran = [r for r in store.audit_records(sid) if r["kind"] == "command"
           and r["command"] == "ss -tln"]
    assert len(ran) == 1  # it never started before the crash, so it ran now, once


def test_a_resolution_cites_the_evidence_the_model_named_and_nothing_else(
        store: Store, tmp_path: Path) -> None:
    """Regression (issue 13): a resolution that cited nothing fell back to the latest command,
    so an unrelated record was cited as evidence. Now: the cited record when it exists, or
    "none cited" in the RCA."""
    h2 = [{"id": "h2", "description": "redis is not listening", "state": "ACTIVE"}]
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="sockets", hypotheses=H1 + h2),
              text="Hypothesis H1: NSG blocks 6379"),
        reply(call("run_shell_cmd", command="ip route show", reasoning="routes"),
              text="(replaced below with the real audit id)"),
        reply(call("complete_investigation", confidence="high", root_cause_summary="x",
                   hypotheses=[{"id": "h1", "state": "REFUTED"}])),
    )
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    # the model cites the real audit id of `ss -tln`
    cited = f"Nothing listens on 6379 (see {sid}_002). H2 CONFIRMED."
    brain.replies[1].content["parts"][0]["text"] = cited
    object.__setattr__(brain.replies[1], "text", cited)
    assert rig.engine.advance(sid).kind == "completed"
    log = {h["id"]: h for h in store.get_investigation(sid).state["hypothesis_log"]}
    assert log["h2"]["state"] == "CONFIRMED"
    assert log["h2"]["resolving_audit_id"] == f"{sid}_002"  # ss -tln, cited on its line
    assert log["h1"]["state"] == "REFUTED"
    assert log["h1"]["resolving_audit_id"] is None  # cited nothing: no stand-in record
    md = store.get_investigation(sid).rca_markdown or ""
    row = next(line for line in md.splitlines() if line.startswith("| h1 "))
    assert "none cited" in row and f"{sid}_004" not in row
