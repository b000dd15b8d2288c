"""Hand-written TCP corner cases and re-encapsulated captures, checked against tshark 4.0.

Each case in CASES is a short conversation with the flags tshark 4.0.17 gives each frame
(measured; the test re-checks them against tshark when it is installed). They pin rules the
User's Guide does not spell out and that once differed here:
- the out-of-order horizon (iRTT) runs from the last SYN to the first segment with ACK and
  without SYN, from either side, and counts only from the segment after that one;
- an ACK beyond everything the peer was seen to send makes the peer's next retransmission at
  its ACK number a fast one, until the peer's ACK number changes or it sends a duplicate ACK;
- "within 20 ms" and "within the iRTT" are false when the timestamps go backwards;
- a segment whose TCP options were cut off by the snap length updates the state but shows
  no flags, and a SYN whose options were cut off leaves the window scaling unknown;
- more than one byte starting one byte before the next expected sequence is no retransmission;
- a segment without ACK before its side's first ACK counts unscaled for window_full;
- a negative iRTT sets no out-of-order limit; an ACK beyond a peer that shows a gap primes
  no fast retransmission; a RST beyond the next expected sequence leaves a gap.
IP fragments (IPv4, IPv6, with extension headers, in any order) are reassembled first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forensics.engine import analyze_capture
from forensics.tcp_analysis import flag_names
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
from lab.pcap import PcapWriter

from .encap import ENCAPSULATIONS, duplicated, encapsulate, fragmented, to_ipv6, truncated
from .tcpgen import generate, tshark_available, tshark_flags

FLAGS = {"S": 0x02, "SA": 0x12, "A": 0x10, "PA": 0x18, "R": 0x04, "RA": 0x14, "FA": 0x11,
         "F": 0x01, "P": 0x08, "N": 0x00, "SP": 0x0A}
TS_OPT = b"\x01\x01\x08\x0a" + bytes(8)  # NOP NOP timestamps: 12 bytes
WS7 = b"\x01\x03\x03\x07"
CI, SI = 1000, 5000

# (direction, flags, seq, ack, payload length, window, ms after the previous, options, snap)
Seg = tuple[str, str, int, int, int, int, float, bytes, int]


def _s(d: str, fl: str, seq: int, ack: int, ln: int = 0, win: int = 1000, dt: float = 1.0,
       opts: bytes = b"", snap: int = 0) -> Seg:
    return (d, fl, seq, ack, ln, win, dt, opts, snap)


HS = [_s("c", "S", CI, 0, win=65535, dt=0), _s("s", "SA", SI, CI + 1, win=65535, dt=25),
      _s("c", "A", CI + 1, SI + 1, win=5000, dt=4)]
HS_WS = [_s("c", "S", CI, 0, win=65535, dt=0, opts=WS7),
         _s("s", "SA", SI, CI + 1, win=65535, opts=WS7), _s("c", "A", CI + 1, SI + 1, win=100)]
HS_WS_CUT = [_s("c", "S", CI, 0, win=65535, dt=0, opts=WS7, snap=54),
             _s("s", "SA", SI, CI + 1, win=65535, opts=WS7), _s("c", "A", CI + 1, SI + 1, win=100)]
DATA = _s("s", "PA", SI + 1, CI + 1, 10)
DUPACK = _s("c", "A", CI + 1, SI + 1, win=5000)
ACK_UNSEEN = _s("s", "A", SI + 1, CI + 1 + 1460, dt=2.5)

C100 = _s("c", "A", CI + 1, SI + 1, 100, win=5000)
S50 = _s("s", "PA", SI + 1, CI + 101, 50)
ZW = _s("s", "A", SI + 1, CI + 1, win=0)
PROBE = _s("c", "A", CI + 1, SI + 1, 1, win=5000)
FR = ["fast_retransmission", "retransmission"]
# name -> (segments, {frame (1-based): tshark 4.0.17's flags}); frames not listed: none
CASES: dict[str, tuple[list[Seg], dict[int, list[str]]]] = {
    "irtt_from_first_ack_without_synack": (
        [_s("c", "S", CI, 0, win=65535, dt=0), _s("c", "A", CI + 1, SI, win=5000, dt=0.05),
         _s("s", "PA", SI, CI + 1, 100, dt=2.5), _s("s", "PA", SI + 100, CI + 1, 10, dt=2.5),
         _s("s", "PA", SI + 110, CI + 1, 10, dt=25), _s("s", "PA", SI, CI + 1, 100, dt=2.5)],
        {6: ["retransmission"]}),
    "irtt_not_yet_used_on_the_segment_that_sets_it": (
        [_s("c", "S", CI, 0, win=65535, dt=0), _s("c", "PA", 500, SI, 10, win=5000, dt=1),
         _s("c", "PA", 600, SI, 10, win=5000, dt=0.5)],
        {2: ["out_of_order"], 3: ["retransmission"]}),
    "ack_of_unseen_data_primes_fast_retransmission": (
        HS + [ACK_UNSEEN, DATA, _s("s", "PA", SI + 1, CI + 1, 10, dt=15)],
        {4: ["ack_lost_segment"], 6: FR}),
    "priming_survives_window_update": (
        HS + [ACK_UNSEEN, DATA, _s("c", "A", CI + 1, SI + 1, win=6000), DATA],
        {4: ["ack_lost_segment"], 6: ["window_update"], 7: FR}),
    "duplicate_ack_ends_priming_and_counts_from_one": (
        HS + [DATA, DUPACK, _s("s", "A", SI + 11, CI + 1 + 1460), DUPACK, DATA],
        {5: ["duplicate_ack"], 7: ["duplicate_ack"], 8: ["retransmission"]}),
    "new_ack_number_ends_priming": (
        HS + [DATA, ACK_UNSEEN, _s("c", "A", CI + 1, SI + 11, win=5000),
              _s("s", "PA", SI + 11, CI + 1, 10), _s("s", "PA", SI + 11, CI + 1, 10)],
        {5: ["ack_lost_segment"], 8: ["retransmission"]}),
    "ack_inside_a_gap_does_not_prime": (
        HS + [_s("c", "PA", CI + 1, SI + 1, 10, win=5000), _s("c", "PA", CI + 21, SI + 1, 10,
                                                               win=5000),
              _s("s", "A", SI + 1, CI + 31), DATA, DATA],
        {5: ["lost_segment"], 6: ["ack_lost_segment"], 8: ["retransmission"]}),
    "timestamps_going_backwards_are_not_within_20ms": (
        HS + [DATA, DUPACK, DUPACK, _s("s", "PA", SI + 1, CI + 1, 10, dt=-0.01)],
        {5: ["duplicate_ack"], 6: ["duplicate_ack"], 7: ["retransmission"]}),
    "timestamps_going_backwards_are_not_within_irtt": (
        HS + [DATA, _s("s", "PA", SI + 21, CI + 1, 10), _s("s", "PA", SI + 11, CI + 1, 10,
                                                            dt=-0.5)],
        {5: ["lost_segment"], 6: ["retransmission"]}),
    "options_cut_off_hide_the_flags_but_not_the_state": (
        HS + [DATA, _s("c", "A", CI + 1, SI + 1, win=5000, opts=TS_OPT, snap=54),
              _s("c", "A", CI + 1, SI + 1, win=5000, opts=TS_OPT, snap=58), DATA],
        {7: FR}),
    "zero_window_with_options_cut_off_is_not_shown": (
        HS + [_s("s", "A", SI + 1, CI + 1, win=0, opts=TS_OPT, snap=54),
              _s("s", "A", SI + 1, CI + 1, win=0, opts=TS_OPT)],
        {5: ["zero_window"]}),
    "syn_options_cut_off_leave_scaling_unknown": (
        HS_WS_CUT + [_s("s", "PA", SI + 1, CI + 1, 100, win=100),
                     _s("s", "A", SI + 1, CI + 1, win=200),
                     _s("c", "PA", CI + 1, SI + 1, 200 * 128, win=100)],
        {6: ["window_full"]}),  # frame 4 fills the client's unscaled window: not flagged
    "scaling_known_both_ways": (
        HS_WS + [_s("s", "PA", SI + 1, CI + 1, 100 * 128, win=100)],
        {4: ["window_full"]}),
    # More than one byte starting one byte before the next expected sequence: no flag at all
    # (a keep-alive with data); one byte there with FIN is a retransmission.
    "data_one_byte_before_next_expected": (
        HS + [C100, _s("c", "A", CI + 100, SI + 1, 10, dt=50),
              _s("c", "A", CI + 110, SI + 1, 10), _s("c", "A", CI + 105, SI + 1, 10, dt=50)],
        {7: ["retransmission"]}),
    "one_byte_with_fin_one_before_next_expected": (
        HS + [C100, _s("c", "FA", CI + 100, SI + 1, 1, dt=50)], {5: ["retransmission"]}),
    "syn_then_data_at_the_isn": (  # port reuse whose old data carries on at the new ISN
        [_s("c", "S", CI, 0, win=65535, dt=0), _s("c", "A", CI, SI, 0),
         _s("c", "A", CI, SI, 10)],
        {2: ["keep_alive"]}),
    # Windows of segments without ACK stay unscaled for window_full until that side sent a
    # segment with ACK after its SYN; duplicate ACK and window update compare them scaled.
    "rst_without_ack_after_synack_unscaled": (
        HS_WS + [_s("s", "R", SI + 1, CI + 1, win=100), _s("c", "A", CI + 1, SI + 1, 100,
                                                         win=100)],
        {5: ["window_full"]}),
    "no_ack_segment_scaled_after_an_ack": (
        HS_WS + [_s("s", "A", SI + 1, CI + 1, 10, win=100), _s("s", "P", SI + 1, CI + 1,
                                                                win=100),
                 _s("c", "A", CI + 1, SI + 1, 12800, win=100)],
        {6: ["window_full"]}),
    "no_ack_segments_compared_scaled": (
        HS_WS + [_s("s", "A", SI + 1, CI + 1, win=100), _s("s", "P", SI + 1, CI + 1, win=100),
                 _s("s", "A", SI + 1, CI + 1, win=100), _s("s", "P", SI + 1, CI + 1,
                                                           win=12800)],
        {4: ["window_update"], 5: ["duplicate_ack"], 6: ["duplicate_ack"],
         7: ["window_update"]}),
    "negative_irtt_has_no_limit": (  # timestamps backwards between SYN and the first ACK
        [_s("c", "S", CI, 0, win=65535, dt=0), _s("s", "SA", SI, CI + 1, win=65535),
         _s("c", "A", CI + 1, SI + 1, win=5000, dt=-1.01),
         _s("s", "PA", SI + 1, CI + 1, 100, dt=5), _s("s", "PA", SI + 201, CI + 1, 100),
         _s("s", "PA", SI + 101, CI + 1, 100, dt=100)],
        {5: ["lost_segment"], 6: ["out_of_order"]}),
    # An ACK beyond everything the peer sent primes nothing while the peer shows a gap ...
    "ack_beyond_a_gap_primes_nothing": (
        [_s("c", "A", CI, SI, 100, dt=0), _s("s", "A", SI, CI + 50, dt=300),
         _s("s", "A", SI + 1, CI + 50, 1, dt=4), _s("c", "A", CI + 100, SI + 3, dt=2.5),
         _s("c", "A", CI + 50, SI + 2, 10, dt=0.05)],
        {3: ["lost_segment"], 4: ["ack_lost_segment"], 5: ["retransmission"]}),
    # ... and leaves the peer's duplicate ACKs counting
    "ack_beyond_a_gap_keeps_duplicate_acks": (
        [_s("c", "A", CI + 1, SI + 1, win=5000, dt=0), DUPACK, DUPACK,
         _s("c", "A", CI + 2, SI + 1, 1, win=5000),
         _s("s", "A", SI + 1, CI + 103, dt=2.5), _s("c", "A", CI + 3, SI + 1, 1000),
         _s("s", "A", SI + 111, CI + 1003, 1, dt=15), _s("s", "A", SI + 1, CI + 1003, 100)],
        {2: ["duplicate_ack"], 3: ["duplicate_ack"], 4: ["lost_segment"],
         5: ["ack_lost_segment"], 7: ["lost_segment"], 8: FR}),
    "rst_beyond_next_expected_leaves_a_gap": (  # not flagged, but reported by the peer's ACKs
        [_s("s", "A", SI, CI, 10, dt=0), _s("s", "R", SI + 11, CI + 100, 1000),
         _s("s", "A", SI + 1011, CI + 100, 1000), _s("s", "PA", SI + 2011, CI + 100, 1000),
         _s("s", "A", SI + 3011, CI + 100), _s("c", "A", CI + 100, SI + 4472, win=0)],
        {5: ["duplicate_ack"], 6: ["ack_lost_segment", "zero_window"]}),
    # Zero-window probes: the probe's ACK, retransmitted probes, an ACK of the probe byte.
    "zero_window_probe_retransmitted": (
        HS + [ZW, PROBE, ZW, PROBE, ZW],
        {4: ["zero_window"], 5: ["zero_window_probe"], 6: ["zero_window", "zero_window_probe_ack"],
         7: ["zero_window_probe"], 8: ["zero_window", "zero_window_probe_ack"]}),
    "zero_window_probe_byte_acked_then_probed_again": (
        HS + [ZW, PROBE, _s("s", "A", SI + 1, CI + 2, win=0), PROBE,
              _s("s", "A", SI + 1, CI + 2, win=0)],
        {4: ["zero_window"], 5: ["zero_window_probe"], 6: ["ack_lost_segment", "zero_window"],
         7: ["retransmission", "spurious_retransmission", "zero_window_probe"],
         8: ["zero_window", "zero_window_probe_ack"]}),
    # Port reuse: a late SYN (or SYN-ACK) with the old ISN stays in the conversation, a SYN
    # with a new one starts another, in which the old data carries on as retransmissions.
    "late_syn_with_the_same_isn": (
        HS + [C100, S50, _s("c", "S", CI, 0, win=65535),
              _s("c", "PA", CI + 101, SI + 51, 10, win=5000)],
        {6: ["out_of_order"]}),
    "synack_with_a_new_isn_stays": (
        HS + [C100, S50, _s("s", "SA", SI + 100000, CI + 1, win=65535),
              _s("s", "PA", SI + 51, CI + 101, 10), _s("s", "PA", SI + 100001, CI + 101, 10)],
        {6: ["lost_segment"], 7: ["out_of_order"]}),
    "new_isn_then_old_data": (
        HS + [C100, S50, _s("c", "S", CI + 900000, 0, win=65535, dt=100),
              _s("s", "SA", SI + 700000, CI + 900001, win=65535),
              _s("c", "PA", CI + 101, SI + 51, 10, win=5000), _s("s", "PA", SI + 51, CI + 111, 10)],
        {8: ["retransmission", "spurious_retransmission"], 9: ["retransmission"]}),
    # Shapes of real captures: TCP Fast Open, FIN retransmissions, simultaneous open.
    "syn_with_data_not_acked": (
        [_s("c", "SP", CI, 0, 100, win=65535, dt=0), _s("s", "SA", SI, CI + 1, win=65535),
         _s("c", "PA", CI + 1, SI + 1, 100, win=5000, dt=10),
         _s("c", "PA", CI + 101, SI + 1, 10, win=5000)],
        {3: ["retransmission"]}),
    "fin_retransmissions": (
        HS + [_s("c", "FA", CI + 1, SI + 1, 10, win=5000),
              _s("c", "FA", CI + 1, SI + 1, 10, win=5000, dt=200),
              _s("c", "FA", CI + 11, SI + 1, win=5000, dt=400), _s("s", "A", SI + 1, CI + 12),
              _s("s", "FA", SI + 1, CI + 12), _s("s", "FA", SI + 1, CI + 12, dt=300)],
        {5: ["retransmission"], 6: ["retransmission"], 9: ["retransmission"]}),
    "simultaneous_open": (
        [_s("c", "S", CI, 0, win=65535, dt=0), _s("s", "S", SI, 0, win=65535, dt=0.1),
         _s("c", "SA", CI, SI + 1, win=65535), _s("s", "SA", SI, CI + 1, win=65535, dt=0.1),
         _s("c", "A", CI + 1, SI + 1, 10, win=5000)],
        {3: ["retransmission"], 4: ["retransmission"]}),
}


def _capture(segs: list[Seg]) -> PcapWriter:
    w = PcapWriter()
    t = 10**12
    cli, srv = ip4("10.0.0.1"), ip4("10.0.0.2")
    for d, fl, seq, ack, ln, win, dt, opts, snap in segs:
        t += int(dt * 1_000_000)
        sp, dp, src, dst = (3000, 80, cli, srv) if d == "c" else (80, 3000, srv, cli)
        pkt = ethernet(ipv4_packet(src, dst, 6, tcp_segment(sp, dp, seq, ack, FLAGS[fl], win,
                                                              bytes(ln), opts)))
        w.add(t, pkt[:snap] if snap else pkt, len(pkt))
    return w


def _ours(path: Path) -> dict[int, list[str]]:
    return {k: sorted(flag_names(v)) for k, v in analyze_capture(str(path)).frame_flags.items()}


def _theirs(path: Path) -> dict[int, list[str]]:
    return {k: sorted(v) for k, v in tshark_flags(str(path)).items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_corner_case_flags(name: str, tmp_path: Path) -> None:
    segs, expected = CASES[name]
    path = tmp_path / f"{name}.pcap"
    _capture(segs).write(str(path))
    want = {k: sorted(v) for k, v in expected.items()}
    assert _ours(path) == want
    if tshark_available():  # the recorded expectation is still what the oracle says
        assert _theirs(path) == want


def _base(tmp_path: Path) -> tuple[PcapWriter, dict[int, list[str]]]:
    w = generate(0, conversations=12, port_reuse=False)
    path = tmp_path / "base.pcap"
    w.write(str(path))
    return w, _ours(path)


@pytest.mark.parametrize("name", sorted(ENCAPSULATIONS))
def test_encapsulation_keeps_the_flags(name: str, tmp_path: Path) -> None:
    """Tunnels and link types change no flag: same frames as the plain Ethernet capture."""
    w, base = _base(tmp_path)
    assert len(base) > 50  # the base capture has plenty to lose
    path = tmp_path / f"{name}.pcap"
    encapsulate(w, name).write(str(path))
    got = _ours(path)
    assert got == base
    if tshark_available():
        assert _theirs(path) == got


FRAGMENTED = {  # name -> (IPv6, extension headers, fragment size, last fragment first)
    "v4_600": (False, False, 600, False),
    "v4_256_reversed": (False, False, 256, True),
    "v6_512": (True, False, 512, False),
    "v6_ext_1000_reversed": (True, True, 1000, True),
}


@pytest.mark.parametrize("name", sorted(FRAGMENTED))
def test_fragments_are_reassembled(name: str, tmp_path: Path) -> None:
    """TCP in IP fragments is analysed in the frame completing the datagram, as tshark does."""
    w, _ = _base(tmp_path)
    v6, ext, size, reverse = FRAGMENTED[name]
    if v6:
        w = to_ipv6(w, ext)
    whole = tmp_path / "whole.pcap"
    w.write(str(whole))
    base = _ours(whole)
    frag = fragmented(w, size, reverse)
    assert len(frag.packets) > len(w.packets) + 50
    path = tmp_path / f"{name}.pcap"
    frag.write(str(path))
    # the same flags, on the frame that completes each datagram
    got = _ours(path)
    assert sorted(got.values()) == sorted(base.values())
    if tshark_available():
        assert _theirs(path) == got


@pytest.mark.skipif(not tshark_available(), reason="tshark (the oracle) is not on PATH")
@pytest.mark.parametrize("variant", ["dup_same_ts", "dup_interleaved", "snap54", "snap66"])
def test_duplicates_and_snaplen_match_tshark(variant: str, tmp_path: Path) -> None:
    w, _ = _base(tmp_path)
    if variant == "dup_same_ts":
        w = duplicated(w, 0)
    elif variant == "dup_interleaved":
        w = duplicated(w, 60_000)  # longer than the shortest gaps: timestamps step back
    else:
        w = truncated(w, int(variant[4:]))
    path = tmp_path / f"{variant}.pcap"
    w.write(str(path))
    ours, theirs = _ours(path), _theirs(path)
    assert len(theirs) > 50
    assert {k: v for k, v in ours.items() if theirs.get(k) != v} == {}
    assert set(theirs) <= set(ours)


def test_reassembler_bounded_and_robust() -> None:
    """Stray, overlapping, duplicated and oversized fragments: no error, bounded memory."""
    import random

    from forensics.fragments import MAX_PENDING, Reassembler

    r = Reassembler()
    rng = random.Random(7)
    data = bytes(range(256)) * 8
    for i in range(20_000):
        off = rng.randrange(0, 70_000) & ~7
        r.add((b"k", 6, i % 9000), off, rng.random() < 0.7, data, rng.randrange(0, 64),
              rng.randrange(0, 2048), rng.randrange(-5, 1600))
    assert len(r.pending) <= MAX_PENDING
    # overlapping and duplicated pieces, last first: complete once everything is covered
    key = (b"x", 17, 1)
    assert r.add(key, 16, 0, data, 0, 8, 8) is None
    assert r.add(key, 0, 1, data, 0, 16, 16) is not None
    r2 = Reassembler()
    assert r2.add(key, 8, 0, data, 0, 16, 16) is None
    assert r2.add(key, 8, 1, data, 0, 8, 8) is None
    got = r2.add(key, 0, 1, data, 0, 12, 12)
    assert got is not None and got[2] == 24 and got[1] == 24


def test_a_flood_of_duplicate_fragments_stays_linear() -> None:
    """Every piece after the last one re-sorts and re-scans the datagram: without a bound on
    its pieces, duplicates made the packet loop quadratic (100k fragments: minutes)."""
    from forensics.fragments import MAX_PIECES, Reassembler
    from tests.fakes.timing import assert_linear

    data = bytes(64)

    def flood(text: str) -> None:
        r = Reassembler()
        key = (b"k", 17, 1)
        r.add(key, 64, 0, data, 0, 8, 8)  # the last fragment: the total is known
        for _ in range(len(text)):
            r.add(key, 8, 1, data, 0, 8, 8)  # the first 8 bytes never arrive
            assert len(r.pending.get(key, ())) <= MAX_PIECES

    assert_linear(flood, "x" * 40_000)
