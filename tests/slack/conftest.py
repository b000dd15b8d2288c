"""Slack fixtures: the mock Web API, signed requests into the real bolt app, a worker."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from tests.fakes.slack_api import FakeSlack

SECRET = "test-signing-secret"
CHANNEL = "C0INCIDENT"
REQUESTER, APPROVER, OTHER_MEMBER, OUTSIDER = "UREQ", "UAPPROVER", "UOTHER", "UOUTSIDER"


class InlineExecutor(Executor):
    """Runs a listener in the dispatching thread, so ``dispatch`` returns after it finished."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            future.set_exception(exc)
        return future


def sign(body: str, content_type: str, *, secret: str = SECRET,
         timestamp: int | None = None, extra: dict[str, str] | None = None) -> BoltRequest:
    ts = str(timestamp if timestamp is not None else int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"content-type": [content_type], "x-slack-request-timestamp": [ts],
               "x-slack-signature": [f"v0={digest}"]}
    for k, v in (extra or {}).items():
        headers[k] = [v]
    return BoltRequest(body=body, headers=headers)


@dataclass
class SlackHarness:
    """The bolt app, its services, the mock Slack, and helpers that act like Slack users."""

    services: Any
    fake: FakeSlack
    worker: Any
    store: Any

    @property
    def app(self) -> Any:
        return self.services.app

    def dispatch(self, request: BoltRequest) -> BoltResponse:
        return self.app.dispatch(request)

    def slash(self, text: str, user: str = REQUESTER, channel: str = CHANNEL) -> BoltResponse:
        body = urlencode({"token": "x", "team_id": "T1", "channel_id": channel,
                          "user_id": user, "command": "/ghost", "text": text,
                          "trigger_id": "trig.1", "response_url":
                          self.fake.base_url.replace("/api/", "/respond/1")})
        return self.dispatch(sign(body, "application/x-www-form-urlencoded"))

    def interactive(self, payload: dict[str, Any]) -> BoltResponse:
        body = urlencode({"payload": json.dumps(payload)})
        return self.dispatch(sign(body, "application/x-www-form-urlencoded"))

    def click(self, action_id: str, value: str, user: str, *, message_ts: str = "1.0",
              channel: str = CHANNEL) -> BoltResponse:
        return self.interactive({
            "type": "block_actions", "user": {"id": user}, "team": {"id": "T1"},
            "channel": {"id": channel}, "trigger_id": f"trig.{action_id}",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
            "message": {"ts": message_ts},
            "actions": [{"action_id": action_id, "value": value, "block_id": "b",
                         "type": "button"}]})

    def submit(self, callback_id: str, metadata: str, user: str,
               values: dict[str, str | None]) -> BoltResponse:
        state = {block: {"value": {"type": "plain_text_input", "value": v}}
                 for block, v in values.items()}
        return self.interactive({
            "type": "view_submission", "user": {"id": user}, "team": {"id": "T1"},
            "view": {"id": "V1", "type": "modal", "callback_id": callback_id,
                     "private_metadata": metadata, "state": {"values": state}}})

    def event(self, event: dict[str, Any], event_id: str,
              retry: int | None = None) -> BoltResponse:
        body = json.dumps({"type": "event_callback", "team_id": "T1", "event_id": event_id,
                           "event": event})
        extra = {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"} \
            if retry else None
        return self.dispatch(sign(body, "application/json", extra=extra))

    def prompt_value(self, inv: Any) -> str:
        """What the newest Continue / Done (Extend / Generate RCA) buttons carry: the session
        id and the prompt's key, as a click sends it."""
        for message in reversed(self.fake.thread(CHANNEL, str(inv.thread_ref))):
            for block in message.get("blocks") or []:
                if block.get("type") == "actions" and \
                        str(block.get("block_id", "")).startswith("prompt:"):
                    return str(block["elements"][0]["value"])
        raise AssertionError("no open prompt in the thread")

    def only_investigation(self) -> Any:
        (inv,) = self.store.list_investigations()
        return inv

    def pending_approval(self, sid: str) -> Any:
        (approval,) = self.store.approvals(sid, statuses=("pending",))
        return approval


def make_harness(store: Any, fake: FakeSlack, data_dir: Path,
                 monkeypatch: pytest.MonkeyPatch, **env: str) -> SlackHarness:
    from bot.settings import Settings
    from bot.slack.app import build_slack
    from bot.slack.client import Pacer
    from bot.worker import Worker

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_API_URL", fake.base_url)
    monkeypatch.setenv("GHOST_DATA_DIR", str(data_dir))
    monkeypatch.setenv("GHOST_MODEL", "gemini-test")
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    services = build_slack(settings, store, listener_executor=InlineExecutor(),
                           pacer=Pacer(0.0), sleep=lambda _s: None)
    runtime = services.runtime
    worker = Worker(store=store, engine=runtime.engine, shell_for=runtime.shell_for,
                    after=runtime.after_advance, failed=runtime.failed, owner="test-worker",
                    lease_seconds=30, before=runtime.before_advance)
    return SlackHarness(services=services, fake=fake, worker=worker, store=store)


@pytest.fixture
def fake_slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    fake = FakeSlack(members={CHANNEL: [REQUESTER, APPROVER, OTHER_MEMBER]},
                     groups={"SONCALL": [OTHER_MEMBER]}).start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield fake
    fake.stop()


@pytest.fixture
def slack(store: Any, fake_slack: FakeSlack, fake_gemini: Any, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> SlackHarness:
    return make_harness(store, fake_slack, tmp_path / "data", monkeypatch)
