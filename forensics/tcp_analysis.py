"""Per-segment TCP sequence analysis, following Wireshark's ``tcp.analysis.*`` definitions.

Written from the definitions in the Wireshark User's Guide ("TCP Analysis") and checked
frame by frame against tshark 4.0 as an oracle. Each flag looks only at the state
left by earlier segments of the same conversation, so one pass in capture order
gives the same answer tshark gives. Sequence arithmetic is modulo 2**32.

State lives in plain lists (one per direction) because this runs once per TCP
segment of a capture that may hold millions of them.
"""

from __future__ import annotations

# Flag bits (one per tcp.analysis.* field).
RETRANSMISSION = 0x1
LOST_SEGMENT = 0x2
ACK_LOST_SEGMENT = 0x4
KEEP_ALIVE = 0x8
DUPLICATE_ACK = 0x10
ZERO_WINDOW = 0x20
ZERO_WINDOW_PROBE = 0x40
ZERO_WINDOW_PROBE_ACK = 0x80
KEEP_ALIVE_ACK = 0x100
OUT_OF_ORDER = 0x200
FAST_RETRANSMISSION = 0x400
WINDOW_UPDATE = 0x800
WINDOW_FULL = 0x1000
SPURIOUS_RETRANSMISSION = 0x2000

# Wireshark field names, in the order tshark lists them.
FLAG_NAMES: tuple[tuple[int, str], ...] = (
    (RETRANSMISSION, "retransmission"),
    (FAST_RETRANSMISSION, "fast_retransmission"),
    (SPURIOUS_RETRANSMISSION, "spurious_retransmission"),
    (OUT_OF_ORDER, "out_of_order"),
    (LOST_SEGMENT, "lost_segment"),
    (ACK_LOST_SEGMENT, "ack_lost_segment"),
    (DUPLICATE_ACK, "duplicate_ack"),
    (ZERO_WINDOW, "zero_window"),
    (ZERO_WINDOW_PROBE, "zero_window_probe"),
    (ZERO_WINDOW_PROBE_ACK, "zero_window_probe_ack"),
    (WINDOW_FULL, "window_full"),
    (WINDOW_UPDATE, "window_update"),
    (KEEP_ALIVE, "keep_alive"),
    (KEEP_ALIVE_ACK, "keep_alive_ack"),
)
ALL_FLAG_NAMES: tuple[str, ...] = tuple(name for _bit, name in FLAG_NAMES)

# TCP header flag bits.
TH_FIN = 0x01
TH_SYN = 0x02
TH_RST = 0x04
TH_ACK = 0x10

M32 = 0xFFFFFFFF
HALF = 0x80000000

# Indexes into a direction's state list.
BASE_SET = 0  # base sequence number known
NEXTSEQ = 1  # highest seq + len seen (0 = not known yet, as in Wireshark)
NEXTSEQ_TIME = 2  # when NEXTSEQ last advanced (ns)
MAXSEQ_TO_ACK = 3  # highest contiguous sequence number seen
LASTACK = 4  # last ACK number sent in this direction
LASTACK_TIME = 5  # when it was sent (ns)
WINDOW = 6  # last (scaled) window advertised in this direction
WIN_SCALE = 7  # -1 unknown, -2 no scaling, >= 0 shift (+ 16 or + 32: see analyzer.py)
LAST_FLAGS = 8  # analysis flags of the previous segment in this direction
DUPACKS = 9  # duplicate ACKs sent since this direction's ACK number last changed
BASE_SEQ = 10
# ACKed-unseen reporting (tshark 4.0, measured): may the peer's ACK beyond NEXTSEQ be flagged?
ACKLOST_ARMED = 11  # cleared by a duplicate ACK from here or a report that found no gap,
#                     set again when this direction's ACK number changes
GAP_PENDING = 12  # a gap (lost segment) here not yet reported by the peer: flag regardless
# The peer ACKed beyond everything this direction was seen to send (tshark 4.0, measured): the
# next retransmission at this direction's ACK counts as fast without two duplicate ACKs. Cleared
# when this direction's ACK number changes or it sends a duplicate ACK (which counts from 1).
FAST_PRIMED = 13


def new_direction() -> list[int]:
    """Fresh per-direction state (window starts 'unknown', i.e. not zero)."""
    return [0, 0, 0, 0, 0, 0, M32, -1, 0, 0, 0, 1, 0, 0]


