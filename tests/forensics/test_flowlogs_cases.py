"""Flow-log edge cases, table-driven: hand-written blobs → findings, counts and warnings.

Each case writes the blobs (and an activity log when it needs one), runs the real CLI in this
process and checks what it claims. The expected values come from the case, worked out by hand
from Microsoft's schema, never from the code's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from forensics.cli import main

from .flowlog_blobs import FLOW_LOG_ID, T0, TARGET, activity, at, record, tup, write_blob

MAC_WEB, MAC_DB, MAC_API = "000D3AAA0001", "000D3AAA0002", "000D3AAA0003"
WEB, DB, API = "10.1.1.4", "10.1.2.4", "10.1.5.6"
NSG_WEB, NSG_DB, NSG_DB_NIC = "11111111-0000-0000-0000-000000000001", \
    "11111111-0000-0000-0000-000000000002", "11111111-0000-0000-0000-000000000003"


def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str,
            blobs: Path | None = None) -> tuple[int, dict[str, Any] | None, str]:
    out = tmp_path / "out"
    rc = main(["flowlogs", str(blobs or tmp_path / "blobs"), "--out", str(out), *args])
    got = capsys.readouterr()
    sems = [line.split(":", 1)[1].strip() for line in got.out.splitlines()
            if line.startswith("semantic JSON:")]
    doc = json.loads(Path(sems[0]).read_text()) if sems else None
    return rc, doc, got.err


def ids(doc: dict[str, Any]) -> list[str]:
    return [f["id"] for f in doc["findings"]]


def finding(doc: dict[str, Any], fid: str) -> dict[str, Any]:
    found = [f for f in doc["findings"] if f["id"] == fid]
    assert found, f"no {fid} in {ids(doc)}"
    return found[0]


def flow(doc: dict[str, Any], src: str, dst: str, dport: int) -> dict[str, Any]:
    found = [f for f in doc["flows"] if (f["src"], f["dst"], f["dport"]) == (src, dst, dport)]
    assert found, f"no flow {src} → {dst}:{dport}"
    return found[0]


# ---- the cases -------------------------------------------------------------------------------

def microsoft_sample(root: Path) -> None:
    """The sample record of Microsoft Learn's "Virtual network flow logs" page."""
    rec = {
        "time": "2022-09-14T09:00:52.5625085Z", "flowLogVersion": 4,
        "flowLogGUID": "abcdef01-2345-6789-0abc-def012345678", "macAddress": "00224871C205",
        "category": "FlowLogFlowEvent",
        "flowLogResourceID": "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/"
        "RESOURCEGROUPS/NETWORKWATCHERRG/PROVIDERS/MICROSOFT.NETWORK/NETWORKWATCHERS/"
        "NETWORKWATCHER_EASTUS2EUAP/FLOWLOGS/VNETFLOWLOG",
        "targetResourceID": "/subscriptions/00000000-0000-0000-0000-000000000000/"
        "resourceGroups/myResourceGroup/providers/Microsoft.Network/virtualNetworks/myVNet",
        "operationName": "FlowLogFlowEvent",
        "flowRecords": {"flows": [
            {"aclID": "00000000-1234-abcd-ef00-c1c2c3c4c5c6", "flowGroups": [
                {"rule": "DefaultRule_AllowInternetOutBound", "flowTuples": [
                    "1663146003599,10.0.0.6,52.239.184.180,23956,443,6,O,B,NX,0,0,0,0",
                    "1663146003606,10.0.0.6,52.239.184.180,23956,443,6,O,E,NX,3,767,2,1580",
                    "1663146003637,10.0.0.6,40.74.146.17,22730,443,6,O,B,NX,0,0,0,0",
                    "1663146003640,10.0.0.6,40.74.146.17,22730,443,6,O,E,NX,3,705,4,4569",
                    "1663146004251,10.0.0.6,40.74.146.17,22732,443,6,O,B,NX,0,0,0,0",
                    "1663146004251,10.0.0.6,40.74.146.17,22732,443,6,O,E,NX,3,705,4,4569",
                    "1663146004622,10.0.0.6,40.74.146.17,22734,443,6,O,B,NX,0,0,0,0",
                    "1663146004622,10.0.0.6,40.74.146.17,22734,443,6,O,E,NX,2,134,1,108",
                    "1663146017343,10.0.0.6,104.16.218.84,36776,443,6,O,B,NX,0,0,0,0",
                    "1663146022793,10.0.0.6,104.16.218.84,36776,443,6,O,E,NX,22,2217,33,32466"]}]},
            {"aclID": "01020304-abcd-ef00-1234-102030405060", "flowGroups": [
                {"rule": "BlockHighRiskTCPPortsFromInternet", "flowTuples": [
                    "1663145998065,101.33.218.153,10.0.0.6,55188,22,6,I,D,NX,0,0,0,0",
                    "1663146005503,192.241.200.164,10.0.0.6,35276,119,6,I,D,NX,0,0,0,0"]},
                {"rule": "Internet", "flowTuples": [
                    "1663145989563,20.106.221.10,10.0.0.6,50557,44357,6,I,D,NX,0,0,0,0",
                    "1663145989679,20.55.117.81,10.0.0.6,62797,35945,6,I,D,NX,0,0,0,0",
                    "1663145989709,20.55.113.5,10.0.0.6,51961,65515,6,I,D,NX,0,0,0,0",
                    "1663145990049,13.65.224.51,10.0.0.6,40497,40129,6,I,D,NX,0,0,0,0",
                    "1663145990145,20.55.117.81,10.0.0.6,62797,30472,6,I,D,NX,0,0,0,0",
                    "1663145990175,20.55.113.5,10.0.0.6,51961,28184,6,I,D,NX,0,0,0,0",
                    "1663146015545,20.106.221.10,10.0.0.6,50557,31244,6,I,D,NX,0,0,0,0"]}]}]},
    }
    path = root / "PT1H.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"records": [rec]}, indent=4))


