"""The drill's Teams: the tests' Bot Framework connector stand-in with fault switches, the
Microsoft login and Graph stand-ins, and the Teams *users* — signed ``@Ghost investigate``
mentions and ``Action.Execute`` clicks POSTed to the replicas' ``/api/messages``.

Fault switches: ``teams_429`` answers every connector call 429 with ``Retry-After`` (as Teams
throttles a bot); ``teams_500`` answers 503 ``ServiceUnavailable``. The login (tokens, signing
keys) and Graph (the RCA file) are not faulted: they are other services.

A request a replica did not answer (refused: killed; 5xx) is redelivered with the same activity
id to the other replica, as the connector redelivers: Ghost must not act on it twice.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.chaos_kit.account import Started, Verdict
from benchmarks.chaos_kit.faults import Faults, quiet_errors
from benchmarks.chaos_kit.users import Ack, Users
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.graph import FakeGraphFiles
from tests.fakes.json_server import LocalCA, Request
from tests.fakes.ms_login import FakeLogin

APP, SECRET = "00000000-0000-0000-0000-0000000000c4", "chaos-teams-secret"
TENANT, TEAM_GROUP = "tenant-chaos", "aaaaaaaa-bbbb-cccc-dddd-0000000000c4"
REQUESTER, APPROVER, BOT = "aad-chaos-req", "aad-chaos-approver", "28:ghost-bot"
NAMES = {REQUESTER: "Rea Quester", APPROVER: "Ada Approver"}
STATUS_MARK = "**Ghost investigation**"
FILE_INFO = "application/vnd.microsoft.teams.card.file.info"


def root_of(n: int) -> str:
    """The id of investigation ``n``'s channel post (its thread's root)."""
    return f"17{n:011d}"


def conversation_of(channel: str, n: int) -> str:
    return f"{channel};messageid={root_of(n)}"


class ChaosConnector(FakeConnector):
    """FakeConnector whose answers obey the drill's fault windows, and that remembers when
    each activity was first posted."""

    def __init__(self, faults: Faults, retry_after_s: int = 1) -> None:
        super().__init__()
        quiet_errors(self.server)
        self.faults = faults
        self.retry_after_s = retry_after_s
        self.faulted: Counter[str] = Counter()
        self.posted_at: dict[str, float] = {}
        #: every activity as first posted (an update replaces a card's actions), in order
        self.first: list[dict[str, Any]] = []

    def _route(self, request: Request) -> tuple[Any, ...]:
        if self.faults.active("teams_429"):
            self.faulted["429"] += 1
            return 429, {"error": {"code": "Throttled", "message": "Too many requests"}}, \
                {"Retry-After": str(self.retry_after_s)}
        if self.faults.active("teams_500"):
            self.faulted["500"] += 1
            return 503, {"error": {"code": "ServiceUnavailable", "message": "try again"}}
        answer = super()._route(request)
        if request.method == "POST" and answer[0] == 201:
            with self._lock:
                self.posted_at[str(answer[1]["id"])] = time.monotonic()
                self.first.append({**(request.json or {}), "id": str(answer[1]["id"])})
        return answer

    def first_posted(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.first)

    def threads(self) -> dict[str, list[dict[str, Any]]]:
        """Every activity as first posted, by conversation id, in posting order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for activity in self.first_posted():
            conv = str((activity.get("conversation") or {}).get("id") or "")
            out.setdefault(conv, []).append(activity)
        return out


def _content(activity: dict[str, Any]) -> dict[str, Any]:
    for attachment in activity.get("attachments") or []:
        if isinstance(attachment.get("content"), dict):
            return dict(attachment["content"])
    return {}


def _approve_action(content: dict[str, Any]) -> dict[str, Any] | None:
    for action in content.get("actions") or []:
        if action.get("type") == "Action.Execute" and action.get("verb") == "approve":
            return dict(action)
    return None


