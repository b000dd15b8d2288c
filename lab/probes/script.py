"""Running a `az vm run-command invoke --scripts …` script in the lab's guest.

A script is lines of simple commands joined by ``;``, ``&&``, ``||`` and pipes into the text
filters ``grep``, ``head``, ``tail`` and ``wc -l``; ``sudo``/``timeout N`` prefixes, ``echo``,
``2>&1``, redirections to /dev/null and ``$?`` are understood. Every command must be one the lab
models; anything else makes the whole run "not modelled by the lab" rather than half-invented.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from lab.network import NotModelled
from lab.probes import GUEST
from lab.probes.common import ProbeOutput, Vantage

_MARKERS = (
    (re.compile(r"&>\s*/dev/null"), " __LAB_NOALL__ "),
    (re.compile(r"2>&1"), " __LAB_MERGE__ "),
    (re.compile(r"2>\s*/dev/null"), " __LAB_NOERR__ "),
    (re.compile(r"1?>\s*/dev/null"), " __LAB_NOOUT__ "),
)
_OPERATORS = (";", "&&", "||", "|", "&")


@dataclass
class _Stage:
    argv: list[str] = field(default_factory=list)
    merge: bool = False
    no_out: bool = False
    no_err: bool = False


def _tokens(line: str) -> list[str]:
    for pattern, marker in _MARKERS:
        line = pattern.sub(marker, line)
    if re.search(r"[<>`]|\$(?!\?)", line):
        raise NotModelled("redirections, variables, substitutions and here-documents in "
                          "run-command scripts (the lab expands only $?)")
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError as exc:
        raise NotModelled(f"this script line ({exc})") from None


def _parse(script: str) -> list[tuple[str, list[_Stage]]]:
    """[(operator before it, pipeline stages)], the first operator being ';'."""
    chain: list[tuple[str, list[_Stage]]] = []
    for line in script.splitlines():
        op = ";"
        stages = [_Stage()]
        for tok in _tokens(line):
            if tok in _OPERATORS:
                if tok == "&":
                    raise NotModelled("background jobs (&) in run-command scripts")
                if tok == "|":
                    stages.append(_Stage())
                    continue
                if stages[0].argv:
                    chain.append((op, stages))
                op, stages = tok, [_Stage()]
            elif tok == "__LAB_MERGE__":
                stages[-1].merge = True
            elif tok == "__LAB_NOOUT__":
                stages[-1].no_out = True
            elif tok == "__LAB_NOERR__":
                stages[-1].no_err = True
            elif tok == "__LAB_NOALL__":
                stages[-1].no_out = stages[-1].no_err = True
            else:
                stages[-1].argv.append(tok)
        if stages[0].argv:
            chain.append((op, stages))
    return chain


def _strip_prefixes(argv: list[str]) -> list[str]:
    while argv and argv[0] in ("sudo", "timeout"):
        if argv[0] == "timeout" and len(argv) > 1:
            argv = argv[2:]
        else:
            argv = argv[1:]
    return argv


def _filter(argv: Sequence[str], text: str) -> tuple[int, str]:
    program, args = argv[0], list(argv[1:])
    lines = text.splitlines()
    if program == "grep":
        flags = "".join(a[1:] for a in args if a.startswith("-") and a != "-e")
        words = [a for a in args if not a.startswith("-")]
        if not words or set(flags) - set("ivEwcF"):
            raise NotModelled(f"{' '.join(argv)} in a pipe")
        pattern = words[0] if "F" in flags else words[0]
        rx = re.compile(re.escape(pattern) if "F" in flags else pattern.replace("\\|", "|"),
                        re.IGNORECASE if "i" in flags else 0)
        if "w" in flags:
            rx = re.compile(rf"\b(?:{rx.pattern})\b", rx.flags)
        hits = [ln for ln in lines if bool(rx.search(ln)) != ("v" in flags)]
        if "c" in flags:
            return (0 if hits else 1), f"{len(hits)}\n"
        return (0 if hits else 1), "".join(f"{h}\n" for h in hits)
    if program in ("head", "tail"):
        n = 10
        for a in args:
            if a.lstrip("-").isdigit():
                n = int(a.lstrip("-"))
        chosen = lines[:n] if program == "head" else lines[-n:] if n else []
        return 0, "".join(f"{x}\n" for x in chosen)
    if program == "wc" and args == ["-l"]:
        return 0, f"{len(lines)}\n"
    raise NotModelled(f"{program} in a pipe (the lab filters with grep, head, tail, wc -l)")


def _run_one(v: Vantage, argv: list[str]) -> ProbeOutput:
    if not argv:
        return ProbeOutput(0)
    if argv[0] == "echo":
        return ProbeOutput(0, " ".join(argv[1:]) + "\n")
    probe = GUEST.get(argv[0])
    if probe is None:
        raise NotModelled(f"{argv[0]} inside a VM (the lab runs {', '.join(sorted(GUEST))})")
    return probe(v, argv)


def run_script(v: Vantage, script: str) -> ProbeOutput:
    """(exit of the last command, stdout, stderr, simulated seconds) of a whole script."""
    out: list[str] = []
    err: list[str] = []
    status = 0
    seconds = 0.0
    for op, stages in _parse(script):
        if (op == "&&" and status != 0) or (op == "||" and status == 0):
            continue
        first = stages[0]
        argv = [a.replace("$?", str(status)) for a in _strip_prefixes(first.argv)]
        result = _run_one(v, argv)
        seconds += result.seconds
        stdout, stderr, status = result.stdout, result.stderr, result.exit_code
        if first.merge:
            stdout, stderr = stdout + stderr, ""
        for stage in stages[1:]:
            status, stdout = _filter(_strip_prefixes(stage.argv), stdout)
        last = stages[-1]
        if not (first.no_out or last.no_out):
            out.append(stdout)
        if not first.no_err:
            err.append(stderr)
    return ProbeOutput(status, "".join(out), "".join(err), seconds)
