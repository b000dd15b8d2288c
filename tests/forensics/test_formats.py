"""Every supported capture format and link layer gives the same TCP analysis."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from forensics.engine import analyze_capture
from forensics.tcp_analysis import flag_names
from lab.pcap import PcapWriter, pcapng_bytes

from .scenario import EXPECTED_FLAGS, ethernet_packets, ip_packets


def _flags(path: Path) -> dict[str, list[str]]:
    a = analyze_capture(str(path))
    assert a.tcp_resets == 1
    assert a.packets == 13
    return {str(k): sorted(flag_names(v)) for k, v in a.frame_flags.items()}


def _pcap(linktype: int, pkts: list[tuple[int, bytes]], ns: bool = False,
          snaplen: int = 65535) -> bytes:
    w = PcapWriter(linktype=linktype, nanosecond=ns, snaplen=snaplen)
    for t, p in pkts:
        w.add(t, p)
    return w.to_bytes()


def _sll(pkts: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    return [(t, struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 8, 0x0800) + p) for t, p in pkts]


def _sll2(pkts: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    return [(t, struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, b"\x02" * 8) + p)
            for t, p in pkts]


FORMATS: dict[str, Callable[[], bytes]] = {
    "pcap-us-ethernet": lambda: _pcap(1, ethernet_packets()),
    "pcap-ns-ethernet": lambda: _pcap(1, ethernet_packets(), ns=True),
    "pcapng-ethernet": lambda: pcapng_bytes(ethernet_packets()),
    "vlan": lambda: _pcap(1, ethernet_packets(vlan=42)),
    "ipv6": lambda: _pcap(1, ethernet_packets(v6=True)),
    "linux-sll": lambda: _pcap(113, _sll(ip_packets())),
    "linux-sll2": lambda: _pcap(276, _sll2(ip_packets())),
    "raw-ip": lambda: _pcap(101, ip_packets()),
    "raw-ipv4": lambda: _pcap(228, ip_packets()),
    "bsd-loopback": lambda: _pcap(0, [(t, struct.pack("<I", 2) + p) for t, p in ip_packets()]),
    "openbsd-loop": lambda: _pcap(108, [(t, struct.pack(">I", 2) + p) for t, p in ip_packets()]),
    "snaplen-54": lambda: _pcap(1, ethernet_packets(), snaplen=54),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_same_flags_in_every_format(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.cap"
    path.write_bytes(FORMATS[name]())
    assert _flags(path) == EXPECTED_FLAGS


def test_truncated_packets_counted_and_wire_length_used(tmp_path: Path) -> None:
    path = tmp_path / "snap.pcap"
    path.write_bytes(_pcap(1, ethernet_packets(), snaplen=54))
    a = analyze_capture(str(path))
    full = sum(len(p) for _t, p in ethernet_packets())
    assert a.bytes == full  # wire bytes, not captured bytes
    assert a.truncated_packets == 4  # the four data segments exceed 54 bytes


def test_nanosecond_timestamps_preserved(tmp_path: Path) -> None:
    path = tmp_path / "ns.pcap"
    pkts = [(1_700_000_000_123_456_789 + i, p) for i, (_t, p) in enumerate(ethernet_packets())]
    path.write_bytes(_pcap(1, pkts, ns=True))
    a = analyze_capture(str(path))
    assert a.first_ts == 1_700_000_000_123_456_789
    assert a.last_ts == 1_700_000_000_123_456_801


def test_corrupt_record_is_reported_at_its_own_byte_offset(tmp_path: Path) -> None:
    """The warning names the byte where the bad record header starts (for a hex editor)."""
    pkt = bytes(60)
    good = struct.pack("<IIII", 1, 0, len(pkt), len(pkt)) + pkt
    bad = struct.pack("<IIII", 1, 0, 10**7, len(pkt)) + pkt
    path = tmp_path / "bad.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + good + bad)
    a = analyze_capture(str(path))
    assert a.packets == 1
    assert any(f"at byte {24 + len(good)}:" in w for w in a.info.warnings)
