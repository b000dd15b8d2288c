"""A small JSON HTTP(S) server on 127.0.0.1 for the Microsoft stand-ins, with a local CA.

``LocalCA`` makes a certificate authority and a certificate for 127.0.0.1 with
``cryptography``; a test puts ``ca.pem`` in ``REQUESTS_CA_BUNDLE`` so requests (MSAL, Ghost)
trust the stand-in exactly as they trust Microsoft's certificates in production.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


class LocalCA:
    """A throwaway CA and a server certificate for 127.0.0.1 / localhost, written to ``folder``."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now(dt.UTC)
        ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Ghost test CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(minutes=5))
              .not_valid_after(now + dt.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                           False), critical=True)
              .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
                .issuer_name(ca_name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_pem = folder / "ca.pem"
        self.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self._cert = folder / "server.pem"
        self._cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self._cert)
        return context


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = field(default=None)


#: ``route(request)`` -> (status, JSON body) or (status, JSON body, extra headers)
Route = Callable[[Request], tuple[Any, ...]]


class JsonServer(ThreadingHTTPServer):
    """Answers every request with ``route(request) -> (status, JSON body[, headers])``;
    records them."""

    daemon_threads = True

    def __init__(self, route: Route, ca: LocalCA | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.route = route
        self.requests: list[Request] = []
        self.scheme = "http"
        if ca is not None:
            self.socket = ca.server_context().wrap_socket(self.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}"

    def start(self) -> JsonServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: JsonServer
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                          body)
        if "json" in request.headers.get("content-type", ""):
            try:
                request.json = json.loads(body)
            except ValueError:
                pass
        self.server.requests.append(request)
        status, payload, *extra = self.server.route(request)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra[0] if extra else {}).items():  # e.g. a 429's Retry-After
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's naming

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass
