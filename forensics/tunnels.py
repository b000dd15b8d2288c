"""Where the inner packet of a tunnel starts, so that its TCP is analysed as tshark does.

tshark decodes IP-in-IP, 6in4, GRE (with ERSPAN and Ethernet bridging), VXLAN (UDP 4789),
Geneve (UDP 6081), MPLS and PPPoE by default and runs its TCP analysis on the innermost TCP.
A capture taken on an NVA, a gateway or an overlay node carries its traffic this way; without
decapsulation every flag of such a capture would be missing. Each helper returns the offset
of the inner network header and its ethertype, or (-1, 0) when there is nothing to decode.
Written from the RFCs (2784/2890 GRE, 7348 VXLAN, 8926 Geneve, 3032 MPLS, 2516 PPPoE).
"""

from __future__ import annotations

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
_VLAN = (0x8100, 0x88A8, 0x9100)
#: PPP protocol numbers of IP (also the 1-byte compressed form on PPP links)
PPP_TO_ETHERTYPE = {0x0021: ETH_IPV4, 0x0057: ETH_IPV6}
NONE = (-1, 0)


def ethernet_inner(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """An Ethernet frame at ``p`` (VLAN tags skipped): its network header and ethertype."""
    if p + 14 > end:
        return NONE
    return inner_by_ethertype(buf, p + 14, end, (buf[p + 12] << 8) | buf[p + 13])


def inner_by_ethertype(buf: bytes, p: int, end: int, et: int) -> tuple[int, int]:
    """Resolve VLAN tags (after a Linux cooked header), MPLS and PPPoE down to IP."""
    if et == ETH_IPV4 or et == ETH_IPV6:
        return p, et
    while et in _VLAN:
        if p + 4 > end:
            return NONE
        et = (buf[p + 2] << 8) | buf[p + 3]
        p += 4
    if et == ETH_IPV4 or et == ETH_IPV6:
        return p, et
    if et == 0x8847 or et == 0x8848:  # MPLS: labels until bottom of stack, then guess IPv4/6
        while p + 4 <= end:
            bottom = buf[p + 2] & 0x01
            p += 4
            if bottom:
                break
        else:
            return NONE
        if p >= end:
            return NONE
        ver = buf[p] >> 4
        return (p, ETH_IPV4) if ver == 4 else (p, ETH_IPV6) if ver == 6 else NONE
    if et == 0x8864:  # PPPoE session: 6-byte header, then the PPP protocol number
        if p + 8 > end:
            return NONE
        inner = PPP_TO_ETHERTYPE.get((buf[p + 6] << 8) | buf[p + 7], 0)
        return (p + 8, inner) if inner else NONE
    return NONE


def gre_inner(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """GRE version 0 (RFC 2784/2890): IP, Ethernet bridging (0x6558) or ERSPAN II/III."""
    if p + 4 > end:
        return NONE
    flags = buf[p]
    if buf[p + 1] & 0x07:  # version 1 is PPTP's enhanced GRE: not decoded here
        return NONE
    proto = (buf[p + 2] << 8) | buf[p + 3]
    p += 4 + (4 if flags & 0x80 else 0) + (4 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    if proto == 0x6558:
        return ethernet_inner(buf, p, end)
    if proto == 0x88BE:  # ERSPAN type II (with a sequence number): 8-byte header
        return ethernet_inner(buf, p + 8, end) if flags & 0x10 else NONE
    if proto == 0x22EB:  # ERSPAN type III: 12 bytes, 8 more with the optional subheader
        if p + 12 > end:
            return NONE
        return ethernet_inner(buf, p + 12 + (8 if buf[p + 11] & 0x01 else 0), end)
    return inner_by_ethertype(buf, p, end, proto)


def vxlan_inner(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """VXLAN (RFC 7348): an 8-byte header, then an Ethernet frame."""
    return ethernet_inner(buf, p + 8, end)


def geneve_inner(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """Geneve (RFC 8926): 8 bytes plus options, then the protocol its header names."""
    if p + 8 > end or buf[p] >> 6:
        return NONE
    proto = (buf[p + 2] << 8) | buf[p + 3]
    q = p + 8 + (buf[p] & 0x3F) * 4
    if proto == 0x6558:
        return ethernet_inner(buf, q, end)
    return inner_by_ethertype(buf, q, end, proto)
