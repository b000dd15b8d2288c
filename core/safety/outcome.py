"""What running a program (or an SDK call, or refusing to) produced, before redaction."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from core.safety.executor import ExecResult

#: Flags that make a program ignore its per-user startup file (~/.curlrc, ~/.digrc): such a
#: file could add options the classifier never saw. Each must come first on the command line.
_NO_RC_FLAG = {"curl": "-q", "dig": "-r"}


def without_rc_files(argv: tuple[str, ...]) -> list[str]:
    """The argv to run: as classified, plus the flag that disables the user's rc file."""
    flag = _NO_RC_FLAG.get(argv[0])
    if flag is None or (len(argv) > 1 and argv[1] == flag):
        return list(argv)
    return [argv[0], flag, *argv[1:]]


def child_environ() -> dict[str, str]:
    """The parent environment with Ghost's own bin directory on PATH.

    `ghost-forensics` is installed next to the Python running Ghost; a service started as
    `.venv/bin/ghost serve` has no activated venv, so the directory is added explicitly (last,
    so it never shadows a system program). The executor still scrubs everything else.
    """
    environ = dict(os.environ)
    own = str(Path(sys.executable).parent)
    parts = [p for p in environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":") if p]
    if own not in parts:
        parts.append(own)
    environ["PATH"] = ":".join(parts)
    return environ


@dataclass(frozen=True)
class Outcome:
    """What running (or refusing to run) the program produced."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    error: str | None
    duration_s: float
    output_bytes_dropped: int

    @classmethod
    def failed(cls, error: str, message: str) -> Outcome:
        return cls(None, "", message, False, error, 0.0, 0)

    @classmethod
    def of(cls, result: ExecResult) -> Outcome:
        return cls(result.exit_code, result.stdout, result.stderr, result.timed_out, None,
                   result.duration_s, result.output_bytes_dropped)
