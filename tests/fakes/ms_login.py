"""A stand-in for Microsoft's login services, over HTTPS with a local CA.

- The Bot Framework's OpenID metadata and signing keys (``/v1/.well-known/openidconfiguration``,
  ``/v1/.well-known/keys``), whose keys the test signs Teams' requests with (``sign``).
- Entra ID for MSAL: the tenant's OpenID configuration and ``/oauth2/v2.0/token``
  (client credentials), counting every token grant.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.fakes.json_server import JsonServer, LocalCA, Request

BOT_FRAMEWORK_ISSUER = "https://api.botframework.com"


class SigningKey:
    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self, endorsements: list[str]) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "use": "sig", "endorsements": endorsements}


class FakeLogin:
    """``start()``, then ``url``; ``published`` are the keys the metadata lists."""

    def __init__(self, ca: LocalCA, app_id: str, secret: str) -> None:
        self.app_id = app_id
        self.secret = secret
        self.published: list[SigningKey] = [SigningKey("key-1")]
        self.token_grants: list[dict[str, str]] = []
        self.issued: set[str] = set()
        self.server = JsonServer(self._route, ca)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def openid_url(self) -> str:
        return self.url + "/v1/.well-known/openidconfiguration"

    def start(self) -> FakeLogin:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def key_fetches(self) -> int:
        return sum(1 for r in self.server.requests if r.path == "/v1/.well-known/keys")

    def sign(self, claims: dict[str, Any], key: SigningKey | None = None,
             kid: str | None = None) -> str:
        """A Bot Framework token as Teams sends it (defaults: valid for an hour)."""
        key = key or self.published[0]
        now = int(time.time())
        body = {"iss": BOT_FRAMEWORK_ISSUER, "aud": self.app_id, "nbf": now - 10,
                "exp": now + 3600, **claims}
        return jwt.encode(body, key.private, algorithm="RS256",
                          headers={"kid": kid or key.kid})

    def _route(self, request: Request) -> tuple[int, Any]:
        path = request.path.split("?")[0]
        if path == "/v1/.well-known/openidconfiguration":
            return 200, {"issuer": BOT_FRAMEWORK_ISSUER,
                         "jwks_uri": self.url + "/v1/.well-known/keys",
                         "id_token_signing_alg_values_supported": ["RS256"]}
        if path == "/v1/.well-known/keys":
            return 200, {"keys": [k.jwk(["msteams", "emulator"]) for k in self.published]}
        parts = path.strip("/").split("/")
        if parts[1:] == ["v2.0", ".well-known", "openid-configuration"]:
            tenant = parts[0]
            return 200, {"token_endpoint": f"{self.url}/{tenant}/oauth2/v2.0/token",
                         "authorization_endpoint": f"{self.url}/{tenant}/oauth2/v2.0/authorize",
                         "issuer": f"{self.url}/{tenant}/v2.0"}
        if parts[1:] == ["oauth2", "v2.0", "token"] and request.method == "POST":
            from urllib.parse import parse_qs

            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            form["tenant"] = parts[0]
            self.token_grants.append(form)
            if form.get("client_id") != self.app_id or form.get("client_secret") != self.secret:
                return 401, {"error": "invalid_client",
                             "error_description": "AADSTS7000215: Invalid client secret."}
            token = f"access-{uuid.uuid4().hex}"
            self.issued.add(token)
            return 200, {"token_type": "Bearer", "expires_in": 3599, "access_token": token}
        return 404, {"error": "not_found", "path": path}
