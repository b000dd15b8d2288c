"""What looks like loss and is not, and loss counted at the sender (issue 30), on captures of
the real kernel (captures/make_lookalikes.py): each diagnosis is checked against the ground
truth the capture was made with: the ends' own kernel counters (what a sender re-sent, the
probes it fired, the D-SACKs it got), the router's rule counters, and independent counts
of the packets themselves (scapy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scapy.all import DNS, ICMP, IP, TCP, UDP, rdpcap

from forensics.cli import main
from forensics.compare import compare_captures
from forensics.engine import analyze_capture
from forensics.semantic import build_semantic

CAPTURES = Path(__file__).resolve().parent / "captures"
TRUTH: dict[str, Any] = json.loads((CAPTURES / "truth.json").read_text())


def doc(name: str, side: str) -> dict[str, Any]:
    path = str(CAPTURES / TRUTH[name]["files"][side])
    return build_semantic(analyze_capture(path), path)


def kernel(name: str, side: str, counter: str) -> int:
    return int(TRUTH[name]["kernel_counters"][side].get(counter, 0))


def finding(d: dict[str, Any], fid: str) -> dict[str, Any]:
    return next(f for f in d["findings"] if f["id"] == fid)


def test_the_capture_point_is_the_host_it_was_taken_at() -> None:
    for name in ("tlp_dsack", "policer", "mtu_stall", "network_duplicates"):
        for side, host in (("client", "10.9.1.2"), ("server", "10.9.2.2")):
            assert doc(name, side)["diagnosis"]["capture_point"]["hosts"] == [host], name


def test_tail_loss_probes_answered_by_dsack_are_not_loss() -> None:
    probes = kernel("tlp_dsack", "server", "TcpExtTCPLossProbes")
    assert probes == kernel("tlp_dsack", "server", "TcpRetransSegs") > 0
    for side in ("client", "server"):
        d = doc("tlp_dsack", side)
        loss = d["diagnosis"]["data_loss"]
        assert (loss["retransmitted"], loss["unneeded"], loss["dsack"], loss["lost"]) == (
            probes, probes, kernel("tlp_dsack", "server", "TcpExtTCPDSACKRecv"), 0)
        assert d["findings"][0]["id"] == "no_problem_seen"
        unneeded = finding(d, "tcp_unneeded_retransmissions")
        assert unneeded["severity"] == "info" and "D-SACK" in unneeded["detail"]
        assert "No data segment was lost" in unneeded["detail"]


def test_timer_retransmissions_acknowledged_as_duplicates_are_not_loss() -> None:
    resent = kernel("busy_ack_path", "server", "TcpRetransSegs")
    assert resent == kernel("busy_ack_path", "server", "TcpExtTCPDSACKRecv") > 0
    assert kernel("busy_ack_path", "server", "TcpExtTCPTimeouts") > 0  # the timer fired
    assert "dropped 0" in TRUTH["busy_ack_path"]["router_queues"]["rs"]
    server = doc("busy_ack_path", "server")["diagnosis"]["data_loss"]
    assert (server["retransmitted"], server["dsack"], server["lost"]) == (resent, resent, 0)
    # at the receiver its ACK came before the copy: tshark's spurious retransmission
    client = doc("busy_ack_path", "client")["diagnosis"]["data_loss"]
    assert (client["retransmitted"], client["unneeded"], client["lost"]) == (resent, resent, 0)


def _exact_copies(path: Path) -> int:
    """Data segments seen before with the same IP ID, sequence and length (scapy)."""
    seen: set[tuple[int, int, int]] = set()
    copies = 0
    for p in rdpcap(str(path)):
        if TCP in p and p[IP].len - 4 * p[IP].ihl - 4 * p[TCP].dataofs > 0:
            key = (p[IP].id, p[TCP].seq, p[IP].len)
            copies += key in seen
            seen.add(key)
    return copies


def test_copies_made_by_the_router_are_copies_not_retransmissions(tmp_path: Path) -> None:
    truth = TRUTH["network_duplicates"]
    teed = sum(r["packets"] for r in truth["router_counters"] if "TEE" in r["rule"])
    copies = _exact_copies(CAPTURES / truth["files"]["client"])
    assert 0 < copies <= teed and _exact_copies(CAPTURES / truth["files"]["server"]) == 0
    assert kernel("network_duplicates", "server", "TcpRetransSegs") == 0
    client = doc("network_duplicates", "client")
    loss = client["diagnosis"]["data_loss"]
    assert (loss["copies"], loss["retransmitted"], loss["lost"]) == (copies, copies, 0)
    top = client["findings"][0]
    assert top["id"] == "network_duplicates" and top["severity"] == "low"
    assert top["title"].startswith(f"{copies} data segments arrived twice")
    # --compare: copies made on the way, neither lost nor injected
    files = truth["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert cmp["copies_received_at_a"] == copies
    assert cmp["lost_a_to_b"] == cmp["lost_b_to_a"] == cmp["unsent_but_received_at_a"] == 0
    assert main([str(CAPTURES / files["client"]), "--compare", str(CAPTURES / files["server"]),
                 "--out", str(tmp_path)]) == 0
    summary = next(tmp_path.glob("*_executive_summary.md")).read_text()
    assert f"{copies} packets copied on the way" in summary and "injected" not in summary


def test_a_syn_flood_is_named_with_its_source_and_rate_not_the_return_path() -> None:
    for side in ("client", "server"):
        path = CAPTURES / TRUTH["syn_flood"]["files"][side]
        syns = [p for p in rdpcap(str(path)) if TCP in p and p[TCP].flags == "S"]
        ports = {p[TCP].sport for p in syns}
        d = doc("syn_flood", side)
        flood = d["diagnosis"]["syn_floods"][0]
        assert (flood["attempts"], flood["source_ports"], flood["retried"]) == (
            len(syns), len(ports), 0)
        assert flood["sources"] == ["10.9.1.66"] and flood["target"] == "10.9.2.2:8080"
        span = (syns[-1].time - syns[0].time) or 1
        assert abs(flood["per_second"] - len(syns) / float(span)) < 0.05 * flood["per_second"]
        top = d["findings"][0]
        assert top["id"] == "tcp_syn_flood" and "10.9.1.66" in top["title"]
        assert "none sent again" in top["title"] and "per second" in top["detail"]
        ids = {f["id"] for f in d["findings"]}
        assert not ids & {"tcp_handshake_incomplete", "tcp_return_path_only", "port_scan"}


def test_an_mtu_black_hole_where_the_stall_is_the_evidence() -> None:
    d = doc("mtu_stall", "client")
    top = d["findings"][0]
    assert top["id"] == "mtu_blackhole" and top["severity"] == "critical"
    assert "10.9.1.2 -> 10.9.2.2" in top["title"] and "1448-byte" in top["title"]
    assert "the stall is the black hole's effect" in top["detail"]
    resent = kernel("mtu_stall", "client", "TcpRetransSegs")
    assert f"sent {resent + 1} times" in top["detail"]
    assert "tcp_stalled" not in {f["id"] for f in d["findings"]}
    # the same stall of small or of segments after full-size ones got through stays a stall
    for name in ("small_stall", "full_stall"):
        ids = [f["id"] for f in doc(name, "client")["findings"]]
        assert ids[0] == "tcp_stalled" and "mtu_blackhole" not in ids, name


def test_loss_at_the_sender_counts_what_it_re_sent() -> None:
    resent = kernel("policer", "server", "TcpRetransSegs")
    drops = sum(r["packets"] for r in TRUTH["policer"]["router_counters"] if "DROP" in r["rule"])
    assert resent >= drops > 0
    d = doc("policer", "server")
    loss = d["diagnosis"]["data_loss"]
    hs = d["diagnosis"]["handshake_retries"]
    assert loss["retransmitted"] + hs["syn_ack"] + hs["fin"] == resent
    assert loss["out_of_order_resent"] > 0  # tshark calls some of them out-of-order
    assert loss["lost"] + loss["unneeded"] == loss["retransmitted"]
    top = d["findings"][0]
    assert top["id"] == "tcp_retransmissions"
    assert top["title"].startswith(f"{loss['lost']} data segments lost and retransmitted")
    assert "Captured at 10.9.2.2, the sender" in top["detail"]
    assert "upper bound" in top["detail"]
    # at the receiver only what arrived is seen, and never called out-of-order re-sending
    client = doc("policer", "client")["diagnosis"]["data_loss"]
    assert client["out_of_order_resent"] == 0 and 0 < client["retransmitted"] < resent


def test_dns_refused_by_the_host_is_said_so_with_the_icmp_first(tmp_path: Path) -> None:
    truth = TRUTH["dns_port_unreachable"]
    icmp_sent = kernel("dns_port_unreachable", "server", "IcmpOutDestUnreachs")
    for side in ("client", "server"):
        path = CAPTURES / truth["files"][side]
        packets = rdpcap(str(path))
        queries = [p for p in packets if UDP in p and p[UDP].dport == 53]
        names = {p[DNS].qd[0].qname.decode().rstrip(".") for p in queries}
        assert len(queries) == kernel("dns_port_unreachable", "server", "UdpNoPorts")
        assert sum(1 for p in packets if ICMP in p) == icmp_sent
        d = doc("dns_port_unreachable", side)
        ids = [f["id"] for f in d["findings"]]
        assert ids == ["dns_port_unreachable"], ids  # not "never answered", no ICMP finding
        top = d["findings"][0]
        assert top["title"] == "DNS refused by the host 10.9.2.53: nothing listens on port 53"
        assert top["detail"].startswith(f"10.9.2.53 answered {icmp_sent} queries with an ICMP "
                                        "port unreachable")
        assert f"{len(queries)} queries (retries included) for {len(names)} names" in \
            top["detail"]
        assert "check that" not in top["next_step"].lower()  # the host is up
        assert main([str(path), "--out", str(tmp_path)]) == 0
        summary = (tmp_path / f"{path.stem}_executive_summary.md").read_text()
        assert f"DNS: {len(queries)} queries (retries included) for {len(names)} names" in \
            summary


def _tail_probe(path: Path, at_receiver: bool) -> Path:
    """A sender re-sends its last segment (a tail-loss probe) to a receiver that had it but
    had not acknowledged it yet and does not use SACK: no D-SACK will say so. The capture
    point shows in the TTLs: its own packets leave at 64, the other end's arrive at 63."""
    from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
    from lab.pcap import PcapWriter

    snd, rcv = ip4("10.9.2.2"), ip4("10.9.1.2")
    w, t, ident = PcapWriter(), 1_700_000_000_000_000_000, 100
    steps = [(1, 1000, 0, 0x02, 0), (0, 5000, 1001, 0x12, 0), (1, 1001, 5001, 0x10, 0),
             (0, 5001, 1001, 0x10, 1000), (0, 6001, 1001, 0x10, 1000),
             (1, 1001, 7001, 0x10, 0),
             (0, 7001, 1001, 0x18, 500), (0, 7001, 1001, 0x18, 500),  # the probe, 30 ms on
             (1, 1001, 7501, 0x10, 0)]
    for i, (from_rcv, seq, ack, flags, size) in enumerate(steps):
        src, dst, sp, dp = (rcv, snd, 40000, 8080) if from_rcv else (snd, rcv, 8080, 40000)
        local = from_rcv == at_receiver
        ident += 1
        seg = tcp_segment(sp, dp, seq, ack, flags, 65535, b"x" * size)
        w.add(t, ethernet(ipv4_packet(src, dst, 6, seg, ident=ident, ttl=64 if local else 63)))
        t += 30_000_000 if i == 6 else 200_000
    w.write(str(path))
    return path


