"""Issue 23's thread-delivery failures, each reproduced with one kill or one error: a card never
posted after its process died, a 500 while posting that failed the investigation, RCA uploads
lost after a 500 or a kill. The real bolt app and WebClient against the mock Slack Web API
(answering 500 on demand, and ``files.info``). Run on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.slack import blocks
from core.session_state import utc_now
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    REQUESTER,
    SlackHarness,
    make_harness,
)
from tests.slack.test_investigation_flow import complete, shell, start, texts


class FlakySlack(FakeSlack):
    """The mock Slack, able to answer HTTP 500 (``down``: methods failing until healed;
    ``replies_down``: chat.postMessage into a thread only) and ``files.info``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.down: set[str] = set()
        self.replies_down = False

    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        reply = method == "chat.postMessage" and args.get("thread_ts")
        if method in self.down or (reply and self.replies_down):
            self._record_failure(method, args)
            return 500, {"ok": False, "error": "internal_error"}
        if method == "files.info":
            self._record_failure(method, args)
            file = self.files.get(str(args.get("file")))
            if file is None:
                return 200, {"ok": False, "error": "file_not_found"}
            shares = {"public": {file["channel"]: [{"ts": "1", "thread_ts": file.get(
                "thread_ts")}]}} if file.get("channel") else {}
            return 200, {"ok": True, "file": {"id": args.get("file"), "shares": shares}}
        return super()._answer(method, args)

    def _record_failure(self, method: str, args: dict[str, Any]) -> None:
        from tests.fakes.slack_api import Call

        self._record(Call(method, args))

    def shared(self) -> list[str]:
        """Files shared into a channel (completeUploadExternal succeeded), by id."""
        return [fid for fid, f in self.files.items() if f.get("channel")]


class Crash(BaseException):
    """The process dies here (kill -9): nothing after it runs, no handler catches it."""


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Iterator[FlakySlack]:
    fake = FlakySlack(members={CHANNEL: [REQUESTER, APPROVER, OTHER_MEMBER]}).start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield fake
    fake.stop()


