"""`ghost`: the command line. Parses arguments first and imports the heavy parts lazily, so
`ghost --help` starts fast; one error handler turns every ``GhostError`` into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from bot.contract import parsers as contract
from bot.contract.flags import wants_json
from bot.contract.parsers import HANDLERS as CONTRACT_HANDLERS

# command path -> "module:function" under bot.commands; imported only when run.
HANDLERS: dict[tuple[str, ...], str] = {
    ("db", "upgrade"): "db:upgrade",
    ("db", "status"): "db:status",
    ("audit", "verify"): "audit:verify",
    ("audit", "export"): "audit:export",
    ("session", "show"): "session:show",
    ("session", "list"): "session:list_sessions",
    ("classify",): "safety:classify_command",
    ("redact",): "safety:redact_command",
    ("investigate",): "investigate:investigate",
    ("serve",): "serve:serve",
    ("worker",): "serve:worker",
    ("lab", "list"): "lab:list_scenarios",
    ("lab", "check"): "lab:check",
    ("lab", "exec"): "lab:exec_command",
    ("demo",): "demo:demo",
    ("eval",): "eval:eval_command",
    ("doctor",): "doctor:doctor",
}
HANDLERS.update(CONTRACT_HANDLERS)  # status, approvals, watch, audit show (docs/agent-contract.md)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ghost",
        description="Ghost: an AI network-forensics investigator for Azure.",
    )
    from bot import __version__  # not bot.terminal: rich is not needed to print a version

    parser.add_argument("--version", action="version", version=f"ghost {__version__}")
    parser.add_argument("--verbose", dest="log_verbose", action="store_true",
                        help="show the libraries' INFO logs too (apscheduler, alembic, Azure)")
    groups = parser.add_subparsers(dest="group", metavar="COMMAND")

    db = groups.add_parser("db", help="create or upgrade the database schema")
    db_cmds = db.add_subparsers(dest="command", metavar="SUBCOMMAND")
    db_cmds.add_parser("upgrade", help="apply every migration (safe to run again)")
    db_cmds.add_parser("status", help="show the schema revision and where the database is")

    audit = groups.add_parser("audit", help="verify or export an investigation's audit log")
    audit_cmds = audit.add_subparsers(dest="command", metavar="SUBCOMMAND")
    verify = audit_cmds.add_parser(
        "verify", help="check the hash chain (exit 0 when intact, 3 when tampered with)"
    )
    verify.add_argument("session_id", metavar="SID", help=SID_HELP)
    contract.add_json(verify, "the verdict")
    export = audit_cmds.add_parser(
        "export", help="write shell_audit_SID.jsonl and orchestrator_tasks_SID.jsonl"
    )
    export.add_argument("session_id", metavar="SID", help=SID_HELP)
    export.add_argument("--dir", required=True, help="directory to write the two files into")
    contract.add_audit_show(audit_cmds)

    session = groups.add_parser("session", help="inspect investigations")
    session_cmds = session.add_subparsers(dest="command", metavar="SUBCOMMAND")
    show = session_cmds.add_parser("show", help="print an investigation's session state")
    show.add_argument("session_id", metavar="SID", help=SID_HELP)
    show.add_argument("--json", action="store_true",
                      help="its session document, as stored (docs/session-document.md)")
    listing = session_cmds.add_parser("list", help="list recent investigations")
    listing.add_argument("--limit", type=int, default=20,
                         help="how many, newest first (default 20; 0 lists none)")
    contract.add_session_list_flags(listing)

    inv = groups.add_parser(
        "investigate", help="investigate a network problem in this terminal",
        description="Start an investigation (or resume one). Approvals are asked here; when "
        "stdin is not a terminal, answers are read line by line.",
    )
    inv.add_argument("symptom", nargs="?", metavar="SYMPTOM",
                     help="what is wrong, e.g. \"vm-a cannot reach redis on 6379\"")
    inv.add_argument("--resume", metavar="SID", help="continue a saved investigation")
    inv.add_argument("--model", help="the Gemini model (default: GHOST_MODEL)")
    inv.add_argument("--audit-dir", help="where the RCA is written (default: DATA_DIR/audit)")
    contract.add_detach_flags(inv)

    from bot.commands.serve import add_parsers as add_serve_parsers

    add_serve_parsers(groups)  # `ghost serve` and `ghost worker` (Slack and Teams)

    doctor = groups.add_parser(
        "doctor", help="check what a deployment needs, one line per check (exit 1 on a problem)",
        description="Check the database (reachable, migrated), Slack/Teams settings, the Gemini "
        "key, `az` (present, signed in, can read) and capture settings; print one line per "
        "check with what to fix. Exit 1 when a required check fails. Changes nothing.",
    )
    contract.add_json(doctor, "every check")

    demo = groups.add_parser(
        "demo", help="watch Ghost investigate a simulated Azure incident (no key, no Azure)",
        description="Run a whole investigation against the lab: a simulated Azure estate "
        "answers every diagnostic; the gate, approvals, audit, capture analysis and RCA are "
        "real. Without GEMINI_API_KEY the scenario's scripted replay plays the model; with it, "
        "Gemini investigates.",
    )
    demo.add_argument("scenario", nargs="?", metavar="SCENARIO",
                      help="a shipped scenario (`ghost lab list`) or a scenario file "
                      "(default: nsg-deny-redis)")
    demo.add_argument("--model", help="the Gemini model when GEMINI_API_KEY is set")
    demo.add_argument("--yes", action="store_true",
                      help="approve RISKY commands as a second engineer would (unattended)")

    from bot.commands.eval import add_parser as add_eval_parser

    add_eval_parser(groups)  # `ghost eval` (docs/eval.md)

    lab = groups.add_parser("lab", help="the simulated Azure estate: list, check, exec")
    lab_cmds = lab.add_subparsers(dest="command", metavar="SUBCOMMAND")
    lab_cmds.add_parser("list", help="the shipped scenarios with their titles")
    check = lab_cmds.add_parser("check", help="validate scenario files (exit 1 on errors)")
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario files (YAML or JSON)")
    lab_exec = lab_cmds.add_parser(
        "exec", help="what the lab answers to one command (gate verdict, output, exit code)",
        description="Classify CMD with the safety gate, then print the lab's answer and exit "
        "code exactly as the runner gives them to the shell. Nothing real runs.",
    )
    lab_exec.add_argument("scenario", metavar="SCENARIO",
                          help="a shipped scenario's name or a scenario file")
    lab_exec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD",
                          help="the command, after --")

    classify = groups.add_parser(
        "classify", help="explain the safety gate's verdict on a command",
        description="Classify a command as SAFE, RISKY or FORBIDDEN and say why. With `-`, "
        "read commands from stdin, one per line (with --json: JSON lines {\"command\": ...}) "
        "and write one JSON verdict per line, in order.",
    )
    classify.add_argument("cmdline", metavar="CMD", help="the command line, or - for stdin")
    classify.add_argument("--json", action="store_true", help="JSON in and out")

    redact = groups.add_parser(
        "redact", help="remove secrets from text (stdin to stdout)",
        description="Filter stdin to stdout with every secret replaced. With --jsonl, read "
        "{\"text\": ...} lines and write {\"text\": ...} lines.",
    )
    redact.add_argument("--jsonl", action="store_true", help="JSON lines in and out")
    contract.add_commands(groups)
    explain_arguments(parser)
    return parser


SID_HELP = "an investigation's session id (ghost_…; see `ghost session list`)"
#: help for a positional argument that was declared without one, by its metavar or name
ARGUMENT_HELP = {
    "SID": SID_HELP,
    "AUDIT_ID": "an audit record's id, as shown in [brackets] after each command",
    "APPROVAL_ID": "a pending request's id (see `ghost approvals list`)",
    "decision": "approve, deny or modify",
}


def explain_arguments(parser: argparse.ArgumentParser) -> None:
    """Give every argument of every subcommand a help line (``--help`` never shows a bare
    name), from ``ARGUMENT_HELP`` when its declaration has none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                explain_arguments(sub)
        elif action.help is None:
            action.help = ARGUMENT_HELP.get(str(action.metavar or action.dest))


