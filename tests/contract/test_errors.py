"""Every contract command, given bad input under --json, prints the documented error object on
stdout with the documented exit status, and never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.contract.codes import TABLE, Code
from tests.contract.helpers import REPO, base_env, error_of, ghost

BAD_INPUT: list[tuple[list[str], str]] = [
    (["status", "ghost_nope", "--json"], "SESSION_NOT_FOUND"),
    (["status", "--json"], "INVALID_ARGUMENT"),
    (["status", "ghost_nope", "--json", "--limit", "0"], "INVALID_ARGUMENT"),
    (["status", "ghost_nope", "--json", "--fields", ", ,"], "INVALID_ARGUMENT"),
    (["watch", "ghost_nope", "--jsonl"], "SESSION_NOT_FOUND"),
    (["watch", "ghost_nope", "--jsonl", "--interval", "0"], "INVALID_ARGUMENT"),
    (["session", "show", "ghost_nope", "--json"], "SESSION_NOT_FOUND"),
    (["session", "list", "--json", "--status", "sleeping"], "INVALID_ARGUMENT"),
    (["session", "list", "--json", "--since", "last tuesday"], "INVALID_ARGUMENT"),
    (["session", "list", "--json", "--limit", "x"], "INVALID_ARGUMENT"),
    (["approvals", "list", "--json", "--session", "ghost_nope"], "SESSION_NOT_FOUND"),
    (["approvals", "decide", "a1", "approve", "--as", "ana", "--json"], "APPROVAL_NOT_FOUND"),
    (["approvals", "decide", "a1", "maybe", "--as", "ana", "--json"], "INVALID_ARGUMENT"),
    (["approvals", "decide", "a1", "approve", "--json"], "INVALID_ARGUMENT"),
    (["approvals", "decide", "a1", "modify", "--as", "ana", "--json"], "INVALID_ARGUMENT"),
    (["approvals", "decide", "a1", "approve", "--as", " ", "--json"], "INVALID_ARGUMENT"),
    (["audit", "show", "ghost_nope-0001", "--json"], "AUDIT_NOT_FOUND"),
    (["audit", "verify", "ghost_nope", "--json"], "SESSION_NOT_FOUND"),
    (["investigate", "--detach", "--json"], "INVALID_ARGUMENT"),
    (["investigate", "x", "--json"], "INVALID_ARGUMENT"),
    (["investigate", "x", "--detach", "--resume", "ghost_nope", "--json"], "INVALID_ARGUMENT"),
]


@pytest.mark.parametrize(("argv", "code"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_gives_the_documented_error(argv: list[str], code: str, migrated_url: str,
                                              tmp_path: Path) -> None:
    run = ghost(base_env(migrated_url, tmp_path / "data"), *argv)
    doc = error_of(run, code, int(TABLE[Code(code)][0]))
    assert doc["error"]["message"] and run.stderr == ""


COMMANDS = [["status", "ghost_x", "--json"], ["session", "list", "--json"],
            ["approvals", "list", "--json"], ["watch", "ghost_x", "--jsonl"],
            ["approvals", "decide", "a1", "approve", "--as", "ana", "--json"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_an_unreachable_database(argv: list[str], tmp_path: Path) -> None:
    env = base_env("postgresql://ghost:pw@127.0.0.1:9/ghost", tmp_path / "data")
    doc = error_of(ghost(env, *argv), "DATABASE_UNREACHABLE", 10)
    assert doc["error"]["recoverable"] is True and "***" in doc["error"]["message"]
    assert "pw" not in doc["error"]["message"]  # the password never leaves the process


def test_a_database_behind_the_code(tmp_path: Path) -> None:
    env = base_env(f"sqlite:///{tmp_path / 'never-migrated.db'}", tmp_path / "data")
    doc = error_of(ghost(env, "status", "ghost_x", "--json"), "SCHEMA_BEHIND", 11)
    assert "ghost db upgrade" in doc["error"]["recovery_action"]


def test_an_already_decided_approval(store: object, migrated_url: str, tmp_path: Path) -> None:
    from storage.store import Store

    assert isinstance(store, Store)
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a", platform="cli",
                                     channel_ref="cli", requested_by="bot").session_id
    approval = store.create_approval(sid, command="echo x", command_hash="h",
                                     classifier_version="1", classification="RISKY",
                                     reasoning="r", environment="local", requested_by="bot",
                                     status="denied", decided_by="ana")
    run = ghost(base_env(migrated_url, tmp_path / "data"), "approvals", "decide",
                approval.approval_id, "approve", "--as", "bo", "--json")
    doc = error_of(run, "APPROVAL_NOT_PENDING", 1)
    assert "denied by ana" in doc["error"]["message"]


def test_an_unexpected_error_is_logged_not_printed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import logging

    from bot.contract.runner import run_json

    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(logging.getLogger(), "handlers", [])

    def broken() -> int:
        raise KeyError("missing")

    assert run_json(broken) == 20
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["error"]["code"] == "INTERNAL" and "KeyError" in doc["error"]["message"]
    assert "Traceback" not in out.out + out.err
    entry = re.search(r"entry ([0-9a-f]{8})", doc["error"]["message"])
    assert entry is not None
    log = (tmp_path / "data" / "logs" / "ghost-cli.log").read_text()
    assert f"--- {entry.group(1)} ---" in log and "Traceback" in log and "KeyError" in log


def test_the_exit_code_table_is_the_documented_one() -> None:
    """docs/agent-contract.md lists every code with its exit status and recoverability."""
    text = (REPO / "docs" / "agent-contract.md").read_text()
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (\d+) \|", text, flags=re.M))
    assert rows == {str(c): str(int(e)) for c, (e, _r) in TABLE.items()}
    schema = (REPO / "docs" / "schemas" / "error.schema.json").read_text()
    assert all(f'"{c}"' in schema for c in Code)


def test_without_json_an_unexpected_error_is_one_line_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from bot.errors import run_reporting_errors

    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(logging.getLogger(), "handlers", [])

    def broken() -> int:
        raise RuntimeError("boom")

    assert run_reporting_errors(broken) == 20
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1
    assert "unexpected RuntimeError" in out.err and "Traceback" not in out.err
    assert "boom" in (tmp_path / "data" / "logs" / "ghost-cli.log").read_text()
