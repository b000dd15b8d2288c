"""A whole investigation in Teams, from ``@Ghost investigate`` to the RCA in the thread: the
real bot on botbuilder's TestAdapter, the real google-genai client against the fake Gemini, the
real store, shell, gate and worker."""

from __future__ import annotations

from typing import Any

from bot.teams import cards
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import (
    APPROVER,
    CHANNEL,
    NAMES,
    REQUESTER,
    TeamsHarness,
    content,
)


def start(teams: TeamsHarness, symptom: str = "web-01 cannot reach redis on 6379") -> Any:
    teams.mention(f"investigate {symptom}")
    teams.worker.run_until_idle()
    return teams.only_investigation()


def test_mention_to_rca_with_a_second_engineers_approval(teams: TeamsHarness,
                                                         fake_gemini: Any) -> None:
    h1 = [{"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE"}]
    fake_gemini.enqueue(
        function_call_turn(shell("ss -tln", hypotheses=h1),
                           text="Hypothesis H1: an NSG blocks 6379."),
        function_call_turn(shell("echo approved-run", "check the path")),
        text_turn("The path looks blocked; shall I confirm with a capture?"),
        complete(),
    )
    inv = start(teams)
    assert (inv.platform, inv.channel_ref, inv.thread_ref) == ("teams", CHANNEL,
                                                             "1700000000001")
    assert inv.requested_by == REQUESTER and inv.status == "awaiting_approval"
    # every post went into the mention's reply thread, proactively
    sent = teams.sent()
    assert {a.conversation.id for a in sent} == {f"{CHANNEL};messageid=1700000000001"}
    thread = "\n".join(content(a) for a in sent)
    assert "Hypothesis H1" in thread and "SAFE ran: `ss -tln`" in thread
    # the status card is the first reply, edited in place
    status_id = inv.conversation_ref["teams_status_id"]
    assert status_id == sent[0].id
    status = content(teams.current(status_id))
    assert "Waiting for an approval" in status and "NSG blocks 6379" in status
    assert "Rea Quester" in status
    # the approval card: Action.Execute approve, deny and modify behind show-cards
    approval = teams.pending_approval(inv.session_id)
    card = teams.current(approval.message_ref["activity_id"]).attachments[0].content
    assert card["version"] == "1.4" and "echo approved-run" in str(card["body"])
    assert [a["type"] for a in card["actions"]] == ["Action.Execute", "Action.ShowCard",
                                                    "Action.ShowCard"]
    assert card["actions"][0]["verb"] == "approve"

    clicked = teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, APPROVER)
    assert "Approved" in str(clicked["body"]) and "Ada Approver" in str(clicked["body"])
    assert "actions" not in clicked
    # everyone else sees the same outcome: the card was updated for the conversation
    everyone = teams.current(approval.message_ref["activity_id"]).attachments[0].content
    assert everyone == clicked
    assert teams.store.get_approval(approval.approval_id).decided_by == APPROVER

    teams.worker.run_until_idle()            # runs the command; Gemini answers with text only
    inv = teams.store.get_investigation(inv.session_id)
    assert inv.status == "awaiting_user"
    prompt_id = inv.conversation_ref["teams_prompt_id"]
    prompt = teams.current(prompt_id).attachments[0].content
    assert [a["title"] for a in prompt["actions"]] == ["Continue…", "Done — write the RCA"]
    data = prompt["actions"][0]["card"]["actions"][0]["data"]   # Continue's, with its key
    assert data == {"session_id": inv.session_id, "kind": "awaiting_user",
                    "key": "awaiting_user:3"}
    answered = teams.click(cards.CONTINUE, {**data, "instruction": "check the NSG first"},
                           REQUESTER)
    assert "Continued by Rea Quester" in str(answered["body"])
    assert teams.current(prompt_id).attachments[0].content == answered

    teams.worker.run_until_idle()
    done = teams.store.get_investigation(inv.session_id)
    assert done.status == "completed"
    assert "check the NSG first" in str(fake_gemini.requests[3].body)
    # the RCA: a summary card, then the report itself as cards (no team here, so no file)
    after = [a for a in teams.sent() if a.id not in {s.id for s in sent}]
    rca_card = next(a for a in after if "RCA for" in content(a))
    assert "Confidence **high**" in content(rca_card)
    report = [a for a in after if a is not rca_card
              and "NSG rule deny-6379 blocks Redis." in content(a)]
    assert report and report[-1].conversation.id.endswith(";messageid=1700000000001")
    assert "|" not in content(report[-1]).replace("'|'", "")  # no pipe tables
    assert NAMES[APPROVER] in "".join(content(a) for a in report)  # named, not by object id
    assert "Finished" in content(teams.current(status_id))
    ran = [r for r in teams.store.audit_records(inv.session_id)
           if r["kind"] == "command" and r["action"] == "user_approved"]
    assert ran and ran[0]["actor"] == APPROVER
    fake_gemini.assert_drained()


def test_help_list_status_and_unknown_threads(teams: TeamsHarness, fake_gemini: Any) -> None:
    assert "@Ghost investigate" in teams.mention("help").text
    assert "No investigations yet" in teams.mention("list").text
    assert "Start an investigation" in teams.mention("what now?", root="170000000999").text
    assert "Tell me the symptom" in teams.mention("investigate").text


def test_a_gemini_failure_says_what_to_do_in_teams_words(teams: TeamsHarness,
                                                         fake_gemini: Any) -> None:
    from tests.fakes.gemini_server import error_response

    fake_gemini.enqueue(error_response(400, "API key not valid. Please pass a valid API key."))
    inv = start(teams)
    fake_gemini.clear_failures()
    said = teams.sent()[-1].text
    # Ghost's own notice (no 🧠: not the model's words), with Teams' command syntax
    assert said.startswith("⚠️ Gemini could not be used: ") and "API key" in said
    assert f"@Ghost resume {inv.session_id}" in said and "/ghost" not in said
    # a refusal in the thread uses Teams' syntax too
    teams.mention(f"cancel {inv.session_id}")
    assert f"@Ghost resume {inv.session_id}" in teams.mention("try again").text


def test_notices_name_people_by_display_name(teams: TeamsHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(complete())
    inv = start(teams)
    teams.services.port.post_text(inv, f"Capture stopped by {{user:{REQUESTER}}}.", notice=True)
    assert teams.sent()[-1].text == "Capture stopped by Rea Quester."
