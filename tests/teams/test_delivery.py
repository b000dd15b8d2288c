"""Teams posts are paced per conversation and retried when the Bot Framework connector answers
429, honouring Retry-After, with a bounded number of attempts. The adapter raises the
connector's own ``ErrorResponseException``; the clock and sleep are fake, so nothing waits."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from botbuilder.schema import Activity, ErrorResponseException, ResourceResponse
from msrest import Deserializer

from bot.teams.port import Delivery, TeamsRateLimited, retry_after
from tests.fakes.gemini_server import function_call_turn
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import CHANNEL, FakeTime, RecordingAdapter, TeamsHarness, make_harness
from tests.teams.test_investigation_flow import start

THREAD = f"{CHANNEL};messageid=1700000000001"


class ConnectorResponse:
    """What msrest keeps of the connector's aiohttp response: status, reason, headers."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.reason, self.headers = status, "Too Many Requests", headers

    def raise_for_status(self) -> None:
        raise RuntimeError(f"HTTP {self.status}")

    def text(self) -> str:
        return ""


def connector_error(status: int = 429, **headers: str) -> ErrorResponseException:
    """The exception the connector's ``reply_to_activity`` raises on an error status."""
    deserialize = Deserializer({})  # type: ignore[no-untyped-call]
    return ErrorResponseException(deserialize, ConnectorResponse(
        status, {k.replace("_", "-"): v for k, v in headers.items()}))


class ThrottlingAdapter(RecordingAdapter):
    """Answers 429 to the next ``throttle`` sends or updates, then behaves."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.throttle = 0
        self.error: ErrorResponseException = connector_error(Retry_After="3")
        self.calls = 0

    def _maybe_throttle(self) -> None:
        self.calls += 1
        if self.throttle > 0:
            self.throttle -= 1
            raise self.error

    async def send_activities(self, context: Any, activities: list[Activity]
                              ) -> list[ResourceResponse]:
        self._maybe_throttle()
        return await super().send_activities(context, activities)

    async def update_activity(self, context: Any, activity: Activity) -> Any:
        self._maybe_throttle()
        return await super().update_activity(context, activity)


@pytest.fixture
def throttled(store: Any, fake_gemini: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              loop: Any) -> TeamsHarness:
    return make_harness(store, tmp_path / "data", monkeypatch, loop, adapter=ThrottlingAdapter())


def adapter_of(teams: TeamsHarness) -> ThrottlingAdapter:
    assert isinstance(teams.adapter, ThrottlingAdapter)
    return teams.adapter


def test_pacing_is_per_conversation_and_about_one_a_second() -> None:
    fake = FakeTime()
    delivery = Delivery(clock=fake.clock, sleep=fake.sleep)
    assert [delivery.pace("a") for _ in range(3)] == [0.0, 1.0, 1.0]
    assert delivery.pace("b") == 0.0                      # another thread is not held up
    fake.now += 5.0
    assert delivery.pace("a") == 0.0                      # idle long enough: no wait
    assert fake.sleeps == [1.0, 1.0]


def test_a_busy_thread_is_paced_through_the_injected_sleep(teams: TeamsHarness,
                                                           fake_gemini: Any) -> None:
    fake_gemini.enqueue(function_call_turn(shell("ss -tln"), text="Looking at listeners."),
                        complete())
    start(teams)
    posts = len(teams.sent()) + len(teams.adapter.updated_activities)
    assert posts >= 3
    # every post after the first in the thread waited for its slot, never longer than a second
    assert teams.time.sleeps and all(0 < s <= 1.0 for s in teams.time.sleeps)
    assert len(teams.time.sleeps) >= posts - 1 - 1    # the mention's own reply is not paced


def test_a_429_is_retried_after_retry_after_and_posted_once(throttled: TeamsHarness,
                                                            fake_gemini: Any,
                                                            caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    fake_gemini.enqueue(complete())
    inv = start(throttled)
    adapter = adapter_of(throttled)
    before, slept = len(throttled.sent()), len(throttled.time.sleeps)
    adapter.throttle = 2
    with caplog.at_level(logging.WARNING, logger="bot.teams.port"):
        throttled.services.port.post_text(inv, "checking the NSG next")
    new = throttled.sent()[before:]
    assert [a.text for a in new] == ["🧠 checking the NSG next"]     # once, not three times
    assert a_conversation(new[0]) == THREAD
    assert throttled.time.sleeps[slept:].count(3.0) == 2             # Retry-After honoured
    assert "retrying in 3.0s (attempt 1 of 5)" in caplog.text


def a_conversation(activity: Activity) -> str:
    return str(activity.conversation.id)


def test_a_card_update_is_retried_too(throttled: TeamsHarness, fake_gemini: Any) -> None:
    from bot.chat.status import StatusView

    fake_gemini.enqueue(complete())
    inv = start(throttled)
    adapter = adapter_of(throttled)
    adapter.throttle, calls = 1, adapter.calls
    updates = len(throttled.adapter.updated_activities)
    throttled.services.port.update_status(inv, StatusView(
        session_id=inv.session_id, symptom="x", requested_by=None, status="running",
        phase="Checking", turn=1, max_turns=10))
    assert len(throttled.adapter.updated_activities) == updates + 1
    assert adapter.calls - calls == 2


def test_it_gives_up_after_the_attempt_limit_with_a_clear_log_line(
        throttled: TeamsHarness, fake_gemini: Any, caplog: pytest.LogCaptureFixture) -> None:
    fake_gemini.enqueue(complete())
    inv = start(throttled)
    adapter = adapter_of(throttled)
    before, calls = len(throttled.sent()), adapter.calls
    adapter.throttle = 99
    with caplog.at_level(logging.ERROR, logger="bot.teams.port"), \
            pytest.raises(TeamsRateLimited, match="HTTP 429, 5 attempts"):
        throttled.services.port.post_text(inv, "never delivered")
    assert adapter.calls - calls == 5
    assert len(throttled.sent()) == before
    (line,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "giving up" in line.getMessage() and THREAD in line.getMessage()


def test_other_connector_errors_are_not_retried(throttled: TeamsHarness, fake_gemini: Any,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """A 403 (e.g. the bot was removed from the team) is not a rate limit: one attempt, then
    botbuilder's turn error handler logs it, as before pacing existed."""
    fake_gemini.enqueue(complete())
    inv = start(throttled)
    adapter = adapter_of(throttled)
    adapter.error, adapter.throttle, calls = connector_error(403), 1, adapter.calls
    before = len(throttled.sent())
    with caplog.at_level(logging.ERROR, logger="bot.teams.app"):
        throttled.services.port.post_text(inv, "forbidden")
    assert adapter.calls - calls == 1 and len(throttled.sent()) == before
    assert "unhandled error in the Teams bot" in caplog.text


def test_retry_after_as_a_date_or_missing() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after(connector_error(Retry_After=later), now=lambda: now) == 7.0
    assert retry_after(connector_error()) is None
    fake = FakeTime()
    delivery = Delivery(clock=fake.clock, sleep=fake.sleep, max_attempts=3, interval_s=0.0)
    failures = [connector_error(), connector_error()]

    def call() -> str:
        if failures:
            raise failures.pop()
        return "ok"

    assert delivery.deliver("c", "post", call) == "ok"
    assert fake.sleeps == [2.0, 4.0]                     # no Retry-After: back off, bounded
