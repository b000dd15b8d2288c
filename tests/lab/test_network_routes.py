"""Effective routes and next hop against Azure's documented routing rules."""

from __future__ import annotations

from typing import Any

import pytest

from lab.network import Estate
from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario, hub_spoke_scenario

NONE_FOUR = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]


def web_estate(address_space: list[str] | None = None,
               routes: list[dict[str, Any]] | None = None) -> Estate:
    """web-vm-01 in snet-web, with another VNet address space and/or a route table on it."""
    d = base_scenario()
    if address_space is not None:
        d["vnets"][0]["address_space"] = address_space
    if routes is not None:
        d["route_tables"] = [{"name": "rt-web", "resource_group": "rg-prod-net",
                              "routes": routes}]
        d["vnets"][0]["subnets"][0]["route_table"] = "rt-web"
    return Estate(parse_scenario(d, "t.yaml"))


def table(est: Estate, vm: str = "web-vm-01") -> list[tuple[str, str, str, str]]:
    return [(r.source, r.state, r.prefixes[0], r.next_hop_type)
            for r in est.effective_routes(vm)]


def test_system_routes_of_a_subnet() -> None:
    assert table(web_estate()) == [
        ("Default", "Active", "10.1.0.0/16", "VnetLocal"),
        ("Default", "Active", "0.0.0.0/0", "Internet"),
        *[("Default", "Active", p, "None") for p in NONE_FOUR],
    ]


@pytest.mark.parametrize(("why", "space", "nones"), [
    ("a VNet prefix inside 10/8 leaves its None route", ["10.1.0.0/16"], NONE_FOUR),
    ("a VNet prefix equal to 10/8 replaces its None route", ["10.0.0.0/8"], NONE_FOUR[1:]),
    ("a VNet prefix containing 172.16/12 replaces it", ["172.0.0.0/8", "10.1.0.0/16"],
     [NONE_FOUR[0], *NONE_FOUR[2:]]),
    ("100.64.0.0/10 as address space replaces that one",
     ["100.64.0.0/10", "10.1.0.0/16"], NONE_FOUR[:3]),
])
def test_vnet_prefixes_replace_none_routes(why: str, space: list[str],
                                           nones: list[str]) -> None:
    rows = table(web_estate(address_space=space))
    assert [p for _, _, p, hop in rows if hop == "None"] == nones, why
    assert [p for _, _, p, hop in rows if hop == "VnetLocal"] == space, why


def test_user_default_route_removes_the_none_routes_and_overrides_internet() -> None:
    est = web_estate(routes=[{"name": "all-to-fw", "prefix": "0.0.0.0/0",
                              "next_hop": "VirtualAppliance", "next_hop_ip": "10.1.2.4"}])
    assert table(est) == [
        ("Default", "Active", "10.1.0.0/16", "VnetLocal"),
        ("Default", "Invalid", "0.0.0.0/0", "Internet"),
        ("User", "Active", "0.0.0.0/0", "VirtualAppliance"),
    ]
    user = est.effective_routes("web-vm-01")[-1]
    assert (user.name, user.route_table, user.next_hop_ips) == ("all-to-fw", "rt-web",
                                                                ("10.1.2.4",))


def test_user_route_of_same_prefix_invalidates_the_system_route() -> None:
    est = web_estate(routes=[{"name": "rfc1918", "prefix": "10.0.0.0/8",
                              "next_hop": "VirtualAppliance", "next_hop_ip": "10.1.2.4"}])
    rows = table(est)
    assert ("Default", "Invalid", "10.0.0.0/8", "None") in rows
    assert ("User", "Active", "10.0.0.0/8", "VirtualAppliance") in rows
    assert ("Default", "Active", "172.16.0.0/12", "None") in rows