def flag_names(bits: int) -> list[str]:
    """Names of the flags in ``bits``; fast and spurious retransmissions are retransmissions too."""
    if bits & (FAST_RETRANSMISSION | SPURIOUS_RETRANSMISSION):
        bits |= RETRANSMISSION
    return [name for bit, name in FLAG_NAMES if bits & bit]


def _empty_segment_flags(fwd: list[int], rev: list[int], window: int) -> int:
    """Window update, keep-alive ACK, zero-window-probe ACK or duplicate ACK.

    For an empty segment at the next expected sequence that repeats this direction's last
    ACK number (none of the four applies otherwise).
    """
    fwd_win = fwd[6]
    ta = 0
    # Window update: nothing but a new, non-zero window.
    if window and window != fwd_win:
        ta = 0x800  # WINDOW_UPDATE
    if window and window == fwd_win and rev[8] & 0x8:
        ta |= 0x100  # KEEP_ALIVE_ACK
    elif window == 0 and fwd_win == 0 and rev[8] & 0x40:
        # tshark 4.0 wants the same ACK; an ACK of the probe byte itself is not one.
        ta |= 0x80  # ZERO_WINDOW_PROBE_ACK
    elif window and window == fwd_win:
        fwd[9] += 1
        fwd[11] = 0
        fwd[13] = 0
        ta |= 0x10  # DUPLICATE_ACK
    return ta


