"""Entra ID group membership through Microsoft Graph, for ``GHOST_TEAMS_APPROVERS`` groups.

``checkMemberGroups`` answers "which of these groups is this user in, transitively" in one call.
The token comes from azure-identity with the bot's own identity (client secret or managed
identity); the app needs the ``GroupMember.Read.All`` application permission.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable

from bot.settings import Settings


class GraphGroups:
    """``groups(user, group_ids) -> the ones user is in``; answers cached for five minutes."""

    def __init__(self, base_url: str, token: Callable[[], str], *, ttl_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.ttl_s = ttl_s
        self.clock = clock
        self._cache: dict[tuple[str, str], tuple[float, bool]] = {}

    def __call__(self, user: str, group_ids: list[str]) -> set[str]:
        now = self.clock()
        unknown = [g for g in group_ids
                   if (user, g) not in self._cache or self._cache[(user, g)][0] < now]
        if unknown:
            body = json.dumps({"groupIds": unknown}).encode()
            request = urllib.request.Request(
                f"{self.base_url}/v1.0/users/{user}/checkMemberGroups", data=body,
                method="POST", headers={"Authorization": f"Bearer {self.token()}",
                                        "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                found = set(json.loads(response.read()).get("value") or [])
            for g in unknown:
                self._cache[(user, g)] = (now + self.ttl_s, g in found)
        return {g for g in group_ids if self._cache[(user, g)][1]}


def graph_groups(settings: Settings) -> GraphGroups | None:
    """Graph with the bot's identity, or None when no approver list needs it."""
    if not settings.teams_approvers or not settings.teams_app_id:
        return None
    from azure.identity import ClientSecretCredential, ManagedIdentityCredential

    scope = settings.graph_url.rstrip("/") + "/.default"
    if settings.teams_app_type.lower() == "userassignedmsi":
        credential: ManagedIdentityCredential | ClientSecretCredential = \
            ManagedIdentityCredential(client_id=settings.teams_app_id)
    else:
        credential = ClientSecretCredential(settings.teams_app_tenant_id or "organizations",
                                            settings.teams_app_id,
                                            settings.teams_app_password or "")
    return GraphGroups(settings.graph_url, lambda: credential.get_token(scope).token)
