"""Issue 23, chaos finding F2: a thread message posted twice, ~120 s apart, after a kill.

Each test reproduces it with one fault: the process dies right after Slack stored the message
and before the outbox recorded it ``sent`` (its claim lapses; the next holder sends it again),
or Slack's answer is lost (HTTP 500 after storing it). The fix under test: every post carries
its outbox key in its message metadata, and an item that may have arrived is first looked up
with ``conversations.replies(include_all_metadata)``. With the look-up disabled the same test
shows the duplicate. The real bolt app and WebClient against the mock Slack Web API; run on
SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from bot.slack import blocks
from bot.slack.port import OUTBOX_EVENT, SlackPort
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    SlackHarness,
)
from tests.slack.test_delivery_outbox import Crash, card_posts, jobs_of, later
from tests.slack.test_investigation_flow import shell, start

REASONING = "Checking the API port from web-vm-01 itself."


@pytest.fixture
def fake(fake_slack: FakeSlack) -> FakeSlack:
    """The conftest's mock Slack Web API (the ``slack`` harness talks to it)."""
    return fake_slack


@pytest.fixture(params=["lookup", "no_lookup"])
def lookup(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """``no_lookup``: the port as it was before the fix (no keys, no look-up): the
    duplicate the test reproduces must then appear, or the test proves nothing."""
    if request.param == "no_lookup":
        monkeypatch.delattr(SlackPort, "keyed")
    return bool(request.param == "lookup")


def posts_saying(fake: FakeSlack, thread_ts: str, words: str) -> list[dict[str, Any]]:
    return [m for m in fake.thread(CHANNEL, thread_ts) if words in str(m.get("text"))]


def die_after_slack_answers(monkeypatch: pytest.MonkeyPatch, slack: SlackHarness,
                            words: str) -> None:
    """kill -9 right after Slack stored the post saying ``words`` and answered, before
    anything else runs in this process (the outbox's ``sent`` record included)."""
    client = slack.services.port.client
    original = client.chat_postMessage

    def post_then_die(**kwargs: Any) -> Any:
        answer = original(**kwargs)
        if words in str(kwargs.get("text")):
            raise Crash
        return answer

    monkeypatch.setattr(client, "chat_postMessage", post_then_die)


def recover(slack: SlackHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Another process takes over after the claim lapsed: the deliver job, then a worker."""
    monkeypatch.setattr(slack.services.port.client, "chat_postMessage",
                        type(slack.services.port.client).chat_postMessage.__get__(
                            slack.services.port.client))
    inv = slack.only_investigation()
    slack.store.release_lease(inv.session_id, "test-worker")
    later(slack, 3)                                          # past the 120 s claim
    (deliver,) = [s for s in jobs_of(slack, tmp_path).specs() if s.name == "deliver"]
    jobs_of(slack, tmp_path).guarded(deliver)
    slack.worker.run_until_idle()
    jobs_of(slack, tmp_path).reconcile()
    return slack.store.get_investigation(inv.session_id)


# ------------------------------------------------------------------ the model's text
def test_a_kill_between_slacks_answer_and_the_sent_record_posts_the_text_once(
        slack: SlackHarness, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, lookup: bool) -> None:
    fake_gemini.enqueue(text_turn(REASONING))
    die_after_slack_answers(monkeypatch, slack, REASONING)
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    inv = slack.only_investigation()
    (item,) = [v for v in slack.services.runtime.outbox.items(inv.session_id).values()
               if v["kind"] == "text" and REASONING in str(v.get("payload"))]
    assert item["state"] == "sending"                        # Slack has it; the outbox not
    assert len(posts_saying(slack.fake, str(inv.thread_ref), REASONING)) == 1

    inv = recover(slack, tmp_path, monkeypatch)
    posted = posts_saying(slack.fake, str(inv.thread_ref), REASONING)
    if not lookup:
        assert len(posted) == 2                              # F2, reproduced
        return
    assert len(posted) == 1                                  # found by its key, not re-sent
    assert posted[0]["metadata"]["event_type"] == OUTBOX_EVENT
    assert slack.fake.called("conversations.replies")
    assert inv.status == "awaiting_user"                     # and the investigation went on
    assert slack.services.runtime.outbox.waiting(inv.session_id) == []


# ------------------------------------------------------------------ a SAFE command's line
def test_a_kill_after_the_command_line_was_posted_posts_it_once(
        slack: SlackHarness, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, lookup: bool) -> None:
    fake_gemini.enqueue(function_call_turn(shell("ss -tln"), text="Listeners."),
                        text_turn("Done looking."))
    die_after_slack_answers(monkeypatch, slack, "ss -tln")
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    inv = recover(slack, tmp_path, monkeypatch)
    lines = [m for m in posts_saying(slack.fake, str(inv.thread_ref), "ss -tln")]
    assert len(lines) == (1 if lookup else 2)


# ------------------------------------------------------------------ an approval card
def test_a_kill_after_the_card_was_posted_keeps_one_card_that_still_works(
        slack: SlackHarness, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo risky")), text_turn("Ran it."))
    die_after_slack_answers(monkeypatch, slack, "Approval needed")
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):                               # before message_ref and `sent`
        slack.worker.run_until_idle()
    inv = recover(slack, tmp_path, monkeypatch)
    jobs_of(slack, tmp_path).reconcile()
    (card,) = posts_saying(slack.fake, str(inv.thread_ref), "Approval needed")
    approval = slack.pending_approval(inv.session_id)
    assert approval.message_ref["ts"] == card["ts"]          # the card Slack has, recorded
    slack.click(blocks.APPROVE, approval.approval_id, APPROVER)
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert len(card_posts(slack.fake)) == 1                  # posted once, then closed
    fake_gemini.assert_drained()


# ------------------------------------------------------------------ Slack's answer lost
def test_a_post_whose_answer_was_lost_is_found_and_not_posted_again(
        slack: SlackHarness, fake: FakeSlack, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, lookup: bool) -> None:
    fake_gemini.enqueue(text_turn(REASONING))
    original = fake._answer

    def lose_the_answer(method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "chat.postMessage" and REASONING in str(args.get("text")):
            fake.answer_lost.add(method)                     # stored, then HTTP 500
        try:
            return original(method, args)
        finally:
            fake.answer_lost.discard(method)

    monkeypatch.setattr(fake, "_answer", lose_the_answer)
    inv = start(slack)
    assert inv.status == "awaiting_user"                     # a 500 fails nothing
    if lookup:                                               # no blind retry by the client
        assert len(posts_saying(fake, str(inv.thread_ref), REASONING)) == 1
    (item,) = [v for v in slack.services.runtime.outbox.waiting(inv.session_id)
               if v["kind"] == "text"]
    assert item["state"] == "due" and item.get("unsure")      # it may be in the thread
    monkeypatch.setattr(fake, "_answer", original)
    later(slack, 5)
    (deliver,) = [s for s in jobs_of(slack, tmp_path).specs() if s.name == "deliver"]
    jobs_of(slack, tmp_path).guarded(deliver)
    posted = posts_saying(fake, str(inv.thread_ref), REASONING)
    if lookup:
        assert len(posted) == 1
    else:  # before: the client's own 5xx retries and the outbox's each posted it again
        assert len(posted) >= 2
    assert slack.services.runtime.outbox.waiting(inv.session_id) == []


# ------------------------------------------------------------------ the look-up fails
@pytest.mark.parametrize("failure", ["server_error", "missing_scope"])
def test_a_failed_lookup_posts_again_rather_than_lose_the_message(
        slack: SlackHarness, fake: FakeSlack, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        failure: str) -> None:
    """Slack down (HTTP 500) or the history scope missing: logged, and the post goes out."""
    fake_gemini.enqueue(text_turn(REASONING))
    die_after_slack_answers(monkeypatch, slack, REASONING)
    slack.slash("investigate web-01 cannot reach redis")
    with pytest.raises(Crash):
        slack.worker.run_until_idle()
    if failure == "server_error":
        fake.server_error.add("conversations.replies")
    else:
        fake.fail["conversations.replies"] = "missing_scope"
    with caplog.at_level(logging.WARNING, logger="bot.slack.port"):
        inv = recover(slack, tmp_path, monkeypatch)
    assert len(posts_saying(slack.fake, str(inv.thread_ref), REASONING)) == 2
    assert "could not look for the" in caplog.text
    if failure == "server_error":
        assert slack.services.runtime.outbox.waiting(inv.session_id) == []
    else:
        assert "missing_scope" in caplog.text


def test_a_first_attempt_does_not_look_and_every_outbox_post_carries_its_key(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("ss -tln"), text="Listeners."),
                        text_turn(REASONING))
    inv = start(slack)
    assert inv.status == "awaiting_user"
    assert slack.fake.called("conversations.replies") == []  # no cost when nothing failed
    replies = slack.fake.thread(CHANNEL, str(inv.thread_ref))
    keys = set(slack.services.runtime.outbox.items(inv.session_id))
    carried = {m["metadata"]["event_payload"]["key"] for m in replies if m.get("metadata")}
    assert len(replies) >= 3 and carried == keys


# ------------------------------------------------------------------ the port on its own
def port_on(fake: FakeSlack) -> SlackPort:
    from bot.slack.client import Pacer, make_client

    return SlackPort(make_client("xoxb-test", fake.base_url), Pacer(0))


def test_a_keyed_root_is_found_in_the_channel_history_and_a_long_thread_is_paged(
        fake: FakeSlack) -> None:
    from bot.chat.status import StatusView

    port = port_on(fake)
    view = StatusView(session_id="ghost_x", symptom="s", requested_by=REQUESTER,
                      status="running", phase="triage", turn=0, max_turns=50)
    root = port.keyed("root:ghost_x").post_root(CHANNEL, view)
    for n in range(450):                         # three pages of replies before the new one
        fake.messages[(CHANNEL, f"1690000000.{n:06d}")] = {"text": str(n), "thread_ts": root}
    assert port.keyed("root:ghost_x", check=True).post_root(CHANNEL, view) == root
    assert len(fake.called("chat.postMessage")) == 1         # found, not posted again

    class Thread:
        session_id, channel_ref, thread_ref = "ghost_x", CHANNEL, root

    port.keyed("text:9:abc").post_text(Thread(), "late words")
    assert port.keyed("text:9:abc", check=True).posted(CHANNEL, root, "text:9:abc")
    assert len(fake.called("conversations.replies")) == 3    # paged to the newest reply
    assert port.posted(CHANNEL, root, "text:9:other") is None
    port.keyed("text:9:other", check=True).post_text(Thread(), "new words")
    assert len(fake.called("chat.postMessage")) == 3         # not found: posted


def test_a_database_error_right_after_the_post_is_retried_not_left_to_lapse(
        slack: SlackHarness, fake_gemini: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from sqlalchemy.exc import OperationalError

    import bot.chat.outbox as outbox_module

    fake_gemini.enqueue(text_turn(REASONING))
    client, store = slack.services.port.client, slack.store
    post, change = client.chat_postMessage, store.change_conversation_ref
    failing: list[bool] = []

    def post_and_arm(**kwargs: Any) -> Any:
        answer = post(**kwargs)
        if REASONING in str(kwargs.get("text")) and not failing:
            failing.append(True)                             # the next record fails once
        return answer

    def change_once_failing(session_id: str, fn: Any) -> Any:
        if failing == [True]:
            failing.append(False)
            raise OperationalError("UPDATE investigations", {}, Exception("server closed"))
        return change(session_id, fn)

    monkeypatch.setattr(client, "chat_postMessage", post_and_arm)
    monkeypatch.setattr(store, "change_conversation_ref", change_once_failing)
    monkeypatch.setattr(outbox_module, "SETTLE_RETRY_S", (0.0, 0.0))
    with caplog.at_level(logging.WARNING, logger="bot.chat.outbox"):
        inv = start(slack)
    assert failing == [True, False]                          # the fault was injected
    assert len(posts_saying(slack.fake, str(inv.thread_ref), REASONING)) == 1
    assert slack.services.runtime.outbox.waiting(inv.session_id) == []   # recorded, at once
    assert "could not record a message" in caplog.text
