"""``ghost-forensics``: analyse a capture (optionally against the other end) and write reports.

Every failure becomes one line on stderr and a non-zero exit: 2 for bad input (not a
capture, unreadable, unwritable output directory), 3 for an internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .compare import compare_captures
from .compare_report import comparison_finding, output_stem
from .engine import analyze_capture
from .errors import ForensicsError
from .report import executive_summary_md, forensic_report_md
from .semantic import build_semantic

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ghost-forensics",
        description="Forensic analysis of a pcap/pcapng capture (TCP analysis as tshark 4.0, "
        "DNS, ICMP, TLS, HTTP), with an optional two-ended comparison.",
    )
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("ghost")
    except PackageNotFoundError:  # a source tree that was never installed
        release = "unknown"
    p.add_argument("--version", action="version", version=f"ghost-forensics {release}")
    p.add_argument("capture", help="capture file (pcap or pcapng)")
    p.add_argument("--semantic-dir", required=True, help="where {stem}_semantic.json goes")
    p.add_argument("--report-dir", required=True,
                   help="where {stem}_forensic_report.md and {stem}_executive_summary.md go")
    p.add_argument("--compare", metavar="CAPTURE_B",
                   help="capture of the same path taken at the other end")
    p.add_argument("--frame-flags", action="store_true",
                   help="add frame_flags (every frame with a tcp.analysis flag) to the JSON")
    return p


def _check_input(path: str, what: str) -> None:
    if os.path.isdir(path):
        raise ForensicsError(f"{what} {path} is a directory; give the .pcap/.pcapng file in it")
    if not os.path.isfile(path):
        raise ForensicsError(f"{what} not found: {path}")


def run(argv: list[str] | None = None) -> int:
    """The CLI without the process exit, for tests."""
    args = _parser().parse_args(argv)
    cap = args.capture
    _check_input(cap, "capture")
    if args.compare:
        _check_input(args.compare, "comparison capture")
    analyzer = analyze_capture(cap)
    doc = build_semantic(analyzer, cap, frame_flags=args.frame_flags)
    stem = output_stem(cap, args.compare)
    if args.compare:
        cmp = compare_captures(cap, args.compare)
        doc["comparison"] = cmp
        doc["findings"] = [f for f in doc["findings"] if f["id"] != "no_problem_seen"
                           or cmp["status"] != "ok"]
        doc["findings"].insert(0, comparison_finding(cmp))
        for i, f in enumerate(doc["findings"], 1):
            f["rank"] = i
    os.makedirs(args.semantic_dir, exist_ok=True)
    os.makedirs(args.report_dir, exist_ok=True)
    sem_path = os.path.join(args.semantic_dir, f"{stem}_semantic.json")
    rep_path = os.path.join(args.report_dir, f"{stem}_forensic_report.md")
    exe_path = os.path.join(args.report_dir, f"{stem}_executive_summary.md")
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
    print(sem_path)
    print(rep_path)
    print(exe_path)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console entry point: never a traceback, always a one-line reason on failure."""
    try:
        code = run(argv)
    except ForensicsError as exc:
        print(f"ghost-forensics: error: {exc}", file=sys.stderr)
        code = EXIT_BAD_INPUT
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
