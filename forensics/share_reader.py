"""How the shares of a parallel analysis get their records from a pcap: share 0 walks the
file once for all of them (issue #21).

Walking a pcap is the one per-record job that cannot be split: each record's place follows
from the one before. So share 0 walks the mapped file (chunks.py), places every packet in its
share for a whole 8 MB chunk at once with numpy (split.py's rule: plain IPv4 TCP/UDP by a
vector hash, the packets the vector rule cannot place through ``split.share_of_record``), counts
the capture totals, and deals out the records: each other share's rows (packet offset, lengths,
time, frame number) go to a spool file, and a small notice down that share's pipe says where.
The other shares map the file themselves and only read their rows, so they start analysing as
soon as the first chunk is dealt; share 0 gets fewer flows (split.owners) to make up for the
walk. Pipes carry 16-byte notices only: a share that falls behind never blocks the walk.

numpy is loaded for parallel runs and comparisons only: a capture small enough for one
process never loads it.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import TYPE_CHECKING, cast

import numpy as np

from .chunks import DropBehind, mapped_chunks, words
from .linklayer import ET_AT, L3_AT
from .split import BUCKETS, SPECIAL_PORTS, owners, share_of_record

if TYPE_CHECKING:
    from .reader import Record

#: port -> whether its packets go to share 0 whole (split.SPECIAL_PORTS), as a lookup table
_SPECIAL = np.zeros(65536, dtype=np.bool_)
_SPECIAL[sorted(SPECIAL_PORTS)] = True
#: a notice down a share's pipe: where its rows start in the spool, how many (-1: the end)
NOTICE = struct.Struct("<qq")
#: int64 columns of a dealt row: packet offset, captured length, wire length, time, frame
COLUMNS = 5
#: one share's records of one chunk, as those columns
Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def shares_of_chunk(buf: bytes, offs: np.ndarray, caplen: np.ndarray, linktype: int,
                    shares: int) -> np.ndarray:
    """The share of each record starting at ``offs`` (record header offsets) in ``buf``."""
    l3 = L3_AT[linktype]
    need = l3 + 24  # the IPv4 header without options and the two ports
    at = offs + (16 + l3)
    # records shorter than ``need`` read junk (clipped to the buffer): ``ok`` drops them
    at = np.minimum(at, len(buf) - 24)
    w8 = np.frombuffer(buf, dtype=np.uint8)
    w16 = words(buf, ">u2")
    w32 = words(buf, ">u4")
    ok = caplen >= need
    et_at = ET_AT.get(linktype)
    if et_at is not None:
        ok &= w16[at - (l3 - et_at)] == 0x0800
    ok &= w8[at] == 0x45
    ok &= (w16[at + 6] & 0x3FFF) == 0
    proto = w8[at + 9]
    ok &= (proto == 6) | (proto == 17)
    ports = w32[at + 20].astype(np.uint64)
    sport, dport = ports >> 16, ports & 0xFFFF
    ok &= ~(_SPECIAL[sport] | _SPECIAL[dport])
    x = w32[at + 12].astype(np.uint64) ^ w32[at + 16] ^ sport ^ dport
    table = np.array(owners(shares), dtype=np.int64)
    owner: np.ndarray = table[(x ^ (x >> 16) ^ (x >> 8)) % BUCKETS]
    for i in np.flatnonzero(~ok).tolist():  # the rule in full, one by one
        owner[i] = share_of_record(buf, int(offs[i]) + 16, int(caplen[i]), linktype, shares)
    return owner


@dataclass
class Totals:
    """What every record adds to the capture, counted by the walk: frames, bytes, truncated
    packets, timestamps going backwards, first and last time (as ``Analyzer`` counts them)."""

    frames: int = 0
    bytes: int = 0
    truncated: int = 0
    backwards: int = 0
    first_ts: int = 0
    last_ts: int = 0
    warnings: list[str] = field(default_factory=list)

    def add(self, cap: np.ndarray, wire: np.ndarray, ts: np.ndarray) -> None:
        self.bytes += int(wire.sum())
        self.truncated += int(np.count_nonzero(cap < wire))
        if self.frames == 0:
            self.first_ts = int(ts[0])
        peak = np.maximum.accumulate(np.concatenate(
            (np.array([self.last_ts], dtype=np.int64), ts)))
        self.backwards += int(np.count_nonzero(ts < peak[:-1]))
        self.last_ts = int(peak[-1])
        self.frames += len(ts)


def deal(mm: mmap.mmap, start: int, endian: str, ns: bool, linktype: int, shares: int,
         spool: int, notices: list[int], chunk: int, max_record: int
         ) -> tuple[list[Rows], Totals]:
    """Share 0's walk: every other share's rows to ``spool`` with a notice down its pipe
    (``notices[k - 1]`` for share k), share 0's own rows and the totals returned. A share
    whose pipe broke (it died) is skipped; the merge then finds its result missing."""
    totals = Totals()
    own: list[Rows] = []
    at = 0
    alive = list(notices)
    try:
        for buf, offs, cap, wire, ts in mapped_chunks(mm, start, endian, ns, totals.warnings,
                                                      chunk, max_record):
            first = totals.frames + 1
            totals.add(cap, wire, ts)
            owner = shares_of_chunk(buf, offs, cap, linktype, shares)
            frames = np.arange(first, first + len(offs), dtype=np.int64)
            rows = np.stack((offs + 16, cap, wire, ts, frames))
            for k in range(shares):
                mine = rows[:, owner == k]
                if k == 0:
                    own.append(cast(Rows, tuple(mine)))
                elif mine.shape[1] and alive[k - 1] >= 0:
                    data = np.ascontiguousarray(mine).tobytes()
                    os.pwrite(spool, data, at)
                    alive[k - 1] = _notify(alive[k - 1], at, mine.shape[1])
                    at += len(data)
    finally:
        for fd in alive:
            if fd >= 0:
                _notify(fd, 0, -1)
    return own, totals


def _notify(fd: int, at: int, n: int) -> int:
    """Send one notice; the descriptor, or -1 once the share is gone."""
    try:
        os.write(fd, NOTICE.pack(at, n))
        return fd
    except BrokenPipeError:
        return -1


def own_records(mm: mmap.mmap, own: Iterable[Rows]) -> Iterator[Record]:
    """Share 0's records, each with its frame number where the link type goes."""
    return chain.from_iterable(_zipped(mm, own))


