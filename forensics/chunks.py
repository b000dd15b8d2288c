"""The records of a pcap a chunk at a time, as numpy arrays (the parallel analysis and the
two-ended comparison read this way).

Per record, Python only follows the chain of record lengths, read through four word views of
the chunk (one per alignment) with no ``struct`` call; the record headers are then decoded for
the whole chunk at once through views whose element ``i`` is the word at byte ``i``, so a field
of every record is one gather whatever its alignment. The stop rules are the plain reader's
(``reader._iter_pcap``): a corrupt record header or a cut-off last record ends the walk with
the same warning.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

#: the byte order of the machine's words, as the pcap header names it
NATIVE = "<" if sys.byteorder == "little" else ">"
#: one chunk's records: the buffer, record header offsets in it, captured and wire lengths
#: (wire at least captured), timestamps in ns
Chunk = tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def words(buf: bytes, dtype: str) -> np.ndarray:
    """A view of ``buf`` whose element ``i`` is the word starting at byte ``i`` (stride 1): a
    field of every record is then one gather, whatever the alignment."""
    size = np.dtype(dtype).itemsize
    return np.ndarray(shape=(max(len(buf) - size + 1, 0),), dtype=dtype, buffer=buf,
                      strides=(1,))


def chain_walk(buf: bytes, endian: str, max_record: int) -> tuple[np.ndarray, int, int]:
    """The offsets of the whole records in ``buf``, the offset after the last of them, and
    the captured length of a corrupt record header there (0 when none)."""
    n = len(buf)
    fields: list[int] = []  # where each record's captured length is: its offset + 8
    mark = fields.append
    p = 8
    if endian == NATIVE:  # the length words read through four word views: no struct call
        views = tuple(memoryview(buf)[k:k + (n - k) // 4 * 4].cast("I") for k in range(4))
        try:
            while p <= n - 8:
                q = p + 16 + views[p & 3][p >> 2]
                if q > n + 8:  # cut off by the end of the chunk (or corrupt: see below)
                    break
                mark(p)
                p = q
        finally:
            for v in views:
                v.release()
    else:
        u32 = struct.Struct(endian + "I").unpack_from
        while p <= n - 8:
            q = p + 16 + u32(buf, p)[0]
            if q > n + 8:
                break
            mark(p)
            p = q
    offs = np.array(fields, dtype=np.int64) - 8
    caplen = words(buf, endian + "u4")[offs + 8] if len(fields) else offs
    bad = np.flatnonzero(caplen > max_record)
    if len(bad):  # a length no record has: the walk stops at that header
        return offs[: bad[0]], int(offs[bad[0]]), int(caplen[bad[0]])
    if p <= n - 8:
        left = int(words(buf, endian + "u4")[p])
        if left > max_record:
            return offs, p - 8, left
    return offs, p - 8, 0


def pcap_chunks(fh: BinaryIO, endian: str, ns: bool, warnings: list[str], chunk: int,
                max_record: int) -> Iterator[Chunk]:
    """The records after the file header of ``fh``, a chunk of ``chunk`` bytes at a time;
    the reader's warning goes to ``warnings`` when the walk stops early."""
    from .reader import refill

    mult = 1 if ns else 1000
    seekable = fh.seekable()
    buf = fh.read(chunk)
    while True:
        n = len(buf)
        offs, off, corrupt = chain_walk(buf, endian, max_record)
        if len(offs):
            w32 = words(buf, endian + "u4")
            cap = w32[offs + 8].astype(np.int64)
            wire = np.maximum(w32[offs + 12].astype(np.int64), cap)
            ts = w32[offs].astype(np.int64) * 1_000_000_000 + w32[offs + 4].astype(
                np.int64) * mult
            yield buf, offs, cap, wire, ts
        if corrupt:
            warnings.append(f"corrupt record header at byte {fh.tell() - n + off}: "
                            f"captured length {corrupt}; analysis stops there")
            return
        nxt = refill(fh, buf, off, n, seekable)
        if nxt is None:
            if off < n:
                warnings.append(
                    f"capture is truncated: last record cut short ({n - off} bytes "
                    "left over); the analysis covers the packets before it")
            return
        buf = nxt
