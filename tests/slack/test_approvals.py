"""Approval cards: deny with a reason, modify (re-classified), expiry, double clicks, a restart
between card and click, configured approvers, and that nothing runs twice."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.slack import blocks
from core.session_state import utc_now
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    REQUESTER,
    SlackHarness,
    make_harness,
)
from tests.slack.test_investigation_flow import complete, shell, start


def risky_then(fake_gemini: Any, *after: Any, command: str = "echo risky") -> None:
    fake_gemini.enqueue(function_call_turn(shell(command)), *after)


def test_deny_with_a_reason_from_the_modal_reaches_the_model(
        slack: SlackHarness, fake_gemini: Any) -> None:
    risky_then(fake_gemini, complete("Denied path; low evidence."))
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.DENY, approval.approval_id, APPROVER)
    (opened,) = slack.fake.called("views.open")
    assert opened.args["trigger_id"] == f"trig.{blocks.DENY}"
    assert opened.args["view"]["callback_id"] == blocks.DENY_VIEW
    assert opened.args["view"]["private_metadata"] == approval.approval_id
    slack.submit(blocks.DENY_VIEW, approval.approval_id, APPROVER,
                 {"reason": "wrong resource group"})
    card = slack.fake.message(CHANNEL, approval.message_ref["ts"])
    assert 'Reason: \\"wrong resource group\\"' in str(card["blocks"]) or \
        "wrong resource group" in str(card["blocks"])
    slack.worker.run_until_idle()
    denied = fake_gemini.requests[1].function_responses()[0]["response"]
    assert denied["status"] == "denied"
    assert denied["_meta"]["denial_reason"] == "wrong resource group"
    assert not any(r.get("kind") == "command_started"
                   for r in slack.store.audit_records(inv.session_id))


def test_requester_cannot_even_open_the_deny_modal(slack: SlackHarness,
                                                   fake_gemini: Any) -> None:
    risky_then(fake_gemini)
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.DENY, approval.approval_id, REQUESTER)
    assert not slack.fake.called("views.open")
    assert "second engineer" in slack.fake.ephemerals(REQUESTER)[-1]


def test_modify_is_reclassified_and_needs_another_engineer(
        slack: SlackHarness, fake_gemini: Any) -> None:
    risky_then(fake_gemini, complete(), command="echo original")
    inv = start(slack)
    first = slack.pending_approval(inv.session_id)
    slack.click(blocks.MODIFY, first.approval_id, APPROVER)
    view = slack.fake.called("views.open")[0].args["view"]
    assert view["blocks"][0]["element"]["initial_value"] == "echo original"
    slack.submit(blocks.MODIFY_VIEW, first.approval_id, APPROVER, {"command": "echo edited"})
    old_card = slack.fake.message(CHANNEL, first.message_ref["ts"])
    assert "Modified" in str(old_card["blocks"]) and "echo edited" in str(old_card["blocks"])
    slack.worker.run_until_idle()          # the edited command gets its own card
    second = slack.pending_approval(inv.session_id)
    assert second.command == "echo edited" and second.modified_by == APPROVER
    assert second.replaces_approval_id == first.approval_id
    new_card = slack.fake.message(CHANNEL, second.message_ref["ts"])
    assert "Edited command needs approval" in str(new_card["blocks"])
    # the editor cannot approve their own edit; the old card cannot be used any more
    slack.click(blocks.APPROVE, second.approval_id, APPROVER)
    assert "You modified this command" in slack.fake.ephemerals(APPROVER)[-1]
    slack.click(blocks.APPROVE, first.approval_id, OTHER_MEMBER)
    assert "Already decided: modified" in slack.fake.ephemerals(OTHER_MEMBER)[-1]
    slack.click(blocks.APPROVE, second.approval_id, OTHER_MEMBER)
    slack.worker.run_until_idle()
    ran = [r for r in slack.store.audit_records(inv.session_id)
           if r["kind"] == "command" and r["action"] == "user_modified"]
    assert [r["command"] for r in ran] == ["echo edited"] and ran[0]["actor"] == OTHER_MEMBER
    assert slack.store.get_investigation(inv.session_id).status == "completed"
    # the thread's line names the command that ran (the edit), not the model's original
    lines = [m["text"] for m in slack.fake.thread(CHANNEL, inv.thread_ref)
             if m["text"].startswith("RISKY ran")]
    assert lines == ["RISKY ran as modified: echo edited"]
    # each card's outcome says who decided, where an engineer reads it first
    assert f"Modified by <@{APPROVER}> at " in str(old_card["blocks"])
    approved = slack.fake.message(CHANNEL, second.message_ref["ts"])
    assert f"Approved by <@{OTHER_MEMBER}> at " in str(approved["blocks"])


def test_a_forbidden_edit_is_refused_and_nothing_runs(slack: SlackHarness,
                                                      fake_gemini: Any) -> None:
    risky_then(fake_gemini, complete())
    inv = start(slack)
    first = slack.pending_approval(inv.session_id)
    slack.submit(blocks.MODIFY_VIEW, first.approval_id, APPROVER,
                 {"command": "az account get-access-token"})
    card = slack.fake.message(CHANNEL, first.message_ref["ts"])
    assert "Edit refused" in str(card["blocks"])
    slack.worker.run_until_idle()
    response = fake_gemini.requests[1].function_responses()[0]["response"]
    assert response["status"] == "denied" and "FORBIDDEN" in response["denial_reason"]
    assert not slack.store.approvals(inv.session_id, statuses=("pending",))


def test_empty_edit_is_rejected_in_the_modal(slack: SlackHarness, fake_gemini: Any) -> None:
    risky_then(fake_gemini)
    inv = start(slack)
    first = slack.pending_approval(inv.session_id)
    response = slack.submit(blocks.MODIFY_VIEW, first.approval_id, APPROVER, {"command": "  "})
    assert response.status == 200 and "errors" in response.body
    assert slack.store.get_approval(first.approval_id).status == "pending"


def test_double_click_first_decision_wins_and_the_command_runs_once(
        slack: SlackHarness, fake_gemini: Any) -> None:
    risky_then(fake_gemini, complete())
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.submit(blocks.DENY_VIEW, approval.approval_id, OTHER_MEMBER, {"reason": "late"})
    told = slack.fake.ephemerals(OTHER_MEMBER)[-1]
    assert "Already decided: approved by <@UAPPROVER>" in told
    slack.worker.run_until_idle()
    started = [r for r in slack.store.audit_records(inv.session_id)
               if r["kind"] == "command_started"]
    assert len(started) == 1


def test_restart_between_card_and_click(store: Any, fake_slack: Any, fake_gemini: Any,
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = make_harness(store, fake_slack, tmp_path / "data", monkeypatch)
    risky_then(fake_gemini, complete())
    inv = start(first)
    approval = first.pending_approval(inv.session_id)
    del first  # the process is gone: nothing of it is needed
    from storage.store import Store

    fresh_store = Store.from_url(str(store.db.url))
    second = make_harness(fresh_store, fake_slack, tmp_path / "data", monkeypatch)
    second.click(blocks.APPROVE, approval.approval_id, APPROVER)
    second.worker.run_until_idle()
    assert fresh_store.get_investigation(inv.session_id).status == "completed"
    assert fake_slack.called("files.completeUploadExternal")
    fresh_store.db.dispose()


def test_expiry_closes_the_card_and_tells_the_model(slack: SlackHarness,
                                                    fake_gemini: Any) -> None:
    from bot.scheduler import PeriodicJobs

    risky_then(fake_gemini, text_turn("The approval expired; what next?"))
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    later = utc_now() + timedelta(minutes=31)
    runtime = slack.services.runtime
    for shell_ in [runtime.shell_for(inv.session_id)]:
        shell_.clock = lambda: later
    jobs = PeriodicJobs(store=slack.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner="replica-1",
                        audit_dir=Path("/nonexistent"), clock=lambda: later)
    (expire, reconcile, _sweep) = jobs.specs()
    assert jobs.guarded(expire) == 1
    other = PeriodicJobs(store=slack.store, shell_for=runtime.shell_for,
                         close_card=runtime.close_card, owner="replica-2",
                         audit_dir=Path("/nonexistent"), clock=lambda: later)
    assert other.guarded(expire) is None        # the lease: one replica per period
    card = slack.fake.message(CHANNEL, approval.message_ref["ts"])
    assert "Expired" in str(card["blocks"])
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    assert "expired" in slack.fake.ephemerals(APPROVER)[-1]
    slack.worker.run_until_idle()
    response = fake_gemini.requests[1].function_responses()[0]["response"]
    assert response["status"] == "denied" and response["error"] == "approval_expired"
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"


def test_configured_approvers_and_groups(store: Any, fake_slack: Any, fake_gemini: Any,
                                         tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    slack = make_harness(store, fake_slack, tmp_path / "data", monkeypatch,
                         GHOST_APPROVERS="SONCALL")
    risky_then(fake_gemini, complete())
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)   # in the channel, not a group
    assert "not on this workspace's list" in slack.fake.ephemerals(APPROVER)[-1]
    slack.click(blocks.APPROVE, approval.approval_id, OTHER_MEMBER)  # in @oncall
    assert slack.store.get_approval(approval.approval_id).decided_by == OTHER_MEMBER
