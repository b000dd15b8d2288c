"""One state story (issue 34): every view of an investigation says the same state, and what can
be done with it in words true for it."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

from storage.store import Store
from tests.contract.conftest import Run
from tests.contract.helpers import validate
from tests.contract.test_outputs import _approval


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _killed_terminal_run(store: Store, *, lab: str | None = None) -> str:
    """A `ghost investigate` killed with -9: still `running` in the database, its lease held
    for another minute by a process that no longer exists."""
    sid = store.create_investigation(symptom="redis timeouts", model="m", audit_dir="a",
                                     requested_by="ana", platform="terminal",
                                     status="running", lab=lab).session_id
    owner = f"terminal:{socket.gethostname()}:{_dead_pid()}:12345.00"
    assert store.take_lease(sid, owner, lease_seconds=60)
    return sid


def test_an_interrupted_terminal_run_is_interrupted_in_every_view(
        store: Store, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    sid = _killed_terminal_run(store)
    resume = f"ghost investigate --resume {sid}"
    code, listed = cli("session", "list", "--json")
    validate("session-list", listed)
    [row] = listed["sessions"]
    assert row["state"] == "interrupted" and row["interrupted"] is True
    assert row["resume_command"] == resume
    code, status = cli("status", sid, "--json")
    validate("status", status)
    assert status["state"] == "interrupted" and status["resume_command"] == resume
    assert status["phase"]["waiting_for"] == "resume" and not status["phase"]["worker_active"]
    code, text = cli("status", sid)
    assert "interrupted" in text and resume in text
    code, shown = cli("session", "show", sid)
    assert "status:      interrupted" in shown and resume in shown
    code, table = cli("session", "list")
    assert "interrupted" in table
    code, events = cli("watch", sid, "--jsonl", "--until-waiting", "--timeout", "5")
    assert events[0]["state"] == "interrupted"
    assert events[-1] == {**events[-1], "event": "waiting", "state": "interrupted",
                          "resume_command": resume}


def test_an_interrupted_lab_run_without_a_key_says_run_the_demo_again(
        store: Store, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    sid = _killed_terminal_run(store, lab="nsg-deny-redis")
    code, status = cli("status", sid, "--json")
    assert status["state"] == "interrupted" and status["resume_command"] == "ghost demo"
    assert "run `ghost demo` again" in status["summary"]
    # with a key, --resume can run it (the lab's commands, the real model)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    code, status = cli("status", sid, "--json")
    assert status["resume_command"] == f"ghost investigate --resume {sid}"


def test_a_terminal_runs_approval_is_decided_by_the_person_who_started_it(
        store: Store, cli: Run) -> None:
    sid = _killed_terminal_run(store)
    store.set_status(sid, "awaiting_approval")
    approval = _approval(store, sid, "echo after-ctrl-c", expires_in=1800)
    code, refused = cli("approvals", "decide", approval.approval_id, "approve", "--as", "bob",
                        "--json")
    assert code == 1 and refused["error"]["code"] == "NOT_ALLOWED"
    assert "only the person who started it" in refused["error"]["message"]
    code, decided = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                        "--json")
    validate("approval-decision", decided)
    assert code == 0 and decided["result"] == "approved" and decided["decided_by"] == "ana"
    assert f"ghost investigate --resume {sid}" in decided["next"]
    assert store.get_approval(approval.approval_id).decided_by == "ana"


def test_a_task_never_reads_as_further_than_its_approval(store: Store, cli: Run) -> None:
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a", platform="cli",
                                     channel_ref="cli", requested_by="bot",
                                     status="awaiting_approval").session_id
    approval = _approval(store, sid, "az network watcher packet-capture create …",
                         expires_in=1800)
    store.append_task_event(sid, {
        "task_id": "ghost_vm_1", "state": "APPROVED", "intent": "capture_traffic",
        "target": "vm-a", "pending_step": {"step": "create", "approval_id":
                                           approval.approval_id, "command": approval.command}})
    code, doc = cli("status", sid, "--json")
    validate("status", doc)
    [task] = doc["tasks"]
    assert task["state"] == "AWAITING_APPROVAL" and task["orchestrator_state"] == "APPROVED"
    assert task["waiting_for_approval"]["approval_id"] == approval.approval_id


def test_detach_without_a_model_key_refuses_in_one_line(
        store: Store, cli: Run, monkeypatch: pytest.MonkeyPatch, migrated_url: str) -> None:
    import os

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    code, doc = cli("investigate", "vm-a cannot reach redis", "--detach", "--json")
    validate("error", doc)
    assert code == 2 and doc["error"]["code"] == "NO_WORKER"
    run: Any = subprocess.run([sys.executable, "-m", "bot.cli", "investigate",
                               "vm-a cannot reach redis", "--detach"],
                              env=dict(os.environ), capture_output=True, text=True, timeout=60,
                              check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "GEMINI_API_KEY" in run.stderr
    assert store.list_investigations() == []  # nothing was created
