"""The Entra ID group check for Teams approvers, over real HTTP against a small fake Microsoft
Graph on 127.0.0.1: a member of an approver group may approve, a non-member may not, and a Graph
error refuses (fails closed) with a message that says what to fix."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bot.teams import cards
from bot.teams.graph import GraphError, GraphGroups, graph_groups
from tests.fakes.gemini_server import function_call_turn
from tests.slack.test_investigation_flow import complete, shell
from tests.teams.conftest import APPROVER, OTHER, make_harness
from tests.teams.test_investigation_flow import start

GROUP, TOKEN = "11111111-2222-3333-4444-555555555555", "graph-test-token"


class FakeGraph(ThreadingHTTPServer):
    """``POST /v1.0/users/{id}/checkMemberGroups`` from a members table, or a scripted error."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), GraphHandler)
        self.members: dict[str, set[str]] = {}
        self.fail: tuple[int, dict[str, Any]] | None = None
        self.requests: list[tuple[str, str, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class GraphHandler(BaseHTTPRequestHandler):
    server: FakeGraph

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, self.headers["Authorization"], body))
        parts = self.path.split("/")
        if self.server.fail is not None:
            status, payload = self.server.fail
        elif self.headers["Authorization"] != f"Bearer {TOKEN}":
            status, payload = 401, {"error": {"code": "InvalidAuthenticationToken"}}
        elif len(parts) != 5 or parts[1:3] != ["v1.0", "users"] or parts[4] != "checkMemberGroups":
            status, payload = 404, {"error": {"code": "Request_ResourceNotFound"}}
        else:
            mine = self.server.members.get(parts[3], set())
            status, payload = 200, {"value": [g for g in body["groupIds"] if g in mine]}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        """Quiet: pytest shows failures, not every request."""


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGraph]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = FakeGraph()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def client(graph: FakeGraph) -> GraphGroups:
    return GraphGroups(graph.url, lambda: TOKEN)


def test_membership_over_http_and_cached(graph: FakeGraph) -> None:
    graph.members[OTHER] = {GROUP}
    groups = client(graph)
    assert groups(OTHER, [GROUP, "other-group"]) == {GROUP}
    assert groups(APPROVER, [GROUP]) == set()
    assert groups(OTHER, [GROUP]) == {GROUP}                    # from the cache
    assert [(p, a) for p, a, _ in graph.requests] == [
        (f"/v1.0/users/{OTHER}/checkMemberGroups", f"Bearer {TOKEN}"),
        (f"/v1.0/users/{APPROVER}/checkMemberGroups", f"Bearer {TOKEN}")]
    assert graph.requests[0][2] == {"groupIds": [GROUP, "other-group"]}


def test_the_endpoint_comes_from_ghost_graph_url(graph: FakeGraph,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.settings import Settings

    for key, value in {"GHOST_GRAPH_URL": graph.url, "GHOST_TEAMS_APPROVERS": GROUP,
                       "MicrosoftAppId": "app", "MicrosoftAppPassword": "secret",
                       "MicrosoftAppTenantId": "tenant-1"}.items():
        monkeypatch.setenv(key, value)
    from bot.teams.identity import BotIdentity

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    made = graph_groups(settings, BotIdentity(settings))
    assert made is not None and made.base_url == graph.url


@pytest.mark.parametrize("status, code, hint", [
    (403, "Authorization_RequestDenied", "GroupMember.Read.All"),
    (401, "InvalidAuthenticationToken", "MicrosoftAppPassword"),
    (503, "serviceNotAvailable", "Check the bot's log"),
])
def test_graph_errors_say_what_to_fix_and_are_not_cached(graph: FakeGraph, status: int,
                                                         code: str, hint: str) -> None:
    graph.fail = (status, {"error": {"code": code, "message": "nope"}})
    groups = client(graph)
    with pytest.raises(GraphError) as failed:
        groups(OTHER, [GROUP])
    assert f"HTTP {status}" in str(failed.value) and code in str(failed.value)
    assert hint in str(failed.value)
    graph.fail, graph.members[OTHER] = None, {GROUP}
    assert groups(OTHER, [GROUP]) == {GROUP}


def test_an_unreachable_graph_names_the_setting() -> None:
    with socket.socket() as probe:                       # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(GraphError, match="GHOST_GRAPH_URL"):
        GraphGroups(f"http://127.0.0.1:{port}", lambda: TOKEN, timeout_s=5)(OTHER, [GROUP])


def test_a_token_failure_is_a_graph_error() -> None:
    def no_token() -> str:
        raise RuntimeError("AADSTS7000215: Invalid client secret provided.")

    with pytest.raises(GraphError, match="AADSTS7000215.*MicrosoftAppPassword"):
        GraphGroups("http://127.0.0.1:9", no_token)(OTHER, [GROUP])


def approvals_through(graph: FakeGraph, store: Any, fake_gemini: Any, tmp_path: Path,
                      loop: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    teams = make_harness(store, tmp_path / "data", monkeypatch, loop, groups=client(graph),
                         GHOST_TEAMS_APPROVERS=GROUP)
    fake_gemini.enqueue(function_call_turn(shell("echo risky")), complete())
    inv = start(teams)
    (approval,) = store.approvals(inv.session_id, statuses=("pending",))
    return teams, approval.approval_id


def test_group_member_allowed_non_member_refused(graph: FakeGraph, store: Any,
                                                 fake_gemini: Any, tmp_path: Path, loop: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    graph.members[OTHER] = {GROUP}
    teams, approval_id = approvals_through(graph, store, fake_gemini, tmp_path, loop,
                                           monkeypatch)
    shown = teams.click(cards.APPROVE, {"approval_id": approval_id}, APPROVER)
    assert "not on this workspace's list" in str(shown["body"][0])
    assert store.get_approval(approval_id).status == "pending"
    teams.click(cards.APPROVE, {"approval_id": approval_id}, OTHER)
    assert store.get_approval(approval_id).decided_by == OTHER


def test_a_graph_error_fails_closed_and_tells_the_clicker_why(
        graph: FakeGraph, store: Any, fake_gemini: Any, tmp_path: Path, loop: Any,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    graph.members[OTHER] = {GROUP}
    teams, approval_id = approvals_through(graph, store, fake_gemini, tmp_path, loop,
                                           monkeypatch)
    graph.fail = (403, {"error": {"code": "Authorization_RequestDenied",
                                  "message": "Insufficient privileges"}})
    shown = teams.click(cards.APPROVE, {"approval_id": approval_id}, OTHER)
    note = str(shown["body"][0])
    assert "Group membership could not be checked" in note
    assert "HTTP 403" in note and "GroupMember.Read.All" in note
    assert store.get_approval(approval_id).status == "pending"      # refused: fail closed
    assert "GroupMember.Read.All" in caplog.text
    graph.fail = None                                                # fixed: the click works
    teams.click(cards.APPROVE, {"approval_id": approval_id}, OTHER)
    assert store.get_approval(approval_id).decided_by == OTHER
