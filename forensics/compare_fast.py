"""The two-ended comparison's decode and match done on whole arrays with numpy (issue #21).

Decoding each packet in Python, and matching through a dict of key tuples, cost ~7 s for two
million packets. Here every packet becomes a row of fixed-width columns: its match key packed
into three 64-bit words (injective, so equal words mean equal keys), time, addresses, TTL.
Plain IPv4 TCP behind the common link layers is decoded for a whole chunk at once; every
other packet (VLAN, IPv6, UDP, ICMP, IP options, cut-off headers) goes through
compare_keys.decode_packet, one by one, so the keys are exactly the plain path's keys.

Matching is a sort: rows of A and B with equal keys become neighbours (a stable sort keeps
each side's order), and the n-th occurrence of a key at B pairs with its n-th occurrence at
A, which is what compare.py's first-in-first-out queues do. compare.py then turns the
arrays into the same result, down to the order of examples.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from .chunks import pcap_chunks
from .compare_keys import decode_packet
from .compare_model import Gathered, Side, Stats
from .linklayer import ET_AT, L3_AT
from .reader import CHUNK, MAX_RECORD, PCAP_MAGICS, Record, check_capture, open_capture

V4 = 1 << 32  # address codes: IPv4 as its 32-bit value, anything else V4 + its index
TS_LIMIT = 1 << 62  # times (ns) beyond +-2**62: the year 2116; compare.py does those
DLEN_BIAS = 1024  # TCP payload lengths can be negative (bad data offset): biased in the key
_MASK40 = (1 << 40) - 1
MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)  # odd: key hash multipliers
Row = tuple[int, int, int, int, int, int, bool]  # w0, w1, w2, src, dst, ttl, big


def pack_key(key: tuple[int, ...]) -> tuple[int, int, int]:
    """Three words that are equal exactly when the keys are (compare._packets' keys)."""
    if len(key) == 8:  # TCP: (6, ip id, sport, dport, seq, ack, flags, payload length)
        return ((8 << 56) | (6 << 48) | (key[1] << 32) | (key[2] << 16) | key[3],
                (key[4] << 32) | key[5], (key[6] << 40) | (key[7] + DLEN_BIAS))
    if len(key) == 6:  # UDP: (17, ip id, sport, dport, length, payload crc)
        return ((6 << 56) | (17 << 48) | (key[1] << 32) | (key[2] << 16) | key[3], key[5],
                key[4] + DLEN_BIAS)
    return (4 << 56) | (key[0] << 48) | (key[1] << 32), key[3], key[2] + DLEN_BIAS


def unpack_key(w0: int, w1: int, w2: int) -> tuple[int, ...]:
    """The key tuple back from its words (only for the few packets left unmatched)."""
    kind, proto, ipid = w0 >> 56, (w0 >> 48) & 0xFF, (w0 >> 32) & 0xFFFF
    if kind == 8:
        return (6, ipid, (w0 >> 16) & 0xFFFF, w0 & 0xFFFF, w1 >> 32, w1 & 0xFFFFFFFF,
                w2 >> 40, (w2 & _MASK40) - DLEN_BIAS)
    if kind == 6:
        return (17, ipid, (w0 >> 16) & 0xFFFF, w0 & 0xFFFF, w2 - DLEN_BIAS, w1)
    return (proto, ipid, w2 - DLEN_BIAS, w1)


class Addresses:
    """Address bytes <-> integer codes, shared by both captures."""

    def __init__(self) -> None:
        self.other: dict[bytes, int] = {}
        self.other_list: list[bytes] = []

    def code(self, raw: bytes) -> int:
        if len(raw) == 4:
            return int.from_bytes(raw, "big")
        n = self.other.get(raw)
        if n is None:
            n = self.other[raw] = V4 + len(self.other_list)
            self.other_list.append(raw)
        return n

    def raw(self, code: int) -> bytes:
        return code.to_bytes(4, "big") if code < V4 else self.other_list[code - V4]


class Columns:
    """One capture as arrays, a row per IP packet compare._packets would yield."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.w0 = self.w1 = self.w2 = np.zeros(0, np.uint64)
        self.ts = self.src = self.dst = np.zeros(0, np.int64)
        self.ttl = np.zeros(0, np.uint8)
        self.big = np.zeros(0, np.bool_)

    def done(self) -> Columns:
        if self.parts:
            cols = [np.concatenate(c) for c in zip(*self.parts, strict=True)]
            self.w0, self.w1, self.w2, self.ts, self.src, self.dst, self.ttl, self.big = cols
        self.parts = []
        return self


def _be16(h: np.ndarray, at: int) -> np.ndarray:
    out: np.ndarray = (h[:, at].astype(np.uint64) << np.uint64(8)) | h[:, at + 1]
    return out


def _be32(h: np.ndarray, at: int) -> np.ndarray:
    out: np.ndarray = (_be16(h, at) << np.uint64(16)) | _be16(h, at + 2)
    return out


def _gather(data: np.ndarray, base: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes from each offset in ``base`` (clamped to the buffer: rows too short for
    them are junk, and are left out by the caller's checks)."""
    out: np.ndarray = np.take(data, base[:, None] + np.arange(width, dtype=np.int64),
                              mode="clip")
    return out


def decode_batch(buf: bytes, offs: np.ndarray, cap: np.ndarray, wire: np.ndarray,
                 ts: np.ndarray, lt: int, addrs: Addresses, out: Columns,
                 one: Any) -> None:
    """Append to ``out`` the rows of the records at ``offs`` (packet data offsets in ``buf``);
    ``one(buf, off, caplen, wirelen, lt, addrs)`` decodes a record the vector rule cannot."""
    n = len(offs)
    if not n:
        return
    u64 = np.uint64
    w0 = np.zeros(n, np.uint64)
    w1 = np.zeros(n, np.uint64)
    w2 = np.zeros(n, np.uint64)
    src = np.zeros(n, np.int64)
    dst = np.zeros(n, np.int64)
    ttl = np.zeros(n, np.uint8)
    big = np.zeros(n, np.bool_)
    keep = np.ones(n, np.bool_)
    ok = np.zeros(n, np.bool_)
    l3 = L3_AT.get(lt)
    if l3 is not None:
        data = np.frombuffer(buf, dtype=np.uint8)
        et_at = ET_AT.get(lt)
        skip = l3 if et_at is None else et_at  # h starts at the EtherType, or at the IP header
        ip = l3 - skip
        h = _gather(data, offs + skip, ip + 20)
        ok = cap >= l3 + 20
        if et_at is not None:
            ok &= _be16(h, 0) == 0x0800
        else:
            ok &= (h[:, 0] >> 4) == 4
        ok &= h[:, ip + 9] == 6
        ihl = (h[:, ip] & 15).astype(np.int64) * 4
        ok &= l3 + ihl + 14 <= cap
        t = _gather(data, offs + l3 + ihl, 14)
        raw_len = _be16(h, ip + 2).astype(np.int64)
        iplen = np.where(raw_len == 0, wire - l3, raw_len)
        dlen = iplen - ihl - (t[:, 12] >> 4).astype(np.int64) * 4
        w0 = ((u64(8 << 56) | u64(6 << 48)) | (_be16(h, ip + 4) << u64(32))
              | (_be16(t, 0) << u64(16)) | _be16(t, 2))
        w1 = (_be32(t, 4) << u64(32)) | _be32(t, 8)
        w2 = ((t[:, 13] & 0x3F).astype(np.uint64) << u64(40)) | (dlen + DLEN_BIAS).astype(
            np.uint64)
        src = _be32(h, ip + 12).astype(np.int64)
        dst = _be32(h, ip + 16).astype(np.int64)
        ttl = h[:, ip + 8].copy()
        big = (raw_len == 0) | (iplen > 1500)
    for i in np.flatnonzero(~ok).tolist():  # the rest, one by one, as compare._packets
        row = one(buf, int(offs[i]), int(cap[i]), int(wire[i]), lt, addrs)
        if row is None:
            keep[i] = False
        else:
            w0[i], w1[i], w2[i], src[i], dst[i], ttl[i], big[i] = row
    cols = (w0, w1, w2, ts, src, dst, ttl, big)
    out.parts.append(cols if keep.all() else tuple(x[keep] for x in cols))


def _batches_pcap(path: str) -> Iterator[tuple[bytes, np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray, int]]:
    """The records of a pcap a chunk at a time, as reader._iter_pcap reads them (chunks.py:
    it stops at the same corrupt or cut-off record)."""
    with open(path, "rb") as fh:
        head = fh.read(24)
        endian, ns = PCAP_MAGICS[head[:4]]
        linktype = struct.unpack(endian + "I", head[20:24])[0] & 0x03FFFFFF
        for buf, offs, cap, wire, ts in pcap_chunks(fh, endian, ns, [], CHUNK, MAX_RECORD):
            yield buf, offs + 16, cap, wire, ts, linktype


def _batches_records(records: Iterator[Record]) -> Iterator[tuple[
        bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]:
    """Any reader's records, grouped by the buffer they sit in (pcapng and the rest)."""
    cur: bytes | None = None
    cur_lt = -1
    rows: list[tuple[int, int, int, int]] = []
    for buf, off, caplen, wirelen, ts, lt in records:
        if buf is not cur or lt != cur_lt:
            if cur is not None and rows:
                yield _as_batch(cur, rows, cur_lt)
            cur, cur_lt, rows = buf, lt, []
        rows.append((off, caplen, wirelen, ts))
    if cur is not None and rows:
        yield _as_batch(cur, rows, cur_lt)


def _as_batch(buf: bytes, rows: list[tuple[int, int, int, int]], lt: int) -> tuple[
        bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    arr = np.array(rows, dtype=np.int64)  # OverflowError for a time past 2262: caller's job
    return buf, arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], lt


def decode(path: str, addrs: Addresses, one: Any) -> Columns:
    """Every IP packet of ``path`` as rows (raises what open_capture raises)."""
    out = Columns()
    batches: Iterator[tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]
    if os.path.isfile(path) and check_capture(path).file_format in ("pcap", "pcap-ns"):
        batches = _batches_pcap(path)
    else:
        batches = _batches_records(open_capture(path)[1])
    for buf, offs, cap, wire, ts, lt in batches:
        decode_batch(buf, offs, cap, wire, ts, lt, addrs, out, one)
    return out.done()


def side_facts(c: Columns, side: Side, codes: Addresses) -> np.ndarray:
    """Fill ``side`` but its byte ranges; returns the rows with a TCP payload, for
    ``add_ranges``."""
    n = len(c.ts)
    side.packets = n
    side.first = int(c.ts[0]) if n else 0
    side.last = max(0, int(c.ts.max())) if n else 0
    proto = (c.w0 >> np.uint64(48)) & np.uint64(0xFF)
    sport = ((c.w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64)
    dport = (c.w0 & np.uint64(0xFFFF)).astype(np.int64)
    flows = np.unique((proto.astype(np.int64) << 32) | (np.minimum(sport, dport) << 16)
                      | np.maximum(sport, dport))
    side.flows = {(f >> 32, (f >> 16) & 0xFFFF, f & 0xFFFF) for f in flows.tolist()}
    addrs, inv = np.unique(np.concatenate((c.src, c.dst)), return_inverse=True)
    pairs, counts = np.unique(inv[:n] * len(addrs) + inv[n:], return_counts=True)
    raw = [codes.raw(x) for x in addrs.tolist()]
    side.pairs = {raw[p // len(addrs)] + raw[p % len(addrs)]: k for p, k in zip(
        pairs.tolist(), counts.tolist(), strict=True)}
    tcp = (c.w0 >> np.uint64(56)) == 8
    dlen = (c.w2 & np.uint64(_MASK40)).astype(np.int64) - DLEN_BIAS
    payload = np.flatnonzero(tcp & (dlen > 0))
    fd = (sport[payload] << 16) | dport[payload]
    side.offload = {(f >> 16, f & 0xFFFF) for f in np.unique(fd[c.big[payload]]).tolist()}
    return payload


def add_ranges(c: Columns, side: Side, payload: np.ndarray, offload: set[tuple[int, int]]
               ) -> None:
    """The byte ranges of the flows in ``offload`` (the only ones the count consults)."""
    if not offload:
        return
    w0, w1, w2 = c.w0[payload], c.w1[payload], c.w2[payload]
    fd = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64) << 16 | (
        w0 & np.uint64(0xFFFF)).astype(np.int64)
    want = np.array([(a << 16) | b for a, b in offload], dtype=np.int64)
    sel = np.isin(fd, want)
    seq = (w1[sel] >> np.uint64(32)).astype(np.int64)
    end = seq + (w2[sel] & np.uint64(_MASK40)).astype(np.int64) - DLEN_BIAS
    ranges = side.ranges
    for f, s, e in zip(fd[sel].tolist(), seq.tolist(), end.tolist(), strict=True):
        rs = ranges.get((f >> 16, f & 0xFFFF))
        if rs is None:
            rs = ranges[(f >> 16, f & 0xFFFF)] = []
        rs.append((s, e))


def _group(w0: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stable order that puts equal keys next to each other, and where each run starts.

    Sorting one 64-bit hash is several times faster than sorting the three words; the runs
    are checked against the words, and on a collision the words themselves are sorted.
    """
    k0, k1, k2 = (np.uint64(k) for k in MIX)
    with np.errstate(over="ignore"):
        h = (w0 * k0) ^ (w1 * k1) ^ (w2 * k2)
        h ^= h >> np.uint64(29)
    order = np.argsort(h, kind="stable")
    s0, s1, s2 = w0[order], w1[order], w2[order]
    same = (s0[1:] == s0[:-1]) & (s1[1:] == s1[:-1]) & (s2[1:] == s2[:-1])
    hs = h[order]
    if np.any((hs[1:] == hs[:-1]) & ~same):
        order = np.lexsort((w2, w1, w0))
        s0, s1, s2 = w0[order], w1[order], w2[order]
        same = (s0[1:] == s0[:-1]) & (s1[1:] == s1[:-1]) & (s2[1:] == s2[:-1])
    return order, np.concatenate((np.ones(min(len(order), 1), np.bool_), ~same))


def match(a: Columns, b: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each row of B its partner in A (-1: none), the rows of A left unmatched in the
    order compare.py's index holds them (by first occurrence of their key, then time), and
    which of those, and which rows of B, are extra copies of a packet also matched."""
    na, nb = len(a.ts), len(b.ts)
    order, newgrp = _group(np.concatenate((a.w0, b.w0)), np.concatenate((a.w1, b.w1)),
                           np.concatenate((a.w2, b.w2)))
    n = na + nb
    partner = np.full(nb, -1, np.int64)
    copy_b = np.zeros(nb, np.bool_)
    if not n:
        return partner, np.zeros(0, np.int64), np.zeros(0, np.bool_), copy_b
    starts = np.flatnonzero(newgrp)
    g = np.cumsum(newgrp) - 1
    is_a = order < na
    cnt_a = np.add.reduceat(is_a.astype(np.int64), starts)
    cnt_b = np.diff(np.append(starts, n)) - cnt_a
    rank = np.arange(n) - starts[g] - np.where(is_a, 0, cnt_a[g])
    bpos = np.flatnonzero(~is_a)
    bg, br = g[bpos], rank[bpos]
    hit = br < cnt_a[bg]
    partner[order[bpos[hit]] - na] = order[starts[bg[hit]] + br[hit]]
    copy_b[order[bpos[~hit]] - na] = cnt_a[bg[~hit]] > 0
    apos = np.flatnonzero(is_a)
    ag = g[apos]
    left = rank[apos] >= cnt_b[ag]
    rows = order[apos[left]]
    first = order[starts[ag[left]]]
    by_key = np.lexsort((rows, first))
    return partner, rows[by_key], (cnt_b[ag[left]] > 0)[by_key], copy_b


def medians(sid: np.ndarray, dt: np.ndarray) -> dict[int, int]:
    """sid -> the median (as compare._median) of its dt, in order of first appearance."""
    if not len(sid):
        return {}
    us, ufirst = np.unique(sid, return_index=True)
    o = np.lexsort((dt, sid))
    sorted_dt = dt[o]
    lo = np.searchsorted(sid[o], us)
    hi = np.append(lo[1:], len(sid))
    med = sorted_dt[lo + (hi - lo) // 2]
    return {int(us[i]): int(med[i]) for i in np.argsort(ufirst, kind="stable").tolist()}


def lowest_and_median(xs: np.ndarray) -> tuple[int, int, int]:
    """len, min and sorted(xs)[len // 2] of a non-empty array."""
    k = len(xs) // 2
    return len(xs), int(xs.min()), int(np.partition(xs, k)[k])


def _one(buf: bytes, off: int, caplen: int, wirelen: int, lt: int, codes: Addresses
         ) -> Row | None:
    row = decode_packet(buf, off, caplen, wirelen, lt)
    if row is None:
        return None
    key, src, dst, ttl, big = row
    return (*pack_key(key), codes.code(src), codes.code(dst), ttl, big)


def gather(path_a: str, path_b: str) -> Gathered:
    """compare._gather's result (the reference), from arrays."""
    g = Gathered()
    codes = Addresses()
    a = decode(path_a, codes, _one)
    b = decode(path_b, codes, _one)
    for c in (a, b):  # differences of times must not wrap around in int64
        if len(c.ts) and (int(c.ts.min()) < -TS_LIMIT or int(c.ts.max()) >= TS_LIMIT):
            raise OverflowError("capture times beyond what int64 differences can hold")
    pay_a, pay_b = side_facts(a, g.sa, codes), side_facts(b, g.sb, codes)
    offload = g.sa.offload | g.sb.offload
    add_ranges(a, g.sa, pay_a, offload)
    add_ranges(b, g.sb, pay_b, offload)
    # A's address ids: by first appearance, source before destination, capped at 0xFFFF
    both = np.empty(2 * len(a.ts), np.int64)
    both[0::2], both[1::2] = a.src, a.dst
    uniq, first = np.unique(both, return_index=True)
    by_first = np.argsort(first, kind="stable")
    ids = np.empty(len(uniq), np.int64)
    ids[by_first] = np.minimum(np.arange(len(uniq)), 0xFFFF)
    g.addrs = [codes.raw(c) for c in uniq[by_first].tolist()]
    si = ids[np.searchsorted(uniq, a.src)]
    di = ids[np.searchsorted(uniq, a.dst)]
    partner, left_a, copy_a, copy_b = match(a, b)
    hit = np.flatnonzero(partner >= 0)
    pa = partner[hit]
    sid = si[pa]
    dt = b.ts[hit] - a.ts[pa]
    g.same_ttl = [int(np.count_nonzero(a.ttl[pa] == b.ttl[hit])), len(hit)]
    g.medians = medians(sid, dt)

    def split(a_ids: set[int]) -> tuple[Stats | None, Stats | None]:
        mine = np.isin(sid, np.array(sorted(a_ids), dtype=np.int64))
        ab, ba = dt[mine], -dt[~mine]
        return (lowest_and_median(ab) if len(ab) else None,
                lowest_and_median(ba) if len(ba) else None)

    g.split = split
    pk = (di[pa] << 16) | sid
    _u, at = np.unique(pk, return_index=True)
    for i in np.sort(at)[:4096].tolist():
        g.pairs[int(pk[i])] = (codes.raw(int(b.src[hit[i]])), codes.raw(int(b.dst[hit[i]])))
    raw = g.addrs
    g.left_a = [(t, unpack_key(x0, x1, x2), raw[s], raw[d], c)
                for t, x0, x1, x2, s, d, c in zip(
                    a.ts[left_a].tolist(), a.w0[left_a].tolist(), a.w1[left_a].tolist(),
                    a.w2[left_a].tolist(), si[left_a].tolist(), di[left_a].tolist(),
                    copy_a.tolist(), strict=True)]
    miss = np.flatnonzero(partner < 0)
    g.left_b = [(t, unpack_key(x0, x1, x2), codes.raw(s), codes.raw(d), c)
                for t, x0, x1, x2, s, d, c in zip(
                    b.ts[miss].tolist(), b.w0[miss].tolist(), b.w1[miss].tolist(),
                    b.w2[miss].tolist(), b.src[miss].tolist(), b.dst[miss].tolist(),
                    copy_b[miss].tolist(), strict=True)]
    return g
