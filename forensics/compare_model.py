"""What the two-ended comparison gathers from a pair of captures, however it matched them.

Shared by the plain-Python matcher (compare.py) and the numpy one (compare_fast.py), which
both fill a Gathered that compare.py then turns into figures.
"""

from __future__ import annotations

from collections.abc import Callable

Pkt = tuple[tuple[int, ...], int, bytes, bytes, int]  # (match key, ts_ns, src, dst, ttl)
# an unmatched packet: ts_ns, key, src, dst, and whether the same packet (key) was matched
# at the other end too: the unmatched one is then an extra copy
Left = tuple[int, tuple[int, ...], bytes, bytes, bool]
Stats = tuple[int, int, int]  # how many, least, median


class Side:
    """What one capture holds, as far as the comparison needs it."""

    def __init__(self) -> None:
        self.first = 0
        self.last = 0
        self.packets = 0
        self.flows: set[tuple[int, int, int]] = set()  # (protocol, port, port)
        self.ranges: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.offload: set[tuple[int, int]] = set()  # (sport, dport) with offload-sized packets
        self.pairs: dict[bytes, int] = {}  # packets per source+destination address bytes

    def own_address(self) -> bytes | None:
        """The address in (nearly) every packet: the host the capture ran on, if one."""
        counts: dict[bytes, int] = {}
        for pk, n in self.pairs.items():
            half = len(pk) // 2
            src, dst = pk[:half], pk[half:]
            counts[src] = counts.get(src, 0) + n
            if dst != src:
                counts[dst] = counts.get(dst, 0) + n
        top = [a for a, n in counts.items() if n >= 0.9 * self.packets]
        return top[0] if len(top) == 1 else None  # two hosts in every packet: cannot tell


class Gathered:
    """What matching the two captures gave, whichever way it was done."""

    def __init__(self) -> None:
        self.sa, self.sb = Side(), Side()
        self.addrs: list[bytes] = []  # A's addresses by id (first seen first; ids stop at 0xFFFF)
        self.medians: dict[int, int] = {}  # A's sender id -> median tsB - tsA, first matched first
        # the matched tsB - tsA of the senders given, and the others' tsA - tsB: each as
        # (how many, least, median) or None when there are none
        self.split: Callable[[set[int]], tuple[Stats | None, Stats | None]] = lambda _ids: (
            None, None)
        self.same_ttl = [0, 0]  # matched packets with the same TTL at both ends, all matched
        self.pairs: dict[int, tuple[bytes, bytes]] = {}  # dst id << 16 | src id -> (src, dst) at B
        self.left_a: list[Left] = []  # A's unmatched packets, by first occurrence of their key
        self.left_b: list[Left] = []  # B's, in B's order
