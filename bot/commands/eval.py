"""`ghost eval`: score Ghost's investigations on lab scenarios (docs/eval.md).

Each scenario is played as a whole lab investigation (real engine, gate, orchestrator on the lab
backend, forensics) by Gemini (``--model``, needs GEMINI_API_KEY) or by the scenario's replay
(``--replay``), approved automatically by ``--approve-policy``, and scored without an LLM judge.
``--compare A/eval.json B/eval.json`` shows what changed between two reports.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from bot.settings import Settings
    from lab.eval.record import RunRecord

NO_KEY = ("ghost eval: GEMINI_API_KEY is not set — set it to evaluate Gemini (--model M), or run "
          "`ghost eval --replay` to score the scenarios' reference replays.\n")


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``eval`` subcommand (bot/cli.py calls this)."""
    from lab.eval.policy import POLICIES

    parser = groups.add_parser(
        "eval", help="score Ghost's investigations on lab scenarios (solved, evidence, "
        "grounded, cost)",
        description="Play each lab scenario as a full investigation (real engine, gate, "
        "captures and forensics on a simulated estate), approve RISKY commands by a policy, "
        "and score it without an LLM judge: solved, cited evidence, grounded, safety, effort, "
        "tokens and cost. docs/eval.md explains the scoring.",
    )
    parser.add_argument("--scenarios", nargs="+", metavar="DIR|FILE",
                        help="scenario files, directories of them, or shipped names "
                        "(default: every shipped scenario)")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--model", help="the Gemini model to evaluate (needs GEMINI_API_KEY; "
                     "default GHOST_MODEL)")
    who.add_argument("--replay", action="store_true",
                     help="play each scenario's reference replay instead of Gemini")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="runs per scenario (default 1)")
    parser.add_argument("--parallel", type=int, default=1, metavar="K",
                        help="runs at once (default 1)")
    parser.add_argument("--report", metavar="DIR",
                        help="write eval.json, eval.md and each run's data directory here")
    parser.add_argument("--approve-policy", choices=POLICIES, default="reads",
                        help="reads (default): approve captures and read-only probes, deny "
                        "changes; all: approve every RISKY command; none: deny them all")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="compare two eval.json files instead of running anything")


def eval_command(args: argparse.Namespace) -> int:
    from bot.settings import load_settings

    if args.compare:
        return compare_reports(Path(args.compare[0]), Path(args.compare[1]), sys.stdout)
    settings = load_settings()
    if args.model:
        settings.model = args.model
    if not args.replay and not settings.gemini_api_key:
        sys.stderr.write(NO_KEY)
        return 2
    if args.repeat < 1 or args.parallel < 1:
        sys.stderr.write("ghost eval: --repeat and --parallel must be at least 1.\n")
        return 2
    paths = scenario_paths(args.scenarios or [])
    report = Path(args.report) if args.report else None
    return run_suite(settings, paths, replay=bool(args.replay), repeat=args.repeat,
                     parallel=args.parallel, report=report, policy=args.approve_policy,
                     out=sys.stdout, progress=sys.stderr)


def scenario_paths(given: Sequence[str]) -> list[Path]:
    """Files, directories (their ``*.yaml``) and shipped names, in order, each once."""
    from bot.lab_wiring import LabUnavailable
    from lab.scenario import ScenarioError, find_scenario, shipped_scenarios

    if not given:
        return list(shipped_scenarios())
    found: list[Path] = []
    for item in given:
        path = Path(item)
        if path.is_dir():
            files = sorted(p for p in path.glob("*.yaml"))
            if not files:
                raise LabUnavailable(f"{item}: no *.yaml scenario files in this directory.")
            found += files
            continue
        try:
            found.append(find_scenario(item))
        except ScenarioError as exc:
            raise LabUnavailable(exc.errors[0] if exc.errors else str(exc),
                                 "`ghost lab list` shows the shipped scenarios.") from exc
    return list(dict.fromkeys(p.resolve() for p in found))