@pytest.fixture
def slack(store: Any, flaky: FlakySlack, fake_gemini: Any, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> SlackHarness:
    return make_harness(store, flaky, tmp_path / "data", monkeypatch)


def jobs_of(slack: SlackHarness, tmp_path: Path) -> Any:
    """The periodic jobs as ``ghost serve`` runs them (lease-guarded bodies)."""
    from bot.scheduler import PeriodicJobs

    runtime = slack.services.runtime
    return PeriodicJobs(store=slack.store, shell_for=runtime.shell_for,
                        close_card=runtime.close_card, owner="replica-2", audit_dir=tmp_path,
                        clock=utc_now, reconcile_chat=runtime.reconcile_chat,
                        deliver_chat=runtime.deliver_due)


def later(slack: SlackHarness, minutes: float) -> None:
    """Move the outbox's clock on (its backoff) without sleeping."""
    at = utc_now() + timedelta(minutes=minutes)
    slack.services.runtime.outbox.clock = lambda: at


def cards_in(fake: FakeSlack, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in fake.thread(CHANNEL, thread_ts)
            if str(m.get("text", "")).startswith("Approval needed")]


def card_posts(fake: FakeSlack) -> list[Any]:
    return [c for c in fake.called("chat.postMessage")
            if str(c.args.get("text", "")).startswith("Approval needed")]


# ------------------------------------------------------------------ 1. the card never posted
def test_a_card_whose_process_died_before_posting_it_is_posted_by_reconcile(
        slack: SlackHarness, fake_gemini: Any, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo risky")), text_turn("Ran it."))
    notifier = slack.services.runtime.notifier
    monkeypatch.setattr(notifier, "approval_pending", lambda *_a: (_ for _ in ()).throw(Crash()))
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):  # killed after the approval was saved, before its card
        slack.worker.run_until_idle()
    monkeypatch.undo()
    inv = slack.only_investigation()
    approval = slack.pending_approval(inv.session_id)
    assert inv.status == "awaiting_approval" and not approval.message_ref
    assert cards_in(slack.fake, str(inv.thread_ref)) == []
    slack.store.release_lease(inv.session_id, "test-worker")

    jobs = jobs_of(slack, tmp_path)
    assert jobs.reconcile() >= 1                            # the periodic job posts it
    assert jobs.reconcile() == 0                            # ...once
    (card,) = cards_in(slack.fake, str(inv.thread_ref))
    assert slack.store.get_approval(approval.approval_id).message_ref["ts"] == card["ts"]
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert len(card_posts(slack.fake)) == 1
    fake_gemini.assert_drained()


# ------------------------------------------------------------------ 2. a 500 while posting
def test_a_500_while_posting_the_card_leaves_it_owed_not_the_investigation_failed(
        slack: SlackHarness, flaky: FlakySlack, fake_gemini: Any, tmp_path: Path) -> None:
    fake_gemini.enqueue(function_call_turn(shell("ss -tln"), text="Checking listeners."),
                        function_call_turn(shell("echo risky")), text_turn("Ran it."))
    flaky.replies_down = True                               # the root goes out, replies fail
    inv = start(slack)
    assert inv.status == "awaiting_approval"                # not failed
    assert slack.fake.thread(CHANNEL, str(inv.thread_ref)) == []
    owed = slack.services.runtime.outbox.waiting(inv.session_id)
    assert [o["kind"] for o in owed][-3:] == ["text", "command", "card"], owed
    assert "internal_error" in owed[0]["error"]

    jobs = jobs_of(slack, tmp_path)
    (deliver,) = [spec for spec in jobs.specs() if spec.name == "deliver"]
    assert deliver.every_s <= 5
    jobs.guarded(deliver)                                   # still down, not yet due: waits
    assert slack.fake.thread(CHANNEL, str(inv.thread_ref)) == []
    flaky.replies_down = False
    later(slack, 5)
    assert jobs.guarded(deliver) == len(owed)               # delivered, in order, once
    runtime = slack.services.runtime
    thread = slack.fake.thread(CHANNEL, str(inv.thread_ref))[-3:]
    assert "Checking listeners." in texts(thread[:1]) and "ss -tln" in texts(thread[1:2])
    assert len(cards_in(slack.fake, str(inv.thread_ref))) == 1
    assert not [m for m in thread if str(m.get("text", "")).startswith("⚠️")]  # no failure
    assert runtime.reconcile_chat(utc_now()) == 0
    assert len(slack.fake.thread(CHANNEL, str(inv.thread_ref))) == len(owed)
    approval = slack.pending_approval(inv.session_id)
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    fake_gemini.assert_drained()


def test_a_definite_refusal_is_given_up_and_the_rest_of_the_thread_goes_on(
        slack: SlackHarness, flaky: FlakySlack, fake_gemini: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gemini.enqueue(text_turn("x" * 10), )
    original = flaky._ok

    def refuse_reasoning(method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "chat.postMessage" and "x" * 10 in str(args.get("text")):
            return {"ok": False, "error": "invalid_blocks"}
        return original(method, args)

    monkeypatch.setattr(flaky, "_ok", refuse_reasoning)
    inv = start(slack)
    assert inv.status == "awaiting_user"
    (dead,) = [v for v in slack.services.runtime.outbox.items(inv.session_id).values()
               if v["state"] == "dead"]
    assert "invalid_blocks" in dead["error"]
    assert blocks.CONTINUE in texts(slack.fake.thread(CHANNEL, str(inv.thread_ref)))


# ------------------------------------------------------------------ 3. the RCA after a 500
def test_an_rca_whose_first_call_failed_is_uploaded_again_by_itself(
        slack: SlackHarness, flaky: FlakySlack, fake_gemini: Any) -> None:
    fake_gemini.enqueue(complete())
    flaky.down.add("files.getUploadURLExternal")
    inv = start(slack)
    upload = slack.store.get_investigation(inv.session_id).conversation_ref["rca_upload"]
    assert inv.status == "completed" and upload["state"] == "retry"
    assert "interrupted" not in texts(slack.fake.thread(CHANNEL, str(inv.thread_ref)))
    flaky.down.clear()
    runtime = slack.services.runtime
    assert runtime.reconcile_rca(utc_now()) == 0            # not due yet (backoff)
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=1)) == 1
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=2)) == 0
    assert len(flaky.shared()) == 1
    assert slack.store.get_investigation(inv.session_id).conversation_ref["rca_posted"]


