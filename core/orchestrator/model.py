"""Task states, configuration, naming and the backoff schedule (orchestrator-design.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Final


class TaskState(StrEnum):
    CREATED = "CREATED"
    DETECTING = "DETECTING"
    APPROVED = "APPROVED"
    PROVISIONING = "PROVISIONING"
    WAITING = "WAITING"
    DOWNLOADING = "DOWNLOADING"
    ANALYZING = "ANALYZING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    CANCELLED = "CANCELLED"
    CLEANING_UP = "CLEANING_UP"
    DONE = "DONE"
    ABANDONED = "ABANDONED"


#: States a check_task can still advance (work remains before an outcome is known).
ACTIVE: Final = frozenset({
    TaskState.CREATED, TaskState.DETECTING, TaskState.APPROVED, TaskState.PROVISIONING,
    TaskState.WAITING, TaskState.DOWNLOADING, TaskState.ANALYZING,
})
#: Nothing more happens to these unless someone asks for cleanup.
TERMINAL: Final = frozenset({TaskState.DONE, TaskState.CANCELLED, TaskState.ABANDONED})
#: Outcomes that end a partner's wait in a dual-end capture.
PARTNER_FAILED: Final = frozenset({"failed", "timed_out", "cancelled", "abandoned"})

#: Response status per outcome (None = still running).
STATUS_OF_OUTCOME: Final = {
    None: "task_pending",
    "completed": "task_completed",
    "failed": "task_failed",
    "timed_out": "task_timed_out",
    "cancelled": "task_cancelled",
    "abandoned": "task_failed",
}

INTENTS: Final = ("capture_traffic", "check_task", "cancel_task", "list_tasks", "cleanup_task")
MAX_TIME_LIMIT_S: Final = 18000  # Network Watcher's cap (and default)
#: the capture_traffic tool's documented bound ("Max 300"): a capture holds a slot of the
#: region's packet-capture limit and the investigation waits on it, so longer runs are refused
MAX_CAPTURE_SECONDS: Final = 300


@dataclass(frozen=True)
class OrchestratorConfig:
    """The spec's constructor parameters (task_dir is replaced by the TaskLog port)."""

    max_polls: int = 20
    initial_poll_interval: float = 5.0
    max_poll_interval: float = 30.0
    poll_burst_limit: float = 45.0
    local_capture_dir: Path = Path("/tmp/captures")
    storage_container: str = "captures"
    capture_name_prefix: str = "ghost"
    local_artifact_max_age_days: int = 7
    download_retry_delay: float = 5.0
    storage_auth_mode: str = "login"  # shown in the az equivalent; the backend does the auth
    #: where a capture goes when the model names no account (GHOST_CAPTURE_STORAGE_ACCOUNT:
    #: the Bicep sets it to the capture account it creates, in Ghost's own resource group)
    storage_account: str | None = None
    storage_resource_group: str | None = None

    #: the backend is the lab's simulated estate: a resource left behind costs nothing
    simulated: bool = False


def backoff_seconds(attempt: int, config: OrchestratorConfig) -> float:
    """``min(initial * 2^(attempt-1), max)``: the sleep after poll number ``attempt``."""
    exponent = max(attempt - 1, 0)
    return float(min(config.initial_poll_interval * (2 ** min(exponent, 30)),
                     config.max_poll_interval))


_UNSAFE_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]+")


def target_short_name(target: str) -> str:
    """The last segment of a resource id, or the name itself, safe for a capture name."""
    name = target.rstrip("/").rsplit("/", 1)[-1]
    return _UNSAFE_NAME_CHARS.sub("-", name).strip("-.") or "target"


def make_task_id(prefix: str, target: str, moment: datetime) -> str:
    """``{prefix}_{target}_{YYYYMMDDTHHMMSS}``: deterministic, sortable, orphan-detectable."""
    stamp = moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S")
    return f"{prefix}_{target_short_name(target)[:48]}_{stamp}"
