"""GHOST_DATABASE_AUTH=azure: each new PostgreSQL connection signs in with an Entra ID token of
the managed identity as its password (bot/db_auth.py), refreshed before it expires. The real
azure-identity asks the stand-in identity endpoint (the Container Apps protocol)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.db_auth import OSSRDBMS_SCOPE, DatabaseAuthInvalid, EntraTokenPassword, password_for
from tests.conftest import PG_URL
from tests.fakes.identity_endpoint import IdentityEndpoint


@dataclass
class _Token:
    token: str
    expires_on: int


class CountingCredential:
    """A credential whose tokens expire when the test says (azure-core's get_token shape)."""

    def __init__(self, lifetime_s: int) -> None:
        self.lifetime_s = lifetime_s
        self.now = 1_000_000.0
        self.issued: list[str] = []

    def get_token(self, *scopes: str, **_kw: object) -> _Token:
        assert scopes == (OSSRDBMS_SCOPE,)
        self.issued.append(f"token-{len(self.issued) + 1}")
        return _Token(self.issued[-1], int(self.now) + self.lifetime_s)


def test_a_token_is_reused_until_five_minutes_before_it_expires() -> None:
    credential = CountingCredential(lifetime_s=3600)
    password = EntraTokenPassword(credential, clock=lambda: credential.now)
    assert password() == password() == "token-1"
    credential.now += 3600 - 301
    assert password() == "token-1"
    credential.now += 2  # 299 s left: a new connection must not get a token about to expire
    assert password() == "token-2"


def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> object:
    from bot.settings import Settings

    for key in ("GHOST_DATABASE_AUTH", "GHOST_DATABASE_URL", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_bad_settings_say_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(DatabaseAuthInvalid, match="PostgreSQL"):
        password_for(_settings(monkeypatch, tmp_path,  # type: ignore[arg-type]
                               GHOST_DATABASE_AUTH="azure"))
    with pytest.raises(DatabaseAuthInvalid, match="not known"):
        password_for(_settings(monkeypatch, tmp_path, GHOST_DATABASE_AUTH="kerberos",
                               GHOST_DATABASE_URL="postgresql://x@h/db"))  # type: ignore[arg-type]
    assert password_for(_settings(monkeypatch, tmp_path)) is None  # type: ignore[arg-type]


@pytest.mark.skipif(not PG_URL, reason="needs GHOST_TEST_DATABASE_URL (PostgreSQL)")
def test_each_connection_signs_in_with_the_identitys_token(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from bot.db_auth import open_database

    endpoint = IdentityEndpoint(client_id="0000aaaa-1111-2222-3333-444455556666").start()
    try:
        for key, value in endpoint.environ().items():
            monkeypatch.setenv(key, value)
        for key in ("AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
                    "AZURE_USERNAME", "MSI_ENDPOINT", "MSI_SECRET"):
            monkeypatch.delenv(key, raising=False)
        settings = _settings(monkeypatch, tmp_path, GHOST_DATABASE_AUTH="azure",
                             GHOST_DATABASE_URL=str(PG_URL),
                             AZURE_CLIENT_ID=endpoint.client_id)
        db = open_database(settings)  # type: ignore[arg-type]
        with db.engine.connect() as conn:
            used = conn.connection.dbapi_connection.info.password  # type: ignore[union-attr]
        db.dispose()
    finally:
        endpoint.stop()
    [asked] = endpoint.requests
    assert asked["authorized"] and asked["query"]["client_id"] == endpoint.client_id
    assert asked["query"]["resource"].rstrip("/") == OSSRDBMS_SCOPE.removesuffix("/.default")
    assert used == endpoint.issued[-1]  # the token is the password
