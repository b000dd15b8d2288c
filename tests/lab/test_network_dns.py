"""Name resolution: Azure-provided DNS, private zones by link, custom DNS servers, public DNS."""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Any

import pytest

from lab.network import Estate
from lab.scenario import parse_scenario
from tests.lab.conftest import hub_spoke_scenario

PUBLIC = "20.50.1.10"
PRIVATE = "10.0.3.4"


def dns_estate(linked: list[str], mutate: Any = None) -> Estate:
    """Hub/spokes with zone privatelink.redis.cache.windows.net (redis-prod -> 10.0.3.4)
    linked to ``linked``, and the public name redis-prod.redis.cache.windows.net."""
    d = hub_spoke_scenario()
    d["private_dns_zones"] = [
        {"name": "privatelink.redis.cache.windows.net", "resource_group": "rg-hub",
         "linked_vnets": linked, "records": {"redis-prod": PRIVATE}},
        {"name": "corp.internal", "resource_group": "rg-hub", "linked_vnets": ["vnet-spoke1"],
         "records": {"api": "10.2.1.4", "@": "10.2.1.5"}},
        {"name": "db.corp.internal", "resource_group": "rg-hub",
         "linked_vnets": ["vnet-spoke1"], "records": {"main": "10.2.1.6"}},
    ]
    d["public_dns"] = {"redis-prod.redis.cache.windows.net": PUBLIC,
                       "www.contoso.com": "20.50.1.11", "api.corp.internal": "20.50.1.12"}
    if mutate is not None:
        mutate(d)
    return Estate(parse_scenario(d, "t.yaml"))


def answer(est: Estate, name: str, vm: str | None) -> tuple[str, tuple[str, ...]]:
    a = est.resolve(name, vm)
    return a.rcode, tuple(str(x) for x in a.addresses)


# (why, zone linked to, asking VM, name, rcode, addresses)
CASES: list[tuple[str, list[str], str | None, str, str, tuple[str, ...]]] = [
    ("linked: the public name follows the privatelink alias to the private record",
     ["vnet-spoke1"], "app-vm-01", "redis-prod.redis.cache.windows.net", "NOERROR", (PRIVATE,)),
    ("link missing: the same name gives the public address",
     ["vnet-hub"], "app-vm-01", "redis-prod.redis.cache.windows.net", "NOERROR", (PUBLIC,)),
    ("the privatelink name itself from a linked VNet",
     ["vnet-spoke1"], "app-vm-01", "redis-prod.privatelink.redis.cache.windows.net", "NOERROR",
     (PRIVATE,)),
    ("the engineer's machine sees public DNS only",
     ["vnet-spoke1"], None, "redis-prod.redis.cache.windows.net", "NOERROR", (PUBLIC,)),
    ("a name inside a linked zone without a record: NXDOMAIN, no public fallback",
     [], "app-vm-01", "www.corp.internal", "NXDOMAIN", ()),
    ("…even when public DNS has that name",
     [], "app-vm-01", "api.corp.internal", "NOERROR", ("10.2.1.4",)),
    ("a VNet without the link gets the public answer for it",
     [], "db-vm-01", "api.corp.internal", "NOERROR", ("20.50.1.12",)),
    ("the longest zone suffix wins", [], "app-vm-01", "main.db.corp.internal", "NOERROR",
     ("10.2.1.6",)),
    ("the zone apex record '@'", [], "app-vm-01", "corp.internal", "NOERROR", ("10.2.1.5",)),
    ("other names go to public DNS", [], "app-vm-01", "www.contoso.com.", "NOERROR",
     ("20.50.1.11",)),
    ("unknown public names are NXDOMAIN", [], "app-vm-01", "nope.contoso.com", "NXDOMAIN", ()),
    ("bare VM names resolve in the same VNet", [], "nva-01", "dns-vm-01", "NOERROR",
     ("10.0.3.4",)),
    ("bare VM names do not resolve across peerings", [], "app-vm-01", "dns-vm-01", "NXDOMAIN",
     ()),
    ("bare VM names are not public", [], None, "dns-vm-01", "NXDOMAIN", ()),
]


