"""A minimal classic-pcap writer: a real TCP conversation with one retransmission."""

from __future__ import annotations

import struct

_ETH = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"


def _ip(src: bytes, dst: bytes, l4: bytes) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0x4000, 64, 6, 0,
                       src, dst) + l4


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0,
                       0) + payload


def tcp_conversation_pcap() -> bytes:
    """Handshake, a request sent twice (a retransmission), a reply, FIN: 7 frames."""
    a, b = bytes([10, 0, 0, 4]), bytes([10, 0, 1, 5])
    frames = [
        _ip(a, b, _tcp(40000, 6379, 100, 0, 0x02)),
        _ip(b, a, _tcp(6379, 40000, 500, 101, 0x12)),
        _ip(a, b, _tcp(40000, 6379, 101, 501, 0x10)),
        _ip(a, b, _tcp(40000, 6379, 101, 501, 0x18, b"PING\r\n")),
        _ip(a, b, _tcp(40000, 6379, 101, 501, 0x18, b"PING\r\n")),
        _ip(b, a, _tcp(6379, 40000, 501, 107, 0x18, b"+PONG\r\n")),
        _ip(a, b, _tcp(40000, 6379, 107, 508, 0x11)),
    ]
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, frame in enumerate(frames):
        data = _ETH + frame
        ts_us = 1_700_000_000_000_000 + i * (300_000 if i == 4 else 1_000)
        out += struct.pack("<IIII", ts_us // 1_000_000, ts_us % 1_000_000, len(data), len(data))
        out += data
    return bytes(out)


def header_only_pcap() -> bytes:
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
