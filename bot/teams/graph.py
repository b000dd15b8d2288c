"""Entra ID group membership through Microsoft Graph, for ``GHOST_TEAMS_APPROVERS`` groups.

``checkMemberGroups`` answers "which of these groups is this user in, transitively" in one call.
The token comes from the bot's own identity (``BotIdentity``: client secret or managed
identity); the app needs the ``GroupMember.Read.All`` application permission. Any failure is a
:class:`GraphError` saying what to fix; callers refuse the click (fail closed).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from contextvars import ContextVar

from bot.settings import Settings
from bot.teams.identity import BotIdentity
from core.errors import GhostError

#: What to do about a Graph HTTP status, for the engineer reading the refusal or the log.
HINTS = {
    400: "Check that GHOST_TEAMS_APPROVERS holds Entra ID object ids (GUIDs) of groups.",
    401: "Graph rejected the bot's token: check MicrosoftAppId, MicrosoftAppPassword and "
         "MicrosoftAppTenantId (or the managed identity).",
    403: "Grant the app registration the GroupMember.Read.All application permission in Entra "
         "ID and give it admin consent.",
    404: "The user is not in this tenant's directory, or GHOST_GRAPH_URL points at the wrong "
         "Graph cloud.",
    429: "Graph is throttling the bot; try the click again in a minute.",
}


#: The Entra ID tenant of the request being handled (set by the bot for each turn).
REQUEST_TENANT: ContextVar[str | None] = ContextVar("ghost_teams_tenant", default=None)


class GraphError(GhostError):
    """Group membership could not be checked; the approval is refused until it can be."""


class GraphGroups:
    """``groups(user, group_ids) -> the ones user is in``; answers cached for five minutes."""

    def __init__(self, base_url: str, token: Callable[[], str], *, ttl_s: float = 300.0,
                 timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self.clock = clock
        self._cache: dict[tuple[str, str], tuple[float, bool]] = {}

    def __call__(self, user: str, group_ids: list[str]) -> set[str]:
        now = self.clock()
        unknown = [g for g in group_ids
                   if (user, g) not in self._cache or self._cache[(user, g)][0] < now]
        if unknown:
            found = self._check(user, unknown)
            for g in unknown:
                self._cache[(user, g)] = (now + self.ttl_s, g in found)
        return {g for g in group_ids if self._cache[(user, g)][1]}

    def _check(self, user: str, group_ids: list[str]) -> set[str]:
        """One ``checkMemberGroups`` call; failures (never cached) become a GraphError."""
        url = f"{self.base_url}/v1.0/users/{urllib.parse.quote(user, safe='')}/checkMemberGroups"
        try:
            token = self.token()
        except Exception as exc:  # noqa: BLE001 - azure-identity raises many types
            raise GraphError(f"Could not get a Microsoft Graph token for the bot: {exc}",
                             HINTS[401]) from exc
        request = urllib.request.Request(
            url, data=json.dumps({"groupIds": group_ids}).encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise GraphError(f"Microsoft Graph answered HTTP {exc.code} to checkMemberGroups "
                             f"for {user}{_graph_detail(exc)}.",
                             HINTS.get(exc.code, "Check the bot's log and Graph's status.")
                             ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GraphError(f"Microsoft Graph at {self.base_url} could not be reached: {reason}.",
                             "Check GHOST_GRAPH_URL and that the bot can reach it (proxy, "
                             "firewall).") from exc
        except ValueError as exc:
            raise GraphError(f"Microsoft Graph at {self.base_url} answered something that is "
                             "not JSON.", "Check GHOST_GRAPH_URL points at Microsoft Graph."
                             ) from exc
        value = body.get("value") if isinstance(body, dict) else None
        if not isinstance(value, list):
            raise GraphError("Microsoft Graph's checkMemberGroups answer has no 'value' list.",
                             "Check GHOST_GRAPH_URL points at Microsoft Graph.")
        return {str(g) for g in value}


def _graph_detail(exc: urllib.error.HTTPError) -> str:
    """Graph's own error code and message (``{"error": {"code", "message"}}``), if any."""
    try:
        error = json.loads(exc.read()).get("error") or {}
    except (ValueError, OSError, AttributeError):
        return ""
    code, message = error.get("code"), error.get("message")
    return f" ({code}: {message})" if code or message else ""


def graph_groups(settings: Settings, identity: BotIdentity) -> GraphGroups | None:
    """Graph with the bot's identity (its one MSAL client), or None when no approver list
    needs it."""
    if not settings.teams_approvers or not settings.teams_app_id:
        return None
    scope = settings.graph_url.rstrip("/") + "/.default"
    # a multi-tenant bot asks the tenant of the team the click came from
    return GraphGroups(settings.graph_url, lambda: identity.token(
        scope, settings.teams_app_tenant_id or REQUEST_TENANT.get() or "organizations"))
