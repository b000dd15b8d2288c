"""An acked `/ghost investigate` is never lost: its record is written before the ack, and the
worker that holds the investigation posts its thread root (exactly once) and starts it.

In-process through the real bolt app, and with `ghost serve` killed (-9) right after the ack."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from bot.slack import blocks
from tests.fakes.gemini_server import text_turn
from tests.slack.conftest import CHANNEL, REQUESTER, SlackHarness
from tests.slack.processes import (
    free_port,
    ghost_env,
    investigate,
    roots_of,
    start,
    stop,
    wait_healthy,
    wait_until,
)


def _prompted(fake_slack: Any, thread_ts: str | None) -> bool:
    return any(blocks.CONTINUE in json.dumps(c.args) and c.args.get("thread_ts") == thread_ts
               for c in fake_slack.called("chat.postMessage"))


def test_the_record_is_complete_at_the_ack_and_the_worker_opens_the_thread_once(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    reply = slack.slash("investigate web-01 cannot reach redis")
    assert reply.status == 200
    inv = slack.only_investigation()
    # durable before anything reached Slack: queued, runnable, its symptom the first turn
    assert not slack.fake.called("chat.postMessage")
    assert inv.status == "queued" and inv.thread_ref is None
    assert inv.channel_ref == CHANNEL and inv.requested_by == REQUESTER
    assert (inv.conversation_ref or {})["root"]["state"] == "pending"
    assert [t["role"] for t in slack.store.turns(inv.session_id)] == ["user"]
    assert inv.session_id in reply.body
    slack.worker.run_until_idle()
    inv = slack.store.get_investigation(inv.session_id)
    (root,) = roots_of(slack.fake, inv.session_id)
    assert inv.thread_ref == root["ts"] and inv.conversation_ref["root"]["state"] == "posted"
    assert _prompted(slack.fake, inv.thread_ref)
    # a second holder (or a retry) does not post another root nor move the thread
    slack.services.runtime.open_thread(inv.session_id)
    assert slack.store.record_root(inv.session_id, "9.9", {"state": "posted"}) == root["ts"]
    assert len(roots_of(slack.fake, inv.session_id)) == 1


def test_a_transient_slack_error_keeps_it_queued_and_the_lease_times_the_retry(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    slack.fake.fail["chat.postMessage"] = "internal_error"
    slack.slash("investigate dns is slow")
    assert slack.worker.run_once() is not None
    inv = slack.only_investigation()
    assert inv.status == "queued" and inv.thread_ref is None  # not failed, nothing lost
    assert inv.conversation_ref["root"]["state"] == "pending"
    assert inv.lease_owner == "test-worker"  # held as a retry timer: nobody spins on it
    assert slack.store.claim_next("other", lease_seconds=30) is None
    del slack.fake.fail["chat.postMessage"]
    slack.store.release_leases_of("test-worker")  # what a shutdown or the timer's end does
    slack.worker.run_until_idle()
    assert len(roots_of(slack.fake, inv.session_id)) == 1
    assert _prompted(slack.fake, slack.store.get_investigation(inv.session_id).thread_ref)


def test_kill_9_after_the_ack_another_worker_opens_the_thread_once(
        cli_env: dict[str, str], fake_slack: Any, fake_gemini: Any, store: Any,
        tmp_path: Path) -> None:
    """A web replica (no worker) acks and tries the root at once (issue 34: roots go out right
    after the ack); Slack fails it, and the replica is killed; a `ghost worker` started
    afterwards posts the root once and starts the investigation."""
    fake_gemini.enqueue(text_turn("Which resource group?"))
    fake_slack.fail["chat.postMessage"] = "internal_error"
    port = free_port()
    env = ghost_env(cli_env, fake_slack, PORT=str(port), GHOST_SERVE_RUNS_WORKER="false")
    log = tmp_path / "ghost.log"
    web = start("serve", env, tmp_path, log)
    worker = None
    try:
        ack = investigate(wait_healthy(port, web), fake_slack, "redis times out")
        wait_until(lambda: bool(fake_slack.called("chat.postMessage")), 30,
                   "the web replica's try at the root, right after the ack")
        wait_until(lambda: ((store.list_investigations()[0].conversation_ref or {}).get(
            "root") or {}).get("state") == "pending", 30, "the failed root handed back")
        web.send_signal(signal.SIGKILL)
        web.wait(timeout=10)
        (inv,) = store.list_investigations()
        assert inv.session_id in ack and inv.status == "queued" and inv.thread_ref is None
        assert not roots_of(fake_slack, inv.session_id)
        del fake_slack.fail["chat.postMessage"]
        worker = start("worker", env, tmp_path, log)
        wait_until(lambda: _prompted(fake_slack, store.get_investigation(
            inv.session_id).thread_ref), 60, f"the prompt of {inv.session_id}; {log.read_text()}")
        (root,) = roots_of(fake_slack, inv.session_id)
        assert store.get_investigation(inv.session_id).thread_ref == root["ts"]
    finally:
        stop(web)
        if worker is not None:
            stop(worker)


def test_kill_9_before_the_first_post_went_out_the_restarted_serve_posts_it_once(
        cli_env: dict[str, str], fake_slack: Any, fake_gemini: Any, store: Any,
        tmp_path: Path) -> None:
    """`ghost serve` with its worker acks, its worker claims the investigation and tries the
    root (Slack answers 500), and the process is killed before any post went out; the
    restarted `ghost serve` takes it over once the dead process's lease lapses."""
    fake_gemini.enqueue(text_turn("Which resource group?"))
    fake_slack.fail["chat.postMessage"] = "internal_error"
    port = free_port()
    env = ghost_env(cli_env, fake_slack, PORT=str(port))
    log = tmp_path / "ghost.log"
    first = start("serve", env, tmp_path, log)
    second = None
    try:
        investigate(wait_healthy(port, first), fake_slack, "packets dropped on eth0")
        wait_until(lambda: bool(fake_slack.called("chat.postMessage")), 30,
                   "the worker's first try at the root")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        (inv,) = store.list_investigations()
        assert inv.thread_ref is None and inv.status == "queued"
        del fake_slack.fail["chat.postMessage"]
        second = start("serve", env, tmp_path, log)
        wait_until(lambda: _prompted(fake_slack, store.get_investigation(
            inv.session_id).thread_ref), 60, f"the prompt of {inv.session_id}; {log.read_text()}")
        assert len(roots_of(fake_slack, inv.session_id)) == 1
    finally:
        stop(first)
        if second is not None:
            stop(second)


