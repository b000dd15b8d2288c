"""A sampling profiler for a drill's Ghost process (``CHAOS_PROFILE=FILE``): where its threads
are, every 10 ms, counted by stack and written to FILE every 2 s (the process is killed -9,
so there is no exit to write at). What it finds is read with ``python -m
benchmarks.chaos_kit.profile FILE [THREAD-PREFIX]``: the most frequent stacks, innermost last.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def _stack(frame: object, depth: int = 12) -> str:
    """The innermost frame, then the project's own frames (libraries' are skipped)."""
    parts: list[str] = []
    first = True
    while frame is not None and len(parts) < depth:
        code = frame.f_code  # type: ignore[attr-defined]
        name = code.co_filename
        ours = name.startswith(ROOT) and "/.venv/" not in name
        if first or ours:
            short = name[len(ROOT) + 1:] if ours else name.rsplit("/", 2)[-1]
            parts.append(f"{short}:{frame.f_lineno} {code.co_name}")  # type: ignore[attr-defined]
        first = False
        frame = frame.f_back  # type: ignore[attr-defined]
    return " < ".join(parts)


def start(path: str, every_s: float = 0.01) -> None:
    counts: Counter[str] = Counter()
    me = threading.get_ident()

    def run() -> None:
        last = time.monotonic()
        while True:
            time.sleep(every_s)
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    counts[f"[{names.get(ident, '?')}] {_stack(frame)}"] += 1
            if time.monotonic() - last > 2.0:
                last = time.monotonic()
                tmp = f"{path}.{os.getpid()}.tmp"
                Path(tmp).write_text(json.dumps(counts.most_common(400)))
                os.replace(tmp, f"{path}.{os.getpid()}")

    threading.Thread(target=run, daemon=True, name="chaos-profile").start()


def main(argv: list[str]) -> None:
    counts: Counter[str] = Counter()
    for name in argv[:1]:
        for file in Path(name).parent.glob(Path(name).name + ".*"):
            counts.update(dict(json.loads(file.read_text())))
    prefix = argv[1] if len(argv) > 1 else ""
    for stack, n in counts.most_common(200):
        if stack.startswith(f"[{prefix}") and ("bot/" in stack or "storage/" in stack
                                                or "core/" in stack):
            print(n, stack[:1500])
            print()


if __name__ == "__main__":
    main(sys.argv[1:])
