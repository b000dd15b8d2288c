"""The pcap reader of one share of a parallel analysis, with the split done a chunk at a time.

Every share walks every record of the file, so what it spends on the records it skips is paid
once per share: the records come a chunk at a time as arrays (chunks.py), and the share of
each packet (split.py's rule for plain IPv4 TCP/UDP) and the capture totals are worked out for
the whole 8 MB chunk at once with numpy. Packets the vector rule cannot place (VLAN tags, IP
options, IPv6, fragments, cut-off headers) go through ``split.share_of_record`` one by one, so
the split is exactly split.py's.

numpy is loaded for parallel runs and comparisons only: a capture small enough for one
process never loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, repeat
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from .chunks import pcap_chunks, words
from .split import SPECIAL_PORTS, share_of_record

if TYPE_CHECKING:
    from .reader import CaptureInfo, Record

#: bytes before the IPv4 header, by link type (the layouts the vector rule reads)
L3_AT = {1: 14, 113: 16, 101: 0, 228: 0}
#: the ethertype's offset, for link types that have one
ET_AT = {1: 12, 113: 14}
_SPECIAL = np.array(sorted(SPECIAL_PORTS), dtype=np.uint32)


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
    ok &= ~np.isin(sport, _SPECIAL) & ~np.isin(dport, _SPECIAL)
    x = w32[at + 12].astype(np.uint64) ^ w32[at + 16] ^ sport ^ dport
    owner: np.ndarray = ((x ^ (x >> 16) ^ (x >> 8)) % shares).astype(np.int64)
    for i in np.flatnonzero(~ok).tolist():  # the rule in full, one by one
        owner[i] = share_of_record(buf, int(offs[i]) + 16, int(caplen[i]), linktype, shares)
    return owner


def iter_pcap_share(fh: BinaryIO, endian: str, ns: bool, linktype: int, info: CaptureInfo,
                    share: int, shares: int, stats: list[int], chunk: int, max_record: int
                    ) -> Iterator[Record]:
    """The records of share ``share``, each with its frame number in the link type's place;
    ``stats`` as ``reader.open_share`` describes it. The records of a chunk are handed out by
    ``zip`` through ``chain``: no Python code runs per record taken."""
    return chain.from_iterable(
        _chunks(fh, endian, ns, linktype, info, share, shares, stats, chunk, max_record))


def _chunks(fh: BinaryIO, endian: str, ns: bool, linktype: int, info: CaptureInfo,
            share: int, shares: int, stats: list[int], chunk: int, max_record: int
            ) -> Iterator[Iterator[Record]]:
    frame = nbytes = truncated = backwards = first_ts = last_ts = 0
    totals = share == shares - 1
    try:
        for buf, offs, cap, wire, ts in pcap_chunks(fh, endian, ns, info.warnings, chunk,
                                                    max_record):
            if totals:
                nbytes += int(wire.sum())
                truncated += int(np.count_nonzero(cap < wire))
                if frame == 0:
                    first_ts = int(ts[0])
                peak = np.maximum.accumulate(np.concatenate(
                    (np.array([last_ts], dtype=np.int64), ts)))
                backwards += int(np.count_nonzero(ts < peak[:-1]))
                last_ts = int(peak[-1])
            mine = np.flatnonzero(shares_of_chunk(buf, offs, cap, linktype, shares) == share)
            first = frame + 1
            frame += len(offs)
            yield zip(repeat(buf, len(mine)), (offs[mine] + 16).tolist(), cap[mine].tolist(),
                      wire[mine].tolist(), ts[mine].tolist(), (mine + first).tolist(),
                      strict=True)
    finally:
        stats[:] = [frame, nbytes, truncated, backwards, first_ts, last_ts]
        fh.close()
