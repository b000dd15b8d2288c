"""Line-by-line questions at the terminal: one answer per line, so a script can pipe them in."""

from __future__ import annotations

import sys
from typing import TextIO


class Prompter:
    """Reads one answer per line; None at end of input."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def ask(self, prompt: str) -> str | None:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.stdout.write("\n")
            return None
        answer = line.rstrip("\r\n")
        if not is_tty(self.stdin):
            # piped answers are not echoed by a terminal: show them, so the transcript reads
            self.stdout.write(answer + "\n")
            self.stdout.flush()
        return answer

    def choose(self, prompt: str, choices: dict[str, str]) -> str | None:
        """Ask until the answer's first letter is one of ``choices`` (three tries)."""
        for _ in range(3):
            answer = self.ask(prompt)
            if answer is None:
                return None
            key = answer.strip().lower()[:1]
            if key in choices:
                return choices[key]
            self.stdout.write(f"Please answer one of: {', '.join(sorted(choices))}.\n")
        return None


def is_tty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
