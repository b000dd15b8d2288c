"""One place that decides how the terminal looks: colour on a TTY, plain text elsewhere.

Piped or redirected output (and ``NO_COLOR``) gets the same words with no control codes, so a
transcript, a log file or ``| cat`` reads exactly like the screen.
"""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console

from bot.terminal.prompt import is_tty

#: the widest a box gets, however wide the terminal: long lines are hard to read
MAX_WIDTH = 100


def no_color() -> bool:
    """https://no-color.org: any non-empty NO_COLOR turns colour off."""
    return bool(os.environ.get("NO_COLOR"))


def console_for(out: TextIO, *, width: int | None = None) -> Console:
    """A rich console writing to ``out``: styled only on a terminal without NO_COLOR."""
    plain = not is_tty(out) or no_color()  # NO_COLOR: no control codes at all, like a pipe
    return Console(file=out, width=width, force_terminal=not plain, no_color=plain,
                   color_system=None if plain else "auto", highlight=False, emoji=False,
                   markup=False, soft_wrap=False, legacy_windows=False)


def box_width(console: Console) -> int:
    """The box's outer width: the terminal's, capped at ``MAX_WIDTH``."""
    return max(20, min(console.width, MAX_WIDTH))
