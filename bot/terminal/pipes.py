"""`ghost … | head -3`: a reader that stops early ends the command quietly.

When the reader goes away, the next write raises BrokenPipeError; there is nobody left to tell,
so the command stops without a message, and stdout is pointed at /dev/null so that Python's own
flush at exit does not complain either.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

#: what a shell reports for a command stopped by SIGPIPE (128 + 13)
EXIT_BROKEN_PIPE = 141


def quiet_on_broken_pipe(run: Callable[[], int]) -> int:
    try:
        code = run()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        return