@pytest.mark.parametrize(("why", "linked", "vm", "name", "rcode", "addresses"), CASES,
                         ids=[c[0] for c in CASES])
def test_resolution(why: str, linked: list[str], vm: str | None, name: str, rcode: str,
                    addresses: tuple[str, ...]) -> None:
    assert answer(dns_estate(linked), name, vm) == (rcode, addresses), why


def test_servers_named_in_answers() -> None:
    est = dns_estate(["vnet-spoke1"])
    linked = est.resolve("redis-prod.redis.cache.windows.net", "app-vm-01")
    assert (linked.server, linked.cname, linked.zone) == (
        "168.63.129.16", "redis-prod.privatelink.redis.cache.windows.net",
        "privatelink.redis.cache.windows.net")
    assert est.resolve("www.contoso.com", None).server == "127.0.0.53"
    aaaa = est.resolve("www.contoso.com", "app-vm-01", qtype="AAAA")
    assert (aaaa.rcode, aaaa.addresses) == ("NOERROR", ())


def _custom_dns(d: dict[str, Any]) -> None:
    d["vnets"][1]["dns_servers"] = ["10.0.3.4"]  # spoke1 uses dns-vm-01 in the hub


def _deny_dns_inbound(d: dict[str, Any]) -> None:
    _custom_dns(d)
    d["vnets"][0]["subnets"][1]["nsg"] = "nsg-nva"
    d["nsgs"][0]["rules"] = [{"name": "deny-dns", "priority": 100, "direction": "Inbound",
                              "access": "Deny", "protocol": "Udp", "source": "*",
                              "source_ports": "*", "destination": "*",
                              "destination_ports": "53"}]


def _server_field(field: str, value: Any) -> Any:
    def mutate(d: dict[str, Any]) -> None:
        _custom_dns(d)
        d["vms"][1][field] = value

    return mutate


def _no_listener(d: dict[str, Any]) -> None:
    _custom_dns(d)
    d["faults"] = [{"kind": "no_listener", "vm": "dns-vm-01", "port": 53}]


@pytest.mark.parametrize(("why", "mutate", "rcode", "addresses"), [
    ("a running, listening, reachable server answers as Azure DNS in its own VNet (the hub "
     "is linked)", _custom_dns, "NOERROR", (PRIVATE,)),
    ("a stopped server: timeout", _server_field("power_state", "stopped"), "TIMEOUT", ()),
    ("a server without 53 in listens: timeout", _server_field("listens", []), "TIMEOUT", ()),
    ("an NSG blocking UDP 53 to the server: timeout", _deny_dns_inbound, "TIMEOUT", ()),
    ("a no_listener fault on 53: timeout", _no_listener, "TIMEOUT", ()),
])
def test_custom_dns_server(why: str, mutate: Any, rcode: str,
                           addresses: tuple[str, ...]) -> None:
    est = dns_estate(["vnet-hub"], mutate)
    a = est.resolve("redis-prod.redis.cache.windows.net", "app-vm-01")
    assert (a.rcode, tuple(str(x) for x in a.addresses)) == (rcode, addresses), why
    assert a.server == "10.0.3.4"


def test_custom_dns_server_that_no_vm_holds_times_out() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["vnets"][1]["dns_servers"] = ["10.0.3.99"]

    a = dns_estate([], mutate).resolve("www.contoso.com", "app-vm-01")
    assert (a.rcode, a.server) == ("TIMEOUT", "10.0.3.99")


def test_second_custom_server_is_tried_after_the_first_times_out() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["vnets"][1]["dns_servers"] = ["10.0.3.99", "10.0.3.4"]

    a = dns_estate([], mutate).resolve("www.contoso.com", "app-vm-01")
    assert (a.rcode, a.addresses, a.server) == ("NOERROR", (IPv4Address("20.50.1.11"),),
                                                "10.0.3.4")
