"""Durable state (issue 13): the model turn and the engine state are one transaction, a
corrupted stored session offers Fresh/Abort without a traceback, resume re-validation can revert
a CONFIRMED hypothesis, UNVERIFIABLE stays terminal, and ``active_task_ids`` / ``resumed_from``
are written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from core.engine import hypotheses as hyp
from core.session_state import new_session_state
from storage.store import Store
from tests.engine.fakes import FakeBrain, RecordingOrchestrator, call, reply
from tests.engine.test_investigate_cli import env_for, ghost
from tests.engine.test_loop import Rig
from tests.fakes.gemini_server import call as gemini_call
from tests.fakes.gemini_server import function_call_turn

NOW = "2025-01-15T14:40:00Z"


class DiesAfterTheModelAnswers(Store):
    """The process dies at the point where the model's turn has arrived and the engine state
    that records it is being saved (before the fix: between two transactions)."""

    armed = True

    def save_state(self, session_id: str, state: Any, **kw: Any) -> Any:
        if self.armed and (kw.get("engine_state") or {}).get("phase") == "dispatch":
            self.armed = False
            raise KeyboardInterrupt("killed")
        return super().save_state(session_id, state, **kw)


def test_a_kill_while_saving_the_model_turn_never_leaves_two_model_turns(
        store: Store, tmp_path: Path) -> None:
    """Regression (issue 13): the model turn was committed on its own; a kill before the state
    was saved made the resumed run ask Gemini again and store two model turns in a row, the
    first with unanswered function calls, which Gemini rejects."""
    dying = DiesAfterTheModelAnswers(store.db)
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="sockets")),  # lost in the kill
        reply(call("run_shell_cmd", command="ss -tln", reasoning="sockets")),  # asked again
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")),
    )
    rig = Rig(dying, tmp_path, brain)
    sid = rig.start()
    with pytest.raises(KeyboardInterrupt):
        rig.engine.advance(sid)
    assert [t["role"] for t in store.turns(sid)] == ["user"]  # nothing half-saved
    assert store.get_investigation(sid).state["turn_count"] == 0
    assert rig.engine.advance(sid).kind == "completed"
    roles = [t["role"] for t in store.turns(sid)]
    assert roles == ["user", "model", "user", "model"]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    assert store.get_investigation(sid).state["turn_count"] == 2


# ── corrupted stored session (ghost-design §9) ─────────────────────────────────────────────────

CORRUPTIONS = [
    pytest.param('{"session_id": "ghost_x", "turn_', id="malformed-json"),
    pytest.param('[1, 2, 3]', id="json-not-an-object"),
]


def _corrupt(store: Store, sid: str, raw: str) -> None:
    if store.db.dialect == "postgresql" and not raw.startswith("["):
        pytest.skip("PostgreSQL's json type refuses malformed JSON: it cannot be stored")
    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE investigations SET state = :s WHERE session_id = :i"),
                     {"s": raw, "i": sid})


@pytest.mark.parametrize("raw", CORRUPTIONS)
def test_a_corrupted_state_offers_fresh_or_abort_without_a_traceback(
        fake_gemini: Any, cli_env: dict[str, str], store: Store, tmp_path: Path,
        raw: str) -> None:
    """Regression (issue 13): malformed JSON, or JSON that is not an object, gave a traceback
    on `--resume` and `ghost session show`."""
    sid = store.create_investigation(symptom="dns lookups fail", model="m",
                                     audit_dir="a").session_id
    _corrupt(store, sid, raw)
    env = env_for(cli_env)
    show = ghost(env, "session", "show", sid)
    assert show.returncode == 1 and "Traceback" not in show.stderr
    assert "corrupted" in show.stderr and f"--resume {sid}" in show.stderr
    assert len(show.stderr.strip().splitlines()) == 1
    aborted = ghost(env, "investigate", "--resume", sid, stdin="a\n", cwd=tmp_path)
    assert aborted.returncode == 1 and "Traceback" not in aborted.stderr
    assert "[F]resh session / [A]bort" in aborted.stdout
    fake_gemini.enqueue(function_call_turn(gemini_call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "Started over."})))
    fresh = ghost(env, "investigate", "--resume", sid, stdin="f\n", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    new = [i for i in store.list_investigations() if i.session_id != sid]
    assert len(new) == 1 and new[0].state["resumed_from"] == sid
    assert new[0].symptom == "dns lookups fail"  # the same problem, investigated afresh


# ── resume re-validation and terminal states ───────────────────────────────────────────────────

def _state() -> dict[str, Any]:
    return new_session_state("ghost_x", model="m", audit_dir="a",
                             created_at=datetime(2025, 1, 15, tzinfo=UTC))


def test_on_resume_a_confirmed_hypothesis_can_go_back_to_active() -> None:
    """Regression (issue 13, spec §2): "revert it to ACTIVE" was impossible."""
    state = _state()
    hyp.apply_reported(state, [{"id": "h1", "description": "NSG", "state": "CONFIRMED",
                                "evidence_audit_ids": ["ghost_x_004"]}], NOW)
    hyp.apply_reported(state, [{"id": "H1", "state": "ACTIVE"}], NOW)
    assert state["hypothesis_log"][0]["state"] == "CONFIRMED"  # not without a resume
    state["is_resume"] = True
    hyp.apply_reported(state, [{"id": "H1", "state": "ACTIVE"}], NOW)
    entry = state["hypothesis_log"][0]
    assert entry["state"] == "ACTIVE" and entry["resolved_at"] is None
    assert entry["resolving_audit_id"] is None and state["active_hypothesis_ids"] == ["h1"]
    hyp.apply_reported(state, [{"id": "h1", "state": "REFUTED",
                                "evidence_audit_ids": ["ghost_x_009"]}], NOW)
    assert entry["state"] == "REFUTED" and entry["resolving_audit_id"] == "ghost_x_009"


def test_unverifiable_stays_terminal_even_on_resume() -> None:
    """M8: no report, text or later denial moves an UNVERIFIABLE hypothesis."""
    state = _state()
    hyp.apply_reported(state, [{"id": "h1", "description": "NSG"},
                               {"id": "h2", "description": "UDR"}], NOW)
    for turn in (1, 2, 3):
        hyp.record_denial(state, turn=turn, command=f"az x {turn}", denial_reason="no",
                          audit_id=f"ghost_x_00{turn}", now=NOW)
    state["is_resume"] = True
    hyp.apply_reported(state, [{"id": "h1", "state": "ACTIVE"}], NOW)
    hyp.apply_text(state, "H1 CONFIRMED", NOW)
    hyp.apply_completion(state, {"confirmed_hypotheses": ["h1"]}, NOW)
    h1 = state["hypothesis_log"][0]
    assert h1["state"] == "UNVERIFIABLE" and "h1" not in state["active_hypothesis_ids"]
    hyp.apply_reported(state, [{"id": "h3", "description": "DNS"}], NOW)
    hyp.record_denial(state, turn=4, command="az y", denial_reason="", audit_id="ghost_x_010",
                      now=NOW)
    assert h1["denial_count"] == 3 and len(h1["denial_events"]) == 3


def test_active_task_ids_and_resumed_from_are_written(store: Store, tmp_path: Path) -> None:
    """Regression (issue 13): running captures were invisible in `ghost session show`."""
    task = "ghost_vm1_20250115T143200"
    orch = RecordingOrchestrator(
        {"status": "task_pending", "task_id": task, "state": "WAITING"},
        {"status": "task_completed", "task_id": task, "state": "COMPLETED"},
        {"status": "task_completed", "task_id": task, "state": "DONE",
         "cleanup_status": "completed"},
    )
    brain = FakeBrain(
        reply(call("capture_traffic", target="vm1", resource_group="rg", storage_account="sa")),
    )
    rig = Rig(store, tmp_path, brain, orchestrator=orch)
    sid = rig.start()
    brain.replies.append(reply(call("check_task", task_id=task)))
    brain.replies.append(reply(text="Waiting for the capture."))
    assert rig.engine.advance(sid).kind == "awaiting_user"
    state = store.get_investigation(sid).state
    assert state["active_task_ids"] == [task]  # completed, cleanup still owed
    rig.engine.mark_resumed(sid)
    assert store.get_investigation(sid).state["resumed_from"] == sid
    brain.replies.append(reply(call("cleanup_task", task_id=task)))
    brain.replies.append(reply(call("complete_investigation", confidence="low",
                                    root_cause_summary="x")))
    rig.engine.instruct(sid, "clean up")
    rig.engine.advance(sid)
    assert store.get_investigation(sid).state["active_task_ids"] == []


def test_the_engine_refuses_to_run_a_corrupted_state(store: Store, tmp_path: Path) -> None:
    """A chat worker that claims a corrupted investigation gets one clear error, not a
    KeyError from deep inside the loop."""
    from core.engine.loop import CorruptedState

    rig = Rig(store, tmp_path, FakeBrain())
    sid = rig.start()
    _corrupt(store, sid, "[1, 2, 3]")
    with pytest.raises(CorruptedState, match="saved state is corrupted"):
        rig.engine.advance(sid)
