"""Liveness and readiness for probes: ``/healthz`` (the process answers) and ``/readyz`` (the
database is reachable and migrated at least to the revision this Ghost needs), and the same
check for ``ghost doctor``.

Readiness is cached for a few seconds so that probes from every replica every few seconds do not
turn into a query storm; a failing database is reported within that many seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from core.errors import GhostError

log = logging.getLogger(__name__)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def database_status(db: Any, *, newer_ok: bool = False) -> tuple[bool, str, str]:
    """(ready, what was found, what to do) for a ``storage.db.Database``.

    ``newer_ok``: a schema migrated by a newer release counts as ready. A running replica keeps
    working on it (migrations only add), and an upgrade migrates before it rolls the apps, so
    the old replicas must stay in service meanwhile; a new process still refuses to start on it.
    """
    from storage import migrate
    from storage.db import safe_url

    where = safe_url(db.url)
    reach = "check GHOST_DATABASE_URL, that the server runs and that Ghost may log in"
    if db.auto_migrate:  # the default SQLite file is created and migrated on first use
        try:
            db.ensure_ready()
        except GhostError as exc:
            return False, str(exc), ""
        except Exception as exc:  # noqa: BLE001 - reported as one line
            return False, f"cannot reach the database at {where}: {_first_line(exc)}", reach
    try:
        current = migrate.current_revision(db.engine)
    except Exception as exc:  # noqa: BLE001 - reported as one line
        return False, f"cannot reach the database at {where}: {_first_line(exc)}", reach
    head = migrate.head_revision()
    upgrade = "run `ghost db upgrade` (in Azure: the migrate job, docs/deploy.md)"
    if current == head:
        return True, f"database {where} at revision {head}", ""
    if current is None:
        return False, f"database {where} is empty", upgrade
    if current not in migrate.known_revisions():
        return newer_ok, (f"database {where} is at revision {current}, newer than this Ghost "
                          f"({head})"), "" if newer_ok else "run the newer Ghost release"
    return False, f"database {where} is at revision {current}, this Ghost needs {head}", upgrade


class Readiness:
    """``database_status`` cached for ``ttl_s`` seconds; safe to call from many threads.

    At most one check runs at a time: while one is in flight (a database that hangs until its
    connect timeout), every other caller gets the last answer at once instead of queueing
    behind it, and the cache is stamped when the check ends, so a slow check is not repeated
    by the callers that waited. A change (ready → not ready and back) is logged once, with the
    reason.
    """

    def __init__(self, db: Any, *, ttl_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self.clock = clock
        self._checking = threading.Lock()
        self._at: float | None = None
        self._last: tuple[bool, str] = (False, "not checked yet")

    def _check(self) -> tuple[bool, str]:
        ok, found, fix = database_status(self.db, newer_ok=True)
        return ok, f"{found}; {fix}" if fix else found

    def __call__(self) -> tuple[bool, str]:
        if self._at is not None and self.clock() - self._at < self.ttl_s:
            return self._last
        if not self._checking.acquire(blocking=False):  # one in flight: its last answer
            return self._last
        try:
            if self._at is not None and self.clock() - self._at < self.ttl_s:
                return self._last  # another caller finished a check just now
            before = self._last[0] if self._at is not None else None
            result = self._check()
            self._last, self._at = result, self.clock()
            if result[0] != before:
                log.log(logging.INFO if result[0] else logging.WARNING,
                        "readiness: %s (%s)", "ready" if result[0] else "not ready", result[1])
            return result
        finally:
            self._checking.release()
