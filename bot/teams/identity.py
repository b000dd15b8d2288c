"""The bot's own Entra ID identity: one MSAL client per process, so tokens are reused.

botbuilder 4.17 builds new credentials (and a new MSAL app, with its own OpenID discovery and
token grant) for every connector client — once per post or card update. ``BotIdentity`` keeps
one MSAL confidential client (or managed identity client) per authority, with MSAL's token
cache, and hands botbuilder the same credential object for a scope every time: a token is
requested once and reused until MSAL considers it expired. Graph tokens come from the same
object.
"""

from __future__ import annotations

import threading
from typing import Any

import msal
import requests
from botframework.connector.auth import AppCredentials, ServiceClientCredentialsFactory
from msrest.authentication import Authentication

from bot.settings import Settings
from core.errors import GhostError

#: The Bot Framework's tenant, which issues tokens for multi-tenant bots.
BOT_FRAMEWORK_TENANT = "botframework.com"
BOT_FRAMEWORK_SCOPE = "https://api.botframework.com"


class TokenUnavailable(GhostError):
    """Entra ID did not give the bot a token (wrong secret, no consent, unreachable)."""


class BotIdentity:
    """The app id with its secret or managed identity; thread-safe, one per process."""

    def __init__(self, settings: Settings, http: requests.Session | None = None) -> None:
        self.app_id = settings.teams_app_id or ""
        self.secret = settings.teams_app_password or ""
        self.kind = settings.teams_app_type.lower()
        self.tenant = settings.teams_app_tenant_id
        self.login_url = settings.teams_login_url.rstrip("/")
        self.http = http or requests.Session()  # honours HTTPS_PROXY and REQUESTS_CA_BUNDLE
        self._apps: dict[str, Any] = {}
        self._credentials: dict[str, BotCredentials] = {}
        self._lock = threading.Lock()

    def authority(self, tenant: str | None = None) -> str:
        """Multi-tenant bots get Bot Framework tokens from botframework.com's tenant."""
        chosen = tenant or (self.tenant if self.kind != "multitenant" else None)
        return f"{self.login_url}/{chosen or BOT_FRAMEWORK_TENANT}"

    def _app(self, authority: str) -> Any:
        with self._lock:
            app = self._apps.get(authority)
            if app is None:
                if self.kind == "userassignedmsi":
                    app = msal.ManagedIdentityClient(
                        msal.UserAssignedManagedIdentity(client_id=self.app_id),
                        http_client=self.http, token_cache=msal.TokenCache())
                else:
                    # instance_discovery off: the authority is configured, not guessed, and
                    # MSAL must not ask login.microsoftonline.com about a sovereign host
                    app = msal.ConfidentialClientApplication(
                        self.app_id, client_credential=self.secret, authority=authority,
                        http_client=self.http, instance_discovery=False)
                self._apps[authority] = app
            return app

    def token(self, scope: str, tenant: str | None = None) -> str:
        """An access token for ``scope`` (MSAL's cache first; a new grant only when needed)."""
        resource = scope[: -len("/.default")] if scope.endswith("/.default") else scope
        app = self._app(self.authority(tenant))
        try:
            if self.kind == "userassignedmsi":
                result = app.acquire_token_for_client(resource=resource)
            else:  # acquire_token_for_client looks in MSAL's token cache first
                result = app.acquire_token_for_client(scopes=[resource + "/.default"])
        except (requests.RequestException, ValueError, msal.ManagedIdentityError) as exc:
            raise TokenUnavailable(f"Could not reach Entra ID for a token: {exc}",
                                   "Check GHOST_TEAMS_LOGIN_URL, the network and the proxy."
                                   ) from exc
        if "access_token" not in result:
            raise TokenUnavailable(
                f"Entra ID refused the bot a token for {resource}: "
                f"{result.get('error')} {result.get('error_description', '')}".strip(),
                "Check MicrosoftAppId, MicrosoftAppPassword and MicrosoftAppTenantId.")
        return str(result["access_token"])

    def credentials(self, scope: str) -> BotCredentials:
        """The one credential object botbuilder gets for ``scope``."""
        with self._lock:
            found = self._credentials.get(scope)
            if found is None:
                found = self._credentials[scope] = BotCredentials(self, scope)
            return found


class BotCredentials(AppCredentials):  # type: ignore[misc]
    """What botbuilder's connector signs its requests with; tokens come from ``BotIdentity``."""

    def __init__(self, identity: BotIdentity, scope: str) -> None:
        super().__init__(app_id=identity.app_id, oauth_scope=scope)
        self.identity = identity

    def get_access_token(self, force_refresh: bool = False) -> str:
        try:
            return self.identity.token(self.oauth_scope)
        except TokenUnavailable as exc:  # botbuilder expects PermissionError here
            raise PermissionError(str(exc)) from exc


class SharedCredentialFactory(ServiceClientCredentialsFactory):  # type: ignore[misc]
    """botbuilder's credentials factory, answering with the process's one identity."""

    def __init__(self, identity: BotIdentity) -> None:
        self.identity = identity

    async def is_valid_app_id(self, app_id: str) -> bool:
        return bool(app_id) and app_id == self.identity.app_id

    async def is_authentication_disabled(self) -> bool:
        return False  # Ghost never serves Teams without an app id (app.check_settings)

    async def create_credentials(self, app_id: str, oauth_scope: str, login_endpoint: str,
                                 validate_authority: bool) -> Authentication:
        if app_id != self.identity.app_id:
            raise PermissionError(f"Unknown app id {app_id!r}.")
        return self.identity.credentials(oauth_scope or BOT_FRAMEWORK_SCOPE)
