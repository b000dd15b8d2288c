"""Packets on the wire of a lab capture: the hops they cross and what each hop's guest records.

A packet walks its path hop by hop (the model's ``Delivery.hops``: the sender, any forwarding
VM, the receiver); each hop it reaches records it, so captures on both ends (and on an NVA) of
one flow agree packet for packet. Azure's SDN does not decrement the TTL; a VM that routes the
packet (an NVA) does, once, so a hop sees the sender's TTL minus the forwarding VMs before it
(an NVA records a packet as it arrives, before its own decrement). Each host numbers its IP
packets with its own counter from a random start, as Linux does per socket, so a packet that a
middlebox sends in a host's name does not fit that host's sequence. Faults act where the format
says: ``loss`` drops packets entering (or leaving, for the sender) the faulty VM, ``mtu`` drops
packets over its MTU (answering ICMP "fragmentation needed" unless ``icmp_blocked``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, Any

from lab.packets import (
    PROTO_ICMP,
    checksummed,
    icmp_message,
    ipv4_packet,
    with_addresses,
    with_ttl,
)

if TYPE_CHECKING:
    from lab.model import Scenario, Traffic, Vm

#: Linux's default TTL (net.ipv4.ip_default_ttl): what every lab host sends with
INITIAL_TTL = 64


@dataclass(frozen=True)
class Seen:
    """One packet as one VM recorded it."""

    ts_ns: int
    vm: str
    ip: bytes


@dataclass
class Path:
    """The hops a packet crosses in one direction, and whether it gets to the end; ``views``
    the addresses a hop sees when a load balancer or an SNAT rewrote them (format 2)."""

    hops: tuple[str, ...]
    delivered: bool
    one_way_s: float
    views: tuple[Any, ...] = ()


def ns(t: float) -> int:
    return int(round(t * 1e9))


def seed(*parts: object) -> int:
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def faults_at(scenario: Scenario, vm: str) -> Sequence[Any]:
    return tuple(scenario.faults_at(vm) or ())


def ttl_at_hop(sent_ttl: int, j: int) -> int:
    """The TTL hop ``j`` sees: every hop strictly between the sender (0) and it forwarded the
    packet and decremented it once."""
    return max(1, sent_ttl - max(0, j - 1))


def path_of(delivery: Any, one_way_s: float) -> Path:
    """A model ``Delivery`` as the path the capture's packets walk."""
    views = tuple(getattr(delivery, "views", ()) or ())
    sent = getattr(delivery, "sent", None)
    if views and sent is not None:  # every hop's addresses, the unchanged ones as sent
        views = tuple(v or sent for v in views)
    return Path(tuple(delivery.hops), bool(delivery.delivered), one_way_s, views)


@dataclass(frozen=True)
class Endpoint:
    """A flow's client: a VM of the estate, or (format 2) an Internet client."""

    name: str
    ip: IPv4Address
    mtu: int = 1500


@dataclass(frozen=True)
class FlowWire:
    """A traffic flow's two ends and the paths its packets walk, as the model connects them."""

    flow: Traffic
    src: Vm | Endpoint
    dst_vm: Vm | None
    dst_ip: IPv4Address
    conn: Any
    forward: Path
    reverse: Path | None


def flow_wire(scenario: Scenario, estate: Any, index: int, protocol: str = "tcp",
              choose: int = 0, src_port: int = 49152) -> FlowWire | None:
    """Flow ``index``'s ends and paths, or None when its source VM is not running (it sends
    nothing); TCP and DNS flows share this so they agree on who talks to whom and how.
    ``choose`` picks the load balancer backend of this connection (format 2)."""
    flow = scenario.traffic[index]
    vm = scenario.vm(flow.source)
    dst_vm = scenario.vm(flow.to)
    dst_ip = dst_vm.ip if dst_vm is not None else IPv4Address(flow.to)
    src: Vm | Endpoint
    if vm is None and scenario.format >= 2:  # an Internet client
        client = IPv4Address(flow.source)
        src = Endpoint(flow.source, client)
        conn = estate.connect_from(client, dst_ip, flow.port, protocol, choose=choose,
                                   src_port=src_port)
    elif vm is None or vm.power_state != "running":
        return None
    elif scenario.format >= 2:
        src = vm
        conn = estate.connect(flow.source, dst_ip, flow.port, protocol, fqdn=flow.fqdn,
                              choose=choose, src_port=src_port)
    else:
        src = vm
        conn = estate.connect(flow.source, dst_ip, flow.port, protocol)
    one_way = max(float(conn.rtt_ms), 0.2) / 2000.0
    reverse = path_of(conn.reverse, one_way) if conn.reverse is not None else None
    if dst_vm is None and conn.forward.delivered and scenario.vm(conn.forward.hops[-1]):
        dst_vm = scenario.vm(conn.forward.hops[-1])  # a load balancer's backend
    return FlowWire(flow, src, dst_vm, dst_ip, conn, path_of(conn.forward, one_way), reverse)


def server_answer(scenario: Scenario, dst_vm: Any, port: int) -> str:
    """What the guest at ``dst_vm`` does with a packet to ``port``: "synack" (a service
    listens), "rst" (running, nothing listens: RST for TCP, ICMP port unreachable for UDP)
    or "none" (no VM there, or it is not running)."""
    if dst_vm is None or dst_vm.power_state != "running":
        return "none"
    muted = any(f.kind == "no_listener" and f.port == port
                for f in faults_at(scenario, dst_vm.name))
    return "synack" if port in dst_vm.listens and not muted else "rst"


