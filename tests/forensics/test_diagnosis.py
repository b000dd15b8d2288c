"""Diagnoses on the shared real captures (captures by Chris Sanders), at the capture's edges,
and how figures read."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from forensics.cli import main
from forensics.compare import compare_captures
from forensics.engine import analyze_capture
from forensics.semantic import build_semantic
from forensics.wording import duration_ms, duration_ns, plural
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment, udp_datagram
from lab.pcap import PcapWriter


def doc_of(path: Path) -> dict[str, Any]:
    return build_semantic(analyze_capture(str(path)), str(path))


@pytest.mark.parametrize("name", ["http_espn_fail", "nowebaccess2", "synscan"])
def test_syn_retries_are_not_reported_as_loss(pcaps_dir: Path, name: str) -> None:
    doc = doc_of(pcaps_dir / f"{name}.pcap")
    assert doc["tcp_analysis"]["retransmission"] > 0  # tshark's flags are unchanged ...
    ids = [f["id"] for f in doc["findings"]]
    assert "tcp_retransmissions" not in ids  # ... but they are handshake retries, not loss
    assert doc["diagnosis"]["data_loss"]["retransmitted"] == 0
    hs = doc["diagnosis"]["handshake_retries"]
    assert hs["syn"] + hs["syn_ack"] == doc["tcp_analysis"]["retransmission"]


def test_first_findings_of_shared_captures(pcaps_dir: Path) -> None:
    espn = doc_of(pcaps_dir / "http_espn_fail.pcap")["findings"][0]
    assert espn["id"] == "tcp_syn_unanswered" and "203.0.113.94:80" in espn["title"]
    refused = doc_of(pcaps_dir / "nowebaccess2.pcap")["findings"][0]
    assert refused["id"] == "tcp_connection_refused"
    scan = doc_of(pcaps_dir / "synscan.pcap")
    top = scan["findings"][0]
    assert top["id"] == "port_scan" and "172.16.0.8" in top["title"]
    assert "64.13.134.52:22" in top["detail"] and "64.13.134.52:80" in top["detail"]
    assert "tcp_syn_unanswered" not in [f["id"] for f in scan["findings"]]


def test_zero_window_dead_names_host_and_duration(pcaps_dir: Path) -> None:
    top = doc_of(pcaps_dir / "tcp_zerowindowdead.pcap")["findings"][0]
    assert top["id"] == "tcp_zero_window" and top["title"].startswith("172.31.136.85 ")
    assert "still shut when the capture ended" in top["detail"]


def test_compare_refuses_the_same_end_twice(pcaps_dir: Path, tmp_path: Path) -> None:
    a, b = pcaps_dir / "latency1.pcap", pcaps_dir / "latency2.pcap"
    cmp = compare_captures(str(a), str(b))
    assert cmp["status"] == "refused"
    assert "131 d" in cmp["reason"] and "same TTL" in cmp["reason"]
    assert "lost_a_to_b" not in cmp and "clock_offset_ms" not in cmp
    assert main([str(a), "--compare", str(b), "--semantic-dir", str(tmp_path),
                 "--report-dir", str(tmp_path)]) == 0
    summary = (tmp_path / "latency1_vs_latency2_executive_summary.md").read_text()
    assert "refused" in summary and "ms" not in summary.split("refused", 1)[1].split("\n")[0]
    doc = json.loads((tmp_path / "latency1_vs_latency2_semantic.json").read_text())
    assert doc["findings"][0]["id"] == "comparison_refused"
    report = (tmp_path / "latency1_vs_latency2_forensic_report.md").read_text()
    assert "## Two-ended comparison" in report and "**Refused:**" in report


def test_compare_without_common_flows_refuses(pcaps_dir: Path) -> None:
    cmp = compare_captures(str(pcaps_dir / "latency1.pcap"), str(pcaps_dir / "synscan.pcap"))
    assert cmp["status"] == "refused" and "share no flow" in cmp["reason"]


def test_compare_leaves_third_host_packets_out_of_lost(pcaps_dir: Path) -> None:
    cmp = compare_captures(str(pcaps_dir / "stranded_clientside.pcap"),
                           str(pcaps_dir / "stranded_branchdns.pcap"))
    assert cmp["status"] == "ok"
    assert cmp["lost_a_to_b"] == cmp["lost_b_to_a"] == 0
    assert cmp["not_addressed_to_the_other_side"] == 1  # the SYN to 172.16.16.250
    assert (cmp["host_a"], cmp["host_b"]) == ("172.16.16.101", "172.16.16.251")
    assert "1 h 39 min" in cmp["clock_warning"]


def _syn_capture(path: Path, gap_ns: int, extra_after: int = 0) -> None:
    """Client SYNs to 10.0.0.9:443; the capture ends ``gap_ns`` after the last one."""
    w = PcapWriter()
    t = 1_700_000_000_000_000_000
    c, s = ip4("10.0.0.1"), ip4("10.0.0.9")
    for i in range(2):  # an established connection, for the handshake RTT
        sp = 40000 + i
        w.add(t, ethernet(ipv4_packet(c, s, 6, tcp_segment(sp, 443, 1, 0, 0x02, 64240))))
        t += 2_000_000
        w.add(t, ethernet(ipv4_packet(s, c, 6, tcp_segment(443, sp, 9, 2, 0x12, 64240))))
        t += 2_000_000
        w.add(t, ethernet(ipv4_packet(c, s, 6, tcp_segment(sp, 443, 2, 10, 0x10, 64240))))
    t += 5_000_000_000
    w.add(t, ethernet(ipv4_packet(c, s, 6, tcp_segment(41000, 443, 7, 0, 0x02, 64240))))
    t += gap_ns
    w.add(t, ethernet(ipv4_packet(c, s, 6, tcp_segment(40000, 443, 2, 10, 0x10, 64240))))
    w.write(str(path))


def test_syn_just_before_the_end_is_not_called_unanswered(tmp_path: Path) -> None:
    _syn_capture(tmp_path / "edge.pcap", 45_000)  # 45 µs before the capture ended
    doc = doc_of(tmp_path / "edge.pcap")
    ids = [f["id"] for f in doc["findings"]]
    assert "tcp_syn_unanswered" not in ids and "tcp_syn_at_capture_end" in ids
    edge = [f for f in doc["findings"] if f["id"] == "tcp_syn_at_capture_end"][0]
    assert "45 µs before the end" in edge["detail"]
    _syn_capture(tmp_path / "late.pcap", 3_000_000_000)  # 3 s: that one is unanswered
    ids = [f["id"] for f in doc_of(tmp_path / "late.pcap")["findings"]]
    assert ids[0] == "tcp_syn_unanswered"


def test_a_header_only_capture_says_it_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    assert main([str(path), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "empty_semantic.json").read_text())
    assert [f["id"] for f in doc["findings"]] == ["capture_empty"]
    assert "empty" in (tmp_path / "empty_executive_summary.md").read_text()


@pytest.mark.parametrize("name", ["http_espn_fail", "synscan", "tcp_zerowindowdead",
                                  "dns_query_nonexistent", "stranded_branchdns"])
def test_reports_read_as_a_person_would(pcaps_dir: Path, tmp_path: Path, name: str) -> None:
    assert main([str(pcaps_dir / f"{name}.pcap"), "--semantic-dir", str(tmp_path),
                 "--report-dir", str(tmp_path)]) == 0
    report = (tmp_path / f"{name}_forensic_report.md").read_text()
    for wrong in ("None", "(s)", "(ies)", " 1 flows", "largest IP datagram 0"):
        assert wrong not in report, wrong
    if "| S0 |" in report or "| SF |" in report or "| REJ |" in report:
        assert "Zeek connection states:" in report and "history letters" in report


def test_durations_and_plurals() -> None:
    assert duration_ns(5_958_961_323_000) == "1 h 39 min"
    assert duration_ms(895.1) == "895 ms" and duration_ms(0.045) == "45 µs"
    assert duration_ns(11_375_268_508 * 10**6) == "131 d 16 h"
    assert plural(1, "flow") == "1 flow" and plural(7, "query") == "7 queries"
    assert plural(3, "SYN retry") == "3 SYN retries"


def test_every_finding_id_is_documented() -> None:
    repo = Path(__file__).resolve().parents[2]
    src = "".join(p.read_text() for p in (repo / "forensics").glob("*.py"))
    ids = set(re.findall(r'"([a-z][a-z0-9_]+)",\s+(?:"(?:critical|high|medium|low|info)"|sev)',
                         src))
    ids |= set(re.findall(r'"id": "([a-z_]+)"', src))
    ids |= {f"dns_{rc.lower()}" for rc in re.findall(r'\("([A-Z]+)", "(?:medium|high)"', src)}
    assert {"port_scan", "mtu_blackhole", "tcp_injected_reset", "dns_refused",
            "tcp_retransmissions", "two_ended_comparison"} <= ids
    doc = (repo / "docs" / "forensics.md").read_text()
    assert not {i for i in ids if f"| `{i}` |" not in doc}


def _pair(tmp: Path, skew_ns: int, same_packets: bool, delay_ns: int) -> tuple[Path, Path]:
    """A short exchange captured at both ends; B's clock ``skew_ns`` ahead of A's."""
    wa, wb = PcapWriter(), PcapWriter()
    t = 1_700_000_000_000_000_000
    a, b = ip4("10.0.0.1"), ip4("10.0.0.2")
    for i in range(6):
        frm = i % 2
        seg = tcp_segment(40000 if frm == 0 else 443, 443 if frm == 0 else 40000, 1000 + i,
                          5000 + i, 0x18, 1000, b"x" * 10)
        src, dst = (a, b) if frm == 0 else (b, a)
        pa = ipv4_packet(src, dst, 6, seg, ident=100 + i)
        pb = ipv4_packet(src, dst, 6, seg, ident=(100 + i) if same_packets else 900 + i)
        t += 10_000_000
        sent_b = frm == 1
        wa.add(t + (delay_ns if sent_b else 0), ethernet(pa))
        wb.add(t + skew_ns + (0 if sent_b else delay_ns), ethernet(pb))
    # A also talks to a third host: 10.0.0.1 is then the one address in every packet of A
    wa.add(t + 1, ethernet(ipv4_packet(a, ip4("10.0.0.3"), 17, udp_datagram(5000, 53, b"q"))))
    pa_path, pb_path = tmp / "a.pcap", tmp / "b.pcap"
    wa.write(str(pa_path))
    wb.write(str(pb_path))
    return pa_path, pb_path


def test_compare_sanity_reasons(tmp_path: Path) -> None:
    ok = compare_captures(*map(str, _pair(tmp_path, 2_000_000_000, True, 5_000_000)))
    assert ok["status"] == "ok" and abs(ok["clock_offset_ms"] - 2000) < 0.01
    assert ok["one_way_delay_ms"]["a_to_b_min"] == 5.0 and ok["lost_a_to_b"] == 0
    nomatch = compare_captures(*map(str, _pair(tmp_path, 0, False, 5_000_000)))
    assert nomatch["status"] == "refused" and "no packet was seen at both ends" in \
        nomatch["reason"]
    a, _b = _pair(tmp_path, 0, True, 5_000_000)
    shifted = tmp_path / "a_again.pcap"  # the same end, its clock 3 ms off
    w = PcapWriter()
    for ts, frame in _records(a):
        w.add(ts + 3_000_000, frame)
    w.write(str(shifted))
    twice = compare_captures(str(a), str(shifted))
    assert twice["status"] == "refused" and "captured twice" in twice["reason"]


def _records(path: Path) -> list[tuple[int, bytes]]:
    from forensics.reader import open_capture

    return [(ts, bytes(buf[off:off + caplen])) for buf, off, caplen, _w, ts, _lt
            in open_capture(str(path))[1]]


def test_dns_query_at_the_capture_end_is_not_unanswered(tmp_path: Path) -> None:
    c, s = ip4("10.0.0.4"), ip4("10.0.0.53")
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x02db\x00\x00\x01\x00\x01"
    w = PcapWriter()
    t = 1_700_000_000_000_000_000
    w.add(t, ethernet(ipv4_packet(c, s, 17, udp_datagram(5000, 53, q))))
    w.add(t + 10_000_000, ethernet(ipv4_packet(c, s, 6, tcp_segment(4000, 80, 1, 0, 2, 100))))
    w.write(str(tmp_path / "q.pcap"))
    doc = doc_of(tmp_path / "q.pcap")
    assert doc["dns"]["exchanges"]["at_capture_end"] == 1
    assert "dns_unanswered" not in [f["id"] for f in doc["findings"]]


@pytest.mark.parametrize(("tries", "first"), [(1, "port_scan"), (3, "tcp_syn_unanswered")])
def test_sweep_or_blocked_client(tmp_path: Path, tries: int, first: str) -> None:
    """25 hosts on 443, no answer: a sweep if each SYN is sent once, a blocked client if its
    kernel retries them."""
    w = PcapWriter()
    t = 1_700_000_000_000_000_000
    c = ip4("10.0.0.4")
    for h in range(25):
        for k in range(tries):
            seg = tcp_segment(40000 + h, 443, 1000, 0, 0x02, 64240)
            w.add(t + h * 1_000_000 + k * 1_000_000_000,
                  ethernet(ipv4_packet(c, ip4(f"10.1.0.{h + 1}"), 6, seg)))
    w.add(t + 10_000_000_000, ethernet(ipv4_packet(c, ip4("10.1.0.1"), 17,
                                                    udp_datagram(5000, 53, b"x"))))
    w.write(str(tmp_path / "s.pcap"))
    top = doc_of(tmp_path / "s.pcap")["findings"][0]
    assert top["id"] == first
