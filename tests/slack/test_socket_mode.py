"""Socket Mode for real: the mock Web API hands out a ws:// URL of a local WebSocket server, the
app connects to it with slack_sdk's built-in client (the path `ghost serve` takes when
SLACK_APP_TOKEN is set), and slash commands arrive as envelopes and are acked over the socket.
Also `/ghost status` listing the investigation's captures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.chat.help_text import HELP
from bot.slack import blocks
from tests.fakes.gemini_server import text_turn
from tests.fakes.slack_api import Call, FakeSlack, FakeSocketMode
from tests.slack.conftest import CHANNEL, REQUESTER, SlackHarness
from tests.slack.test_investigation_flow import start

pytest.importorskip("websockets.sync.server", reason="the fake Socket Mode server needs it")


@pytest.fixture
def socket_mode(fake_slack: FakeSlack) -> Iterator[FakeSocketMode]:
    sock = FakeSocketMode().start()
    fake_slack.socket_url = sock.url
    yield sock
    sock.stop()


def slash_payload(fake: FakeSlack, text: str) -> dict[str, Any]:
    """What Slack puts in a ``slash_commands`` envelope's payload."""
    return {"token": "x", "team_id": "T1", "team_domain": "acme", "channel_id": CHANNEL,
            "channel_name": "incident", "user_id": REQUESTER, "user_name": "req",
            "command": "/ghost", "text": text, "api_app_id": "A0GHOST",
            "is_enterprise_install": "false", "trigger_id": "trig.socket",
            "response_url": fake.base_url.replace("/api/", "/respond/socket")}


def _prompted(call: Call) -> bool:
    return blocks.CONTINUE in json.dumps(call.args)


def _close_quickly(socket_mode: FakeSocketMode, connection: Any) -> None:
    """Slack's side closes first, so slack_sdk's ``close()`` need not wait out its reader's 3 s
    receive timeout; wait (briefly) until the reader has seen it, because slack_sdk's
    disconnect is not safe to run twice at once."""
    socket_mode.drop()
    deadline = time.monotonic() + 2
    while connection.handler.client.is_connected() and time.monotonic() < deadline:
        time.sleep(0.01)
    connection.close()


def test_slash_commands_over_socket_mode_are_acked_on_the_socket(
        store: Any, fake_slack: FakeSlack, socket_mode: FakeSocketMode, fake_gemini: Any,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.settings import Settings
    from bot.slack.app import build_slack
    from bot.slack.client import Pacer
    from bot.slack.socket_mode import connect_socket_mode
    from bot.worker import Worker

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "")  # not needed in Socket Mode
    monkeypatch.setenv("SLACK_API_URL", fake_slack.base_url)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("GHOST_MODEL", "gemini-test")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    # as `ghost serve` builds it: bolt's own listener pool, acks before the slow work
    services = build_slack(settings, store, socket_mode=True, pacer=Pacer(0.0),
                           sleep=lambda _s: None)
    connection = connect_socket_mode(services.app, str(settings.slack_app_token))
    try:
        socket_mode.wait_connected()
        assert fake_slack.called("apps.connections.open")
        assert socket_mode.paths[0].startswith("/link/?ticket=test-ticket")
        socket_mode.hello()

        socket_mode.slash("env-help-1", slash_payload(fake_slack, "help"))
        assert socket_mode.ack("env-help-1")["payload"]["text"] == HELP

        fake_gemini.enqueue(text_turn("Which resource group?"))
        socket_mode.slash("env-inv-1", slash_payload(fake_slack, "investigate dns is slow"))
        ack = socket_mode.ack("env-inv-1")
        assert "Starting an investigation of: dns is slow" in ack["payload"]["text"]
        # recorded before the ack (its id is in it); the worker posts the root, then runs it
        (inv,) = store.list_investigations()
        assert inv.requested_by == REQUESTER and inv.symptom == "dns is slow"
        assert inv.session_id in ack["payload"]["text"]
        runtime = services.runtime
        Worker(store=store, engine=runtime.engine, shell_for=runtime.shell_for,
               after=runtime.after_advance, failed=runtime.failed, owner="socket-test",
               lease_seconds=30, before=runtime.before_advance).run_until_idle()
        root = fake_slack.wait_for("chat.postMessage",
                                   match=lambda c: c.args.get("channel") == CHANNEL)
        assert "dns is slow" in json.dumps(root.args)
        prompt = fake_slack.wait_for("chat.postMessage", match=_prompted)
        assert prompt.args.get("thread_ts") == store.get_investigation(
            inv.session_id).thread_ref
        # each envelope acked exactly once
        acked = [m["envelope_id"] for m in socket_mode.received if "envelope_id" in m]
        assert sorted(acked) == ["env-help-1", "env-inv-1"]
    finally:
        _close_quickly(socket_mode, connection)


