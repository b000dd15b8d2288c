"""Buttons and mentions in the thread, Slack retries, signatures, rate limits, and `ghost serve`
as a real process in HTTP mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.slack import blocks
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    REQUESTER,
    SECRET,
    SlackHarness,
    make_harness,
    sign,
)
from tests.slack.test_investigation_flow import complete, shell, start


def test_text_answer_offers_continue_and_done_and_a_mention_continues(
        slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group holds Redis?"),
                        text_turn("Thanks. Anything else?"), complete())
    inv = start(slack)
    assert inv.status == "awaiting_user"
    prompt = slack.fake.thread(CHANNEL, inv.thread_ref)[-1]
    ids = [e["action_id"] for b in prompt["blocks"] if b["type"] == "actions"
           for e in b["elements"]]
    assert ids == [blocks.CONTINUE, blocks.DONE]
    # an @ghost mention in the thread is the instruction; Slack's retry of it is dropped
    event = {"type": "app_mention", "user": REQUESTER, "channel": CHANNEL,
             "text": "<@UGHOST> it is cache-rg", "ts": "1700000009.000001",
             "thread_ts": inv.thread_ref}
    assert slack.event(event, "Ev1").status == 200
    assert slack.event(event, "Ev1", retry=1).status == 200
    slack.worker.run_until_idle()
    assert fake_gemini.requests[1].contents[-1]["parts"][0]["text"] == "it is cache-rg"
    assert len(fake_gemini.requests) == 2      # the retry did not add a second instruction
    # Done writes the RCA
    prompt = slack.fake.thread(CHANNEL, inv.thread_ref)[-1]
    slack.click(blocks.DONE, slack.prompt_value(inv), APPROVER, message_ts=prompt["ts"])
    assert "Done — writing the RCA" in str(slack.fake.message(CHANNEL, prompt["ts"])["blocks"])
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "completed"
    assert slack.fake.called("files.completeUploadExternal")


def test_continue_modal_sends_the_instruction(slack: SlackHarness, fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Should I look at DNS?"), complete())
    inv = start(slack)
    slack.click(blocks.CONTINUE, slack.prompt_value(inv), REQUESTER)
    view = slack.fake.called("views.open")[-1].args["view"]
    assert view["callback_id"] == blocks.CONTINUE_VIEW
    metadata = view["private_metadata"]
    assert metadata.startswith(f"{inv.session_id}|awaiting_user:")
    slack.submit(blocks.CONTINUE_VIEW, metadata, REQUESTER, {"instruction": "yes, DNS"})
    slack.worker.run_until_idle()
    assert fake_gemini.requests[1].contents[-1]["parts"][0]["text"] == "yes, DNS"
    # a second Continue on the answered prompt is told who answered it; nothing is sent
    slack.submit(blocks.CONTINUE_VIEW, metadata, REQUESTER, {"instruction": "again"})
    told = slack.fake.ephemerals(REQUESTER)[-1]
    assert told.startswith("This prompt was already answered: Continued by <@UREQ> at ")
    assert len(fake_gemini.requests) == 2


def test_gemini_outage_is_posted_with_what_to_do(slack: SlackHarness, fake_gemini: Any) -> None:
    from tests.fakes.gemini_server import error_response

    fake_gemini.enqueue(error_response(400, "bad request"))
    inv = start(slack)
    fake_gemini.clear_failures()
    assert inv.status == "failed"
    last = slack.fake.thread(CHANNEL, inv.thread_ref)[-1]
    said = last["blocks"][0]["text"]["text"]
    # Ghost's own notice, not shown as the model's reasoning; the cause once, not nested
    assert said.startswith("⚠️ Gemini could not be used: ") and "🧠" not in said
    assert said.count("bad request") == 1 and "did not answer (" not in said
    # a 400 does not go away by waiting: the engineer is told to fix the settings first
    assert "Waiting will not fix this" in said
    assert f"/ghost resume {inv.session_id}" in said
    assert "Stopped on an error" in slack.fake.message(CHANNEL, inv.thread_ref)["text"]
    # once fixed, /ghost resume goes on in the thread, and the status says so at once
    fake_gemini.enqueue(text_turn("Which subnet is web-01 in?"))
    slack.slash(f"resume {inv.session_id}")
    assert "Queued" in slack.fake.message(CHANNEL, inv.thread_ref)["text"]
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    assert "Which subnet" in str(slack.fake.thread(CHANNEL, inv.thread_ref)[-2]["blocks"])


def test_gemini_down_past_the_limit_parks_it_with_a_resume_button(
        slack: SlackHarness, fake_gemini: Any) -> None:
    """GHOST_GEMINI_OUTAGE_S spent: parked (never failed), told with a Resume button; one
    click goes on where it was, and the button then says who resumed it."""
    from core.engine.loop import OutagePolicy
    from tests.fakes.gemini_server import error_response

    slack.services.runtime.engine.outage = OutagePolicy(limit_s=0)  # the limit at once
    fake_gemini.enqueue(error_response(503, "overloaded"))
    inv = start(slack)
    assert slack.store.get_investigation(inv.session_id).status == "parked"
    notice = slack.fake.thread(CHANNEL, inv.thread_ref)[-1]
    said = notice["blocks"][0]["text"]["text"]
    assert "overloaded" in said and "parked the investigation where it was" in said
    assert f"`/ghost resume {inv.session_id}`" in said
    [button] = [e for b in notice["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert button["action_id"] == blocks.RESUME
    fake_gemini.enqueue(text_turn("Gemini is back. Which subnet?"))
    slack.click(blocks.RESUME, button["value"], OTHER_MEMBER, message_ts=notice["ts"])
    slack.worker.run_until_idle()
    assert slack.store.get_investigation(inv.session_id).status == "awaiting_user"
    closed = slack.fake.message(CHANNEL, notice["ts"])
    assert "Resumed by" in str(closed["blocks"]) and "actions" not in str(closed["blocks"])
    # a second click on the old button changes nothing and says so
    slack.click(blocks.RESUME, button["value"], APPROVER, message_ts=notice["ts"])
    assert "was resumed already" in slack.fake.ephemerals(APPROVER)[-1]
    assert len(fake_gemini.requests) == 2


def test_resume_leaves_an_investigation_a_live_worker_holds_alone(
        slack: SlackHarness, fake_gemini: Any) -> None:
    """/ghost resume while a worker holds the lease would close that worker's running command
    as "interrupted" beside its real outcome: it is refused, and nothing changes."""
    from core.engine.loop import OutagePolicy
    from tests.fakes.gemini_server import error_response

    slack.services.runtime.engine.outage = OutagePolicy(limit_s=0)
    fake_gemini.enqueue(error_response(503, "overloaded"))
    inv = start(slack)
    assert slack.store.take_lease(inv.session_id, "worker-elsewhere", lease_seconds=60)
    before = slack.store.get_investigation(inv.session_id)
    slack.slash(f"resume {inv.session_id}")
    said = slack.fake.called("response_url")[-1].args["text"]
    assert "a Ghost worker is working on it right now" in said
    after = slack.store.get_investigation(inv.session_id)
    assert after.status == before.status == "parked" and after.state == before.state
    slack.store.release_lease(inv.session_id, "worker-elsewhere")
    slack.slash(f"resume {inv.session_id}")
    assert "Resuming" in slack.fake.called("response_url")[-1].args["text"]


def test_slash_help_list_status_cancel(slack: SlackHarness, fake_gemini: Any) -> None:
    assert "/ghost investigate" in slack.slash("help").body
    slack.slash("list")
    assert "No investigations yet" in slack.fake.called("response_url")[-1].args["text"]
    fake_gemini.enqueue(function_call_turn(shell("echo risky")))
    inv = start(slack)
    slack.slash("list")
    assert inv.session_id in slack.fake.called("response_url")[-1].args["text"]
    slack.slash(f"status {inv.session_id}")
    said = slack.fake.called("response_url")[-1].args["text"]
    assert "Waiting for an approval" in said
    slack.slash(f"cancel {inv.session_id}")
    said = slack.fake.called("response_url")[-1].args["text"]
    assert said == f"Cancelled `{inv.session_id}`. 1 pending approval(s) closed."
    assert slack.store.get_investigation(inv.session_id).status == "cancelled"
    assert not slack.store.approvals(inv.session_id, statuses=("pending",))
    (closed,) = slack.store.approvals(inv.session_id)
    card = slack.fake.message(CHANNEL, closed.message_ref["ts"])["blocks"][-1]["text"]["text"]
    assert card.startswith(f"• Closed by <@{REQUESTER}> at ") and \
        card.endswith(": the investigation was cancelled. Nothing ran.")
    # the rest of the subcommands, and what a typo gets
    assert "/ghost investigate" in slack.slash("").body
    assert slack.slash("frobnicate").body.startswith("I don't know `frobnicate`.")
    assert "Which one? `/ghost cancel SID`" in slack.slash("cancel").body
    slack.slash(f"resume {inv.session_id}")
    assert slack.fake.called("response_url")[-1].args["text"] == \
        f"Resuming `{inv.session_id}` in its thread."
    slack.slash("cancel ghost_nope")
    assert "No investigation 'ghost_nope'" in slack.fake.called("response_url")[-1].args["text"]


def test_bad_signature_is_refused(slack: SlackHarness) -> None:
    body = urlencode({"command": "/ghost", "text": "help", "user_id": REQUESTER,
                      "channel_id": CHANNEL})
    forged = sign(body, "application/x-www-form-urlencoded", secret="not-the-secret")
    assert slack.dispatch(forged).status == 401
    stale = sign(body, "application/x-www-form-urlencoded", timestamp=int(time.time()) - 600)
    assert slack.dispatch(stale).status == 401


def test_posts_are_retried_after_429(slack: SlackHarness, fake_gemini: Any) -> None:
    slack.fake.rate_limited["chat.postMessage"] = 2
    fake_gemini.enqueue(text_turn("hello"))
    inv = start(slack)
    attempts = slack.fake.called("chat.postMessage")
    assert len(attempts) >= 3 and inv.thread_ref


def test_pacer_keeps_one_post_per_second_per_channel() -> None:
    from bot.slack.client import Pacer

    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    pacer = Pacer(1.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        pacer.wait("C1")
    pacer.wait("C2")
    assert slept == [1.0, 1.0]


def test_missing_settings_name_the_variable(store: Any, fake_slack: Any, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.slack.app import SettingMissing

    monkeypatch.setenv("SLACK_SIGNING_SECRET", "")
    with pytest.raises(SettingMissing, match="SLACK_SIGNING_SECRET"):
        make_harness(store, fake_slack, tmp_path, monkeypatch, SLACK_SIGNING_SECRET="")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ghost_serve_http_mode_end_to_end(cli_env: dict[str, str], fake_slack: Any,
                                          fake_gemini: Any, tmp_path: Path) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    port = _free_port()
    env = cli_env | {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
                     "SLACK_API_URL": fake_slack.base_url, "PORT": str(port),
                     "GEMINI_API_KEY": os.environ["GEMINI_API_KEY"],
                     "GOOGLE_GEMINI_BASE_URL": os.environ["GOOGLE_GEMINI_BASE_URL"],
                     "GHOST_MODEL": "gemini-test", "NO_PROXY": "127.0.0.1",
                     "GHOST_SLACK_POST_INTERVAL_S": "0"}
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--host", "127.0.0.1"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        body = urlencode({"command": "/ghost", "text": "investigate dns is slow",
                          "user_id": REQUESTER, "channel_id": CHANNEL, "team_id": "T1",
                          "response_url": fake_slack.base_url.replace("/api/", "/respond/1")})
        signed = sign(body, "application/x-www-form-urlencoded")
        request = urllib.request.Request(base + "/slack/events", data=body.encode(),
                                         headers={k: v[0] for k, v in signed.headers.items()})
        started = time.monotonic()
        reply = urllib.request.urlopen(request, timeout=5)
        assert time.monotonic() - started < 3 and reply.status == 200
        assert "Starting an investigation" in reply.read().decode()
        forged = urllib.request.Request(base + "/slack/events", data=body.encode(), headers={
            "content-type": "application/x-www-form-urlencoded",
            "x-slack-request-timestamp": str(int(time.time())), "x-slack-signature": "v0=00"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(forged, timeout=5)
        assert refused.value.code == 401
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                blocks.CONTINUE in json.dumps(c.args)
                for c in fake_slack.called("chat.postMessage")):
            time.sleep(0.05)
        assert any(blocks.CONTINUE in json.dumps(c.args)
                   for c in fake_slack.called("chat.postMessage")), proc.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_not_invited_is_answered_through_the_response_url(slack: SlackHarness) -> None:
    """Ghost cannot post in a channel it was not invited to, nor post an ephemeral there;
    the slash command's response_url still reaches the engineer with what to do."""
    slack.fake.fail["chat.postMessage"] = "not_in_channel"
    slack.fake.fail["chat.postEphemeral"] = "not_in_channel"
    slack.slash("investigate web-01 cannot reach redis")
    slack.worker.run_until_idle()  # the worker posts the root: refused, and says why
    said = slack.fake.called("response_url")[-1].args
    assert said == {"text": "⚠️ Ghost is not in this channel yet: `/invite @ghost`, then try "
                            "again.", "response_type": "ephemeral"}
    inv = slack.only_investigation()  # recorded at the ack; never started, never retried
    assert inv.status == "failed" and inv.thread_ref is None
    assert not slack.fake.called("chat.postMessage")[1:]
    assert slack.worker.run_until_idle() == 0
