"""The estate's edge (format 2): the way out to the Internet and the way in from it.

Out: a VM's packet to an ``Internet`` address leaves Azure only through a NAT gateway on its
subnet or a firewall; otherwise it is dropped (no default outbound access) *(lab)*. A NAT
gateway SNATs to its first public IP *(lab)* from ports 1024-65535; ICMP through it gets no
reply. The firewall SNATs its Internet flows to its first public IP, unless a NAT gateway sits
on AzureFirewallSubnet (then the NAT gateway does, no double NAT).

In: Internet clients and the engineer's machine reach public load balancer frontends (closed
unless the backend's NSGs open them), ``internet_hosts`` on their ports, and a private endpoint
target's public IP when its public access is Enabled; nothing else answers.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from ipaddress import IPv4Address

from lab.model import Scenario, Vm
from lab.model_v2 import LoadBalancer
from lab.network import lb
from lab.network.nsg import first_deny, nsgs_in_order
from lab.network.results import Delivery
from lab.network.tags import is_internet
from lab.network.walk import Walk

SNAT_PORTS = (1024, 65535)


def is_public(ip: IPv4Address) -> bool:
    return is_internet(ip)


def snat_port(w: Walk) -> int:
    """A stable SNAT source port for this flow *(lab)*."""
    seed = f"{w.sent.src}:{w.sent.src_port}>{w.sent.dst}:{w.sent.dst_port}/{w.choose}"
    lo, hi = SNAT_PORTS
    return lo + zlib.crc32(seed.encode()) % (hi - lo + 1)


def egress(w: Walk, node: str, vnet: str, subnet: str, route: str) -> Delivery:
    """The winning route is Internet: out through a NAT gateway or the firewall, or dropped."""
    s = w.s
    ngw = s.nat_gateway_of(vnet, subnet)
    fw = s.firewall(node)
    w.notes.pop("fw_snat", None)
    if ngw is not None:
        w.notes["snat"] = ngw.name
        w.pkt = replace(w.pkt, src=ngw.public_ips[0].ip, src_port=snat_port(w)
                        if w.pkt.src_port is not None else None)
        w.add(ngw.name)
    elif fw is not None:
        if "snat" not in w.notes:
            w.notes["snat"] = fw.name
            w.pkt = replace(w.pkt, src=fw.public_ips[0].ip, src_port=snat_port(w)
                            if w.pkt.src_port is not None else None)
    else:
        return w.drop(node, f"no outbound access from {vnet}/{subnet}: no NAT gateway on the "
                      f"subnet and no firewall on the path (next hop Internet, {route})",
                      "no_outbound")
    return to_public(w)


def to_public(w: Walk) -> Delivery:
    """A packet with a public source reaches a public address."""
    s, dst = w.s, w.pkt.dst
    if dst in s.internet_hosts:
        w.add(str(dst))
        return w.done("internet")
    pe = next((p for p in s.private_endpoints if p.target.public_ip == dst), None)
    if pe is not None:
        w.add(str(dst))
        w.notes["pe_public"] = pe.name
        return w.done("pe_public")
    balancer = s.lb_by_frontend(dst)
    if balancer is not None and not balancer.frontend.internal:
        return inbound_frontend(w, balancer)
    return w.drop(None, f"no host answers at {dst} (nothing of the estate or its Internet "
                  "hosts holds it)", "no_host")


def to_backend(w: Walk, balancer: LoadBalancer) -> Vm | Delivery:
    """The frontend's rule picks an up backend and the packet is rewritten to it (the source is
    kept: load balancers pass traffic through), or the drop that says why none takes it."""
    rule = lb.match_rule(balancer, w.pkt.protocol, w.pkt.dst_port)
    if rule is None:
        return w.drop(None, f"no rule of {balancer.name} for {w.pkt.protocol} "
                      f"{w.pkt.dst_port}", "lb_no_rule")
    chosen = lb.backend(w.s, balancer, rule, w.choose)
    if chosen is None:
        return w.drop(None, f"{balancer.name}: no healthy backend in {rule.pool} (rule "
                      f"{rule.name})", "lb_down")
    w.notes["lb"] = balancer.name
    w.pkt = replace(w.pkt, dst=chosen.ip, dst_port=lb.backend_port(rule, w.pkt.dst_port))
    return chosen


def inbound_frontend(w: Walk, balancer: LoadBalancer) -> Delivery:
    """A public frontend: the rule's up backend, if its NSGs open the port to this source."""
    chosen = to_backend(w, balancer)
    if isinstance(chosen, Delivery):
        return chosen
    if not nsgs_in_order(w.s, chosen, "Inbound"):
        return w.drop(chosen.name, f"{balancer.name}: a public frontend is closed unless an NSG "
                      f"opens it, and {chosen.name} has none on its subnet or NIC", "nsg")
    deny = first_deny(w.s, chosen, "Inbound", w.pkt)
    if deny is not None:
        return w.drop(chosen.name, f"{deny.nsg.name}/{deny.rule_name}", "nsg")
    if chosen.power_state != "running":  # pragma: no cover - an up backend runs
        return w.drop(chosen.name, f"vm {chosen.power_state}: {chosen.name}", "vm_down")
    w.add(chosen.name)
    return w.done("vm")


def answers(s: Scenario, fwd: Delivery, port: int | None) -> bool:
    """Whether a reached private endpoint, Internet host or public endpoint accepts ``port``
    (False: it refuses; whether it replies at all is :func:`replies`)."""
    if port is None:
        return False
    if fwd.target == "pe":
        pe = s.pe(fwd.hops[-1])
        return pe is not None and pe.state == "Approved" and port in pe.target.ports
    if fwd.target == "internet":
        return port in s.internet_hosts.get(IPv4Address(fwd.hops[-1]), ())
    if fwd.target == "pe_public":
        pe = next((p for p in s.private_endpoints if str(p.target.public_ip) == fwd.hops[-1]),
                  None)
        return pe is not None and pe.target.public_access == "Enabled" and port in pe.target.ports
    return False


def replies(s: Scenario, fwd: Delivery, protocol: str, port: int | None) -> bool:
    """Whether anything comes back: a private endpoint answers only when Approved, on its
    kind's ports *(lab)*; a public endpoint only with public access; ICMP through a NAT
    gateway gets no reply."""
    if protocol == "icmp" and fwd.snat and s.nat_gateway(fwd.snat) is not None:
        return False
    if fwd.target in ("pe", "pe_public"):
        return protocol != "icmp" and answers(s, fwd, port)
    return True


def reachable_from_internet(s: Scenario, dst: IPv4Address) -> bool:
    """A public address of the estate the Internet can reach (it may still not answer)."""
    balancer = s.lb_by_frontend(dst)
    return (dst in s.internet_hosts or any(p.target.public_ip == dst
                                           for p in s.private_endpoints)
            or balancer is not None and not balancer.frontend.internal)
