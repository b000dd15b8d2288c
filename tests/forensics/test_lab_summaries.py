"""Summaries of the lab's captures read as one engineer would read them at 3 a.m.

The captures are made here, with the lab's own traffic simulation and pcap writer, for the
shipped scenarios: each VM on the path records what it sees. One problem on sixty
connections is one finding; the loss figures use one definition everywhere; a finding that
another explains says so and ranks below it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from forensics.cli import main
from forensics.engine import analyze_capture
from forensics.report import clip, executive_summary_md, forensic_report_md
from forensics.semantic import build_semantic
from lab.network import Estate
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
from lab.pcap import PcapWriter
from lab.scenario import find_scenario, load_scenario
from lab.traffic import capture_frames

SCENARIOS = {
    "mtu-blackhole": ("files-vm-01", "web-vm-01", "nva-fw-01"),
    "nva-loss": ("web-vm-01", "pricing-vm-01", "nva-fw-01"),
    "nva-reset": ("web-vm-01", "reports-vm-01", "nva-fw-01"),
    "service-down": ("web-vm-01", "api-vm-01"),
    "asymmetric-routing": ("web-vm-01", "billing-vm-01", "nva-fw-01", "nva-fw-02"),
    "custom-dns-broken": ("app-vm-01", "dns-vm-01"),
    "healthy": ("web-vm-01", "api-vm-01"),
}
ALL = [(s, vm) for s, vms in SCENARIOS.items() for vm in vms]


@cache
def frames(scenario: str, vm: str) -> tuple[tuple[int, bytes], ...]:
    sc = load_scenario(find_scenario(scenario))
    return tuple(capture_frames(sc, Estate(sc), vm, 60, start_s=sc.now.timestamp()))


def write(path: Path, packets: list[tuple[int, bytes]] | tuple[tuple[int, bytes], ...]) -> Path:
    w = PcapWriter()
    for ts, fr in sorted(packets, key=lambda p: p[0]):
        w.add(ts, fr)
    w.write(path)
    return path


@cache
def _doc(scenario: str, vm: str, tmp: str) -> dict[str, Any]:
    path = write(Path(tmp) / f"{scenario}__{vm}.pcap", frames(scenario, vm))
    return build_semantic(analyze_capture(str(path)), str(path))


@pytest.fixture(scope="module")
def lab_doc(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = str(tmp_path_factory.mktemp("lab"))
    return lambda scenario, vm: _doc(scenario, vm, tmp)


def ids(doc: dict[str, Any]) -> list[str]:
    return [f["id"] for f in doc["findings"]]


def first(doc: dict[str, Any], fid: str) -> dict[str, Any]:
    return next(f for f in doc["findings"] if f["id"] == fid)


def evidence_connections(doc: dict[str, Any], finding: dict[str, Any]) -> int:
    """How many different flows the finding's evidence frames belong to."""
    spans = [(f["first_frame"], f["last_frame"], f["sport"], f["dport"]) for f in doc["flows"]]
    hit = set()
    for fr in finding["evidence_frames"]:
        hit |= {(s, d) for a, b, s, d in spans if a <= fr <= b}
    return len(hit)


@pytest.mark.parametrize(("scenario", "vm"), ALL)
def test_one_finding_per_problem(lab_doc: Any, scenario: str, vm: str) -> None:
    """Each lab scenario has one traffic path: no finding id may appear twice."""
    doc = lab_doc(scenario, vm)
    got = ids(doc)
    assert len(got) == len(set(got)), [f["title"] for f in doc["findings"]]
    conns = doc["diagnosis"]["tcp_connections"]["total"]
    top = doc["findings"][0]
    if conns > 1 and top["severity"] != "info":  # it says how many connections it is about
        assert re.search(rf"\b{conns}\b|of the {conns} connections", top["title"]
                         + top["detail"]), top


@pytest.mark.parametrize(("scenario", "vm"), ALL)
def test_no_problem_only_when_connections_worked(lab_doc: Any, scenario: str,
                                                 vm: str) -> None:
    doc = lab_doc(scenario, vm)
    if doc["findings"][0]["id"] == "no_problem_seen":
        by = doc["diagnosis"]["tcp_connections"]["by_outcome"]
        assert set(by) <= {"established", "closed"}, by


