"""The drill's Slack: the tests' mock Web API with fault switches, and the Slack *users* —
signed slash commands and button clicks POSTed to the replicas, with their ack latency.

Fault switches: ``slack_429`` answers every Web API call 429 with ``Retry-After`` (as Slack's
rate limiter does); ``slack_500`` answers 500 ``internal_error``. Uploads to the file URL are
not faulted (that is a different host in Slack).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlencode

from benchmarks.chaos_kit.faults import Faults, quiet_errors
from benchmarks.chaos_kit.users import Ack, Users
from tests.fakes.slack_api import Call, FakeSlack

SECRET = "chaos-signing-secret"
REQUESTER, APPROVER = "UREQ", "UAPPROVER"
_SID = re.compile(r"`([0-9a-zA-Z_-]{6,})`")


class ChaosSlack(FakeSlack):
    """FakeSlack whose answers obey the drill's fault windows."""

    def __init__(self, faults: Faults, channels: list[str], retry_after_s: int = 1) -> None:
        super().__init__(members={c: [REQUESTER, APPROVER] for c in channels})
        quiet_errors(self._server)
        self.faults = faults
        self.retry_after_s = retry_after_s
        self.faulted: dict[str, int] = {"429": 0, "500": 0}
        #: every message as first posted (chat.update later replaces a card's buttons)
        self.posted: list[dict[str, Any]] = []
        self._cards: list[dict[str, Any]] = []
        self._scanned = 0

    def _ok(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = super()._ok(method, args)
        except KeyError as exc:  # a body cut short by a kill -9 of its sender
            return {"ok": False, "error": "invalid_arguments", "missing": str(exc)}
        if method == "chat.postMessage" and answer.get("ok"):
            self.posted.append({**args, "ts": answer["ts"]})
        return answer

    def _answer(self, method: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.faults.active("slack_429"):
            with self._lock:
                self._record(Call(method, {**args, "_fault": 429}))
                self.faulted["429"] += 1
            return 429, {"ok": False, "error": "ratelimited"}
        if self.faults.active("slack_500"):
            with self._lock:
                self._record(Call(method, {**args, "_fault": 500}))
                self.faulted["500"] += 1
            return 500, {"ok": False, "error": "internal_error"}
        return super()._answer(method, args)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def _send(self, status: int, body: bytes, ctype: str,
                      headers: dict[str, str] | None = None) -> None:
                if status == 429:
                    headers = {"Retry-After": str(fake.retry_after_s)}
                super()._send(status, body, ctype, headers)

        return Handler

    # ------------------------------------------------------------------ reading
    def posts(self) -> list[dict[str, Any]]:
        """Every message that reached Slack, as first posted, in posting order."""
        with self._lock:
            return list(self.posted)

    def cards(self) -> list[dict[str, Any]]:
        """Posted messages with an Approve button (its approval id in ``_approval``), in
        posting order (so a reader can skip the ones it has seen)."""
        with self._lock:
            fresh = self.posted[self._scanned:]
            self._scanned = len(self.posted)
        for m in fresh:
            for block in m.get("blocks") or []:
                if block.get("type") != "actions":
                    continue
                for el in block.get("elements") or []:
                    if el.get("action_id") == "ghost_approve":
                        self._cards.append({**m, "_approval": str(el.get("value"))})
        return list(self._cards)


class SlackUsers(Users):
    """Signs and POSTs what Slack would send, to the replicas in turn; records acks."""

    def __init__(self, bases: list[str], api_url: str) -> None:
        super().__init__(bases)
        self.api_url = api_url

    def _post(self, body: str, kind: str) -> tuple[int, str]:
        ts = str(int(time.time()))
        digest = hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(),
                          hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}
        start = self.next_replica()
        for attempt in range(len(self.bases) * 60):  # ~30 s: a replica restarting
            replica = (start + attempt) % len(self.bases)
            request = urllib.request.Request(self.bases[replica] + "/slack/events",
                                             data=body.encode(), headers=headers)
            began = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    text = reply.read().decode()
                    status = reply.status
            except urllib.error.HTTPError as exc:
                text, status = exc.read().decode(errors="replace"), exc.code
            except (ConnectionError, urllib.error.URLError, TimeoutError) as exc:
                self.refuse(exc)
                continue
            self.record(Ack(began, (time.monotonic() - began) * 1000, kind, status, replica))
            return status, text
        self.errors.append(f"{kind}: no replica answered")
        return 0, ""

    def investigate(self, n: int, channel: str, text: str) -> tuple[int, str | None]:
        """``/ghost investigate``: (HTTP status, the session id its ack names)."""
        status, body = self.slash(channel, text)
        return status, session_in(body) if status == 200 else None

    def click_card(self, card: dict[str, Any]) -> tuple[int, str]:
        return self.click(str(card["channel"]), card["_approval"], str(card["ts"]))

    def slash(self, channel: str, text: str) -> tuple[int, str]:
        return self._post(urlencode({
            "token": "x", "team_id": "T1", "channel_id": channel, "user_id": REQUESTER,
            "command": "/ghost", "text": text, "trigger_id": "trig.1",
            "response_url": self.api_url.replace("/api/", "/respond/1")}), "slash")

    def click(self, channel: str, approval_id: str, message_ts: str,
              user: str = APPROVER, action: str = "ghost_approve") -> tuple[int, str]:
        payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T1"},
                   "channel": {"id": channel}, "trigger_id": "trig.approve",
                   "container": {"type": "message", "message_ts": message_ts,
                                 "channel_id": channel},
                   "message": {"ts": message_ts},
                   "actions": [{"action_id": action, "value": approval_id, "block_id": "b",
                                "type": "button"}]}
        return self._post(urlencode({"payload": json.dumps(payload)}), "click")


