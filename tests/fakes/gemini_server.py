"""A local fake of the Gemini ``generateContent`` REST endpoint, for the real google-genai client.

The client reaches it through ``GOOGLE_GEMINI_BASE_URL``. It answers from a queue of scripted
responses, records every request body (so a test asserts on what was really sent: the tools, the
system instruction, the ``_meta`` of function responses, the history rebuilt after a resume) and
behaves like Gemini 3 where that catches bugs: a bad API key gets Google's 400, and a function
call it signed must come back with the same ``thoughtSignature`` or the request is rejected.
Anything the script did not foresee (an empty queue, an unknown path, a dropped signature) is
answered with a non-retryable 400 *and* recorded in ``failures``, which the ``fake_gemini``
fixture turns into a test failure.

Manual end-to-end runs::

    python -m tests.fakes.gemini_server --port 8765 --script script.json

serves a JSON list of scripted responses (see :func:`script_entry`; docs/testing.md).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

_PATH = re.compile(r"^/(?P<version>[^/]+)/models/(?P<model>[^/:]+):generateContent$")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}


# ── scripted responses ─────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class Scripted:
    """One scripted answer: an HTTP status and a JSON body, optionally after a delay."""

    status: int
    body: dict[str, Any]
    delay_s: float = 0.0
    #: add plausible ``usageMetadata`` when the body has none (raw bodies go out as written)
    fill_usage: bool = True


#: A reply computed from the request it answers (e.g. to echo a task id the loop just got).
Responder = Callable[["RecordedRequest"], Scripted]


def b64(data: bytes) -> str:
    """Standard base64, as Gemini writes bytes fields in JSON."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """Decode standard or URL-safe base64, padded or not (clients send either)."""
    text = text.strip()
    alt = b"-_" if ("-" in text or "_" in text) else None
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=alt, validate=True)


def call(name: str, args: Mapping[str, Any] | None = None, *, id: str | None = None,
         thought_signature: bytes | None = None) -> dict[str, Any]:
    """One ``functionCall`` part."""
    fc: dict[str, Any] = {"name": name, "args": dict(args or {})}
    if id is not None:
        fc["id"] = id
    part: dict[str, Any] = {"functionCall": fc}
    if thought_signature is not None:
        part["thoughtSignature"] = b64(thought_signature)
    return part


def _candidate(parts: list[dict[str, Any]], finish_reason: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": finish_reason, "index": 0}]}


def function_call_turn(*calls: dict[str, Any] | tuple[str, Mapping[str, Any]],
                       thought_signature: bytes | None = None, text: str | None = None,
                       finish_reason: str = "STOP") -> Scripted:
    """A model turn asking for one or more calls (``call(...)`` parts or ``(name, args)``).

    Like Gemini 3, ``thought_signature`` goes on the first function call; ``text`` comes first.
    """
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    fc_parts = [dict(c) if isinstance(c, dict) else call(c[0], c[1]) for c in calls]
    if not fc_parts:
        raise ValueError("function_call_turn needs at least one call")
    if thought_signature is not None and "thoughtSignature" not in fc_parts[0]:
        fc_parts[0]["thoughtSignature"] = b64(thought_signature)
    return Scripted(200, _candidate(parts + fc_parts, finish_reason))


def text_turn(text: str, *, thought_signature: bytes | None = None,
              finish_reason: str = "STOP") -> Scripted:
    """A model turn with text only (the loop offers Continue / Done)."""
    part: dict[str, Any] = {"text": text}
    if thought_signature is not None:
        part["thoughtSignature"] = b64(thought_signature)
    return Scripted(200, _candidate([part], finish_reason))


def error_response(code: int, message: str | None = None, *, status: str | None = None,
                   delay_s: float = 0.0) -> Scripted:
    """Google's error JSON: ``{"error": {"code", "message", "status"}}``."""
    name = status or _STATUS_NAMES.get(code, "UNKNOWN")
    body = {"error": {"code": code, "message": message or f"fake {name}", "status": name}}
    return Scripted(code, body, delay_s)


def raw_response(body: Mapping[str, Any], status: int = 200, *, delay_s: float = 0.0) -> Scripted:
    """Any JSON body, for shapes the helpers do not cover; sent without added usage counts."""
    return Scripted(status, dict(body), delay_s, fill_usage=False)


