"""Fixtures: the real Store and SafeExecShell, a fake cloud at the backend port, a fake clock."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.orchestrator import CloudOrchestrator, OrchestratorConfig
from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from storage.store import Store
from tests.orchestrator.fakes import FakeClock, FakeCloud, ScriptedApprover


@pytest.fixture(autouse=True)
def forensics_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell runs ghost-forensics from PATH, as deployed; the venv's bin holds it."""
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture
def sid(store: Store) -> str:
    return store.create_investigation(symptom="502s from web-vm-01", model="m",
                                      audit_dir="a", requested_by="U_REQ").session_id


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cloud() -> FakeCloud:
    c = FakeCloud()
    c.add_vm("web-vm-01")
    c.add_vm("redis-vm")
    c.containers.add(("forensicssa", "captures"))
    return c


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    (d / "captures").mkdir(parents=True)
    return d


class World:
    """Builds orchestrators the way a process would: its own shell over the shared store."""

    def __init__(self, store: Store, sid: str, cloud: FakeCloud, clock: FakeClock,
                 data_dir: Path) -> None:
        self.store, self.sid, self.cloud, self.clock = store, sid, cloud, clock
        self.data_dir = data_dir
        # key auth: the blob download is gated (a key read), so the approval flows around it
        # are exercised; with login auth it is a SAFE read (test_capture_lifecycle, issue 28)
        self.config = OrchestratorConfig(local_capture_dir=data_dir / "captures",
                                         storage_auth_mode="key")

    def shell(self, *answers: Decision | None, sid: str | None = None) -> SafeExecShell:
        return SafeExecShell(sid or self.sid, audit=self.store, approvals=self.store,
                             approver=ScriptedApprover(*answers), data_dir=self.data_dir,
                             requested_by="U_REQ", clock=self.clock)

    def orchestrator(self, *answers: Decision | None, shell: SafeExecShell | None = None,
                     sid: str | None = None, **kw: Any) -> CloudOrchestrator:
        kw.setdefault("config", self.config)
        return CloudOrchestrator(
            shell=shell or self.shell(*answers, sid=sid), backend=self.cloud, tasks=self.store,
            session_id=sid or self.sid, clock=self.clock, sleep=self.clock.sleep,
            monotonic=self.clock.monotonic, **kw)

    def seen(self, orch: CloudOrchestrator) -> list[str]:
        approver = orch.lifecycle.shell.approver  # type: ignore[attr-defined]
        return [r.command for r in approver.seen]

    def records(self, task_id: str) -> list[dict[str, Any]]:
        return [r for r in self.store.task_events(self.sid) if r["task_id"] == task_id]


@pytest.fixture
def world(store: Store, sid: str, cloud: FakeCloud, clock: FakeClock,
          data_dir: Path) -> World:
    return World(store, sid, cloud, clock, data_dir)


def capture_request(target: str = "web-vm-01", **params: Any) -> dict[str, Any]:
    parameters = {"duration_seconds": 60, "storage_account": "forensicssa",
                  "resource_group": "prod-rg", **params}
    return {"intent": "capture_traffic", "target": target, "parameters": parameters,
            "investigation_context": "Intermittent 502s from web-vm-01 to redis."}


Factory = Callable[..., CloudOrchestrator]
