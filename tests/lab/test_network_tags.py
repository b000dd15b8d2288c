"""The fixed Internet set, prefix and port syntax as NSGs read them."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

import pytest

from lab.network import Estate, NotModelled
from lab.network.tags import internet_prefixes, is_internet, parse_ports, prefix_problem
from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario


@pytest.mark.parametrize(("address", "internet", "why"), [
    ("8.8.8.8", True, "a public address"),
    ("203.0.113.5", True, "TEST-NET-3 counts as Internet here although Python calls it private"),
    ("198.51.100.7", True, "TEST-NET-2 likewise"),
    ("192.0.2.1", True, "TEST-NET-1 likewise"),
    ("10.20.30.40", False, "10.0.0.0/8"),
    ("172.31.255.255", False, "172.16.0.0/12"),
    ("172.32.0.1", True, "just outside 172.16.0.0/12"),
    ("192.168.1.1", False, "192.168.0.0/16"),
    ("100.64.0.1", False, "100.64.0.0/10"),
    ("100.128.0.1", True, "just outside 100.64.0.0/10"),
    ("127.0.0.1", False, "loopback"),
    ("169.254.169.254", False, "link-local (IMDS)"),
    ("224.0.0.5", False, "multicast and above: 224.0.0.0/3"),
    ("0.1.2.3", False, "0.0.0.0/8"),
    ("168.63.129.16", False, "the Azure platform address"),
    ("168.63.129.17", True, "its neighbour is public"),
])
def test_internet_is_a_fixed_set(address: str, internet: bool, why: str) -> None:
    ip = IPv4Address(address)
    assert is_internet(ip) is internet, why
    assert any(ip in n for n in internet_prefixes()) is internet, why


def test_internet_prefixes_are_disjoint_cidrs() -> None:
    nets = internet_prefixes()
    assert all(isinstance(n, IPv4Network) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


@pytest.mark.parametrize(("text", "ranges"), [
    ("*", [(0, 65535)]),
    ("6379", [(6379, 6379)]),
    ("1000-2000", [(1000, 2000)]),
    ("80, 443,8000-8080", [(80, 80), (443, 443), (8000, 8080)]),
    ("0-65535", [(0, 65535)]),
    ("65536", None),
    ("2000-1000", None),
    ("80;443", None),
    ("", None),
    ("http", None),
])
def test_port_syntax(text: str, ranges: list[tuple[int, int]] | None) -> None:
    assert parse_ports(text) == ranges


@pytest.mark.parametrize(("text", "ok"), [
    ("*", True), ("VirtualNetwork", True), ("Internet", True), ("AzureLoadBalancer", True),
    ("10.1.1.4", True), ("10.1.1.0/24", True), ("10.1.1.1/24", False), ("Storage", False),
    ("10.1.1.0/33", False), ("::1", False), ("virtualnetwork", False),
])
def test_prefix_syntax(text: str, ok: bool) -> None:
    assert (prefix_problem(text) is None) is ok


def test_scenario_addresses_versus_unmodelled_ones() -> None:
    d = base_scenario()
    d["public_dns"] = {"redis.example.com": "20.50.1.10"}
    est = Estate(parse_scenario(d, "t.yaml"))
    for address in ("10.1.2.4", "10.1.99.99", "20.50.1.10", "168.63.129.16"):
        assert est.is_scenario_address(address), address
    assert not est.is_scenario_address("8.8.8.8")
    with pytest.raises(NotModelled):
        est.deliver(None, "not-an-ip", "tcp", 80)
