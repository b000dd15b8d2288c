"""SIGTERM under a burst: `ghost serve` exits within 10 s with every acked investigation
recorded and no lease held; what it did not post stays queued and the next process posts it,
once. (Before: ~40 s to exit with leases held, threads sleeping in the post pacer.)"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

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
        assert any(not inv.thread_ref for inv in invs), "the burst was no backlog"
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
