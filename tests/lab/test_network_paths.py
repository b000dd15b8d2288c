"""End-to-end delivery: NVAs, peerings, NSGs on the way, power states, listeners, faults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lab.network import Estate, NotModelled
from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario, hub_spoke_scenario

Mutation = Callable[[dict[str, Any]], None]
DB = "10.2.1.4"


def hub(mutate: Mutation | None = None) -> Estate:
    d = hub_spoke_scenario()
    if mutate is not None:
        mutate(d)
    return Estate(parse_scenario(d, "t.yaml"))


def vm(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in d["vms"] if v["name"] == name)


def set_vm(name: str, **fields: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        vm(d, name).update(fields)

    return mutate


def deny_on_nva_subnet(d: dict[str, Any]) -> None:
    d["nsgs"][0]["rules"] = [{"name": "deny-spoke1", "priority": 100, "direction": "Inbound",
                              "access": "Deny", "protocol": "Tcp", "source": "10.1.0.0/16",
                              "source_ports": "*", "destination": "10.2.0.0/16",
                              "destination_ports": "*"}]


def no_forwarded_on_spoke2(d: dict[str, Any]) -> None:
    d["vnets"][2]["peerings"][0]["allow_forwarded_traffic"] = False
    d["vnets"][0]["peerings"][1]["allow_forwarded_traffic"] = True  # the hub's side: irrelevant


def no_udr_on_spoke1(d: dict[str, Any]) -> None:
    del d["vnets"][1]["subnets"][0]["route_table"]


def nva_routes_back_to_itself(d: dict[str, Any]) -> None:
    d["route_tables"].append({"name": "rt-hub", "resource_group": "rg-hub", "routes": [
        {"name": "loop", "prefix": "10.2.0.0/16", "next_hop": "VirtualAppliance",
         "next_hop_ip": "10.0.1.4"}]})
    d["vnets"][0]["subnets"][0]["route_table"] = "rt-hub"


def next_hop_ip_unheld(d: dict[str, Any]) -> None:
    d["route_tables"][0]["routes"][0]["next_hop_ip"] = "10.0.1.5"


def db_denies_inbound(d: dict[str, Any]) -> None:
    d["nsgs"].append({"name": "nsg-db", "resource_group": "rg-spoke2", "rules": [
        {"name": "deny-pg", "priority": 100, "direction": "Inbound", "access": "Deny",
         "protocol": "Tcp", "source": "*", "source_ports": "*", "destination": "*",
         "destination_ports": "5432"}]})
    d["vnets"][2]["subnets"][0]["nsg"] = "nsg-db"


# (why, mutation, delivered, hops, dropped_at, drop_kind, reason)
DELIVERY_CASES: list[tuple[str, Mutation | None, bool, tuple[str, ...], str | None, str | None,
                           str | None]] = [
    ("spoke to spoke through a forwarding hub NVA", None, True,
     ("app-vm-01", "nva-01", "db-vm-01"), None, None, None),
    ("a deallocated NVA drops everything", set_vm("nva-01", power_state="deallocated"), False,
     ("app-vm-01",), "nva-01", "vm_down",
     "vm deallocated: nva-01 (next hop 10.0.1.4, rt-spoke1/to-spoke2)"),
    ("without IP forwarding the NVA's guest never sees the packet",
     set_vm("nva-01", ip_forwarding=False), False, ("app-vm-01",), "nva-01", "no_forwarding",
     "IP forwarding disabled on nva-01VMNic (next hop 10.0.1.4, rt-spoke1/to-spoke2)"),
    ("a next hop IP no VM holds drops", next_hop_ip_unheld, False, ("app-vm-01",), "app-vm-01",
     "no_host", "next hop 10.0.1.5 (rt-spoke1/to-spoke2): no VM holds that address"),
    ("the NVA's subnet NSG meets the forwarded packet with its original addresses",
     deny_on_nva_subnet, False, ("app-vm-01",), "nva-01", "nsg",
     "nsg-nva/securityRules/deny-spoke1"),
    ("the receiving spoke's peering must allow forwarded traffic (the hub's does not matter)",
     no_forwarded_on_spoke2, False, ("app-vm-01", "nva-01"), None, "peering",
     "peering vnet-spoke2/spoke2-to-hub does not allow forwarded traffic (source 10.1.1.4 is "
     "outside vnet-hub)"),
    ("peering is not transitive: spoke to spoke without a UDR hits 10.0.0.0/8 -> None",
     no_udr_on_spoke1, False, ("app-vm-01",), "app-vm-01", "route_none",
     "route None (system route 10.0.0.0/8)"),
    ("a route leading back to the NVA is a loop", nva_routes_back_to_itself, False,
     ("app-vm-01", "nva-01"), "nva-01", "loop",
     "routing loop: rt-hub/loop leads back to nva-01"),
    ("the destination's inbound NSG drops after the NVA", db_denies_inbound, False,
     ("app-vm-01", "nva-01"), "db-vm-01", "nsg", "nsg-db/securityRules/deny-pg"),
    ("a stopped destination drops what reaches it", set_vm("db-vm-01", power_state="stopped"),
     False, ("app-vm-01", "nva-01"), "db-vm-01", "vm_down", "vm stopped: db-vm-01"),
    ("a stopped source sends nothing", set_vm("app-vm-01", power_state="stopped"), False, (),
     "app-vm-01", "vm_down", "vm stopped: app-vm-01"),
]


@pytest.mark.parametrize(("why", "mutate", "delivered", "hops", "at", "kind", "reason"),
                         DELIVERY_CASES, ids=[c[0] for c in DELIVERY_CASES])
def test_delivery(why: str, mutate: Mutation | None, delivered: bool, hops: tuple[str, ...],
                  at: str | None, kind: str | None, reason: str | None) -> None:
    d = hub(mutate).deliver("app-vm-01", DB, "tcp", 5432)
    assert (d.delivered, d.hops, d.dropped_at, d.drop_kind, d.reason) == (
        delivered, hops, at, kind, reason), why


@pytest.mark.parametrize(("why", "mutate", "port", "outcome"), [
    ("a listening port connects", None, 5432, "connected"),
    ("a port without a listener answers RST", None, 5433, "refused"),
    ("no_listener closes a port listed in listens",
     lambda d: d.__setitem__("faults", [{"kind": "no_listener", "vm": "db-vm-01",
                                         "port": 5432}]), 5432, "refused"),
    ("a deny drops silently: timeout, never RST", db_denies_inbound, 5432, "timeout"),
    ("a stopped VM answers nothing", set_vm("db-vm-01", power_state="deallocated"), 5432,
     "timeout"),
    ("100% loss on the NVA", lambda d: d.__setitem__(
        "faults", [{"kind": "loss", "at": "nva-01", "percent": 100}]), 5432, "timeout"),
])
def test_connection_outcomes(why: str, mutate: Mutation | None, port: int,
                             outcome: str) -> None:
    assert hub(mutate).connect("app-vm-01", DB, port).outcome == outcome, why


def test_nsgs_are_stateful() -> None:
    def db_denies_all_outbound(d: dict[str, Any]) -> None:
        d["nsgs"].append({"name": "nsg-db", "resource_group": "rg-spoke2", "rules": [
            {"name": "deny-out", "priority": 100, "direction": "Outbound", "access": "Deny",
             "protocol": "*", "source": "*", "source_ports": "*", "destination": "*",
             "destination_ports": "*"}]})
        d["vnets"][2]["subnets"][0]["nsg"] = "nsg-db"

    est = hub(db_denies_all_outbound)
    c = est.connect("app-vm-01", DB, 5432)
    assert c.outcome == "connected"
    assert c.reverse is not None and c.reverse.hops == ("db-vm-01", "nva-01", "app-vm-01")
    # but a flow the DB starts itself is denied
    assert est.deliver("db-vm-01", "10.1.1.4", "tcp", 443).drop_kind == "nsg"


def test_same_subnet_traffic_meets_nsgs() -> None:
    d = base_scenario()
    d["vms"].append({**d["vms"][0], "name": "web-vm-02", "ip": "10.1.1.5"})
    d["nsgs"][0]["rules"] = [{"name": "deny-intra", "priority": 100, "direction": "Inbound",
                              "access": "Deny", "protocol": "Tcp", "source": "10.1.1.0/24",
                              "source_ports": "*", "destination": "*",
                              "destination_ports": "80"}]
    c = Estate(parse_scenario(d, "t.yaml")).connect("web-vm-01", "10.1.1.5", 80)
    assert (c.outcome, c.forward.reason) == ("timeout", "nsg-web/securityRules/deny-intra")


def test_asymmetric_route_through_a_stateful_nva_times_out() -> None:
    def second_nva_for_the_reply(d: dict[str, Any]) -> None:
        d["vms"].append({**vm(d, "nva-01"), "name": "nva-02", "ip": "10.0.1.5"})
        d["route_tables"][1]["routes"][0]["next_hop_ip"] = "10.0.1.5"

    c = hub(second_nva_for_the_reply).connect("app-vm-01", DB, 5432)
    assert (c.outcome, c.asymmetric_at) == ("timeout", "nva-01")
    assert c.forward.hops == ("app-vm-01", "nva-01", "db-vm-01")
    assert c.reverse is not None and c.reverse.hops == ("db-vm-01", "nva-02", "app-vm-01")


def test_faults_on_the_path_are_collected_and_latency_adds_to_rtt() -> None:
    def faults(d: dict[str, Any]) -> None:
        d["faults"] = [{"kind": "latency", "at": "nva-01", "ms": 20},
                       {"kind": "loss", "at": "nva-01", "percent": 5},
                       {"kind": "reset", "at": "dns-vm-01", "after_bytes": 100}]

    est = hub(faults)
    c = est.connect("app-vm-01", DB, 5432)
    assert c.outcome == "connected"
    assert [f.kind for f in c.faults] == ["latency", "loss"]  # the reset is off the path
    assert c.rtt_ms == pytest.approx(2.0 + 2 * 20)
    assert hub().connect("app-vm-01", DB, 5432).rtt_ms == pytest.approx(2.0)


def test_ping() -> None:
    est = hub()
    assert est.ping("app-vm-01", DB).outcome == "connected"
    assert hub(set_vm("db-vm-01", power_state="stopped")).ping("app-vm-01", DB).outcome == (
        "timeout")


def test_platform_dns_is_exempt_from_nsgs() -> None:
    d = base_scenario()
    d["nsgs"][0]["rules"] = [{"name": "deny-all-out", "priority": 100, "direction": "Outbound",
                              "access": "Deny", "protocol": "*", "source": "*",
                              "source_ports": "*", "destination": "*",
                              "destination_ports": "*"}]
    est = Estate(parse_scenario(d, "t.yaml"))
    assert est.deliver("web-vm-01", "168.63.129.16", "udp", 53).delivered
    assert est.connect("web-vm-01", "168.63.129.16", 53, "udp").outcome == "connected"
    assert est.deliver("web-vm-01", "168.63.129.16", "tcp", 80).drop_kind == "nsg"


def test_public_endpoints_answer_nothing() -> None:
    d = base_scenario()
    d["traffic"].append({"from": "web-vm-01", "to": "20.50.1.10", "port": 443, "rate": 1})
    c = Estate(parse_scenario(d, "t.yaml")).connect("web-vm-01", "20.50.1.10", 443)
    assert (c.outcome, c.forward.drop_kind) == ("timeout", "no_host")


def test_the_engineers_machine_is_outside_every_vnet() -> None:
    d = base_scenario()
    d["public_dns"] = {"redis.example.com": "20.50.1.10"}
    est = Estate(parse_scenario(d, "t.yaml"))
    for address in ("10.1.2.4", "20.50.1.10", "10.1.7.7"):
        c = est.connect(None, address, 6379)
        assert (c.outcome, c.forward.drop_kind) == ("timeout", "outside"), address
    assert est.ping(None, "10.1.2.4").outcome == "timeout"
    with pytest.raises(NotModelled):
        est.connect(None, "8.8.8.8", 443)
