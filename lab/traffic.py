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

from lab.model import Vm
from lab.model_v2 import LbProbe
from lab.network import lb
from lab.network.tags import AZURE_PLATFORM_IP
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
from lab.traffic_dns import DNS_PORT, PLATFORM, dns_flow_packets
from lab.wire import (
    INITIAL_TTL,
    FlowWire,
    Path,
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
    # (format 2: "proxy", a firewall's proxy that answers the handshake, then refuses)
    carried: dict[str, int] = field(default_factory=dict)
    reset_done: bool = False
    payload: tuple[bytes, bytes] = (b"", b"")
    flow_wire: FlowWire | None = None  # the model's view of this connection (flow logs)

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
            if arrived and self.answer in ("synack", "proxy"):
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
        if self.answer == "proxy" and self.server.port != 80:
            # Azure Firewall's proxy: a denied TLS session gets a RST after the ClientHello
            self.send(t + 0.0005, False, TCP_RST | TCP_ACK)
            return
        if self.answer == "proxy":
            response = HTTP_470
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


#: Azure Firewall's answer to a denied HTTP request (widely reported, not documented)
HTTP_470 = (b"HTTP/1.1 470 status code 470\r\nContent-Type: text/plain\r\nContent-Length: 67"
            b"\r\n\r\nAction: Deny. Reason: No rule matched. Proceeding with default action.")


def tls_hello(rng: random.Random, sni: str | None) -> bytes:
    """A TLS 1.2 ClientHello record carrying ``sni`` (format 2's HTTPS requests)."""
    ext = b""
    if sni:
        name = sni.encode()
        entry = b"\x00" + len(name).to_bytes(2, "big") + name
        body = len(entry).to_bytes(2, "big") + entry
        ext = b"\x00\x00" + len(body).to_bytes(2, "big") + body
    hello = (b"\x03\x03" + rng.randbytes(32) + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00"
             + len(ext).to_bytes(2, "big") + ext)
    handshake = b"\x01" + len(hello).to_bytes(3, "big") + hello
    return b"\x16\x03\x01" + len(handshake).to_bytes(2, "big") + handshake


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
    count = max(1, min(int(float(fw.flow.rate) * window_s), MAX_CONNECTIONS_PER_FLOW))
    gap = window_s / count
    seen: list[Seen] = []
    for k in range(count):
        conv = connection(scenario, estate, index, k, fw)
        if conv is None:
            continue
        conv.run(start_s + k * gap + conv.rng.random() * gap * 0.5, *conv.payload)
        seen += conv.seen
    return seen


def _answer(scenario: Scenario, fw: FlowWire) -> tuple[str, Path | None]:
    """What the far end does with the SYN, and the answer's path (cut where it dies)."""
    conn, reverse = fw.conn, fw.reverse
    answer = server_answer(scenario, fw.dst_vm, fw.flow.port) if fw.forward.delivered else "none"
    if conn.outcome == "refused":
        answer = "rst"
    elif conn.outcome == "timeout" and reverse is not None and reverse.delivered:
        reverse = stopped_at(reverse, conn.asymmetric_at)
    elif scenario.format >= 2 and conn.outcome == "connected":
        answer = "proxy" if conn.refused_by_proxy else "synack"
    elif scenario.format >= 2 and conn.outcome == "timeout":
        answer = "none"
    return answer, reverse


def _snat_failed(scenario: Scenario, fw: FlowWire, index: int, k: int) -> bool:
    """A ``snat_exhaustion`` fault at the flow's translator fails this new connection with its
    probability (seeded per connection)."""
    for fault in fw.conn.faults:
        if fault.kind == "snat_exhaustion" and fw.conn.forward.snat == fault.at:
            draw = random.Random(seed(scenario.name, index, k, "snat")).random() * 100
            if draw < float(fault.percent or 0):
                return True
    return False


def connection(scenario: Scenario, estate: Any, index: int, k: int,
               fw: FlowWire | None = None) -> _Conversation | None:
    """Connection ``k`` of flow ``index``, ready to ``run`` (None: its client sends nothing).
    Format 2 picks its load balancer backend by ``k`` and may fail its SNAT."""
    flow = scenario.traffic[index]
    client_port = 32768 + (index * 997 + k) % 28000
    if scenario.format >= 2:  # the model's addresses are this connection's (NAT views)
        fw = flow_wire(scenario, estate, index, choose=k, src_port=client_port)
    if fw is None:
        return None
    answer, reverse = _answer(scenario, fw)
    forward = fw.forward
    if scenario.format >= 2 and _snat_failed(scenario, fw, index, k):
        snat = fw.conn.forward.snat
        hops = forward.hops[:forward.hops.index(snat) + 1] if snat in forward.hops else (
            forward.hops[:1])
        forward = Path(hops, False, forward.one_way_s, forward.views[:len(hops)])
        answer, reverse = "none", None
    rng = random.Random(seed(scenario.name, index, k))
    request, response = payloads(flow.port, rng)
    if scenario.format >= 2 and flow.port == 443:
        request = tls_hello(rng, flow.fqdn or estate.default_fqdn(fw.dst_ip))
    dst_mtu = fw.dst_vm.mtu if fw.dst_vm is not None else 1500
    conv = _Conversation(
        scenario, rng, forward, reverse, ids=random.Random(seed(scenario.name, index, k, "id")),
        jitter_rng=random.Random(seed(scenario.name, index, k, "jitter")),
        client=_Side(fw.src.ip, client_port, rng.randrange(2**32), fw.src.mtu - 40),
        server=_Side(fw.dst_ip, flow.port, rng.randrange(2**32), dst_mtu - 40),
        answer=answer)
    conv.payload = (request, response)
    conv.flow_wire = fw
    return conv


def probe_packets(scenario: Scenario, vm_name: str, window_s: float,
                  start_s: float) -> list[Seen]:
    """Format 2: the health probes a pool VM's guest sees, one every ``interval`` of each probe
    its load balancers' rules use: from 168.63.129.16, answered and closed (up), answered by RST
    (nothing listens), or absent (an NSG dropped it before the guest; a stopped VM)."""
    vm = scenario.vm(vm_name)
    if scenario.format < 2 or vm is None or vm.power_state != "running":
        return []
    probes = {p.name + "@" + b.name: (b, p) for b in scenario.pool_lbs(vm_name)
              for r in b.rules if r.probe and (pool := b.pool(r.pool)) and vm_name in pool.vms
              for p in (b.probe(r.probe),) if p is not None}
    seen: list[Seen] = []
    for key, (_, probe) in sorted(probes.items()):
        count = max(1, int(window_s // probe.interval))
        for k in range(count):
            conv = probe_connection(scenario, vm, probe, key, k)
            if conv is None:
                break  # dropped by an NSG before the guest: the capture shows nothing
            conv.run(start_s + k * probe.interval + conv.rng.random() * 0.5, *conv.payload)
            seen += conv.seen
    return seen


def probe_connection(scenario: Scenario, vm: Vm, probe: LbProbe, key: str,
                     k: int) -> _Conversation | None:
    """Probe number ``k`` from 168.63.129.16 to ``vm``, ready to run (None: an NSG drops it)."""
    verdict = lb.probe_vm(scenario, probe, vm)
    if verdict.denied_by is not None or vm.power_state != "running":
        return None
    answer = "synack" if lb.listening(scenario, vm, probe.port) else "rst"
    forward = Path((PLATFORM, vm.name), True, 0.0002)
    reverse = Path((vm.name, PLATFORM), True, 0.0002)
    http = probe.protocol in ("Http", "Https")
    request = (f"GET {probe.path or '/'} HTTP/1.1\r\nHost: {vm.ip}:{probe.port}\r\n"
               "User-Agent: Load Balancer Agent\r\nConnection: close\r\n\r\n").encode()
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"
    rng = random.Random(seed(scenario.name, "probe", key, k))
    conv = _Conversation(
        scenario, rng, forward, reverse, ids=random.Random(seed(key, k, "id")),
        client=_Side(AZURE_PLATFORM_IP, 49152 + rng.randrange(16000), rng.randrange(2**32),
                     1460),
        server=_Side(vm.ip, probe.port, rng.randrange(2**32), vm.mtu - 40),
        answer=answer)
    conv.payload = (request, response) if http else (b"", b"")
    return conv


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
    every = [seen for index in range(len(scenario.traffic))
             for seen in flow_packets(scenario, estate, index, window * 0.8, start_s)]
    every += probe_packets(scenario, vm, window * 0.8, start_s)
    for seen in every:
        if seen.vm == vm and seen.ts_ns <= end_ns and (keep is None or keep(seen.ip)):
            frames.append((seen.ts_ns, ethernet(seen.ip)))
    frames.sort(key=lambda f: f[0])
    return frames
