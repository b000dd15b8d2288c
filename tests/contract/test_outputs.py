"""The contract's documents on real data: each validated against its schema, with the
filters, projection and limits doing what docs/agent-contract.md says."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bot.contract.output import project
from core.session_state import utc_now
from storage.store import Store
from tests.contract.conftest import Run
from tests.contract.helpers import projection_validator, validate


def _approval(store: Store, sid: str, command: str, *, expires_in: float,
              requested_ago: float = 0.0) -> Any:
    now = utc_now()
    return store.create_approval(sid, command=command, command_hash="h" * 64,
                                 classifier_version="1", classification="RISKY", tier=3,
                                 rule="unknown-program", reasoning="check it",
                                 environment="local", requested_by="alertbot",
                                 requested_at=now - timedelta(seconds=requested_ago),
                                 expires_at=now + timedelta(seconds=expires_in))


def _waiting(store: Store) -> str:
    """A command-line investigation with two hypotheses, a task and two pending requests."""
    sid = store.create_investigation(symptom="vm-a cannot reach redis", model="m",
                                     audit_dir="a", platform="cli", channel_ref="cli",
                                     requested_by="alertbot").session_id
    inv = store.get_investigation(sid)
    state = dict(inv.state)
    state["hypothesis_log"] = [
        {"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE", "denial_count": 0},
        {"id": "h2", "description": "DNS is wrong", "state": "REFUTED", "denial_count": 0}]
    state["turn_count"] = 3
    store.save_state(sid, state, status="awaiting_approval",
                     engine_state={"phase": "dispatch", "max_turns": 50})
    store.append_task_event(sid, {"task_id": "cap-1", "state": "RUNNING",
                                  "intent": "capture_traffic", "target": "vm-a"})
    _approval(store, sid, "echo old", expires_in=-60, requested_ago=600)
    _approval(store, sid, "echo new", expires_in=1800)
    return sid


def test_status_of_an_investigation_waiting_for_approval(store: Store, cli: Run) -> None:
    sid = _waiting(store)
    code, doc = cli("status", sid, "--json")
    assert code == 0
    validate("status", doc)
    assert doc["session_id"] == sid and doc["state"] == "awaiting_approval"
    assert doc["phase"] == {"name": "dispatch", "turn": 3, "max_turns": 50,
                            "waiting_for": "approval", "worker_active": False}
    assert [h["id"] for h in doc["hypotheses"]] == ["h1", "h2"]
    old, new = doc["pending_approvals"]
    assert old["expired"] is True and new["expired"] is False
    assert new["may_decide"]["excluded"] == ["alertbot"] and new["may_decide"]["channel"] == "cli"
    assert doc["tasks"] == [{"task_id": "cap-1", "intent": "capture_traffic", "state": "RUNNING",
                             "outcome": None, "target": "vm-a", "mode": None,
                             "paired_task_id": None, "error_detail": None}]
    assert doc["resumable"] is True
    assert doc["resume_command"] == f"ghost approvals decide {old['approval_id']} approve --as USER"
    assert "document" not in doc and "markdown" not in doc["rca"]

    code, short = cli("status", sid, "--json", "--limit", "1")
    validate("status", short)
    assert len(short["hypotheses"]) == 1 and len(short["pending_approvals"]) == 1
    assert short["counts"] == {"hypotheses": 2, "pending_approvals": 2, "tasks": 1,
                               "audit_records": 0}

    code, full = cli("status", sid, "--json", "--verbose")
    validate("status", full)
    assert full["document"]["session_id"] == sid and "_checksum" in full["document"]
    assert full["pending_approvals"][0]["reasoning"] == "check it"

    code, text = cli("status", sid)
    assert code == 0 and "echo new" in text and "waiting for approval" in text


def test_fields_project_through_arrays_and_keep_the_envelope(store: Store, cli: Run) -> None:
    sid = _waiting(store)
    code, doc = cli("status", sid, "--json", "--fields",
                    "phase.waiting_for,pending_approvals.approval_id,rca.markdown")
    assert code == 0
    assert set(doc) == {"schema_version", "generated_at", "host_id", "session_id", "phase",
                        "pending_approvals", "rca"}
    assert doc["phase"] == {"waiting_for": "approval"}
    assert all(set(a) == {"approval_id"} for a in doc["pending_approvals"])
    assert doc["rca"] == {"markdown": None}
    assert not list(projection_validator("status").iter_errors(doc))


def test_project_ignores_unknown_fields_and_projects_list_items() -> None:
    doc = {"schema_version": "1.0.0", "a": {"b": 1, "c": 2}, "xs": [{"k": 1, "v": 2}]}
    assert project(doc, ["a.c", "xs.v", "nope"]) == {
        "schema_version": "1.0.0", "a": {"c": 2}, "xs": [{"v": 2}]}
    listing = {"count": 1, "items": [{"k": 1, "v": 2}]}
    assert project(listing, ["k"], items_key="items") == {"count": 1, "items": [{"k": 1}]}


def test_session_list_filters(store: Store, migrated_url: str, cli: Run) -> None:
    old_store = Store(store.db, clock=lambda: utc_now() - timedelta(days=3))
    old = old_store.create_investigation(symptom="last week", model="m", audit_dir="a",
                                         session_id="ghost_old").session_id
    done = store.create_investigation(symptom="done", model="m", audit_dir="a").session_id
    store.set_status(done, "completed")
    sid = _waiting(store)

    code, doc = cli("session", "list", "--json")
    validate("session-list", doc)
    assert [s["session_id"] for s in doc["sessions"]][-1] == old and doc["count"] == 3
    _, recent = cli("session", "list", "--json", "--since", "1d")
    assert {s["session_id"] for s in recent["sessions"]} == {done, sid}
    _, since_date = cli("session", "list", "--json", "--since",
                        (utc_now() - timedelta(days=1)).date().isoformat())
    assert old not in {s["session_id"] for s in since_date["sessions"]}
    _, waiting = cli("session", "list", "--json", "--status", "awaiting_approval,failed")
    assert [s["session_id"] for s in waiting["sessions"]] == [sid]
    _, one = cli("session", "list", "--json", "--limit", "1", "--fields", "session_id,state")
    assert one["count"] == 1 and one["sessions"] == [{"session_id": sid,
                                                      "state": "awaiting_approval"}]
    code, text = cli("session", "list", "--status", "completed")
    assert code == 0 and done in text and sid not in text


def test_approvals_list(store: Store, cli: Run) -> None:
    sid = _waiting(store)
    other = store.create_investigation(symptom="x", model="m", audit_dir="a",
                                       platform="slack", channel_ref="C1",
                                       requested_by="U1").session_id
    slack_one = _approval(store, other, "echo slack", expires_in=1800, requested_ago=-5)
    code, doc = cli("approvals", "list", "--json")
    validate("approvals-list", doc)
    assert [a["command"] for a in doc["approvals"]] == ["echo old", "echo new", "echo slack"]
    rule = doc["approvals"][2]["may_decide"]["rule"]
    assert rule == "any member of the Slack channel C1 except U1"
    _, mine = cli("approvals", "list", "--json", "--session", sid, "--fields", "command")
    assert mine["session_id"] == sid
    assert mine["approvals"] == [{"command": "echo old"}, {"command": "echo new"}]
    code, text = cli("approvals", "list")
    assert code == 0 and slack_one.approval_id in text


def test_chat_investigations_resume_in_chat(store: Store, cli: Run) -> None:
    sid = store.create_investigation(symptom="x", model="m", audit_dir="a", platform="slack",
                                     channel_ref="C1", requested_by="U1").session_id
    store.set_status(sid, "failed")
    _, doc = cli("status", sid, "--json")
    assert doc["resumable"] is True and doc["resume_command"] == f"/ghost resume {sid}"
    cli_sid = store.create_investigation(symptom="y", model="m", audit_dir="a",
                                         platform="cli", channel_ref="cli").session_id
    store.set_status(cli_sid, "awaiting_user")
    _, doc = cli("status", cli_sid, "--json")
    assert doc["phase"]["waiting_for"] == "instruction"
    assert doc["resume_command"] == f"ghost investigate --resume {cli_sid}"


def test_audit_show_and_verify(store: Store, cli: Run) -> None:
    sid = store.create_investigation(symptom="x", model="m", audit_dir="a").session_id
    record = store.append_audit(sid, {"kind": "command", "command": "dig +short redis",
                                      "classification": "SAFE", "status": "completed",
                                      "exit_code": 0, "output": "10.0.0.4",
                                      "environment": "local"})
    code, doc = cli("audit", "show", record["audit_id"], "--json")
    validate("audit-record", doc)
    assert doc["session_id"] == sid and doc["record"]["output"] == "10.0.0.4"
    assert "hash" not in doc["record"]
    _, full = cli("audit", "show", record["audit_id"], "--json", "--verbose")
    assert full["record"]["hash"] == record["hash"]
    _, some = cli("audit", "show", record["audit_id"], "--json", "--fields", "command")
    assert some["record"] == {"command": "dig +short redis"}
    code, verdict = cli("audit", "verify", sid, "--json")
    assert code == 0 and validate("audit-verify", verdict)["ok"] is True
    assert verdict["count"] == 1


def test_watch_limit_stops_after_n_events(store: Store, cli: Run) -> None:
    sid = _waiting(store)
    code, lines = cli("watch", sid, "--jsonl", "--limit", "2")
    assert code == 0 and len(lines) == 2
    for line in lines:
        validate("watch-event", line)
    assert lines[0]["event"] == "state"


def test_session_list_verbose_adds_the_rest(store: Store, cli: Run) -> None:
    sid = _waiting(store)
    _, compact = cli("session", "list", "--json")
    _, full = cli("session", "list", "--json", "--verbose")
    validate("session-list", full)
    assert "turn" not in compact["sessions"][0]
    assert full["sessions"][0]["turn"] == 3 and full["sessions"][0]["session_id"] == sid


def test_json_after_a_double_dash_is_not_ghosts_flag() -> None:
    from bot.contract.runner import wants_json

    assert wants_json(["status", "x", "--json"])
    assert not wants_json(["lab", "exec", "s", "--", "tool", "--json"])


def test_session_show_prints_the_section_8_document(store: Store, cli: Run) -> None:
    """Not enveloped (DESIGN.md: exactly the stored document), but still a schema'd output."""
    sid = _waiting(store)
    code, doc = cli("session", "show", sid, "--json")
    assert code == 0
    validate("session-state", doc)
    assert doc["session_id"] == sid and doc["turn_count"] == 3
    _, status = cli("status", sid, "--json", "--verbose")
    assert status["document"] == doc


