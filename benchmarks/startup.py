"""How long `ghost` takes to answer: `--version`, `--help`, and the commands that read the
database (heavy SDKs must be imported lazily; a read must not pay for what it does not use).

    .venv/bin/python benchmarks/startup.py [--runs 9]

Targets: `ghost --version` and `ghost --help` under 300 ms; the reads are printed for
comparison (their floor is Python, SQLAlchemy and pydantic-settings starting). The reads run
against a fresh SQLite database with a few investigations in a temporary GHOST_DATA_DIR, and
`python -c pass` is printed as the interpreter's own floor on this machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 300


def _ghost() -> str:
    return shutil.which("ghost", path=str(Path(sys.executable).parent)) or "ghost"


def _seed(data_dir: Path) -> str:
    """A migrated database with three investigations (one waiting for an approval)."""
    sys.path.insert(0, str(ROOT))
    os.environ["GHOST_DATA_DIR"] = str(data_dir)
    from bot.bootstrap import build_store

    store = build_store()
    sid = ""
    for n in range(3):
        sid = store.create_investigation(
            symptom=f"web-vm-0{n} cannot reach redis on 6379 since the NSG change",
            model="gemini-test", audit_dir=str(data_dir / "audit"), requested_by="alice",
            platform="terminal", status="completed").session_id
    store.db.dispose()
    return sid


def _time(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    exe = _ghost()
    with tempfile.TemporaryDirectory(prefix="ghost-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
        env["GHOST_DATA_DIR"] = tmp
        sid = _seed(Path(tmp))
        cases = [
            ("python -c pass (floor)", [sys.executable, "-c", "pass"], None),
            ("ghost --version", [exe, "--version"], TARGET_MS),
            ("ghost --help", [exe, "--help"], TARGET_MS),
            ("ghost session list", [exe, "session", "list"], None),
            ("ghost session show SID", [exe, "session", "show", sid], None),
            ("ghost status SID", [exe, "status", sid], None),
            ("ghost approvals list", [exe, "approvals", "list"], None),
            ("ghost db status", [exe, "db", "status"], None),
        ]
        for label, argv, target in cases:
            times = _time(argv, args.runs, env)
            goal = f"  (target < {target} ms)" if target else ""
            print(f"{label:<24} median {statistics.median(times):5.0f} ms, "
                  f"min {min(times):5.0f}, max {max(times):5.0f} over {args.runs} runs{goal}")


if __name__ == "__main__":
    main()
