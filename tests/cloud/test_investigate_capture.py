"""`ghost investigate` with a packet capture, end to end: the CLI process, the fake Gemini, the
real Azure SDK against the fake ARM endpoint, Azurite for the blob, the real pcap engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from azure.storage.blob import BlobServiceClient

from tests.cloud.conftest import AZURITE_ACCOUNT, AZURITE_KEY
from tests.cloud.fake_arm import SUB, TOKEN, FakeArm
from tests.fakes.gemini_server import call, function_call_turn
from tests.orchestrator.pcaps import tcp_conversation_pcap


def check_the_task(request: Any) -> Any:
    """Poll the task the previous call created (its id is only known at run time)."""
    [response] = request.function_responses()
    return function_call_turn(call("check_task", {"task_id": response["response"]["task_id"]}))


def test_capture_task_from_the_terminal(fake_gemini: Any, arm: FakeArm, azurite: str,
                                        cli_env: dict[str, str], tmp_path: Path) -> None:
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
    fake_gemini.enqueue(
        function_call_turn(call("capture_traffic", {
            "target": "web-vm-01", "resource_group": "prod-rg",
            "storage_account": AZURITE_ACCOUNT, "duration_seconds": 60,
            "investigation_context": "502s between web-vm-01 and redis"})),
        check_the_task,
        function_call_turn(call("complete_investigation", {
            "confidence": "medium", "root_cause_summary": "Retransmissions on the path.",
            "recommended_actions": ["Capture both ends"]})),
    )
    env = dict(cli_env) | {
        "GHOST_MODEL": "gemini-test",
        "GHOST_AZURE_SUBSCRIPTION_ID": SUB,
        "GHOST_AZURE_ARM_ENDPOINT": arm.url,
        "GHOST_AZURE_BLOB_ENDPOINT_TEMPLATE": azurite.replace(AZURITE_ACCOUNT, "{account}"),
        "GHOST_AZURE_STORAGE_AUTH_MODE": "key",
        "GHOST_AZURE_STORAGE_KEY": AZURITE_KEY,
        "GHOST_AZURE_STATIC_TOKEN": TOKEN,
        "GHOST_AZURE_LRO_POLLING_INTERVAL": "0",
    }
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
