"""Facts about a TCP flow that only rare segments produce, gathered for the diagnosis.

The per-packet loop stays lean: these functions run only for a segment that carries a
``tcp.analysis`` flag or a Zeek history event not seen before in its direction, so a
healthy bulk transfer never reaches them. Everything is indexed by direction (0 = whoever
sent the flow's first packet, as in ``flows``).
"""

from __future__ import annotations

from typing import Any

from . import tcp_analysis as T
from .flows import F_IPID0, F_IPIDPK0, F_LASTID0, F_SEEN0, F_TTL0

MAX_FRAMES = 10
TH_SYN, TH_FIN, TH_ACK = 0x02, 0x01, 0x10


# What a re-sent data segment turned out to be (index into Resent.kinds[d]); a segment
# tshark calls out-of-order counts at RESENT_OOO + its kind (re-sent only at the sender).
COPY = 0  # the same packet again (same IPv4 ID, same range) within the path's jitter
SPURIOUS = 1  # data the receiver had already acknowledged (tshark's spurious retransmission)
DSACK = 2  # the receiver said it already had it (a D-SACK block in its next ACKs)
SEEN = 3  # no D-SACK, but nothing in this direction was ever missing here: in a capture taken
#           at the receiver, it had the data (elsewhere this counts as loss)
LOSS = 4  # anything else: the data was lost (or is still unacknowledged)
RESENT_OOO = 5
KINDS = 10
MAX_PENDING = 64  # re-sent ranges waiting for the receiver's verdict, per direction
WATCH = 4 | 8  # flows.S_ACK | flows.S_DATA: masked in the receiver's seen events (below)
COPY_WINDOW_NS = 1_000_000  # a copy of the latest segment arrives within this, or the RTT
COPY_ID_WINDOW = 256  # a copy of an earlier packet carries an IPv4 ID this far behind
M32, HALF = 0xFFFFFFFF, 0x80000000


class Resent:
    """What a flow's re-sent data segments were, per direction; made for the few flows that
    re-send data at all (a FlowFacts is made for every flow with any flagged segment)."""

    __slots__ = ("kinds", "frames", "pending", "watching", "masked", "copy_gap", "copy_ids")

    def __init__(self) -> None:
        # by what they turned out to be: [COPY..LOSS] for tshark's retransmissions, then the
        # same for segments it calls out-of-order
        self.kinds = [[0] * KINDS, [0] * KINDS]
        # their first frames, by direction * KINDS + kind (made when the first one comes)
        self.frames: dict[int, list[int]] = {}
        # ranges re-sent in a direction, waiting for the receiver's ACKs: [seq, end, frame,
        # index into kinds without its class, the direction's next sequence when re-sent,
        # SEEN if the direction had shown no gap by then else LOSS]
        self.pending: list[list[list[int]]] = [[], []]
        # while the receiver's ACKs are read (see watch()), the seen-event bits taken from it
        self.watching = [False, False]
        self.masked = [0, 0]
        self.copy_gap = 0  # the longest a copy came after its original (ns)
        # (the latest copy's IP ID, the latest ID before it): a copy is the latest data
        # segment until the sender's next one, but its old ID says nothing of the sender's
        self.copy_ids = [(-1, -1), (-1, -1)]


