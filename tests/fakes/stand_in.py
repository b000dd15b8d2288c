"""A stand-in program for tests that need a real, approvable process that writes, sleeps, prints.

The gate offers an unknown program for approval only as one simple command with literal
arguments, and never an interpreter (`python -c ...`, issue 28), so tests that need a real
process doing something observable run `ghost-test-tool`, a small script put first on PATH by
the `tool` fixture (processes the test forks inherit it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TOOL = "ghost-test-tool"

_SCRIPT = f"""#!{sys.executable}
import sys, time
verb, args = sys.argv[1], sys.argv[2:]
if verb == "append":      # append TEXT to FILE
    with open(args[0], "a") as handle:
        handle.write(args[1])
elif verb == "append-then-sleep":
    with open(args[0], "a") as handle:
        handle.write(args[1])
    time.sleep(float(args[2]))
elif verb == "sleep":
    time.sleep(float(args[0]))
elif verb == "key-and-lines":   # a storage key in the output, never on the command line
    print("Account" + "Key=" + "Zm9vYmFy" * 11 + "==")
    for index in range(int(args[0])):
        print(index)
"""


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of the stand-in program, on PATH for this test (and processes it forks)."""
    bin_dir = tmp_path / "stand-in-bin"
    bin_dir.mkdir()
    path = bin_dir / TOOL
    path.write_text(_SCRIPT)
    path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    return TOOL
