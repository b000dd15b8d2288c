"""Scenario validation: each broken file gives exact one-line errors naming file, path, problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lab.scenario import ScenarioError, load_scenario, parse_scenario
from tests.lab.conftest import base_scenario, hub_spoke_scenario

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting ``a.b[0].c`` to value (``...`` deletes it)."""

    def apply(d: dict[str, Any]) -> None:
        keys: list[Any] = []
        for part in path.replace("]", "").split("."):
            name, *idx = part.split("[")
            keys.append(name)
            keys.extend(int(i) for i in idx)
        node: Any = d
        for k in keys[:-1]:
            node = node[k]
        if value is ...:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value

    return apply


def _errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "bad.yaml")
    return info.value.errors


RULE = {"name": "r", "priority": 300, "direction": "Inbound", "access": "Allow",
        "protocol": "Tcp", "source": "*", "source_ports": "*", "destination": "*",
        "destination_ports": "80"}

# (why, mutation, the exact error line)
CASES: list[tuple[str, Mutation, str]] = [
    ("a typo is an unknown key, not a silently ignored field",
     _set("vnets[0].subnets[1].prefx", "10.1.3.0/24"),
     "bad.yaml: vnets[0].subnets[1].prefx: unknown key (expected one of: name, prefix, nsg, "
     "route_table)"),
    ("unknown top-level key", _set("notes", "x"),
     "bad.yaml: notes: unknown key (expected one of: format, name, title, symptom, "
     "subscription, location, now, vnets, nsgs, vms, traffic, truth, route_tables, "
     "private_dns_zones, public_dns, faults, activity_log, vm_facts, replay)"),
    ("required key missing", _set("vms[0].ip", ...),
     "bad.yaml: vms[0].ip: required key is missing"),
    ("Azure refuses overlapping subnets", _set("vnets[0].subnets[1].prefix", "10.1.1.128/25"),
     "bad.yaml: vnets[0].subnets[1].prefix: 10.1.1.128/25 overlaps vnets[0].subnets[0] "
     "(10.1.1.0/24)"),
    ("a subnet must lie inside its VNet", _set("vnets[0].subnets[1].prefix", "10.9.2.0/24"),
     "bad.yaml: vnets[0].subnets[1].prefix: 10.9.2.0/24 is outside the address space of "
     "vnet-prod (10.1.0.0/16)"),
    ("bad CIDR", _set("vnets[0].address_space[0]", "10.1.0.0/33"),
     "bad.yaml: vnets[0].address_space[0]: not an IPv4 CIDR: 10.1.0.0/33"),
    ("CIDR with host bits", _set("vnets[0].subnets[0].prefix", "10.1.1.7/24"),
     "bad.yaml: vnets[0].subnets[0].prefix: 10.1.1.7/24 has host bits set (the network is "
     "10.1.1.0/24)"),
    ("Azure's smallest subnet is /29", _set("vnets[0].subnets[0].prefix", "10.1.1.0/30"),
     "bad.yaml: vnets[0].subnets[0].prefix: 10.1.1.0/30 is smaller than /29, Azure's smallest "
     "subnet"),
    ("dangling NSG reference", _set("vnets[0].subnets[0].nsg", "nsg-wbe"),
     "bad.yaml: vnets[0].subnets[0].nsg: no NSG named 'nsg-wbe' in nsgs"),
    ("dangling route table", _set("vnets[0].subnets[0].route_table", "rt-x"),
     "bad.yaml: vnets[0].subnets[0].route_table: no route table named 'rt-x' in route_tables"),
    ("dangling NIC NSG", _set("vms[0].nic_nsg", "nsg-nic"),
     "bad.yaml: vms[0].nic_nsg: no NSG named 'nsg-nic' in nsgs"),
    ("dangling subnet of a VM", _set("vms[0].subnet", "vnet-prod/snet-app"),
     "bad.yaml: vms[0].subnet: VNet vnet-prod has no subnet named 'snet-app'"),
    ("dangling VNet of a VM", _set("vms[0].subnet", "vnet-x/snet-web"),
     "bad.yaml: vms[0].subnet: no VNet named 'vnet-x' in vnets"),
    ("VM ip outside its subnet", _set("vms[0].ip", "10.1.2.9"),
     "bad.yaml: vms[0].ip: 10.1.2.9 is outside subnet vnet-prod/snet-web (10.1.1.0/24)"),
    ("the first four addresses are Azure's", _set("vms[0].ip", "10.1.1.3"),
     "bad.yaml: vms[0].ip: 10.1.1.3 is reserved by Azure in 10.1.1.0/24 (the first four and "
     "the last address of every subnet)"),
    ("the last address is Azure's", _set("vms[0].ip", "10.1.1.255"),
     "bad.yaml: vms[0].ip: 10.1.1.255 is reserved by Azure in 10.1.1.0/24 (the first four and "
     "the last address of every subnet)"),
    ("two VMs cannot share an IP",
     lambda d: d["vms"].append({**d["vms"][0], "name": "web-vm-02"}),
     "bad.yaml: vms[2].ip: 10.1.1.4 is already used by vms[0] (web-vm-01)"),
    ("names are unique within their kind",
     lambda d: d["vms"].append({**d["vms"][0], "ip": "10.1.1.5"}),
     "bad.yaml: vms[2].name: duplicate VM name 'web-vm-01' (also vms[0])"),
    ("not an IPv4 address", _set("vms[0].ip", "10.1.1.400"),
     "bad.yaml: vms[0].ip: not an IPv4 address: 10.1.1.400"),
    ("priority range", _set("nsgs[1].rules[0].priority", 99),
     "bad.yaml: nsgs[1].rules[0].priority: 99 is out of range (100-4096)"),
    ("priorities unique per direction",
     lambda d: d["nsgs"][1]["rules"].append({**RULE, "priority": 200}),
     "bad.yaml: nsgs[1].rules[1].priority: 200 is already used by nsgs[1].rules[0] "
     "(allow-web-to-redis) for Inbound"),
    ("port syntax", _set("nsgs[1].rules[0].destination_ports", "6379-80"),
     "bad.yaml: nsgs[1].rules[0].destination_ports: '6379-80' is not '*', 'N', 'N-M' or a "
     "comma-separated list of those (ports 0-65535)"),
    ("prefix syntax", _set("nsgs[1].rules[0].source", "VirtualNet"),
     "bad.yaml: nsgs[1].rules[0].source: 'VirtualNet' is not an IPv4 address, a CIDR, '*', "
     "VirtualNetwork, Internet or AzureLoadBalancer"),
    ("protocol values are Azure's", _set("nsgs[1].rules[0].protocol", "TCP"),
     "bad.yaml: nsgs[1].rules[0].protocol: 'TCP' is not one of: Tcp, Udp, Icmp, *"),
    ("categories are the format's", _set("truth.category", "dns"),
     "bad.yaml: truth.category: 'dns' is not one of: nsg_deny, nic_nsg_deny, udr_blackhole, "
     "udr_wrong_next_hop, nva_down, nva_loss, nva_reset, peering_disconnected, "
     "peering_forwarding_blocked, private_dns_link_missing, custom_dns_broken, vm_stopped, "
     "service_down, mtu_blackhole, asymmetric_routing, extension_missing, healthy"),
    ("ago syntax", _set("activity_log[0].ago", "15min"),
     "bad.yaml: activity_log[0].ago: '15min' is not an integer followed by s, m, h or d "
     "(e.g. 15m)"),
    ("power states", _set("vms[0].power_state", "off"),
     "bad.yaml: vms[0].power_state: 'off' is not one of: running, stopped, deallocated"),
    ("traffic to an IP a VM holds must name the VM", _set("traffic[0].to", "10.1.2.4"),
     "bad.yaml: traffic[0].to: 10.1.2.4 is held by VM redis-vm-01: name the VM instead"),
    ("traffic from a VM", _set("traffic[0].from", "web-vm-99"),
     "bad.yaml: traffic[0].from: no VM named 'web-vm-99' in vms"),
    ("fault at a VM", lambda d: d.setdefault("faults", []).append(
        {"kind": "loss", "at": "nva-01", "percent": 5}),
     "bad.yaml: faults[0].at: no VM named 'nva-01' in vms"),
    ("no_listener takes vm, not at", lambda d: d.setdefault("faults", []).append(
        {"kind": "no_listener", "at": "redis-vm-01", "port": 6379}),
     "bad.yaml: faults[0].at: unknown key (expected one of: kind, vm, port)"),
    ("fault kinds", lambda d: d.setdefault("faults", []).append({"kind": "jitter", "at": "x"}),
     "bad.yaml: faults[0].kind: 'jitter' is not one of: loss, reset, mtu, latency, no_listener"),
    ("vm_facts name VMs", _set("vm_facts", {"web-vm-9": {"cpu_percent": 90}}),
     "bad.yaml: vm_facts.web-vm-9: no VM named 'web-vm-9' in vms"),
    ("format version", _set("format", 3),
     "bad.yaml: format: 3 is not a supported format version (1 or 2)"),
    ("scenario name syntax", _set("name", "Bad_Name"),
     "bad.yaml: name: 'Bad_Name' is not a scenario name ([a-z0-9-])"),
    ("now is ISO 8601", _set("now", "yesterday"),
     "bad.yaml: now: 'yesterday' is not an ISO 8601 time (e.g. 2026-11-20T14:20:00Z)"),
    ("subscription is a GUID", _set("subscription", "prod"),
     "bad.yaml: subscription: 'prod' is not a subscription id (a GUID)"),
    ("a list where a list belongs", _set("vms", {"web": 1}),
     "bad.yaml: vms: expected a list, got a mapping"),
    ("booleans are booleans", _set("vms[0].network_watcher_extension", "yes please"),
     "bad.yaml: vms[0].network_watcher_extension: expected true or false, got 'yes please'"),
    ("listens are TCP ports", _set("vms[1].listens", [6379, 70000]),
     "bad.yaml: vms[1].listens[1]: expected a TCP port 1-65535, got 70000"),
]

