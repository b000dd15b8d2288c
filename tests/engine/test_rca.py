"""The RCA generator (ghost-design §7; test plan R3–R13 and S8) on realistic record lists."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.audit_record import RECORD_FIELDS
from core.engine.rca import RcaReport, build_rca
from core.engine.rca_captures import ReadFile
from core.engine.rca_evidence import classify_audit, latest_tasks, summary_path_for

SID = "ghost_20250115_143022"
NOW = datetime(2025, 1, 15, 15, 2, 0, tzinfo=UTC)
NSG_ALLOW_OUTPUT = (
    '[\n  {\n    "name": "allow-redis-6379",\n    "access": "Allow",\n'
    '    "destinationPortRange": "6379",\n    "priority": 200\n  }\n]'
)
NSG_DENY_OUTPUT = (
    '[\n  {\n    "name": "deny-all",\n    "access": "Deny",\n    "priority": 4096\n  }\n]'
)
PING_FAIL_OUTPUT = "PING 10.0.2.4: 56 data bytes\nRequest timeout for icmp_seq 0 zz-ping-fail-9f3"
SUMMARY_TEXT = (
    "## Executive Summary — web-vm-01\n\n"
    "Capture `web-vm-01`: 1200 packets, 88.1 KB, 60.0 s, 14 flows (12 TCP).\n\n"
    "1. **[HIGH] TCP resets from 10.0.2.4:6379**\n"
    "   Every SYN to redis-primary was answered by RST.\n"
)
FULL_REPORT_TEXT = (
    "# Forensic Report — web-vm-01\n\n## Executive Summary\n\n"
    "Capture `web-vm-01`: 1200 packets.\n\n1. **[HIGH] TCP resets from 10.0.2.4:6379**\n\n"
    "## Findings\n\n| # | severity |\n|---|---|\n| 1 | high |\n"
)


# ----------------------------------------------------------------------------- builders
class Audit:
    """Builds the audit log of one investigation: audit ids and seqs in order."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def _add(self, **fields: Any) -> dict[str, Any]:
        seq = len(self.records) + 1
        record: dict[str, Any] = dict.fromkeys(RECORD_FIELDS)
        record.update(audit_id=f"{SID}_{seq:03d}", session_id=SID, seq=seq,
                      timestamp=f"2025-01-15T14:{30 + seq:02d}:00Z", prev_hash="0" * 64,
                      hash=f"{seq:064x}")
        record.update(fields)
        self.records.append(record)
        return record

    def run(self, command: str, *, output: str = "", exit_code: int | None = 0,
            status: str = "completed", error: str | None = None, action: str = "auto_approved",
            classification: str = "SAFE", actor: str = "ghost") -> str:
        env = "azure" if command.startswith("az ") else "local"
        started = self._add(kind="command_started", command=command, status="executing",
                            action=action, classification=classification, environment=env)
        done = self._add(kind="command", command=command, status=status, exit_code=exit_code,
                         output=output, stderr="", error=error, action=action, actor=actor,
                         classification=classification, environment=env,
                         ref_audit_id=started["audit_id"],
                         output_metadata={"truncation_applied": False})
        return str(done["audit_id"])

    def deny(self, command: str, reason: str | None, *, actor: str = "U-ALICE") -> str:
        self._add(kind="approval", command=command, status="denied", actor=actor,
                  denial_reason=reason, environment="local")
        rec = self._add(kind="command", command=command, status="denied", exit_code=None,
                        output="", error="user_denied", action="user_denied", actor=actor,
                        classification="RISKY", denial_reason=reason,
                        environment="azure" if command.startswith("az ") else "local")
        return str(rec["audit_id"])

    def forbid(self, command: str) -> str:
        rec = self._add(kind="command", command=command, status="error", exit_code=None,
                        output="", error="forbidden_command", action="blocked", actor="ghost",
                        classification="FORBIDDEN", stderr="Blocked by T0.rm",
                        environment="local")
        return str(rec["audit_id"])


def task(task_id: str, state: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task_id": task_id, "session_id": SID, "intent": "capture_traffic",
        "target": "web-vm-01", "target_type": "vm", "state": state, "outcome": None,
        "local_pcap_path": None, "report_path": None, "summary_path": None,
        "error_detail": None, "shell_audit_ids": [],
    }
    record.update(fields)
    return record


