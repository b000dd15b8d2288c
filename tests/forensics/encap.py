"""Re-encapsulate an Ethernet capture: tunnels, other link types, duplicates, truncation.

Each transform keeps the TCP segments byte for byte, so tshark must flag the same frames in
the result; the differential tests check that we follow it through every wrapping.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from lab.packets import ETH_HDR
from lab.pcap import PcapWriter

Packet = tuple[int, bytes, int]  # (ts ns, captured bytes, wire length)
Transform = Callable[[bytes], bytes]


def _ip4(proto: int, payload: bytes) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0x4000, 64, proto, 0,
                       b"\xc0\xa8\x01\x01", b"\xc0\xa8\x01\x02") + payload


def _udp(dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", 40000, dport, 8 + len(payload), 0) + payload


def _outer(payload: bytes) -> bytes:
    return ETH_HDR + b"\x08\x00" + payload


def _is_v4(f: bytes) -> bool:
    return f[12:14] == b"\x08\x00"


def _ppp_proto(f: bytes) -> bytes:
    return b"\x00\x21" if _is_v4(f) else b"\x00\x57"


def _dot11(f: bytes) -> bytes:
    hdr = b"\x88\x02\x00\x00" + b"\x02" * 6 + b"\x04" * 6 + b"\x06" * 6 + b"\x10\x00"
    return hdr + b"\x00\x00" + b"\xaa\xaa\x03\x00\x00\x00" + f[12:]  # QoS data, LLC/SNAP


# name -> (link type of the result, transform of one Ethernet frame)
ENCAPSULATIONS: dict[str, tuple[int, Transform]] = {
    "vlan": (1, lambda f: f[:12] + b"\x81\x00\x00\x64" + f[12:]),
    "qinq": (1, lambda f: f[:12] + b"\x88\xa8\x00\x0a\x81\x00\x00\x64" + f[12:]),
    "sll": (113, lambda f: struct.pack("!HHH8s", 0, 772, 6, b"") + f[12:]),
    "sll2": (276, lambda f: f[12:14] + b"\0\0" + struct.pack("!IHBB8s", 1, 772, 0, 6, b"")
             + f[14:]),
    "sll_vlan": (113, lambda f: struct.pack("!HHH8s", 0, 772, 6, b"") + b"\x81\x00\x00\x64"
                 + f[12:]),
    "raw": (101, lambda f: f[14:]),
    "null": (0, lambda f: struct.pack("<I", 2 if _is_v4(f) else 30) + f[14:]),
    "ppp": (9, lambda f: b"\xff\x03" + _ppp_proto(f) + f[14:]),
    "chdlc": (104, lambda f: b"\x0f\x00" + f[12:]),
    "ieee80211": (105, _dot11),
    "radiotap": (127, lambda f: struct.pack("<BBHI", 0, 0, 8, 0) + _dot11(f)),
    "ipip": (1, lambda f: _outer(_ip4(4 if _is_v4(f) else 41, f[14:]))),
    "gre": (1, lambda f: _outer(_ip4(47, b"\x00\x00" + f[12:14] + f[14:]))),
    "gre_eth": (1, lambda f: _outer(_ip4(47, b"\x20\x00\x65\x58" + b"\0\0\0\x07" + f))),
    "vxlan": (1, lambda f: _outer(_ip4(17, _udp(4789, struct.pack("!II", 0x08000000, 25600)
                                                 + f)))),
    "geneve": (1, lambda f: _outer(_ip4(17, _udp(6081, struct.pack("!HHI", 0, 0x6558, 25600)
                                                  + f)))),
    "mpls": (1, lambda f: ETH_HDR + b"\x88\x47" + struct.pack("!I", (16 << 12) | 0x140)
             + f[14:]),
    "pppoe": (1, lambda f: ETH_HDR + b"\x88\x64" + struct.pack("!BBHH", 0x11, 0, 1, len(f) - 12)
              + _ppp_proto(f) + f[14:]),
}


def encapsulate(w: PcapWriter, name: str) -> PcapWriter:
    """The same packets in another encapsulation (wire lengths grow with the headers)."""
    linktype, fn = ENCAPSULATIONS[name]
    out = PcapWriter(linktype=linktype, nanosecond=w.nanosecond, snaplen=w.snaplen)
    for ts, data, wire in w.packets:
        new = fn(data)
        out.add(ts, new, wire + len(new) - len(data))
    return out


def duplicated(w: PcapWriter, delay_ns: int) -> PcapWriter:
    """Every packet captured twice (as a capture on two interfaces, or a mirror, gives).

    With a delay shorter than the gap between packets the copies interleave and the
    timestamps go backwards now and then.
    """
    out = PcapWriter(linktype=w.linktype, snaplen=w.snaplen)
    for ts, data, wire in w.packets:
        out.add(ts, data, wire)
        out.add(ts + delay_ns, data, wire)
    return out


def truncated(w: PcapWriter, snaplen: int) -> PcapWriter:
    """Packets cut at ``snaplen`` bytes, as a capture with a snap length stores them."""
    out = PcapWriter(linktype=w.linktype, snaplen=snaplen)
    for ts, data, wire in w.packets:
        out.add(ts, data[:snaplen], wire)
    return out


def fragmented(w: PcapWriter, size: int, reverse: bool = False) -> PcapWriter:
    """IP datagrams of Ethernet frames split into fragments carrying ``size`` bytes or fewer.

    IPv4 fragments share the header (DF cleared, a fresh identification); IPv6 ones get a
    fragment header. With ``reverse`` the fragments of a datagram are sent last first.
    """
    out = PcapWriter(linktype=w.linktype, nanosecond=w.nanosecond, snaplen=w.snaplen)
    size -= size % 8
    ident = 0x100
    for ts, data, _wire in w.packets:
        v4 = _is_v4(data)
        hlen = 20 if v4 else 40
        ip = data[14:]
        body = ip[hlen:]
        if len(body) <= size:
            out.add(ts, data, len(data))
            continue
        ident += 1
        frags = []
        for off in range(0, len(body), size):
            part = body[off: off + size]
            more = off + size < len(body)
            if v4:
                hdr = ip[:2] + struct.pack("!HHH", 20 + len(part), ident & 0xFFFF,
                                           (off >> 3) | (0x2000 if more else 0)) + ip[8:20]
            else:
                fh = struct.pack("!BBHI", ip[6], 0, off | int(more), ident)
                hdr = ip[:4] + struct.pack("!HB", 8 + len(part), 44) + ip[7:40] + fh
            frags.append(data[:14] + hdr + part)
        for i, f in enumerate(reversed(frags) if reverse else frags):
            out.add(ts + i * 1000, f, len(f))
    return out


def to_ipv6(w: PcapWriter, ext: bool = False) -> PcapWriter:
    """IPv4 Ethernet frames as IPv6 (addresses mapped into 2001::/16), the transport unchanged.

    With ``ext`` every datagram also carries a hop-by-hop and a destination-options header.
    """
    out = PcapWriter(linktype=w.linktype, nanosecond=w.nanosecond, snaplen=w.snaplen)
    for ts, data, _wire in w.packets:
        if not _is_v4(data):
            out.add(ts, data, len(data))
            continue
        ip = data[14:]
        body = ip[(ip[0] & 15) * 4:]
        nh = ip[9]
        if ext:
            pad = b"\x01\x04\x00\x00\x00\x00"  # PadN: 8-byte headers
            body = bytes([60, 0]) + pad + bytes([nh, 0]) + pad + body
            nh = 0
        src, dst = b"\x20\x01" + bytes(10) + ip[12:16], b"\x20\x01" + bytes(10) + ip[16:20]
        new = (data[:12] + b"\x86\xdd"
               + struct.pack("!IHBB16s16s", 0x60000000, len(body), nh, 64, src, dst) + body)
        out.add(ts, new, len(new))
    return out
