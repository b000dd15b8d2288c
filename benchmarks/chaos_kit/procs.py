"""The drill's Ghost processes: start, kill -9, restart, and sample their memory.

Every child gets its own session (``start_new_session``) so nothing they start outlives them,
and the driver kills them all on exit, Ctrl-C included. Peak memory is sampled from
/proc/PID/status (VmRSS, and VmHWM just before a kill) per role.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _now() -> str:
    """UTC wall time as Ghost's log lines show it."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def rss_kb(pid: int, key: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


@dataclass
class Ghost:
    """One ``ghost serve`` or ``ghost worker`` slot (a name, its env, its current process)."""

    name: str
    command: str
    env: dict[str, str]
    log: Path
    port: int | None = None
    #: a ``ghost serve`` that also runs a worker (SQLite mode's single process)
    with_worker: bool = False
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    kills: int = 0
    peak_kb: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)

    def start(self) -> None:
        args = [sys.executable, "-m", "benchmarks.chaos_kit.launch", self.command]
        if self.command == "serve":
            args += [] if self.with_worker else ["--no-worker"]
            args += ["--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as err:
            err.write(f"\n=== chaos: start {self.name} at {_now()} ===\n".encode())
            err.flush()
            self.proc = subprocess.Popen(args, env=self.env, cwd=ROOT, stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err, start_new_session=True)
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def sample(self) -> int:
        if not self.alive() or self.proc is None:
            return 0
        kb = max(rss_kb(self.proc.pid), rss_kb(self.proc.pid, "VmHWM"))
        self.peak_kb = max(self.peak_kb, kb)
        self.samples.append((time.monotonic(), rss_kb(self.proc.pid)))
        return kb

    def kill9(self) -> None:
        if self.proc is None:
            return
        self.sample()
        with self.log.open("ab") as err:
            err.write(f"\n=== chaos: kill -9 {self.name} at {_now()} ===\n".encode())
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        self.kills += 1

    def stop(self) -> None:
        """End it for good (SIGKILL to its whole process group)."""
        if self.proc is not None and self.proc.poll() is None:
            self.sample()
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)

    def wait_ready(self, timeout: float = 60) -> None:
        if self.port is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.proc and self.proc.returncode}"
                                   f"; see {self.log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1).read()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not answer /healthz in {timeout:.0f} s; "
                           f"see {self.log}")


class Sampler(threading.Thread):
    """Samples every process's memory every ``every_s`` until stopped."""

    def __init__(self, ghosts: list[Ghost], every_s: float = 1.0) -> None:
        super().__init__(daemon=True, name="chaos-sampler")
        self.ghosts = ghosts
        self.every_s = every_s
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.every_s):
            for ghost in list(self.ghosts):
                ghost.sample()
