"""A getopt-style option reader driven by per-program allowlists.

Long options match exactly: GNU getopt_long and curl accept unambiguous prefixes (`--out` means
`--output`), so an allowlist that matched prefixes would let `--kil` through as `ss --kill`.
Anything not on the allowlist, in any spelling, is RISKY.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from core.safety.verdict import Verdict, make_verdict

Validator = Callable[[str], bool]

_HOST_RE = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.:-]{0,252})?$")
_INT_RE = re.compile(r"^[0-9]{1,9}$")
_NUM_RE = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,3})?$")


def is_host(value: str) -> bool:
    """A bare host name, IPv4 or IPv6 literal; never an option or a path."""
    return bool(_HOST_RE.match(value)) and ".." not in value


def int_range(low: int, high: int) -> Validator:
    def check(value: str) -> bool:
        return bool(_INT_RE.match(value)) and low <= int(value) <= high
    return check


def num_range(low: float, high: float) -> Validator:
    def check(value: str) -> bool:
        return bool(_NUM_RE.match(value)) and low <= float(value) <= high
    return check


def one_of(*choices: str) -> Validator:
    allowed = frozenset(choices)

    def check(value: str) -> bool:
        return value in allowed
    return check


def any_value(value: str) -> bool:
    return True


@dataclass(frozen=True)
class OptionSpec:
    """Allowlist for one program.

    `flags`: options without a value (short `-n` or long `--numeric`).
    `valued`: options with a value -> validator.
    `denied`: option -> (rule id, reason) for well-known dangerous options, for clear messages.
    Canonical names map aliases to one name, so rules can look at `ParsedArgs.options`.
    """

    program: str
    flags: frozenset[str] = frozenset()
    valued: Mapping[str, Validator] = field(default_factory=dict)
    denied: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    allow_double_dash: bool = False


@dataclass
class ParsedArgs:
    options: list[tuple[str, str | None]] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return any(n == name for n, _ in self.options)

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.options if n == name and v is not None]


def _deny_or_unknown(spec: OptionSpec, option: str, argv: tuple[str, ...]) -> Verdict:
    if option in spec.denied:
        rule, why = spec.denied[option]
        return make_verdict(rule, f"{spec.program} {option}: {why}.", argv)
    return make_verdict("T1.unknown_option", f"{spec.program} option '{option}' is not on the "
                        f"allowlist for {spec.program}; an engineer must approve it.", argv)


def _bad_value(spec: OptionSpec, option: str, value: str, argv: tuple[str, ...]) -> Verdict:
    return make_verdict("T1.bad_value", f"{spec.program} {option} value {value[:60]!r} is "
                        "outside the range the gate accepts without approval.", argv)


def parse_options(spec: OptionSpec, args: list[str], argv: tuple[str, ...]) -> (
        ParsedArgs | Verdict):
    """Read `args` (argv without the program) against `spec`; a Verdict means RISKY/FORBIDDEN."""
    parsed = ParsedArgs()
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            if not spec.allow_double_dash:
                return make_verdict("T1.end_of_options", f"{spec.program}: '--' ends option "
                                    "parsing; the words after it are not checked as options.",
                                    argv)
            parsed.positionals.extend(args[index:])
            break
        if word.startswith("--"):
            name, eq, inline = word.partition("=")
            canon = spec.aliases.get(name, name)
            if canon in spec.flags and not eq:
                parsed.options.append((canon, None))
                continue
            if canon in spec.valued:
                if eq:
                    value = inline
                elif index < len(args):
                    value = args[index]
                    index += 1
                else:
                    return _bad_value(spec, name, "", argv)
                if not spec.valued[canon](value):
                    return _bad_value(spec, name, value, argv)
                parsed.options.append((canon, value))
                continue
            return _deny_or_unknown(spec, name, argv)
        if word.startswith("-") and len(word) > 1:
            pos = 1
            while pos < len(word):
                name = "-" + word[pos]
                pos += 1
                canon = spec.aliases.get(name, name)
                if canon in spec.flags:
                    parsed.options.append((canon, None))
                    continue
                if canon in spec.valued:
                    if pos < len(word):
                        value = word[pos:]
                    elif index < len(args):
                        value = args[index]
                        index += 1
                    else:
                        return _bad_value(spec, name, "", argv)
                    if not spec.valued[canon](value):
                        return _bad_value(spec, name, value, argv)
                    parsed.options.append((canon, value))
                    break
                return _deny_or_unknown(spec, name, argv)
            continue
        parsed.positionals.append(word)
    return parsed
