"""The executor: no shell, scrubbed env, timeout kills the group, bounded output."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from core.safety.executor import (
    ProgramNotExecutableError,
    ProgramNotFoundError,
    run_argv,
    scrubbed_env,
)

PY = sys.executable


def test_runs_argv_without_a_shell() -> None:
    result = run_argv([PY, "-c", "import sys; print(sys.argv[1:])", "a; id", "$(x)"],
                      timeout_s=10, max_output_bytes=10_000)
    assert result.exit_code == 0 and not result.timed_out
    assert result.stdout.strip() == "['a; id', '$(x)']"
    assert result.started_at <= result.finished_at and result.duration_s >= 0


def test_stdin_is_dev_null() -> None:
    result = run_argv([PY, "-c", "import sys; print(repr(sys.stdin.read()))"],
                      timeout_s=10, max_output_bytes=1000)
    assert result.stdout.strip() == "''"


def test_environment_is_scrubbed() -> None:
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/home/g", "LANG": "C.UTF-8", "LC_ALL": "C",
               "GHOST_DATABASE_URL": "x", "SLACK_BOT_TOKEN": "xoxb", "GOOGLE_API_KEY": "k",
               "AZURE_CLIENT_SECRET": "s", "AZURE_CONFIG_DIR": "/az", "RANDOM_VAR": "r",
               "LD_PRELOAD": "/x.so", "EXTRA_OK": "1"}
    result = run_argv([PY, "-c", "import os; print(sorted(os.environ))"], timeout_s=10,
                      max_output_bytes=10_000, environ=environ, env_allowlist=["EXTRA_OK"])
    names = eval(result.stdout)  # noqa: S307 - our own repr of a list of str
    assert set(names) - {"LC_CTYPE"} == {"PATH", "HOME", "LANG", "LC_ALL", "AZURE_CONFIG_DIR",
                                          "EXTRA_OK"}


def test_allowlisting_a_credential_is_refused() -> None:
    with pytest.raises(ValueError):
        scrubbed_env(["AZURE_CLIENT_SECRET"], {})
    with pytest.raises(ValueError):
        scrubbed_env(["GHOST_SLACK_TOKEN"], {})


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild-alive"
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3); "
        f"open(r\"{marker}\", \"w\").write(\"x\")'])\n"
        "time.sleep(60)\n")
    start = time.monotonic()
    result = run_argv([PY, "-c", script], timeout_s=1.0, max_output_bytes=1000)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 5
    time.sleep(3.5)
    assert not marker.exists(), "grandchild survived the timeout"


def test_huge_output_is_bounded() -> None:
    script = "import sys\nfor _ in range(200): sys.stdout.write('y' * 100_000)\n"
    result = run_argv([PY, "-c", script], timeout_s=20, max_output_bytes=50_000)
    assert len(result.stdout) == 50_000
    assert result.stdout_bytes_dropped == 20_000_000 - 50_000
    assert result.output_bytes_dropped == result.stdout_bytes_dropped
    assert result.exit_code == 0


def test_stderr_is_captured_separately() -> None:
    result = run_argv([PY, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"],
                      timeout_s=10, max_output_bytes=100)
    assert result.stderr == "boom" and result.exit_code == 3


def test_program_not_found() -> None:
    with pytest.raises(ProgramNotFoundError):
        run_argv(["definitely-not-a-program-ghost"], timeout_s=5, max_output_bytes=10)


def test_program_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "x.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(ProgramNotExecutableError):
        run_argv([str(script)], timeout_s=5, max_output_bytes=10)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        run_argv([], timeout_s=1, max_output_bytes=1)
    with pytest.raises(ValueError):
        run_argv(["echo", "a\x00b"], timeout_s=1, max_output_bytes=1)


def test_stdin_data_is_what_a_filter_reads() -> None:
    """A text filter after a pipe reads the previous stage's output (issue 28)."""
    res = run_argv(["grep", "-c", "b"], timeout_s=10, max_output_bytes=1000,
                   stdin_data=b"a\nb\nbb\n")
    assert res.exit_code == 0 and res.stdout.strip() == "2"
    # without it, stdin is /dev/null: the filter sees nothing
    res = run_argv(["grep", "-c", "b"], timeout_s=10, max_output_bytes=1000)
    assert res.stdout.strip() == "0"
