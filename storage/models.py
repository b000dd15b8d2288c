"""SQLAlchemy 2.0 typed models: the tables of DESIGN.md "Storage".

``audit_events`` and ``task_events`` are append-only: a database trigger (created by the
migration, on SQLite and PostgreSQL) refuses UPDATE and DELETE. Everything the hash chain covers
is stored as plain strings, integers and JSON so that it reads back byte-for-byte equal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    """Declarative base; metadata is what the migrations create."""


class Investigation(Base):
    """One investigation: its §8 session state, where it lives in chat, its lease."""

    __tablename__ = "investigations"

    session_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(32), index=True)
    symptom: Mapped[str] = mapped_column(Text, default="")
    requested_by: Mapped[str | None] = mapped_column(String(255))
    platform: Mapped[str] = mapped_column(String(16), default="terminal")
    channel_ref: Mapped[str | None] = mapped_column(String(255))
    thread_ref: Mapped[str | None] = mapped_column(String(255))
    conversation_ref: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    checksum: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer, default=1)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    audit_count: Mapped[int] = mapped_column(Integer, default=0)
    audit_head: Mapped[str | None] = mapped_column(String(64))
    engine_state: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    rca_markdown: Mapped[str | None] = mapped_column(Text)
    #: the lab scenario (shipped name or file path) this investigation ran against; None: Azure
    lab: Mapped[str | None] = mapped_column(String(512))
    #: claim order: 1 when a person's decision or answer made it runnable (claimed first; the
    #: claim resets it), 0 otherwise (migration 0006)
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ConversationTurn(Base):
    """A model or user turn, stored verbatim (thought signatures included)."""

    __tablename__ = "conversation_turns"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("investigations.session_id"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Approval(Base):
    """A request for a human decision on a RISKY command, changed by compare-and-set."""

    __tablename__ = "approvals"

    approval_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("investigations.session_id"), index=True
    )
    status: Mapped[str] = mapped_column(String(16), index=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    command: Mapped[str] = mapped_column(Text)
    command_hash: Mapped[str] = mapped_column(String(64))
    classifier_version: Mapped[str] = mapped_column(String(32))
    classification: Mapped[str] = mapped_column(String(16))
    tier: Mapped[int | None] = mapped_column(Integer)
    rule: Mapped[str | None] = mapped_column(String(128))
    reasoning: Mapped[str] = mapped_column(Text, default="")
    environment: Mapped[str] = mapped_column(String(16), default="local")
    requested_by: Mapped[str | None] = mapped_column(String(255))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    decided_by: Mapped[str | None] = mapped_column(String(255))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    denial_reason: Mapped[str | None] = mapped_column(Text)
    replaces_approval_id: Mapped[str | None] = mapped_column(String(64))
    modified_by: Mapped[str | None] = mapped_column(String(255))
    message_ref: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    context: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class AuditEvent(Base):
    """One shell audit record; append-only and hash-chained per investigation."""

    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("session_id", "seq"),
        UniqueConstraint("audit_id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("investigations.session_id"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    audit_id: Mapped[str] = mapped_column(String(160))
    timestamp: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(32))
    command: Mapped[str | None] = mapped_column(Text)
    reasoning: Mapped[str | None] = mapped_column(Text)
    classification: Mapped[str | None] = mapped_column(String(16))
    tier: Mapped[int | None] = mapped_column(Integer)
    rule: Mapped[str | None] = mapped_column(String(128))
    classifier_version: Mapped[str | None] = mapped_column(String(32))
    action: Mapped[str | None] = mapped_column(String(32))
    actor: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str | None] = mapped_column(String(32))
    denial_reason: Mapped[str | None] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    output: Mapped[str | None] = mapped_column(Text)
    stderr: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    environment: Mapped[str | None] = mapped_column(String(16))
    started_at: Mapped[str | None] = mapped_column(String(40))
    finished_at: Mapped[str | None] = mapped_column(String(40))
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    output_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    ref_audit_id: Mapped[str | None] = mapped_column(String(160))
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class TaskEvent(Base):
    """One orchestrator task record after a transition; the last per task_id is current."""

    __tablename__ = "task_events"
    __table_args__ = (Index("ix_task_events_task", "task_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(128), index=True)
    task_id: Mapped[str] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(32))
    record: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TaskId(Base):
    """A task id taken by an investigation, before its first task record is written.

    The primary key is the uniqueness check: two processes creating a capture of the same VM
    in the same second both try to insert the id, and the second one gets an IntegrityError
    and takes the next suffix (``_2``…), instead of both writing a CREATED record for one id.
    """

    __tablename__ = "task_ids"

    task_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(128))
    reserved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Lease(Base):
    """A named lease for periodic jobs shared by several processes (APScheduler can't)."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(255))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ChatEvent(Base):
    """A chat event already handled (Slack retries are dropped by its primary key)."""

    __tablename__ = "chat_events"

    event_key: Mapped[str] = mapped_column(String(255), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
