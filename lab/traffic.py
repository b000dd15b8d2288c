"""The scenario's traffic as one VM's guest sees it: the packets of a lab packet capture.

Each ``traffic`` flow to port 53 is DNS over UDP (``lab/traffic_dns.py``); every other flow
becomes a series of TCP connections (``rate`` per second). Packets cross their path as
``lab/wire.py`` says (each hop records them; forwarding VMs decrement the TTL; loss and MTU
faults). A ``reset`` fault makes its VM send RST to both ends, in each end's peer's name but
with its own TTL and IP ID, once the connection has carried ``after_bytes``. Senders behave like
Linux: SYN retransmitted after 1, 2, 4… s, data after an RTO of at least 200 ms, doubling, giving
up after six tries. A seed per connection makes every capture reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, Any

from lab.packets import (
    PROTO_TCP,
    TCP_ACK,
    TCP_FIN,
    TCP_PSH,
    TCP_RST,
    TCP_SYN,
    checksummed,
    ethernet,
    ipv4_packet,
    mss_option,
    tcp_segment,
    with_ttl,
)
from lab.traffic_dns import DNS_PORT, dns_flow_packets
from lab.wire import (
    INITIAL_TTL,
    Seen,
    Wire,
    faults_at,
    flow_wire,
    ns,
    seed,
    server_answer,
    stopped_at,
)

if TYPE_CHECKING:
    from lab.model import Scenario

#: the longest stretch of traffic one lab capture holds (its duration is shortened to this)
MAX_WINDOW_S = 30.0
MAX_CONNECTIONS_PER_FLOW = 60
SYN_RETRIES = 4
DATA_RETRIES = 6
MIN_RTO_S = 0.2
WINDOW_SEGMENTS = 10
WIRE_GAP_S = 0.00005


@dataclass
class _Side:
    """One end of the connection: its address, port, next sequence number and MSS."""

    ip: IPv4Address
    port: int
    seq: int
    mss: int


@dataclass
class _Conversation(Wire):
    """One TCP connection being simulated."""

    client: _Side
    server: _Side
    answer: str  # "synack" | "rst" | "none": what the server does with a SYN that reaches it
    carried: dict[str, int] = field(default_factory=dict)
    reset_done: bool = False

    # ------------------------------------------------------------------ one packet
    def send(self, t: float, from_client: bool, flags: int, payload: bytes = b"",
             options: bytes = b"", *, seq: int | None = None, ack: int | None = None,
             ident: int | None = None) -> tuple[bool, float]:
        """Send one segment at ``t``; (arrived, arrival time). Records what each hop saw."""
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        if ack is None:
            ack = dst.seq if flags & TCP_ACK else 0
        seg = tcp_segment(src.port, dst.port, src.seq if seq is None else seq, ack, flags,
                          64240, payload, options)
        if ident is None:
            ident = self.next_id(f"{src.ip}:{src.port}")
        ip = checksummed(ipv4_packet(src.ip.packed, dst.ip.packed, PROTO_TCP, seg,
                                     ident=ident, ttl=INITIAL_TTL))
        return self.carry(t, from_client, ip, len(payload))

    def _crossed(self, hop: str, payload_len: int) -> None:
        if payload_len:
            self.carried[hop] = self.carried.get(hop, 0) + payload_len

    def _shrink(self, from_client: bool, mtu: int) -> None:
        sender = self.client if from_client else self.server
        sender.mss = min(sender.mss, mtu - 40)

    def _reset_by(self, hop: str, at: float) -> bool:
        """A ``reset`` fault at ``hop``: RST to both ends once enough bytes went through, in
        each end's peer's name but with the TTL and IP ID of ``hop``, which forged them."""
        if self.reset_done:
            return True
        for fault in faults_at(self.scenario, hop):
            if fault.kind == "reset" and self.carried.get(hop, 0) >= int(fault.after_bytes or 0):
                self.reset_done = True
                hops = self.forward.hops
                where = hops.index(hop) if hop in hops else len(hops) - 1
                for to_client in (True, False):
                    a, b = (self.server, self.client) if to_client else (self.client, self.server)
                    seg = tcp_segment(a.port, b.port, a.seq, b.seq, TCP_RST | TCP_ACK, 0)
                    ip = checksummed(ipv4_packet(a.ip.packed, b.ip.packed, PROTO_TCP, seg,
                                                 ident=self.next_id(hop), ttl=INITIAL_TTL))
                    end = hops[0] if to_client else hops[-1]
                    # the forwarding VMs between the forger and that end decrement it
                    between = len(hops[1:where]) if to_client else len(hops[where + 1:-1])
                    self.seen.append(Seen(ns(at + 0.0002), hop, ip))
                    if end != hop:
                        self.seen.append(Seen(ns(at + 0.0002), end,
                                              with_ttl(ip, INITIAL_TTL - between)))
                return True
        return False

    # ---------------------------------------------------------------- the exchange
    def run(self, t: float, request: bytes, response: bytes) -> None:
        """Handshake (SYN retransmitted after 1, 2, 4… s), request, response, FIN."""
        wait = 1.0
        for _ in range(SYN_RETRIES + 1):
            arrived, at = self.send(t, True, TCP_SYN, options=mss_option(self.client.mss))
            if arrived and self.answer == "rst":
                self.client.seq += 1
                self.server.seq = 0
                self.send(at + 0.0001, False, TCP_RST | TCP_ACK, ident=0)  # a kernel's RST: ID 0
                return
            if arrived and self.answer == "synack":
                self.client.seq += 1
                ok, back = self.send(at + 0.0001, False, TCP_SYN | TCP_ACK,
                                     options=mss_option(self.server.mss))
                if ok:
                    self.server.seq += 1
                    self._established(back, request, response)
                    return
                self.client.seq -= 1  # the SYN is sent again with the same ISN
            if self.reset_done:
                return
            t += wait
            wait *= 2

    def _established(self, t: float, request: bytes, response: bytes) -> None:
        self.client.mss = self.server.mss = min(self.client.mss, self.server.mss)
        self.send(t, True, TCP_ACK)
        t = self._transfer(t + 0.0005, True, request)
        if t < 0:
            return
        t = self._transfer(t + 0.002, False, response)
        if t < 0:
            return
        ok, at = self.send(t + 0.001, True, TCP_FIN | TCP_ACK)
        self.client.seq += 1
        if ok:
            ok, at = self.send(at + 0.0002, False, TCP_FIN | TCP_ACK)
            self.server.seq += 1
            if ok:
                self.send(at + 0.0001, True, TCP_ACK)

    def _transfer(self, t: float, from_client: bool, data: bytes) -> float:
        """Send ``data`` in windows of segments, each arrival acknowledged cumulatively (so
        a hole shows as duplicate ACKs), the first missing segment retransmitted after an RTO
        that doubles; the end time, or -1 when the connection died or the sender gave up."""
        sender = self.client if from_client else self.server
        base = sender.seq
        rtt = self.forward.one_way_s + (self.reverse or self.forward).one_way_s
        received: list[tuple[int, int]] = []
        done = sent = tries = 0
        rto = max(MIN_RTO_S, 2 * rtt)
        while done < len(data):
            while sent < len(data) and sent - done < WINDOW_SEGMENTS * sender.mss:
                size = min(sender.mss, len(data) - sent)
                done, t = self._segment(t, from_client, base, sent, data[sent:sent + size],
                                        received, done)
                if self.reset_done:
                    return -1
                sent += size
            if done >= len(data):
                break
            tries += 1
            if tries > DATA_RETRIES:
                return -1  # the sender gives up; the capture shows the stall
            t += rto
            rto *= 2
            before = done
            size = min(sender.mss, len(data) - done)  # smaller after an ICMP 3/4
            done, t = self._segment(t, from_client, base, done, data[done:done + size],
                                    received, done)
            if self.reset_done:
                return -1
            if done > before:
                tries, rto = 0, max(MIN_RTO_S, 2 * rtt)
        sender.seq = base + len(data)
        return t + rtt

    def _segment(self, t: float, from_client: bool, base: int, offset: int, chunk: bytes,
                 received: list[tuple[int, int]], done: int) -> tuple[int, float]:
        """One data segment and, when it arrives, the receiver's cumulative ACK."""
        arrived, at = self.send(t, from_client, TCP_PSH | TCP_ACK, chunk, seq=base + offset)
        if not arrived or self.reset_done:
            return done, t + WIRE_GAP_S
        received.append((offset, len(chunk)))
        grew = True
        while grew:
            grew = False
            for start, size in received:
                if start <= done < start + size:
                    done, grew = start + size, True
        self.send(at + 0.0001, not from_client, TCP_ACK, ack=base + done)
        return done, t + WIRE_GAP_S