def _handler(path: tuple[str, ...]) -> Callable[[argparse.Namespace], int]:
    module, func = HANDLERS[path].split(":")
    handler: Callable[[argparse.Namespace], int] = getattr(
        import_module(f"bot.commands.{module}"), func
    )
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given == ["--version"]:  # answered before anything else is built or imported
        from bot import __version__

        print(f"ghost {__version__}")
        return 0
    parser = build_parser()
    json_mode = wants_json(given)
    if json_mode:  # a usage error is an INVALID_ARGUMENT document on stdout, exit 2
        from bot.contract.runner import parse_or_error

        parsed, code = parse_or_error(lambda: parser.parse_args(argv))
        if parsed is None:
            return code or 0
        assert isinstance(parsed, argparse.Namespace)
        args = parsed
    else:
        args = parser.parse_args(argv)
    if args.group is None:
        parser.print_help()
        return 2
    sub = getattr(args, "command", None)
    path = (args.group, sub) if sub else (args.group,)
    if path not in HANDLERS:
        parser.parse_args([args.group, "--help"])
        return 2
    from bot.terminal.logs import quiet_library_logs
    from bot.terminal.pipes import quiet_on_broken_pipe

    quiet_library_logs(bool(getattr(args, "log_verbose", False)))  # INFO only with --verbose
    if json_mode:  # every failure is an error document on stdout, never a traceback
        from bot.contract.runner import run_json

        return run_json(lambda: quiet_on_broken_pipe(lambda: _handler(path)(args)))
    from bot.errors import run_reporting_errors

    return run_reporting_errors(lambda: quiet_on_broken_pipe(lambda: _handler(path)(args)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
