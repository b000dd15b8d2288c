"""The RCA's Flow-Log Evidence section (issue 33): each analyser run on one row with its top
finding (flows, deciding rule, window), the audited downloads that fetched the blobs it read,
and the hypotheses it resolves; no section when no flow log was read."""

from __future__ import annotations

from typing import Any

from core.engine.rca_evidence import classify_audit
from core.engine.rca_flowlogs import flow_logs

BLOB = ("az storage blob download --account-name sa -c insights-logs-flowlogflowevent "
        "--auth-mode login -n x/h=13/m=00/macAddress={mac}/PT1H.json --file {path} -o none")
MEANING = ("flow logs: flow_denied of 168.63.129.16 → 10.1.3.4:8080/TCP and others by "
           "UserRule_deny-all-inbound, 2026-11-22T13:02Z to 2026-11-22T13:40Z")


def record(audit_id: str, command: str, *, status: str = "completed", exit_code: int = 0,
           meaning: str | None = None) -> dict[str, Any]:
    details = {"meaning": meaning} if meaning else {}
    return {"audit_id": audit_id, "kind": "command", "command": command, "status": status,
            "exit_code": exit_code, "details": details, "environment": "local"}


def section(records: list[dict[str, Any]], log: list[dict[str, Any]] | None = None) -> str:
    return "\n".join(flow_logs(classify_audit(records), {"hypothesis_log": log or []}))


def test_the_run_its_finding_its_downloads_and_what_it_resolves_share_a_row() -> None:
    records = [
        record("s_002", BLOB.format(mac="A1", path="/data/fl-h13-A1.json")),
        record("s_004", BLOB.format(mac="B2", path="/data/fl-h13-B2.json")),
        record("s_006", BLOB.format(mac="C3", path="/elsewhere/other.json")),
        record("s_008", BLOB.format(mac="D4", path="/data/fl/h14.json")),
        record("s_010", "ghost-forensics flowlogs /data/fl-h13-A1.json /data/fl-h13-B2.json "
                        "/data/fl --dst 10.1.3.0/24 --port 8080 --out /data/out",
               meaning=MEANING),
    ]
    text = section(records, [{"id": "h1", "state": "CONFIRMED", "resolving_audit_id": "s_010"},
                             {"id": "h2", "state": "REFUTED", "resolving_audit_id": "s_002"}])
    assert text.startswith("## Flow-Log Evidence")
    row = next(line for line in text.splitlines() if line.startswith("| s_010"))
    assert "UserRule_deny-all-inbound, 2026-11-22T13:02Z to 2026-11-22T13:40Z" in row
    assert "s_002, s_004, s_008" in row  # a file given, and a file under a folder given
    assert "s_006" not in row and "h1 CONFIRMED" in row and "h2" not in row


def test_a_failed_run_says_so_and_no_flow_log_means_no_section() -> None:
    failed = record("s_002", "ghost-forensics flowlogs /data/none.json --out /data/o",
                    exit_code=2)
    assert "not analysed (failed)" in section([failed])
    assert "none audited in this investigation" in section([failed])
    assert section([record("s_002", "ghost-forensics /data/c.pcap --out /data/o")]) == ""
    assert section([]) == ""
