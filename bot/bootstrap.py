"""The one place where Ghost is put together: settings → database → store (→ later, the rest).

Tests call :func:`build_store` with their own URL instead of patching anything.
"""

from __future__ import annotations

from bot.settings import Settings, load_settings
from storage.db import Database
from storage.store import Store


def build_store(settings: Settings | None = None) -> Store:
    settings = settings or load_settings()
    db = Database(settings.resolved_database_url, auto_migrate=settings.uses_default_database)
    return Store(db)