def check_microsoft_sample(doc: dict[str, Any], err: str) -> None:
    f = flow(doc, "10.0.0.6", "40.74.146.17", 443)
    assert (f["packets_sent"], f["bytes_sent"]) == (3 + 3 + 2, 705 + 705 + 134)
    assert (f["packets_received"], f["bytes_received"]) == (4 + 4 + 1, 4569 + 4569 + 108)
    assert f["connections_begun"] == 3 and f["decision"] == "allowed"
    assert f["rules"][0]["rule"] == "DefaultRule_AllowInternetOutBound"
    denials = [x for x in doc["findings"] if x["id"] == "flow_denied"]
    by_rule = {d["rule"]["name"]: d for d in denials}
    assert set(by_rule) == {"BlockHighRiskTCPPortsFromInternet", "Internet"}
    assert by_rule["Internet"]["counts"]["flow_records"] == 7
    assert by_rule["BlockHighRiskTCPPortsFromInternet"]["rule"]["acl_id"] == \
        "01020304-abcd-ef00-1234-102030405060"
    # scanners from the Internet are background, not an incident
    assert {d["severity"] for d in denials} == {"medium"}
    assert "flow_one_way" not in ids(doc) and err == ""


def bandwidth_example(root: Path) -> None:
    """Microsoft's bandwidth example: time stamps in seconds, a B tuple with empty counts."""
    rec = record(0, MAC_WEB, [(NSG_WEB, [("UserRule_telnet", [
        "1493763938,185.170.185.105,10.2.0.4,35370,23,6,I,B,NX,,,,",
        "1493695838,185.170.185.105,10.2.0.4,35370,23,6,I,C,NX,1021,588096,8005,4610880",
        "1493696138,185.170.185.105,10.2.0.4,35370,23,6,I,E,NX,52,29952,47,27072"])])])
    rec["time"] = "2017-05-02T03:35:00.0000000Z"
    write_blob(root, MAC_WEB, [rec])


def check_bandwidth(doc: dict[str, Any], err: str) -> None:
    f = flow(doc, "*", "10.2.0.4", 23)
    # "the total number of packets transferred is 1,021 + 52 + 8,005 + 47 = 9,125" and
    # bytes 588,096 + 29,952 + 4,610,880 + 27,072 = 5,256,000
    assert f["packets_sent"] + f["packets_received"] == 9125
    assert f["bytes_sent"] + f["bytes_received"] == 5_256_000
    assert f["sources"]["examples"] == ["185.170.185.105"]
    assert doc["inputs"]["malformed_tuples"] == 0


