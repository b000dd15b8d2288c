"""Facts about a TCP flow that only rare segments produce, gathered for the diagnosis.

The per-packet loop stays lean: these functions run only for a segment that carries a
``tcp.analysis`` flag or a Zeek history event not seen before in its direction, so a
healthy bulk transfer never reaches them. Everything is indexed by direction (0 = whoever
sent the flow's first packet, as in ``flows``).
"""

from __future__ import annotations

from typing import Any

from . import tcp_analysis as T
from .flows import F_IPID0, F_IPIDPK0, F_TTL0

MAX_FRAMES = 10
TH_SYN, TH_FIN, TH_ACK = 0x02, 0x01, 0x10


class FlowFacts:
    """Retransmissions by kind, zero windows, IP TTL/ID references and resets, per direction."""

    __slots__ = (
        "data_retx", "spurious_retx", "syn_retx", "synack_retx", "fin_retx", "retx_frames",
        "first_retx_seq", "retx_min_len", "retx_max_len", "last_retx_ts", "last_retx_seq",
        "last_retx_end", "last_retx_len", "last_retx_repeats",
        "zw_count", "zw_first_ts", "zw_last_ts", "zw_reopen_ts", "zw_frames", "resets",
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


def facts_of(flow: list[Any], slot: int) -> FlowFacts:
    f = flow[slot]
    if f is None:
        f = flow[slot] = FlowFacts()
    assert isinstance(f, FlowFacts)
    return f


def note_flags(f: FlowFacts, ta: int, d: int, seglen: int, th: int, seq: int, ts: int,
               frame: int) -> None:
    """Attribute a flagged segment: data retransmission (loss) or handshake retry."""
    if ta & (T.RETRANSMISSION | T.FAST_RETRANSMISSION | T.SPURIOUS_RETRANSMISSION):
        if seglen > 0 and not ta & T.KEEP_ALIVE:
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
    if ta & T.ZERO_WINDOW:
        if not f.zw_count[d]:
            f.zw_first_ts[d] = ts
        f.zw_count[d] += 1
        f.zw_last_ts[d] = ts
        if len(f.zw_frames[d]) < MAX_FRAMES:
            f.zw_frames[d].append(frame)
    elif ta & T.WINDOW_UPDATE and f.zw_count[d] and not f.zw_reopen_ts[d]:
        f.zw_reopen_ts[d] = ts


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
