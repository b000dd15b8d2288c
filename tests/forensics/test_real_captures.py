"""Diagnoses on captures of the real kernel (captures/, made by captures/make_captures.py).

Each capture was made in network namespaces (client, iptables router, server) with one
fault; ``captures/truth.json`` says how, with the router's rule counters. The right finding
must come first, and a two-ended comparison must count exactly what the router dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forensics.cli import main
from forensics.compare import compare_captures
from forensics.engine import analyze_capture
from forensics.semantic import build_semantic

from .tcpgen import our_flags, tshark_available, tshark_flags

CAPTURES = Path(__file__).resolve().parent / "captures"
TRUTH: dict[str, Any] = json.loads((CAPTURES / "truth.json").read_text())


def findings(path: Path) -> list[dict[str, Any]]:
    doc = build_semantic(analyze_capture(str(path)), str(path))
    return list(doc["findings"])


def counter(name: str, needle: str) -> int:
    return sum(r["packets"] for r in TRUTH[name]["router_counters"] if needle in r["rule"])


SINGLE = sorted(k for k, v in TRUTH.items() if isinstance(v["expect_first"], str))
TWO = sorted(k for k, v in TRUTH.items() if isinstance(v["expect_first"], dict))


def test_captures_stay_small() -> None:
    assert sum(p.stat().st_size for p in CAPTURES.glob("*.pcap")) < 2_000_000
    assert {"silent_drop", "refused", "random_loss", "two_ended_loss", "injected_reset",
            "icmp_unreachable", "mtu_blackhole", "dns_nxdomain", "dns_servfail",
            "dns_unanswered", "zero_window", "scan", "healthy",
            # issue 30 (make_lookalikes.py): what looks like loss and is not, and loss at
            # the sender
            "tlp_dsack", "busy_ack_path", "network_duplicates", "syn_flood", "mtu_stall",
            "small_stall", "full_stall", "policer", "dns_port_unreachable"} <= set(TRUTH)
    for name in TWO:
        assert all((CAPTURES / f).is_file() for f in TRUTH[name]["files"].values()), name


@pytest.mark.parametrize("name", SINGLE)
def test_right_finding_first(name: str) -> None:
    got = findings(CAPTURES / TRUTH[name]["files"]["client"])
    assert got[0]["id"] == TRUTH[name]["expect_first"], [f["title"] for f in got]


@pytest.mark.parametrize("name", TWO)
def test_right_finding_first_at_each_end(name: str) -> None:
    for side in ("client", "server"):
        got = findings(CAPTURES / TRUTH[name]["files"][side])
        assert got[0]["id"] == TRUTH[name]["expect_first"][side], (side, got[0]["title"])


@pytest.mark.parametrize("name", TWO)
def test_cli_compare_leads_with_the_comparison(name: str, tmp_path: Path) -> None:
    files = TRUTH[name]["files"]
    a, b = CAPTURES / files["client"], CAPTURES / files["server"]
    assert main([str(a), "--compare", str(b), "--semantic-dir", str(tmp_path),
                 "--report-dir", str(tmp_path)]) == 0
    stem = f"{a.stem}_vs_{b.stem}"
    doc = json.loads((tmp_path / f"{stem}_semantic.json").read_text())
    assert doc["findings"][0]["id"] == TRUTH[name]["expect_first"]["compare"]
    report = (tmp_path / f"{stem}_forensic_report.md").read_text()
    assert "## Two-ended comparison" in report and "None" not in report
    assert "comparison section" in doc["findings"][0]["next_step"]


def test_two_ended_loss_equals_the_router_drop_counters() -> None:
    files = TRUTH["two_ended_loss"]["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert cmp["status"] == "ok"
    assert (cmp["host_a"], cmp["host_b"]) == ("10.9.1.2", "10.9.2.2")
    assert abs(cmp["lost_a_to_b"] - counter("two_ended_loss", "-i rc")) <= 1
    assert abs(cmp["lost_b_to_a"] - counter("two_ended_loss", "-i rs")) <= 1
    assert cmp["matched_by_byte_range"] == {"a_to_b": 0, "b_to_a": 0}  # offload is off
    assert cmp["unsent_but_received_at_a"] == cmp["unsent_but_received_at_b"] == 0


def test_injected_reset_is_seen_as_injected_at_the_client() -> None:
    files = TRUTH["injected_reset"]["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert cmp["unsent_but_received_at_a"] == 1  # the router's RST, after B's last packet
    assert cmp["unsent_examples"][0]["flags"] == "R"
    assert cmp["lost_a_to_b"] == counter("injected_reset", "REJECT")  # the rejected request


def test_mtu_blackhole_losses_are_the_full_size_segments() -> None:
    files = TRUTH["mtu_blackhole"]["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert cmp["lost_b_to_a"] == counter("mtu_blackhole", "icmp-type 3/4")
    assert {e["len"] for e in cmp["lost_examples_b_to_a"]} == {1448}
    top = findings(CAPTURES / files["server"])[0]
    assert "1448" in top["title"] and "10.9.2.2 -> 10.9.1.2" in top["title"]


def test_syn_retries_are_not_loss_and_hosts_are_named() -> None:
    silent = findings(CAPTURES / "silent_drop.pcap")
    assert [f["id"] for f in silent] == ["tcp_syn_unanswered"]
    assert "10.9.2.2:8081" in silent[0]["title"] and "3 SYN retries" in silent[0]["detail"]
    icmp = findings(CAPTURES / "icmp_unreachable.pcap")
    assert "tcp_syn_unanswered" not in [f["id"] for f in icmp]
    assert "10.9.1.1" in icmp[0]["title"]  # the router that refused


def test_scan_names_source_and_open_ports() -> None:
    top = findings(CAPTURES / "scan.pcap")
    assert top[0]["id"] == "port_scan" and "10.9.1.2" in top[0]["title"]
    assert "10.9.2.2:8080" in top[0]["detail"] and "10.9.2.2:9000" in top[0]["detail"]
    assert "tcp_connection_refused" not in [f["id"] for f in top]


def test_zero_window_names_the_host_and_how_long() -> None:
    top = findings(CAPTURES / "zero_window.pcap")[0]
    assert top["id"] == "tcp_zero_window" and top["title"].startswith("10.9.1.2 ")
    assert " s on " in top["detail"]  # a duration in seconds, not raw ms


def test_dns_unanswered_counts_names_and_queries() -> None:
    top = findings(CAPTURES / "dns_unanswered.pcap")[0]
    assert top["title"] == "2 DNS names never answered by 10.9.2.53"
    assert top["detail"].startswith("6 queries (retries included)")


def test_loss_rate_counts_data_segments_per_direction() -> None:
    doc = build_semantic(analyze_capture(str(CAPTURES / "random_loss.pcap")), "x")
    loss = doc["diagnosis"]["data_loss"]
    by = {d["from"]: d for d in loss["by_direction"]}
    assert by["10.9.1.2"]["data_segments"] == 1  # the request; its ACKs are not data
    assert by["10.9.2.2"]["retransmitted"] >= counter("random_loss", "DROP") - 3
    from scapy.all import IP, TCP, rdpcap  # an independent count of segments with payload

    with_data: dict[str, int] = {}
    for p in rdpcap(str(CAPTURES / "random_loss.pcap")):
        if TCP in p and p[IP].len - 4 * p[IP].ihl - 4 * p[TCP].dataofs > 0:
            with_data[p[IP].src] = with_data.get(p[IP].src, 0) + 1
    assert {k: v["data_segments"] for k, v in by.items()} == with_data
    assert loss["rate"] == round(loss["retransmitted"] / loss["data_segments"], 4)


DISTINCT = {"port_scan": ("scan",), "mtu_blackhole": ("mtu_blackhole", "mtu_stall"),
            "tcp_injected_reset": ("injected_reset",), "tcp_syn_unanswered": ("silent_drop",),
            "icmp_unreachable": ("icmp_unreachable",), "tcp_zero_window": ("zero_window",),
            "tcp_syn_flood": ("syn_flood",), "network_duplicates": ("network_duplicates",),
            "dns_port_unreachable": ("dns_port_unreachable",),
            "tcp_stalled": ("small_stall", "full_stall"),
            "tcp_handshake_incomplete": (), "tcp_return_path_only": ()}
# nothing was lost on the way in these: no loss claim, nothing above info but the copies
NOTHING_LOST = ("healthy", "tlp_dsack", "busy_ack_path", "network_duplicates")


@pytest.mark.parametrize("pcap", sorted(p.name for p in CAPTURES.glob("*.pcap")))
def test_no_diagnosis_where_its_fault_was_not_made(pcap: str) -> None:
    """A rule that fires on the wrong capture would send the engineer the wrong way."""
    got = findings(CAPTURES / pcap)
    ids = {f["id"] for f in got}
    for fid, scenarios in DISTINCT.items():
        if fid in ids:
            assert pcap.startswith(scenarios), (fid, pcap)
    if pcap.startswith(NOTHING_LOST):
        assert "tcp_retransmissions" not in ids, pcap
        assert [f["id"] for f in got if f["severity"] != "info"] in ([], ["network_duplicates"])


def test_compare_says_mtu_when_only_large_segments_are_lost() -> None:
    from forensics.compare_report import summary_lines

    files = TRUTH["mtu_blackhole"]["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert any("MTU black hole" in line and "B->A" in line for line in summary_lines(cmp))
    files = TRUTH["two_ended_loss"]["files"]
    cmp = compare_captures(str(CAPTURES / files["client"]), str(CAPTURES / files["server"]))
    assert not any("MTU" in line for line in summary_lines(cmp))


@pytest.mark.skipif(not tshark_available(), reason="tshark (the oracle) is not on PATH")
@pytest.mark.parametrize("pcap", sorted(p.name for p in CAPTURES.glob("*.pcap")))
def test_frame_flags_match_tshark(pcap: str) -> None:
    path = str(CAPTURES / pcap)
    ours, theirs = our_flags(path), tshark_flags(path)
    assert {k: (ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs)
            if ours.get(k) != theirs.get(k)} == {}


def _summary(path: Path, tmp: Path) -> str:
    assert main([str(path), "--semantic-dir", str(tmp), "--report-dir", str(tmp)]) == 0
    return (tmp / f"{path.stem}_executive_summary.md").read_text()


def test_black_hole_keeps_its_retransmissions_at_both_ends(tmp_path: Path) -> None:
    files = TRUTH["mtu_blackhole"]["files"]
    server = CAPTURES / files["server"]
    doc = build_semantic(analyze_capture(str(server)), str(server))
    got = [f["id"] for f in doc["findings"]]
    assert got.count("mtu_blackhole") == 1 and "tcp_retransmissions" not in got
    loss = doc["diagnosis"]["data_loss"]
    assert loss["explained_by"]["mtu_blackhole"]["retransmitted"] == loss["retransmitted"] > 0
    n = doc["tcp_analysis"]["retransmission"]
    assert n == loss["retransmitted"]
    assert f"retransmission {n} (data segments only)" in _summary(server, tmp_path)
    client = findings(CAPTURES / files["client"])
    ids = [f["id"] for f in client]
    assert ids[0] == "mtu_blackhole" and ids.index("capture_gaps") > 0
    gaps = client[ids.index("capture_gaps")]
    assert gaps["severity"] == "info" and "explained by the MTU black hole above" in gaps["title"]


@pytest.mark.parametrize("side", ["client", "server"])
def test_loss_title_and_directions_count_the_same_thing(side: str) -> None:
    path = CAPTURES / TRUTH["two_ended_loss"]["files"][side]
    doc = build_semantic(analyze_capture(str(path)), str(path))
    loss = doc["diagnosis"]["data_loss"]
    top = next(f for f in doc["findings"] if f["id"] == "tcp_retransmissions")
    assert top["title"].startswith(f"{loss['lost']} data segments lost and retransmitted")
    assert f"of {loss['data_segments']} data segments" in top["title"]
    assert sum(d["lost"] for d in loss["by_direction"]) == loss["lost"]
    assert sum(d["retransmitted"] for d in loss["by_direction"]) == loss["retransmitted"]
    assert (f"On {loss['connections_with_retransmissions']} of the" in top["detail"]
            if loss["connections"] > 1 else top["detail"].startswith("On the only connection"))


def test_syn_retries_are_named_as_such_next_to_the_flag_count(tmp_path: Path) -> None:
    summary = _summary(CAPTURES / "silent_drop.pcap", tmp_path)
    assert "retransmission 3 (all SYN, SYN-ACK or FIN retries: no data segment)" in summary