def test_a_mention_acked_but_not_acted_on_is_delivered_once_by_the_reconcile_job(
        slack: SlackHarness, fake_gemini: Any) -> None:
    """The mention is stored before bolt acks it; the listener then fails on Slack (as if
    its process died after the ack) and the periodic catch-up delivers it, once."""
    from datetime import timedelta

    from core.session_state import utc_now

    fake_gemini.enqueue(text_turn("Which resource group holds Redis?"),
                        text_turn("Thanks. Anything else?"))
    slack.slash("investigate web-01 cannot reach redis")
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    assert inv.status == "awaiting_user"
    slack.fake.fail["conversations.members"] = "internal_error"  # the steering check fails
    event = {"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
             "text": "<@UGHOST> it is cache-rg", "ts": "1700000009.000001",
             "thread_ts": inv.thread_ref}
    assert slack.event(event, "EvLost").status == 200
    inbox = slack.store.get_investigation(inv.session_id).conversation_ref["inbox"]
    assert inbox["EvLost"]["text"] == "it is cache-rg" and inbox["EvLost"]["user"] == REQUESTER
    assert slack.worker.run_until_idle() == 0  # nothing delivered yet
    del slack.fake.fail["conversations.members"]
    runtime = slack.services.runtime
    assert runtime.reconcile_chat(utc_now()) == 0  # fresh: its own listener may still act
    assert runtime.reconcile_chat(utc_now() + timedelta(minutes=1)) == 1
    assert runtime.reconcile_chat(utc_now() + timedelta(minutes=1)) == 0
    assert "inbox" not in slack.store.get_investigation(inv.session_id).conversation_ref or \
        not slack.store.get_investigation(inv.session_id).conversation_ref["inbox"]
    slack.worker.run_until_idle()
    sent = [r.contents[-1]["parts"][0].get("text") for r in fake_gemini.requests]
    assert sent.count("it is cache-rg") == 1
