"""Test-plan items (ghost-test-plan.md) that had no test of their own, translated to database
storage: S9, S10, L2, E3, E5 and the terminal's start-up orphan check (H3, H8, H11, H12)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from bot.startup import orphan_check
from bot.terminal import Prompter
from core.engine.history import AUDIT_REF, rebuild
from core.safety.approval import Decision
from storage.store import Store
from tests.engine.fakes import FakeBrain, RecordingOrchestrator, call, reply
from tests.engine.test_investigate_cli import env_for, ghost
from tests.engine.test_loop import Rig
from tests.fakes.gemini_server import call as gemini_call
from tests.fakes.gemini_server import function_call_turn

MARKER = "zz-raw-output-7f3a"


# ── S10: Zero-Cache ────────────────────────────────────────────────────────────────────────────

def test_command_output_lives_only_in_the_audit_log(store: Store, tmp_path: Path) -> None:
    """S10: neither the §8 document, nor the engine's bookkeeping, nor the stored conversation
    holds command output; the model still sees it, rebuilt from the audit row."""
    (tmp_path / "out.txt").write_text(f"{MARKER}\n")
    brain = FakeBrain(reply(call("run_shell_cmd", command=f"cat {tmp_path / 'out.txt'}",
                                 reasoning="read it")),
                      reply(call("complete_investigation", confidence="low",
                                 root_cause_summary="x")))
    rig = Rig(store, tmp_path, brain)
    rig.approver.answers.append(Decision.approve("U-OTHER"))  # if `cat` asks
    sid = rig.start()
    assert rig.engine.advance(sid).kind == "completed"
    [response] = brain.function_responses(1)
    assert MARKER in response["response"]["output"]  # the model saw it
    inv = store.get_investigation(sid)
    assert MARKER not in json.dumps(inv.document)
    assert MARKER not in json.dumps(inv.engine_state)
    assert MARKER not in json.dumps(store.turns(sid))
    assert MARKER not in (inv.rca_markdown or "")
    assert any(MARKER in (r.get("output") or "") for r in store.audit_records(sid))


# ── L2: saved before every model call ──────────────────────────────────────────────────────────

class CountingBrain(FakeBrain):
    """Records what the database said at the moment of each model call."""

    def __init__(self, store: Store, *replies: Any) -> None:
        super().__init__(*replies)
        self.store, self.sid, self.seen = store, "", []  # type: ignore[var-annotated]

    def generate(self, **kw: Any) -> Any:
        inv = self.store.get_investigation(self.sid)
        self.seen.append((inv.state["turn_count"], len(self.store.turns(self.sid))))
        return super().generate(**kw)


def test_everything_is_saved_before_each_model_call(store: Store, tmp_path: Path) -> None:
    brain = CountingBrain(store,
                          reply(call("run_shell_cmd", command="ss -tln", reasoning="a")),
                          reply(call("run_shell_cmd", command="ip route show", reasoning="b")),
                          reply(call("complete_investigation", confidence="low",
                                     root_cause_summary="x")))
    rig = Rig(store, tmp_path, brain)
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a").session_id
    brain.sid = sid
    rig.engine.begin(sid, "s")
    rig.engine.advance(sid)
    # (turn_count, stored turns): the previous model turn and its responses are on disk
    assert brain.seen == [(0, 1), (1, 3), (2, 5)]


# ── S9: no checksum, no check ──────────────────────────────────────────────────────────────────

def test_a_session_without_a_checksum_resumes_without_a_prompt(
        fake_gemini: Any, cli_env: dict[str, str], store: Store, tmp_path: Path) -> None:
    sid = store.create_investigation(symptom="dns", model="m", audit_dir="a").session_id
    store.append_turn(sid, "user", {"role": "user", "parts": [{"text": "dns"}]})
    from sqlalchemy import text

    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE investigations SET checksum = '' WHERE session_id = :s"),
                     {"s": sid})
    fake_gemini.enqueue(function_call_turn(gemini_call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "Resumed."})))
    run = ghost(env_for(cli_env), "investigate", "--resume", sid, stdin="", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checksum" not in run.stdout.lower() and "RCA REPORT WRITTEN" in run.stdout


# ── E3: no key, nothing starts ─────────────────────────────────────────────────────────────────

def test_no_key_creates_nothing(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    run = ghost(env, "investigate", "anything", cwd=tmp_path)
    assert run.returncode == 1 and "export GEMINI_API_KEY=" in run.stderr
    assert "Session:" not in run.stdout and "orphaned" not in run.stdout
    listed = ghost(env, "session", "list")
    assert "anything" not in listed.stdout
    assert not (Path(cli_env["GHOST_DATA_DIR"]) / "audit").exists()


# ── E5: a response whose audit record is missing ───────────────────────────────────────────────

def test_a_missing_audit_record_is_named_not_fatal() -> None:
    turns = [{"content": {"role": "user", "parts": [{"functionResponse": {
        "name": "run_shell_cmd", "response": {AUDIT_REF: "ghost_x_042",
                                              "_meta": {"denial_count": 1}}}}]}}]
    [turn] = rebuild(turns, [])
    body = turn["parts"][0]["functionResponse"]["response"]
    assert body["error"] == "audit_record_missing" and body["audit_id"] == "ghost_x_042"
    assert body["_meta"] == {"denial_count": 1}


# ── H3, H8, H11, H12: the terminal's orphan check ──────────────────────────────────────────────

def _check(store: Store, orch: RecordingOrchestrator,
           answers: str) -> tuple[str, str, list[str]]:
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a").session_id
    out = io.StringIO()
    manual = orphan_check(store, orch, sid, Prompter(io.StringIO(answers), out), out)
    return sid, out.getvalue(), manual


def test_no_orphans_no_prompt(store: Store) -> None:
    orch = RecordingOrchestrator({"status": "ok", "tasks": [], "orphans": {}})
    _, text, manual = _check(store, orch, "")
    assert orch.requests == [{"intent": "list_tasks"}]  # H3: the public intent, nothing else
    assert "No orphaned resources found." in text and "[C]lean up" not in text  # H8
    assert manual == []


def test_cleanup_skips_denials_and_records_manual_leftovers(store: Store) -> None:
    report = {"status": "ok", "orphans": {}, "tasks": [
        {"task_id": "t_old", "session_id": "old", "state": "WAITING"},
        {"task_id": "t_denied", "session_id": "old", "state": "COMPLETED",
         "cleanup_status": "pending"},
        {"task_id": "t_partial", "session_id": "old", "state": "DONE",
         "cleanup_status": "partial"}]}
    orch = RecordingOrchestrator(report, {"cleanup_status": "completed"},
                   {"status": "denied", "cleanup_status": "pending"},  # H12: skipped
                   {"cleanup_status": "partial"})                      # H11: still partial
    sid, text, manual = _check(store, orch, "c\n")
    assert [r.get("task_id") for r in orch.requests[1:]] == ["t_old", "t_denied", "t_partial"]
    assert "[OK] Cleaned up t_old." in text and "[SKIP] t_denied" in text
    assert "Task t_partial: partial cleanup" in text
    assert manual == ["t_partial"]
    assert store.get_investigation(sid).state["manual_cleanup_pending"] == ["t_partial"]
