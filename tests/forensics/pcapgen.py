"""Tiny pcap writer for synthetic test captures (Ethernet/IPv4/IPv6, TCP, UDP, ICMP).

Tests build their own captures with ``struct`` so that the truth is known by construction.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

ETH_HDR = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"


def ip4(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def tcp_segment(sport: int, dport: int, seq: int, ack: int, flags: int, window: int,
                payload: bytes = b"", options: bytes = b"") -> bytes:
    if len(options) % 4:
        options += b"\x01" * (4 - len(options) % 4)
    doff = (20 + len(options)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       doff << 4, flags, window, 0, 0) + options + payload


def udp_datagram(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def ipv4_packet(src: bytes, dst: bytes, proto: int, l4: bytes, ident: int = 0, ttl: int = 64,
                total_len: int | None = None) -> bytes:
    tl = 20 + len(l4) if total_len is None else total_len
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, tl, ident & 0xFFFF, 0x4000, ttl, proto, 0,
                       src, dst) + l4


def ipv6_packet(src: bytes, dst: bytes, proto: int, l4: bytes, hlim: int = 64) -> bytes:
    return struct.pack("!IHBB16s16s", 0x60000000, len(l4), proto, hlim, src, dst) + l4


def ethernet(ip: bytes, v6: bool = False, vlan: int | None = None) -> bytes:
    et = b"\x86\xdd" if v6 else b"\x08\x00"
    if vlan is not None:
        return ETH_HDR + b"\x81\x00" + struct.pack("!H", vlan) + et + ip
    return ETH_HDR + et + ip


@dataclass
class PcapWriter:
    """Collects packets and writes a classic pcap (microsecond or nanosecond)."""

    linktype: int = 1
    nanosecond: bool = False
    snaplen: int = 65535
    packets: list[tuple[int, bytes, int]] = field(default_factory=list)

    def add(self, ts_ns: int, data: bytes, wirelen: int | None = None) -> None:
        self.packets.append((ts_ns, data, len(data) if wirelen is None else wirelen))

    def to_bytes(self) -> bytes:
        magic = 0xA1B23C4D if self.nanosecond else 0xA1B2C3D4
        out = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, self.snaplen, self.linktype)]
        for ts, data, wire in self.packets:
            sec, rem = divmod(ts, 1_000_000_000)
            frac = rem if self.nanosecond else rem // 1000
            cap = data[: self.snaplen]
            out.append(struct.pack("<IIII", sec, frac, len(cap), wire))
            out.append(cap)
        return b"".join(out)

    def write(self, path: str) -> None:
        with open(path, "wb") as fh:
            fh.write(self.to_bytes())


def pcapng_bytes(packets: list[tuple[int, bytes]], linktype: int = 1) -> bytes:
    """A minimal little-endian pcapng file (one interface, microsecond resolution)."""
    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    out.append(block(1, struct.pack("<HHI", linktype, 0, 65535)))
    for ts, data in packets:
        t = ts // 1000
        out.append(block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data),
                                        len(data)) + data))
    return b"".join(out)
