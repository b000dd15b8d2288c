"""Decided approval cards say what happened, in their header and in the notification text, with
wording that fits the case (issue 17): approved, denied with a reason, modified, and an edit the
gate refused — the edited command and why, said once. Against the mock Slack Web API."""

from __future__ import annotations

from typing import Any

from bot.slack import blocks
from tests.fakes.gemini_server import function_call_turn
from tests.slack.conftest import APPROVER, CHANNEL, OTHER_MEMBER, SlackHarness
from tests.slack.test_investigation_flow import complete, shell, start


def _card(slack: SlackHarness, approval: Any) -> tuple[str, str, str]:
    """(header, notification text, whole card text) of an approval's card as Slack has it."""
    message = slack.fake.message(CHANNEL, approval.message_ref["ts"])
    header = message["blocks"][0]["text"]["text"]
    return header, message["text"], str(message["blocks"])


def _next(slack: SlackHarness, sid: str) -> Any:
    slack.worker.run_until_idle()
    return slack.pending_approval(sid)


def test_each_decided_card_says_what_happened(slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo one")),
                        function_call_turn(shell("echo two")),
                        function_call_turn(shell("echo three")),
                        function_call_turn(shell("echo four")),
                        complete())
    inv = start(slack)
    sid = inv.session_id
    cards: list[tuple[str, str, str]] = []

    first = slack.pending_approval(sid)
    header, text, body = _card(slack, first)
    assert header == "*⚠️ Approval needed*" and text.startswith("Approval needed: echo one")
    assert "other than the requester." in body and "editor" not in body  # nobody edited
    slack.click(blocks.APPROVE, first.approval_id, APPROVER)
    cards.append(_card(slack, first))
    header, text, body = cards[-1]
    assert header.startswith(f"*✅ Approved by <@{APPROVER}> — ")
    assert text.startswith(f"✅ Approved by <@{APPROVER}> — ") and text.endswith(" · echo one")
    assert "Approval needed" not in text + header and "⚠️" not in header

    second = _next(slack, sid)
    slack.click(blocks.DENY, second.approval_id, APPROVER)
    slack.submit(blocks.DENY_VIEW, second.approval_id, APPROVER, {"reason": "wrong host"})
    cards.append(_card(slack, second))
    header, text, body = cards[-1]
    assert header == f'*🚫 Denied by <@{APPROVER}>: "wrong host"*'
    assert text.startswith(f'🚫 Denied by <@{APPROVER}>: "wrong host"')

    third = _next(slack, sid)
    slack.submit(blocks.MODIFY_VIEW, third.approval_id, APPROVER, {"command": "echo 3"})
    cards.append(_card(slack, third))
    header, text, body = cards[-1]
    assert header.startswith(f"*✏️ Modified by <@{APPROVER}>")
    assert text.startswith(f"✏️ Modified by <@{APPROVER}>") and "echo 3" in body
    edited = _next(slack, sid)
    _, _, edited_body = _card(slack, edited)
    assert "other than the requester and the editor." in edited_body
    slack.click(blocks.APPROVE, edited.approval_id, OTHER_MEMBER)

    fourth = _next(slack, sid)
    slack.submit(blocks.MODIFY_VIEW, fourth.approval_id, APPROVER,
                 {"command": "az account get-access-token"})
    cards.append(_card(slack, fourth))
    header, text, body = cards[-1]
    assert header == "*⛔ Edit refused — nothing ran*"
    assert text.startswith("⛔ Edit refused")
    assert "`az account get-access-token`" in body  # the edited command is shown
    outcome = slack.fake.message(CHANNEL, fourth.message_ref["ts"])["blocks"][-1]["text"]["text"]
    print(outcome)
    assert outcome.count("FORBIDDEN") == 1 and "Refused (" not in outcome
    assert "Modification blocked" not in outcome and "Original command not run" not in outcome
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(sid).status == "completed"
    for header, text, _body in cards:  # quoted in the closing note with `pytest -s`
        print(header, "|", text)
