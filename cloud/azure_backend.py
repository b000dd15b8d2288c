"""The capture backend over the Azure SDK: azure-mgmt-network for captures, azure-storage-blob.

Implements :class:`core.orchestrator.backend.CaptureBackend`. Every method is one or a few SDK
calls; the orchestrator gates each call (as its ``az`` equivalent) before it gets here. VMs and
AKS clusters are read with plain ARM GETs through the network client's pipeline (same auth,
retries and endpoint), so azure-mgmt-compute is not needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from azure.core.credentials import TokenCredential
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.core.rest import HttpRequest
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network.models import PacketCapture
from azure.storage.blob import BlobServiceClient

from cloud.arm_auth import LoopbackBearerPolicy
from cloud.azure_errors import backend_error
from cloud.azure_settings import AzureSettings
from core.orchestrator.backend import (
    EXTENSION_MISSING,
    NETWORK_WATCHER_NOT_ENABLED,
    NOT_FOUND,
    STORAGE_INACCESSIBLE,
    CaptureBackendError,
    CaptureSpec,
    CaptureStatus,
    CaptureSummary,
    TargetInfo,
)

VM_TYPE = "Microsoft.Compute/virtualMachines"
AKS_TYPE = "Microsoft.ContainerService/managedClusters"
EXTENSION_PUBLISHER = "Microsoft.Azure.NetworkWatcher"


def _norm_location(location: str) -> str:
    return location.replace(" ", "").lower()


class AzureCaptureBackend:
    """Packet captures on Network Watcher, blobs in a storage account."""

    def __init__(self, settings: AzureSettings, credential: TokenCredential | None = None,
                 **client_kwargs: Any) -> None:
        if credential is None:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        self.settings = settings
        self.credential = credential
        kwargs: dict[str, Any] = {
            "credential_scopes": list(settings.credential_scopes),
            "polling_interval": settings.lro_polling_interval,
            "retry_total": settings.retry_total,
            **client_kwargs,
        }
        if settings.arm_is_loopback_http:
            # the SDK refuses bearer tokens over http; a loopback test endpoint is the exception
            kwargs["authentication_policy"] = LoopbackBearerPolicy(
                credential, settings.credential_scopes)
        self.network = NetworkManagementClient(credential, settings.subscription_id,
                                               base_url=settings.arm_endpoint, **kwargs)
        self._watchers: dict[str, tuple[str, str]] | None = None

    # ------------------------------------------------------------------ detection
    def detect_target(self, target: str, resource_group: str) -> TargetInfo:
        if target.startswith("/subscriptions/"):
            candidates = [target]
        else:
            base = (f"/subscriptions/{self.settings.subscription_id}/resourceGroups/"
                    f"{resource_group}/providers")
            candidates = [f"{base}/{VM_TYPE}/{target}", f"{base}/{AKS_TYPE}/{target}"]
        for resource_id in candidates:
            body = self._arm_get(resource_id, self._api_version(resource_id),
                                 f"reading {resource_id}")
            if body is None:
                continue
            kind = "aks" if AKS_TYPE.lower() in resource_id.lower() else "vm"
            info = TargetInfo(kind, str(body.get("id") or resource_id),
                              _norm_location(str(body.get("location") or "")),
                              str(body.get("name") or resource_id.rsplit("/", 1)[-1]))
            if kind == "vm":
                self._require_extension(info)
            return info
        raise CaptureBackendError(NOT_FOUND, f"No VM or AKS cluster named {target!r} in "
                                  f"resource group {resource_group!r} (subscription "
                                  f"{self.settings.subscription_id}).")

    def _require_extension(self, vm: TargetInfo) -> None:
        body = self._arm_get(f"{vm.resource_id}/extensions", self.settings.compute_api_version,
                             f"listing extensions of {vm.name}") or {}
        for ext in body.get("value") or []:
            props = ext.get("properties") or {}
            if props.get("publisher") == EXTENSION_PUBLISHER:
                state = props.get("provisioningState", "Succeeded")
                if state != "Succeeded":
                    raise CaptureBackendError(EXTENSION_MISSING, f"VM {vm.name}: the Network "
                                              f"Watcher extension is {state}; repair it first.")
                return
        raise CaptureBackendError(EXTENSION_MISSING, (
            f"VM {vm.name} has no Network Watcher extension ({EXTENSION_PUBLISHER}), which "
            "packet capture needs. Install it: az vm extension set --resource-group <rg> "
            f"--vm-name {vm.name} --publisher {EXTENSION_PUBLISHER} --name "
            "NetworkWatcherAgentLinux (NetworkWatcherAgentWindows on Windows)."))

    def _api_version(self, resource_id: str) -> str:
        if AKS_TYPE.lower() in resource_id.lower():
            return self.settings.aks_api_version
        return self.settings.compute_api_version

    def _arm_get(self, path: str, api_version: str, doing: str) -> dict[str, Any] | None:
        """GET an ARM resource through the network client's pipeline; None on 404."""
        url = f"{self.settings.arm_endpoint.rstrip('/')}{path}?api-version={api_version}"
        try:
            response = self.network.send_request(HttpRequest("GET", url))
            if response.status_code == 404:
                if _error_code(response) == "ResourceGroupNotFound":
                    raise CaptureBackendError(NOT_FOUND, (
                        f"Resource group {_resource_group(path)!r} does not exist in "
                        f"subscription {self.settings.subscription_id}; check resource_group "
                        "(and GHOST_AZURE_SUBSCRIPTION_ID)."))
                return None
            response.raise_for_status()
            body = response.json()
        except AzureError as exc:
            raise backend_error(exc, doing) from exc
        return body if isinstance(body, dict) else {}

    # -------------------------------------------------------------------- storage
    def _blob_service(self, account: str) -> BlobServiceClient:
        credential: Any
        if self.settings.storage_auth_mode == "key":
            assert self.settings.account_key is not None
            credential = {"account_name": account,
                          "account_key": self.settings.account_key(account)}
        else:
            credential = self.credential
        return BlobServiceClient(self.settings.account_url(account), credential=credential,
                                 retry_total=self.settings.retry_total)

    def verify_storage(self, account: str, container: str) -> None:
        try:
            exists = self._blob_service(account).get_container_client(container).exists()
        except AzureError as exc:
            err = backend_error(exc, f"checking container {account}/{container}")
            raise CaptureBackendError(STORAGE_INACCESSIBLE, err.message) from exc
        if not exists:
            raise CaptureBackendError(STORAGE_INACCESSIBLE, f"container {container!r} does "
                                      f"not exist in storage account {account!r}; create it "
                                      "or set storage_container.")

    def blob_url(self, account: str, container: str, blob: str) -> str:
        return f"{self.settings.account_url(account)}/{container}/{blob}"

    def download_blob(self, account: str, container: str, blob: str, path: Path) -> int:
        client = self._blob_service(account).get_blob_client(container, blob)
        try:
            with path.open("wb") as handle:
                return int(client.download_blob().readinto(handle))
        except AzureError as exc:
            raise backend_error(exc, f"downloading {account}/{container}/{blob}") from exc

    def delete_blob(self, account: str, container: str, blob: str) -> bool:
        client = self._blob_service(account).get_blob_client(container, blob)
        try:
            client.delete_blob()
        except ResourceNotFoundError:
            return False
        except AzureError as exc:
            raise backend_error(exc, f"deleting blob {account}/{container}/{blob}") from exc
        return True

    # ------------------------------------------------------------------- captures
    def _load_watchers(self) -> dict[str, tuple[str, str]]:
        """Region → (resource group, name) of every Network Watcher in the subscription."""
        found: dict[str, tuple[str, str]] = {}
        try:
            for w in self.network.network_watchers.list_all():
                rg = str(w.id).split("/resourceGroups/", 1)[1].split("/", 1)[0]
                found[_norm_location(str(w.location))] = (rg, str(w.name))
        except AzureError as exc:
            raise backend_error(exc, "listing Network Watchers") from exc
        self._watchers = found
        return found

    def _watcher(self, location: str) -> tuple[str, str]:
        """(resource group, name) of the region's Network Watcher."""
        wanted = _norm_location(location)
        watchers = self._watchers
        if watchers is None or wanted not in watchers:
            watchers = self._load_watchers()
        if wanted not in watchers:
            raise CaptureBackendError(NETWORK_WATCHER_NOT_ENABLED, (
                f"Network Watcher is not enabled in region {location}. Enable it: az network "
                f"watcher configure --locations {wanted} --enabled true --resource-group "
                "NetworkWatcherRG"))
        return watchers[wanted]

    @property
    def storage_auth_mode(self) -> str:
        """How blobs are really reached (``login`` or ``key``): what the az equivalents show."""
        return self.settings.storage_auth_mode

    def create_capture(self, spec: CaptureSpec) -> str | None:
        rg, watcher = self._watcher(spec.location)
        storage_id = (f"/subscriptions/{self.settings.subscription_id}/resourceGroups/"
                      f"{spec.storage_resource_group}/providers/Microsoft.Storage/"
                      f"storageAccounts/{spec.storage_account}")
        properties: dict[str, Any] = {
            "target": spec.target_resource_id,
            "targetType": "AzureVM",
            "bytesToCapturePerPacket": spec.bytes_to_capture_per_packet,
            "totalBytesPerSession": spec.total_bytes_per_session,
            "timeLimitInSeconds": spec.time_limit_seconds,
            "storageLocation": {
                "storageId": storage_id,
                "storagePath": self.blob_url(spec.storage_account, spec.container,
                                             spec.blob_name),
            },
        }
        if spec.filters:
            properties["filters"] = [dict(f) for f in spec.filters]
        try:
            created = self.network.packet_captures.begin_create(
                rg, watcher, spec.name, PacketCapture({"properties": properties})).result()
        except AzureError as exc:
            raise backend_error(exc, f"creating packet capture {spec.name}") from exc
        # where Azure says it writes the capture (it may not be the path asked for)
        location = _field(created, "storage_location", "storageLocation")
        path = _text(_field(location, "storage_path", "storagePath")) if location else ""
        return path or None

    def capture_status(self, location: str, name: str) -> CaptureStatus:
        rg, watcher = self._watcher(location)
        try:
            result = self.network.packet_captures.begin_get_status(rg, watcher, name).result()
        except AzureError as exc:
            raise backend_error(exc, f"reading status of packet capture {name}") from exc
        status = _text(_field(result, "packet_capture_status", "packetCaptureStatus")) \
            or "Unknown"
        reason = _text(_field(result, "stop_reason", "stopReason"))
        errors = _field(result, "packet_capture_error", "packetCaptureError") or []
        detail = ", ".join(str(e) for e in errors) or reason
        state = {"NotStarted": "Creating", "Error": "Failed"}.get(status, status)
        return CaptureStatus(state, detail)

    def delete_capture(self, location: str, name: str) -> bool:
        """True when Azure deleted it; False when it was already gone (404, or ARM's 204 No
        Content, its answer to a DELETE of a resource that does not exist)."""
        rg, watcher = self._watcher(location)
        first: list[int] = []

        def note(response: Any) -> None:
            if not first:
                first.append(int(response.http_response.status_code))

        try:
            self.network.packet_captures.begin_delete(rg, watcher, name,
                                                      raw_response_hook=note).result()
        except ResourceNotFoundError:
            return False
        except AzureError as exc:
            err = backend_error(exc, f"deleting packet capture {name}")
            if err.code == NOT_FOUND:
                return False
            raise err from exc
        return not (first and first[0] == 204)

    def list_captures(self, prefix: str) -> list[CaptureSummary]:
        found = []
        for location, (rg, watcher) in sorted(self._load_watchers().items()):
            try:
                for capture in self.network.packet_captures.list(rg, watcher):
                    name = str(capture.name)
                    if name.startswith(prefix):
                        target = str(_field(capture, "target", "target") or "")
                        found.append(CaptureSummary(name, location, target))
            except AzureError as exc:
                raise backend_error(exc, f"listing packet captures in {location}") from exc
        return found


def _error_code(response: Any) -> str:
    """ARM's ``error.code`` from a response body, or '' when there is none."""
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - an error page that is not JSON has no code
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("code") or "") if isinstance(error, dict) else ""


def _resource_group(path: str) -> str:
    parts = path.split("/")
    lower = [p.lower() for p in parts]
    return parts[lower.index("resourcegroups") + 1] if "resourcegroups" in lower else "?"


def _text(value: Any) -> str:
    """An SDK enum's wire value (str(enum) would be 'PcStatus.RUNNING'), or the string."""
    if value is None:
        return ""
    return str(getattr(value, "value", value))


def _field(model: Any, attr: str, key: str) -> Any:
    """Read a field of an SDK model (attribute), its properties bag, or a raw dict."""
    for source in (model, getattr(model, "properties", None)):
        if source is None:
            continue
        value = getattr(source, attr, None)
        if value is None and hasattr(source, "get"):
            value = source.get(key)
        if value is not None:
            return value
    return None