def empty_minutes(root: Path) -> None:
    write_blob(root, MAC_WEB, [
        record(0, MAC_WEB, []),                                   # flows: []
        record(1, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [])])]),
        {k: v for k, v in record(2, MAC_WEB, []).items() if k != "flowRecords"},
        record(3, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
            tup(at(3), WEB, DB, 40000, 6379, "B"),
            tup(at(3, 20), WEB, DB, 40000, 6379, "E", ps=5, bs=400, pr=4, br=900)])])]),
    ])


def check_empty_minutes(doc: dict[str, Any], err: str) -> None:
    i = doc["inputs"]
    assert (i["records"], i["empty_records"], i["tuples"]) == (4, 3, 2)
    assert doc["nics"][0]["empty_records"] == 3
    assert ids(doc) == ["no_problem_seen"]
    assert err == ""


def groups_and_acls(root: Path) -> None:
    """One rule in two flow groups of an ACL; one flow logged under two NSGs (subnet and
    NIC), its counts must be taken once."""
    t1 = tup(at(0), WEB, DB, 40001, 6379, "E", direction="I", ps=10, bs=1000, pr=8, br=800)
    t2 = tup(at(0, 30), WEB, DB, 40002, 6379, "E", direction="I", ps=4, bs=400, pr=3, br=300)
    write_blob(root, MAC_DB, [record(0, MAC_DB, [
        (NSG_DB, [("UserRule_allow-web", [t1]), ("UserRule_allow-web", [t2])]),
        (NSG_DB_NIC, [("DefaultRule_AllowVnetInBound", [t1, t2])])])])


def check_groups_and_acls(doc: dict[str, Any], err: str) -> None:
    f = flow(doc, WEB, DB, 6379)
    assert (f["packets_sent"], f["packets_received"]) == (14, 11)
    assert f["states"]["E"] == 2
    rules = {(r["acl_id"], r["rule"]): r["tuples"] for r in f["rules"]}
    assert rules == {(NSG_DB, "UserRule_allow-web"): 2,
                     (NSG_DB_NIC, "DefaultRule_AllowVnetInBound"): 2}


def encryption(root: Path) -> None:
    write_blob(root, MAC_WEB, [record(0, MAC_WEB, [
        (NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
            tup(at(0), WEB, DB, 40001, 6379, "E", enc="X", ps=5, bs=500, pr=5, br=500),
            tup(at(0), WEB, API, 40002, 8080, "E", enc="NX_LOCAL_DST", ps=2, bs=200, pr=2,
                br=200)])]),
        ("unspecified", [("unspecified", [
            tup(at(0, 20), WEB, API, 40003, 8443, "E", enc="NX_NOT_ACCEPTED", ps=3, bs=180),
            tup(at(0, 25), WEB, API, 40004, 8443, "B", enc="NX_SW_NOT_READY")])])])])


def check_encryption(doc: dict[str, Any], err: str) -> None:
    assert flow(doc, WEB, DB, 6379)["encryption"] == {"X": 1}
    assert flow(doc, WEB, API, 8080)["decision"] == "allowed"
    f = finding(doc, "flow_encryption_dropped")
    assert f["counts"]["flow_records"] == 2
    assert f["encryption"] == {"NX_NOT_ACCEPTED": 1, "NX_SW_NOT_READY": 1}
    assert flow(doc, WEB, API, 8443)["decision"] == "dropped (encryption)"
    # a dropped flow is not also "one way"
    assert "flow_one_way" not in ids(doc)


def future_fields(root: Path) -> None:
    rec = record(0, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
        tup(at(0), WEB, DB, 40001, 6379, "E", ps=5, bs=500, pr=5, br=500) + ",extra,42"])])],
        flowLogVersion=5, newTopLevelField={"x": 1})
    rec["flowRecords"]["flows"][0]["newAclField"] = [1, 2]
    write_blob(root, MAC_WEB, [rec])


