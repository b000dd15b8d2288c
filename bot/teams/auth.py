"""Checking the Bot Framework token on every request to ``/api/messages``.

botbuilder 4.17's channel-token check raises instead of refusing: a token signed with another
key, expired, or with an unknown ``kid`` (its key lookup raises ``IndexError``, so its
refresh-on-unknown-key never runs) became a 500 with a traceback. Ghost checks the token itself,
by the Bot Framework's rules — RS256 signed by a key from the Bot Framework's OpenID metadata
(refreshed daily, and once more when a ``kid`` is not known, in case Microsoft rotated its
keys), the key endorsed for the channel, issuer ``https://api.botframework.com``, audience = the
app id, not expired (5 minutes' skew), ``serviceurl`` = the activity's — and every failure is a
``PermissionError``, which ``CloudAdapter.process`` answers with 401. One log line says why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import jwt
import requests
from botbuilder.schema import Activity
from botframework.connector.auth import (
    AuthenticateRequestResult,
    BotFrameworkAuthentication,
    ClaimsIdentity,
    ConnectorFactory,
    UserTokenClient,
)
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from jwt.algorithms import RSAAlgorithm

from bot.teams.identity import BOT_FRAMEWORK_SCOPE

log = logging.getLogger(__name__)
ISSUER = "https://api.botframework.com"
SKEW_S = 300
#: What botbuilder writes on activities that came from the public Azure Bot Service.
CALLER_ID = "urn:botframework:azure"


class Refused(PermissionError):
    """The request's token is not valid; ``CloudAdapter.process`` answers 401."""


class SigningKeys:
    """The Bot Framework's signing keys from its OpenID metadata, cached.

    Refreshed when a day old, and when a token names a ``kid`` not in the set — at most once
    every ``min_refresh_s``, so forged ``kid`` values cannot make Ghost hammer Microsoft.
    """

    def __init__(self, metadata_url: str, http: requests.Session, *,
                 max_age_s: float = 86_400.0, min_refresh_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.metadata_url = metadata_url
        self.http = http
        self.max_age_s = max_age_s
        self.min_refresh_s = min_refresh_s
        self.clock = clock
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched: float | None = None
        self._lock = asyncio.Lock()

    def _fetch(self) -> dict[str, dict[str, Any]]:
        metadata = self.http.get(self.metadata_url, timeout=10)
        metadata.raise_for_status()
        keys = self.http.get(str(metadata.json()["jwks_uri"]), timeout=10)
        keys.raise_for_status()
        return {str(k["kid"]): dict(k) for k in keys.json()["keys"] if "kid" in k}

    async def _refresh(self) -> None:
        try:
            self._keys = await asyncio.to_thread(self._fetch)
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            if not self._keys:
                raise Refused(f"the Bot Framework's signing keys could not be fetched from "
                              f"{self.metadata_url}: {exc}") from exc
            log.warning("could not refresh the Bot Framework's signing keys (%s); keeping the "
                        "ones fetched before", exc)
        self._fetched = self.clock()

    async def get(self, kid: str) -> dict[str, Any] | None:
        async with self._lock:
            now = self.clock()
            if self._fetched is None or now - self._fetched > self.max_age_s:
                await self._refresh()
            elif kid not in self._keys and now - self._fetched >= self.min_refresh_s:
                await self._refresh()  # Microsoft may have rotated its keys
            return self._keys.get(kid)


class ChannelTokens:
    """Validates the ``Authorization`` header of a request from the Bot Framework."""

    def __init__(self, app_id: str, keys: SigningKeys) -> None:
        self.app_id = app_id
        self.keys = keys

    async def claims(self, auth_header: str, channel_id: str | None,
                     service_url: str | None) -> dict[str, Any]:
        scheme, _, token = (auth_header or "").partition(" ")
        if scheme != "Bearer" or not token:
            raise Refused("no bearer token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Refused(f"the token is not a JWT ({exc})") from exc
        if header.get("alg") != "RS256":
            raise Refused(f"the token's algorithm {header.get('alg')!r} is not RS256")
        kid = str(header.get("kid") or "")
        jwk = await self.keys.get(kid)
        if jwk is None:
            raise Refused(f"the token's signing key {kid!r} is not one of the Bot Framework's")
        endorsements = jwk.get("endorsements")
        if endorsements and channel_id not in endorsements:
            raise Refused(f"the signing key is not endorsed for channel {channel_id!r}")
        try:
            key = RSAAlgorithm.from_jwk(json.dumps(jwk))
            if not isinstance(key, RSAPublicKey):
                raise Refused("the Bot Framework's key is not an RSA public key")
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=["RS256"], audience=self.app_id, issuer=ISSUER,
                leeway=SKEW_S, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError as exc:
            raise Refused("the token has expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise Refused("the token is for another app (audience)") from exc
        except jwt.InvalidIssuerError as exc:
            raise Refused("the token was not issued by the Bot Framework") from exc
        except jwt.InvalidSignatureError as exc:
            raise Refused("the token's signature does not match the key") from exc
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise Refused(f"the token is not valid ({exc})") from exc
        if service_url is not None and claims.get("serviceurl") != service_url:
            raise Refused("the token's serviceurl is not the activity's serviceUrl")
        return claims


class GhostAuthentication(BotFrameworkAuthentication):  # type: ignore[misc]
    """botbuilder's authentication with Ghost's token check; the rest is botbuilder's."""

    def __init__(self, inner: BotFrameworkAuthentication, tokens: ChannelTokens) -> None:
        self.inner = inner
        self.tokens = tokens

    async def authenticate_request(self, activity: Activity,
                                   auth_header: str) -> AuthenticateRequestResult:
        try:
            claims = await self.tokens.claims(auth_header, activity.channel_id,
                                              activity.service_url)
        except Refused as exc:
            log.warning("Teams request refused (401): %s", exc)
            raise
        identity = ClaimsIdentity(claims, True)
        result = AuthenticateRequestResult()
        result.claims_identity = identity
        result.audience = BOT_FRAMEWORK_SCOPE
        result.caller_id = CALLER_ID
        result.connector_factory = self.inner.create_connector_factory(identity)
        return result

    async def authenticate_streaming_request(self, auth_header: str,
                                             channel_id_header: str) -> AuthenticateRequestResult:
        raise Refused("Ghost does not accept streaming connections")

    def create_connector_factory(self, claims_identity: ClaimsIdentity) -> ConnectorFactory:
        return self.inner.create_connector_factory(claims_identity)

    async def create_user_token_client(self, claims_identity: ClaimsIdentity) -> UserTokenClient:
        return await self.inner.create_user_token_client(claims_identity)

    def get_originating_audience(self) -> str:
        return BOT_FRAMEWORK_SCOPE

    async def authenticate_channel_request(self, auth_header: str) -> ClaimsIdentity:
        return ClaimsIdentity(await self.tokens.claims(auth_header, None, None), True)
