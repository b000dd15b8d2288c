"""The deterministic command classifier: Tier 0 -> shape -> Tier 1/2 -> approvability.

Order of the pipeline and why:
1. Tier 0 (FORBIDDEN) reads the text as hostilely as possible, so a forbidden command stays
   FORBIDDEN however it is quoted, chained or disguised.
2. Shape: the line is read the way a POSIX shell would (`shape.py`). A line the gate cannot
   read as one command or a pipeline of literal words (chaining, substitution, expansion,
   escapes, here-documents, look-alike characters) is FORBIDDEN with what to do instead.
3. Tier 1 allowlist by (program, options, arguments) and Tier 2 `az` reads: only a single
   simple command with no unquoted pattern character can be SAFE. The executor runs argv with
   shell=False, but a human may paste a line into a shell, and a parse that depends on shell
   behaviour is a parse an attacker can steer.
4. Approvability (`approvable.py`): what is not SAFE is RISKY only when the gate understands it
   (every program known and its effect classified, the shape simple); else FORBIDDEN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from core.safety.approvable import judge_command, judge_shape
from core.safety.lexer import MAX_COMMAND_CHARS, printable_ascii_problem, shlex_agrees
from core.safety.program_rules import PROGRAM_RULES, Context
from core.safety.shape import Shape, Stage, parse_shape
from core.safety.tier0 import tier0
from core.safety.verdict import Verdict, make_verdict

#: Tier 0 still reads commands up to this size so a hidden forbidden word is named as such.
_TIER0_SCAN_LIMIT: Final = 1 << 20
#: Programs whose arguments are values, never file names: a `*`, `?` or bracket in them is text
#: for the program (a JMESPath filter, `--local 10.0.0.4:*`, a DNS wildcard, a tcpdump or ss
#: filter), so unquoted they are approvable; quoted they can be SAFE.
PATTERN_VALUE_PROGRAMS: Final = frozenset({"az", "dig", "host", "nslookup", "tcpdump", "ss"})
_GLOB: Final = frozenset("*?[")
#: What to do about each construct the gate cannot read (shape.py's problem kinds).
_SHAPE_RULES: Final = {
    "compound": ("T0.compound_command", "Ghost runs one command at a time: send each command "
                 "on its own"),
    "substitution": ("T0.not_literal", "write the value itself instead of a command that "
                     "produces it"),
    "expansion": ("T0.not_literal", "write the value itself; Ghost passes arguments "
                  "literally (quote literal text in single quotes)"),
    "escape": ("T0.not_literal", "quote the text in single quotes instead of escaping it"),
    "comment": ("T0.unreadable_text", "remove the comment"),
    "heredoc": ("T0.redirection", "give the input as an argument or a file in Ghost's data "
                "directory"),
    "redirection": ("T0.redirection", "redirect only into Ghost's data directory"),
    "parse": ("T0.unreadable_text", "close the quote"),
}


def classify(command: str, *, data_dir: Path | None = None,
             cwd: Path | None = None) -> Verdict:
    """Classify one command line as SAFE, RISKY or FORBIDDEN.

    `data_dir` is the audit/data directory that `cat` and `ghost-forensics` are confined to
    (checked on resolved real paths); without it those commands are RISKY. `cwd` is the
    directory relative paths are resolved against (default: the process's current directory).
    Deterministic: the same inputs and file system give the same verdict.
    """
    if not isinstance(command, str):
        raise TypeError(f"command must be str, not {type(command).__name__}")
    if not command.strip():
        return make_verdict("T3.empty", "The command is empty.")
    forbidden = tier0(command[:_TIER0_SCAN_LIMIT])
    if forbidden is not None:
        return forbidden
    if len(command) > MAX_COMMAND_CHARS:
        return make_verdict("T0.unreadable_text", f"Ghost will not offer this for approval: "
                            f"the command is {len(command)} characters long and the gate reads "
                            f"at most {MAX_COMMAND_CHARS}; split it or shorten it.")
    problem = printable_ascii_problem(command)
    if problem is not None:
        _, what = problem
        return make_verdict("T0.unreadable_text", f"Ghost will not offer this for approval: it "
                            f"contains {what}; look-alike and invisible characters disguise "
                            "what runs. Retype the command in plain ASCII.")
    return _classify_shape(command, parse_shape(command),
                           Context(data_dir=data_dir, cwd=cwd))


def _classify_shape(command: str, shape: Shape, ctx: Context) -> Verdict:
    if shape.problem is not None:
        kind, what = shape.problem
        rule, todo = _SHAPE_RULES[kind]
        return make_verdict(rule, f"Ghost will not offer this for approval: {what}; {todo}.")
    if not shape.stages:
        return make_verdict("T3.empty", "The command has no words.")
    first = _classify_stage(shape.stages[0], ctx, alone=shape.simple, command=command)
    if shape.simple:
        return first
    return judge_shape(shape, first, ctx)


def _classify_stage(stage: Stage, ctx: Context, *, alone: bool, command: str) -> Verdict:
    """The verdict on one command of a line (the whole line when `alone`)."""
    argv = stage.argv
    program = argv[0]
    if stage.words[0].quoted:
        return make_verdict("T0.unreadable_text", f"Ghost will not offer this for approval: the "
                            f"program name {program!r} is quoted, which disguises it; write it "
                            "without quotes.", argv)
    if alone and not shlex_agrees(command, list(argv)):
        return make_verdict("T0.unreadable_text", "Ghost will not offer this for approval: the "
                            "command parses differently under two parsers; simplify its "
                            "quoting.", argv)
    patterns = "".join(w.patterns for w in stage.words[1:])
    rule_fn = PROGRAM_RULES.get(program)
    verdict = rule_fn(argv, ctx) if rule_fn is not None else None
    if patterns and program not in PATTERN_VALUE_PROGRAMS and _GLOB & set(patterns):
        word = next(w.text for w in stage.words[1:] if _GLOB & set(w.patterns))
        return make_verdict("T0.not_literal", f"Ghost will not offer this for approval: "
                            f"{word[:60]!r} has an unquoted glob; Ghost runs commands without a "
                            "shell, so it would not be expanded. Name the files, or quote the "
                            "text if the program reads it as a pattern.", argv)
    if verdict is not None and verdict.is_safe:
        if not patterns:
            return verdict
        return make_verdict("T3.unquoted_pattern", f"{program}: an unquoted "
                            f"{patterns[0]!r} is a glob to a shell. Quote the value in single "
                            "quotes and the same command runs without approval.", argv)
    return judge_command(argv, verdict, ctx)
