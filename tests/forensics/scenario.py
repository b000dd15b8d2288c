"""A small TCP conversation with known tcp.analysis flags, for format and CLI tests.

EXPECTED_FLAGS was checked with tshark 4.0.17 on the Ethernet/pcap rendering.
"""

from __future__ import annotations

from lab.packets import ethernet, ip4, ipv4_packet, ipv6_packet, tcp_segment

CLIENT, SERVER = ip4("10.0.0.1"), ip4("10.0.0.2")
CLIENT6 = bytes.fromhex("fd000000000000000000000000000001")
SERVER6 = bytes.fromhex("fd000000000000000000000000000002")
T0 = 1_700_000_000_000_000_000

# (direction 0 = client->server, seq, ack, flags, window, payload length, gap in µs)
STEPS = [
    (0, 1000, 0, 0x02, 64240, 0, 0),
    (1, 5000, 1001, 0x12, 65535, 0, 20_000),
    (0, 1001, 5001, 0x10, 64240, 0, 20_000),
    (1, 5001, 1001, 0x18, 65535, 1000, 1_000),
    (1, 6001, 1001, 0x18, 65535, 1000, 100),   # will be "lost" before the client
    (1, 7001, 1001, 0x18, 65535, 1000, 100),
    (0, 1001, 6001, 0x10, 64240, 0, 1_000),
    (0, 1001, 6001, 0x10, 64240, 0, 1_000),    # duplicate ACK 1
    (0, 1001, 6001, 0x10, 64240, 0, 1_000),    # duplicate ACK 2
    (1, 6001, 1001, 0x18, 65535, 1000, 1_000),  # fast retransmission
    (0, 1001, 8001, 0x10, 0, 0, 5_000),        # zero window
    (0, 1001, 8001, 0x10, 64240, 0, 500_000),  # window update
    (1, 8001, 1001, 0x14, 0, 0, 1_000),        # reset
]
EXPECTED_FLAGS = {
    "8": ["duplicate_ack"],
    "9": ["duplicate_ack"],
    "10": ["fast_retransmission", "retransmission"],
    "11": ["zero_window"],
    "12": ["window_update"],
}


def ip_packets(v6: bool = False) -> list[tuple[int, bytes]]:
    """The scenario as (timestamp ns, IP packet) pairs."""
    out = []
    t = T0
    for d, seq, ack, fl, win, plen, gap in STEPS:
        t += gap * 1000
        sp, dp = (40000, 443) if d == 0 else (443, 40000)
        seg = tcp_segment(sp, dp, seq, ack, fl, win, bytes(plen))
        if v6:
            src, dst = (CLIENT6, SERVER6) if d == 0 else (SERVER6, CLIENT6)
            out.append((t, ipv6_packet(src, dst, 6, seg)))
        else:
            src, dst = (CLIENT, SERVER) if d == 0 else (SERVER, CLIENT)
            out.append((t, ipv4_packet(src, dst, 6, seg)))
    return out


def ethernet_packets(v6: bool = False, vlan: int | None = None) -> list[tuple[int, bytes]]:
    return [(t, ethernet(p, v6=v6, vlan=vlan)) for t, p in ip_packets(v6)]
