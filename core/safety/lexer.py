"""Two lexers for one command line, and the checks every reading starts with.

`strict_lex` splits a line like a POSIX shell and records every expansion, operator or glob
outside single quotes; it judges the lines of an in-VM probe script (`rules/vm_probe.py`), while
the classifier reads whole commands with `shape.py`. `tolerant_segments` is for Tier 0: it reads
hostile text the way an attacker hopes a shell would, splitting on every operator and dropping
quotes and escapes, so that forbidden words are found wherever they hide.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass, field

#: Longest command the gate inspects; longer ones are RISKY (humans read what they approve).
MAX_COMMAND_CHARS = 4096

_GLOB_CHARS = frozenset("{}~")
#: Pattern characters: a path glob in a shell, plain text in an argv run without one.
_PATTERN_CHARS = frozenset("*?[]")


@dataclass
class LexResult:
    """Words of a command line plus every shell feature found outside single quotes."""

    words: list[str] = field(default_factory=list)
    #: (kind, what was seen) in order of appearance
    hazards: list[tuple[str, str]] = field(default_factory=list)
    program_quoted: bool = False
    unbalanced: bool = False
    #: (word index, character) of each unquoted *, ?, [ or ]; whether that is a glob depends
    #: on the program (`az ... --local 10.0.0.4:*` is a value, `cat /etc/*` a path pattern)
    patterns: list[tuple[int, str]] = field(default_factory=list)


def printable_ascii_problem(command: str) -> tuple[str, str] | None:
    """Return (kind, description) for the first character a SAFE command may not contain."""
    for index, char in enumerate(command):
        code = ord(char)
        if 0x20 <= code <= 0x7E:
            continue
        name = unicodedata.name(char, f"U+{code:04X}")
        if code < 0x20 or code == 0x7F:
            return "control_char", f"control character {name} at position {index}"
        if 0x80 <= code <= 0x9F:
            return "control_char", f"C1 control character U+{code:04X} at position {index}"
        return "non_ascii", f"non-ASCII character {name} (U+{code:04X}) at position {index}"
    return None


def strict_lex(command: str) -> LexResult:
    """Split like a POSIX shell and record every expansion, operator or glob outside '...'.

    Expects printable ASCII; callers check `printable_ascii_problem` first.
    """
    result = LexResult()
    word: list[str] = []
    in_word = False
    state = "normal"
    for index, char in enumerate(command):
        if state == "single":
            if char == "'":
                state = "normal"
            else:
                word.append(char)
            continue
        if state == "double":
            if char == '"':
                state = "normal"
            elif char == "$":
                result.hazards.append(("expansion", '"$" inside double quotes'))
                word.append(char)
            elif char == "`":
                result.hazards.append(("substitution", "backtick inside double quotes"))
                word.append(char)
            elif char == "\\":
                result.hazards.append(("escape", "backslash inside double quotes"))
                word.append(char)
            elif char == "!":
                result.hazards.append(("expansion", "'!' history expansion"))
                word.append(char)
            else:
                word.append(char)
            continue
        # normal state
        if char == " ":
            if in_word:
                result.words.append("".join(word))
                word = []
                in_word = False
            continue
        at_word_start = not in_word
        in_word = True
        if char in "'\"":
            state = "single" if char == "'" else "double"
            if not result.words:
                result.program_quoted = True
            continue
        if char in _PATTERN_CHARS:
            result.patterns.append((len(result.words), char))
        hazard = _normal_hazard(char, at_word_start)
        if command[index + 1:index + 2] == "(" and char in "$<>":
            hazard = ("substitution", f"{char}( substitution")
        if hazard is not None:
            result.hazards.append(hazard)
        word.append(char)
    if state != "normal":
        result.unbalanced = True
    if in_word:
        result.words.append("".join(word))
    return result


def _normal_hazard(char: str, at_word_start: bool) -> tuple[str, str] | None:
    if char in ";&|()":
        return "chaining", f"shell operator {char!r}"
    if char in "<>":
        return "redirection", f"redirection {char!r}"
    if char == "$":
        return "expansion", "'$' expansion"
    if char == "`":
        return "substitution", "backtick command substitution"
    if char == "\\":
        return "escape", "backslash escape"
    if char == "!":
        return "expansion", "'!' history expansion"
    if char in _GLOB_CHARS:
        return "glob", f"unquoted {char!r} (glob, brace or tilde expansion)"
    if char == "#" and at_word_start:
        return "comment", "unquoted '#' starts a comment"
    return None


def shlex_agrees(command: str, words: list[str]) -> bool:
    """Second opinion from the standard library; any disagreement makes the command RISKY."""
    try:
        return shlex.split(command, comments=False, posix=True) == words
    except ValueError:
        return False


# ---- tolerant lexing for Tier 0 ------------------------------------------------------------

_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Mn", "Me"})
_IFS_RE = re.compile(r"\$\{?ifs\}?|\$'\\[tn ]'|\$'\\x(?:20|09|0a)'")
_SEGMENT_RE = re.compile(r"[;&|\n\r`()<>{}]|\$\(")
_DROP_RE = re.compile(r"['\"\\]")


_ASCII_INVISIBLE_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def normalize_hostile(text: str) -> str:
    """Fold look-alikes (NFKC), drop invisible characters and lowercase, for Tier 0 scans."""
    if text.isascii():
        # the same result as the loop below, at C speed for the common (and the 1 MB) case
        return _ASCII_INVISIBLE_RE.sub("", text).lower()
    folded = unicodedata.normalize("NFKC", text)
    # IDNA maps the ideographic full stop (and, after NFKC, its half-width form) to a dot,
    # so curl reads 169\u3002254\u3002169\u3002254 as the metadata address
    table: dict[int, str | None] = {0x3002: "."}
    for char in set(folded):
        if char in "\n\r\t":
            continue
        category = unicodedata.category(char)
        if category in _INVISIBLE_CATEGORIES:
            table[ord(char)] = None
        elif category == "Zs":
            table[ord(char)] = " "
    return folded.translate(table).lower()


def tolerant_segments(normalized: str) -> list[list[str]]:
    """Split normalized text into word lists, one per would-be simple command."""
    text = _IFS_RE.sub(" ", normalized)
    segments: list[list[str]] = []
    for piece in _SEGMENT_RE.split(text):
        words = _DROP_RE.sub("", piece).split()
        if words:
            segments.append(words)
    return segments
