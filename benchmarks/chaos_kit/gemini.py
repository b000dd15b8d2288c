"""The drill's Gemini: a ``generateContent`` server on 127.0.0.1 that answers every
investigation from one script, consistently, whichever process asks and however often.

The script is the lab scenario's replay (service-down: SAFE az reads, a packet capture,
``cat`` of its summary, the RCA) with two RISKY in-VM probes inserted, each tagged with the
investigation's number (``echo chaos-07-ss``) so the side-effect log says whose command ran.
Turn *k* answers the *k*-th model call, counted from the model turns in the request, and the
placeholders are filled from the request's history with the lab's own replay code — so a
request re-sent after a crash or by another worker gets the same answer.

A capture that came back without a task id (the orchestrator failed) is asked for again, as
a model would. Like Gemini, a history where a model turn's function calls are not all answered
by the next user turn is rejected with 400 (and counted: issue #23's "broken history after a
crash").
Fault switches: ``gemini_503`` answers 503 UNAVAILABLE; ``gemini_hang`` holds the request for
``hang_s`` and then drops the connection without an answer (a transport error the client
sees as it would a timeout; google-genai's own 120 s timeout is too long for the drill).
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit.faults import Faults, quiet_errors

SCENARIO = "service-down"
_TAG = re.compile(r"\[chaos-(\d+)\]")
_REPLAY = Path(__file__).resolve().parents[2] / "lab" / "scenarios" / f"{SCENARIO}.replay.json"
#: the replay's turn before which the RISKY probes go (the capture), and the audit index the
#: replay's later citations shift by (two more run_shell_cmd results before them)
_INSERT_AT = 3


def risky_commands(n: int) -> list[str]:
    """The two RISKY commands of investigation ``n``, as the model asks for them: in-VM probes
    a second engineer approves, told apart by their timeout (100 + n seconds)."""
    tag = 100 + n
    return [
        "az vm run-command invoke -g rg-prod-app -n web-vm-01 --command-id RunShellScript "
        f"--scripts \"nc -zv -w {tag} 10.1.3.4 8080\"",
        "az vm run-command invoke -g rg-prod-app -n web-vm-01 --command-id RunShellScript "
        f"--scripts \"curl -sS -m {tag} http://10.1.3.4:8080/\"",
    ]


def risky_marker(n: int, which: int) -> str:
    """What the lab runner's argv of RISKY command ``which`` of investigation ``n`` contains."""
    return [f"nc -zv -w {100 + n} ", f"curl -sS -m {100 + n} "][which]


def script_for(n: int, cleanup: bool = True) -> list[dict[str, Any]]:
    """Investigation ``n``'s model turns (placeholders still in); without ``cleanup`` the
    replay's ``cleanup_task`` turn (three more approvals: capture, blob, local file) is left
    out."""
    # the main line only: every approval of the drill is granted, so the replay's branches for
    # a denied or edited step (its expects/on_denied/on_changed) never play here
    turns: list[dict[str, Any]] = [{"parts": t["parts"]} for t in
                                   json.loads(_REPLAY.read_text(encoding="utf-8"))]
    if not cleanup:  # the cleanup_task calls go, and a turn that only cleaned up
        kept_turns = []
        for turn in turns:
            parts = [p for p in turn["parts"]
                     if (p.get("functionCall") or {}).get("name") != "cleanup_task"]
            if any("functionCall" in p for p in parts):
                kept_turns.append({"parts": parts})
        turns = kept_turns
    first, second = risky_commands(n)
    inserted = [
        {"parts": [{"text": "Checking the API port from web-vm-01 itself."},
                   {"functionCall": {"name": "run_shell_cmd", "args": {
                       "command": first,
                       "reasoning": "Endpoint: does api-vm-01 accept TCP 8080 from web-vm-01 "
                                    "(tests H1)."}}}]},
        {"parts": [{"text": "Asking the API over HTTP from web-vm-01."},
                   {"functionCall": {"name": "run_shell_cmd", "args": {
                       "command": second,
                       "reasoning": "Endpoint: what web-vm-01 gets on 10.1.3.4:8080 "
                                    "(tests H1)."}}}]},
    ]
    later: list[dict[str, Any]] = json.loads(
        json.dumps(turns[_INSERT_AT:]).replace("{{audit:3}}", "{{audit:5}}"))
    return turns[:_INSERT_AT] + inserted + later


