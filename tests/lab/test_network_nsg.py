"""NSG evaluation against Azure's documented behaviour (test-ip-flow, list-effective-nsg)."""

from __future__ import annotations

from typing import Any

import pytest

from lab.network import Estate
from lab.scenario import parse_scenario
from tests.lab.conftest import SUBSCRIPTION, base_scenario, hub_spoke_scenario


def rule(name: str, priority: int, access: str = "Deny", direction: str = "Inbound",
         protocol: str = "Tcp", source: str = "*", destination: str = "*",
         ports: str = "*") -> dict[str, Any]:
    return {"name": name, "priority": priority, "direction": direction, "access": access,
            "protocol": protocol, "source": source, "source_ports": "*",
            "destination": destination, "destination_ports": ports}


def estate(subnet_rules: list[dict[str, Any]] | None,
           nic_rules: list[dict[str, Any]] | None = None,
           routes: list[dict[str, Any]] | None = None) -> Estate:
    """redis-vm-01 (10.1.2.4) with the given rules on its subnet NSG (None: no subnet NSG)
    and NIC NSG (None: none), and optionally a route table on its subnet."""
    d = base_scenario()
    snet = d["vnets"][0]["subnets"][1]
    if subnet_rules is None:
        del snet["nsg"]
    else:
        d["nsgs"][1]["rules"] = subnet_rules
    if nic_rules is not None:
        d["nsgs"].append({"name": "nsg-redis-nic", "resource_group": "rg", "rules": nic_rules})
        d["vms"][1]["nic_nsg"] = "nsg-redis-nic"
    if routes is not None:
        d["route_tables"] = [{"name": "rt-data", "resource_group": "rg", "routes": routes}]
        snet["route_table"] = "rt-data"
    d["activity_log"] = []
    return Estate(parse_scenario(d, "t.yaml"))


ALLOW_6379 = rule("allow-redis", 200, "Allow", source="10.1.1.0/24", ports="6379")
DENY_ALL_TCP = rule("deny-all-tcp", 300)
DEFAULT = "defaultSecurityRules/"

