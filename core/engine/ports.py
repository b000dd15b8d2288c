"""What the engine needs from the world: the store, the tools, and someone to tell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from core.ports import AuditLog


class InvestigationRecord(Protocol):
    """The parts of a stored investigation the engine reads."""

    @property
    def session_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def checksum(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def requested_by(self) -> str | None: ...
    @property
    def symptom(self) -> str: ...
    @property
    def engine_state(self) -> dict[str, Any] | None: ...
    @property
    def document(self) -> dict[str, Any]: ...


class EngineStore(AuditLog, Protocol):
    """Investigations, turns, audit and task records (``storage.Store`` implements it)."""

    def get_investigation(self, session_id: str) -> InvestigationRecord: ...

    def save_state(
        self,
        session_id: str,
        state: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        status: str | None = None,
        engine_state: Mapping[str, Any] | None = None,
        rca_markdown: str | None = None,
        turns: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> InvestigationRecord: ...

    def append_turn(self, session_id: str, role: str, content: Mapping[str, Any]) -> int: ...

    def turns(self, session_id: str) -> list[dict[str, Any]]: ...

    def task_events(self, session_id: str) -> list[dict[str, Any]]: ...


class Shell(Protocol):
    """``core.safety.shell.SafeExecShell`` as the engine uses it."""

    def execute(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def resume(self, approval_id: str) -> dict[str, Any]: ...

    def recover_interrupted(self) -> list[str]: ...


class Orchestrator(Protocol):
    """``core.orchestrator.CloudOrchestrator``: five intents, never raises."""

    def orchestrate(self, request: Mapping[str, Any]) -> dict[str, Any]: ...


class OrphanCleanup(Orchestrator, Protocol):
    """The orchestrator's orphan-cleanup path (``CloudOrchestrator.orphan_cleaner()``): the
    five intents on ended investigations' tasks, plus the batch deletion of untracked captures
    and stale files."""

    def cleanup_orphans(self, report: Mapping[str, Any]) -> dict[str, Any]: ...


class Notifier(Protocol):
    """The front end: what it shows while the engine works. Every method may be a no-op."""

    def model_text(self, session_id: str, text: str) -> None: ...

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None: ...

    def approval_pending(self, session_id: str, name: str, args: Mapping[str, Any],
                         result: Mapping[str, Any]) -> None: ...

    def state_changed(self, session_id: str, state: Mapping[str, Any],
                      engine_state: Mapping[str, Any]) -> None: ...

    def model_outage(self, session_id: str, error: str, until: datetime) -> None: ...


class NullNotifier:
    """Shows nothing (tests, the worker before a chat front end is attached)."""

    def model_text(self, session_id: str, text: str) -> None:
        return None

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None:
        return None

    def approval_pending(self, session_id: str, name: str, args: Mapping[str, Any],
                         result: Mapping[str, Any]) -> None:
        return None

    def state_changed(self, session_id: str, state: Mapping[str, Any],
                      engine_state: Mapping[str, Any]) -> None:
        return None

    def model_outage(self, session_id: str, error: str, until: datetime) -> None:
        return None
