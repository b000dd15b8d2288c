"""RCA phases 1–3 (ghost-design §7): what the audit log and the task registry say happened.

Pure reads over the records the caller hands in: nothing here writes, and no input record is
changed (the spec's "opened read-only"). Raw command ``output`` is looked at only by the
Pattern A heuristic and never leaves this module.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOCAL = "LOCAL"
CLOUD = "CLOUD"

#: Outcome buckets of the spec's Phase 1, plus ``interrupted`` and ``error`` (other refusals).
COMPLETED, FAILED, DENIED, FORBIDDEN, TIMEOUT, INTERRUPTED, ERROR = (
    "completed", "failed", "denied", "forbidden", "timeout", "interrupted", "error")
OUTCOMES = (COMPLETED, FAILED, DENIED, FORBIDDEN, TIMEOUT, INTERRUPTED, ERROR)
APPROVED_ACTIONS = frozenset({"user_approved", "user_modified"})

_PROBES = frozenset({"ping", "ping6", "traceroute", "traceroute6"})
_NSG_ALLOW = re.compile(r'"access"\s*:\s*"Allow"')

PATTERN_A_NOTE = (
    "Advisory: local probe failure detected alongside an Azure 'Allow' NSG rule "
    "(local probe {local}; NSG read {cloud}). PCAP evidence may clarify whether the data path "
    "is actually blocked. See the evidence hierarchy in ghost-design §2."
)


@dataclass(frozen=True)
class CommandEvidence:
    """One ``command`` audit record as the RCA cites it (no output, ever)."""

    audit_id: str
    command: str
    evidence_context: str  # LOCAL | CLOUD (the spec's ``_evidence_context``)
    outcome: str  # one of OUTCOMES
    status: str
    classification: str | None
    action: str | None
    actor: str | None
    exit_code: int | None
    error: str | None
    denial_reason: str | None
    #: what the answer meant (core.engine.outcomes): "DNS NXDOMAIN", "HTTP 503", …
    meaning: str | None = None
    #: an Azure SDK call Ghost made, audited as its az equivalent (no process ran)
    via_sdk: bool = False
    #: a step Ghost did itself (deleting a local file), audited as its shell equivalent
    via_ghost: bool = False

    @property
    def risky_approved(self) -> bool:
        """Ran because an engineer approved (or edited) it."""
        return self.action in APPROVED_ACTIONS


@dataclass(frozen=True)
class AuditEvidence:
    """Phase 1's result: the command records in audit order, plus what did not fit."""

    commands: tuple[CommandEvidence, ...]
    skipped: int  # records that could not be read (not a mapping, no audit id)
    unfinished: tuple[str, ...]  # command_started ids with no outcome record yet
    pattern_a: str | None  # the advisory, when the heuristic fired

    def by_outcome(self, outcome: str) -> tuple[CommandEvidence, ...]:
        return tuple(c for c in self.commands if c.outcome == outcome)

    @property
    def risky_approved(self) -> tuple[CommandEvidence, ...]:
        return tuple(c for c in self.commands if c.risky_approved)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _details(record: Mapping[str, Any]) -> Mapping[str, Any]:
    details = record.get("details")
    return details if isinstance(details, Mapping) else {}


