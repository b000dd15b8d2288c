"""Teams: a prompt answered by a mention (or a first click) shows the answer for everyone; a
click on the old card does nothing and tells the clicker who answered it."""

from __future__ import annotations

from typing import Any

from bot.teams import cards
from tests.fakes.gemini_server import text_turn
from tests.teams.conftest import APPROVER, REQUESTER, TeamsHarness
from tests.teams.test_investigation_flow import start


def _done_data(card: dict[str, Any]) -> dict[str, Any]:
    return dict(next(a for a in card["actions"] if a.get("verb") == cards.DONE)["data"])


def test_a_mention_closes_the_prompt_and_the_old_done_does_nothing(
        teams: TeamsHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"), text_turn("Should I check DNS?"))
    inv = start(teams)
    first_id = teams.store.get_investigation(inv.session_id).conversation_ref["teams_prompt_id"]
    old = _done_data(teams.current(first_id).attachments[0].content)
    assert old["key"] == "awaiting_user:1"
    assert "continuing" in teams.mention("it is cache-rg").text
    closed = teams.current(first_id).attachments[0].content
    assert "actions" not in closed   # for everyone: who answered, and how
    assert "Answered with a mention in the thread by Rea Quester." in str(closed["body"])
    teams.worker.run_until_idle()    # Ghost asks again: a newer prompt card
    newer_id = teams.store.get_investigation(inv.session_id).conversation_ref[
        "teams_prompt_id"]
    assert newer_id != first_id

    seen = teams.click(cards.DONE, old, APPROVER)
    assert "actions" not in seen
    assert "This prompt was already answered: Answered with a mention in the thread by " \
           "Rea Quester at " in str(seen["body"])
    now = teams.store.get_investigation(inv.session_id)
    assert now.status == "awaiting_user" and now.engine_state["phase"] == "awaiting_user"
    assert "actions" in teams.current(newer_id).attachments[0].content
    assert len(fake_gemini.requests) == 2


def test_a_second_click_on_done_is_told_who_was_first(teams: TeamsHarness,
                                                      fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(teams)
    prompt_id = teams.store.get_investigation(inv.session_id).conversation_ref[
        "teams_prompt_id"]
    data = _done_data(teams.current(prompt_id).attachments[0].content)
    first = teams.click(cards.DONE, data, APPROVER)
    assert "Done — writing the RCA by Ada Approver." in str(first["body"])
    assert teams.current(prompt_id).attachments[0].content == first
    second = teams.click(cards.DONE, data, REQUESTER)
    assert "already answered: Done — writing the RCA by Ada Approver at " in \
        str(second["body"]) and "actions" not in second
    assert teams.store.get_investigation(inv.session_id).status == "queued"


def test_a_command_error_reads_as_plain_words_in_teams(teams: TeamsHarness,
                                                       fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(teams)
    teams.services.runtime.notifier.tool_result(
        inv.session_id, "run_shell_cmd", {"command": "dig redis.internal"},
        {"status": "error", "error": "command_not_found", "classification": "SAFE",
         "audit_id": "ghost_x_003"})
    line = teams.sent()[-1].text
    assert line.startswith("❗ SAFE not run: `dig redis.internal`")
    assert "`dig` is not installed on the Ghost host" in line and "audit `ghost_x_003`" in line
    assert "command_not_found" not in line