# (why, subnet rules, nic rules, direction, protocol, local port, remote ip, remote port,
#  access, ruleName)
FLOW_CASES: list[tuple[str, Any, Any, str, str, int, str, int, str, str]] = [
    ("no custom rule: VNet to VNet is allowed by AllowVnetInBound",
     [], None, "Inbound", "TCP", 6379, "10.1.1.4", 50000, "Allow", DEFAULT + "AllowVnetInBound"),
    ("Internet inbound falls to DenyAllInBound",
     [], None, "Inbound", "TCP", 22, "20.50.1.10", 50000, "Deny", DEFAULT + "DenyAllInBound"),
    ("203.0.113.0/24 is Internet here (not Python's is_private)",
     [], None, "Inbound", "TCP", 22, "203.0.113.5", 50000, "Deny", DEFAULT + "DenyAllInBound"),
    ("168.63.129.16 is in VirtualNetwork, so AllowVnetInBound (65000) matches first",
     [], None, "Inbound", "TCP", 80, "168.63.129.16", 50000, "Allow",
     DEFAULT + "AllowVnetInBound"),
    ("a custom deny names the rule",
     [rule("deny-web", 100, source="10.1.1.0/24", ports="6379")], None, "Inbound", "TCP",
     6379, "10.1.1.4", 50000, "Deny", "securityRules/deny-web"),
    ("the lowest priority number decides",
     [rule("deny-late", 300, ports="6379"), rule("allow-early", 100, "Allow", ports="6379")],
     None, "Inbound", "TCP", 6379, "10.1.1.4", 50000, "Allow", "securityRules/allow-early"),
    ("a port list with a range matches",
     [rule("deny-list", 100, ports="80,443,6000-6400")], None, "Inbound", "TCP", 6379,
     "10.1.1.4", 50000, "Deny", "securityRules/deny-list"),
    ("a port outside the rule falls through to the defaults",
     [rule("deny-80", 100, ports="80")], None, "Inbound", "TCP", 6379, "10.1.1.4", 50000,
     "Allow", DEFAULT + "AllowVnetInBound"),
    ("a Udp rule does not match TCP",
     [rule("deny-udp", 100, protocol="Udp")], None, "Inbound", "TCP", 6379, "10.1.1.4", 50000,
     "Allow", DEFAULT + "AllowVnetInBound"),
    ("a * rule matches UDP",
     [rule("deny-any", 100, protocol="*")], None, "Inbound", "UDP", 53, "10.1.1.4", 50000,
     "Deny", "securityRules/deny-any"),
    ("source Internet does not match a VNet address",
     [rule("deny-inet", 100, source="Internet")], None, "Inbound", "TCP", 6379, "10.1.1.4",
     50000, "Allow", DEFAULT + "AllowVnetInBound"),
    ("source AzureLoadBalancer is 168.63.129.16",
     [rule("deny-alb", 100, source="AzureLoadBalancer")], None, "Inbound", "TCP", 80,
     "168.63.129.16", 50000, "Deny", "securityRules/deny-alb"),
    ("outbound to the Internet: AllowInternetOutBound",
     [], None, "Outbound", "TCP", 50000, "8.8.8.8", 443, "Allow",
     DEFAULT + "AllowInternetOutBound"),
    ("outbound to 203.0.113.10 is Internet too",
     [], None, "Outbound", "TCP", 50000, "203.0.113.10", 443, "Allow",
     DEFAULT + "AllowInternetOutBound"),
    ("192.168.x outside the VNet is neither VirtualNetwork nor Internet",
     [], None, "Outbound", "TCP", 50000, "192.168.5.5", 443, "Deny",
     DEFAULT + "DenyAllOutBound"),
    ("100.64.0.0/10 is not Internet",
     [], None, "Outbound", "TCP", 50000, "100.64.1.1", 443, "Deny",
     DEFAULT + "DenyAllOutBound"),
    ("inbound: subnet allows, NIC denies -> the NIC's rule",
     [ALLOW_6379], [DENY_ALL_TCP], "Inbound", "TCP", 6379, "10.1.1.4", 50000, "Deny",
     "securityRules/deny-all-tcp"),
    ("inbound: subnet denies first, the NIC is never met",
     [rule("subnet-deny", 100)], [rule("nic-allow", 100, "Allow")], "Inbound", "TCP", 6379,
     "10.1.1.4", 50000, "Deny", "securityRules/subnet-deny"),
    ("inbound: both allow -> the NIC's (last) allowing rule",
     [ALLOW_6379], [rule("nic-allow", 150, "Allow")], "Inbound", "TCP", 6379, "10.1.1.4",
     50000, "Allow", "securityRules/nic-allow"),
    ("outbound: both allow -> the subnet's (last) allowing rule",
     [rule("subnet-out", 100, "Allow", "Outbound")], [rule("nic-out", 100, "Allow", "Outbound")],
     "Outbound", "TCP", 50000, "10.1.1.4", 80, "Allow", "securityRules/subnet-out"),
    ("outbound: the NIC is met first",
     [rule("subnet-out-deny", 100, direction="Outbound")],
     [rule("nic-out-deny", 100, direction="Outbound")], "Outbound", "TCP", 50000, "10.1.1.4",
     80, "Deny", "securityRules/nic-out-deny"),
    ("only a NIC NSG: its rule is named",
     None, [rule("nic-allow", 100, "Allow")], "Inbound", "TCP", 6379, "10.1.1.4", 50000,
     "Allow", "securityRules/nic-allow"),
    ("no NSG at either level: Allow with an empty rule name",
     None, None, "Inbound", "TCP", 22, "20.50.1.10", 50000, "Allow", ""),
    ("an Icmp rule does not match TCP",
     [rule("deny-icmp", 100, protocol="Icmp")], None, "Inbound", "TCP", 6379, "10.1.1.4",
     50000, "Allow", DEFAULT + "AllowVnetInBound"),
]


@pytest.mark.parametrize(
    ("why", "subnet_rules", "nic_rules", "direction", "protocol", "lport", "rip", "rport",
     "access", "rule_name"), FLOW_CASES, ids=[c[0] for c in FLOW_CASES])
def test_ip_flow_verify(why: str, subnet_rules: Any, nic_rules: Any, direction: str,
                        protocol: str, lport: int, rip: str, rport: int, access: str,
                        rule_name: str) -> None:
    est = estate(subnet_rules, nic_rules)
    v = est.ip_flow_verify("redis-vm-01", direction, protocol, "10.1.2.4", lport, rip, rport)
    assert (v.access, v.rule_name) == (access, rule_name), why


