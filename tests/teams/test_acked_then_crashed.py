"""Nothing acknowledged is lost in Teams either (issue 34): for every kind of request that changes
something, the process dies right after it recorded the request (with its activity id), before
it acted (``tests/chat_crash.py``). Then, as after a real crash, either the connector redelivers
the request (same activity id: nothing recorded twice, the record applied once) or nobody does
and the ``reconcile`` job applies it. Either way the effect happens exactly once.

botbuilder's TestAdapter drives the real bot; the "restart" is a second set of services on the
same database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botbuilder.schema import Activity

from bot.teams import cards
from core.session_state import utc_now
from storage.store import Store
from tests.chat_crash import DiesAfterRecord, Killed
from tests.fakes.gemini_server import call, function_call_turn, text_turn
from tests.teams.conftest import APPROVER, REQUESTER, TeamsHarness, make_harness


def shell(command: str) -> Any:
    return call("run_shell_cmd", {"command": command, "reasoning": "diagnose"})


def complete() -> Any:
    return function_call_turn(call("complete_investigation", {
        "confidence": "high", "root_cause_summary": "NSG rule deny-6379 blocks Redis.",
        "recommended_actions": ["Remove deny-6379"]}))


class Rig:
    def __init__(self, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 loop: Any) -> None:
        self.store = store
        self.dying_store = DiesAfterRecord(store.db, clock=store.clock)
        self.live = make_harness(store, tmp_path / "data", monkeypatch, loop)
        self.dying = make_harness(self.dying_store, tmp_path / "data", monkeypatch, loop)

    def crash_on(self, request: Callable[[TeamsHarness], Any]) -> None:
        self.dying_store.armed = True
        try:
            request(self.dying)
        except (Killed, AssertionError):  # no answer went back: the process was gone
            pass
        assert self.dying_store.deaths == 1, "the request was not recorded first"

    def reconcile(self) -> None:
        later = utc_now() + timedelta(seconds=60)
        self.live.services.runtime.reconcile_chat(later)
        self.live.worker.run_until_idle()
        assert self.live.services.runtime.reconcile_chat(later) == 0  # nothing twice

    def redeliver(self, activity: Activity, user: str, root: str) -> None:
        """The connector sends the same request (same activity id) to the live process."""
        self.live._deliver(activity, user, root)
        self.live.worker.run_until_idle()


@pytest.fixture
def rig(store: Store, fake_gemini: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        loop: Any) -> Rig:
    return Rig(store, tmp_path, monkeypatch, loop)


ROOT = "1700000000001"


def _mention(text: str, activity_id: str) -> Activity:
    return Activity(type="message", id=activity_id, text=f"<at>Ghost</at> {text}")


def _click(verb: str, data: dict[str, Any], activity_id: str) -> Activity:
    return Activity(type="invoke", id=activity_id, name="adaptiveCard/action", value={
        "action": {"type": "Action.Execute", "verb": verb, "data": data},
        "trigger": "manual"})


def test_investigate_redelivered_after_a_crash_starts_one_investigation(
        rig: Rig, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    request = _mention("investigate web-01 cannot reach redis on 6379", ROOT)
    rig.crash_on(lambda t: t._deliver(request, REQUESTER, ROOT))
    (inv,) = rig.store.list_investigations()  # recorded whole, queued
    assert inv.status == "queued" and (inv.conversation_ref or {})["root"]["state"] == \
        "pending"
    rig.redeliver(_mention("investigate web-01 cannot reach redis on 6379", ROOT),
                  REQUESTER, ROOT)
    (inv,) = rig.store.list_investigations()  # the redelivery created nothing
    assert inv.status == "awaiting_user"
    assert (inv.conversation_ref or {})["root"]["state"] == "posted"  # its status card
    assert len(fake_gemini.requests) == 1


def _card(rig: Rig, fake_gemini: Any) -> tuple[Any, Any]:
    fake_gemini.enqueue(function_call_turn(shell("echo approved-run")), complete())
    rig.live.mention("investigate web-01 cannot reach redis on 6379", root=ROOT)
    rig.live.worker.run_until_idle()
    inv = rig.live.only_investigation()
    return inv, rig.live.pending_approval(inv.session_id)


def test_approve_applied_by_reconcile(rig: Rig, fake_gemini: Any) -> None:
    inv, approval = _card(rig, fake_gemini)
    rig.crash_on(lambda t: t._deliver(_click(cards.APPROVE, {
        "approval_id": approval.approval_id}, "invoke-1"), APPROVER, ROOT))
    assert rig.store.get_approval(approval.approval_id).status == "pending"
    rig.reconcile()
    assert rig.store.get_approval(approval.approval_id).decided_by == APPROVER
    started = [r for r in rig.store.audit_records(inv.session_id)
               if r["kind"] == "command_started"]
    assert len(started) == 1
    assert rig.store.get_investigation(inv.session_id).status == "completed"


def test_approve_redelivered(rig: Rig, fake_gemini: Any) -> None:
    inv, approval = _card(rig, fake_gemini)
    click = {"approval_id": approval.approval_id}
    rig.crash_on(lambda t: t._deliver(_click(cards.APPROVE, click, "invoke-2"), APPROVER,
                                      ROOT))
    rig.redeliver(_click(cards.APPROVE, click, "invoke-2"), APPROVER, ROOT)
    assert rig.store.get_approval(approval.approval_id).decided_by == APPROVER
    rig.reconcile()  # nothing left for it
    assert len([r for r in rig.store.audit_records(inv.session_id)
                if r["kind"] == "command_started"]) == 1


def _prompt(rig: Rig, fake_gemini: Any) -> tuple[Any, dict[str, Any]]:
    fake_gemini.enqueue(text_turn("Should I look at DNS?"))
    rig.live.mention("investigate web-01 cannot reach redis on 6379", root=ROOT)
    rig.live.worker.run_until_idle()
    inv = rig.live.only_investigation()
    prompt_id = inv.conversation_ref["teams_prompt_id"]
    content = rig.live.current(prompt_id).attachments[0].content
    done = next(a for a in content["actions"] if a.get("verb") == cards.DONE)
    return inv, dict(done["data"])


def test_done(rig: Rig, fake_gemini: Any) -> None:
    inv, data = _prompt(rig, fake_gemini)
    rig.crash_on(lambda t: t._deliver(_click(cards.DONE, data, "invoke-3"), REQUESTER, ROOT))
    rig.reconcile()
    done = rig.store.get_investigation(inv.session_id)
    assert done.status == "completed" and done.rca_markdown


def test_continue_with_an_instruction(rig: Rig, fake_gemini: Any) -> None:
    inv, data = _prompt(rig, fake_gemini)
    fake_gemini.enqueue(text_turn("DNS is fine."))
    rig.crash_on(lambda t: t._deliver(_click(cards.CONTINUE, {
        **data, "instruction": "yes, DNS"}, "invoke-4"), REQUESTER, ROOT))
    rig.reconcile()
    said = [t for t in rig.store.turns(inv.session_id)
            if t["role"] == "user" and "yes, DNS" in str(t["content"])]
    assert len(said) == 1 and len(fake_gemini.requests) == 2


def test_a_mention_in_the_thread(rig: Rig, fake_gemini: Any) -> None:
    inv, _ = _prompt(rig, fake_gemini)
    fake_gemini.enqueue(text_turn("Checked cache-rg."))
    rig.crash_on(lambda t: t._deliver(_mention("it is cache-rg", "reply-1"), REQUESTER, ROOT))
    rig.redeliver(_mention("it is cache-rg", "reply-1"), REQUESTER, ROOT)
    rig.reconcile()
    said = [t for t in rig.store.turns(inv.session_id)
            if t["role"] == "user" and "cache-rg" in str(t["content"])]
    assert len(said) == 1 and len(fake_gemini.requests) == 2


def test_resume_a_parked_investigation(rig: Rig, fake_gemini: Any) -> None:
    from core.engine.loop import OutagePolicy
    from tests.fakes.gemini_server import error_response

    rig.live.services.runtime.engine.outage = OutagePolicy(limit_s=0)
    fake_gemini.enqueue(error_response(503, "overloaded"))
    rig.live.mention("investigate web-01 cannot reach redis on 6379", root=ROOT)
    rig.live.worker.run_until_idle()
    inv = rig.live.only_investigation()
    assert inv.status == "parked"
    key = f"parked:{inv.engine_state['outage']['since']}"
    fake_gemini.enqueue(text_turn("Back. Which subnet?"))
    rig.crash_on(lambda t: t._deliver(_click(cards.RESUME, {
        "session_id": inv.session_id, "kind": "parked", "key": key}, "invoke-5"),
        APPROVER, ROOT))
    rig.reconcile()
    assert rig.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert len(fake_gemini.requests) == 2


def test_cancel(rig: Rig, fake_gemini: Any) -> None:
    inv, approval = _card(rig, fake_gemini)
    rig.crash_on(lambda t: t._deliver(_mention(f"cancel {inv.session_id}", "reply-2"),
                                      REQUESTER, ROOT))
    rig.reconcile()
    assert rig.store.get_investigation(inv.session_id).status == "cancelled"
    assert rig.store.get_approval(approval.approval_id).status != "pending"
