"""Two-ended comparison: the same path captured at both ends.

Packets are matched by identity (IP ID, ports, TCP seq/ack/flags/length, a payload hash for
UDP/ICMP), never by TTL, checksums, MACs or addresses, so NAT does not break matching. Before
any figure is given the pair is checked: both hold packets, they share flows, some packets
were seen at both ends, the clock offset those packets give is one a real clock could have,
and the two are not one end captured twice. Otherwise the comparison is refused with the reason.

"Lost" counts only packets that one side addressed to the other and the other never saw;
"injected" counts packets that arrive in a side's name although that side never sent them
(a firewall's RST); a packet that arrives twice although it was sent once (the same IP ID,
sequence and all) is a copy made on the way, counted apart. All are counted to the end of
each flow seen at both ends. TCP byte ranges stand in for identity only on flows where
segmentation offload is visible (a datagram above 1500 bytes, or an IPv4 length of 0),
because TSO/GRO change segment boundaries.
"""

from __future__ import annotations

import bisect
import ipaddress
from collections import deque
from collections.abc import Iterator
from typing import Any

from .compare_fast import gather as gather_fast
from .compare_keys import decode_packet
from .compare_model import Gathered, Left, Pkt, Side, Stats
from .reader import Record, open_capture
from .wording import duration_ns

MAX_EXAMPLES = 10
SPENT = -1  # an index entry whose packets at A were all matched (values are never negative)
MAX_SKEW_NS = 86_400 * 10**9  # beyond a day apart, no clock is that wrong: different moments
WARN_SKEW_NS = 60 * 10**9



def _packets(records: Iterator[Record], side: Side) -> Iterator[Pkt]:
    """Every IP packet's match key, noting in ``side`` what the sanity checks and the byte
    ranges need (the path without numpy; compare_fast does the same on whole chunks)."""
    flows = side.flows
    pairs = side.pairs
    ranges = side.ranges
    offload = side.offload
    for buf, off, caplen, wirelen, ts, lt in records:
        row = decode_packet(buf, off, caplen, wirelen, lt)
        if row is None:
            continue
        key, src, dst, ttl, big = row
        if not side.packets:
            side.first = ts
        side.packets += 1
        if ts > side.last:
            side.last = ts
        pk = src + dst
        pairs[pk] = pairs.get(pk, 0) + 1
        if len(key) == 4:  # not _flow_key: a cut-off TCP/UDP header gives no ports
            flows.add((key[0], 0, 0))
        else:
            flows.add((key[0], min(key[2], key[3]), max(key[2], key[3])))
        if len(key) == 8 and key[7] > 0:
            fd = (key[2], key[3])
            rs = ranges.get(fd)
            if rs is None:
                rs = ranges[fd] = []
            rs.append((key[4], key[4] + key[7]))
            if big:
                offload.add(fd)
        yield key, ts, src, dst, ttl


def _ip(raw: bytes) -> str:
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return raw.hex()


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


def _covered(ranges: list[tuple[int, int]], start: int, end: int) -> bool:
    """Is [start, end) inside the union of ``ranges`` (already merged and sorted)?"""
    i = bisect.bisect_right(ranges, (start, 1 << 62)) - 1
    return i >= 0 and ranges[i][0] <= start and ranges[i][1] >= end


def _median(xs: list[int]) -> int:
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _flow_key(key: tuple[int, ...]) -> tuple[int, int, int]:
    """A flow by protocol and port pair, either direction (addresses may be NATed)."""
    if key[0] in (6, 17):
        a, b = key[2], key[3]
        return (key[0], min(a, b), max(a, b))
    return (key[0], 0, 0)


