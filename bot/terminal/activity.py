"""What is happening right now, while the engineer waits: a live status line on a terminal.

A command that takes 20 s, or a model that thinks for 15 s, must not look like a hung console.
On a TTY a one-line status (what, and for how long) is shown and removed when the wait ends; on
a pipe nothing extra is written, so a transcript holds the same lines as the screen, minus the
animation. The ``[Shell]`` line is printed when a command starts, so even after a Ctrl-C the
screen says what was running.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from rich.status import Status
from rich.text import Text

from bot.terminal.prompt import is_tty
from bot.terminal.style import console_for, no_color


class Activity:
    """The live status line of one terminal (none when ``out`` is not a terminal)."""

    def __init__(self, out: TextIO, *, live: bool | None = None) -> None:
        self.out = out
        self.live = is_tty(out) and not no_color() if live is None else live

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """Show ``what`` with the elapsed seconds until the block ends."""
        if not self.live:
            yield
            return
        console = console_for(self.out)
        start = time.monotonic()
        label = _fit(what, max(20, console.width - 12))
        status = Status(Text(label), console=console, spinner="dots", refresh_per_second=4)

        def tick() -> None:
            status.update(Text(f"{label}  {time.monotonic() - start:4.0f}s"))

        with status:
            ticker = _Ticker(tick)
            try:
                yield
            finally:
                ticker.stop()


class _Ticker:
    """Updates the elapsed seconds once a second from a daemon thread."""

    def __init__(self, tick: Callable[[], None]) -> None:
        import threading

        self._stop = threading.Event()
        self._tick = tick
        self._thread = threading.Thread(target=self._run, name="ghost-status", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._tick()
        while not self._stop.wait(1.0):
            self._tick()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def _fit(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def watch_commands(shell: Any, activity: Activity) -> None:
    """Announce each command as it starts and show it running (the shell's runner wrapped)."""
    runner = shell.runner
    if getattr(runner, "ghost_watched", False):
        return

    def announced(argv: Sequence[str], timeout_s: float, max_output_bytes: int) -> Any:
        command = shlex.join(argv)
        activity.out.write(f"[Shell] running: {command}\n")
        activity.out.flush()
        with activity.waiting(f"running {command}"):
            return runner(argv, timeout_s, max_output_bytes)

    announced.ghost_watched = True  # type: ignore[attr-defined]
    shell.runner = announced


class ThinkingBrain:
    """The model, with a status line while it is asked (``generate``); all else passes through."""

    def __init__(self, brain: Any, activity: Activity) -> None:
        self._brain = brain
        self._activity = activity

    def __getattr__(self, name: str) -> Any:
        return getattr(self._brain, name)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        model = getattr(self._brain, "model", "the model")
        with self._activity.waiting(f"Ghost is thinking ({model})"):
            return self._brain.generate(*args, **kwargs)
