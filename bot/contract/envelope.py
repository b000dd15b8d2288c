"""The envelope every ``--json`` document and every ``--jsonl`` line carries.

``schema_version`` follows semver: within major version 1 fields are only added, never removed
or given a new meaning, so a consumer written for 1.0.0 keeps working on any 1.x.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

SCHEMA_VERSION = "1.1.0"
ENVELOPE_KEYS = ("schema_version", "generated_at", "host_id", "session_id")


def host_id() -> str:
    """Which machine answered: GHOST_HOST_ID when set (a replica's name), else the hostname."""
    return os.environ.get("GHOST_HOST_ID") or socket.gethostname() or "unknown-host"


def timestamp(now: datetime | None = None) -> str:
    """RFC 3339 UTC with a ``Z``, second precision (what the schemas call date-time)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def envelope(body: Mapping[str, Any], *, session_id: str | None = None,
             now: datetime | None = None) -> dict[str, Any]:
    """``body`` with the envelope keys first; ``session_id`` only where there is one."""
    head: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "generated_at": timestamp(now),
                            "host_id": host_id()}
    if session_id is not None:
        head["session_id"] = session_id
    return {**head, **{k: v for k, v in body.items() if k not in head}}
