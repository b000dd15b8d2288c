"""DNS and ICMP accounting on a synthetic capture with known contents."""

from __future__ import annotations

import struct
from pathlib import Path

from forensics.engine import analyze_capture
from forensics.semantic import build_semantic
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment, udp_datagram
from lab.pcap import PcapWriter

C, S, R = ip4("10.0.0.4"), ip4("168.63.129.16"), ip4("10.0.0.1")
QNAME = b"\x05cache\x04prod\x05local\x00"


def query(txid: int) -> bytes:
    return struct.pack("!HHHHHH", txid, 0x0100, 1, 0, 0, 0) + QNAME + b"\x00\x01\x00\x01"


def answer(txid: int, rcode: int) -> bytes:
    # The question name is repeated through a compression pointer in an answer record.
    body = QNAME + b"\x00\x01\x00\x01" + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"
    return struct.pack("!HHHHHH", txid, 0x8180 | rcode, 1, 1, 0, 0) + body + b"\x0a\x00\x00\x09"


def build(path: Path) -> None:
    w = PcapWriter()
    t = 1_700_000_000_000_000_000
    rcodes = [0, 0, 3, 2, 5]
    for i, rc in enumerate(rcodes):
        t += 1_000_000
        w.add(t, ethernet(ipv4_packet(C, S, 17, udp_datagram(50000 + i, 53, query(i)))))
        t += 2_000_000 if rc != 2 else 900_000_000
        w.add(t, ethernet(ipv4_packet(S, C, 17, udp_datagram(53, 50000 + i, answer(i, rc)))))
    # Two unanswered queries for the same name: one retry.
    for i in (100, 101):
        t += 1_000_000_000
        w.add(t, ethernet(ipv4_packet(C, S, 17, udp_datagram(50100, 53, query(i)))))
    # Port unreachable quoting a UDP flow, and fragmentation needed quoting a TCP flow.
    inner_udp = ipv4_packet(C, ip4("10.0.9.9"), 17, udp_datagram(40000, 514, b"x" * 8))
    w.add(t + 1, ethernet(ipv4_packet(ip4("10.0.9.9"), C, 1,
                                      struct.pack("!BBHI", 3, 3, 0, 0) + inner_udp[:28])))
    inner_tcp = ipv4_packet(C, ip4("10.2.0.5"), 6, tcp_segment(40001, 443, 1, 1, 0x10, 100))
    w.add(t + 2, ethernet(ipv4_packet(R, C, 1,
                                      struct.pack("!BBHHH", 3, 4, 0, 0, 1400) + inner_tcp[:28])))
    w.add(t + 3, ethernet(ipv4_packet(C, R, 1, struct.pack("!BBHHH", 8, 0, 0, 1, 1))))
    w.write(str(path))


def test_dns_rcodes_retries_unanswered_and_slowest(tmp_path: Path) -> None:
    path = tmp_path / "dns.pcap"
    build(path)
    doc = build_semantic(analyze_capture(str(path)), str(path))
    dns = doc["dns"]
    assert dns["rcodes"] == {"NOERROR": 2, "SERVFAIL": 1, "NXDOMAIN": 1, "REFUSED": 1}
    assert dns["queries"] == 7 and dns["responses"] == 5
    assert dns["unanswered_queries"] == 2
    assert dns["retries"] == 1
    assert dns["slowest_answers"][0]["ms"] == 900.0
    assert dns["slowest_answers"][0]["name"] == "cache.prod.local"
    ids = {f["id"] for f in doc["findings"]}
    assert {"dns_nxdomain", "dns_servfail", "dns_refused", "dns_unanswered", "dns_slow",
            "path_mtu", "icmp_unreachable"} <= ids
    for f in doc["findings"]:
        assert f["rank"] >= 1 and isinstance(f["evidence_frames"], list)


def test_icmp_histogram_quoted_flow_and_path_mtu(tmp_path: Path) -> None:
    path = tmp_path / "icmp.pcap"
    build(path)
    icmp = analyze_capture(str(path)).icmp.summary()
    assert icmp["type_code"] == {"3/3": 1, "3/4": 1, "8/0": 1}
    un = icmp["unreachables"][0]
    assert un["meaning"] == "port unreachable"
    assert un["quoted_flow"] == {"proto": "udp", "src": "10.0.0.4", "dst": "10.0.9.9",
                                 "sport": 40000, "dport": 514}
    fn = icmp["fragmentation_needed"][0]
    assert fn["next_hop_mtu"] == 1400
    assert fn["quoted_flow"]["dport"] == 443
