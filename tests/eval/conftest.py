"""Fixtures of the eval tests: the mock Slack Web API (as tests/lab/test_chat_lab.py sets it
up) for the status-message test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import APPROVER, CHANNEL, OTHER_MEMBER, REQUESTER


@pytest.fixture
def slack_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    fake = FakeSlack(members={CHANNEL: [REQUESTER, APPROVER, OTHER_MEMBER]}).start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield fake
    fake.stop()
