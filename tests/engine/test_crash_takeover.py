"""Taking over an investigation whose holder died or stalled (issue 23).

- kill -9 for real (a forked process): between an approval's claim and its started record, and
  while the approved command runs;
- a holder that stalls past its lease while another takes over: before the fix its late save
  stored its model turn over the other holder's unanswered calls, and Gemini was sent a function
  call without its response (the command in that call never ran).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.engine.brain import ModelReply
from core.engine.loop import StepSuperseded
from core.engine.recovery import BrokenHistory, check_history, history_problem
from core.safety.executor import ExecResult
from storage.db import Database
from storage.store import Store
from tests.engine.crash_rig import Dying, Rig, ScriptBrain
from tests.engine.fakes import call, reply

DONE = reply(call("complete_investigation", confidence="low", root_cause_summary="x"))


def _tool(program: str, marker: Path, sleep: float = 0.0) -> str:
    """An approvable command that writes 'ran ' to the marker (then sleeps): the stand-in."""
    if sleep:
        return f"{program} append-then-sleep {marker} 'ran ' {sleep:g}"
    return f"{program} append {marker} 'ran '"


def _child(url: str, sid: str, tmp: str, command: str, point: str | None) -> None:
    """The holder that dies: its own connections, the same investigation."""
    store = Dying(Database(url))
    store.hard, store.point = True, point
    brain = ScriptBrain(reply(call("run_shell_cmd", command=command, reasoning="fix")), DONE)
    Rig(store, Path(tmp), brain, real_commands=True).run(sid)
    os._exit(0)  # not reached when the kill comes


def _start_child(url: str, sid: str, tmp: Path, command: str,
                 point: str | None) -> Any:
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_child, args=(url, sid, str(tmp), command, point))
    proc.start()
    return proc


def _new_investigation(store: Store, tmp_path: Path) -> str:
    rig = Rig(Dying(store.db), tmp_path, ScriptBrain())
    return rig.start()


def test_kill_9_between_the_approval_claim_and_its_started_record(
        store: Store, migrated_url: str, tmp_path: Path, tool: str) -> None:
    """Regression (issue 23): `executing` and `command_started` were two transactions; a kill
    between them left `executing` with no started record, and recovery told the model the
    command "will not be run again" though it never ran. Now both commit together or not at
    all: the request is still `approved`, and the next holder runs it, once."""
    marker = tmp_path / "marker"
    command = _tool(tool, marker)
    sid = _new_investigation(store, tmp_path)
    proc = _start_child(migrated_url, sid, tmp_path, command, "inside_claim")
    proc.join(60)
    assert proc.exitcode == 137  # died at the point, inside the claim's transaction
    [approval] = store.approvals(sid)
    assert approval.status == "approved"
    assert not [r for r in store.audit_records(sid) if r["kind"] == "command_started"]
    assert not marker.exists()

    brain = ScriptBrain(reply(call("run_shell_cmd", command=command, reasoning="fix")), DONE)
    rig = Rig(Dying(store.db), tmp_path, brain, real_commands=True)
    assert rig.take_over(sid).kind == "completed"
    assert marker.read_text() == "ran "  # ran once, after the takeover
    [response] = brain.responses()
    assert response["status"] == "completed" and response["exit_code"] == 0
    assert store.approvals(sid)[0].status == "executed"
    assert brain.rejected == [] and store.verify_audit(sid).ok


def test_kill_9_while_an_approved_command_runs(store: Store, migrated_url: str,
                                               tmp_path: Path, tool: str) -> None:
    """SIGKILL while the command runs: the next holder closes it as interrupted, tells the
    model its outcome is unknown, and never runs it again."""
    marker = tmp_path / "marker"
    command = _tool(tool, marker, sleep=4)
    sid = _new_investigation(store, tmp_path)
    proc = _start_child(migrated_url, sid, tmp_path, command, None)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the command never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    assert store.approvals(sid)[0].status == "executing"

    brain = ScriptBrain(reply(call("run_shell_cmd", command=command, reasoning="fix")), DONE)
    rig = Rig(Dying(store.db), tmp_path, brain, real_commands=True)
    assert rig.take_over(sid).kind == "completed"
    [response] = brain.responses()
    assert response["error"] == "interrupted" and "not run again" in response["stderr"]
    assert store.approvals(sid)[0].status == "interrupted"
    time.sleep(0.3)
    assert marker.read_text() == "ran "  # never a second time
    assert brain.rejected == [] and store.verify_audit(sid).ok


# ── a holder that stalls past its lease ────────────────────────────────────────────────────────

class Stalling:
    """A brain whose answer arrives only after ``meanwhile`` ran (another holder's work)."""

    model = "fake-model"

    def __init__(self, inner: ScriptBrain, meanwhile: Callable[[], None]) -> None:
        self.inner, self.meanwhile = inner, meanwhile

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        self.meanwhile()
        return self.inner.generate(system_prompt=system_prompt, tools=tools, history=history)


def test_a_stalled_holder_never_stores_its_turn_over_the_new_holders(
        store: Store, tmp_path: Path) -> None:
    """Regression (issue 23): holder 1 waits on Gemini past its lease; holder 2 takes over,
    gets a turn with a command that needs approval, and waits. Holder 1's answer then arrived
    and was stored after holder 2's model turn: the conversation had a function call without
    its response, which Gemini rejects, and holder 2's command never ran. Now holder 1's save
    loses the compare-and-set: it stores nothing and stops."""
    risky = reply(call("run_shell_cmd", command="touch /tmp/ghost-takeover",
                       reasoning="remediation"))
    second = ScriptBrain(risky, DONE)
    rig2 = Rig(Dying(store.db), tmp_path, second)
    sid = rig2.start()

    def holder_2_takes_over() -> None:
        assert rig2.engine().advance(sid).kind == "awaiting_approval"

    first = ScriptBrain(reply(call("run_shell_cmd", command="ss -tln", reasoning="sockets")))
    rig1 = Rig(Dying(store.db), tmp_path, Stalling(first, holder_2_takes_over))
    before = store.turns(sid)
    with pytest.raises(StepSuperseded, match="advanced by another process"):
        rig1.engine().advance(sid)
    turns = store.turns(sid)
    assert [t["role"] for t in turns] == ["user", "model"] and turns[:1] == before
    assert "touch" in str(turns[1]["content"])  # holder 2's turn, not holder 1's
    assert rig1.runs.argvs == []  # holder 1 ran nothing
    assert rig2.run(sid).kind == "completed"
    assert rig2.runs.argvs == ["touch /tmp/ghost-takeover"]
    assert second.rejected == [] and store.verify_audit(sid).ok


def test_a_holder_stalled_in_a_command_does_not_answer_the_call_twice(
        store: Store, tmp_path: Path) -> None:
    """Holder 1 stalls while its SAFE command runs; holder 2 takes over (the command is closed
    as interrupted, never run again) and carries on. Holder 1's command then returns: its
    outcome is recorded, but its save is refused, so the call keeps exactly one response."""
    brain = ScriptBrain(reply(call("run_shell_cmd", command="ss -tln", reasoning="sockets")),
                        DONE)
    rig2 = Rig(Dying(store.db), tmp_path, brain)
    sid = rig2.start()
    rig1 = Rig(Dying(store.db), tmp_path, brain)

    def stalled_runner(argv: Sequence[str], timeout_s: float, max_bytes: int) -> Any:
        rig1.runs.argvs.append(" ".join(argv))
        assert rig2.take_over(sid).kind == "completed"  # meanwhile, holder 2
        now = datetime.now(UTC)
        return ExecResult(0, "late output\n", "", False, 0, 0, 0, 0.01, now, now)

    rig1.runner = stalled_runner
    with pytest.raises(StepSuperseded):
        rig1.engine().advance(sid)
    assert rig1.runs.argvs == ["ss -tln"] and rig2.runs.argvs == []  # run once, by holder 1
    [response] = brain.responses()
    assert response["error"] == "interrupted"  # what holder 2 knew when it answered the call
    assert brain.rejected == [] and store.verify_audit(sid).ok
    assert history_problem(store.turns(sid)[:-1]) is None
    assert store.get_investigation(sid).status == "completed"


def test_a_broken_conversation_is_never_sent() -> None:
    """The last line of defence: a stored model turn whose call has no response stops the
    engine with a clear error instead of a request Gemini rejects."""
    model = {"role": "model", "parts": [{"functionCall": {"name": "run_shell_cmd"}}]}
    user = {"role": "user", "parts": [{"text": "s"}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_cmd"}}]}
    assert history_problem([{"content": c} for c in (user, model, answer)]) is None
    for broken in ([user, model, model, answer], [user, model, user], [user, model]):
        with pytest.raises(BrokenHistory, match="function call|no responses"):
            check_history("ghost_x", [{"content": c} for c in broken])
