"""The shape of a command line: the stages of a pipeline, their words and their redirections.

The gate offers a command for approval only when it can read its shape: one command, or a
pipeline of commands, with at most plain redirections. `parse_shape` reads the line the way a
POSIX shell would and either returns that shape or says what it could not read (chaining,
substitution, expansion, escapes, here-documents ...) in words the model can act on. Words are
literal only: quotes are removed, and a word that a shell would change at run time (a `$`
expansion, a backtick, a backslash escape, a leading `~`) is a problem, not a word. Unquoted
pattern characters (`* ? [ ] { }`) are recorded per word: whether they are globs depends on the
program (the gate decides).

Expects printable ASCII (callers check `printable_ascii_problem` first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

_PATTERN: Final = frozenset("*?[]{}~")
_FD_RE: Final = re.compile(r"^[0-9]$")


@dataclass(frozen=True)
class Word:
    """One literal word of a command."""

    text: str
    #: unquoted pattern characters in the word, in order (`*`, `?`, `[`, `]`, `{`, `}`, and a
    #: `~` inside the word): never SAFE; globs (`*`, `?`, `[`) only where a program reads
    #: file names
    patterns: str = ""
    #: any part of the word was quoted
    quoted: bool = False


@dataclass(frozen=True)
class Redirect:
    """`N>file`, `N>>file`, `<file`, `N>&M`: the operator, the stream, and its target."""

    op: str  # ">", ">>", "<", ">&"
    fd: int
    target: str


@dataclass(frozen=True)
class Stage:
    """One command of a pipeline."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words)


@dataclass(frozen=True)
class Shape:
    """What a command line is made of, or why the gate cannot read it."""

    stages: tuple[Stage, ...] = ()
    #: (kind, what) when the line is not a plain command or pipeline: kind is one of
    #: compound, substitution, expansion, escape, comment, heredoc, redirection, parse
    problem: tuple[str, str] | None = None

    @property
    def simple(self) -> bool:
        """One command, no redirection."""
        return (self.problem is None and len(self.stages) == 1
                and not self.stages[0].redirects)


@dataclass
class _Builder:
    stages: list[Stage] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    chars: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    quoted: bool = False
    in_word: bool = False
    pending: tuple[str, int] | None = None  # a redirection waiting for its target

    def end_word(self) -> str | None:
        if not self.in_word:
            return None
        text = "".join(self.chars)
        if self.pending is not None:
            op, fd = self.pending
            self.pending = None
            if self.patterns or not text:
                return "a redirection target must be a plain file name"
            self.redirects.append(Redirect(op, fd, text))
        else:
            self.words.append(Word(text, "".join(self.patterns), self.quoted))
        self.chars, self.patterns, self.quoted, self.in_word = [], [], False, False
        return None

    def end_stage(self) -> str | None:
        if self.pending is not None:
            return "a redirection has no target"
        if not self.words:
            return "a pipe has no command on one side"
        self.stages.append(Stage(tuple(self.words), tuple(self.redirects)))
        self.words, self.redirects = [], []
        return None


def _fail(kind: str, what: str) -> Shape:
    return Shape(problem=(kind, what))


def _dollar(command: str, index: int) -> tuple[str, str] | None:
    nxt = command[index + 1:index + 2]
    if nxt == "(":
        return ("substitution", "$( ) command substitution runs a command inside the line")
    if nxt == "{":
        return ("expansion", "${...} expands a variable when the line runs")
    if nxt == "'":
        return ("expansion", "$'...' spells characters with escapes")
    if nxt and (nxt.isalnum() or nxt in "_@*#?!$-\""):
        return ("expansion", f"${nxt}... expands a variable when the line runs")
    return None