def completed_task(task_id: str, stem: str = "web-vm-01", *, state: str = "COMPLETED",
                   outcome: str | None = "completed") -> dict[str, Any]:
    return task(task_id, state, outcome=outcome,
                local_pcap_path=f"/data/captures/{stem}.pcap",
                report_path=f"/data/captures/{stem}_forensic_report.md",
                summary_path=f"/data/captures/{stem}_executive_summary.md")


class Shell:
    """A stand-in for `cat PATH` through the Safe-Exec Shell: canned Tool 1 responses."""

    def __init__(self, files: Mapping[str, str] | None = None, *,
                 deny: tuple[str, ...] = ()) -> None:
        self.files = dict(files or {})
        self.deny = deny
        self.calls: list[str] = []

    def __call__(self, path: str) -> dict[str, Any]:
        self.calls.append(path)
        audit_id = f"{SID}_9{len(self.calls):02d}"
        base = {"classification": "SAFE", "stderr": "", "audit_id": audit_id,
                "environment": "local", "output_metadata": {"truncation_applied": False}}
        if path in self.deny:
            return {**base, "classification": "RISKY", "status": "denied",
                    "action": "user_denied", "output": "", "exit_code": None,
                    "error": "user_denied", "denial_reason": "not now"}
        if path not in self.files:
            return {**base, "status": "error", "action": "auto_approved", "output": "",
                    "exit_code": None, "error": "file_not_permitted"}
        return {**base, "status": "completed", "action": "auto_approved",
                "output": self.files[path], "exit_code": 0, "error": None}


def hypothesis(hid: str, description: str, state: str, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": hid, "description": description, "state": state, "denial_count": 0,
        "created_at": "2025-01-15T14:31:05Z", "resolved_at": None,
        "resolving_audit_id": None, "denial_events": [],
    }
    entry.update(fields)
    return entry


def session(*hypotheses: dict[str, Any], **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "session_id": SID, "created_at": "2025-01-15T14:30:22Z", "resumed_from": None,
        "model": "gemini-2.5-flash", "audit_dir": "./ghost-data", "turn_count": 9,
        "rca_report_path": None, "hypothesis_log": list(hypotheses), "denial_tracker": {},
        "consecutive_denial_counter": {}, "active_hypothesis_ids": [], "active_task_ids": [],
        "evidence_conflicts": [], "is_resume": False,
    }
    state.update(fields)
    return state


def build(*, state: dict[str, Any] | None = None, audit: Audit | None = None,
          tasks: list[dict[str, Any]] | None = None,
          completion: dict[str, Any] | None = None, shell: ReadFile | None = None,
          **kwargs: Any) -> RcaReport:
    return build_rca(state=state or session(), audit_records=(audit or Audit()).records,
                     task_events=tasks or [], completion=completion,
                     read_file=shell or Shell(), generated_at=NOW, **kwargs)


def section(markdown: str, title: str) -> str:
    """The text of one `## title` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert match, f"section {title!r} missing"
    return match.group(1)


def table_rows(text: str) -> list[list[str]]:
    """Split table rows the way GitHub does: a backslash-escaped pipe is not a delimiter."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            rows.append([c.strip() for c in cells])
    return rows


# ----------------------------------------------------------------------------- scenario
def redis_investigation() -> tuple[dict[str, Any], Audit, list[dict[str, Any]], Shell]:
    """VMs in prod-subnet cannot reach Redis on 6379: the full picture with one capture."""
    log = Audit()
    ping = log.run("ping -c 3 10.0.2.4", output=PING_FAIL_OUTPUT, exit_code=1)
    nsg = log.run("az network nsg rule list -g prod-rg --nsg-name redis-nsg",
                  output=NSG_ALLOW_OUTPUT)
    denied = log.deny("az network route-table route update -g prod-rg -n r1",
                      "Wrong resource group — use cache-rg, not prod-rg")
    log.forbid("rm -rf /var/log/redis")
    approved = log.run("az network watcher show-next-hop -g cache-rg --vm web-vm-01",
                       output='{"nextHopType": "VirtualAppliance"}', action="user_approved",
                       classification="RISKY", actor="U-BOB")
    state = session(
        hypothesis("h1", "NSG rule blocking TCP 6379", "REFUTED", resolving_audit_id=nsg),
        hypothesis("h2", "UDR sends Redis traffic to a firewall that drops it", "CONFIRMED",
                   denial_count=1, resolving_audit_id=approved,
                   denial_events=[{"turn": 4, "command": "az network route-table route "
                                   "update -g prod-rg -n r1", "audit_id": denied,
                                   "denial_reason": "Wrong resource group"}]),
    )
    tid = "ghost_web-vm-01_20250115T143500"
    tasks = [task(tid, "CREATED"), task(tid, "PROVISIONING"), task(tid, "ANALYZING"),
             completed_task(tid)]
    shell = Shell({"/data/captures/web-vm-01_executive_summary.md": SUMMARY_TEXT,
                   "/data/captures/web-vm-01_forensic_report.md": FULL_REPORT_TEXT})
    assert ping and denied
    return state, log, tasks, shell


