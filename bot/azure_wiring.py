"""Settings → the Azure capture backend (or one that explains how to enable captures)."""

from __future__ import annotations

import time
from typing import Any

from bot.settings import Settings
from core.orchestrator.backend import CaptureBackend, CaptureBackendError

NOT_CONFIGURED = ("Packet captures are not configured: set GHOST_AZURE_SUBSCRIPTION_ID (and sign "
                  "in with a managed identity or `az login`) to enable capture_traffic.")


class CapturesNotConfigured:
    """Every call fails with the same actionable message; the model pivots to other evidence."""

    #: read by orphan detection: no Azure layer to scan when captures are not set up
    configured = False

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBackendError("CapturesNotConfigured", NOT_CONFIGURED)

        return refuse


class _StaticToken:
    """A fixed bearer token for a loopback fake ARM endpoint (tests, demos)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self.token, int(time.time()) + 3600)


def capture_backend(settings: Settings) -> CaptureBackend:
    if not settings.azure_subscription_id:
        backend: Any = CapturesNotConfigured()
        return backend  # type: ignore[no-any-return]
    from cloud.azure_backend import AzureCaptureBackend
    from cloud.azure_settings import AzureSettings

    key = settings.azure_storage_key
    azure = AzureSettings(
        subscription_id=settings.azure_subscription_id,
        arm_endpoint=settings.azure_arm_endpoint,
        blob_endpoint_template=settings.azure_blob_endpoint_template,
        storage_auth_mode=settings.azure_storage_auth_mode,
        account_key=(lambda _account: key) if key else None,
        lro_polling_interval=settings.azure_lro_polling_interval,
    )
    credential = None
    if settings.azure_static_token:
        if not azure.arm_is_loopback_http:
            raise CaptureBackendError("InvalidSetting", "GHOST_AZURE_STATIC_TOKEN is only "
                                      "accepted with a loopback test ARM endpoint.")
        credential = _StaticToken(settings.azure_static_token)
    return AzureCaptureBackend(azure, credential)
