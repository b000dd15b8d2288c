"""The match key of one packet, for the two-ended comparison (compare.py, compare_fast.py).

The key is the packet's identity as both ends see it: IP ID, ports, TCP seq/ack/flags and
payload length, or for UDP and the rest the length and a CRC of the first payload bytes;
never TTL, checksums, MACs or addresses (NAT rewrites those).
"""

from __future__ import annotations

import struct
import zlib

_U16 = struct.Struct("!H").unpack_from
_TCP = struct.Struct("!HHIIBB").unpack_from
Decoded = tuple[tuple[int, ...], bytes, bytes, int, bool]  # key, src, dst, ttl, offload-sized
# version/IHL, total length, IP ID, TTL, protocol, addresses
_IP4 = struct.Struct("!BxHH2xBB2x4s4s").unpack_from


def decode_packet(buf: bytes, off: int, caplen: int, wirelen: int, lt: int) -> Decoded | None:
    """Just enough of one IP packet to build its match key (None: not IP, or cut short)."""
    end = off + caplen
    if lt == 1:
        if caplen < 14:
            return None
        et = _U16(buf, off + 12)[0]
        l3 = off + 14
        while et in (0x8100, 0x88A8) and l3 + 4 <= end:
            et = _U16(buf, l3 + 2)[0]
            l3 += 4
    elif lt == 113:
        et, l3 = (_U16(buf, off + 14)[0] if caplen >= 16 else 0), off + 16
    elif lt == 276:
        et, l3 = (_U16(buf, off)[0] if caplen >= 20 else 0), off + 20
    elif lt in (101, 12, 14, 228, 229) and caplen:
        l3 = off
        et = 0x0800 if buf[off] >> 4 == 4 else 0x86DD
    elif lt in (0, 108) and caplen >= 4:
        l3 = off + 4
        fam = buf[off] | buf[off + 3]
        et = 0x0800 if fam == 2 else 0x86DD
    else:
        return None
    if et == 0x0800 and l3 + 20 <= end:
        vihl, raw_len, ipid, ttl, proto, src, dst = _IP4(buf, l3)
        ihl = (vihl & 15) * 4
        iplen = raw_len or (wirelen - (l3 - off))
        big = raw_len == 0 or iplen > 1500
        l4 = l3 + ihl
        l4len = iplen - ihl
    elif et == 0x86DD and l3 + 40 <= end:
        ipid = 0
        ttl = buf[l3 + 7]
        proto = buf[l3 + 6]
        src, dst = buf[l3 + 8 : l3 + 24], buf[l3 + 24 : l3 + 40]
        l4 = l3 + 40
        l4len = _U16(buf, l3 + 4)[0] or (wirelen - (l3 - off) - 40)
        big = l4len + 40 > 1500
    else:
        return None
    if proto == 6 and l4 + 14 <= end:
        sport, dport, seq, ack, doff, fl = _TCP(buf, l4)
        key: tuple[int, ...] = (6, ipid, sport, dport, seq, ack, fl & 0x3F,
                                l4len - (doff >> 4) * 4)
    elif proto == 17 and l4 + 8 <= end:
        sport, dport = _U16(buf, l4)[0], _U16(buf, l4 + 2)[0]
        key = (17, ipid, sport, dport, l4len, zlib.crc32(buf[l4 + 8 : min(end, l4 + 40)]))
    elif l4 < end:
        key = (proto, ipid, l4len, zlib.crc32(buf[l4 : min(end, l4 + 32)]))
    else:
        return None
    return key, src, dst, ttl, big