COMPLETION: dict[str, Any] = {
    "confidence": "high",
    "root_cause_summary": "A UDR on prod-subnet sends 10.0.2.0/24 to the NVA, which resets "
                          "TCP 6379 (capture ghost_web-vm-01_20250115T143500).",
    "confirmed_hypotheses": ["h2"], "refuted_hypotheses": ["h1"],
    "recommended_actions": ["Remove route r1 from rt-prod or allow 6379 on the NVA.",
                            "Re-run the capture after the change to confirm."],
}


# ----------------------------------------------------------------------------- R11 / R12
def test_full_report_has_every_section_in_order() -> None:
    state, log, tasks, shell = redis_investigation()
    report = build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell,
                   duration_s=754.2)
    md = report.markdown
    assert md.startswith(f"# Root Cause Analysis — {SID}\n")
    assert "_Generated: 2025-01-15T15:02:00Z_" in md and "_Confidence: high_" in md
    assert "_Duration: 12m 34s_" in md
    titles = re.findall(r"^## (.+)$", md, re.M)
    assert titles == ["Investigation Summary", "Hypotheses Log", "Command Evidence",
                      "Capture Evidence", "Recommended Actions",
                      "Unverifiable and Contradicted Hypotheses", "Integrity Statement"]
    assert COMPLETION["root_cause_summary"] in section(md, "Investigation Summary")
    assert report.filename == f"ghost_rca_{SID}.md"
    assert report.confidence == "high"
    assert report.root_cause == COMPLETION["root_cause_summary"]
    assert report.recommended_actions == COMPLETION["recommended_actions"]
    actions = section(md, "Recommended Actions")
    assert "1. Remove route r1 from rt-prod or allow 6379 on the NVA." in actions
    assert "2. Re-run the capture" in actions
    assert ("All evidence is cited by audit_id from the append-only, hash-chained audit log "
            f"(`ghost audit verify {SID}`)") in section(md, "Integrity Statement")


def test_command_evidence_rows_carry_context_outcome_and_audit_id() -> None:
    state, log, tasks, shell = redis_investigation()
    md = build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell).markdown
    rows = table_rows(section(md, "Command Evidence"))
    assert rows[0] == ["Audit ID", "Context", "Command", "Classification", "Action",
                       "Exit Code", "Outcome"]
    by_id = {r[0]: r for r in rows[1:]}
    # only `command` records are evidence: no started or approval records in the table;
    # the RCA's own read of the capture summary is a command it cites, so it is listed too
    assert list(by_id) == [f"{SID}_002", f"{SID}_004", f"{SID}_006", f"{SID}_007",
                           f"{SID}_009", f"{SID}_901"]
    ping, nsg, denied, forbidden, approved, own_read = by_id.values()
    assert own_read[2].startswith("`cat ") and own_read[2].endswith("_executive_summary.md`")
    assert ping[1:3] == ["[LOCAL]", "`ping -c 3 10.0.2.4`"] and ping[6] == "failed (exit 1)"
    assert nsg[1] == "[CLOUD]" and nsg[6] == "succeeded"
    assert denied[1] == "[CLOUD]" and denied[4] == "user_denied by U-ALICE"
    assert denied[6] == "denied: Wrong resource group — use cache-rg, not prod-rg"
    assert forbidden[3] == "FORBIDDEN" and forbidden[6] == "refused: forbidden command"
    assert approved[4] == "user_approved by U-BOB" and approved[5] == "0"
    assert "[LOCAL] probe failure" in section(md, "Command Evidence")  # the LOCAL note
    assert ("6 recorded — 3 ran with exit 0, 1 failed, 1 denied, 1 forbidden; 1 ran with an "
            "engineer's approval") in section(md, "Investigation Summary")


