"""A local mock of the Slack Web API on 127.0.0.1, for the real slack_sdk ``WebClient``.

It answers the methods Ghost uses, records every call (method, arguments, time), serves the
upload URL that ``files_upload_v2`` gets from ``files.getUploadURLExternal`` (pointing back at
itself), keeps posted messages (with their ``metadata``) so a test can read a thread,
answers ``conversations.replies`` and ``.history`` (metadata only with
``include_all_metadata``), and can answer 429 with Retry-After or HTTP 500 (``server_error``:
before doing anything; ``answer_lost``: after doing it, as when Slack's answer is lost on the
way back).
``apps.connections.open`` answers with ``socket_url`` (a ``FakeSocketMode`` on 127.0.0.1), so
Socket Mode runs for real: slack_sdk's built-in client connects to it and acks over it.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class FakeSlack:
    """Start with ``start()``; ``base_url`` goes to ``SLACK_API_URL``."""

    def __init__(self, *, members: dict[str, list[str]] | None = None,
                 groups: dict[str, list[str]] | None = None) -> None:
        self.calls: list[Call] = []
        self.members = members or {}
        self.groups = groups or {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.uploads: dict[str, bytes] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.rate_limited: dict[str, int] = {}
        self.fail: dict[str, str] = {}
        #: methods answering HTTP 500 without doing anything
        self.server_error: set[str] = set()
        #: methods that do what they are asked, then answer HTTP 500
        self.answer_lost: set[str] = set()
        #: what ``apps.connections.open`` hands out (a ``FakeSocketMode.url``)
        self.socket_url: str | None = None
        self._changed = threading.Condition()
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ reading
    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, timeout: float = 5.0,
                 match: Callable[[Call], bool] = lambda _c: True) -> Call:
        """The first ``method`` call that ``match``es, waiting for one made by another thread
        (a listener that runs after its ack) instead of sleeping."""
        def found() -> Call | None:
            return next((c for c in self.called(method) if match(c)), None)
        with self._changed:
            self._changed.wait_for(lambda: found() is not None, timeout)
        call = found()
        assert call is not None, f"no matching {method} within {timeout}s: {self.calls}"
        return call

    def _record(self, call: Call) -> None:
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """Messages posted in a thread (replies), in order, as last updated."""
        return [m for (ch, _ts), m in sorted(self.messages.items(), key=lambda kv: float(
            kv[0][1])) if ch == channel and m.get("thread_ts") == thread_ts]

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        return self.messages[(channel, ts)]

    def ephemerals(self, user: str | None = None) -> list[str]:
        return [str(c.args.get("text")) for c in self.called("chat.postEphemeral")
                if user is None or c.args.get("user") == user]

    # ------------------------------------------------------------------ answering
    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self._record(Call(method, args))
            if self.rate_limited.get(method):
                self.rate_limited[method] -= 1
                return 429, {"ok": False, "error": "ratelimited"}
            if method in self.fail:
                return 200, {"ok": False, "error": self.fail[method]}
            if method in self.server_error:
                return 500, {"ok": False, "error": "internal_error"}
            body = self._ok(method, args)
            if method in self.answer_lost:
                return 500, {"ok": False, "error": "internal_error"}
            return 200, body

    def _ok(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "user_id": "UGHOST", "bot_id": "BGHOST", "team_id": "T1",
                    "user": "ghost"}
        if method == "apps.connections.open":
            if not self.socket_url:
                return {"ok": False, "error": "not_allowed_token_type"}
            return {"ok": True, "url": self.socket_url}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            channel = str(args["channel"])
            self.messages[(channel, ts)] = {**args, "ts": ts}
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "conversations.replies":
            return self._replies(args)
        if method == "conversations.history":
            return self._history(args)
        if method == "chat.update":
            key = (str(args["channel"]), str(args["ts"]))
            if key not in self.messages:
                return {"ok": False, "error": "message_not_found"}
            self.messages[key] = {**self.messages[key], **args}
            return {"ok": True, "channel": key[0], "ts": key[1]}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1700000001.{next(self._ts):06d}"}
        if method == "views.open":
            return {"ok": True, "view": {"id": f"V{next(self._ts)}", **(args.get("view") or {})}}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):05d}"
            self.files[file_id] = {"name": args.get("filename"), "length": args.get("length")}
            root = self.base_url.rsplit("/api/", 1)[0]
            return {"ok": True, "file_id": file_id, "upload_url": f"{root}/upload/{file_id}"}
        if method == "files.completeUploadExternal":
            files = args.get("files")
            files = json.loads(files) if isinstance(files, str) else files or []
            for f in files:
                self.files.setdefault(f["id"], {}).update(
                    title=f.get("title"), channel=args.get("channel_id"),
                    thread_ts=args.get("thread_ts"), comment=args.get("initial_comment"))
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")}
                                          for f in files]}
        if method == "conversations.members":
            return {"ok": True, "members": self.members.get(str(args.get("channel")), []),
                    "response_metadata": {"next_cursor": ""}}
        if method == "usergroups.users.list":
            return {"ok": True, "users": self.groups.get(str(args.get("usergroup")), [])}
        if method == "users.info":
            user = str(args.get("user"))
            return {"ok": True, "user": {"id": user, "name": user.lower(), "is_bot": False}}
        return {"ok": False, "error": "unknown_method"}

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """The parent and its replies, oldest first, ``limit`` a page (the cursor is an
        offset); ``metadata`` only with ``include_all_metadata``, as Slack does."""
        channel, parent = str(args.get("channel")), str(args.get("ts"))
        if (channel, parent) not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        return self._page([self.messages[(channel, parent)], *self.thread(channel, parent)],
                          args)

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        """The channel's top-level messages, newest first, paged like ``_replies``."""
        channel = str(args.get("channel"))
        found = [m for (ch, _ts), m in sorted(self.messages.items(), key=lambda kv: -float(
            kv[0][1])) if ch == channel and not m.get("thread_ts")]
        return self._page(found, args)

    def _page(self, found: list[dict[str, Any]], args: dict[str, Any]) -> dict[str, Any]:
        with_meta = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        start, limit = int(args.get("cursor") or 0), int(args.get("limit") or 1000)
        page = [{k: v for k, v in m.items() if with_meta or k != "metadata"}
                for m in found[start:start + limit]]
        more = start + limit < len(found)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_a: Any) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.do_POST()

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = urlparse(self.path).path
                if path.startswith("/upload/"):
                    file_id = path.rsplit("/", 1)[1]
                    fake.uploads[file_id] = raw
                    fake._record(Call("upload", {"file_id": file_id, "bytes": len(raw)}))
                    self._send(200, b"OK - " + str(len(raw)).encode(), "text/plain")
                    return
                if path.startswith("/respond/"):
                    fake._record(Call("response_url", json.loads(raw or b"{}")))
                    self._send(200, b"ok", "text/plain")
                    return
                method = path.rsplit("/", 1)[-1]
                ctype = self.headers.get("Content-Type", "")
                if "json" in ctype:
                    args = json.loads(raw or b"{}")
                else:
                    args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                args |= {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                for key in ("blocks", "view", "metadata"):
                    if isinstance(args.get(key), str):
                        args[key] = json.loads(args[key])
                status, body = fake._answer(method, args)
                headers = {"Retry-After": "0"} if status == 429 else {}
                self._send(status, json.dumps(body).encode(), "application/json", headers)

            def _send(self, status: int, body: bytes, ctype: str,
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        return Handler


class FakeSocketMode:
    """Slack's Socket Mode end on 127.0.0.1: accepts the app's WebSocket, lets the test push
    envelopes the way Slack does (``hello``, then ``slash_commands`` …) and records what the app
    sends back (acks: ``{"envelope_id": …, "payload": …}``).

    The server side uses ``websockets`` (already installed, for google-genai); the app side is
    slack_sdk's built-in client, which needs no websocket library.
    """

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._connection: Any = None
        self._changed = threading.Condition()
        self._server = serve(self._session, "127.0.0.1", 0, ping_interval=None)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self._server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket=test-ticket&app_id=A0GHOST"

    def start(self) -> FakeSocketMode:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)

    def _session(self, connection: Any) -> None:
        """One app connection: remember it, then record every text frame it sends."""
        with self._changed:
            self._connection = connection
            self.paths.append(str(connection.request.path))
            self._changed.notify_all()
        try:
            for raw in connection:
                if isinstance(raw, str) and raw.startswith("{"):
                    with self._changed:
                        self.received.append(json.loads(raw))
                        self._changed.notify_all()
        except Exception:  # noqa: BLE001 - the app closing its socket ends the session
            return

    def drop(self) -> None:
        """Close the app's socket from Slack's side. slack_sdk's ``close()`` otherwise waits
        for its reader's receive timeout (about 3 s) before it can shut the socket."""
        if self._connection is not None:
            self._connection.close()

    def wait_connected(self, timeout: float = 10.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self._connection is not None, timeout), \
                "the app never opened the Socket Mode connection"

    def send(self, message: dict[str, Any]) -> None:
        self.wait_connected()
        self._connection.send(json.dumps(message))

    def hello(self) -> None:
        self.send({"type": "hello", "num_connections": 1,
                   "debug_info": {"host": "applink-test", "approximate_connection_time": 18060},
                   "connection_info": {"app_id": "A0GHOST"}})

    def slash(self, envelope_id: str, payload: dict[str, Any]) -> None:
        """A slash command as Slack sends it over the socket."""
        self.send({"envelope_id": envelope_id, "type": "slash_commands",
                   "accepts_response_payload": True, "payload": payload})

    def ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any]:
        """The app's acknowledgement of ``envelope_id``, waiting for it."""
        def found() -> dict[str, Any] | None:
            return next((m for m in self.received if m.get("envelope_id") == envelope_id),
                        None)
        with self._changed:
            self._changed.wait_for(lambda: found() is not None, timeout)
            ack = found()
        assert ack is not None, f"no ack for {envelope_id} within {timeout}s: {self.received}"
        return ack