def test_ghost_serve_in_socket_mode_acks_over_the_socket(
        cli_env: dict[str, str], fake_slack: FakeSlack, socket_mode: FakeSocketMode,
        fake_gemini: Any, tmp_path: Path) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    env = cli_env | {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test",
                     "SLACK_SIGNING_SECRET": "", "SLACK_API_URL": fake_slack.base_url,
                     "GEMINI_API_KEY": os.environ["GEMINI_API_KEY"],
                     "GOOGLE_GEMINI_BASE_URL": os.environ["GOOGLE_GEMINI_BASE_URL"],
                     "GHOST_MODEL": "gemini-test", "NO_PROXY": "127.0.0.1",
                     "GHOST_SLACK_POST_INTERVAL_S": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        socket_mode.wait_connected(timeout=30)
        socket_mode.hello()
        socket_mode.slash("env-help-2", slash_payload(fake_slack, "help"))
        assert socket_mode.ack("env-help-2", timeout=10)["payload"]["text"] == HELP
        socket_mode.slash("env-inv-2", slash_payload(fake_slack, "investigate dns is slow"))
        assert "Starting an investigation" in str(
            socket_mode.ack("env-inv-2", timeout=10)["payload"])
        # the serve process's own worker takes it up and asks the engineer
        fake_slack.wait_for("chat.postMessage", timeout=30, match=_prompted)
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=10)
    assert "connected to Slack (Socket Mode) with a worker" in err, err


def test_status_lists_the_investigations_captures(slack: SlackHarness,
                                                   fake_gemini: Any) -> None:
    fake_gemini.enqueue(text_turn("Which resource group?"))
    inv = start(slack)
    notifier = slack.services.runtime.notifier
    task = "ghost_web01_20261122T050000"
    notifier.tool_result(inv.session_id, "capture_traffic", {"target": "web-01"},
                         {"task_id": task, "status": "task_pending", "state": "PROVISIONING",
                          "poll_count": 0, "max_polls": 20})
    for poll in (1, 2):
        notifier.tool_result(inv.session_id, "check_task", {"task_id": task},
                             {"task_id": task, "status": "task_pending", "state": "WAITING",
                              "poll_count": poll, "max_polls": 20})
    slack.fake.calls.clear()
    assert slack.slash(f"status {inv.session_id}").status == 200
    reply = slack.fake.wait_for("response_url")
    text = str(reply.args["text"])
    assert text.startswith(f"`{inv.session_id}` — ")
    assert f"Captures:\n• `{task}` WAITING · poll 2/20" in text
    assert reply.args.get("response_type") == "ephemeral"
    # the newest investigation without SID; no Captures section when there are none
    slack.fake.calls.clear()
    other = slack.store.create_investigation(symptom="y", model="m", audit_dir="a",
                                             status="queued")
    slack.slash("status")
    newest = str(slack.fake.wait_for("response_url").args["text"])
    assert newest.startswith(f"`{other.session_id}`") and "Captures" not in newest
