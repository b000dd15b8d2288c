"""The HTTP edge (bot/edge.py, bot/slack/http.py) against what the internet sends it: each bad
request gets its 4xx quickly, reaches no handler, stores nothing and logs one line without the
body; a signed Slack request still reaches bolt. Raw sockets, so the requests can be as broken
as a client can make them."""

from __future__ import annotations

import hashlib
import hmac
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from slack_bolt import App
from slack_bolt.authorization import AuthorizeResult

from bot.edge import EdgeLimits
from bot.slack.http import make_server

SECRET = "edge-test-signing-secret"
CANARY = "CANARY-BODY-7f3a"


@pytest.fixture
def edge(caplog: pytest.LogCaptureFixture) -> Iterator[tuple[int, list[str]]]:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    app = App(signing_secret=SECRET, authorize=lambda **_kw: AuthorizeResult(
        enterprise_id=None, team_id="T1", bot_token="xoxb-edge-test", bot_user_id="UB",
        bot_id="B1"))

    @app.command("/ghost")
    def ghost(ack: Any, command: dict[str, Any]) -> None:
        seen.append(command["text"])
        ack("on it")

    limits = EdgeLimits(read_timeout_s=1.0, idle_timeout_s=1.5)
    server = make_server(app, "127.0.0.1", 0, lambda: (True, ""), signing_secret=SECRET,
                         limits=limits)
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()


def _signed(body: str | bytes, secret: str = SECRET, ts: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if ts is None else ts)
    raw = body if isinstance(body, bytes) else body.encode()
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + raw, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest.hexdigest()}"}


def _raw(port: int, data: bytes, *, slow: float = 0.0, wait: float = 10.0) -> tuple[str, float]:
    """Send ``data`` (byte by byte with ``slow`` seconds between when asked) and read the
    answer until the server closes; the status line (or '' if closed without one)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        try:
            if slow:  # the headers at once, then the body a byte at a time
                head, body = data.split(b"\r\n\r\n", 1)
                sock.sendall(head + b"\r\n\r\n")
                for byte in body:
                    sock.sendall(bytes([byte]))
                    time.sleep(slow)
            else:
                sock.sendall(data)
        except OSError:
            pass  # the server closed first: read what it said
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and b"Connection: close" not in answer:
                    break
        except OSError:
            pass
    return answer.split(b"\r\n", 1)[0].decode(errors="replace"), time.monotonic() - start


def _post(path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1",
             "Content-Type: application/x-www-form-urlencoded"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _edge_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ghost.edge"]


def test_a_signed_slash_command_reaches_bolt(edge: tuple[int, list[str]]) -> None:
    port, seen = edge
    body = f"command=%2Fghost&text=status+{CANARY}&user_id=U1&channel_id=C1&team_id=T1"
    status, _ = _raw(port, _post("/slack/commands", body.encode(),
                                 {**_signed(body), "Connection": "close"}))
    assert status == "HTTP/1.1 200 OK"
    assert seen == [f"status {CANARY}"]


@pytest.mark.parametrize(("name", "request_bytes", "expected"), [
    ("oversized by Content-Length", _post("/slack/commands", b"x" * 1024,
                                          {"Content-Length": str(150 << 20), **_signed("x")}),
     "413"),
    ("oversized, chunked", _post("/slack/commands", (b"100000\r\n" + b"x" * 0x100000 + b"\r\n")
                                 * 2 + b"0\r\n\r\n", {"Transfer-Encoding": "chunked",
                                                      **_signed("x")}), "413"),
    ("unsigned", _post("/slack/commands", f"text={CANARY}".encode(), {}), "401"),
    ("wrong signature", _post("/slack/commands", f"text={CANARY}".encode(),
                              _signed(f"text={CANARY}", secret="not-the-secret")), "401"),
    ("stale signature", _post("/slack/commands", f"text={CANARY}".encode(),
                              _signed(f"text={CANARY}", ts=int(time.time()) - 3600)), "401"),
    ("negative Content-Length", _post("/slack/commands", b"", {"Content-Length": "-5",
                                                               **_signed("")}), "400"),
    ("not HTTP", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64, "400"),
    ("signed, not UTF-8", _post("/slack/commands", b"text=\xff\xfe",
                                _signed(b"text=\xff\xfe")), "400"),
    ("signed, not JSON", _post("/slack/events", b"{" + CANARY.encode(),
                               {**_signed("{" + CANARY), "Content-Type": "application/json"}),
     "400"),
])
def test_bad_requests_get_their_4xx_and_one_line(
        edge: tuple[int, list[str]], caplog: pytest.LogCaptureFixture, name: str,
        request_bytes: bytes, expected: str) -> None:
    port, seen = edge
    caplog.clear()
    status, took = _raw(port, request_bytes)
    assert status.split(" ")[1:2] == [expected], (name, status)
    assert took < 5, name
    assert seen == []
    logged = "\n".join(r.getMessage() + str(r.exc_info or "") for r in caplog.records)
    assert CANARY not in logged and "xxxxxxxx" not in logged
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].name == "ghost.edge", [r.getMessage() for r in lines]
    assert not lines[0].exc_info


def test_a_slow_body_is_cut_off(edge: tuple[int, list[str]],
                                caplog: pytest.LogCaptureFixture) -> None:
    port, seen = edge
    body = f"text={CANARY}" + "x" * 200
    status, took = _raw(port, _post("/slack/commands", body.encode(), _signed(body)),
                        slow=0.02)
    assert status.split(" ")[1:2] == ["408"]
    assert took < 6 and seen == []
    assert ["not received within 1 s" in line for line in _edge_lines(caplog)] == [True]


def test_a_connection_that_never_finishes_its_headers_is_closed(
        edge: tuple[int, list[str]]) -> None:
    port, _ = edge
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(b"POST /slack/commands HTTP/1.1\r\nHost: x\r\n")
        closed = False
        try:
            for _ in range(100):
                sock.sendall(b"X-a: b\r\n")  # one more header line every 0.1 s, never the end
                time.sleep(0.1)
        except OSError:
            closed = True
        if not closed:
            closed = sock.recv(1024) == b""
    assert closed and time.monotonic() - start < 10


def test_probes(edge: tuple[int, list[str]]) -> None:
    port, _ = edge
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert _raw(port, get)[0] == "HTTP/1.1 200 OK"
    assert _raw(port, get.replace(b"healthz", b"readyz"))[0] == "HTTP/1.1 200 OK"
    assert _raw(port, get.replace(b"healthz", b"nothing"))[0].startswith("HTTP/1.1 404")
