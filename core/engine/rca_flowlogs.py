"""RCA: the flow-log evidence, cited like command evidence (issue 33).

A flow-log finding rests on three kinds of audit record: the downloads that fetched the blobs
(``az storage blob download … --file F``), the analyser's run over them (``ghost-forensics
flowlogs F … --out D``), whose recorded meaning is its top finding with the deciding rule and
the window (``core/engine/outcomes.py`` reads the analyser's key line), and the hypotheses that
cite the run. This section puts them on one row, so the engineer sees which rule decided the
flows, in which minutes, from which blobs, without opening a file that may be gone.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.rca_evidence import COMPLETED, AuditEvidence, CommandEvidence
from core.engine.rca_markdown import cell, code_inline, table

Lines = list[str]
_PREFIX = "flow logs: "
#: the analyser's options that take a value (forensics/flowlogs_cli.py)
_VALUED = frozenset({"--src", "--dst", "--port", "--since", "--until", "--events", "--out",
                     "--jobs"})


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _inputs(words: list[str]) -> list[str]:
    """The blob files and folders an analyser run read (its positional arguments)."""
    paths: list[str] = []
    skip = False
    for word in words[2:]:
        if skip:
            skip = False
        elif word in _VALUED:
            skip = True
        elif not word.startswith("-"):
            paths.append(posixpath.normpath(word))
    return paths


def _download_target(words: list[str]) -> str | None:
    if words[:4] != ["az", "storage", "blob", "download"]:
        return None
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in ("--file", "-f"):
            target = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            return posixpath.normpath(target) if target else None
    return None


def _fed(target: str, inputs: Sequence[str]) -> bool:
    return any(target == p or target.startswith(p.rstrip("/") + "/") for p in inputs)


def _cited_by(state: Mapping[str, Any], audit_id: str) -> list[str]:
    log = state.get("hypothesis_log")
    entries = [h for h in log if isinstance(h, Mapping)] if isinstance(log, list) else []
    return [f"{h.get('id')} {h.get('state')}" for h in entries
            if h.get("resolving_audit_id") == audit_id]


def flow_logs(audit: AuditEvidence, state: Mapping[str, Any]) -> Lines:
    """``## Flow-Log Evidence``, or nothing when no flow-log analysis ran."""
    runs = [ev for ev in audit.commands if _words(ev.command)[:2] == ["ghost-forensics",
                                                                       "flowlogs"]]
    if not runs:
        return []
    downloads: list[tuple[CommandEvidence, str]] = []
    for ev in audit.commands:
        target = _download_target(_words(ev.command)) if ev.outcome == COMPLETED else None
        if target:
            downloads.append((ev, target))
    rows = []
    for run in runs:
        inputs = _inputs(_words(run.command))
        fed = [ev.audit_id for ev, target in downloads if _fed(target, inputs)]
        if run.outcome != COMPLETED:
            finding = f"not analysed ({run.outcome})"
        elif run.meaning and run.meaning.startswith(_PREFIX):
            finding = run.meaning[len(_PREFIX):]
        else:
            finding = "no finding line in the output (read the audit record)"
        rows.append([cell(run.audit_id), cell(finding),
                     cell(", ".join(fed) or "none audited in this investigation"),
                     cell(", ".join(_cited_by(state, run.audit_id)) or "—")])
    out = ["## Flow-Log Evidence", ""]
    out += table(["Analysis (audit ID)", "Top finding: flows, deciding rule, window (UTC)",
                  "Blobs downloaded by", "Resolves"], rows)
    out += ["", "Each analysis is a " + code_inline("ghost-forensics flowlogs") + " run over "
            "VNet flow-log blobs: its audit record holds every finding with its flows, deciding "
            "rule and first and last minute; the downloads' records name the blobs it read."]
    return out + [""]
