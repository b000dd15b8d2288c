"""``ghost-forensics flowlogs PATH …``: analyse VNet flow-log blobs and write two files.

Reached through ``ghost-forensics`` when its first argument is the word ``flowlogs``
(``forensics/cli.py``); a capture file of that name is analysed as ``./flowlogs``.

Writes ``{stem}_semantic.json`` and ``{stem}_report.md`` into ``--out`` (created when
missing; default: the current directory, never beside the blobs), ``{stem}`` being
``flowlogs`` plus the pair asked about, and prints the top findings (``--json``: one JSON
object instead). Exit status: 0 done (also when some blobs were damaged: a warning each),
2 bad input (one ``ghost-forensics: error: …`` line), 3 internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import gc
import ipaddress
import json
import os
import re
import sys
import tempfile
from typing import Any, NoReturn

from .errors import ForensicsError, reader_went_away
from .flowlogs_events import Event, iso_seconds, load_events, parse_time
from .flowlogs_model import Filter
from .flowlogs_read import discover
from .flowlogs_report import print_top, report_md
from .flowlogs_run import TtyProgress, analyse, plan_jobs
from .flowlogs_semantic import build_document

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
MAX_STDERR_WARNINGS = 10


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error."""

    def error(self, message: str) -> NoReturn:
        raise ForensicsError(f"{message} (see ghost-forensics flowlogs --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="ghost-forensics flowlogs",
        description="Analyse Azure VNet flow logs (version 4 PT1H.json blobs, files or the "
        "folder `az storage blob download-batch` writes): flows with their deciding rules, "
        "denial windows, one-way flows, sudden stops. Writes {stem}_semantic.json and "
        "{stem}_report.md and prints the top findings.",
        epilog="Exit status: 0 done (damaged blobs are warnings), 2 bad input, 3 internal "
        "error. A capture file named 'flowlogs' is analysed with: ghost-forensics ./flowlogs",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="blob files or folders of them")
    p.add_argument("--src", metavar="IP", type=_addr, help="source address or CIDR block")
    p.add_argument("--dst", metavar="IP", type=_addr, help="destination address or CIDR block")
    p.add_argument("--port", metavar="N", type=_port, help="destination port")
    p.add_argument("--since", metavar="ISO|AGO", help="from this time (2026-03-02T09:00Z, "
                   "or an age such as 90m, 2h, 1d)")
    p.add_argument("--until", metavar="ISO|AGO", help="up to this time (same forms)")
    p.add_argument("--events", metavar="FILE", help="activity-log writes to line changes up "
                   "with: the JSON of `az monitor activity-log list`, or a list of ISO times")
    p.add_argument("--out", metavar="DIR", help="directory for the two files (created when "
                   "missing; default: the current directory)")
    p.add_argument("--json", action="store_true", help="print one JSON object (files, inputs, "
                   "findings) instead of the summary for a person")
    p.add_argument("--jobs", type=_jobs, metavar="N", help="processes to read with (default: "
                   "one per core for 64 MB of blobs or more, else 1); the output is the same")
    return p


def _addr(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False)).removesuffix("/32") \
            .removesuffix("/128")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address or CIDR block") \
            from None


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return int(text)


def _jobs(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 256, not {text!r}")
    return int(text)


def stem(src: str | None, dst: str | None, port: int | None) -> str:
    """``flowlogs`` or ``flowlogs_10.1.1.4-10.1.2.4-6379``: one pair's files never overwrite
    another's."""
    if not (src or dst or port is not None):
        return "flowlogs"
    parts = [src or "any", dst or "any", str(port) if port is not None else "any"]
    return "flowlogs_" + "-".join(re.sub(r"[^0-9A-Za-z.]", "_", x) for x in parts)


def _out_dir(path: str | None) -> str:
    d = os.path.abspath(path or os.getcwd())
    if os.path.exists(d) and not os.path.isdir(d):
        raise ForensicsError(f"--out {path} is a file, not a directory")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as exc:
        raise ForensicsError(f"cannot create the output directory {d}: "
                             f"{exc.strerror or exc}") from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise ForensicsError(f"output directory {d} is not writable")
    return d


def _write(path: str, text: str) -> None:
    """Write whole or not at all: a temporary file beside it, renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ghost-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def run(argv: list[str]) -> int:
    if not argv and os.path.isfile("flowlogs"):
        raise ForensicsError("flowlogs needs a PATH of flow-log blobs; to analyse the capture "
                             "file named flowlogs here, run: ghost-forensics ./flowlogs")
    args = _parser().parse_args(argv)
    since = parse_time(args.since, "--since") if args.since else None
    until = parse_time(args.until, "--until") if args.until else None
    if since and until and since >= until:
        raise ForensicsError(f"--since {iso_seconds(since)} is not before --until "
                             f"{iso_seconds(until)}")
    events: list[Event] | None = load_events(args.events) if args.events else None
    out_dir = _out_dir(args.out)
    blobs = discover(args.paths)
    filt = Filter(args.src, args.dst, args.port,
                  int(since.timestamp() * 1000) if since else None,
                  int(until.timestamp() * 1000) if until else None)
    progress = TtyProgress()
    try:
        agg = analyse(blobs, filt, plan_jobs(blobs, args.jobs), progress)
    finally:
        progress.clear()
    if not agg.counts["records"]:
        reasons = [f"{b.name}: {b.warnings[-1]}" for b in agg.blobs if b.warnings][:2]
        raise ForensicsError(
            f"no VNet flow-log records in {plural_files(len(blobs))} under "
            f"{', '.join(args.paths)}" + (f" ({'; '.join(reasons)})" if reasons else ""))
    query: dict[str, Any] = {"src": args.src, "dst": args.dst, "port": args.port,
                             "since": iso_seconds(since) if since else None,
                             "until": iso_seconds(until) if until else None}
    doc = build_document(agg, query, args.paths, events, args.events)
    name = stem(args.src, args.dst, args.port)
    sem_path = os.path.join(out_dir, f"{name}_semantic.json")
    rep_path = os.path.join(out_dir, f"{name}_report.md")
    _write(sem_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    _write(rep_path, report_md(doc))
    warnings = doc["inputs"]["warnings"]
    for w in warnings[:MAX_STDERR_WARNINGS]:
        print(f"ghost-forensics: warning: {w}", file=sys.stderr)
    if len(warnings) > MAX_STDERR_WARNINGS:
        print(f"ghost-forensics: warning: {len(warnings) - MAX_STDERR_WARNINGS} more warnings "
              f"in {rep_path}", file=sys.stderr)
    if args.json:
        brief = {"schema_version": doc["schema_version"], "kind": doc["kind"],
                 "semantic": sem_path, "report": rep_path, "query": query,
                 "inputs": {k: v for k, v in doc["inputs"].items() if k != "warnings"},
                 "findings": doc["findings"]}
        print(json.dumps(brief, indent=1, ensure_ascii=False))
    else:
        print_top(doc, [sem_path, rep_path], sys.stdout)
    return 0


def plural_files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def main(argv: list[str]) -> int:
    """Never a traceback: one line and exit 2 for bad input, 3 for a bug."""
    enabled = gc.isenabled()
    gc.disable()  # the aggregate makes no cycles; collections would rescan it (~5 %)
    try:
        return run(argv)
    except ForensicsError as exc:
        print(f"ghost-forensics: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return reader_went_away()
    except OSError as exc:
        print(f"ghost-forensics: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ghost-forensics: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI promise: one line, no traceback
        print(f"ghost-forensics: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if enabled:
            gc.enable()
