"""VNet flow logs against Azure's documented behaviour (*Virtual network flow logs*, *Read flow
logs*): the flow-log resource, blob names, version-4 records, tuples and states, the deciding
NSG rule, time windows, and `az storage blob list|download`."""

from __future__ import annotations

import hashlib
import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lab.network import Estate
from lab.runner import LabRunner
from lab.scenario import Scenario, parse_scenario
from tests.lab.v2_fixtures import v2_scenario

CONTAINER = "insights-logs-flowlogflowevent"


def _scenario(change: Any = None) -> Scenario:
    d = v2_scenario()
    d["flow_logs"][0]["since"] = "30m"
    if change:
        change(d)
    return parse_scenario(d, "t.yaml")


def _run(s: Scenario, command: str) -> tuple[int, str, str]:
    a = LabRunner(s).run(shlex.split(command))
    return a.exit_code, a.stdout, a.stderr


def _az(s: Scenario, command: str) -> Any:
    code, out, err = _run(s, command)
    assert code == 0, err
    return json.loads(out)


def _records(s: Scenario) -> list[dict[str, Any]]:
    names = _az(s, f"az storage blob list --account-name stflowweu01 -c {CONTAINER} "
                   "--auth-mode login --query [].name")
    out = []
    for name in names:
        code, body, err = _run(s, f"az storage blob download --account-name stflowweu01 -c "
                                  f"{CONTAINER} -n {name} --auth-mode login")
        assert code == 0, err
        out += json.loads(body)["records"]
    return out


def _tuples(records: list[dict[str, Any]]) -> list[tuple[str, str, str, list[str]]]:
    """(minute, mac, rule, fields) of every tuple."""
    return [(r["time"], r["macAddress"], g["rule"], t.split(","))
            for r in records for f in r["flowRecords"]["flows"] for g in f["flowGroups"]
            for t in g["flowTuples"]]


def test_the_flow_log_resource_reads_as_azure_shows_it() -> None:
    s = _scenario()
    fl = _az(s, "az network watcher flow-log show --location westeurope --name fl-vnet-prod")
    assert fl["id"] == (f"/subscriptions/{s.subscription}/resourceGroups/NetworkWatcherRG/"
                        "providers/Microsoft.Network/networkWatchers/NetworkWatcher_westeurope/"
                        "flowLogs/fl-vnet-prod")
    assert fl["targetResourceId"] == s.vnet_id("vnet-prod")
    assert fl["storageId"].endswith("/Microsoft.Storage/storageAccounts/stflowweu01")
    assert (fl["enabled"], fl["format"], fl["retentionPolicy"]) == (
        True, {"type": "JSON", "version": 2}, {"days": 0, "enabled": False})
    vnet = _az(s, "az network vnet show -g rg-prod-net -n vnet-prod")
    assert fl["targetResourceGuid"] == vnet["resourceGuid"]
    code, _, err = _run(s, "az network watcher flow-log show --location westeurope -n nope")
    assert code == 3 and "(NotFound)" in err


def test_one_blob_per_nic_and_hour_named_as_the_read_flow_logs_script_reads_them() -> None:
    s = _scenario()
    blobs = _az(s, f"az storage blob list --account-name stflowweu01 -c {CONTAINER} "
                   "--auth-mode login")
    nics = {vm: _az(s, f"az network nic show -g rg-prod-app -n {vm}VMNic")["macAddress"]
            for vm in ("web-vm-01", "web-vm-02", "app-vm-01", "app-vm-02", "batch-vm-01")}
    expected_macs = {m.replace("-", "") for m in nics.values()}
    prefix = (f"flowLogResourceID=/{s.subscription.upper()}_NETWORKWATCHERRG/"
              "NETWORKWATCHER_WESTEUROPE_FL-VNET-PROD/y=2026/m=11/d=20/h=")
    assert all(b["name"].startswith(prefix) and b["name"].endswith("/PT1H.json")
               for b in blobs)
    hours_macs = {(b["name"].split("/h=")[1][:2], b["name"].split("macAddress=")[1][:12])
                  for b in blobs}
    # since 13:50: the 13h and 14h blobs of every NIC with traffic (batch-vm-01 sends none)
    assert hours_macs == {(h, m) for h in ("13", "14") for m in expected_macs
                          if m != nics["batch-vm-01"].replace("-", "")}
    props = blobs[0]["properties"]
    assert (props["blobType"], props["contentLength"] > 0) == ("BlockBlob", True)
    # the MAC is format 2's: 00-0D-3A then SHA-256 of the NIC's lower-case id
    nic_id = s.nic_id("web-vm-01").lower()
    digest = hashlib.sha256(nic_id.encode()).hexdigest().upper()
    assert nics["web-vm-01"] == "00-0D-3A-" + "-".join(digest[i:i + 2] for i in (0, 2, 4))