def check_future_fields(doc: dict[str, Any], err: str) -> None:
    f = flow(doc, WEB, DB, 6379)
    assert (f["packets_sent"], f["packets_received"]) == (5, 5)
    assert "flowLogVersion 5 is newer than 4" in err
    assert "15 fields (13 expected)" in err


def truncated(root: Path) -> None:
    recs = [record(m, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
        tup(at(m), WEB, DB, 40000 + m, 6379, "E", ps=5, bs=500, pr=5, br=500)])])])
        for m in range(5)]
    path = write_blob(root, MAC_WEB, recs)
    text = path.read_text()
    path.write_text(text[: text.index(json.dumps(recs[3])) + 200])  # cut inside record 4
    write_blob(root, MAC_DB, [record(0, MAC_DB, [(NSG_DB, [("UserRule_allow-web", [
        tup(at(0), WEB, DB, 40000, 6379, "E", direction="I", ps=5, bs=500, pr=5,
            br=500)])])])])


def check_truncated(doc: dict[str, Any], err: str) -> None:
    i = doc["inputs"]
    assert (i["blobs_partial"], i["records"]) == (1, 3 + 1)
    warn = [line for line in err.splitlines() if "macAddress=000D3AAA0001" in line]
    assert len(warn) == 1 and "cut short" in warn[0] and "3 records before it" in warn[0]
    f = finding(doc, "flowlog_damaged")
    assert f["severity"] == "medium" and "000D3AAA0001" in f["detail"]


def invalid_and_foreign(root: Path) -> None:
    write_blob(root, MAC_WEB, [record(0, MAC_WEB, [(NSG_WEB, [(
        "DefaultRule_AllowVnetOutBound", [tup(at(0), WEB, DB, 40000, 6379, "B")])])])])
    bad = write_blob(root, MAC_DB, [])
    bad.write_text("\x00\x01 this is not JSON")
    (root / "notes.json").write_text(json.dumps({"hello": "world"}))
    nsg = root / "nsg" / "PT1H.json"
    nsg.parent.mkdir()
    nsg.write_text(json.dumps({"records": [{
        "time": "2017-06-16T20:59:43.7340000Z", "category": "NetworkSecurityGroupFlowEvent",
        "operationName": "NetworkSecurityGroupFlowEvents", "properties": {"Version": 2,
                                                                          "flows": []}}]}))


def check_invalid_and_foreign(doc: dict[str, Any], err: str) -> None:
    by = {b["blob"].split("/")[-2] if "macAddress" in b["blob"] else b["blob"]: b["status"]
          for b in doc["blobs"]}
    assert by == {"macAddress=000D3AAA0001": "ok", "macAddress=000D3AAA0002": "damaged",
                  "notes.json": "skipped", "nsg/PT1H.json": "skipped"}
    assert "NSG flow log" in err and "notes.json: not a flow-log blob" in err
    f = finding(doc, "flowlog_damaged")
    assert f["title"].startswith("1 blob of 4")


def mixed_macs(root: Path) -> None:
    """A blob whose records name another NIC than its path (two NICs' records in one file),
    of two flow logs on two VNets."""
    write_blob(root, MAC_WEB, [
        record(0, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
            tup(at(0), WEB, DB, 40000, 6379, "E", ps=5, bs=500, pr=5, br=500)])])]),
        record(0, "00-0D-3A-AA-00-02", [(NSG_DB, [("UserRule_allow-web", [
            tup(at(0), WEB, DB, 40000, 6379, "E", direction="I", ps=5, bs=500, pr=5,
                br=500)])])], flowLogResourceID=FLOW_LOG_ID.replace("FL-TEST", "FL-DATA"),
            targetResourceID=TARGET.replace("vnet-test", "vnet-data"))])


