"""Where a packet goes: routes hop by hop, NVAs, peerings, NSGs, power states, listeners.

A packet leaves its VM through the NIC then subnet NSG, is routed by its subnet's effective
routes, may be handed to an NVA (which must be running and forwarding, meets its own NSGs and
re-routes by its own subnet's routes) and arrives through the subnet then NIC NSG of the VM
holding the destination. Return traffic of an allowed flow passes the NSGs it met (stateful);
a forwarding NVA that sees only one direction of a flow drops it (*(lab)*: NVAs are stateful
firewalls, which is why asymmetric routing breaks flows in Azure).

Format 2 adds nodes the packet may meet (lab/network/lb.py, firewall.py, edge.py): an internal
load balancer's frontend (DNAT to an up pool VM), a private endpoint, an Azure Firewall as next
hop (its rules, SNAT, AzureFirewallSubnet's routes), a NAT gateway on the way to the Internet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Address

from lab.model import Fault, Scenario, Subnet, Vm
from lab.model_v2 import FIREWALL_SUBNET, Firewall, LoadBalancer, PrivateEndpoint
from lab.network import edge, firewall, lb
from lab.network.nsg import Packet, first_deny
from lab.network.results import Connection, Delivery, HopView
from lab.network.routes import lookup
from lab.network.tags import AZURE_PLATFORM_IP
from lab.network.topology import peered_connected, peering, subnet_of
from lab.network.walk import BASE_MS_PER_LINK, Walk, mirror, path_faults, rtt

MAX_HOPS = 16


def _nsg_drop(w: Walk, vm: Vm, direction: str) -> Delivery | None:
    if vm.name in w.stateful:
        return None
    deny = first_deny(w.s, vm, direction, w.pkt)
    if deny is None:
        return None
    return w.drop(vm.name, f"{deny.nsg.name}/{deny.rule_name}", "nsg")


def _down(vm: Vm) -> str:
    return f"vm {vm.power_state}: {vm.name}"


def _crossing_drop(w: Walk, sender_vnet: str, receiver_vnet: str) -> Delivery | None:
    """A packet crossing a peering whose source lies outside the sending VNet was forwarded
    by an NVA there; the receiving side's peering must allow forwarded traffic."""
    s = w.s
    if receiver_vnet == sender_vnet:
        return None
    if not peered_connected(s, sender_vnet, receiver_vnet):
        return w.drop(None, f"{receiver_vnet} is not peered (Connected) with {sender_vnet}",
                      "peering")
    sender = s.vnet(sender_vnet)
    if sender is not None and sender.contains(w.pkt.src):
        return None
    back = peering(s, receiver_vnet, sender_vnet)
    if back is not None and back.allow_forwarded_traffic:
        return None
    name = back.name if back else "?"
    return w.drop(None, f"peering {receiver_vnet}/{name} does not allow forwarded traffic "
                  f"(source {w.pkt.src} is outside {sender_vnet})", "peering")


def _arrive(w: Walk, target: Vm, sender_vnet: str) -> Delivery:
    crossing = _crossing_drop(w, sender_vnet, target.vnet)
    if crossing is not None:
        return crossing
    if target.power_state != "running":
        return w.drop(target.name, _down(target), "vm_down")
    denied = _nsg_drop(w, target, "Inbound")
    if denied is not None:
        return denied
    w.add(target.name)
    return w.done("vm")


def pe_as_vm(s: Scenario, pe: PrivateEndpoint) -> Vm:
    """A private endpoint seen by the NSG functions: an interface in its subnet, never a
    guest (its subnet's NSG applies only under network policies)."""
    ports = pe.target.ports if pe.state == "Approved" else ()
    return Vm(pe.name, pe.resource_group, pe.vnet, pe.subnet, pe.ip, None, "running", False,
              ports)


def _arrive_pe(w: Walk, pe: PrivateEndpoint, sender_vnet: str) -> Delivery:
    crossing = _crossing_drop(w, sender_vnet, pe.vnet)
    if crossing is not None:
        return crossing
    sub = w.s.subnet(pe.vnet, pe.subnet)
    if sub is not None and sub.private_endpoint_network_policies in (
            "Enabled", "NetworkSecurityGroupEnabled"):
        denied = _nsg_drop(w, pe_as_vm(w.s, pe), "Inbound")
        if denied is not None:
            return denied
    w.add(pe.name)
    return w.done("pe")


def _arrive_frontend(w: Walk, balancer: LoadBalancer, sender_vnet: str) -> Delivery:
    chosen = edge.to_backend(w, balancer)
    return chosen if isinstance(chosen, Delivery) else _arrive(w, chosen, sender_vnet)


