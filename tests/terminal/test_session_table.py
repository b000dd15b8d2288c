"""`ghost session list`: a table with a header, interrupted terminal runs called so, and
`--limit 0` not claiming the database is empty (issue 17)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from storage.store import Store

GHOST = [sys.executable, "-m", "bot.cli"]


def _list(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, "session", "list", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_list_is_a_table_with_a_header(cli_env: dict[str, str], store: Store,
                                           tmp_path: Path) -> None:
    done = store.create_investigation(symptom="vm-a cannot reach redis on 6379", model="m",
                                      audit_dir="./audit/", requested_by="alice",
                                      platform="terminal", status="completed").session_id
    dead = store.create_investigation(symptom="dns fails in spoke-2", model="m",
                                      audit_dir="./audit/", requested_by="bob",
                                      platform="terminal", status="running").session_id
    run = _list(cli_env, tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    # piped: every column (a terminal gets those that fit: test_widths.py)
    assert lines[0].split() == ["ID", "STATUS", "AGE", "TURNS", "COST", "REQUESTER", "STARTED",
                                "(UTC)", "SYMPTOM"]
    assert "\x1b" not in run.stdout  # piped: plain text
    row = {line.split()[0]: line.split() for line in lines[2:]}
    assert row[done][1:2] == ["completed"] and "alice" in row[done]
    # a terminal run that nobody holds a lease on any more is not "running"
    assert row[dead][1] == "interrupted" and "bob" in row[dead]


def test_limit_zero_does_not_say_the_database_is_empty(cli_env: dict[str, str], store: Store,
                                                      tmp_path: Path) -> None:
    assert _list(cli_env, tmp_path).stdout.strip() == "No investigations yet."
    store.create_investigation(symptom="x", model="m", audit_dir="./audit/")
    zero = _list(cli_env, tmp_path, "--limit", "0")
    assert zero.returncode == 0 and "No investigations yet." not in zero.stdout
    assert "--limit 0" in zero.stdout
    negative = _list(cli_env, tmp_path, "--limit", "-2")
    assert negative.returncode == 2 and "negative" in negative.stderr


def test_the_cost_column_prices_recorded_usage_when_the_model_has_a_price(
        cli_env: dict[str, str], store: Store, tmp_path: Path) -> None:
    usage = [{"promptTokenCount": 1_000_000, "candidatesTokenCount": 100_000, "model": "m"}]
    priced = store.create_investigation(symptom="priced", model="m", audit_dir="./audit/",
                                        status="completed")
    store.save_state(priced.session_id, priced.state, engine_state={"usage": usage})
    unpriced = store.create_investigation(symptom="unpriced", model="other",
                                          audit_dir="./audit/", status="completed")
    store.save_state(unpriced.session_id, unpriced.state,
                     engine_state={"usage": [{**usage[0], "model": "other"}]})
    silent = store.create_investigation(symptom="no calls", model="m", audit_dir="./audit/",
                                        status="completed").session_id
    env = {**cli_env, "GHOST_PRICES": '{"m": {"prompt": 0.5, "output": 3}}'}
    run = _list(env, tmp_path)
    assert run.returncode == 0, run.stderr
    last = {line.split()[0]: line.split()[4] for line in run.stdout.splitlines()[2:]}
    assert last[priced.session_id] == "$0.8000"  # 1M prompt at $0.5 + 0.1M output at $3
    assert last[unpriced.session_id] == "n/a"  # no price for "other": never a guess
    assert last[silent] == "-"


def test_json_lists_the_sessions_for_a_script(cli_env: dict[str, str], store: Store,
                                              tmp_path: Path) -> None:
    import json

    sid = store.create_investigation(symptom="json please", model="m",
                                     audit_dir="./audit/").session_id
    run = _list(cli_env, tmp_path, "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["count"] == 1 and doc["sessions"][0]["session_id"] == sid
