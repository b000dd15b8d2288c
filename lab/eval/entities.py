"""The things a scenario names (VMs, NSGs and rules, routes, VNets, subnets, peerings, zones,
addresses), so the scorer can tell whether a cited record and a claim talk about the same thing.

A mention is an exact name or address, case-insensitive, not part of a longer name
(``web-vm-01`` is not in ``web-vm-010``, ``10.1.2.4`` not in ``10.1.2.40``). Names imply
what contains them: a rule implies its NSG, a route its route table, an address the VM that
holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lab.eval.entities_v2 import add_format2

if TYPE_CHECKING:
    from lab.scenario import Scenario

#: names shorter than this are too likely to be ordinary words
MIN_ALIAS = 4


@dataclass(frozen=True)
class Vocabulary:
    """alias (lower case) -> the entity keys a mention of it implies."""

    aliases: dict[str, frozenset[str]]
    pattern: re.Pattern[str] | None
    #: entity -> what contains it (a VM's subnet and VNet, a subnet's VNet)
    containers: dict[str, frozenset[str]] = field(default_factory=dict)

    def mentions(self, text: str, *, containers: bool = False) -> frozenset[str]:
        """Every entity the text names; with ``containers``, also what holds them (a record
        about app-vm-01 is about its VNet too, for a claim that names only the VNet)."""
        if self.pattern is None or not text:
            return frozenset()
        found: set[str] = set()
        for match in self.pattern.finditer(text.lower()):
            found |= self.aliases[match.group(1)]
        if containers:
            for key in list(found):
                found |= self.containers.get(key, frozenset())
        return frozenset(found)


def _add(table: dict[str, set[str]], alias: object, *keys: str) -> None:
    text = str(alias).strip().lower()
    if len(text) >= MIN_ALIAS:
        table.setdefault(text, set()).update(keys)


def vocabulary(scenario: Scenario) -> Vocabulary:
    """The scenario's names and addresses, each with what a mention of it implies."""
    table: dict[str, set[str]] = {}
    holders = {str(vm.ip): f"vm:{vm.name}" for vm in scenario.vms}

    def address(ip: object) -> str:
        return holders.get(str(ip), f"ip:{ip}")

    within: dict[str, frozenset[str]] = {}
    for vm in scenario.vms:
        key = f"vm:{vm.name}"
        for alias in (vm.name, vm.ip, f"{vm.name}VMNic"):
            _add(table, alias, key)
        within[key] = frozenset({f"subnet:{vm.vnet}/{vm.subnet}", f"vnet:{vm.vnet}"})
    for nsg in scenario.nsgs:
        _add(table, nsg.name, f"nsg:{nsg.name}")
        for rule in nsg.rules:
            _add(table, rule.name, f"rule:{nsg.name}/{rule.name}", f"nsg:{nsg.name}")
    for rt in scenario.route_tables:
        _add(table, rt.name, f"rt:{rt.name}")
        for route in rt.routes:
            _add(table, route.name, f"route:{rt.name}/{route.name}", f"rt:{rt.name}")
            if route.next_hop_ip is not None:
                _add(table, route.next_hop_ip, address(route.next_hop_ip))
    for vnet in scenario.vnets:
        _add(table, vnet.name, f"vnet:{vnet.name}")
        for space in vnet.address_space:
            _add(table, space, f"vnet:{vnet.name}")
        for server in vnet.dns_servers:
            _add(table, server, address(server))
        for subnet in vnet.subnets:
            _add(table, subnet.name, f"subnet:{vnet.name}/{subnet.name}")
            _add(table, subnet.prefix, f"subnet:{vnet.name}/{subnet.name}")
            within[f"subnet:{vnet.name}/{subnet.name}"] = frozenset({f"vnet:{vnet.name}"})
        for peering in vnet.peerings:
            _add(table, peering.name, f"peering:{vnet.name}/{peering.name}")
    for zone in scenario.private_dns_zones:
        _add(table, zone.name, f"zone:{zone.name}")
        for record, ip in zone.records.items():
            _add(table, f"{record}.{zone.name}", f"zone:{zone.name}", address(ip))
            _add(table, ip, address(ip))
    for name, ip in scenario.public_dns.items():
        _add(table, name, f"dns:{name}")
        _add(table, ip, address(ip))
    for flow in scenario.traffic:
        _add(table, flow.to, address(flow.to) if flow.to[:1].isdigit() else f"vm:{flow.to}")
    add_format2(_add, table, scenario)
    aliases = {alias: frozenset(keys) for alias, keys in table.items()}
    return Vocabulary(aliases, _pattern(aliases), within)


def _pattern(aliases: Iterable[str]) -> re.Pattern[str] | None:
    ordered = sorted(aliases, key=len, reverse=True)  # the longest name wins at one place
    if not ordered:
        return None
    body = "|".join(re.escape(a) for a in ordered)
    # not inside a longer name or address (``_`` joins words in file names, so a capture
    # file ghost_api-vm-01_….pcap names api-vm-01); a sentence's final dot is fine
    return re.compile(rf"(?<![A-Za-z0-9.-])({body})(?![A-Za-z0-9-]|\.[A-Za-z0-9])")
