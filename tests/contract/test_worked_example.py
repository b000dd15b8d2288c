"""The worked example of docs/agent-contract.md, end to end against the fake Gemini: an
automation opens an investigation from an alert (--detach), a worker runs it, the automation
watches until Ghost waits for an approval, the requester is refused, a second engineer approves
through `ghost approvals decide`, the worker finishes, and the RCA is fetched with `ghost status`.
Every JSON output is validated against its schema in docs/schemas/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.contract.helpers import (
    base_env,
    error_of,
    ghost,
    json_lines,
    one_json,
    projected_json,
)
from tests.fakes.gemini_server import call, function_call_turn

H1 = [{"id": "h1", "description": "an NSG blocks 6379", "state": "ACTIVE"}]
SUMMARY = "NSG rule deny-6379 on the Redis subnet drops the traffic from vm-a."


def _script(fake_gemini: Any) -> None:
    fake_gemini.enqueue(
        function_call_turn(call("run_shell_cmd", {"command": "ss -tln", "reasoning":
                                                  "what listens here", "hypotheses": H1}),
                           text="Hypothesis h1: an NSG blocks 6379."),
        function_call_turn(call("run_shell_cmd", {"command": "echo probe-redis-path",
                                                  "reasoning": "check the path"})),
        function_call_turn(call("complete_investigation", {
            "confidence": "high", "root_cause_summary": SUMMARY,
            "confirmed_hypotheses": ["h1"], "recommended_actions": ["Remove deny-6379"]})),
    )


def test_alert_to_rca_through_the_contract(fake_gemini: Any, migrated_url: str,
                                           tmp_path: Path) -> None:
    _script(fake_gemini)
    env = base_env(migrated_url, tmp_path / "data")
    env["GOOGLE_GEMINI_BASE_URL"] = os.environ["GOOGLE_GEMINI_BASE_URL"]
    env["GEMINI_API_KEY"] = os.environ["GEMINI_API_KEY"]

    # 1. the alert opens an investigation and gets its id at once
    opened = ghost(env, "investigate", "vm-a cannot reach redis on 6379", "--detach", "--json",
                   "--as", "alertmanager")
    assert opened.returncode == 0, opened.stderr
    doc = one_json(opened, "investigate-detach")
    sid = doc["session_id"]
    assert doc["state"] == "running" and doc["requested_by"] == "alertmanager"
    assert doc["host_id"] == "contract-test-host" and doc["schema_version"] == "1.1.0"
    assert not fake_gemini.requests  # nothing asked the model yet: a worker does that

    # 2. a worker runs it until it needs a person
    worked = ghost(env, "worker", "--once")
    assert worked.returncode == 0, worked.stderr
    assert "advanced 1 investigation" in worked.stdout

    # 3. the automation watches until Ghost waits
    watched = ghost(env, "watch", sid, "--jsonl", "--until-waiting", "--timeout", "30",
                    "--interval", "0.2")
    events = json_lines(watched, "watch-event")
    assert watched.returncode == 1, watched.stdout
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "waiting" and events[-1]["waiting_for"] == "approval"
    ran = [e for e in events if e["event"] == "command"]
    assert [(e["command"], e["classification"]) for e in ran] == [("ss -tln", "SAFE")]
    (asked,) = [e for e in events if e["event"] == "approval"]
    assert asked["status"] == "pending" and asked["command"] == "echo probe-redis-path"
    assert events[-1]["resume_command"] == \
        f"ghost approvals decide {asked['approval_id']} approve --as USER"
    assert any(e["event"] == "turn" and e["role"] == "model" and "Hypothesis h1" in
               (e["text"] or "") for e in events)

    status = one_json(ghost(env, "status", sid, "--json"), "status")
    assert status["state"] == "awaiting_approval" and status["resumable"] is True
    assert status["phase"]["waiting_for"] == "approval"
    assert [h["id"] for h in status["hypotheses"]] == ["h1"]
    (pending,) = status["pending_approvals"]
    assert pending["may_decide"]["excluded"] == ["alertmanager"]
    assert pending["expires_at"] > status["generated_at"]

    listed = one_json(ghost(env, "approvals", "list", "--json"), "approvals-list")
    assert [a["approval_id"] for a in listed["approvals"]] == [asked["approval_id"]]

    # 4. the requester may not approve their own investigation's command
    refused = ghost(env, "approvals", "decide", asked["approval_id"], "approve", "--as",
                    "alertmanager", "--json")
    err = error_of(refused, "NOT_ALLOWED", 1)
    assert "second engineer" in err["error"]["message"]
    # ...a second engineer may
    approved = ghost(env, "approvals", "decide", asked["approval_id"], "approve", "--as",
                     "oncall-ana", "--json")
    assert approved.returncode == 0, approved.stdout
    decision = one_json(approved, "approval-decision")
    assert decision["result"] == "approved" and decision["decided_by"] == "oncall-ana"
    assert decision["session_id"] == sid
    # ...and the first decision wins
    late = ghost(env, "approvals", "decide", asked["approval_id"], "deny", "--as", "oncall-bo",
                 "--json")
    assert "approved by oncall-ana" in error_of(late, "APPROVAL_NOT_PENDING", 1)["error"][
        "message"]

    # 5. the worker continues; the watch sees the approved command and the end
    assert ghost(env, "worker", "--once").returncode == 0
    finished = ghost(env, "watch", sid, "--jsonl", "--timeout", "30", "--interval", "0.2")
    assert finished.returncode == 0, finished.stdout
    events = json_lines(finished, "watch-event")
    assert events[-1]["event"] == "end" and events[-1]["state"] == "completed"
    assert events[-1]["rca_available"] is True
    approved_run = [e for e in events if e["event"] == "command"
                    and e["command"] == "echo probe-redis-path"]
    assert approved_run and approved_run[0]["actor"] == "oncall-ana"
    assert approved_run[0]["action"] == "user_approved"
    assert approved_run[0]["exit_code"] == 0

    # 6. the RCA, fetched with the contract
    rca = projected_json(ghost(env, "status", sid, "--json", "--fields",
                               "state,rca,resumable"), "status")
    assert set(rca) == {"schema_version", "generated_at", "host_id", "session_id", "state",
                        "rca", "resumable"}
    assert rca["state"] == "completed" and rca["resumable"] is False
    assert SUMMARY in rca["rca"]["markdown"]

    record = one_json(ghost(env, "audit", "show", approved_run[0]["audit_id"], "--json"),
                      "audit-record")
    assert record["record"]["command"] == "echo probe-redis-path"
    assert "probe-redis-path" in (record["record"]["output"] or "")
    fake_gemini.assert_drained()