def test_an_rca_claimed_then_killed_while_paced_is_uploaded_within_minutes(
        slack: SlackHarness, flaky: FlakySlack, fake_gemini: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gemini.enqueue(complete())
    client = slack.services.port.client  # killed after the claim, before the first call
    monkeypatch.setattr(client, "files_getUploadURLExternal",
                        lambda **_k: (_ for _ in ()).throw(Crash()))
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    monkeypatch.undo()
    inv = slack.only_investigation()
    runtime = slack.services.runtime
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=1)) == 0   # claim still held
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=4)) == 1   # not 10 minutes
    assert len(flaky.shared()) == 1
    assert slack.store.get_investigation(inv.session_id).conversation_ref["rca_posted"]


# ------------------------------------------------------------------ 4. kill -9 mid-upload
@pytest.mark.parametrize("dies", ["after_slack_shared_it", "before_the_last_call"])
def test_a_kill_while_the_rca_is_uploaded_ends_with_the_file_in_the_thread_once(
        slack: SlackHarness, flaky: FlakySlack, fake_gemini: Any,
        monkeypatch: pytest.MonkeyPatch, dies: str) -> None:
    fake_gemini.enqueue(complete())
    client = slack.services.port.client
    original = client.files_completeUploadExternal

    def complete_and_die(**kwargs: Any) -> Any:
        if dies == "after_slack_shared_it":
            original(**kwargs)
        raise Crash

    monkeypatch.setattr(client, "files_completeUploadExternal", complete_and_die)
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    monkeypatch.undo()
    inv = slack.only_investigation()
    upload = slack.store.get_investigation(inv.session_id).conversation_ref["rca_upload"]
    assert upload["state"] == "uploading" and upload["file_id"]   # noted before the last call
    runtime = slack.services.runtime
    assert runtime.reconcile_rca(utc_now()) == 0            # the claim may still be alive
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=4)) == 1
    assert runtime.reconcile_rca(utc_now() + timedelta(minutes=8)) == 0
    assert len(flaky.shared()) == 1                         # exactly once, either way
    ref = slack.store.get_investigation(inv.session_id).conversation_ref
    assert ref["rca_posted"] and ref["rca_upload"]["state"] == "posted"
    assert "interrupted" not in texts(slack.fake.thread(CHANNEL, str(inv.thread_ref)))


# ------------------------------------------------------------------ what counts as transient
@pytest.mark.parametrize(("status", "error", "again"), [
    (500, "internal_error", True), (503, "service_unavailable", True), (429, "ratelimited", True),
    (200, "ratelimited", True), (200, "not_in_channel", False), (200, "invalid_blocks", False),
    (404, "channel_not_found", False)])
def test_transient_reads_slacks_answer(status: int, error: str, again: bool) -> None:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.slack_response import SlackResponse

    from bot.chat.outbox import transient

    response = SlackResponse(client=None, http_verb="POST", api_url="u", req_args={},
                             data={"ok": False, "error": error}, headers={},
                             status_code=status)
    assert transient(SlackApiError("no", response)) is again


def test_dropped_connections_are_transient_and_bugs_are_not() -> None:
    import urllib.error

    from bot.chat.outbox import transient

    assert transient(urllib.error.URLError(ConnectionRefusedError(111, "refused")))
    assert transient(TimeoutError("read timed out"))
    assert not transient(KeyError("ts"))
