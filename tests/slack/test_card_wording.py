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


def _plain(message: dict[str, Any]) -> list[str]:
    """A message's blocks as the lines a reader sees (sections, context, button labels)."""
    lines: list[str] = []
    for block in message.get("blocks") or []:
        if block.get("type") == "section":
            lines.append(str(block["text"]["text"]))
        elif block.get("type") == "context":
            lines += [str(e.get("text")) for e in block.get("elements") or []]
        elif block.get("type") == "actions":
            lines.append(" ".join(f"[{e['text']['text']}]" for e in block["elements"]))
    return lines


def transcript(slack: SlackHarness, thread_ts: str) -> str:
    """Every chat.postMessage and chat.update of one thread as the mock Web API received them,
    in order: the notification text, then the blocks as text."""
    out: list[str] = []
    mine = {thread_ts} | {str(m["ts"]) for m in slack.fake.thread(CHANNEL, thread_ts)}
    for call in slack.fake.calls:
        args = call.args
        if call.method == "chat.postMessage" and args.get("thread_ts") == thread_ts:
            kind = "post"
        elif call.method == "chat.update" and (args.get("ts") in mine):
            kind = "update"
        elif call.method == "chat.postMessage" and not args.get("thread_ts") and not out:
            kind = "root"
        elif call.method == "files.completeUploadExternal" and \
                args.get("thread_ts") == thread_ts:
            files = args.get("files")
            out.append(f"--- {call.method} (the RCA file {files})")
            out.append("  " + str(args.get("initial_comment")).replace("\n", "\n  "))
            continue
        else:
            continue
        ts = str(args.get("ts") or "")
        if kind == "update" and ts == thread_ts:  # the status message: its line is enough
            out.append(f"--- chat.update (status) text: {args.get('text')}")
            continue
        out.append(f"--- {call.method} ({kind}{' ' + ts if ts else ''})")
        out.append(f"text: {args.get('text')}")
        out += ["  " + line.replace("\n", "\n  ") for line in _plain(args)]
    return "\n".join(out)


def test_an_approved_card_ends_with_how_the_command_ended(slack: SlackHarness,
                                                          fake_gemini: Any) -> None:
    """The card said "— running" from the click; after the command it says how it ended: ran
    with its exit code, or failed and why (a ❗, never a ✅ next to a failure)."""
    fake_gemini.enqueue(function_call_turn(shell("echo fine")),
                        function_call_turn(shell("false")),
                        function_call_turn(shell("no-such-tool-ghost --probe")),
                        complete())
    sid = start(slack).session_id
    seen: list[tuple[str, str, str]] = []
    for _ in range(3):
        approval = slack.pending_approval(sid)
        slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
        assert " — running" in _card(slack, approval)[0]
        slack.worker.run_until_idle()
        seen.append(_card(slack, approval))
    (fine, false, missing) = seen
    assert fine[0] == f"*✅ Approved by <@{APPROVER}> — ran (exit 0)*"
    assert fine[1] == f"✅ Approved by <@{APPROVER}> — ran (exit 0) · echo fine"
    assert "it ran (exit 0); its output is in the thread." in fine[2]
    assert false[0] == f"*✅ Approved by <@{APPROVER}> — ran (exit 1)*"
    assert missing[0] == f"*❗ Approved by <@{APPROVER}> — failed (not installed)*"
    assert "✅" not in missing[0] + missing[1] and "running" not in missing[2]
    assert slack.store.get_investigation(sid).status == "completed"


def test_the_thread_of_approve_deny_modify_and_a_refused_edit(slack: SlackHarness,
                                                              fake_gemini: Any) -> None:
    """The whole thread as posted to the mock Web API (quoted in the closing note with
    ``pytest -s``): every decided card's header and notification say what happened, once."""
    fake_gemini.enqueue(function_call_turn(shell("ss -tln"),
                                           text="Hypothesis H1: an NSG blocks 6379."),
                        function_call_turn(shell("echo approved")),
                        function_call_turn(shell("echo denied")),
                        function_call_turn(shell("echo original")),
                        function_call_turn(shell("echo refused-edit")),
                        complete())
    inv = start(slack)
    sid = inv.session_id
    approve = slack.pending_approval(sid)
    slack.click(blocks.APPROVE, approve.approval_id, APPROVER)
    deny = _next(slack, sid)
    slack.click(blocks.DENY, deny.approval_id, APPROVER)
    slack.submit(blocks.DENY_VIEW, deny.approval_id, APPROVER, {"reason": "wrong host"})
    modify = _next(slack, sid)
    slack.submit(blocks.MODIFY_VIEW, modify.approval_id, APPROVER, {"command": "echo edited"})
    edited = _next(slack, sid)
    slack.click(blocks.APPROVE, edited.approval_id, OTHER_MEMBER)
    refused = _next(slack, sid)
    slack.submit(blocks.MODIFY_VIEW, refused.approval_id, APPROVER,
                 {"command": "az account get-access-token"})
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(sid).status == "completed"
    text = transcript(slack, str(inv.thread_ref))
    print("\n" + text)
    finals = {a.approval_id: _card(slack, a)[1] for a in (approve, deny, modify, edited,
                                                           refused)}
    assert finals[approve.approval_id].startswith(f"✅ Approved by <@{APPROVER}> — ran (exit 0)")
    assert finals[deny.approval_id].startswith(f'🚫 Denied by <@{APPROVER}>: "wrong host"')
    assert finals[modify.approval_id].startswith(f"✏️ Modified by <@{APPROVER}>")
    assert finals[edited.approval_id].startswith(
        f"✅ Approved by <@{OTHER_MEMBER}> — ran (exit 0) · echo edited")
    assert finals[refused.approval_id].startswith("⛔ Edit refused")
    assert "Approval needed" not in "".join(finals.values())
    assert text.count("Refused (") == 0 and "Modification blocked" not in text
    # the thread's command lines: a command that ran after an approval is not shown with ⚠️
    assert "✅ RISKY ran after approval: `echo approved`" in text
    assert "✅ RISKY ran as modified: `echo edited`" in text and "⚠️ RISKY ran" not in text
    assert "🚫 RISKY denied: `echo denied`" in text
    assert "⛔ RISKY not run: `echo refused-edit` · the edit was refused: it is FORBIDDEN" in text
