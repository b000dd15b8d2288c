"""The hash chain that makes each investigation's audit log tamper-evident.

Each audit record carries ``prev_hash`` (the previous record's ``hash``, or GENESIS for the
first) and ``hash`` = SHA-256 over the canonical JSON of every other field. The investigation
keeps the chain's head (record count and last hash), so removing the newest records is caught
as well as editing, removing or inserting one in the middle. The database trigger stops the
application from changing rows; the chain catches anyone who goes around it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64
HASH_FIELD = "hash"
PREV_FIELD = "prev_hash"


def canonical_bytes(record: Mapping[str, Any]) -> bytes:
    """Stable bytes for hashing: sorted keys, no whitespace, UTF-8, ``hash`` left out."""
    body = {k: v for k, v in record.items() if k != HASH_FIELD}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def record_hash(record: Mapping[str, Any]) -> str:
    """The hash a record must carry (its ``prev_hash`` included in the input)."""
    return hashlib.sha256(canonical_bytes(record)).hexdigest()


def audit_id_for(session_id: str, seq: int) -> str:
    """``{session_id}_{seq:03d}``: the spec's audit id for the seq-th record."""
    return f"{session_id}_{seq:03d}"


@dataclass(frozen=True)
class ChainReport:
    """The outcome of verifying one investigation's chain."""

    ok: bool
    count: int
    first_bad: str | None = None
    problem: str | None = None


def verify_chain(
    session_id: str,
    records: Iterable[Mapping[str, Any]],
    *,
    head_count: int | None,
    head_hash: str | None,
) -> ChainReport:
    """Walk the records in seq order and report the first one that breaks the chain.

    A record is bad when its seq is not the next number (a record removed or inserted), its
    audit id does not match its seq, its ``prev_hash`` is not the previous record's hash, or its
    own hash does not match its content (altered), or it lies past the head kept on the
    investigation (appended behind Ghost's back). After the walk the count and last hash must
    match that head (records removed from the end).
    """
    prev = GENESIS
    count = 0
    for record in records:
        count += 1
        seq = record.get("seq")
        label = str(record.get("audit_id") or f"seq {seq}")
        if head_count is not None and count > head_count:
            # a well-linked record past the head: Ghost never wrote it
            return ChainReport(False, count, label, f"only {head_count} records were written "
                               "but the log holds more (a record was added behind Ghost's back)")
        if seq != count:
            what = "inserted" if isinstance(seq, int) and seq < count else "removed before it"
            return ChainReport(False, count, label, f"sequence gap: expected seq {count}, "
                               f"found {seq} (a record was {what})")
        if record.get("audit_id") != audit_id_for(session_id, count):
            return ChainReport(False, count, label, "audit_id does not match its position")
        if record.get(PREV_FIELD) != prev:
            return ChainReport(False, count, label,
                               "prev_hash does not link to the previous record")
        if record.get(HASH_FIELD) != record_hash(record):
            return ChainReport(False, count, label, "content does not match its hash "
                               "(the record was altered)")
        prev = str(record[HASH_FIELD])
    if head_count is not None and head_count > count:
        missing = audit_id_for(session_id, count + 1)
        return ChainReport(False, count, missing, f"the log holds {count} records but "
                           f"{head_count} were written (records removed from the end)")
    if head_hash is not None and count and head_hash != prev:
        return ChainReport(False, count, audit_id_for(session_id, count),
                           "the newest record is not the one the head points to")
    return ChainReport(True, count)
