"""The shell audit record: the fields every audit event carries, in the specs' format.

One record per event. ``kind`` says what happened:

- ``command_started``: written *before* a command (or Azure call) runs, so that no command runs
  without a durable trace; a started record that no ``command`` record references
  (``ref_audit_id``) is reported as interrupted after a restart;
- ``command``: the outcome of one ``SafeExecShell.execute`` call (the spec's record);
- ``approval``: a transition of an approval request (requested, approved, denied, modified,
  expired), with the actor.

``ghost audit export`` writes these records, one JSON object per line, as
``shell_audit_{sid}.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KINDS = ("command_started", "command", "approval")

#: Fields a caller may set; the store adds ``audit_id``, ``session_id``, ``seq``,
#: ``timestamp``, ``prev_hash`` and ``hash``.
ENTRY_FIELDS: tuple[str, ...] = (
    "kind",
    "command",
    "reasoning",
    "classification",
    "tier",
    "rule",
    "classifier_version",
    "action",
    "actor",
    "status",
    "denial_reason",
    "exit_code",
    "output",
    "stderr",
    "error",
    "environment",
    "started_at",
    "finished_at",
    "duration_ms",
    "output_metadata",
    "ref_audit_id",
    "details",
)

RECORD_FIELDS: tuple[str, ...] = (
    "audit_id",
    "session_id",
    "seq",
    "timestamp",
    *ENTRY_FIELDS,
    "prev_hash",
    "hash",
)


class InvalidAuditEntry(ValueError):
    """An audit entry with unknown fields or an unknown kind: a programming error."""


def normalise_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Every entry field present (None where unset); unknown fields refused."""
    unknown = set(entry) - set(ENTRY_FIELDS)
    if unknown:
        raise InvalidAuditEntry(f"unknown audit fields: {sorted(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise InvalidAuditEntry(f"audit kind must be one of {KINDS}, not {kind!r}")
    return {name: entry.get(name) for name in ENTRY_FIELDS}
