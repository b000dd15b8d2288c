"""An RCA never contradicts itself (issue 13): the summary, the Hypotheses Log and the
unresolved section tell one story, ids match whatever their case, evidence cited is real, SDK
calls are shown as what they were, and the report says what was investigated and by whom."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.engine.rca import build_rca
from core.safety.approval import Decision
from core.safety.shell import SafeExecShell
from core.session_state import new_session_state
from storage.store import Store
from tests.engine.fakes import FakeBrain, call, reply
from tests.engine.test_loop import Approver, Rig

OPEN = ("ACTIVE", "DENIED_ONCE", "DENIED_TWICE")


def section(md: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def claims(md: str) -> dict[str, set[tuple[str, str]]]:
    """What each section says about each hypothesis: {id: {(section, state)}}."""
    said: dict[str, set[tuple[str, str]]] = {}
    for line in section(md, "Investigation Summary").splitlines():
        found = re.match(r"- (Confirmed|Refuted): (.+)$", line)
        if found:
            for hid in found.group(2).split(", "):
                said.setdefault(hid, set()).add(("summary", found.group(1).upper()))
    for line in section(md, "Hypotheses Log").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] not in (
                "Hypothesis ID", "---"):
            said.setdefault(cells[0], set()).add(("table", cells[2]))
    for line in section(md, "Unverifiable and Contradicted Hypotheses").splitlines():
        found = re.match(r"- \*\*(\S+)\*\* (unverifiable|contradicted|still open \((\w+)\))",
                         line)
        if found:
            state = found.group(3) or found.group(2).upper()
            said.setdefault(found.group(1), set()).add(("unresolved", state))
    return said


def assert_consistent(md: str) -> dict[str, str]:
    """Every hypothesis has one state, and each section that mentions it agrees; returns the
    state per id. Ids are compared exactly: the report must use one form."""
    states: dict[str, str] = {}
    for hid, seen in claims(md).items():
        table = {state for where, state in seen if where == "table"}
        assert len(table) == 1, f"{hid}: the Hypotheses Log has {table or 'no row'}"
        state = table.pop()
        for where, claimed in seen:
            if where == "unresolved" and claimed in OPEN:
                assert state in OPEN, f"{hid}: still open in one section, {state} in the table"
            else:
                assert claimed == state, f"{hid}: {where} says {claimed}, the table {state}"
        wanted = {"CONFIRMED": "summary", "REFUTED": "summary", "UNVERIFIABLE": "unresolved",
                  "CONTRADICTED": "unresolved"}.get(state, "unresolved")
        assert any(where == wanted for where, _ in seen), f"{hid} ({state}) missing in {wanted}"
        states[hid] = state
    return states


def test_confirm_h1_refute_h2_with_evidence_gives_one_story(store: Store,
                                                            tmp_path: Path) -> None:
    """Regression (issue 13): the summary said "Confirmed: H1" while the table had h1 ACTIVE
    and the unresolved section "still open"."""
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="ss -tln", reasoning="is redis listening"),
              text="Hypothesis H1: an NSG rule denies TCP 6379.\n"
                   "Hypothesis H2: redis is not listening on 6379."),
    )
    rig = Rig(store, tmp_path, brain)
    sid = rig.start()
    brain.replies.extend([
        reply(call("run_shell_cmd", command="ip route show", reasoning="routes",
                   hypotheses=[{"id": "H2", "state": "REFUTED",
                                "evidence_audit_ids": [f"{sid}_002"]}])),
        reply(call("complete_investigation", confidence="high",
                   root_cause_summary="NSG rule deny-6379 blocks redis.",
                   confirmed_hypotheses=["H1"], refuted_hypotheses=["h2"],
                   recommended_actions=["Remove deny-6379"]),
              call("run_shell_cmd", command="echo never-runs", reasoning="after the end")),
    ])
    outcome = rig.engine.advance(sid)
    assert outcome.kind == "completed"
    md = rig.written[next(iter(rig.written))]
    assert assert_consistent(md) == {"h1": "CONFIRMED", "h2": "REFUTED"}
    summary = section(md, "Investigation Summary")
    assert "- Confirmed: h1" in summary and "- Refuted: h2" in summary
    assert "None: no hypothesis was left" in section(
        md, "Unverifiable and Contradicted Hypotheses")
    log = {h["id"]: h for h in store.get_investigation(sid).state["hypothesis_log"]}
    assert log["h2"]["resolving_audit_id"] == f"{sid}_002"  # the evidence the model cited
    assert log["h1"]["resolving_audit_id"] is None  # the final call cited none
    assert store.get_investigation(sid).state["active_hypothesis_ids"] == []
    # D6: the call after complete_investigation in the same turn never ran
    assert not any("never-runs" in str(r.get("command")) for r in store.audit_records(sid))


def test_a_final_list_that_contradicts_a_terminal_state_is_noted_not_believed(
        store: Store, tmp_path: Path) -> None:
    """h1 became UNVERIFIABLE after three denials; the final call calls it confirmed. The log
    keeps UNVERIFIABLE (terminal, M8) and the summary says why, instead of contradicting it."""
    h1 = [{"id": "H1", "description": "NSG blocks 6379", "state": "ACTIVE"}]
    brain = FakeBrain(
        *[reply(call("run_shell_cmd", command=f"echo probe{i}", reasoning="x",
                     hypotheses=h1 if i == 0 else None)) for i in range(3)],
        reply(call("run_shell_cmd", command="ss -tln", reasoning="after",
                   hypotheses=[{"id": "h1", "state": "CONFIRMED"}])),
        reply(call("complete_investigation", confidence="low", root_cause_summary="x",
                   confirmed_hypotheses=["H1"])),
    )
    deny = Decision.deny("alice", "not on prod")
    rig = Rig(store, tmp_path, brain, approver=Approver(deny, deny, deny))
    sid = rig.start()
    rig.engine.advance(sid)
    md = store.get_investigation(sid).rca_markdown or ""
    assert assert_consistent(md) == {"h1": "UNVERIFIABLE"}
    assert "listed h1 as confirmed, but it was already UNVERIFIABLE" in section(
        md, "Investigation Summary")
    entry = store.get_investigation(sid).state["hypothesis_log"][0]
    assert entry["state"] == "UNVERIFIABLE" and entry["denial_count"] == 3
    # M8: nothing after the third denial was attributed to it
    assert [e["command"] for e in entry["denial_events"]] == ["echo probe0", "echo probe1",
                                                              "echo probe2"]


def test_build_rca_applies_the_final_lists_itself() -> None:
    """Whatever state the caller hands in, the report is consistent (ids in any case)."""
    state = new_session_state("ghost_x", model="m", audit_dir="a",
                              created_at=datetime(2025, 1, 15, tzinfo=UTC))
    state["hypothesis_log"] = [
        {"id": "h1", "description": "NSG", "state": "ACTIVE", "denial_count": 0,
         "denial_events": []},
        {"id": "h2", "description": "UDR", "state": "DENIED_TWICE", "denial_count": 2,
         "denial_events": []},
        {"id": "h3", "description": "DNS", "state": "ACTIVE", "denial_count": 0,
         "denial_events": []}]
    completion: dict[str, Any] = {"confidence": "medium", "root_cause_summary": "NSG.",
                                  "confirmed_hypotheses": ["H1"],
                                  "unverifiable_hypotheses": ["H2"]}
    report = build_rca(state=state, audit_records=[], task_events=[], completion=completion,
                       read_file=lambda p: {}, generated_at=datetime(2025, 1, 15, tzinfo=UTC))
    assert assert_consistent(report.markdown) == {"h1": "CONFIRMED", "h2": "UNVERIFIABLE",
                                                  "h3": "ACTIVE"}
    assert state["hypothesis_log"][0]["state"] == "ACTIVE"  # the caller's state untouched
    table = section(report.markdown, "Hypotheses Log")
    assert "| h1 | NSG | CONFIRMED | 0 | none cited |" in table


def test_sdk_calls_are_shown_as_sdk_calls_with_their_real_outcome(store: Store,
                                                                  tmp_path: Path) -> None:
    """Regression (issue 13): a failed capture-target detection was audited and shown as
    `az resource list … exit 1`, a command that never ran."""
    sid = store.create_investigation(symptom="502s", model="m", audit_dir="a",
                                     requested_by="U_REQ").session_id
    shell = SafeExecShell(sid, audit=store, approvals=store, approver=Approver(),
                          data_dir=tmp_path, requested_by="U_REQ")
    failed = shell.execute_call(
        "az resource list --resource-group prod-rg --name web-01 -o json", "detect",
        lambda: (1, "", "ResourceNotFound: No VM or AKS cluster named 'web-01'"))
    record = next(r for r in store.audit_records(sid) if r["audit_id"] == failed["audit_id"])
    assert record["details"]["via"] == "sdk"
    assert record["details"]["meaning"].startswith("Azure SDK call failed: ResourceNotFound")
    report = build_rca(state=store.get_investigation(sid).state,
                       audit_records=store.audit_records(sid), task_events=[],
                       completion=None, read_file=lambda p: {},
                       generated_at=datetime(2025, 1, 15, tzinfo=UTC))
    row = next(line for line in report.markdown.splitlines()
               if line.startswith(f"| {failed['audit_id']} "))
    assert "(az equivalent of an SDK call)" in row
    assert "n/a (SDK)" in row and "Azure SDK call failed: ResourceNotFound" in row
    assert "failed (exit 1)" not in row


def test_the_report_opens_with_symptom_requester_and_approvers(store: Store,
                                                               tmp_path: Path) -> None:
    brain = FakeBrain(
        reply(call("run_shell_cmd", command="echo fix-it", reasoning="needs approval")),
        reply(call("run_shell_cmd", command="echo other", reasoning="needs approval")),
        reply(call("complete_investigation", confidence="low", root_cause_summary="x")),
    )
    rig = Rig(store, tmp_path, brain, approver=Approver(Decision.approve("alice"),
                                                        Decision.deny("bob", "no")))
    sid = store.create_investigation(symptom="web-01 cannot reach redis on 6379", model="m",
                                     audit_dir="a", requested_by="U_CAROL").session_id
    rig.engine.begin(sid, "web-01 cannot reach redis on 6379")
    rig.engine.advance(sid)
    md = store.get_investigation(sid).rca_markdown or ""
    top = md.split("## Investigation Summary")[0]
    assert "**Symptom:** web-01 cannot reach redis on 6379" in top
    assert "**Requested by:** U_CAROL" in top
    assert "**Approvers:** alice (1 approved); bob (1 denied)" in top
