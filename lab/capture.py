"""LabCaptureBackend: Network Watcher packet captures against the lab's estate.

Implements ``core.orchestrator.backend.CaptureBackend``, so ``capture_traffic``, ``check_task``,
``cancel_task`` and ``cleanup_task`` run unchanged, through the same gate. A capture is written at
creation (``lab/traffic.py``: the scenario's traffic as that VM sees it), reports ``Running``
for a short lab interval and then ``Stopped``. State lives in files under ``workdir`` (one JSON
record per capture, the pcap as its "blob"), so a chat worker in another process can poll and
download a capture this process created. Nothing here talks to Azure.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.orchestrator.backend import (
    EXTENSION_MISSING,
    NOT_FOUND,
    CaptureBackendError,
    CaptureSpec,
    CaptureStatus,
    CaptureSummary,
    TargetInfo,
)
from lab.pcap import PcapWriter
from lab.traffic import capture_frames

if TYPE_CHECKING:
    from lab.model import Scenario

EXTENSION_PUBLISHER = "Microsoft.Azure.NetworkWatcher"
#: ARM's answer to a VM-agent operation (extension, run-command, capture) on a stopped VM
VM_NOT_RUNNING = "OperationNotAllowed"
#: how long (wall seconds) a lab capture reports Running before it is Stopped
DEFAULT_RUN_SECONDS = 1.5
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class LabCaptureBackend:
    """Packet captures on the lab's VMs; blobs are files under ``workdir``."""

    #: read by orphan detection: the lab has its own (simulated) capture list to scan
    configured = True

    def __init__(self, scenario: Scenario, estate: Any, workdir: Path, *,
                 run_seconds: float = DEFAULT_RUN_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        # the estate at ``now`` (format 2's time windows resolved)
        self.scenario = getattr(estate, "scenario", scenario)
        self.estate = estate
        self.workdir = Path(workdir)
        self.run_seconds = run_seconds
        self.clock = clock

    # ------------------------------------------------------------------ detection
    def detect_target(self, target: str, resource_group: str) -> TargetInfo:
        vm = self._vm(target, resource_group)
        self._require_capturable(vm)
        return TargetInfo("vm", self.scenario.vm_id(vm.name), self.scenario.location, vm.name)

    def _vm(self, target: str, resource_group: str) -> Any:
        sub = self.scenario.subscription
        if target.startswith("/subscriptions/"):
            parts = target.strip("/").split("/")
            lower = [p.lower() for p in parts]
            name = parts[-1]
            group = parts[lower.index("resourcegroups") + 1] if "resourcegroups" in lower else ""
            vm = self.scenario.vm(name)
            if vm is None or self.scenario.vm_id(name).lower() != target.rstrip("/").lower():
                raise CaptureBackendError(NOT_FOUND, f"The Resource '{target}' was not found "
                                          f"(resource group {group!r}, subscription {sub}).")
            return vm
        vm = self.scenario.vm(target)
        if vm is None or vm.resource_group.lower() != resource_group.lower():
            raise CaptureBackendError(NOT_FOUND, f"No VM or AKS cluster named {target!r} in "
                                      f"resource group {resource_group!r} (subscription "
                                      f"{sub}).")
        return vm

    def _require_capturable(self, vm: Any) -> None:
        if vm.power_state != "running":
            raise CaptureBackendError(VM_NOT_RUNNING, f"VM {vm.name}: The operation requires "
                                      "the VM to be running (or set to run). Its power state "
                                      f"is {vm.power_state}.")
        if not vm.network_watcher_extension:
            raise CaptureBackendError(EXTENSION_MISSING, (
                f"VM {vm.name} has no Network Watcher extension ({EXTENSION_PUBLISHER}), which "
                "packet capture needs. Install it: az vm extension set --resource-group "
                f"{vm.resource_group} --vm-name {vm.name} --publisher {EXTENSION_PUBLISHER} "
                "--name NetworkWatcherAgentLinux (NetworkWatcherAgentWindows on Windows)."))

    # -------------------------------------------------------------------- storage
    def verify_storage(self, account: str, container: str) -> None:
        return None  # the lab's storage account exists and is writable

    def blob_url(self, account: str, container: str, blob: str) -> str:
        return f"https://{account}.blob.core.windows.net/{container}/{blob}"

    def _blob_path(self, account: str, container: str, blob: str) -> Path:
        return self.workdir / "blobs" / _SAFE.sub("_", account) / _SAFE.sub("_", container) \
            / _SAFE.sub("_", blob)

    def download_blob(self, account: str, container: str, blob: str, path: Path) -> int:
        source = self._blob_path(account, container, blob)
        try:
            data = source.read_bytes()
        except FileNotFoundError as exc:
            raise CaptureBackendError(NOT_FOUND, f"The specified blob does not exist "
                                      f"({account}/{container}/{blob}).") from exc
        path.write_bytes(data)
        return len(data)

    def delete_blob(self, account: str, container: str, blob: str) -> bool:
        path = self._blob_path(account, container, blob)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed

    # ------------------------------------------------------------------- captures
    def _record_path(self, name: str) -> Path:
        return self.workdir / "captures" / f"{_SAFE.sub('_', name)}.json"

    def _record(self, location: str, name: str) -> dict[str, Any]:
        path = self._record_path(name)
        try:
            record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            record = {}
        if not record or record.get("location") != location:
            raise CaptureBackendError(NOT_FOUND, f"Packet capture {name!r} was not found in "
                                      f"{location} (Network Watcher NetworkWatcher_{location}).")
        return record

    def create_capture(self, spec: CaptureSpec) -> None:
        vm = self._vm(spec.target_resource_id, "")
        self._require_capturable(vm)
        if self._record_path(spec.name).exists():
            raise CaptureBackendError("PacketCaptureAlreadyExists", f"A packet capture named "
                                      f"{spec.name!r} already exists in {spec.location}.")
        start = self.scenario.now.timestamp()
        frames = capture_frames(self.scenario, self.estate, vm.name, spec.time_limit_seconds,
                                start_s=start, keep=packet_filter(spec.filters, vm.ip))
        writer = PcapWriter(snaplen=spec.bytes_to_capture_per_packet or 65535)
        total = 24
        for ts, frame in frames:
            size = 16 + min(len(frame), writer.snaplen)
            if total + size > spec.total_bytes_per_session:
                break  # the session's byte limit ends the capture, as on Azure
            writer.add(ts, frame)
            total += size
        blob = self._blob_path(spec.storage_account, spec.container, spec.blob_name)
        blob.parent.mkdir(parents=True, exist_ok=True)
        writer.write(blob)
        record = {"name": spec.name, "location": spec.location, "vm": vm.name,
                  "target": spec.target_resource_id, "created": self.clock(),
                  "run_seconds": min(self.run_seconds, float(spec.time_limit_seconds)),
                  "packets": len(writer.packets), "blob": str(blob)}
        path = self._record_path(spec.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record), encoding="utf-8")

    def capture_status(self, location: str, name: str) -> CaptureStatus:
        record = self._record(location, name)
        if self.clock() - float(record["created"]) < float(record["run_seconds"]):
            return CaptureStatus("Running")
        return CaptureStatus("Stopped", "TimeExceeded")

    def delete_capture(self, location: str, name: str) -> bool:
        try:
            self._record(location, name)
        except CaptureBackendError:
            return False
        self._record_path(name).unlink(missing_ok=True)
        return True

    def list_captures(self, prefix: str) -> list[CaptureSummary]:
        folder = self.workdir / "captures"
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            record = json.loads(path.read_text(encoding="utf-8"))
            if str(record.get("name", "")).startswith(prefix):
                found.append(CaptureSummary(record["name"], record["location"],
                                            record.get("target", "")))
        return found


