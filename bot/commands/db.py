"""`ghost db upgrade|status`."""

from __future__ import annotations

import argparse

from bot.settings import load_settings


def upgrade(args: argparse.Namespace) -> int:
    from storage import migrate
    from storage.db import Database, safe_url
    from storage.errors import DatabaseUnreachable

    settings = load_settings()
    db = Database(settings.resolved_database_url)
    try:
        before = migrate.current_revision(db.engine)
    except Exception as exc:  # noqa: BLE001 - reported as one line below
        raise DatabaseUnreachable(
            f"Cannot reach the database at {safe_url(db.url)}: "
            f"{str(getattr(exc, 'orig', exc)).strip().splitlines()[0]}.",
            "Check GHOST_DATABASE_URL and that the server is running.",
        ) from None
    migrate.upgrade(db.engine)
    after = migrate.current_revision(db.engine)
    if before == after:
        print(f"Database {safe_url(db.url)} is already at revision {after}.")
    else:
        print(f"Database {safe_url(db.url)} upgraded from {before or 'empty'} to {after}.")
    return 0


def status(args: argparse.Namespace) -> int:
    from storage import migrate
    from storage.db import Database, safe_url

    settings = load_settings()
    db = Database(settings.resolved_database_url, auto_migrate=settings.uses_default_database)
    db.ensure_ready()
    print(f"database: {safe_url(db.url)}")
    print(f"revision: {migrate.current_revision(db.engine)} (head {migrate.head_revision()})")
    return 0
