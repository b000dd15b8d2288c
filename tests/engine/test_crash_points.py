"""A kill at each suspension point of an investigation, and what the next holder makes of it
(issue 23): no command runs twice, every function call gets exactly one response before the
next model call, the model is told the truth (output, or "interrupted: not run again"), and the
audit chain verifies. The process dies at the point (``crash_rig.Dying``); another holder takes
the investigation over with the same store, as a worker does once the lease lapses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.engine.recovery import history_problem
from core.safety.approval import Decision
from storage.store import Store
from tests.engine.crash_rig import Dying, Killed, Rig, ScriptBrain
from tests.engine.fakes import call, reply

DONE = reply(call("complete_investigation", confidence="low", root_cause_summary="x"))


def _dying(store: Store, point: str) -> Dying:
    dying = Dying(store.db)
    dying.point = point
    return dying


def _checked(rig: Rig, sid: str) -> None:
    """What must hold after every takeover."""
    assert rig.brain.rejected == [], rig.brain.rejected  # Gemini never saw a broken history
    assert history_problem(rig.store.turns(sid)[:-1]) is None  # the RCA turn ends it
    assert rig.store.verify_audit(sid).ok
    assert rig.store.get_investigation(sid).status == "completed"


# ── a SAFE command ─────────────────────────────────────────────────────────────────────────────

SAFE = reply(call("run_shell_cmd", command="ss -tln", reasoning="listening sockets"))


@pytest.mark.parametrize(("point", "runs", "told"), [
    # it never started: it runs now, once
    ("before_start", 1, "completed"),
    # it was running (or had just finished) and nothing recorded its outcome: not run again
    ("while_running", 1, "interrupted"),
    ("before_outcome_record", 1, "interrupted"),
    # its outcome is recorded but the engine had not saved the response: the record is used
    ("after_outcome_record", 1, "completed"),
    ("before_response_saved", 1, "completed"),
])
def test_a_safe_command_killed_at_each_point(store: Store, tmp_path: Path, point: str,
                                             runs: int, told: str) -> None:
    dying = _dying(store, point)
    rig = Rig(dying, tmp_path, ScriptBrain(SAFE, DONE))
    rig.runs.die_while_running = point == "while_running"
    dying.point = None if point == "while_running" else point
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    assert rig.take_over(sid).kind == "completed"
    assert rig.runs.argvs.count("ss -tln") == runs
    [response] = rig.brain.responses()
    assert (response["status"] if told == "completed" else response["error"]) == told
    if told == "interrupted":
        assert "not run again" in response["stderr"]
    _checked(rig, sid)


# ── an approved (RISKY) command ────────────────────────────────────────────────────────────────

RISKY = reply(call("run_shell_cmd", command="touch /tmp/ghost-crash-marker",
                   reasoning="remediation"))


@pytest.mark.parametrize(("point", "told", "approval"), [
    # the request was not created yet, or created but not saved by the engine: one request
    ("before_request", "completed", "executed"),
    ("after_request", "completed", "executed"),
    ("before_start", "completed", "executed"),
    # regression (issue 23): killed between `executing` and `command_started` (two transactions
    # then): recovery said "will not be run again" about a command that never ran
    ("inside_claim", "completed", "executed"),
    ("while_running", "interrupted", "interrupted"),
    ("before_outcome_record", "interrupted", "interrupted"),
    # ran and recorded, then killed before `executed`: the recorded outcome, not "unknown"
    ("before_executed", "completed", "executed"),
    ("before_response_saved", "completed", "executed"),
])
def test_an_approved_command_killed_at_each_point(store: Store, tmp_path: Path, point: str,
                                                  told: str, approval: str) -> None:
    dying = _dying(store, point)
    rig = Rig(dying, tmp_path, ScriptBrain(RISKY, DONE))
    rig.runs.die_while_running = point == "while_running"
    dying.point = None if point == "while_running" else point
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    if point != "before_request":
        [request] = store.approvals(sid)
    if point in ("before_start", "inside_claim"):
        # nothing of the claim was stored: the request is still approved and may run
        assert request.status == "approved"
        assert not [r for r in store.audit_records(sid) if r["kind"] == "command_started"]
    assert rig.take_over(sid).kind == "completed"
    assert rig.runs.argvs.count("touch /tmp/ghost-crash-marker") == 1
    [response] = rig.brain.responses()
    assert (response["status"] if told == "completed" else response["error"]) == told
    assert response.get("error") != "outcome_unknown"
    [request] = store.approvals(sid)
    assert request.status == approval
    _checked(rig, sid)


def test_an_approved_command_is_never_started_twice_by_two_holders(
        store: Store, tmp_path: Path) -> None:
    """Two processes that both think they hold the investigation resume the same approved
    request: the claim and its started record are one compare-and-set, so one runs it."""
    rig = Rig(_dying(store, ""), tmp_path, ScriptBrain(RISKY, DONE))
    sid = rig.start()
    outcome = rig.engine().advance(sid)
    assert outcome.approval_id
    rig.shell(sid).decide(outcome.approval_id, Decision.approve("bob"))
    first, second = rig.shell(sid), rig.shell(sid)
    approval = store.get_approval(outcome.approval_id)
    assert approval is not None
    started = store.start_approved_command(approval.approval_id, approval.version,
                                           {"kind": "command_started", "command": "x"})
    assert started is not None and started[0].status == "executing"
    again = store.start_approved_command(approval.approval_id, approval.version,
                                         {"kind": "command_started", "command": "x"})
    assert again is None  # the loser writes nothing
    assert [r["kind"] for r in store.audit_records(sid)].count("command_started") == 1
    assert first.resume(approval.approval_id)["error"] == "outcome_unknown"
    assert second.resume(approval.approval_id)["error"] == "outcome_unknown"
    assert rig.runs.argvs == []


# ── a capture (the orchestrator) ───────────────────────────────────────────────────────────────

CAPTURE = reply(call("capture_traffic", target="web-vm-01", resource_group="prod-rg",
                     storage_account="forensicssa", duration_seconds=60))


def _cloud(point: str | None) -> Any:
    from tests.orchestrator.fakes import FakeCloud

    class Cloud(FakeCloud):
        die: str | None = None

        def create_capture(self, spec: Any) -> None:
            if self.die == "capture_create_call":
                self.die = None
                raise Killed("capture_create_call")
            super().create_capture(spec)
            if self.die == "capture_created":  # it exists on "Azure"; nothing recorded it
                self.die = None
                raise Killed("capture_created")

    cloud = Cloud()
    cloud.die = point
    cloud.add_vm("web-vm-01")
    cloud.containers.add(("forensicssa", "captures"))
    return cloud


@pytest.mark.parametrize(("point", "calls", "left", "state"), [
    # the approved create never started: it runs now, once, and the capture goes on
    ("before_start", 1, 1, "WAITING"),
    ("inside_claim", 1, 1, "WAITING"),
    # killed in the SDK call, or after Azure created it but before anything recorded it: the
    # outcome is unknown, the create is not retried, and the cleanup deletes what may exist
    ("capture_create_call", 0, 0, "DONE"),
    ("capture_created", 1, 0, "DONE"),
    # created and recorded, killed before the request was marked executed: it goes on
    ("before_executed", 1, 1, "WAITING"),
])
def test_a_capture_killed_while_it_is_created(store: Store, tmp_path: Path, point: str,
                                              calls: int, left: int, state: str) -> None:
    cloud = _cloud(None)
    dying = _dying(store, "")
    rig = Rig(dying, tmp_path, ScriptBrain(CAPTURE, DONE), backend=cloud)
    sid = rig.start()
    outcome = rig.engine().advance(sid)  # the SAFE detection steps, then the create's request
    assert outcome.kind == "awaiting_approval" and outcome.approval_id
    rig.shell(sid).decide(outcome.approval_id, Decision.approve("bob"))
    if point.startswith("capture_"):
        cloud.die = point
    else:
        dying.point = point
    with pytest.raises(Killed):
        rig.run(sid)
    assert rig.take_over(sid).kind == "completed"
    assert cloud.count("create") == calls  # never a second create
    assert len(cloud.captures) == left  # a capture of unknown outcome is not left behind
    [task] = store.latest_tasks(sid)
    assert task["state"] == state
    creates = [r for r in store.audit_records(sid) if r["kind"] == "command_started"
               and "packet-capture create" in str(r["command"])]
    assert len(creates) == 1  # the create was started once, whatever happened
    _checked(rig, sid)


# ── the RCA ────────────────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("point", ["writing_rca", "before_rca_saved"])
def test_a_kill_while_the_rca_is_written_writes_it_again_once(store: Store, tmp_path: Path,
                                                              point: str) -> None:
    dying = _dying(store, point)
    rig = Rig(dying, tmp_path, ScriptBrain(SAFE, DONE))
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    assert store.get_investigation(sid).status == "running"  # not completed without its RCA
    outcome = rig.take_over(sid)
    assert outcome.kind == "completed" and outcome.rca_path
    inv = store.get_investigation(sid)
    assert inv.rca_markdown and Path(outcome.rca_path).read_text() == inv.rca_markdown
    assert len({*rig.rca_files}) == 1  # one file, rewritten whole (atomic), never two
    assert rig.runs.argvs.count("ss -tln") == 1
    _checked(rig, sid)
