"""Flow records (one per 5-tuple conversation) and their Zeek-style summary.

A flow is a plain list indexed by the F_* constants, updated in the per-packet loop;
direction 0 is whoever sent the first packet we saw. At the end the originator is
decided (the sender of the first SYN, as Zeek does) and the record becomes a dict.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

# Indexes into a flow record.
F_PROTO = 0
F_ADDRS = 1  # src+dst address bytes as first seen
F_SPORT = 2
F_DPORT = 3
F_PKTS0 = 4
F_BYTES0 = 5
F_PKTS1 = 6
F_BYTES1 = 7
F_PAY0 = 8
F_PAY1 = 9
F_FIRST_TS = 10
F_LAST_TS = 11
F_FIRST_FRAME = 12
F_SEEN0 = 13  # bit mask of the S_* events seen from direction 0
F_SEEN1 = 14
F_HIST = 15  # history letters: uppercase = direction 0
F_TA = 16  # dict flag name -> count (TCP only)
F_SYN_TS = 17
F_SYNACK_TS = 18
F_ACK_TS = 19
F_EVIDENCE = 20  # first frames with an analysis flag or a reset
F_LAST_FRAME = 21
F_DSEG0 = 22  # TCP segments carrying data, direction 0 (F_DSEG0 + 1: direction 1)
F_DIAG = 24  # None, or the rarely needed facts the diagnosis reads (facts.FlowFacts)
# IP references per direction, set by segments with a new history event (facts.note_event):
F_TTL0 = 25  # TTL + 1 of the direction's latest new-event packet that is no RST (0: none)
F_IPID0 = 27  # IPv4 ID of its latest new-event packet that is no RST (0: none)
F_IPIDPK0 = 29  # the direction's packet count at that packet
# Per direction, set by every TCP segment with data (the per-packet loop):
F_LASTID0 = 31  # IPv4 ID of the direction's latest data segment (-1: none or IPv6); a copy
#                 made in the network repeats it (facts.note_flags)
F_MAXLEN0 = 33  # the largest payload the direction sent, and the sequence number of the first
F_MAXSEQ0 = 35  # segment that size: a black hole eats the first full-size segment (diagnosis)
F_SIZE = 37

# Seen-event bits and their Zeek history letters.
S_SYN = 1
S_SYNACK = 2
S_ACK = 4
S_DATA = 8
S_FIN = 16
S_RST = 32
LETTERS = ((S_SYN, "S"), (S_SYNACK, "H"), (S_ACK, "A"), (S_DATA, "D"), (S_FIN, "F"), (S_RST, "R"))

PROTO_NAMES = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6"}


def new_flow(proto: int, addrs: bytes, sport: int, dport: int, ts: int, frame: int) -> list[Any]:
    """A fresh flow record; ``addrs`` is source then destination address bytes."""
    rec: list[Any] = [0] * F_SIZE
    rec[F_PROTO] = proto
    rec[F_ADDRS] = addrs
    rec[F_SPORT] = sport
    rec[F_DPORT] = dport
    rec[F_FIRST_TS] = ts
    rec[F_LAST_TS] = ts
    rec[F_FIRST_FRAME] = frame
    rec[F_LAST_FRAME] = frame
    rec[F_HIST] = ""
    rec[F_TA] = None
    rec[F_EVIDENCE] = None
    rec[F_DIAG] = None
    rec[F_LASTID0] = rec[F_LASTID0 + 1] = -1
    return rec


def note_events(rec: list[Any], direction: int, events: int) -> None:
    """Append the history letter of each event seen for the first time in this direction."""
    idx = F_SEEN0 if direction == 0 else F_SEEN1
    new = events & ~rec[idx]
    if not new:
        return
    rec[idx] |= new
    for bit, letter in LETTERS:
        if new & bit:
            rec[F_HIST] += letter if direction == 0 else letter.lower()


@lru_cache(maxsize=1 << 16)
def address(raw: bytes) -> str:
    """One packed address as text (cached: a capture repeats few addresses many times)."""
    return str(ipaddress.ip_address(raw))


def split_addrs(addrs: bytes) -> tuple[str, str]:
    """Render the packed source+destination bytes as two address strings."""
    half = len(addrs) // 2
    return address(addrs[:half]), address(addrs[half:])


def conn_state(orig_seen: int, resp_seen: int) -> str:
    """Zeek's conn_state from the events each side was seen to send."""
    o_syn = bool(orig_seen & S_SYN)
    r_synack = bool(resp_seen & S_SYNACK)
    o_fin, r_fin = bool(orig_seen & S_FIN), bool(resp_seen & S_FIN)
    o_rst, r_rst = bool(orig_seen & S_RST), bool(resp_seen & S_RST)
    if o_syn and not r_synack:
        if r_rst:
            return "REJ"
        if o_rst:
            return "RSTOS0"
        if o_fin:
            return "SH"
        if resp_seen:
            return "S0" if not resp_seen & (S_DATA | S_ACK) else "OTH"
        return "S0"
    if o_syn and r_synack:
        if o_rst:
            return "RSTO"
        if r_rst:
            return "RSTR"
        if o_fin and r_fin:
            return "SF"
        if o_fin:
            return "S2"
        if r_fin:
            return "S3"
        return "S1"
    if r_synack and not o_syn:
        if r_rst:
            return "RSTRH"
        if r_fin:
            return "SHR"
    return "OTH"


