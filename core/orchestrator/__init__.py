"""The Cloud Orchestrator: packet-capture tasks as a durable, gated state machine.

See docs/orchestrator.md. No cloud SDK here: the cloud is reached through
:class:`~core.orchestrator.backend.CaptureBackend`, every call passes the safety shell.
"""

from core.orchestrator.backend import (
    CaptureBackend,
    CaptureBackendError,
    CaptureSpec,
    CaptureStatus,
    CaptureSummary,
    TargetInfo,
)
from core.orchestrator.model import OrchestratorConfig, TaskState, backoff_seconds
from core.orchestrator.orchestrator import CloudOrchestrator

__all__ = [
    "CaptureBackend", "CaptureBackendError", "CaptureSpec", "CaptureStatus", "CaptureSummary",
    "CloudOrchestrator", "OrchestratorConfig", "TargetInfo", "TaskState", "backoff_seconds",
]
