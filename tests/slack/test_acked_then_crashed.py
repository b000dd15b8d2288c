"""Nothing acknowledged is lost (issue 34): for every kind of Slack request that changes
something, the process dies right after the ack, before it acted (``tests/chat_crash.py``);
after the restart the ``reconcile`` job applies what was recorded, exactly once — a second
reconcile, and the same click again, change nothing more.

The real bolt app with signed requests, the mock Slack Web API, the fake Gemini, the real store,
gate and worker; the "restart" is a second set of services on the same database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.slack import blocks
from core.session_state import utc_now
from storage.store import Store
from tests.chat_crash import DiesAfterRecord
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
from tests.slack.test_orphans import _stale


class Rig:
    """The live process (``live``) and the one that dies after its next ack (``dying``)."""

    def __init__(self, store: Store, fake: Any, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = store
        self.dying_store = DiesAfterRecord(store.db, clock=store.clock)
        self.live = make_harness(store, fake, tmp_path / "data", monkeypatch)
        self.dying = make_harness(self.dying_store, fake, tmp_path / "data", monkeypatch)

    def crash_on(self, request: Callable[[SlackHarness], Any]) -> None:
        """Send ``request`` to the process that dies right after acking it."""
        self.dying_store.armed = True
        response = request(self.dying)
        assert response.status == 200  # Slack got its ack
        assert self.dying_store.deaths == 1, "the request was not recorded before the ack"

    def restart(self) -> int:
        """What the next process does: the reconcile job, then the worker, then again."""
        later = utc_now() + timedelta(seconds=60)
        applied = self.live.services.runtime.reconcile_chat(later)
        self.live.worker.run_until_idle()
        assert self.live.services.runtime.reconcile_chat(later) == 0  # nothing twice
        return applied



@pytest.fixture
def rig(store: Store, fake_slack: Any, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig(store, fake_slack, tmp_path, monkeypatch)


def _card_waiting(rig: Rig, fake_gemini: Any) -> tuple[Any, Any]:
    fake_gemini.enqueue(function_call_turn(shell("echo approved-run")), complete())
    inv = start(rig.live)
    assert inv.status == "awaiting_approval"
    return inv, rig.live.pending_approval(inv.session_id)


def test_approve(rig: Rig, fake_gemini: Any) -> None:
    inv, approval = _card_waiting(rig, fake_gemini)
    rig.crash_on(lambda s: s.click(blocks.APPROVE, approval.approval_id, APPROVER))
    assert rig.store.get_approval(approval.approval_id).status == "pending"  # not yet
    assert rig.restart() >= 1
    assert rig.store.get_approval(approval.approval_id).decided_by == APPROVER
    started = [r for r in rig.store.audit_records(inv.session_id)
               if r["kind"] == "command_started"]
    assert len(started) == 1  # the approved command ran once
    assert rig.store.get_investigation(inv.session_id).status == "completed"


def test_deny_with_a_reason(rig: Rig, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo approved-run")), complete())
    inv = start(rig.live)
    approval = rig.live.pending_approval(inv.session_id)
    rig.crash_on(lambda s: s.submit(blocks.DENY_VIEW, approval.approval_id, APPROVER,
                                    {"reason": "wrong host"}))
    rig.restart()
    denied = rig.store.get_approval(approval.approval_id)
    assert denied.decided_by == APPROVER and denied.denial_reason == "wrong host"
    denials = [r for r in rig.store.audit_records(inv.session_id)
               if r["kind"] == "approval" and r.get("status") == "denied"]
    assert len(denials) == 1  # decided once
    assert not any(r["kind"] == "command_started"
                   for r in rig.store.audit_records(inv.session_id))


def test_modify(rig: Rig, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo approved-run")), complete())
    inv = start(rig.live)
    approval = rig.live.pending_approval(inv.session_id)
    rig.crash_on(lambda s: s.submit(blocks.MODIFY_VIEW, approval.approval_id, APPROVER,
                                    {"command": "echo edited-run"}))
    rig.restart()
    successors = [a for a in rig.store.approvals(inv.session_id)
                  if a.replaces_approval_id == approval.approval_id]
    assert len(successors) == 1 and successors[0].command == "echo edited-run"


def _prompted(rig: Rig, fake_gemini: Any) -> Any:
    fake_gemini.enqueue(text_turn("Should I look at DNS?"))
    inv = start(rig.live)
    assert inv.status == "awaiting_user"
    return inv


def test_continue_with_an_instruction(rig: Rig, fake_gemini: Any) -> None:
    inv = _prompted(rig, fake_gemini)
    value = rig.live.prompt_value(inv)
    fake_gemini.enqueue(text_turn("DNS looks fine."))
    rig.crash_on(lambda s: s.submit(blocks.CONTINUE_VIEW, value, REQUESTER,
                                    {"instruction": "yes, DNS"}))
    rig.restart()
    said = [t for t in rig.store.turns(inv.session_id) if t["role"] == "user" and
            "yes, DNS" in str(t["content"])]
    assert len(said) == 1  # the instruction reached Ghost once
    assert len(fake_gemini.requests) == 2
    # the same submission again is told the prompt was answered; nothing is sent
    rig.live.submit(blocks.CONTINUE_VIEW, value, REQUESTER, {"instruction": "again"})
    assert "already answered" in rig.live.fake.ephemerals(REQUESTER)[-1]
    assert len(fake_gemini.requests) == 2


def test_done(rig: Rig, fake_gemini: Any) -> None:
    inv = _prompted(rig, fake_gemini)
    value = rig.live.prompt_value(inv)
    rig.crash_on(lambda s: s.click(blocks.DONE, value, REQUESTER))
    rig.restart()
    done = rig.store.get_investigation(inv.session_id)
    assert done.status == "completed" and done.rca_markdown
    assert len(rig.live.fake.called("files.completeUploadExternal")) == 1  # one RCA


def _at_the_turn_limit(rig: Rig, fake_gemini: Any) -> Any:
    fake_gemini.enqueue(function_call_turn(shell("ss -tln")))
    rig.live.slash("investigate web-01 cannot reach redis on 6379")
    inv = rig.live.only_investigation()
    engine = dict(inv.engine_state or {})
    engine["max_turns"] = 1  # one model turn, then Extend / Generate RCA
    rig.store.save_state(inv.session_id, inv.state, engine_state=engine)
    rig.live.worker.run_until_idle()
    inv = rig.store.get_investigation(inv.session_id)
    assert (inv.engine_state or {}).get("phase") == "turn_limit"
    return inv


def test_extend(rig: Rig, fake_gemini: Any) -> None:
    inv = _at_the_turn_limit(rig, fake_gemini)
    value = rig.live.prompt_value(inv)
    fake_gemini.enqueue(text_turn("Ten more turns."))
    rig.crash_on(lambda s: s.click(blocks.EXTEND, value, REQUESTER))
    rig.restart()
    after = rig.store.get_investigation(inv.session_id)
    assert (after.engine_state or {})["max_turns"] == 11  # extended once, by 10
    assert after.status == "awaiting_user"


def test_generate_rca(rig: Rig, fake_gemini: Any) -> None:
    inv = _at_the_turn_limit(rig, fake_gemini)
    value = rig.live.prompt_value(inv)
    rig.crash_on(lambda s: s.click(blocks.RCA, value, REQUESTER))
    rig.restart()
    assert rig.store.get_investigation(inv.session_id).status == "completed"
    assert len(rig.live.fake.called("files.completeUploadExternal")) == 1


def test_resume_a_parked_investigation(rig: Rig, fake_gemini: Any) -> None:
    from core.engine.loop import OutagePolicy
    from tests.fakes.gemini_server import error_response

    rig.live.services.runtime.engine.outage = OutagePolicy(limit_s=0)
    fake_gemini.enqueue(error_response(503, "overloaded"))
    inv = start(rig.live)
    assert rig.store.get_investigation(inv.session_id).status == "parked"
    value = rig.live.prompt_value(inv)
    fake_gemini.enqueue(text_turn("Back. Which subnet?"))
    rig.crash_on(lambda s: s.click(blocks.RESUME, value, OTHER_MEMBER))
    rig.restart()
    assert rig.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert len(fake_gemini.requests) == 2  # resumed once


def test_orphan_cleanup(rig: Rig, fake_gemini: Any) -> None:
    (path,) = _stale(rig.live, "ghost_old_web01.pcap")
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(rig.live)
    rig.crash_on(lambda s: s.click(blocks.ORPHANS_CLEAN, inv.session_id, OTHER_MEMBER))
    rig.restart()
    orphans = (rig.store.get_investigation(inv.session_id).conversation_ref or {})["orphans"]
    assert orphans["state"] == "clean" and orphans["actor"] == OTHER_MEMBER
    [deletion] = rig.store.approvals(inv.session_id, statuses=("pending",))  # one card
    assert deletion.command.startswith("rm ") and path.exists()


def test_a_mention_in_the_thread(rig: Rig, fake_gemini: Any) -> None:
    inv = _prompted(rig, fake_gemini)
    fake_gemini.enqueue(text_turn("Checked cache-rg."))
    event = {"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
             "text": "<@UGHOST> it is cache-rg", "ts": "1700000000.000200",
             "thread_ts": str(inv.thread_ref)}
    rig.crash_on(lambda s: s.event(event, "Ev-crash-1"))
    rig.restart()
    said = [t for t in rig.store.turns(inv.session_id)
            if t["role"] == "user" and "cache-rg" in str(t["content"])]
    assert len(said) == 1
    # Slack's retry of the same event is dropped: the record exists
    rig.live.event(event, "Ev-crash-1", retry=1)
    rig.live.worker.run_until_idle()
    assert len([t for t in rig.store.turns(inv.session_id)
                if t["role"] == "user" and "cache-rg" in str(t["content"])]) == 1


def test_cancel(rig: Rig, fake_gemini: Any) -> None:
    inv, approval = _card_waiting(rig, fake_gemini)
    rig.crash_on(lambda s: s.slash(f"cancel {inv.session_id}"))
    rig.restart()
    assert rig.store.get_investigation(inv.session_id).status == "cancelled"
    assert rig.store.get_approval(approval.approval_id).status != "pending"


def test_a_click_the_database_cannot_record_is_acked_and_the_clicker_told(
        rig: Rig, fake_gemini: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing recorded, nothing decided: Slack still gets its 200 (not "didn't respond"),
    and the clicker learns that clicking again is right."""
    from storage.db import DatabaseUnreachable

    inv, approval = _card_waiting(rig, fake_gemini)

    def down(*_a: Any, **_k: Any) -> Any:
        raise DatabaseUnreachable("the database did not answer", "check it")

    monkeypatch.setattr(rig.dying_store, "change_conversation_ref", down)
    response = rig.dying.click(blocks.APPROVE, approval.approval_id, APPROVER)
    assert response.status == 200
    assert "was not recorded and nothing was decided" in \
        rig.dying.fake.ephemerals(APPROVER)[-1]
    assert rig.store.get_approval(approval.approval_id).status == "pending"
