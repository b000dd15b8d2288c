"""A request the dead process left behind is adopted, never asked a second time (issue #23, F1).

The chaos drill found two shapes: (a) a RISKY command's request stored (its card posted) with no
``approval requested`` record, the process killed, the engineer approving it anyway, and the next
holder asking again, so the engineer approved twice and the first request stayed ``approved``
forever; (b) a capture's create asked for again (a second request, or a second task) after the
process that asked died. Each test kills once, at the exact point, with ``crash_rig``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core.safety.approval import Decision
from storage.store import Store
from tests.engine.crash_rig import Dying, Killed, Rig, ScriptBrain
from tests.engine.test_crash_points import CAPTURE, DONE, RISKY, _checked, _cloud

COMMAND = "touch /tmp/ghost-crash-marker"


class Asking(Dying):
    """``Dying`` with the points around storing a request.

    ``row_only``: the request row is stored and its ``requested`` record is not (what a kill
    between the two writes left before they were one transaction), then the process dies.
    ``inside_request``: killed inside the one transaction (after the INSERT, before the commit).
    ``request_stored``: the row and its record are stored, nothing else (the task's
    ``pending_step``, the engine's ``waiting``) is.
    """

    def create_approval(self, session_id: str, **values: Any) -> Any:
        if self.point == "row_only":
            values.pop("requested", None)
            super().create_approval(session_id, **values)
            self._die("row_only")
        if self.point == "inside_request":
            clock = self.clock

            def dying_clock() -> datetime:
                self.clock = clock
                self._die("inside_request")
                return clock()

            self.clock = dying_clock
        approval = super().create_approval(session_id, **values)
        self._die("request_stored")
        return approval


def _asking(store: Store, point: str) -> Asking:
    dying = Asking(store.db)
    dying.point = point
    return dying


def _kinds(store: Store, sid: str, approval_id: str) -> list[str]:
    return [str(r["status"]) for r in store.audit_records(sid) if r["kind"] == "approval"
            and (r.get("details") or {}).get("approval_id") == approval_id]


# ── (a) a RISKY command ──────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("approved_meanwhile", [True, False])
def test_a_request_stored_without_its_record_is_adopted_not_asked_again(
        store: Store, tmp_path: Path, approved_meanwhile: bool) -> None:
    """F1 (a), chaos-10/14: the row (and its card) exist, no `requested` record, the engineer
    approves it; the next holder runs THAT request, once; nothing is asked twice."""
    rig = Rig(_asking(store, "row_only"), tmp_path, ScriptBrain(RISKY, DONE))
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    [first] = store.approvals(sid)
    assert first.status == "pending" and _kinds(store, sid, first.approval_id) == []
    if approved_meanwhile:  # the engineer clicks the card the outbox posted
        rig.shell(sid).decide(first.approval_id, Decision.approve("bob"))
    assert rig.take_over(sid).kind == "completed"
    [request] = store.approvals(sid)  # no second request
    assert request.approval_id == first.approval_id and request.status == "executed"
    assert rig.runs.argvs.count(COMMAND) == 1
    assert _kinds(store, sid, first.approval_id) == ["approved"]  # approved once, by bob
    [response] = rig.brain.responses()
    assert response["status"] == "completed"
    _checked(rig, sid)


def test_a_kill_inside_the_request_stores_neither_row_nor_record(
        store: Store, tmp_path: Path) -> None:
    """The row and its `requested` record are one transaction: a kill between them leaves
    neither, and the next holder asks once."""
    rig = Rig(_asking(store, "inside_request"), tmp_path, ScriptBrain(RISKY, DONE))
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    assert store.approvals(sid) == []
    assert not [r for r in store.audit_records(sid) if r["kind"] == "approval"]
    assert rig.take_over(sid).kind == "completed"
    [request] = store.approvals(sid)
    assert request.status == "executed"
    assert _kinds(store, sid, request.approval_id) == ["requested", "approved"]
    assert rig.runs.argvs.count(COMMAND) == 1
    _checked(rig, sid)


def test_a_request_the_engine_never_saved_is_adopted(store: Store, tmp_path: Path) -> None:
    rig = Rig(_asking(store, "request_stored"), tmp_path, ScriptBrain(RISKY, DONE))
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    [first] = store.approvals(sid)
    assert _kinds(store, sid, first.approval_id) == ["requested"]
    assert rig.take_over(sid).kind == "completed"
    assert [a.approval_id for a in store.approvals(sid)] == [first.approval_id]
    assert rig.runs.argvs.count(COMMAND) == 1
    _checked(rig, sid)


def test_a_request_left_approved_is_closed_with_a_reason_when_the_investigation_ends(
        store: Store, tmp_path: Path) -> None:
    """Anything still pending or approved at the end (nothing will run it) is closed and
    audited, never left dangling; the same command asked later by a new call is not it."""
    rig = Rig(_asking(store, ""), tmp_path, ScriptBrain(DONE))
    sid = rig.start()
    shell = rig.shell(sid)
    left = shell.execute({"command": "touch /tmp/other-marker", "reasoning": "x"})
    assert left["status"] == "pending_approval"
    shell.decide(str(left["approval_id"]), Decision.approve("bob"))
    assert rig.take_over(sid).kind == "completed"
    [request] = store.approvals(sid)
    assert request.status == "closed" and "will not run" in str(request.denial_reason)
    assert _kinds(store, sid, request.approval_id) == ["requested", "approved", "closed"]
    assert rig.runs.argvs == []
    assert store.verify_audit(sid).ok


# ── (b) a capture ────────────────────────────────────────────────────────────────────────────

def test_a_capture_create_requested_then_killed_is_not_asked_again(
        store: Store, tmp_path: Path) -> None:
    """Killed after the create's request was stored, before the task recorded that it waits
    on it: the next holder continues the task with THAT request (one request, one create)."""
    cloud = _cloud(None)
    rig = Rig(_asking(store, "request_stored"), tmp_path, ScriptBrain(CAPTURE, DONE),
              backend=cloud)
    sid = rig.start()
    with pytest.raises(Killed):
        rig.run(sid)
    [first] = store.approvals(sid)
    assert "packet-capture create" in first.command
    assert rig.take_over(sid).kind == "completed"
    assert [a.approval_id for a in store.approvals(sid)] == [first.approval_id]
    assert cloud.count("create") == 1
    [task] = store.latest_tasks(sid)
    assert task["state"] == "WAITING"
    _checked(rig, sid)


class Blip(Asking):
    """The database goes away once, at the approved create's claim (the drill's PG restart):
    the orchestrator answers ``internal_error``, and the model asks for the capture again."""

    blip = False

    def start_approved_command(self, approval_id: str, expected_version: int,
                               started: Any) -> Any:
        if self.blip:
            self.blip = False
            raise ConnectionError("the database system is shutting down")
        return super().start_approved_command(approval_id, expected_version, started)


def test_a_capture_asked_for_again_continues_the_task_it_already_has(
        store: Store, tmp_path: Path) -> None:
    """F1 (b), chaos-05/11/19: the first task was created and its create approved, but the
    call was answered without it (an error); the model asks for the same capture again: the
    existing task is continued, never a second task, a second request, a second create."""
    cloud = _cloud(None)
    blip = Blip(store.db)
    rig = Rig(blip, tmp_path, ScriptBrain(CAPTURE, CAPTURE, DONE), backend=cloud)
    sid = rig.start()
    outcome = rig.engine().advance(sid)
    assert outcome.kind == "awaiting_approval" and outcome.approval_id
    rig.shell(sid).decide(outcome.approval_id, Decision.approve("bob"))
    blip.blip = True
    assert rig.run(sid).kind == "completed"
    first_answer, second_answer = (rig.brain.responses(1)[0], rig.brain.responses(2)[0])
    assert first_answer["error"] == "internal_error"
    [task] = store.latest_tasks(sid)  # one task
    assert second_answer["task_id"] == task["task_id"] and task["state"] == "WAITING"
    assert [a.status for a in store.approvals(sid)] == ["executed"]
    assert cloud.count("create") == 1
    _checked(rig, sid)


def test_a_second_capture_of_an_answered_task_is_a_new_task(store: Store,
                                                            tmp_path: Path) -> None:
    """Adoption is only for a task no response named: a capture the model was told about is
    not continued by a new capture call for the same target."""
    cloud = _cloud(None)
    rig = Rig(_asking(store, ""), tmp_path, ScriptBrain(CAPTURE, CAPTURE, DONE), backend=cloud)
    sid = rig.start()
    assert rig.run(sid).kind == "completed"
    assert len(store.latest_tasks(sid)) == 2

