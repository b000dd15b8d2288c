"""Teams approval cards: who may decide, deny with a reason, modify (re-classified), expiry, a
restart between card and click — and the card each clicker and everyone else sees."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.teams import cards
from core.session_state import utc_now
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import APPROVER, OTHER, REQUESTER, TeamsHarness, make_harness
from tests.teams.test_investigation_flow import start


def risky(fake_gemini: Any, *after: Any, command: str = "echo risky") -> None:
    fake_gemini.enqueue(function_call_turn(shell(command)), *after)


def card_of(teams: TeamsHarness, approval: Any) -> dict[str, Any]:
    return dict(teams.current(approval.message_ref["activity_id"]).attachments[0].content)


def test_self_approval_is_refused_with_a_card_saying_why(teams: TeamsHarness,
                                                         fake_gemini: Any) -> None:
    risky(fake_gemini)
    inv = start(teams)
    approval = teams.pending_approval(inv.session_id)
    shown = teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, REQUESTER)
    assert "a second engineer has to decide" in str(shown["body"][0])
    assert shown["actions"]                      # still actionable for someone else
    assert teams.store.get_approval(approval.approval_id).status == "pending"
    assert not teams.adapter.updated_activities or all(
        u.id != approval.message_ref["activity_id"] for u in teams.adapter.updated_activities)


def test_non_approver_refused_group_member_allowed(store: Any, fake_gemini: Any,
                                                   tmp_path: Path, loop: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    groups = {("aad-other", "grp-oncall")}
    teams = make_harness(store, tmp_path / "data", monkeypatch, loop,
                         groups=lambda u, gs: {g for g in gs if (u, g) in groups},
                         GHOST_TEAMS_APPROVERS="grp-oncall")
    risky(fake_gemini, complete())
    inv = start(teams)
    approval = teams.pending_approval(inv.session_id)
    assert "configured Ghost approvers" in str(card_of(teams, approval)["body"])
    shown = teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, APPROVER)
    assert "not on this workspace's list" in str(shown["body"][0])
    teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, OTHER)
    assert teams.store.get_approval(approval.approval_id).decided_by == OTHER


def test_deny_with_a_reason_reaches_the_model(teams: TeamsHarness, fake_gemini: Any) -> None:
    risky(fake_gemini, complete("Denied path; low evidence."))
    inv = start(teams)
    approval = teams.pending_approval(inv.session_id)
    shown = teams.click(cards.DENY, {"approval_id": approval.approval_id,
                                     "reason": "wrong resource group"}, APPROVER)
    assert "wrong resource group" in str(shown["body"]) and "Denied" in str(shown["body"])
    assert card_of(teams, approval) == shown
    # a later click is told who decided
    late = teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, OTHER)
    assert "Already decided: denied by Ada Approver" in str(late["body"][0])
    teams.worker.run_until_idle()
    denied = fake_gemini.requests[1].function_responses()[0]["response"]
    assert denied["status"] == "denied"
    assert denied["_meta"]["denial_reason"] == "wrong resource group"


def test_modify_is_reclassified_and_needs_another_engineer(teams: TeamsHarness,
                                                           fake_gemini: Any) -> None:
    risky(fake_gemini, complete(), command="echo original")
    inv = start(teams)
    first = teams.pending_approval(inv.session_id)
    modify = card_of(teams, first)["actions"][2]["card"]["body"][0]
    assert modify["id"] == "command" and modify["value"] == "echo original"
    empty = teams.click(cards.MODIFY, {"approval_id": first.approval_id, "command": " "},
                        APPROVER)
    assert "Enter the command" in str(empty["body"][0])
    shown = teams.click(cards.MODIFY, {"approval_id": first.approval_id,
                                       "command": "echo edited"}, APPROVER)
    assert "Modified" in str(shown["body"]) and "echo edited" in str(shown["body"])
    teams.worker.run_until_idle()                 # the edit gets its own card
    second = teams.pending_approval(inv.session_id)
    assert second.command == "echo edited" and second.modified_by == APPROVER
    assert "Edited command needs approval" in str(card_of(teams, second)["body"])
    refused = teams.click(cards.APPROVE, {"approval_id": second.approval_id}, APPROVER)
    assert "You modified this command" in str(refused["body"][0])
    teams.click(cards.APPROVE, {"approval_id": second.approval_id}, OTHER)
    teams.worker.run_until_idle()
    ran = [r for r in teams.store.audit_records(inv.session_id)
           if r["kind"] == "command" and r["action"] == "user_modified"]
    assert [r["command"] for r in ran] == ["echo edited"] and ran[0]["actor"] == OTHER
    assert teams.store.get_investigation(inv.session_id).status == "completed"
    # the thread names the command that ran (the edit), and who decided reads first
    lines = [a.text for a in teams.sent() if a.text and "ran as modified" in a.text]
    assert len(lines) == 1 and "echo edited" in lines[0] and "echo original" not in lines[0]
    assert "Modified by Ada Approver at " in str(shown["body"])


def test_expiry_updates_the_card_and_tells_the_model(teams: TeamsHarness,
                                                     fake_gemini: Any) -> None:
    from bot.scheduler import PeriodicJobs

    risky(fake_gemini, text_turn("The approval expired; what next?"))
    inv = start(teams)
    approval = teams.pending_approval(inv.session_id)
    later = utc_now() + timedelta(minutes=31)
    runtime = teams.services.runtime
    runtime.shell_for(inv.session_id).clock = lambda: later
    jobs = PeriodicJobs(store=teams.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner="replica-1",
                        audit_dir=Path("/nonexistent"), clock=lambda: later)
    expire = jobs.specs()[0]
    assert jobs.guarded(expire) == 1
    assert "Expired" in str(card_of(teams, approval)["body"])
    late = teams.click(cards.APPROVE, {"approval_id": approval.approval_id}, APPROVER)
    assert "expired" in str(late["body"][0])
    teams.worker.run_until_idle()
    response = fake_gemini.requests[1].function_responses()[0]["response"]
    assert response["status"] == "denied" and response["error"] == "approval_expired"


def test_restart_between_card_and_click(store: Any, fake_gemini: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.teams.loop import LoopThread
    from storage.store import Store

    first_loop = LoopThread("first-process")
    first = make_harness(store, tmp_path / "data", monkeypatch, first_loop)
    risky(fake_gemini, complete())
    inv = start(first)
    approval = first.pending_approval(inv.session_id)
    first_loop.stop()
    del first                                      # the process is gone with its memory

    fresh = Store.from_url(str(store.db.url))
    second_loop = LoopThread("second-process")
    try:
        second = make_harness(fresh, tmp_path / "data", monkeypatch, second_loop)
        shown = second.click(cards.APPROVE, {"approval_id": approval.approval_id}, APPROVER)
        assert "Approved" in str(shown["body"])
        # the new process updated the card for everyone from the stored reference
        (update,) = [u for u in second.adapter.updated_activities
                     if u.id == approval.message_ref["activity_id"]]
        assert update.conversation.id.endswith(";messageid=1700000000001")
        second.worker.run_until_idle()
        assert fresh.get_investigation(inv.session_id).status == "completed"
        assert any("RCA for" in str(a.attachments[0].content) for a in second.sent()
                   if a.attachments)
    finally:
        second_loop.stop()
        fresh.db.dispose()
