"""`ghost serve` that cannot start says so in one line with the fix (issue 31): no raw
``<urlopen error …>``, no slack_sdk retry chatter; `--verbose` shows the libraries' own log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.fakes.slack_api import FakeSlack

GHOST = [sys.executable, "-m", "bot.cli"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(tmp_path: Path, api_url: str, *flags: str,
           lab: str | None = "nsg-deny-redis") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "SLACK_", "GEMINI_", "Microsoft"))}
    env |= {"GHOST_DATA_DIR": str(tmp_path / "data"), **({"GHOST_LAB": lab} if lab else {}),
            "SLACK_BOT_TOKEN": "xoxb-1-2-test", "SLACK_APP_TOKEN": "xapp-1-test",
            "SLACK_API_URL": api_url, "PORT": str(_free_port()),
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    return subprocess.run([*GHOST, *flags, "serve", "--host", "127.0.0.1"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ghost: ")]


def test_no_network_is_one_line_with_the_fix(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_free_port()}/api/"  # nothing listens there
    run = _serve(tmp_path, closed)
    assert run.returncode == 2, run.stderr
    [line] = _problems(run.stderr)
    assert line.startswith(f"ghost: Cannot reach Slack's Web API at {closed} to open Socket "
                           "Mode"), line
    assert "connection was refused" in line and "Check this machine's network" in line
    assert "urlopen" not in run.stderr and "Traceback" not in run.stderr
    # slack_sdk's own lines (INFO retries, ERROR per attempt) stay out of it
    assert "slack_sdk" not in run.stderr, run.stderr
    assert all(" INFO slack" not in line for line in run.stderr.splitlines())


def test_a_refused_app_token_names_the_variable(tmp_path: Path) -> None:
    fake = FakeSlack().start()
    try:
        fake.fail["apps.connections.open"] = "invalid_auth"
        run = _serve(tmp_path, fake.base_url)
    finally:
        fake.stop()
    assert run.returncode == 2, run.stderr
    [line] = _problems(run.stderr)
    assert "Slack refused SLACK_APP_TOKEN (invalid_auth)" in line, line
    assert "Copy a current token into SLACK_APP_TOKEN" in line
    assert "The server responded with" not in run.stderr  # slack_sdk's multi-line message


def test_verbose_shows_the_libraries_log(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_free_port()}/api/"
    run = _serve(tmp_path, closed, "--verbose")
    assert run.returncode == 2
    assert "slack_sdk" in run.stderr  # the retry handler's INFO and the per-attempt ERROR
    assert len(_problems(run.stderr)) == 1


def test_no_model_key_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    """Without GEMINI_API_KEY (and not a lab) nothing could investigate: say so at start, not an
    "unexpected BrainError" from deep in the wiring (with or without a worker)."""
    for flags in ((), ("--no-worker",)):
        run = subprocess.run([*GHOST, "serve", *flags], env={
            k: v for k, v in os.environ.items()
            if not k.startswith(("GHOST_", "SLACK_", "GEMINI_", "GOOGLE_", "Microsoft"))} | {
            "GHOST_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": "xoxb-1-2-test",
            "SLACK_SIGNING_SECRET": "s3cr3t", "PORT": str(_free_port())},
            capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 2, run.stderr
        [line] = _problems(run.stderr)
        assert line.startswith("ghost: GEMINI_API_KEY is not set") and "GHOST_LAB" in line, line
        assert "Traceback" not in run.stderr and "unexpected" not in run.stderr