# ----------------------------------------------------------------------------- R5 and phase 1
def test_every_command_record_is_tagged_local_or_cloud_and_bucketed() -> None:
    log = Audit()
    log.run("dig +short redis.internal", output="10.0.2.4")
    log.run("az network nic show -g prod-rg -n web-nic", output="{}")
    log.run("curl -sS http://10.0.2.4:6379", status="error", error="timeout", exit_code=None)
    log._add(kind="command", command="az network watcher packet-capture create", status="error",
             error="interrupted", environment="azure", action="user_approved")
    log._add(kind="command", command="tcpdump -i eth0 | tee x", status="error",
             error="unsupported_syntax", action="user_approved", environment=None)
    audit = classify_audit(log.records)
    assert [(c.evidence_context, c.outcome) for c in audit.commands] == [
        ("LOCAL", "completed"), ("CLOUD", "completed"), ("LOCAL", "timeout"),
        ("CLOUD", "interrupted"), ("LOCAL", "error")]
    assert [c.audit_id for c in audit.risky_approved] == [f"{SID}_007", f"{SID}_008"]
    md = build(audit=log).markdown
    rows = table_rows(section(md, "Command Evidence"))[1:]
    assert [r[1] for r in rows] == ["[LOCAL]", "[CLOUD]", "[LOCAL]", "[CLOUD]", "[LOCAL]"]
    assert rows[2][6] == "timed out"
    assert rows[3][6] == "interrupted: outcome unknown, not re-run"
    assert rows[4][6] == "error: unsupported_syntax"


def test_the_input_records_are_only_read_never_changed() -> None:
    """R1/R2 in Ghost: the generator gets lists and must not write into them (no tagging in
    place, no appending)."""
    state, log, tasks, shell = redis_investigation()
    before = copy.deepcopy((state, log.records, tasks))
    build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell)
    assert (state, log.records, tasks) == before
    assert all("_evidence_context" not in r for r in log.records)


def test_a_started_command_without_an_outcome_is_reported() -> None:
    log = Audit()
    log.run("ping -c 1 10.0.2.4")
    log._add(kind="command_started", command="az network watcher packet-capture create",
             status="executing", environment="azure")
    md = build(audit=log).markdown
    assert f"never re-run): `{SID}_003`" in section(md, "Command Evidence")


def test_an_interrupted_command_names_who_approved_it_not_ghost() -> None:
    """Ghost closes a command a crash or Ctrl-C left running; the approver stays on record."""
    log = Audit()
    started = log._add(kind="command_started", command="sleep 20", status="executing",
                       action="user_approved", actor="U-ALICE", classification="RISKY",
                       environment="local")
    log._add(kind="command", command="sleep 20", status="error", error="interrupted",
             action="user_approved", actor="ghost", classification="RISKY",
             environment="local", ref_audit_id=started["audit_id"])
    evidence = section(build(audit=log).markdown, "Command Evidence")
    assert "user_approved by U-ALICE" in evidence and "by ghost" not in evidence


# ----------------------------------------------------------------------------- R3
def test_unreadable_records_are_skipped_without_a_crash() -> None:
    state, log, tasks, shell = redis_investigation()
    records: list[Any] = [*log.records, "not a record", None, {"kind": "command"},
                          {"audit_id": f"{SID}_050", "kind": "command", "status": 7,
                           "exit_code": "one", "command": None, "environment": ["azure"]}]
    events: list[Any] = [*tasks, 42, {"state": "COMPLETED"}]
    report = build_rca(state=state, audit_records=records, task_events=events,
                       completion=COMPLETION, read_file=shell, generated_at=NOW)
    integrity = section(report.markdown, "Integrity Statement")
    assert "Unreadable records skipped: 3 audit, 2 task." in integrity
    rows = {r[0]: r for r in table_rows(section(report.markdown, "Command Evidence"))}
    odd = rows[f"{SID}_050"]
    assert odd[:3] == [f"{SID}_050", "[LOCAL]", "—"] and odd[6] == "error: 7"


def test_a_malformed_session_document_does_not_crash() -> None:
    state = session(hypothesis("h1", "x", "ACTIVE"), evidence_conflicts="nope")
    state["hypothesis_log"].append("garbage")
    state["hypothesis_log"].append({"id": "h9", "denial_events": ["bad", {"turn": 2}]})
    md = build(state=state).markdown
    assert "| h9 |" in md
    assert "- h9, turn 2: — denied (audit_id —) — no reason given" in md


