"""`ghost investigate` with a packet capture, end to end: the CLI process, the fake Gemini, the
real Azure SDK against the fake ARM endpoint, Azurite for the blob, the real pcap engine."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from azure.storage.blob import BlobServiceClient

from tests.cloud.conftest import AZURITE_ACCOUNT, AZURITE_KEY
from tests.cloud.fake_arm import SUB, TOKEN, FakeArm
from tests.engine.test_investigate_cli import _read_until, session_id_of
from tests.fakes.gemini_server import call, function_call_turn
from tests.orchestrator.pcaps import tcp_conversation_pcap


def check_the_task(request: Any) -> Any:
    """Poll the task the previous call created (its id is only known at run time)."""
    [response] = request.function_responses()
    return function_call_turn(call("check_task", {"task_id": response["response"]["task_id"]}))


def lab(arm: FakeArm, azurite: str) -> BlobServiceClient:
    """A VM with its Network Watcher; the capture's blob is a real pcap written at stop."""
    arm.state.add_vm("web-vm-01")
    arm.state.watchers["westus2"] = "NetworkWatcher_westus2"
    arm.state.running_polls = 0
    service = BlobServiceClient(azurite, credential={"account_name": AZURITE_ACCOUNT,
                                                     "account_key": AZURITE_KEY})
    if not service.get_container_client("captures").exists():
        service.create_container("captures")

    def write(storage_path: str) -> None:
        container, blob = storage_path.split(f"/{AZURITE_ACCOUNT}/", 1)[1].split("/", 1)
        service.get_blob_client(container, blob).upload_blob(tcp_conversation_pcap(),
                                                             overwrite=True)

    arm.state.on_stopped = write
    return service


def azure_env(cli_env: dict[str, str], arm: FakeArm, azurite: str) -> dict[str, str]:
    return dict(cli_env) | {
        "GHOST_MODEL": "gemini-test",
        "GHOST_AZURE_SUBSCRIPTION_ID": SUB,
        "GHOST_AZURE_ARM_ENDPOINT": arm.url,
        "GHOST_AZURE_BLOB_ENDPOINT_TEMPLATE": azurite.replace(AZURITE_ACCOUNT, "{account}"),
        "GHOST_AZURE_STORAGE_AUTH_MODE": "key",
        "GHOST_AZURE_STORAGE_KEY": AZURITE_KEY,
        "GHOST_AZURE_STATIC_TOKEN": TOKEN,
        "GHOST_AZURE_LRO_POLLING_INTERVAL": "0",
    }


CAPTURE = call("capture_traffic", {
    "target": "web-vm-01", "resource_group": "prod-rg", "storage_account": AZURITE_ACCOUNT,
    "duration_seconds": 60, "investigation_context": "502s between web-vm-01 and redis"})


