"""Who is peered with whom, and the service tags as a NIC sees them."""

from __future__ import annotations

from ipaddress import IPv4Network

from lab.model import Peering, RouteTable, Scenario, Subnet, Vm, VNet
from lab.network.tags import AZURE_PLATFORM_IP, internet_prefixes


def peering(s: Scenario, vnet: str, remote: str) -> Peering | None:
    """``vnet``'s peering towards ``remote`` (at most one, validation ensures it)."""
    net = s.vnet(vnet)
    return next((p for p in net.peerings if p.remote_vnet == remote), None) if net else None


def peered_connected(s: Scenario, a: str, b: str) -> bool:
    """True when both sides show Connected: the only state in which traffic flows."""
    ab, ba = peering(s, a, b), peering(s, b, a)
    return bool(ab and ba and ab.state == "Connected" and ba.state == "Connected")


def connected_peers(s: Scenario, vnet: str) -> list[VNet]:
    net = s.vnet(vnet)
    if net is None:
        return []
    out = []
    for p in net.peerings:
        remote = s.vnet(p.remote_vnet)
        if remote is not None and peered_connected(s, vnet, remote.name):
            out.append(remote)
    return out


def subnet_of(s: Scenario, vm: Vm) -> Subnet:
    sub = s.subnet(vm.vnet, vm.subnet)
    if sub is None:  # validation guarantees it; a hand-built Scenario may not
        raise KeyError(f"VM {vm.name}: no subnet {vm.vnet}/{vm.subnet}")
    return sub


def route_table_of(s: Scenario, subnet: Subnet) -> RouteTable | None:
    return s.route_table(subnet.route_table) if subnet.route_table else None


def virtual_network_tag(s: Scenario, vm: Vm) -> tuple[IPv4Network, ...]:
    """VirtualNetwork for this NIC: own and Connected-peered spaces, 168.63.129.16, UDR prefixes."""
    nets: list[IPv4Network] = []
    own = s.vnet(vm.vnet)
    if own is not None:
        nets.extend(own.address_space)
    for peer in connected_peers(s, vm.vnet):
        nets.extend(peer.address_space)
    nets.append(IPv4Network(f"{AZURE_PLATFORM_IP}/32"))
    table = route_table_of(s, subnet_of(s, vm))
    if table is not None:
        nets.extend(r.prefix for r in table.routes)
    seen: list[IPv4Network] = []
    for n in nets:
        if n not in seen:
            seen.append(n)
    return tuple(seen)


def tag_prefixes(s: Scenario, vm: Vm, text: str) -> tuple[IPv4Network, ...]:
    """A source/destination of a rule as the CIDRs it stands for, evaluated for ``vm``'s NIC."""
    if text == "*":
        return (IPv4Network("0.0.0.0/0"),)
    if text == "VirtualNetwork":
        return virtual_network_tag(s, vm)
    if text == "Internet":
        return internet_prefixes()
    if text == "AzureLoadBalancer":
        return (IPv4Network(f"{AZURE_PLATFORM_IP}/32"),)
    return (IPv4Network(text),)