# ----------------------------------------------------------------------------- R4 / phase 3
def test_task_registry_is_last_write_wins() -> None:
    tasks = [task("t1", "CREATED"), task("t2", "CREATED"), task("t1", "PROVISIONING"),
             completed_task("t2", "cap-b"), task("t1", "FAILED", outcome="failed",
                                                error_detail="Azure said: quota exceeded")]
    latest = latest_tasks(tasks)
    assert list(latest) == ["t1", "t2"]  # first-seen order
    assert latest["t1"]["state"] == "FAILED" and latest["t2"]["state"] == "COMPLETED"
    shell = Shell({"/data/captures/cap-b_executive_summary.md": SUMMARY_TEXT})
    md = build(tasks=tasks, shell=shell).markdown
    rows = table_rows(section(md, "Capture Evidence"))
    assert rows[1][:3] == ["t1", "web-vm-01", "FAILED: Azure said: quota exceeded"]
    assert rows[2][2] == "COMPLETED"
    assert rows[2][3:] == ["/data/captures/cap-b_forensic_report.md",
                           "/data/captures/cap-b.pcap"]
    assert not any("PROVISIONING" in cell for row in rows for cell in row)
    assert shell.calls == ["/data/captures/cap-b_executive_summary.md"]  # the failed one: none


def test_a_cleaned_up_capture_counts_as_completed_but_a_cleaned_up_failure_does_not() -> None:
    tasks = [completed_task("t-ok", "ok", state="DONE"),
             task("t-bad", "DONE", outcome="failed",
                  report_path="/data/captures/bad_forensic_report.md")]
    shell = Shell({"/data/captures/ok_executive_summary.md": SUMMARY_TEXT})
    md = build(tasks=tasks, shell=shell).markdown
    assert shell.calls == ["/data/captures/ok_executive_summary.md"]
    assert "Packet captures: 2 task(s), 1 completed." in md


def test_a_dual_end_pair_reads_its_shared_report_once() -> None:
    shared = completed_task("t-src", "pair")
    partner = {**completed_task("t-dst", "pair"), "paired_task_id": "t-src"}
    shell = Shell({"/data/captures/pair_executive_summary.md": SUMMARY_TEXT})
    md = build(tasks=[shared, partner], shell=shell).markdown
    assert shell.calls == ["/data/captures/pair_executive_summary.md"]
    assert "### Executive summary — t-src, t-dst" in md


# ----------------------------------------------------------------------------- R8 / R9 / R10
def test_summary_file_is_read_first_through_the_shell() -> None:
    state, log, tasks, shell = redis_investigation()
    md = build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell).markdown
    assert shell.calls == ["/data/captures/web-vm-01_executive_summary.md"]
    captures = section(md, "Capture Evidence")
    assert (f"Read from `/data/captures/web-vm-01_executive_summary.md` through the Safe-Exec "
            f"Shell (audit_id `{SID}_901`).") in captures
    assert "> 1. **[HIGH] TCP resets from 10.0.2.4:6379**" in captures
    # the summary's own heading would have forged a report section: it is dropped
    assert "## Executive Summary —" not in md


def test_full_report_is_the_fallback_and_only_its_summary_section_is_used() -> None:
    tasks = [completed_task("t1")]
    shell = Shell({"/data/captures/web-vm-01_forensic_report.md": FULL_REPORT_TEXT})
    md = build(tasks=tasks, shell=shell).markdown
    assert shell.calls == ["/data/captures/web-vm-01_executive_summary.md",
                           "/data/captures/web-vm-01_forensic_report.md"]
    captures = section(md, "Capture Evidence")
    assert "> Capture `web-vm-01`: 1200 packets." in captures
    assert "Findings" not in captures and "| 1 | high |" not in md


def test_denied_cat_says_so_in_capture_evidence_and_raises_pattern_b() -> None:
    summary = "/data/captures/web-vm-01_executive_summary.md"
    tasks = [completed_task("ghost_web-vm-01_20250115T143500")]
    shell = Shell({summary: SUMMARY_TEXT}, deny=(summary,))
    report = build(tasks=tasks, shell=shell)
    captures = section(report.markdown, "Capture Evidence")
    assert "Report content unavailable (cat denied)" in captures
    assert shell.calls == [summary]  # no second approval request for the same report
    note = ("Advisory: forensic report for task ghost_web-vm-01_20250115T143500 unavailable — "
            "cat was denied by the engineer. The full report is at "
            "/data/captures/web-vm-01_forensic_report.md for offline review.")
    assert report.advisories == [note]
    assert f"- {note}" in captures
    assert "TCP resets" not in report.markdown