def session_in(text: str) -> str | None:
    """The session id an ack names (`` `sid` ``), if any."""
    m = _SID.search(text)
    return m.group(1) if m else None


class SlackChat:
    """The drill's Slack: the mock Web API (``start``), Ghost's settings for it (``env``), the
    users (``users``), and the accounting of what reached the threads."""

    name = "slack"
    fault_names = {"slack429": "slack_429", "slack500": "slack_500"}

    def __init__(self, faults: Faults, channels: list[str]) -> None:
        self.fake = ChaosSlack(faults, channels)

    def start(self) -> None:
        self.fake.start()

    def stop(self) -> None:
        self.fake.stop()

    def env(self) -> dict[str, str]:
        return {"SLACK_BOT_TOKEN": "xoxb-chaos", "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": self.fake.base_url}

    def replica_env(self, port: int) -> dict[str, str]:
        return {}

    def users(self, bases: list[str]) -> SlackUsers:
        return SlackUsers(bases, self.fake.base_url)

    def cards(self) -> list[dict[str, Any]]:
        return self.fake.cards()

    def uploads(self) -> int:
        return len([c for c in self.fake.called("files.completeUploadExternal")
                    if "_fault" not in c.args])

    def settled(self, store: Any, completed: list[str]) -> bool:
        """Each completed investigation's RCA reached Slack."""
        return self.uploads() >= len(completed)

    def faulted_line(self) -> str:
        return f"Slack answered {self.fake.faulted['429']}×429, {self.fake.faulted['500']}×500"

    def keep(self, tmp: Any) -> None:
        (tmp / "slack_calls.json").write_text(json.dumps(
            [{"method": c.method, "at": c.at, "args": c.args} for c in self.fake.calls],
            default=str, indent=1))

    def root_times(self, started: list[Any], acks: dict[int, float]) -> list[float]:
        """Seconds from each slash command's ack to its thread root reaching Slack."""
        posts = self.fake.called("chat.postMessage")
        out: list[float] = []
        for inv in started:
            acked = acks.get(inv.n)
            roots = [c.at for c in posts if "_fault" not in c.args
                     and not c.args.get("thread_ts") and f"`{inv.session_id}`" in json.dumps(
                         c.args)]
            if acked is not None and roots:
                out.append(roots[0] - acked)
        return out

    def thread_posts(self, started: list[Any], store: Any, kills: int = 0) -> tuple[Any, Any]:
        from benchmarks.chaos_kit.account import thread_posts

        return thread_posts(started, store, self.fake)

    def rca_times(self, started: list[Any]) -> list[float]:
        from benchmarks.chaos_kit.account import rca_times

        return rca_times(started, self.fake)
