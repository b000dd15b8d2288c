"""Markdown building blocks for the RCA: table cells and text that cannot break the report.

Everything the RCA prints comes from a model, an engineer or a capture (attacker-influenced:
a DNS name, a VM tag), so no value may end a table row early, open a code fence that swallows
the rest of the report, or forge a heading such as "## Integrity Statement". The rules follow
GitHub-flavoured Markdown: inside a table a backslash-escaped pipe does not split the row, and
the table parser removes that backslash before inline parsing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Shown in place of a line break inside a one-line table cell.
NEWLINE_MARK = " ⏎ "
#: The longest command shown in a table; the full text is in the audit record.
MAX_COMMAND_CHARS = 300
#: Characters that carry inline meaning in Markdown (escaped in plain-text command cells).
_INLINE_PUNCT = frozenset("\\`*_[]<>|~&#!")
#: A line that would start a block (heading, fence, quote, HTML, setext underline, table).
_BLOCK_START = re.compile(r"^\s{0,3}(#|>|<|```|~~~|=+\s*$|-{2,}\s*$|\|)")
_BACKSLASHES_BEFORE_PIPE = re.compile(r"(\\*)\|")


def _one_line(text: str, mark: str) -> str:
    return mark.join(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def cell(value: object) -> str:
    """Prose for a table cell: one line, pipes escaped so the row keeps its columns."""
    if value is None or value == "":
        return "—"
    text = " ".join(_one_line(str(value), " ").split())
    # a backslash right before a pipe would escape the escape: double it first
    return _BACKSLASHES_BEFORE_PIPE.sub(lambda m: m.group(1) * 2 + "\\|", text) or "—"


def _plain_code(text: str) -> str:
    return "".join("\\" + ch if ch in _INLINE_PUNCT else ch for ch in text)


def code_cell(value: object, limit: int = MAX_COMMAND_CHARS) -> str:
    """A command for a table cell: a code span, exact and one line.

    A code span cannot show a backslash followed by a pipe inside a table (the table parser
    eats the backslash), so such a command is written as escaped plain text instead.
    """
    if value is None or value == "":
        return "—"
    text = _shorten(_one_line(str(value), NEWLINE_MARK), limit)
    if "\\|" in text:
        return _plain_code(text)
    return code_inline(text.replace("|", "\\|"), limit=len(text) * 2)


def code_inline(value: object, limit: int = MAX_COMMAND_CHARS) -> str:
    """A command inside a sentence or list item (outside a table pipes need no escape)."""
    if value is None or value == "":
        return "—"
    text = _shorten(_one_line(str(value), NEWLINE_MARK), limit)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline(value: object, limit: int = 500) -> str:
    """Free text for a list item or a sentence: one line, nothing that starts a block."""
    text = " ".join(_one_line(str(value), " ").split())
    text = _shorten(text, limit)
    return "\\" + text if _BLOCK_START.match(text) else text


def paragraph(value: object) -> list[str]:
    """Multi-line free text kept as lines, each unable to start a heading, fence or quote."""
    lines = []
    for raw in _one_line(str(value), "\n").split("\n"):
        line = raw.rstrip()
        lines.append("\\" + line.lstrip() if _BLOCK_START.match(line) else line)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def quote(lines: Sequence[str]) -> list[str]:
    """Quoted material (a forensic summary) set apart from Ghost's own words."""
    return [f"> {line}" if line else ">" for line in paragraph("\n".join(lines))]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table from already-escaped cells."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out
