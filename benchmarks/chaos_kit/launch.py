"""``ghost`` (bot.cli) with the lab's two side-effect points traced, for the drill.

    python -m benchmarks.chaos_kit.launch serve --host 127.0.0.1 --port 3101

Every command the lab runner executes and every packet capture the lab backend creates appends
one JSON line to ``$CHAOS_SIDE_EFFECTS`` (O_APPEND, one write: lines from several processes
never interleave) *before* it happens — the trace a command leaves on the estate, counted
independently of Ghost's own audit log. Nothing else about the process changes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any


def _trace(kind: str, **fields: Any) -> None:
    path = os.environ.get("CHAOS_SIDE_EFFECTS")
    if not path:
        return
    line = json.dumps({"kind": kind, "pid": os.getpid(), "t": time.time(), **fields}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def install() -> None:
    from lab import capture, executor

    run = executor.LabExecutor.__call__
    create = capture.LabCaptureBackend.create_capture

    def traced_run(self: Any, argv: Sequence[str], timeout_s: float,
                   max_output_bytes: int) -> Any:
        _trace("command", argv=list(argv))
        return run(self, argv, timeout_s, max_output_bytes)

    def traced_create(self: Any, spec: Any) -> None:
        _trace("capture", name=spec.name, target=spec.target_resource_id)
        create(self, spec)

    executor.LabExecutor.__call__ = traced_run  # type: ignore[method-assign]
    capture.LabCaptureBackend.create_capture = traced_create  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    if os.environ.get("CHAOS_PROFILE"):
        from benchmarks.chaos_kit.profile import start

        start(os.environ["CHAOS_PROFILE"])
    from bot.cli import main

    sys.exit(main(sys.argv[1:]))
