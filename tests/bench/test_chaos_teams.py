"""The reliability drill drives Teams (`benchmarks/chaos.py --platform teams`).

The connector stand-in's fault switches answer as Teams does, the accounting catches a second
status card, a card never posted and an RCA attached twice, and a short drill (one `ghost serve`
behind the Bot Framework connector stand-in, two investigations started at once, a kill -9 and
the connector's 429 and 503 windows) meets every target.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit.account import Started
from benchmarks.chaos_kit.faults import Faults
from benchmarks.chaos_kit.teams import TeamsChat, conversation_of

ROOT = Path(__file__).resolve().parents[2]


def _post(chat: TeamsChat, conversation: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{chat.connector.url}v3/conversations/{conversation}/activities",
        data=json.dumps({**body, "conversation": {"id": conversation}}).encode(),
        headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def test_the_connector_answers_429_with_retry_after_and_503_while_a_window_is_open() -> None:
    faults = Faults()
    chat = TeamsChat(faults, ["19:c@thread.tacv2"])
    chat.start()
    try:
        conv = conversation_of("19:c@thread.tacv2", 1)
        faults.open("teams_429", 60)
        status, headers = _post(chat, conv, {"type": "message", "text": "hi"})
        assert status == 429 and headers["Retry-After"] == "1"
        faults.windows.clear()
        faults.open("teams_500", 60)
        assert _post(chat, conv, {"type": "message", "text": "hi"})[0] == 503
        faults.windows.clear()
        status, body = _post(chat, conv, {"type": "message", "text": "hi"})
        assert status == 201 and chat.connector.faulted == {"429": 1, "500": 1}
        assert [a["id"] for a in chat.connector.first_posted()] == [body["id"]]
    finally:
        chat.stop()


@dataclass
class _Approval:
    approval_id: str
    status: str = "executed"


class _Store:
    def __init__(self, approvals: list[_Approval]) -> None:
        self.rows = approvals

    def approvals(self, _sid: str) -> list[_Approval]:
        return self.rows

    def get_investigation(self, _sid: str) -> Any:
        return type("Inv", (), {"status": "completed"})()


def _card(approval_id: str) -> dict[str, Any]:
    return {"type": "message", "attachments": [{
        "contentType": "application/vnd.microsoft.card.adaptive",
        "content": {"body": [{"type": "TextBlock", "text": "**⚠️ Approval needed**"}],
                    "actions": [{"type": "Action.Execute", "verb": "approve",
                                 "data": {"approval_id": approval_id}}]}}]}


def test_the_accounting_catches_a_second_status_card_a_missing_card_and_a_second_rca() -> None:
    chat = TeamsChat(Faults(), ["19:c@thread.tacv2"])
    chat.start()
    try:
        conv = conversation_of("19:c@thread.tacv2", 4)
        status = {"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {"body": [{"type": "TextBlock", "text": "**Ghost investigation** s4"}]}}]}
        _post(chat, conv, status)
        _post(chat, conv, _card("a1"))
        rca = {"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.teams.card.file.info",
            "name": "lab-ghost_rca_s4.md"}]}
        _post(chat, conv, rca)
        chat.graph.files["lab-ghost_rca_s4.md"] = b"# RCA"
        started = [Started(4, "19:c@thread.tacv2", "s4", 0.0)]
        posts, rcas = chat.thread_posts(started, _Store([_Approval("a1")]))
        assert posts.ok and rcas.ok, posts.details
        assert [c["_approval"] for c in chat.cards()] == ["a1"]

        posts, _ = chat.thread_posts(started, _Store([_Approval("a1"), _Approval("a2")]))
        assert not posts.ok and any("no card for approval a2" in d for d in posts.details)
        _post(chat, conv, status)
        _post(chat, conv, rca)
        posts, rcas = chat.thread_posts(started, _Store([_Approval("a1")]))
        assert not rcas.ok and not posts.ok
        assert any("2 status cards" in d for d in posts.details)
        assert any("attached 2 times" in d for d in posts.details)

        # the same words twice with something between: two messages (two Gemini outages);
        # twice in a row: one message sent again
        for text in ("⚠️ Gemini is unavailable", "✅ SAFE ran: `ss -tln`",
                     "⚠️ Gemini is unavailable"):
            _post(chat, conv, {"type": "message", "text": text})
        details = chat.thread_posts(started, _Store([_Approval("a1")]))[0].details
        assert not any("in a row" in d for d in details), details
        _post(chat, conv, {"type": "message", "text": "⚠️ Gemini is unavailable"})
        details = chat.thread_posts(started, _Store([_Approval("a1")]))[0].details
        assert any("posted twice in a row: '⚠️ Gemini is unavailable'" in d for d in details)
        # a message sent again is Teams' documented window of one per kill, no more
        again = chat.thread_posts(started, _Store([_Approval("a1")]), kills=1)[0]
        assert "sent again after a kill between Teams' answer and the record: 2" in again.line
    finally:
        chat.stop()


def test_a_short_teams_drill_with_a_kill_and_connector_faults_meets_every_target() -> None:
    """Every correctness target, and Approve → start and ack → root under 2 s at p99, on a
    short run (about a minute on a busy 2-core machine). Acks are held to 3 s here (a busy CI
    machine); the 300 ms target is the benchmark's to measure."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "chaos.py"), "--platform", "teams",
         "--sqlite", "-n", "2", "--channels", "2", "--faults", "kills,teams429,teams500",
         # the 429 window at 6.6 s, the 503 one at 21.5 s, one kill at 32 s (mid-investigation,
         # after both: a kill while a post waits out a 429 leaves it claimed for 120 s)
         "--kill-every", "32", "--chaos-seconds", "33", "--budget", "240", "--lease", "4",
         "--ack-target-ms", "3000"],
        cwd=ROOT, capture_output=True, text=True, timeout=420)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "ALL TARGETS MET" in out and "kills 1" in out, out
    assert "investigations completed / started: 2/2 (2 mentions)" in out
    assert "RISKY probes 4/4 by the audit log, 4/4 match their side effects" in out
    assert "RCA files attached exactly once: 2/2" in out
    assert "teams_429 for 6s" in out and "teams_500 for 6s" in out
