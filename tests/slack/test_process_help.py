"""`ghost serve --help` names both front ends and explains every argument (issue 17)."""

from __future__ import annotations

import argparse


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from bot.commands.serve import add_parsers

    root = argparse.ArgumentParser(prog="ghost")
    groups = root.add_subparsers(dest="group")
    add_parsers(groups)
    return dict(groups.choices)


def test_serve_help_names_slack_and_teams_and_every_argument_has_help() -> None:
    parsers = _parsers()
    serve_help = parsers["serve"].format_help()
    assert "Slack" in serve_help and "Teams" in serve_help and "SIGTERM" in serve_help
    for name in ("serve", "worker"):
        for action in parsers[name]._actions:
            assert action.help, f"ghost {name} {action.option_strings} has no help"
    assert "Teams" in parsers["worker"].format_help()


def test_the_parsers_keep_their_defaults() -> None:
    parsers = _parsers()
    args = parsers["serve"].parse_args([])
    assert (args.no_worker, args.host, args.port) == (False, "0.0.0.0", None)
    assert parsers["worker"].parse_args(["--once"]).once is True
