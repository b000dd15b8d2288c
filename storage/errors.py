"""Storage errors, written for the engineer who has to fix the database at 3 a.m."""

from __future__ import annotations

from core.errors import GhostError


class DatabaseUnreachable(GhostError):
    """The database server did not answer."""

    exit_code = 2


class DatabaseNotMigrated(GhostError):
    """The schema is missing or older than this code."""

    exit_code = 2
