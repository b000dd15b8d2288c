"""The numpy comparison (compare_fast) gives exactly the result of the plain Python one.

Both are run on the reference pairs of the other tests, on the benchmark generator's pair,
and on random pairs that mix what the matching must get right: duplicate keys (retransmitted
IP IDs, IPv6 without IP IDs), NAT, losses each way, injected packets, third-party hosts,
offload-sized segments split at the other end, IP options, cut-off packets, every link layer
the comparison reads, pcap and pcapng. The results are compared as JSON text, so the order of
every list and key counts.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from benchmarks.forensics_gen import two_ended_pair
from forensics import compare_fast
from forensics.compare import _finish, _gather, compare_captures
from lab.packets import (
    ethernet,
    icmp_message,
    ip4,
    ipv4_packet,
    ipv6_packet,
    tcp_segment,
    udp_datagram,
)
from lab.pcap import PcapWriter, pcapng_bytes

from .test_compare import build

CAPTURES = Path(__file__).parent / "captures"


def _both(pa: str, pb: str) -> tuple[str, str]:
    fast = _finish(pa, pb, compare_fast.gather(pa, pb))
    ref = _finish(pa, pb, _gather(pa, pb))
    return json.dumps(fast), json.dumps(ref)


def _same(pa: Path | str, pb: Path | str) -> str:
    fast, ref = _both(str(pa), str(pb))
    assert fast == ref
    assert json.dumps(compare_captures(str(pa), str(pb))) == ref
    return str(json.loads(ref)["status"])


def test_reference_pair(tmp_path: Path) -> None:
    pa, pb = build(tmp_path)
    assert _same(pa, pb) == "ok"
    assert _same(pb, pa) == "ok"


def test_stored_captures_against_each_other() -> None:
    files = sorted(CAPTURES.glob("*.pcap"))
    statuses = {_same(a, b) for a in files for b in files}
    assert statuses == {"ok", "refused"}


def test_benchmark_generator_pair(tmp_path: Path) -> None:
    pa, pb = two_ended_pair(str(tmp_path), flows=60, seed=5)
    assert _same(pa, pb) == "ok"


# -- random pairs -------------------------------------------------------------------------

SIDE_A = [ip4(f"10.0.0.{i}") for i in range(1, 5)]
SIDE_B = [ip4(f"10.9.0.{i}") for i in range(1, 4)]
NAT = {a: ip4(f"52.0.0.{i + 1}") for i, a in enumerate(SIDE_A)}
V6_A = bytes.fromhex("fd00000000000000000000000000000a")
V6_B = bytes.fromhex("fd00000000000000000000000000000b")


def _l4(rng: random.Random, kind: str, sport: int, dport: int, big: bool) -> tuple[int, bytes]:
    if kind == "udp":
        return 17, udp_datagram(sport, dport, rng.randbytes(rng.choice((0, 5, 40, 90))))
    if kind == "icmp":
        return 1, icmp_message(8, 0, rng.randbytes(4), rng.randbytes(rng.choice((0, 20, 60))))
    size = 2920 if big else rng.choice((0, 0, 1, 100, 1460))
    flags = rng.choice((0x10, 0x18, 0x02, 0x12, 0x11, 0x04, 0x14))
    opts = rng.choice((b"", b"\x02\x04\x05\xb4"))
    return 6, tcp_segment(sport, dport, rng.getrandbits(32), rng.getrandbits(32), flags, 512,
                          bytes(size), opts)


def _packet(rng: random.Random, src: bytes, dst: bytes, proto: int, l4: bytes, ident: int,
            ttl: int, v6: bool, options: bool) -> bytes:
    if v6:
        return ipv6_packet(src, dst, proto, l4, ttl)
    ip = ipv4_packet(src, dst, proto, l4, ident, ttl)
    if options:  # IHL 6: a 4-byte option before the payload
        ip = bytes([0x46]) + ip[1:2] + struct.pack("!H", len(ip) + 4) + ip[4:20] + bytes(4) + l4
    if rng.random() < 0.02:
        ip = ip[:2] + b"\x00\x00" + ip[4:]  # total length 0: TSO as some NICs record it
    return ip


def _frame(linktype: int, ip: bytes, v6: bool, vlan: bool) -> bytes:
    if linktype == 1:
        return ethernet(ip, v6=v6, vlan=42 if vlan else None)
    if linktype == 113:
        return struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 8, 0x86DD if v6 else 0x0800) + ip
    if linktype == 276:
        return struct.pack("!HHIHBB8s", 0x86DD if v6 else 0x0800, 0, 2, 1, 0, 6,
                           b"\x02" * 8) + ip
    if linktype == 0:
        return struct.pack("<I", 30 if v6 else 2) + ip
    return ip  # raw IP link types


def random_pair(seed: int, tmp: Path) -> tuple[Path, Path]:
    """Two ends of random traffic: B's clock ahead, A NATed at B, packets lost both ways."""
    rng = random.Random(seed)
    skew = rng.choice((0, 3_000_000, -7_000_000_000, 2_000_000_000))
    owd = rng.choice((1_000_000, 10_000_000))
    lt_a, lt_b = rng.choice((1, 1, 113, 101, 228, 276, 0)), rng.choice((1, 1, 113, 101, 276))
    v6_ok = lt_a not in (228,) and lt_b not in (228,)
    snap_a = rng.choice((65535, 65535, 60))
    rows_a: list[tuple[int, bytes]] = []
    rows_b: list[tuple[int, bytes]] = []
    t = 1_700_000_000_000_000_000
    ident = [rng.randrange(65536), rng.randrange(65536)]
    for _ in range(rng.randrange(40, 160)):
        t += rng.randrange(1, 2_000_000)
        frm = rng.random() < 0.55  # True: A sends
        kind = rng.choice(("tcp", "tcp", "tcp", "udp", "icmp"))
        v6 = v6_ok and rng.random() < 0.1
        if v6:
            a_addr, a_at_b, b_addr = V6_A, V6_A, V6_B
        else:
            a_addr, b_addr = rng.choice(SIDE_A), rng.choice(SIDE_B)
            a_at_b = NAT[a_addr]
        sp, dp = rng.choice((40000, 40001, 40002, 50000)), rng.choice((443, 53, 6379))
        big = kind == "tcp" and frm and rng.random() < 0.05
        proto, l4 = _l4(rng, kind, sp if frm else dp, dp if frm else sp, big)
        ident[0 if frm else 1] += 1
        ipid = ident[0 if frm else 1] if rng.random() > 0.05 else 7  # some repeated IP IDs
        options = not v6 and rng.random() < 0.05
        vlan_a, vlan_b = rng.random() < 0.1, rng.random() < 0.1
        copies = 2 if rng.random() < 0.05 else 1  # the same packet twice (duplicate keys)
        for _c in range(copies):
            if frm:
                pa = _packet(rng, a_addr, b_addr, proto, l4, ipid, 64, v6, options)
                rows_a.append((t, _frame(lt_a, pa, v6, vlan_a)))
                if rng.random() < 0.08:
                    continue  # lost A -> B
                if big:  # B receives the offload segment as two
                    half = (len(l4) - 20) // 2
                    seq = struct.unpack("!I", l4[4:8])[0]
                    for k in range(2):
                        part = l4[:4] + struct.pack("!I", (seq + k * half) & 0xFFFFFFFF) + \
                            l4[8:20] + bytes(half)
                        pb = _packet(rng, a_at_b, b_addr, proto, part, ipid + k, 50, v6, False)
                        rows_b.append((t + skew + owd + k, _frame(lt_b, pb, v6, vlan_b)))
                    continue
                pb = _packet(rng, a_at_b, b_addr, proto, l4, ipid, 50, v6, options)
                rows_b.append((t + skew + owd + rng.randrange(3), _frame(lt_b, pb, v6, vlan_b)))
            else:
                pb = _packet(rng, b_addr, a_at_b, proto, l4, ipid, 64, v6, options)
                rows_b.append((t + skew, _frame(lt_b, pb, v6, vlan_b)))
                if rng.random() < 0.08:
                    continue  # lost B -> A
                pa = _packet(rng, b_addr, a_addr, proto, l4, ipid, 50, v6, options)
                rows_a.append((t + owd + rng.randrange(3), _frame(lt_a, pa, v6, vlan_a)))
        if rng.random() < 0.03:  # a middlebox's RST in A's name, seen at B only
            rst = tcp_segment(sp, dp, rng.getrandbits(32), 0, 0x04, 0)
            pb = ipv4_packet(NAT[SIDE_A[0]], SIDE_B[0], 6, rst, rng.randrange(65536), 60)
            rows_b.append((t + skew + owd, _frame(lt_b if lt_b != 228 else 101, pb, False,
                                                  False)))
        if rng.random() < 0.03:  # a third host, at A only
            pa = ipv4_packet(ip4("192.168.7.7"), SIDE_A[0], 17, udp_datagram(9, 9, b"x"), 1)
            rows_a.append((t, _frame(lt_a, pa, False, False)))
    if rng.random() < 0.2:  # out of order at B
        rng.shuffle(rows_b)
    pa_path, pb_path = tmp / f"a{seed}.pcap", tmp / f"b{seed}.pcap"
    if lt_a == 1 and rng.random() < 0.3:
        pa_path.write_bytes(pcapng_bytes(rows_a))
    else:
        wa = PcapWriter(linktype=lt_a, snaplen=snap_a, nanosecond=rng.random() < 0.5)
        for ts, f in rows_a:
            wa.add(ts, f)
        pa_path.write_bytes(wa.to_bytes())
    wb = PcapWriter(linktype=lt_b, nanosecond=True)
    for ts, f in rows_b:
        wb.add(ts, f)
    data = wb.to_bytes()
    if rng.random() < 0.1:
        data = data[: len(data) - rng.randrange(1, 40)]  # cut short mid-record
    pb_path.write_bytes(data)
    return pa_path, pb_path


