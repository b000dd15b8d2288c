"""A stand-in for the managed-identity endpoint of App Service and Container Apps, on 127.0.0.1.

It answers the two protocols the platforms hand a process through its environment:
- ``IDENTITY_ENDPOINT`` + ``IDENTITY_HEADER``: ``GET ?api-version=2019-08-01&resource=…``
  (``client_id=…`` for a user-assigned identity) with the header ``X-IDENTITY-HEADER``;
- ``MSI_ENDPOINT`` + ``MSI_SECRET``: ``GET ?api-version=2017-09-01&resource=…`` (``clientid=…``)
  with the header ``secret``.
A request without the right header gets 401, as on the platform. The token is an unsigned JWT
with the claims ``az`` reads (``tid``, ``oid``, ``appid``); every request is recorded.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

TENANT = "72f988bf-0000-4000-8000-000000000001"


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


@dataclass
class IdentityEndpoint:
    client_id: str
    header: str = field(default_factory=lambda: secrets.token_hex(16))
    requests: list[dict[str, Any]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/msi/token"

    def environ(self, *, msi: bool = False) -> dict[str, str]:
        """The variables the platform sets: Container Apps' pair, or the older MSI_* pair."""
        if msi:
            return {"MSI_ENDPOINT": self.url, "MSI_SECRET": self.header,
                    "AZURE_CLIENT_ID": self.client_id}
        return {"IDENTITY_ENDPOINT": self.url, "IDENTITY_HEADER": self.header,
                "AZURE_CLIENT_ID": self.client_id}

    def token(self, resource: str) -> str:
        now = int(time.time())
        claims = {"aud": resource, "iss": f"https://sts.windows.net/{TENANT}/", "iat": now,
                  "nbf": now, "exp": now + 3600, "tid": TENANT, "oid": self.client_id,
                  "appid": self.client_id, "sub": self.client_id, "idtyp": "app"}
        return f"{_b64({'alg': 'RS256', 'typ': 'JWT'})}.{_b64(claims)}.c2ln"

    def start(self) -> IdentityEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                msi = query.get("api-version") == "2017-09-01"
                given = self.headers.get("secret" if msi else "X-IDENTITY-HEADER")
                endpoint.requests.append({"query": query, "authorized": given == endpoint.header})
                client = query.get("clientid" if msi else "client_id")
                if given != endpoint.header:
                    return self._send(401, {"error": "invalid_request",
                                            "error_description": "missing identity header"})
                if client not in (None, endpoint.client_id) or "resource" not in query:
                    return self._send(400, {"error": "invalid_request",
                                            "error_description": "unknown identity"})
                resource = query["resource"]
                endpoint.issued.append(endpoint.token(resource))
                self._send(200, {"access_token": endpoint.issued[-1],
                                 "expires_on": str(int(time.time()) + 3600),
                                 "resource": resource, "token_type": "Bearer",
                                 "client_id": endpoint.client_id})

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