class FlowFacts:
    """Retransmissions by kind, zero windows, IP TTL/ID references and resets, per direction."""

    __slots__ = (
        "data_retx", "spurious_retx", "syn_retx", "synack_retx", "fin_retx", "retx_frames",
        "first_retx_seq", "retx_min_len", "retx_max_len", "last_retx_ts", "last_retx_seq",
        "last_retx_end", "last_retx_len", "last_retx_repeats",
        "zw_count", "zw_first_ts", "zw_last_ts", "zw_reopen_ts", "zw_frames", "resets",
        "gaps", "rs",
    )

    def __init__(self) -> None:
        self.data_retx = [0, 0]
        self.spurious_retx = [0, 0]
        self.syn_retx = [0, 0]
        self.synack_retx = [0, 0]
        self.fin_retx = [0, 0]
        self.retx_frames: list[list[int]] = [[], []]
        self.first_retx_seq = [-1, -1]
        # the latest retransmitted segment and how often that same sequence was sent again
        self.last_retx_seq = [-1, -1]
        self.last_retx_end = [-1, -1]
        self.last_retx_len = [0, 0]
        self.last_retx_repeats = [0, 0]
        self.retx_min_len = [0, 0]
        self.retx_max_len = [0, 0]
        self.last_retx_ts = [0, 0]
        self.zw_count = [0, 0]
        self.zw_first_ts = [0, 0]
        self.zw_last_ts = [0, 0]
        self.zw_reopen_ts = [0, 0]
        self.zw_frames: list[list[int]] = [[], []]
        # first RST each way: (frame, direction, ttl, ip id, ts, reference ttl, reference id,
        # packets sent in that direction since the reference id)
        self.resets: list[tuple[int, int, int, int, int, int, int, int]] = []
        self.gaps = [0, 0]  # segments after a gap (tshark's lost segment) so far
        self.rs: Resent | None = None


def kind_frames(rs: Resent, d: int, kind: int) -> list[int]:
    """The first frames of direction ``d``'s re-sent segments of ``kind`` (read only)."""
    return rs.frames.get(d * KINDS + kind, [])


def resent_of(f: FlowFacts) -> Resent:
    rs = f.rs
    if rs is None:
        rs = f.rs = Resent()
    return rs


def facts_of(flow: list[Any], slot: int) -> FlowFacts:
    f = flow[slot]
    if f is None:
        f = flow[slot] = FlowFacts()
    assert isinstance(f, FlowFacts)
    return f


def note_flags(f: FlowFacts, ta: int, d: int, seglen: int, th: int, seq: int, ts: int,
               frame: int) -> bool:
    """Attribute a flagged segment: data retransmission (loss) or handshake retry. True when
    it re-sends data (or is out-of-order data), for resent() to classify."""
    resend = False
    if ta & (T.RETRANSMISSION | T.FAST_RETRANSMISSION | T.SPURIOUS_RETRANSMISSION):
        if seglen > 0 and not ta & T.KEEP_ALIVE:
            resend = True
            f.data_retx[d] += 1
            if ta & T.SPURIOUS_RETRANSMISSION:
                f.spurious_retx[d] += 1
            if f.first_retx_seq[d] < 0:
                f.first_retx_seq[d] = seq
                f.retx_min_len[d] = seglen
            if seq == f.last_retx_seq[d]:
                f.last_retx_repeats[d] += 1
            else:
                f.last_retx_seq[d] = seq
                f.last_retx_repeats[d] = 1
            f.last_retx_end[d] = (seq + seglen) & 0xFFFFFFFF
            f.last_retx_len[d] = seglen
            f.retx_min_len[d] = min(f.retx_min_len[d], seglen)
            f.retx_max_len[d] = max(f.retx_max_len[d], seglen)
            f.last_retx_ts[d] = ts
            if len(f.retx_frames[d]) < MAX_FRAMES:
                f.retx_frames[d].append(frame)
        elif th & TH_SYN:
            if th & TH_ACK:
                f.synack_retx[d] += 1
            else:
                f.syn_retx[d] += 1
        elif th & TH_FIN:
            f.fin_retx[d] += 1
    elif ta & T.OUT_OF_ORDER and seglen > 0:
        resend = True  # a range sent again, if this capture was taken at its sender
    if ta & T.LOST_SEGMENT:
        f.gaps[d] += 1
    if ta & T.ZERO_WINDOW:
        if not f.zw_count[d]:
            f.zw_first_ts[d] = ts
        f.zw_count[d] += 1
        f.zw_last_ts[d] = ts
        if len(f.zw_frames[d]) < MAX_FRAMES:
            f.zw_frames[d].append(frame)
    elif ta & T.WINDOW_UPDATE and f.zw_count[d] and not f.zw_reopen_ts[d]:
        f.zw_reopen_ts[d] = ts
    return resend


