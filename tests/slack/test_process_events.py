"""An ``@ghost`` in a thread: its dedup key and its inbox entry are one transaction (issue 23).

Before, the key was committed first and the entry second: a process that died between them
left a key without an entry, so Slack's retry was dropped as a copy and the instruction was
lost. Here the process "dies" (an exception no handler catches) as the entry is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import CHANNEL, REQUESTER, SlackHarness


class Crash(BaseException):
    """The process dies here (not an error any handler catches)."""


@pytest.fixture
def crash_on_inbox_write(slack: SlackHarness) -> Iterator[dict[str, bool]]:
    """Armed: the next UPDATE of an investigation row kills the "process" before it runs."""
    armed = {"on": False}

    def before(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
        if armed["on"] and statement.lstrip().upper().startswith("UPDATE INVESTIGATIONS"):
            armed["on"] = False
            raise Crash

    engine = slack.store.db.engine
    event.listen(engine, "before_cursor_execute", before)
    yield armed
    event.remove(engine, "before_cursor_execute", before)


def _inbox(slack: SlackHarness, sid: str) -> dict[str, Any]:
    return dict((slack.store.get_investigation(sid).conversation_ref or {}).get("inbox") or {})


def test_a_crash_while_recording_a_mention_loses_nothing_and_acts_once(
        slack: SlackHarness, fake_gemini: Any, crash_on_inbox_write: dict[str, bool]) -> None:
    fake_gemini.enqueue(text_turn("Which resource group holds Redis?"),
                        text_turn("Thanks. Anything else?"))
    slack.slash("investigate web-01 cannot reach redis")
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    assert inv.status == "awaiting_user"
    mention = {"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
               "text": "<@UGHOST> it is cache-rg", "ts": "1700000009.000001",
               "thread_ts": inv.thread_ref}

    crash_on_inbox_write["on"] = True
    with pytest.raises(Crash):  # dies before its ack: Slack retries
        slack.event(mention, "EvCrash")
    assert _inbox(slack, inv.session_id) == {}
    assert slack.event(mention, "EvCrash", retry=1).status == 200  # recorded and acted on
    slack.worker.run_until_idle()
    assert slack.event(mention, "EvCrash", retry=2).status == 200  # a late copy: dropped
    slack.worker.run_until_idle()
    assert _inbox(slack, inv.session_id) == {}
    sent = [r.contents[-1]["parts"][0].get("text") for r in fake_gemini.requests]
    assert sent.count("it is cache-rg") == 1
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"


def test_a_copy_of_an_answered_mention_never_refills_the_inbox(store: Any) -> None:
    """The store's half: only the first ``remember_event`` of a key adds the entry."""
    inv = store.create_investigation(symptom="x", model="m", audit_dir="/tmp",
                                     platform="slack")
    entry = (inv.session_id, "Ev1", {"user": "U1", "thread": "1.0", "text": "hi"})
    assert store.remember_event("slack:Ev1", inbox=entry)
    store.change_conversation_ref(inv.session_id, lambda ref: ref["inbox"].pop("Ev1"))
    assert not store.remember_event("slack:Ev1", inbox=entry)
    assert store.get_investigation(inv.session_id).conversation_ref["inbox"] == {}
    assert store.remember_event("slack:Ev2", inbox=("no-such-investigation", "Ev2", {}))


def test_an_approve_acked_then_cut_short_is_decided_once_by_the_reconcile_job(
        slack: SlackHarness, fake_gemini: Any) -> None:
    """The click's record is in the database before the ack; the process dies as it records
    the decision; the periodic catch-up decides it, once, and the command runs once."""
    from datetime import timedelta

    from bot.slack import blocks
    from core.session_state import utc_now
    from tests.fakes.gemini_server import function_call_turn
    from tests.slack.conftest import APPROVER
    from tests.slack.test_investigation_flow import complete, shell, start

    fake_gemini.enqueue(function_call_turn(shell("echo risky")), complete("Found it."))
    inv = start(slack)
    approval = slack.pending_approval(inv.session_id)
    armed = {"on": True}

    def die_deciding(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
        if armed["on"] and statement.lstrip().upper().startswith("UPDATE APPROVALS"):
            armed["on"] = False
            raise Crash

    engine = slack.store.db.engine
    event.listen(engine, "before_cursor_execute", die_deciding)
    try:  # acked, then the listener (run after the ack) died mid-decision
        assert slack.click(blocks.APPROVE, approval.approval_id, APPROVER).status == 200
    finally:
        event.remove(engine, "before_cursor_execute", die_deciding)
    assert not armed["on"], "the decision was never attempted"
    assert slack.store.get_approval(approval.approval_id).status == "pending"
    runtime = slack.services.runtime
    assert runtime.reconcile_chat(utc_now() + timedelta(minutes=1)) >= 1
    assert slack.store.get_approval(approval.approval_id).status == "approved"
    assert runtime.reconcile_chat(utc_now() + timedelta(minutes=1)) == 0
    slack.worker.run_until_idle()
    started = [r for r in slack.store.audit_records(inv.session_id)
               if r.get("kind") == "command_started"]
    assert len(started) == 1
    assert _inbox(slack, inv.session_id) == {}