def script_entry(entry: Mapping[str, Any]) -> Scripted:
    """One entry of a JSON script file.

    ``{"calls": [{"name", "args", "id"?, "thought_signature"? (base64)}], "text"?,
    "thought_signature"?}``, ``{"text": ...}``, ``{"error": 503, "message"?, "status"?}`` or
    ``{"body": {...}, "status"?}``; any of them may add ``"delay_s"``.
    """
    known = {"calls", "text", "thought_signature", "error", "message", "status", "body",
             "delay_s", "finish_reason", "comment"}
    unknown = set(entry) - known
    if unknown:
        raise ValueError(f"unknown keys in script entry: {sorted(unknown)}")
    delay = float(entry.get("delay_s", 0.0))
    sig = entry.get("thought_signature")
    sig_bytes = unb64(sig) if isinstance(sig, str) else None
    finish = str(entry.get("finish_reason", "STOP"))
    if "error" in entry:
        return error_response(int(entry["error"]), entry.get("message"),
                              status=entry.get("status"), delay_s=delay)
    if "body" in entry:
        return raw_response(entry["body"], int(entry.get("status", 200)), delay_s=delay)
    if "calls" in entry:
        parts = [call(c["name"], c.get("args"), id=c.get("id"),
                      thought_signature=unb64(c["thought_signature"])
                      if c.get("thought_signature") else None)
                 for c in entry["calls"]]
        turn = function_call_turn(*parts, thought_signature=sig_bytes, text=entry.get("text"),
                                  finish_reason=finish)
    elif "text" in entry:
        turn = text_turn(str(entry["text"]), thought_signature=sig_bytes, finish_reason=finish)
    else:
        raise ValueError(f"script entry needs calls, text, error or body: {dict(entry)}")
    return Scripted(turn.status, turn.body, delay)


def load_script(path: str | Path) -> list[Scripted]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script is a JSON list of responses")
    return [script_entry(e) for e in data]


# ── recorded requests ──────────────────────────────────────────────────────────────────────────

@dataclass(frozen=True)
class RecordedRequest:
    """One request as it arrived, with helpers for what tests usually look at."""

    method: str
    path: str
    version: str
    model: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int

    @property
    def contents(self) -> list[dict[str, Any]]:
        return list(self.body.get("contents", []))

    @property
    def system_text(self) -> str:
        si = self.body.get("systemInstruction") or {}
        return "".join(p.get("text", "") for p in si.get("parts", []))

    @property
    def function_declarations(self) -> list[dict[str, Any]]:
        return [fd for tool in self.body.get("tools", [])
                for fd in tool.get("functionDeclarations", [])]

    @property
    def tool_names(self) -> list[str]:
        return [fd["name"] for fd in self.function_declarations]

    @property
    def model_turns(self) -> list[dict[str, Any]]:
        return [c for c in self.contents if c.get("role") == "model"]

    def function_responses(self, turn: int = -1) -> list[dict[str, Any]]:
        """The ``functionResponse`` objects of one content (default: the last one)."""
        contents = self.contents
        if not contents:
            return []
        return [p["functionResponse"] for p in contents[turn].get("parts", [])
                if "functionResponse" in p]


# ── the server ─────────────────────────────────────────────────────────────────────────────────

def _call_key(fc: Mapping[str, Any]) -> str:
    return json.dumps([fc.get("name"), fc.get("args") or {}], sort_keys=True)


@dataclass
class _State:
    queue: deque[Scripted | Responder] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    signed: dict[str, set[bytes]] = field(default_factory=dict)
    auto_sig_count: int = 0
    #: an outage in force: (monotonic end, HTTP status, message); see ``FakeGemini.outage``
    outage: tuple[float, int, str] | None = None
    #: requests answered with the outage's error (they consume no scripted response)
    outage_answers: int = 0


