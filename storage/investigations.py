"""Investigations: the §8 session document, status, chat references, and the work lease."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, or_, select, update
from sqlalchemy.exc import IntegrityError

from core.errors import ConcurrentUpdate, UnknownInvestigation
from core.session_state import (
    CHECKSUM_FIELD,
    compute_checksum,
    new_session_id,
    new_session_state,
)
from storage.clock import as_utc
from storage.db import CORRUPTED_JSON, Database
from storage.models import ChatEvent, Investigation
from storage.turns import add_turn

#: ``priority`` of an investigation a person's decision or answer made runnable: claimed
#: ahead of model turns, and by the workers' decision lane (migration 0006)
PRIORITY_HUMAN = 1
#: Statuses with work for a worker to do; the others wait for a person or are finished.
#: (``parked``: Gemini stayed unavailable past GHOST_GEMINI_OUTAGE_S; a person resumes it.)
RUNNABLE_STATUSES = ("queued", "running")
STATUSES = (
    "queued",
    "running",
    "awaiting_approval",
    "awaiting_user",
    "parked",
    "completed",
    "cancelled",
    "failed",
)


class AlreadySeen(Exception):  # noqa: N818 - what happened, not an error of the caller
    """The chat request was recorded before (a redelivery): nothing new was created."""


@dataclass(frozen=True)
class InvestigationView:
    """A read-only snapshot of an investigation row."""

    session_id: str
    status: str
    symptom: str
    requested_by: str | None
    platform: str
    channel_ref: str | None
    thread_ref: str | None
    conversation_ref: dict[str, Any] | None
    state: dict[str, Any]
    checksum: str
    version: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    audit_count: int
    engine_state: dict[str, Any] | None = None
    rca_markdown: str | None = None
    #: why the stored §8 document cannot be read (malformed JSON, not an object); None if fine
    corrupted: str | None = None
    #: the lab scenario it runs against (``ghost demo``, GHOST_LAB); None for real Azure
    lab: str | None = None

    @property
    def document(self) -> dict[str, Any]:
        """The ghost-design §8 document exactly as stored, ``_checksum`` included."""
        return {**self.state, CHECKSUM_FIELD: self.checksum}


def _corruption(value: object) -> str | None:
    if not isinstance(value, dict):
        return f"the stored state is {type(value).__name__}, not a JSON object"
    if CORRUPTED_JSON in value:
        return str(value[CORRUPTED_JSON])
    return None


def _view(row: Investigation) -> InvestigationView:
    corrupted = _corruption(row.state)
    engine_broken = row.engine_state is not None and _corruption(row.engine_state)
    return InvestigationView(
        session_id=row.session_id,
        status=row.status,
        symptom=row.symptom,
        requested_by=row.requested_by,
        platform=row.platform,
        channel_ref=row.channel_ref,
        thread_ref=row.thread_ref,
        conversation_ref=row.conversation_ref,
        state={} if corrupted else dict(row.state),
        checksum=row.checksum,
        version=row.version,
        lease_owner=row.lease_owner,
        lease_expires_at=as_utc(row.lease_expires_at),
        created_at=as_utc(row.created_at) or row.created_at,
        updated_at=as_utc(row.updated_at) or row.updated_at,
        audit_count=row.audit_count,
        engine_state=(dict(row.engine_state) if row.engine_state is not None
                      and not engine_broken else None),
        rca_markdown=row.rca_markdown,
        corrupted=corrupted or (f"engine state: {engine_broken}" if engine_broken else None),
        lab=row.lab,
    )


def same_kind(lab: str | None, *, same_scenario: bool = False) -> ColumnElement[bool]:
    """Investigations of this store's kind: lab sessions for a lab store (of its scenario with
    ``same_scenario``), real ones otherwise."""
    if not lab:
        return Investigation.lab.is_(None)
    return Investigation.lab == lab if same_scenario else Investigation.lab.is_not(None)


class InvestigationRepo:
    """Create, read, save and lease investigations."""

    db: Database
    clock: Callable[[], datetime]
    #: the lab scenario of this process (``ghost demo``, GHOST_LAB); None: real Azure
    lab: str | None

    def create_investigation(
        self,
        *,
        symptom: str,
        model: str,
        audit_dir: str,
        requested_by: str | None = None,
        platform: str = "terminal",
        channel_ref: str | None = None,
        thread_ref: str | None = None,
        conversation_ref: Mapping[str, Any] | None = None,
        status: str = "queued",
        session_id: str | None = None,
        resumed_from: str | None = None,
        lab: str | None = None,
        engine_state: Mapping[str, Any] | None = None,
        turns: Sequence[tuple[str, Mapping[str, Any]]] = (),
        event_key: str | None = None,
    ) -> InvestigationView:
        """Insert a new investigation with a fresh §8 document.

        ``event_key``: the chat request that asks for it, remembered in the same transaction
        (``chat_events``); a request seen before raises :class:`AlreadySeen` and creates
        nothing (Teams redelivers a request whose answer it did not get).

        Ids follow the spec (``ghost_YYYYMMDD_HHMMSS``); when two start in the same second the
        later one gets a ``-2``, ``-3``… suffix instead of failing. ``engine_state`` and the
        first ``turns`` go into the same transaction: a slash command is recorded whole,
        runnable, before Slack gets its ack (or not at all).
        """
        self.db.ensure_ready()
        now = self.clock()
        base = session_id or new_session_id(now)
        attempt = 0
        for _ in range(1, 1000):
            attempt += 1
            sid = base if attempt == 1 else f"{base}-{attempt}"
            state = new_session_state(
                sid,
                model=model,
                audit_dir=audit_dir,
                created_at=now,
                resumed_from=resumed_from,
                is_resume=resumed_from is not None,
            )
            row = Investigation(
                session_id=sid,
                created_at=now,
                updated_at=now,
                status=status,
                symptom=symptom,
                requested_by=requested_by,
                platform=platform,
                channel_ref=channel_ref,
                thread_ref=thread_ref,
                conversation_ref=dict(conversation_ref) if conversation_ref else None,
                state=state,
                checksum=compute_checksum(state),
                version=1,
                audit_count=0,
                lab=lab or self.lab,
                engine_state=dict(engine_state) if engine_state is not None else None,
            )
            try:
                with self.db.session() as s, s.begin():
                    if event_key is not None:
                        s.add(ChatEvent(event_key=event_key[:255], received_at=now))
                        try:
                            s.flush()
                        except IntegrityError:
                            raise AlreadySeen(event_key) from None
                    s.add(row)
                    if turns:
                        s.flush()  # the row exists before its turns reference it
                    for role, content in turns:
                        add_turn(s, sid, role, content, now)
            except IntegrityError:
                if session_id is not None:
                    raise
                # taken: go past every id of this second at once (twenty slash commands in one
                # second would otherwise try 1 + 2 + … + 20 inserts behind one write lock)
                attempt = max(attempt, self._taken_suffixes(base))
                continue
            return _view(row)
        raise ConcurrentUpdate("Could not allocate a session id.", "Try again in a second.")

    def _taken_suffixes(self, base: str) -> int:
        """How many ids of the form ``base`` / ``base-N`` exist (the next free N is above)."""
        from sqlalchemy import func

        with self.db.reading() as s:
            return int(s.scalar(select(func.count()).select_from(Investigation).where(
                or_(Investigation.session_id == base,
                    Investigation.session_id.like(f"{base}-%")))) or 0)

    def get_investigation(self, session_id: str) -> InvestigationView:
        self.db.ensure_ready()
        with self.db.reading() as s:
            row = s.get(Investigation, session_id)
            if row is None:
                raise UnknownInvestigation(session_id)
            return _view(row)

    def list_investigations(
        self, *, statuses: tuple[str, ...] | None = None, limit: int = 50
    ) -> list[InvestigationView]:
        self.db.ensure_ready()
        query = select(Investigation).order_by(Investigation.created_at.desc()).limit(limit)
        if statuses:
            query = query.where(Investigation.status.in_(statuses))
        with self.db.reading() as s:
            return [_view(r) for r in s.scalars(query)]

    def save_state(
        self,
        session_id: str,
        state: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        status: str | None = None,
        engine_state: Mapping[str, Any] | None = None,
        rca_markdown: str | None = None,
        turns: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> InvestigationView:
        """Store a new §8 document with its recomputed checksum (compare-and-set on version).

        The engine's bookkeeping, the RCA and conversation ``turns`` (role, content), when
        given, are saved in the same transaction, so a crash never leaves the document, the
        loop's position and the history out of step (a model turn stored without the state
        that says it was received would be sent to Gemini twice).
        """
        self.db.ensure_ready()
        body = {k: v for k, v in state.items() if k != CHECKSUM_FIELD}
        if body.get("session_id") != session_id:
            raise ValueError("session_id in the state does not match the investigation")
        with self.db.session() as s, s.begin():
            row = s.get(Investigation, session_id, with_for_update=True)
            if row is None:
                raise UnknownInvestigation(session_id)
            if expected_version is not None and row.version != expected_version:
                raise ConcurrentUpdate(
                    f"Investigation {session_id} changed while it was being saved "
                    f"(version {row.version}, expected {expected_version}).",
                    "Reload it and apply the change again.",
                )
            row.state = body
            row.checksum = compute_checksum(body)
            row.version += 1
            row.updated_at = self.clock()
            if status is not None and not (row.status == "cancelled" and status != "cancelled"):
                # a cancel wins over a worker finishing its step: only set_status (an explicit
                # /ghost resume) moves a cancelled investigation on; the step's state is kept
                row.status = status
            if engine_state is not None:
                row.engine_state = dict(engine_state)
            if rca_markdown is not None:
                row.rca_markdown = rca_markdown
            for role, content in turns:
                add_turn(s, session_id, role, content, self.clock())
            s.flush()
            return _view(row)

    def set_status(self, session_id: str, status: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown investigation status {status!r}")
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Investigation)
                .where(Investigation.session_id == session_id)
                .values(status=status, updated_at=self.clock())
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise UnknownInvestigation(session_id)

    def set_symptom(self, session_id: str, symptom: str) -> None:
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Investigation)
                .where(Investigation.session_id == session_id)
                .values(symptom=symptom, updated_at=self.clock())
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise UnknownInvestigation(session_id)

    def claim_next(self, owner: str, *, lease_seconds: float = 60.0,
                   platforms: Collection[str] | None = None,
                   min_priority: int = 0) -> InvestigationView | None:
        """Lease the next runnable investigation to ``owner``, or return None.

        The highest ``priority`` first (a person just approved or answered it), then the one
        waiting longest; the claim resets the priority. ``min_priority`` limits the claim to
        such work (the workers' decision lane).

        ``platforms`` limits the claim to investigations a worker can serve: a chat worker
        passes its chat platforms so that it never takes over a ``ghost investigate`` running
        (or interrupted) in somebody's terminal. A lab store claims only lab sessions of its
        scenario and a real one only real sessions (the brain and the tools differ).

        PostgreSQL: ``SELECT … FOR UPDATE SKIP LOCKED`` so that concurrent workers never wait
        on, or take, the same row. SQLite (one process): the conditional UPDATE below is the
        compare-and-set; SQLAlchemy would silently drop SKIP LOCKED there.
        """
        self.db.ensure_ready()
        now = self.clock()
        free = or_(Investigation.lease_owner.is_(None), Investigation.lease_expires_at < now)
        candidates = (
            select(Investigation.session_id)
            .where(Investigation.status.in_(RUNNABLE_STATUSES), free,
                   same_kind(self.lab, same_scenario=True))
            .order_by(Investigation.priority.desc(), Investigation.updated_at)
            .limit(1 if self.db.dialect == "postgresql" else 10)
        )
        if min_priority > 0:
            candidates = candidates.where(Investigation.priority >= min_priority)
        if platforms is not None:
            candidates = candidates.where(Investigation.platform.in_(list(platforms)))
        if self.db.dialect == "postgresql":
            candidates = candidates.with_for_update(skip_locked=True)
        with self.db.session() as s, s.begin():
            for sid in list(s.scalars(candidates)):
                result = s.execute(
                    update(Investigation)
                    .where(Investigation.session_id == sid, free)
                    .values(lease_owner=owner, priority=0, lease_expires_at=now + timedelta(
                        seconds=lease_seconds))
                )
                if result.rowcount == 1:  # type: ignore[attr-defined]
                    row = s.get(Investigation, sid, populate_existing=True)
                    assert row is not None
                    return _view(row)
        return None

    def renew_lease(self, session_id: str, owner: str, *, lease_seconds: float = 60.0) -> bool:
        """Extend a lease we hold; False when it was lost (expired and taken by another)."""
        return self._update_held(session_id, owner,
                                 lease_expires_at=self.clock() + timedelta(seconds=lease_seconds))

    def _update_held(self, session_id: str, owner: str, **values: Any) -> bool:
        """Change a lease only while ``owner`` still holds it; False when it was lost."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Investigation)
                .where(Investigation.session_id == session_id,
                       Investigation.lease_owner == owner)
                .values(**values)
            )
            return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def take_lease(self, session_id: str, owner: str, *, lease_seconds: float = 60.0) -> bool:
        """Lease one investigation to ``owner`` (a terminal run) if nobody else holds a
        current lease on it; False when another live process does."""
        self.db.ensure_ready()
        now = self.clock()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Investigation)
                .where(Investigation.session_id == session_id,
                       or_(Investigation.lease_owner.is_(None),
                           Investigation.lease_owner == owner,
                           Investigation.lease_expires_at < now))
                .values(lease_owner=owner,
                        lease_expires_at=now + timedelta(seconds=lease_seconds))
            )
            return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def release_lease(self, session_id: str, owner: str) -> None:
        self._update_held(session_id, owner, lease_owner=None, lease_expires_at=None)

    def release_leases_of(self, owner: str) -> list[str]:
        """Hand back every investigation ``owner`` holds (a process shutting down): another
        process may claim them at once instead of waiting for the leases to lapse."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            held = list(s.scalars(select(Investigation.session_id)
                                  .where(Investigation.lease_owner == owner)))
            if held:
                s.execute(update(Investigation)
                          .where(Investigation.lease_owner == owner)
                          .values(lease_owner=None, lease_expires_at=None))
            return held

    def hold_lease_until(self, session_id: str, owner: str, until: datetime) -> bool:
        """Keep a lease we hold until ``until`` without working on it: a retry timer (the
        root message could not be posted; nobody tries again before then)."""
        return self._update_held(session_id, owner, lease_expires_at=until)

    # ------------------------------------------------------------------ chat front ends
    def find_by_thread(self, platform: str, channel_ref: str,
                       thread_ref: str) -> InvestigationView | None:
        """The investigation living in a chat thread (a mention or a button in it)."""
        self.db.ensure_ready()
        query = (select(Investigation)
                 .where(Investigation.platform == platform,
                        Investigation.channel_ref == channel_ref,
                        Investigation.thread_ref == thread_ref)
                 .order_by(Investigation.created_at.desc()).limit(1))
        with self.db.reading() as s:
            row = s.scalars(query).first()
            return None if row is None else _view(row)

    def record_root(self, session_id: str, thread_ref: str,
                    root: Mapping[str, Any]) -> str:
        """Store the root message of a thread Ghost opened (compare-and-set on the row): the
        first root recorded stays, so the investigation never moves to a second thread; the
        thread in force is returned."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            row = s.get(Investigation, session_id, with_for_update=True)
            if row is None:
                raise UnknownInvestigation(session_id)
            if row.thread_ref:
                return str(row.thread_ref)
            row.thread_ref = thread_ref
            row.conversation_ref = {**(row.conversation_ref or {}), "root": dict(root)}
            row.updated_at = self.clock()
            return thread_ref

    def update_conversation_ref(self, session_id: str,
                                changes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``changes`` into the chat bookkeeping (status message ts, what was posted).

        Row-locked so that two processes adding different keys do not lose one another's.
        """
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            row = s.get(Investigation, session_id, with_for_update=True)
            if row is None:
                raise UnknownInvestigation(session_id)
            merged = {**(row.conversation_ref or {}), **dict(changes)}
            row.conversation_ref = merged
            return merged

    def change_conversation_ref(self, session_id: str,
                                change: Callable[[dict[str, Any]], Any]) -> Any:
        """Read-modify-write the chat bookkeeping under the row lock; ``change`` edits the
        dict in place and its return value is returned (a compare-and-set, a queue pop)."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            row = s.get(Investigation, session_id, with_for_update=True)
            if row is None:
                raise UnknownInvestigation(session_id)
            ref = copy.deepcopy(dict(row.conversation_ref or {}))
            result = change(ref)
            row.conversation_ref = ref
            return result

    def requeue(self, session_id: str, *, from_statuses: tuple[str, ...],
                priority: int = 0) -> bool:
        """Make an investigation runnable again if it is in one of ``from_statuses``;
        ``priority`` (:data:`PRIORITY_HUMAN`) puts it ahead of the others' model turns."""
        self.db.ensure_ready()
        with self.db.session() as s, s.begin():
            result = s.execute(
                update(Investigation)
                .where(Investigation.session_id == session_id,
                       Investigation.status.in_(from_statuses))
                .values(status="queued", updated_at=self.clock(),
                        **({"priority": priority} if priority else {}))
            )
            return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def waiting_count(self, *, platforms: Collection[str] | None = None,
                      min_priority: int = 0) -> int:
        """Runnable investigations no live worker holds (the queue's length)."""
        from sqlalchemy import func

        self.db.ensure_ready()
        now = self.clock()
        query = (select(func.count()).select_from(Investigation)
                 .where(Investigation.status.in_(RUNNABLE_STATUSES),
                        or_(Investigation.lease_owner.is_(None),
                            Investigation.lease_expires_at < now),
                        Investigation.priority >= min_priority,
                        same_kind(self.lab, same_scenario=True)))
        if platforms is not None:
            query = query.where(Investigation.platform.in_(list(platforms)))
        with self.db.reading() as s:
            return int(s.scalar(query) or 0)

    def queue_position(self, session_id: str) -> int:
        """How many investigations not started yet were queued before this one (what its
        thread root says while it waits: "queued: 3 investigations ahead")."""
        from sqlalchemy import func

        self.db.ensure_ready()
        with self.db.reading() as s:
            row = s.get(Investigation, session_id)
            if row is None:
                raise UnknownInvestigation(session_id)
            query = (select(func.count()).select_from(Investigation)
                     .where(Investigation.status == "queued",
                            Investigation.created_at < row.created_at,
                            Investigation.platform == row.platform,
                            Investigation.session_id != session_id,
                            Investigation.audit_count == 0,
                            Investigation.version <= 1))
            return int(s.scalar(query) or 0)
