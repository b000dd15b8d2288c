"""A whole investigation from `/ghost investigate` to the RCA in the thread: signed requests into
the real bolt app, the real WebClient against the mock Slack API, the real google-genai client
against the fake Gemini, the real store, shell and gate."""

from __future__ import annotations

from typing import Any

from bot.slack import blocks
from tests.fakes.gemini_server import call, function_call_turn
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OUTSIDER,
    REQUESTER,
    SlackHarness,
)


def shell(command: str, reasoning: str = "diagnose", **extra: Any) -> Any:
    return call("run_shell_cmd", {"command": command, "reasoning": reasoning, **extra})


def complete(summary: str = "NSG rule deny-6379 blocks Redis.") -> Any:
    return function_call_turn(call("complete_investigation", {
        "confidence": "high", "root_cause_summary": summary,
        "confirmed_hypotheses": ["h1"], "recommended_actions": ["Remove deny-6379"]}))


def texts(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("text")) + " " + str(m.get("blocks")) for m in messages)


def start(slack: SlackHarness, symptom: str = "web-01 cannot reach redis on 6379") -> Any:
    response = slack.slash(f"investigate {symptom}")
    assert response.status == 200, response.body
    assert "Starting an investigation" in response.body
    slack.worker.run_until_idle()
    return slack.only_investigation()


def test_slash_command_to_rca_with_a_second_engineers_approval(
        slack: SlackHarness, fake_gemini: Any) -> None:
    h1 = [{"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE"}]
    fake_gemini.enqueue(
        function_call_turn(shell("ss -tln", hypotheses=h1), thought_signature=b"\x01sig",
                           text="Hypothesis H1: an NSG blocks 6379."),
        function_call_turn(shell("echo approved-run", "check the path")),
        complete(),
    )
    inv = start(slack)
    root_ts = inv.thread_ref
    assert inv.channel_ref == CHANNEL and inv.requested_by == REQUESTER
    assert inv.status == "awaiting_approval"
    thread = slack.fake.thread(CHANNEL, root_ts)
    body = texts(thread)
    assert "Hypothesis H1" in body
    assert "SAFE ran: `ss -tln`" in body and "audit `" in body
    card = thread[-1]
    assert card["text"].startswith("Approval needed: echo approved-run")
    actions = [b for b in card["blocks"] if b["type"] == "actions"][0]
    assert [e["action_id"] for e in actions["elements"]] == [blocks.APPROVE, blocks.DENY,
                                                             blocks.MODIFY]
    # the root message is the status, edited in place
    root = slack.fake.message(CHANNEL, root_ts)
    assert "Waiting for an approval" in str(root["blocks"]) and "h1" in str(root["blocks"])
    assert not slack.fake.called("chat.update") or all(
        c.args["ts"] in (root_ts,) for c in slack.fake.called("chat.update"))

    approval = slack.pending_approval(inv.session_id)
    assert approval.message_ref["ts"] == card["ts"]
    # the requester cannot approve their own investigation's command
    slack.click(blocks.APPROVE, approval.approval_id, REQUESTER)
    assert "a second engineer has to decide" in slack.fake.ephemerals(REQUESTER)[-1]
    # nor can someone outside the incident channel
    slack.click(blocks.APPROVE, approval.approval_id, OUTSIDER)
    assert "Only members of this incident channel" in slack.fake.ephemerals(OUTSIDER)[-1]
    assert slack.store.get_approval(approval.approval_id).status == "pending"

    response = slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    assert response.status == 200
    card_now = slack.fake.message(CHANNEL, card["ts"])
    assert "Approved" in str(card_now["blocks"]) and f"<@{APPROVER}>" in str(card_now["blocks"])
    assert not [b for b in card_now["blocks"] if b["type"] == "actions"]
    assert slack.store.get_investigation(inv.session_id).status == "queued"

    slack.worker.run_until_idle()
    done = slack.store.get_investigation(inv.session_id)
    assert done.status == "completed"
    # the RCA went up with files_upload_v2: URL, upload to it, completion in the thread
    methods = [c.method for c in slack.fake.calls]
    i = methods.index("files.getUploadURLExternal")
    assert methods[i + 1: i + 3] == ["upload", "files.completeUploadExternal"]
    complete_call = slack.fake.called("files.completeUploadExternal")[0].args
    assert complete_call["channel_id"] == CHANNEL and complete_call["thread_ts"] == root_ts
    assert f"ghost_rca_{inv.session_id}.md" in str(complete_call["files"])
    assert "confidence *high*" in complete_call["initial_comment"]
    assert "NSG rule deny-6379 blocks Redis." in complete_call["initial_comment"]
    (uploaded,) = slack.fake.uploads.values()
    assert b"NSG rule deny-6379 blocks Redis." in uploaded
    assert "Finished" in str(slack.fake.message(CHANNEL, root_ts)["blocks"])

    records = slack.store.audit_records(inv.session_id)
    ran = [r for r in records if r["kind"] == "command" and r["action"] == "user_approved"]
    assert ran and ran[0]["actor"] == APPROVER and ran[0]["command"] == "echo approved-run"
    assert "approved-run" in ran[0]["output"]
    # Gemini saw the approved command's output
    assert fake_gemini.requests[2].function_responses()[0]["response"]["action"] == \
        "user_approved"
    fake_gemini.assert_drained()
