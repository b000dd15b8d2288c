"""SIGTERM under a burst: `ghost serve` exits within 10 s with every acked investigation
recorded and no lease held; what it did not post stays queued and the next process posts it,
once. (Before: ~40 s to exit with leases held, threads sleeping in the post pacer.)"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any, cast

from tests.fakes.gemini_server import text_turn
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

BURST = 20


def test_the_drain_cuts_the_pacers_wait_short_and_counts_the_budget() -> None:
    from bot.slack.client import Pacer
    from bot.worker import Drain

    drain = Drain(budget_s=10.0)
    pacer = Pacer(1.0, sleep=drain.sleep)
    for _ in range(3):  # a backlog: the next slot is 3 s away
        pacer.wait("C1")
    waiter = threading.Thread(target=pacer.wait, args=("C1",))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive()  # paced as usual before the signal
    began = time.monotonic()
    drain.begin()
    waiter.join(timeout=2)
    assert not waiter.is_alive() and time.monotonic() - began < 1.5  # the slot was 3 s away
    assert 8.5 < drain.left(reserve_s=1.0) <= 9.0


def test_acks_in_flight_are_waited_for() -> None:
    from bot.worker import InFlight

    in_flight = InFlight()
    assert in_flight.wait_idle(0)
    entered = threading.Event()

    def request() -> None:
        with in_flight:
            entered.set()
            time.sleep(0.3)

    threading.Thread(target=request).start()
    entered.wait(2)
    assert not in_flight.wait_idle(0.05)
    assert in_flight.wait_idle(2)


def test_hand_back_releases_what_the_worker_holds(store: Any) -> None:
    from bot.worker import Worker

    ours = store.create_investigation(symptom="a", model="m", audit_dir="/tmp",
                                      platform="slack").session_id
    theirs = store.create_investigation(symptom="b", model="m", audit_dir="/tmp",
                                        platform="slack").session_id
    assert store.take_lease(ours, "me") and store.take_lease(theirs, "other")
    assert store.acquire_lease("job:reconcile", "me", seconds=30)
    worker = Worker(store=store, engine=cast(Any, None), shell_for=lambda _s: None,
                    after=lambda *_a: None, failed=lambda *_a: None, owner="me")
    assert worker.hand_back() == [ours]
    assert store.release_job_leases("me") == 1
    assert store.get_investigation(ours).lease_owner is None
    assert store.get_investigation(theirs).lease_owner == "other"
    assert store.acquire_lease("job:reconcile", "next-replica", seconds=30)


def _held_leases(store: Any) -> list[str]:
    from sqlalchemy import select

    from storage.models import Investigation, Lease

    with store.db.session() as s:
        held = list(s.scalars(select(Investigation.session_id)
                              .where(Investigation.lease_owner.is_not(None))))
        return held + [f"job {n}" for n in s.scalars(
            select(Lease.name).where(Lease.owner.is_not(None)))]


def test_sigterm_under_a_burst_of_20_exits_within_10_s_and_loses_nothing(
        cli_env: dict[str, str], fake_slack: Any, fake_gemini: Any, store: Any,
        tmp_path: Path) -> None:
    fake_gemini.enqueue(*[text_turn("Which resource group?") for _ in range(2 * BURST)])
    port = free_port()
    # the default pace (1 post a second in the channel): the burst is a backlog of ~40 s
    env = ghost_env(cli_env, fake_slack, PORT=str(port), GHOST_SLACK_POST_INTERVAL_S="1")
    log = tmp_path / "ghost.log"
    proc = start("serve", env, tmp_path, log)
    after = None
    try:
        base = wait_healthy(port, proc)
        acks = [investigate(base, fake_slack, f"burst symptom {i}") for i in range(BURST)]
        time.sleep(0.5)  # the worker is busy posting, paced
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        took = time.monotonic() - signalled
        assert took < 10, f"took {took:.1f} s to exit; {log.read_text()[-3000:]}"
        assert proc.returncode == 0, log.read_text()[-3000:]
        invs = store.list_investigations(limit=100)
        assert len(invs) == BURST and all(inv.session_id in "".join(acks) for inv in invs)
        assert _held_leases(store) == []
        for inv in invs:  # each root went out once, or is still owed and says so
            posted = roots_of(fake_slack, inv.session_id)
            assert len(posted) == (1 if inv.thread_ref else 0)
            assert inv.thread_ref or inv.conversation_ref["root"]["state"] == "pending"
        # roots go out first, right after each ack (issue 34), and a drain sends what the
        # threads were owed at once: whatever was not sent is still recorded (below)
        # the next process posts what was owed, once each, and starts every investigation
        after = start("worker", env | {"GHOST_SLACK_POST_INTERVAL_S": "0"}, tmp_path, log)
        wait_until(lambda: all(store.get_investigation(inv.session_id).status
                               == "awaiting_user" for inv in invs), 120,
                   "every investigation to reach its first prompt")
        assert all(len(roots_of(fake_slack, inv.session_id)) == 1 for inv in invs)
    finally:
        stop(proc)
        if after is not None:
            stop(after)


def test_a_step_stuck_past_the_deadline_is_handed_back_and_serve_still_exits(
        cli_env: dict[str, str], fake_slack: Any, fake_gemini: Any, store: Any,
        tmp_path: Path) -> None:
    from tests.fakes import gemini_server as gem

    fake_gemini.enqueue(gem.Scripted(200, text_turn("too late").body, 30.0))  # Gemini hangs
    port = free_port()
    env = ghost_env(cli_env, fake_slack, PORT=str(port), GHOST_SLACK_POST_INTERVAL_S="0",
                    GHOST_LEASE_SECONDS="60")
    log = tmp_path / "ghost.log"
    proc = start("serve", env, tmp_path, log)
    try:
        investigate(wait_healthy(port, proc), fake_slack, "gemini never answers")
        wait_until(lambda: bool(fake_gemini.requests), 30, "the model call")
        (inv,) = store.list_investigations()
        assert store.get_investigation(inv.session_id).lease_owner  # in its step
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert time.monotonic() - signalled < 10, log.read_text()[-3000:]
        inv = store.get_investigation(inv.session_id)
        # handed back at once (not after the 60 s lease): runnable for the next process
        assert inv.lease_owner is None and inv.status in ("queued", "running")
        assert _held_leases(store) == []
        assert "handed back 1 investigation" in log.read_text()
    finally:
        stop(proc)
