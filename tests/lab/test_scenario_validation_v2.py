"""Format 2 validation: each broken field gives its one exact line; format 1 refuses format 2."""

from __future__ import annotations

from typing import Any

import pytest

from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario
from tests.lab.test_scenario_validation import Mutation, _errors, _set
from tests.lab.v2_fixtures import v2_scenario


def _add(path: str, value: Any) -> Mutation:
    def apply(d: dict[str, Any]) -> None:
        d.setdefault("faults", [])
        node: Any = d
        for part in path.split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        node.append(value)
    return apply


ILB = "load_balancers[0]"
PE = "private_endpoints[0]"
FW = "firewalls[0]"
COLL = f"{FW}.policy.groups[0].collections"

# (why, mutation, the exact error line)
CASES: list[tuple[str, Mutation, str]] = [
    ("an Http probe needs a path",
     _set(f"{ILB}.probes[0].protocol", "Http"),
     f"bad.yaml: {ILB}.probes[0].path: required for an Http probe (e.g. /health)"),
    ("a Tcp probe has no path", _set(f"{ILB}.probes[0].path", "/x"),
     f"bad.yaml: {ILB}.probes[0].path: a Tcp probe has no path (only Http and Https probes do)"),
    ("probe interval is at least 5 s", _set(f"{ILB}.probes[0].interval", 4),
     f"bad.yaml: {ILB}.probes[0].interval: 4 is out of range (5-2.14748e+09)"),
    ("Azure excludes some Http probe ports",
     lambda d: d["load_balancers"][1]["probes"][0].update(port=25),
     "bad.yaml: load_balancers[1].probes[0].port: Azure refuses an Http probe on port 25 (19, "
     "21, 25, 70, 110, 119, 143, 220 and 993 are excluded)"),
    ("HA ports on a public LB", lambda d: d["load_balancers"][1]["rules"][0].update(
        protocol="All", frontend_port=0, backend_port=0),
     "bad.yaml: load_balancers[1].rules[0].protocol: HA ports (protocol All, ports 0) need an "
     "internal load balancer"),
    ("protocol All needs ports 0", _set(f"{ILB}.rules[0].protocol", "All"),
     f"bad.yaml: {ILB}.rules[0].protocol: protocol All is for HA ports: frontend_port and "
     "backend_port 0"),
    ("a rule's pool resolves", _set(f"{ILB}.rules[0].pool", "bp-nope"),
     f"bad.yaml: {ILB}.rules[0].pool: no pool named 'bp-nope' in {ILB}.pools"),
    ("pool VMs exist", _set(f"{ILB}.pools[0].vms[1]", "app-vm-09"),
     f"bad.yaml: {ILB}.pools[0].vms[1]: no VM named 'app-vm-09' in vms"),
    ("pool VMs share the frontend's VNet", lambda d: d["load_balancers"][0]["frontend"].update(
        subnet="vnet-hub/snet-pe", ip="10.0.4.10"),
     f"bad.yaml: {ILB}.pools: the pool VMs and an internal frontend share one VNet; here: "
     f"vnet-prod ({ILB}.pools[0].vms[0]), vnet-hub ({ILB}.frontend)"),
    ("frontend IPs obey the VM rules", _set(f"{ILB}.frontend.ip", "10.1.3.2"),
     f"bad.yaml: {ILB}.frontend.ip: 10.1.3.2 is reserved by Azure in 10.1.3.0/24 (the first "
     "four and the last address of every subnet)"),
    ("frontend IPs are unique", _set(f"{ILB}.frontend.ip", "10.1.3.4"),
     f"bad.yaml: {ILB}.frontend.ip: 10.1.3.4 is already used by vms[2]"),
    ("a public IP belongs to one resource",
     _set("nat_gateways[0].public_ips[0].ip", "20.50.3.4"),
     "bad.yaml: nat_gateways[0].public_ips[0]: 20.50.3.4 already belongs to "
     f"{FW}.public_ips[0]"),
    ("public IPs are public", _set("nat_gateways[0].public_ips[0].ip", "10.9.9.9"),
     "bad.yaml: nat_gateways[0].public_ips[0]: 10.9.9.9 is not a public address (it lies "
     "outside the Internet tag)"),
    ("the engineer's address is held by nothing", _set("engineer_ip", "20.50.2.10"),
     "bad.yaml: engineer_ip: 20.50.2.10 belongs to load_balancers[1].frontend.public_ip"),
    ("PE kinds", _set(f"{PE}.target.kind", "cosmos"),
     f"bad.yaml: {PE}.target.kind: 'cosmos' is not one of: sqlServer, blob, file, queue, "
     "table, dfs, vault, redisCache"),
    ("PE states", _set(f"{PE}.state", "Waiting"),
     f"bad.yaml: {PE}.state: 'Waiting' is not one of: Approved, Pending, Rejected, "
     "Disconnected"),
    ("a zone group names the kind's zone",
     _set(f"{PE}.zone_group", ["privatelink.blob.core.windows.net"]),
     f"bad.yaml: {PE}.zone_group[0]: privatelink.blob.core.windows.net is not the sqlServer "
     "zone (privatelink.database.windows.net)"),
    ("the zone group supplies the record",
     _set("private_dns_zones[0].records", {"sql-prod": "10.0.4.9"}),
     "bad.yaml: private_dns_zones[0].records.sql-prod: the zone group of pe-sql supplies this "
     "A record (sql-prod -> 10.0.4.5): remove it here"),
    ("a PE target's FQDN is not in public_dns",
     _set("public_dns", {"sql-prod.database.windows.net": "20.50.5.10"}),
     f"bad.yaml: {PE}.target: sql-prod.database.windows.net must not be in public_dns: the "
     "lab derives its public answer (CNAME to sql-prod.privatelink.database.windows.net, then "
     "20.50.5.10)"),
    ("firewall needs AzureFirewallSubnet /26",
     _set("vnets[0].subnets[0].prefix", "10.0.1.0/27"),
     f"bad.yaml: {FW}.vnet: AzureFirewallSubnet of vnet-hub is 10.0.1.0/27: Azure needs /26 "
     "or larger"),
    ("no NSG on AzureFirewallSubnet", _set("vnets[0].subnets[0].nsg", "nsg-pe"),
     f"bad.yaml: {FW}.vnet: AzureFirewallSubnet of vnet-hub has NSG nsg-pe: Azure refuses an "
     "NSG there"),
    ("policy or classic, not both", _set(f"{FW}.rule_collections", []),
     f"bad.yaml: {FW}: give exactly one of policy (a firewall policy) or rule_collections "
     "(classic rules)"),
    ("collection priorities are distinct per type", _add(
        "firewalls.0.policy.groups.0.collections", {
            "name": "net-2", "type": "Network", "priority": 100, "action": "Allow",
            "rules": [{"name": "r", "protocols": ["TCP"], "sources": ["*"],
                       "destinations": ["*"], "ports": ["22"]}]}),
     f"bad.yaml: {COLL}[2].priority: 100 is already used by {COLL}[0] (Network collections "
     "need distinct priorities)"),
    ("the same priority in another type is fine", _set(f"{COLL}[1].priority", 100), ""),
    ("DNAT is not modelled", _set(f"{COLL}[0].type", "Dnat"),
     f"bad.yaml: {COLL}[0].type: DNAT collections are not modelled by the lab (Network or "
     "Application)"),
    ("network rule protocols", _set(f"{COLL}[0].rules[0].protocols", ["SCTP"]),
     f"bad.yaml: {COLL}[0].rules[0].protocols[0]: 'SCTP' is not one of TCP, UDP, ICMP, Any"),
    ("application rule protocols", _set(f"{COLL}[1].rules[0].protocols", ["Ftp:21"]),
     f"bad.yaml: {COLL}[1].rules[0].protocols[0]: 'Ftp:21' is not Http:N, Https:N or Mssql:N"),
    ("one NAT gateway per subnet", _add("nat_gateways", {
        "name": "ngw-2", "resource_group": "rg", "public_ips": [{"name": "pip-2",
                                                                 "ip": "20.50.4.2"}],
        "subnets": ["vnet-prod/snet-web"]}),
     "bad.yaml: nat_gateways[1].subnets[0]: vnet-prod/snet-web already has NAT gateway "
     "ngw-prod (a subnet has at most one)"),
    ("NAT idle timeout", _set("nat_gateways[0].idle_timeout", 2),
     "bad.yaml: nat_gateways[0].idle_timeout: 2 is out of range (4-120)"),
    ("storage account names", lambda d: d.update(
        storage_accounts=[{"name": "St-Flow", "resource_group": "rg"}], flow_logs=[]),
     "bad.yaml: storage_accounts[0].name: 'St-Flow' is not a storage account name (3-24 of a-z "
     "and 0-9)"),
    ("a flow log's account resolves", _set("flow_logs[0].storage_account", "stnope"),
     "bad.yaml: flow_logs[0].storage_account: no storage account named 'stnope' in "
     "storage_accounts"),
    ("a flow log's target resolves", _set("flow_logs[0].target", "vnet-nope"),
     "bad.yaml: flow_logs[0].target: 'vnet-nope' is neither a VNet, a vnet/subnet nor a VM"),
    ("an Internet client is public", _set("traffic[1].from", "10.9.9.9"),
     "bad.yaml: traffic[1].from: 10.9.9.9 is not a public address: a client inside the estate "
     "is a VM (name it)"),
    ("snat_exhaustion sits on a NAT gateway or firewall",
     _add("faults", {"kind": "snat_exhaustion", "at": "web-vm-01", "percent": 30}),
     "bad.yaml: faults[0].at: no NAT gateway or firewall named 'web-vm-01' (SNAT happens "
     "there)"),
    ("active windows are ordered", _add("nsgs.0.rules", {
        "name": "deny-late", "priority": 300, "direction": "Inbound", "access": "Deny",
        "protocol": "Tcp", "source": "*", "source_ports": "*", "destination": "*",
        "destination_ports": "8443", "active": {"from": "10m", "until": "40m"}}),
     "bad.yaml: nsgs[0].rules[1].active: from (10m ago) must be before until (40m ago)"),
    ("active windows reach back 7 days", _add("faults", {
        "kind": "latency", "at": "afw-hub", "ms": 30, "active": {"from": "8d"}}),
     "bad.yaml: faults[0].active.from: 8d is more than 7 days ago (format 2 windows reach "
     "back 7 days)"),
    ("custom categories are x- words", _set("truth.category", "x-DNS"),
     "bad.yaml: truth.category: 'x-DNS' is not one of: nsg_deny, nic_nsg_deny, udr_blackhole, "
     "udr_wrong_next_hop, nva_down, nva_loss, nva_reset, peering_disconnected, "
     "peering_forwarding_blocked, private_dns_link_missing, custom_dns_broken, vm_stopped, "
     "service_down, mtu_blackhole, asymmetric_routing, extension_missing, healthy, "
     "lb_probe_blocked, lb_probe_port_down, lb_inbound_blocked, private_endpoint_dns, "
     "private_endpoint_not_approved, firewall_rule_deny, snat_exhaustion, latency or a custom "
     "one: x- then [a-z0-9] words joined by - or _"),
    ("a custom category needs a keyword or resource",
     lambda d: d["truth"].update(category="x-dns-ttl-stale", keywords=[], resources=[]),
     "bad.yaml: truth.category: the custom category x-dns-ttl-stale needs at least one "
     "keywords or resources entry (eval names the truth by them)"),
]