@pytest.mark.parametrize("seed", range(60))
def test_random_pairs(seed: int, tmp_path: Path) -> None:
    pa, pb = random_pair(seed, tmp_path)
    _same(pa, pb)
    _same(pb, pa)


def test_random_pairs_mostly_compare() -> None:
    """The random pairs do reach the counting (not refused), so the tests above test it."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        statuses = [_same(*random_pair(seed, Path(d))) for seed in range(20)]
    assert statuses.count("ok") >= 15


def test_hash_collisions_fall_back_to_sorting_the_keys(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pa, pb = random_pair(3, tmp_path)
    expected = _both(str(pa), str(pb))[1]
    monkeypatch.setattr(compare_fast, "MIX", (0, 0, 0))  # every key hashes alike
    assert _both(str(pa), str(pb))[0] == expected


def test_group_keeps_each_side_in_order() -> None:
    rng = np.random.default_rng(1)
    w = [rng.integers(0, 3, 500).astype(np.uint64) for _ in range(3)]
    order, starts = compare_fast._group(*w)
    keys = list(zip(*(x.tolist() for x in w), strict=True))
    runs = np.split(order, np.flatnonzero(starts)[1:])
    assert sorted(len(r) for r in runs) == sorted(
        keys.count(k) for k in set(keys))
    for run in runs:
        assert len({keys[i] for i in run}) == 1 and list(run) == sorted(run)


def test_year_2262_falls_back_to_python(tmp_path: Path) -> None:
    w = PcapWriter()
    seg = tcp_segment(1, 2, 3, 4, 0x10, 5)
    w.add(1_700_000_000_000_000_000, ethernet(ipv4_packet(SIDE_A[0], SIDE_B[0], 6, seg, 1)))
    pa = tmp_path / "a.pcap"
    w.write(pa)
    # pcapng counting whole seconds: a time far past what int64 nanoseconds hold
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    opt = struct.pack("<HHB3x", 9, 1, 0) + struct.pack("<HH", 0, 0)
    idb_body = struct.pack("<HHI", 1, 0, 65535) + opt
    idb = struct.pack("<II", 1, len(idb_body) + 12) + idb_body + struct.pack(
        "<I", len(idb_body) + 12)
    frame = ethernet(ipv4_packet(SIDE_A[0], SIDE_B[0], 6, seg, 1))
    frame += b"\x00" * (-len(frame) % 4)
    body = struct.pack("<IIIII", 0, 0xFFFFFFFF, 0xFFFFFFFF, len(frame), len(frame)) + frame
    epb = struct.pack("<II", 6, len(body) + 12) + body + struct.pack("<I", len(body) + 12)
    pb = tmp_path / "b.pcapng"
    pb.write_bytes(shb + idb + epb)
    with pytest.raises(OverflowError):
        compare_fast.gather(str(pa), str(pb))
    assert json.dumps(compare_captures(str(pa), str(pb))) == json.dumps(
        _finish(str(pa), str(pb), _gather(str(pa), str(pb))))


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_chunk_decoder_equals_packet_decoder(seed: int, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows decoded a chunk at a time are those of compare_keys, packet by packet."""
    pa, pb = random_pair(seed, tmp_path)
    for path in (pa, pb):
        codes = compare_fast.Addresses()
        fast = compare_fast.decode(str(path), codes, compare_fast._one)
        with monkeypatch.context() as m:
            m.setattr(compare_fast, "L3_AT", {})  # no link layer for the vector rule
            slow = compare_fast.decode(str(path), codes, compare_fast._one)
        for name in ("w0", "w1", "w2", "ts", "src", "dst", "ttl", "big"):
            assert getattr(fast, name).tolist() == getattr(slow, name).tolist(), name