def check_mixed_macs(doc: dict[str, Any], err: str) -> None:
    assert [n["mac"] for n in doc["nics"]] == [MAC_WEB, MAC_DB]
    assert {n["mac"]: n["addresses"] for n in doc["nics"]} == {MAC_WEB: [WEB], MAC_DB: [DB]}
    assert "records of NIC 000D3AAA0002 in the blob of NIC 000D3AAA0001" in err
    f = flow(doc, WEB, DB, 6379)
    assert f["nics"] == [MAC_WEB, MAC_DB] and f["packets_sent"] == 5
    logs = {fl["id"].rsplit("/", 1)[1]: fl["targets"] for fl in doc["inputs"]["flow_logs"]}
    assert logs == {"FL-TEST": [TARGET], "FL-DATA": [TARGET.replace("vnet-test", "vnet-data")]}


def duplicate_blob(root: Path) -> None:
    recs = [record(0, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
        tup(at(0), WEB, DB, 40000, 6379, "E", ps=5, bs=500, pr=5, br=500)])])])]
    write_blob(root / "a", MAC_WEB, recs)
    write_blob(root / "b", MAC_WEB, recs)


def check_duplicate_blob(doc: dict[str, Any], err: str) -> None:
    assert doc["inputs"]["duplicate_records"] == 1
    assert flow(doc, WEB, DB, 6379)["packets_sent"] == 5


def malformed_tuples(root: Path) -> None:
    write_blob(root, MAC_WEB, [record(0, MAC_WEB, [(NSG_WEB, [(
        "DefaultRule_AllowVnetOutBound", [
            tup(at(0), WEB, DB, 40000, 6379, "E", ps=5, bs=500, pr=5, br=500),
            "garbage", 42, "x," + tup(at(0), WEB, DB, 1, 2, "B")[2:],
            tup(at(0) - 3 * 86_400_000, WEB, DB, 40001, 6379, "B"),   # 3 days off
            tup(at(0), WEB, DB, 40002, 6379, "Q"),                     # unknown state
            tup(at(0), WEB, DB, 40003, 6379, "B", direction="X")])])])])


def check_malformed(doc: dict[str, Any], err: str) -> None:
    i = doc["inputs"]
    assert i["tuples"] == 7 and i["malformed_tuples"] == 5 and i["unknown_states"] == 1
    assert flow(doc, WEB, DB, 6379)["packets_sent"] == 5
    for text in ("not strings", "1 field (13 expected)", "over a day away",
                 "unknown flow state 'Q'", "unknown direction 'X'"):
        assert text in err, text


def one_way_kinds(root: Path) -> None:
    """At the sender, TCP to a NIC that is not logged: one way. At a receiver that is logged,
    allowed in and never answered. UDP syslog one way: low."""
    web, db = [], []
    for m in range(4):
        web.append(record(m, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
            tup(at(m), WEB, "10.9.9.9", 41000 + m, 5432, "E", ps=3, bs=180),
            tup(at(m), WEB, "10.1.7.7", 42000 + m, 514, "E", proto=17, ps=1, bs=300)])])]))
        db.append(record(m, MAC_DB, [(NSG_DB, [("UserRule_allow-web", [
            tup(at(m), "10.1.3.3", DB, 43000 + m, 6379, "E", direction="I", ps=3,
                bs=180)])])]))
    write_blob(root, MAC_WEB, web)
    write_blob(root, MAC_DB, db)


def check_one_way(doc: dict[str, Any], err: str) -> None:
    ow = [f for f in doc["findings"] if f["id"] == "flow_one_way"]
    by_dst = {f["flows"][0]["dst"]: f for f in ow}
    assert set(by_dst) == {"10.9.9.9", "10.1.7.7"}
    assert by_dst["10.9.9.9"]["severity"] == "high"
    assert by_dst["10.9.9.9"]["counts"] == {"flow_records": 4, "packets_sent": 12, "flows": 1}
    assert "no NIC in these logs" in by_dst["10.9.9.9"]["detail"]
    assert by_dst["10.1.7.7"]["severity"] == "low"
    nr = finding(doc, "flow_allowed_no_reply")
    assert nr["flows"][0]["dst"] == DB and nr["window"]["minutes"] == 4
    assert nr["rule"]["name"] == "UserRule_allow-web"


