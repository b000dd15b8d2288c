"""The investigation's session state (ghost-design §8), its checksum and its id.

The document is the spec's ``ghost_session.json`` field for field; Ghost keeps it in the
database, but ``ghost session show SID --json`` prints exactly this document. It is an index
(audit ids, task ids, hypothesis metadata), never raw command output (the Zero-Cache rule).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

CHECKSUM_FIELD = "_checksum"

SESSION_FIELDS: tuple[str, ...] = (
    "session_id",
    "created_at",
    "resumed_from",
    "model",
    "audit_dir",
    "turn_count",
    "rca_report_path",
    "hypothesis_log",
    "denial_tracker",
    "consecutive_denial_counter",
    "active_hypothesis_ids",
    "active_task_ids",
    "evidence_conflicts",
    "is_resume",
)


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC (one place, so tests can reason about it)."""
    return datetime.now(UTC)


def iso_utc(moment: datetime) -> str:
    """ISO-8601 with a ``Z`` suffix and whole seconds, as the specs write timestamps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_session_id(moment: datetime) -> str:
    """``ghost_{YYYYMMDD}_{HHMMSS}`` (ghost-design §8); the store resolves collisions."""
    return moment.astimezone(UTC).strftime("ghost_%Y%m%d_%H%M%S")


def new_session_state(
    session_id: str,
    *,
    model: str,
    audit_dir: str,
    created_at: datetime,
    resumed_from: str | None = None,
    is_resume: bool = False,
) -> dict[str, Any]:
    """A fresh §8 document without its checksum."""
    return {
        "session_id": session_id,
        "created_at": iso_utc(created_at),
        "resumed_from": resumed_from,
        "model": model,
        "audit_dir": audit_dir,
        "turn_count": 0,
        "rca_report_path": None,
        "hypothesis_log": [],
        "denial_tracker": {},
        "consecutive_denial_counter": {},
        "active_hypothesis_ids": [],
        "active_task_ids": [],
        "evidence_conflicts": [],
        "is_resume": is_resume,
    }


def compute_checksum(state: Mapping[str, Any]) -> str:
    """SHA-256 of ``json.dumps(state_without_checksum, sort_keys=True)`` (ghost-design §8)."""
    body = {k: v for k, v in state.items() if k != CHECKSUM_FIELD}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def with_checksum(state: Mapping[str, Any]) -> dict[str, Any]:
    """The document with a freshly computed ``_checksum`` as its last key."""
    body = {k: v for k, v in state.items() if k != CHECKSUM_FIELD}
    body[CHECKSUM_FIELD] = compute_checksum(body)
    return body


class ChecksumStatus(StrEnum):
    """What a resume finds when it checks a stored document (ghost-design §3 step 2)."""

    OK = "ok"
    MISMATCH = "mismatch"
    ABSENT = "absent"


def check_checksum(document: Mapping[str, Any]) -> ChecksumStatus:
    """Compare the stored ``_checksum`` with the content; no check when it is absent."""
    stored = document.get(CHECKSUM_FIELD)
    if not stored:
        return ChecksumStatus.ABSENT
    return ChecksumStatus.OK if stored == compute_checksum(document) else ChecksumStatus.MISMATCH