def _exit_code(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def evidence_context(record: Mapping[str, Any]) -> str:
    """``CLOUD`` for Azure calls, ``LOCAL`` otherwise (a missing environment is local, as in
    the shell's own responses)."""
    return CLOUD if record.get("environment") == "azure" else LOCAL


def outcome_of(record: Mapping[str, Any]) -> str:
    """The spec's Phase 1 buckets, decided by status, exit code and error."""
    status, error = record.get("status"), record.get("error")
    if status == "completed":
        return COMPLETED if _exit_code(record.get("exit_code")) == 0 else FAILED
    if status == "denied":
        return DENIED
    if error == "forbidden_command":
        return FORBIDDEN
    if error == "timeout":
        return TIMEOUT
    if error == "interrupted":
        return INTERRUPTED
    return ERROR


def _program(command: str) -> str:
    words = command.split(maxsplit=1)
    return words[0] if words else ""


def _is_failed_probe(ev: CommandEvidence) -> bool:
    # a probe that ran and failed; a denied or refused ping never ran, so it proves nothing
    return (ev.evidence_context == LOCAL and _program(ev.command) in _PROBES
            and (ev.outcome == FAILED or ev.outcome == TIMEOUT))


def _is_nsg_allow(record: Mapping[str, Any], ev: CommandEvidence) -> bool:
    output = record.get("output")
    return (ev.evidence_context == CLOUD and ev.outcome == COMPLETED
            and "az network nsg" in " ".join(ev.command.split())
            and isinstance(output, str) and _NSG_ALLOW.search(output) is not None)


def classify_audit(records: Sequence[Mapping[str, Any]]) -> AuditEvidence:
    """Phase 1: tag and bucket every ``command`` record; run the Pattern A heuristic."""
    commands: list[CommandEvidence] = []
    skipped = 0
    started: list[str] = []
    started_by: dict[str, str | None] = {}
    finished: set[str] = set()
    probe_fail: str | None = None
    nsg_allow: str | None = None
    for record in records:
        if not isinstance(record, Mapping) or not _text(record.get("audit_id")):
            skipped += 1
            continue
        kind = record.get("kind")
        if kind == "command_started":
            started.append(str(record["audit_id"]))
            started_by[str(record["audit_id"])] = _text(record.get("actor"))
        if kind != "command":
            continue
        if _text(record.get("ref_audit_id")):
            finished.add(str(record["ref_audit_id"]))
        ev = CommandEvidence(
            audit_id=str(record["audit_id"]),
            command=_text(record.get("command")) or "",
            evidence_context=evidence_context(record),
            outcome=outcome_of(record),
            status=str(record.get("status") or ""),
            classification=_text(record.get("classification")),
            action=_text(record.get("action")),
            # an interrupted command is closed by Ghost; who approved it is on its start
            actor=started_by.get(str(record.get("ref_audit_id")))
            or _text(record.get("actor")),
            exit_code=_exit_code(record.get("exit_code")),
            error=_text(record.get("error")),
            denial_reason=_text(record.get("denial_reason")),
            meaning=_text(_details(record).get("meaning")),
            via_sdk=_details(record).get("via") == "sdk",
            via_ghost=_details(record).get("via") == "ghost",
        )
        commands.append(ev)
        if probe_fail is None and _is_failed_probe(ev):
            probe_fail = ev.audit_id
        if nsg_allow is None and _is_nsg_allow(record, ev):
            nsg_allow = ev.audit_id
    pattern_a = (PATTERN_A_NOTE.format(local=probe_fail, cloud=nsg_allow)
                 if probe_fail and nsg_allow else None)
    unfinished = tuple(a for a in started if a not in finished)
    return AuditEvidence(tuple(commands), skipped, unfinished, pattern_a)


# ------------------------------------------------------------------ phases 2 and 3: tasks
def latest_tasks(events: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Phase 2: the last record written for each task_id wins; first-seen order is kept."""
    latest: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if isinstance(event, Mapping) and _text(event.get("task_id")):
            latest[str(event["task_id"])] = event
    return latest


def is_completed(task: Mapping[str, Any]) -> bool:
    """COMPLETED, or DONE after a completed capture was cleaned up.

    Ghost's records also carry ``outcome``: a failed capture is cleaned up to DONE as well,
    and its DONE must not count as a completed capture.
    """
    if task.get("state") not in ("COMPLETED", "DONE"):
        return False
    return task.get("outcome") in (None, "completed")


def artifact_reports(tasks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Phase 3: report paths of completed tasks, once each (a dual-end pair shares one)."""
    reports: list[str] = []
    for task in tasks.values():
        path = _text(task.get("report_path"))
        if is_completed(task) and path and path not in reports:
            reports.append(path)
    return reports


def summary_path_for(report_path: str) -> str:
    """``/x/cap_forensic_report.md`` → ``/x/cap_executive_summary.md`` (the forensic engine
    writes both into one directory)."""
    head, name = posixpath.split(report_path)
    suffix = "_forensic_report.md"
    stem = name[: -len(suffix)] if name.endswith(suffix) else posixpath.splitext(name)[0]
    return posixpath.join(head, f"{stem}_executive_summary.md")
