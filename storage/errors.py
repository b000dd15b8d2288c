"""Storage errors, written for the engineer who has to fix the database at 3 a.m."""

from __future__ import annotations

from core.errors import GhostError


class DatabaseUnreachable(GhostError):
    """The database server did not answer."""

    exit_code = 2


class DatabaseNotMigrated(GhostError):
    """The schema is missing or older than this code."""

    exit_code = 2


class DatabaseTooNew(GhostError):
    """The schema was migrated by a newer Ghost than this one (a rollback, a mixed rollout)."""

    exit_code = 2


def too_new(url: str, current: str, head: str) -> DatabaseTooNew:
    return DatabaseTooNew(
        f"The database at {url} is at revision {current}, which this Ghost (newest revision "
        f"{head}) does not know: a newer Ghost migrated it.",
        "Run the newer Ghost release, or point GHOST_DATABASE_URL at this release's database; "
        "do not downgrade the schema by hand.")