def _redis_minutes(root: Path, denied: range, last: int) -> None:
    """Web → Redis each minute up to ``last``: denied at the Redis NIC in ``denied``, else
    allowed and answered."""
    web, db = [], []
    for m in range(last + 1):
        sport = 40000 + m
        if m in denied:
            web.append(record(m, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
                tup(at(m), WEB, DB, sport, 6379, "B"),
                tup(at(m, 20), WEB, DB, sport, 6379, "E", ps=2, bs=120)])])]))
            db.append(record(m, MAC_DB, [(NSG_DB, [("UserRule_deny-web", [
                tup(at(m, 1), WEB, DB, sport, 6379, "D", direction="I")])])]))
        else:
            e = tup(at(m, 2), WEB, DB, sport, 6379, "E", ps=6, bs=600, pr=5, br=900)
            web.append(record(m, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound", [
                tup(at(m), WEB, DB, sport, 6379, "B"), e])])]))
            db.append(record(m, MAC_DB, [(NSG_DB, [("UserRule_allow-web", [
                e.replace(",O,", ",I,")])])]))
    write_blob(root, MAC_WEB, web)
    write_blob(root, MAC_DB, db)


def denied_then_reverted(root: Path) -> None:
    _redis_minutes(root, range(10, 20), 29)
    (root.parent / "events.json").write_text(json.dumps([
        activity(9, 40, "Microsoft.Network/networkSecurityGroups/securityRules/write",
                 "Microsoft.Network/networkSecurityGroups/nsg-db/securityRules/deny-web"),
        activity(19, 50, "Microsoft.Network/networkSecurityGroups/securityRules/delete",
                 "Microsoft.Network/networkSecurityGroups/nsg-db/securityRules/deny-web",
                 caller="bob@contoso.com"),
        activity(5, 0, "Microsoft.Compute/virtualMachines/write",
                 "Microsoft.Compute/virtualMachines/other", status="Failed")]))


def check_reverted(doc: dict[str, Any], err: str) -> None:
    f = doc["findings"][0]
    assert f["id"] == "flow_denied" and f["severity"] == "high"
    assert f["rule"] == {"name": "UserRule_deny-web", "acl_id": NSG_DB}
    w = f["window"]
    assert (w["from"], w["until"], w["minutes_with_denials"]) == \
        ("2026-03-02T09:10Z", "2026-03-02T09:19Z", 10)
    assert (w["ongoing"], w["allowed_before_until"], w["allowed_again_from"]) == \
        (False, "2026-03-02T09:09Z", "2026-03-02T09:20Z")
    assert f["counts"]["flow_records"] == 10 and f["direction"] == "inbound"
    assert f["events"]["start"]["caller"] == "alice@contoso.com"
    assert f["events"]["end"]["caller"] == "bob@contoso.com"
    assert "now says Allow" in f["detail"]
    assert f["evidence"][0]["tuple"].split(",")[7] == "D"
    assert f["evidence"][0]["blob"].endswith("macAddress=000D3AAA0002/PT1H.json")
    assert f["evidence"][0]["minute"] == "2026-03-02T09:10Z"
    # the sender's one-way records during the window are explained by the denial
    assert "flow_one_way" not in ids(doc) and "flow_sudden_stop" not in ids(doc)
    assert doc["events"]["count"] == 2  # the failed write changed nothing


def denied_ongoing(root: Path) -> None:
    _redis_minutes(root, range(10, 30), 29)


def check_ongoing(doc: dict[str, Any], err: str) -> None:
    f = doc["findings"][0]
    assert f["id"] == "flow_denied" and f["severity"] == "critical"
    assert f["window"]["ongoing"] is True and f["window"]["allowed_again_from"] is None
    assert "No activity log was given" in f["detail"]
    assert doc["events"]["given"] is False


