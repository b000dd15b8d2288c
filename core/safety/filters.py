"""Text filters that may follow a pipe: what makes a stage a filter and not a program runner.

A pipeline is offered for approval only when every stage after the first reads its input as text
and writes text: `grep`, `head`, `sort`, `jq` ... with no option that runs a program (`sort
--compress-program`), writes a file (`sort -o`, `uniq IN OUT`, `tee FILE` outside Ghost's data
directory) or makes the stage read something other than the pipe (`grep -r`). `sed` is a filter
only with a script made of substitutions, prints, deletions and quits (`e`, `w`, `r` run
commands or touch files). GNU tools accept any unambiguous prefix of a long option (`--out` is
`--output`), so long options are denied by prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class FilterSpec:
    """What a filter takes: options with a value, options that disqualify it, operands."""

    #: short options that take a value (`-n 5`, `-n5`)
    short_valued: str = ""
    #: long options that take a value (without `=`)
    long_valued: frozenset[str] = frozenset()
    #: short options that are never allowed in a filter stage
    short_denied: str = ""
    #: long options never allowed (matched by prefix, as getopt_long does)
    long_denied: tuple[str, ...] = ()
    #: operands allowed (a pattern, a script, a set of characters); -1: they are files
    operands: int = 0


_GREP: Final = FilterSpec("efmABCDd", frozenset({"--regexp", "--file", "--max-count",
                                                  "--after-context", "--before-context",
                                                  "--context", "--color", "--colour",
                                                  "--label", "--binary-files"}),
                          "rR", ("--recursive", "--dereference-recursive", "--include",
                                 "--exclude", "--exclude-dir", "--devices", "--directories"),
                          1)
FILTER_SPECS: Final[dict[str, FilterSpec]] = {
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP,
    "head": FilterSpec("nc", frozenset({"--lines", "--bytes"})),
    "tail": FilterSpec("ncs", frozenset({"--lines", "--bytes", "--sleep-interval", "--pid",
                                         "--max-unchanged-stats"})),
    "sort": FilterSpec("ktST", frozenset({"--key", "--field-separator", "--buffer-size",
                                          "--temporary-directory", "--parallel", "--sort"}),
                       "o", ("--output", "--compress-program", "--files0-from",
                             "--random-source")),
    "uniq": FilterSpec("fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars",
                                         "--group", "--all-repeated"})),
    "wc": FilterSpec("", frozenset(), "", ("--files0-from",)),
    "cut": FilterSpec("bcdf", frozenset({"--bytes", "--characters", "--delimiter", "--fields",
                                         "--output-delimiter"})),
    "tr": FilterSpec(operands=2),
    "jq": FilterSpec("", frozenset({"--arg", "--argjson", "--indent", "--tab"}), "fL",
                     ("--from-file", "--rawfile", "--slurpfile", "--args", "--jsonargs",
                      "--run-tests"), 1),
    "column": FilterSpec("csoNRWHOJn", frozenset({"--columns", "--separator",
                                                  "--output-separator", "--table-columns",
                                                  "--table-right", "--table-wrap",
                                                  "--table-hide", "--table-order",
                                                  "--table-name", "--output-width"})),
    "nl": FilterSpec("bdfhilnsvw", frozenset({"--body-numbering", "--section-delimiter",
                                              "--footer-numbering", "--header-numbering",
                                              "--line-increment", "--join-blank-lines",
                                              "--number-format", "--number-separator",
                                              "--starting-line-number", "--number-width"})),
    "tac": FilterSpec("s", frozenset({"--separator"})),
    "rev": FilterSpec(),
    "fold": FilterSpec("w", frozenset({"--width"})),
    "fmt": FilterSpec("wpg", frozenset({"--width", "--prefix", "--goal"})),
    "paste": FilterSpec("d", frozenset({"--delimiters"})),
    "expand": FilterSpec("t", frozenset({"--tabs"})),
    "unexpand": FilterSpec("t", frozenset({"--tabs"})),
    "base64": FilterSpec("w", frozenset({"--wrap"})),
    "base32": FilterSpec("w", frozenset({"--wrap"})),
    "xxd": FilterSpec("cglosn", frozenset(), "r", ("-r", "-revert")),
    "od": FilterSpec("AjNSTwt", frozenset({"--address-radix", "--skip-bytes",
                                           "--read-bytes", "--strings", "--format",
                                           "--width"})),
    "hexdump": FilterSpec("efns", frozenset(), "", ("--format-file",)),
    "strings": FilterSpec("nteT", frozenset({"--bytes", "--radix", "--encoding", "--target"})),
    "cat": FilterSpec(),
    "md5sum": FilterSpec(), "sha1sum": FilterSpec(), "sha256sum": FilterSpec(),
    "sha512sum": FilterSpec(), "cksum": FilterSpec(),
    "numfmt": FilterSpec("d", frozenset({"--delimiter", "--field", "--format", "--from",
                                         "--from-unit", "--to", "--to-unit", "--padding",
                                         "--round", "--suffix", "--invalid"})),
    "iconv": FilterSpec("ft", frozenset({"--from-code", "--to-code"}), "o", ("--output",)),
}
#: sed scripts made only of these commands (with line or regex addresses) are filters:
#: s/../../FLAGS (flags g, p, i, I, m, M, a number), p, P, d, D, q, Q, =, l, n, N, y/../../
_SED_CMD_RE: Final = re.compile(
    r"""(?:[0-9$]+(?:,[0-9$]+)?|/(?:[^/\\\n]|\\.)*/[IM]*(?:,(?:[0-9$]+|/(?:[^/\\\n]|\\.)*/))?)?
        !?[ ]*(?:[pPdDqQ=lnNgGhHxz]|s(?P<d>[^\\\n\sa-zA-Z0-9])(?:(?!(?P=d))[^\\\n]|\\.)*
        (?P=d)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)[gpiImM0-9]*
        |y/(?:[^/\\\n]|\\.)*/(?:[^/\\\n]|\\.)*/)""", re.VERBOSE)


def _sed_script_is_filter(script: str) -> bool:
    """Only substitutions, prints, deletions, quits and the like; no `e`, `w`, `r` or `s///e`."""
    pieces = [p.strip() for p in re.split(r"[;\n]", script) if p.strip()]
    return bool(pieces) and all(_SED_CMD_RE.fullmatch(p) for p in pieces)


def sed_problem(args: list[str], *, stage: bool) -> str | None:
    """None when `sed ARGS` only filters text; else what it does instead."""
    scripts: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-u",
                    "--unbuffered", "-z", "--null-data", "--posix", "--debug", "-s",
                    "--separate"):
            continue
        if word in ("-e", "--expression") and index < len(args):
            scripts.append(args[index])
            index += 1
            continue
        if word.startswith("--expression="):
            scripts.append(word.partition("=")[2])
            continue
        if word.startswith("-e") and len(word) > 2:
            scripts.append(word[2:])
            continue
        if word.startswith(("-i", "--in-place")):
            return "sed -i edits files in place"
        if word.startswith(("-f", "--file")):
            return "sed -f reads its script from a file the gate cannot see"
        if word.startswith("-"):
            return f"sed option {word[:20]} is not a plain filter option"
        operands.append(word)
    if not scripts and operands:
        scripts.append(operands.pop(0))
    if not all(_sed_script_is_filter(s) for s in scripts) or not scripts:
        return ("the sed script can run commands (e), write or read files (w, r) or is not "
                "plain substitutions and prints")
    if stage and operands:
        return "sed after a pipe reads files instead of its input"
    return None


def _long_denied(name: str, denied: tuple[str, ...]) -> str | None:
    if len(name) < 3:
        return None
    for option in denied:
        if option.startswith(name):
            return option
    return None


def filter_problem(argv: tuple[str, ...], *, tee_ok: bool = False) -> str | None:
    """None when `argv` is a text filter reading its input; else why it is not one.

    `tee_ok`: the tee's files were already checked to lie in Ghost's data directory.
    """
    program, args = argv[0], list(argv[1:])
    if program == "sed":
        return sed_problem(args, stage=True)
    if program == "tee":
        return None if tee_ok else "tee writes files (only into Ghost's data directory)"
    spec = FILTER_SPECS.get(program)
    if spec is None:
        return f"'{program}' is not a text filter"
    operands: list[str] = []
    index = 0
    given_script = False
    while index < len(args):
        word = args[index]
        index += 1
        if word == "-" or not word.startswith("-") or word == "--":
            if word == "--":
                operands.extend(args[index:])
                break
            operands.append(word)
            continue
        if word.startswith("--"):
            name, eq, _ = word.partition("=")
            hit = _long_denied(name, spec.long_denied)
            if hit is not None:
                return f"{program} {hit} makes it more than a filter"
            if name in spec.long_valued and not eq:
                index += 2 if program == "jq" and name in ("--arg", "--argjson") else 1
            if name in ("--regexp", "--file"):
                given_script = True
            continue
        for pos, letter in enumerate(word[1:], start=1):
            if letter in spec.short_denied:
                return f"{program} -{letter} makes it more than a filter"
            if letter in spec.short_valued:
                if pos == len(word) - 1:
                    index += 1
                if program in ("grep", "egrep", "fgrep") and letter in "ef":
                    given_script = True
                break
    allowed = spec.operands - (1 if given_script else 0)
    files = [w for w in operands if w != "-"]
    if len(files) > max(allowed, 0):
        return f"{program} after a pipe is given a file to read ({files[-1][:40]!r})"
    return None