def _count(rs: Resent, d: int, index: int, frame: int) -> None:
    rs.kinds[d][index] += 1
    frames = rs.frames.setdefault(d * KINDS + index, [])
    if len(frames) < MAX_FRAMES:
        frames.append(frame)


def resent(f: FlowFacts, flow: list[Any], d: int, ta: int, seq: int, seglen: int, ipid: int,
           ts: int, frame: int, nextseq: int, advanced_ts: int, rtt: int, base: int,
           peer_dupacks: int) -> bool:
    """What a data segment sent again in direction ``d`` is, as far as it can be told now: a
    copy made in the network, data the receiver had already acknowledged, or a range to
    judge by the receiver's next ACKs (a D-SACK says it was not needed). True when the
    receiver's ACKs must be watched.

    A copy carries the IPv4 ID of a packet already seen: the latest data segment's (it
    repeats that segment, sooner than any ACK could have come back to make a sender re-send
    it), or one a little behind it where this direction never showed a gap (nothing was
    missing that a sender could have re-sent; a sender's real retransmission takes a new,
    later ID). Without IP IDs (IPv6), only a repeat of the latest segment well within the
    round trip counts."""
    rs = resent_of(f)
    first = base  # the direction's base sequence number: its data starts after it
    kind = RESENT_OOO if not ta & (T.RETRANSMISSION | T.FAST_RETRANSMISSION
                                   | T.SPURIOUS_RETRANSMISSION) else 0
    end = (seq + seglen) & M32
    gap = ts - advanced_ts
    rtt = rtt if 0 < rtt < 1 << 62 else 0
    last = flow[F_LASTID0 + d]
    if last == rs.copy_ids[d][0]:
        last = rs.copy_ids[d][1]
    copy = False
    if ipid > 0 and last > 0:
        behind = (last - ipid) & 0xFFFF
        copy = (behind == 0 and end == nextseq and 0 <= gap < max(rtt, COPY_WINDOW_NS)) or (
            0 < behind < COPY_ID_WINDOW and not f.gaps[d])
    elif ipid < 0:
        copy = end == nextseq and 0 <= gap < rtt // 4
    if copy:
        rs.copy_ids[d] = (ipid, last)
        _count(rs, d, kind + COPY, frame)
        if 0 <= gap < 1 << 62:
            rs.copy_gap = max(rs.copy_gap, gap)
        return False
    if ta & T.SPURIOUS_RETRANSMISSION:
        _count(rs, d, kind + SPURIOUS, frame)
        return False
    pend = rs.pending[d]
    if len(pend) >= MAX_PENDING:  # too many to follow: the oldest is judged as it stands
        old = pend.pop(0)
        _count(rs, d, old[3] + old[5], old[2])
    # seen before here: no gap in this direction so far, and the receiver not sending
    # duplicate ACKs for missing data (a capture that starts mid-stream misses what was lost
    # before it; the receiver's duplicate ACKs still say so)
    seen = not f.gaps[d] and not peer_dupacks and seq != first and ((seq - first) & M32) < HALF
    pend.append([seq, end, frame, kind, nextseq, SEEN if seen else LOSS])
    return True


def watch(f: FlowFacts, flow: list[Any], d: int) -> bool:
    """Read the ACKs of the receiver of direction ``d`` (the other direction) from now on: its
    seen-event bits for ACK and data are taken away, so each of its segments is a 'new
    event' to the per-packet loop, which hands it to peer_segment(). True when this starts
    a watch (the caller keeps the flow to restore it at the end)."""
    p = 1 - d
    rs = resent_of(f)
    if rs.watching[p]:
        return False
    rs.watching[p] = True
    rs.masked[p] = flow[F_SEEN0 + p] & WATCH
    flow[F_SEEN0 + p] &= ~WATCH
    return True