def sudden_stop(root: Path) -> None:
    web, api = [], []
    for m in range(60):
        groups = [tup(at(m, 5), WEB, DB, 45000 + m, 6379, "E", ps=4, bs=400, pr=4, br=400)]
        if m < 30:
            e = tup(at(m, 30), WEB, API, 46000 + m, 8080, "E", ps=9, bs=1400, pr=7, br=5200)
            groups.append(e)
            api.append(record(m, MAC_API, [(NSG_DB, [("UserRule_allow-api", [
                e.replace(",O,", ",I,")])])]))
        web.append(record(m, MAC_WEB, [(NSG_WEB, [("DefaultRule_AllowVnetOutBound",
                                                   groups)])]))
    write_blob(root, MAC_WEB, web)
    write_blob(root, MAC_API, api)
    (root.parent / "events.json").write_text(json.dumps(
        [activity(30, 5, "Microsoft.Compute/virtualMachines/deallocate/action",
                  "Microsoft.Compute/virtualMachines/api-vm-01", caller="ops@contoso.com")]))


def check_stop(doc: dict[str, Any], err: str) -> None:
    f = finding(doc, "flow_sudden_stop")
    assert f["severity"] == "high" and f["window"]["last_active"] == "2026-03-02T09:29Z"
    assert f["window"]["silent_minutes"] == 30
    assert f["event"]["caller"] == "ops@contoso.com"
    assert "10.1.5.6's own NIC logged nothing after 09:29" in f["detail"]
    assert f["evidence"][0]["tuple"].startswith(str(at(29, 30)))
    # the Redis flow goes on to the end: no stop
    assert len([x for x in doc["findings"] if x["id"] == "flow_sudden_stop"]) == 1


def ipv6(root: Path) -> None:
    """IPv6 addresses (colons, no dots): a private pair denied, an Internet scanner pooled."""
    write_blob(root, MAC_DB, [record(m, MAC_DB, [(NSG_DB, [
        ("UserRule_deny-v6", [tup(at(m), "fd00:1::4", "fd00:2::4", 40000 + m, 6379, "D",
                                  direction="I")]),
        ("DefaultRule_DenyAllInBound", [tup(at(m, 9), "2001:db8::99", "fd00:2::4",
                                            50000 + m, 22, "D", direction="I")])])])
        for m in range(3)])


def check_ipv6(doc: dict[str, Any], err: str) -> None:
    by_rule = {f["rule"]["name"]: f for f in doc["findings"] if f["id"] == "flow_denied"}
    assert by_rule["UserRule_deny-v6"]["severity"] == "critical"
    assert by_rule["UserRule_deny-v6"]["flows"][0]["src"] == "fd00:1::4"
    assert by_rule["DefaultRule_DenyAllInBound"]["severity"] == "medium"
    assert flow(doc, "*", "fd00:2::4", 22)["sources"]["examples"] == ["2001:db8::99"]
    assert doc["nics"][0]["addresses"] == ["fd00:2::4"] and err == ""


@dataclass
class Case:
    name: str
    make: Callable[[Path], None]
    check: Callable[[dict[str, Any], str], None]
    args: list[str] = field(default_factory=list)


