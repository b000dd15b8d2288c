"""A local mock of the Slack Web API on 127.0.0.1, for the real slack_sdk ``WebClient``.

It answers the methods Ghost uses, records every call (method, arguments, time), serves the
upload URL that ``files_upload_v2`` gets from ``files.getUploadURLExternal`` (pointing back at
itself), keeps posted messages so a test can read a thread, and can answer 429 with Retry-After.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
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
            self.calls.append(Call(method, args))
            if self.rate_limited.get(method):
                self.rate_limited[method] -= 1
                return 429, {"ok": False, "error": "ratelimited"}
            if method in self.fail:
                return 200, {"ok": False, "error": self.fail[method]}
            return 200, self._ok(method, args)

    def _ok(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "user_id": "UGHOST", "bot_id": "BGHOST", "team_id": "T1",
                    "user": "ghost"}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            channel = str(args["channel"])
            self.messages[(channel, ts)] = {**args, "ts": ts}
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
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
                    fake.calls.append(Call("upload", {"file_id": file_id, "bytes": len(raw)}))
                    self._send(200, b"OK - " + str(len(raw)).encode(), "text/plain")
                    return
                if path.startswith("/respond/"):
                    fake.calls.append(Call("response_url", json.loads(raw or b"{}")))
                    self._send(200, b"ok", "text/plain")
                    return
                method = path.rsplit("/", 1)[-1]
                ctype = self.headers.get("Content-Type", "")
                if "json" in ctype:
                    args = json.loads(raw or b"{}")
                else:
                    args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                args |= {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                for key in ("blocks", "view"):
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
