"""`ghost-forensics … | head`: run the CLI with a reader that goes away before anything is
printed, as a pipe into `head -1` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_reader_gone(args: list[str], cwd: Path) -> tuple[int, bytes]:
    """(exit code, stderr) of ``python -m forensics ARGS`` whose stdout is closed at once."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "forensics", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before anything is printed
    err = proc.stderr.read()
    return proc.wait(timeout=120), err
