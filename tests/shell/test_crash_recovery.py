"""Ghost killed mid-command: after restart the audit shows the command as interrupted, and it
is never run again."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from storage.store import Store


class _Approve:
    decides_immediately = True

    def request(self, request: object) -> Decision:
        return Decision.approve("alice")


def _victim(url: str, sid: str, data_dir: str, marker: str, tool: str) -> None:
    store = Store.from_url(url)
    shell = SafeExecShell(sid, audit=store, approvals=store, approver=_Approve(),
                          data_dir=Path(data_dir))
    shell.execute({"command": f"{tool} append-then-sleep {marker} 'ran ' 4",
                   "reasoning": "slow"})


def test_killed_mid_command_is_recorded_as_interrupted(store: Store, migrated_url: str,
                                                       tmp_path: Path, tool: str) -> None:
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a").session_id
    marker = tmp_path / "marker"
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_victim, args=(migrated_url, sid, str(tmp_path), str(marker),
                                                     tool))
    proc.start()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the command never started"
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)  # Ghost dies while the command runs
    proc.join(10)

    records = store.audit_records(sid)
    assert records[-1]["kind"] == "command_started"  # the durable trace is there
    approval_id = records[-1]["details"]["approval_id"]

    restarted = SafeExecShell(sid, audit=store, approvals=store, approver=_Approve(),
                              data_dir=tmp_path)
    closed = restarted.recover_interrupted()
    assert len(closed) == 1
    last = store.audit_records(sid)[-1]
    assert last["status"] == "error" and last["error"] == "interrupted"
    again = restarted.resume(approval_id)
    assert again["error"] == "interrupted" and again["audit_id"] == closed[0]
    time.sleep(0.2)
    assert marker.read_text() == "ran "  # not run a second time
    assert store.verify_audit(sid).ok
