"""The port through which the orchestrator reaches the cloud: a capture backend.

``cloud.azure_backend`` implements it over the Azure SDK; tests pass an in-memory fake. Every
method is synchronous and raises :class:`CaptureBackendError` with an Azure-style ``code`` so the
orchestrator can tell "not found" from "throttled" without knowing any SDK. The orchestrator never
calls these methods directly: each call is wrapped and passed through the safety gate first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

#: Error codes the orchestrator reacts to; anything else is shown verbatim.
NOT_FOUND = "ResourceNotFound"
NETWORK_WATCHER_NOT_ENABLED = "NetworkWatcherNotEnabled"
EXTENSION_MISSING = "NetworkWatcherExtensionMissing"
STORAGE_INACCESSIBLE = "StorageInaccessible"
THROTTLED = "Throttled"


class CaptureBackendError(Exception):
    """A cloud call failed; ``code`` is machine-readable, ``message`` is for the engineer."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class TargetInfo:
    """What detection learned about a target: its type and where it lives."""

    target_type: str  # "vm" or "aks"
    resource_id: str
    location: str
    name: str


@dataclass(frozen=True)
class CaptureSpec:
    """Everything needed to create one packet capture (deterministic from the task record)."""

    name: str
    target_resource_id: str
    location: str
    storage_account: str
    storage_resource_group: str
    container: str
    blob_name: str
    time_limit_seconds: int
    bytes_to_capture_per_packet: int = 0
    total_bytes_per_session: int = 1073741824
    filters: tuple[dict[str, str], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CaptureStatus:
    """Normalised status: Creating, Running, Stopped, Succeeded, Failed, or Azure's own word."""

    state: str
    detail: str = ""


@dataclass(frozen=True)
class CaptureSummary:
    """One packet capture found on the cloud side (for orphan detection)."""

    name: str
    location: str
    target_resource_id: str = ""


class CaptureBackend(Protocol):
    """Cloud operations for packet captures. All raise :class:`CaptureBackendError`."""

    def detect_target(self, target: str, resource_group: str) -> TargetInfo:
        """Resolve a VM or AKS name/resource id; a VM must have the Network Watcher extension."""
        ...

    def verify_storage(self, account: str, container: str) -> None:
        """Fail fast when the capture container is missing or not readable."""
        ...

    def create_capture(self, spec: CaptureSpec) -> str | None:
        """Create (start) the capture on the Network Watcher of ``spec.location``; return the
        storage path the created capture reports (``storageLocation.storagePath``: where
        Azure will write the blob), or None when it reports none."""
        ...

    def capture_status(self, location: str, name: str) -> CaptureStatus:
        """Where the capture is; Stopped/Succeeded means the blob is complete."""
        ...

    def download_blob(self, account: str, container: str, blob: str, path: Path) -> int:
        """Write the blob to ``path``; return its size in bytes."""
        ...

    def delete_capture(self, location: str, name: str) -> bool:
        """Stop and delete the capture; False when it was already gone."""
        ...

    def delete_blob(self, account: str, container: str, blob: str) -> bool:
        """Delete the capture blob; False when it was already gone."""
        ...

    def list_captures(self, prefix: str) -> list[CaptureSummary]:
        """Every capture in the subscription whose name starts with ``prefix``."""
        ...

    def blob_url(self, account: str, container: str, blob: str) -> str:
        """Where the capture is written (shown to the approver; no I/O)."""
        ...
