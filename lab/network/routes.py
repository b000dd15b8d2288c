"""Effective routes of a subnet: system routes, peerings, None routes, UDRs, longest prefix."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from lab.model import Route, Scenario, Subnet
from lab.network.results import EffectiveRoute, NextHop
from lab.network.tags import NONE_ROUTE_PREFIXES
from lab.network.topology import connected_peers, route_table_of

DEFAULT_ROUTE = IPv4Network("0.0.0.0/0")


@dataclass(frozen=True)
class RouteEntry:
    prefix: IPv4Network
    next_hop_type: str
    next_hop_ip: IPv4Address | None
    source: str  # Default | User
    active: bool
    name: str | None = None  # user route
    table: str | None = None  # user route's table

    def describe(self) -> str:
        """How a drop names this route: 'rt-data/blackhole' or 'system route 10.0.0.0/8'."""
        if self.source == "User":
            return f"{self.table}/{self.name}"
        return f"system route {self.prefix}"


def route_entries(s: Scenario, subnet: Subnet) -> list[RouteEntry]:
    """Every route of the subnet's table, defaults first, with Active/Invalid state."""
    vnet = s.vnet(subnet.vnet)
    system: list[tuple[IPv4Network, str]] = []
    if vnet is not None:
        system += [(p, "VnetLocal") for p in vnet.address_space]
        for peer in connected_peers(s, vnet.name):
            system += [(p, "VNetPeering") for p in peer.address_space]
    table = route_table_of(s, subnet)
    user_routes = table.routes if table is not None else ()
    user_prefixes = {r.prefix for r in user_routes}
    system.append((DEFAULT_ROUTE, "Internet"))
    if DEFAULT_ROUTE not in user_prefixes:  # a UDR for 0.0.0.0/0 removes the None routes
        covered = [p for p, _ in system if p != DEFAULT_ROUTE]
        for none in NONE_ROUTE_PREFIXES:
            if not any(p == none or p.supernet_of(none) for p in covered):
                system.append((none, "None"))
    entries = [RouteEntry(p, hop, None, "Default", p not in user_prefixes) for p, hop in system]
    entries += _endpoint_routes(s, subnet, user_routes)
    if table is not None:
        entries += [RouteEntry(r.prefix, r.next_hop, r.next_hop_ip, "User", True, r.name,
                               table.name) for r in user_routes]
    return entries


def _endpoint_routes(s: Scenario, subnet: Subnet,
                    user_routes: tuple[Route, ...]) -> list[RouteEntry]:
    """Format 2: each private endpoint's ``/32``, next hop InterfaceEndpoint, in every subnet
    of its VNet and of VNets peered with it (Connected both sides). With RouteTableEnabled or
    Enabled on the endpoint's subnet, a user route that contains the address with a prefix at
    least as long as the VNet's makes it Invalid (0.0.0.0/0 never does)."""
    if s.format < 2 or not s.private_endpoints:
        return []
    seen = {subnet.vnet, *(v.name for v in connected_peers(s, subnet.vnet))}
    out = []
    for pe in s.private_endpoints:
        if pe.vnet not in seen:
            continue
        vnet = s.vnet(pe.vnet)
        pe_subnet = s.subnet(pe.vnet, pe.subnet)
        policy = pe_subnet.private_endpoint_network_policies if pe_subnet else "Disabled"
        space = [p for p in (vnet.address_space if vnet else ()) if pe.ip in p]
        shortest = min((p.prefixlen for p in space), default=32)
        overridden = policy in ("RouteTableEnabled", "Enabled") and any(
            pe.ip in r.prefix and r.prefix.prefixlen >= shortest and r.prefix != DEFAULT_ROUTE
            for r in user_routes)
        out.append(RouteEntry(IPv4Network(f"{pe.ip}/32"), "InterfaceEndpoint", None, "Default",
                              not overridden))
    return out


def lookup(s: Scenario, subnet: Subnet, dst: IPv4Address) -> RouteEntry | None:
    """The winning route for ``dst``: the longest active prefix (user routes win ties)."""
    best: RouteEntry | None = None
    for e in route_entries(s, subnet):
        if not e.active or dst not in e.prefix:
            continue
        if best is None or e.prefix.prefixlen > best.prefix.prefixlen or (
            e.prefix.prefixlen == best.prefix.prefixlen and e.source == "User"
        ):
            best = e
    return best


def effective_routes(s: Scenario, subnet: Subnet) -> list[EffectiveRoute]:
    return [
        EffectiveRoute(
            source=e.source,
            state="Active" if e.active else "Invalid",
            prefixes=(str(e.prefix),),
            next_hop_type=e.next_hop_type,
            next_hop_ips=(str(e.next_hop_ip),) if e.next_hop_ip else (),
            name=e.name,
            route_table=e.table,
        )
        for e in route_entries(s, subnet)
    ]


def next_hop(s: Scenario, subnet: Subnet, dst: IPv4Address) -> NextHop:
    """show-next-hop: the winning route only; it does not look at the appliance itself."""
    e = lookup(s, subnet, dst)
    if e is None:  # pragma: no cover - 0.0.0.0/0 is always present, Active or overridden
        return NextHop("None", None, "System Route")
    table_id = s.route_table_id(e.table) if e.source == "User" and e.table else "System Route"
    hop = "VnetLocal" if e.next_hop_type == "InterfaceEndpoint" else e.next_hop_type  # (lab)
    return NextHop(hop, str(e.next_hop_ip) if e.next_hop_ip else None, table_id)