def packet_filter(filters: tuple[Mapping[str, str], ...],
                  local: IPv4Address) -> Callable[[bytes], bool] | None:
    """Network Watcher's 5-tuple filters (any filter may match; fields within one all must)."""
    if not filters:
        return None

    def keep(ip: bytes) -> bool:
        if len(ip) < 20:
            return False
        proto = {6: "TCP", 17: "UDP"}.get(ip[9], "")
        src, dst = IPv4Address(ip[12:16]), IPv4Address(ip[16:20])
        ihl = (ip[0] & 0x0F) * 4
        ports = (int.from_bytes(ip[ihl:ihl + 2], "big"), int.from_bytes(ip[ihl + 2:ihl + 4],
                                                                         "big")) \
            if proto and len(ip) >= ihl + 4 else (None, None)
        # the local side is the capturing VM's address (either side, for forwarded packets)
        sides = [(src, ports[0], dst, ports[1]), (dst, ports[1], src, ports[0])]
        if dst == local:
            sides.reverse()
        return any(_matches(f, proto, side) for f in filters for side in sides)

    return keep


def _matches(flt: Mapping[str, str], proto: str,
             side: tuple[IPv4Address, int | None, IPv4Address, int | None]) -> bool:
    local_ip, local_port, remote_ip, remote_port = side
    wanted = str(flt.get("protocol") or "Any").upper()
    if wanted not in ("ANY", "ALL") and wanted != proto:
        return False
    return (_ip_in(flt.get("localIPAddress"), local_ip)
            and _ip_in(flt.get("remoteIPAddress"), remote_ip)
            and _port_in(flt.get("localPort"), local_port)
            and _port_in(flt.get("remotePort"), remote_port))


def _items(value: str) -> list[str]:
    return [v.strip() for v in re.split(r"[;,]", value) if v.strip()]


def _ip_in(value: str | None, ip: IPv4Address) -> bool:
    if not value:
        return True
    for item in _items(value):
        if "-" in item:
            low, high = (IPv4Address(x.strip()) for x in item.split("-", 1))
            if low <= ip <= high:
                return True
        elif "/" in item:
            if ip in IPv4Network(item, strict=False):
                return True
        elif ip == IPv4Address(item):
            return True
    return False


def _port_in(value: str | None, port: int | None) -> bool:
    if not value:
        return True
    if port is None:
        return False
    for item in _items(value):
        low, _, high = item.partition("-")
        if int(low) <= port <= int(high or low):
            return True
    return False
