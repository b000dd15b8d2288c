"""Who may press Continue / Done / Extend / Generate RCA, and captures' progress in the one
status message instead of a line per poll."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.slack import blocks
from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    OUTSIDER,
    REQUESTER,
    SlackHarness,
    make_harness,
)
from tests.slack.test_investigation_flow import start, texts


def _prompt(slack: SlackHarness, inv: Any) -> dict[str, Any]:
    return slack.fake.thread(CHANNEL, str(inv.thread_ref))[-1]


def test_only_channel_members_press_the_prompt_buttons(slack: SlackHarness,
                                                       fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    prompt = _prompt(slack, inv)
    slack.click(blocks.DONE, slack.prompt_value(inv), OUTSIDER, message_ts=prompt["ts"])
    assert "Only members of this incident channel" in slack.fake.ephemerals(OUTSIDER)[-1]
    slack.click(blocks.CONTINUE, slack.prompt_value(inv), OUTSIDER)
    assert not slack.fake.called("views.open")
    after = slack.store.get_investigation(inv.session_id)
    assert after.status == "awaiting_user" and after.engine_state["phase"] == "awaiting_user"
    assert blocks.DONE in str(slack.fake.message(CHANNEL, prompt["ts"])["blocks"])
    # any member may (the requester too: steering runs nothing by itself)
    slack.click(blocks.DONE, slack.prompt_value(inv), REQUESTER, message_ts=prompt["ts"])
    assert slack.store.get_investigation(inv.session_id).status == "queued"


def test_with_approvers_only_the_requester_and_approvers_steer(
        store: Any, fake_slack: Any, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    slack = make_harness(store, fake_slack, tmp_path / "data", monkeypatch,
                         GHOST_APPROVERS="UAPPROVER")
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    prompt = _prompt(slack, inv)
    slack.click(blocks.DONE, slack.prompt_value(inv), OTHER_MEMBER, message_ts=prompt["ts"])
    assert "configured Ghost approvers" in slack.fake.ephemerals(OTHER_MEMBER)[-1]
    event = {"type": "app_mention", "user": OTHER_MEMBER, "channel": CHANNEL,
             "text": "<@UGHOST> stop", "ts": "1700000011.000001", "thread_ts": inv.thread_ref}
    slack.event(event, "EvSteer")
    assert "configured Ghost approvers" in slack.fake.ephemerals(OTHER_MEMBER)[-1]
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    slack.click(blocks.DONE, slack.prompt_value(inv), APPROVER, message_ts=prompt["ts"])
    assert slack.store.get_investigation(inv.session_id).status == "queued"


def test_capture_progress_is_in_the_status_message_not_a_flood(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    before = len(slack.fake.thread(CHANNEL, str(inv.thread_ref)))
    notifier = slack.services.runtime.notifier
    task = "ghost_web01_20261122T043000"

    def result(state: str, poll: int | None, message: str = "") -> dict[str, Any]:
        return {"task_id": task, "status": "task_pending", "state": state,
                "poll_count": poll, "max_polls": 20 if poll is not None else None,
                "message": message}

    notifier.tool_result(inv.session_id, "capture_traffic", {"target": "web-01"},
                         result("PROVISIONING", 0))
    for poll in (1, 2, 3):
        notifier.tool_result(inv.session_id, "check_task", {"task_id": task},
                             result("WAITING", poll))
    root = str(slack.fake.message(CHANNEL, str(inv.thread_ref))["blocks"])
    assert f"`{task}` WAITING · poll 3/20" in root
    assert len(slack.fake.thread(CHANNEL, str(inv.thread_ref))) == before   # no flood
    notifier.tool_result(inv.session_id, "check_task", {"task_id": task},
                         result("COMPLETED", None, "Analysis ready."))
    notifier.tool_result(inv.session_id, "check_task", {"task_id": task},
                         result("COMPLETED", None, "Analysis ready."))
    thread = slack.fake.thread(CHANNEL, str(inv.thread_ref))
    assert len(thread) == before + 1 and "COMPLETED — Analysis ready." in texts(thread[-1:])
    root = str(slack.fake.message(CHANNEL, str(inv.thread_ref))["blocks"])
    assert f"`{task}` COMPLETED · 3 poll(s)" in root
    # an error without a task is one line in the thread
    notifier.tool_result(inv.session_id, "capture_traffic", {"target": "x"},
                         {"status": "error", "error": "not_configured",
                          "message": "Captures are not configured."})
    last = texts(slack.fake.thread(CHANNEL, str(inv.thread_ref))[-1:])
    assert "⚠️ `capture_traffic` failed: Captures are not configured." in last
    assert "Capture -" not in last and "🧠" not in last   # Ghost's notice, not a task line
