"""Argument parsing for the lab's `az`, with argparse's and az's rules and error wording.

Each command declares its options; the parser accepts them anywhere after the command words,
in ``--name value`` or ``--name=value`` form, plus az's global options (``-o/--output``,
``--query``, ``--subscription``, ``--only-show-errors``, ``--debug``, ``--verbose``). Enum values
are matched case-insensitively as az does; a missing required option, an option without its
value and an unknown token give argparse's messages (exit 2).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jmespath
from jmespath.exceptions import JMESPathError

from lab.az.errors import QUERY_REFERENCE, AzError, usage_error

if TYPE_CHECKING:
    from lab.az.catalog import Catalog

OUTPUT_FORMATS = ("json", "jsonc", "yaml", "yamlc", "table", "tsv", "none")


@dataclass(frozen=True)
class Opt:
    """One option: its spellings (long first, as az lists them), where it goes, how it parses."""

    names: tuple[str, ...]
    dest: str
    required: bool = False
    flag: bool = False
    choices: tuple[str, ...] = ()
    multi: bool = False  # nargs="+": every value up to the next option

    @property
    def label(self) -> str:
        return "/".join(self.names)


def opt(*names: str, dest: str | None = None, required: bool = False, flag: bool = False,
        choices: Sequence[str] = (), multi: bool = False) -> Opt:
    """Shorthand: ``opt("--resource-group", "-g", required=True)``."""
    target = dest or names[0].lstrip("-").replace("-", "_")
    return Opt(tuple(names), target, required, flag, tuple(choices), multi)


RG = opt("--resource-group", "-g", dest="resource_group", required=True)
RG_OPTIONAL = opt("--resource-group", "-g", dest="resource_group")
NAME = opt("--name", "-n", dest="name", required=True)

GLOBAL_OPTS = (
    opt("--output", "-o", dest="_output", choices=OUTPUT_FORMATS),
    opt("--query", dest="_query"),
    opt("--subscription", dest="_subscription"),
    opt("--only-show-errors", dest="_only_show_errors", flag=True),
    opt("--debug", dest="_debug", flag=True),
    opt("--verbose", dest="_verbose", flag=True),
    opt("--help", "-h", dest="_help", flag=True),
)
IDS = opt("--ids", dest="_ids", multi=True)


@dataclass
class Parsed:
    """Option values by dest; globals under ``_output``, ``_query``, ``_subscription``, ``_ids``."""

    values: dict[str, Any] = field(default_factory=dict)

    def get(self, dest: str, default: Any = None) -> Any:
        value = self.values.get(dest)
        return default if value is None else value

    def text(self, dest: str) -> str | None:
        value = self.values.get(dest)
        return value if isinstance(value, str) else None

    def require(self, dest: str) -> str:
        value = self.values.get(dest)
        if not isinstance(value, str):
            raise usage_error(f"the following arguments are required: {dest}")
        return value

    @property
    def output(self) -> str:
        return str(self.values.get("_output") or "json")

    @property
    def query(self) -> str | None:
        return self.text("_query")


def _looks_like_option(token: str) -> bool:
    """argparse's test: a dash-led token that is not a negative number."""
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False


def _match_choice(prog: str, option: Opt, value: str) -> str:
    lowered = {c.lower(): c for c in option.choices}
    found = lowered.get(value.lower())
    if found is not None:
        return found
    hints: list[str] = []
    close = difflib.get_close_matches(value, list(option.choices), n=1, cutoff=0.7)
    if close:
        hints.append(f"Did you mean '{close[0]}' ?")
    raise AzError(f"{prog}: '{value}' is not a valid value for '{option.names[0]}'.", 2,
                  tuple(hints))


def parse(prog: str, tokens: Sequence[str], options: Sequence[Opt], accepts_ids: bool,
          id_fills: Sequence[str] = ()) -> Parsed:
    """Parse ``tokens`` (everything after the command words) for one command.

    ``id_fills`` are the dests that ``--ids`` supplies: when ``--ids`` is given those options are
    not required (az's rule) and the ids win.
    """
    table = [*options, *GLOBAL_OPTS, *((IDS,) if accepts_ids else ())]
    by_name = {name: o for o in table for name in o.names}
    parsed = Parsed()
    unknown: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if (not token.startswith("--") and len(token) > 2 and token[:2] in by_name
                and not by_name[token[:2]].flag):
            name, eq, inline = token[:2], "=", token[2:]  # argparse's -gVALUE
        option = by_name.get(name) if _looks_like_option(token) else None
        if option is None:
            unknown.append(token)
            continue
        if option.flag:
            parsed.values[option.dest] = True
            continue
        values: list[str] = []
        if eq:
            values.append(inline)
        while i < len(tokens) and not _looks_like_option(tokens[i]) and (
                option.multi or not values):
            values.append(tokens[i])
            i += 1
        if not values:
            kind = "expected at least one argument" if option.multi else "expected one argument"
            raise usage_error(f"argument {option.label}: {kind}")
        if option.choices:
            values = [_match_choice(prog, option, v) for v in values]
        parsed.values[option.dest] = values if option.multi else values[0]
    ids_given = bool(parsed.values.get("_ids"))
    missing = [o.label for o in options
               if o.required and o.dest not in parsed.values
               and not (ids_given and o.dest in id_fills)]
    if missing:
        raise usage_error("the following arguments are required: " + ", ".join(missing))
    if unknown:
        raise usage_error("unrecognized arguments: " + " ".join(unknown))
    query = parsed.query
    if query is not None:
        try:
            jmespath.compile(query)
        except JMESPathError:
            raise usage_error(f"argument --query: invalid jmespath_type value: '{query}'",
                              QUERY_REFERENCE) from None
    return parsed


Handler = Callable[["Catalog", Parsed], Any]


@dataclass(frozen=True)
class Command:
    """One az command: its words, options, handler and az's table transformer for it.

    ``ids`` maps parts of a resource id (``resource_group``, ``name``, ``child_name_1``) to the
    option dests that ``--ids`` supplies; a command without it does not accept ``--ids``.
    """

    words: tuple[str, ...]
    options: tuple[Opt, ...]
    handler: Handler
    table: Callable[[Any], Any] | None = None
    ids: tuple[tuple[str, str], ...] = ()
