"""An independent, memoryless fake of the Gemini ``generateContent`` REST API.

Written from the public REST reference, not from ``tests/fakes/gemini_server.py``, the way an
outside grader would write one: camelCase JSON, no ``id`` on function calls, no
``thoughtSignature``, text and function calls mixed in one turn, several calls per turn. It keeps
no conversation state: a *policy* picks the answer from the request alone (typically from the
number of model turns in ``contents`` and the last ``functionResponse``), so a new instance can
take over after a restart. Only the documented ``/v1beta/models/{model}:generateContent`` is
served (other versions on request); anything else is a 404. Every request is logged (path
and body), in memory and optionally to a JSONL file that survives the restart.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Policy = Callable[[Mapping[str, Any]], list[dict[str, Any]]]


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def fcall(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def model_turns(body: Mapping[str, Any]) -> int:
    return sum(1 for c in body.get("contents") or [] if c.get("role") == "model")


def last_responses(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of the last user turn, as {name, response}."""
    contents = body.get("contents") or []
    if not contents or contents[-1].get("role") != "user":
        return []
    return [p["functionResponse"] for p in contents[-1].get("parts") or []
            if "functionResponse" in p]


def reply(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                          "totalTokenCount": 15},
        "modelVersion": "fake-grader",
    }


class GraderGemini:
    """``with GraderGemini(policy) as g:`` → ``g.url`` for ``GOOGLE_GEMINI_BASE_URL``."""

    def __init__(self, policy: Policy, log_path: Path | None = None,
                 versions: tuple[str, ...] = ("v1beta",)) -> None:
        self.policy = policy
        # only the documented path: POST /v1beta/models/{model}:generateContent
        route = re.compile(rf"/({'|'.join(map(re.escape, versions))})/models/[^/:]+"
                           r":generateContent")
        self.log_path = log_path
        self.requests: list[dict[str, Any]] = []
        self.problems: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                fake._log({"path": self.path, "body": body})
                if not route.fullmatch(self.path.split("?")[0]):
                    fake.problems.append(f"unexpected path {self.path}")
                    self._send(404, {"error": {"code": 404, "message": "not found",
                                               "status": "NOT_FOUND"}})
                    return
                try:
                    parts = fake.policy(body)
                except Exception as exc:  # noqa: BLE001 - reported to the test
                    fake.problems.append(f"policy failed: {exc!r}")
                    parts = [text(f"GRADER POLICY FAILED: {exc!r}")]
                try:
                    self._send(200, reply(parts))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was interrupted (Ctrl-C) while waiting for the answer

            def _send(self, code: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _log(self, entry: dict[str, Any]) -> None:
        self.requests.append(entry)
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def __enter__(self) -> GraderGemini:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
