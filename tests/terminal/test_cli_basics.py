"""The command line at 3 a.m.: a bad database URL is one line naming GHOST_DATABASE_URL (exit 2),
`| head` ends quietly, `--version` answers, and library INFO logs stay hidden (issue 17)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from storage.store import Store

GHOST = [sys.executable, "-m", "bot.cli"]
FORENSICS = [str(Path(sys.executable).parent / "ghost-forensics")]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    env.update(extra)
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


BAD_URLS = {
    "garbage": "not a database URL",
    "db.internal:5432/ghost": "not a database URL",
    "mysql://a@127.0.0.1/x": "names a mysql database",
    "postgresql+asyncpg://u:hunter2@127.0.0.1/x": "not installed",
}


@pytest.mark.parametrize("command", [["db", "status"], ["session", "list"]])
@pytest.mark.parametrize("url", sorted(BAD_URLS))
def test_a_bad_database_url_is_one_line_naming_the_variable(tmp_path: Path, url: str,
                                                           command: list[str]) -> None:
    run = _run([*GHOST, *command], _env(tmp_path, GHOST_DATABASE_URL=url), tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "GHOST_DATABASE_URL" in lines[0] and BAD_URLS[url] in lines[0]
    assert "Traceback" not in run.stderr and "hunter2" not in run.stderr


@pytest.mark.parametrize("command", [["db", "status"], ["session", "list"]])
def test_an_unreachable_database_is_one_line(tmp_path: Path, command: list[str]) -> None:
    url = f"postgresql://ghost:hunter2@127.0.0.1:{_closed_port()}/ghost"
    run = _run([*GHOST, *command], _env(tmp_path, GHOST_DATABASE_URL=url), tmp_path)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Cannot reach the database" in lines[0], run.stderr
    assert "GHOST_DATABASE_URL" in lines[0] and "hunter2" not in lines[0]


def test_a_reader_that_stops_early_ends_the_command_quietly(cli_env: dict[str, str],
                                                           store: Store,
                                                           tmp_path: Path) -> None:
    for i in range(700):  # more than a pipe buffer (64 KiB) of rows
        store.create_investigation(symptom=f"vm-{i} cannot reach redis on 6379 " + "x" * 60,
                                   model="m", audit_dir="./audit/")
    shell = f"{' '.join(GHOST)} session list --limit 700 | head -3"
    run = subprocess.run(["bash", "-o", "pipefail", "-c", shell], env=cli_env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=False)
    assert len(run.stdout.splitlines()) == 3
    assert run.stderr == "", run.stderr  # no "Broken pipe", no "Exception ignored"
    assert run.returncode in (0, 141)


def test_version_on_both_commands(tmp_path: Path) -> None:
    from bot.terminal import version

    assert version() != "unknown"
    ghost = _run([*GHOST, "--version"], _env(tmp_path), tmp_path)
    forensics = _run([*FORENSICS, "--version"], _env(tmp_path), tmp_path)
    assert ghost.returncode == 0 and ghost.stdout.strip() == f"ghost {version()}"
    assert forensics.returncode == 0
    assert forensics.stdout.strip() == f"ghost-forensics {version()}"


def test_library_info_logs_hidden_unless_verbose() -> None:
    import logging

    from bot.terminal.logs import quiet_library_logs

    try:
        quiet_library_logs(False)
        assert not logging.getLogger("apscheduler.scheduler").isEnabledFor(logging.INFO)
        assert not logging.getLogger("alembic.runtime.migration").isEnabledFor(logging.INFO)
        assert not logging.getLogger("azure.identity._credentials").isEnabledFor(
            logging.WARNING)
        quiet_library_logs(True)
        logging.getLogger().setLevel(logging.INFO)
        assert logging.getLogger("alembic.runtime.migration").isEnabledFor(logging.INFO)
    finally:
        quiet_library_logs(False)
