"""CloudOrchestrator: the Brain's entry point for packet captures (orchestrator-design.md).

``orchestrate(request) -> response`` dispatches the five intents and never raises. The state
machine lives in :mod:`core.orchestrator.lifecycle`; this module validates requests, creates
tasks, and maps the intents onto the lifecycle. Polling is Brain-driven (bursts inside
``check_task``); nothing runs in the background.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from core.orchestrator import orphans
from core.orchestrator.backend import CaptureBackend
from core.orchestrator.gate import GateShell
from core.orchestrator.lifecycle import Lifecycle, describe
from core.orchestrator.model import (
    ACTIVE,
    INTENTS,
    TERMINAL,
    OrchestratorConfig,
    TaskState,
    make_task_id,
    target_short_name,
)
from core.orchestrator.records import Task, build_response, enter, new_task, state_of
from core.orchestrator.registry import TaskRegistry
from core.orchestrator.steps import StepBook, capture_entry, local_entry
from core.orchestrator.validation import RequestError, capture_parameters, split_targets
from core.ports import TaskLog
from core.safety.approval import Decision
from core.session_state import utc_now

log = logging.getLogger("ghost.orchestrator")


def error_response(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "error", "error": code, "message": message, **extra}


class CloudOrchestrator:
    """One per investigation (session); any process may build one and continue its tasks."""

    def __init__(
        self, *, shell: GateShell, backend: CaptureBackend, tasks: TaskLog, session_id: str,
        config: OrchestratorConfig | None = None,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        is_session_live: Callable[[str], bool | orphans.Liveness] | None = None,
        scan_orphans: bool = False,
    ) -> None:
        self.session_id = session_id
        self.config = config or OrchestratorConfig()
        self.clock = clock
        self.registry = TaskRegistry(tasks, session_id)
        self.lifecycle = Lifecycle(
            shell=shell, steps=StepBook(backend, self.config, sleep), registry=self.registry,
            config=self.config, clock=clock, sleep=sleep, monotonic=monotonic)
        self.is_session_live = is_session_live or (lambda sid: sid == session_id)
        self._orphan_scan_due = scan_orphans

    # ------------------------------------------------------------------ entry point
    def orchestrate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Dispatch one Brain request; every failure is a ``status: error`` response."""
        self.lifecycle.denials = {}
        response = self._guarded(request, foreign=())
        if self._orphan_scan_due:
            self._orphan_scan_due = False
            response["orphans"] = self.detect_orphans()
        return response

    def orphan_cleaner(self) -> OrphanCleaner:
        """The orphan-cleanup path: ``cleanup_task`` and ``check_task`` on other (ended)
        investigations' tasks, after a person chose to clean them up. Not for the model."""
        return OrphanCleaner(self)

    def _dispatch(self, request: Mapping[str, Any], *,
                  foreign: tuple[str, ...] = ()) -> dict[str, Any]:
        """``foreign``: the intents allowed on another investigation's task (none for the
        model: it acts on its own investigation's tasks only)."""
        if not isinstance(request, Mapping):
            raise RequestError("invalid_request", "A request is an object with an intent.")
        intent = request.get("intent")
        if intent not in INTENTS:
            raise RequestError("unknown_intent", f"Unsupported intent: {intent!r}. Supported: "
                               f"{', '.join(INTENTS)}.")
        if intent == "capture_traffic":
            return self._capture(request)
        if intent == "list_tasks":
            tasks = self.registry.session_tasks()
            now = self.clock()
            return {"status": "ok", "session_id": self.session_id, "count": len(tasks),
                    "tasks": [build_response(t, now, message=describe(t)) for t in tasks],
                    "message": f"{len(tasks)} task(s) in this investigation."}
        task_id = request.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise RequestError("missing_parameter", f"task_id is required for {intent}")
        task = self.registry.load(task_id)
        if task is None:
            raise RequestError("unknown_task", f"No task found with ID: {task_id}")
        owner = str(task.get("session_id") or "")
        if owner != self.session_id:
            if intent not in foreign:
                raise RequestError(
                    "unknown_task", f"Task {task_id} belongs to another investigation, not "
                    f"this one; {intent} acts only on this investigation's tasks (list_tasks "
                    "shows them). Leftovers of other investigations are offered to the "
                    "engineers as orphans at start-up.")
            if orphans.liveness(self.is_session_live(owner)).live:
                raise RequestError(
                    "unknown_task", f"Task {task_id} belongs to investigation {owner}, which "
                    "is still running: it is not an orphan, so it is not cleaned up here.")
        if intent == "check_task":
            return self._respond(task, self.lifecycle.advance(task, poll=True))
        if intent == "cancel_task":
            return self._cancel(task)
        return self._cleanup(task, request.get("parameters") or {})

    def _guarded(self, request: Mapping[str, Any], foreign: tuple[str, ...]) -> dict[str, Any]:
        try:
            return self._dispatch(request, foreign=foreign)
        except RequestError as exc:
            return error_response(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - the contract: never raise
            log.exception("orchestrator failed on %r", request)
            return error_response("internal_error", f"Orchestrator error: "
                                  f"{type(exc).__name__}: {exc}. The task record holds the "
                                  "last good state; check_task continues from it.")

    def _respond(self, task: Task, message: str) -> dict[str, Any]:
        partner = (self.registry.load(task["paired_task_id"])
                   if task.get("paired_task_id") else None)
        response = build_response(task, self.clock(), message=message, partner=partner)
        denial = self.lifecycle.denials.get(task["task_id"])
        if denial is not None:
            # a HITL denial: the engine counts it against the active hypotheses (with _meta)
            response.update(denied=True, denied_command=denial["command"],
                            denial_reason=denial["reason"], audit_id=denial["audit_id"])
        return response

    # --------------------------------------------------------------- capture_traffic
    def _capture(self, request: Mapping[str, Any]) -> dict[str, Any]:
        targets = split_targets(request.get("target"))
        params = capture_parameters(request.get("parameters"),
                                    default_account=self.config.storage_account,
                                    default_resource_group=self.config.storage_resource_group)
        asked_mode = params.pop("storage_auth_mode", None)
        used_mode = self.lifecycle.steps.auth_mode
        context = str(request.get("investigation_context") or "")
        now = self.clock()
        tasks: list[Task] = []
        for target in targets:
            task_id = self.registry.reserve(make_task_id(self.config.capture_name_prefix,
                                                         target, now),
                                            {t["task_id"] for t in tasks})
            task = new_task(task_id=task_id, session_id=self.session_id, target=target,
                            parameters=params, context=context, config=self.config, now=now)
            task["storage_auth_mode"] = used_mode
            if asked_mode and asked_mode != used_mode:
                task["warnings"].append(
                    f"storage_auth_mode {asked_mode!r} was asked for, but this Ghost reaches "
                    f"storage with {used_mode!r} (GHOST_AZURE_STORAGE_AUTH_MODE): that is what "
                    "the approvals and the audit show, and what is used.")
            tasks.append(task)
        if len(tasks) == 2:
            a, b = tasks
            a.update(paired_task_id=b["task_id"], pair_role="source")
            b.update(paired_task_id=a["task_id"], pair_role="destination")
        for task in tasks:
            self.lifecycle.save(task)
        messages = [self.lifecycle.advance(task, poll=False) for task in tasks]
        responses = [self._respond(t, m) for t, m in zip(tasks, messages, strict=True)]
        if len(responses) == 1:
            return responses[0]
        return {**responses[0], "tasks": responses,
                "message": f"Dual-end capture: {messages[0]} | {messages[1]}"}

    # ------------------------------------------------------------ cancel and cleanup
    def _cancel(self, task: Task) -> dict[str, Any]:
        state = state_of(task)
        if state not in ACTIVE:
            hint = " Use cleanup_task to remove its resources." if state is TaskState.COMPLETED \
                else ""
            return self._respond(task, f"Task is already {state.value}; nothing to cancel."
                                 + hint)
        pending = task.get("pending_step")
        if pending:
            self._withdraw(str(pending["approval_id"]))
        enter(task, TaskState.CANCELLED, self.clock(),
              error=f"Cancelled on request while {state.value}")
        task["pending_step"] = None
        if self.lifecycle.begin_cleanup(task, include_artifacts=False):
            return self._respond(task, self.lifecycle.advance(task, poll=False))
        self.lifecycle.save(task)
        return self._respond(task, "Task cancelled. No cloud resources were created.")

    def _withdraw(self, approval_id: str) -> None:
        """Close a waiting approval so a late click cannot run a cancelled step."""
        self.lifecycle.shell.decide(approval_id, Decision.abandon("ghost", "The task was "
                                                                  "cancelled."))

    def _cleanup(self, task: Task, params: Mapping[str, Any]) -> dict[str, Any]:
        state = state_of(task)
        if state in ACTIVE and task.get("outcome") is None:
            raise RequestError("invalid_state", f"Task {task['task_id']} is still {state.value};"
                               " cancel it first with cancel_task.")
        if state is TaskState.CLEANING_UP:
            return self._respond(task, self.lifecycle.advance(task, poll=False))
        include = bool(params.get("include_artifacts")) if isinstance(params, Mapping) else False
        done = state in TERMINAL and task.get("cleanup_status") in ("completed", "skipped")
        if done and not include:
            return self._respond(task, "Cleanup already done; nothing left to delete.")
        if self.lifecycle.begin_cleanup(task, include_artifacts=include):
            return self._respond(task, self.lifecycle.advance(task, poll=False))
        self.lifecycle.save(task)
        return self._respond(task, describe(task))

    # ---------------------------------------------------------------------- orphans
    def detect_orphans(self) -> dict[str, Any]:
        """Run the three layers now (start-up does this once) and return the report."""
        report = orphans.detect(
            self.lifecycle, session_id=self.session_id,
            prefix=self.config.capture_name_prefix,
            max_age_days=self.config.local_artifact_max_age_days,
            capture_dir=self.config.local_capture_dir, is_live=self.is_session_live)
        return report.to_dict()

    def cleanup_orphans(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """Delete untracked captures and stale files from a report, as one approval batch.

        The batch is a task record of its own (intent ``cleanup_orphans``), so its approvals
        wait and resume like any task's: continue it with check_task or cleanup_task.
        """
        entries = [capture_entry(str(c["location"]), str(c["name"]))
                   for c in report.get("untracked_captures") or []]
        entries += [local_entry(str(f["path"])) for f in report.get("stale_files") or []]
        if not entries:
            return error_response("nothing_to_clean", "The report lists no untracked captures "
                                  "or stale files.")
        now = self.clock()
        task_id = self.registry.reserve(make_task_id(self.config.capture_name_prefix,
                                                     target_short_name("orphans"), now))
        task = new_task(task_id=task_id, session_id=self.session_id, target="orphans",
                        parameters={"resource_group": "-", "storage_account": "-"},
                        context="Startup cleanup", config=self.config, now=now)
        task.update(intent="cleanup_orphans", cleanup_plan=entries, capture_created=True,
                    cleanup_reason=f"Startup cleanup: {len(entries)} orphaned resources from "
                    "previous sessions.")
        enter(task, TaskState.CLEANING_UP, now)
        self.lifecycle.save(task)
        return self._respond(task, self.lifecycle.advance(task, poll=False))


class OrphanCleaner:
    """What the orphan cleanup (a person's Clean up choice, in chat or at the terminal) uses.

    ``orchestrate`` takes ``cleanup_task`` and ``check_task`` (continuing a deletion that waited
    for its approval) on the tasks of investigations that are no longer running, besides this
    one's; ``cancel_task`` stays limited to this investigation. ``cleanup_orphans`` deletes the
    untracked captures and stale files of a report as one batch.
    """

    FOREIGN = ("cleanup_task", "check_task")

    def __init__(self, orchestrator: CloudOrchestrator) -> None:
        self.orchestrator = orchestrator

    def orchestrate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self.orchestrator._guarded(request, foreign=self.FOREIGN)

    def cleanup_orphans(self, report: Mapping[str, Any]) -> dict[str, Any]:
        return self.orchestrator.cleanup_orphans(report)
