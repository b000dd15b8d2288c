"""Which share of a parallel analysis (parallel.py) takes a packet: the rule, in one place.

A plain TCP or UDP packet over IPv4/IPv6 goes to the share that owns the bucket its flow
hashes to, the hash symmetric in the two directions so that both sides of a flow meet in one
share. Share 0
takes everything whose flow cannot be told from the first headers or whose analysis spans
flows: fragments, tunnels (VXLAN, Geneve, GRE, IP in IP), ICMP, DNS, non-IP packets, cut-off
headers and exotic link types. The pcap reader applies the IPv4 case of this rule to whole
chunks with numpy (``share_reader.shares_of_chunk``); ``share_of`` and ``share_of_record`` are
the general case, also used by the analyzer for pcapng.
"""

from __future__ import annotations

import functools
import struct

#: fragment flags/offset, protocol, addresses and ports of an IPv4 header without options
V4OWN = struct.Struct("!HxB2xIIHH").unpack_from
_V6OWN = struct.Struct("!QQQQHH").unpack_from
_U16 = struct.Struct("!H").unpack_from
#: link types decoded inline by the analyzer, whose packets are split by flow
FAST_LINKTYPES = frozenset((1, 113, 276, 101, 12, 14, 228, 229, 0, 108))
#: ports whose packets go to share 0 whole: DNS (its exchanges span flows), VXLAN and Geneve
#: (tunnels), and 0
SPECIAL_PORTS = frozenset((53, 5353, 5355, 4789, 6081, 0))
#: flows hash into this many buckets, each owned by one share (``owners``)
BUCKETS = 256
#: share 0's load against another share's (see ``owners``)
SHARE0_WEIGHT = 0.64


def share_of(buf: bytes, l3: int, end: int, et: int, shares: int) -> int:
    """The share of the packet whose network header (EtherType ``et``) starts at ``l3``."""
    if et == 0x0800 and l3 + 20 <= end:
        ihl = (buf[l3] & 0x0F) * 4
        if buf[l3] >> 4 != 4 or ihl < 20 or l3 + ihl + 4 > end:
            return 0
        fragw, proto, x, y, sport, dport = V4OWN(buf, l3 + 6)
        if ihl != 20:
            sport, dport = _U16(buf, l3 + ihl)[0], _U16(buf, l3 + ihl + 2)[0]
        if fragw & 0x3FFF or (proto != 6 and proto != 17):
            return 0
    elif et == 0x86DD and l3 + 44 <= end:
        proto = buf[l3 + 6]
        if proto != 6 and proto != 17:
            return 0
        a, b, c, d, sport, dport = _V6OWN(buf, l3 + 8)
        x, y = a ^ c, b ^ d
        x = (x ^ (x >> 32) ^ y ^ (y >> 32)) & 0xFFFFFFFF
        y = 0
    else:
        return 0
    if sport in SPECIAL_PORTS or dport in SPECIAL_PORTS:
        return 0
    x ^= y ^ sport ^ dport
    table: tuple[int, ...] = owners(shares)
    return table[int(x ^ (x >> 16) ^ (x >> 8)) % BUCKETS]


@functools.cache
def owners(shares: int) -> tuple[int, ...]:
    """The share of each hash bucket. Share 0 gets about 2/3 of another share's buckets: it
    also walks the file for every share (share_reader.py), takes the packets whose flow
    cannot be told, and builds the report after the merge."""
    if shares <= 1:
        return (0,) * BUCKETS
    weights = [SHARE0_WEIGHT] + [1.0] * (shares - 1)
    given = [0] * shares
    table = []
    for _ in range(BUCKETS):  # interleaved, each bucket to the share furthest below its due
        k = min(range(shares), key=lambda i: (given[i] + 1) / weights[i])
        given[k] += 1
        table.append(k)
    return tuple(table)


def share_of_record(buf: bytes, off: int, caplen: int, linktype: int, shares: int) -> int:
    """The share of a whole record: its link header decoded as the analyzer does."""
    end = off + caplen
    if linktype == 1:
        if caplen < 14:
            return 0
        et = _U16(buf, off + 12)[0]
        l3 = off + 14
        while et in (0x8100, 0x88A8, 0x9100) and l3 + 4 <= end:
            et = _U16(buf, l3 + 2)[0]
            l3 += 4
    elif linktype == 113:
        if caplen < 16:
            return 0
        et, l3 = _U16(buf, off + 14)[0], off + 16
    elif linktype == 276:
        if caplen < 20:
            return 0
        et, l3 = _U16(buf, off)[0], off + 20
    elif linktype in (101, 12, 14, 228, 229):
        if not caplen:
            return 0
        l3 = off
        ver = buf[off] >> 4
        et = 0x0800 if ver == 4 else 0x86DD if ver == 6 else 0
    elif linktype in (0, 108):
        if caplen < 4:
            return 0
        l3 = off + 4
        fam = buf[off] | buf[off + 3]
        et = 0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else 0
    else:
        return 0
    return share_of(buf, l3, end, et, shares)
