"""A Gemini outage mid-investigation (issue 34), against the fake Gemini's outage switch: the
worker keeps asking (backoff shortened by GHOST_GEMINI_RETRY_MAX_S so the test is quick), the
thread is told once, the investigation goes on where it was, and no tool call runs twice.

The same with real waits, three minutes long, is run by hand (docs/reliability.md, "Gemini slow
or failing")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.gemini_server import Scripted, error_response, function_call_turn, text_turn
from tests.slack.conftest import CHANNEL, SlackHarness, make_harness
from tests.slack.test_investigation_flow import shell

OUTAGE_S = 2.5


@pytest.fixture
def quick(store: Any, fake_slack: Any, fake_gemini: Any, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> SlackHarness:
    return make_harness(store, fake_slack, tmp_path / "data", monkeypatch,
                        GHOST_GEMINI_RETRY_MAX_S="0.2", GHOST_GEMINI_OUTAGE_S="60")


def test_an_outage_mid_investigation_is_waited_out_and_told_once(
        quick: SlackHarness, fake_gemini: Any) -> None:
    def outage_starts(_request: Any) -> Scripted:  # the second model call meets the outage
        fake_gemini.outage(OUTAGE_S, 503)
        return error_response(503, "The model is overloaded.")

    fake_gemini.enqueue(function_call_turn(shell("ss -tln")), outage_starts,
                        text_turn("Port 6379 is not listening. Continue or Done?"))
    quick.slash("investigate web-01 cannot reach redis on 6379")
    quick.worker.run_until_idle()
    inv = quick.only_investigation()
    assert inv.status == "awaiting_user"  # went on after the outage, not failed
    assert fake_gemini.outage_answers >= 3  # it kept asking through it
    thread = quick.fake.thread(CHANNEL, str(inv.thread_ref))
    said = [str(m.get("blocks")) for m in thread]
    notices = [t for t in said if "Gemini is unavailable; retrying until" in t]
    assert len(notices) == 1 and "nothing to do" in notices[0]  # one notice for the outage
    assert any("Port 6379 is not listening" in t for t in said)
    commands = [r for r in quick.store.audit_records(inv.session_id) if r["kind"] == "command"]
    assert [r["command"] for r in commands] == ["ss -tln"]  # no duplicate tool call
    # the answer after the outage was to the same conversation the outage interrupted
    answered = fake_gemini.requests[-1].contents
    assert answered == fake_gemini.requests[1].contents
    assert "outage" not in (inv.engine_state or {})
