"""Azure Firewall's rule processing: network rules, then application rules, then deny.

Each new flow meets the network collections first; if none matched and the flow is
Http/Https/Mssql on a port an application rule lists, the application collections; nothing
matched means denied (deny by default). Rules are terminating. Classic rules: collections by
priority within each type. A policy: for each type in turn, groups by priority, collections by
priority within a group (*Azure Firewall rule processing logic*). An application rule matches
the source, the protocol's port and the name the client asked for (``*.contoso.com`` does not
match ``contoso.com``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address

from lab.model_v2 import Firewall, FwAppRule, FwCollection, FwNetworkRule
from lab.network.tags import parse_prefix, port_matches

#: ports on which the firewall's transparent proxy completes the TCP handshake itself
PROXY_PORTS = (80, 443)
#: private ranges the firewall does not SNAT for network rules (IANA private, RFC 6598)
NO_SNAT = tuple(p for p in (parse_prefix("10.0.0.0/8"), parse_prefix("172.16.0.0/12"),
                            parse_prefix("192.168.0.0/16"), parse_prefix("100.64.0.0/10"))
                if p is not None)


@dataclass(frozen=True)
class FirewallVerdict:
    allowed: bool
    kind: str  # Network | Application | Default
    collection: str | None  # the collection that decided (None: no rule matched)
    rule: str | None
    group: str | None = None

    @property
    def describe(self) -> str:
        if self.collection is None:
            return "no rule matched (default deny)"
        where = f"{self.group}/" if self.group else ""
        return f"{self.kind.lower()} rule {where}{self.collection}/{self.rule}"


def ordered(fw: Firewall, kind: str) -> Iterator[tuple[str | None, FwCollection]]:
    """(group, collection) of one type, in processing order."""
    if fw.policy is not None:
        for group in sorted(fw.policy.groups, key=lambda g: g.priority):
            for c in sorted(group.collections, key=lambda c: c.priority):
                if c.type == kind:
                    yield group.name, c
    else:
        for c in sorted(fw.collections, key=lambda c: c.priority):
            if c.type == kind:
                yield None, c


def _address_matches(patterns: tuple[str, ...], ip: IPv4Address) -> bool:
    for p in patterns:
        if p == "*":
            return True
        net = parse_prefix(p)
        if net is not None and ip in net:
            return True
    return False


def _network_match(rule: FwNetworkRule, protocol: str, src: IPv4Address, dst: IPv4Address,
                   port: int | None) -> bool:
    protos = {p.upper() for p in rule.protocols}
    if "ANY" not in protos and protocol.upper() not in protos:
        return False
    if not (_address_matches(rule.sources, src) and _address_matches(rule.destinations, dst)):
        return False
    return protocol == "icmp" or port_matches(rule.ports, port)


def fqdn_matches(pattern: str, name: str | None) -> bool:
    if not name:
        return False
    pattern, name = pattern.lower(), name.lower().rstrip(".")
    if pattern.startswith("*."):
        return name.endswith(pattern[1:])  # *.contoso.com does not match contoso.com
    return name == pattern


def _app_match(rule: FwAppRule, src: IPv4Address, port: int | None, fqdn: str | None) -> bool:
    if port is None or not any(p == port for _, p in rule.protocols):
        return False
    return _address_matches(rule.sources, src) and any(fqdn_matches(f, fqdn)
                                                       for f in rule.fqdns)


def app_ports(fw: Firewall) -> set[int]:
    """Ports some application rule lists (Http/Https/Mssql)."""
    return {p for _, c in ordered(fw, "Application") for r in c.rules
            if isinstance(r, FwAppRule) for _, p in r.protocols}


def evaluate(fw: Firewall, protocol: str, src: IPv4Address, dst: IPv4Address,
             port: int | None, fqdn: str | None) -> FirewallVerdict:
    """The firewall's decision on a new flow."""
    for group, c in ordered(fw, "Network"):
        for r in c.rules:
            if isinstance(r, FwNetworkRule) and _network_match(r, protocol, src, dst, port):
                return FirewallVerdict(c.action == "Allow", "Network", c.name, r.name, group)
    if protocol == "tcp" and port in app_ports(fw):
        for group, c in ordered(fw, "Application"):
            for r in c.rules:
                if isinstance(r, FwAppRule) and _app_match(r, src, port, fqdn):
                    return FirewallVerdict(c.action == "Allow", "Application", c.name, r.name,
                                           group)
    return FirewallVerdict(False, "Default", None, None)


def proxied(verdict: FirewallVerdict, protocol: str, port: int | None) -> bool:
    """The transparent proxy answers the handshake: a TCP flow to 80/443 that no network rule
    decided (application processing, or the default deny after it)."""
    return protocol == "tcp" and port in PROXY_PORTS and verdict.kind != "Network"


def snat_needed(verdict: FirewallVerdict, dst: IPv4Address) -> bool:
    """Network-rule flows are SNATed only to public destinations; application-rule flows
    always (they are proxied)."""
    if verdict.kind == "Application":
        return True
    return not any(dst in net for net in NO_SNAT)
