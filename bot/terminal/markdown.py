"""The model's Markdown, rendered on a terminal: ``**Hypothesis H1:**`` in bold, lists as
lists, code as code, never the raw asterisks. Only where styles show (``style.fancy``): a
pipe, a file or ``NO_COLOR`` gets the model's text exactly as written, which reads as it is."""

from __future__ import annotations

from typing import TextIO

from rich.markdown import Markdown
from rich.padding import Padding

from bot.terminal.style import MAX_WIDTH, console_for


def print_markdown(text: str, out: TextIO) -> None:
    """``text`` as Markdown, indented by two, no wider than the terminal (nor MAX_WIDTH)."""
    console = console_for(out)
    width = min(console.width, MAX_WIDTH)
    # hyperlinks=False: a link shows its address, which a terminal without OSC 8 would lose
    body = Markdown(text.strip(), code_theme="ansi_dark", hyperlinks=False,
                    inline_code_lexer=None)
    console.print(Padding(body, (0, 0, 0, 2)), width=width)
    out.flush()