@pytest.mark.parametrize(("why", "mutate", "line"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_field_gives_its_exact_line(why: str, mutate: Mutation, line: str) -> None:
    data = v2_scenario()
    mutate(data)
    if not line:
        parse_scenario(data, "ok.yaml")
        return
    assert _errors(data) == [line], why


def test_the_v2_estate_loads_with_derived_parts() -> None:
    s = parse_scenario(v2_scenario(), "t.yaml")
    assert s.format == 2
    assert [b.name for b in s.load_balancers] == ["ilb-app", "lbe-web"]
    # the zone group adds the private endpoint's A record to the zone
    assert str(s.private_dns_zones[0].records["sql-prod"]) == "10.0.4.5"
    assert str(s.engineer_ip) == "198.51.100.10"
    assert s.resource_id_for("ilb-app/hp-app", ).endswith(  # type: ignore[union-attr]
        "/loadBalancers/ilb-app/probes/hp-app")
    assert s.resource_id_for("afw-hub/app-partner").endswith(  # type: ignore[union-attr]
        "/firewallPolicies/afwp-hub/ruleCollectionGroups/rcg-spokes")
    assert s.pe_nic_name("pe-sql").startswith("pe-sql.nic.")


@pytest.mark.parametrize(("key", "value"), [
    ("load_balancers", []), ("private_endpoints", []), ("firewalls", []), ("nat_gateways", []),
    ("internet_hosts", {}), ("engineer_ip", "198.51.100.10"), ("storage_accounts", []),
    ("flow_logs", []),
])
def test_format_1_refuses_each_format_2_section(key: str, value: Any) -> None:
    data = base_scenario()
    data[key] = value
    assert _errors(data) == [f"bad.yaml: {key}: `{key}` needs `format: 2`"]


@pytest.mark.parametrize(("mutate", "line"), [
    (_set("truth.category", "latency"), "bad.yaml: truth.category: 'latency' needs `format: 2`"),
    (_set("truth.category", "x-slow-dns"),
     "bad.yaml: truth.category: 'x-slow-dns' needs `format: 2`"),
    (_set("traffic[0].since", "1h"), "bad.yaml: traffic[0].since: `since` needs `format: 2`"),
    (lambda d: d["nsgs"][1]["rules"][0].update(active={"from": "1h"}),
     "bad.yaml: nsgs[1].rules[0].active: `active` needs `format: 2`"),
    (lambda d: d.update(faults=[{"kind": "snat_exhaustion", "at": "web-vm-01", "percent": 5}]),
     "bad.yaml: faults[0].kind: 'snat_exhaustion' needs `format: 2`"),
])
def test_format_1_refuses_format_2_fields(mutate: Mutation, line: str) -> None:
    data = base_scenario()
    mutate(data)
    assert _errors(data) == [line]


def test_time_windows_give_the_estate_at_each_moment() -> None:
    from datetime import UTC, datetime

    data = v2_scenario()
    data["nsgs"][1]["rules"][0]["priority"] = 200
    data["nsgs"][1]["rules"].insert(0, {
        "name": "deny-all-in", "priority": 100, "direction": "Inbound", "access": "Deny",
        "protocol": "*", "source": "*", "source_ports": "*", "destination": "*",
        "destination_ports": "*", "active": {"from": "78m", "until": "39m"}})
    data["private_dns_zones"][0]["linked_vnets"] = [
        "vnet-hub", {"vnet": "vnet-prod", "active": {"from": "2h"}}]
    data["traffic"][0]["since"] = "30m"
    s = parse_scenario(data, "t.yaml")
    then = datetime(2026, 11, 20, 13, 20, tzinfo=UTC)  # inside the window (13:02 to 13:41)
    past = s.at(then)
    assert [r.name for r in past.nsg("nsg-app").rules] == ["deny-all-in", "allow-web-to-app"]
    assert [r.name for r in s.at(s.now).nsg("nsg-app").rules] == ["allow-web-to-app"]
    assert past.zone("privatelink.database.windows.net").linked_vnets == ("vnet-hub",
                                                                          "vnet-prod")
    assert len(past.traffic) == 2 and len(s.at(s.now).traffic) == 3  # since 13:50
    assert s.window_key(then) != s.window_key(s.now)