CASES = [
    Case("microsoft_sample", microsoft_sample, check_microsoft_sample),
    Case("bandwidth_example_seconds_and_empty_counts", bandwidth_example, check_bandwidth),
    Case("empty_minutes", empty_minutes, check_empty_minutes),
    Case("flow_groups_and_two_nsgs", groups_and_acls, check_groups_and_acls),
    Case("encryption", encryption, check_encryption),
    Case("future_fields", future_fields, check_future_fields),
    Case("truncated_blob", truncated, check_truncated),
    Case("invalid_and_foreign_files", invalid_and_foreign, check_invalid_and_foreign),
    Case("mixed_macs", mixed_macs, check_mixed_macs),
    Case("duplicate_blob", duplicate_blob, check_duplicate_blob),
    Case("malformed_tuples", malformed_tuples, check_malformed),
    Case("one_way_kinds", one_way_kinds, check_one_way),
    Case("denied_then_reverted", denied_then_reverted, check_reverted,
         ["--events", "{tmp}/events.json"]),
    Case("denied_ongoing", denied_ongoing, check_ongoing),
    Case("sudden_stop", sudden_stop, check_stop, ["--events", "{tmp}/events.json"]),
    Case("ipv6", ipv6, check_ipv6),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("slow", [False, True], ids=["fast", "checked"])
def test_case(case: Case, slow: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case through the fast loop and through the checked path: the same claims."""
    case.make(tmp_path / "blobs")
    if slow:
        from forensics import flowlogs_agg
        real_init = flowlogs_agg.Aggregator.__init__

        def init(self: flowlogs_agg.Aggregator, *a: Any, **k: Any) -> None:
            real_init(self, *a, **k)
            self.force_slow = True
        monkeypatch.setattr(flowlogs_agg.Aggregator, "__init__", init)
    args = [a.replace("{tmp}", str(tmp_path / "blobs" / "..")) for a in case.args]
    rc, doc, err = run_cli(tmp_path, capsys, *args)
    assert rc == 0, err
    assert doc is not None
    assert "Traceback" not in err
    case.check(doc, err)
    assert [f["rank"] for f in doc["findings"]] == list(range(1, len(doc["findings"]) + 1))
    scores = [f["score"] for f in doc["findings"]]
    assert scores == sorted(scores, reverse=True)


def test_time_window_and_pair_filters(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    _redis_minutes(tmp_path / "blobs", range(10, 20), 29)
    rc, doc, _ = run_cli(tmp_path, capsys, "--since", "2026-03-02T09:20Z",
                         "--until", "2026-03-02T09:25")
    assert rc == 0 and doc is not None
    assert "flow_denied" not in ids(doc)
    assert doc["inputs"]["tuples_matched"] == 5 * 3  # B and E at the web NIC, E at Redis
    rc, doc, _ = run_cli(tmp_path, capsys, "--src", "10.1.1.0/24", "--dst", DB, "--port",
                         "6379", "--since", "2026-03-02T09:12Z")
    assert doc is not None
    f = finding(doc, "flow_denied")
    assert f["window"]["from"] == "2026-03-02T09:12Z" and f["counts"]["flow_records"] == 8


def test_nothing_seen_says_what_is_near(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _redis_minutes(tmp_path / "blobs", range(0), 9)
    rc, doc, _ = run_cli(tmp_path, capsys, "--src", WEB, "--dst", DB, "--port", "6380")
    assert rc == 0 and doc is not None
    assert ids(doc) == ["no_flows_seen"]
    f = doc["findings"][0]
    assert f["severity"] == "high"
    assert f["near_misses"]["other_ports"] == {"6379": 30}
    assert "6379 (30)" in f["detail"] and f"{WEB} appears in" in f["detail"]
    rc, doc, _ = run_cli(tmp_path, capsys, "--src", DB, "--dst", WEB)
    assert doc is not None
    f = finding(doc, "no_flows_seen")
    assert f["near_misses"]["reverse"] == 30  # every record runs the other way
    rc, doc, _ = run_cli(tmp_path, capsys, "--src", "10.200.0.1", "--dst", "10.200.0.2")
    assert doc is not None
    f = finding(doc, "no_flows_seen")
    assert f["severity"] == "medium" and "Neither address appears" in f["detail"]


def test_events_in_every_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stop lines up with the write whatever form the activity log comes in."""
    sudden_stop(tmp_path / "blobs")
    when = (T0.replace(minute=30, second=5)).isoformat().replace("+00:00", "Z")
    forms = {
        "az.json": (tmp_path / "events.json").read_text(),
        "rest.json": json.dumps({"value": json.loads((tmp_path / "events.json").read_text())}),
        "times.json": json.dumps([when]),
        "query.json": json.dumps([[when, "Microsoft.Compute/virtualMachines/deallocate/action",
                                   "/subscriptions/s/resourceGroups/rg/providers/Microsoft."
                                   "Compute/virtualMachines/api-vm-01", "ops@contoso.com"]]),
        "query.tsv": f"{when}\tMicrosoft.Compute/virtualMachines/deallocate/action\tres\tops\n",
        "times.txt": f"# writes\n{when}\n",
    }
    for name, text in forms.items():
        (tmp_path / name).write_text(text)
        rc, doc, err = run_cli(tmp_path, capsys, "--events", str(tmp_path / name))
        assert rc == 0, (name, err)
        assert doc is not None
        f = finding(doc, "flow_sudden_stop")
        assert f["severity"] == "high", name
        assert f["event"]["time"] == "2026-03-02T09:30:05Z", name
