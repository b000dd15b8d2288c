"""Teams through the real request path: ``ghost serve``'s aiohttp app with botbuilder's
``CloudAdapter``, on 127.0.0.1, with tokens signed by a stand-in Microsoft login (HTTPS, a local
CA in ``REQUESTS_CA_BUNDLE``), the Bot Framework connector and Graph as local stand-ins, real
MSAL, the real store, gate and worker. Nothing is switched off."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.teams import cards
from tests.fakes.bot_connector import FakeConnector
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.fakes.graph import FakeGraphFiles
from tests.fakes.json_server import LocalCA
from tests.fakes.ms_login import FakeLogin, SigningKey
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import APPROVER, BOT, CHANNEL, NAMES, OTHER, REQUESTER, TENANT

APP, SECRET = "00000000-0000-0000-0000-0000000000b0", "test-secret"
TEAM_GROUP = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
ROOT = "1700000000001"


@dataclass
class RealTeams:
    services: Any
    login: FakeLogin
    connector: FakeConnector
    graph: FakeGraphFiles
    worker: Any
    store: Any
    url: str

    def activity(self, user: str, **fields: Any) -> dict[str, Any]:
        return {"channelId": "msteams", "serviceUrl": self.connector.url,
                "timestamp": "2026-11-25T12:00:00.000Z", "locale": "en-US",
                "from": {"id": f"29:{user}", "name": NAMES.get(user, user),
                         "aadObjectId": user},
                "recipient": {"id": BOT, "name": "Ghost"},
                "conversation": {"id": f"{CHANNEL};messageid={ROOT}", "isGroup": True,
                                 "conversationType": "channel", "tenantId": TENANT},
                "channelData": {"channel": {"id": CHANNEL}, "tenant": {"id": TENANT},
                                "team": {"id": "19:team@thread.tacv2",
                                         "aadGroupId": TEAM_GROUP}},
                **fields}

    def post(self, activity: dict[str, Any], token: str | None = None) -> tuple[int, Any]:
        token = token if token is not None else self.login.sign(
            {"serviceurl": self.connector.url})
        request = urllib.request.Request(
            self.url, data=json.dumps(activity).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def mention(self, text: str, user: str = REQUESTER) -> tuple[int, float]:
        began = time.perf_counter()
        status, _ = self.post(self.activity(
            user, type="message", id=ROOT, text=f"<at>Ghost</at> {text}",
            entities=[{"type": "mention", "text": "<at>Ghost</at>",
                       "mentioned": {"id": BOT, "name": "Ghost"}}]))
        return status, time.perf_counter() - began

    def click(self, verb: str, data: dict[str, Any], user: str,
              card_id: str) -> dict[str, Any]:
        """A click on the card ``card_id``; the card in the invoke response (HTTP 200)."""
        status, body = self.post(self.activity(
            user, type="invoke", name="adaptiveCard/action", id=f"f:{time.time_ns()}",
            replyToId=card_id, value={"action": {"type": "Action.Execute", "verb": verb,
                                                 "data": data}, "trigger": "manual"}))
        assert status == 200, body
        assert body["statusCode"] == 200 and body["type"] == cards.CONTENT_TYPE, body
        return dict(body["value"])

    def settle(self) -> None:
        """Wait for the posts queued after the responses, and for the worker."""
        self.services.loop.run(self.services.bot.settle())
        self.worker.run_until_idle()
        self.services.loop.run(self.services.bot.settle())

    def card(self, activity_id: str) -> dict[str, Any]:
        """The card as everyone sees it now (the connector's copy)."""
        return dict(self.connector.activities[activity_id]["attachments"][0]["content"])


@pytest.fixture
def real(store: Any, fake_gemini: Any, tmp_path: Path, loop: Any,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[RealTeams]:
    from bot.settings import Settings
    from bot.teams.app import build_teams, cloud_adapter, start_server, stop_server
    from bot.teams.auth import SigningKeys
    from bot.teams.identity import BotIdentity
    from bot.teams.port import Delivery
    from bot.worker import Worker

    ca = LocalCA(tmp_path / "ca")
    login = FakeLogin(ca, APP, SECRET).start()
    connector = FakeConnector().start()
    graph = FakeGraphFiles(login.issued).start()
    for key, value in {
        "MicrosoftAppId": APP, "MicrosoftAppPassword": SECRET,
        "GHOST_TEAMS_ALLOWED_TENANTS": TENANT,
        "GHOST_DATA_DIR": str(tmp_path / "data"), "GHOST_MODEL": "gemini-test",
        "GHOST_TEAMS_LOGIN_URL": login.url, "GHOST_TEAMS_OPENID_URL": login.openid_url,
        "GHOST_GRAPH_URL": graph.url, "REQUESTS_CA_BUNDLE": str(ca.ca_pem),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }.items():
        monkeypatch.setenv(key, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    identity = BotIdentity(settings)
    # every unknown kid refreshes the keys here (production: at most once a minute)
    keys = SigningKeys(settings.teams_openid_url, identity.http, min_refresh_s=0.0)
    services = build_teams(settings, store, adapter=cloud_adapter(settings, identity, keys),
                           loop=loop, identity=identity, delivery=Delivery(interval_s=0.0),
                           groups=lambda _u, _g: set())
    runtime = services.runtime
    worker = Worker(store=store, engine=runtime.engine, shell_for=runtime.shell_for,
                    after=runtime.after_advance, failed=runtime.failed, owner="teams-worker",
                    lease_seconds=30)
    runner = start_server(services, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/api/messages"
    try:
        yield RealTeams(services, login, connector, graph, worker, store, url)
    finally:
        stop_server(services, runner)
        for server in (login, connector, graph):
            server.stop()


def _approval_card(real: RealTeams, sid: str) -> tuple[Any, str]:
    (approval,) = real.store.approvals(sid, statuses=("pending",))
    return approval, str(approval.message_ref["activity_id"])


def test_clicks_answer_200_with_the_clickers_card(real: RealTeams, fake_gemini: Any) -> None:
    fake_gemini.enqueue(
        function_call_turn(shell("echo first-risky")),
        function_call_turn(shell("echo second-risky")),
        function_call_turn(shell("echo third-risky")),
        complete("NSG rule deny-6379 blocks Redis."),
    )
    assert real.mention("help")[0] in (200, 201)        # the first request fetches the keys
    real.settle()
    before = len(real.connector.posted())
    status, took = real.mention("investigate web-01 cannot reach redis on 6379")
    # answered at once, not after the investigation's posts (the ack target itself is a
    # benchmark's to measure; this bound only has to hold on a busy CI machine)
    assert status in (200, 201) and took < 1.5, took
    real.settle()
    (inv,) = real.store.list_investigations()
    sid = inv.session_id
    first = real.connector.posted()[before]
    assert first["conversation"]["id"] == f"{CHANNEL};messageid={ROOT}"
    assert "Ghost investigation" in json.dumps(first["attachments"][0]["content"])

    # the requester's own click: refused, and they are told why
    approval, card_id = _approval_card(real, sid)
    shown = real.click(cards.APPROVE, {"approval_id": approval.approval_id}, REQUESTER, card_id)
    assert "a second engineer has to decide" in json.dumps(shown["body"][0])
    assert shown["actions"] and real.store.get_approval(approval.approval_id).status == "pending"

    # a second engineer approves: the command runs once, the card changes for everyone
    shown = real.click(cards.APPROVE, {"approval_id": approval.approval_id}, APPROVER, card_id)
    assert "Approved by Ada Approver" in json.dumps(shown) and "actions" not in shown
    late = real.click(cards.APPROVE, {"approval_id": approval.approval_id}, OTHER, card_id)
    assert "Already decided" in json.dumps(late["body"][0])
    real.settle()
    # once the command ran, everyone's card says so (not the clicker's "— running" any more)
    everyone = real.card(card_id)
    assert "actions" not in everyone
    assert "Approved by Ada Approver — ran (exit 0)" in json.dumps(everyone, ensure_ascii=False)
    ran = [r for r in real.store.audit_records(sid)
           if r["kind"] == "command" and r["action"] == "user_approved"]
    assert len(ran) == 1 and ran[0]["actor"] == APPROVER

    # deny with a reason
    approval, card_id = _approval_card(real, sid)
    shown = real.click(cards.DENY, {"approval_id": approval.approval_id,
                                    "reason": "wrong resource group"}, APPROVER, card_id)
    assert "wrong resource group" in json.dumps(shown) and "Denied" in json.dumps(shown)
    real.settle()
    assert real.card(card_id) == shown

    # modify: the edit gets its own card, approved by someone other than the editor
    approval, card_id = _approval_card(real, sid)
    shown = real.click(cards.MODIFY, {"approval_id": approval.approval_id,
                                      "command": "echo edited-run"}, APPROVER, card_id)
    assert "echo edited-run" in json.dumps(shown)
    real.settle()
    assert real.card(card_id) == shown
    edited, edited_id = _approval_card(real, sid)
    refused = real.click(cards.APPROVE, {"approval_id": edited.approval_id}, APPROVER, edited_id)
    assert real.store.get_approval(edited.approval_id).status == "pending", refused
    real.click(cards.APPROVE, {"approval_id": edited.approval_id}, OTHER, edited_id)
    real.settle()

    # the RCA: a file in the channel's folder, attached to a message in the thread
    assert real.store.get_investigation(sid).status == "completed"
    name = f"ghost_rca_{sid}.md"
    assert "NSG rule deny-6379 blocks Redis." in real.graph.files[name].decode()
    attached = [a for a in real.connector.posted()
                if any(x.get("contentType") == "application/vnd.microsoft.teams.card.file.info"
                       for x in a.get("attachments") or [])]
    (message,) = attached
    assert message["attachments"][0]["name"] == name
    assert message["attachments"][0]["contentUrl"].endswith("/incidents/" + name)
    assert message["attachments"][0]["content"]["fileType"] == "md"
    assert message["conversation"]["id"] == f"{CHANNEL};messageid={ROOT}"
    assert APPROVER not in real.graph.files[name].decode()   # named by display name
    assert "Ada Approver" in real.graph.files[name].decode()

    # one token grant per credential (the connector's, Graph's) in the whole investigation
    scopes = [g["scope"] for g in real.login.token_grants]
    assert sorted(scopes) == sorted(set(scopes)) and len(scopes) == 2, scopes
    discoveries = [r.path for r in real.login.server.requests
                   if r.path.endswith("/v2.0/.well-known/openid-configuration")]
    assert sorted(discoveries) == sorted(set(discoveries)), discoveries  # once per authority
    assert len(real.connector.tokens) > 10
    assert {t.removeprefix("Bearer ") for t in real.connector.tokens} <= real.login.issued


def test_rca_without_the_graph_permission_is_cards_without_pipe_tables(
        real: RealTeams, fake_gemini: Any) -> None:
    real.graph.allow = False
    fake_gemini.enqueue(text_turn("The path looks blocked. Shall I go on?"),
                        complete("NSG rule deny-6379 blocks Redis."))
    status, _ = real.mention("investigate web-01 cannot reach redis on 6379")
    assert status in (200, 201)
    real.settle()
    # the prompt's Continue button takes the same invoke path as the approval buttons
    (inv,) = real.store.list_investigations()
    prompt_id = str(inv.conversation_ref["teams_prompt_id"])
    go_on = real.card(prompt_id)["actions"][0]["card"]["actions"][0]
    shown = real.click(go_on["verb"], {**go_on["data"], "instruction": "check the NSG"},
                       REQUESTER, prompt_id)
    assert "Continued by Rea Quester" in json.dumps(shown) and "actions" not in shown
    real.settle()
    assert real.card(prompt_id) == shown
    (inv,) = real.store.list_investigations()
    assert inv.status == "completed" and not real.graph.files
    posted = [a for a in real.connector.posted() if a.get("attachments")]
    texts = [json.dumps(a["attachments"][0]["content"]) for a in posted]
    summary = next(i for i, t in enumerate(texts) if "RCA for" in t)
    report = texts[summary + 1:]
    assert report and "NSG rule deny-6379 blocks Redis." in "".join(report)
    # the report's Hypotheses Log is a card table, not Markdown pipes
    tables = [element for a in posted[summary + 1:]
              for element in a["attachments"][0]["content"]["body"] if element["type"] == "Table"]
    assert tables and a_cell(tables[0], 1, 0) == "h1" and a_cell(tables[0], 1, 2) == "CONFIRMED"
    assert all("|---|" not in t and "| h1 |" not in t for t in report)
    assert "Rea Quester" in "".join(report) and REQUESTER not in "".join(report)


def a_cell(table: dict[str, Any], row: int, column: int) -> str:
    return str(table["rows"][row]["cells"][column]["items"][0]["text"])


def test_every_authentication_failure_is_a_401_and_one_log_line(
        real: RealTeams, caplog: pytest.LogCaptureFixture) -> None:
    login, url = real.login, real.connector.url
    stranger = SigningKey("key-1")                      # same kid, another key: forged
    unknown = SigningKey("key-never-published")
    body = real.activity(REQUESTER, type="message", id=ROOT,
                         text="<at>Ghost</at> investigate x")
    cases = {
        "signature": login.sign({"serviceurl": url}, key=stranger),
        "not one of": login.sign({"serviceurl": url}, key=unknown),
        "expired": login.sign({"serviceurl": url, "exp": int(time.time()) - 3600,
                               "nbf": int(time.time()) - 7200}),
        "another app": login.sign({"serviceurl": url, "aud": "someone-elses-app"}),
        "serviceurl": login.sign({"serviceurl": "https://evil.example/"}),
    }
    for why, token in cases.items():
        fetched = login.key_fetches()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            status, answer = real.post(body, token)
        assert status == 401, (why, answer)
        refusals = [r for r in caplog.records if r.name == "bot.teams.auth"]
        assert len(refusals) == 1 and why in refusals[0].getMessage(), caplog.text
        assert refusals[0].exc_info is None
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
        if why == "not one of":   # an unknown kid: the keys are fetched once more, then 401
            assert login.key_fetches() == fetched + 1
    assert not real.store.list_investigations() and not real.connector.posted()

    # Microsoft rotates its keys: a token with the new kid is accepted after one refresh
    rotated = SigningKey("key-2")
    login.published.append(rotated)
    status, _ = real.post(real.activity(REQUESTER, type="message", id=ROOT,
                                        text="<at>Ghost</at> help"),
                          login.sign({"serviceurl": url}, key=rotated))
    assert status in (200, 201)
    real.settle()
    assert "@Ghost investigate" in real.connector.posted()[-1]["text"]


def test_unknown_kids_refresh_the_keys_at_most_once_a_minute(tmp_path: Path) -> None:
    """Forged kids cannot make Ghost hammer Microsoft; a rotation is picked up a minute on."""
    import asyncio

    import requests

    from bot.teams.auth import Refused, SigningKeys

    ca = LocalCA(tmp_path / "ca")
    login = FakeLogin(ca, APP, SECRET).start()
    session = requests.Session()
    session.verify = str(ca.ca_pem)
    session.trust_env = False
    now = [0.0]
    keys = SigningKeys(login.openid_url, session, clock=lambda: now[0])
    try:
        assert asyncio.run(keys.get("key-1")) is not None and login.key_fetches() == 1
        for attempt in range(5):
            assert asyncio.run(keys.get(f"forged-{attempt}")) is None
        assert login.key_fetches() == 1
        login.published.append(SigningKey("key-2"))
        now[0] = 61.0
        assert asyncio.run(keys.get("key-2")) is not None and login.key_fetches() == 2
    finally:
        login.stop()
    unreachable = SigningKeys(login.openid_url, requests.Session())  # a new connection
    with pytest.raises(Refused, match="could not be fetched"):
        asyncio.run(unreachable.get("key-1"))