class FakeGemini:
    """A threaded HTTP server on 127.0.0.1 (random port) speaking ``generateContent``."""

    def __init__(self, responses: Iterable[Scripted] = (), *, api_key: str | None = "test-key",
                 check_signatures: bool = True, auto_signatures: bool = False,
                 record_dir: Path | None = None, port: int = 0, verbose: bool = False) -> None:
        self.api_key = api_key
        self.check_signatures = check_signatures
        self.auto_signatures = auto_signatures
        self.record_dir = record_dir
        self.verbose = verbose
        self._lock = threading.RLock()  # a Responder may switch an outage on (``outage``)
        self._state = _State(queue=deque(responses))
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # lifecycle
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeGemini:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="fake-gemini", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # script and records
    def enqueue(self, *responses: Scripted | Responder) -> None:
        with self._lock:
            self._state.queue.extend(responses)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._state.queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.requests)

    @property
    def last_request(self) -> RecordedRequest:
        reqs = self.requests
        if not reqs:
            raise AssertionError("FakeGemini received no request")
        return reqs[-1]

    @property
    def failures(self) -> list[str]:
        with self._lock:
            return list(self._state.failures)

    def clear_failures(self) -> None:
        """For a test that provokes a rejection on purpose."""
        with self._lock:
            self._state.failures.clear()

    def outage(self, seconds: float, status: int = 503,
               message: str = "The model is overloaded. Please try again later.") -> None:
        """A time-bounded outage: for the next ``seconds``, every ``generateContent`` is
        answered ``status`` (503 UNAVAILABLE, 429 RESOURCE_EXHAUSTED…) without consuming the
        script; afterwards the script goes on where it was. Answers given are counted in
        ``outage_answers``."""
        with self._lock:
            self._state.outage = (time.monotonic() + seconds, status, message)

    @property
    def outage_answers(self) -> int:
        with self._lock:
            return self._state.outage_answers

    def assert_drained(self) -> None:
        left = self.remaining
        assert left == 0, f"FakeGemini: {left} scripted response(s) were never requested"

    # request handling (called from server threads)
    def _answer(self, method: str, raw_path: str, headers: dict[str, str],
                raw_body: bytes) -> Scripted:
        url = urlsplit(raw_path)
        m = _PATH.match(url.path)
        try:
            body = json.loads(raw_body or b"{}")
        except ValueError:
            body = {"_unparsed": raw_body.decode("utf-8", "replace")}
        with self._lock:
            st = self._state
            number = len(st.requests) + 1
            st.requests.append(RecordedRequest(
                method, raw_path, m["version"] if m else "", m["model"] if m else "",
                headers, body, len(raw_body)))
            self._record_file(number, body)
            if method != "POST" or m is None:
                st.failures.append(f"request #{number}: unexpected {method} {url.path}")
                return error_response(404, f"FakeGemini: no such endpoint {method} {url.path}")
            key = headers.get("x-goog-api-key") or parse_qs(url.query).get("key", [""])[0]
            if self.api_key is not None and key != self.api_key:
                return _bad_key()
            if st.outage is not None and time.monotonic() < st.outage[0]:
                st.outage_answers += 1
                return error_response(st.outage[1], st.outage[2])
            problem = self._signature_problem(body) if self.check_signatures else None
            if problem:
                st.failures.append(f"request #{number}: {problem}")
                return error_response(400, problem)
            if not st.queue:
                msg = (f"FakeGemini: request #{number} arrived but no scripted response is "
                       "left (the script is shorter than the conversation)")
                st.failures.append(msg)
                return error_response(400, msg, status="FAILED_PRECONDITION")
            answer = st.queue.popleft()
            if callable(answer):
                answer = answer(st.requests[-1])
            body_out = json.loads(json.dumps(answer.body))
            self._sign_and_remember(body_out)
            if answer.fill_usage:
                _fill_usage(body_out, len(raw_body))
            return Scripted(answer.status, body_out, answer.delay_s)

    def _record_file(self, number: int, body: Any) -> None:
        if self.record_dir is not None:
            self.record_dir.mkdir(parents=True, exist_ok=True)
            out = self.record_dir / f"request-{number:03d}.json"
            out.write_text(json.dumps(body, indent=2), encoding="utf-8")

    def _sign_and_remember(self, body: dict[str, Any]) -> None:
        for cand in body.get("candidates", []):
            parts = (cand.get("content") or {}).get("parts", [])
            fcs = [p for p in parts if "functionCall" in p]
            if self.auto_signatures and fcs and "thoughtSignature" not in fcs[0]:
                self._state.auto_sig_count += 1
                # 0xfb 0xff 0xfe encodes to "+//+": standard and URL-safe base64 differ.
                sig = b"\xfb\xff\xfe" + f"fake-signature-{self._state.auto_sig_count}".encode()
                fcs[0]["thoughtSignature"] = b64(sig)
            for p in fcs:
                if "thoughtSignature" in p:
                    key = _call_key(p["functionCall"])
                    self._state.signed.setdefault(key, set()).add(unb64(p["thoughtSignature"]))

    def _signature_problem(self, body: Mapping[str, Any]) -> str | None:
        """Gemini 3's rule: a signed function call must come back with its signature intact."""
        for i, content in enumerate(body.get("contents", [])):
            if content.get("role") != "model":
                continue
            for j, part in enumerate(content.get("parts", [])):
                if "functionCall" not in part:
                    continue
                issued = self._state.signed.get(_call_key(part["functionCall"]))
                sent = part.get("thoughtSignature")
                name = part["functionCall"].get("name")
                if issued and sent is None:
                    return (f"Function call `{name}` in content {i}, part {j} is missing a "
                            "thought_signature")
                if sent is not None:
                    try:
                        # A signature this instance did not issue (e.g. before a restart of the
                        # fake) is accepted; one that differs from what it issued is not.
                        ok = not issued or unb64(sent) in issued
                    except (binascii.Error, ValueError):
                        ok = False
                    if not ok:
                        return f"Corrupted thought signature on `{name}` in content {i}"
        return None