def payloads(port: int, rng: random.Random) -> tuple[bytes, bytes]:
    """A request and a response that look like the service on ``port`` (several segments)."""
    size = 3000 + rng.randrange(3000)
    if port == 6379:
        value = b"x" * size
        return (b"*2\r\n$3\r\nGET\r\n$12\r\nsession:4711\r\n",
                b"$" + str(size).encode() + b"\r\n" + value + b"\r\n")
    if port in (80, 8080):
        body = b"<html>" + b"." * size + b"</html>"
        return (b"GET /api/orders HTTP/1.1\r\nHost: app\r\nUser-Agent: lab\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)
    return (rng.randbytes(200), rng.randbytes(size))


def flow_packets(scenario: Scenario, estate: Any, index: int, window_s: float,
                 start_s: float) -> list[Seen]:
    """Every packet of flow ``index`` during the window, as each VM on its path saw it."""
    if scenario.traffic[index].port == DNS_PORT:
        return dns_flow_packets(scenario, estate, index, window_s, start_s)
    fw = flow_wire(scenario, estate, index)
    if fw is None:
        return []
    flow, src, dst_vm, dst_ip, conn = fw.flow, fw.src, fw.dst_vm, fw.dst_ip, fw.conn
    forward, reverse = fw.forward, fw.reverse
    answer = server_answer(scenario, dst_vm, flow.port) if forward.delivered else "none"
    if conn.outcome == "refused":
        answer = "rst"
    elif conn.outcome == "timeout" and reverse is not None and reverse.delivered:
        reverse = stopped_at(reverse, conn.asymmetric_at)
    count = max(1, min(int(float(flow.rate) * window_s), MAX_CONNECTIONS_PER_FLOW))
    gap = window_s / count
    seen: list[Seen] = []
    for k in range(count):
        rng = random.Random(seed(scenario.name, index, k))
        request, response = payloads(flow.port, rng)
        conv = _Conversation(
            scenario, rng, forward, reverse, ids=random.Random(seed(scenario.name, index, k, "id")),
            client=_Side(src.ip, 32768 + (index * 997 + k) % 28000, rng.randrange(2**32),
                         src.mtu - 40),
            server=_Side(dst_ip, flow.port, rng.randrange(2**32),
                         (dst_vm.mtu if dst_vm is not None else 1500) - 40),
            answer=answer)
        conv.run(start_s + k * gap + rng.random() * gap * 0.5, request, response)
        seen += conv.seen
    return seen


PacketFilter = Callable[[bytes], bool]


def capture_frames(scenario: Scenario, estate: Any, vm: str, duration_s: float, *,
                   start_s: float, keep: PacketFilter | None = None) -> list[tuple[int, bytes]]:
    """The Ethernet frames a capture on ``vm`` records: (timestamp ns, frame), in time order.

    ``duration_s`` is the capture's time limit, shortened to :data:`MAX_WINDOW_S`; packets
    after the window (late retransmissions) are not in the capture, as on Azure.
    """
    window = max(1.0, min(float(duration_s), MAX_WINDOW_S))
    end_ns = ns(start_s + window)
    frames = []
    for index in range(len(scenario.traffic)):
        for seen in flow_packets(scenario, estate, index, window * 0.8, start_s):
            if seen.vm == vm and seen.ts_ns <= end_ns and (keep is None or keep(seen.ip)):
                frames.append((seen.ts_ns, ethernet(seen.ip)))
    frames.sort(key=lambda f: f[0])
    return frames