def parse_shape(command: str) -> Shape:
    """Read `command` into stages and redirections, or say what the gate cannot read."""
    b = _Builder()
    state = "normal"
    index = 0
    length = len(command)
    while index < length:
        char = command[index]
        if state == "single":
            if char == "'":
                state = "normal"
            else:
                b.chars.append(char)
            index += 1
            continue
        if state == "double":
            if char == '"':
                state = "normal"
            elif char == "$" and _dollar(command, index) is not None:
                kind, what = _dollar(command, index)  # type: ignore[misc]
                return _fail(kind, what + " (also inside double quotes)")
            elif char == "`":
                return _fail("substitution", "a backtick runs a command inside the line")
            elif char == "\\":
                return _fail("escape", "a backslash inside double quotes escapes characters")
            else:
                b.chars.append(char)
            index += 1
            continue
        if char == " ":
            problem = b.end_word()
            if problem:
                return _fail("redirection", problem)
            index += 1
            continue
        if char in "'\"":
            state = "single" if char == "'" else "double"
            b.in_word, b.quoted = True, True
            index += 1
            continue
        if char == "|":
            if command[index + 1:index + 2] in ("|", "&"):
                return _fail("compound", f"'|{command[index + 1]}' chains commands")
            problem = b.end_word() or b.end_stage()
            if problem:
                return _fail("compound", problem)
            index += 1
            continue
        if char in ";&()":
            if char == "&" and command[index + 1:index + 2] == ">":
                return _fail("redirection", "'&>' sends both output streams to a file")
            return _fail("compound", {";": "';' runs a second command", "&": "'&' runs "
                                      "commands in the background or chains them",
                                      "(": "'(' starts a subshell or a function",
                                      ")": "')' closes a subshell"}[char])
        if char in "<>":
            found = _redirect(command, index, b)
            if isinstance(found, Shape):
                return found
            index = found
            continue
        if char == "$":
            found_dollar = _dollar(command, index)
            if found_dollar is not None:
                return _fail(*found_dollar)
        if char == "`":
            return _fail("substitution", "a backtick runs a command inside the line")
        if char == "\\":
            return _fail("escape", "a backslash escapes characters outside quotes")
        if char == "#" and not b.in_word:
            return _fail("comment", "an unquoted '#' starts a comment that hides the rest of "
                         "the line")
        if char == "!":
            return _fail("expansion", "an unquoted '!' is history expansion in a shell")
        if char == "~" and not b.in_word:
            return _fail("expansion", "a leading '~' expands to a home directory")
        if char in _PATTERN:
            b.patterns.append(char)
        b.chars.append(char)
        b.in_word = True
        index += 1
    if state != "normal":
        return _fail("parse", "a quote is not closed")
    problem = b.end_word()
    if problem:
        return _fail("redirection", problem)
    if not b.words and not b.stages and not b.redirects:
        return Shape()
    problem = b.end_stage()
    if problem:
        return _fail("compound" if "pipe" in problem else "redirection", problem)
    return Shape(tuple(b.stages))


def _redirect(command: str, index: int, b: _Builder) -> int | Shape:
    """Read one redirection operator at `index`; return where the next character starts."""
    char = command[index]
    nxt = command[index + 1:index + 2]
    if nxt == "(":
        return _fail("substitution", f"{char}( ) process substitution runs a command")
    fd = 1 if char == ">" else 0
    if b.in_word:
        text = "".join(b.chars)
        if _FD_RE.match(text) and not b.quoted:
            fd = int(text)
            b.chars, b.patterns, b.in_word = [], [], False
        else:
            problem = b.end_word()
            if problem:
                return _fail("redirection", problem)
    if b.pending is not None:
        return _fail("redirection", "two redirection operators in a row")
    if char == "<":
        if nxt in ("<", ">", "&"):
            return _fail("heredoc", "'<<' / '<<<' / '<>' feed text the gate cannot see to a "
                         "program (a here-document)")
        b.pending = ("<", fd)
        return index + 1
    if nxt == ">":
        b.pending = (">>", fd)
        return index + 2
    if nxt == "|":
        b.pending = (">", fd)
        return index + 2
    if nxt == "&":
        rest = command[index + 2:index + 4]
        if rest[:1].isdigit() and (len(rest) < 2 or rest[1] == " "):
            b.redirects.append(Redirect(">&", fd, rest[0]))
            return index + 3
        return _fail("redirection", "'>&' needs a stream number (2>&1)")
    b.pending = (">", fd)
    return index + 1
