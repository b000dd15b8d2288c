"""Where a packet goes: routes hop by hop, NVAs, peerings, NSGs, power states, listeners.

A packet leaves its VM through the NIC then subnet NSG, is routed by its subnet's effective
routes, may be handed to an NVA (which must be running and forwarding, meets its own NSGs and
re-routes by its own subnet's routes) and arrives through the subnet then NIC NSG of the VM
holding the destination. Return traffic of an allowed flow passes the NSGs it met (stateful);
a forwarding NVA that sees only one direction of a flow drops it (*(lab)*: NVAs are stateful
firewalls, which is why asymmetric routing breaks flows in Azure).
"""

from __future__ import annotations

from ipaddress import IPv4Address

from lab.model import Fault, Scenario, Vm
from lab.network.nsg import Packet, first_deny
from lab.network.results import Connection, Delivery
from lab.network.routes import lookup
from lab.network.tags import AZURE_PLATFORM_IP
from lab.network.topology import peered_connected, peering, subnet_of

MAX_HOPS = 16
BASE_MS_PER_LINK = 0.5
PATH_FAULTS = ("loss", "reset", "mtu", "latency")


def _drop(hops: list[str], at: str | None, reason: str, kind: str) -> Delivery:
    return Delivery(False, tuple(hops), at, reason, kind)


def _nsg_drop(s: Scenario, vm: Vm, direction: str, pkt: Packet, hops: list[str],
              stateful: frozenset[str]) -> Delivery | None:
    if vm.name in stateful:
        return None
    deny = first_deny(s, vm, direction, pkt)
    if deny is None:
        return None
    return _drop(hops, vm.name, f"{deny.nsg.name}/{deny.rule_name}", "nsg")


def _down(vm: Vm) -> str:
    return f"vm {vm.power_state}: {vm.name}"


def _crossing_drop(s: Scenario, sender_vnet: str, receiver: Vm, pkt: Packet,
                   hops: list[str]) -> Delivery | None:
    """A packet crossing a peering whose source lies outside the sending VNet was forwarded
    by an NVA there; the receiving side's peering must allow forwarded traffic."""
    if receiver.vnet == sender_vnet:
        return None
    if not peered_connected(s, sender_vnet, receiver.vnet):
        return _drop(hops, None, f"{receiver.vnet} is not peered (Connected) with {sender_vnet}",
                     "peering")
    sender = s.vnet(sender_vnet)
    if sender is not None and sender.contains(pkt.src):
        return None
    back = peering(s, receiver.vnet, sender_vnet)
    if back is not None and back.allow_forwarded_traffic:
        return None
    name = back.name if back else "?"
    return _drop(hops, None, f"peering {receiver.vnet}/{name} does not allow forwarded traffic "
                 f"(source {pkt.src} is outside {sender_vnet})", "peering")


def _arrive(s: Scenario, target: Vm, sender_vnet: str, pkt: Packet, hops: list[str],
            stateful: frozenset[str]) -> Delivery:
    crossing = _crossing_drop(s, sender_vnet, target, pkt, hops)
    if crossing is not None:
        return crossing
    if target.power_state != "running":
        return _drop(hops, target.name, _down(target), "vm_down")
    denied = _nsg_drop(s, target, "Inbound", pkt, hops, stateful)
    if denied is not None:
        return denied
    return Delivery(True, (*hops, target.name), None, None, None)


