"""`ghost db upgrade|status`."""

from __future__ import annotations

import argparse
from typing import Any

from bot.settings import load_settings


def _revision(db: Any) -> str | None:
    """The schema revision, or one line saying the database cannot be reached."""
    from storage import migrate
    from storage.db import safe_url
    from storage.errors import DatabaseUnreachable

    try:
        return migrate.current_revision(db.engine)
    except Exception as exc:  # noqa: BLE001 - reported as one line
        raise DatabaseUnreachable(
            f"Cannot reach the database at {safe_url(db.url)}: "
            f"{str(getattr(exc, 'orig', exc)).strip().splitlines()[0]}.",
            "Check GHOST_DATABASE_URL and that the server is running.",
        ) from None


def where(settings: Any, url: str) -> list[str]:
    """Where the data dir and the database are, and which setting chose each (no password)."""
    chosen = "GHOST_DATA_DIR" if "data_dir" in settings.model_fields_set else \
        "the user's data dir; GHOST_DATA_DIR overrides"
    source = "GHOST_DATABASE_URL" if settings.database_url else "ghost.db in the data dir"
    return [f"data dir: {settings.data_dir.resolve()} ({chosen})",
            f"database: {url} ({source})"]


def upgrade(args: argparse.Namespace) -> int:
    from bot.db_auth import open_database
    from storage import migrate
    from storage.db import safe_url

    settings = load_settings()
    db = open_database(settings, auto_migrate=False)
    before = _revision(db)
    if before is not None and before not in migrate.known_revisions():
        from storage.errors import too_new

        raise too_new(safe_url(db.url), before, migrate.head_revision())
    migrate.upgrade(db.engine)
    after = migrate.current_revision(db.engine)
    if before == after:
        print(f"Database {safe_url(db.url)} is already at revision {after}.")
    else:
        print(f"Database {safe_url(db.url)} upgraded from {before or 'empty'} to {after}.")
    if settings.database_app_role:  # the apps' role: what they need, nothing they own
        from storage.roles import grant_app_role

        for line in grant_app_role(db.engine, settings.database_app_role):
            print(line)
    return 0


def status(args: argparse.Namespace) -> int:
    """Where the database is and its revision; exit 1 (with what to do) when not at head."""
    from bot.db_auth import open_database
    from storage import migrate
    from storage.db import safe_url
    from storage.errors import DatabaseMissing

    settings = load_settings()
    try:  # a status is a read: it never creates the database (nor its directory)
        db = open_database(settings, create=False)
    except DatabaseMissing as exc:
        from bot.read_only import missing

        for line in where(settings, safe_url(settings.resolved_database_url)):
            print(line)
        print("revision: none (there is no database file)")
        print(missing(settings, exc.path).hint)
        return 1
    if db.auto_migrate:
        from storage.errors import DatabaseTooNew

        try:
            db.ensure_ready()  # the default SQLite file is created and migrated on first use
        except DatabaseTooNew:
            pass  # shown below as a status, like any other revision
    current = _revision(db)
    head = migrate.head_revision()
    for line in where(settings, safe_url(db.url)):
        print(line)
    print(f"revision: {current or 'none (empty)'} (head {head})")
    if current == head:
        return 0
    if current is not None and current not in migrate.known_revisions():
        print("A newer Ghost migrated this database: run that release, not this one.")
    else:
        print("Not up to date: run `ghost db upgrade` (with the same GHOST_DATABASE_URL).")
    return 1
