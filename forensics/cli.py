"""``ghost-forensics``: analyse a capture (optionally against the other end) and write reports.

``ghost-forensics CAPTURE`` writes the three files into the current directory (or into
``--out DIR``, created when missing), never beside the capture unless asked, says where, and
prints the top findings; with ``--semantic-dir`` and ``--report-dir`` (how the investigation
engine runs it) it prints only the three paths, and those directories must exist.

Other tools live beside it as subcommands (``ghost-forensics NAME ...``): a module registers
its entry point in SUBCOMMANDS; anything else is a capture to analyse.

Every failure becomes one line on stderr and a non-zero exit: 2 for bad input (not a
capture, unreadable, missing or unwritable output directory), 3 for an internal error.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable

from .compare_report import comparison_finding, output_stem
from .engine import analyze_capture
from .errors import ForensicsError, reader_went_away
from .parallel import PARALLEL_MIN_BYTES, background, plan_jobs
from .report import executive_summary_md, forensic_report_md
from .semantic import build_semantic
from .terminal import top_findings

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

def _flowlogs(args: list[str]) -> int:
    """The flow-log analyser, imported only when asked for (the capture path stays lean)."""
    from .flowlogs_cli import main as flowlogs_main

    return flowlogs_main(args)


#: ``ghost-forensics NAME ARGS...``: NAME's entry point, given ARGS, returns the exit status
#: (raising ForensicsError or OSError for bad input, as run() does)
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {"flowlogs": _flowlogs}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ghost-forensics",
        description="Forensic analysis of a pcap/pcapng capture (TCP analysis as tshark 4.0, "
        "DNS, ICMP, TLS, HTTP), with an optional two-ended comparison. Writes "
        "{stem}_semantic.json, {stem}_forensic_report.md and {stem}_executive_summary.md.",
        epilog="Exit status: 0 done (also for a capture cut short: a warning), 2 bad input "
        "(not a capture, missing file or output directory), 3 internal error. VNet flow "
        "logs: ghost-forensics flowlogs PATH ... (see ghost-forensics flowlogs --help).",
    )
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("ghost")
    except PackageNotFoundError:  # a source tree that was never installed
        release = "unknown"
    p.add_argument("--version", action="version", version=f"ghost-forensics {release}")
    p.add_argument("capture", help="capture file (pcap or pcapng) to analyse")
    p.add_argument("--out", metavar="DIR",
                   help="directory for all three files, created when missing (default: the "
                   "current directory); the top findings are printed")
    p.add_argument("--semantic-dir", metavar="DIR",
                   help="an existing directory for {stem}_semantic.json (with --report-dir, "
                   "only the three paths are printed, as the investigation engine reads them)")
    p.add_argument("--report-dir", metavar="DIR",
                   help="an existing directory for {stem}_forensic_report.md and "
                   "{stem}_executive_summary.md")
    p.add_argument("--compare", metavar="CAPTURE_B",
                   help="capture of the same path taken at the other end")
    p.add_argument("--frame-flags", action="store_true",
                   help="add frame_flags (every frame with a tcp.analysis flag) to the JSON")
    p.add_argument("--jobs", type=_jobs, metavar="N",
                   help="processes to analyse with (default: one per available core for a "
                   f"capture of {PARALLEL_MIN_BYTES >> 20} MB or more, else 1); the output "
                   "is the same for any N")
    return p


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 256, not {text!r}")
    return n


def _check_input(path: str, what: str) -> None:
    if os.path.isdir(path):
        raise ForensicsError(f"{what} {path} is a directory; give the .pcap/.pcapng file in it")
    if not os.path.isfile(path):
        raise ForensicsError(f"{what} not found: {path}")


def _check_output_dir(path: str | None, flag: str, create: bool = False) -> bool:
    """The engine's output directories must exist (a typo must not silently create a new
    tree); ``--out`` is created when missing, as an engineer expects. True if created."""
    if path is None:
        return False
    made = False
    if create and not os.path.exists(path):
        os.makedirs(path, exist_ok=True)
        made = True
    if not os.path.isdir(path):
        what = "is not a directory" if os.path.exists(path) else "does not exist"
        raise ForensicsError(f"output directory {path} ({flag}) {what}; create it first")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ForensicsError(f"output directory {path} ({flag}) is not writable")
    return made


def run(argv: list[str] | None = None) -> int:
    """The CLI without the process exit, for tests.

    The cyclic garbage collector is off while it runs: the analysis makes no garbage cycles
    worth collecting (packets are freed by reference counting), but its million allocations
    set off collections that scan every flow record again and again (~3% of the time)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(argv)
    finally:
        if enabled:
            gc.enable()


