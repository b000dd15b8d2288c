"""One place that decides how the terminal looks: colour on a TTY, plain text elsewhere.

Piped or redirected output (and ``NO_COLOR``) gets the same words with no control codes, so a
transcript, a log file or ``| cat`` reads exactly like the screen.
"""

from __future__ import annotations

import os
from typing import TextIO

from rich.cells import cell_len, set_cell_size
from rich.console import Console

from bot.terminal.prompt import is_tty

#: the widest a box gets, however wide the terminal: long lines are hard to read
MAX_WIDTH = 100


def no_color() -> bool:
    """https://no-color.org: any non-empty NO_COLOR turns colour off."""
    return bool(os.environ.get("NO_COLOR"))


def fancy(out: TextIO) -> bool:
    """Styled output (colour, Markdown, live lines): a terminal, and no NO_COLOR."""
    return is_tty(out) and not no_color()


def console_for(out: TextIO, *, width: int | None = None) -> Console:
    """A rich console writing to ``out``: styled only on a terminal without NO_COLOR."""
    plain = not fancy(out)  # NO_COLOR: no control codes at all, like a pipe
    return Console(file=out, width=width, force_terminal=not plain, no_color=plain,
                   color_system=None if plain else "auto", highlight=False, emoji=False,
                   markup=False, soft_wrap=False, legacy_windows=False)


def terminal_width(out: TextIO) -> int | None:
    """The terminal's columns, None when ``out`` is not a terminal (a pipe is never wrapped:
    a transcript keeps each line whole)."""
    if not is_tty(out):
        return None
    return max(20, console_for(out).width)


def wrapped(text: str, out: TextIO, *, indent: str = "    ",
            width: int | None = None) -> list[str]:
    """``text`` as the screen lines of a terminal (``width`` columns, default the terminal's),
    broken at spaces only, continuation lines indented; on a pipe, the one line unchanged.

    Never inside a word: a name such as ``rg-prod-spoke-001``, an audit id, a path or a URL
    that does not fit after the words before it starts a line of its own, and one wider than
    the whole screen is left whole on that line (without the indent) for the terminal to
    fold: Ghost never puts a newline inside it, so it copies and pastes as one.
    """
    import textwrap

    width = width or terminal_width(out)
    if width is None:
        return [text]
    lines: list[str] = []
    for line in text.split("\n"):
        if cell_len(line) <= width:
            lines.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip(" "))]
        cont = lead + indent if cell_len(lead + indent) < width // 2 else ""
        for part in textwrap.wrap(line, width, subsequent_indent=cont,
                                  break_on_hyphens=False, break_long_words=False) or [line]:
            if cell_len(part) > width and part.startswith(cont) and cont:
                part = part[len(cont):]  # too wide anyway: the whole screen for the word
                if cell_len(lead + part) <= width:
                    part = lead + part
            lines.append(part)
    return lines


def cut(text: str, out: TextIO) -> str:
    """``text`` cut to one screen line with "…" on a terminal; unchanged on a pipe."""
    width = terminal_width(out)
    if width is None or cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"


def say(out: TextIO, text: str, *, indent: str = "  ") -> None:
    """Write ``text`` (one or more lines) wrapped at spaces to the terminal, and flush."""
    out.write("\n".join(wrapped(text, out, indent=indent)) + "\n")
    out.flush()


def command_lines(label: str, command: str, width: int | None, *,
                  indent: str = "  ") -> list[str]:
    """``label command`` (a command to copy, after its label) as screen lines: one line when
    it fits; else the label on its line and the command whole on the next (indented two more
    when that fits), so a copy never takes a line break from the middle of a command."""
    line = f"{indent}{label} {command}"
    if width is None or cell_len(line) <= width:
        return [line]
    under = f"{indent}  {command}"
    return [f"{indent}{label}", under if cell_len(under) <= width else command]


def say_command(out: TextIO, label: str, command: str, *, indent: str = "  ") -> None:
    """Write :func:`command_lines` for the terminal behind ``out`` (one line on a pipe)."""
    out.write("\n".join(command_lines(label, command, terminal_width(out), indent=indent))
              + "\n")
    out.flush()

