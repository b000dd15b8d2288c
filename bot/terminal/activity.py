"""What is happening right now, while the engineer waits: a live status line on a terminal.

A command that takes 20 s, or a model that thinks for 15 s, must not look like a hung console.
On a TTY a one-line status (what, and for how long) is shown and removed when the wait ends; on
a pipe nothing extra is written, so a transcript holds the same lines as the screen, minus the
animation. The ``[Shell]`` line is printed when a command starts, so even after a Ctrl-C the
screen says what was running; on a terminal it is replaced by the outcome line when the command
ends.
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
from bot.terminal.style import console_for, no_color, wrapped


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
        lines = wrapped(f"[Shell] running: {command}", activity.out)
        activity.out.write("\n".join(lines) + "\n")
        activity.out.flush()
        with activity.waiting(f"running {command}"):
            result = runner(argv, timeout_s, max_output_bytes)
        if activity.live:  # the line gives way to its outcome, printed next (after a Ctrl-C,
            # or on a pipe, it stays: the transcript says what was started)
            activity.out.write(f"\x1b[{len(lines)}F\x1b[J")
            activity.out.flush()
        return result

    announced.ghost_watched = True  # type: ignore[attr-defined]
    shell.runner = announced


class ThinkingBrain:
    """The model, with a status line while it is asked (``generate``); all else passes through.

    A failed attempt that the engine will retry is not silent: the engine tells the notifier
    once per outage what failed and until when it keeps asking (``[Gemini] … retrying until
    14:32 UTC``), and each wait before the next try (:meth:`pausing`) shows on the status
    line with the attempt's number, so an unreachable or overloaded Gemini shows as such
    rather than as a frozen console, without a line per try.
    """

    def __init__(self, brain: Any, activity: Activity, *, attempts: int = 4) -> None:
        self._brain = brain
        self._activity = activity
        self.attempts = attempts  # the engine's retries + 1 (bot.bootstrap sets it)
        self._attempt = 1
        self._failure: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._brain, name)

    def where(self) -> str:
        """``MODEL at HOST`` (the model alone for a brain without an endpoint: a replay)."""
        model = str(getattr(self._brain, "model", "the model"))
        host = getattr(self._brain, "host", None)
        return f"{model} at {host()}" if callable(host) else model

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        from core.engine.brain import BrainError

        label = f"Ghost is thinking ({self.where()})"
        if self._attempt > 1:
            label += f", attempt {self._attempt}"
        try:
            with self._activity.waiting(label):
                reply = self._brain.generate(*args, **kwargs)
        except BrainError as exc:
            if exc.transient:
                self._failure = str(exc)  # the wait after it shows in pausing()
                self._attempt += 1
            else:
                self._attempt, self._failure = 1, None
            raise
        self._attempt, self._failure = 1, None
        return reply

    def pausing(self, sleep: Callable[[float], None]) -> Callable[[float], None]:
        """``sleep`` for the engine's retry waits: says what failed and when it tries again."""

        def pause(seconds: float) -> None:
            if self._failure is None:
                sleep(seconds)
                return
            self._failure = None
            with self._activity.waiting(f"Gemini unavailable: waiting {seconds:g}s before "
                                        f"asking {self.where()} again (attempt "
                                        f"{self._attempt})"):
                sleep(seconds)

        return pause
