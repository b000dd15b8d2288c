"""Teams fixtures: botbuilder's TestAdapter driving the real bot, port, runtime and worker.

Activities are delivered with ``receive_activity`` on the port's loop thread, as Teams would
deliver them (a channel thread's conversation id, channel data, Entra ID object ids). The
adapter records every proactive post and update, so the thread can be read back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from botbuilder.core.adapters import TestAdapter
from botbuilder.schema import (
    Activity,
    ChannelAccount,
    ConversationAccount,
    ResourceResponse,
)

from bot.teams.loop import LoopThread
from bot.teams.port import Delivery

CHANNEL = "19:incident@thread.tacv2"
TENANT = "tenant-1"
REQUESTER, APPROVER, OTHER, BOT = "aad-req", "aad-approver", "aad-other", "28:ghost-bot"
NAMES = {REQUESTER: "Rea Quester", APPROVER: "Ada Approver", OTHER: "Otto Other"}


class RecordingAdapter(TestAdapter):  # type: ignore[misc]
    """A TestAdapter that gives every sent activity its id, so updates can be matched."""

    __test__ = False

    async def send_activities(self, context: Any, activities: list[Activity]
                              ) -> list[ResourceResponse]:
        out = []
        for activity in activities:
            self._next_id += 1
            activity.id = f"m{self._next_id}"
            self.activity_buffer.append(activity)
            out.append(ResourceResponse(id=activity.id))
        return out


class FakeTime:
    """A clock that only moves when slept on: pacing and retries are asserted, never waited."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass
class TeamsHarness:
    services: Any
    adapter: RecordingAdapter
    worker: Any
    store: Any
    loop: LoopThread
    time: FakeTime = field(default_factory=FakeTime)
    roots: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ acting as Teams
    def _deliver(self, activity: Activity, user: str, root: str) -> None:
        activity.from_property = ChannelAccount(id=f"29:{user}", name=NAMES.get(user, user),
                                                aad_object_id=user)
        activity.recipient = ChannelAccount(id=BOT, name="Ghost")
        activity.conversation = ConversationAccount(
            id=f"{CHANNEL};messageid={root}", is_group=True, conversation_type="channel",
            tenant_id=TENANT)
        activity.channel_id = "msteams"
        activity.service_url = "https://smba.example.test/amer/"
        activity.channel_data = {"channel": {"id": CHANNEL}, "tenant": {"id": TENANT},
                                 "team": {"id": "19:team@thread.tacv2"}}
        self.loop.run(self.adapter.receive_activity(activity))
        self.loop.run(self.services.bot.settle())  # the posts queued for after the response

    def mention(self, text: str, user: str = REQUESTER, root: str = "1700000000001") -> Any:
        """``@Ghost <text>``: the first one in a thread is the channel post that starts it
        (its id is the thread's root); later ones are replies, each with its own id."""
        activity_id = root if root not in self.roots else \
            f"{root}.{len(self.adapter.activity_buffer)}"
        self.roots.append(root)
        self._deliver(Activity(type="message", id=activity_id,
                               text=f"<at>Ghost</at> {text}"), user, root)
        return self.sent()[-1] if self.sent() else None

    def click(self, verb: str, data: dict[str, Any], user: str, *,
              root: str = "1700000000001") -> dict[str, Any]:
        """An ``Action.Execute`` click; the invoke response's card, as the clicker sees it."""
        before = len(self.adapter.activity_buffer)
        self._deliver(Activity(type="invoke", id=f"invoke.{before}.{verb}",
                               name="adaptiveCard/action", value={
            "action": {"type": "Action.Execute", "verb": verb, "data": data},
            "trigger": "manual"}), user, root)
        (response,) = [a for a in self.adapter.activity_buffer[before:]
                       if a.type == "invokeResponse"]
        body = response.value.body
        assert response.value.status == 200 and body["statusCode"] == 200, body
        assert body["type"] == "application/vnd.microsoft.card.adaptive"
        return dict(body["value"])

    # ------------------------------------------------------------------ reading back
    def sent(self) -> list[Activity]:
        return [a for a in self.adapter.activity_buffer if a.type == "message"]

    def current(self, activity_id: str) -> Any:
        """The activity as everyone sees it now (the last update wins)."""
        updates = [a for a in self.adapter.updated_activities if a.id == activity_id]
        if updates:
            return updates[-1]
        (found,) = [a for a in self.sent() if a.id == activity_id]
        return found

    def only_investigation(self) -> Any:
        (inv,) = self.store.list_investigations()
        return inv

    def pending_approval(self, sid: str) -> Any:
        (approval,) = self.store.approvals(sid, statuses=("pending",))
        return approval


def content(activity: Any) -> str:
    """Everything visible in a message: its text and its cards."""
    parts = [str(activity.text or "")]
    parts += [str(a.content) for a in activity.attachments or []]
    return "\n".join(parts)


def make_harness(store: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                 loop: LoopThread, groups: Any = None, adapter: Any = None,
                 **env: str) -> TeamsHarness:
    from bot.settings import Settings
    from bot.teams.app import build_teams
    from bot.worker import Worker

    monkeypatch.setenv("MicrosoftAppId", "00000000-0000-0000-0000-0000000000b0")
    monkeypatch.setenv("MicrosoftAppPassword", "test-secret")
    monkeypatch.setenv("GHOST_DATA_DIR", str(data_dir))
    monkeypatch.setenv("GHOST_MODEL", "gemini-test")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    adapter = adapter or RecordingAdapter()
    fake_time = FakeTime()
    delivery = Delivery(clock=fake_time.clock, sleep=fake_time.sleep)
    services = build_teams(settings, store, adapter=adapter, loop=loop,
                           groups=groups or (lambda _u, _g: set()), delivery=delivery)
    adapter.logic = services.bot.on_turn
    runtime = services.runtime
    worker = Worker(store=store, engine=runtime.engine, shell_for=runtime.shell_for,
                    after=runtime.after_advance, failed=runtime.failed, owner="teams-worker",
                    lease_seconds=30, before=runtime.before_advance)
    return TeamsHarness(services=services, adapter=adapter, worker=worker, store=store,
                        loop=loop, time=fake_time)


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("teams-test-loop")
    yield thread
    thread.stop()


@pytest.fixture
def teams(store: Any, fake_gemini: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          loop: LoopThread) -> TeamsHarness:
    return make_harness(store, tmp_path / "data", monkeypatch, loop)
