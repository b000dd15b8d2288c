"""Whether a terminal run that holds an investigation still exists (issue 34): a dead process,
a reused PID and a holder on another host, as the orphan scan and `--resume` see them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta

from bot.bootstrap import session_is_live
from bot.terminal import holders
from bot.terminal.lease import TerminalLease
from core.orchestrator.orphans import Liveness
from core.session_state import utc_now
from storage.store import Store

HOST = socket.gethostname()


def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def terminal_session(store: Store, owner: str, *, lease_s: float = 600) -> str:
    sid = store.create_investigation(symptom="redis timeouts", model="m", audit_dir="a",
                                     requested_by="ana", status="running").session_id
    assert store.take_lease(sid, owner, lease_seconds=lease_s)
    return sid


def test_the_owner_names_host_pid_and_start_time_and_parses_back() -> None:
    owner = holders.owner_for_this_process()
    holder = holders.parse(owner)
    assert holder is not None and holder.host == HOST and holder.pid == os.getpid()
    assert holder.started is not None and not holders.is_gone(holder)
    old = holders.parse(f"terminal:{HOST}:{os.getpid()}")  # written before start times
    assert old is not None and old.started is None and not holders.is_gone(old)
    assert holders.parse("worker:host:12:abc") is None and holders.parse(None) is None
    assert holders.parse("terminal:host:notapid") is None


def test_a_pid_that_is_gone_or_reused_means_the_run_is_dead() -> None:
    assert holders.is_gone(holders.Holder(HOST, dead_pid(), None))
    # this PID is running, but it is not the process that took the lease (started earlier)
    me = holders.parse(holders.owner_for_this_process())
    assert me is not None and me.started is not None
    assert holders.is_gone(holders.Holder(HOST, me.pid, me.started - 3600))
    # another host cannot be asked: never called gone
    assert not holders.is_gone(holders.Holder(HOST + "-elsewhere", dead_pid(), None))


def test_the_orphan_scan_sees_a_killed_local_run_at_once_and_names_it(store: Store) -> None:
    pid = dead_pid()
    sid = terminal_session(store, f"terminal:{HOST}:{pid}:12345.00")
    life = session_is_live(store, sid)
    assert life == Liveness(False, life.note)  # dead although its lease runs 10 more minutes
    assert f"pid {pid} on {HOST}" in str(life.note) and "no longer running" in str(life.note)


def test_a_run_on_another_host_may_still_be_running_until_its_lease_expires(
        store: Store) -> None:
    sid = terminal_session(store, "terminal:build-box-7:4242:12345.00")
    life = session_is_live(store, sid)
    expires = store.get_investigation(sid).lease_expires_at
    assert life.live and life.remote
    assert "pid 4242 on build-box-7" in str(life.note)
    assert expires is not None and f"{expires:%Y-%m-%d %H:%M:%S}" in str(life.lease_expires_at)
    # once its lease lapsed, it is dead, and the note says so
    later = Store(store.db, clock=lambda: utc_now() + timedelta(hours=1))
    gone = session_is_live(later, sid)
    assert not gone.live and "stopped renewing its lease" in str(gone.note)


def test_a_live_local_run_is_live_and_a_chat_one_lives_by_its_status(store: Store) -> None:
    sid = terminal_session(store, holders.owner_for_this_process())
    assert session_is_live(store, sid) == Liveness(True)
    chat = store.create_investigation(symptom="s", model="m", audit_dir="a", platform="slack",
                                      status="awaiting_approval").session_id
    assert session_is_live(store, chat).live
    store.set_status(chat, "completed")
    assert not session_is_live(store, chat).live


def test_resume_takes_over_from_a_reused_pid_but_not_from_a_live_run(store: Store) -> None:
    me = holders.parse(holders.owner_for_this_process())
    assert me is not None and me.started is not None
    # the PID is running, but since another start: the run that held the lease is dead
    sid = terminal_session(store, f"terminal:{HOST}:{me.pid}:{me.started - 600:.2f}")
    lease = TerminalLease(store, sid, seconds=60, owner="terminal:x:1:1")
    try:
        assert lease.acquire()
    finally:
        lease.release()
    live = terminal_session(store, holders.owner_for_this_process())
    assert not TerminalLease(store, live, seconds=60, owner="terminal:x:2:1").acquire()
