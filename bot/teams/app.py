"""The Teams front end put together: settings checked, adapter, port, bot, aiohttp endpoint.

``build_teams`` is what ``ghost serve`` and the tests use; most tests pass botbuilder's
``TestAdapter``, ``tests/teams/test_real_endpoint.py`` the real one. In production the adapter is
``GhostCloudAdapter`` — botbuilder's ``CloudAdapter`` with two fixes kept in this package: invoke
responses that survive its ``process`` (card clicks answered 200, not 500), and Ghost's own check
of the Bot Framework token (``auth.py``: every failure a 401 and one log line). Tokens for the
connector and Graph come from the process's one ``BotIdentity`` (MSAL, cached). This module and
the others in ``bot/teams/`` are the only ones that import botbuilder: moving to the Microsoft 365
Agents SDK replaces this package and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from aiohttp import web
from botbuilder.core import BotAdapter, TurnContext
from botbuilder.integration.aiohttp import CloudAdapter
from botbuilder.schema import Activity
from msrest.serialization import Model

from bot.chat.decisions import Decider
from bot.chat.ports import ChatPort
from bot.chat.runtime import ChatRuntime
from bot.settings import Settings
from bot.teams.auth import ISSUER, ChannelTokens, GhostAuthentication, SigningKeys
from bot.teams.bot import GhostTeamsBot
from bot.teams.files import ChannelFiles
from bot.teams.identity import BOT_FRAMEWORK_SCOPE, BotIdentity, SharedCredentialFactory
from bot.teams.loop import LoopThread
from bot.teams.port import Delivery, TeamsDirectory, TeamsPort
from core.errors import GhostError
from core.safety.approval import ApprovalPolicy

log = logging.getLogger(__name__)
PLATFORM = "teams"


class TeamsSettingMissing(GhostError):
    exit_code = 2


@dataclass
class TeamsServices:
    bot: GhostTeamsBot
    adapter: BotAdapter
    port: TeamsPort
    runtime: ChatRuntime
    decider: Decider
    store: Any
    loop: LoopThread
    identity: BotIdentity
    #: tenants whose activities are answered (GHOST_TEAMS_ALLOWED_TENANTS); "*" for any
    allowed_tenants: frozenset[str] = frozenset()


def check_settings(settings: Settings) -> None:
    """Refuse to serve Teams unauthenticated: botbuilder skips auth without an app id."""
    kind = settings.teams_app_type.lower()
    if not settings.teams_app_id:
        raise TeamsSettingMissing("MicrosoftAppId is not set.",
                                  "Copy the Azure Bot's Microsoft App ID into MicrosoftAppId "
                                  "(see docs/teams.md).")
    if kind not in ("multitenant", "singletenant", "userassignedmsi"):
        raise TeamsSettingMissing(f"MicrosoftAppType={settings.teams_app_type} is not known.",
                                  "Use MultiTenant, SingleTenant or UserAssignedMSI.")
    if kind != "userassignedmsi" and not settings.teams_app_password:
        raise TeamsSettingMissing("MicrosoftAppPassword is not set.",
                                  "Create a client secret for the app registration, or use a "
                                  "managed identity (MicrosoftAppType=UserAssignedMSI).")
    if kind != "multitenant" and not settings.teams_app_tenant_id:
        raise TeamsSettingMissing(f"MicrosoftAppTenantId is needed for {settings.teams_app_type}.",
                                  "Set it to your Entra ID tenant id.")
    if not settings.teams_allowed_tenants:
        raise TeamsSettingMissing(
            "No tenant is allowed to talk to the bot: GHOST_TEAMS_ALLOWED_TENANTS and "
            "MicrosoftAppTenantId are both unset.",
            "Set GHOST_TEAMS_ALLOWED_TENANTS to your Entra ID tenant id (comma-separated for "
            "several, * for any tenant), or MicrosoftAppTenantId.")


class GhostCloudAdapter(CloudAdapter):  # type: ignore[misc]
    """``CloudAdapter`` whose invoke responses survive its own ``process``.

    botbuilder 4.17 serializes an invoke response twice: ``ActivityHandler`` stores the body
    already as a dict (``_create_invoke_response`` calls ``serializer_helper``), and
    ``CloudAdapter.process`` calls ``serializer_helper`` on it again, which fails on a dict
    (``'dict' object has no attribute 'is_xml_model'``) — every card click answered 500. A
    body that is already a dict is handed on wrapped in a model that serializes to itself.
    """

    def _process_turn_results(self, context: TurnContext) -> Any:
        response = super()._process_turn_results(context)
        if response is not None and isinstance(getattr(response, "body", None), dict):
            response.body = _Serialized(response.body)
        return response


class _Serialized(Model):
    """A JSON object msrest writes out as it is (its keys are the model's extra properties)."""

    _attribute_map = {"additional_properties": {"key": "", "type": "{object}"}}

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(additional_properties=body)  # type: ignore[no-untyped-call]


def cloud_adapter(settings: Settings, identity: BotIdentity,
                  keys: SigningKeys | None = None) -> BotAdapter:
    """The CloudAdapter with Ghost's token check and the process's one identity."""
    from botbuilder.integration.aiohttp import ConfigurationBotFrameworkAuthentication

    check_settings(settings)
    config = SimpleNamespace(
        APP_ID=settings.teams_app_id, APP_PASSWORD=settings.teams_app_password,
        APP_TYPE=settings.teams_app_type, APP_TENANTID=settings.teams_app_tenant_id,
        TO_CHANNEL_FROM_BOT_LOGIN_URL=identity.authority(),
        TO_CHANNEL_FROM_BOT_OAUTH_SCOPE=BOT_FRAMEWORK_SCOPE,
        TO_BOT_FROM_CHANNEL_TOKEN_ISSUER=ISSUER,
        TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL=settings.teams_openid_url)
    inner = ConfigurationBotFrameworkAuthentication(
        config, credentials_factory=SharedCredentialFactory(identity))
    keys = keys or SigningKeys(settings.teams_openid_url, identity.http)
    tokens = ChannelTokens(str(settings.teams_app_id), keys)
    return GhostCloudAdapter(GhostAuthentication(inner, tokens))


def teams_policy(settings: Settings) -> ApprovalPolicy:
    return ApprovalPolicy(approvers=settings.teams_approvers, two_person=settings.two_person,
                          expiry_seconds=settings.approval_expiry_seconds)


def build_teams(settings: Settings, store: Any, *, adapter: BotAdapter | None = None,
                brain: Any = None, loop: LoopThread | None = None,
                groups: Callable[[str, list[str]], set[str]] | None = None,
                other_ports: dict[str, ChatPort] | None = None,
                delivery: Delivery | None = None, identity: BotIdentity | None = None,
                files: ChannelFiles | None = None) -> TeamsServices:
    """The Teams services; ``other_ports`` (e.g. Slack's) share the one runtime and worker.

    ``delivery`` paces and retries posts (tests pass one with a fake clock and sleep).
    ``identity`` is the process's one Entra ID identity (tokens for the connector and Graph).
    """
    from bot.bootstrap import build_chat_engine
    from bot.teams.graph import graph_groups

    identity = identity or BotIdentity(settings)
    adapter = adapter or cloud_adapter(settings, identity)
    loop = loop or LoopThread()
    policy = teams_policy(settings)
    files = files if files is not None else ChannelFiles(settings.graph_url, identity)
    port = TeamsPort(adapter, settings.teams_app_id, store, loop, policy, delivery, files)
    ports: dict[str, ChatPort] = {**(other_ports or {}), PLATFORM: port}
    runtime = build_chat_engine(settings, store, brain=brain, port_for=ports.get)
    directory = TeamsDirectory(groups if groups is not None
                               else graph_groups(settings, identity))
    decider = Decider(store, runtime.shell_for, policy, directory)
    bot = GhostTeamsBot(runtime, decider, port)
    adapter.on_turn_error = _on_turn_error
    return TeamsServices(bot=bot, adapter=adapter, port=port, runtime=runtime, decider=decider,
                         store=store, loop=loop, identity=identity,
                         allowed_tenants=settings.teams_allowed_tenants)


async def _on_turn_error(context: TurnContext, error: Exception) -> None:
    """The one error handler: log it, and tell the thread what to do."""
    if isinstance(error, GhostError):
        text = str(error)
    else:
        log.error("unhandled error in the Teams bot", exc_info=error)
        text = ("Ghost hit an unexpected error handling that. Nothing was decided or run twice; "
                "try again, and check the bot's log if it repeats.")
    if context.activity.type == "message":
        await context.send_activity(Activity(type="message", text="⚠️ " + text))


def unfit_request(content_type: str, authorization: str) -> int | None:
    """The status for a request botbuilder would choke on before authenticating it, or None.

    ``CloudAdapter.process`` raises (a 500 and a traceback) on a missing content type; a token
    that is not a JWT or has no issuer cannot be one of the Bot Framework's. Those are refused
    here; every request that passes still gets the full check (``auth.ChannelTokens``).
    """
    import jwt

    if "application/json" not in content_type:
        return 415
    scheme, _, token = authorization.partition(" ")
    if scheme != "Bearer" or not token:
        return 401
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return 401
    return None if isinstance(claims.get("iss"), str) and claims["iss"] else 401


def activity_tenant(activity: Any) -> str | None:
    """The Entra ID tenant an activity comes from (``conversation.tenantId``, else
    ``channelData.tenant.id``), or None."""
    if not isinstance(activity, dict):
        return None
    conversation = activity.get("conversation")
    tenant = conversation.get("tenantId") if isinstance(conversation, dict) else None
    if not tenant:
        data = activity.get("channelData")
        inner = data.get("tenant") if isinstance(data, dict) else None
        tenant = inner.get("id") if isinstance(inner, dict) else None
    return tenant if isinstance(tenant, str) and tenant else None


def add_teams_routes(app: web.Application, services: TeamsServices) -> None:
    """``POST /api/messages``, within the edge's limits (``bot/edge.py``), from an allowed
    tenant only (``GHOST_TEAMS_ALLOWED_TENANTS``), authenticated by the adapter."""
    from bot.edge import Refused, read_body

    allowed = services.allowed_tenants

    async def messages(request: web.Request) -> web.StreamResponse:
        status = unfit_request(request.headers.get("Content-Type", ""),
                               request.headers.get("Authorization", ""))
        if status is not None:
            raise Refused(status, "not a Bot Framework request (content type or token); the "
                          "body was not read")
        await read_body(request)  # read once here; aiohttp keeps the body for the adapter
        try:
            activity = await request.json()
        except ValueError:
            raise Refused(400, "the body is not JSON") from None
        tenant = activity_tenant(activity)
        if "*" not in allowed and tenant not in allowed:
            raise Refused(403, f"activity from tenant {tenant or '(none)'}, which is not in "
                          "GHOST_TEAMS_ALLOWED_TENANTS")
        response = await services.adapter.process(request, services.bot)
        return response if response is not None else web.Response(status=201)

    app.router.add_post("/api/messages", messages)


def make_web_app(services: TeamsServices) -> web.Application:
    """``POST /api/messages`` (authenticated by the adapter), ``GET /healthz`` and
    ``/readyz``, with the edge's limits: what ``start_server`` serves on its own."""
    from bot.edge import base_app

    app = base_app(None)
    add_teams_routes(app, services)
    return app


def start_server(services: TeamsServices, host: str, port: int) -> web.AppRunner:
    """Serve the endpoint on the services' loop thread; ``stop_server`` undoes it."""
    async def start() -> web.AppRunner:
        runner = web.AppRunner(make_web_app(services), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        return runner

    return services.loop.run(start())


def stop_server(services: TeamsServices, runner: web.AppRunner) -> None:
    """Stop taking requests, then let the posts queued by the last ones go out."""
    services.loop.run(runner.cleanup())
    settle(services)


def settle(services: TeamsServices) -> None:
    """Let the posts queued by the last requests go out (after the server stopped)."""
    services.loop.run(services.bot.settle())