class TeamsChat:
    """The drill's Teams: login, connector and Graph stand-ins (``start``), Ghost's settings
    for them (``env``), the users (``users``), and the accounting of what reached the thread."""

    name = "teams"
    fault_names = {"teams429": "teams_429", "teams500": "teams_500"}

    def __init__(self, faults: Faults, channels: list[str]) -> None:
        self.faults = faults
        self.channels = channels
        self._dir = Path(tempfile.mkdtemp(prefix="ghost-chaos-ca-"))
        self.ca = LocalCA(self._dir)
        self.login = FakeLogin(self.ca, APP, SECRET)
        quiet_errors(self.login.server)
        self.connector = ChaosConnector(faults)
        self.graph = FakeGraphFiles(self.login.issued)
        quiet_errors(self.graph.server)
        self._cards: list[dict[str, Any]] = []
        self._seen: set[str] = set()

    def start(self) -> None:
        for server in (self.login, self.connector, self.graph):
            server.start()

    def stop(self) -> None:
        for server in (self.login, self.connector, self.graph):
            try:
                server.stop()
            except Exception:  # noqa: BLE001 - tear everything down regardless
                pass
        shutil.rmtree(self._dir, ignore_errors=True)

    def env(self) -> dict[str, str]:
        return {"MicrosoftAppId": APP, "MicrosoftAppPassword": SECRET,
                "GHOST_TEAMS_ALLOWED_TENANTS": TENANT,
                "GHOST_TEAMS_LOGIN_URL": self.login.url,
                "GHOST_TEAMS_OPENID_URL": self.login.openid_url,
                "GHOST_GRAPH_URL": self.graph.url, "REQUESTS_CA_BUNDLE": str(self.ca.ca_pem)}

    def replica_env(self, port: int) -> dict[str, str]:
        """Teams also listens on GHOST_TEAMS_PORT (3978): one port per replica here."""
        return {"GHOST_TEAMS_PORT": str(port)}

    def users(self, bases: list[str]) -> TeamsUsers:
        return TeamsUsers(bases, self)

    # ------------------------------------------------------------------ reading
    def cards(self) -> list[dict[str, Any]]:
        """Posted approval cards (``_approval``, ``_conversation``, ``id``), in posting order."""
        for activity in self.connector.first_posted():
            if activity["id"] in self._seen:
                continue
            action = _approve_action(_content(activity))
            if action is None:
                continue
            self._seen.add(activity["id"])
            conv = str((activity.get("conversation") or {}).get("id") or "")
            self._cards.append({"id": activity["id"], "_conversation": conv,
                                "_approval": str((action.get("data") or {}).get("approval_id"))})
        return list(self._cards)

    def uploads(self) -> int:
        return sum(1 for a in self.connector.first_posted()
                   if any(x.get("contentType") == FILE_INFO for x in a.get("attachments") or []))

    def faulted_line(self) -> str:
        f = self.connector.faulted
        return f"the Teams connector answered {f['429']}×429, {f['500']}×503"

    def keep(self, tmp: Path) -> None:
        (tmp / "teams_activities.json").write_text(json.dumps(self.connector.posted(),
                                                              default=str, indent=1))

    def root_times(self, started: list[Started], acks: dict[int, float]) -> list[float]:
        """Seconds from each mention's ack to its status card reaching the connector."""
        threads = self.connector.threads()
        out: list[float] = []
        for inv in started:
            acked = acks.get(inv.n)
            conv = conversation_of(inv.channel, inv.n)
            status = [a for a in threads.get(conv, []) if STATUS_MARK in json.dumps(_content(a))]
            if acked is not None and status:
                out.append(self.connector.posted_at[status[0]["id"]] - acked)
        return out

    def thread_posts(self, started: list[Started], store: Any,
                     kills: int = 0) -> tuple[Verdict, Verdict]:
        """(duplicate or lost thread posts, RCA files attached exactly once).

        A message Ghost sent again because a kill fell between the connector's answer and
        Ghost's record of it (Teams cannot look a message up, so the next holder cannot tell;
        docs/reliability.md, "Thread messages") is counted apart: at most one per kill."""
        threads = self.connector.threads()
        resent: list[str] = []
        dup: list[str] = []
        lost: list[str] = []
        rca_ok = told = 0
        for inv in started:
            tag = f"chaos-{inv.n:02d}"
            sid = inv.session_id or ""
            thread = threads.get(conversation_of(inv.channel, inv.n), [])
            status = [a for a in thread if STATUS_MARK in json.dumps(_content(a))]
            if len(status) != 1:
                (resent if status else lost).append(f"{tag} ({sid}): {len(status)} status cards")
            # a message sent again after a kill follows its first copy (the outbox resends
            # the item it had claimed before any later one); the same words further apart are
            # two messages (a second Gemini outage in the same minute says the same)
            texts = [str(a.get("text")) for a in thread if a.get("text")]
            resent += [f"{tag} ({sid}): posted twice in a row: {text[:90]!r}"
                       for text, after in zip(texts, texts[1:], strict=False) if text == after]
            shown = Counter(str(((_approve_action(_content(a)) or {}).get("data") or {})
                                .get("approval_id")) for a in thread)
            for approval in store.approvals(sid):
                count = shown[approval.approval_id]
                if count == 0:
                    lost.append(f"{tag} ({sid}): no card for approval {approval.approval_id} "
                                f"({approval.status})")
                elif count > 1:
                    dup.append(f"{tag} ({sid}): {count} cards for approval "
                               f"{approval.approval_id}")
            name = f"ghost_rca_{sid}.md"  # (a lab run's is lab-ghost_rca_….md)
            files = [a for a in thread if any(x.get("contentType") == FILE_INFO
                                              and str(x.get("name")).endswith(name)
                                              for x in a.get("attachments") or [])]
            if len(files) == 1 and any(f.endswith(name) for f in self.graph.files):
                rca_ok += 1
            elif len(files) > 1:
                dup.append(f"{tag} ({sid}): the RCA attached {len(files)} times")
            elif sid and rca_state(store, sid) == "interrupted" and any(
                    "upload of the RCA" in t and "interrupted" in t for t in texts):
                told += 1  # Teams cannot confirm an upload that was cut: the thread is told
            elif sid and store.get_investigation(sid).status == "completed":
                lost.append(f"{tag} ({sid}): completed, but no RCA file in the thread "
                            f"(upload {rca_state(store, sid)})")
        posts_v = Verdict(
            f"duplicate thread posts: {len(dup)}   lost thread posts: {len(lost)}   sent again "
            f"after a kill between Teams' answer and the record: {len(resent)} (at most one a "
            f"kill: {kills})", not dup and not lost and len(resent) <= kills,
            dup + lost + resent)
        rca_v = Verdict(
            f"RCA files attached exactly once: {rca_ok}/{len(started)}; cut (a kill or a "
            f"connector 5xx mid-upload) and the thread told to `@Ghost resume` (Teams cannot "
            f"confirm an upload, docs/reliability.md): {told}", rca_ok + told == len(started))
        return posts_v, rca_v

    def settled(self, store: Any, completed: list[str]) -> bool:
        """Every completed investigation's RCA is attached or known cut (the thread told)."""
        return all(rca_state(store, sid) in ("posted", "interrupted") for sid in completed) \
            and self.uploads() >= sum(1 for sid in completed
                                      if rca_state(store, sid) == "posted")

    def rca_times(self, started: list[Started]) -> list[float]:
        sids = {s.session_id for s in started if s.session_id}
        return [self.connector.posted_at[a["id"]] for a in self.connector.first_posted()
                if any(x.get("contentType") == FILE_INFO and any(
                    str(x.get("name")).endswith(f"ghost_rca_{sid}.md") for sid in sids)
                    for x in a.get("attachments") or [])]