def deliver(s: Scenario, src: Vm, dst: IPv4Address, protocol: str, dst_port: int | None,
            src_port: int | None, stateful: frozenset[str] = frozenset()) -> Delivery:
    """One packet from ``src`` to ``dst``; ``stateful`` names VMs whose NSGs already allowed
    this flow (the reply of an allowed connection)."""
    icmp = protocol == "icmp"
    pkt = Packet(protocol, src.ip, None if icmp else src_port, dst, None if icmp else dst_port)
    hops: list[str] = []
    if src.power_state != "running":
        return _drop(hops, src.name, _down(src), "vm_down")
    hops.append(src.name)
    if dst == src.ip:  # its own address: the guest's loopback, no NSG or route
        return Delivery(True, tuple(hops), None, None, None)
    dns_to_platform = dst == AZURE_PLATFORM_IP and dst_port == 53 and not icmp
    if not dns_to_platform:
        denied = _nsg_drop(s, src, "Outbound", pkt, hops, stateful)
        if denied is not None:
            return denied
    if dst == AZURE_PLATFORM_IP:
        return Delivery(True, tuple(hops), None, None, None)
    current, visited = src, {src.name}
    for _ in range(MAX_HOPS):
        route = lookup(s, subnet_of(s, current), dst)
        if route is None or route.next_hop_type == "None":
            where = route.describe() if route else "no route"
            return _drop(hops, current.name, f"route None ({where})", "route_none")
        if route.next_hop_type == "Internet":
            return _drop(hops, None, f"no host answers at {dst} (next hop Internet, "
                         f"{route.describe()})", "no_host")
        if route.next_hop_type in ("VnetLocal", "VNetPeering"):
            target = s.vm_by_ip(dst)
            local = route.next_hop_type == "VnetLocal"
            if target is None or (local and target.vnet != current.vnet) or (
                not local and target.vnet == current.vnet
            ):
                return _drop(hops, None, f"no host at {dst} ({route.describe()})", "no_host")
            return _arrive(s, target, current.vnet, pkt, hops, stateful)
        # VirtualAppliance
        hop_ip = route.next_hop_ip
        nva = s.vm_by_ip(hop_ip) if hop_ip is not None else None
        if nva is None:
            return _drop(hops, current.name, f"next hop {hop_ip} ({route.describe()}): no VM "
                         "holds that address", "no_host")
        if nva.vnet != current.vnet and not peered_connected(s, current.vnet, nva.vnet):
            return _drop(hops, current.name, f"next hop {hop_ip} ({route.describe()}) is "
                         f"neither in {current.vnet} nor in a peered VNet", "peering")
        if nva.ip == dst:
            return _arrive(s, nva, current.vnet, pkt, hops, stateful)
        if nva.name in visited:
            return _drop(hops, nva.name, f"routing loop: {route.describe()} leads back to "
                         f"{nva.name}", "loop")
        crossing = _crossing_drop(s, current.vnet, nva, pkt, hops)
        if crossing is not None:
            return crossing
        if nva.power_state != "running":
            return _drop(hops, nva.name, f"{_down(nva)} (next hop {hop_ip}, "
                         f"{route.describe()})", "vm_down")
        if not nva.ip_forwarding:
            return _drop(hops, nva.name, f"IP forwarding disabled on {s.nic_name(nva)} "
                         f"(next hop {hop_ip}, {route.describe()})", "no_forwarding")
        denied = _nsg_drop(s, nva, "Inbound", pkt, hops, stateful)
        if denied is not None:
            return denied
        hops.append(nva.name)
        denied = _nsg_drop(s, nva, "Outbound", pkt, hops, stateful)
        if denied is not None:
            return denied
        current = nva
        visited.add(nva.name)
    return _drop(hops, current.name, f"more than {MAX_HOPS} appliances on the path", "loop")


def _listening(s: Scenario, vm: Vm, port: int) -> bool:
    closed = any(f.kind == "no_listener" and f.port == port for f in s.faults_at(vm))
    return port in vm.listens and not closed


def path_faults(s: Scenario, *deliveries: Delivery | None) -> tuple[Fault, ...]:
    names: set[str] = set()
    for d in deliveries:
        if d is not None:
            names.update(d.hops)
    return tuple(f for f in s.faults if f.kind in PATH_FAULTS and f.at in names)


def _rtt(s: Scenario, fwd: Delivery, rev: Delivery) -> float:
    ms = BASE_MS_PER_LINK * (max(len(fwd.hops) - 1, 1) + max(len(rev.hops) - 1, 1))
    for f in s.faults:
        if f.kind == "latency" and f.ms:
            ms += f.ms * (fwd.hops.count(f.at) + rev.hops.count(f.at))
    return round(ms, 3)


def connect(s: Scenario, src: Vm, dst: IPv4Address, port: int | None, protocol: str,
            src_port: int = 49152) -> Connection:
    """A TCP/UDP exchange or an ICMP echo: connected, refused (RST / port unreachable) or
    timeout (something dropped it silently)."""
    fwd = deliver(s, src, dst, protocol, port, src_port)
    if not fwd.delivered:
        return Connection("timeout", fwd, None, path_faults(s, fwd), 0.0)
    target = s.vm_by_ip(dst)
    if target is None:  # the Azure platform address: its DNS answers, nothing else modelled
        ok = dst == AZURE_PLATFORM_IP and port == 53
        rtt = 2 * BASE_MS_PER_LINK
        return Connection("connected" if ok else "timeout", fwd, None, (), rtt if ok else 0.0)
    stateful = frozenset(fwd.hops)
    rev = deliver(s, target, src.ip, protocol, src_port, port, stateful)
    faults = path_faults(s, fwd, rev)
    if not rev.delivered:
        return Connection("timeout", fwd, rev, faults, 0.0)
    fwd_nvas, rev_nvas = fwd.hops[1:-1], rev.hops[1:-1]
    rev_only = [n for n in rev_nvas if n not in fwd_nvas]
    one_way = [n for n in fwd_nvas if n not in rev_nvas] if protocol == "tcp" else []
    if rev_only or one_way:  # a stateful NVA drops what it sees of a flow it never saw begin
        return Connection("timeout", fwd, rev, faults, 0.0, asymmetric_at=(one_way + rev_only)[0])
    if any(f.kind == "loss" and (f.percent or 0) >= 100 for f in faults):
        return Connection("timeout", fwd, rev, faults, 0.0)
    answers = protocol == "icmp" or (port is not None and _listening(s, target, port))
    return Connection("connected" if answers else "refused", fwd, rev, faults, _rtt(s, fwd, rev))
