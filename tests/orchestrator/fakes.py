"""Stand-ins at the orchestrator's own ports: an in-memory cloud, a clock, an approver."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.orchestrator.backend import (
    CaptureBackendError,
    CaptureSpec,
    CaptureStatus,
    CaptureSummary,
    TargetInfo,
)
from core.safety.approval import ApprovalRequest, Decision
from tests.orchestrator.pcaps import tcp_conversation_pcap

SUB = "/subscriptions/00000000-0000-0000-0000-000000000001"


class FakeClock:
    """Wall clock and monotonic clock that only move when the code sleeps (or a test ticks)."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 15, 14, 32, 0, tzinfo=UTC)
        self.mono = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.tick(seconds)

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.mono += seconds


class ScriptedApprover:
    """Answers from a queue; None means "the answer comes later" (a chat card)."""

    decides_immediately = True

    def __init__(self, *answers: Decision | None) -> None:
        self.answers: deque[Decision | None] = deque(answers)
        self.seen: list[ApprovalRequest] = []

    def request(self, request: ApprovalRequest) -> Decision | None:
        self.seen.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected approval request: {request.command}")
        return self.answers.popleft()


def approve(n: int = 1) -> list[Decision]:
    return [Decision.approve("alice")] * n


@dataclass
class FakeCloud:
    """An in-memory Azure: VMs, containers, blobs and captures with scripted statuses."""

    vms: dict[str, TargetInfo] = field(default_factory=dict)
    containers: set[tuple[str, str]] = field(default_factory=set)
    blobs: dict[tuple[str, str, str], bytes] = field(default_factory=dict)
    captures: dict[str, dict[str, object]] = field(default_factory=dict)
    statuses: dict[str, deque[str]] = field(default_factory=dict)
    default_statuses: tuple[str, ...] = ("Running", "Stopped")
    pcap: bytes = field(default_factory=tcp_conversation_pcap)
    pcaps: dict[str, bytes] = field(default_factory=dict)
    failures: dict[str, deque[CaptureBackendError | OSError]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def add_vm(self, name: str, rg: str = "prod-rg", location: str = "westus2",
               kind: str = "vm") -> None:
        provider = ("Microsoft.Compute/virtualMachines" if kind == "vm"
                    else "Microsoft.ContainerService/managedClusters")
        rid = f"{SUB}/resourceGroups/{rg}/providers/{provider}/{name}"
        self.vms[name] = TargetInfo(kind, rid, location, name)

    def fail(self, op: str, *errors: CaptureBackendError | OSError) -> None:
        self.failures.setdefault(op, deque()).extend(errors)

    def _maybe_fail(self, op: str, key: str) -> None:
        self.calls.append((op, key))
        queue = self.failures.get(op)
        if queue:
            raise queue.popleft()

    # ---- the CaptureBackend protocol
    def detect_target(self, target: str, resource_group: str) -> TargetInfo:
        self._maybe_fail("detect", target)
        name = target.rstrip("/").rsplit("/", 1)[-1]
        if name not in self.vms:
            raise CaptureBackendError("ResourceNotFound", f"The Resource {name} under "
                                      f"resource group {resource_group} was not found.")
        return self.vms[name]

    def verify_storage(self, account: str, container: str) -> None:
        self._maybe_fail("verify_storage", f"{account}/{container}")
        if (account, container) not in self.containers:
            raise CaptureBackendError("StorageInaccessible", f"container {container} not "
                                      f"found in account {account}")

    def create_capture(self, spec: CaptureSpec) -> None:
        self._maybe_fail("create", spec.name)
        self.captures[spec.name] = {"location": spec.location, "spec": spec}
        self.statuses[spec.name] = deque(self.default_statuses)

    def capture_status(self, location: str, name: str) -> CaptureStatus:
        self._maybe_fail("status", name)
        if name not in self.captures:
            raise CaptureBackendError("ResourceNotFound", f"capture {name} not found")
        queue = self.statuses[name]
        state = queue.popleft() if len(queue) > 1 else queue[0]
        if state == "Stopped":
            spec = self.captures[name]["spec"]
            assert isinstance(spec, CaptureSpec)
            key = (spec.storage_account, spec.container, spec.blob_name)
            self.blobs.setdefault(key, self.pcaps.get(name, self.pcap))
        return CaptureStatus(state, "TimeExceeded" if state == "Stopped" else "")

    def download_blob(self, account: str, container: str, blob: str, path: Path) -> int:
        self._maybe_fail("download", blob)
        data = self.blobs.get((account, container, blob))
        if data is None:
            raise CaptureBackendError("BlobNotFound", f"blob {blob} not found")
        path.write_bytes(data)
        return len(data)

    def delete_capture(self, location: str, name: str) -> bool:
        self._maybe_fail("delete_capture", name)
        return self.captures.pop(name, None) is not None

    def delete_blob(self, account: str, container: str, blob: str) -> bool:
        self._maybe_fail("delete_blob", blob)
        return self.blobs.pop((account, container, blob), None) is not None

    def list_captures(self, prefix: str) -> list[CaptureSummary]:
        self._maybe_fail("list", prefix)
        return [CaptureSummary(n, str(c["location"])) for n, c in self.captures.items()
                if n.startswith(prefix)]

    def blob_url(self, account: str, container: str, blob: str) -> str:
        return f"https://{account}.blob.core.windows.net/{container}/{blob}"

    def count(self, op: str) -> int:
        return sum(1 for o, _ in self.calls if o == op)
