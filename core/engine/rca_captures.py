"""RCA phase 4 (ghost-design §7): the forensic executive summaries, read through the shell.

Reading goes through the caller's ``read_file`` (``cat PATH`` via the Safe-Exec Shell), never
through ``open()``: the read is gated, audited and redacted like any other command, and an
engineer who denies it is respected. The short ``{stem}_executive_summary.md`` is tried first
because it survives the shell's truncation; the full report is the fallback.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.rca_evidence import is_completed, summary_path_for

ReadFile = Callable[[str], Mapping[str, Any]]

#: Enough for the forensic engine's summary (at most 50 lines) with room to spare.
MAX_SUMMARY_LINES = 60
DENIED_NOTE = "Report content unavailable (cat denied)."
PATTERN_B_NOTE = (
    "Advisory: forensic report for task {task_id} unavailable — cat was denied by the "
    "engineer. The full report is at {report_path} for offline review."
)


@dataclass(frozen=True)
class ReportRead:
    """What Phase 4 got for one report: summary lines, or why there are none."""

    report_path: str
    lines: tuple[str, ...] | None  # None: the spec's executive_summary_text == None
    source_path: str | None = None  # the file the lines came from
    audit_id: str | None = None  # the audit record of the successful cat
    denied: bool = False
    problem: str | None = None  # why there is no summary, for the reader
    truncated: bool = False
    #: the ``cat`` records this read wrote (the RCA's own reads), for the command table
    records: tuple[Mapping[str, Any], ...] = ()


def _ok(response: Mapping[str, Any]) -> bool:
    return response.get("status") == "completed" and response.get("exit_code") == 0


def _why(response: Mapping[str, Any]) -> str:
    status = response.get("status")
    if status == "pending_approval":
        return "the cat is still waiting for approval"
    error = response.get("error") or (
        f"exit code {response.get('exit_code')}" if status == "completed" else status)
    return f"cat failed: {error}"


def _truncated(response: Mapping[str, Any]) -> bool:
    meta = response.get("output_metadata")
    return isinstance(meta, Mapping) and bool(meta.get("truncation_applied"))


def _trim(lines: list[str]) -> tuple[str, ...]:
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return tuple(lines[:MAX_SUMMARY_LINES])


def summary_file_lines(text: str) -> tuple[str, ...]:
    """The summary file without its own ``## Executive Summary`` heading."""
    lines = text.splitlines()
    if lines and lines[0].lstrip().lower().startswith("## executive summary"):
        lines = lines[1:]
    return _trim(lines)


def executive_summary_section(text: str) -> tuple[str, ...] | None:
    """The lines between ``## Executive Summary`` and the next heading of level 1 or 2."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines)
              if line.strip().lower().startswith("## executive summary")]
    if not starts:
        return None
    section: list[str] = []
    for line in lines[starts[0] + 1:]:
        if line.startswith("# ") or line.startswith("## "):
            break
        section.append(line)
    return _trim(section) or None


def _as_record(path: str, response: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The audit record a ``cat`` through the shell wrote, as the command table reads it."""
    if not response.get("audit_id"):
        return None
    return {**response, "kind": "command", "command": f"cat {path}",
            "reasoning": "Reading the forensic summary for the RCA."}


def _already_read(path: str, records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The latest completed ``cat`` of ``path`` in the audit (the model read the summary
    itself): the RCA quotes that record instead of reading the file again."""
    found = None
    for record in records:
        if not isinstance(record, Mapping) or record.get("kind") != "command":
            continue
        try:
            words = shlex.split(str(record.get("command") or ""))
        except ValueError:
            continue
        if words == ["cat", path] and _ok(record) and record.get("output"):
            found = record
    return found


def read_report(report_path: str, read_file: ReadFile,
                audit_records: Sequence[Mapping[str, Any]] = ()) -> ReportRead:
    """Summary file first; the full report only when the summary could not be read.

    A summary the investigation already read is quoted from that record, so every audit id
    the report cites is in its command table. A denial ends it: asking the engineer to
    approve the same report under another name right after they said no would be nagging,
    not a fallback.
    """
    summary_path = summary_path_for(report_path)
    seen = _already_read(summary_path, audit_records)
    if seen is not None:
        return ReportRead(report_path, summary_file_lines(str(seen.get("output") or "")),
                          summary_path, seen.get("audit_id"), truncated=_truncated(seen))
    first = read_file(summary_path)
    made = tuple(r for r in [_as_record(summary_path, first)] if r is not None)
    if _ok(first):
        return ReportRead(report_path, summary_file_lines(str(first.get("output") or "")),
                          summary_path, first.get("audit_id"), truncated=_truncated(first),
                          records=made)
    if first.get("status") == "denied":
        return ReportRead(report_path, None, denied=True, problem=DENIED_NOTE, records=made)
    if first.get("status") == "pending_approval":
        return ReportRead(report_path, None, problem=f"Report content unavailable "
                          f"({_why(first)}).", records=made)
    full = read_file(report_path)
    made += tuple(r for r in [_as_record(report_path, full)] if r is not None)
    if _ok(full):
        lines = executive_summary_section(str(full.get("output") or ""))
        if lines is None:
            return ReportRead(report_path, None, problem="Report content unavailable (the "
                              "report has no Executive Summary section in what was read).",
                              records=made)
        return ReportRead(report_path, lines, report_path, full.get("audit_id"),
                          truncated=_truncated(full), records=made)
    if full.get("status") == "denied":
        return ReportRead(report_path, None, denied=True, problem=DENIED_NOTE, records=made)
    return ReportRead(report_path, None, problem=(
        f"Report content unavailable (summary: {_why(first)}; report: {_why(full)})."),
        records=made)


def read_reports(reports: Sequence[str], read_file: ReadFile,
                 audit_records: Sequence[Mapping[str, Any]] = ()) -> dict[str, ReportRead]:
    """Phase 4 for every report path of Phase 3, in order."""
    return {path: read_report(path, read_file, audit_records) for path in reports}


def pattern_b(tasks: Mapping[str, Mapping[str, Any]],
              reads: Mapping[str, ReportRead]) -> list[str]:
    """A completed capture whose report the engineer would not let Ghost read."""
    notes = []
    for task_id, task in tasks.items():
        read = reads.get(str(task.get("report_path") or ""))
        if is_completed(task) and read is not None and read.lines is None and read.denied:
            notes.append(PATTERN_B_NOTE.format(task_id=task_id, report_path=read.report_path))
    return notes
