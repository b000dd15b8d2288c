"""SIGTERM with several investigations in flight (issue 23: "a deploy leaves 4 of 8
investigations stuck"): `ghost serve` stops each step at its next save that leaves the
investigation runnable, releases every lease and exits in seconds, not at the end of its
budget; the next process finishes every investigation with each command run exactly once,
none recorded as interrupted, and a history Gemini accepts (every call answered).

Before: the pool's daemon threads went on chaining model calls and commands until the budget
ran out, and the interpreter's exit cut them wherever they were.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

from tests.fakes.gemini_server import RecordedRequest, Scripted, function_call_turn, text_turn
from tests.slack.processes import (
    free_port,
    ghost_env,
    investigate,
    start,
    stop,
    wait_healthy,
    wait_until,
)
from tests.slack.test_investigation_flow import shell
from tests.slack.test_sigterm import _held_leases

IN_FLIGHT = 6
ROUNDS = 3            # model turns with a command before the question
MODEL_DELAY_S = 1.5   # each of those model calls; a whole step is ~5 s, longer than a drain


def _reply(request: RecordedRequest) -> Scripted:
    """A command per turn for ``ROUNDS`` turns, then a question (the investigation waits)."""
    if len(request.model_turns) < ROUNDS:
        turn = function_call_turn(shell("ss -tln"), text="Checking listeners.")
        return Scripted(turn.status, turn.body, MODEL_DELAY_S)
    return text_turn("Which resource group is web-01 in?")


def unanswered_calls(request: RecordedRequest) -> int:
    """Function calls in the history sent to Gemini without their response (Gemini rejects
    such a request)."""
    calls = sum(1 for c in request.model_turns for p in c.get("parts", [])
                if "functionCall" in p)
    answers = sum(1 for c in request.contents if c.get("role") != "model"
                  for p in c.get("parts", []) if "functionResponse" in p)
    return calls - answers


def _commands(store: Any, sid: str) -> list[dict[str, Any]]:
    return [r for r in store.audit_records(sid) if r["kind"] == "command"]


def test_sigterm_with_six_steps_in_flight_hands_each_back_at_a_save(
        cli_env: dict[str, str], fake_slack: Any, fake_gemini: Any, store: Any,
        tmp_path: Path) -> None:
    fake_gemini.enqueue(*[_reply for _ in range(IN_FLIGHT * (ROUNDS + 1) * 2)])
    port = free_port()
    # leases of 60 s: an investigation left leased would visibly wait, not be retaken at once
    env = ghost_env(cli_env, fake_slack, PORT=str(port), GHOST_SLACK_POST_INTERVAL_S="0",
                    GHOST_LEASE_SECONDS="60", GHOST_WORKER_THREADS=str(IN_FLIGHT))
    log = tmp_path / "ghost.log"
    proc = start("serve", env, tmp_path, log)
    after = None
    try:
        base = wait_healthy(port, proc)
        for i in range(IN_FLIGHT):
            investigate(base, fake_slack, f"web-0{i} cannot reach redis on 6379")
        wait_until(lambda: len([r for r in fake_gemini.requests if r.model_turns]) >= IN_FLIGHT,
                   60, "every investigation past its first model turn")
        invs = store.list_investigations(limit=20)
        assert sum(1 for inv in invs if inv.lease_owner) >= 4, "not enough steps in flight"
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        took = time.monotonic() - signalled
        text = log.read_text()
        assert proc.returncode == 0, text[-3000:]
        # the model calls in flight return (1.5 s, more on a loaded machine) and their steps
        # stop at that save, within the budget and without the hard stop
        assert took < 10, f"took {took:.1f} s; {text[-3000:]}"
        assert "budget" not in text and "did not reach a save" not in text, text[-3000:]
        assert "stopped at a save and is handed back" in text
        assert _held_leases(store) == []
        for inv in store.list_investigations(limit=20):
            assert inv.status in ("queued", "running", "awaiting_user"), inv.status
            assert not [r for r in _commands(store, inv.session_id)
                        if "interrupt" in json.dumps(r).lower()]

        after = start("worker", env, tmp_path, log)
        wait_until(lambda: all(store.get_investigation(inv.session_id).status
                               == "awaiting_user" for inv in invs), 90,
                   "every investigation to reach its question")
        for inv in invs:  # each of its ROUNDS commands ran once, none cut short
            commands = _commands(store, inv.session_id)
            ran = [r for r in commands if (r.get("details") or {}).get("exit_code") is not None
                   or r.get("exit_code") is not None]
            assert "interrupt" not in json.dumps(commands).lower()
            assert len(ran) == ROUNDS, json.dumps(commands)[:2000]
        assert all(unanswered_calls(r) == 0 for r in fake_gemini.requests)
    finally:
        stop(proc)
        if after is not None:
            stop(after)