ROUTE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("no gateways exist in the lab",
     {"name": "r", "prefix": "192.168.0.0/16", "next_hop": "VirtualNetworkGateway"},
     "bad.yaml: route_tables[0].routes[0].next_hop: VirtualNetworkGateway: the lab has no VPN "
     "or ExpressRoute gateway (Azure refuses this next hop without one)"),
    ("a VirtualAppliance needs its IP",
     {"name": "r", "prefix": "192.168.0.0/16", "next_hop": "VirtualAppliance"},
     "bad.yaml: route_tables[0].routes[0].next_hop_ip: required for next_hop VirtualAppliance"),
    ("only a VirtualAppliance takes an IP",
     {"name": "r", "prefix": "192.168.0.0/16", "next_hop": "None", "next_hop_ip": "10.1.1.4"},
     "bad.yaml: route_tables[0].routes[0].next_hop_ip: only a VirtualAppliance next hop takes "
     "an IP (next_hop is None)"),
    ("next hop types", {"name": "r", "prefix": "192.168.0.0/16", "next_hop": "Appliance"},
     "bad.yaml: route_tables[0].routes[0].next_hop: 'Appliance' is not one of: "
     "VirtualAppliance, VnetLocal, Internet, None"),
]


@pytest.mark.parametrize(("why", "mutate", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_field_gives_its_exact_line(why: str, mutate: Mutation,
                                                expected: str) -> None:
    data = base_scenario()
    mutate(data)
    assert expected in _errors(data), why


@pytest.mark.parametrize(("why", "route", "expected"), ROUTE_CASES,
                         ids=[c[0] for c in ROUTE_CASES])
def test_route_rules(why: str, route: dict[str, Any], expected: str) -> None:
    data = base_scenario()
    data["route_tables"] = [{"name": "rt", "resource_group": "rg", "routes": [route]}]
    assert _errors(data) == [expected], why


def test_every_error_is_collected_at_once() -> None:
    data = base_scenario()
    _set("vnets[0].subnets[1].prefx", "x")(data)
    _set("vms[0].ip", "10.1.1.0")(data)
    _set("truth.category", "dns")(data)
    errors = _errors(data)
    assert len(errors) == 3
    assert all(e.startswith("bad.yaml: ") and "\n" not in e for e in errors)


PEERING_CASES: list[tuple[str, str, str | None, str]] = [
    ("Connected needs a Connected reverse", "Connected", "Initiated",
     "bad.yaml: vnets[1].peerings[0].state: Connected needs a Connected peering from vnet-hub "
     "back to vnet-spoke1 (Azure shows Initiated until both sides exist)"),
    ("Connected without any reverse", "Connected", None,
     "bad.yaml: vnets[1].peerings[0].state: Connected needs a Connected peering from vnet-hub "
     "back to vnet-spoke1 (Azure shows Initiated until both sides exist)"),
    ("Disconnected is the side left alone", "Disconnected", "Connected",
     "bad.yaml: vnets[1].peerings[0].state: Disconnected means the side left after the other "
     "was deleted, but vnet-hub has peering hub-to-spoke1 back to vnet-spoke1 (both sides: "
     "Connected)"),
]


@pytest.mark.parametrize(("why", "state", "reverse", "expected"), PEERING_CASES,
                         ids=[c[0] for c in PEERING_CASES])
def test_peering_states_come_in_pairs(why: str, state: str, reverse: str | None,
                                      expected: str) -> None:
    data = hub_spoke_scenario()
    data["vnets"][1]["peerings"][0]["state"] = state
    hub_peerings = data["vnets"][0]["peerings"]
    if reverse is None:
        del hub_peerings[0]
    else:
        hub_peerings[0]["state"] = reverse
    assert expected in _errors(data), why


def test_one_sided_states_are_valid() -> None:
    data = hub_spoke_scenario()
    del data["vnets"][0]["peerings"][0]
    data["vnets"][1]["peerings"][0]["state"] = "Disconnected"
    parse_scenario(data, "ok.yaml")
    data["vnets"][1]["peerings"][0]["state"] = "Initiated"
    parse_scenario(data, "ok.yaml")


def test_peered_address_spaces_must_not_overlap() -> None:
    data = hub_spoke_scenario()
    data["vnets"][2]["address_space"] = ["10.1.0.0/16"]
    data["vnets"][2]["subnets"][0]["prefix"] = "10.1.9.0/24"
    data["vms"][3]["ip"] = "10.1.9.4"
    data["route_tables"][0]["routes"][0]["prefix"] = "10.3.0.0/16"
    data["route_tables"][1]["routes"][0]["prefix"] = "10.3.0.0/16"
    data["vnets"][1]["peerings"].append(
        {"name": "s1-to-s2", "remote_vnet": "vnet-spoke2", "state": "Initiated"})
    assert _errors(data) == [
        "bad.yaml: vnets[1].peerings[1].remote_vnet: address space of vnet-spoke1 "
        "(10.1.0.0/16) overlaps vnet-spoke2 (10.1.0.0/16): Azure refuses to peer overlapping "
        "VNets"
    ]


def test_remote_gateways_are_refused() -> None:
    data = hub_spoke_scenario()
    data["vnets"][1]["peerings"][0]["use_remote_gateways"] = True
    assert _errors(data) == [
        "bad.yaml: vnets[1].peerings[0].use_remote_gateways: must be false: the lab has no VPN "
        "or ExpressRoute gateways (Azure refuses remote gateways without one)"
    ]


def test_dangling_peering_and_zone_link() -> None:
    data = hub_spoke_scenario()
    data["vnets"][1]["peerings"][0]["remote_vnet"] = "vnet-hbu"
    data["private_dns_zones"] = [{"name": "privatelink.x.net", "resource_group": "rg",
                                  "linked_vnets": ["vnet-nope"], "records": {}}]
    errors = _errors(data)
    assert "bad.yaml: vnets[1].peerings[0].remote_vnet: no VNet named 'vnet-hbu' in vnets" in errors
    assert ("bad.yaml: private_dns_zones[0].linked_vnets[0]: no VNet named 'vnet-nope' in vnets"
            in errors)


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("format: 1\nname: broken\nvnets: [a, b\ntitle: x\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.errors == [
        "broken.yaml: line 4 column 6: YAML syntax error: expected ',' or ']', but got ':'"
    ]


def test_duplicate_yaml_keys_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("format: 1\nname: dup\nname: dup2\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.errors == ["dup.yaml: line 3 column 1: YAML syntax error: duplicate key "
                                 "'name'"]


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.yaml")
    assert info.value.errors == ["nope.yaml: (file): cannot read: No such file or directory"]


def test_not_a_mapping() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(["a"], "list.yaml")
    assert info.value.errors == ["list.yaml: (top level): expected a mapping, got a list"]


def test_name_must_match_file_stem(write_scenario: Callable[[dict[str, Any]], Path]) -> None:
    data = base_scenario()
    path = write_scenario(data)
    renamed = path.with_name("other.yaml")
    path.rename(renamed)
    with pytest.raises(ScenarioError) as info:
        load_scenario(renamed)
    assert info.value.errors == ["other.yaml: name: 'test-estate' must match the file name "
                                 "(other)"]


def test_replay_must_exist_beside_the_file(
    write_scenario: Callable[[dict[str, Any]], Path],
) -> None:
    data = base_scenario()
    data["replay"] = "test-estate.replay.json"
    path = write_scenario(data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.errors == ["test-estate.yaml: replay: test-estate.replay.json not found "
                                 "beside the scenario"]
    (path.parent / "test-estate.replay.json").write_text("[]", encoding="utf-8")
    assert load_scenario(path).replay_path() == path.parent / "test-estate.replay.json"


@pytest.mark.parametrize(("why", "mutation", "expected"), [
    ("a broken subnet prefix is not also a dangling subnet for its VM",
     _set("vnets[0].subnets[0].prefix", "10.1.1.0/33"),
     ["bad.yaml: vnets[0].subnets[0].prefix: not an IPv4 CIDR: 10.1.1.0/33"]),
    ("a broken VM is not also a dangling traffic source",
     _set("vms[0].power_state", "on"),
     ["bad.yaml: vms[0].power_state: 'on' is not one of: running, stopped, deallocated"]),
    ("a broken NSG is not also a dangling subnet reference",
     _set("nsgs[1].resource_group", "rg with spaces"),
     ["bad.yaml: nsgs[1].resource_group: 'rg with spaces' is not a valid resource group name"]),
])
def test_one_mistake_one_line(why: str, mutation: Mutation, expected: list[str]) -> None:
    data = base_scenario()
    mutation(data)
    assert _errors(data) == expected, why
