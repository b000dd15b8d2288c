"""Each gated step of a task: its ``az`` equivalent, its reasoning and the backend call.

Everything here is rebuilt from the task record alone, so a step that waited for approval in one
process can be finished by another: the approval is bound to the exact command text, and the
command text is a pure function of the record.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.orchestrator.backend import CaptureBackend, CaptureBackendError, CaptureSpec
from core.orchestrator.edits import HINT, apply_edit, read_edit
from core.orchestrator.gate import CallFn, EditableCall, backend_call
from core.orchestrator.model import OrchestratorConfig
from core.orchestrator.records import Task

Step = tuple[str, str, CallFn | None]


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _context(task: Task) -> str:
    """The model's words on why the capture is needed, without a closing full stop: the
    approval text goes on after them ("… to 8080.. Duration" read as a typo on the card)."""
    text = str(task.get("investigation_context") or "").strip().rstrip(".").rstrip()
    return text or "no context given"


class StepBook:
    """Builds (command, reasoning, call) for a task's steps."""

    def __init__(self, backend: CaptureBackend, config: OrchestratorConfig,
                 sleep: Callable[[float], None]) -> None:
        self.backend = backend
        self.config = config
        self.sleep = sleep

    @property
    def auth_mode(self) -> str:
        """The storage auth mode really used: the backend's own, else the configured one."""
        mode = getattr(self.backend, "storage_auth_mode", None)
        return mode if isinstance(mode, str) and mode else self.config.storage_auth_mode

    def blob_of(self, account: str, storage_path: str) -> tuple[str, str] | None:
        """(container, blob) of a storage path Azure reported for ``account``; None when the
        path is not a blob URL of that account."""
        base = self.backend.blob_url(account, "c", "b")[: -len("/c/b")]
        if not storage_path.startswith(base + "/"):
            return None
        container, _, blob = storage_path[len(base) + 1:].partition("/")
        return (container, blob) if container and blob else None

    # ------------------------------------------------------------------- detection
    def detect(self, task: Task) -> Step:
        target, rg = task["target"], task["resource_group"]
        if str(target).startswith("/subscriptions/"):
            command = f"az resource show --ids {_q(target)} --query type -o tsv"
        else:
            command = f"az resource list --resource-group {_q(rg)} --name {_q(target)} -o json"

        def run() -> dict[str, Any]:
            info = self.backend.detect_target(target, rg)
            return {"target_type": info.target_type, "resource_id": info.resource_id,
                    "location": info.location, "name": info.name}

        return command, (f"Detecting target type of {target} for task {task['task_id']}. "
                         f"Investigation: {_context(task)}"), backend_call(run)

    def verify_storage(self, task: Task) -> Step:
        sa, container = task["storage_account"], task["storage_container"]
        command = (f"az storage container exists --account-name {_q(sa)} --name {_q(container)}"
                   f" --auth-mode {_q(self.auth_mode)} -o tsv")

        def run() -> dict[str, Any]:
            self.backend.verify_storage(sa, container)
            return {"exists": True}

        return command, (f"Verifying storage {sa}/{container} is reachable before creating "
                         f"capture {task['task_id']}."), backend_call(run)

    # ---------------------------------------------------------------- the capture
    def capture_spec(self, task: Task) -> CaptureSpec:
        params = task["parameters"]
        return CaptureSpec(
            name=task["azure_operation_id"],
            target_resource_id=str(task["resource_id"]),
            location=str(task["location"]),
            storage_account=task["storage_account"],
            storage_resource_group=task["storage_resource_group"],
            container=task["storage_container"],
            blob_name=task["storage_blob_name"],
            time_limit_seconds=int(params["duration_seconds"]),
            bytes_to_capture_per_packet=int(params.get("bytes_per_packet") or 0),
            total_bytes_per_session=int(params.get("total_bytes") or 1073741824),
            filters=tuple(dict(f) for f in params.get("filters") or ()),
        )

    def create_command(self, task: Task) -> str:
        spec = self.capture_spec(task)
        vm = str(task["resource_id"]).rstrip("/").rsplit("/", 1)[-1]
        url = self.backend.blob_url(spec.storage_account, spec.container, spec.blob_name)
        parts = [
            "az network watcher packet-capture create",
            f"--resource-group {_q(task['resource_group'])}", f"--vm {_q(vm)}",
            f"--name {_q(spec.name)}", f"--location {_q(spec.location)}",
            f"--storage-account {_q(spec.storage_account)}",
            f"--storage-path {_q(url)}",
            f"--time-limit {spec.time_limit_seconds}",
        ]
        if spec.bytes_to_capture_per_packet:
            parts.append(f"--capture-size {spec.bytes_to_capture_per_packet}")
        parts.append(f"--capture-limit {spec.total_bytes_per_session}")
        if spec.filters:
            parts.append("--filters " + _q(json.dumps(list(spec.filters),
                                                      separators=(",", ":"))))
        return " ".join(parts)

    def create(self, task: Task) -> Step:
        spec = self.capture_spec(task)
        command = self.create_command(task)

        def run() -> dict[str, Any]:
            written_to = self.backend.create_capture(spec)
            return {"name": spec.name, "location": spec.location, "storage_path": written_to}

        def edit(edited: str) -> CallFn | str:
            """Modify: the capture as the engineer edited it, re-checked; or why not."""
            try:
                change = read_edit(command, edited)
            except ValueError as exc:
                return (f"Ghost cannot run this edit of the capture: {exc}. Nothing was "
                        "created; deny it with a reason instead, and Ghost will re-plan.")
            apply_edit(task, change)
            return backend_call(lambda: self._create_edited(task, change.retargeted))

        reasoning = (f"Creating packet capture for investigation: {_context(task)}. "
                     f"Duration: {spec.time_limit_seconds} seconds. Capture name: {spec.name}. "
                     f"{HINT}")
        return command, reasoning, EditableCall(backend_call(run), edit)

    def _create_edited(self, task: Task, retargeted: bool) -> dict[str, Any]:
        """Create the capture the engineer's edit asks for (a new target detected first)."""
        if retargeted:
            info = self.backend.detect_target(task["target"], task["resource_group"])
            if info.target_type != "vm":
                raise CaptureBackendError("InvalidTarget", f"{task['target']} is not a VM "
                                          f"({info.target_type}); nothing was created")
            if info.location != task["location"]:
                raise CaptureBackendError(
                    "InvalidTarget", f"{task['target']} is in {info.location}, but the "
                    f"capture was approved in {task['location']}; nothing was created")
            task["resource_id"] = info.resource_id
        spec = self.capture_spec(task)
        written_to = self.backend.create_capture(spec)
        return {"name": spec.name, "location": spec.location, "storage_path": written_to,
                "edited": list(task.get("edited") or [])}

    def poll(self, task: Task) -> Step:
        name, location = task["azure_operation_id"], task["location"]
        command = (f"az network watcher packet-capture show-status --location {_q(location)} "
                   f"--name {_q(name)}")

        def run() -> dict[str, Any]:
            status = self.backend.capture_status(location, name)
            return {"state": status.state, "detail": status.detail}

        return command, f"Polling capture {name} (task {task['task_id']}).", backend_call(run)

    def download(self, task: Task) -> Step:
        sa, container = task["storage_account"], task["storage_container"]
        blob, path = task["storage_blob_name"], Path(task["planned_pcap_path"])
        command = (f"az storage blob download --account-name {_q(sa)} --container-name "
                   f"{_q(container)} --name {_q(blob)} --file {_q(path)} --auth-mode "
                   f"{_q(self.auth_mode)} --no-progress")

        def run() -> dict[str, Any]:
            path.parent.mkdir(parents=True, exist_ok=True)
            errors: list[str] = []
            code = "DownloadFailed"
            for attempt in (1, 2):
                try:
                    size = self.backend.download_blob(sa, container, blob, path)
                    return {"path": str(path), "bytes": size, "attempts": attempt}
                except (CaptureBackendError, OSError) as exc:
                    path.unlink(missing_ok=True)  # never leave a partial pcap behind
                    errors.append(f"attempt {attempt}: {exc}")
                    if isinstance(exc, CaptureBackendError):
                        code = exc.code
                    if attempt == 1:
                        self.sleep(self.config.download_retry_delay)
            raise CaptureBackendError(code, "; ".join(errors))

        reasoning = (f"Downloading capture for analysis. Investigation: {_context(task)}. "
                     f"Blob {sa}/{container}/{blob} to {path}.")
        return command, reasoning, backend_call(run)

    # --------------------------------------------------------------------- analysis
    def analyze(self, task: Task, compare_with: str | None) -> tuple[str, str]:
        out_dir = self.config.local_capture_dir
        command = f"ghost-forensics {_q(task['local_pcap_path'])}"
        if compare_with:
            command += f" --compare {_q(compare_with)}"
        command += f" --semantic-dir {_q(out_dir)} --report-dir {_q(out_dir)}"
        if compare_with:
            why = (f"Comparing captures from both ends of the path: {task['target']} and its "
                   f"partner. Investigation: {_context(task)}")
        else:
            why = f"Analysing capture of {task['target']}. Investigation: {_context(task)}"
        return command, why

    # ---------------------------------------------------------------------- cleanup
    def cleanup(self, entry: dict[str, Any], why: str) -> Step:
        """One plan entry; entries carry their own coordinates (orphans have no task)."""
        kind = entry["kind"]
        if kind == "capture":
            location, name = entry["location"], entry["name"]

            def run() -> dict[str, Any]:
                return {"deleted": self.backend.delete_capture(location, name)}
        elif kind == "blob":
            sa, c, b = entry["account"], entry["container"], entry["blob"]

            def run() -> dict[str, Any]:
                return {"deleted": self.backend.delete_blob(sa, c, b)}
        else:
            path = Path(entry["resource"])

            def run() -> dict[str, Any]:
                existed = path.exists()
                path.unlink(missing_ok=True)
                return {"deleted": existed}

        return entry["command"], why, backend_call(run)


