"""Streaming readers for pcap and pcapng.

The file is read in large chunks and walked with ``struct.unpack_from`` so that a
capture of any size is analysed in constant memory and without one Python object
per packet beyond a small tuple. Each record is yielded as
``(buf, offset, caplen, wirelen, ts_ns, linktype)``: the packet bytes are
``buf[offset:offset + caplen]`` and are only valid until the next record is taken.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from .errors import CorruptCaptureError, NotACaptureError

CHUNK = 8 * 1024 * 1024
# Wireshark refuses records above this size; a larger length means corruption.
MAX_RECORD = 262144 * 4

Record = tuple[bytes, int, int, int, int, int]

PCAP_MAGICS: dict[bytes, tuple[str, bool]] = {
    b"\xd4\xc3\xb2\xa1": ("<", False),
    b"\xa1\xb2\xc3\xd4": (">", False),
    b"\x4d\x3c\xb2\xa1": ("<", True),
    b"\xa1\xb2\x3c\x4d": (">", True),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"


@dataclass
class CaptureInfo:
    """What the file header (and the walk through it) told us about the capture."""

    path: str
    file_format: str = "unknown"
    linktypes: list[int] = field(default_factory=list)
    snaplen: int = 0
    nanosecond: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Interface:
    linktype: int
    snaplen: int
    ts_num: int  # ts_ns = ts * ts_num // ts_den
    ts_den: int
    ts_offset_ns: int = 0


def identify(path: str) -> tuple[CaptureInfo, BinaryIO, tuple[str, bool, int] | None]:
    """The header facts, the open file (after the header of a pcap), and (byte order, ns, link
    type) for a pcap (None for pcapng, whose file is rewound). Raises NotACaptureError (the
    file closed)."""
    info = CaptureInfo(path=path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the generator or the caller
    except OSError as exc:
        raise NotACaptureError(f"cannot open {path}: {exc.strerror}") from exc
    head = fh.read(24)
    if not head:
        fh.close()
        raise NotACaptureError(f"{path} is empty (0 bytes): the capture never received data")
    magic = head[:4]
    if magic in PCAP_MAGICS:
        if len(head) < 24:
            fh.close()
            raise NotACaptureError(f"{path}: pcap header cut short ({len(head)} of 24 bytes)")
        endian, ns = PCAP_MAGICS[magic]
        _vmaj, _vmin, _zone, _sig, snaplen, network = struct.unpack(endian + "HHiIII", head[4:24])
        linktype = network & 0x03FFFFFF
        info.file_format = "pcap-ns" if ns else "pcap"
        info.nanosecond = ns
        info.snaplen = snaplen
        info.linktypes = [linktype]
        return info, fh, (endian, ns, linktype)
    if magic == PCAPNG_SHB:
        info.file_format = "pcapng"
        info.nanosecond = False
        fh.seek(0)
        return info, fh, None
    fh.close()
    raise NotACaptureError(
        f"{path} is not a packet capture (first bytes {magic.hex()}; expected pcap or pcapng)"
    )


def open_capture(path: str) -> tuple[CaptureInfo, Iterator[Record]]:
    """Identify the format and return the header facts plus a record iterator.

    Raises NotACaptureError when the file is empty or not a pcap/pcapng file.
    """
    info, fh, pcap = identify(path)
    if pcap is not None:
        return info, _iter_pcap(fh, *pcap, info)
    return info, _iter_pcapng(fh, info)


def corrupt_header(at: int, caplen: int) -> str:
    """The warning when a pcap record header gives a length no record has."""
    return f"corrupt record header at byte {at}: captured length {caplen}; analysis stops there"


def cut_short(left: int) -> str:
    """The warning when a pcap ends in the middle of a record."""
    return (f"capture is truncated: last record cut short ({left} bytes left over); the "
            "analysis covers the packets before it")


def check_capture(path: str) -> CaptureInfo:
    """The header facts of a capture, without reading its records (NotACaptureError if none)."""
    info, fh, _pcap = identify(path)
    fh.close()
    return info


def _iter_pcap(
    fh: BinaryIO, endian: str, ns: bool, linktype: int, info: CaptureInfo
) -> Iterator[Record]:
    unpack = struct.Struct(endian + "IIII").unpack_from
    mult = 1 if ns else 1000
    max_record = MAX_RECORD
    try:
        seekable = fh.seekable()
        buf = fh.read(CHUNK)
        off = 0
        while True:
            n = len(buf)
            while off + 16 <= n:
                sec, frac, caplen, wirelen = unpack(buf, off)
                if caplen > max_record:
                    info.warnings.append(corrupt_header(fh.tell() - n + off, caplen))
                    return
                end = off + 16 + caplen
                if end > n:
                    break
                if wirelen < caplen:
                    wirelen = caplen
                yield buf, off + 16, caplen, wirelen, sec * 1_000_000_000 + frac * mult, linktype
                off = end
            nxt = refill(fh, buf, off, n, seekable)
            if nxt is None:
                if off < n:
                    info.warnings.append(cut_short(n - off))
                return
            buf = nxt
            off = 0
    finally:
        fh.close()


def refill(fh: BinaryIO, buf: bytes, off: int, n: int, seekable: bool) -> bytes | None:
    """The next chunk, starting with the unconsumed ``buf[off:n]``; None at end of file.

    A seekable file is re-read from the first unconsumed byte: concatenating the leftover
    with a fresh 8 MB read would copy (and page-fault) every chunk twice.
    """
    rest = n - off
    if seekable:
        if rest:
            fh.seek(-rest, 1)
        nxt = fh.read(CHUNK)
        return nxt if len(nxt) > rest else None
    more = fh.read(CHUNK)
    if not more:
        return None
    return buf[off:] + more


def _tsresol(value: int) -> tuple[int, int]:
    """Turn pcapng's if_tsresol byte into a (numerator, denominator) for ns."""
    exp = value & 0x7F
    if value & 0x80:
        units = 1 << min(exp, 62)
    else:
        units = 10 ** min(exp, 18)
    return 1_000_000_000, units


