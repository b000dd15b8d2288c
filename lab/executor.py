"""LabExecutor: the shell's runner port for lab investigations.

The gate (classify, approve, audit, redact, truncate) runs as in production; only the last step
differs. Diagnostics (``az``, ``ping``, ``dig``…) are answered by the lab runner from the
scenario; the capture analysis (``ghost-forensics``, ``python -m forensics``) and ``cat`` of
Ghost's own reports run for real, on the lab's pcap, as they would in production.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from core.safety.executor import ExecResult, Runner, run_argv
from core.safety.outcome import child_environ

#: programs that run for real in a lab investigation (they read Ghost's own files)
REAL_PROGRAMS = frozenset({"ghost-forensics", "cat"})
#: what the shell puts first to make a program ignore its per-user rc file
#: (core.safety.outcome.without_rc_files); the lab has no rc files, and its runner reads the
#: command as the model wrote it
_NO_RC_FLAG = {"curl": "-q", "dig": "-r"}


def as_written(argv: Sequence[str]) -> list[str]:
    """``argv`` without the rc-file flag the shell added."""
    words = list(argv)
    if len(words) > 1 and _NO_RC_FLAG.get(words[0]) == words[1]:
        del words[1]
    return words


def runs_for_real(argv: Sequence[str]) -> bool:
    """True for the forensics engine (by name or as ``python -m forensics``) and ``cat``."""
    if not argv:
        return False
    program = argv[0]
    if program in REAL_PROGRAMS:
        return True
    name = os.path.basename(program)
    interpreter = program == sys.executable or (
        name.startswith("python") and name.removeprefix("python").replace(".", "").isdigit()
        or name == "python")
    return interpreter and list(argv[1:3]) == ["-m", "forensics"]


def _real(argv: Sequence[str], timeout_s: float, max_output_bytes: int) -> ExecResult:
    return run_argv(argv, timeout_s=timeout_s, max_output_bytes=max_output_bytes,
                    environ=child_environ())


class LabExecutor:
    """``core.safety.executor.Runner`` over a lab runner (``LabRunner.run(argv)``)."""

    def __init__(self, runner: Any, real: Runner = _real,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.runner = runner
        self.real = real
        self.clock = clock

    def __call__(self, argv: Sequence[str], timeout_s: float,
                 max_output_bytes: int) -> ExecResult:
        if runs_for_real(argv):
            return self.real(argv, timeout_s, max_output_bytes)
        started = self.clock()
        begun = time.monotonic()
        try:
            answer = self.runner.run(as_written(argv))
            code, out, err = int(answer.exit_code), str(answer.stdout), str(answer.stderr)
            duration = float(getattr(answer, "duration_s", 0.05))
        except Exception as exc:  # noqa: BLE001 - a lab bug must not end the investigation
            code, out, duration = 2, "", time.monotonic() - begun
            err = f"the lab could not answer this command ({type(exc).__name__}: {exc})\n"
        out_b, err_b = out.encode(), err.encode()
        out_drop = max(0, len(out_b) - max_output_bytes)
        err_drop = max(0, len(err_b) - max_output_bytes)
        return ExecResult(
            exit_code=code,
            stdout=out_b[:max_output_bytes].decode("utf-8", "replace"),
            stderr=err_b[:max_output_bytes].decode("utf-8", "replace"),
            timed_out=False, output_bytes_dropped=out_drop + err_drop,
            stdout_bytes_dropped=out_drop, stderr_bytes_dropped=err_drop,
            duration_s=duration, started_at=started,
            finished_at=started + timedelta(seconds=duration))
