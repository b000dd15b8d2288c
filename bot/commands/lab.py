"""`ghost lab list | check FILE… | exec SCENARIO -- CMD…`: the lab for scenario authors.

``exec`` shows what an investigation would get for one command: the gate's verdict, then the
lab's answer and exit code exactly as the runner hands them to the shell (before redaction and
truncation). Nothing real runs and no approval is asked, since the lab only simulates; even a
command the gate forbids gets the lab's answer (marked so), for scenario authors. The programs
that run for real in the lab (``ghost-forensics``, ``cat``) run here only when the gate says SAFE.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from bot.terminal.style import say
from core.errors import GhostError


class LabCheckFailed(GhostError):
    """``ghost lab check`` found errors (already printed, one per line)."""


def list_scenarios(args: argparse.Namespace) -> int:
    from lab.scenario import ScenarioError, load_scenario, shipped_scenarios

    paths = shipped_scenarios()
    if not paths:
        print("No shipped scenarios found.")
        return 1
    rows: list[tuple[str, str, str]] = []
    for path in paths:
        try:
            scenario = load_scenario(path)
            rows.append((scenario.name, scenario.truth.category, scenario.title))
        except ScenarioError as exc:
            rows.append((path.stem, "(invalid)", exc.errors[0] if exc.errors else str(exc)))
    from bot.terminal.tables import scenarios_table

    scenarios_table(rows, sys.stdout)
    say(sys.stdout, f"\n{len(paths)} scenarios. Run one: ghost demo NAME   ·   check a file: "
        "ghost lab check FILE")
    return 0


def check_errors(path: Path) -> list[str]:
    """Every problem of one scenario file (and its replay), one line each."""
    from lab.replay import ReplayError, load_replay
    from lab.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        return list(exc.errors) or [f"{path}: {exc}"]
    except OSError as exc:
        return [f"{path}: cannot read it ({exc.strerror or exc})"]
    replay = scenario.replay_path()
    if replay is not None:
        try:
            load_replay(replay)
        except ReplayError as exc:
            return [f"{path.name}: replay: {exc}"]
    return []


def check(args: argparse.Namespace) -> int:
    failed = 0
    for name in args.files:
        path = Path(name)
        errors = check_errors(path)
        for error in errors:
            print(error.replace("\n", " "))
        if errors:
            failed += 1
        else:
            print(f"{name}: ok")
    if failed:
        raise LabCheckFailed(f"{failed} of {len(args.files)} scenario file(s) have errors "
                             "(listed above).")
    return 0


def _command_line(words: list[str]) -> str:
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise GhostError("No command given.",
                         "Usage: ghost lab exec SCENARIO -- az network nsg list -o table")
    return words[0] if len(words) == 1 else shlex.join(words)


def _words(command: str) -> tuple[str, ...] | None:
    try:
        words = tuple(shlex.split(command))
    except ValueError:
        return None
    return words or None


def exec_command(args: argparse.Namespace) -> int:
    from bot.lab_wiring import open_lab
    from bot.settings import load_settings
    from core.safety.classify import classify
    from core.safety.outcome import without_rc_files
    from lab.executor import runs_for_real

    settings = load_settings()
    command = _command_line(list(args.cmd))
    lab = open_lab(args.scenario, settings)
    verdict = classify(command, data_dir=settings.data_dir.resolve())
    print(f"gate: {verdict.classification} (tier {verdict.tier}, {verdict.rule}): "
          f"{verdict.reason}")
    argv = verdict.argv
    if argv is None and verdict.classification == "FORBIDDEN":
        argv = _words(command)  # the gate stops at the verdict; the lab can still answer
    if argv is None:
        print("not run: Ghost runs one program without a shell (no pipes, redirections or "
              "chaining); split it into single commands.")
        return 1
    if runs_for_real(argv) and verdict.classification != "SAFE":
        print("not run: this program runs for real even in the lab (it reads Ghost's own "
              "files), and the gate wants an approval for it; run it in an investigation.")
        return 1
    if verdict.classification == "FORBIDDEN":
        print("(an investigation would never run this: the gate refuses it. What the lab "
              "would answer, for scenario authors:)")
    elif verdict.classification == "RISKY":
        print("(an investigation would ask for approval first; the lab answers as if approved)")
    sys.stdout.flush()
    result = lab.executor(without_rc_files(argv), settings.command_timeout_s, 2_000_000)
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.write(result.stderr)
    sys.stderr.flush()
    if result.stdout and not result.stdout.endswith("\n"):
        print()
    print(f"exit: {result.exit_code}")
    return int(result.exit_code or 0)
