"""Issue 7's durability gaps: a cancel that races a worker's step wins, the RCA is uploaded at
most once by itself (with a visible retry path), and an @ghost mention while Ghost is busy is
queued in the database as the next instruction. Run on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bot.slack import blocks
from core.session_state import utc_now
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.conftest import APPROVER, CHANNEL, REQUESTER, SlackHarness
from tests.slack.test_investigation_flow import complete, shell, start, texts


def _sid(slack: SlackHarness) -> str:
    return str(slack.only_investigation().session_id)


# ------------------------------------------------------------------ cancel race
def test_save_state_never_moves_a_cancelled_investigation_back(store: Any) -> None:
    inv = store.create_investigation(symptom="x", model="m", audit_dir="a", status="running")
    store.set_status(inv.session_id, "cancelled")
    saved = store.save_state(inv.session_id, inv.state, status="running",
                             engine_state={"phase": "call_model"})
    assert saved.status == "cancelled" and saved.engine_state == {"phase": "call_model"}
    store.set_status(inv.session_id, "queued")            # /ghost resume is explicit
    assert store.save_state(inv.session_id, inv.state, status="running").status == "running"


@pytest.mark.parametrize("reply", ["text", "call"])
def test_cancel_while_a_worker_is_mid_step_wins(slack: SlackHarness, fake_gemini: Any,
                                                monkeypatch: pytest.MonkeyPatch,
                                                reply: str) -> None:
    turn = text_turn("Which subnet is Redis in?") if reply == "text" else \
        function_call_turn(shell("ss -tln"), text="Checking listeners.")
    fake_gemini.enqueue(turn)
    slack.slash("investigate web-01 cannot reach redis")
    sid = _sid(slack)
    notifier = slack.services.runtime.notifier
    original = notifier.model_text

    def cancel_mid_step(session_id: str, text: str) -> None:
        # Gemini answered; before the engine saves, the engineer cancels
        slack.slash(f"cancel {session_id}", user=REQUESTER)
        original(session_id, text)

    monkeypatch.setattr(notifier, "model_text", cancel_mid_step)
    assert slack.worker.run_until_idle() == 1
    inv = slack.store.get_investigation(sid)
    assert inv.status == "cancelled" and inv.lease_owner is None
    assert not [r for r in slack.store.audit_records(sid) if r["kind"] == "command"]
    thread = texts(slack.fake.thread(CHANNEL, str(inv.thread_ref)))
    assert blocks.CONTINUE not in thread and "⚠️" not in thread   # no prompt, no failure
    assert "Cancelled" in str(slack.fake.message(CHANNEL, str(inv.thread_ref))["blocks"])
    assert slack.worker.run_until_idle() == 0             # nothing runnable any more
    fake_gemini.assert_drained()


# ------------------------------------------------------------------ the RCA, once
class Crash(BaseException):
    """The process dies (not an error any handler catches)."""


def test_rca_upload_is_not_repeated_after_a_crash_and_can_be_retried(
        slack: SlackHarness, fake_gemini: Any, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Any) -> None:
    from bot.scheduler import PeriodicJobs

    fake_gemini.enqueue(complete())
    port = slack.services.port
    upload = port.post_rca

    def upload_then_die(*args: Any, **kwargs: Any) -> Any:
        upload(*args, **kwargs)
        raise Crash

    monkeypatch.setattr(port, "post_rca", upload_then_die)
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    monkeypatch.setattr(port, "post_rca", upload)
    sid = _sid(slack)
    inv = slack.store.get_investigation(sid)
    assert inv.status == "completed" and inv.conversation_ref["rca_upload"]["state"] == \
        "uploading"
    uploads = lambda: len(slack.fake.called("files.completeUploadExternal"))  # noqa: E731
    assert uploads() == 1

    runtime = slack.services.runtime
    clock = [utc_now()]
    jobs = PeriodicJobs(store=slack.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner="r1", audit_dir=tmp_path,
                        clock=lambda: clock[0], reconcile_chat=runtime.reconcile_rca)
    runtime.post_rca_once(sid)               # a second worker / a retry: claimed already
    assert jobs.reconcile() == 0 and uploads() == 1
    clock[0] += timedelta(minutes=11)        # never confirmed: said so in the thread, once
    assert jobs.reconcile() == 1 and jobs.reconcile() == 0
    assert uploads() == 1
    notice = slack.fake.thread(CHANNEL, str(inv.thread_ref))[-1]
    assert f"/ghost resume {sid}" in texts([notice]) and "interrupted" in texts([notice])

    slack.slash(f"resume {sid}", user=APPROVER)        # the visible retry path
    assert uploads() == 2
    done = slack.store.get_investigation(sid).conversation_ref
    assert done["rca_posted"] is True and done["rca_upload"]["file_id"]
    slack.slash(f"resume {sid}", user=APPROVER)        # confirmed now: no third upload
    assert uploads() == 2
    answers = [str(c.args.get("text")) for c in slack.fake.called("response_url")]
    assert "Uploaded the RCA" in answers[-2] and "its RCA is in the thread" in answers[-1]


def test_an_rca_nobody_started_uploading_is_uploaded_by_reconcile(
        slack: SlackHarness, fake_gemini: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gemini.enqueue(complete())
    runtime = slack.services.runtime
    monkeypatch.setattr(slack.worker, "after", lambda *_a: (_ for _ in ()).throw(Crash()))
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    assert not slack.fake.called("files.completeUploadExternal")
    assert runtime.reconcile_rca(utc_now()) == 1 and runtime.reconcile_rca(utc_now()) == 0
    assert len(slack.fake.called("files.completeUploadExternal")) == 1


# ------------------------------------------------------------------ @ghost while busy
def test_a_mention_while_ghost_is_busy_is_queued_and_sent_next(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo risky")), text_turn("Done with that."),
                        text_turn("Looking at cache-rg."))
    inv = start(slack)
    assert inv.status == "awaiting_approval"
    event = {"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
             "text": "<@UGHOST> also check cache-rg", "ts": "1700000010.000001",
             "thread_ts": inv.thread_ref}
    assert slack.event(event, "EvBusy").status == 200
    assert "queued" in slack.fake.ephemerals(REQUESTER)[-1]
    stored = slack.store.get_investigation(inv.session_id).conversation_ref
    assert stored["queued_instructions"] == [{"user": REQUESTER, "text": "also check cache-rg"}]

    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.worker.run_until_idle()
    # the queued instruction went to Gemini as the next user turn, with no Continue prompt
    assert fake_gemini.requests[2].contents[-1]["parts"][0]["text"] == "also check cache-rg"
    after = slack.store.get_investigation(inv.session_id)
    assert not after.conversation_ref.get("queued_instructions")
    assert after.status == "awaiting_user"
    assert "instruction(s) left in this thread" in texts(
        slack.fake.thread(CHANNEL, str(inv.thread_ref)))
    fake_gemini.assert_drained()