def test_mtu_blackhole_is_one_finding_and_owns_its_retransmissions(lab_doc: Any) -> None:
    doc = lab_doc("mtu-blackhole", "files-vm-01")
    n = doc["diagnosis"]["tcp_connections"]["total"]
    top = doc["findings"][0]
    assert top["id"] == "mtu_blackhole" and ids(doc).count("mtu_blackhole") == 1
    assert f"{n} connections" in top["title"] and "10.2.1.4 -> 10.1.1.4" in top["title"]
    assert evidence_connections(doc, top) >= 5
    # every retransmission is the black hole's: no separate loss finding, and the one figure
    # printed (the flag count, the data loss and the finding) is the same number
    loss = doc["diagnosis"]["data_loss"]
    assert loss["retransmitted"] == doc["tcp_analysis"]["retransmission"] > 0
    assert loss["explained_by"]["mtu_blackhole"]["retransmitted"] == loss["retransmitted"]
    assert loss["unexplained"]["retransmitted"] == 0
    assert "tcp_retransmissions" not in ids(doc)
    assert f"All {loss['retransmitted']} retransmitted data segments" in top["detail"]


@pytest.mark.parametrize("vm", ["web-vm-01", "nva-fw-01"])
def test_receiver_view_of_the_black_hole_folds_the_gaps(lab_doc: Any, vm: str) -> None:
    doc = lab_doc("mtu-blackhole", vm)
    got = ids(doc)
    assert got[0] == "mtu_blackhole" and got.count("mtu_blackhole") == 1
    holes = len(doc["diagnosis"]["mtu_blackholes"])
    assert holes >= doc["diagnosis"]["tcp_connections"]["total"] * 0.9
    total = doc["diagnosis"]["tcp_connections"]["total"]
    assert f"on {holes} of the {total} connections" in doc["findings"][0]["title"] or \
        (holes == total and f"on {holes} connections" in doc["findings"][0]["title"])
    gaps = first(doc, "capture_gaps")
    assert gaps["severity"] == "info" and "explained by the MTU black hole above" in gaps["title"]
    assert got.index("capture_gaps") > got.index("mtu_blackhole")