def stopped_at(path: Path, vm: str | None) -> Path:
    """The answer's path when the model says it never gets back: it ends at ``vm`` (e.g. a
    stateful NVA that saw only one direction), or before the client."""
    hops = path.hops
    if vm in hops:
        hops = hops[:hops.index(vm) + 1]
    elif len(hops) > 1:
        hops = hops[:-1]
    return Path(hops, False, path.one_way_s)


@dataclass
class Wire:
    """Carries packets along a flow's two paths; ``seen`` collects what every hop recorded.

    ``rng`` decides losses; ``ids`` only the hosts' first IP IDs, so that numbering packets
    does not change which ones are lost.
    """

    scenario: Scenario
    rng: random.Random
    forward: Path
    reverse: Path | None
    ids: random.Random = field(kw_only=True)
    seen: list[Seen] = field(default_factory=list, kw_only=True)
    jitter_rng: random.Random = field(default_factory=lambda: random.Random(0), kw_only=True)
    fifo: dict[tuple[bool, int], float] = field(default_factory=dict, kw_only=True)
    counters: dict[str, int] = field(default_factory=dict, kw_only=True)

    def next_id(self, host: str) -> int:
        """The IP ID ``host`` (an address, a socket or a VM name) gives its next packet."""
        value = self.counters.get(host)
        if value is None:
            value = self.ids.randrange(1 << 16)
        self.counters[host] = (value + 1) & 0xFFFF
        return value

    def carry(self, t: float, from_client: bool, ip: bytes,
              payload_len: int = 0) -> tuple[bool, float]:
        """Send ``ip`` at ``t`` along its direction's path; (arrived, arrival time)."""
        path = self.forward if from_client else self.reverse
        if path is None or not path.hops:
            return False, t
        hops = path.hops
        step = path.one_way_s / max(1, len(hops) - 1)
        extra = 0.0
        for j, hop in enumerate(hops):
            extra += self._jitter(hop) if j > 0 else 0.0
            at = t + j * step + extra
            if extra:  # queues are FIFO: jitter delays packets but never reorders a direction
                key = (from_client, j)
                at = max(at, self.fifo.get(key, 0.0) + 1e-6)
                extra = at - t - j * step
                self.fifo[key] = at
            here = with_ttl(ip, ttl_at_hop(ip[8], j))
            view = path.views[j] if j < len(path.views) else None
            if view is not None:
                here = with_addresses(here, view.src.packed, view.src_port, view.dst.packed,
                                      view.dst_port)
            if j > 0 and self._dropped(hop, here, at, from_client):
                return False, at
            self.seen.append(Seen(ns(at), hop, here))
            self._crossed(hop, payload_len)
            if j == 0 and len(hops) > 1 and self._dropped(hop, here, at, from_client,
                                                          at_sender=True):
                return False, at
            if self._reset_by(hop, at):
                return False, at
        return path.delivered, t + path.one_way_s + extra

    def _jitter(self, hop: str) -> float:
        """A latency fault's seeded jitter for one packet crossing ``hop`` (its ``ms`` is in
        the path's one-way time already), format 2."""
        extra = 0.0
        for fault in faults_at(self.scenario, hop):
            if fault.kind == "latency" and fault.jitter_ms:
                extra += self.jitter_rng.uniform(0.0, float(fault.jitter_ms)) / 1000.0
        return extra

    # hooks for the TCP conversation
    def _crossed(self, hop: str, payload_len: int) -> None:
        return None

    def _reset_by(self, hop: str, at: float) -> bool:
        return False

    def _shrink(self, from_client: bool, mtu: int) -> None:
        return None

    def _dropped(self, hop: str, ip: bytes, at: float, from_client: bool,
                 at_sender: bool = False) -> bool:
        for fault in faults_at(self.scenario, hop):
            if fault.kind == "loss" and self.rng.random() * 100 < float(fault.percent or 0):
                return True
            if fault.kind == "mtu" and fault.mtu and len(ip) > fault.mtu and not at_sender:
                if not fault.icmp_blocked:
                    self._frag_needed(hop, ip, at, int(fault.mtu), from_client)
                return True
        return False

    def _frag_needed(self, hop: str, ip: bytes, at: float, mtu: int, from_client: bool) -> None:
        """ICMP 3/4 from the hop to the packet's sender, which then sends smaller segments."""
        vm = self.scenario.vm(hop)
        source = vm.ip.packed if vm is not None else ip[12:16]
        rest = b"\x00\x00" + mtu.to_bytes(2, "big")
        icmp = icmp_message(3, 4, rest, ip[:28])
        packet = checksummed(ipv4_packet(source, ip[12:16], PROTO_ICMP, icmp,
                                         ident=self.next_id(hop), ttl=INITIAL_TTL))
        self.seen.append(Seen(ns(at), hop, packet))
        origin = self.forward if from_client else self.reverse
        if origin is not None and origin.hops and origin.hops[0] != hop:
            self.seen.append(Seen(ns(at + 0.0005), origin.hops[0], packet))
        self._shrink(from_client, mtu)
