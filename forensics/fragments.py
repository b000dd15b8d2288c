"""IP fragment reassembly, so that TCP (and UDP) inside fragments is analysed as tshark does.

tshark reassembles IPv4 and IPv6 fragments by default and dissects the transport layer in the
frame that completes the datagram; the engine does the same. Only what is needed is kept: the
captured bytes of each fragment and which byte ranges arrived. Pending datagrams are bounded
(the oldest are dropped), so a capture full of stray fragments cannot exhaust memory.
"""

from __future__ import annotations

MAX_PENDING = 4096
MAX_DATAGRAM = 65535 + 8
#: pieces one datagram may collect: a 64 KB datagram over a 576-byte MTU needs about 120;
#: more is a flood of duplicates or slivers, and the datagram is given up
MAX_PIECES = 256


class Reassembler:
    """Pending datagrams keyed by (addresses, protocol, identification)."""

    def __init__(self) -> None:
        # key -> fragments seen: (offset, wire length, captured bytes)
        self.pending: dict[tuple[bytes, int, int], list[tuple[int, int, bytes]]] = {}
        self.totals: dict[tuple[bytes, int, int], int] = {}  # known once the last one arrived
        self.reassembled = 0

    def add(self, key: tuple[bytes, int, int], offset: int, more: int, buf: bytes,
            start: int, cap_end: int, length: int) -> tuple[bytes, int, int] | None:
        """Add one fragment (payload ``length`` bytes on the wire, ``buf[start:cap_end]`` captured).

        Returns ``(payload, captured, total)`` when this fragment completes the datagram: the
        reassembled payload, how many of its first bytes were captured, and its length.
        """
        if length < 0 or offset + length > MAX_DATAGRAM:
            return None
        pieces = self.pending.get(key)
        if pieces is None:
            if len(self.pending) >= MAX_PENDING:
                old = next(iter(self.pending))
                del self.pending[old]
                self.totals.pop(old, None)
            pieces = self.pending[key] = []
        if len(pieces) >= MAX_PIECES:
            del self.pending[key]
            self.totals.pop(key, None)
            return None
        pieces.append((offset, length, bytes(buf[start:max(start, cap_end)])))
        if not more:
            self.totals[key] = offset + length
        total = self.totals.get(key, -1)
        if total < 0:
            return None
        pieces.sort(key=lambda p: p[0])
        covered = 0
        for off, ln, _data in pieces:
            if off > covered:
                return None
            covered = max(covered, off + ln)
        if covered < total:
            return None
        del self.pending[key]
        del self.totals[key]
        self.reassembled += 1
        out = bytearray(total)
        captured = 0
        for off, _ln, data in pieces:
            if off < total:
                out[off: off + len(data)] = data[: total - off]
            if off <= captured:
                captured = max(captured, min(total, off + len(data)))
        return bytes(out), captured, total


def window_scale(buf: bytes, p: int, end: int) -> int:
    """The window-scale shift from a SYN's options, or -1 when absent (capped at 14)."""
    while p < end:
        kind = buf[p]
        if kind == 0:
            break
        if kind == 1:
            p += 1
            continue
        if p + 1 >= end:
            break
        ln = buf[p + 1]
        if ln < 2:
            break
        if kind == 3 and ln == 3 and p + 2 < end:
            return min(buf[p + 2], 14)
        p += ln
    return -1
