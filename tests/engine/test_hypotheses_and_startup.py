"""Hypothesis bookkeeping (structured and text fallback) and the start-up orphan buckets."""

from __future__ import annotations

from datetime import UTC, datetime

from core.engine import hypotheses as hyp
from core.engine.startup import classify_orphans, clean_up
from core.session_state import new_session_state
from tests.engine.fakes import RecordingOrchestrator

NOW = "2025-01-15T14:31:05Z"


def fresh() -> dict:  # type: ignore[type-arg]
    return new_session_state("ghost_x", model="m", audit_dir="a",
                             created_at=datetime(2025, 1, 15, tzinfo=UTC))


def test_structured_reports_open_and_resolve() -> None:
    state = fresh()
    hyp.apply_reported(state, [{"id": "H1", "description": "NSG blocks 443"},
                               {"id": "h2", "description": "UDR to a dead NVA"}], NOW)
    assert state["active_hypothesis_ids"] == ["h1", "h2"]
    hyp.apply_reported(state, [{"id": "h1", "state": "REFUTED",
                                "evidence_audit_ids": ["ghost_x_004"]}], NOW)
    h1 = state["hypothesis_log"][0]
    assert h1["state"] == "REFUTED" and h1["resolving_audit_id"] == "ghost_x_004"
    assert h1["resolved_at"] == NOW and state["active_hypothesis_ids"] == ["h2"]


def test_text_fallback_follows_the_spec_convention() -> None:
    state = fresh()
    hyp.apply_text(state, "Hypothesis H1: NSG rule blocking TCP 6379.\n"
                          "Hypothesis H2: UDR sending traffic to wrong next-hop.", NOW)
    assert [h["id"] for h in state["hypothesis_log"]] == ["h1", "h2"]
    hyp.apply_text(state, "NSG rules permit 6379 (ghost_x_003). h1 REFUTED. Checking routes.",
                   NOW, known_audit_ids={"ghost_x_003"})
    assert state["hypothesis_log"][0]["state"] == "REFUTED"  # ids match case-insensitively
    assert state["hypothesis_log"][0]["resolving_audit_id"] == "ghost_x_003"


def test_text_fallback_reads_several_hypotheses_on_one_line_and_markdown() -> None:
    """A model writes prose, not one hypothesis per line: each one is opened, and its
    description is the statement, not the plan that follows it."""
    state = fresh()
    hyp.apply_text(state, "Hypothesis H1: NSG rule blocks TCP 6379. Hypothesis H2: a UDR sends "
                          "it to a dead NVA. Starting with local probes.\n"
                          "- **Hypothesis H3:** DNS resolves redis.cache.windows.net publicly.",
                   NOW)
    assert [(h["id"], h["description"]) for h in state["hypothesis_log"]] == [
        ("h1", "NSG rule blocks TCP 6379"), ("h2", "a UDR sends it to a dead NVA"),
        ("h3", "DNS resolves redis.cache.windows.net publicly")]
    assert state["active_hypothesis_ids"] == ["h1", "h2", "h3"]


def test_contradiction_records_an_evidence_conflict_and_its_resolution() -> None:
    state = fresh()
    hyp.apply_reported(state, [{"id": "h1", "description": "path blocked"}], NOW)
    hyp.apply_reported(state, [{"id": "h1", "state": "CONTRADICTED",
                                "evidence_audit_ids": ["ghost_x_003", "ghost_x_008"]}], NOW)
    [conflict] = state["evidence_conflicts"]
    assert conflict["conflicting_audit_ids"] == ["ghost_x_003", "ghost_x_008"]
    assert "h1" in state["active_hypothesis_ids"]  # CONTRADICTED is not terminal
    hyp.apply_reported(state, [{"id": "h1", "state": "REFUTED",
                                "evidence_audit_ids": ["ghost_x_011"]}], NOW)
    assert state["evidence_conflicts"][0]["resolution"] == "REFUTED"


def test_denials_count_against_every_active_hypothesis() -> None:
    state = fresh()
    hyp.apply_reported(state, [{"id": "h1", "description": "a"},
                               {"id": "h2", "description": "b"}], NOW)
    meta = hyp.record_denial(state, turn=3, command="az vm stop", denial_reason="",
                             audit_id="ghost_x_005", now=NOW)
    assert state["denial_tracker"] == {"h1": 1, "h2": 1}
    assert meta["denial_count"] == 1 and "denial_reason" not in meta


def test_orphan_buckets() -> None:
    report = {
        "tasks": [
            {"task_id": "t_running", "session_id": "old", "state": "WAITING"},
            {"task_id": "t_pending", "session_id": "old", "state": "COMPLETED",
             "cleanup_status": "pending"},
            {"task_id": "t_partial", "session_id": "old", "state": "DONE",
             "cleanup_status": "partial"},
            {"task_id": "t_clean", "session_id": "old", "state": "DONE",
             "cleanup_status": "completed"},
            {"task_id": "t_mine", "session_id": "now", "state": "WAITING"},
        ],
        "orphans": {"untracked_captures": [{"name": "ghost_vm_x", "location": "eastus"}],
                    "stale_files": [{"path": "/tmp/captures/ghost_old.pcap"}]},
    }
    buckets = classify_orphans(report, "now")
    assert [t["task_id"] for t in buckets.abandoned_tasks] == ["t_running"]
    assert [t["task_id"] for t in buckets.needs_cleanup] == ["t_pending"]
    assert [t["task_id"] for t in buckets.partially_cleaned] == ["t_partial"]
    assert buckets.total == 5

    orch = RecordingOrchestrator({"cleanup_status": "completed"}, {"cleanup_status": "partial"},
                                 {"cleanup_status": "partial"})
    summary = clean_up(orch, buckets)
    assert [r["task_id"] for r in orch.requests] == ["t_running", "t_pending", "t_partial"]
    assert summary.cleaned == ["t_running"] and summary.skipped == ["t_pending"]
    assert summary.manual_cleanup_pending == ["t_partial"]


def test_a_resolution_cites_only_real_evidence_the_model_gave() -> None:
    """Regression (issue 13): a resolution citing nothing used to cite the newest command
    (a failed capture-target check ended up as evidence for unrelated hypotheses)."""
    state = fresh()
    known = {"ghost_x_004", "ghost_x_009"}
    hyp.apply_reported(state, [{"id": "h1", "description": "NSG blocks 443"}], NOW)
    hyp.apply_reported(state, [{"id": "h1", "state": "CONFIRMED"}], NOW, known_audit_ids=known)
    assert state["hypothesis_log"][0]["state"] == "CONFIRMED"
    assert state["hypothesis_log"][0]["resolving_audit_id"] is None
    # a citation the model gives counts when the record exists; a made-up or malformed one not
    hyp.apply_reported(state, [{"id": "h2", "description": "UDR"},
                               {"id": "h3", "description": "DNS"},
                               {"id": "h4", "description": "MTU"}], NOW)
    hyp.apply_reported(state, [{"id": "h2", "state": "REFUTED",
                                "evidence_audit_ids": ["ghost_x_004"]},
                               {"id": "h3", "state": "REFUTED", "evidence_audit_ids": "x"},
                               {"id": "H4", "state": "REFUTED",
                                "evidence_audit_ids": ["ghost_x_777"]}],
                       NOW, known_audit_ids=known)
    log = {h["id"]: h for h in state["hypothesis_log"]}
    assert log["h2"]["resolving_audit_id"] == "ghost_x_004"
    assert log["h3"]["resolving_audit_id"] is None
    assert log["h4"]["state"] == "REFUTED" and log["h4"]["resolving_audit_id"] is None