def test_records_are_version_4_with_tuples_under_the_deciding_nsg_rule() -> None:
    s = _scenario()
    records = _records(s)
    r = records[0]
    assert (r["flowLogVersion"], r["category"], r["operationName"]) == (
        4, "FlowLogFlowEvent", "FlowLogFlowEvent")
    assert r["flowLogResourceID"] == s.flow_log_id("fl-vnet-prod").upper()
    assert r["targetResourceID"] == s.vnet_id("vnet-prod")
    nsg_guid = _az(s, "az network nsg show -g rg-prod-net -n nsg-app")["resourceGuid"]
    acls = {f["aclID"] for rec in records for f in rec["flowRecords"]["flows"]}
    assert nsg_guid in acls
    tuples = _tuples(records)
    for _, _, _, fields in tuples:
        assert len(fields) == 13 and fields[5] in ("6", "17") and fields[6] in ("I", "O")
        assert fields[7] in ("B", "C", "E", "D") and fields[8] == "NX"
        if fields[7] in ("B", "D"):
            assert fields[9:] == ["0", "0", "0", "0"]
    # web-vm-01 -> ilb-app: out under nsg-web's AllowVnetOutBound, in at the backend under
    # allow-web-to-app, with the load balancer's backend address and port
    rules = {(fields[6], rule) for _, _, rule, fields in tuples
             if fields[1] == "10.1.1.4" and fields[4] in ("443", "8080")}
    assert ("O", "DefaultRule_AllowVnetOutBound") in rules
    assert ("I", "UserRule_allow-web-to-app") in rules
    # the Internet client reaches the public load balancer's backends
    assert any(f[1] == "198.51.100.7" and rule == "UserRule_allow-https-in" and f[7] == "E"
               for _, _, rule, f in tuples)
    # the probes from 168.63.129.16 are logged too
    assert any(f[1] == "168.63.129.16" for _, _, _, f in tuples)


def test_a_rule_active_for_a_while_shows_denials_then_and_begins_after() -> None:
    def deny_window(d: dict[str, Any]) -> None:
        d["nsgs"][1]["rules"].append({
            "name": "deny-all-inbound", "priority": 4000, "direction": "Inbound",
            "access": "Deny", "protocol": "*", "source": "*", "source_ports": "*",
            "destination": "*", "destination_ports": "*",
            "active": {"from": "25m", "until": "10m"}})

    s = _scenario(deny_window)
    probes = [(t, rule, f[7]) for t, _, rule, f in _tuples(_records(s))
              if f[1] == "168.63.129.16" and f[2] == "10.1.3.4"]
    denied = sorted(t[11:16] for t, rule, state in probes if state == "D")
    assert all(rule == "UserRule_deny-all-inbound" for _, rule, st in probes if st == "D")
    assert denied[0] == "13:56" and denied[-1] == "14:10"  # records stamped at minute end
    later = [state for t, _, state in probes if t[11:16] > "14:11"]
    assert later and set(later) == {"B", "E"}
    # today IP flow verify says Allow
    assert Estate(s).ip_flow_verify("app-vm-01", "Inbound", "TCP", "10.1.3.4", 8080,
                                    "168.63.129.16", 54321).access == "Allow"


def test_a_flow_sent_and_never_answered_logs_packets_out_and_none_back() -> None:
    def drop_smtp(d: dict[str, Any]) -> None:
        d["traffic"] = [{"from": "batch-vm-01", "to": "203.0.113.50", "port": 25, "rate": 1}]
        d["vnets"][1]["subnets"][2]["nsg"] = "nsg-web"

    tuples = _tuples(_records(_scenario(drop_smtp)))
    ends = [f for _, _, _, f in tuples if f[2] == "203.0.113.50" and f[7] == "E"]
    assert ends and all(int(f[9]) > 0 and f[11:] == ["0", "0"] for f in ends)


def test_without_nsgs_the_acl_and_rule_are_unspecified() -> None:
    def no_nsgs(d: dict[str, Any]) -> None:
        d["traffic"] = [{"from": "batch-vm-01", "to": "203.0.113.50", "port": 443, "rate": 1,
                         "fqdn": "api.partner.example"}]

    s = _scenario(no_nsgs)
    mac = _az(s, "az network nic show -g rg-prod-app -n batch-vm-01VMNic")["macAddress"]
    records = [r for r in _records(s) if r["macAddress"] == mac.replace("-", "")]
    flows = {(f["aclID"], g["rule"]) for r in records for f in r["flowRecords"]["flows"]
             for g in f["flowGroups"]}
    assert flows == {("unspecified", "unspecified")}


def test_blob_download_to_a_file_writes_it_and_prints_its_properties(tmp_path: Path) -> None:
    s = _scenario()
    name = _az(s, f"az storage blob list --account-name stflowweu01 -c {CONTAINER} "
                  "--query [0].name")
    target = tmp_path / "fl.json"
    props = _az(s, f"az storage blob download --auth-mode login --account-name stflowweu01 "
                   f"-c {CONTAINER} -n {name} --file {target}")
    assert props["name"] == name and props["properties"]["contentLength"] == target.stat(
        ).st_size
    assert json.loads(target.read_text())["records"]
    code, _, err = _run(s, f"az storage blob download --account-name stflowweu01 -c {CONTAINER} "
                           f"-n nope/PT1H.json --file {target}")
    assert code == 1 and "ErrorCode:BlobNotFound" in err
    code, _, err = _run(s, "az storage blob list --account-name stflowweu01 -c other")
    assert code == 1 and "ErrorCode:ContainerNotFound" in err


@pytest.mark.parametrize("command", [
    "az storage blob list --account-name stflowweu01 -c insights-logs-flowlogflowevent",
    "az network watcher flow-log list --location westeurope",
    "az monitor metrics list --resource x --metric DipAvailability",
    "az network firewall list",
    "az network private-endpoint list",
])
def test_format_1_keeps_its_old_answer_for_format_2_reads(command: str) -> None:
    from tests.lab.conftest import base_scenario

    s = parse_scenario(base_scenario(), "t.yaml")
    code, _, err = _run(s, command)
    assert (code, err.startswith("not modelled by the lab:")) == (2, True), err


def test_flow_logs_do_not_reach_before_logging_began() -> None:
    s = _scenario()
    times = sorted(r["time"] for r in _records(s))
    start = datetime(2026, 11, 20, 13, 50, tzinfo=UTC)
    assert times[0] == f"{start:%Y-%m-%dT%H}:51:00.0000000Z"  # the 13:50 minute, stamped 13:51
    assert times[-1] == "2026-11-20T14:20:00.0000000Z"