def _in_vnet(w: Walk, sender_vnet: str, route_desc: str, local: bool) -> Delivery:
    """The route says the address is in a VNet: what holds it there."""
    s, dst = w.s, w.pkt.dst
    target = s.vm_by_ip(dst)
    if target is not None:
        if (local and target.vnet != sender_vnet) or (not local and target.vnet == sender_vnet):
            return w.drop(None, f"no host at {dst} ({route_desc})", "no_host")
        return _arrive(w, target, sender_vnet)
    if s.format >= 2:
        pe = s.pe_by_ip(dst)
        if pe is not None:
            return _arrive_pe(w, pe, sender_vnet)
        balancer = s.lb_by_frontend(dst)
        if balancer is not None and balancer.frontend.internal:
            return _arrive_frontend(w, balancer, sender_vnet)
    return w.drop(None, f"no host at {dst} ({route_desc})", "no_host")


@dataclass(frozen=True)
class Node:
    """Where the packet is being routed from: a VM (an NVA) or a firewall."""

    name: str
    vnet: str
    subnet: Subnet


def _node_of_vm(s: Scenario, vm: Vm) -> Node:
    return Node(vm.name, vm.vnet, subnet_of(s, vm))


def _node_of_fw(s: Scenario, fw: Firewall) -> Node:
    sub = s.subnet(fw.vnet, FIREWALL_SUBNET)
    if sub is None:  # validation guarantees it
        raise KeyError(f"{fw.vnet} has no {FIREWALL_SUBNET}")
    return Node(fw.name, fw.vnet, sub)


def _through_firewall(w: Walk, fw: Firewall, current: Node) -> Delivery | Node:
    """The firewall as next hop: its rules (unless the flow is already known), then onwards
    from AzureFirewallSubnet."""
    crossing = _crossing_drop(w, current.vnet, fw.vnet)
    if crossing is not None:
        return crossing
    if fw.name not in w.stateful:
        verdict = firewall.evaluate(fw, w.pkt.protocol, w.pkt.src, w.pkt.dst, w.pkt.dst_port,
                                    w.fqdn)
        w.notes["firewall"] = f"{fw.name}: {verdict.describe}"
        if firewall.proxied(verdict, w.pkt.protocol, w.pkt.dst_port):
            w.notes["proxy"] = fw.name
        if not verdict.allowed:
            if "proxy" in w.notes:  # the proxy answered the handshake, then refused
                w.add(fw.name)
                return w.done("proxy")
            return w.drop(fw.name, f"{fw.name}: {verdict.describe}", "firewall")
        if verdict.kind == "Application" and not edge.is_public(w.pkt.dst):
            w.notes["snat"] = fw.name  # proxied from the firewall's own address *(lab)*
            w.pkt = replace(w.pkt, src=fw.private_ip, src_port=edge.snat_port(w))
        elif firewall.snat_needed(verdict, w.pkt.dst):
            w.notes["fw_snat"] = fw.name  # at egress (or the subnet's NAT gateway)
    w.add(fw.name)
    return _node_of_fw(w.s, fw)


