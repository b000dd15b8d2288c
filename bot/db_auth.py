"""How Ghost signs in to its database: the URL's password, or (``GHOST_DATABASE_AUTH=azure``)
an Entra ID token of its managed identity, which Azure Database for PostgreSQL takes as the
password of the role named after the identity (docs/deploy.md, docs/storage.md "Roles").

The token lasts about an hour and is only checked when a connection opens, so each new
connection gets one that is still valid for at least ``refresh_margin_s``: a cached token is
reused until then and replaced before it expires, never after a failed login.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from bot.settings import Settings
from core.errors import GhostError

#: the audience of Azure Database for PostgreSQL / MySQL tokens (Entra ID)
OSSRDBMS_SCOPE = "https://ossrdbms-aad.database.windows.net/.default"


class DatabaseAuthInvalid(GhostError):
    exit_code = 2


class EntraTokenPassword:
    """A callable password: the credential's token for ``scope``, refreshed before expiry."""

    def __init__(self, credential: Any, scope: str = OSSRDBMS_SCOPE, *,
                 refresh_margin_s: float = 300.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.credential = credential
        self.scope = scope
        self.refresh_margin_s = refresh_margin_s
        self.clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_on = 0.0

    def __call__(self) -> str:
        with self._lock:
            if self._token is None or self._expires_on - self.clock() < self.refresh_margin_s:
                token = self.credential.get_token(self.scope)
                self._token, self._expires_on = token.token, float(token.expires_on)
            return self._token


def password_for(settings: Settings) -> Callable[[], str] | None:
    """The password callable ``GHOST_DATABASE_AUTH`` asks for (None: the URL's own)."""
    mode = (settings.database_auth or "password").lower()
    if mode == "password":
        return None
    if mode != "azure":
        raise DatabaseAuthInvalid(f"GHOST_DATABASE_AUTH={settings.database_auth} is not known.",
                                  "Use `password` (the URL's) or `azure` (an Entra ID token of "
                                  "the managed identity, AZURE_CLIENT_ID).")
    if not settings.resolved_database_url.startswith(("postgresql", "postgres")):
        raise DatabaseAuthInvalid("GHOST_DATABASE_AUTH=azure needs a PostgreSQL "
                                  "GHOST_DATABASE_URL.", "Set both, or neither.")
    import os

    from azure.identity import DefaultAzureCredential

    client_id = os.environ.get("AZURE_CLIENT_ID") or None
    return EntraTokenPassword(DefaultAzureCredential(managed_identity_client_id=client_id))


def open_database(settings: Settings, *, auto_migrate: bool | None = None,
                  create: bool = True) -> Any:
    """The ``storage.db.Database`` of these settings, signing in as they say (``create``:
    False for a command that only reads, which must not create a SQLite file)."""
    from storage.db import Database

    return Database(settings.resolved_database_url,
                    auto_migrate=settings.uses_default_database if auto_migrate is None
                    else auto_migrate, password=password_for(settings), create=create)
