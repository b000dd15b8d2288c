"""Fallback for unusual link types: let scapy find where the IP header starts.

The common link types (Ethernet, Linux cooked v1/v2, raw IP, BSD loopback) are decoded
inline by the analyzer; anything else comes here, one packet at a time, which is slow
but only happens for exotic captures.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

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
