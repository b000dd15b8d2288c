"""The root-cause-analysis report (ghost-design §7): evidence in, one Markdown document out.

``build_rca`` is pure: it reads the session document, the audit records and the task records it
is given and never writes any of them (the spec's "opened read-only"); the only thing it does
to the world is ``read_file``, which runs ``cat`` through the Safe-Exec Shell so that even the
RCA's own reads are gated and audited. Writing the file and setting ``rca_report_path``
(phases 6 and 7) belong to the caller.

Every claim cites an ``audit_id``. Raw command output is never reproduced: it stays in the
audit log, where ``ghost audit verify`` can prove it was not edited.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.engine import rca_sections as sections
from core.engine.hypotheses import apply_completion
from core.engine.rca_captures import ReadFile, pattern_b, read_reports
from core.engine.rca_evidence import artifact_reports, classify_audit, latest_tasks
from core.engine.rca_flowlogs import flow_logs
from core.session_state import iso_utc

CONFIDENCES = ("high", "medium", "low")
NO_CONCLUSION = (
    "No root cause was established: the investigation ended without complete_investigation "
    "(the engineer chose Done, or the turn limit was reached). The evidence gathered so far "
    "is listed below."
)
NO_CONCLUSION_ACTION = (
    "Review the command and capture evidence below: Ghost did not reach a conclusion, so "
    "treat every open hypothesis as untested."
)


@dataclass(frozen=True)
class RcaReport:
    """The finished report and the facts a front end shows beside it."""

    markdown: str
    filename: str  # ghost_rca_{sid}.md
    confidence: str  # high | medium | low
    root_cause: str
    recommended_actions: list[str]
    advisories: list[str]  # Pattern A / Pattern B notes


def _strings(value: Any) -> list[str]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()]


def _confidence(completion: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """The Brain's confidence; low (with a reason) when it gave none or no usable one."""
    if completion is None:
        return "low", None
    given = completion.get("confidence")
    if isinstance(given, str) and given.strip().lower() in CONFIDENCES:
        return given.strip().lower(), None
    return "low", f"Ghost gave no valid confidence ({str(given)[:40]!r}); reported as low."


def _root_cause(completion: Mapping[str, Any] | None) -> str:
    if completion is None:
        return NO_CONCLUSION
    summary = completion.get("root_cause_summary")
    if isinstance(summary, str) and summary.strip():
        return summary.strip()
    return "Ghost called complete_investigation without a root-cause summary."


def rca_filename(session_id: str) -> str:
    """``ghost_rca_{sid}.md``, with anything unsafe in a file name replaced."""
    return f"ghost_rca_{re.sub(r'[^A-Za-z0-9_.-]', '_', session_id)}.md"


def build_rca(
    *,
    state: Mapping[str, Any],
    audit_records: Sequence[Mapping[str, Any]],
    task_events: Sequence[Mapping[str, Any]],
    completion: Mapping[str, Any] | None,
    read_file: ReadFile,
    integrity_warning: str | None = None,
    generated_at: datetime,
    duration_s: float | None = None,
    symptom: str | None = None,
    requested_by: str | None = None,
    cost_line: str | None = None,
) -> RcaReport:
    """Phases 1–5 of ghost-design §7: classify, reduce, read summaries, write Markdown.

    ``completion`` is the ``complete_investigation`` arguments, or None when the engineer
    chose Done or the turn limit ended the loop; then the confidence is low.
    """
    session_id = str(state.get("session_id") or "")
    if not session_id:
        raise ValueError("the session document has no session_id")
    # the final call's lists resolve the log (on a copy: the caller's state is not changed),
    # so the summary, the Hypotheses Log and the unresolved section tell one story
    doc: dict[str, Any] = copy.deepcopy(dict(state))
    for key in ("hypothesis_log", "evidence_conflicts", "active_hypothesis_ids"):
        if not isinstance(doc.get(key), list):
            doc[key] = []
    for key in ("denial_tracker", "consecutive_denial_counter"):
        if not isinstance(doc.get(key), dict):
            doc[key] = {}
    doc["hypothesis_log"] = [h for h in doc["hypothesis_log"] if isinstance(h, dict)]
    notes = (apply_completion(doc, completion, iso_utc(generated_at))
             if completion is not None else [])

    tasks = latest_tasks(task_events)  # phase 2
    skipped_tasks = len(task_events) - sum(
        1 for e in task_events if isinstance(e, Mapping) and e.get("task_id"))
    reads = read_reports(artifact_reports(tasks), read_file, audit_records)  # phases 3, 4
    # the RCA's own reads are commands too: every audit id the report cites is in its table
    known = {r.get("audit_id") for r in audit_records if isinstance(r, Mapping)}
    audit_records = [*audit_records, *(rec for read in reads.values() for rec in read.records
                                       if rec.get("audit_id") not in known)]
    audit = classify_audit(audit_records)  # phase 1 (+ Pattern A)
    advisories = ([audit.pattern_a] if audit.pattern_a else []) + pattern_b(tasks, reads)

    confidence, confidence_note = _confidence(completion)
    root_cause = _root_cause(completion)
    actions = _strings(completion.get("recommended_actions")) if completion else []
    if completion is None:
        actions = [NO_CONCLUSION_ACTION]

    lines: list[str] = []
    lines += sections.header(
        session_id, generated=iso_utc(generated_at), confidence=confidence,
        concluded=completion is not None, duration_s=duration_s, state=doc,
        integrity_warning=integrity_warning)
    lines += sections.who_and_what(symptom, requested_by, audit_records)
    lines += sections.summary(root_cause, confidence_note, audit, tasks, doc, notes,
                              cost=cost_line)
    lines += sections.hypotheses(doc)
    lines += sections.commands(audit)
    lines += flow_logs(audit, doc)
    lines += sections.captures(tasks, reads, advisories)
    lines += sections.actions(actions, concluded=completion is not None)
    lines += sections.unresolved(doc)
    lines += sections.integrity(session_id, audit, skipped_tasks, integrity_warning)
    return RcaReport(
        markdown="\n".join(lines).rstrip() + "\n",
        filename=rca_filename(session_id),
        confidence=confidence,
        root_cause=root_cause,
        recommended_actions=actions,
        advisories=advisories,
    )
