"""The reliability drill's harness (benchmarks/chaos.py) works and counts right.

The scripted Gemini answers each investigation consistently and rejects what Gemini would; the
accounting catches a command run twice, a card never posted and a duplicated root; and a tiny
drill (one `ghost serve` on SQLite, 2 investigations, one kill -9) runs end to end with every
target met. The last test takes about a minute on a quiet 2-core machine.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit import account
from benchmarks.chaos_kit.faults import Faults
from benchmarks.chaos_kit.gemini import ChaosGemini, broken_history, risky_commands

ROOT = Path(__file__).resolve().parents[2]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _answered(turn: dict[str, Any], audit_id: str) -> list[dict[str, Any]]:
    """The model turn and the user turn answering each of its calls."""
    parts = [{"functionResponse": {"name": p["functionCall"]["name"],
                                   "response": {"audit_id": audit_id, "exit_code": 0}}}
             for p in turn["parts"] if "functionCall" in p]
    return [turn, {"role": "user", "parts": parts}]


def test_the_script_is_keyed_by_the_investigation_and_answers_a_resend_the_same() -> None:
    gemini = ChaosGemini(Faults())
    history = [_user("investigate the API refuses [chaos-07]")]
    status, first = gemini.answer({"contents": history})
    assert status == 200
    again = gemini.answer({"contents": copy.deepcopy(history)})[1]
    assert again["candidates"] == first["candidates"]  # a re-sent request: the same turn
    turn = first["candidates"][0]["content"]
    for i in range(3):  # walk to the first RISKY probe: it carries investigation 7's tag
        history += _answered(turn, f"sid_{i:03d}")
        status, reply = gemini.answer({"contents": history})
        assert status == 200, reply
        turn = reply["candidates"][0]["content"]
    command = turn["parts"][-1]["functionCall"]["args"]["command"]
    assert command == risky_commands(7)[0] and "-w 107 " in command
    assert gemini.served[(7, 3)] == 1 and gemini.served[(7, 0)] == 2


def test_a_call_without_its_response_is_rejected_as_gemini_would() -> None:
    gemini = ChaosGemini(Faults())
    history = [_user("investigate [chaos-01]")]
    turn = gemini.answer({"contents": history})[1]["candidates"][0]["content"]
    half = history + [turn, {"role": "user", "parts": [{"text": "resumed"}]}]
    assert broken_history(half) is not None
    status, body = gemini.answer({"contents": half})
    assert status == 400 and gemini.rejected and "answered by []" in body["error"]["message"]
    assert gemini.answer({"contents": [_user("no tag here")]})[0] == 400


@dataclass
class _Approval:
    approval_id: str
    command: str
    status: str = "executed"
    decided_by: str | None = "UAPPROVER"
    decided_at: datetime = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)


@dataclass
class _Store:
    """The three reads the accounting makes, over records the test writes."""

    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    approval_rows: dict[str, list[_Approval]] = field(default_factory=dict)

    def audit_records(self, sid: str) -> list[dict[str, Any]]:
        return self.records.get(sid, [])

    def approvals(self, sid: str) -> list[_Approval]:
        return self.approval_rows.get(sid, [])

    def get_investigation(self, sid: str) -> Any:
        return type("Inv", (), {"status": "completed"})()


def _ran(command: str, approval_id: str) -> dict[str, Any]:
    return {"kind": "command", "command": command, "action": "user_approved",
            "details": {"approval_id": approval_id}}


def test_the_accounting_catches_a_command_run_twice_and_one_never_run() -> None:
    first, second = risky_commands(3)
    store = _Store(records={"s3": [_ran(first, "a1"), _ran(second, "a2")]},
                   approval_rows={"s3": [_Approval("a1", first), _Approval("a2", second)]})
    started = [account.Started(3, "C1", "s3", 0.0)]
    trace = [{"kind": "command", "argv": ["az", "vm", "--scripts", "nc -zv -w 103 10.1.3.4 8080"]},
             {"kind": "command", "argv": ["az", "vm", "--scripts", "curl -sS -m 103 http://x/"]}]
    assert account.executed_once(started, store, trace).ok
    twice = account.executed_once(started, store, trace + trace[:1])
    assert not twice.ok and "ran 2 time(s) on the estate, 1 executed record" in twice.details[0]
    store.approval_rows["s3"].append(_Approval("a0", first, status="approved"))
    orphan = account.executed_once(started, store, trace)  # approved, never run, then re-asked
    assert not orphan.ok and "approval a0 (approved" in orphan.details[0]
    store.approval_rows["s3"].pop()
    store.records["s3"] = store.records["s3"][:1]
    never = account.executed_once(started, store, trace)
    assert not never.ok and any("0 executed record(s)" in d for d in never.details)


def test_the_accounting_catches_a_duplicate_root_a_missing_card_and_a_second_rca() -> None:
    from benchmarks.chaos_kit.slack import ChaosSlack

    slack = ChaosSlack(Faults(), ["C1"])
    slack.start()
    try:
        def post(**args: Any) -> str:
            return str(slack._answer("chat.postMessage", {"channel": "C1", **args})[1]["ts"])

        root = post(text="Ghost investigation `s1`")
        card = {"type": "actions", "elements": [{"action_id": "ghost_approve", "value": "a1"}]}
        post(text="Approval needed", thread_ts=root, blocks=[card])
        for _ in range(2):
            slack._answer("files.completeUploadExternal", {
                "channel_id": "C1", "thread_ts": root,
                "files": json.dumps([{"id": "F1", "title": "ghost_rca_s1.md"}])})
        store = _Store(approval_rows={"s1": [_Approval("a1", "x"), _Approval("a2", "y")]})
        started = [account.Started(1, "C1", "s1", 0.0)]
        posts, rcas = account.thread_posts(started, store, slack)
        assert not posts.ok and not rcas.ok
        assert any("no card for approval a2" in d for d in posts.details)
        assert any("uploaded 2 times" in d for d in posts.details)
        post(text="Ghost investigation `s1` again")
        posts, _ = account.thread_posts(started, store, slack)
        assert any("2 thread roots" in d for d in posts.details)
    finally:
        slack.stop()


def test_a_tiny_drill_on_sqlite_with_one_kill_meets_every_target(tmp_path: Path) -> None:
    """Every correctness target of the drill, on a tiny run. Acks are held to Slack's own 3 s
    deadline here: CI machines are busy, and the 300 ms target is the benchmark's to measure."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "chaos.py"), "--sqlite", "-n", "2",
         "--channels", "2", "--faults", "kills", "--kill-every", "5", "--chaos-seconds", "7",
         "--budget", "200", "--lease", "4", "--ack-target-ms", "3000"],
        cwd=ROOT, capture_output=True, text=True, timeout=400)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "ALL TARGETS MET" in out and "kills 1" in out, out
    assert "investigations completed / started: 2/2" in out
    assert "RISKY probes 4/4 by the audit log, 4/4 match their side effects" in out
    assert "audit chains verified (`ghost audit verify`): 2/2" in out
