"""The task state machine: advance a task one gated step at a time until it must stop.

A step either finishes (its outcome is applied and the loop continues), or waits for a human
(``pending_step`` records which step and which approval, the record is saved, and the loop
stops). Waiting steps are finished by :meth:`Lifecycle.advance` in any process: the step's call
is rebuilt from the record and handed to ``shell.resume``, which runs it at most once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from core.orchestrator.gate import GateShell, Outcome, read_outcome
from core.orchestrator.model import (
    PARTNER_FAILED,
    TERMINAL,
    OrchestratorConfig,
    TaskState,
    backoff_seconds,
)
from core.orchestrator.records import Task, enter, note_audit, state_of
from core.orchestrator.registry import TaskRegistry
from core.orchestrator.steps import Step, StepBook, cleanup_entries
from core.session_state import iso_utc

log = logging.getLogger("ghost.orchestrator")

S = TaskState
CLEANED = ("deleted", "already_deleted", "not_created")


class Lifecycle:
    """Runs the state machine of one task at a time (the investigation's lease serialises)."""

    def __init__(self, *, shell: GateShell, steps: StepBook, registry: TaskRegistry,
                 config: OrchestratorConfig, clock: Callable[[], datetime],
                 sleep: Callable[[float], None],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.shell = shell
        self.steps = steps
        self.registry = registry
        self.config = config
        self.clock = clock
        self.sleep = sleep
        self.monotonic = monotonic
        self._polling = False
        #: steps an engineer denied during the current request (task_id → what was denied);
        #: the orchestrator reports them once, so the engine counts each denial once
        self.denials: dict[str, dict[str, str | None]] = {}

    # ------------------------------------------------------------------ the loop
    def advance(self, task: Task, *, poll: bool) -> str:
        """Advance until the task must wait; return the message for the Brain."""
        self._polling = poll
        if task.get("pending_step"):
            message = self._resume(task)
            if message is not None:
                return message
        while True:
            handler = {
                S.CREATED: self._created, S.DETECTING: self._detecting,
                S.APPROVED: self._approved, S.PROVISIONING: self._waiting,
                S.WAITING: self._waiting, S.DOWNLOADING: self._downloading,
                S.ANALYZING: self._analyzing, S.CLEANING_UP: self._cleaning,
            }.get(state_of(task))
            if handler is None:
                return describe(task)
            if handler == self._waiting and not poll:
                return describe(task)
            message = handler(task)
            if message is not None:
                return message

    def save(self, task: Task) -> None:
        self.registry.save(task)

    # ------------------------------------------------------------- gate plumbing
    def _do(self, task: Task, step: str, index: int | None = None) -> str | None:
        if step == "analyze":
            command, reasoning = self._analysis_command(task)
            response = self.shell.execute({"command": command, "reasoning": reasoning})
        else:
            command, reasoning, call = self._build(task, step, index)
            if call is None:  # every non-analysis step is a backend call
                raise AssertionError(f"step {step} has no call")
            environment = "local" if command.startswith("rm ") else "azure"
            reasoning += (" (Ghost deletes this file itself; `rm` is its shell equivalent.)"
                          if environment == "local" else " (Ghost makes this call through the "
                          "Azure SDK; the command is its az equivalent.)")
            response = self.shell.execute_call(command, reasoning, call,
                                               environment=environment)
        return self._after(task, step, index, command, response)

    def _build(self, task: Task, step: str, index: int | None) -> Step:
        if step == "cleanup":
            assert index is not None
            return self.steps.cleanup(task["cleanup_plan"][index], cleanup_reason(task))
        return {"detect": self.steps.detect, "verify_storage": self.steps.verify_storage,
                "create": self.steps.create, "poll": self.steps.poll,
                "download": self.steps.download}[step](task)

    def _resume(self, task: Task) -> str | None:
        pending = task["pending_step"]
        step, index = pending["step"], pending.get("index")
        call = None if step == "analyze" else self._build(task, step, index)[2]
        try:
            response = self.shell.resume(pending["approval_id"], call=call)
        except KeyError as exc:
            response = {"status": "error", "error": "approval_missing",
                        "stderr": f"approval_missing: {exc}"}
        return self._after(task, step, index, pending["command"], response)

    def _after(self, task: Task, step: str, index: int | None, command: str,
               response: dict[str, object]) -> str | None:
        note_audit(task, response)
        outcome = read_outcome(response)
        if outcome.kind == "pending":
            waiting = {"step": step, "index": index, "approval_id": outcome.approval_id,
                       "command": command}
            if task.get("pending_step") != waiting:
                task["pending_step"] = waiting
                self.save(task)
            return (f"Waiting for a human to approve: {command}. The task continues when the "
                    f"decision is recorded (approval {outcome.approval_id}).")
        task["pending_step"] = None
        if step == "cleanup":
            return self._cleaned(task, outcome, int(index or 0))
        if outcome.kind == "denied":
            self.denials[task["task_id"]] = {"command": command, "reason": outcome.message,
                                             "audit_id": outcome.audit_id, "step": step}
        apply: Callable[[Task, Outcome], str | None] = {
            "detect": self._detected, "verify_storage": self._storage_checked,
            "create": self._created_capture, "poll": self._polled,
            "download": self._downloaded, "analyze": self._analyzed,
        }[step]
        return apply(task, outcome)

    # ----------------------------------------------------------------- detection
    def _created(self, task: Task) -> str | None:
        self._enter(task, S.DETECTING)
        return None

    def _detecting(self, task: Task) -> str | None:
        return self._do(task, "detect" if not task.get("resource_id") else "verify_storage")

    def _detected(self, task: Task, out: Outcome) -> str | None:
        if out.kind != "ok":
            what = "Resource not found" if out.not_found else "Detection failed"
            return self._fail(task, S.FAILED, f"{what}: {out.message or out.code}")
        task.update(target_type=out.data.get("target_type"),
                    resource_id=out.data.get("resource_id"), location=out.data.get("location"))
        if task["target_type"] == "aks":
            return self._fail(task, S.FAILED, "Target is an AKS cluster: the AKS capture "
                              "pipeline is not yet available. Capture a node VM instead.")
        if task["target_type"] != "vm" or not task["resource_id"] or not task["location"]:
            return self._fail(task, S.FAILED, f"Detection returned an unusable target: "
                              f"{out.data}")
        self.save(task)
        return None

    def _storage_checked(self, task: Task, out: Outcome) -> str | None:
        if out.kind != "ok":
            return self._fail(task, S.FAILED, f"Storage {task['storage_account']}/"
                              f"{task['storage_container']} is not accessible: "
                              f"{out.message or out.code}. Nothing was created.")
        task["cleanup_plan"] = cleanup_entries(task, self.steps.auth_mode, include_artifacts=False)
        self._enter(task, S.APPROVED)
        return None

    # ------------------------------------------------------------------ capture
    def _approved(self, task: Task) -> str | None:
        return self._do(task, "create")

    def _created_capture(self, task: Task, out: Outcome) -> str | None:
        if out.kind == "denied":
            return self._fail(task, S.CANCELLED, f"Capture creation denied: {out.message}")
        if out.kind == "unknown":
            task["capture_created"] = None  # it may exist: cleanup will try (404 = done)
            return self._fail(task, S.FAILED, "Capture creation was interrupted; its outcome "
                              "is unknown and it was not retried.")
        if out.kind != "ok":
            return self._fail(task, S.FAILED, f"Azure provisioning failed: {out.code}: "
                              f"{out.message}")
        task["capture_created"] = True
        self._adopt_storage_path(task, out.data.get("storage_path"))
        self._enter(task, S.PROVISIONING)
        self._enter(task, S.WAITING)
        if self._polling:
            return None  # check_task: go straight on to the first poll burst
        wait = self.config.initial_poll_interval
        return f"Packet capture starting on {task['target']}. Check back in ~{wait:.0f} seconds."

    def _adopt_storage_path(self, task: Task, reported: object) -> None:
        """Download (and delete) the blob Azure says the capture writes, not the one asked
        for: the created capture's ``storageLocation.storagePath`` is the truth."""
        if not isinstance(reported, str) or not reported:
            return
        task["storage_path"] = reported
        found = self.steps.blob_of(task["storage_account"], reported)
        if found is None:
            task["warnings"] = task["warnings"] + [
                f"Azure reported the capture's storage path as {reported}, which is not a blob "
                f"of {task['storage_account']}; Ghost downloads the blob it asked for."]
            return
        if found == (task["storage_container"], task["storage_blob_name"]):
            return
        task["storage_container"], task["storage_blob_name"] = found
        task["cleanup_plan"] = [
            e if e["kind"] != "blob" else next(
                n for n in cleanup_entries(task, self.steps.auth_mode, include_artifacts=False)
                if n["kind"] == "blob")
            for e in task["cleanup_plan"]]

    def _waiting(self, task: Task) -> str | None:
        started = self.monotonic()
        while True:
            if task["poll_count"] >= task["max_polls"]:
                return self._fail(task, S.TIMED_OUT, f"Capture still {task['last_status']} "
                                  f"after {task['poll_count']} polls.")
            message = self._do(task, "poll")
            if message is not None or state_of(task) is not S.WAITING:
                return message
            if task["poll_count"] >= task["max_polls"]:
                continue
            interval = backoff_seconds(task["poll_count"], self.config)
            if self.monotonic() - started + interval > self.config.poll_burst_limit:
                return describe(task)
            self.sleep(interval)

    def _polled(self, task: Task, out: Outcome) -> str | None:
        now = self.clock()
        task["poll_count"] += 1
        stamps = task["timestamps"]
        stamps["first_poll"] = stamps["first_poll"] or _iso(now)
        stamps["last_poll"] = _iso(now)
        if out.kind != "ok":
            if out.not_found:
                return self._fail(task, S.FAILED, "The capture no longer exists on Azure "
                                  "(deleted outside Ghost?).")
            task["last_status"] = f"poll error ({out.code})"
            task["warnings"] = (task["warnings"] + [f"poll {task['poll_count']}: {out.code}: "
                                                    f"{out.message}"])[-5:]
            self.save(task)
            return None
        state = str(out.data.get("state") or "Unknown")
        task["last_status"] = state
        if state in ("Succeeded", "Stopped"):
            self._enter(task, S.DOWNLOADING)
        elif state in ("Failed", "Error"):
            detail = out.data.get("detail") or state
            return self._fail(task, S.FAILED, f"Azure capture failed: {detail}")
        else:
            if state not in ("Running", "Creating", "NotStarted"):
                log.warning("task %s: unrecognised capture state %r", task["task_id"], state)
            self.save(task)
        return None

    # --------------------------------------------------------- download, analysis
    def _downloading(self, task: Task) -> str | None:
        return self._do(task, "download")

    def _downloaded(self, task: Task, out: Outcome) -> str | None:
        if out.kind == "denied":
            return self._fail(task, S.CANCELLED, f"Download denied: {out.message}")
        if out.kind != "ok":
            return self._fail(task, S.FAILED, f"Download failed: {out.code}: {out.message}")
        task["local_pcap_path"] = out.data.get("path") or task["planned_pcap_path"]
        task["pcap_bytes"] = int(out.data.get("bytes") or 0)
        self._enter(task, S.ANALYZING)
        return None

    def _analyzing(self, task: Task) -> str | None:
        if task.get("analysis_plan") is None:
            waiting = self._plan_analysis(task)
            if waiting is not None:
                return waiting
        if task["pcap_bytes"] == 0 and task["analysis_plan"]["compare"] is None:
            task["mode"] = task["analysis_plan"]["mode"]
            self._complete(task, None)
            return "Capture complete: the capture is empty (no traffic was captured)."
        return self._do(task, "analyze")

    def _plan_analysis(self, task: Task) -> str | None:
        mode: str = "single"
        compare: Task | None = None
        if task.get("paired_task_id"):
            partner = self.registry.load(task["paired_task_id"])
            if partner is None or partner.get("outcome") in PARTNER_FAILED:
                mode = "single_end_fallback"
            elif partner.get("outcome") == "completed":
                mode = "single"  # the partner was analysed without us: nothing to compare
            elif state_of(partner) is S.ANALYZING and partner.get("local_pcap_path"):
                mode, compare = "comparison", partner
            else:
                if not task.get("awaiting_partner"):
                    task["awaiting_partner"] = True
                    self.save(task)
                return describe(task, partner)
        own = task["local_pcap_path"]
        if compare is not None:
            first, second = (own, compare["local_pcap_path"])
            if task.get("pair_role") == "destination":
                first, second = second, own
            task["analysis_plan"] = {"capture": first, "compare": second, "mode": mode,
                                     "partner": compare["task_id"]}
        else:
            task["analysis_plan"] = {"capture": own, "compare": None, "mode": mode}
        task["awaiting_partner"] = False
        self.save(task)
        return None

    def _analysis_command(self, task: Task) -> tuple[str, str]:
        plan = task["analysis_plan"]
        return self.steps.analyze({**task, "local_pcap_path": plan["capture"]}, plan["compare"])

    def _analyzed(self, task: Task, out: Outcome) -> str | None:
        if out.kind == "denied":
            return self._fail(task, S.CANCELLED, f"Analysis denied: {out.message}")
        if out.kind != "ok":
            return self._fail(task, S.FAILED, f"PCAP engine failed: {out.message or out.code}")
        stem = Path(task["analysis_plan"]["capture"]).stem
        out_dir = self.config.local_capture_dir
        # the paths the forensic engine says it wrote (one per line); the naming convention
        # only when it printed none
        written = [line.strip() for line in str(out.data.get("raw") or "").splitlines()]

        def path_of(suffix: str) -> str:
            said = [p for p in written if p.endswith(suffix)]
            return said[-1] if said else str(out_dir / f"{stem}{suffix}")

        task.update(semantic_json_path=path_of("_semantic.json"),
                    report_path=path_of("_forensic_report.md"),
                    summary_path=path_of("_executive_summary.md"),
                    mode=task["analysis_plan"]["mode"])
        partner_id = task["analysis_plan"].get("partner")
        self._complete(task, partner_id)
        if task["mode"] == "single_end_fallback":
            return ("Partner capture did not complete. Single-end analysis completed on this "
                    "capture only.")
        return "Capture complete. Forensic report generated."

    def _complete(self, task: Task, partner_id: str | None) -> None:
        task["cleanup_status"] = "pending"
        self._enter(task, S.COMPLETED)
        partner = self.registry.load(partner_id) if partner_id else None
        if partner is not None and state_of(partner) is S.ANALYZING:
            partner.update({k: task[k] for k in ("semantic_json_path", "report_path",
                                                 "summary_path", "mode")})
            partner.update(awaiting_partner=False, pending_step=None, cleanup_status="pending",
                           analysis_plan={**task["analysis_plan"], "partner": task["task_id"]})
            self._enter(partner, S.COMPLETED)

    # -------------------------------------------------------------- failure, cleanup
    def _fail(self, task: Task, state: TaskState, error: str) -> str:
        """Record the failure, then clean up what exists (automatic for failures)."""
        enter(task, state, self.clock(), error=error)
        task["pending_step"] = None
        if not self.begin_cleanup(task, include_artifacts=False):
            self.save(task)
            return describe(task)
        return self._cleaning(task) or describe(task)

    def begin_cleanup(self, task: Task, *, include_artifacts: bool) -> bool:
        """Prepare the plan; False when there is nothing to clean (cleanup_status skipped)."""
        if task.get("location") and (include_artifacts or not task["cleanup_plan"]):
            old = {e["resource"]: e for e in task["cleanup_plan"]}
            fresh = cleanup_entries(task, self.steps.auth_mode,
                                    include_artifacts=include_artifacts)
            task["cleanup_plan"] = [old.get(e["resource"], e) for e in fresh]
        for entry in task["cleanup_plan"]:
            if entry["outcome"] in ("denied", "failed"):
                entry["outcome"] = None  # a new cleanup request retries what was left
            if entry["outcome"] is None and self._not_created(task, entry):
                entry["outcome"] = "not_created"
        if all(e["outcome"] is not None for e in task["cleanup_plan"]):
            # nothing exists to delete: CANCELLED and ABANDONED stay, the rest are DONE
            if state_of(task) in TERMINAL:
                task["cleanup_status"] = task.get("cleanup_status") or "skipped"
            else:
                enter(task, S.CLEANING_UP, self.clock())
                self._finish_cleanup(task)
            return False
        task["cleanup_status"] = "pending"
        enter(task, S.CLEANING_UP, self.clock())
        self.save(task)
        return True

    def _not_created(self, task: Task, entry: dict[str, object]) -> bool:
        if entry["kind"] == "local":
            return not Path(str(entry["resource"])).exists()
        return task.get("capture_created") is False

    def _cleaning(self, task: Task) -> str | None:
        for index, entry in enumerate(task["cleanup_plan"]):
            if entry["outcome"] is None:
                if entry["kind"] == "local" and not Path(entry["resource"]).exists():
                    entry["outcome"] = "already_deleted"
                    continue
                message = self._do(task, "cleanup", index)
                if message is not None:
                    return message
        self._finish_cleanup(task)
        self.save(task)
        return describe(task)

    def _cleaned(self, task: Task, out: Outcome, index: int) -> str | None:
        entry = task["cleanup_plan"][index]
        if out.kind == "ok":
            entry["executed"] = True
            entry["outcome"] = "deleted" if out.data.get("deleted", True) else "already_deleted"
        elif out.not_found:
            entry["executed"] = True
            entry["outcome"] = "already_deleted"
        else:
            entry["outcome"] = "denied" if out.kind == "denied" else "failed"
            entry["detail"] = f"{out.code}: {out.message}"
        self.save(task)
        return None

    def _finish_cleanup(self, task: Task) -> None:
        plan = task["cleanup_plan"]
        left = [e for e in plan if e["outcome"] not in CLEANED]
        ran = any(e["outcome"] in ("deleted", "already_deleted") for e in plan)
        task["cleanup_status"] = "partial" if left else ("completed" if ran else "skipped")
        cost = (" It stays in the lab's simulated estate." if self.config.simulated
                else " It may incur charges.")
        task["warnings"] = task["warnings"] + [
            f"Resource {e['resource']} not deleted ({e['outcome']}).{cost}"
            for e in left if e["kind"] != "local"]
        task["timestamps"]["cleanup_completed"] = _iso(self.clock())
        enter(task, S.DONE, self.clock())

    def _enter(self, task: Task, state: TaskState) -> None:
        enter(task, state, self.clock())
        self.save(task)


def cleanup_reason(task: Task) -> str:
    """One reasoning for the whole batch, so approvers see cleanup as one group."""
    if task.get("cleanup_reason"):
        return str(task["cleanup_reason"])
    cloud = sum(1 for e in task["cleanup_plan"] if e["kind"] != "local")
    analysis = ("Complete: forensic report generated" if task.get("outcome") == "completed"
                else f"Not completed ({task.get('outcome')}): {task.get('error_detail')}")
    return (f"Cleanup for task {task['task_id']}:\n  Investigation: "
            f"{task.get('investigation_context') or 'none given'}\n  Analysis: {analysis}\n  "
            f"Action: Removing transient cloud resources ({cloud} resources) and the raw pcap")


def describe(task: Task, partner: Task | None = None) -> str:
    """A one-line status for the Brain and the console."""
    state = state_of(task)
    if task.get("pending_step"):
        return f"Waiting for approval of: {task['pending_step']['command']}"
    if state in (S.WAITING, S.PROVISIONING):
        return (f"Packet capture running on {task['target']}. Azure state: "
                f"{task['last_status'] or 'not polled yet'} (poll {task['poll_count']}/"
                f"{task['max_polls']}).")
    if state is S.ANALYZING and task.get("awaiting_partner"):
        name = partner["target"] if partner else task.get("paired_task_id")
        return (f"This capture is downloaded. Waiting for the partner capture ({name}) to "
                "finish before comparison analysis.")
    if state is S.COMPLETED:
        return "Capture complete. Forensic report generated. Cleanup pending (cleanup_task)."
    if task.get("outcome") == "completed" and task.get("cleanup_status") in (
            "completed", "skipped"):
        return "Capture complete; cloud resources and the raw pcap were cleaned up."
    if task.get("cleanup_status") == "partial":
        return ("Cleanup partial: " + " ".join(task.get("warnings") or [])
                + " Run cleanup_task again to retry.")
    if task.get("outcome") in ("failed", "timed_out", "cancelled", "abandoned"):
        tail = {"completed": " Cloud resources cleaned up.", "skipped": " Nothing to clean up."}
        detail = str(task.get("error_detail") or "no detail recorded").rstrip(". ")
        return (f"Task {task['outcome'].replace('_', ' ')}: {detail}."
                + tail.get(str(task.get("cleanup_status")), ""))
    return f"Task is {state.value}."


def _iso(moment: datetime) -> str:
    return iso_utc(moment)
