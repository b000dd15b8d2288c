"""Storage errors, written for the engineer who has to fix the database at 3 a.m."""

from __future__ import annotations

from core.errors import GhostError


class DatabaseUnreachable(GhostError):
    """The database server did not answer."""

    exit_code = 2


class DatabaseNotMigrated(GhostError):
    """The schema is missing or older than this code."""

    exit_code = 2


class DatabaseMissing(DatabaseNotMigrated):
    """A command that only reads found no SQLite file where the URL points; it created none
    (a read never leaves an empty database or a new directory behind)."""

    def __init__(self, path: str, message: str | None = None, hint: str | None = None,
                 *, default: bool = False) -> None:
        super().__init__(message or f"There is no database at {path}.",
                         hint or "Create it with `ghost db upgrade` (with the same "
                         "GHOST_DATABASE_URL), or check the path.")
        self.path = path
        #: the default database in the data directory (not a GHOST_DATABASE_URL)
        self.default = default


class DatabaseTooNew(GhostError):
    """The schema was migrated by a newer Ghost than this one (a rollback, a mixed rollout)."""

    exit_code = 2


def too_new(url: str, current: str, head: str) -> DatabaseTooNew:
    return DatabaseTooNew(
        f"The database at {url} is at revision {current}, which this Ghost (newest revision "
        f"{head}) does not know: a newer Ghost migrated it.",
        "Run the newer Ghost release, or point GHOST_DATABASE_URL at this release's database; "
        "do not downgrade the schema by hand.")
