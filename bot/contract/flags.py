"""The contract's command-line flags, added the same way to every command that has them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def add_json(parser: argparse.ArgumentParser, what: str = "the contract document") -> None:
    parser.add_argument("--json", action="store_true",
                        help=f"{what} as one JSON line (docs/agent-contract.md)")


def add_fields(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fields", metavar="A,B.C",
                        help="with --json: keep only these fields (dotted paths)")


def add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", action="store_true",
                        help="with --json: the full documents instead of the compact view")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def add_contract(parser: argparse.ArgumentParser, *, what: str = "the contract document",
                 limit: int | None = None, verbose: bool = True) -> None:
    """``--json --fields`` and, as asked, ``--limit N`` (default ``limit``) and ``--verbose``."""
    add_json(parser, what)
    add_fields(parser)
    if limit is not None:
        parser.add_argument("--limit", type=positive_int, default=limit, metavar="N",
                            help=f"at most N entries in each list (default {limit})")
    if verbose:
        add_verbose(parser)


JSON_FLAGS = ("--json", "--jsonl")


def wants_json(argv: Sequence[str]) -> bool:
    """``--json`` or ``--jsonl`` among Ghost's own options (not after ``--``, where a
    command line for the lab or the gate begins)."""
    args = list(argv)
    own = args[:args.index("--")] if "--" in args else args
    return any(a in JSON_FLAGS for a in own)
