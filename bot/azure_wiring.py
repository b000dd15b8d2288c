"""Settings → the Azure capture backend (or one that explains how to enable captures).

A missing or broken Azure setting never stops Ghost: the backend it gets refuses every call with
a message naming the variable to fix, so the start-up orphan scan warns about it at once and the
model pivots to other evidence instead of the investigation (or the worker) crashing.
"""

from __future__ import annotations

import re
import time
from typing import Any

from bot.settings import Settings
from core.orchestrator.backend import CaptureBackend, CaptureBackendError

NOT_CONFIGURED = ("Packet captures are not configured: set GHOST_AZURE_SUBSCRIPTION_ID (and sign "
                  "in with a managed identity or `az login`) to enable capture_traffic.")

#: what to tell the engineer when cloud.azure_settings refuses a field
_FIX_FOR_FIELD = {
    "storage_auth_mode": "GHOST_AZURE_STORAGE_AUTH_MODE must be `login` (Entra ID / RBAC on the "
                         "storage account) or `key`, not {value!r}.",
    "account_key": "GHOST_AZURE_STORAGE_AUTH_MODE=key needs GHOST_AZURE_STORAGE_KEY (the storage "
                   "account's access key); set it, or use GHOST_AZURE_STORAGE_AUTH_MODE=login.",
    "arm_endpoint": "GHOST_AZURE_ARM_ENDPOINT must be an https URL (e.g. "
                    "https://management.azure.com or your sovereign cloud's), not {value!r}.",
    "blob_endpoint_template": "GHOST_AZURE_BLOB_ENDPOINT_TEMPLATE must be an https URL with "
                              "{{account}} in it (e.g. https://{{account}}.blob.core.windows.net)"
                              ", not {value!r}.",
}


_STORAGE_ID = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
    r"Microsoft\.Storage/storageAccounts/(?P<name>[^/]+)/?$", re.IGNORECASE)
_ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}$")
_RESOURCE_GROUP = re.compile(r"^[A-Za-z0-9._()-]{1,90}$")


class CaptureStorageInvalid(ValueError):
    """GHOST_CAPTURE_STORAGE_ACCOUNT (or its resource group) cannot name an account."""


def capture_storage(settings: Settings) -> tuple[str | None, str | None]:
    """The configured capture account and its resource group, ``(None, None)`` when unset.

    Raises :class:`CaptureStorageInvalid` with the fix when the setting cannot work."""
    raw = (settings.capture_storage_account or "").strip()
    if not raw:
        return None, None
    found = _STORAGE_ID.match(raw)
    if found:
        name, group, sub = found["name"], found["rg"], found["sub"]
        if settings.azure_subscription_id and sub.lower() != \
                settings.azure_subscription_id.lower():
            raise CaptureStorageInvalid(
                f"GHOST_CAPTURE_STORAGE_ACCOUNT is in subscription {sub}, but captures run in "
                f"{settings.azure_subscription_id} (GHOST_AZURE_SUBSCRIPTION_ID); use an "
                "account in the captures' subscription.")
    elif raw.startswith("/"):
        raise CaptureStorageInvalid(
            f"GHOST_CAPTURE_STORAGE_ACCOUNT {raw!r} is not a storage account resource id "
            "(/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Storage/"
            "storageAccounts/NAME).")
    else:
        name, group = raw, (settings.capture_storage_resource_group or "").strip()
        if not group:
            raise CaptureStorageInvalid(
                f"GHOST_CAPTURE_STORAGE_ACCOUNT={raw} is a name without its resource group; "
                "set GHOST_CAPTURE_STORAGE_RESOURCE_GROUP too, or give the account's resource "
                "id.")
    if not _ACCOUNT_NAME.match(name):
        raise CaptureStorageInvalid(
            f"GHOST_CAPTURE_STORAGE_ACCOUNT names {name!r}, which is not a storage account name "
            "(3-24 lowercase letters and digits).")
    if not _RESOURCE_GROUP.match(group):
        raise CaptureStorageInvalid(f"{group!r} is not a resource group name "
                                    "(GHOST_CAPTURE_STORAGE_ACCOUNT / _RESOURCE_GROUP).")
    return name, group


class CapturesNotConfigured:
    """Every call fails with the same actionable message; the model pivots to other evidence."""

    #: read by orphan detection: no Azure layer to scan when captures are not set up
    configured = False

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBackendError("CapturesNotConfigured", NOT_CONFIGURED)

        return refuse


class CapturesMisconfigured:
    """Captures were asked for but a setting cannot work: every call says which one to fix.

    ``configured`` stays true so the start-up orphan scan tries Azure and shows this message.
    """

    configured = True

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __getattr__(self, name: str) -> Any:
        message = f"Packet captures are misconfigured: {self.problem}"

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBackendError("InvalidSetting", message)

        return refuse


class _StaticToken:
    """A fixed bearer token for a loopback fake ARM endpoint (tests, demos)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self.token, int(time.time()) + 3600)


def capture_backend(settings: Settings) -> CaptureBackend:
    backend: Any
    if not settings.azure_subscription_id:
        backend = CapturesNotConfigured()
        return backend  # type: ignore[no-any-return]
    from cloud.azure_backend import AzureCaptureBackend
    from cloud.azure_settings import AzureSettings, InvalidAzureSetting

    try:
        capture_storage(settings)
    except CaptureStorageInvalid as exc:
        backend = CapturesMisconfigured(str(exc))
        return backend  # type: ignore[no-any-return]
    key = settings.azure_storage_key
    try:
        azure = AzureSettings(
            subscription_id=settings.azure_subscription_id,
            arm_endpoint=settings.azure_arm_endpoint,
            blob_endpoint_template=settings.azure_blob_endpoint_template,
            storage_auth_mode=settings.azure_storage_auth_mode,
            account_key=(lambda _account: key) if key else None,
            lro_polling_interval=settings.azure_lro_polling_interval,
        )
    except InvalidAzureSetting as exc:
        value = getattr(settings, f"azure_{exc.field}", None)
        fix = _FIX_FOR_FIELD.get(exc.field)
        backend = CapturesMisconfigured(fix.format(value=value) if fix else str(exc))
        return backend  # type: ignore[no-any-return]
    credential = None
    if settings.azure_static_token:
        if not azure.arm_is_loopback_http:
            backend = CapturesMisconfigured(
                "GHOST_AZURE_STATIC_TOKEN is only accepted with a loopback test ARM endpoint "
                "(GHOST_AZURE_ARM_ENDPOINT=http://127.0.0.1:…); unset it to sign in with a "
                "managed identity or `az login`.")
            return backend  # type: ignore[no-any-return]
        credential = _StaticToken(settings.azure_static_token)
    return AzureCaptureBackend(azure, credential)