def _parse_idb(body: bytes, e: str) -> _Interface:
    if len(body) < 8:
        raise CorruptCaptureError("pcapng interface description block is too short")
    linktype, _res, snaplen = struct.unpack_from(e + "HHI", body, 0)
    num, den = 1000, 1  # default resolution: microseconds
    tsoff = 0
    pos = 8
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(e + "HH", body, pos)
        pos += 4
        if code == 0:
            break
        val = body[pos : pos + length]
        if code == 9 and length >= 1:
            num, den = _tsresol(val[0])
        elif code == 14 and length >= 8:
            tsoff = struct.unpack_from(e + "q", val, 0)[0] * 1_000_000_000
        pos += (length + 3) & ~3
    return _Interface(linktype, snaplen, num, den, tsoff)


def _iter_pcapng(fh: BinaryIO, info: CaptureInfo) -> Iterator[Record]:
    e = "<"
    ifaces: list[_Interface] = []
    try:
        seekable = fh.seekable()
        buf = fh.read(CHUNK)
        off = 0
        while True:
            n = len(buf)
            while off + 12 <= n:
                btype_raw = buf[off : off + 4]
                if btype_raw == PCAPNG_SHB:
                    bom = buf[off + 8 : off + 12]
                    if len(bom) < 4:
                        break
                    if bom == b"\x4d\x3c\x2b\x1a":
                        e = "<"
                    elif bom == b"\x1a\x2b\x3c\x4d":
                        e = ">"
                    else:
                        raise NotACaptureError(
                            f"{info.path}: pcapng section header has a bad byte-order magic"
                        )
                    ifaces = []
                btype, blen = struct.unpack_from(e + "II", buf, off)
                if blen < 12 or blen % 4 or blen > MAX_RECORD + 64:
                    info.warnings.append(
                        f"corrupt pcapng block (type {btype:#x}, length {blen}); "
                        "analysis stops there"
                    )
                    return
                if off + blen > n:
                    break
                body_off = off + 8
                if btype == 6:  # enhanced packet block
                    ifid, hi, lo, caplen, wirelen = struct.unpack_from(e + "IIIII", buf, body_off)
                    if ifid >= len(ifaces) or caplen > blen - 32:
                        info.warnings.append(f"pcapng packet block with bad interface {ifid}")
                    else:
                        itf = ifaces[ifid]
                        ts = ((hi << 32) | lo) * itf.ts_num // itf.ts_den + itf.ts_offset_ns
                        yield buf, body_off + 20, caplen, max(wirelen, caplen), ts, itf.linktype
                elif btype == 3:  # simple packet block
                    (wirelen,) = struct.unpack_from(e + "I", buf, body_off)
                    if ifaces:
                        itf = ifaces[0]
                        caplen = min(wirelen, blen - 16)
                        if itf.snaplen:
                            caplen = min(caplen, itf.snaplen)
                        yield buf, body_off + 4, caplen, wirelen, 0, itf.linktype
                elif btype == 2:  # obsolete packet block
                    ifid, _drops, hi, lo, caplen, wirelen = struct.unpack_from(
                        e + "HHIIII", buf, body_off
                    )
                    if ifid < len(ifaces) and caplen <= blen - 32:
                        itf = ifaces[ifid]
                        ts = ((hi << 32) | lo) * itf.ts_num // itf.ts_den + itf.ts_offset_ns
                        yield buf, body_off + 20, caplen, max(wirelen, caplen), ts, itf.linktype
                elif btype == 1:  # interface description
                    itf = _parse_idb(buf[body_off : off + blen - 4], e)
                    ifaces.append(itf)
                    if itf.linktype not in info.linktypes:
                        info.linktypes.append(itf.linktype)
                    if itf.snaplen and (not info.snaplen or itf.snaplen > info.snaplen):
                        info.snaplen = itf.snaplen
                    if itf.ts_den > 1_000_000:
                        info.nanosecond = True
                off += blen
            nxt = refill(fh, buf, off, n, seekable)
            if nxt is None:
                if off < n:
                    info.warnings.append(
                        f"capture is truncated: last block cut short ({n - off} bytes left "
                        "over); the analysis covers the packets before it"
                    )
                return
            buf = nxt
            off = 0
    except struct.error:
        info.warnings.append("corrupt pcapng block; analysis stops there")
    finally:
        fh.close()
