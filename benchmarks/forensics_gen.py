"""A generated two-ended capture pair for the forensics benchmark (issue #21's test file).

    .venv/bin/python benchmarks/forensics_gen.py [--flows 10450] [--work /tmp/ghost-bench]

Writes ``client_end.pcap`` (A, next to the clients) and ``server_end.pcap`` (B, next to the
servers) of the same traffic: 10,450 TCP connections (handshake, a request, a response of
~90 segments each ACKed, FIN both ways) from 60 clients to 6 servers, ~100 at a time, plus
a DNS lookup before every tenth connection. One data segment in 400 from the servers is lost
between the two points: B holds it, A does not; the client's duplicate ACKs and the server's
retransmission are in both. B's clock is 5 ms ahead and the path takes 2 ms each way. With
the defaults A holds about a million packets (~717 MB). Files are cached: an existing pair
with the same parameters is reused.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import struct
import sys
import time
from collections.abc import Iterator

ETH = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
_REC = struct.Struct("<IIII")
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_UDP = struct.Struct("!HHHH")
MSS = 1348
CONCURRENT = 100
LOSS_EVERY = 400
OWD_NS = 2_000_000
OFFSET_NS = 5_000_000
STEP_NS = 9_000  # between two packets at the client end
SYN_OPTS = b"\x02\x04\x05\x08\x01\x03\x03\x07"  # MSS, NOP, window scale 7


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"",
         opts: bytes = b"") -> bytes:
    return _TCP.pack(sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                     (20 + len(opts)) << 2, flags, 512, 0, 0) + opts + payload


class _Host:
    __slots__ = ("addr", "ipid")

    def __init__(self, addr: bytes) -> None:
        self.addr = addr
        self.ipid = 0

    def ip(self, dst: bytes, proto: int, l4: bytes, ttl: int) -> bytes:
        self.ipid = (self.ipid + 1) & 0xFFFF
        return ETH + _IP.pack(0x45, 0, 20 + len(l4), self.ipid, 0x4000, ttl, proto, 0,
                              self.addr, dst) + l4


def _conversation(rng: random.Random, n: int, cli: _Host, srv: _Host, sport: int,
                  lost: list[int]) -> Iterator[tuple[int, bytes, bool]]:
    """Packets of one connection in client-end order: (direction 0 = client sends, packet,
    lost before the client end). Packets are built when their turn comes (IP IDs in order)."""
    c_isn, s_isn = rng.randrange(1 << 32), rng.randrange(1 << 32)
    c, s = c_isn + 1, s_isn + 1
    a, b = cli.addr, srv.addr
    yield 0, cli.ip(b, 6, _tcp(sport, 443, c_isn, 0, 0x02, opts=SYN_OPTS), 64), False
    yield 1, srv.ip(a, 6, _tcp(443, sport, s_isn, c, 0x12, opts=SYN_OPTS), 60), False
    yield 0, cli.ip(b, 6, _tcp(sport, 443, c, s, 0x10), 64), False
    req = bytes(300)
    yield 0, cli.ip(b, 6, _tcp(sport, 443, c, s, 0x18, req), 64), False
    c += len(req)
    segs = 43 + rng.randrange(4)
    pending: list[int] = []  # sequence numbers lost on the way to the client
    for i in range(segs):
        size = MSS if i < segs - 1 else 1 + rng.randrange(MSS)
        pay = bytes(size)
        lose = (n * 53 + i) % LOSS_EVERY == 0 and i < segs - 3
        if lose:
            lost[0] += 1
            pending.append(s)
            yield 1, srv.ip(a, 6, _tcp(443, sport, s, c, 0x10, pay), 60), True
            s += size
            continue
        yield 1, srv.ip(a, 6, _tcp(443, sport, s, c, 0x18, pay), 60), False
        s += size
        if pending:
            # the client asks again for the hole: duplicate ACKs, then the retransmission
            hole = pending[0]
            yield 0, cli.ip(b, 6, _tcp(sport, 443, c, hole, 0x10), 64), False
            yield 0, cli.ip(b, 6, _tcp(sport, 443, c, hole, 0x10), 64), False
            yield 1, srv.ip(a, 6, _tcp(443, sport, hole, c, 0x18, bytes(MSS)), 60), False
            pending.clear()
        yield 0, cli.ip(b, 6, _tcp(sport, 443, c, s, 0x10), 64), False
    yield 1, srv.ip(a, 6, _tcp(443, sport, s, c, 0x11), 60), False
    yield 0, cli.ip(b, 6, _tcp(sport, 443, c, s + 1, 0x11), 64), False
    yield 1, srv.ip(a, 6, _tcp(443, sport, s + 1, c + 1, 0x10), 60), False


def _dns(n: int, cli: _Host, dns: _Host) -> Iterator[tuple[int, bytes, bool]]:
    name = b"".join(bytes((len(p),)) + p for p in (f"svc{n % 37}".encode(), b"example",
                                                    b"net")) + b"\x00"
    q = struct.pack("!HHHHHH", n & 0xFFFF, 0x0100, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01"
    r = (struct.pack("!HHHHHH", n & 0xFFFF, 0x8180, 1, 1, 0, 0) + name + b"\x00\x01\x00\x01"
         + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04" + dns.addr)
    sport = 40000 + n % 20000
    yield 0, cli.ip(dns.addr, 17, _UDP.pack(sport, 53, 8 + len(q), 0) + q, 64), False
    yield 1, dns.ip(cli.addr, 17, _UDP.pack(53, sport, 8 + len(r), 0) + r, 60), False


def _events(flows: int, seed: int) -> Iterator[tuple[int, int, bytes, bool]]:
    """(client-end time, direction, packet, lost before the client end), in client-end order."""
    rng = random.Random(seed)
    clients = [_Host(bytes((10, 0, i // 200, i % 200 + 1))) for i in range(60)]
    servers = [_Host(bytes((10, 1, 0, i + 5))) for i in range(6)]
    resolver = _Host(bytes((10, 1, 1, 53)))
    lost = [0]
    active: list[Iterator[tuple[int, bytes, bool]]] = []
    started = 0
    t = 1_700_000_000 * 1_000_000_000
    while started < flows or active:
        while len(active) < CONCURRENT and started < flows:
            cli = clients[started % len(clients)]
            if started % 10 == 0:
                active.append(_dns(started, cli, resolver))
            active.append(_conversation(rng, started, cli, servers[started % len(servers)],
                                        20000 + started % 40000, lost))
            started += 1
        i = rng.randrange(len(active))
        for d, pkt, gone in active[i]:
            t += STEP_NS
            yield t, d, pkt, gone
            if rng.random() < 0.5:
                break
        else:
            active[i] = active[-1]
            active.pop()


def _write_pair(path_a: str, path_b: str, flows: int, seed: int) -> tuple[int, int]:
    """Write both ends; returns their packet counts."""
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    rec = _REC.pack
    na = nb = 0
    heap: list[tuple[int, int, bytes]] = []  # B's packets, reordered by B's clock
    with open(path_a + ".tmp", "wb", buffering=16 << 20) as fa, \
            open(path_b + ".tmp", "wb", buffering=16 << 20) as fb:
        fa.write(head)
        fb.write(head)
        out_a: list[bytes] = []
        out_b: list[bytes] = []
        for k, (t, d, pkt, gone) in enumerate(_events(flows, seed)):
            # the client end sees a server packet OWD after the server end sent it
            tb = t + OFFSET_NS + (OWD_NS if d == 0 else -OWD_NS)
            heapq.heappush(heap, (tb, k, pkt))
            if not gone:
                sec, ns = divmod(t, 1_000_000_000)
                out_a.append(rec(sec, ns // 1000, len(pkt), len(pkt)))
                out_a.append(pkt)
                na += 1
            horizon = t + OFFSET_NS - 2 * OWD_NS
            while heap and heap[0][0] < horizon:
                tb, _k, p = heapq.heappop(heap)
                sec, ns = divmod(tb, 1_000_000_000)
                out_b.append(rec(sec, ns // 1000, len(p), len(p)))
                out_b.append(p)
                nb += 1
            if len(out_a) > 40000:
                fa.write(b"".join(out_a))
                out_a = []
            if len(out_b) > 40000:
                fb.write(b"".join(out_b))
                out_b = []
        while heap:
            tb, _k, p = heapq.heappop(heap)
            sec, ns = divmod(tb, 1_000_000_000)
            out_b.append(rec(sec, ns // 1000, len(p), len(p)))
            out_b.append(p)
            nb += 1
        fa.write(b"".join(out_a))
        fb.write(b"".join(out_b))
    os.replace(path_a + ".tmp", path_a)
    os.replace(path_b + ".tmp", path_b)
    return na, nb


def two_ended_pair(work: str, flows: int = 10_450, seed: int = 21) -> tuple[str, str]:
    """Paths of the pair under ``work`` (generated once, then reused)."""
    os.makedirs(work, exist_ok=True)
    tag = f"{flows}f_s{seed}_v1"
    path_a = os.path.join(work, f"client_end_{tag}.pcap")
    path_b = os.path.join(work, f"server_end_{tag}.pcap")
    if not (os.path.isfile(path_a) and os.path.isfile(path_b)):
        _write_pair(path_a, path_b, flows, seed)
    return path_a, path_b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=10_450)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--work", default="/tmp/ghost-bench", help="where the pair is cached")
    args = ap.parse_args()
    t0 = time.perf_counter()
    a, b = two_ended_pair(args.work, args.flows, args.seed)
    print(f"{a} ({os.path.getsize(a) / 1e6:.0f} MB)\n{b} ({os.path.getsize(b) / 1e6:.0f} MB)"
          f"\nin {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
