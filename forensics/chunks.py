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

import io
import mmap
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO, cast

import numpy as np

from .reader import corrupt_header, cut_short, refill

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


def chain_walk(buf: bytes, start: int, stop: int, endian: str,
               max_record: int) -> tuple[np.ndarray, int, int]:
    """The offsets of the whole records in ``buf[start:stop]``, the offset after the last of
    them, and the captured length of a corrupt record header there (0 when none)."""
    fields: list[int] = []  # where each record's captured length is: its offset + 8
    mark = fields.append
    p = start + 8
    last = stop - 8  # the last place a whole record header can end
    # A record goes past the chunk when q > lim; so does every one whose header does not fit
    # (p > last): no test of p per record, and reading past the end of ``buf`` ends the walk.
    lim = stop + 8
    if endian == NATIVE:  # the length words read through four word views: no struct call
        size = len(buf)
        views = tuple(memoryview(buf)[k:k + (size - k) // 4 * 4].cast("I") for k in range(4))
        try:
            while True:
                q = p + 16 + views[p & 3][p >> 2]
                if q > lim:  # cut off by the end of the chunk (or corrupt: see below)
                    break
                mark(p)
                p = q
        except IndexError:
            pass
        finally:
            for v in views:
                v.release()
    else:
        u32 = struct.Struct(endian + "I").unpack_from
        try:
            while True:
                q = p + 16 + u32(buf, p)[0]
                if q > lim:
                    break
                mark(p)
                p = q
        except struct.error:
            pass
    offs = np.array(fields, dtype=np.int64) - 8
    caplen = words(buf, endian + "u4")[offs + 8] if len(fields) else offs
    bad = np.flatnonzero(caplen > max_record)
    if len(bad):  # a length no record has: the walk stops at that header
        return offs[: bad[0]], int(offs[bad[0]]), int(caplen[bad[0]])
    if p <= last:
        left = int(words(buf, endian + "u4")[p])
        if left > max_record:
            return offs, p - 8, left
    return offs, p - 8, 0


def _headers(buf: bytes, offs: np.ndarray, endian: str, ns: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Captured length, wire length (at least the captured one) and time in ns of each
    record."""
    size = len(buf)
    # row i: the four header words of a record starting at byte i; one gather for all four
    heads = np.ndarray(shape=(max(size - 15, 0), 4), dtype=endian + "u4", buffer=buf,
                       strides=(1, 4))
    h = heads[offs].astype(np.int64)
    cap = h[:, 2]
    wire = np.maximum(h[:, 3], cap)
    ts = h[:, 0] * 1_000_000_000 + h[:, 1] * (1 if ns else 1000)
    return cap, wire, ts


def pcap_chunks(fh: BinaryIO, endian: str, ns: bool, warnings: list[str], chunk: int,
                max_record: int) -> Iterator[Chunk]:
    """The records after the file header of ``fh``, a chunk of ``chunk`` bytes at a time;
    the reader's warning goes to ``warnings`` when the walk stops early.

    A regular file is memory-mapped (no copy of each chunk into the process) and the pages
    already walked are dropped from the mapping as it goes, so the resident size stays that
    of a chunk or two; anything else (a pipe) is read into chunks."""
    mm = map_file(fh)
    if mm is None:
        yield from _read_chunks(fh, endian, ns, warnings, chunk, max_record)
        return
    try:
        yield from mapped_chunks(mm, fh.tell(), endian, ns, warnings, chunk, max_record)
    finally:
        unmap(mm)


def map_file(fh: BinaryIO) -> mmap.mmap | None:
    """``fh`` mapped read-only, or None when it cannot be (a pipe, an empty file)."""
    try:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def unmap(mm: mmap.mmap) -> None:
    """Close a mapping; one a record is still held from is closed when it is let go."""
    try:
        mm.close()
    except BufferError:
        pass


class DropBehind:
    """Gives back the pages of a mapping that the walk has left behind, so that the resident
    size stays that of a chunk or two however large the file (the page cache keeps them)."""

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.dropped = 0

    def upto(self, offset: int) -> None:
        """Everything before ``offset`` is done with."""
        keep = offset - offset % mmap.PAGESIZE
        if keep > self.dropped:
            self.mm.madvise(mmap.MADV_DONTNEED, self.dropped, keep - self.dropped)
            self.dropped = keep


def mapped_chunks(mm: mmap.mmap, start: int, endian: str, ns: bool, warnings: list[str],
                  chunk: int, max_record: int) -> Iterator[Chunk]:
    """``pcap_chunks`` over a mapping, from byte ``start``; offsets are the file's."""
    buf = cast(bytes, mm)  # a mapping indexes, slices and unpacks as bytes do
    n = len(mm)
    behind = DropBehind(mm)
    while True:
        stop = min(start + chunk, n)
        offs, off, corrupt = chain_walk(buf, start, stop, endian, max_record)
        if len(offs):
            yield (buf, offs, *_headers(buf, offs, endian, ns))
            behind.upto(off)  # the consumer is done with these records
        if corrupt:
            warnings.append(corrupt_header(off, corrupt))
            return
        if stop == n or off == start:
            # the end of the file, or a record longer than a chunk (never: the longest valid
            # record is shorter than a chunk) left over
            if off < n:
                warnings.append(cut_short(n - off))
            return
        start = off


def _read_chunks(fh: BinaryIO, endian: str, ns: bool, warnings: list[str], chunk: int,
                 max_record: int) -> Iterator[Chunk]:
    seekable = fh.seekable()
    buf = fh.read(chunk)
    while True:
        n = len(buf)
        offs, off, corrupt = chain_walk(buf, 0, n, endian, max_record)
        if len(offs):
            yield (buf, offs, *_headers(buf, offs, endian, ns))
        if corrupt:
            warnings.append(corrupt_header(fh.tell() - n + off, corrupt))
            return
        nxt = refill(fh, buf, off, n, seekable)
        if nxt is None:
            if off < n:
                warnings.append(cut_short(n - off))
            return
        buf = nxt
