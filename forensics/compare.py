"""Two-ended comparison: the same path captured at both ends.

Packets are matched on fields that survive the path (IP ID, ports, TCP seq/ack/flags and
length, a payload hash for UDP/ICMP) and never on TTL, checksums, MACs or addresses, so
NAT does not break matching. From matched pairs we estimate the clock offset between the
two capture hosts and the one-way delay each way; unmatched packets are losses, or, when
they appear at a receiver without a sender, packets injected by a middlebox (e.g. a RST).
TSO/GRO change segment boundaries, so unmatched TCP data falls back to byte ranges.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Iterator
from typing import Any

from .reader import Record, open_capture

_U16 = struct.Struct("!H").unpack_from
_TCP = struct.Struct("!HHIIBB").unpack_from
MAX_EXAMPLES = 10

Pkt = tuple[tuple[int, ...], int, bytes, bytes, int, int, int, int]
# (match key, ts_ns, src, dst, sport, dport, seq, data length)


def _packets(records: Iterator[Record]) -> Iterator[Pkt]:
    """Decode just enough of each IP packet to build its match key."""
    for buf, off, caplen, wirelen, ts, lt in records:
        end = off + caplen
        if lt == 1:
            if caplen < 14:
                continue
            et = _U16(buf, off + 12)[0]
            l3 = off + 14
            while et in (0x8100, 0x88A8) and l3 + 4 <= end:
                et = _U16(buf, l3 + 2)[0]
                l3 += 4
        elif lt == 113:
            et, l3 = (_U16(buf, off + 14)[0] if caplen >= 16 else 0), off + 16
        elif lt == 276:
            et, l3 = (_U16(buf, off)[0] if caplen >= 20 else 0), off + 20
        elif lt in (101, 12, 14, 228, 229) and caplen:
            l3 = off
            et = 0x0800 if buf[off] >> 4 == 4 else 0x86DD
        elif lt in (0, 108) and caplen >= 4:
            l3 = off + 4
            fam = buf[off] | buf[off + 3]
            et = 0x0800 if fam == 2 else 0x86DD
        else:
            continue
        if et == 0x0800 and l3 + 20 <= end:
            ihl = (buf[l3] & 15) * 4
            iplen = _U16(buf, l3 + 2)[0] or (wirelen - (l3 - off))
            ipid = _U16(buf, l3 + 4)[0]
            proto = buf[l3 + 9]
            src, dst = buf[l3 + 12 : l3 + 16], buf[l3 + 16 : l3 + 20]
            l4 = l3 + ihl
            l4len = iplen - ihl
        elif et == 0x86DD and l3 + 40 <= end:
            ipid = 0
            proto = buf[l3 + 6]
            src, dst = buf[l3 + 8 : l3 + 24], buf[l3 + 24 : l3 + 40]
            l4 = l3 + 40
            l4len = _U16(buf, l3 + 4)[0] or (wirelen - (l3 - off) - 40)
        else:
            continue
        if proto == 6 and l4 + 14 <= end:
            sport, dport, seq, ack, doff, fl = _TCP(buf, l4)
            dlen = l4len - (doff >> 4) * 4
            key: tuple[int, ...] = (6, ipid, sport, dport, seq, ack, fl & 0x3F, dlen)
            yield key, ts, src, dst, sport, dport, seq, max(dlen, 0)
        elif proto == 17 and l4 + 8 <= end:
            sport, dport = _U16(buf, l4)[0], _U16(buf, l4 + 2)[0]
            h = zlib.crc32(buf[l4 + 8 : min(end, l4 + 40)])
            yield (17, ipid, sport, dport, l4len, h), ts, src, dst, sport, dport, 0, 0
        elif l4 < end:
            h = zlib.crc32(buf[l4 : min(end, l4 + 32)])
            yield (proto, ipid, l4len, h), ts, src, dst, 0, 0, 0, 0


def _ip(raw: bytes) -> str:
    import ipaddress

    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return raw.hex()


def _covered(ranges: list[tuple[int, int]], start: int, end: int) -> bool:
    """Is [start, end) inside the union of ``ranges`` (already merged and sorted)?"""
    i = bisect.bisect_right(ranges, (start, 1 << 62)) - 1
    return i >= 0 and ranges[i][0] <= start and ranges[i][1] >= end


def _merge(rs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    rs.sort()
    out: list[tuple[int, int]] = []
    for s, e in rs:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _median(xs: list[int]) -> int:
    xs.sort()
    return xs[len(xs) // 2]


def compare_captures(path_a: str, path_b: str) -> dict[str, Any]:
    """Match the two captures and report offset, delays, losses and injected packets.

    Which address is which host is learnt from the matched pairs themselves: packets A
    sends reach B later (B time minus A time is offset + delay) than packets B sends
    (offset - delay), so NAT or a shared subnet does not confuse the sides.
    """
    addr_ids: dict[bytes, int] = {}
    addrs: list[bytes] = []

    def aid(addr: bytes) -> int:
        n = addr_ids.get(addr)
        if n is None:
            n = addr_ids[addr] = min(len(addrs), 0xFFFF)
            addrs.append(addr)
        return n

    # Pass 1: index every packet of A by key; value = ts << 16 | sender id (FIFO if repeated).
    _ia, rec_a = open_capture(path_a)
    index: dict[tuple[int, ...], Any] = {}
    a_ranges: dict[tuple[int, int], list[tuple[int, int]]] = {}
    a_first = a_last = 0
    for key, ts, src, _dst, sp, dp, seq, dlen in _packets(rec_a):
        if not a_first:
            a_first = ts
        a_last = ts
        v = (ts << 16) | aid(src)
        prev = index.get(key)
        if prev is None:
            index[key] = v
        elif isinstance(prev, list):
            prev.append(v)
        else:
            index[key] = [prev, v]
        if dlen:
            a_ranges.setdefault((sp, dp), []).append((seq, seq + dlen))
    # Pass 2: stream B and match.
    deltas: dict[int, list[int]] = {}  # sender id in A -> tsB - tsA of matched packets
    b_sender: dict[int, dict[bytes, int]] = {}  # sender id in A -> sender address seen in B
    unmatched_b: list[tuple[int, tuple[int, ...], bytes, bytes]] = []
    b_ranges: dict[tuple[int, int], list[tuple[int, int]]] = {}
    _ib, rec_b = open_capture(path_b)
    b_first = b_last = 0
    b_packets = 0
    for key, ts, src, dst, sp, dp, seq, dlen in _packets(rec_b):
        b_packets += 1
        if not b_first:
            b_first = ts
        b_last = ts
        if dlen:
            b_ranges.setdefault((sp, dp), []).append((seq, seq + dlen))
        hit = index.get(key)
        if hit is None:
            unmatched_b.append((ts, key, src, dst))
            continue
        if isinstance(hit, list):
            v = hit.pop(0)
            if not hit:
                del index[key]
        else:
            v = hit
            del index[key]
        sid = v & 0xFFFF
        deltas.setdefault(sid, []).append(ts - (v >> 16))
        seen = b_sender.setdefault(sid, {})
        if len(seen) < 4:
            seen[src] = seen.get(src, 0) + 1
    # The sender whose packets arrive "latest" (largest tsB - tsA) is host A.
    ranked = sorted(deltas, key=lambda s: -_median(deltas[s]))
    a_ids = set(ranked[:1])
    if len(ranked) >= 2:
        gap = _median(deltas[ranked[0]]) - _median(deltas[ranked[-1]])
        a_ids = {s for s in ranked if _median(deltas[s]) - _median(deltas[ranked[-1]]) > gap / 2}
        if not a_ids:  # no measurable delay difference: keep the latest sender as A
            a_ids = set(ranked[:1])
    ab = sorted(d for s in a_ids for d in deltas[s])
    ba = sorted(-d for s in deltas if s not in a_ids for d in deltas[s])  # tsA - tsB
    a_in_b = {addr for s in a_ids for addr in b_sender.get(s, {})}
    b_in_b = {addr for s in deltas if s not in a_ids for addr in b_sender.get(s, {})}
    offset_ns = owd = None
    if ab and ba:
        offset_ns = (ab[0] - ba[0]) // 2
        owd = (ab[0] + ba[0]) // 2
    off = offset_ns or 0
    b_merged = {k: _merge(v) for k, v in b_ranges.items()}  # what B saw, by flow
    a_merged = {k: _merge(v) for k, v in a_ranges.items()}  # what A saw, by flow

    def covered(merged: dict[tuple[int, int], list[tuple[int, int]]],
                key: tuple[int, ...]) -> bool:
        if key[0] != 6 or key[7] <= 0:
            return False
        rs = merged.get((key[2], key[3]))
        return bool(rs) and _covered(rs or [], key[4], key[4] + key[7])

    res = {"lost_ab": 0, "lost_ba": 0, "range_ab": 0, "range_ba": 0, "inj_b": 0, "inj_a": 0}
    ex: dict[str, list[dict[str, Any]]] = {"lost_ab": [], "lost_ba": [], "inj_b": [],
                                            "inj_a": []}

    def note(kind: str, k: tuple[int, ...], extra: dict[str, Any] | None = None) -> None:
        res[kind] += 1
        if len(ex[kind]) < MAX_EXAMPLES:
            d = _key_desc(k)
            d.update(extra or {})
            ex[kind].append(d)

    # Left in the index: seen at A, never at B (only inside B's capture window).
    for k, v in index.items():
        for x in v if isinstance(v, list) else [v]:
            t = x >> 16
            if not b_first - off <= t <= b_last - off:
                continue
            if (x & 0xFFFF) in a_ids or not a_ids:
                if covered(b_merged, k):
                    res["range_ab"] += 1
                else:
                    note("lost_ab", k, {"ts_ns": t})
            elif covered(b_merged, k):  # GRO at A merged what B sent
                res["range_ba"] += 1
            else:
                note("inj_a", k, {"src": _ip(addrs[x & 0xFFFF]), "ts_ns": t})
    for ts, k, src, dst in unmatched_b:
        if not a_first + off <= ts <= a_last + off:
            continue
        if src in a_in_b and src not in b_in_b:
            if covered(a_merged, k):
                res["range_ab"] += 1
            else:
                note("inj_b", k, {"src": _ip(src), "dst": _ip(dst), "ts_ns": ts})
        elif covered(a_merged, k):
            res["range_ba"] += 1
        else:
            note("lost_ba", k, {"ts_ns": ts})

    def ms(x: int | None) -> float | None:
        return None if x is None else round(x / 1e6, 3)

    return {
        "capture_a": path_a,
        "capture_b": path_b,
        "host_a": ", ".join(sorted(_ip(addrs[s]) for s in a_ids)),
        "host_b": ", ".join(sorted(_ip(a) for a in b_in_b)),
        "host_a_as_seen_at_b": ", ".join(sorted(_ip(a) for a in a_in_b)),
        "packets_b": b_packets,
        "matched_a_to_b": len(ab),
        "matched_b_to_a": len(ba),
        "clock_offset_ms": ms(offset_ns),
        "one_way_delay_ms": {
            "a_to_b_min": ms(owd), "b_to_a_min": ms(owd),
            "a_to_b_median": ms(ab[len(ab) // 2] - off) if ab and offset_ns is not None else None,
            "b_to_a_median": ms(ba[len(ba) // 2] + off) if ba and offset_ns is not None else None,
        },
        "lost_a_to_b": res["lost_ab"],
        "lost_b_to_a": res["lost_ba"],
        "lost_examples_a_to_b": ex["lost_ab"],
        "lost_examples_b_to_a": ex["lost_ba"],
        "matched_by_byte_range": {"a_to_b": res["range_ab"], "b_to_a": res["range_ba"]},
        "unsent_but_received_at_b": res["inj_b"],
        "unsent_but_received_at_a": res["inj_a"],
        "unsent_examples": ex["inj_b"] + ex["inj_a"],
        "note": (
            "clock offset = (min A->B delay - min B->A delay) / 2, assuming the fastest "
            "packets see the same delay both ways" if offset_ns is not None else
            "matched packets in only one direction: clock offset and delay cannot be separated"
        ),
    }


def _key_desc(k: tuple[int, ...]) -> dict[str, Any]:
    if k[0] == 6:
        flags = "".join(c for bit, c in ((2, "S"), (16, "A"), (8, "P"), (1, "F"), (4, "R"))
                        if k[6] & bit)
        return {"proto": "tcp", "sport": k[2], "dport": k[3], "seq": k[4], "ack": k[5],
                "flags": flags, "len": k[7], "ip_id": k[1]}
    if k[0] == 17:
        return {"proto": "udp", "sport": k[2], "dport": k[3], "ip_id": k[1]}
    return {"proto": str(k[0]), "ip_id": k[1]}