def flow_to_dict(rec: list[Any]) -> dict[str, Any]:
    """The semantic-JSON form of a flow: originator first, as Zeek reports it."""
    proto = rec[F_PROTO]
    src, dst = split_addrs(rec[F_ADDRS])
    sport, dport = rec[F_SPORT], rec[F_DPORT]
    seen0, seen1 = rec[F_SEEN0], rec[F_SEEN1]
    flipped = proto == 6 and originator(seen0, seen1) == 1
    p0, b0, p1, b1 = rec[F_PKTS0], rec[F_BYTES0], rec[F_PKTS1], rec[F_BYTES1]
    pay0, pay1 = rec[F_PAY0], rec[F_PAY1]
    hist = rec[F_HIST]
    if flipped:
        src, dst, sport, dport = dst, src, dport, sport
        p0, b0, p1, b1 = p1, b1, p0, b0
        pay0, pay1 = pay1, pay0
        seen0, seen1 = seen1, seen0
        hist = hist.swapcase()
    out: dict[str, Any] = {
        "proto": PROTO_NAMES.get(proto, str(proto)),
        "src": src,
        "sport": sport,
        "dst": dst,
        "dport": dport,
        "first_frame": rec[F_FIRST_FRAME],
        "last_frame": rec[F_LAST_FRAME],
        "start_ns": rec[F_FIRST_TS],
        "duration_s": round((rec[F_LAST_TS] - rec[F_FIRST_TS]) / 1e9, 6),
        "orig_packets": p0,
        "orig_bytes": b0,
        "orig_payload_bytes": pay0,
        "resp_packets": p1,
        "resp_bytes": b1,
        "resp_payload_bytes": pay1,
    }
    if proto == 6:
        out["conn_state"] = conn_state(seen0, seen1)
        out["history"] = hist
        syn, synack, ack = rec[F_SYN_TS], rec[F_SYNACK_TS], rec[F_ACK_TS]
        out["handshake_rtt_ms"] = round((ack - syn) / 1e6, 3) if syn and ack else None
        out["syn_to_synack_ms"] = round((synack - syn) / 1e6, 3) if syn and synack else None
        out["tcp_analysis"] = dict(sorted(rec[F_TA].items())) if rec[F_TA] else {}
        out["evidence_frames"] = list(rec[F_EVIDENCE] or [])
    return out


def originator(seen0: int, seen1: int) -> int:
    """The raw direction of a TCP flow's originator (Zeek's: the sender of the first SYN),
    from the events each direction was seen to send."""
    return 1 if not seen0 & S_SYN and (seen1 & S_SYN or seen0 & S_SYNACK) else 0


def flow_brief(rec: list[Any], ends: tuple[str, str], o: int) -> dict[str, Any]:
    """The fields of a TCP flow's flow_to_dict() that the diagnosis and findings read.

    ``ends`` is split_addrs() of the record, ``o`` its originator(). Only the first flows
    reach the JSON whole; building every dict in full was most of the serial tail. The
    evidence list and flag counts are the record's own (unsorted), not copies: read only.
    """
    syn, ack = rec[F_SYN_TS], rec[F_ACK_TS]
    return {
        "src": ends[o], "sport": rec[F_SPORT + o], "dst": ends[1 - o],
        "dport": rec[F_DPORT - o], "first_frame": rec[F_FIRST_FRAME],
        "start_ns": rec[F_FIRST_TS],
        "handshake_rtt_ms": round((ack - syn) / 1e6, 3) if syn and ack else None,
        "tcp_analysis": rec[F_TA] or {}, "evidence_frames": rec[F_EVIDENCE] or [],
    }