def test_denied_fallback_read_is_also_reported_as_denied() -> None:
    report_path = "/data/captures/web-vm-01_forensic_report.md"
    shell = Shell(deny=(report_path,))  # the summary file is missing, the report is denied
    report = build(tasks=[completed_task("t1")], shell=shell)
    assert "Report content unavailable (cat denied)" in section(report.markdown,
                                                                 "Capture Evidence")
    assert len(report.advisories) == 1 and "task t1" in report.advisories[0]


def test_unreadable_report_is_explained_without_pattern_b() -> None:
    report = build(tasks=[completed_task("t1")], shell=Shell())
    captures = section(report.markdown, "Capture Evidence")
    assert ("Report content unavailable (summary: cat failed: file_not_permitted; report: cat "
            "failed: file_not_permitted).") in captures
    assert report.advisories == []


def test_pending_or_truncated_reads_are_explained() -> None:
    def pending(path: str) -> dict[str, Any]:
        return {"status": "pending_approval", "approval_id": "ap-1", "audit_id": None,
                "output": "", "exit_code": None, "error": None}

    report = build(tasks=[completed_task("t1")], shell=pending)
    assert ("Report content unavailable (the cat is still waiting for approval)."
            in report.markdown)
    assert report.advisories == []  # nobody denied anything

    def truncated(path: str) -> dict[str, Any]:
        return {"status": "completed", "exit_code": 0, "audit_id": f"{SID}_950",
                "output": SUMMARY_TEXT, "output_metadata": {"truncation_applied": True}}

    report = build(tasks=[completed_task("t1")], shell=truncated)
    assert ("The shell truncated this read; the full report is at "
            "`/data/captures/web-vm-01_forensic_report.md`.") in report.markdown


def test_the_generator_reads_files_only_through_the_shell() -> None:
    """R9: no open(), no os/io/pathlib/subprocess in the RCA modules: every read is a `cat`
    through read_file, gated and audited like any other command."""
    sources = sorted((Path(__file__).resolve().parents[2] / "core" / "engine").glob("rca*.py"))
    assert len(sources) >= 2
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("open", "exec", "eval"), path.name
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                    node.module or ""]
                for name in names:
                    assert name.split(".")[0] not in (
                        "os", "io", "pathlib", "subprocess", "shutil", "sqlalchemy"), path.name


def test_summary_path_sits_beside_the_report() -> None:
    assert summary_path_for("/x/cap_forensic_report.md") == "/x/cap_executive_summary.md"
    assert summary_path_for("/x/odd-name.md") == "/x/odd-name_executive_summary.md"


# ----------------------------------------------------------------------------- R6 Pattern A
def _pattern_a_log(*, ping_exit: int | None = 1, nsg_output: str = NSG_ALLOW_OUTPUT,
                   ping_status: str = "completed", ping_error: str | None = None) -> Audit:
    log = Audit()
    log.run("ping -c 3 10.0.2.4", output=PING_FAIL_OUTPUT, exit_code=ping_exit,
            status=ping_status, error=ping_error)
    log.run("az network nsg rule list -g prod-rg --nsg-name redis-nsg", output=nsg_output)
    return log


def test_pattern_a_fires_on_local_probe_failure_and_cloud_nsg_allow() -> None:
    report = build(audit=_pattern_a_log())
    assert len(report.advisories) == 1
    note = report.advisories[0]
    assert note.startswith("Advisory: local probe failure detected alongside an Azure 'Allow' "
                           "NSG rule")
    assert f"{SID}_002" in note and f"{SID}_004" in note
    assert "PCAP evidence may clarify" in note
    assert note in section(report.markdown, "Capture Evidence")


def test_pattern_a_fires_for_a_timed_out_traceroute() -> None:
    log = Audit()
    log.run("traceroute -n 10.0.2.4", status="error", error="timeout", exit_code=None)
    log.run("az network nsg rule list --nsg-name redis-nsg", output=NSG_ALLOW_OUTPUT)
    assert len(build(audit=log).advisories) == 1


@pytest.mark.parametrize("log", [
    _pattern_a_log(ping_exit=0),  # the probe worked
    _pattern_a_log(nsg_output=NSG_DENY_OUTPUT),  # no Allow rule
    _pattern_a_log(ping_status="denied", ping_exit=None),  # the probe never ran
], ids=["probe-succeeded", "nsg-deny-only", "probe-denied"])
def test_pattern_a_does_not_fire_without_both_halves(log: Audit) -> None:
    report = build(audit=log)
    assert report.advisories == []
    assert "Advisories" not in report.markdown