def _gather(path_a: str, path_b: str) -> Gathered:
    """Index A by key (value: ts << 40 | ttl << 32 | dst id << 16 | src id, first in first
    out), then stream B and match: the reference that compare_fast reproduces."""
    g = Gathered()
    addr_ids: dict[bytes, int] = {}
    addrs = g.addrs
    index: dict[tuple[int, ...], Any] = {}
    for key, ts, src, dst, ttl in _packets(open_capture(path_a)[1], g.sa):
        si, di = addr_ids.get(src), addr_ids.get(dst)
        if si is None:
            si = addr_ids[src] = min(len(addrs), 0xFFFF)
            addrs.append(src)
        if di is None:
            di = addr_ids[dst] = min(len(addrs), 0xFFFF)
            addrs.append(dst)
        v = (ts << 40) | (ttl << 32) | (di << 16) | si
        prev = index.get(key)
        if prev is None:
            index[key] = v
        elif isinstance(prev, deque):
            prev.append(v)
        else:
            index[key] = deque((prev, v))  # matched first in, first out: popleft, never pop(0)
    deltas: dict[int, list[int]] = {}  # A's sender id -> tsB - tsA of its matched packets
    partly: set[tuple[int, ...]] = set()  # keys with A packets both matched and left over
    for key, ts, src, dst, ttl in _packets(open_capture(path_b)[1], g.sb):
        hit = index.get(key)
        if hit is None or hit == SPENT:  # SPENT: A's copies all matched, this one is extra
            g.left_b.append((ts, key, src, dst, hit is not None))
            continue
        if isinstance(hit, deque):
            v = hit.popleft()
            if hit:
                partly.add(key)
            else:
                index[key] = SPENT
        else:
            v = hit
            index[key] = SPENT
        deltas.setdefault(v & 0xFFFF, []).append(ts - (v >> 40))
        g.same_ttl[0] += ((v >> 32) & 0xFF) == ttl
        g.same_ttl[1] += 1
        pk = v & 0xFFFFFFFF
        if pk not in g.pairs and len(g.pairs) < 4096:
            g.pairs[pk] = (src, dst)
    g.left_a = [(x >> 40, k, addrs[x & 0xFFFF], addrs[(x >> 16) & 0xFFFF], k in partly)
                for k, v in index.items() if v != SPENT
                for x in (v if isinstance(v, deque) else (v,))]
    g.medians = {s: _median(xs) for s, xs in deltas.items()}

    def split(a_ids: set[int]) -> tuple[Stats | None, Stats | None]:
        ab = sorted(d for s in a_ids for d in deltas[s])
        ba = sorted(-d for s in deltas if s not in a_ids for d in deltas[s])  # tsA - tsB
        return (len(ab), ab[0], ab[len(ab) // 2]) if ab else None, (
            (len(ba), ba[0], ba[len(ba) // 2]) if ba else None)

    g.split = split
    return g


def compare_captures(path_a: str, path_b: str) -> dict[str, Any]:
    """Check that the pair can be compared, then match it: offset, delays, losses, injections.

    Which address is which side is learnt from the matched pairs: packets A sends reach B
    later (B time minus A time is offset + delay) than packets B sends (offset - delay).
    """
    try:
        g = gather_fast(path_a, path_b)
    except OverflowError:  # times past the year 2116: int64 differences would wrap
        g = _gather(path_a, path_b)
    return _finish(path_a, path_b, g)


def _finish(path_a: str, path_b: str, g: Gathered) -> dict[str, Any]:
    sa, sb, addrs, pairs = g.sa, g.sb, g.addrs, g.pairs
    base: dict[str, Any] = {"capture_a": path_a, "capture_b": path_b, "packets_a": sa.packets,
                            "packets_b": sb.packets}
    shared = set(sa.flows) & set(sb.flows)
    reason = _refusal(sa, sb, shared, g.medians)
    if reason:
        return {**base, "status": "refused", "reason": reason}
    # The sender whose packets arrive "latest" (largest tsB - tsA) is on side A.
    med = g.medians
    ranked = sorted(med, key=lambda s: -med[s])
    a_ids = set(ranked[:1])
    if len(ranked) >= 2:
        gap = med[ranked[0]] - med[ranked[-1]]
        a_ids = {s for s in ranked if med[s] - med[ranked[-1]] > gap / 2}
        if not a_ids:
            a_ids = set(ranked[:1])
    ab, ba = g.split(a_ids)  # (how many, least, median) of tsB - tsA and of tsA - tsB
    if ab and ba:
        offset, owd = (ab[1] - ba[1]) // 2, (ab[1] + ba[1]) // 2
    elif ab:  # one direction only: the delay cannot be told from the offset
        offset, owd = ab[1], None
    else:
        assert ba is not None  # some packets were matched (no refusal)
        offset, owd = -ba[1], None
    reason = _refusal_after_match(offset, g.same_ttl, sa, sb)
    if reason:
        return {**base, "status": "refused", "reason": reason}
    # Sides: who sent each matched packet, and where it went, as each capture names them.
    a_at_a: set[bytes] = set()
    b_at_a: set[bytes] = set()
    a_at_b: set[bytes] = set()
    b_at_b: set[bytes] = set()
    for pk, (src_b, dst_b) in pairs.items():
        sid, did = pk & 0xFFFF, pk >> 16
        if sid in a_ids:
            a_at_a.add(addrs[sid])
            b_at_a.add(addrs[did])
            a_at_b.add(src_b)
            b_at_b.add(dst_b)
        else:
            b_at_a.add(addrs[sid])
            a_at_a.add(addrs[did])
            b_at_b.add(src_b)
            a_at_b.add(dst_b)
    res = _count(g.left_a, g.left_b, sa, sb, shared, offset,
                 (a_at_a - b_at_a, b_at_a - a_at_a, a_at_b - b_at_b, b_at_b - a_at_b))

    def ms(x: int | None) -> float | None:
        return None if x is None else round(x / 1e6, 3)

    overlap = min(sa.last, sb.last - offset) - max(sa.first, sb.first - offset)
    return {
        **base, "status": "ok", "reason": "",
        "host_a": ", ".join(sorted(_ip(x) for x in a_at_a - b_at_a)),
        "host_b": ", ".join(sorted(_ip(x) for x in b_at_b - a_at_b)),
        "host_a_as_seen_at_b": ", ".join(sorted(_ip(x) for x in a_at_b - b_at_b)),
        "host_b_as_seen_at_a": ", ".join(sorted(_ip(x) for x in b_at_a - a_at_a)),
        "shared_flows": len(shared), "flows_a": len(sa.flows), "flows_b": len(sb.flows),
        "overlap_s": round(max(overlap, 0) / 1e9, 6),
        "matched_a_to_b": ab[0] if ab else 0, "matched_b_to_a": ba[0] if ba else 0,
        "clock_offset_ms": ms(offset),
        "clock_warning": (f"the capture clocks differ by {duration_ns(abs(offset))} (check "
                          "NTP); B's times are corrected by that offset"
                          if abs(offset) > WARN_SKEW_NS else ""),
        "one_way_delay_ms": {
            "a_to_b_min": ms(owd), "b_to_a_min": ms(owd),
            "a_to_b_median": ms(ab[2] - offset) if ab and owd is not None else None,
            "b_to_a_median": ms(ba[2] + offset) if ba and owd is not None else None,
        },
        **res,
        "note": ("clock offset = (min A->B delay - min B->A delay) / 2, assuming the fastest "
                 "packets see the same delay both ways" if owd is not None else
                 "matched packets in only one direction: the offset includes the one-way delay"),
    }


def _refusal(sa: Side, sb: Side, shared: set[tuple[int, int, int]],
             deltas: dict[int, int]) -> str:
    if not sa.packets or not sb.packets:
        return f"capture {'A' if not sa.packets else 'B'} holds no IP packets"
    if not shared:
        return ("the captures share no flow (no protocol and port pair appears in both): they "
                "are not two ends of the same traffic")
    if not deltas:
        return (f"no packet was seen at both ends ({len(shared)} flows share their ports, but "
                "no IP ID, sequence and length match): different traffic, or a device in "
                "between rewrites the packets")
    return ""


def _refusal_after_match(offset: int, same_ttl: list[int], sa: Side, sb: Side) -> str:
    same = same_ttl[1] and same_ttl[0] == same_ttl[1]
    hint = (" Every matched packet has the same TTL in both captures: they look like one end "
            "captured twice." if same else "")
    own = sa.own_address()
    if same and own is not None and own == sb.own_address():
        return (f"both captures were taken at {_ip(own)} (it is in every packet of both, and "
                "every matched packet has the same TTL in both): one end captured twice, not "
                "the two ends of a path")
    if abs(offset) > MAX_SKEW_NS:
        return (f"the matched packets would put the two clocks {duration_ns(abs(offset))} "
                "apart, beyond any plausible clock skew: these captures were not taken at the "
                "same time." + hint)
    if min(sa.last, sb.last - offset) < max(sa.first, sb.first - offset):
        return "the captures do not overlap in time once the clock offset is corrected"
    return ""


def _count(left_a: list[Left], unmatched_b: list[Left], sa: Side, sb: Side,
           shared: set[tuple[int, int, int]], off: int,
           sides: tuple[set[bytes], set[bytes], set[bytes], set[bytes]]) -> dict[str, Any]:
    """Losses and injected packets each way, with examples and the packets left aside."""
    a_at_a, b_at_a, a_at_b, b_at_b = sides
    names = ("lost_ab", "lost_ba", "inj_b", "inj_a", "dup_b", "dup_a", "range_ab", "range_ba",
             "third_party", "outside")
    res = dict.fromkeys(names, 0)
    ex: dict[str, list[dict[str, Any]]] = {k: [] for k in ("lost_ab", "lost_ba", "inj_b",
                                                              "inj_a", "dup_b", "dup_a")}
    per_flow: dict[str, list[int]] = {}
    sizes = {"lost_ab": [1 << 30, 0, 0], "lost_ba": [1 << 30, 0, 0]}  # min, max, how many

    # byte ranges are only consulted on flows with offload (by_range): sort only those
    offload = sa.offload | sb.offload
    ranges_a = {k: _merge(v) for k, v in sa.ranges.items() if k in offload}
    ranges_b = {k: _merge(v) for k, v in sb.ranges.items() if k in offload}

    def note(kind: str, k: tuple[int, ...], src: bytes, dst: bytes, ts: int) -> None:
        res[kind] += 1
        if kind in ("lost_ab", "lost_ba"):
            label = _flow_label(k, src, dst)
            row = per_flow.setdefault(label, [0, 0])
            row[0 if kind == "lost_ab" else 1] += 1
            size = sizes[kind]
            dlen = k[7] if k[0] == 6 else 0
            size[0], size[1] = min(size[0], dlen), max(size[1], dlen)
            size[2] += 1
        if len(ex[kind]) < MAX_EXAMPLES:
            d = _key_desc(k)
            d.update(src=_ip(src), dst=_ip(dst), ts_ns=ts)
            if kind in ("inj_a", "inj_b", "dup_a", "dup_b"):
                d["seen_at"] = kind[-1].upper()
            ex[kind].append(d)

    def by_range(k: tuple[int, ...], ranges: dict[tuple[int, int], list[tuple[int, int]]]
                 ) -> bool:
        if k[0] != 6 or k[7] <= 0:
            return False
        fd = (k[2], k[3])
        if fd not in sa.offload and fd not in sb.offload:
            return False  # no offload visible: segments are the wire's, identity decides
        rs = ranges.get(fd)
        return bool(rs) and _covered(rs or [], k[4], k[4] + k[7])

    def judged(k: tuple[int, ...], t_other: int, other: Side) -> bool:
        """Was the other capture running when this packet passed it?"""
        if t_other < other.first:
            return False
        return _flow_key(k) in shared or t_other <= other.last

    # Seen at A, never at B.
    for t, k, src, dst, copy in left_a:
        if src in a_at_a and dst in b_at_a:
            if not judged(k, t + off, sb):
                res["outside"] += 1
            elif by_range(k, ranges_b):
                res["range_ab"] += 1
            else:
                note("lost_ab", k, src, dst, t)
        elif src in b_at_a and dst in a_at_a:
            if not judged(k, t + off, sb):
                res["outside"] += 1
            elif by_range(k, ranges_a):
                res["range_ba"] += 1  # GRO at A merged what B sent
            else:  # B sent it once (matched) and A got it twice: a copy made on the way
                note("dup_a" if copy else "inj_a", k, src, dst, t)
        else:
            res["third_party"] += 1
    # Seen at B, never at A.
    for ts, k, src, dst, copy in unmatched_b:
        if src in b_at_b and dst in a_at_b:
            if not judged(k, ts - off, sa):
                res["outside"] += 1
            elif by_range(k, ranges_a):
                res["range_ba"] += 1
            else:
                note("lost_ba", k, src, dst, ts)
        elif src in a_at_b and dst in b_at_b:
            if not judged(k, ts - off, sa):
                res["outside"] += 1
            elif by_range(k, ranges_b):
                res["range_ab"] += 1
            else:
                note("dup_b" if copy else "inj_b", k, src, dst, ts)
        else:
            res["third_party"] += 1
    flows = sorted(per_flow.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:10]
    return {
        "lost_a_to_b": res["lost_ab"], "lost_b_to_a": res["lost_ba"],
        "lost_examples_a_to_b": ex["lost_ab"], "lost_examples_b_to_a": ex["lost_ba"],
        "lost_by_flow": [{"flow": f, "a_to_b": n[0], "b_to_a": n[1]} for f, n in flows],
        # TCP payload sizes of the lost packets (0 for anything else): all full-size is the
        # mark of an MTU black hole
        "lost_sizes": {"a_to_b": _sizes(sizes["lost_ab"]), "b_to_a": _sizes(sizes["lost_ba"])},
        "matched_by_byte_range": {"a_to_b": res["range_ab"], "b_to_a": res["range_ba"]},
        "unsent_but_received_at_b": res["inj_b"], "unsent_but_received_at_a": res["inj_a"],
        "unsent_examples": ex["inj_b"] + ex["inj_a"],
        # the same packet (IP ID and all) received twice, sent once: copies made on the way
        "copies_received_at_b": res["dup_b"], "copies_received_at_a": res["dup_a"],
        "copy_examples": ex["dup_b"] + ex["dup_a"],
        "not_addressed_to_the_other_side": res["third_party"],
        "outside_the_other_capture": res["outside"],
    }


def _sizes(s: list[int]) -> dict[str, int] | None:
    return {"min_bytes": s[0], "max_bytes": s[1], "packets": s[2]} if s[2] else None


def _flow_label(k: tuple[int, ...], src: bytes, dst: bytes) -> str:
    if k[0] in (6, 17):
        return f"{'tcp' if k[0] == 6 else 'udp'} {_ip(src)}:{k[2]} -> {_ip(dst)}:{k[3]}"
    return f"proto {k[0]} {_ip(src)} -> {_ip(dst)}"


def _key_desc(k: tuple[int, ...]) -> dict[str, Any]:
    if k[0] == 6:
        flags = "".join(c for bit, c in ((2, "S"), (16, "A"), (8, "P"), (1, "F"), (4, "R"))
                        if k[6] & bit)
        return {"proto": "tcp", "sport": k[2], "dport": k[3], "seq": k[4], "ack": k[5],
                "flags": flags, "len": k[7], "ip_id": k[1]}
    if k[0] == 17:
        return {"proto": "udp", "sport": k[2], "dport": k[3], "ip_id": k[1]}
    return {"proto": str(k[0]), "ip_id": k[1]}
