"""Time helpers for the store: UTC in, UTC out, on both engines."""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything Ghost stores is UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def iso_micro(moment: datetime) -> str:
    """An ISO-8601 UTC timestamp with microseconds and a ``Z``: audit record timestamps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