def test_pattern_a_ignores_a_cloud_probe_and_a_local_nsg_read() -> None:
    log = Audit()
    log._add(kind="command", command="ping -c 1 10.0.2.4", status="completed", exit_code=1,
             environment="azure", output="")
    log._add(kind="command", command="az network nsg rule list", status="completed",
             exit_code=0, environment="local", output=NSG_ALLOW_OUTPUT)
    assert build(audit=log).advisories == []


# ----------------------------------------------------------------------------- R13
def test_raw_output_never_appears_in_the_report() -> None:
    state, log, tasks, shell = redis_investigation()
    log.run("dig +short TXT evil.example", output="zz-secret-txt-payload-771 | ## Integrity")
    log.run("nslookup redis.internal", output="", exit_code=1)
    log.records[-1]["stderr"] = "zz-stderr-marker-42 server can't find redis.internal"
    md = build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell).markdown
    for needle in ("zz-ping-fail-9f3", "Request timeout", "allow-redis-6379",
                   '"access": "Allow"', "VirtualAppliance", "zz-secret-txt-payload-771",
                   "zz-stderr-marker-42", "Blocked by T0.rm"):
        assert needle not in md, needle
    for record in log.records:
        if record["kind"] == "command":
            assert str(record["audit_id"]) in md


# ----------------------------------------------------------------------------- escaping
def test_pipes_and_newlines_cannot_break_a_table_row() -> None:
    log = Audit()
    log.run("ss -tn | grep 6379", status="error", error="unsupported_syntax", exit_code=None)
    log.run("grep -E 'a\\|b' /data/x.log", exit_code=1)
    log.deny("az vm run-command invoke --scripts 'echo x`|`y'\nrm -rf /", "no | never\nagain")
    state = session(hypothesis("h1", "NSG | UDR\n## Integrity Statement", "ACTIVE"))
    md = build(state=state, audit=log).markdown
    rows = table_rows(section(md, "Command Evidence"))
    assert all(len(r) == 7 for r in rows)
    assert rows[1][2] == "`ss -tn \\| grep 6379`"
    assert rows[2][2] == "grep -E 'a\\\\\\|b' /data/x.log"  # plain text, every char exact
    assert rows[3][2] == "``az vm run-command invoke --scripts 'echo x`\\|`y' ⏎ rm -rf /``"
    assert rows[3][6] == "denied: no \\| never again"
    hyp_rows = table_rows(section(md, "Hypotheses Log"))
    assert all(len(r) == 5 for r in hyp_rows)
    assert hyp_rows[1][1] == "NSG \\| UDR ## Integrity Statement"
    assert len(re.findall(r"^## Integrity Statement$", md, re.M)) == 1


def test_model_text_cannot_forge_a_section_or_open_a_fence() -> None:
    completion = {"confidence": "medium",
                  "root_cause_summary": "Probably the NVA.\n## Integrity Statement\n```\n",
                  "recommended_actions": ["# do this", "```"]}
    md = build(completion=completion, integrity_warning="## checksum mismatch").markdown
    assert re.findall(r"^## (.+)$", md, re.M)[-1] == "Integrity Statement"
    assert len(re.findall(r"^## Integrity Statement$", md, re.M)) == 1
    assert not re.search(r"^\s*```", md, re.M)
    assert "1. \\# do this" in md


# ----------------------------------------------------------------------------- hypotheses
def test_hypotheses_log_comes_from_session_state_with_denial_events() -> None:
    state, log, tasks, shell = redis_investigation()
    md = build(state=state, audit=log, tasks=tasks, completion=COMPLETION, shell=shell).markdown
    hyp = section(md, "Hypotheses Log")
    rows = table_rows(hyp)
    assert rows[1] == ["h1", "NSG rule blocking TCP 6379", "REFUTED", "0", f"{SID}_004"]
    assert rows[2][2:] == ["CONFIRMED", "1", f"{SID}_009"]
    assert ("- h2, turn 4: `az network route-table route update -g prod-rg -n r1` denied "
            f"(audit_id `{SID}_006`) — reason: Wrong resource group") in hyp
    summary = section(md, "Investigation Summary")
    assert "- Confirmed: h2" in summary and "- Refuted: h1" in summary


