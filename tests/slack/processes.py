"""`ghost serve` and `ghost worker` as real processes against the mock Slack Web API and the
fake Gemini, with signed slash commands over HTTP (the durable-ack and SIGTERM tests)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import CHANNEL, REQUESTER, SECRET, sign


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ghost_env(cli_env: dict[str, str], fake_slack: FakeSlack, **extra: str) -> dict[str, str]:
    env = cli_env | {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
                     "SLACK_API_URL": fake_slack.base_url,
                     "GEMINI_API_KEY": os.environ["GEMINI_API_KEY"],
                     "GOOGLE_GEMINI_BASE_URL": os.environ["GOOGLE_GEMINI_BASE_URL"],
                     "GHOST_MODEL": "gemini-test", "NO_PROXY": "127.0.0.1",
                     "no_proxy": "127.0.0.1", "GHOST_LEASE_SECONDS": "3"} | extra
    env.pop("SLACK_APP_TOKEN", None)
    return env


def start(command: str, env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """``ghost serve --host 127.0.0.1`` or ``ghost worker``; stderr goes to ``log``."""
    args = [sys.executable, "-m", "bot.cli", command]
    if command == "serve":
        args += ["--host", "127.0.0.1"]
    with log.open("ab") as err:
        return subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"ghost serve exited with {proc.returncode}"
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read()
            return base
        except OSError:
            time.sleep(0.05)
    raise AssertionError("ghost serve did not answer /healthz")


def investigate(base: str, fake_slack: FakeSlack, symptom: str) -> str:
    """A signed `/ghost investigate`; the ack's text (asserted 200 within Slack's 3 s)."""
    body = urlencode({"command": "/ghost", "text": f"investigate {symptom}",
                      "user_id": REQUESTER, "channel_id": CHANNEL, "team_id": "T1",
                      "response_url": fake_slack.base_url.replace("/api/", "/respond/1")})
    signed = sign(body, "application/x-www-form-urlencoded")
    request = urllib.request.Request(base + "/slack/events", data=body.encode(),
                                     headers={k: v[0] for k, v in signed.headers.items()})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200 and time.monotonic() - started < 3
        return str(reply.read().decode())


def roots_of(fake_slack: FakeSlack, session_id: str) -> list[dict[str, Any]]:
    """The thread roots (top-level posts) naming ``session_id``."""
    return [m for (channel, _ts), m in list(fake_slack.messages.items())
            if channel == CHANNEL and not m.get("thread_ts")
            and f"`{session_id}`" in json.dumps(m)]


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