def _bad_key() -> Scripted:
    body = {"error": {
        "code": 400, "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
    return Scripted(400, body)


def _fill_usage(body: dict[str, Any], request_size: int) -> None:
    """Plausible token counts (about 4 bytes a token) when the script gives none."""
    if "candidates" not in body or "usageMetadata" in body:
        return
    prompt = max(1, request_size // 4)
    out = max(1, len(json.dumps(body["candidates"])) // 4)
    body["usageMetadata"] = {"promptTokenCount": prompt, "candidatesTokenCount": out,
                             "totalTokenCount": prompt + out}


def _handler_for(fake: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "FakeGemini/1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = fake._answer(self.command, self.path, headers, raw)
            if answer.delay_s:
                time.sleep(answer.delay_s)
            payload = json.dumps(answer.body).encode("utf-8")
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_POST = _serve
        do_GET = _serve

        def log_message(self, format: str, *args: Any) -> None:
            if fake.verbose:
                sys.stderr.write("FakeGemini: " + (format % args) + "\n")

    return Handler


# ── command line ───────────────────────────────────────────────────────────────────────────────

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fakes.gemini_server",
                                 description="Serve scripted Gemini responses on 127.0.0.1.")
    ap.add_argument("--port", type=int, default=0, help="port (0: pick a free one)")
    ap.add_argument("--script", required=True, help="JSON list of scripted responses")
    ap.add_argument("--api-key", default="test-key", help="expected key ('' accepts any)")
    ap.add_argument("--record", type=Path, help="write each request body to DIR/request-NNN.json")
    ap.add_argument("--no-auto-signatures", action="store_true",
                    help="do not sign unsigned function calls (Gemini 3 signs them)")
    ap.add_argument("--no-signature-check", action="store_true",
                    help="accept histories whose thought signatures were dropped or changed")
    ap.add_argument("--verbose", action="store_true", help="log each request to stderr")
    ns = ap.parse_args(argv)
    fake = FakeGemini(load_script(ns.script), api_key=ns.api_key or None,
                      check_signatures=not ns.no_signature_check,
                      auto_signatures=not ns.no_auto_signatures, record_dir=ns.record,
                      port=ns.port, verbose=ns.verbose)
    print(f"FakeGemini listening on {fake.base_url} with {fake.remaining} scripted responses",
          flush=True)
    print(f"  export GOOGLE_GEMINI_BASE_URL={fake.base_url} GEMINI_API_KEY={ns.api_key}",
          flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # also when started in the background
        signal.signal(sig, lambda *_: stop.set())
    fake.start()
    try:
        while not stop.wait(0.2):
            pass
    finally:
        fake.stop()
    print(f"FakeGemini: served {len(fake.requests)} request(s), "
          f"{fake.remaining} scripted response(s) left", file=sys.stderr)
    for failure in fake.failures:
        print(f"FakeGemini FAILURE: {failure}", file=sys.stderr)
    return 1 if fake.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