def test_unverifiable_contradicted_and_open_hypotheses_are_listed() -> None:
    events = [{"turn": t, "command": "az network nic show-effective-route-table -n nic",
               "denial_reason": None, "audit_id": f"{SID}_{t:03d}"} for t in (3, 5, 7)]
    state = session(
        hypothesis("h1", "Firewall drops 6379", "UNVERIFIABLE", denial_count=3,
                   denial_events=events),
        hypothesis("h2", "DNS returns the old IP", "CONTRADICTED"),
        hypothesis("h3", "Redis maxclients reached", "DENIED_ONCE", denial_count=1),
        evidence_conflicts=[{"hypothesis_id": "h2",
                             "conflicting_audit_ids": [f"{SID}_004", f"{SID}_008"],
                             "higher_fidelity_source": "PCAP forensic report (Tier 1)",
                             "resolution": None, "description": "dig vs capture"}],
    )
    completion = {"confidence": "low", "root_cause_summary": "Investigation incomplete due "
                  "to access restrictions.", "unverifiable_hypotheses": ["h1"],
                  "contradicted_hypotheses": ["h2", "h4"]}
    report = build(state=state, completion=completion)
    text = section(report.markdown, "Unverifiable and Contradicted Hypotheses")
    assert (f"- **h1** unverifiable — Firewall drops 6379 (denied 3 time(s); audit_ids "
            f"{SID}_003, {SID}_005, {SID}_007)") in text
    assert "- **h2** contradicted — DNS returns the old IP" in text
    assert "- **h4** contradicted" in text  # named by the Brain even if not in the log
    assert "- **h3** still open (DENIED_ONCE) — Redis maxclients reached" in text
    assert (f"- h2: audit_ids {SID}_004, {SID}_008; resolved not yet by PCAP forensic report "
            "(Tier 1) — dig vs capture") in text
    assert report.confidence == "low"


# ----------------------------------------------------------------------------- no completion
def test_done_or_turn_limit_without_completion_gives_low_confidence() -> None:
    state, log, tasks, shell = redis_investigation()
    report = build(state=state, audit=log, tasks=tasks, completion=None, shell=shell)
    assert report.confidence == "low"
    assert "_Confidence: low_" in report.markdown
    assert "_Ended without complete_investigation (Done or turn limit)_" in report.markdown
    assert "ended without complete_investigation" in section(report.markdown,
                                                             "Investigation Summary")
    assert report.root_cause.startswith("No root cause was established")
    assert len(report.recommended_actions) == 1
    assert "did not reach a conclusion" in section(report.markdown, "Recommended Actions")
    # the evidence is still all there (the RCA's own read of the summary included)
    assert len(table_rows(section(report.markdown, "Command Evidence"))) == 7


@pytest.mark.parametrize("given", [None, "certain", 3])
def test_an_invalid_confidence_is_reported_as_low(given: object) -> None:
    report = build(completion={"confidence": given, "root_cause_summary": "x"})
    assert report.confidence == "low"
    assert "no valid confidence" in report.markdown


def test_completion_without_actions_says_none_given() -> None:
    report = build(completion={"confidence": "Medium", "root_cause_summary": "DNS."})
    assert report.confidence == "medium" and report.recommended_actions == []
    assert "None given." in section(report.markdown, "Recommended Actions")


def test_empty_investigation_still_produces_every_section() -> None:
    md = build(completion={"confidence": "low", "root_cause_summary": "Nothing ran."}).markdown
    assert "No commands were run." in md and "No packet captures were run." in md
    assert "No hypotheses were recorded." in md
    assert "None: no hypothesis was left unverifiable, contradicted or open." in md


def test_a_session_without_an_id_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        build(state={"hypothesis_log": []})


# ----------------------------------------------------------------------------- S8
def test_integrity_warning_after_continue_appears_in_the_rca() -> None:
    warning = "Session checksum mismatch on resume (stored a3f1e9d2, computed 77b0c2e1)."
    md = build(state=session(resumed_from="ghost_20250115_120000"),
               integrity_warning=warning).markdown
    assert f"> **Integrity warning:** {warning}" in md  # at the top, where it is seen
    integrity = section(md, "Integrity Statement")
    assert f"**Session state integrity warning:** {warning}" in integrity
    assert f"ghost audit verify {SID}" in integrity
    assert "_Resumed from: ghost_20250115_120000_" in md


def test_no_integrity_warning_means_no_warning_text() -> None:
    md = build().markdown
    assert "integrity warning" not in md.lower()
