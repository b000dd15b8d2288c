"""Two-ended comparison on synthetic captures whose truth is known by construction.

Host A (10.0.0.1) talks to host B (10.0.0.2); at B, A appears NATed as 52.0.0.7. B's clock
runs 2.5 s ahead and the path adds 10 ms each way. We drop chosen packets in each direction,
inject a middlebox RST at B, add a TSO segment that B receives as two, and a DNS NXDOMAIN.
"""

from __future__ import annotations

import struct
from pathlib import Path

from forensics.cli import main
from forensics.compare import compare_captures
from forensics.engine import analyze_capture
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment, udp_datagram
from lab.pcap import PcapWriter

A, B, A_NAT = ip4("10.0.0.1"), ip4("10.0.0.2"), ip4("52.0.0.7")
SKEW = 2_500_000_000
OWD = 10_000_000
T0 = 1_700_000_000_000_000_000
DROP_AB = {5, 17, 33}  # data segment numbers lost A -> B
DROP_BA = {8, 21}  # ACK numbers lost B -> A


def dns_answer(txid: int, rcode: int, name: bytes = b"\x02db\x04prod\x00") -> bytes:
    return struct.pack("!HHHHHH", txid, 0x8180 | rcode, 1, 0, 0, 0) + name + b"\x00\x01\x00\x01"


def build(tmp: Path) -> tuple[Path, Path]:
    wa, wb = PcapWriter(), PcapWriter()
    ipid = [100, 900]
    t = T0

    def send(frm: int, seg: bytes, proto: int = 6, drop: bool = False) -> None:
        nonlocal t
        t += 1_000_000
        ipid[frm] += 1
        if frm == 0:
            pa = ipv4_packet(A, B, proto, seg, ident=ipid[0], ttl=64)
            pb = ipv4_packet(A_NAT, B, proto, seg, ident=ipid[0], ttl=50)
            wa.add(t, ethernet(pa))
            if not drop:
                wb.add(t + OWD + SKEW, ethernet(pb))
        else:
            pb = ipv4_packet(B, A_NAT, proto, seg, ident=ipid[1], ttl=64)
            pa = ipv4_packet(B, A, proto, seg, ident=ipid[1], ttl=50)
            wb.add(t + SKEW, ethernet(pb))
            if not drop:
                wa.add(t + OWD, ethernet(pa))

    for flow in range(3):
        sp = 40000 + flow
        cs, ss = 1000, 7000
        send(0, tcp_segment(sp, 6379, cs, 0, 0x02, 64240))
        send(1, tcp_segment(6379, sp, ss, cs + 1, 0x12, 65535))
        cs += 1
        ss += 1
        send(0, tcp_segment(sp, 6379, cs, ss, 0x10, 64240))
        for i in range(40):
            n = flow * 40 + i
            send(0, tcp_segment(sp, 6379, cs, ss, 0x18, 64240, bytes(100)), drop=n in DROP_AB)
            cs += 100
            send(1, tcp_segment(6379, sp, ss, cs, 0x10, 65535), drop=n in DROP_BA)
    # TSO: A sends one 2920-byte segment, B receives it as two 1460-byte segments.
    sp = 40000
    t += 1_000_000
    ipid[0] += 1
    seg = tcp_segment(sp, 6379, cs, ss, 0x10, 64240, bytes(2920))
    wa.add(t, ethernet(ipv4_packet(A, B, 6, seg, ident=ipid[0])))
    for k in range(2):
        part = tcp_segment(sp, 6379, cs + 1460 * k, ss, 0x10, 64240, bytes(1460))
        wb.add(t + OWD + SKEW + k, ethernet(ipv4_packet(A_NAT, B, 6, part, ident=ipid[0] + k)))
    # A middlebox resets the flow towards B: B sees a RST "from A" that A never sent.
    t += 1_000_000
    rst = tcp_segment(40001, 6379, 5001, 0, 0x04, 0)
    wb.add(t + OWD + SKEW, ethernet(ipv4_packet(A_NAT, B, 6, rst, ident=4242)))
    # DNS: A asks B, B answers NXDOMAIN.
    q = struct.pack("!HHHHHH", 77, 0x0100, 1, 0, 0, 0) + b"\x02db\x04prod\x00\x00\x01\x00\x01"
    send(0, udp_datagram(5353, 53, q), proto=17)
    send(1, udp_datagram(53, 5353, dns_answer(77, 3)), proto=17)
    pa, pb = tmp / "web-vm-01.pcap", tmp / "redis-primary.pcap"
    wa.write(str(pa))
    wb.write(str(pb))
    return pa, pb


def test_losses_offset_delay_and_injected_reset(tmp_path: Path) -> None:
    pa, pb = build(tmp_path)
    cmp = compare_captures(str(pa), str(pb))
    assert cmp["lost_a_to_b"] == len(DROP_AB)
    assert cmp["lost_b_to_a"] == len(DROP_BA)
    assert cmp["unsent_but_received_at_b"] == 1
    assert cmp["unsent_examples"][0]["flags"] == "R"
    assert abs(cmp["clock_offset_ms"] - SKEW / 1e6) < 0.01
    assert abs(cmp["one_way_delay_ms"]["a_to_b_min"] - OWD / 1e6) < 0.01
    assert cmp["matched_by_byte_range"]["a_to_b"] == 3  # the TSO segment and its two halves
    assert cmp["host_a"] == "10.0.0.1" and cmp["host_a_as_seen_at_b"] == "52.0.0.7"


def test_single_end_counts_on_each_side(tmp_path: Path) -> None:
    pa, pb = build(tmp_path)
    a, b = analyze_capture(str(pa)), analyze_capture(str(pb))
    assert a.tcp_resets == 0 and b.tcp_resets == 1
    assert a.dns.rcodes == {3: 1} and b.dns.rcodes == {3: 1}
    assert b.dns.summary()["rcodes"] == {"NXDOMAIN": 1}
    assert a.oversized_packets == 1  # the TSO segment is visible as offload at A


def test_cli_compare_puts_comparison_in_summary(tmp_path: Path) -> None:
    pa, pb = build(tmp_path)
    rc = main([str(pa), "--compare", str(pb), "--semantic-dir", str(tmp_path),
               "--report-dir", str(tmp_path)])
    assert rc == 0
    summary = (tmp_path / "web-vm-01_vs_redis-primary_executive_summary.md").read_text()
    assert "lost A->B: 3, lost B->A: 2" in summary
    assert len(summary.splitlines()) <= 50
