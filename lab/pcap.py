"""Capture file writers: classic pcap (µs or ns) and a minimal pcapng.

Used by the lab's packet captures and by the forensics tests' synthetic captures.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

LINKTYPE_ETHERNET = 1


@dataclass
class PcapWriter:
    """Collects packets and writes a classic pcap (microsecond or nanosecond)."""

    linktype: int = LINKTYPE_ETHERNET
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

    def write(self, path: str | Path) -> None:
        with open(path, "wb") as fh:
            fh.write(self.to_bytes())


def pcapng_bytes(packets: list[tuple[int, bytes]], linktype: int = LINKTYPE_ETHERNET) -> bytes:
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
