"""The outputs a person reads, without --json (issue 31): `ghost watch` in sentences, not
Python dicts; `ghost approvals list` naming who may decide in words that are true for the
platform (a terminal investigation is decided at its keyboard); and `ghost doctor --json` in
the contract's envelope."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from core.session_state import utc_now
from storage.store import Store
from tests.contract.conftest import Run
from tests.contract.helpers import validate

GHOST = [sys.executable, "-m", "bot.cli"]
LINE = re.compile(r"^\d\d:\d\d:\d\d  (state|model|results|engineer|command|approval|capture|"
                  r"end|waiting|error)\s+\S")


def _terminal_waiting(store: Store) -> tuple[str, str]:
    """A terminal investigation left waiting at an approval (its process was stopped)."""
    sid = store.create_investigation(symptom="vm-a cannot reach redis", model="m",
                                     audit_dir="a", platform="terminal",
                                     requested_by="alice").session_id
    store.save_state(sid, store.get_investigation(sid).state, status="awaiting_approval")
    now = utc_now()
    approval = store.create_approval(
        sid, command="az network watcher packet-capture create -g rg --vm vm-a -n cap",
        command_hash="h" * 64, classifier_version="1", classification="RISKY", tier=2,
        rule="T2.az_mutating_verb", reasoning="see the wire", environment="local",
        requested_by="alice", requested_at=now, expires_at=now + timedelta(minutes=30))
    return sid, approval.approval_id


def test_a_terminal_request_is_decided_at_its_keyboard(store: Store, cli: Run) -> None:
    sid, approval_id = _terminal_waiting(store)
    code, text = cli("approvals", "list")
    assert code == 0
    assert "channel" not in text and " ? " not in text and "except" not in text, text
    said = " ".join(text.split())
    # the person who started it decides (one person at a keyboard): at the terminal, or from
    # `ghost approvals decide` as themselves (issue 34)
    assert f"may decide: alice, who started it: at the terminal (`ghost investigate " \
           f"--resume {sid}`) or with `ghost approvals decide`" in said
    assert f"decide: ghost approvals decide {approval_id} approve --as alice" in said
    assert approval_id in text and "RISKY" in text and "(in 29 min)" in said
    _, doc = cli("approvals", "list", "--json")
    validate("approvals-list", doc)
    assert doc["approvals"][0]["may_decide"]["rule"].startswith("alice, who started it")
    assert doc["approvals"][0]["may_decide"]["excluded"] == []  # the requester decides there


def test_an_approvers_list_does_not_change_the_terminal(store: Store, cli: Run,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The approvers list and the two-person rule are chat features (DESIGN.md)."""
    sid, _approval_id = _terminal_waiting(store)
    monkeypatch.setenv("GHOST_APPROVERS", "ana,alice")
    _, doc = cli("approvals", "list", "--json")
    may = doc["approvals"][0]["may_decide"]
    assert may["rule"] == f"alice, who started it: at the terminal (`ghost investigate " \
                          f"--resume {sid}`) or with `ghost approvals decide`"
    assert may["excluded"] == [] and may["two_person"] is False


def test_chat_requests_name_the_channel(store: Store, cli: Run) -> None:
    sid = store.create_investigation(symptom="x", model="m", audit_dir="a", platform="teams",
                                     requested_by="U1").session_id
    now = utc_now()
    store.create_approval(sid, command="echo x", command_hash="h" * 64, classifier_version="1",
                          classification="RISKY", tier=3, rule="r", reasoning="r",
                          environment="local", requested_by="U1", requested_at=now,
                          expires_at=now + timedelta(minutes=5))
    _, doc = cli("approvals", "list", "--json")
    assert doc["approvals"][0]["may_decide"]["rule"] == \
        "any member of the investigation's Teams channel except U1"


def test_doctor_json_is_an_enveloped_document(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOST_LAB", "nsg-deny-redis")
    code, doc = cli("doctor", "--json")
    validate("doctor", doc)
    assert code == 1 and doc["ready"] is False  # no chat configured
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["database"]["status"] == "ok" and checks["database"]["fix"] is None
    assert checks["chat"]["status"] == "fail" and "SLACK_BOT_TOKEN" in checks["chat"]["fix"]
    assert doc["problems"] == sum(c["status"] == "fail" for c in doc["checks"])


def test_watch_reads_as_sentences(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "GEMINI_", "GOOGLE_"))}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    demo = subprocess.run([*GHOST, "demo", "service-down", "--yes"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180, check=False)
    assert demo.returncode == 0, demo.stderr
    sid = re.search(r"Session: (ghost_\d+_\d+)", demo.stdout).group(1)  # type: ignore[union-attr]
    run = subprocess.run([*GHOST, "watch", sid], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert all(LINE.match(line) for line in lines), run.stdout
    assert not any(marker in run.stdout for marker in ("{'", "': ", "name=", "None")), run.stdout
    assert " engineer  The web tier returns 502" in lines[0]  # the symptom comes first
    assert any(" command   RISKY `az network watcher packet-capture create" in line and
               "approved by second-engineer (ghost demo --yes)" in line for line in lines)
    assert any(" capture   capture_traffic ghost_api-vm-01_" in line for line in lines)
    assert re.match(r"^\d\d:\d\d:\d\d  end +the investigation is completed after \d+ "
                    r"turn\(s\)\. RCA: /\S+/ghost_rca_ghost_\d+_\d+\.md$", lines[-1]), lines[-1]
    stamps = [line[:8] for line in lines]
    assert stamps == sorted(stamps)  # in the order things happened


def test_watch_says_a_denial_in_words() -> None:
    """A denied command and its closed approval: who denied it and why, not the codes
    (it read "`…` user_denied: user_denied" and "`…` closed by root")."""
    from bot.terminal.events import event_line

    command = {"event": "command", "at": "2026-11-28T20:31:56Z", "classification": "RISKY",
               "command": "az network watcher packet-capture delete -n cap",
               "status": "denied", "action": "user_denied", "actor": "bob",
               "error": "user_denied", "denial_reason": "keep it for the vendor",
               "audit_id": "s_039", "exit_code": None}
    line = event_line(command)
    assert line.endswith('was denied by bob ("keep it for the vendor") [s_039].'), line
    assert "user_denied" not in line
    expired = {**command, "action": "user_denied", "error": "approval_expired",
               "actor": "ghost", "denial_reason": None}
    assert event_line(expired).endswith("`az network watcher packet-capture delete -n cap` did not "
                                        "run: the approval expired [s_039].")
    approval = {"event": "approval", "requested_at": "2026-11-28T20:31:50Z",
                "status": "closed", "closed_from": "denied", "decided_by": "bob",
                "denial_reason": "keep it for the vendor", "approval_id": "a1",
                "command": "az storage blob delete -n cap.pcap"}
    said = event_line(approval)
    assert 'denied by bob ("keep it for the vendor") [a1].' in said and "closed" not in said