def test_rule_id_is_the_rules_resource_id() -> None:
    v = estate([rule("deny-web", 100)]).ip_flow_verify(
        "redis-vm-01", "Inbound", "TCP", "10.1.2.4", 6379, "10.1.1.4", 5000)
    assert v.rule_id == (f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-prod-net/providers/"
                         "Microsoft.Network/networkSecurityGroups/nsg-data/securityRules/deny-web")
    assert v.nsg == "nsg-data"
    none = estate(None).ip_flow_verify("redis-vm-01", "Inbound", "TCP", "10.1.2.4", 1, "8.8.8.8", 2)
    assert (none.rule_id, none.nsg) == ("", None)


@pytest.mark.parametrize(("why", "routes", "remote", "rule_name"), [
    ("a UDR 0.0.0.0/0 puts every address in VirtualNetwork",
     [{"name": "default", "prefix": "0.0.0.0/0", "next_hop": "VirtualAppliance",
       "next_hop_ip": "10.1.1.4"}], "20.50.1.10", DEFAULT + "AllowVnetInBound"),
    ("a UDR prefix joins VirtualNetwork",
     [{"name": "onprem", "prefix": "192.168.0.0/16", "next_hop": "None"}], "192.168.1.1",
     DEFAULT + "AllowVnetInBound"),
    ("without the UDR the same source is denied", [], "192.168.1.1", DEFAULT + "DenyAllInBound"),
])
def test_user_route_prefixes_widen_virtual_network(why: str, routes: list[dict[str, Any]],
                                                   remote: str, rule_name: str) -> None:
    v = estate([], routes=routes).ip_flow_verify(
        "redis-vm-01", "Inbound", "TCP", "10.1.2.4", 22, remote, 5000)
    assert v.rule_name == rule_name, why


@pytest.mark.parametrize(("why", "hub_side", "rule_name"), [
    ("a Connected peering's space is VirtualNetwork", "Connected", DEFAULT + "AllowVnetInBound"),
    ("an Initiated peering's space is not", "Initiated", DEFAULT + "DenyAllInBound"),
])
def test_peered_space_in_virtual_network_only_when_connected(why: str, hub_side: str,
                                                             rule_name: str) -> None:
    d = hub_spoke_scenario()
    d["vnets"][0]["subnets"][1]["nsg"] = "nsg-nva"  # dns-vm-01's subnet
    if hub_side != "Connected":
        del d["vnets"][0]["peerings"][0]  # the hub side of spoke1 was never created
        d["vnets"][1]["peerings"][0]["state"] = hub_side
    est = Estate(parse_scenario(d, "t.yaml"))
    v = est.ip_flow_verify("dns-vm-01", "Inbound", "UDP", "10.0.3.4", 53, "10.1.1.4", 5000)
    assert v.rule_name == rule_name, why


def test_effective_nsgs_list_subnet_then_nic_with_tags_expanded() -> None:
    est = estate([ALLOW_6379], [DENY_ALL_TCP])
    nsgs = est.effective_nsgs("redis-vm-01")
    assert [(n.association, n.nsg) for n in nsgs] == [("subnet", "nsg-data"),
                                                      ("nic", "nsg-redis-nic")]
    assert nsgs[1].association_id.endswith("/networkInterfaces/redis-vm-01VMNic")
    rules = {r.name: r for r in nsgs[0].rules}
    assert list(rules)[:4] == ["securityRules/allow-redis", DEFAULT + "AllowVnetInBound",
                               DEFAULT + "AllowAzureLoadBalancerInBound",
                               DEFAULT + "DenyAllInBound"]
    vnet = rules[DEFAULT + "AllowVnetInBound"]
    assert vnet.expanded_source == ("10.1.0.0/16", "168.63.129.16/32")
    assert (vnet.protocol, vnet.source_ports) == ("All", ("0-65535",))
    internet = rules[DEFAULT + "AllowInternetOutBound"].expanded_destination
    assert "1.0.0.0/8" in internet and not any(p.startswith("10.") for p in internet)
    assert rules["securityRules/allow-redis"].destination_ports == ("6379-6379",)
    assert rules[DEFAULT + "DenyAllInBound"].source == "0.0.0.0/0"
