"""The safety CLI (`ghost classify --json -`, `ghost redact --jsonl`) as a user runs it: one
process, JSON lines in and out, no GHOST_ setting of the caller's leaking in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_safety_cli(args: list[str], lines: list[dict[str, str]],
                   tmp_path: Path) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATA_DIR"] = str(tmp_path)
    stdin = "".join(json.dumps(line) + "\n" for line in lines).encode()
    res = subprocess.run([sys.executable, "-m", "bot.cli", *args], input=stdin, env=env,
                         capture_output=True, timeout=300, cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return [json.loads(line) for line in res.stdout.decode().splitlines()]
