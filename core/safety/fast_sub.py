"""`pattern.sub` for case-insensitive patterns, about ten times faster on ASCII text.

Python's `re` cannot skip ahead in an IGNORECASE alternation (`(?i)(?:password|secret|...)`),
so it tries every position; the same pattern with its literals lowercased, run case-sensitively
on the lowercased text, can. The twin only finds where matches start; each is then matched with
the original pattern on the original text, so groups, casing and the replacement are exactly
what `pattern.sub` would produce. Non-ASCII text (where lowercasing can change lengths or fold
differently from `re`) goes through `pattern.sub` unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache


def _lowercase_literals(source: str) -> str:
    """Lowercase a pattern's text, leaving escapes (`\\S`, `\\D`) and `(?P` as written."""
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            out.append(source[index:index + 2])
            index += 2
            continue
        if source.startswith("(?P", index):  # named groups and back-references
            out.append("(?P")
            index += 3
            continue
        out.append(char.lower())
        index += 1
    return "".join(out)


@lru_cache(maxsize=128)
def _twin(pattern: re.Pattern[str]) -> re.Pattern[str]:
    source = pattern.pattern
    if source.startswith("(?i)"):
        source = source[4:]
    return re.compile(_lowercase_literals(source), pattern.flags & ~re.IGNORECASE)


def ci_sub(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str) -> str:
    """`pattern.sub(repl, text)`; `pattern` must be case-insensitive."""
    if not pattern.flags & re.IGNORECASE or not text.isascii():
        return pattern.sub(repl, text)
    lower = text.lower()
    out: list[str] = []
    pos = 0
    for candidate in _twin(pattern).finditer(lower):
        start = candidate.start()
        if start < pos:
            continue
        match = pattern.match(text, start)
        if match is None or match.end() == match.start():
            continue
        out.append(text[pos:start])
        out.append(repl(match))
        pos = match.end()
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)