def run_suite(settings: Settings, paths: Sequence[Path], *, replay: bool, repeat: int,
              parallel: int, report: Path | None, policy: str, out: TextIO,
              progress: TextIO) -> int:
    """Run every scenario ``repeat`` times, print the table, write the report; exit 0 when
    every run was solved, with cited evidence, grounded."""
    from bot.eval.runner import EvalOptions, ghost_version, run_scenario
    from core.engine.usage import parse_prices
    from lab.eval import record as records
    from lab.eval.report import markdown, models, table

    prices = parse_prices(settings.prices)
    options = EvalOptions(policy=policy, replay=replay, prices=prices)
    jobs = [(path, n) for path in paths for n in range(repeat)]
    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    begun = time.monotonic()
    scratch = None if report else tempfile.TemporaryDirectory(prefix="ghost-eval-")
    root = (report / "runs") if report else Path(scratch.name if scratch else ".")
    runs: list[records.RunRecord | None] = [None] * len(jobs)
    meter = Progress(progress, len(jobs))
    progress.write(f"ghost eval: {len(paths)} scenario(s) x {repeat}, "
                   f"{'their replays' if replay else settings.model}, {parallel} at a time, "
                   f"approve policy {policy}\n")
    try:
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="ghost-eval") as pool:
            futures: dict[Future[records.RunRecord], int] = {}
            for i, (path, n) in enumerate(jobs):
                data_dir = root / f"{path.stem}-{n + 1}"
                if (data_dir / "ghost.db").is_file():  # an earlier eval's run: start afresh
                    shutil.rmtree(data_dir)
                futures[pool.submit(run_scenario, path, settings, options, repeat=n,
                                    data_dir=data_dir)] = i
            for future in as_completed(futures):
                run = future.result()
                runs[futures[future]] = run
                meter.finished(run)
    finally:
        if scratch is not None:
            scratch.cleanup()
    done = [r for r in runs if r is not None]
    wall = time.monotonic() - begun
    meter.close()
    out.write("\n" + table(done, wall))
    version = ghost_version()
    model = models(done) if done else settings.model
    if report:
        report.mkdir(parents=True, exist_ok=True)
        records.write_json(report / "eval.json", done, ghost_version=version,
                           started_at=started_at, wall_s=wall,
                           settings={"approve_policy": policy, "repeat": repeat,
                                     "parallel": parallel, "replay": replay, "model": model})
        (report / "eval.md").write_text(
            markdown(done, model=model, ghost_version=version, started_at=started_at,
                     wall_s=wall, policy=policy), encoding="utf-8")
        out.write(f"Report: {report / 'eval.json'} and {report / 'eval.md'}; each run's "
                  f"database and transcript under {root}/.\n")
    out.write(f"Suite wall time: {wall:.1f}s for {len(done)} run(s).\n")
    out.flush()
    return 0 if done and all(r.passed for r in done) else 1


class Progress:
    """A progress bar: one line per finished run, so a CI log shows it too."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.count = 0

    def finished(self, run: RunRecord) -> None:
        self.count += 1
        bar = "#" * (20 * self.count // max(self.total, 1))
        verdict = ("ERROR " + (run.error or "") if run.error else
                   ("solved" if run.solved else "unsolved")
                   + (", evidence cited" if run.evidence else ", evidence missing")
                   + (", grounded" if run.grounded else ", ungrounded"))
        self.stream.write(f"[{bar:<20}] {self.count}/{self.total} {run.scenario}"
                          f"{f' #{run.repeat + 1}' if run.repeat else ''}: {verdict} "
                          f"({run.wall_s:.1f}s)\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


def compare_reports(a: Path, b: Path, out: TextIO) -> int:
    from lab.eval.compare import compare
    from lab.eval.record import read_json

    a_header, a_runs = read_json(a)
    b_header, b_runs = read_json(b)
    out.write(compare(a_header, a_runs, b_header, b_runs))
    out.flush()
    return 0
