"""Running `ghost` as a subprocess and checking its JSON against docs/schemas/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "docs" / "schemas"
GHOST = [sys.executable, "-m", "bot.cli"]

_formats = FormatChecker()


def _date_time(value: object) -> bool:
    """RFC 3339 as Ghost writes it (jsonschema does not check date-time by itself)."""
    if not isinstance(value, str):
        return True
    if not (value.endswith("Z") or value[-6] in "+-"):
        raise ValueError(f"{value!r} has no time zone")
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


_formats.checks("date-time", raises=ValueError)(_date_time)


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=_formats)


def validate(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, f"{name}: " + "; ".join(
        f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)
    return doc


def _relaxed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _relaxed(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_relaxed(v) for v in node]
    return node


@cache
def projection_validator(name: str) -> Draft202012Validator:
    """A ``--fields`` output: the schema's types hold, only the envelope stays required."""
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    relaxed = _relaxed(schema)
    relaxed["required"] = [k for k in schema["required"]
                           if k in ("schema_version", "generated_at", "host_id", "session_id")]
    return Draft202012Validator(relaxed, format_checker=_formats)


def projected_json(run: subprocess.CompletedProcess[str], schema: str) -> dict[str, Any]:
    no_traceback(run)
    lines = [ln for ln in run.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, run.stdout + run.stderr
    doc: dict[str, Any] = json.loads(lines[0])
    errors = list(projection_validator(schema).iter_errors(doc))
    assert not errors, "; ".join(e.message for e in errors)
    return doc


def ghost(env: dict[str, str], *args: str, cwd: Path | None = None,
          timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or Path(env["GHOST_DATA_DIR"]).parent,
                          check=False)


def no_traceback(run: subprocess.CompletedProcess[str]) -> None:
    for stream in (run.stdout, run.stderr):
        assert "Traceback" not in stream and 'File "' not in stream, stream


def one_json(run: subprocess.CompletedProcess[str], schema: str) -> dict[str, Any]:
    """The single JSON line a --json command printed, validated against its schema."""
    no_traceback(run)
    lines = [ln for ln in run.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, run.stdout + run.stderr
    return validate(schema, json.loads(lines[0]))


def json_lines(run: subprocess.CompletedProcess[str], schema: str) -> list[dict[str, Any]]:
    no_traceback(run)
    return [validate(schema, json.loads(ln)) for ln in run.stdout.splitlines() if ln.strip()]


def error_of(run: subprocess.CompletedProcess[str], code: str, exit_code: int) -> dict[str, Any]:
    """The error document of a failed --json command: its code and exit status as documented."""
    doc = one_json(run, "error")
    assert doc["error"]["code"] == code, doc
    assert run.returncode == exit_code, (run.returncode, doc)
    return doc


def base_env(database_url: str, data_dir: Path) -> dict[str, str]:
    """The test's environment: its database, no chat, no approvers list, no stray settings."""
    drop = ("GHOST_", "SLACK_", "MICROSOFT", "Microsoft", "TEAMS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["GHOST_DATABASE_URL"] = database_url
    env["GHOST_DATA_DIR"] = str(data_dir)
    env["GHOST_HOST_ID"] = "contract-test-host"
    env["PYTHONPATH"] = str(REPO)
    return env
