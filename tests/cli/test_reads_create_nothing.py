"""Commands that only read never create a database or a directory; they say there is none and
how to create it (issue 31: `GHOST_DATABASE_URL=sqlite:////nonexistent/dir/x.db ghost session
list` used to create the directory and an empty database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GHOST = [sys.executable, "-m", "bot.cli"]
SID = "ghost_20261128_140400"
READS = [
    ["session", "show", SID],
    ["status", SID],
    ["watch", SID, "--timeout", "1"],
    ["audit", "verify", SID],
    ["audit", "show", f"{SID}_001"],
    ["audit", "export", SID, "--dir", "out"],
    ["approvals", "list", "--session", SID],
]


def _env(tmp_path: Path, url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "SLACK_", "GEMINI_", "Microsoft"))}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    if url:
        env["GHOST_DATABASE_URL"] = url
    return env


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, *args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)


def _left_behind(tmp_path: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("args", [["session", "list"], ["session", "list", "--status", "failed"],
                                  ["approvals", "list"], *READS], ids=" ".join)
def test_a_wrong_database_path_is_said_and_nothing_is_created(tmp_path: Path,
                                                              args: list[str]) -> None:
    url = f"sqlite:///{tmp_path / 'nonexistent' / 'dir' / 'x.db'}"
    run = _run(tmp_path, _env(tmp_path, url), *args)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert f"GHOST_DATABASE_URL points at {tmp_path / 'nonexistent' / 'dir' / 'x.db'}, and " \
           "there is no database there" in run.stderr
    assert "`ghost db upgrade`" in run.stderr
    assert _left_behind(tmp_path) == []


def test_json_reads_say_it_with_a_code(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nonexistent' / 'x.db'}"
    run = _run(tmp_path, _env(tmp_path, url), "session", "list", "--json")
    doc = json.loads(run.stdout)
    assert run.returncode == 11 and doc["error"]["code"] == "SCHEMA_BEHIND"
    assert "ghost db upgrade" in doc["error"]["recovery_action"]
    assert _left_behind(tmp_path) == []


def test_on_a_fresh_machine_lists_are_empty_and_create_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path, None)
    listed = _run(tmp_path, env, "session", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == (
        f"No investigations yet: there is no database at {tmp_path / 'data' / 'ghost.db'} "
        "yet; `ghost demo` or `ghost investigate` creates it.")
    as_json = json.loads(_run(tmp_path, env, "session", "list", "--json").stdout)
    assert as_json["count"] == 0 and as_json["sessions"] == []
    pending = _run(tmp_path, env, "approvals", "list")
    assert pending.returncode == 0 and pending.stdout.strip() == "No pending approvals."
    assert _left_behind(tmp_path) == []


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_on_a_fresh_machine_a_read_by_id_says_how_to_start(tmp_path: Path,
                                                           args: list[str]) -> None:
    run = _run(tmp_path, _env(tmp_path, None), *args)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"No Ghost database yet at {tmp_path / 'data' / 'ghost.db'}" in run.stderr
    assert "`ghost demo` or `ghost investigate` creates it" in run.stderr
    assert _left_behind(tmp_path) == []


@pytest.mark.parametrize("default", [True, False], ids=["default", "GHOST_DATABASE_URL"])
def test_checks_create_nothing_either(tmp_path: Path, default: bool) -> None:
    url = None if default else f"sqlite:///{tmp_path / 'nonexistent' / 'x.db'}"
    env = _env(tmp_path, url) | {"GHOST_LAB": "nsg-deny-redis"}
    status = _run(tmp_path, env, "db", "status")
    assert status.returncode == 1 and "revision: none (there is no database file)" in \
        status.stdout and "ghost db upgrade" in status.stdout
    doctor = _run(tmp_path, env, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["database"]["status"] == ("warn" if default else "fail")
    assert "ghost db upgrade" in str(checks["database"]["fix"])
    assert _left_behind(tmp_path) == []


def test_a_write_creates_it_where_the_read_looked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'dir' / 'x.db'}"
    env = _env(tmp_path, url)
    assert _run(tmp_path, env, "db", "upgrade").returncode == 0
    listed = _run(tmp_path, env, "session", "list")
    assert listed.returncode == 0 and listed.stdout.strip() == "No investigations yet."


def test_a_read_does_not_load_the_migration_machinery(tmp_path: Path,
                                                      migrated_url: str) -> None:
    """alembic (with mako and pygments) cost every read about half a second: the schema's
    revision is checked without it (storage/migrate.py)."""
    code = ("import sys; from bot.cli import main; main(['session', 'list']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('alembic', 'mako', 'pygments')))")
    run = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path, migrated_url),
                         capture_output=True, text=True, timeout=60, check=False,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