def _sack_blocks(buf: bytes, p: int, end: int) -> list[tuple[int, int]]:
    """The SACK blocks (left, right) among the TCP options in buf[p:end]."""
    while p < end:
        kind = buf[p]
        if kind == 0:
            break
        if kind == 1:
            p += 1
            continue
        if p + 1 >= end or buf[p + 1] < 2:
            break
        ln = buf[p + 1]
        if kind == 5 and p + ln <= end:
            return [(int.from_bytes(buf[q:q + 4], "big"), int.from_bytes(buf[q + 4:q + 8], "big"))
                    for q in range(p + 2, p + ln - 7, 8)]
        p += ln
    return []


def _before_eq(a: int, b: int) -> bool:
    return ((b - a) & M32) < HALF


def peer_segment(f: FlowFacts, flow: list[Any], p: int, th: int, ack: int, buf: bytes,
                 opt: int, opt_end: int) -> None:
    """A segment from the receiver of the re-sent ranges (direction ``p``): a D-SACK block
    (RFC 2883: the first SACK block, below the cumulative ACK or inside the second block)
    that overlaps a range says the receiver already had it. An ACK for data sent after the
    range was re-sent says it was needed: the receiver acknowledged later data without
    reporting a duplicate (ACKs that were on their way when it was re-sent, however many,
    say nothing). Stops the watch when nothing is pending."""
    d = 1 - p
    rs = resent_of(f)
    pend = rs.pending[d]
    if th & TH_ACK:
        blocks = _sack_blocks(buf, opt, opt_end) if opt_end - opt >= 10 else []
        dsack = None
        if blocks:
            left, right = blocks[0]
            if _before_eq(right, ack) or (len(blocks) > 1 and _before_eq(blocks[1][0], left)
                                          and _before_eq(right, blocks[1][1])):
                dsack = (left, right)
        keep = []
        for e in pend:
            if dsack is not None and _before_eq(dsack[0], e[1]) and dsack[0] != e[1] \
                    and _before_eq(e[0], dsack[1]) and e[0] != dsack[1]:
                _count(rs, d, e[3] + DSACK, e[2])
                continue
            if ack != e[4] and _before_eq(e[4], ack):
                _count(rs, d, e[3] + e[5], e[2])
                continue
            keep.append(e)
        rs.pending[d] = pend = keep
    if not pend:
        unwatch(f, flow, p)


def unwatch(f: FlowFacts, flow: list[Any], p: int) -> None:
    """Give direction ``p`` its seen-event bits back (see watch())."""
    rs = f.rs
    if rs is not None and rs.watching[p]:
        flow[F_SEEN0 + p] |= rs.masked[p]
        rs.masked[p] = 0
        rs.watching[p] = False


def finish(f: FlowFacts, flow: list[Any]) -> None:
    """End of the capture: ranges still waiting were never shown to be unneeded."""
    rs = resent_of(f)
    for d in (0, 1):
        for e in rs.pending[d]:
            _count(rs, d, e[3] + e[5], e[2])
        rs.pending[d] = []
        unwatch(f, flow, 1 - d)


def note_event(flow: list[Any], slot: int, d: int, rst: bool, ttl: int, ipid: int, pkts: int,
               frame: int, ts: int) -> None:
    """A segment with a history event new to its direction: keep IP references in the flow
    record (no allocation: every flow has such a segment), or note a RST against them."""
    if rst:
        f = facts_of(flow, slot)
        if len(f.resets) < 4:
            f.resets.append((frame, d, ttl, ipid, ts, flow[F_TTL0 + d] - 1,
                             flow[F_IPID0 + d] or -1, pkts - flow[F_IPIDPK0 + d]))
        return
    if ttl >= 0:  # the latest (a SYN proxy may answer the SYN with a TTL of its own)
        flow[F_TTL0 + d] = ttl + 1
    if ipid > 0:
        flow[F_IPID0 + d] = ipid
        flow[F_IPIDPK0 + d] = pkts
