"""The orphan report in the thread (ghost-design §3 steps 5–8): one line when there is nothing,
otherwise Clean up / Skip / Review each, with the RISKY deletions as normal approval cards."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from bot.slack import blocks
from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    OUTSIDER,
    REQUESTER,
    SlackHarness,
)
from tests.slack.test_investigation_flow import start, texts


def _stale(slack: SlackHarness, *names: str) -> list[Path]:
    captures = Path(os.environ["GHOST_DATA_DIR"]) / "captures"
    captures.mkdir(parents=True, exist_ok=True)
    old = time.time() - 30 * 86400
    paths = []
    for name in names:
        path = captures / name
        path.write_bytes(b"pcap")
        os.utime(path, (old, old))
        paths.append(path)
    return paths


def _report(slack: SlackHarness, inv: Any) -> dict[str, Any]:
    (message,) = [m for m in slack.fake.thread(CHANNEL, str(inv.thread_ref))
                  if "orphaned resource" in str(m.get("text"))]
    return message


def _buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    for b in message["blocks"]:
        for e in b.get("elements") or ([b["accessory"]] if "accessory" in b else []):
            if e.get("type") == "button":
                found.append((e["action_id"], e["value"]))
    return found


def test_no_orphans_is_one_line(slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    thread = slack.fake.thread(CHANNEL, str(inv.thread_ref))
    assert "No orphaned resources found." in texts(thread[:1])
    assert sum("orphaned" in texts([m]) for m in thread) == 1
    slack.worker.run_until_idle()          # scanned once per investigation, not per claim
    assert sum("orphaned" in texts([m]) for m in
               slack.fake.thread(CHANNEL, str(inv.thread_ref))) == 1


def test_clean_up_goes_through_approval_cards(slack: SlackHarness, fake_gemini: Any) -> None:
    (path,) = _stale(slack, "ghost_old_web01.pcap")
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    report = _report(slack, inv)
    assert "stale local file" in texts([report]) and path.name in texts([report])
    assert [a for a, _ in _buttons(report)] == [blocks.ORPHANS_CLEAN, blocks.ORPHANS_SKIP,
                                                blocks.ORPHANS_REVIEW]
    assert inv.status == "awaiting_user"           # the investigation did not wait for it
    slack.click(blocks.ORPHANS_CLEAN, inv.session_id, OUTSIDER)
    assert "Only members" in slack.fake.ephemerals(OUTSIDER)[-1]

    slack.click(blocks.ORPHANS_CLEAN, inv.session_id, OTHER_MEMBER)
    report = _report(slack, inv)
    assert "Clean up chosen by <@UOTHER>" in texts([report]) and not _buttons(report)
    assert "waiting for approval" in texts([report])
    slack.click(blocks.ORPHANS_SKIP, inv.session_id, APPROVER)      # too late: first one won
    assert "Already handled by <@UOTHER>" in slack.fake.ephemerals(APPROVER)[-1]
    # the deletion is RISKY: a normal approval card, decided by a second engineer
    approval = slack.pending_approval(inv.session_id)
    assert approval.command.startswith("rm ") and path.exists()
    slack.click(blocks.APPROVE, approval.approval_id, REQUESTER)    # the requester may not
    assert path.exists()
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    assert not path.exists()
    assert "✅ stale local file" in texts([_report(slack, inv)])
    assert not slack.store.approvals(inv.session_id, statuses=("pending",))
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"


def test_skip_and_review_each(slack: SlackHarness, fake_gemini: Any) -> None:
    a, b = _stale(slack, "ghost_a_web01.pcap", "ghost_b_web02.pcap")
    fake_gemini.enqueue(text_turn("First?"), text_turn("Second?"))
    first = start(slack)
    slack.click(blocks.ORPHANS_SKIP, first.session_id, REQUESTER)
    assert "Skipped" in texts([_report(slack, first)]) and a.exists() and b.exists()

    slack.slash("investigate second symptom")
    slack.worker.run_until_idle()
    second = slack.store.list_investigations()[0]
    slack.click(blocks.ORPHANS_REVIEW, second.session_id, REQUESTER)
    rows = _buttons(_report(slack, second))
    assert [action for action, _ in rows] == [blocks.ORPHAN_CLEAN_ONE] * 2
    slack.click(blocks.ORPHAN_CLEAN_ONE, rows[1][1], REQUESTER)      # only b
    approval = slack.pending_approval(second.session_id)
    assert b.name in approval.command and a.name not in approval.command
    slack.click(blocks.ORPHAN_CLEAN_ONE, rows[1][1], REQUESTER)      # double click
    assert "already" in slack.fake.ephemerals(REQUESTER)[-1]
    slack.click(blocks.DENY, approval.approval_id, APPROVER)
    slack.submit(blocks.DENY_VIEW, approval.approval_id, APPROVER, {"reason": "keep it"})
    assert a.exists() and b.exists()
    report = texts([_report(slack, second)])
    assert "not cleaned" in report and [x for x, _ in _buttons(_report(slack, second))] == \
        [blocks.ORPHAN_CLEAN_ONE]


def test_partial_cleanup_is_recorded_as_manual_cleanup_pending(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"), text_turn("Anything else?"))
    inv = start(slack)
    runtime = slack.services.runtime
    runtime.store.change_conversation_ref(inv.session_id, lambda ref: ref["orphans"].update(
        rows=[["partially cleaned", "ghost_t1"]], status={"ghost_t1": "manual"}))
    slack.click(blocks.CONTINUE, slack.prompt_value(inv), REQUESTER)
    metadata = slack.fake.called("views.open")[-1].args["view"]["private_metadata"]
    slack.submit(blocks.CONTINUE_VIEW, metadata, REQUESTER, {"instruction": "go on"})
    slack.worker.run_until_idle()        # merged under the worker's lease, then advanced
    state = slack.store.get_investigation(inv.session_id).state
    assert state["manual_cleanup_pending"] == ["ghost_t1"]


def test_a_decision_whose_continuation_was_lost_is_continued_by_reconcile(
        slack: SlackHarness, fake_gemini: Any) -> None:
    from core.safety.approval import Decision
    from core.session_state import utc_now

    (path,) = _stale(slack, "ghost_lost_web01.pcap")
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    slack.click(blocks.ORPHANS_CLEAN, inv.session_id, OTHER_MEMBER)
    approval = slack.pending_approval(inv.session_id)
    runtime = slack.services.runtime
    # the web process recorded the click and died before continuing the cleanup
    runtime.shell_for(inv.session_id).decide(approval.approval_id,
                                             Decision.approve(APPROVER))
    assert path.exists()
    assert runtime.reconcile_chat(utc_now()) == 1 and not path.exists()
    assert runtime.reconcile_chat(utc_now()) == 0
