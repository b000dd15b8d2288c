"""Where Azure is: endpoints (sovereign clouds, local fakes in tests), subscription, auth modes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class InvalidAzureSetting(ValueError):
    """A setting that cannot work; ``field`` names it so a front end can name its variable."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class AzureSettings:
    """Everything the capture backend needs to reach Azure (no secrets in here but a lookup)."""

    subscription_id: str
    arm_endpoint: str = "https://management.azure.com"
    credential_scopes: tuple[str, ...] = ("https://management.azure.com/.default",)
    #: ``{account}`` is replaced; Azurite: ``http://127.0.0.1:10000/{account}``
    blob_endpoint_template: str = "https://{account}.blob.core.windows.net"
    #: ``login`` (the identity's token, RBAC) or ``key`` (shared key from ``account_key``)
    storage_auth_mode: str = "login"
    account_key: Callable[[str], str] | None = field(default=None, repr=False)
    compute_api_version: str = "2024-07-01"
    aks_api_version: str = "2024-09-01"
    #: seconds between long-running-operation polls when Azure sends no Retry-After
    lro_polling_interval: float = 5.0
    retry_total: int = 5

    def __post_init__(self) -> None:
        if self.storage_auth_mode not in ("login", "key"):
            raise InvalidAzureSetting("storage_auth_mode", f"storage_auth_mode must be 'login' "
                                      f"or 'key', not {self.storage_auth_mode!r}")
        if self.storage_auth_mode == "key" and self.account_key is None:
            raise InvalidAzureSetting("account_key",
                                      "storage_auth_mode 'key' needs an account_key lookup")
        for name in ("arm_endpoint", "blob_endpoint_template"):
            url = urlsplit(getattr(self, name).replace("{account}", "x"))
            if url.scheme != "https" and not (url.scheme == "http"
                                              and url.hostname in LOOPBACK_HOSTS):
                raise InvalidAzureSetting(name, f"{name} must be https (plain http is allowed "
                                          f"only for a loopback test endpoint): "
                                          f"{getattr(self, name)!r}")

    @property
    def arm_is_loopback_http(self) -> bool:
        url = urlsplit(self.arm_endpoint)
        return url.scheme == "http" and url.hostname in LOOPBACK_HOSTS

    def account_url(self, account: str) -> str:
        return self.blob_endpoint_template.format(account=account).rstrip("/")