def analyze(
    fwd: list[int],
    rev: list[int],
    seq: int,
    ack: int,
    seglen: int,
    th: int,
    window: int,
    ts: int,
    ooo_thres: int,
) -> int:
    """Classify one segment sent in direction ``fwd`` and update both directions' state.

    ``window`` is already scaled; ``ooo_thres`` is the conversation's handshake RTT in ns
    (3 ms when unknown), the horizon within which an earlier-sequence segment counts as
    out-of-order rather than retransmitted. Returns the flag bits.

    State indexes and TCP flag bits are written as literals here (see the constants at
    the top of the module): this function runs once per TCP segment.
    """
    ta = 0
    nextseq_f = fwd[1]
    sfr = th & 0x07
    fwd_ack = fwd[4]

    if not fwd[0]:
        fwd[10] = seq if th & 0x02 else (seq - 1) & 0xFFFFFFFF
        fwd[0] = 1
    if th & 0x10 and not rev[0]:
        rev[10] = (ack - 1) & 0xFFFFFFFF
        rev[0] = 1

    in_order = seq == nextseq_f != 0 and not sfr and seglen != 1
    if in_order:
        # The common case, in order without SYN/FIN/RST (and not a possible probe): of the
        # checks below only these can fire.
        ta = 0 if window else 0x20  # ZERO_WINDOW
        if seglen:
            sc_r = rev[7]
            if sc_r != -1 and (seq + seglen) & 0xFFFFFFFF == (
                rev[4] + (rev[6] if sc_r < 32 else rev[6] >> (sc_r - 32))
            ) & 0xFFFFFFFF:
                ta |= 0x1000  # WINDOW_FULL
        elif ack == fwd_ack:
            ta |= _empty_segment_flags(fwd, rev, window)
    # Zero-window probe: one byte at the next expected sequence while the peer's window is 0.
    elif seglen == 1 and seq == nextseq_f and rev[6] == 0:
        ta = 0x40  # ZERO_WINDOW_PROBE
    else:
        # Zero window: the sender advertises no room (SYN/FIN/RST excluded).
        if window == 0 and not sfr:
            ta = 0x20  # ZERO_WINDOW
        # Previous segment not captured: this one starts beyond the next expected byte.
        if nextseq_f and (nextseq_f - seq) & 0xFFFFFFFF >= 0x80000000:
            if not th & 0x04:
                ta |= 0x2  # LOST_SEGMENT
            fwd[12] = 1  # also after a RST, which is not flagged (tshark 4.0, measured)
        if seglen <= 1:
            # Keep-alive: 0 or 1 byte starting one byte before the next expected sequence.
            if seq == (nextseq_f - 1) & 0xFFFFFFFF and not sfr:
                ta |= 0x8  # KEEP_ALIVE
            if seglen == 0 and not sfr and seq == nextseq_f and ack == fwd_ack:
                ta |= _empty_segment_flags(fwd, rev, window)
        sc_r = rev[7]
        if seglen > 0 and not sfr and sc_r != -1:
            # Window full: the segment fills the peer's advertised window exactly.
            if (seq + seglen) & 0xFFFFFFFF == (
                rev[4] + (rev[6] if sc_r < 32 else rev[6] >> (sc_r - 32))
            ) & 0xFFFFFFFF:
                ta |= 0x1000  # WINDOW_FULL

    if ack != fwd_ack:
        fwd[9] = 0
        fwd[11] = 1  # a new ACK number re-arms ACKed-unseen reports against this direction
        fwd[13] = 0

    # ACKed segment that wasn't captured: beyond the peer's highest contiguous sequence.
    # Up to the peer's next expected sequence (a gap the peer showed) it is always reported;
    # beyond it (data never seen at all) only while armed, as tshark 4.0 does, so that a run
    # of ACKs for unseen data is reported once.
    maxseq_r = rev[3]
    if maxseq_r and th & 0x10 and (maxseq_r - ack) & 0xFFFFFFFF >= 0x80000000:
        if rev[11] or rev[12] or (rev[1] - ack) & 0xFFFFFFFF < 0x80000000:
            ta |= 0x4  # ACK_LOST_SEGMENT
            rev[12] = 0
            if maxseq_r == rev[1] or rev[9]:
                rev[11] = 0
            rev[3] = rev[1]
        if (rev[1] - ack) & 0xFFFFFFFF >= 0x80000000:
            # beyond anything the peer was seen to send, reported or not: see FAST_PRIMED
            # (nothing changes when the peer showed a gap: measured in tshark 4.0)
            if maxseq_r == rev[1]:
                rev[9] = 0
                rev[13] = 1

    if in_order:
        if seglen:  # advances; already ACKed by the peer is all that can be said of it
            end = (seq + seglen) & 0xFFFFFFFF
            rev_ack = rev[4]
            if rev_ack and (end - rev_ack - 1) & 0xFFFFFFFF >= 0x7FFFFFFF:
                ta |= 0x2000  # SPURIOUS_RETRANSMISSION
            fwd[1] = end
            fwd[2] = ts
        if seq == fwd[3] or not fwd[3]:
            fwd[3] = fwd[1]
            fwd[12] = 0
        fwd[6] = window
        fwd[4] = ack
        fwd[5] = ts
        fwd[8] = ta
        return ta

    # Retransmission family: data (or SYN/FIN) that does not advance the sequence. A keep-alive,
    # or more than one byte starting one byte before the next expected sequence, is none of
    # these in tshark 4.0 (measured; one byte there with SYN/FIN/RST is a retransmission).
    if (
        (seglen > 0 or th & 0x03)
        and not ta & 0x8
        and not (seglen > 1 and seq == (nextseq_f - 1) & 0xFFFFFFFF)
    ):
        not_advanced = nextseq_f != 0 and (seq - nextseq_f) & 0xFFFFFFFF >= 0x80000000
        end = (seq + seglen) & 0xFFFFFFFF
        rev_ack = rev[4]
        if (
            not_advanced
            and (rev[9] >= 2 or rev[13])
            and rev_ack == seq
            and 0 <= ts - rev[5] < 20_000_000  # a timestamp going backwards is not "within"
        ):
            ta |= 0x400  # FAST_RETRANSMISSION
        elif seglen > 0 and rev_ack and (end - rev_ack - 1) & 0xFFFFFFFF >= 0x7FFFFFFF:
            # end <= rev_ack in sequence space (equal, or behind by less than half the space)
            ta |= 0x2000  # SPURIOUS_RETRANSMISSION
        elif (
            not_advanced
            and 0 <= ts - fwd[2] < ooo_thres
            and nextseq_f != (end + 1 if th & 0x03 else end) & 0xFFFFFFFF
        ):
            ta |= 0x200  # OUT_OF_ORDER
        elif not_advanced:
            ta |= 0x1  # RETRANSMISSION

    nextseq = (seq + seglen + 1 if th & 0x03 else seq + seglen) & 0xFFFFFFFF
    if not ta & 0x40:
        if not nextseq_f or (nextseq_f - nextseq) & 0xFFFFFFFF >= 0x80000000:
            fwd[1] = nextseq
            fwd[2] = ts
        maxseq_f = fwd[3]
        if seq == maxseq_f or not maxseq_f:
            fwd[3] = fwd[1]
            fwd[12] = 0  # contiguous again: no gap left for the peer to report

    fwd[6] = window
    fwd[4] = ack
    fwd[5] = ts
    fwd[8] = ta
    return ta