def _task_ids(response: Any) -> list[str]:
    if not isinstance(response, dict):
        return []
    tasks: list[Any] = response["tasks"] if isinstance(response.get("tasks"), list) else []
    return [str(t["task_id"]) for t in [response, *tasks]
            if isinstance(t, dict) and t.get("task_id")]


def broken_history(contents: list[dict[str, Any]]) -> str | None:
    """Why Gemini would reject this history (a call without its response), or None."""
    for i, content in enumerate(contents):
        if content.get("role") != "model":
            continue
        calls = [p["functionCall"].get("name") for p in content.get("parts") or []
                 if "functionCall" in p]
        if not calls:
            continue
        nxt = contents[i + 1] if i + 1 < len(contents) else None
        answered = [p["functionResponse"].get("name") for p in (nxt or {}).get("parts") or []
                    if "functionResponse" in p] if nxt and nxt.get("role") == "user" else []
        if sorted(answered) != sorted(calls):
            return (f"content {i}: function calls {calls} answered by {answered} (Gemini: "
                    "'function response parts must equal function call parts')")
    return None


class ChaosGemini:
    """Start with ``start()``; point ``GOOGLE_GEMINI_BASE_URL`` at ``base_url``."""

    def __init__(self, faults: Faults, *, api_key: str = "chaos-key", hang_s: float = 8.0,
                 delay_s: float = 0.05, cleanup: bool = True) -> None:
        self.cleanup = cleanup
        self.faults = faults
        self.api_key = api_key
        self.hang_s = hang_s
        self.delay_s = delay_s
        self.scripts: dict[int, list[dict[str, Any]]] = {}
        self.served: Counter[tuple[int, int]] = Counter()
        self.faulted: Counter[str] = Counter()
        self.rejected: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        quiet_errors(self._server)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,),
                                        daemon=True, name="chaos-gemini")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ChaosGemini:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) for one ``generateContent`` request."""
        from lab.replay import ReplayContext, substitute

        contents: list[dict[str, Any]] = list(body.get("contents") or [])
        tag = _TAG.search(json.dumps(contents[:1]))
        if tag is None:
            return self._reject("no [chaos-NN] tag in the first user turn")
        n = int(tag.group(1))
        problem = broken_history(contents)
        if problem:
            return self._reject(f"chaos-{n:02d}: {problem}")
        with self._lock:
            script = self.scripts.setdefault(n, script_for(n, self.cleanup))
        # a capture the orchestrator could not create (no task id came back) is asked for
        # again, as a model would: its failed attempts do not advance the script
        failed = sum(1 for c in contents for p in c.get("parts") or []
                     if (p.get("functionResponse") or {}).get("name") == "capture_traffic"
                     and not _task_ids(p["functionResponse"].get("response")))
        index = sum(1 for c in contents if c.get("role") == "model") - failed
        if index >= len(script):
            return self._reject(f"chaos-{n:02d}: model call {index + 1} but the script has "
                                f"{len(script)} turns")
        try:
            content = substitute(copy.deepcopy(script[index]), ReplayContext.of(contents))
        except Exception as exc:  # noqa: BLE001 - a misfit is the drill's finding, not a crash
            return self._reject(f"chaos-{n:02d} turn {index + 1}: {exc}")
        content["role"] = "model"
        with self._lock:
            self.served[(n, index)] += 1
        size = len(json.dumps(contents)) // 4
        return 200, {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
                     "usageMetadata": {"promptTokenCount": size, "candidatesTokenCount": 50,
                                       "totalTokenCount": size + 50}}

    def _reject(self, why: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.rejected.append(why)
        return 400, {"error": {"code": 400, "message": why, "status": "INVALID_ARGUMENT"}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_a: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if fake.faults.active("gemini_hang"):
                    fake.faulted["hang"] += 1
                    time.sleep(fake.hang_s)
                    self.close_connection = True
                    return  # no answer at all: the client's read fails
                if fake.faults.active("gemini_503"):
                    fake.faulted["503"] += 1
                    self._send(503, {"error": {"code": 503, "message": "The model is "
                                               "overloaded. Please try again later.",
                                               "status": "UNAVAILABLE"}})
                    return
                key = self.headers.get("x-goog-api-key", "")
                if key != fake.api_key:
                    self._send(400, {"error": {"code": 400, "message": "API key not valid.",
                                               "status": "INVALID_ARGUMENT"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                status, answer = fake.answer(body)
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                self._send(status, answer)

            def _send(self, status: int, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; charset=UTF-8")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
