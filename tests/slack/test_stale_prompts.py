"""A Continue / Done prompt is answered once, by any route (a click, an @ghost mention, a
cancel); its buttons are replaced by the answer for everyone, and a click on an old prompt
does nothing but tell the clicker who answered it."""

from __future__ import annotations

import json
from typing import Any

from bot.slack import blocks
from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import APPROVER, CHANNEL, OTHER_MEMBER, REQUESTER, SlackHarness
from tests.slack.test_investigation_flow import start


def _prompt_messages(slack: SlackHarness, inv: Any) -> list[dict[str, Any]]:
    return [m for m in slack.fake.thread(CHANNEL, str(inv.thread_ref))
            if "Ghost is waiting for you" in json.dumps(m.get("blocks"))]


def _dump(message: dict[str, Any]) -> str:
    return json.dumps(message.get("blocks"), ensure_ascii=False)


def _buttons(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "actions" for b in message.get("blocks") or [])


def test_a_mention_answers_the_prompt_and_its_old_done_button_does_nothing(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"), text_turn("Should I check DNS?"))
    inv = start(slack)
    old = slack.prompt_value(inv)
    assert old == f"{inv.session_id}|awaiting_user:1"
    slack.event({"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
                 "text": "<@UGHOST> it is cache-rg", "ts": "1700000009.000001",
                 "thread_ts": inv.thread_ref}, "EvAnswer")
    (first,) = _prompt_messages(slack, inv)
    shown = slack.fake.message(CHANNEL, first["ts"])
    assert not _buttons(shown)   # replaced for everyone by who answered, and how
    assert "Answered with a mention in the thread by <@UREQ>." in _dump(shown)
    slack.worker.run_until_idle()   # Ghost asks again: a newer prompt
    newer = slack.prompt_value(inv)
    assert newer == f"{inv.session_id}|awaiting_user:2"

    # the old Done is clicked: it must not finish the newer question
    slack.click(blocks.DONE, old, APPROVER, message_ts=first["ts"])
    told = slack.fake.ephemerals(APPROVER)[-1]
    assert told.startswith("This prompt was already answered: Answered with a mention in the "
                           "thread by <@UREQ> at ") and "Nothing more was done." in told
    now = slack.store.get_investigation(inv.session_id)
    assert now.status == "awaiting_user" and now.engine_state["phase"] == "awaiting_user"
    assert _buttons(slack.fake.message(CHANNEL, _prompt_messages(slack, inv)[-1]["ts"]))
    # the old Continue opens no modal
    slack.click(blocks.CONTINUE, old, APPROVER)
    assert not slack.fake.called("views.open")
    assert "already answered" in slack.fake.ephemerals(APPROVER)[-1]
    assert len(fake_gemini.requests) == 2


def test_a_double_click_acts_once_and_the_second_is_told_who_was_first(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    value = slack.prompt_value(inv)
    (prompt,) = _prompt_messages(slack, inv)
    slack.click(blocks.DONE, value, APPROVER, message_ts=prompt["ts"])
    assert slack.store.get_investigation(inv.session_id).status == "queued"
    shown = _dump(slack.fake.message(CHANNEL, prompt["ts"]))
    assert "Done — writing the RCA by <@UAPPROVER>." in shown
    slack.click(blocks.DONE, value, OTHER_MEMBER, message_ts=prompt["ts"])
    assert slack.fake.ephemerals(OTHER_MEMBER)[-1].startswith(
        "This prompt was already answered: Done — writing the RCA by <@UAPPROVER> at ")
    # an @ghost mention now is queued for later, not a second answer to the old question
    slack.event({"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
                 "text": "<@UGHOST> also check DNS", "ts": "1700000010.000001",
                 "thread_ts": inv.thread_ref}, "EvLate")
    assert "queued" in slack.fake.ephemerals(REQUESTER)[-1]


def test_a_cancel_closes_the_open_prompt_and_resume_asks_again(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    value = slack.prompt_value(inv)
    slack.slash(f"cancel {inv.session_id}")
    (prompt,) = _prompt_messages(slack, inv)
    shown = slack.fake.message(CHANNEL, prompt["ts"])
    assert not _buttons(shown)
    assert "Investigation cancelled by <@UREQ>." in _dump(shown)
    slack.click(blocks.DONE, value, APPROVER, message_ts=prompt["ts"])
    assert "already answered: Investigation cancelled by <@UREQ>" in \
        slack.fake.ephemerals(APPROVER)[-1]
    assert slack.store.get_investigation(inv.session_id).status == "cancelled"
    slack.slash(f"resume {inv.session_id}")
    slack.worker.run_until_idle()
    again = _prompt_messages(slack, inv)
    assert len(again) == 2 and _buttons(slack.fake.message(CHANNEL, again[-1]["ts"]))
    slack.click(blocks.DONE, slack.prompt_value(inv), APPROVER, message_ts=again[-1]["ts"])
    assert slack.store.get_investigation(inv.session_id).status == "queued"
