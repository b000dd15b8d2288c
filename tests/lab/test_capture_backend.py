"""LabCaptureBackend: the CaptureBackend port as Network Watcher would answer it, on files."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.orchestrator.backend import (
    EXTENSION_MISSING,
    NOT_FOUND,
    CaptureBackendError,
    CaptureSpec,
)
from lab.capture import VM_NOT_RUNNING, LabCaptureBackend
from lab.network import Estate
from lab.scenario import parse_scenario

from .wiring_fixtures import scenario_data


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def lab(tmp_path: Path) -> tuple[LabCaptureBackend, Clock]:
    scenario = parse_scenario(scenario_data(), "wiring-test.yaml")
    clock = Clock()
    return LabCaptureBackend(scenario, Estate(scenario), tmp_path, run_seconds=2.0,
                             clock=clock), clock


def spec(backend: LabCaptureBackend, vm: str = "app-1", name: str = "ghost_app-1_1",
         **extra: object) -> CaptureSpec:
    target = backend.detect_target(vm, backend.scenario.vm(vm).resource_group)
    return CaptureSpec(name=name, target_resource_id=target.resource_id,
                       location=target.location, storage_account="ghostlab",
                       storage_resource_group="rg-ops", container="captures",
                       blob_name=f"{name}.pcap", time_limit_seconds=20, **extra)  # type: ignore[arg-type]


def test_detect_target_finds_a_vm_by_name_or_id_in_its_resource_group(
        lab: tuple[LabCaptureBackend, Clock]) -> None:
    backend, _ = lab
    info = backend.detect_target("app-1", "rg-app")
    assert (info.target_type, info.name, info.location) == ("vm", "app-1", "northeurope")
    assert info.resource_id.endswith("/resourceGroups/rg-app/providers/Microsoft.Compute/"
                                     "virtualMachines/app-1")
    assert backend.detect_target(info.resource_id, "anything").name == "app-1"
    with pytest.raises(CaptureBackendError) as wrong_group:
        backend.detect_target("app-1", "rg-data")
    assert wrong_group.value.code == NOT_FOUND and "rg-data" in wrong_group.value.message


def test_a_stopped_vm_and_a_vm_without_the_extension_cannot_be_captured(
        lab: tuple[LabCaptureBackend, Clock]) -> None:
    backend, _ = lab
    with pytest.raises(CaptureBackendError) as stopped:
        backend.detect_target("stopped-1", "rg-data")
    assert stopped.value.code == VM_NOT_RUNNING
    assert "requires the VM to be running" in stopped.value.message
    with pytest.raises(CaptureBackendError) as noext:
        backend.detect_target("noext-1", "rg-data")
    assert noext.value.code == EXTENSION_MISSING
    assert "NetworkWatcherAgentLinux" in noext.value.message


def test_a_capture_runs_on_the_lab_clock_then_its_blob_downloads_as_a_pcap(
        lab: tuple[LabCaptureBackend, Clock], tmp_path: Path) -> None:
    backend, clock = lab
    s = spec(backend)
    backend.create_capture(s)
    assert backend.capture_status(s.location, s.name).state == "Running"
    clock.now += 2.5
    assert backend.capture_status(s.location, s.name).state == "Stopped"
    out = tmp_path / "down.pcap"
    size = backend.download_blob("ghostlab", "captures", s.blob_name, out)
    data = out.read_bytes()
    assert size == len(data) > 24 and data[:4] == bytes.fromhex("d4c3b2a1")
    assert backend.blob_url("ghostlab", "captures", s.blob_name) == \
        f"https://ghostlab.blob.core.windows.net/captures/{s.blob_name}"


def test_another_process_sees_the_capture_and_cleanup_is_idempotent(
        lab: tuple[LabCaptureBackend, Clock], tmp_path: Path) -> None:
    backend, clock = lab
    s = spec(backend)
    backend.create_capture(s)
    with pytest.raises(CaptureBackendError):
        backend.create_capture(s)
    other = LabCaptureBackend(backend.scenario, backend.estate, backend.workdir, clock=clock)
    assert [c.name for c in other.list_captures("ghost_")] == [s.name]
    assert other.list_captures("other_") == []
    assert other.delete_capture(s.location, s.name) is True
    assert backend.delete_capture(s.location, s.name) is False
    with pytest.raises(CaptureBackendError) as gone:
        backend.capture_status(s.location, s.name)
    assert gone.value.code == NOT_FOUND
    assert backend.delete_blob("ghostlab", "captures", s.blob_name) is True
    assert backend.delete_blob("ghostlab", "captures", s.blob_name) is False
    with pytest.raises(CaptureBackendError) as missing:
        backend.download_blob("ghostlab", "captures", s.blob_name, tmp_path / "x.pcap")
    assert missing.value.code == NOT_FOUND


def test_the_session_byte_limit_and_snap_length_bound_the_capture(
        lab: tuple[LabCaptureBackend, Clock], tmp_path: Path) -> None:
    backend, _ = lab
    full, small = spec(backend, name="ghost_full"), spec(backend, name="ghost_small",
                                                        total_bytes_per_session=2000,
                                                        bytes_to_capture_per_packet=54)
    backend.create_capture(full)
    backend.create_capture(small)
    a = backend.download_blob("ghostlab", "captures", full.blob_name, tmp_path / "a.pcap")
    b = backend.download_blob("ghostlab", "captures", small.blob_name, tmp_path / "b.pcap")
    assert b <= 2000 < a