# (why, routes, destination, next hop type, next hop ip, route table id is a table's)
NEXT_HOP_CASES: list[tuple[str, list[dict[str, Any]], str, str, str | None, bool]] = [
    ("inside the VNet", [], "10.1.2.4", "VnetLocal", None, False),
    ("the Internet", [], "8.8.8.8", "Internet", None, False),
    ("a private address outside every VNet matches a None route", [], "192.168.1.1", "None",
     None, False),
    ("another 10.x VNet, not peered: 10.0.0.0/8 -> None", [], "10.9.0.4", "None", None, False),
    ("the longest prefix wins over VnetLocal",
     [{"name": "blackhole", "prefix": "10.1.2.0/24", "next_hop": "None"}], "10.1.2.4", "None",
     None, True),
    ("a shorter user route loses to VnetLocal",
     [{"name": "wide", "prefix": "10.0.0.0/8", "next_hop": "None"}], "10.1.2.4", "VnetLocal",
     None, False),
    ("a VirtualAppliance route gives the appliance's IP",
     [{"name": "fw", "prefix": "10.1.2.0/24", "next_hop": "VirtualAppliance",
       "next_hop_ip": "10.1.1.9"}], "10.1.2.4", "VirtualAppliance", "10.1.1.9", True),
    ("a host route (/32) wins over a /24",
     [{"name": "fw", "prefix": "10.1.2.0/24", "next_hop": "None"},
      {"name": "host", "prefix": "10.1.2.4/32", "next_hop": "VnetLocal"}], "10.1.2.4",
     "VnetLocal", None, True),
]


@pytest.mark.parametrize(("why", "routes", "dest", "hop_type", "hop_ip", "user"),
                         NEXT_HOP_CASES, ids=[c[0] for c in NEXT_HOP_CASES])
def test_next_hop(why: str, routes: list[dict[str, Any]], dest: str, hop_type: str,
                  hop_ip: str | None, user: bool) -> None:
    est = web_estate(routes=routes)
    hop = est.next_hop("web-vm-01", "10.1.1.4", dest)
    assert (hop.next_hop_type, hop.next_hop_ip) == (hop_type, hop_ip), why
    if user:
        assert hop.route_table_id == est.scenario.route_table_id("rt-web"), why
    else:
        assert hop.route_table_id == "System Route", why


def test_peering_routes_only_when_connected_on_both_sides() -> None:
    d = hub_spoke_scenario()
    est = Estate(parse_scenario(d, "t.yaml"))
    hub = table(est, "dns-vm-01")
    assert ("Default", "Active", "10.1.0.0/16", "VNetPeering") in hub
    assert ("Default", "Active", "10.2.0.0/16", "VNetPeering") in hub
    del d["vnets"][0]["peerings"][0]
    d["vnets"][1]["peerings"][0]["state"] = "Disconnected"
    est = Estate(parse_scenario(d, "t.yaml"))
    assert [r for r in table(est, "dns-vm-01") if r[2] == "10.1.0.0/16"] == []
    assert est.next_hop("app-vm-01", "10.1.1.4", "10.0.3.4").next_hop_type == "None"


def test_peering_is_not_transitive() -> None:
    d = hub_spoke_scenario()
    del d["vnets"][1]["subnets"][0]["route_table"]
    est = Estate(parse_scenario(d, "t.yaml"))
    assert [r[2] for r in table(est, "app-vm-01") if r[3] == "VNetPeering"] == ["10.0.0.0/16"]
    hop = est.next_hop("app-vm-01", "10.1.1.4", "10.2.1.4")
    assert (hop.next_hop_type, hop.route_table_id) == ("None", "System Route")


def test_next_hop_does_not_look_at_the_appliance() -> None:
    d = hub_spoke_scenario()
    d["vms"][0]["power_state"] = "deallocated"
    d["vms"][0]["ip_forwarding"] = False
    est = Estate(parse_scenario(d, "t.yaml"))
    hop = est.next_hop("app-vm-01", "10.1.1.4", "10.2.1.4")
    assert (hop.next_hop_type, hop.next_hop_ip) == ("VirtualAppliance", "10.0.1.4")
    assert hop.route_table_id.endswith("/routeTables/rt-spoke1")
