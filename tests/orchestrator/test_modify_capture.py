"""Modify where it means something (issue 29): an engineer edits a capture's duration, filter
or target before it is created, and the edit is re-checked and run; a step with nothing to
edit (a download, a delete) is approve or deny only."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

from core.orchestrator.backend import CaptureSpec
from core.safety.approval import NOT_MODIFIABLE, ApprovalRequest, Decision
from tests.orchestrator.conftest import World, capture_request
from tests.orchestrator.fakes import approve

Edit = Callable[[str], str]


class Editor:
    """A person at the keyboard: Modify on the capture's create (with ``edit``), and
    ``others`` for every later step; records what it was shown."""

    decides_immediately = True

    def __init__(self, edit: Edit, others: Decision | None = None) -> None:
        self.edit = edit
        self.others = others or Decision.approve("alice")
        self.seen: list[ApprovalRequest] = []

    def request(self, request: ApprovalRequest) -> Decision:
        self.seen.append(request)
        if "packet-capture create" in request.command and len(self.seen) == 1:
            return Decision.modify("alice", self.edit(request.command))
        return self.others


def _swap(option: str, value: str) -> Edit:
    def edit(command: str) -> str:
        words = shlex.split(command)
        if option in words:
            words[words.index(option) + 1] = value
        else:
            words += [option, value]
        return shlex.join(words)
    return edit


def _run(world: World, editor: Editor, **params: Any) -> tuple[Any, dict[str, Any]]:
    orch = world.orchestrator()
    orch.lifecycle.shell.approver = editor  # type: ignore[attr-defined]
    res = orch.orchestrate(capture_request(**params))
    return orch, res


def _spec(world: World) -> CaptureSpec:
    (capture,) = world.cloud.captures.values()
    spec = capture["spec"]
    assert isinstance(spec, CaptureSpec)
    return spec


def _commands(world: World) -> list[dict[str, Any]]:
    return [r for r in world.store.audit_records(world.sid) if r.get("kind") == "command"]


def test_editing_duration_and_filter_creates_the_edited_capture(world: World) -> None:
    filters = '[{"protocol":"TCP","remotePort":"6379"}]'
    editor = Editor(lambda c: _swap("--filters", filters)(_swap("--time-limit", "30")(c)))
    orch, res = _run(world, editor)
    first = editor.seen[0]
    assert first.modifiable and "Modify its --vm" in first.reasoning
    assert res["state"] == "WAITING", res
    spec = _spec(world)
    assert spec.time_limit_seconds == 30
    assert spec.filters == ({"protocol": "TCP", "remotePort": "6379"},)
    assert res["edited"] == ["duration 60 → 30", f"filter none → {filters}"]
    create = next(r for r in _commands(world) if "packet-capture create" in r["command"])
    assert create["action"] == "user_modified" and "--time-limit 30" in create["command"]
    assert create["status"] == "completed" and create["exit_code"] == 0
    record = world.records(res["task_id"])[-1]
    assert record["parameters"]["duration_seconds"] == 30


def test_editing_the_target_detects_the_new_vm(world: World) -> None:
    world.cloud.add_vm("api-vm-01")
    _, res = _run(world, Editor(_swap("--vm", "api-vm-01")))
    assert res["state"] == "WAITING" and res["target"] == "api-vm-01"
    assert _spec(world).target_resource_id.endswith("/virtualMachines/api-vm-01")
    assert ("detect", "api-vm-01") in world.cloud.calls


def test_an_edited_target_in_another_region_creates_nothing(world: World) -> None:
    world.cloud.add_vm("far-vm", location="japaneast")
    _, res = _run(world, Editor(_swap("--vm", "far-vm")))
    assert res["state"] in ("FAILED", "DONE") and "japaneast" in res["error_detail"]
    assert world.cloud.captures == {}


def test_ghosts_own_options_and_bad_values_are_refused_before_anything_runs(
        world: World) -> None:
    for edit, why in [(_swap("--name", "mine"), "--name is Ghost's own"),
                      (_swap("--storage-path", "https://evil.example/x"), "--storage-path"),
                      (_swap("--time-limit", "999"), "out of range"),
                      (_swap("--filters", "not json"), "not JSON"),
                      (lambda c: c + " --extra x", "--extra is not an option"),
                      (lambda c: c.replace("create", "delete"), "must stay")]:
        world.cloud.captures.clear()
        orch, res = _run(world, Editor(edit))
        assert res["status"] == "task_cancelled", (why, res)
        assert why in res["error_detail"] and "Nothing was created" in res["error_detail"]
        assert world.cloud.captures == {}


class Later:
    """A chat approver: posts a card; the decision comes later, from someone else."""

    decides_immediately = False

    def request(self, request: ApprovalRequest) -> None:
        return None


def test_an_edit_decided_later_in_chat_runs_once_approved(world: World) -> None:
    chat = world.orchestrator()
    chat.lifecycle.shell.approver = Later()  # type: ignore[attr-defined]
    res = chat.orchestrate(capture_request())
    waiting = res["waiting_for_approval"]
    shell = world.shell()
    shell.approver = Later()
    shell.decide(waiting["approval_id"],
                 Decision.modify("alice", _swap("--time-limit", "20")(waiting["command"])))
    successor = next(a for a in world.store.approvals(world.sid)
                     if a.replaces_approval_id == waiting["approval_id"])
    assert successor.status == "pending"  # the edit needs a second engineer
    shell.decide(successor.approval_id, Decision.approve("bob"))
    res2 = world.orchestrator(shell=world.shell(*approve(3))).orchestrate(
        {"intent": "check_task", "task_id": res["task_id"]})
    assert res2["edited"] == ["duration 60 → 20"]
    assert _spec(world).time_limit_seconds == 20 and world.cloud.count("create") == 1


def test_download_and_deletes_have_nothing_to_edit(world: World) -> None:
    orch = world.orchestrator(*approve(6))
    task_id = orch.orchestrate(capture_request())["task_id"]
    orch.orchestrate({"intent": "check_task", "task_id": task_id})
    orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    asked = orch.lifecycle.shell.approver.seen  # type: ignore[attr-defined]
    seen = {r.command.split(" --")[0].split(" /")[0]: r.modifiable for r in asked}
    assert seen == {"az network watcher packet-capture create": True,
                    "az storage blob download": False,
                    "az network watcher packet-capture delete": False,
                    "az storage blob delete": False, "rm": False}


def test_a_modify_sent_anyway_for_a_delete_fails_closed(world: World) -> None:
    # create and download approved; Modify on the capture's delete; the rest approved
    orch = world.orchestrator(*approve(2), Decision.modify("alice", "az vm delete -n x"),
                              *approve(2))
    task_id = orch.orchestrate(capture_request())["task_id"]
    orch.orchestrate({"intent": "check_task", "task_id": task_id})
    res = orch.orchestrate({"intent": "cleanup_task", "task_id": task_id})
    assert res["cleanup_status"] == "partial" and world.cloud.captures  # nothing deleted
    denied = [r for r in _commands(world) if r["status"] == "denied"]
    assert len(denied) == 1 and denied[0]["denial_reason"] == NOT_MODIFIABLE
    assert "packet-capture delete" in denied[0]["command"]
    assert not any("az vm delete" in json.dumps(r) for r in _commands(world))
