"""Activity-log writes to line flow-log changes up with (``--events FILE``), and time options.

``FILE`` may hold what an engineer has at hand: the JSON of ``az monitor activity-log list``
(a list of events, or ``{"value": [...]}`` as the REST API returns it), the same with a
``--query "[].[eventTimestamp, operationName.value, resourceId, caller]"`` (lists, JSON or
``-o tsv`` text), or a plain list of ISO times (JSON, or one a line). Failed operations changed
nothing and are left out; a write logged several times (Started, Accepted, Succeeded: one
correlation id) counts once, at its earliest time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .errors import ForensicsError

_AGO = re.compile(r"^\s*((?:\d+\s*[smhd]\s*)+)(?:ago)?\s*$", re.IGNORECASE)
_AGO_PART = re.compile(r"(\d+)\s*([smhd])", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Event:
    """One change: when, what, on which resource, by whom."""

    time: datetime
    operation: str | None = None
    resource: str | None = None
    caller: str | None = None
    status: str | None = None

    @property
    def minute(self) -> int:
        return int(self.time.timestamp()) // 60

    def to_json(self) -> dict[str, Any]:
        return {"time": iso_seconds(self.time), "operation": self.operation,
                "resource": self.resource, "caller": self.caller, "status": self.status}

    def describe(self) -> str:
        """"09:19:50 UTC: securityRules/write on nsg-data/…/deny-web-to-redis by alice"."""
        what = _short_op(self.operation) if self.operation else "a change"
        on = f" on {_short_resource(self.resource)}" if self.resource else ""
        by = f" by {self.caller}" if self.caller else ""
        return f"{what}{on}{by} at {self.time:%H:%M:%S} UTC"


def iso_seconds(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _short_op(op: str) -> str:
    parts = op.split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else op


def _short_resource(rid: str) -> str:
    """The names in a resource id: ``nsg-data/deny-web-to-redis``."""
    parts = [p for p in rid.split("/") if p]
    if "providers" not in parts:
        return rid
    rest = parts[parts.index("providers") + 2:]  # type/name pairs after the namespace
    return "/".join(rest[1::2]) if rest and len(rest) % 2 == 0 else rid


def parse_time(text: str, flag: str, now: datetime | None = None) -> datetime:
    """An ISO time (UTC when no offset is given) or an age such as ``90m``, ``2h``, ``1d6h``
    (before now)."""
    m = _AGO.match(text)
    if m:
        secs = sum(int(n) * _UNITS[u.lower()] for n, u in _AGO_PART.findall(m[1]))
        return (now or datetime.now(UTC)) - timedelta(seconds=secs)
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ForensicsError(f"{flag} {text!r}: give an ISO time (2026-03-02T09:20Z) or an "
                             "age (90m, 2h, 1d)") from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        t = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _value(x: Any) -> str | None:
    """``operationName`` and ``status`` are ``{"value", "localizedValue"}`` in az's JSON."""
    if isinstance(x, dict):
        x = x.get("value") or x.get("localizedValue")
    return x if isinstance(x, str) and x else None


def _from_item(item: Any, where: str) -> tuple[Event, str | None] | None:
    if isinstance(item, str):
        t = _time(item)
        if t is None:
            raise ForensicsError(f"--events: {where} {item[:40]!r} is not an ISO time")
        return Event(t), None
    if isinstance(item, list):
        if not item:
            return None
        t = _time(item[0])
        if t is None:
            raise ForensicsError(f"--events: {where} starts with {str(item[0])[:40]!r}, not an "
                                 "ISO time (put eventTimestamp first in --query)")
        rest = [x if isinstance(x, str) else None for x in item[1:4]]
        rest += [None] * (3 - len(rest))
        return Event(t, rest[0], rest[1], rest[2]), None
    if isinstance(item, dict):
        t = _time(item.get("eventTimestamp") or item.get("time") or item.get("timestamp"))
        if t is None:
            raise ForensicsError(f"--events: {where} has no eventTimestamp: expected the JSON "
                                 "of `az monitor activity-log list`")
        status = _value(item.get("status"))
        if status and status.lower() == "failed":
            return None
        ev = Event(t, _value(item.get("operationName")) or _value(item.get("operation")),
                   item.get("resourceId") if isinstance(item.get("resourceId"), str) else None,
                   item.get("caller") if isinstance(item.get("caller"), str) else None, status)
        corr = item.get("correlationId")
        return ev, corr if isinstance(corr, str) else None
    raise ForensicsError(f"--events: {where} is {type(item).__name__}, not an event or a time")


def load_events(path: str) -> list[Event]:
    """The writes in ``path``, oldest first. Raises :class:`ForensicsError` (exit 2)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ForensicsError(f"--events file not found: {path}") from None
    except IsADirectoryError:
        raise ForensicsError(f"--events {path} is a folder; give the JSON file") from None
    except UnicodeDecodeError:
        raise ForensicsError(f"--events {path} is not text") from None
    items: list[Any]
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        # `-o tsv` rows, or one time a line
        items = [line.split("\t") if "\t" in line else line.split()[:1]
                 for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if not items:
            raise ForensicsError(f"--events {path} is empty") from None
    else:
        if isinstance(doc, dict) and isinstance(doc.get("value"), list):
            doc = doc["value"]
        if isinstance(doc, dict):
            doc = [doc]
        if not isinstance(doc, list):
            raise ForensicsError(f"--events {path}: expected the JSON of `az monitor "
                                 "activity-log list` or a list of ISO times")
        items = doc
    events: dict[Any, Event] = {}
    for i, item in enumerate(items, 1):
        got = _from_item(item, f"entry {i}")
        if got is None:
            continue
        ev, corr = got
        key = corr or (ev.time, ev.operation, ev.resource)
        old = events.get(key)
        if old is None or ev.time < old.time:
            events[key] = ev
    return sorted(events.values(), key=lambda e: e.time)


def near(events: list[Event], minute: int, before: int, after: int) -> list[Event]:
    """Events from ``before`` minutes before ``minute`` to ``after`` minutes after it."""
    return [e for e in events if minute - before <= e.minute <= minute + after]
