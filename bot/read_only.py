"""Commands that only read never create a database or a directory (issue 31).

`ghost session list` with ``GHOST_DATABASE_URL=sqlite:////a/typo/x.db`` used to create the
directory and an empty database, then list nothing: the typo went unnoticed and left files
behind. A read now opens only a database that exists, and otherwise says there is none, where it
looked, and how to create one — in words that fit the default database (a fresh machine: the
first investigation creates it) or a configured URL (probably a wrong path).
"""

from __future__ import annotations

from typing import Any

from bot.db_auth import open_database
from storage.errors import DatabaseMissing


def open_existing(settings: Any) -> Any:
    """The database, opened without creating anything; :class:`DatabaseMissing` when the
    SQLite file is not there."""
    try:
        return open_database(settings, create=False)
    except DatabaseMissing as exc:
        raise missing(settings, exc.path) from None


def missing(settings: Any, path: str) -> DatabaseMissing:
    """The error for a database file that is not there, worded for where it was looked for."""
    if settings.uses_default_database:
        return DatabaseMissing(
            path, f"No Ghost database yet at {path} (the data directory; GHOST_DATA_DIR "
            "moves it): nothing has been investigated with it.",
            "`ghost demo` or `ghost investigate` creates it on first use; `ghost db upgrade` "
            "creates an empty one.", default=True)
    return DatabaseMissing(
        path, f"GHOST_DATABASE_URL points at {path}, and there is no database there.",
        "Check the path in GHOST_DATABASE_URL, or create an empty database there with "
        "`ghost db upgrade`.")


def nothing_yet(settings: Any, what: str = "investigations") -> str:
    """The line a listing prints on a machine where nothing has run yet."""
    from storage.db import sqlite_file

    path = sqlite_file(settings.resolved_database_url)
    return (f"No {what} yet: there is no database at {path} yet; `ghost demo` or `ghost "
            "investigate` creates it.")
