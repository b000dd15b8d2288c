"""The Pacer's budgets (issue 17): replies one a second per channel, thread roots in a burst,
``chat.update`` on its own budget with edits of one message coalesced (latest wins)."""

from __future__ import annotations

import threading
import time
from typing import Any

from bot.slack.client import Pacer


class Clock:
    """A clock that only moves when the pacer sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def test_replies_keep_one_a_second_per_channel() -> None:
    clock = Clock()
    pacer = Pacer(1.0, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        pacer.wait("C1")
    pacer.wait("C2", "post")
    assert clock.slept == [1.0, 1.0]


def test_twenty_roots_at_once_all_go_out_now_and_replies_keep_the_average() -> None:
    clock = Clock()
    pacer = Pacer(1.0, clock=clock, sleep=clock.sleep)
    waits = [pacer.wait("C1", "root") for _ in range(20)]
    assert waits == [0.0] * 20 and clock.slept == []
    assert pacer.wait("C1", "root") == 1.0           # the 21st: the burst is spent
    # the roots count against the channel: its replies resume at about one a second overall
    assert pacer.wait("C1") >= 20.0
    assert pacer.wait("C2") == 0.0                   # other channels are not affected


def test_a_backlog_of_replies_does_not_delay_a_root() -> None:
    clock = Clock()
    pacer = Pacer(1.0, clock=clock, sleep=lambda s: None)   # 10 replies queued, none slept
    for _ in range(10):
        pacer.wait("C1")
    assert pacer.wait("C1", "root") == 0.0


def test_updates_have_their_own_budget() -> None:
    clock = Clock()
    pacer = Pacer(1.0, updates_per_minute=50, update_burst=10, clock=clock,
                  sleep=lambda s: None)
    for _ in range(10):
        pacer.wait("C1")                             # a backlog of posts in the channel
    assert [pacer.wait("C1", "update") for _ in range(10)] == [0.0] * 10
    assert round(pacer.wait("C1", "update"), 3) == 1.2   # Tier 3: 50 a minute after the burst
    assert pacer.wait("C1", "root") == 0.0


def test_interval_zero_turns_every_budget_off() -> None:
    clock = Clock()
    pacer = Pacer(0.0, clock=clock, sleep=clock.sleep)
    for kind in ("post", "root", "update") * 30:
        pacer.wait("C1", kind)
    sent: list[int] = []
    for i in range(30):
        assert pacer.update("C1", "1.0", lambda i=i: sent.append(i))
    assert clock.slept == [] and sent == list(range(30))


def test_edits_of_one_message_coalesce_latest_wins() -> None:
    """While an edit waits for its slot, newer edits of the same message replace it and
    return at once; the waiting caller sends only the newest. Other messages are not merged."""
    gate = threading.Event()

    def sleep(seconds: float) -> None:
        assert gate.wait(5)

    pacer = Pacer(1.0, updates_per_minute=60, update_burst=1, sleep=sleep)
    sent: list[str] = []
    assert pacer.update("C1", "1.0", lambda: sent.append("first"))   # the burst: sent now
    waiter = threading.Thread(target=pacer.update,
                              args=("C1", "1.0", lambda: sent.append("v1")))
    waiter.start()
    deadline = time.monotonic() + 5
    while not pacer._edits and time.monotonic() < deadline:   # noqa: SLF001 - it waits
        time.sleep(0.01)
    assert pacer.update("C1", "1.0", lambda: sent.append("v2")) is False
    assert pacer.update("C1", "1.0", lambda: sent.append("v3")) is False
    gate.set()
    waiter.join(5)
    assert sent == ["first", "v3"]
    assert pacer.update("C1", "2.0", lambda: sent.append("other")) is True
    assert sent[-1] == "other"


def test_an_older_edit_never_lands_after_a_newer_one() -> None:
    """Edits that overtake each other across threads: whatever the timing, the message ends
    with the newest content."""
    pacer = Pacer(1.0, updates_per_minute=6000, update_burst=5)
    shown: list[int] = []
    lock = threading.Lock()

    def edit(i: int) -> None:
        def send() -> None:
            time.sleep(0.001 * (i % 3))
            with lock:
                shown.append(i)
        pacer.update("C1", "1.0", send)

    threads = []
    for i in range(40):
        t = threading.Thread(target=edit, args=(i,))
        threads.append(t)
        t.start()
        time.sleep(0.002)
    for t in threads:
        t.join(5)
    assert shown == sorted(shown) and shown[-1] == 39


def test_twenty_roots_in_one_channel_appear_within_two_seconds_through_the_port(
        fake_slack: Any) -> None:
    """SlackPort over the real WebClient and the mock Web API, the real one-a-second pace:
    with replies queued and status edits flowing in the channel, 20 investigations' roots
    posted at once are all in Slack at once (under 2 s on an idle machine), not one a second;
    the edits coalesce instead of queueing."""
    from bot.chat.status import StatusView
    from bot.slack.client import make_client
    from bot.slack.port import SlackPort

    stop = threading.Event()
    pacer = Pacer(1.0, sleep=lambda s: None if stop.wait(s) else None)
    port = SlackPort(make_client("xoxb-test", fake_slack.base_url), pacer)

    def view(i: int, turn: int = 0) -> StatusView:
        return StatusView(f"s{i:02d}", f"symptom {i:02d}", "UREQ", "running", "Investigating",
                          turn, 50)

    first = port.post_root("C1", view(99))
    thread = Thread99(first)
    busy = [threading.Thread(target=port.post_text, args=(thread, f"reply {i}"), daemon=True)
            for i in range(4)]
    busy += [threading.Thread(target=port.update_status, args=(thread, view(99, t)),
                              daemon=True) for t in range(30)]
    for t in busy:
        t.start()
    time.sleep(0.2)
    began = time.monotonic()
    roots = [threading.Thread(target=port.post_root, args=("C1", view(i)), daemon=True)
             for i in range(20)]
    for t in roots:
        t.start()
    for t in roots:
        t.join(5)
    took = time.monotonic() - began
    posted = [c for c in fake_slack.called("chat.postMessage") if not c.args.get("thread_ts")]
    stop.set()
    for t in busy:
        t.join(5)
    # paced one a second they would take 20 s; the bound leaves a busy CI machine room
    assert len(posted) == 21 and took < 5.0, took
    edits = fake_slack.called("chat.update")
    assert 0 < len(edits) < 30                           # coalesced, not one per call


class Thread99:
    """A thread reference, as ``bot.chat.ports.Thread``."""

    def __init__(self, ts: str) -> None:
        self.session_id, self.channel_ref, self.thread_ref = "s99", "C1", ts


def test_a_status_edit_never_makes_the_caller_wait(caplog: Any) -> None:
    """``wait=False``: with the update budget spent, the edit goes to the background editor and
    the investigation goes on at once; only the newest content is sent, when a slot is free;
    a failure there is logged, not raised into the worker."""
    pacer = Pacer(1.0, updates_per_minute=300, update_burst=1)     # a slot every 0.2 s
    sent: list[str] = []
    assert pacer.update("C1", "1.0", lambda: sent.append("now"), wait=False) is True
    began = time.monotonic()
    for i in range(5):
        assert pacer.update("C1", "1.0", lambda i=i: sent.append(f"v{i}"), wait=False) is False

    def broken() -> None:
        raise RuntimeError("chat.update answered 500")
    pacer.update("C1", "2.0", broken, wait=False)
    # waiting would take a second (five slots 0.2 s apart); the bound leaves room for a busy CI
    assert time.monotonic() - began < 0.5 and sent == ["now"]
    deadline = time.monotonic() + 5
    while (len(sent) < 2 or pacer._editor is not None) and time.monotonic() < deadline:  # noqa: SLF001
        time.sleep(0.02)
    assert sent == ["now", "v4"]
    assert "chat.update answered 500" in caplog.text
