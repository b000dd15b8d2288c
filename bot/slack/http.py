"""HTTP mode: a threaded server handing Slack's requests to the bolt app (replicas behind a
load balancer). ``GET /healthz`` answers 200 while the process runs (liveness); ``GET /readyz``
answers 200 when ``ready()`` says so and 503 otherwise (readiness: the database). The port is
public, so the reason goes to the log, not into the answer.
Without a bolt app it serves only those two (Socket Mode and Teams-only replicas).

bolt's own ``app.start()`` is a development server; this one is threaded so that one slow
request does not hold up the acks behind it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from slack_bolt import App
from slack_bolt.request import BoltRequest

log = logging.getLogger(__name__)
PATHS = ("/slack/events", "/slack/commands", "/slack/interactive")


def make_server(app: App | None, host: str, port: int,
                ready: Callable[[], tuple[bool, str]] | None = None) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug("%s " + fmt, self.address_string(), *args)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = urlparse(self.path).path
            if path == "/healthz":
                self._reply(200, b"ok", {"content-type": "text/plain"})
            elif path == "/readyz":
                ok = ready()[0] if ready is not None else True
                self._reply(200 if ok else 503, b"ready" if ok else b"not ready",
                            {"content-type": "text/plain"})
            else:
                self._reply(404, b"not found", {"content-type": "text/plain"})

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            if app is None or urlparse(self.path).path not in PATHS:
                self._reply(404, b"not found", {"content-type": "text/plain"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8") if length else ""
            headers: dict[str, str | Sequence[str]] = {
                k.lower(): [v] for k, v in self.headers.items()}
            response = app.dispatch(BoltRequest(body=body, headers=headers))
            flat = {k: v[0] for k, v in response.headers.items() if v}
            self._reply(response.status, response.body.encode("utf-8"), flat)

        def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