@pytest.mark.parametrize("seed", range(0, 60, 5))
def test_pcap_chunks_hold_the_readers_records(seed: int, tmp_path: Path) -> None:
    """compare_fast walks a pcap itself: it must see the records reader.py yields, up to the
    same cut-off or corrupt record."""
    from forensics.reader import open_capture

    pa, pb = random_pair(seed, tmp_path)
    corrupt = tmp_path / "corrupt.pcap"
    data = pb.read_bytes()
    at = 24 + 16 + struct.unpack_from("<I", data, 24 + 8)[0]  # the second record's header
    corrupt.write_bytes(data[:at + 8] + struct.pack("<I", 1 << 30) + data[at + 12:])
    for path in (pa, pb, corrupt):
        if path.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a":
            continue  # pcapng: read through reader.py itself
        # offsets differ (the file is mapped whole; reader.py's chunks start anywhere): the
        # records' bytes, lengths and times do not
        mine = [(bytes(buf[o:o + c]), c, w, t, lt) for buf, offs, cap, wire, ts, lt in
                compare_fast._batches_pcap(str(path))
                for o, c, w, t in zip(offs.tolist(), cap.tolist(), wire.tolist(),
                                      ts.tolist(), strict=True)]
        theirs = [(bytes(b[o:o + c]), c, w, t, lt) for b, o, c, w, t, lt in
                  open_capture(str(path))[1]]
        assert mine == theirs


def test_more_addresses_than_ids(tmp_path: Path) -> None:
    """Past 65,535 addresses the ids stop growing (compare._gather's cap): kept alike."""
    wa, wb = PcapWriter(), PcapWriter()
    t = 1_700_000_000_000_000_000
    server = ip4("10.9.9.9")
    for i in range(70_000):
        client = bytes((11, i >> 16, (i >> 8) & 0xFF, i & 0xFF))
        fwd = i % 3 != 0
        src, dst = (client, server) if fwd else (server, client)
        seg = tcp_segment(40000 + i % 7, 443, i * 10, 5, 0x18, 512, b"x")
        t += 1000
        wa.add(t, ethernet(ipv4_packet(src, dst, 6, seg, i, 64)))
        if i % 1000 != 5:
            wb.add(t + (1_000_000 if fwd else -1_000_000), ethernet(ipv4_packet(
                src, dst, 6, seg, i, 60)))
    pa, pb = tmp_path / "a.pcap", tmp_path / "b.pcap"
    wa.write(pa)
    wb.write(pb)
    assert _same(pa, pb) == "ok"