def test_a_probe_the_receiver_had_is_unneeded_where_it_was_captured(tmp_path: Path) -> None:
    here = build_semantic(analyze_capture(str(_tail_probe(tmp_path / "r.pcap", True))), "r")
    loss = here["diagnosis"]["data_loss"]
    assert here["diagnosis"]["capture_point"]["hosts"] == ["10.9.1.2"]
    assert (loss["retransmitted"], loss["received_before"], loss["lost"]) == (1, 1, 0)
    assert here["findings"][0]["id"] == "no_problem_seen"
    # the same probe seen at the sender: nothing says the receiver had it; loss, at most
    there = build_semantic(analyze_capture(str(_tail_probe(tmp_path / "s.pcap", False))), "s")
    loss = there["diagnosis"]["data_loss"]
    assert there["diagnosis"]["capture_point"]["hosts"] == ["10.9.2.2"]
    assert (loss["retransmitted"], loss["received_before"], loss["lost"]) == (1, 0, 1)
    top = there["findings"][0]
    assert top["id"] == "tcp_retransmissions" and "upper bound" in top["detail"]


def test_a_copy_of_an_earlier_packet_is_told_from_a_retransmission(tmp_path: Path) -> None:
    """At the receiver, with nothing ever missing: a segment that comes again with the IP ID
    it had (behind the sender's latest) is a copy; with a new, later ID it was re-sent."""
    from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
    from lab.pcap import PcapWriter

    def capture(path: Path, again_id: int) -> dict[str, Any]:
        snd, rcv = ip4("10.9.2.2"), ip4("10.9.1.2")
        w, t = PcapWriter(), 1_700_000_000_000_000_000
        rows = [(1, 1000, 0, 0x02, 0, 1), (0, 5000, 1001, 0x12, 0, 500),
                (1, 1001, 5001, 0x10, 0, 2)]
        rows += [(0, 5001 + 1000 * i, 1001, 0x10, 1000, 501 + i) for i in range(6)]
        rows += [(0, 6001, 1001, 0x10, 1000, again_id), (1, 1001, 11001, 0x10, 0, 3)]
        for from_rcv, seq, ack, flags, size, ident in rows:
            src, dst, sp, dp = (rcv, snd, 40000, 8080) if from_rcv else (snd, rcv, 8080, 40000)
            seg = tcp_segment(sp, dp, seq, ack, flags, 65535, b"x" * size)
            w.add(t, ethernet(ipv4_packet(src, dst, 6, seg, ident=ident,
                                          ttl=64 if from_rcv else 63)))
            t += 5_000_000 if ident == 506 else 300_000  # again after the round trip
        w.write(str(path))
        return build_semantic(analyze_capture(str(path)), str(path))["diagnosis"]["data_loss"]

    copy = capture(tmp_path / "copy.pcap", 502)  # the ID segment 6001 had the first time
    assert (copy["retransmitted"], copy["copies"], copy["lost"]) == (1, 1, 0)
    resent = capture(tmp_path / "resent.pcap", 507)  # the sender's next ID
    assert (resent["retransmitted"], resent["copies"]) == (1, 0)
