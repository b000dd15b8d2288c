"""Teams shares the chat layer's outbox: a connector 5xx while Ghost posts into the thread
leaves the post owed (not lost in botbuilder's error log, not the investigation failed), and
the periodic reconcile delivers it once the connector is back, once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from core.session_state import utc_now
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.test_investigation_flow import shell
from tests.teams.conftest import TeamsHarness, content, make_harness
from tests.teams.test_delivery import ThrottlingAdapter, connector_error


@pytest.fixture
def flaky(store: Any, fake_gemini: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          loop: Any) -> TeamsHarness:
    return make_harness(store, tmp_path / "data", monkeypatch, loop, adapter=ThrottlingAdapter())


def test_a_connector_500_on_the_card_leaves_it_owed_and_reconcile_posts_it_once(
        flaky: TeamsHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo risky"), text="Trying the path."),
                        text_turn("Ran it."))
    adapter = flaky.adapter
    assert isinstance(adapter, ThrottlingAdapter)
    flaky.mention("investigate web-01 cannot reach redis on 6379")   # the status goes out
    adapter.error, adapter.throttle = connector_error(500), 10_000     # then Teams fails
    flaky.worker.run_until_idle()
    inv = flaky.only_investigation()
    assert inv.status == "awaiting_approval"                           # not failed
    runtime = flaky.services.runtime
    owed = runtime.outbox.waiting(inv.session_id)
    # the orphan scan's line (the worker's first post), the model's text, the card
    assert [o["kind"] for o in owed] == ["text", "text", "card"]
    assert "No orphaned resources found" in owed[0]["payload"]["text"]
    before = len(flaky.sent())

    adapter.throttle = 0                                               # Teams is back
    at = utc_now() + timedelta(minutes=5)
    runtime.outbox.clock = lambda: at
    assert runtime.reconcile_chat(utc_now()) >= 3
    assert runtime.reconcile_chat(utc_now()) == 0
    new = [content(a) for a in flaky.sent()[before:]]
    assert len(new) == 3 and "Trying the path." in new[1] and "echo risky" in new[2]
    approval = flaky.pending_approval(inv.session_id)
    assert approval.message_ref                                        # clickable now