def capture_entry(location: str, name: str) -> dict[str, Any]:
    return {"kind": "capture", "resource": name, "location": location, "name": name,
            "command": (f"az network watcher packet-capture delete --location {_q(location)} "
                        f"--name {_q(name)}"), "executed": False, "outcome": None}


def blob_entry(account: str, container: str, blob: str, auth_mode: str) -> dict[str, Any]:
    return {"kind": "blob", "resource": f"{account}/{container}/{blob}", "account": account,
            "container": container, "blob": blob,
            "command": (f"az storage blob delete --account-name {_q(account)} --container-name "
                        f"{_q(container)} --name {_q(blob)} --auth-mode {_q(auth_mode)}"),
            "executed": False, "outcome": None}


def local_entry(path: str) -> dict[str, Any]:
    return {"kind": "local", "resource": path, "command": f"rm {_q(path)}",
            "executed": False, "outcome": None}


def cleanup_entries(task: Task, auth_mode: str, *,
                    include_artifacts: bool) -> list[dict[str, Any]]:
    """The plan: cloud resources first (they cost money), local files last."""
    entries = [
        capture_entry(str(task["location"]), task["azure_operation_id"]),
        blob_entry(task["storage_account"], task["storage_container"],
                   task["storage_blob_name"], auth_mode),
        local_entry(task["planned_pcap_path"]),
    ]
    if include_artifacts:
        for key in ("semantic_json_path", "report_path", "summary_path"):
            if task.get(key):
                entries.append(local_entry(task[key]))
    return entries