def rca_state(store: Any, session_id: str) -> str:
    """The RCA upload's record (``conversation_ref.rca_upload.state``), or "none"."""
    ref = store.get_investigation(session_id).conversation_ref or {}
    return str((ref.get("rca_upload") or {}).get("state") or "none")


class TeamsUsers(Users):
    """Signs (the stand-in login's key) and POSTs what Teams would send, to the replica
    ``pick()`` chooses; records acks. Redelivers what a replica did not answer."""

    def __init__(self, bases: list[str], chat: TeamsChat) -> None:
        super().__init__(bases)
        self.chat = chat
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _activity(self, user: str, channel: str, n: int, **fields: Any) -> dict[str, Any]:
        return {"channelId": "msteams", "serviceUrl": self.chat.connector.url,
                "timestamp": datetime.now(UTC).isoformat(), "locale": "en-US",
                "from": {"id": f"29:{user}", "name": NAMES.get(user, user),
                         "aadObjectId": user},
                "recipient": {"id": BOT, "name": "Ghost"},
                "conversation": {"id": conversation_of(channel, n), "isGroup": True,
                                 "conversationType": "channel", "tenantId": TENANT},
                "channelData": {"channel": {"id": channel}, "tenant": {"id": TENANT},
                                "team": {"id": "19:team@thread.tacv2",
                                         "aadGroupId": TEAM_GROUP}},
                **fields}

    def _send(self, base: str, body: bytes) -> tuple[int, str]:
        token = self.chat.login.sign({"serviceurl": self.chat.connector.url})
        request = urllib.request.Request(
            base + "/api/messages", data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        try:
            with self._opener.open(request, timeout=10) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")

    def _deliver(self, activity: dict[str, Any], kind: str) -> tuple[int, str]:
        """POST it; a refused connection or a 5xx is redelivered (same activity id) to the
        next replica, as the connector does, for up to ~30 s."""
        body = json.dumps(activity).encode()
        start = self.next_replica()
        for attempt in range(len(self.bases) * 60):
            replica = (start + attempt) % len(self.bases)
            began = time.monotonic()
            try:
                status, text = self._send(self.bases[replica], body)
            except (ConnectionError, urllib.error.URLError, TimeoutError) as exc:
                self.refuse(exc)
                continue
            self.record(Ack(began, (time.monotonic() - began) * 1000, kind, status, replica))
            if status < 500:
                return status, text
            self.redelivered += 1
            time.sleep(0.25)
        self.errors.append(f"{kind}: no replica answered")
        return 0, ""

    def warm_up(self) -> None:
        """``@Ghost help`` to each replica in a thread of its own, as after any deploy: the
        first request fetches the login's signing keys."""
        for replica, base in enumerate(self.bases):
            activity = self._activity(REQUESTER, "19:warm-up@thread.tacv2", 900 + replica,
                                      type="message", id=root_of(900 + replica),
                                      text="<at>Ghost</at> help")
            self._send(base, json.dumps(activity).encode())

    def investigate(self, n: int, channel: str, text: str) -> tuple[int, str | None]:
        status, _ = self._deliver(self._activity(
            REQUESTER, channel, n, type="message", id=root_of(n),
            text=f"<at>Ghost</at> {text}",
            entities=[{"type": "mention", "text": "<at>Ghost</at>",
                       "mentioned": {"id": BOT, "name": "Ghost"}}]), "mention")
        return (200 if status in (200, 201) else status), None

    def click_card(self, card: dict[str, Any]) -> tuple[int, str]:
        conv = str(card["_conversation"])
        channel, _, root = conv.partition(";messageid=")
        n = int(root[2:])
        return self._deliver(self._activity(
            APPROVER, channel, n, type="invoke", name="adaptiveCard/action",
            id=f"f:{time.time_ns()}:{threading.get_ident()}", replyToId=card["id"],
            value={"action": {"type": "Action.Execute", "verb": "approve",
                              "data": {"approval_id": card["_approval"]}},
                   "trigger": "manual"}), "click")