def test_every_schema_is_valid_and_documented() -> None:
    from jsonschema import Draft202012Validator

    from tests.contract.helpers import REPO, SCHEMAS

    doc = (REPO / "docs" / "agent-contract.md").read_text()
    names = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    assert len(names) >= 10
    for name in names:
        Draft202012Validator.check_schema(json.loads((SCHEMAS / name).read_text()))
        assert f"schemas/{name}" in doc, f"{name} is not in docs/agent-contract.md"


def test_session_list_says_which_runs_were_interrupted_and_what_they_cost(
        store: Store, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal run whose process died (running, nobody holds it) is ``interrupted``; the
    cost comes from the usage the engine recorded, priced by GHOST_PRICES, null without one."""
    dead = store.create_investigation(symptom="killed mid-run", model="m", audit_dir="a",
                                      platform="terminal").session_id
    inv = store.get_investigation(dead)
    store.save_state(dead, dict(inv.state), status="running", engine_state={
        "usage": [{"turn": 1, "model": "gemini-x", "promptTokenCount": 1_000_000,
                   "candidatesTokenCount": 0}]})
    chat = store.create_investigation(symptom="in slack", model="m", audit_dir="a",
                                      platform="slack", channel_ref="C1").session_id
    store.set_status(chat, "running")

    _, unpriced = cli("session", "list", "--json")
    validate("session-list", unpriced)
    rows = {s["session_id"]: s for s in unpriced["sessions"]}
    assert rows[dead]["interrupted"] is True and rows[chat]["interrupted"] is False
    assert rows[dead]["cost_usd"] is None and rows[chat]["cost_usd"] is None

    monkeypatch.setenv("GHOST_PRICES", '{"gemini-x": {"prompt": 2, "output": 8}}')
    _, priced = cli("session", "list", "--json")
    assert {s["session_id"]: s["cost_usd"] for s in priced["sessions"]}[dead] == 2.0
