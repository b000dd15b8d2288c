"""A packet on its way through the format-2 estate, and what paths share about it.

``Walk`` collects the hops that saw a packet and the addresses each saw (a load balancer's
DNAT, an SNAT), plus what it met (the firewall's deciding rule, the translator); the path
functions of lab/network/paths.py and lab/network/edge.py move it along.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.model import Fault, Scenario
from lab.network.nsg import Packet
from lab.network.results import Delivery, HopView

BASE_MS_PER_LINK = 0.5
PATH_FAULTS = ("loss", "reset", "mtu", "latency", "snat_exhaustion")


@dataclass
class Walk:
    """A packet on its way: the hops that saw it, the addresses each saw, what it met."""

    s: Scenario
    sent: Packet  # as the sender wrote it
    pkt: Packet  # as it is now (after DNAT/SNAT)
    stateful: frozenset[str]
    fqdn: str | None = None
    choose: int = 0
    hops: list[str] = field(default_factory=list)
    views: list[HopView | None] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, hop: str) -> None:
        self.hops.append(hop)
        p = self.pkt
        same = p == self.sent
        self.views.append(None if same else HopView(p.src, p.src_port, p.dst, p.dst_port))

    def drop(self, at: str | None, reason: str, kind: str) -> Delivery:
        return self._result(False, at, reason, kind)

    def done(self, target: str) -> Delivery:
        self.notes["target"] = target
        return self._result(True, None, None, None)

    def _result(self, ok: bool, at: str | None, reason: str | None,
                kind: str | None) -> Delivery:
        views = tuple(self.views) if any(self.views) else ()
        n = self.notes
        p, q = self.sent, self.pkt
        return Delivery(ok, tuple(self.hops), at, reason, kind, views, n.get("target"),
                        n.get("snat"), n.get("firewall"), n.get("proxy"), n.get("lb"),
                        HopView(p.src, p.src_port, p.dst, p.dst_port) if views else None,
                        HopView(q.src, q.src_port, q.dst, q.dst_port))


def path_faults(s: Scenario, *deliveries: Delivery | None) -> tuple[Fault, ...]:
    names: set[str] = set()
    for d in deliveries:
        if d is not None:
            names.update(d.hops)
            if d.snat:
                names.add(d.snat)
    return tuple(f for f in s.faults if f.kind in PATH_FAULTS and f.at in names
                 and (f.kind != "snat_exhaustion" or any(d is not None and d.snat == f.at
                                                         for d in deliveries)))


def rtt(s: Scenario, fwd: Delivery, rev: Delivery) -> float:
    ms = BASE_MS_PER_LINK * (max(len(fwd.hops) - 1, 1) + max(len(rev.hops) - 1, 1))
    for f in s.faults:
        if f.kind == "latency" and f.ms:
            ms += f.ms * (fwd.hops.count(f.at) + rev.hops.count(f.at))
    return round(ms, 3)


def mirror(fwd: Delivery) -> Delivery:
    """The answer's path through stateful translators (a NAT gateway, a firewall's SNAT or
    proxy, a load balancer towards an Internet client): back the way the request came."""
    views: tuple[HopView | None, ...] = ()
    sent = None
    if fwd.views and fwd.sent is not None:
        absolute = [v or fwd.sent for v in fwd.views]
        views = tuple(HopView(v.dst, v.dst_port, v.src, v.src_port) for v in reversed(absolute))
        sent = views[0]
    return Delivery(True, tuple(reversed(fwd.hops)), None, None, None, views, "vm",
                    fwd.snat, fwd.firewall, None, fwd.lb, sent)


