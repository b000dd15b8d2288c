"""Lab captures: the scenario's traffic as each VM sees it, with the faults' effects, read back
from the pcap bytes (and, for loss, by the real forensics engine)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forensics.engine import analyze_capture
from lab.capture import packet_filter
from lab.network import Estate
from lab.pcap import PcapWriter
from lab.scenario import parse_scenario
from lab.traffic import capture_frames

from .wiring_fixtures import scenario_data

APP, DB, CACHE, NVA, FAR = "10.20.1.4", "10.20.2.4", "10.20.2.5", "10.20.0.4", "10.20.3.4"
SYN, RST, ACK = 0x02, 0x04, 0x10


@dataclass(frozen=True)
class Pkt:
    ts: int
    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    seq: int
    flags: int
    payload: int
    ip_len: int
    icmp: tuple[int, int] | None
    raw: bytes


def _decode(ts: int, frame: bytes) -> Pkt:
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
    l4 = ip[ihl:]
    if ip[9] == 1:
        return Pkt(ts, src, dst, 1, 0, 0, 0, 0, 0, len(ip), (l4[0], l4[1]), frame)
    sport, dport, seq = struct.unpack("!HHI", l4[:8])
    doff = (l4[12] >> 4) * 4
    return Pkt(ts, src, dst, ip[9], sport, dport, seq, l4[13], len(l4) - doff, len(ip), None,
               frame)


def capture(vm: str, faults: list[dict[str, Any]] | None = None,
            keep: Any = None, **changes: Any) -> list[Pkt]:
    scenario = parse_scenario(scenario_data(faults, **changes), "wiring-test.yaml")
    frames = capture_frames(scenario, Estate(scenario), vm, 20,
                            start_s=scenario.now.timestamp(), keep=keep)
    return [_decode(ts, f) for ts, f in frames]


def flow(pkts: list[Pkt], port: int) -> list[Pkt]:
    return [p for p in pkts if port in (p.sport, p.dport)]


def test_a_denied_flow_shows_syns_retransmitted_and_never_answered() -> None:
    sent = flow(capture("app-1"), 6380)
    syns = [p for p in sent if p.flags == SYN]
    assert syns and len(syns) == len(sent), "only SYNs: no SYN-ACK, no RST comes back"
    by_conn: dict[int, list[Pkt]] = {}
    for p in syns:
        by_conn.setdefault(p.sport, []).append(p)
    first = next(iter(by_conn.values()))
    assert len(first) > 1 and len({p.seq for p in first}) == 1, "retransmitted with one ISN"
    gaps = [(b.ts - a.ts) / 1e9 for a, b in zip(first, first[1:], strict=False)]
    assert gaps[0] == pytest.approx(1.0) and gaps[1] == pytest.approx(2.0)
    assert flow(capture("db-1"), 6380) == [], "the NSG drops them before db-1's guest"


def test_a_missing_listener_answers_every_syn_with_rst() -> None:
    at_client = flow(capture("app-1"), 6379)
    syns = [p for p in at_client if p.flags == SYN]
    rsts = [p for p in at_client if p.flags == RST | ACK and p.src == CACHE]
    assert syns and len(rsts) == len(syns)
    assert [p.raw for p in flow(capture("cache-1"), 6379)] == [p.raw for p in at_client]


def test_both_ends_of_a_flow_record_the_same_packets() -> None:
    client, server = flow(capture("app-1"), 5432), flow(capture("db-1"), 5432)
    assert any(p.payload for p in client), "a request and a response carried data"
    assert sorted(p.raw for p in client) == sorted(p.raw for p in server)
    sent = {p.raw: p.ts for p in client if p.src == APP}
    assert all(p.ts > sent[p.raw] for p in server if p.src == APP), "arrives after it left"


def test_an_nva_records_the_forwarded_packets_of_both_directions_only() -> None:
    at_nva = capture("nva-1")
    assert {(p.src, p.dst) for p in at_nva} == {(APP, FAR), (FAR, APP)}


def _retransmissions(pkts: list[Pkt], tmp_path: Path) -> int:
    writer = PcapWriter()
    for p in pkts:
        writer.add(p.ts, p.raw)
    path = tmp_path / "cap.pcap"
    writer.write(path)
    result = analyze_capture(str(path))
    names = [n for flags in result.frame_flags.values() for n in _flag_names(flags)]
    return sum(1 for n in names if "retransmission" in n)


def _flag_names(value: Any) -> list[str]:
    from forensics.tcp_analysis import flag_names

    return list(flag_names(value))


def test_loss_on_the_nva_shows_as_retransmissions_to_the_forensics_engine(
        tmp_path: Path) -> None:
    clean = flow(capture("far-1"), 443)
    lossy = flow(capture("far-1", [{"kind": "loss", "at": "nva-1", "percent": 25}]), 443)
    assert _retransmissions(clean, tmp_path) == 0
    assert _retransmissions(lossy, tmp_path) > 0


def test_an_mtu_black_hole_passes_small_segments_and_never_the_full_size_ones() -> None:
    fault = [{"kind": "mtu", "at": "nva-1", "mtu": 1400, "icmp_blocked": True}]
    server, client = flow(capture("far-1", fault), 443), flow(capture("app-1", fault), 443)
    big = [p for p in server if p.src == FAR and p.ip_len > 1400]
    assert big and len(big) > len({p.seq for p in big}), "full-size segments retransmitted"
    assert any(p.src == FAR and p.flags & SYN for p in client), "the handshake passes"
    assert not [p for p in client if p.ip_len > 1400], "no full-size segment reaches app-1"
    assert [p for p in client if p.src == FAR and 0 < p.payload], "small segments do"
    assert not [p for p in server if p.icmp], "black hole: no fragmentation-needed"


def test_an_mtu_fault_with_icmp_sends_fragmentation_needed_and_smaller_segments() -> None:
    fault = [{"kind": "mtu", "at": "nva-1", "mtu": 1400, "icmp_blocked": False}]
    server, client = capture("far-1", fault), flow(capture("app-1", fault), 443)
    icmp = [p for p in server if p.icmp]
    assert icmp and icmp[0].icmp == (3, 4) and icmp[0].src == NVA and icmp[0].dst == FAR
    assert max(p.ip_len for p in client if p.src == FAR) <= 1400
    assert sum(p.payload for p in client if p.src == FAR) > 3000, "the response got through"


def test_a_reset_fault_resets_both_ends_after_the_given_bytes() -> None:
    fault = [{"kind": "reset", "at": "nva-1", "after_bytes": 1000}]
    for vm in ("app-1", "far-1"):
        pkts = flow(capture(vm, fault), 443)
        assert [p for p in pkts if p.flags & RST], vm
        before_rst = next(i for i, p in enumerate(pkts) if p.flags & RST)
        assert sum(p.payload for p in pkts[:before_rst]) >= 1000 or vm == "app-1"


def test_latency_on_the_path_shows_in_the_handshake() -> None:
    def handshake_ms(pkts: list[Pkt]) -> float:
        syn = next(p for p in pkts if p.flags == SYN)
        synack = next(p for p in pkts if p.flags == SYN | ACK)
        return (synack.ts - syn.ts) / 1e6

    slow = flow(capture("app-1", [{"kind": "latency", "at": "nva-1", "ms": 80}]), 443)
    fast = flow(capture("app-1"), 443)
    assert handshake_ms(slow) >= 80 > handshake_ms(fast)


def test_capture_filters_keep_only_the_matching_five_tuples() -> None:
    keep = packet_filter(({"protocol": "TCP", "remotePort": "5432"},),
                         local=__import__("ipaddress").IPv4Address(APP))
    pkts = capture("app-1", keep=keep)
    assert pkts and all(5432 in (p.sport, p.dport) for p in pkts)