def _run(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    cap = args.capture
    _check_input(cap, "capture")
    if args.compare:
        _check_input(args.compare, "comparison capture")
    for_engine = args.semantic_dir is not None and args.report_dir is not None
    default = args.out or os.getcwd()
    sem_dir = args.semantic_dir or default
    rep_dir = args.report_dir or default
    created = _check_output_dir(args.out, "--out", create=True)
    for flag, d in (("--semantic-dir", sem_dir), ("--report-dir", rep_dir)):
        _check_output_dir(d, flag)
    jobs = plan_jobs(cap, args.jobs)
    compared = None
    if args.compare:
        # numpy (the comparison's matcher) is loaded only when comparing
        from .compare import compare_captures
        if jobs > 1:  # the comparison runs beside the analysis of A
            compared = background(compare_captures, cap, args.compare)
    analyzer = analyze_capture(cap, jobs)
    doc = build_semantic(analyzer, cap, frame_flags=args.frame_flags)
    stem = output_stem(cap, args.compare)
    if args.compare:
        cmp = compared() if compared is not None else compare_captures(cap, args.compare)
        doc["comparison"] = cmp
        doc["findings"] = [f for f in doc["findings"] if f["id"] != "no_problem_seen"
                           or cmp["status"] != "ok"]
        doc["findings"].insert(0, comparison_finding(cmp))
        for i, f in enumerate(doc["findings"], 1):
            f["rank"] = i
    sem_path = os.path.join(sem_dir, f"{stem}_semantic.json")
    rep_path = os.path.join(rep_dir, f"{stem}_forensic_report.md")
    exe_path = os.path.join(rep_dir, f"{stem}_executive_summary.md")
    with open(sem_path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, default=str)
    report = forensic_report_md(doc, stem)
    summary = executive_summary_md(doc, stem)
    with open(rep_path, "w", encoding="utf-8") as fh:
        fh.write(report)
    with open(exe_path, "w", encoding="utf-8") as fh:
        fh.write(summary)
    for w in analyzer.info.warnings:
        print(f"ghost-forensics: warning: {w}", file=sys.stderr)
    if for_engine:
        print(sem_path)
        print(rep_path)
        print(exe_path)
    else:
        where = os.path.abspath(rep_dir)
        told = ("the current directory" if args.out is None and args.report_dir is None
                else where + (" (created)" if created else ""))
        top_findings(doc, [os.path.abspath(p) for p in (sem_path, rep_path, exe_path)],
                     sys.stdout, told)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point: never a traceback, always a one-line reason on failure.

    A first argument ``flowlogs`` is the flow-log subcommand (``flowlogs_cli``, in
    SUBCOMMANDS); a capture file of that name is reached as ``./flowlogs``."""
    try:
        code = run(argv)
    except ForensicsError as exc:
        print(f"ghost-forensics: error: {exc}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    except BrokenPipeError:
        code = reader_went_away()
    except OSError as exc:
        print(f"ghost-forensics: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(),
              file=sys.stderr)
        code = EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ghost-forensics: interrupted", file=sys.stderr)
        code = 130
    except Exception as exc:  # noqa: BLE001 - the CLI promise: one line, no traceback
        print(f"ghost-forensics: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = EXIT_INTERNAL
    return code