def walk(w: Walk, current: Node) -> Delivery:
    """Route the packet from ``current`` (a VM already recorded) to its end."""
    s = w.s
    visited = {current.name}
    for _ in range(MAX_HOPS):
        route = lookup(s, current.subnet, w.pkt.dst)
        if route is None or route.next_hop_type == "None":
            where = route.describe() if route else "no route"
            return w.drop(current.name, f"route None ({where})", "route_none")
        if route.next_hop_type == "Internet":
            if s.format >= 2:
                return edge.egress(w, current.name, current.vnet, current.subnet.name,
                                   route.describe())
            return w.drop(None, f"no host answers at {w.pkt.dst} (next hop Internet, "
                          f"{route.describe()})", "no_host")
        if route.next_hop_type in ("VnetLocal", "VNetPeering", "InterfaceEndpoint"):
            return _in_vnet(w, current.vnet, route.describe(),
                            route.next_hop_type != "VNetPeering")
        # VirtualAppliance
        hop_ip = route.next_hop_ip
        fw = s.firewall_by_ip(hop_ip) if hop_ip is not None and s.format >= 2 else None
        if fw is not None:
            if fw.name in visited:
                return w.drop(fw.name, f"routing loop: {route.describe()} leads back to "
                              f"{fw.name}", "loop")
            nxt = _through_firewall(w, fw, current)
            if isinstance(nxt, Delivery):
                return nxt
            current = nxt
            visited.add(fw.name)
            continue
        nva = _appliance(s, hop_ip, w)
        if nva is None:
            return w.drop(current.name, f"next hop {hop_ip} ({route.describe()}): no VM "
                          "holds that address", "no_host")
        if nva.vnet != current.vnet and not peered_connected(s, current.vnet, nva.vnet):
            return w.drop(current.name, f"next hop {hop_ip} ({route.describe()}) is "
                          f"neither in {current.vnet} nor in a peered VNet", "peering")
        if nva.ip == w.pkt.dst:
            return _arrive(w, nva, current.vnet)
        if nva.name in visited:
            return w.drop(nva.name, f"routing loop: {route.describe()} leads back to "
                          f"{nva.name}", "loop")
        crossing = _crossing_drop(w, current.vnet, nva.vnet)
        if crossing is not None:
            return crossing
        if nva.power_state != "running":
            return w.drop(nva.name, f"{_down(nva)} (next hop {hop_ip}, "
                          f"{route.describe()})", "vm_down")
        if not nva.ip_forwarding:
            return w.drop(nva.name, f"IP forwarding disabled on {s.nic_name(nva)} "
                          f"(next hop {hop_ip}, {route.describe()})", "no_forwarding")
        denied = _nsg_drop(w, nva, "Inbound")
        if denied is not None:
            return denied
        w.add(nva.name)
        denied = _nsg_drop(w, nva, "Outbound")
        if denied is not None:
            return denied
        current = _node_of_vm(s, nva)
        visited.add(nva.name)
    return w.drop(current.name, f"more than {MAX_HOPS} appliances on the path", "loop")


def _appliance(s: Scenario, hop_ip: IPv4Address | None, w: Walk) -> Vm | None:
    """The VM at a VirtualAppliance next hop; an internal frontend with an HA ports rule hands
    the packet to an up pool VM, the same for both directions of a flow *(lab)*."""
    if hop_ip is None:
        return None
    vm = s.vm_by_ip(hop_ip)
    if vm is not None or s.format < 2:
        return vm
    balancer = s.lb_by_frontend(hop_ip)
    if balancer is None or not balancer.frontend.internal:
        return None
    rule = next((r for r in balancer.rules if r.ha_ports), None)
    return lb.backend(s, balancer, rule, w.choose) if rule is not None else None


def deliver(s: Scenario, src: Vm, dst: IPv4Address, protocol: str, dst_port: int | None,
            src_port: int | None, stateful: frozenset[str] = frozenset(), *,
            fqdn: str | None = None, choose: int = 0) -> Delivery:
    """One packet from ``src`` to ``dst``; ``stateful`` names VMs (and firewalls) that already
    allowed this flow (the reply of an allowed connection)."""
    icmp = protocol == "icmp"
    pkt = Packet(protocol, src.ip, None if icmp else src_port, dst, None if icmp else dst_port)
    w = Walk(s, pkt, pkt, stateful, fqdn, choose)
    if src.power_state != "running":
        return w.drop(src.name, _down(src), "vm_down")
    w.add(src.name)
    if dst == src.ip:  # its own address: the guest's loopback, no NSG or route
        return w.done("vm")
    dns_to_platform = dst == AZURE_PLATFORM_IP and dst_port == 53 and not icmp
    if not dns_to_platform:
        denied = _nsg_drop(w, src, "Outbound")
        if denied is not None:
            return denied
    if dst == AZURE_PLATFORM_IP:
        return w.done("platform")
    return walk(w, _node_of_vm(s, src))


def _answers(s: Scenario, fwd: Delivery, port: int | None, protocol: str) -> bool:
    """Whether what the packet reached answers on ``port`` (else RST / port unreachable)."""
    if protocol == "icmp":
        return fwd.target != "pe"  # a private endpoint does not answer ping *(lab)*
    last = fwd.view_at(len(fwd.hops) - 1)
    at_port = last.dst_port if last is not None else port
    if fwd.target == "vm":
        target = s.vm(fwd.hops[-1])
        return target is not None and at_port is not None and lb.listening(s, target, at_port)
    return edge.answers(s, fwd, at_port)


