"""`ghost` as an engineer runs it: a real subprocess against a real database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from core.session_state import ChecksumStatus, check_checksum
from storage.store import Store

GHOST = [sys.executable, "-m", "bot.cli"]


def ghost(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, *args], env=env, capture_output=True, text=True, timeout=60,
                          cwd=cwd or Path(env["GHOST_DATA_DIR"]).parent,
                          check=False)


@pytest.fixture
def investigation(store: Store) -> str:
    sid = store.create_investigation(symptom="vm-a cannot reach vm-b on 443", model="m",
                                     audit_dir="./audit/").session_id
    for i in range(3):
        store.append_audit(sid, {"kind": "command", "command": f"dig +short host{i}.example",
                                 "classification": "SAFE", "status": "completed",
                                 "exit_code": 0, "output": "10.0.0.4", "environment": "local",
                                 "action": "auto_approved", "actor": "ghost"})
    store.append_task_event(sid, {"task_id": "ghost_vm-a_20250115T143200", "state": "CREATED"})
    store.append_task_event(sid, {"task_id": "ghost_vm-a_20250115T143200", "state": "WAITING"})
    return sid


def _forge_fourth(store: Store, sid: str) -> None:
    """A well-linked record with a valid hash, written straight into the table."""
    from core.audit_chain import record_hash
    from storage.models import AuditEvent

    last = store.audit_records(sid)[-1]
    forged = dict(last) | {"seq": 4, "audit_id": f"{sid}_004", "command": "az vm delete -n db",
                           "prev_hash": last["hash"]}
    forged["hash"] = record_hash(forged)
    with store.db.session() as s, s.begin():
        s.add(AuditEvent(**forged))


@pytest.mark.parametrize(("tamper", "first_bad"), [
    ("update", "_002"), ("delete_last", "_003"), ("insert", "_004")])
def test_verify_ok_then_tampered(cli_env: dict[str, str], store: Store, investigation: str,
                                 tamper: str, first_bad: str) -> None:
    ok = ghost(cli_env, "audit", "verify", investigation)
    assert ok.returncode == 0, ok.stderr
    assert "3 records" in ok.stdout
    with store.db.engine.begin() as conn:  # behind the application's back
        if store.db.dialect == "sqlite":
            conn.execute(text("DROP TRIGGER audit_events_no_update"))
            conn.execute(text("DROP TRIGGER audit_events_no_delete"))
        else:
            conn.execute(text("DROP TRIGGER audit_events_append_only ON audit_events"))
        if tamper == "update":
            conn.execute(text("UPDATE audit_events SET output = '10.6.6.6' WHERE audit_id = :a"),
                         {"a": f"{investigation}_002"})
        elif tamper == "delete_last":
            conn.execute(text("DELETE FROM audit_events WHERE audit_id = :a"),
                         {"a": f"{investigation}_003"})
    if tamper == "insert":
        _forge_fourth(store, investigation)
    bad = ghost(cli_env, "audit", "verify", investigation)
    assert bad.returncode == 3, bad.stderr
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert f"breaks at {investigation}{first_bad}:" in bad.stderr


def test_export_writes_the_two_jsonl_files(cli_env: dict[str, str], investigation: str,
                                           tmp_path: Path) -> None:
    out = tmp_path / "export"
    run = ghost(cli_env, "audit", "export", investigation, "--dir", str(out))
    assert run.returncode == 0, run.stderr
    audit = [json.loads(line) for line in
             (out / f"shell_audit_{investigation}.jsonl").read_text().splitlines()]
    tasks = [json.loads(line) for line in
             (out / f"orchestrator_tasks_{investigation}.jsonl").read_text().splitlines()]
    assert [r["audit_id"] for r in audit] == [f"{investigation}_00{i}" for i in (1, 2, 3)]
    assert {"command", "classification", "status", "exit_code", "output", "environment",
            "hash", "prev_hash"} <= set(audit[0])
    assert [t["state"] for t in tasks] == ["CREATED", "WAITING"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left


def test_session_show_json_prints_the_section_8_document(cli_env: dict[str, str],
                                                         investigation: str) -> None:
    run = ghost(cli_env, "session", "show", investigation, "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["session_id"] == investigation and "_checksum" in doc
    assert check_checksum(doc) is ChecksumStatus.OK
    human = ghost(cli_env, "session", "show", investigation)
    assert "vm-a cannot reach vm-b" in human.stdout and "3 records" in human.stdout


@pytest.mark.parametrize("command", [["audit", "verify"], ["session", "show"],
                                     ["audit", "export", "--dir", "x"]])
def test_unknown_sid_is_one_line(cli_env: dict[str, str], command: list[str]) -> None:
    run = ghost(cli_env, *command[:2], "ghost_19990101_000000", *command[2:])
    assert run.returncode != 0
    assert run.stderr.count("\n") == 1 and "ghost_19990101_000000" in run.stderr
    assert "ghost session list" in run.stderr


def _env(tmp_path: Path, url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    if url:
        env["GHOST_DATABASE_URL"] = url
    return env


def test_unreachable_database_is_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path, "postgresql://ghost@127.0.0.1:1/ghost")
    run = ghost(env, "session", "show", "ghost_x")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Cannot reach the database" in run.stderr
    assert "GHOST_DATABASE_URL" in run.stderr and "Traceback" not in run.stderr


def test_unmigrated_database_says_to_upgrade(tmp_path: Path, database_url: str) -> None:
    env = _env(tmp_path, database_url)
    run = ghost(env, "audit", "verify", "ghost_x")
    assert run.returncode == 2 and "ghost db upgrade" in run.stderr
    assert run.stderr.count("\n") == 1
    up = ghost(env, "db", "upgrade")
    assert up.returncode == 0 and "upgraded" in up.stdout
    again = ghost(env, "db", "upgrade")
    assert again.returncode == 0 and "already" in again.stdout
    assert ghost(env, "session", "list").stdout.strip() == "No investigations yet."


def test_db_status_says_whether_to_upgrade(tmp_path: Path, database_url: str) -> None:
    env = _env(tmp_path, database_url)
    empty = ghost(env, "db", "status")  # SQLite: no file yet (and none is made); else empty
    assert empty.returncode == 1 and "revision: none (" in empty.stdout
    assert "ghost db upgrade" in empty.stdout and "Traceback" not in empty.stderr
    assert ghost(env, "db", "upgrade").returncode == 0
    ready = ghost(env, "db", "status")
    assert ready.returncode == 0 and "(head " in ready.stdout and "upgrade" not in ready.stdout


@pytest.mark.parametrize("default_sqlite", [False, True])
def test_a_schema_from_a_newer_ghost_is_one_line(tmp_path: Path, migrated_url: str,
                                                 default_sqlite: bool) -> None:
    """A rollback after a newer release migrated the database: say so, never a traceback."""
    from storage.db import make_engine

    env = _env(tmp_path, None if default_sqlite else migrated_url)
    if default_sqlite:
        assert ghost(env, "db", "upgrade").returncode == 0  # creates ./data/ghost.db
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'ghost.db'}" if default_sqlite
                         else migrated_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
    for command in (["session", "list"], ["db", "upgrade"]):
        run = ghost(env, *command)
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
        assert "revision 0999" in run.stderr and "newer Ghost" in run.stderr
    status = ghost(env, "db", "status")
    assert status.returncode == 1 and "newer Ghost" in status.stdout


def test_default_sqlite_database_is_created_on_first_use(tmp_path: Path) -> None:
    """By the first command that writes: a read creates nothing (test_reads_create_nothing)."""
    env = _env(tmp_path, None) | {"GEMINI_API_KEY": "test-key"}  # --detach needs a worker's key
    run = ghost(env, "investigate", "vm-a cannot reach vm-b", "--detach", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "data" / "ghost.db").exists()
    listed = ghost(env, "session", "list")
    assert json.loads(run.stdout)["session_id"] in listed.stdout


def test_help_and_bad_usage(tmp_path: Path) -> None:
    env = _env(tmp_path, None)
    assert "audit" in ghost(env, "--help").stdout
    bad = ghost(env, "audit", "verify")
    assert bad.returncode == 2 and "SID" in bad.stderr


def test_the_default_data_dir_is_the_users_not_the_working_directory(tmp_path: Path) -> None:
    """Started from two directories, Ghost finds the same database (issue 17)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOST_", "XDG_"))}
    env["HOME"] = str(tmp_path / "home")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = subprocess.run([*GHOST, "db", "status"], env=env, cwd=one, capture_output=True,
                           text=True, timeout=60, check=False)
    assert first.returncode == 1, first.stderr  # no database yet; a status creates none
    data = tmp_path / "xdg" / "ghost"
    assert f"data dir: {data} (the user's data dir; GHOST_DATA_DIR overrides)" in first.stdout
    assert f"database: sqlite:///{data / 'ghost.db'} (ghost.db in the data dir)" in first.stdout
    assert not data.exists() and not any(one.iterdir())
    created = subprocess.run([*GHOST, "db", "upgrade"], env=env, cwd=one, capture_output=True,
                             text=True, timeout=60, check=False)
    assert created.returncode == 0 and (data / "ghost.db").is_file(), created.stderr
    first = subprocess.run([*GHOST, "db", "status"], env=env, cwd=one, capture_output=True,
                           text=True, timeout=60, check=False)
    assert first.returncode == 0 and not any(one.iterdir())
    second = subprocess.run([*GHOST, "db", "status"], env=env, cwd=two, capture_output=True,
                            text=True, timeout=60, check=False)
    assert second.stdout == first.stdout and not any(two.iterdir())


def test_db_status_names_the_setting_and_hides_the_password(tmp_path: Path,
                                                           migrated_url: str) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(migrated_url)
    with_password = url.set(password="hunter2") if url.drivername.startswith("postgres") \
        else url
    env = _env(tmp_path, with_password.render_as_string(hide_password=False))
    run = ghost(env, "db", "status")
    assert run.returncode == 0, run.stderr
    assert f"data dir: {tmp_path / 'data'} (GHOST_DATA_DIR)" in run.stdout
    assert "(GHOST_DATABASE_URL)" in run.stdout and "hunter2" not in run.stdout


def test_every_argument_has_help() -> None:
    """`--help` never shows a bare name: each option and positional says what it is."""
    import argparse

    from bot.cli import build_parser

    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "ghost")
    assert not missing, missing
