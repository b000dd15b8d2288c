"""The Slack client's retries against the mock Web API (issue 23): a 500/502/503/504 is sent
again after a short, bounded backoff, alongside the 429 and connection-error handlers; after
the last retry the error reaches the caller (whose outbox tries again later)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from bot.slack.client import make_client
from tests.fakes.slack_api import FakeSlack


class FlakySlack(FakeSlack):
    """The mock Web API, answering the next calls of a method with the given HTTP statuses
    (a 5xx, a 429) before answering normally."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[str, list[int]] = {}

    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        queued = self.answers.get(method)
        if queued:
            status = queued.pop(0)
            self._record_call(method, args)
            return status, {"ok": False, "error": "ratelimited" if status == 429 else
                            "internal_error"}
        return super()._answer(method, args)

    def _record_call(self, method: str, args: dict[str, Any]) -> None:
        from tests.fakes.slack_api import Call

        self._record(Call(method, args))


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Iterator[FlakySlack]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    fake = FlakySlack()
    fake.start()
    yield fake
    fake.stop()


def _client(fake: FakeSlack, slept: list[float]) -> Any:
    return make_client("xoxb-test", fake.base_url, sleep=slept.append)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_server_error_is_retried_once_and_the_message_posted_once(
        flaky: FlakySlack, status: int) -> None:
    slept: list[float] = []
    flaky.answers["chat.postMessage"] = [status]
    response = _client(flaky, slept).chat_postMessage(channel="C1", text="root")
    assert response["ok"] and response["ts"]
    assert len(flaky.called("chat.postMessage")) == 2          # the 5xx, then the retry
    assert [m["text"] for m in flaky.messages.values()] == ["root"]  # shown once
    assert slept == [0.5]                                       # the first backoff step


def test_the_backoff_is_bounded_and_the_error_reaches_the_caller(flaky: FlakySlack) -> None:
    slept: list[float] = []
    flaky.answers["chat.update"] = [500, 503, 500, 500]
    with pytest.raises(SlackApiError) as raised:
        _client(flaky, slept).chat_update(channel="C1", ts="1.0", text="edit")
    assert raised.value.response.status_code == 500
    assert len(flaky.called("chat.update")) == 3                 # 1 + 2 retries
    assert slept == [0.5, 1.0]
    assert flaky.answers["chat.update"] == [500]                 # the 4th was never asked


def test_a_429_and_a_500_each_get_their_own_retries(flaky: FlakySlack) -> None:
    """A rate limit before a server error does not use up the server error's retries."""
    slept: list[float] = []
    flaky.answers["chat.postMessage"] = [429, 429, 500, 502]
    response = _client(flaky, slept).chat_postMessage(channel="C1", text="card")
    assert response["ok"]
    assert len(flaky.called("chat.postMessage")) == 5
    assert slept == [0.0, 0.0, 0.5, 1.0]          # Retry-After: 0 from the mock, then backoff


def test_a_client_error_is_not_retried(flaky: FlakySlack) -> None:
    slept: list[float] = []
    flaky.answers["chat.postMessage"] = [400]
    with pytest.raises(SlackApiError):
        _client(flaky, slept).chat_postMessage(channel="C1", text="x")
    assert len(flaky.called("chat.postMessage")) == 1 and slept == []