def connect(s: Scenario, src: Vm, dst: IPv4Address, port: int | None, protocol: str,
            src_port: int = 49152, *, fqdn: str | None = None, choose: int = 0) -> Connection:
    """A TCP/UDP exchange or an ICMP echo: connected, refused (RST / port unreachable) or
    timeout (something dropped it silently)."""
    fwd = deliver(s, src, dst, protocol, port, src_port, fqdn=fqdn, choose=choose)
    if not fwd.delivered:
        return Connection("timeout", fwd, None, path_faults(s, fwd), 0.0)
    if fwd.target == "platform":  # the Azure platform address: its DNS answers, nothing else
        ok = port == 53
        ms = 2 * BASE_MS_PER_LINK
        return Connection("connected" if ok else "timeout", fwd, None, (), ms if ok else 0.0)
    if fwd.target == "proxy":
        rev = mirror(fwd)
        return Connection("connected", fwd, rev, path_faults(s, fwd), rtt(s, fwd, rev),
                          refused_by_proxy=fwd.proxy)
    if fwd.target in ("pe", "internet", "pe_public") or fwd.snat:
        rev = mirror(fwd)
        faults = path_faults(s, fwd, rev)
        if not edge.replies(s, fwd, protocol, port):
            return Connection("timeout", fwd, rev, faults, 0.0)
        if _blocked_by_loss(faults):
            return Connection("timeout", fwd, rev, faults, 0.0)
        ok = _answers(s, fwd, port, protocol)
        return Connection("connected" if ok else "refused", fwd, rev, faults, rtt(s, fwd, rev))
    target = s.vm(fwd.hops[-1])
    if target is None:  # pragma: no cover - a VM target is recorded by name
        return Connection("timeout", fwd, None, (), 0.0)
    stateful = frozenset(fwd.hops)
    last = fwd.view_at(len(fwd.hops) - 1)
    back_port = last.dst_port if last is not None else port
    rev = deliver(s, target, src.ip, protocol, src_port, back_port, stateful, choose=choose)
    if rev.delivered and fwd.lb:
        rev = _from_frontend(rev, dst, port, HopView(target.ip, back_port, src.ip, src_port))
    faults = path_faults(s, fwd, rev)
    if not rev.delivered:
        return Connection("timeout", fwd, rev, faults, 0.0)
    fwd_mid, rev_mid = fwd.hops[1:-1], rev.hops[1:-1]
    rev_only = [n for n in rev_mid if n not in fwd_mid]
    one_way = [n for n in fwd_mid if n not in rev_mid] if protocol == "tcp" else []
    if rev_only or one_way:  # a stateful NVA drops what it sees of a flow it never saw begin
        return Connection("timeout", fwd, rev, faults, 0.0, asymmetric_at=(one_way + rev_only)[0])
    if _blocked_by_loss(faults):
        return Connection("timeout", fwd, rev, faults, 0.0)
    answers = protocol == "icmp" or _answers(s, fwd, port, protocol)
    return Connection("connected" if answers else "refused", fwd, rev, faults, rtt(s, fwd, rev))


def _blocked_by_loss(faults: tuple[Fault, ...]) -> bool:
    return any(f.kind == "loss" and (f.percent or 0) >= 100 for f in faults)


def _from_frontend(rev: Delivery, frontend: IPv4Address, port: int | None,
                   sent: HopView) -> Delivery:
    """The load balancer turns the backend's answer back into the frontend's: the client sees
    it come from the frontend address and port."""
    views = [v or sent for v in rev.views] if rev.views else [sent] * len(rev.hops)
    views[-1] = HopView(frontend, port, sent.dst, sent.dst_port)
    return replace(rev, views=tuple(views), sent=sent)


def connect_inbound(s: Scenario, client: IPv4Address, dst: IPv4Address, port: int | None,
                    protocol: str, src_port: int = 49152, choose: int = 0) -> Connection | None:
    """An Internet client's (or the engineer's) connection to a public address of the estate;
    None when ``dst`` is not one the Internet can reach (the caller decides)."""
    if not edge.reachable_from_internet(s, dst):
        return None
    icmp = protocol == "icmp"
    pkt = Packet(protocol, client, None if icmp else src_port, dst, None if icmp else port)
    w = Walk(s, pkt, pkt, frozenset(), None, choose)
    w.add(str(client))
    fwd = edge.to_public(w)
    if not fwd.delivered:
        return Connection("timeout", fwd, None, path_faults(s, fwd), 0.0)
    rev = mirror(fwd)
    faults = path_faults(s, fwd, rev)
    if not edge.replies(s, fwd, protocol, port) or _blocked_by_loss(faults):
        return Connection("timeout", fwd, rev, faults, 0.0)
    ok = icmp or _answers(s, fwd, port, protocol)
    return Connection("connected" if ok else "refused", fwd, rev, faults, rtt(s, fwd, rev))
