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
