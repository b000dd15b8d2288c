"""The append-only, hash-chained audit log (one chain per investigation).

Appends for one investigation are serialised by locking its row (``FOR UPDATE`` on
PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serialises all writers), so concurrent writers never
duplicate an audit id or fork the chain; the unique (session_id, seq) constraint is the backstop.
The investigation row keeps the head (count and last hash) so that records cut from the end are
detected too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.audit_chain import GENESIS, ChainReport, audit_id_for, record_hash, verify_chain
from core.audit_record import RECORD_FIELDS, normalise_entry
from core.errors import UnknownInvestigation
from storage.clock import iso_micro
from storage.db import Database
from storage.models import AuditEvent, Investigation


def _clean(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL; replace it before hashing so both engines agree."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _record(row: AuditEvent) -> dict[str, Any]:
    return {name: getattr(row, name) for name in RECORD_FIELDS}


class AuditRepo:
    """Implements ``core.ports.AuditLog`` and the verification behind `ghost audit verify`."""

    db: Database
    clock: Callable[[], datetime]

    def append_audit(self, session_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Append one entry to the investigation's chain and return the stored record."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            return append_in(s, session_id, entry, self.clock())

    def audit_records(self, session_id: str) -> list[dict[str, Any]]:
        """Every record of the investigation in chain order (unknown id: empty list)."""
        self.db.ensure_ready()
        with self.db.reading() as s:
            rows = s.scalars(
                select(AuditEvent)
                .where(AuditEvent.session_id == session_id)
                .order_by(AuditEvent.seq, AuditEvent.id)
            )
            return [_record(r) for r in rows]

    def audit_record(self, audit_id: str) -> dict[str, Any] | None:
        self.db.ensure_ready()
        with self.db.reading() as s:
            row = s.scalars(select(AuditEvent).where(AuditEvent.audit_id == audit_id)).first()
            return None if row is None else _record(row)

    def verify_audit(self, session_id: str) -> ChainReport:
        """Re-walk the chain from the stored rows against the head kept on the investigation."""
        self.db.ensure_ready()
        with self.db.reading() as s:
            inv = s.get(Investigation, session_id)
            if inv is None:
                raise UnknownInvestigation(session_id)
            head_count, head_hash = inv.audit_count, inv.audit_head
        return verify_chain(
            session_id, self.audit_records(session_id), head_count=head_count, head_hash=head_hash
        )


def append_in(s: Session, session_id: str, entry: Mapping[str, Any],
              now: datetime) -> dict[str, Any]:
    """Append one entry inside the caller's transaction (so that a state change and its
    audit record commit together, or not at all); returns the record."""
    body = _clean(normalise_entry(entry))
    inv = s.get(Investigation, session_id, with_for_update=True)
    if inv is None:
        raise UnknownInvestigation(session_id)
    seq = inv.audit_count + 1
    record: dict[str, Any] = {
        "audit_id": audit_id_for(session_id, seq),
        "session_id": session_id,
        "seq": seq,
        "timestamp": iso_micro(now),
        **body,
        "prev_hash": inv.audit_head or GENESIS,
    }
    record["hash"] = record_hash(record)
    s.add(AuditEvent(**record))
    inv.audit_count = seq
    inv.audit_head = record["hash"]
    return record