def dealt_records(mm: mmap.mmap, spool: int, notices: int) -> Iterator[Record]:
    """Another share's records as share 0 deals them (the end when its notices end)."""
    return chain.from_iterable(_zipped(mm, _received(spool, notices)))


def _received(spool: int, notices: int) -> Iterator[Rows]:
    while True:
        raw = b""
        while len(raw) < NOTICE.size:
            part = os.read(notices, NOTICE.size - len(raw))
            if not part:  # share 0 is gone: its analysis is redone in one process
                raise EOFError("share 0 stopped dealing records")
            raw += part
        at, n = NOTICE.unpack(raw)
        if n < 0:
            return
        data = os.pread(spool, n * COLUMNS * 8, at)
        yield cast(Rows, tuple(np.frombuffer(data, dtype=np.int64).reshape(COLUMNS, n)))


def _zipped(mm: mmap.mmap, batches: Iterable[Rows]) -> Iterator[Iterator[Record]]:
    """Each batch as records (``zip`` over its columns: no Python code per record), the pages
    of a batch given back once the analyzer has taken all of it."""
    behind = DropBehind(mm)
    buf = cast(bytes, mm)
    for off, cap, wire, ts, frame in batches:
        if not len(off):
            continue
        yield cast("Iterator[Record]", zip(
            repeat(buf, len(off)), off.tolist(), cap.tolist(), wire.tolist(), ts.tolist(),
            frame.tolist(), strict=True))
        behind.upto(int(off[-1]) - 16)
