"""Slack with GHOST_LAB: a team tries Ghost before granting it any Azure role. Signed requests
into the real bolt app, the real WebClient against the mock Slack API, the lab behind the same
ports as Azure; the replay (or the fake Gemini) plays the model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.lab_wiring import LAB_BADGE, scenario_key
from storage.store import Store
from tests.fakes.gemini_server import call, function_call_turn
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import (
    APPROVER,
    CHANNEL,
    OTHER_MEMBER,
    REQUESTER,
    SlackHarness,
    make_harness,
)

from .wiring_fixtures import REPLAY, scenario_data, write_scenario


@pytest.fixture
def fake_slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    fake = FakeSlack(members={CHANNEL: [REQUESTER, APPROVER, OTHER_MEMBER]}).start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield fake
    fake.stop()


def lab_slack(store: Store, fake: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              replay: list[dict[str, Any]] | None = REPLAY) -> SlackHarness:
    path = write_scenario(tmp_path / "scn", scenario_data(), replay)
    lab_store = Store(store.db, lab=scenario_key(str(path))[0])  # what `ghost serve` builds
    return make_harness(lab_store, fake, tmp_path / "data", monkeypatch, GHOST_LAB=str(path))


def approve_until_done(slack: SlackHarness, sid: str) -> list[str]:
    """Approve every card as a second engineer, running the worker between clicks."""
    from bot.slack import blocks

    approved = []
    for _ in range(10):
        slack.worker.run_until_idle()
        inv = slack.store.get_investigation(sid)
        if inv.status != "awaiting_approval":
            return approved
        approval = slack.pending_approval(sid)
        assert slack.click(blocks.APPROVE, approval.approval_id, APPROVER).status == 200
        approved.append(approval.command)
    raise AssertionError("the investigation did not finish")


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("text")) + " " + str(m.get("blocks")) for m in messages]


def test_a_whole_lab_investigation_in_slack_marked_as_a_lab_run(
        store: Store, fake_slack: FakeSlack, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    slack = lab_slack(store, fake_slack, tmp_path, monkeypatch)
    assert slack.slash("investigate app-1 cannot reach db-1 on 6380").status == 200
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    assert inv.lab and inv.state["model"] == "replay:wiring-test"
    assert inv.status == "awaiting_approval"
    card = slack.fake.thread(CHANNEL, str(inv.thread_ref))[-1]
    assert "packet-capture create" in card["text"] and "simulated" in str(card["blocks"])

    approved = approve_until_done(slack, inv.session_id)
    assert any("packet-capture create" in c for c in approved)
    done = slack.store.get_investigation(inv.session_id)
    assert done.status == "completed"

    thread = slack.fake.thread(CHANNEL, str(inv.thread_ref))
    assert thread and all(LAB_BADGE in t for t in texts(thread)), \
        [t[:120] for t in texts(thread) if LAB_BADGE not in t]
    assert LAB_BADGE in str(slack.fake.message(CHANNEL, str(inv.thread_ref))["blocks"])
    upload = slack.fake.called("files.completeUploadExternal")[0].args
    assert upload["thread_ts"] == inv.thread_ref and LAB_BADGE in upload["initial_comment"]
    (rca,) = slack.fake.uploads.values()
    assert LAB_BADGE.encode() in rca and b"deny-app-6380" in rca

    ran = [r for r in slack.store.audit_records(inv.session_id) if r["kind"] == "command"]
    assert any(r["command"].startswith("ghost-forensics ") and r["exit_code"] == 0
               for r in ran), "the lab's capture was analysed by the forensics engine"
    assert all(r["classification"] in ("SAFE", "RISKY") for r in ran)


def test_with_a_gemini_key_the_model_investigates_the_simulated_estate(
        store: Store, fake_slack: FakeSlack, fake_gemini: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    slack = lab_slack(store, fake_slack, tmp_path, monkeypatch, replay=None)
    fake_gemini.enqueue(
        function_call_turn(call("run_shell_cmd", {
            "command": "az network watcher test-ip-flow -g rg-data --vm db-1 --direction "
                       "Inbound --protocol TCP --local 10.20.2.4:6380 --remote 10.20.1.4:50000",
            "reasoning": "which rule decides"})),
        function_call_turn(call("complete_investigation", {
            "confidence": "high", "root_cause_summary": "deny-app-6380 on nsg-db."})),
    )
    assert slack.slash("investigate app-1 cannot reach db-1 on 6380").status == 200
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    assert inv.status == "completed" and inv.lab
    seen = fake_gemini.requests[1].function_responses()[0]["response"]
    assert seen["exit_code"] == 0 and "securityRules/deny-app-6380" in seen["output"]
    fake_gemini.assert_drained()
