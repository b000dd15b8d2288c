"""Teams decided cards say what happened, like Slack's (issue 17): the title and the
notification text (``fallbackText``) read ✅ Approved by … — ran (exit N) / 🚫 Denied by … with
the reason / ✏️ Modified by … / ⛔ Edit refused with the edited command and why, once."""

from __future__ import annotations

import json
from typing import Any

from bot.teams import cards
from tests.fakes.gemini_server import function_call_turn
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import APPROVER, OTHER, TeamsHarness
from tests.teams.test_investigation_flow import start


def _card(teams: TeamsHarness, approval: Any) -> tuple[str, str, str]:
    """(title, notification text, whole card) of an approval's card as everyone sees it."""
    content = dict(teams.current(approval.message_ref["activity_id"]).attachments[0].content)
    return (str(content["body"][0]["text"]), str(content.get("fallbackText")),
            json.dumps(content, ensure_ascii=False))


def _next(teams: TeamsHarness, sid: str) -> Any:
    teams.worker.run_until_idle()
    return teams.pending_approval(sid)


def test_each_decided_teams_card_says_what_happened(teams: TeamsHarness,
                                                     fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo one")),
                        function_call_turn(shell("echo two")),
                        function_call_turn(shell("echo three")),
                        function_call_turn(shell("echo four")),
                        complete())
    sid = start(teams).session_id

    first = teams.pending_approval(sid)
    title, text, body = _card(teams, first)
    assert title == "**⚠️ Approval needed**" and text == "Approval needed: echo one"
    assert "other than the requester." in body and "editor" not in body   # nobody edited
    shown = teams.click(cards.APPROVE, {"approval_id": first.approval_id}, APPROVER)
    assert shown["body"][0]["text"] == "**✅ Approved by Ada Approver — running**"
    teams.worker.run_until_idle()                      # it ran: the card says so, for everyone
    title, text, body = _card(teams, first)
    assert title == "**✅ Approved by Ada Approver — ran (exit 0)**"
    assert text == "✅ Approved by Ada Approver — ran (exit 0) · echo one"
    assert "it ran (exit 0)" in body and "Approval needed" not in body + text

    second = teams.pending_approval(sid)
    teams.click(cards.DENY, {"approval_id": second.approval_id, "reason": "wrong host"},
                APPROVER)
    title, text, _ = _card(teams, second)
    assert title == '**🚫 Denied by Ada Approver: "wrong host"**'
    assert text.startswith('🚫 Denied by Ada Approver: "wrong host"')

    third = _next(teams, sid)
    teams.click(cards.MODIFY, {"approval_id": third.approval_id, "command": "echo 3"},
                APPROVER)
    title, text, body = _card(teams, third)
    assert title.startswith("**✏️ Modified by Ada Approver") and "echo 3" in body
    edited = _next(teams, sid)
    _, text, edited_body = _card(teams, edited)
    assert text == "Edited command needs approval: echo 3"
    assert "other than the requester and the editor." in edited_body
    teams.click(cards.APPROVE, {"approval_id": edited.approval_id}, OTHER)

    fourth = _next(teams, sid)
    teams.click(cards.MODIFY, {"approval_id": fourth.approval_id,
                               "command": "az account get-access-token"}, APPROVER)
    title, text, body = _card(teams, fourth)
    assert title == "**⛔ Edit refused — nothing ran**" and text.startswith("⛔ Edit refused")
    assert "`az account get-access-token`" in body          # the edited command is shown
    assert body.count("FORBIDDEN") == 1 and "Refused (" not in body
    assert "Modification blocked" not in body and "Original command not run" not in body
    teams.worker.run_until_idle()
    assert teams.store.get_investigation(sid).status == "completed"
    title, text, _ = _card(teams, edited)
    assert title.startswith("**✅ Approved by ") and "— ran (exit 0)" in title
    assert text.endswith(" · echo 3")


def test_the_approval_card_builder_names_a_failure_plainly() -> None:
    """A command that could not run is not shown with a ✅ (the builder, both platforms' shared
    outcome)."""
    from bot.chat.approval_cards import ApprovalCard, DecisionOutcome, ran_outcome

    card = ApprovalCard("a1", "s1", "nmap -p 22 10.0.0.4", "RISKY", 3, "T3.unknown_program",
                        "", "", "local", "UREQ", None, "1 approval.", None)
    outcome = ran_outcome(DecisionOutcome("approved", "UAPPROVER", None, stage="approved"),
                          {"status": "error", "error": "command_not_found"})
    content = cards.approval_card(card, outcome)
    assert content["body"][0]["text"] == "**❗ Approved by UAPPROVER — failed (not installed)**"
    assert content["fallbackText"].startswith("❗ Approved by UAPPROVER — failed")
    assert "actions" not in content