def test_capture_task_from_the_terminal(fake_gemini: Any, arm: FakeArm, azurite: str,
                                        cli_env: dict[str, str], tmp_path: Path) -> None:
    lab(arm, azurite)
    fake_gemini.enqueue(
        function_call_turn(CAPTURE),
        check_the_task,
        function_call_turn(call("complete_investigation", {
            "confidence": "medium", "root_cause_summary": "Retransmissions on the path.",
            "recommended_actions": ["Capture both ends"]})),
    )
    env = azure_env(cli_env, arm, azurite)
    run = subprocess.run([sys.executable, "-m", "bot.cli", "investigate",
                          "502s from web-vm-01 to redis"], input="a\n" * 20, env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "[Orchestrator] capture_traffic" in out
    responses = [r.function_responses() for r in fake_gemini.requests[1:]]
    started = responses[0][0]["response"]
    assert started["task_id"].startswith("ghost_web-vm-01_"), started
    assert "[WARN]" not in out
    polled = responses[1][0]["response"]
    assert polled["status"] == "task_completed", polled
    report = Path(polled["result"]["report_path"])
    assert report.is_relative_to(Path(cli_env["GHOST_DATA_DIR"]).resolve())
    assert "## Executive Summary" in report.read_text()
    assert "RCA REPORT WRITTEN" in out
    rca = next((Path(cli_env["GHOST_DATA_DIR"]) / "audit").glob("ghost_rca_*.md")).read_text()
    assert polled["task_id"] in rca and "Report content unavailable" not in rca


def test_ctrl_c_at_the_capture_approval_then_resume_starts_no_second_capture(
        fake_gemini: Any, arm: FakeArm, azurite: str, cli_env: dict[str, str],
        tmp_path: Path) -> None:
    lab(arm, azurite)
    fake_gemini.enqueue(function_call_turn(CAPTURE))
    env = azure_env(cli_env, arm, azurite) | {"PYTHONUNBUFFERED": "1"}
    ghost = [sys.executable, "-m", "bot.cli"]
    cmd = [*ghost, "investigate"]
    proc = subprocess.Popen([*cmd, "502s from web-vm-01"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    seen = _read_until(proc, "Your choice:")
    assert "packet-capture create" in seen
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    sid = session_id_of(seen)

    fake_gemini.enqueue(
        function_call_turn(call("complete_investigation", {
            "confidence": "low", "root_cause_summary": "Capture started; analysis pending."})))
    run = subprocess.run([*cmd, "--resume", sid], input="a\n" * 20, env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # before the fix the resumed engine called capture_traffic again: a second task, and the
    # first one left waiting on an approval nobody would ever see
    assert len(arm.state.captures) == 1, list(arm.state.captures)
    [first_response] = fake_gemini.requests[-1].function_responses()
    task_id = first_response["response"]["task_id"]
    assert task_id.startswith("ghost_web-vm-01_") and task_id in next(iter(arm.state.captures))
    exported = subprocess.run([*ghost, "audit", "export", sid, "--dir", str(tmp_path / "x")],
                              env=env, capture_output=True, text=True, check=False)
    assert exported.returncode == 0, exported.stderr
    tasks = (tmp_path / "x" / f"orchestrator_tasks_{sid}.jsonl").read_text()
    assert {line.split('"task_id": "')[1].split('"')[0] for line in tasks.splitlines()} == \
        {task_id}


def _capture_without_an_account() -> dict[str, Any]:
    return call("capture_traffic", {
        "target": "web-vm-01", "resource_group": "prod-rg", "duration_seconds": 60,
        "investigation_context": "502s between web-vm-01 and redis"})


def test_a_capture_without_an_account_lands_in_the_configured_one(
        fake_gemini: Any, arm: FakeArm, azurite: str, cli_env: dict[str, str],
        tmp_path: Path) -> None:
    """GHOST_CAPTURE_STORAGE_ACCOUNT (the Bicep sets it): the account and its resource group,
    which is Ghost's own, not the VM's."""
    lab(arm, azurite)
    account_id = (f"/subscriptions/{SUB}/resourceGroups/ghost-rg/providers/"
                  f"Microsoft.Storage/storageAccounts/{AZURITE_ACCOUNT}")
    fake_gemini.enqueue(
        function_call_turn(_capture_without_an_account()),
        check_the_task,
        function_call_turn(call("complete_investigation", {
            "confidence": "medium", "root_cause_summary": "Retransmissions on the path."})))
    env = azure_env(cli_env, arm, azurite) | {"GHOST_CAPTURE_STORAGE_ACCOUNT": account_id}
    run = subprocess.run([sys.executable, "-m", "bot.cli", "investigate",
                          "502s from web-vm-01 to redis"], input="a\n" * 20, env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [capture] = arm.state.captures.values()
    location = capture["resource"]["properties"]["storageLocation"]
    assert location["storageId"] == account_id
    assert f"/{AZURITE_ACCOUNT}/captures/" in location["storagePath"]
    polled = fake_gemini.requests[2].function_responses()[0]["response"]
    assert polled["status"] == "task_completed", polled
    assert f"--storage-account {AZURITE_ACCOUNT}" in run.stdout  # what the approver saw


def test_a_capture_without_any_account_is_refused_with_the_fix(
        fake_gemini: Any, arm: FakeArm, azurite: str, cli_env: dict[str, str],
        tmp_path: Path) -> None:
    lab(arm, azurite)
    fake_gemini.enqueue(
        function_call_turn(_capture_without_an_account()),
        function_call_turn(call("complete_investigation", {
            "confidence": "low", "root_cause_summary": "No capture."})))
    run = subprocess.run([sys.executable, "-m", "bot.cli", "investigate",
                          "502s from web-vm-01 to redis"], input="a\n" * 20,
                         env=azure_env(cli_env, arm, azurite), capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    refused = fake_gemini.requests[1].function_responses()[0]["response"]
    text = str(refused)
    assert "GHOST_CAPTURE_STORAGE_ACCOUNT" in text and "Nothing was started" in text, refused
    assert arm.state.captures == {}
