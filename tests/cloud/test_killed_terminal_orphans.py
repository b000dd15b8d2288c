"""A `ghost investigate` killed with -9 mid-capture (issues 13, 34): a new session started at
once on the same machine — its lease still has most of a minute to run — reports the capture as
an orphan, names the dead session and process, and, approved, deletes it. The CLI processes, the
fake Gemini, the real Azure SDK against the fake ARM endpoint and Azurite, as the other cloud
tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from storage.store import Store
from tests.cloud.fake_arm import FakeArm
from tests.cloud.test_investigate_capture import CAPTURE, azure_env, lab
from tests.engine.test_investigate_cli import _read_until, session_id_of
from tests.fakes.gemini_server import call, function_call_turn, text_turn

#: long enough that only the dead process, not a lapsed lease, can explain the report
LEASE_S = 60.0


def test_a_capture_left_by_a_killed_run_is_reported_and_cleaned_up(
        fake_gemini: Any, arm: FakeArm, azurite: str, cli_env: dict[str, str], store: Store,
        tmp_path: Path) -> None:
    lab(arm, azurite)
    arm.state.running_polls = 10_000  # the capture keeps running on "Azure"
    env = azure_env(cli_env, arm, azurite) | {"PYTHONUNBUFFERED": "1",
                                              "GHOST_LEASE_SECONDS": str(LEASE_S)}
    ghost = [sys.executable, "-m", "bot.cli", "investigate"]
    fake_gemini.enqueue(function_call_turn(CAPTURE),
                        text_turn("The capture is running; I will check it in a minute."))
    proc = subprocess.Popen([*ghost, "502s from web-vm-01 to redis"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        seen = _read_until(proc, "Your choice:")  # the capture's creation needs approval
        assert proc.stdin is not None
        proc.stdin.write("a\n")
        proc.stdin.flush()
        seen += _read_until(proc, "Continue investigation?")
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no finally blocks, no lease release
        proc.communicate(timeout=30)
    sid = session_id_of(seen)
    [name] = list(arm.state.captures)
    inv = store.get_investigation(sid)
    assert inv.status in ("running", "awaiting_user") and inv.lease_owner  # left behind
    assert inv.lease_expires_at is not None and inv.lease_expires_at > store.clock()
    assert inv.state["active_task_ids"] == [name]  # the capture's name is its task id

    # at once: the dead run's lease is still current
    fake_gemini.enqueue(function_call_turn(call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "Nothing to see."})))
    run = subprocess.run([*ghost, "redis timeouts again"], input="c\n" + "a\n" * 10,
                         env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert re.search(rf"\[ORPHAN\] abandoned task\s+{re.escape(name)}", out), out
    # which session and which process left it
    assert re.search(rf"session {re.escape(sid)}: `ghost investigate` \(pid {proc.pid} on "
                     rf"{re.escape(socket.gethostname())}\) is no longer running", out), out
    assert f"[OK] Cleaned up {name}." in out, out
    assert arm.state.captures == {}  # deleted on "Azure"
    assert any(m == "DELETE" and p.endswith(name) for m, p, _ in arm.state.requests)
    task = store.task_events(sid)[-1]
    assert task["state"] == "DONE" and task["outcome"] == "abandoned"
    assert f"pid {proc.pid}" in str(next(t for t in store.task_events(sid)
                                         if t["state"] == "ABANDONED")["error_detail"])
    assert task["cleanup_status"] == "completed"
    capture_entry = next(e for e in task["cleanup_plan"] if e["kind"] == "capture")
    assert capture_entry["outcome"] == "deleted"
