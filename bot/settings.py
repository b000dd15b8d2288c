"""Settings from the environment (and an optional ``.env``), documented in ``.env.example``."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.engine.models import DEFAULT_MODEL

#: what the Azure deployment writes to Key Vault for a secret parameter left empty
#: (deploy/azure/modules/ghost.bicep); read as unset, and `ghost doctor` names each one
SECRET_PLACEHOLDER = "ghost-placeholder-unset"
#: setting → (environment variable, Key Vault secret, deployment parameter)
PLACEHOLDER_SECRETS = {
    "gemini_api_key": ("GEMINI_API_KEY", "gemini-api-key", "geminiApiKey"),
    "slack_bot_token": ("SLACK_BOT_TOKEN", "slack-bot-token", "slackBotToken"),
    "slack_signing_secret": ("SLACK_SIGNING_SECRET", "slack-signing-secret",
                             "slackSigningSecret"),
    "teams_app_password": ("MicrosoftAppPassword", "teams-app-password", "teamsAppPassword"),
}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_data_dir() -> Path:
    """The user's data directory (Linux: ``$XDG_DATA_HOME/ghost``, else
    ``~/.local/share/ghost``; macOS: ``~/Library/Application Support/ghost``): the same
    database wherever Ghost is started from, not a new one under each working directory."""
    from platformdirs import user_data_path

    return user_data_path("ghost", appauthor=False)


class Settings(BaseSettings):
    """Everything Ghost reads from its environment. Names are ``GHOST_*`` unless noted."""

    model_config = SettingsConfigDict(
        env_prefix="GHOST_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where Ghost keeps its SQLite database, audit exports, captures and reports "
        "(default: the user's data dir, on Linux ~/.local/share/ghost; `ghost db status` "
        "prints it).",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL. Unset: a SQLite file ghost.db in the data dir, created and "
        "migrated on first use. PostgreSQL: postgresql://user@host:5432/db.",
    )
    database_auth: str = Field(
        default="password", description="How Ghost signs in to PostgreSQL: `password` (the "
        "one in GHOST_DATABASE_URL, if any) or `azure` (an Entra ID token of the managed "
        "identity AZURE_CLIENT_ID, refreshed before it expires; the Azure deployment sets it).",
    )
    database_app_role: str | None = Field(
        default=None, description="`ghost db upgrade` grants this role what the apps need and "
        "nothing more (it owns nothing; docs/storage.md). The migration job sets it to the "
        "apps' managed identity.",
    )
    model: str = Field(default=DEFAULT_MODEL, description="The Gemini model.")
    gemini_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_GEMINI_API_KEY"),
        description="Gemini API key (GEMINI_API_KEY).",
    )
    gemini_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("GOOGLE_GEMINI_BASE_URL", "GHOST_GEMINI_BASE_URL"),
        description="Gemini endpoint override (tests point it at a local fake).",
    )
    audit_dir_override: str | None = Field(
        default=None, description="Where RCA reports are written (default: DATA_DIR/audit)."
    )
    capture_dir_override: str | None = Field(
        default=None, description="Where captures are downloaded (default: DATA_DIR/captures)."
    )
    command_timeout_s: float = Field(default=60.0, description="Wall time per command.")

    azure_subscription_id: str | None = Field(
        default=None, description="Subscription the captures run in; unset: captures disabled."
    )
    azure_arm_endpoint: str = Field(
        default="https://management.azure.com",
        description="Azure Resource Manager endpoint (sovereign clouds: e.g. "
        "https://management.usgovcloudapi.net).",
    )
    azure_blob_endpoint_template: str = Field(
        default="https://{account}.blob.core.windows.net",
        description="Blob endpoint, {account} replaced by the storage account.",
    )
    capture_storage_account: str | None = Field(
        default=None,
        description="The storage account every capture is written to unless the model names "
        "another: its resource id (/subscriptions/…/resourceGroups/RG/providers/"
        "Microsoft.Storage/storageAccounts/NAME; the Azure deployment sets it), or its name with "
        "GHOST_CAPTURE_STORAGE_RESOURCE_GROUP. Unset: the model must name an account.",
    )
    capture_storage_resource_group: str | None = Field(
        default=None, description="Resource group of GHOST_CAPTURE_STORAGE_ACCOUNT when that "
        "is a name, not a resource id.",
    )
    azure_storage_auth_mode: str = Field(
        default="login", description="login (Entra ID/RBAC) or key (GHOST_AZURE_STORAGE_KEY)."
    )
    azure_storage_key: str | None = Field(
        default=None, description="Storage account key for storage_auth_mode=key (a secret)."
    )
    azure_lro_polling_interval: float = Field(
        default=5.0, description="Seconds between Azure long-running-operation polls when Azure "
        "sends no Retry-After.",
    )
    lab: str | None = Field(
        default=None,
        description="Investigate the lab instead of Azure: a shipped scenario's name (`ghost lab "
        "list`) or a scenario file. `ghost serve`/`ghost worker` then run every investigation "
        "against that simulated estate (no Azure role needed) and every post says it is a lab "
        "run. Unset: real Azure.",
    )
    prices: str | None = Field(
        default=None, validation_alias=AliasChoices("GHOST_PRICES"),
        description="Model prices for cost figures (`ghost eval`, docs/eval.md): JSON "
        '{"MODEL": {"prompt": $, "output": $, "thinking": $}}, US dollars per million tokens. '
        "A model not listed shows no cost (n/a).",
    )
    azure_static_token: str | None = Field(
        default=None,
        description="Tests only: a fixed bearer token, accepted only for a loopback ARM endpoint.",
    )

    # ---------------------------------------------------------------- chat (Slack)
    slack_bot_token: str | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN", "GHOST_SLACK_BOT_TOKEN"),
        description="The Slack app's bot token (xoxb-…), a secret.",
    )
    slack_signing_secret: str | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "GHOST_SLACK_SIGNING_SECRET"),
        description="Verifies that HTTP requests come from Slack, a secret.",
    )
    slack_app_token: str | None = Field(
        default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN", "GHOST_SLACK_APP_TOKEN"),
        description="App-level token (xapp-…): set it to use Socket Mode instead of HTTP.",
    )
    slack_api_url: str = Field(
        default="https://slack.com/api/",
        validation_alias=AliasChoices("SLACK_API_URL", "GHOST_SLACK_API_URL"),
        description="Slack Web API base URL (GovSlack: https://slack-gov.com/api/; tests: a "
        "local mock).",
    )
    port: int = Field(default=3000, validation_alias=AliasChoices("PORT", "GHOST_PORT"),
                      description="HTTP port of `ghost serve` in HTTP mode.")
    approvers_csv: str = Field(
        default="", validation_alias=AliasChoices("GHOST_APPROVERS"),
        description="Comma-separated Slack user ids (U…) and user-group ids (S…) who may "
        "decide approvals. Empty: any member of the investigation's channel except the "
        "requester.",
    )
    two_person: bool = Field(
        default=True, description="Nobody approves commands in an investigation they started, "
        "nor a command they modified.",
    )
    approval_expiry_seconds: int = Field(
        default=1800, description="Pending approvals expire after this many seconds.")
    worker_threads: int = Field(
        default=8, description="Investigations one worker process advances at once; one in "
        "four of these threads (at least one) is kept for work a person just unblocked.")
    gemini_outage_s: float = Field(
        default=600.0, description="How long a transient Gemini outage (429, 5xx, timeouts) is "
        "waited out before the investigation is parked for a person to resume.")
    gemini_retry_max_s: float = Field(
        default=30.0, description="The longest wait between two tries during a Gemini outage.")
    lease_seconds: float = Field(
        default=60.0, description="How long a worker's claim on an investigation lasts without "
        "renewal; a dead worker's investigation is picked up after this.",
    )
    serve_runs_worker: bool = Field(
        default=True, description="`ghost serve` also runs a worker (set false when separate "
        "`ghost worker` processes run the investigations).",
    )
    slack_post_interval_s: float = Field(
        default=1.0, description="Minimum seconds between Ghost's posts in one channel.")

    # ---------------------------------------------------------------- chat (Teams)
    teams_app_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MicrosoftAppId", "MICROSOFT_APP_ID", "GHOST_TEAMS_APP_ID"),
        description="The Azure Bot's Microsoft App ID; set it to serve Teams on /api/messages.",
    )
    teams_app_password: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MicrosoftAppPassword", "MICROSOFT_APP_PASSWORD",
                                      "GHOST_TEAMS_APP_PASSWORD"),
        description="The app's client secret, a secret (not used with UserAssignedMSI).",
    )
    teams_app_type: str = Field(
        default="MultiTenant",
        validation_alias=AliasChoices("MicrosoftAppType", "MICROSOFT_APP_TYPE",
                                      "GHOST_TEAMS_APP_TYPE"),
        description="MultiTenant, SingleTenant or UserAssignedMSI (managed identity).",
    )
    teams_app_tenant_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MicrosoftAppTenantId", "MICROSOFT_APP_TENANT_ID",
                                      "GHOST_TEAMS_APP_TENANT_ID"),
        description="The Entra ID tenant (SingleTenant and UserAssignedMSI).",
    )
    teams_port: int = Field(
        default=3978, description="GHOST_TEAMS_PORT: a second port for the Teams endpoint "
        "(/api/messages is also on PORT); the same as PORT serves everything on one port.")
    teams_allowed_tenants_csv: str = Field(
        default="", validation_alias=AliasChoices("GHOST_TEAMS_ALLOWED_TENANTS"),
        description="Entra ID tenant ids whose Teams activities Ghost answers (comma-separated; "
        "* for any). Default: MicrosoftAppTenantId, the bot's own tenant. Others get 403.")
    teams_approvers_csv: str = Field(
        default="", validation_alias=AliasChoices("GHOST_TEAMS_APPROVERS"),
        description="Comma-separated Entra ID object ids of users and groups who may decide "
        "approvals in Teams. Empty: anyone who can see the card in the investigation's channel "
        "except the requester.",
    )
    graph_url: str = Field(
        default="https://graph.microsoft.com",
        description="Microsoft Graph endpoint, for Entra ID group membership of Teams approvers "
        "(sovereign clouds: e.g. https://graph.microsoft.us).",
    )
    teams_login_url: str = Field(
        default="https://login.microsoftonline.com",
        description="Microsoft Entra ID login endpoint for the bot's tokens (sovereign clouds).",
    )
    teams_openid_url: str = Field(
        default="https://login.botframework.com/v1/.well-known/openidconfiguration",
        description="OpenID metadata of the Bot Framework, whose keys sign Teams' requests.",
    )

    @property
    def teams_approvers(self) -> frozenset[str]:
        return frozenset(a.strip() for a in self.teams_approvers_csv.split(",") if a.strip())

    _placeholders: list[str] = PrivateAttr(default_factory=list)

    @field_validator("gemini_base_url")
    @classmethod
    def _gemini_over_https(cls, value: str | None) -> str | None:
        """The API key travels with every request: https, or plain http to this machine only
        (a local stand-in)."""
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme == "https" and parts.hostname:
            return value
        if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
            return value
        raise ValueError(f"GOOGLE_GEMINI_BASE_URL must be an https URL (plain http only to a "
                         f"loopback address such as http://127.0.0.1:PORT), not {value!r}")

    @model_validator(mode="after")
    def _placeholders_are_unset(self) -> Settings:
        for name in PLACEHOLDER_SECRETS:
            if getattr(self, name) == SECRET_PLACEHOLDER:
                setattr(self, name, None)
                self._placeholders.append(name)
        return self

    @property
    def placeholder_secrets(self) -> list[str]:
        """The settings whose value is the deployment's placeholder (read as unset)."""
        return list(self._placeholders)

    @property
    def teams_allowed_tenants(self) -> frozenset[str]:
        listed = frozenset(t.strip() for t in self.teams_allowed_tenants_csv.split(",")
                           if t.strip())
        if listed:
            return listed
        return frozenset({self.teams_app_tenant_id}) if self.teams_app_tenant_id else frozenset()

    @property
    def teams_configured(self) -> bool:
        """An app id (with a password, or a managed identity) turns the Teams endpoint on."""
        return bool(self.teams_app_id)

    @property
    def approvers(self) -> frozenset[str]:
        return frozenset(a.strip() for a in self.approvers_csv.split(",") if a.strip())

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'ghost.db').resolve()}"

    @property
    def uses_default_database(self) -> bool:
        """The default SQLite file is migrated on first use; any other URL needs `db upgrade`."""
        return not self.database_url

    @property
    def audit_dir(self) -> Path:
        return Path(self.audit_dir_override) if self.audit_dir_override else \
            self.data_dir / "audit"

    @property
    def capture_dir(self) -> Path:
        return Path(self.capture_dir_override) if self.capture_dir_override else \
            self.data_dir / "captures"


def load_settings() -> Settings:
    return Settings()
