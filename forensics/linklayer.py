"""Less common link types: a few decoded here directly, the rest found by scapy.

The common link types (Ethernet, Linux cooked v1/v2, raw IP, BSD loopback) are decoded
inline by the analyzer. PPP, Cisco HDLC, 802.11 and radiotap are decoded by ``known_l3``
(a few byte reads); anything else goes to scapy, one packet at a time, which is slow but
only happens for exotic captures.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .tunnels import PPP_TO_ETHERTYPE

#: link type -> bytes before the IP header, for the layouts decoded a chunk at a time with
#: numpy (share_reader.py, compare_fast.py); the raw IP types carry IPv4 or IPv6
L3_AT = {1: 14, 113: 16, 101: 0, 12: 0, 14: 0, 228: 0, 229: 0}
#: link type -> where its EtherType is (the raw IP types have none: the version nibble says)
ET_AT = {1: 12, 113: 14}

_failed: set[int] = set()


@lru_cache(maxsize=32)
def _l2_class(linktype: int) -> Any:
    try:
        import scapy.layers.all  # noqa: F401 - registers the link types
        from scapy.config import conf  # imported lazily: slow to load, rarely needed
    except Exception:  # pragma: no cover - scapy missing or broken
        return None
    return conf.l2types.get(linktype)


def fallback_l3_offset(linktype: int, data: bytes) -> int:
    """Offset of the IPv4/IPv6 header inside ``data``, or -1 when none can be found."""
    if linktype in _failed:
        return -1
    cls = _l2_class(linktype)
    if cls is None:
        _failed.add(linktype)
        return -1
    try:
        pkt = cls(data)
    except Exception:
        return -1
    layer = pkt
    consumed = 0
    while layer is not None and getattr(layer, "name", "") not in ("IP", "IPv6"):
        payload = getattr(layer, "payload", None)
        if payload is None or not len(payload):
            return -1
        consumed = len(data) - len(bytes(payload))
        layer = payload
    if layer is None:
        return -1
    return consumed if 0 <= consumed < len(data) else -1


def known_l3(linktype: int, buf: bytes, off: int, end: int) -> tuple[int, int]:
    """(absolute offset of the network header, ethertype) for the link types decoded here.

    (-1, 0): a frame of a known type that carries no IP (control, management, encrypted);
    (-2, 0): a link type not decoded here (the caller asks scapy).
    """
    if linktype == 9 or linktype == 50:  # PPP, PPP in HDLC framing
        p = off + 2 if end - off >= 2 and buf[off] == 0xFF and buf[off + 1] == 0x03 else off
        if p + 2 > end:
            return -1, 0
        if buf[p] & 0x01:  # protocol field compressed to one byte
            et = PPP_TO_ETHERTYPE.get(buf[p], 0)
            return (p + 1, et) if et else (-1, 0)
        et = PPP_TO_ETHERTYPE.get((buf[p] << 8) | buf[p + 1], 0)
        return (p + 2, et) if et else (-1, 0)
    if linktype == 104:  # Cisco HDLC: address, control, ethertype
        if end - off < 4:
            return -1, 0
        et = (buf[off + 2] << 8) | buf[off + 3]
        return (off + 4, et) if et in (0x0800, 0x86DD) else (-1, 0)
    if linktype == 105:
        return _ieee80211(buf, off, end)
    if linktype == 127:  # radiotap: its own length, then 802.11
        if end - off < 4:
            return -1, 0
        return _ieee80211(buf, off + (buf[off + 2] | (buf[off + 3] << 8)), end)
    return -2, 0


def _ieee80211(buf: bytes, p: int, end: int) -> tuple[int, int]:
    """An unencrypted 802.11 data frame with LLC/SNAP: where its IP packet starts."""
    if end - p < 24:
        return -1, 0
    fc0, fc1 = buf[p], buf[p + 1]
    subtype = fc0 >> 4
    if (fc0 >> 2) & 0x03 != 2 or subtype & 0x04 or fc1 & 0x40:  # not data, null, protected
        return -1, 0
    hdr = 24 + (6 if fc1 & 0x03 == 0x03 else 0)
    if subtype & 0x08:  # QoS data: QoS control, and HT control when the order bit is set
        hdr += 2 + (4 if fc1 & 0x80 else 0)
    q = p + hdr
    if end - q < 8 or buf[q : q + 6] != b"\xaa\xaa\x03\x00\x00\x00":
        return -1, 0
    et = (buf[q + 6] << 8) | buf[q + 7]
    return (q + 8, et) if et in (0x0800, 0x86DD) else (-1, 0)
