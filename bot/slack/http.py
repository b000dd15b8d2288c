"""HTTP mode: Slack's requests on the edge server (``bot/edge.py``), handed to the bolt app.

``make_server`` builds the one server ``ghost serve`` runs: Slack's three request URLs (with a
bolt app), Teams' ``/api/messages`` (with the Teams services), ``/healthz`` and ``/readyz``.
``GET /readyz`` answers 200 when ``ready()`` says so and 503 otherwise; the port is public, so
the reason goes to the log, not into the answer.

A Slack request is authenticated here, before bolt sees it: the signature headers must be there
before the body is read, and the body (within the edge's limits) must carry Slack's signature
(slack_sdk's ``SignatureVerifier``: HMAC with the signing secret, timestamp within 5 minutes).
Only then is it handed to bolt's synchronous ``dispatch`` on a worker thread, so Ghost's
handlers stay as they are and bolt never logs an unauthenticated body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.edge import EXECUTOR, EdgeLimits, EdgeServer, Ready, Refused, base_app, read_body
from bot.teams.loop import LoopThread

log = logging.getLogger(__name__)
PATHS = ("/slack/events", "/slack/commands", "/slack/interactive")


def add_slack_routes(web_app: web.Application, app: App, signing_secret: str) -> None:
    """POST Slack's request URLs, authenticated before bolt's ``dispatch`` runs."""
    verifier = SignatureVerifier(signing_secret)

    async def slack(request: web.Request) -> web.Response:
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not timestamp or not signature:
            raise Refused(401, "no Slack signature headers; the body was not read")
        raw = await read_body(request)
        try:
            body = raw.decode("utf-8")  # Slack signs UTF-8 text; the verifier decodes too
        except UnicodeDecodeError:
            raise Refused(400, "the body is not UTF-8") from None
        if not verifier.is_valid(body, timestamp, signature):
            raise Refused(401, f"Slack signature does not match (timestamp {timestamp[:20]!r})")
        headers: dict[str, str | Sequence[str]] = {
            k.lower(): list(request.headers.getall(k)) for k in request.headers}
        try:
            bolt_request = BoltRequest(body=body, headers=headers)
        except ValueError:  # json.JSONDecodeError: a signed body that is not what it claims
            raise Refused(400, "signed body does not parse as Slack's JSON or form") from None
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(web_app[EXECUTOR], app.dispatch, bolt_request)
        flat = {k: v[0] for k, v in response.headers.items()
                if v and k.lower() not in ("content-length", "transfer-encoding")}
        return web.Response(status=response.status, body=response.body.encode("utf-8"),
                            headers=flat)

    for path in PATHS:
        web_app.router.add_post(path, slack)


def make_server(app: App | None, host: str, port: int, ready: Ready | None = None, *,
                signing_secret: str | None = None, teams: Any = None,
                extra_ports: tuple[int, ...] = (),
                limits: EdgeLimits | None = None) -> EdgeServer:
    """The edge server, listening when this returns (``OSError`` if the port is taken).

    ``app`` (with ``signing_secret``) adds Slack's request URLs; ``teams`` (the Teams services)
    adds ``/api/messages`` and runs the server on Teams' loop; ``extra_ports`` are more ports
    for the same server (``GHOST_TEAMS_PORT`` when it differs from ``PORT``). Without either it
    serves only the probes (Socket Mode)."""
    web_app = base_app(ready, limits)
    if app is not None:
        if not signing_secret:
            raise ValueError("Slack's HTTP mode needs SLACK_SIGNING_SECRET")
        add_slack_routes(web_app, app, signing_secret)
    loop: LoopThread | None = None
    if teams is not None:
        from bot.teams.app import add_teams_routes

        add_teams_routes(web_app, teams)
        loop = teams.loop
    return EdgeServer(web_app, host, port, extra_ports=extra_ports, loop=loop)