def test_loss_figures_use_one_definition(lab_doc: Any, tmp_path: Path) -> None:
    doc = lab_doc("nva-loss", "web-vm-01")
    loss = doc["diagnosis"]["data_loss"]
    top = doc["findings"][0]
    assert top["id"] == "tcp_retransmissions"
    title = re.match(r"(\d+) data segments lost and retransmitted \(.* of (\d+) data "
                     r"segments\)", top["title"])
    assert title, top["title"]
    retx, segs = int(title[1]), int(title[2])
    # the lab's senders re-send only what was lost: every re-sent segment is a lost one
    assert (retx, segs) == (loss["lost"], loss["data_segments"]) == (loss["retransmitted"], segs)
    dirs = [tuple(map(int, m)) for m in re.findall(r": (\d+) of (\d+) \(", top["detail"])]
    assert sum(r for r, _ in dirs) == retx and sum(s for _, s in dirs) <= segs
    # the summary says what tshark's larger flag count is made of
    assert main([str(write(tmp_path / "loss.pcap", frames("nva-loss", "web-vm-01"))),
                 "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)]) == 0
    summary = (tmp_path / "loss_executive_summary.md").read_text()
    flagged = doc["tcp_analysis"]["retransmission"]
    assert flagged > retx
    assert (f"retransmission {flagged} ({retx} data segments and {flagged - retx} SYN, "
            "SYN-ACK or FIN retries)") in summary
    gaps = first(doc, "capture_gaps")
    assert gaps["severity"] == "info" and "the packet loss above" in gaps["title"]


def test_mixed_black_hole_and_loss_split_the_figures(tmp_path: Path) -> None:
    """Black-holed connections and independently lossy ones in one capture: the black hole
    keeps its retransmissions, the loss finding counts only the rest, everywhere."""
    hole = frames("mtu-blackhole", "files-vm-01")
    lossy = frames("nva-loss", "pricing-vm-01")
    shift = hole[0][0] - lossy[0][0]
    path = write(tmp_path / "mixed.pcap", list(hole) + [(t + shift, f) for t, f in lossy])
    doc = build_semantic(analyze_capture(str(path)), str(path))
    loss = doc["diagnosis"]["data_loss"]
    black = loss["explained_by"]["mtu_blackhole"]["retransmitted"]
    rest = loss["unexplained"]
    assert black + rest["retransmitted"] == loss["retransmitted"] and rest["retransmitted"]
    got = ids(doc)
    assert got[0] == "mtu_blackhole" and got.index("tcp_retransmissions") > 0
    mtu, retx = first(doc, "mtu_blackhole"), first(doc, "tcp_retransmissions")
    assert f"{black} of the capture's {loss['retransmitted']} retransmitted" in mtu["detail"]
    assert retx["title"].startswith(f"{rest['lost']} data segments lost and retransmitted on "
                                    f"other connections")
    assert rest["lost"] == rest["retransmitted"]
    assert f"of {rest['data_segments']} data segments" in retx["title"]
    assert f"Not counted here: {black} retransmissions on" in retx["detail"]
    assert (f"On {rest['connections_with_retransmissions']} of the {rest['connections']} "
            "connections not explained above.") in retx["detail"]
    dirs = re.findall(r": (\d+) of (\d+) \(", retx["detail"].split(";")[0])
    assert sum(int(r) for r, _ in dirs) == rest["retransmitted"]


def test_asymmetric_routing_is_a_problem_at_every_capture_point(lab_doc: Any) -> None:
    server = lab_doc("asymmetric-routing", "billing-vm-01")
    top = server["findings"][0]
    assert top["id"] == "tcp_handshake_incomplete" and top["severity"] == "critical"
    assert "10.1.1.4 to 10.2.1.4:8443" in top["title"] and "SYN retr" in top["detail"]
    ret = lab_doc("asymmetric-routing", "nva-fw-02")["findings"][0]
    assert ret["id"] == "tcp_return_path_only" and "10.2.1.4:8443" in ret["title"]
    assert lab_doc("asymmetric-routing", "web-vm-01")["findings"][0]["id"] == \
        "tcp_syn_unanswered"


def test_resets_say_who_reset_in_words(lab_doc: Any) -> None:
    both = first(lab_doc("nva-reset", "nva-fw-01"), "tcp_resets")
    assert "Reset by both ends on 60 connections" in both["detail"]
    assert "the both" not in both["detail"]
    server = lab_doc("nva-reset", "reports-vm-01")  # the NVA's RSTs: its TTL, not web's
    assert "claim to come from 10.1.1.4" in first(server, "tcp_injected_reset")["title"]
    client = lab_doc("nva-reset", "web-vm-01")
    assert evidence_connections(client, first(client, "tcp_injected_reset")) >= 5


def test_summary_lines_are_cut_at_a_word(lab_doc: Any, tmp_path: Path) -> None:
    assert clip("word " * 200).endswith("word …") and len(clip("word " * 200)) <= 600
    assert clip("short line") == "short line"
    path = write(tmp_path / "asym.pcap", frames("asymmetric-routing", "billing-vm-01"))
    assert main([str(path), "--semantic-dir", str(tmp_path), "--report-dir",
                 str(tmp_path)]) == 0
    summary = (tmp_path / "asym_executive_summary.md").read_text()
    for line in summary.splitlines():
        assert len(line) <= 600
        assert re.match(r"(#|\d+\. )", line) or not re.search(r"[a-z]$", line), line


C, S = "10.3.1.4", "10.3.2.4"
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def _conv(w: PcapWriter, t: int, sport: int, tail: str, ident: list[int]) -> None:
    """One connection to S:443 built packet by packet; ``tail`` is what goes wrong."""
    c, s = ip4(C), ip4(S)

    def pkt(at: int, frm: bytes, to: bytes, sp: int, dp: int, seq: int, ack: int, flags: int,
            data: bytes = b"", win: int = 64240, ttl: int = 64) -> None:
        ident[0] += 1
        w.add(at, ethernet(ipv4_packet(frm, to, 6, tcp_segment(sp, dp, seq, ack, flags, win,
                                                               data), ident[0], ttl)))
    pkt(t, c, s, sport, 443, 100, 0, 0x02)
    pkt(t + MS, s, c, 443, sport, 900, 101, 0x12)
    pkt(t + 2 * MS, c, s, sport, 443, 101, 901, 0x10)
    pkt(t + 3 * MS, c, s, sport, 443, 101, 901, 0x18, b"q" * 300)
    pkt(t + 4 * MS, s, c, 443, sport, 901, 401, 0x10)
    if tail == "stall":  # 500 bytes sent four times, never acknowledged
        for k in range(4):
            pkt(t + (5 + 200 * 2**k) * MS, c, s, sport, 443, 401, 901, 0x18, b"d" * 500)
    elif tail == "inject":  # a RST in S's name, with another TTL than S's packets
        pkt(t + 6 * MS, s, c, 443, sport, 901, 401, 0x14, ttl=50)
    elif tail == "zero":  # the client stops reading: S's data meets a zero window
        pkt(t + 5 * MS, s, c, 443, sport, 901, 401, 0x18, b"r" * 1000)
        pkt(t + 6 * MS, c, s, sport, 443, 401, 1901, 0x10, win=0)
        pkt(t + 500 * MS, c, s, sport, 443, 401, 1901, 0x10, win=0)


def _synthetic(tmp_path: Path, tail: str, n: int = 4) -> dict[str, Any]:
    w, ident = PcapWriter(), [0]
    for i in range(n):
        _conv(w, T0 + i * 50 * MS, 40000 + i, tail, ident)
    w.packets.sort(key=lambda p: p[0])
    path = tmp_path / f"{tail}.pcap"
    w.write(path)
    return build_semantic(analyze_capture(str(path)), str(path))


def test_stalls_on_one_path_are_one_finding(tmp_path: Path) -> None:
    doc = _synthetic(tmp_path, "stall")
    stalls = [f for f in doc["findings"] if f["id"] == "tcp_stalled"]
    assert len(stalls) == 1 and doc["findings"][0]["id"] == "tcp_stalled"
    top = stalls[0]
    assert f"Transfer from {C} to {S} stalled on 4 connections" == top["title"]
    assert "retransmitted 3 times" in top["detail"] and evidence_connections(doc, top) == 4
    assert "tcp_retransmissions" not in ids(doc)  # the stall owns its retransmissions
    loss = doc["diagnosis"]["data_loss"]
    assert loss["explained_by"]["stalled"]["retransmitted"] == loss["retransmitted"] == 12
    assert "All 12 retransmitted data segments" in top["detail"]


def test_injected_resets_on_one_path_are_one_finding(tmp_path: Path) -> None:
    doc = _synthetic(tmp_path, "inject")
    got = [f for f in doc["findings"] if f["id"] == "tcp_injected_reset"]
    assert len(got) == 1 and doc["findings"][0]["id"] == "tcp_injected_reset"
    assert got[0]["title"].startswith(f"4 resets between {S} and {C} (port 443) claim")
    assert len(got[0]["evidence_frames"]) == 4
    assert "tcp_resets" not in ids(doc)


def test_zero_windows_say_how_many_connections(tmp_path: Path) -> None:
    doc = _synthetic(tmp_path, "zero")
    got = [f for f in doc["findings"] if f["id"] == "tcp_zero_window"]
    assert len(got) == 1 and got[0]["title"].startswith(f"{C} stopped reading")
    assert "On 4 connections" in got[0]["detail"] and evidence_connections(doc, got[0]) == 4


@pytest.mark.parametrize(("scenario", "vm"), ALL)
def test_reports_have_no_empty_or_doubled_wording(lab_doc: Any, scenario: str, vm: str) -> None:
    report = forensic_report_md(lab_doc(scenario, vm), f"{scenario} {vm}")
    for wrong in ("None", "none of 0", "0 queries", "of 0 names", "the both", "(s)",
                  "| flag | frames |\n|---|---|\n\n", "refused (refused", "## ICMP\n\n\n"):
        assert not re.search(rf"(?<![\d,]){re.escape(wrong)}", report), wrong  # not "120 q…"
    summary = executive_summary_md(lab_doc(scenario, vm), scenario)
    assert len(summary.splitlines()) <= 50
    flagged = lab_doc(scenario, vm)["tcp_analysis"]["retransmission"]
    if flagged:  # the flag count never stands alone next to the loss figures
        assert re.search(rf"retransmission {flagged} \((data segments only|all SYN|\d+ data)",
                         summary)


def test_segments_dropped_by_a_resetting_firewall_are_not_called_an_mtu_black_hole(
        tmp_path: Path) -> None:
    """nva-reset: the firewall drops the segment it resets on and forges RSTs to both ends.

    Every lost segment is full-size, but each is answered by a packet sent in the other side's
    name: the summary must point at the device in between, not at the path MTU.
    """
    from forensics.compare import compare_captures
    from forensics.compare_report import summary_lines

    a = write(tmp_path / "web.pcap", frames("nva-reset", "web-vm-01"))
    b = write(tmp_path / "reports.pcap", frames("nva-reset", "reports-vm-01"))
    cmp = compare_captures(str(a), str(b))
    text = "\n".join(summary_lines(cmp))
    assert cmp["status"] == "ok" and cmp["lost_b_to_a"] > 0
    assert cmp["unsent_but_received_at_a"] >= cmp["lost_b_to_a"]
    assert "MTU black hole" not in text
    assert "dropped them as it reset the connections" in text


def test_full_size_losses_without_injected_packets_still_suggest_the_mtu(tmp_path: Path) -> None:
    """The MTU hint stays where nothing was injected (the same summary code, other figures)."""
    from forensics.compare_report import summary_lines

    cmp = {"status": "ok", "capture_a": "a.pcap", "capture_b": "b.pcap", "host_a": "10.1.1.4",
           "host_b": "10.2.1.4", "lost_a_to_b": 0, "lost_b_to_a": 12, "matched_a_to_b": 40,
           "matched_b_to_a": 28, "shared_flows": 4, "unsent_but_received_at_a": 0,
           "unsent_but_received_at_b": 0,
           "one_way_delay_ms": {"a_to_b_min": 1.0, "a_to_b_median": 1.0, "b_to_a_median": 1.0},
           "clock_offset_ms": 0.0, "clock_warning": "",
           "lost_sizes": {"a_to_b": None,
                          "b_to_a": {"packets": 12, "min_bytes": 1460, "max_bytes": 1460}}}
    text = "\n".join(summary_lines(cmp))
    assert "suspect an MTU black hole" in text
